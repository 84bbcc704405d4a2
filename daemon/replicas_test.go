package daemon

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/internal/pgtest"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/postgres"
)

// replica is one in-process daemon on its own Postgres store.
type replica struct {
	d      *Daemon
	store  *postgres.Store
	runner *fakeRunner
	cancel context.CancelFunc
	done   chan error
}

// startReplica opens a store on dsn/schema and runs a daemon on it with
// the real clock and a 20 ms trigger poll.
func startReplica(t *testing.T, dsn, schema string, pipelines []config.Pipeline, block func(context.Context, string) error) *replica {
	t.Helper()
	store, err := postgres.Open(context.Background(), dsn, schema)
	require.NoError(t, err)
	r := &replica{store: store, runner: &fakeRunner{store: store, calls: make(chan call, 1000), block: block}, done: make(chan error, 1)}
	r.d, err = New(Options{
		Config: &config.Config{Pipelines: pipelines, Daemon: config.Daemon{PollInterval: 20 * time.Millisecond, GracePeriod: 200 * time.Millisecond}},
		Store:  store, Runner: r.runner, Registerer: prometheus.NewRegistry(),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.d.Run(ctx, nil) }()
	t.Cleanup(func() {
		r.cancel()
		select {
		case <-r.done:
		case <-time.After(waitFor):
			t.Error("replica did not stop")
		}
		_ = store.Close()
	})
	return r
}

// TestReplicasRunEachTriggerOnce runs two daemons with the same config on
// one Postgres schema and sends triggers to both: no pipeline ever runs on
// both at once, every trigger is served by exactly one run, and every run
// served at least one trigger.
func TestReplicasRunEachTriggerOnce(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	pipelines := []config.Pipeline{{Name: "p1", TimeZone: "UTC"}, {Name: "p2", TimeZone: "UTC"}}
	// The runner checks, across both replicas, that a pipeline runs once
	// at a time; a run takes a little time, so triggers arrive during runs.
	inflight := map[string]*atomic.Int32{"p1": {}, "p2": {}}
	var overlap atomic.Bool
	guard := func(ctx context.Context, name string) error {
		if inflight[name].Add(1) > 1 {
			overlap.Store(true)
		}
		defer inflight[name].Add(-1)
		timer := time.NewTimer(2 * time.Millisecond)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
		return nil
	}
	r1 := startReplica(t, dsn, schema, pipelines, guard)
	r2 := startReplica(t, dsn, schema, pipelines, guard)

	var ids []int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := []*replica{r1, r2}[i%2]
			name := pipelines[(i/2)%2].Name
			tr, err := r.d.Trigger(context.Background(), name, ModeIncremental, state.TriggerManual)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ids = append(ids, tr.ID)
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		p, err := r1.store.TriggerPending(context.Background())
		return err == nil && len(p) == 0
	}, waitFor, 5*time.Millisecond)
	require.False(t, overlap.Load(), "a pipeline ran on two replicas at once")

	ctx := t.Context()
	servedBy := map[int64]bool{}
	for _, id := range ids {
		tr, err := r1.store.TriggerGet(ctx, id)
		require.NoError(t, err)
		require.NotZero(t, tr.RunID, "trigger %d", id)
		servedBy[tr.RunID] = true
	}
	runs, err := r1.store.RunList(ctx, "", 0)
	require.NoError(t, err)
	require.NotEmpty(t, runs)
	require.LessOrEqual(t, len(runs), len(ids))
	for _, run := range runs {
		require.True(t, servedBy[run.ID], "run %d of %s served no trigger", run.ID, run.Pipeline)
		require.Equal(t, state.StatusSucceeded, run.Status)
	}
	require.Len(t, servedBy, len(runs))
	t.Logf("40 triggers served by %d runs (r1 ran %d, r2 ran %d)", len(runs), len(r1.runner.calls), len(r2.runner.calls))
}

// TestReplicaTakesOverFromDeadHolder: the lock holder's connection goes
// away in the middle of a run; the other replica takes the lock and runs
// the trigger the dead holder had claimed.
func TestReplicaTakesOverFromDeadHolder(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	pipelines := []config.Pipeline{{Name: "p", TimeZone: "UTC"}}
	r1 := startReplica(t, dsn, schema, pipelines, func(ctx context.Context, _ string) error {
		<-ctx.Done()
		return ctx.Err()
	})
	tr, err := r1.d.Trigger(t.Context(), "p", ModeFull, state.TriggerManual)
	require.NoError(t, err)
	select {
	case <-r1.runner.calls:
	case <-time.After(waitFor):
		t.Fatal("r1 did not start the run")
	}
	// r2 starts while r1 holds the lock: it must not run p.
	r2 := startReplica(t, dsn, schema, pipelines, nil)
	select {
	case c := <-r2.runner.calls:
		t.Fatalf("r2 ran %+v while r1 held the lock", c)
	case <-time.After(100 * time.Millisecond): // five polls of r2
	}
	// r1 "dies": its store, and with it the session holding the lock, closes.
	require.NoError(t, r1.store.Close())
	select {
	case c := <-r2.runner.calls:
		require.Equal(t, "p", c.name)
		require.Equal(t, ModeFull, c.mode, "the claimed trigger's mode")
	case <-time.After(waitFor):
		t.Fatal("r2 did not take over")
	}
	require.Eventually(t, func() bool {
		got, err := r2.store.TriggerGet(context.Background(), tr.ID)
		return err == nil && !got.DoneAt.IsZero() && got.RunID != 0
	}, waitFor, 5*time.Millisecond)
}
