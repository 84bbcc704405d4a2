package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/assistant"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

func newMCPCmd(g *globals) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "mcp [PIPELINE...]",
		Short: "Serve the pipelines' graph to an assistant over MCP on stdin/stdout",
		Long: `Serve the named pipelines (default: all) as Model Context Protocol tools
over stdio, for desktop assistants that start kgsync as a subprocess:
schema, search, lookup, term, neighbors, rows and, on a Memgraph sink,
cypher (read-only); the data model as resource kgsync://schema/PIPELINE
and the config's assistant.playbook as prompt "playbook". Every tool only
reads: state and the sink are never written, so a sync can run beside it.
Logs go to stderr; docs/assistant-tools.md describes each tool.

--http 127.0.0.1:PORT serves the same over streamable HTTP at /mcp on a
loopback address instead (no token: for a local client or the protocol
conformance suite; the daemon serves /mcp behind its API token).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			e, err := g.openRead(ctx)
			if err != nil {
				return err
			}
			defer e.Close()
			srv, closeAll, err := buildAssistant(ctx, e.cfg, e.store, e.log, args)
			if err != nil {
				return err
			}
			defer closeAll()
			if listen != "" {
				return serveMCPHTTP(ctx, g, srv, listen)
			}
			return srv.RunStdio(ctx)
		},
	}
	cmd.Flags().StringVar(&listen, "http", "", "serve streamable HTTP at /mcp on this loopback host:port instead of stdio")
	return cmd
}

// buildAssistant builds the named pipelines (all when none is named) and
// an assistant server over them; closeAll closes their sinks.
func buildAssistant(ctx context.Context, cfg *config.Config, store state.Store, log *slog.Logger, names []string) (*assistant.Server, func(), error) {
	pcs, err := (&env{cfg: cfg}).selectPipelines(names)
	if err != nil {
		return nil, nil, err
	}
	var ps []*pipeline.Pipeline
	closeAll := func() {
		for _, p := range ps {
			_ = p.Sink.Close(context.WithoutCancel(ctx))
		}
	}
	for _, pc := range pcs {
		p, err := pipeline.Build(ctx, cfg, pc, store, log)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		ps = append(ps, p)
	}
	srv, err := assistant.New(assistant.Options{Pipelines: ps, Playbook: cfg.Assistant.Playbook, Version: buildVersion(), Logger: log})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return srv, closeAll, nil
}

// mcpHandler serves the assistant tools over streamable HTTP for the
// daemon's /mcp. It builds the pipelines on the first request (a Memgraph
// that is down at start does not stop the daemon) and again after a
// failed build, answering 503 with the reason meanwhile.
type mcpHandler struct {
	cfg   *config.Config
	store state.Store
	log   *slog.Logger

	mu      sync.Mutex
	h       http.Handler
	closeFn func()
}

func (m *mcpHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	if m.h == nil {
		srv, closeAll, err := buildAssistant(r.Context(), m.cfg, m.store, m.log, nil)
		if err != nil {
			m.mu.Unlock()
			m.log.Warn("mcp: build the assistant tools", "err", err)
			http.Error(rw, "assistant tools unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		m.closeFn = closeAll
		m.h = srv.HTTPHandler()
	}
	h := m.h
	m.mu.Unlock()
	h.ServeHTTP(rw, r)
}

// Close closes the pipelines' sinks.
func (m *mcpHandler) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closeFn != nil {
		m.closeFn()
	}
}

// buildVersion is the module version kgsync was built as ("(devel)" from a
// work tree).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
}

// serveMCPHTTP serves srv at /mcp on listen, a loopback address, until ctx
// is done.
func serveMCPHTTP(ctx context.Context, g *globals, srv *assistant.Server, listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--http %q: %w", listen, err)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return &exitError{code: 2, err: fmt.Errorf("--http %q: not a loopback address; serve other machines through the daemon's /mcp, behind its API token", listen)}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(g.stderr, "kgsync mcp: serving http://%s/mcp\n", ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
