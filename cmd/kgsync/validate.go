package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/memgraph"
)

// serverChecker is a sink that can check its server against a schema
// (memgraph.Sink.Check).
type serverChecker interface {
	Check(ctx context.Context, schema sink.Schema) (memgraph.ServerInfo, error)
}

func newValidateCmd(g *globals) *cobra.Command {
	var online bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Load and check the config; print every problem (exit 3 when there are any)",
		Long: "Load and check the config, and that pipelines writing to one graph agree on the indexes they share. " +
			"With --online, also connect to each Memgraph sink and check the server: its version (3.1 or later; which row of " +
			"docs/memgraph-support.md's table it is, so whether text search is on the server or in kgsync's state) and, " +
			"when the pipeline writes edge properties, that it stores them (--storage-properties-on-edges=true). " +
			"The data model is checked against the CSV headers, and with --online against each live Grist document: " +
			"tables, columns, column types against each attribute's use (embeddable text, Ref links and their targets, single-value keys).",
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.loadOnly()
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%s: %d pipeline(s)\n", g.configPath, len(cfg.Pipelines))
			// Online, a Grist source is described as a sync from its
			// stored cursor reads it (renames followed).
			var cursor func(pipeline, source string) string
			if online {
				if e, err := g.openRead(cmd.Context()); err == nil {
					defer e.Close()
					cursor = func(pipeline, source string) string {
						c, _ := e.store.CursorGet(cmd.Context(), pipeline, source)
						return c
					}
				}
			}
			var problems []error
			if errs := config.CheckPaths(cfg); len(errs) > 0 {
				for _, err := range errs {
					fmt.Fprintf(g.stdout, "  path: %v\n", err)
				}
				problems = append(problems, errs...)
			}
			for i := range cfg.Pipelines {
				p := &cfg.Pipelines[i]
				sched := p.Schedule
				if sched == "" {
					sched = "no schedule"
				}
				fmt.Fprintf(g.stdout, "  %s: %d source(s), sink %s, embedder %s, %s\n", p.Name, len(p.Sources), p.Sink.Type, p.Embedder.Provider, sched)
				if err := checkSources(cmd.Context(), g.stdout, cfg, p, i, online, timeout, cursor); err != nil {
					problems = append(problems, fmt.Errorf("pipeline %q: %w", p.Name, err))
				}
				if online {
					line, err := checkOnline(cmd.Context(), p, timeout)
					if err != nil {
						problems = append(problems, fmt.Errorf("pipeline %q: %w", p.Name, err))
						fmt.Fprintf(g.stdout, "    server: FAILED: %v\n", err)
						continue
					}
					fmt.Fprintf(g.stdout, "    server: %s\n", line)
				}
			}
			if len(problems) > 0 {
				return &exitError{code: 3, err: errors.Join(problems...), shown: "the config has the problems listed above"}
			}
			fmt.Fprintf(g.stdout, "%s: ok, %d pipeline(s)\n", g.configPath, len(cfg.Pipelines))
			return nil
		},
	}
	cmd.Flags().BoolVar(&online, "online", false, "also check each Memgraph sink's server and each Grist document's tables and columns")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "bound on each --online check")
	return cmd
}

// checkOnline checks pipeline p's server and describes it; a CYPHERL sink
// has no server to ask, so the line says what loading the files needs.
func checkOnline(ctx context.Context, p *config.Pipeline, timeout time.Duration) (string, error) {
	schema, err := pipeline.SchemaOf(p)
	if err != nil {
		return "", err
	}
	if p.Sink.Type != "memgraph" {
		var need []string
		for _, e := range schema.Edges {
			if e.NeedsProperties() {
				need = append(need, e.Type)
			}
		}
		version := sink.DefaultCypherlMemgraphVersion
		if p.Sink.Cypherl != nil && p.Sink.Cypherl.MemgraphVersion != "" {
			version = p.Sink.Cypherl.MemgraphVersion
		}
		row, err := sink.MemgraphFeatures(version)
		if err != nil {
			return "", err
		}
		line := "CYPHERL files for Memgraph " + version + " (" + row.Versions() + ")"
		if len(need) > 0 {
			line += ", loaded into a server started with " + memgraph.FlagEdgeProperties + " (edges " + strings.Join(need, ", ") + " carry properties)"
		}
		return line + ", " + textSearchNote(row.TextIndexes || len(schema.TextIndexes) == 0), nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sk, err := pipeline.NewSink(ctx, *p.Sink, p.Name, nil)
	if err != nil {
		return "", err
	}
	defer func() { _ = sk.Close(context.WithoutCancel(ctx)) }()
	c, ok := sk.(serverChecker)
	if !ok {
		return "connected", nil
	}
	info, err := c.Check(ctx, schema)
	if err != nil {
		return "", err
	}
	props := "off"
	if info.EdgeProperties {
		props = "on"
	}
	server := "Memgraph"
	if p.Sink.Memgraph.Dialect == "neo4j" {
		server = "Neo4j"
	}
	return fmt.Sprintf("%s %s, edge properties %s, %s", server, info.Version, props,
		textSearchNote(info.TextSearch || len(schema.TextIndexes) == 0)), nil
}

// textSearchNote says where a pipeline's lexical search comes from: the
// server's text indexes, or (Memgraph before 3.6) kgsync's state
// (docs/memgraph-support.md).
func textSearchNote(server bool) string {
	if server {
		return "text search on the server"
	}
	return "no text search on the server (before 3.6): lexical search from kgsync's state"
}
