package daemon

import (
	"context"
	"log/slog"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
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
// the real clock and a 20 ms poll interval.
func startReplica(t *testing.T, dsn, schema string, pipelines []config.Pipeline, block func(context.Context, string) error) *replica {
	t.Helper()
	store, err := postgres.Open(context.Background(), dsn, schema)
	require.NoError(t, err)
	r := &replica{store: store, runner: &fakeRunner{store: store, calls: make(chan call, 1000), block: block}, done: make(chan error, 1)}
	r.d, err = New(Options{
		Config: &config.Config{Pipelines: pipelines, Daemon: config.Daemon{PollInterval: 20 * time.Millisecond, GracePeriod: 200 * time.Millisecond}},
		Store:  store, Runner: r.runner, Registerer: prometheus.NewRegistry(), Logger: testLogger(t),
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
// both at once, every trigger is served by a run that started after it
// was queued, and every run served at least one trigger.
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

	type sent struct {
		id int64
		at time.Time
	}
	var all []sent
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := []*replica{r1, r2}[i%2]
			name := pipelines[(i/2)%2].Name
			at := time.Now()
			q, err := r.d.Trigger(context.Background(), name, ModeIncremental, state.TriggerManual)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			all = append(all, sent{q.Job.ID, at})
			mu.Unlock()
		}()
	}
	wg.Wait()
	settled(t, r1.d)
	require.False(t, overlap.Load(), "a pipeline ran on two replicas at once")

	ctx := t.Context()
	servedBy := map[int64]bool{}
	for _, s := range all {
		j, err := lookupJob(ctx, r1.d.jobs, s.id)
		require.NoError(t, err)
		require.Equal(t, "completed", j.State, "job %d", s.id)
		require.NotZero(t, j.RunID, "job %d", s.id)
		run, err := r1.store.RunGet(ctx, j.RunID)
		require.NoError(t, err)
		require.False(t, run.StartedAt.Before(s.at.Truncate(time.Microsecond)), "job %d: its run %d started before the trigger", s.id, run.ID)
		servedBy[j.RunID] = true
	}
	runs, err := r1.store.RunList(ctx, "", 0)
	require.NoError(t, err)
	require.NotEmpty(t, runs)
	require.LessOrEqual(t, len(runs), len(all))
	for _, run := range runs {
		require.True(t, servedBy[run.ID], "run %d of %s served no trigger", run.ID, run.Pipeline)
		require.Equal(t, state.StatusSucceeded, run.Status)
	}
	require.Len(t, servedBy, len(runs))
	t.Logf("40 triggers served by %d runs (r1 ran %d, r2 ran %d)", len(runs), len(r1.runner.calls), len(r2.runner.calls))
}

// TestReplicaTakesOverFromDeadHolder: the lock holder's session goes away
// in the middle of a run (its store closes, as when its process dies);
// the other replica finds the job running with the lock free, takes it
// over and runs it again with its mode. The first replica, still alive
// here, has its job cancelled, so the run is not done twice.
func TestReplicaTakesOverFromDeadHolder(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	pipelines := []config.Pipeline{{Name: "p", TimeZone: "UTC"}}
	// r1's run returns once it is cancelled and r2 has started the run
	// that took it over. r1 works one run at a time (one pipeline), so
	// until then it cannot fetch the new job itself, as a dead process
	// would not: with its store closed its lock attempt would fail and
	// River would retry the job only after the retry back-off (10 s).
	taken := make(chan struct{})
	var takenOnce sync.Once
	release := func() { takenOnce.Do(func() { close(taken) }) }
	r1 := startReplica(t, dsn, schema, pipelines, func(ctx context.Context, _ string) error {
		<-ctx.Done()
		<-taken
		return ctx.Err()
	})
	t.Cleanup(release) // before r1's cleanup, which waits for its run
	q, err := r1.d.Trigger(t.Context(), "p", ModeFull, state.TriggerManual)
	require.NoError(t, err)
	select {
	case <-r1.runner.calls:
	case <-time.After(longWait):
		t.Fatal("r1 did not start the run")
	}
	// r2 starts while r1 holds the lock: once r2's watch has seen the job
	// running, it must neither run p nor take the job over for twice the
	// time a take-over of a job with a free lock takes.
	r2 := startReplica(t, dsn, schema, pipelines, nil)
	require.Eventually(t, func() bool { return metricValue(r2.d.m.jobs.WithLabelValues("p", "running")) == 1 },
		longWait, time.Millisecond, "r2's watch never saw the job running")
	select {
	case c := <-r2.runner.calls:
		t.Fatalf("r2 ran %+v while r1 held the lock", c)
	case <-time.After(2 * takeOverAfter):
	}
	require.Zero(t, metricValue(r2.d.m.takeovers.WithLabelValues("p")), "r2 took the job over while r1 held the lock")
	// r1 "dies": its store, and with it the session holding the lock, closes.
	require.NoError(t, r1.store.Close())
	select {
	case c := <-r2.runner.calls:
		require.Equal(t, "p", c.name)
		require.Equal(t, ModeFull, c.mode, "the dead job's mode")
	case <-time.After(longWait):
		t.Fatal("r2 did not take over")
	}
	// The dead job is final at once (r1's worker has not returned), not
	// left running until River's rescuer, hours later.
	require.Eventually(t, func() bool {
		dead, err := r2.d.jobs.get(t.Context(), q.Job.ID)
		return err == nil && dead.State == "cancelled" && dead.FinalizedAt != nil
	}, 5*time.Second, 10*time.Millisecond, "the dead job is left running")
	release()
	settled(t, r2.d)
	require.Equal(t, 1.0, metricValue(r2.d.m.takeovers.WithLabelValues("p")))
	j, err := lookupJob(t.Context(), r2.d.jobs, q.Job.ID)
	require.NoError(t, err)
	require.NotEqual(t, q.Job.ID, j.ID, "the dead job's id leads to the job that took it over")
	require.Equal(t, []int64{q.Job.ID}, j.Replaces)
	require.Equal(t, "completed", j.State)
	require.NotZero(t, j.RunID)
	old, err := r2.d.jobs.get(t.Context(), q.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "cancelled", string(old.State), "the live first replica's job was cancelled, not retried")
}

// metricValue is the value of a gauge or counter (NaN when it cannot be
// read, which no comparison in a test accepts).
func metricValue(m prometheus.Metric) float64 {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		return math.NaN()
	}
	if c := out.GetCounter(); c != nil {
		return c.GetValue()
	}
	return out.GetGauge().GetValue()
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("KGSYNC_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
