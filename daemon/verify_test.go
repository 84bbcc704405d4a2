package daemon

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/internal/testlog"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

type verified struct {
	name string
	n    int
	err  error
}

// startVerify runs a daemon whose Verify answers from answers (by
// pipeline, one answer per call, the last repeated) and reports each
// finished verify on the returned channel.
func startVerify(t *testing.T, interval time.Duration, answers map[string][]verified) (*Daemon, *fakeClock, *prometheus.Registry, *testlog.Buffer, chan verified) {
	t.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	clock := newFakeClock(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	logs := &testlog.Buffer{}
	calls := map[string]int{}
	d, err := New(Options{
		Config: &config.Config{
			Daemon:    config.Daemon{PollInterval: 24 * time.Hour, GracePeriod: time.Minute, VerifyInterval: interval},
			Pipelines: []config.Pipeline{{Name: "p", TimeZone: "UTC"}, {Name: "q", TimeZone: "UTC"}},
		},
		Store: store, Runner: &fakeRunner{store: store, calls: make(chan call, 10)}, Registerer: reg, Clock: clock,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Verify: func(_ context.Context, name string) (int, error) {
			a := answers[name]
			i := min(calls[name], len(a)-1)
			calls[name]++
			return a[i].n, a[i].err
		},
	})
	require.NoError(t, err)
	done := make(chan verified, 100)
	d.verified = func(name string, n int, err error) { done <- verified{name, n, err} }
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- d.Run(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		clock.Advance(24 * time.Hour)
		select {
		case <-stopped:
		case <-time.After(waitFor):
			t.Error("daemon did not stop")
		}
	})
	return d, clock, reg, logs, done
}

func nextVerify(t *testing.T, ch chan verified) verified {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatal("no verify")
		return verified{}
	}
}

func TestVerifyAtStartAndEveryInterval(t *testing.T) {
	t.Parallel()
	d, clock, reg, logs, ch := startVerify(t, time.Hour, map[string][]verified{
		"p": {{n: 3}, {n: 0}},
		"q": {{err: ErrVerifySkipped}},
	})
	// Start-up: both pipelines, in config order.
	require.Equal(t, "p", nextVerify(t, ch).name)
	require.Equal(t, "q", nextVerify(t, ch).name)
	require.Equal(t, 3.0, gaugeValue(t, d, "p"))
	require.Equal(t, 1, seriesCount(t, reg), "a skipped pipeline has no series")
	require.Contains(t, logs.String(), `"differences":3`)
	require.Contains(t, logs.String(), "kgsync verify p --repair")

	// The next verify waits for the interval.
	select {
	case v := <-ch:
		t.Fatalf("verify before the interval: %+v", v)
	case <-time.After(20 * time.Millisecond):
	}
	clock.waitTimers(t, 2) // the poller's and the verify loop's
	clock.Advance(time.Hour)
	require.Equal(t, verified{name: "p"}, nextVerify(t, ch))
	require.Equal(t, "q", nextVerify(t, ch).name)
	require.Zero(t, gaugeValue(t, d, "p"))
}

func TestVerifyLockedOrFailingKeepsGoing(t *testing.T) {
	t.Parallel()
	d, clock, reg, logs, ch := startVerify(t, time.Minute, map[string][]verified{
		"p": {{err: state.ErrLocked}, {n: 2}},
		"q": {{err: errors.New("memgraph unreachable")}, {n: 0}},
	})
	nextVerify(t, ch)
	nextVerify(t, ch)
	require.Zero(t, seriesCount(t, reg))
	require.Contains(t, logs.String(), "verify skipped: the pipeline is running")
	require.Contains(t, logs.String(), "memgraph unreachable")
	clock.waitTimers(t, 2)
	clock.Advance(time.Minute)
	nextVerify(t, ch)
	nextVerify(t, ch)
	require.Equal(t, 2.0, gaugeValue(t, d, "p"))
}

func TestVerifyDisabledByZeroInterval(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	d, err := New(Options{
		Config: &config.Config{Pipelines: []config.Pipeline{{Name: "p"}}}, Store: store,
		Runner: &fakeRunner{store: store}, Registerer: reg,
		Verify: func(context.Context, string) (int, error) { t.Error("verify called"); return 0, nil },
	})
	require.NoError(t, err)
	require.Nil(t, d.verify)
	require.Zero(t, seriesCount(t, reg))
}

func gaugeValue(t *testing.T, d *Daemon, pipeline string) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, d.verifyGauge.WithLabelValues(pipeline).Write(&m))
	return m.GetGauge().GetValue()
}

// seriesCount is the number of kgsync_verify_differences series.
func seriesCount(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "kgsync_verify_differences" {
			return len(mf.GetMetric())
		}
	}
	return 0
}
