package daemon

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

// counterValue returns the value of counter name{pipeline="p"} in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "pipeline" && l.GetValue() == "p" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no counter %s{pipeline=\"p\"}", name)
	return 0
}

// TestObserveRunExportsEmbedAndRetryCounts checks that a run's embedding
// requests and errors, its sink retries and the batches it cut by bytes
// reach their counters, summed over runs.
func TestObserveRunExportsEmbedAndRetryCounts(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	require.NoError(t, err)
	m.observeRun("p", "succeeded", state.Run{Counts: state.Counts{EmbedRequests: 5, SinkRetries: 2, BatchesCut: 3}}, 1)
	m.observeRun("p", "failed", state.Run{Counts: state.Counts{EmbedRequests: 1, EmbedErrors: 1, BatchesCut: 1}}, 1)
	require.InDelta(t, 4, counterValue(t, reg, "kgsync_batches_cut_total"), 0)
	require.InDelta(t, 6, counterValue(t, reg, "kgsync_embed_requests_total"), 0)
	require.InDelta(t, 1, counterValue(t, reg, "kgsync_embed_errors_total"), 0)
	require.InDelta(t, 2, counterValue(t, reg, "kgsync_sink_retries_total"), 0)
}

// TestMetricsExistFromStartUp: every pipeline's series are exported at 0
// before its first run, and the quarantine gauge starts from state.
func TestMetricsExistFromStartUp(t *testing.T) {
	t.Parallel()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, store.QuarantinePut(context.Background(), "p", 1, []state.Quarantined{
		{Source: "docs", Key: "a.md", Stage: state.StageParse, Error: "too complex (x)"},
		{Source: "docs", Key: "b.md", Stage: state.StageRead, Error: "binary content"}}))
	reg := prometheus.NewRegistry()
	_, err = New(Options{Config: &config.Config{Pipelines: []config.Pipeline{{Name: "p"}, {Name: "q"}}}, Store: store,
		Runner: &fakeRunner{store: store, calls: make(chan call, 1)}, Registerer: reg})
	require.NoError(t, err)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	series := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				series[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				series[key] = m.GetGauge().GetValue()
			default:
				series[key] = 0
			}
		}
	}
	for _, p := range []string{"p", "q"} {
		for _, want := range []string{
			"kgsync_runs_total,outcome=succeeded,pipeline=" + p, "kgsync_runs_total,outcome=partial,pipeline=" + p,
			"kgsync_runs_total,outcome=failed,pipeline=" + p, "kgsync_records_total,class=read,pipeline=" + p,
			"kgsync_chunks_total,outcome=embedded,pipeline=" + p, "kgsync_embed_errors_total,pipeline=" + p,
			"kgsync_run_in_progress,pipeline=" + p, "kgsync_quarantined_records,pipeline=" + p,
			"kgsync_run_duration_seconds,pipeline=" + p,
		} {
			_, ok := series[want]
			require.True(t, ok, "missing %s", want)
		}
	}
	require.InDelta(t, 2, series["kgsync_quarantined_records,pipeline=p"], 0)
	require.InDelta(t, 0, series["kgsync_quarantined_records,pipeline=q"], 0)
	require.InDelta(t, 0, series["kgsync_runs_total,outcome=succeeded,pipeline=p"], 0)
}

// TestPartialRunOutcome: a run that ends with quarantined records counts
// as partial and sets the quarantine gauge.
func TestPartialRunOutcome(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	require.NoError(t, err)
	m.observeRun("p", "succeeded", state.Run{ID: 1, Status: state.StatusPartial, Counts: state.Counts{Quarantined: 3}}, 1)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var partial, gauge float64
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			switch mf.GetName() {
			case "kgsync_runs_total":
				for _, l := range mt.GetLabel() {
					if l.GetName() == "outcome" && l.GetValue() == "partial" {
						partial = mt.GetCounter().GetValue()
					}
				}
			case "kgsync_quarantined_records":
				gauge = mt.GetGauge().GetValue()
			}
		}
	}
	require.InDelta(t, 1, partial, 0)
	require.InDelta(t, 3, gauge, 0)
}

// TestWriterInflightGauge: the bytes a run's writer reports in flight
// (Daemon.InFlight) show on /metrics while it runs, and the gauge is 0
// once the run returns, even when the run's last report was not 0.
func TestWriterInflightGauge(t *testing.T) {
	t.Parallel()
	reported, release := make(chan struct{}), make(chan struct{})
	var b *testBundle
	b = setup(t, setupOpts{block: func(ctx context.Context, name string) error {
		b.d.InFlight(name, 4096)
		close(reported)
		<-release
		return nil
	}})
	_, metrics := b.do(t, "GET", "/metrics", "", nil)
	require.Contains(t, metrics, `kgsync_writer_inflight_bytes{pipeline="p"} 0`, "exported before the first run")
	require.Contains(t, metrics, `kgsync_batches_cut_total{pipeline="p"} 0`)
	code, _ := b.do(t, "POST", "/api/pipelines/p/sync", "", nil)
	require.Equal(t, http.StatusAccepted, code)
	b.nextCall(t)
	<-reported
	_, metrics = b.do(t, "GET", "/metrics", "", nil)
	require.Contains(t, metrics, `kgsync_writer_inflight_bytes{pipeline="p"} 4096`)
	close(release)
	b.settled(t)
	_, metrics = b.do(t, "GET", "/metrics", "", nil)
	require.Contains(t, metrics, `kgsync_writer_inflight_bytes{pipeline="p"} 0`)
}
