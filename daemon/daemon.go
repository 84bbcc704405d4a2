// Package daemon runs kgsync's pipelines as a service: cron schedules,
// Grist webhooks, manual triggers over an HTTP API, health and Prometheus
// metrics, graceful shutdown, and safe runs with several replicas on one
// Postgres (design.md, "Triggers" and "Scale-out"; docs/daemon.md).
//
// A pipeline run is a River job (SyncArgs; github.com/riverqueue/river),
// in River's tables next to the state store's: riverpgxv5 for Postgres,
// riversqlite for the embedded SQLite default. Every trigger — a schedule
// firing (River periodic jobs, inserted by River's elected leader), a
// webhook burst, an API call — inserts one or joins the one already queued
// for the pipeline (River unique jobs; Daemon.Trigger). Any replica works
// it: the job takes the pipeline's lock (Store.Lock: a Postgres advisory
// lock, or a file lock for SQLite) or snoozes while another process holds
// it, so a pipeline runs on one replica at a time. A failed run is retried
// by River with back-off up to max_attempts; a replica that dies mid-run
// leaves its job running in River, and another replica takes it over once
// the pipeline's lock is free (takeover.go), with River's rescuer as the
// backstop.
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

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/robfig/cron/v3"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/state"
)

// Runner runs one pipeline once. The daemon calls it from a River job
// while holding the pipeline's lock (Store.Lock), so the implementation
// must not take that lock again. It returns the run as recorded in state
// (ID 0 when the run failed before its run row was opened) and the run's
// error; when ctx is cancelled (shutdown, run_timeout, a cancelled job)
// the run stops before its next commit.
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
	// Store holds the runs, the pipeline locks and the job generations
	// (state.JobGenerations), and River's tables: a *postgres.Store or a
	// *sqlite.Store, migrated (their Migrate applies River's migrations).
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
	// Logger receives the daemon's logs (River's from warn up); nil
	// discards.
	Logger *slog.Logger
	// Clock is the time source of debounce windows, the grace period, the
	// dead-job watch and verify (default SystemClock). River keeps time
	// with package time.
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
	// MCP, when set, serves the assistant tools (package assistant) at
	// /mcp, behind the API's bearer token like /api.
	MCP http.Handler
}

// Daemon serves the pipelines of one config. Create it with New, start it
// with Run (once: Run closes the job queue's connections when it returns).
type Daemon struct {
	cfg     config.Daemon
	store   state.Store
	gens    state.JobGenerations
	jobs    queue
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
	mcp      http.Handler // /mcp, nil: not served

	verify      VerifyFunc               // nil: no periodic verify
	verifyGauge *prometheus.GaugeVec     // kgsync_verify_differences{pipeline}
	verified    func(string, int, error) // tests: called after each verify

	eval  EvalFunc     // nil: no golden set evaluation
	evalM *evalMetrics // kgsync_eval_*{pipeline}

	workers map[string]*worker
	names   []string // pipeline names in config order
	running sync.Map // job id → struct{}: SyncArgs jobs this process is working

	mu       sync.Mutex
	dropped  map[string]int64 // RowBuffer.Dropped last observed, by pipeline
	stopping bool             // no new triggers
	abort    func()           // cancels running runs and makes Run return
}

// worker is the per-pipeline state of this replica.
type worker struct {
	name     string
	schedule string
	zone     string
	sched    cron.Schedule // nil without a schedule
	loc      *time.Location
	hooks    *collector
	tables   hookTables // the Grist tables whose deliveries it accepts

	mu        sync.Mutex
	running   int  // runs of the pipeline in this process (0 or 1)
	evaluated bool // the golden set ran since start
}

func (w *worker) setRunning(delta int) {
	w.mu.Lock()
	w.running += delta
	w.mu.Unlock()
}

// New checks opts and returns a Daemon with its River client (not started).
// Zero PollInterval, MaxBodyBytes, RunTimeout, MaxAttempts and
// RetryBackoff in the config mean their defaults.
func New(opts Options) (*Daemon, error) {
	if opts.Config == nil || opts.Store == nil || opts.Runner == nil {
		return nil, errors.New("new daemon: config, store and runner are required")
	}
	gens, ok := opts.Store.(state.JobGenerations)
	if !ok {
		return nil, fmt.Errorf("new daemon: state store %T keeps no job generations", opts.Store)
	}
	d := &Daemon{
		cfg: opts.Config.Daemon, store: opts.Store, gens: gens, runner: opts.Runner,
		checks: map[string]Pinger{}, rowSink: opts.RowSink, log: opts.Logger, clock: opts.Clock,
		workers: map[string]*worker{}, limits: opts.HTTP.withDefaults(), insecure: opts.InsecureNoAuth, dropped: map[string]int64{},
		mcp: opts.MCP,
	}
	if d.cfg.PollInterval <= 0 {
		d.cfg.PollInterval = config.DefaultDaemonPollInterval
	}
	if d.cfg.MaxBodyBytes <= 0 {
		d.cfg.MaxBodyBytes = config.DefaultDaemonMaxBodyBytes
	}
	if d.cfg.RunTimeout <= 0 {
		d.cfg.RunTimeout = config.DefaultDaemonRunTimeout
	}
	if d.cfg.MaxAttempts <= 0 {
		d.cfg.MaxAttempts = config.DefaultDaemonMaxAttempts
	}
	if d.cfg.RetryBackoff <= 0 {
		d.cfg.RetryBackoff = config.DefaultDaemonRetryBackoff
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.clock == nil {
		d.clock = SystemClock{}
	}
	if d.rowSink == nil {
		d.rows = NewBoundedRowBuffer(d.cfg.WebhookBufferRows).WithByteLimit(d.cfg.WebhookBufferBytes)
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
	parser := cron.NewParser(config.ScheduleFields)
	for i := range opts.Config.Pipelines {
		pc := &opts.Config.Pipelines[i]
		w := &worker{name: pc.Name, schedule: pc.Schedule, zone: pc.TimeZone, loc: time.UTC}
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
		w.hooks = newCollector(d.cfg.WebhookBufferRows, d.cfg.WebhookBufferBytes)
		w.tables = newHookTables(pc)
		d.workers[pc.Name] = w
		d.names = append(d.names, pc.Name)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("new daemon: register metrics: %w", err)
	}
	d.m = m
	for _, name := range d.names {
		m.initPipeline(name)
	}
	// Records in quarantine from earlier runs, until this replica's first run.
	if qs, err := opts.Store.QuarantineList(context.Background(), ""); err == nil {
		for _, q := range qs {
			if _, ok := d.workers[q.Pipeline]; ok {
				m.quarantined.WithLabelValues(q.Pipeline).Inc()
			}
		}
	}
	d.countJobs(nil) // kgsync_jobs at 0 until the first poll
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
	if d.jobs, err = newQueue(opts.Store, d.riverConfig()); err != nil {
		return nil, fmt.Errorf("new daemon: %w", err)
	}
	return d, nil
}

// riverConfig is the River client's configuration: the two queues, the
// workers, one periodic job per scheduled pipeline, and timeouts, retries
// and polling from the daemon config.
func (d *Daemon) riverConfig() *river.Config {
	workers := river.NewWorkers()
	river.AddWorker(workers, &syncWorker{d: d})
	river.AddWorker(workers, &scheduleWorker{d: d})
	var periodic []*river.PeriodicJob
	for _, name := range d.names {
		w := d.workers[name]
		if w.sched == nil {
			continue
		}
		periodic = append(periodic, river.NewPeriodicJob(zonedSchedule{w.sched, w.loc},
			func() (river.JobArgs, *river.InsertOpts) { return ScheduleArgs{Pipeline: name}, nil },
			&river.PeriodicJobOpts{ID: "kgsync_schedule_" + name}))
	}
	poll := min(d.cfg.PollInterval, time.Second)
	return &river.Config{
		Queues: map[string]river.QueueConfig{
			QueueSync:     {MaxWorkers: d.maxRuns()},
			QueueSchedule: {MaxWorkers: 1},
		},
		Workers:              workers,
		PeriodicJobs:         periodic,
		FetchPollInterval:    poll,
		FetchCooldown:        min(poll, 10*time.Millisecond),
		JobTimeout:           d.cfg.RunTimeout,
		RescueStuckJobsAfter: d.cfg.RunTimeout + time.Minute,
		MaxAttempts:          d.cfg.MaxAttempts,
		RetryPolicy:          retryPolicy{base: d.cfg.RetryBackoff, max: max(10*time.Minute, d.cfg.RetryBackoff)},
		Logger:               slog.New(minLevel{d.log.Handler(), slog.LevelWarn}),
	}
}

// maxRuns is how many runs this replica works at once: one per pipeline
// on SQLite; on Postgres half the store pool's connections (at least one),
// since a run holds one for its lock and needs another for its queries.
func (d *Daemon) maxRuns() int {
	n := max(1, len(d.names))
	if p, ok := d.store.(interface{ Pool() *pgxpool.Pool }); ok {
		n = min(n, max(1, int(p.Pool().Config().MaxConns)/2))
	}
	return n
}

// minLevel drops records below min (River's info logs of its own
// services).
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}
func (h minLevel) WithGroup(g string) slog.Handler { return minLevel{h.Handler.WithGroup(g), h.min} }

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

// Trigger queues a run of pipeline name as a River job, or joins the job
// already queued for it (see SyncArgs; Queued says which). It returns
// ErrUnknownPipeline or ErrStopping, or the queue's error.
func (d *Daemon) Trigger(ctx context.Context, name string, mode Mode, reason state.Trigger) (Queued, error) {
	w, ok := d.workers[name]
	if !ok {
		return Queued{}, fmt.Errorf("trigger %q: %w", name, ErrUnknownPipeline)
	}
	if d.isStopping() {
		return Queued{}, fmt.Errorf("trigger %q: %w", name, ErrStopping)
	}
	return d.enqueue(ctx, w, mode, reason)
}

// Handler returns the daemon's HTTP handler (see docs/daemon.md for the
// routes).
func (d *Daemon) Handler() http.Handler { return d.browserGuard(d.routes()) }

// Run starts the River client (its workers, and its periodic jobs when it
// is elected leader), the webhook collectors, the dead-job watch and, when
// ln is not nil, the HTTP server on ln, and blocks until ctx is cancelled.
// Then it stops taking triggers (the API and webhooks answer 503, the
// HTTP server shuts down), queues the webhook rows it holds, stops
// fetching jobs and lets running runs finish for the config's grace
// period, then cancels them (a cancelled run stops before its next commit
// and its job is queued again for another replica or the next start) and
// waits for them. It returns nil after a clean stop, ErrGraceExpired when
// runs had to be cancelled, or the HTTP server's or River's error. Abort
// makes it return at once. On a listener that is not Loopback, without
// daemon.api_token and without Options.InsecureNoAuth, it closes ln and
// returns ErrOpenAPI before starting anything.
func (d *Daemon) Run(ctx context.Context, ln net.Listener) error {
	defer d.jobs.close()
	if ln != nil && d.cfg.APIToken == "" && !Loopback(ln.Addr()) {
		if !d.insecure {
			_ = ln.Close()
			return fmt.Errorf("listen on %s: %w", ln.Addr(), ErrOpenAPI)
		}
		d.log.Warn("the API is open to the network: no daemon.api_token on a non-loopback address (--insecure-no-auth); "+
			"anyone who reaches it can queue runs, re-embeddings and mass deletes", slog.String("addr", ln.Addr().String()))
	}
	aborted := make(chan struct{})
	var abortOnce sync.Once
	d.mu.Lock()
	d.abort = func() { abortOnce.Do(func() { d.jobs.cancel(); close(aborted) }) }
	d.mu.Unlock()
	// River stops through stop and cancel below, not through ctx.
	if err := d.jobs.start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start job queue: %w", err)
	}

	var hooks sync.WaitGroup // collectors: they flush rows into jobs when ctx ends
	var side sync.WaitGroup
	for _, name := range d.names {
		w := d.workers[name]
		hooks.Add(1)
		go func() { defer hooks.Done(); d.collect(ctx, w) }()
	}
	side.Add(1)
	go func() { defer side.Done(); d.watch(ctx) }()
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
	hooks.Wait()
	stopped := make(chan error, 1)
	go func() { stopped <- d.jobs.stop(context.Background()) }()
	grace := d.clock.NewTimer(d.cfg.GracePeriod)
	defer grace.Stop()
	select {
	case serr := <-stopped:
		err = errors.Join(err, serr)
	case <-aborted:
		return errors.Join(err, errors.New("daemon aborted"))
	case <-grace.C():
		d.log.Warn("grace period over: cancelling running runs")
		d.jobs.cancel()
		select {
		case <-stopped:
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

// pipelineNames returns the configured names in config order.
func (d *Daemon) pipelineNames() []string { return slices.Clone(d.names) }
