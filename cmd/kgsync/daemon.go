package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/daemon"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// envAPIToken names the environment variable `sync --remote` reads the
// daemon's API token from when --token is not given.
const envAPIToken = "KGSYNC_API_TOKEN"

func newDaemonCmd(g *globals) *cobra.Command {
	var listen string
	var insecure bool
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the schedules and serve webhooks, the HTTP API, health and metrics until stopped",
		Long: `Run the pipelines' schedules and serve HTTP until SIGTERM or SIGINT
(docs/daemon.md): Grist webhooks on POST /hooks/grist/{pipeline}/{table},
the API on /api/..., /healthz, /readyz and /metrics.

Runs are River jobs in the state database (docs/daemon.md, "Jobs and
replicas"): several daemons on one Postgres share them, each pipeline
running on one replica at a time.

On the first signal the daemon stops taking triggers and lets running runs
finish for daemon.grace_period, then cancels them (a cancelled run stops
before its next commit and its job is queued again); a second signal
cancels them at once.

The default address is 127.0.0.1:8080 (this machine only). On an address
other machines can reach (":8080", "0.0.0.0:8080") the daemon refuses to
start without daemon.api_token, unless --insecure-no-auth is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDaemon(cmd.Context(), g, listen, insecure)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "HTTP address host:port (default: the config's daemon.listen, 127.0.0.1:8080)")
	cmd.Flags().BoolVar(&insecure, "insecure-no-auth", false,
		"serve the API without daemon.api_token on an address other machines can reach (logs a warning)")
	return cmd
}

// daemonLogger is the config's logger (log.level, log.format) unless
// --log-level or -v is given.
func daemonLogger(g *globals, cfg *config.Config) *slog.Logger {
	if g.logLevel != "" || g.verbose {
		return g.logger(cfg)
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(g.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(g.stderr, opts))
}

func runDaemon(ctx context.Context, g *globals, listen string, insecure bool) error {
	cfg, err := g.load()
	if err != nil {
		return err
	}
	log := daemonLogger(g, cfg)
	store, err := pipeline.OpenStore(ctx, cfg.State)
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()

	// Memgraph sinks are checked by /readyz; a sink that is down at start
	// does not stop the daemon, it only keeps /readyz at 503.
	checks := map[string]any{}
	for i := range cfg.Pipelines {
		pc := &cfg.Pipelines[i]
		if pc.Sink == nil || pc.Sink.Type != "memgraph" {
			continue
		}
		schema, err := pipeline.SchemaOf(pc)
		if err != nil {
			return err
		}
		c := newSinkCheck(*pc.Sink, pc.Name, schema, log)
		defer func() { _ = c.Close(context.WithoutCancel(ctx)) }()
		checks["sink of "+pc.Name] = c
	}

	mcpH := &mcpHandler{cfg: cfg, store: store, log: log}
	defer mcpH.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	runner := &pipelineRunner{cfg: cfg, store: store, log: log}
	d, err := daemon.New(daemon.Options{
		Config: cfg, Store: store, Runner: runner,
		Checks: checks, Registerer: reg, Gatherer: reg, Logger: log,
		Verify: daemonVerify(cfg, store, log), Eval: daemonEval(cfg, store, log), InsecureNoAuth: insecure,
		MCP: mcpH,
	})
	if err != nil {
		return err
	}
	runner.inflight = d.InFlight // before Run: no run has started yet
	if listen == "" {
		listen = cfg.Daemon.Listen
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listen, err)
	}
	// A second signal, after the first cancelled ctx, aborts at once.
	go func() {
		<-ctx.Done()
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sig)
		select {
		case <-sig:
			log.Warn("second signal: cancelling running runs now")
			d.Abort()
		case <-time.After(cfg.Daemon.GracePeriod + time.Minute):
		}
	}()
	if err := d.Run(ctx, ln); err != nil {
		if errors.Is(err, daemon.ErrOpenAPI) {
			return &exitError{code: 2, err: err}
		}
		return &exitError{code: 1, err: err}
	}
	return nil
}

// pipelineRunner is the daemon's Runner: it builds the pipeline from the
// config for each run (so sources, embedder and sink are fresh) and runs it.
type pipelineRunner struct {
	cfg   *config.Config
	store state.Store
	log   *slog.Logger
	// inflight receives a run's writer bytes in flight by pipeline name
	// (daemon.Daemon.InFlight); nil drops them.
	inflight func(name string, bytes int)
}

// pipelineMode maps the daemon's mode names onto pipeline.Mode, as
// `kgsync resync` does for its flags; a mode confirming a mass delete
// (daemon.Mode.AllowsMassDelete) sets AllowMassDelete.
func pipelineMode(m daemon.Mode) pipeline.Mode {
	var pm pipeline.Mode
	switch m.Base() {
	case daemon.ModeFull:
		pm = pipeline.Mode{Full: true}
	case daemon.ModeReembed:
		pm = pipeline.Mode{Reembed: true}
	case daemon.ModeRebuildGraph:
		pm = pipeline.Mode{RebuildGraph: true}
	}
	pm.AllowMassDelete = m.AllowsMassDelete()
	return pm
}

// Run builds and runs pipeline name once.
func (r *pipelineRunner) Run(ctx context.Context, name string, trigger state.Trigger, mode daemon.Mode) (state.Run, error) {
	pc, ok := r.cfg.Pipeline(name)
	if !ok {
		return state.Run{}, fmt.Errorf("no pipeline %q", name)
	}
	p, err := pipeline.Build(ctx, r.cfg, pc, r.store, r.log)
	if err != nil {
		return state.Run{}, fmt.Errorf("pipeline %q: %w", name, err)
	}
	p.LockHeld = true // the daemon's job took it
	defer func() { _ = p.Sink.Close(context.WithoutCancel(ctx)) }()
	if r.inflight != nil {
		p.InFlightFunc = func(bytes int) { r.inflight(name, bytes) }
	}
	res, err := p.Run(ctx, trigger, pipelineMode(mode))
	return res.Run, err
}

// remoteSync asks the daemon at base to run the named pipelines (all of
// them when none is named, as GET /api/pipelines lists them) and prints
// one line per pipeline with the job that will run it (a new one, or the
// one already queued that the request joined), or the job's JSON with
// asJSON. allowMassDelete confirms mass deletes (allow_mass_delete=true).
func remoteSync(ctx context.Context, g *globals, base, token string, names []string, asJSON, allowMassDelete bool) error {
	if token == "" {
		token = os.Getenv(envAPIToken)
	}
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &exitError{code: 2, err: fmt.Errorf("--remote %q: want an http(s) URL such as http://kgsync:8080", base)}
	}
	client := &http.Client{Timeout: 30 * time.Second}
	call := func(method, path string, out any) error {
		req, err := http.NewRequestWithContext(ctx, method, u.String()+path, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return fmt.Errorf("%s %s: read response: %w", method, path, err)
		}
		if resp.StatusCode/100 != 2 {
			var e struct{ Error string }
			_ = json.Unmarshal(body, &e)
			return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, e.Error)
		}
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("%s %s: decode response: %w", method, path, err)
		}
		return nil
	}
	if len(names) == 0 {
		var list struct{ Pipelines []daemon.PipelineJSON }
		if err := call("GET", "/api/pipelines", &list); err != nil {
			return err
		}
		for _, p := range list.Pipelines {
			names = append(names, p.Name)
		}
	}
	query := "?mode=incremental"
	if allowMassDelete {
		query += "&allow_mass_delete=true"
	}
	var failed []error
	for _, n := range names {
		var j daemon.JobJSON
		if err := call("POST", "/api/pipelines/"+url.PathEscape(n)+"/sync"+query, &j); err != nil {
			failed = append(failed, err)
			continue
		}
		switch {
		case asJSON:
			line, _ := json.Marshal(j)
			fmt.Fprintln(g.stdout, string(line))
		case j.Coalesced:
			fmt.Fprintf(g.stdout, "%s: joined job %d (%s, %s) on %s\n", n, j.ID, j.Mode, j.State, u.Host)
		default:
			fmt.Fprintf(g.stdout, "%s: queued as job %d on %s\n", n, j.ID, u.Host)
		}
	}
	if len(failed) > 0 {
		return &exitError{code: 1, err: errors.Join(failed...)}
	}
	return nil
}
