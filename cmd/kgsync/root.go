package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/postgres"
	"github.com/kgsync/kgsync/state/sqlite"
)

// exitError carries a process exit code through cobra.
type exitError struct {
	code int
	err  error
	// shown, when set, is what run prints instead of err: the command
	// already printed err's parts (a run's summary, validate's lines), and
	// each error is printed once.
	shown string
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// globals are the flags every command shares.
type globals struct {
	configPath string
	logLevel   string
	verbose    bool
	stdout     io.Writer
	stderr     io.Writer
}

// run executes the CLI with args and returns the process exit code: 0 on
// success, 1 on failure, 2 on usage errors, 3 for config problems (validate).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:           "kgsync",
		Short:         "Keep a Memgraph knowledge graph in step with documents, Grist and HTTP APIs",
		Long:          "kgsync hashes every record, chunks documents by structure, embeds only what changed and upserts nodes, edges and vector indexes into Memgraph (or a CYPHERL file), keeping its sync state in SQLite or Postgres.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVarP(&g.configPath, "config", "c", "kgsync.yaml", "config file")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "", "log level: debug, info, warn, error (default warn; the daemon uses the config's log.level)")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log at info level")
	root.AddCommand(
		newSyncCmd(g),
		newPlanCmd(g),
		newResyncCmd(g),
		newStatusCmd(g),
		newValidateCmd(g),
		newMigrateCmd(g),
		newSchemaCmd(g),
		newSearchCmd(g),
		newEvalCmd(g),
		newDaemonCmd(g),
		newVerifyCmd(g),
		newGristCmd(g),
		newMCPCmd(g),
	)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.shown != "" {
			fmt.Fprintln(stderr, "kgsync:", ee.shown)
		} else {
			fmt.Fprintln(stderr, "kgsync:", err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "kgsync:", err)
	if strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") ||
		strings.Contains(err.Error(), "accepts") || strings.Contains(err.Error(), "flag needs") {
		return 2
	}
	return 1
}

// logger builds the CLI's logger on stderr.
func (g *globals) logger(cfg *config.Config) *slog.Logger {
	level := slog.LevelWarn
	name := g.logLevel
	if name == "" && g.verbose {
		name = "info"
	}
	if name != "" {
		_ = level.UnmarshalText([]byte(name))
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg != nil && cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(g.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(g.stderr, opts))
}

// load reads and validates the config file, and refuses what `validate`
// rejects offline (pipeline.CheckConfig): every command but validate
// loads through it.
func (g *globals) load() (*config.Config, error) {
	cfg, err := g.loadOnly()
	if err != nil {
		return nil, err
	}
	if err := pipeline.CheckConfig(context.Background(), cfg); err != nil {
		return nil, &exitError{code: 3, err: err}
	}
	return cfg, nil
}

// loadOnly reads and validates the config file (config.Load).
func (g *globals) loadOnly() (*config.Config, error) {
	cfg, err := config.Load(g.configPath)
	if err != nil {
		return nil, &exitError{code: 3, err: err}
	}
	// Pipelines writing to one graph share its vector indexes; every
	// command refuses a config where they disagree, before anything is
	// written (docs/memgraph-support.md).
	if err := pipeline.CheckShared(cfg); err != nil {
		return nil, &exitError{code: 3, err: fmt.Errorf("%s: %w", g.configPath, err)}
	}
	return cfg, nil
}

// env is what a command that runs pipelines needs.
type env struct {
	cfg   *config.Config
	store state.Store
	log   *slog.Logger
	// cleanup removes a stand-in state (openRead), nil otherwise.
	cleanup func()
}

func (g *globals) open(ctx context.Context) (*env, error) {
	cfg, err := g.load()
	if err != nil {
		return nil, err
	}
	log := g.logger(cfg)
	store, err := pipeline.OpenStore(ctx, cfg.State)
	if err != nil {
		return nil, err
	}
	return &env{cfg: cfg, store: store, log: log}, nil
}

// openRead is open for commands that only read state (status, plan,
// schema, search, eval, verify without --repair): when the configured
// state does not exist yet (no SQLite file, no Postgres schema), they read
// an empty stand-in in a temporary directory instead of creating it, so
// they answer "never run" and leave nothing behind.
func (g *globals) openRead(ctx context.Context) (*env, error) {
	cfg, err := g.load()
	if err != nil {
		return nil, err
	}
	exists := true
	switch cfg.State.Driver {
	case "", "sqlite":
		if _, err := os.Stat(cfg.State.Path); errors.Is(err, fs.ErrNotExist) {
			exists = false
		}
	case "postgres":
		if exists, err = postgres.SchemaExists(ctx, cfg.State.DSN, cfg.State.Schema); err != nil {
			return nil, fmt.Errorf("open postgres state: %w", err)
		}
	}
	if exists {
		return g.open(ctx)
	}
	dir, err := os.MkdirTemp("", "kgsync-empty-state-")
	if err != nil {
		return nil, err
	}
	store, err := sqlite.Open(ctx, filepath.Join(dir, "state.db"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &env{cfg: cfg, store: store, log: g.logger(cfg), cleanup: func() { _ = os.RemoveAll(dir) }}, nil
}

func (e *env) Close() {
	_ = e.store.Close()
	if e.cleanup != nil {
		e.cleanup()
	}
}

// selectPipelines returns the named pipelines, or all of them.
func (e *env) selectPipelines(names []string) ([]*config.Pipeline, error) {
	if len(names) == 0 {
		out := make([]*config.Pipeline, len(e.cfg.Pipelines))
		for i := range e.cfg.Pipelines {
			out[i] = &e.cfg.Pipelines[i]
		}
		return out, nil
	}
	var out []*config.Pipeline
	for _, n := range names {
		p, ok := e.cfg.Pipeline(n)
		if !ok {
			var known []string
			for _, pc := range e.cfg.Pipelines {
				known = append(known, pc.Name)
			}
			return nil, &exitError{code: 2, err: fmt.Errorf("no pipeline %q in %s (pipelines: %s)", n, e.cfgPathHint(), strings.Join(known, ", "))}
		}
		out = append(out, p)
	}
	return out, nil
}

func (e *env) cfgPathHint() string {
	if e.cfg.Dir == "" {
		return "the config"
	}
	return "the config in " + e.cfg.Dir
}

// isTerminal reports whether w is a terminal (for progress bars).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// forPipelines opens the config's state and calls fn for each named
// pipeline (all when none is named), in order; a failing pipeline does not
// stop the others, and the command fails (exit 1) with all their errors.
func (g *globals) forPipelines(ctx context.Context, names []string, fn func(e *env, pc *config.Pipeline) error) error {
	return g.forPipelinesIn(ctx, g.open, names, fn)
}

// forPipelinesIn is forPipelines with the state opened by open.
func (g *globals) forPipelinesIn(ctx context.Context, open func(context.Context) (*env, error), names []string, fn func(e *env, pc *config.Pipeline) error) error {
	e, err := open(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	pcs, err := e.selectPipelines(names)
	if err != nil {
		return err
	}
	var failed []error
	for _, pc := range pcs {
		if err := fn(e, pc); err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		return &exitError{code: 1, err: errors.Join(failed...)}
	}
	return nil
}

// eachPipeline builds the named pipelines (all when none is named) and calls
// fn for each, as forPipelines does.
// The commands using it only read state (openRead).
func (g *globals) eachPipeline(ctx context.Context, names []string, fn func(p *pipeline.Pipeline) error) error {
	return g.forPipelinesIn(ctx, g.openRead, names, func(e *env, pc *config.Pipeline) error {
		p, err := pipeline.Build(ctx, e.cfg, pc, e.store, e.log)
		if err != nil {
			return err
		}
		defer func() { _ = p.Sink.Close(context.WithoutCancel(ctx)) }()
		if err := fn(p); err != nil {
			return fmt.Errorf("pipeline %q: %w", pc.Name, err)
		}
		return nil
	})
}
