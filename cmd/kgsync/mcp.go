package main

import (
	"context"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/assistant"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
)

func newMCPCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp [PIPELINE...]",
		Short: "Serve the pipelines' graph to an assistant over MCP on stdin/stdout",
		Long: `Serve the named pipelines (default: all) as Model Context Protocol tools
over stdio, for desktop assistants that start kgsync as a subprocess:
schema, search, lookup, term, neighbors, rows and, on a Memgraph sink,
cypher (read-only); the data model as resource kgsync://schema/PIPELINE
and the config's assistant.playbook as prompt "playbook". Every tool only
reads: state and the sink are never written, so a sync can run beside it.
Logs go to stderr; docs/assistant-tools.md describes each tool.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			e, err := g.openRead(ctx)
			if err != nil {
				return err
			}
			defer e.Close()
			srv, closeAll, err := buildAssistant(ctx, e, args)
			if err != nil {
				return err
			}
			defer closeAll()
			return srv.RunStdio(ctx)
		},
	}
	return cmd
}

// buildAssistant builds the named pipelines (all when none is named) and
// an assistant server over them; closeAll closes their sinks.
func buildAssistant(ctx context.Context, e *env, names []string) (*assistant.Server, func(), error) {
	pcs, err := e.selectPipelines(names)
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
		p, err := pipeline.Build(ctx, e.cfg, pc, e.store, e.log)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		ps = append(ps, p)
	}
	srv, err := assistant.New(assistantOptions(e.cfg, ps, e))
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return srv, closeAll, nil
}

func assistantOptions(cfg *config.Config, ps []*pipeline.Pipeline, e *env) assistant.Options {
	return assistant.Options{Pipelines: ps, Playbook: cfg.Assistant.Playbook, Version: buildVersion(), Logger: e.log}
}

// buildVersion is the module version kgsync was built as ("(devel)" from a
// work tree).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
}
