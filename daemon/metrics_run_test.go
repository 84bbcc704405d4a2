package daemon

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/state"
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
// requests and errors and its sink retries reach their counters, summed
// over runs.
func TestObserveRunExportsEmbedAndRetryCounts(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	require.NoError(t, err)
	m.observeRun("p", "succeeded", state.Run{Counts: state.Counts{EmbedRequests: 5, SinkRetries: 2}}, 1)
	m.observeRun("p", "failed", state.Run{Counts: state.Counts{EmbedRequests: 1, EmbedErrors: 1}}, 1)
	require.InDelta(t, 6, counterValue(t, reg, "kgsync_embed_requests_total"), 0)
	require.InDelta(t, 1, counterValue(t, reg, "kgsync_embed_errors_total"), 0)
	require.InDelta(t, 2, counterValue(t, reg, "kgsync_sink_retries_total"), 0)
}
