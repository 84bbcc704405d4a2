package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

func evalGauge(t *testing.T, reg *prometheus.Registry, name, pipeline string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "pipeline" && l.GetValue() == pipeline {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// TestEvalAfterRuns: the golden set runs after the first successful run
// and after runs that changed records, not after no-op runs, and its
// outcome is exported as kgsync_eval_* gauges.
func TestEvalAfterRuns(t *testing.T) {
	t.Parallel()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	calls := map[string]int{}
	reg := prometheus.NewRegistry()
	d, err := New(Options{
		Config: &config.Config{Pipelines: []config.Pipeline{{Name: "p"}, {Name: "q"}, {Name: "r"}}},
		Store:  store, Runner: &fakeRunner{store: store}, Registerer: reg,
		Eval: func(ctx context.Context, name string) (EvalSummary, error) {
			calls[name]++
			switch name {
			case "q":
				return EvalSummary{}, ErrEvalSkipped
			case "r":
				return EvalSummary{}, errors.New("golden.jsonl:3: not a JSON object")
			}
			return EvalSummary{Questions: 66, RecallAtK: 0.93, RecallAt1: 0.8, Sufficiency: 0.9, ContextTokens: 2100, Declined: 0.75, Lost: 0.03, Unresolved: 1}, nil
		},
	})
	require.NoError(t, err)
	noop := state.Run{Counts: state.Counts{RecordsRead: 10, RecordsUnchanged: 10}}
	edit := state.Run{Counts: state.Counts{RecordsRead: 10, RecordsChanged: 1}}
	for _, name := range []string{"p", "q", "r"} {
		d.evalAfter(context.Background(), d.workers[name], noop) // first run since start
	}
	require.Equal(t, map[string]int{"p": 1, "q": 1, "r": 1}, calls)
	v, ok := evalGauge(t, reg, "kgsync_eval_recall_at_k", "p")
	require.True(t, ok)
	require.InDelta(t, 0.93, v, 1e-12)
	v, _ = evalGauge(t, reg, "kgsync_eval_unresolved_addresses", "p")
	require.InDelta(t, 1, v, 0)
	_, ok = evalGauge(t, reg, "kgsync_eval_recall_at_k", "q")
	require.False(t, ok, "no golden set: no metric")
	_, ok = evalGauge(t, reg, "kgsync_eval_recall_at_k", "r")
	require.False(t, ok, "a failed eval leaves the metrics as they were")

	d.evalAfter(context.Background(), d.workers["p"], noop)
	require.Equal(t, 1, calls["p"], "nothing changed: the graph answers as before")
	d.evalAfter(context.Background(), d.workers["p"], edit)
	require.Equal(t, 2, calls["p"])
}
