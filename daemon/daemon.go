// Package daemon runs kgsync's pipelines as a service: cron schedules,
// Grist webhooks, manual triggers over an HTTP API, health and Prometheus
// metrics, graceful shutdown, and safe runs with several replicas on one
// Postgres (design.md, "Triggers" and "Scale-out"; docs/daemon.md).
//
// Every trigger — a schedule tick, a webhook burst, an API call — is first
// stored in state's triggers table (state.TriggerQueue). Each pipeline has
// one worker per replica that takes the pipeline's lock (Store.Lock: a
// Postgres advisory lock, or a file lock for SQLite), claims every pending
// trigger of the pipeline and serves them with one run whose mode is the
// strongest asked for (Mode.Merge), then claims again until none is left.
// A trigger that arrives while a run is going on is therefore served by
// exactly one follow-up run, on whichever replica holds the lock next; a
// replica that finds the lock taken leaves its triggers to the holder, and
// every replica polls for pending triggers, so a trigger left by a replica
// that died is run by another.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/state"
)

// Runner runs one pipeline once. The daemon calls it while holding the
// pipeline's lock (Store.Lock), so the implementation must not take that
// lock again. It returns the run as recorded in state (ID 0 when the run
// failed before its run row was opened) and the run's error; when ctx is
// cancelled the run stops before its next commit.
type Runner interface {
	Run(ctx context.Context, name string, trigger state.Trigger, mode Mode) (state.Run, error)
}

// Pinger is a dependency /readyz checks (a sink that can reach its server).
type Pinger interface {
	Ping(ctx context.Context) error
}

// Options are a Daemon's dependencies.
type Options struct {
	// Config gives the pipelines (names, schedules, time zones) and the
	// daemon section.
	Config *config.Config
	// Store holds the runs, the pipeline locks and the trigger queue; it
	// must implement state.TriggerQueue (both backends do).
	Store state.Store
	// Runner runs a pipeline.
	Runner Runner
	// Checks are pinged by /readyz (for example each pipeline's sink, when
	// it is a Pinger), by name; values that are not Pingers are ignored.
	Checks map[string]any
	// RowSink receives the rows of webhook deliveries; nil keeps them in a
	// RowBuffer (see Daemon.Rows).
	RowSink RowSink
	// Registerer receives the metrics; nil uses a new registry.
	Registerer prometheus.Registerer
	// Gatherer serves /metrics; nil serves Registerer when it is a
	// Gatherer, else nothing.
	Gatherer prometheus.Gatherer
	// Logger receives the daemon's logs; nil discards.
	Logger *slog.Logger
	// Clock is the time source (default SystemClock).
	Clock Clock
	// Verify, when set, is called for each pipeline at start-up and every
	// Config.Daemon.VerifyInterval (never when that is 0); see verify.go.
	Verify VerifyFunc
	// Eval, when set, runs a pipeline's golden set after each successful
	// run that changed the graph and exports kgsync_eval_* (see eval.go).
	Eval EvalFunc
	// HTTP bounds the server's timeouts and header size; zero fields take
	// DefaultHTTPLimits.
	HTTP HTTPLimits
	// InsecureNoAuth lets Run serve the API without daemon.api_token on
	// an address that is not loopback (it logs a warning then); without
	// it Run refuses with ErrOpenAPI (`kgsync daemon --insecure-no-auth`).
	InsecureNoAuth bool
}

// Daemon serves the pipelines of one config. Create it with New, start it
// with Run.
type Daemon struct {
	cfg     config.Daemon
	store   state.Store
	queue   state.TriggerQueue
	runner  Runner
	checks  map[string]Pinger
	rowSink RowSink
	rows    *RowBuffer
	gather  prometheus.Gatherer
	log     *slog.Logger
	clock   Clock
	m       *metrics
	limits  HTTPLimits
	// insecure allows an open API on a non-loopback address
	insecure bool

	verify      VerifyFunc               // nil: no periodic verify
	verifyGauge *prometheus.GaugeVec     // kgsync_verify_differences{pipeline}
	verified    func(string, int, error) // tests: called after each verify

	eval  EvalFunc     // nil: no golden set evaluation
	evalM *evalMetrics // kgsync_eval_*{pipeline}

	workers map[string]*worker
	names   []string // pipeline names in config order

	mu       sync.Mutex
	dropped  map[string]int64   // RowBuffer.Dropped last observed, by pipeline
	stopping bool               // no new triggers
	runCtx   context.Context    // runs' context, set by Run
	abort    context.CancelFunc // cancels runCtx
}

// worker is the per-pipeline state of this replica.
type worker struct {
	name     string
	schedule string
	zone     string
	sched    cron.Schedule // nil without a schedule
	loc      *time.Location
	kick     chan struct{} // capacity 1: pending kicks coalesce
	hooks    *collector
	tables   hookTables // the Grist tables whose deliveries it accepts

	mu        sync.Mutex
	running   bool
	next      time.Time // next schedule tick, zero when none
	evaluated bool      // the golden set ran since start
}

// New checks opts and returns a Daemon. Zero PollInterval and MaxBodyBytes
// in the config mean their defaults.
func New(opts Options) (*Daemon, error) {
	if opts.Config == nil || opts.Store == nil || opts.Runner == nil {
		return nil, errors.New("new daemon: config, store and runner are required")
	}
	q, ok := opts.Store.(state.TriggerQueue)
	if !ok {
		return nil, fmt.Errorf("new daemon: state store %T has no trigger queue", opts.Store)
	}
	d := &Daemon{
		cfg: opts.Config.Daemon, store: opts.Store, queue: q, runner: opts.Runner,
		checks: map[string]Pinger{}, rowSink: opts.RowSink, log: opts.Logger, clock: opts.Clock,
		workers: map[string]*worker{}, limits: opts.HTTP.withDefaults(), insecure: opts.InsecureNoAuth, dropped: map[string]int64{},
	}
	if d.cfg.PollInterval <= 0 {
		d.cfg.PollInterval = config.DefaultDaemonPollInterval
	}
	if d.cfg.MaxBodyBytes <= 0 {
		d.cfg.MaxBodyBytes = config.DefaultDaemonMaxBodyBytes
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.clock == nil {
		d.clock = SystemClock{}
	}
	if d.rowSink == nil {
		d.rows = NewBoundedRowBuffer(d.cfg.WebhookBufferRows)
		d.rowSink = d.rows
	}
	for name, c := range opts.Checks {
		if p, ok := c.(Pinger); ok {
			d.checks[name] = p
		}
	}
	reg := opts.Registerer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg = r
	}
	d.gather = opts.Gatherer
	if d.gather == nil {
		d.gather, _ = reg.(prometheus.Gatherer)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("new daemon: register metrics: %w", err)
	}
	d.m = m
	if opts.Verify != nil && d.cfg.VerifyInterval > 0 {
		if d.verifyGauge, err = newVerifyGauge(reg); err != nil {
			return nil, fmt.Errorf("new daemon: register metrics: %w", err)
		}
		d.verify = opts.Verify
	}
	if opts.Eval != nil {
		if d.evalM, err = newEvalMetrics(reg); err != nil {
			return nil, fmt.Errorf("new daemon: register metrics: %w", err)
		}
		d.eval = opts.Eval
	}
	parser := cron.NewParser(config.ScheduleFields)
	for i := range opts.Config.Pipelines {
		pc := &opts.Config.Pipelines[i]
		w := &worker{name: pc.Name, schedule: pc.Schedule, zone: pc.TimeZone, kick: make(chan struct{}, 1), loc: time.UTC}
		if pc.TimeZone != "" {
			loc, err := time.LoadLocation(pc.TimeZone)
			if err != nil {
				return nil, fmt.Errorf("new daemon: pipeline %q: time zone %q: %w", pc.Name, pc.TimeZone, err)
			}
			w.loc = loc
		}
		if pc.Schedule != "" {
			s, err := parser.Parse(pc.Schedule)
			if err != nil {
				return nil, fmt.Errorf("new daemon: pipeline %q: schedule %q: %w", pc.Name, pc.Schedule, err)
			}
			w.sched = s
		}
		w.hooks = newCollector(d.cfg.WebhookBufferRows)
		w.tables = newHookTables(pc)
		d.workers[pc.Name] = w
		d.names = append(d.names, pc.Name)
	}
	return d, nil
}

// Rows returns the buffer that keeps webhook rows when Options.RowSink was
// nil, else nil.
func (d *Daemon) Rows() *RowBuffer { return d.rows }

// ErrStopping is returned by Trigger once the daemon is shutting down.
var ErrStopping = errors.New("daemon is shutting down")

// ErrUnknownPipeline is returned by Trigger for a name not in the config.
var ErrUnknownPipeline = errors.New("no such pipeline")

// ErrGraceExpired is returned by Run when runs were still going on at the
// end of the grace period and had to be cancelled.
var ErrGraceExpired = errors.New("grace period ran out: running runs were cancelled")

// Trigger queues a run of pipeline name in state and wakes this replica's
// worker for it. It returns the queued trigger (its ID is what
// GET /api/triggers/{id} reports on), ErrUnknownPipeline or ErrStopping.
func (d *Daemon) Trigger(ctx context.Context, name string, mode Mode, reason state.Trigger) (state.QueuedTrigger, error) {
	w, ok := d.workers[name]
	if !ok {
		return state.QueuedTrigger{}, fmt.Errorf("trigger %q: %w", name, ErrUnknownPipeline)
	}
	d.mu.Lock()
	stopping := d.stopping
	d.mu.Unlock()
	if stopping {
		return state.QueuedTrigger{}, fmt.Errorf("trigger %q: %w", name, ErrStopping)
	}
	return d.enqueue(ctx, w, mode, reason)
}

// enqueue stores a trigger and kicks the worker (also while stopping, for
// webhook rows flushed at shutdown: another replica serves them).
func (d *Daemon) enqueue(ctx context.Context, w *worker, mode Mode, reason state.Trigger) (state.QueuedTrigger, error) {
	t, err := d.queue.TriggerAdd(ctx, w.name, string(mode), reason)
	if err != nil {
		return state.QueuedTrigger{}, fmt.Errorf("trigger %q: %w", w.name, err)
	}
	d.m.triggers.WithLabelValues(w.name, string(reason)).Inc()
	d.log.Debug("trigger queued", slog.String("pipeline", w.name), slog.Int64("trigger_id", t.ID),
		slog.String("mode", string(mode)), slog.String("reason", string(reason)))
	w.wake()
	return t, nil
}

func (w *worker) wake() {
	select {
	case w.kick <- struct{}{}:
	default: // a kick is pending: the worker will claim this trigger too
	}
}

// Handler returns the daemon's HTTP handler (see docs/daemon.md for the
// routes).
func (d *Daemon) Handler() http.Handler { return d.routes() }

// Run starts the schedules, the workers, the trigger poller and, when ln
// is not nil, the HTTP server on ln, and blocks until ctx is cancelled.
// Then it stops taking triggers (the API and webhooks answer 503, the HTTP
// server shuts down), lets running runs finish for the config's grace
// period, then cancels them (a cancelled run stops before its next commit)
// and waits for them. It returns nil after a clean stop, ErrGraceExpired
// when runs had to be cancelled, or the HTTP server's error. Abort makes
// it return at once. On a listener that is not Loopback, without
// daemon.api_token and without Options.InsecureNoAuth, it closes ln and
// returns ErrOpenAPI before starting anything.
func (d *Daemon) Run(ctx context.Context, ln net.Listener) error {
	if ln != nil && d.cfg.APIToken == "" && !Loopback(ln.Addr()) {
		if !d.insecure {
			_ = ln.Close()
			return fmt.Errorf("listen on %s: %w", ln.Addr(), ErrOpenAPI)
		}
		d.log.Warn("the API is open to the network: no daemon.api_token on a non-loopback address (--insecure-no-auth); "+
			"anyone who reaches it can queue runs, re-embeddings and mass deletes", slog.String("addr", ln.Addr().String()))
	}
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	aborted := make(chan struct{})
	var abortOnce sync.Once
	d.mu.Lock()
	d.runCtx = runCtx
	d.abort = func() { abortOnce.Do(func() { cancelRuns(); close(aborted) }) }
	d.mu.Unlock()

	var wg sync.WaitGroup // workers and collectors: they end runs and flush rows
	var side sync.WaitGroup
	for _, name := range d.names {
		w := d.workers[name]
		wg.Add(2)
		go func() { defer wg.Done(); d.work(ctx, runCtx, w) }()
		go func() { defer wg.Done(); d.collect(ctx, w) }()
		if w.sched != nil {
			side.Add(1)
			go func() { defer side.Done(); d.schedule(ctx, w) }()
		}
		w.wake() // pick up triggers left in state
	}
	side.Add(1)
	go func() { defer side.Done(); d.poll(ctx) }()
	if d.verify != nil {
		side.Add(1)
		go func() { defer side.Done(); d.verifyLoop(ctx) }()
	}

	srvErr := make(chan error, 1)
	var srv *http.Server
	if ln != nil {
		srv = d.server()
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				srvErr <- fmt.Errorf("serve http on %s: %w", ln.Addr(), err)
			}
		}()
		d.log.Info("daemon listening", slog.String("addr", ln.Addr().String()), slog.Int("pipelines", len(d.names)))
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-srvErr:
	}
	d.mu.Lock()
	d.stopping = true
	d.mu.Unlock()
	d.log.Info("daemon stopping", slog.Duration("grace_period", d.cfg.GracePeriod))
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
	}
	side.Wait()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	grace := d.clock.NewTimer(d.cfg.GracePeriod)
	defer grace.Stop()
	select {
	case <-done:
	case <-aborted:
		return errors.Join(err, errors.New("daemon aborted"))
	case <-grace.C():
		d.log.Warn("grace period over: cancelling running runs")
		cancelRuns()
		select {
		case <-done:
		case <-aborted:
			return errors.Join(err, errors.New("daemon aborted"))
		}
		err = errors.Join(err, ErrGraceExpired)
	}
	d.log.Info("daemon stopped")
	return err
}

// Abort cancels running runs at once and makes Run return without waiting
// for them (the second SIGTERM). It does nothing before Run.
func (d *Daemon) Abort() {
	d.mu.Lock()
	abort := d.abort
	d.mu.Unlock()
	if abort != nil {
		abort()
	}
}

// schedule queues a cron trigger at each tick of w's schedule until ctx is
// done. Ticks are computed in the pipeline's time zone.
func (d *Daemon) schedule(ctx context.Context, w *worker) {
	for {
		now := d.clock.Now()
		next := w.sched.Next(now.In(w.loc))
		w.mu.Lock()
		w.next = next
		w.mu.Unlock()
		t := d.clock.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if _, err := d.Trigger(ctx, w.name, ModeIncremental, state.TriggerCron); err != nil && ctx.Err() == nil {
			d.log.Error("queue scheduled run", slog.String("pipeline", w.name), slog.String("err", err.Error()))
		}
	}
}

// poll wakes the workers of pipelines with pending triggers every
// PollInterval, so triggers queued on other replicas or left by a stopped
// one are run.
func (d *Daemon) poll(ctx context.Context) {
	for {
		t := d.clock.NewTimer(d.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		names, err := d.queue.TriggerPending(ctx)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("poll pending triggers", slog.String("err", err.Error()))
			}
			continue
		}
		for _, n := range names {
			if w, ok := d.workers[n]; ok {
				w.wake()
			}
		}
	}
}

// work serves w's triggers until ctx is done; runs use runCtx.
func (d *Daemon) work(ctx, runCtx context.Context, w *worker) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		}
		d.drain(ctx, runCtx, w)
	}
}

// drain takes w's lock and runs the pending triggers until none is left
// or ctx is done. Without the lock (another process runs the pipeline) it
// leaves them to the holder.
func (d *Daemon) drain(ctx, runCtx context.Context, w *worker) {
	log := d.log.With(slog.String("pipeline", w.name))
	unlock, err := d.store.Lock(runCtx, w.name)
	if errors.Is(err, state.ErrLocked) {
		d.m.lockBusy.WithLabelValues(w.name).Inc()
		log.Debug("pipeline locked by another process; its holder runs the pending triggers")
		return
	}
	if err != nil {
		log.Error("lock pipeline", slog.String("err", err.Error()))
		return
	}
	defer func() {
		if err := unlock(); err != nil {
			log.Error("unlock pipeline", slog.String("err", err.Error()))
		}
	}()
	for ctx.Err() == nil {
		ts, err := d.queue.TriggerClaim(runCtx, w.name)
		if err != nil {
			log.Error("claim triggers", slog.String("err", err.Error()))
			return
		}
		if len(ts) == 0 {
			return
		}
		d.runOnce(runCtx, w, ts, log)
		if runCtx.Err() != nil {
			return
		}
	}
}

// runOnce runs the claimed triggers ts as one run and marks them done,
// unless the run was cancelled by shutdown: then they stay pending for the
// next lock holder.
func (d *Daemon) runOnce(runCtx context.Context, w *worker, ts []state.QueuedTrigger, log *slog.Logger) {
	mode, _ := ParseMode(ts[0].Mode)
	ids := make([]int64, 0, len(ts))
	for _, t := range ts {
		m, err := ParseMode(t.Mode)
		if err != nil {
			m = ModeIncremental
		}
		mode = mode.Merge(m)
		ids = append(ids, t.ID)
	}
	reason := ts[0].Reason
	w.mu.Lock()
	w.running = true
	w.mu.Unlock()
	d.m.running.WithLabelValues(w.name).Set(1)
	// The webhook rows kept so far are the run's: released when it
	// succeeds, kept (bounded) for the next run when it fails.
	var gen uint64
	if d.rows != nil {
		gen = d.rows.Mark(w.name)
	}
	start := d.clock.Now()
	log.Info("run starting", slog.String("mode", string(mode)), slog.String("trigger", string(reason)),
		slog.Int("triggers", len(ts)), slog.Int64("first_trigger_id", ids[0]))
	run, err := d.runner.Run(runCtx, w.name, reason, mode)
	elapsed := d.clock.Now().Sub(start)
	w.mu.Lock()
	w.running = false
	w.mu.Unlock()
	d.m.running.WithLabelValues(w.name).Set(0)
	rlog := log.With(slog.Int64("run_id", run.ID))
	if err != nil && runCtx.Err() != nil {
		d.m.observeRun(w.name, "cancelled", run, elapsed.Seconds())
		rlog.Warn("run cancelled by shutdown; its triggers stay queued", slog.String("err", err.Error()))
		return
	}
	outcome := "succeeded"
	if err != nil {
		outcome = "failed"
	}
	d.m.observeRun(w.name, outcome, run, elapsed.Seconds())
	if err == nil && d.rows != nil {
		d.rows.Release(w.name, gen)
		d.observeBuffer(w.name)
	}
	if err == nil {
		d.m.lastSuccess.WithLabelValues(w.name).Set(float64(d.clock.Now().UnixNano()) / 1e9)
		rlog.Info("run succeeded", slog.Duration("duration", elapsed))
	} else {
		rlog.Error("run failed", slog.Duration("duration", elapsed), slog.String("err", err.Error()))
	}
	if derr := d.queue.TriggerDone(context.WithoutCancel(runCtx), ids, run.ID); derr != nil {
		rlog.Error("mark triggers done", slog.String("err", derr.Error()))
	}
	if err == nil {
		d.evalAfter(runCtx, w, run)
	}
}

// pipelineNames returns the configured names in config order.
func (d *Daemon) pipelineNames() []string { return slices.Clone(d.names) }
