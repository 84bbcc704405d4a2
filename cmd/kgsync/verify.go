package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/daemon"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// buildPipeline builds a configured pipeline for verify (pipeline.Build;
// tests replace it to read from an in-memory graph).
var buildPipeline = pipeline.Build

// errCypherlVerify is verify's answer for a pipeline whose sink writes files.
var errCypherlVerify = errors.New("the cypherl sink writes files; verify needs a readable graph (memgraph)")

func newVerifyCmd(g *globals) *cobra.Command {
	var repair, asJSON bool
	var sample int
	cmd := &cobra.Command{
		Use:   "verify PIPELINE [--repair] [--sample N]",
		Short: "Compare the graph with state and optionally repair it",
		Long: `Compare a pipeline's graph with its state: node counts per label, the
stored hashes (_hash) of record and chunk nodes and the texts of chunks,
nodes of the pipeline that state does not know, and the vector indexes
with their dimensions. Memgraph keeps its data in memory: it can come back
empty, from an old snapshot, or edited by hand, while state says "done".

Each difference is one line: missing, stale (hash or text differs), extra,
count (when only a sample was compared) or vector_index.

  --sample N  compare N random records node by node (default: every record
              when there are at most 10000, else 10000; counts are always
              compared in full; a negative N compares counts only)
  --repair    rewrite the missing and stale records from state and the
              embedding cache (no embedding call when the cache is whole),
              delete the extra nodes and recreate missing vector indexes;
              every record is compared
  --json      print the report as one JSON line

Exit status: 0 when the graph matches state (or was repaired), 1 when
differences were found and not repaired or on error. The cypherl sink
cannot be verified: it writes files, not a graph that can be read back.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd.Context(), g, args[0], pipeline.VerifyOptions{Sample: sample, Repair: repair}, asJSON)
		},
	}
	cmd.Flags().BoolVar(&repair, "repair", false, "rewrite what is missing or stale and delete extra nodes")
	cmd.Flags().IntVar(&sample, "sample", 0, "records compared node by node (0 = all up to 10000; negative = counts only)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON line")
	return cmd
}

func runVerify(ctx context.Context, g *globals, name string, opts pipeline.VerifyOptions, asJSON bool) error {
	open := g.openRead
	if opts.Repair {
		open = g.open
	}
	e, err := open(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	pcs, err := e.selectPipelines([]string{name})
	if err != nil {
		return err
	}
	pc := pcs[0]
	if pc.Sink.Type == "cypherl" {
		return &exitError{code: 1, err: fmt.Errorf("pipeline %q: %w", pc.Name, errCypherlVerify)}
	}
	p, err := buildPipeline(ctx, e.cfg, pc, e.store, e.log)
	if err != nil {
		return err
	}
	defer func() { _ = p.Sink.Close(context.WithoutCancel(ctx)) }()
	rep, err := p.Verify(ctx, opts)
	if errors.Is(err, pipeline.ErrNotReadable) {
		return &exitError{code: 1, err: fmt.Errorf("pipeline %q: %w", pc.Name, errCypherlVerify)}
	}
	if rep != nil {
		if asJSON {
			line, _ := json.Marshal(rep)
			fmt.Fprintln(g.stdout, string(line))
		} else {
			printVerify(g.stdout, rep)
		}
	}
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if rep.Total() > 0 && rep.Repaired == nil {
		return &exitError{code: 1, err: fmt.Errorf("pipeline %q: the graph differs from state in %d places; run kgsync verify %s --repair", pc.Name, rep.Total(), pc.Name)}
	}
	return nil
}

func printVerify(w io.Writer, rep *pipeline.VerifyReport) {
	fmt.Fprintf(w, "%s: %d records in state, %d compared node by node\n", rep.Pipeline, rep.Records, rep.Checked)
	fmt.Fprintf(w, "  %-20s %8s %8s\n", "label", "state", "graph")
	for _, c := range rep.Counts {
		fmt.Fprintf(w, "  %-20s %8d %8d\n", c.Label, c.State, c.Graph)
	}
	for _, d := range rep.Differences {
		line := fmt.Sprintf("  %-12s %s %s", d.Kind, d.Label, d.ID)
		if d.Key != "" {
			line += fmt.Sprintf(" (record %s/%s)", d.Source, d.Key)
		}
		if d.Detail != "" {
			line += ": " + d.Detail
		}
		fmt.Fprintln(w, line)
	}
	if len(rep.Differences) == 0 {
		fmt.Fprintf(w, "%s: the graph matches state\n", rep.Pipeline)
	} else {
		fmt.Fprintf(w, "%s: %d differences\n", rep.Pipeline, rep.Total())
	}
	if r := rep.Repaired; r != nil {
		fmt.Fprintf(w, "%s: repaired: %d records rewritten, %d extra nodes deleted, %d chunks embedded, %d sink statements\n",
			rep.Pipeline, r.Rewritten, r.Deleted, r.Counts.ChunksEmbedded, r.Counts.SinkStatements)
	}
}

// daemonVerify returns the daemon's periodic check (daemon.Options.Verify):
// counts and vector indexes only (VerifyOptions.Sample -1), for pipelines
// whose sink can be read back; the others are skipped.
func daemonVerify(cfg *config.Config, store state.Store, log *slog.Logger) func(ctx context.Context, name string) (int, error) {
	return func(ctx context.Context, name string) (int, error) {
		pc, ok := cfg.Pipeline(name)
		if !ok {
			return 0, fmt.Errorf("no pipeline %q", name)
		}
		if pc.Sink == nil || pc.Sink.Type == "cypherl" {
			return 0, daemon.ErrVerifySkipped
		}
		p, err := buildPipeline(ctx, cfg, pc, store, log)
		if err != nil {
			return 0, fmt.Errorf("pipeline %q: %w", name, err)
		}
		defer func() { _ = p.Sink.Close(context.WithoutCancel(ctx)) }()
		rep, err := p.Verify(ctx, pipeline.VerifyOptions{Sample: -1})
		if errors.Is(err, pipeline.ErrNotReadable) {
			return 0, daemon.ErrVerifySkipped
		}
		if err != nil {
			return 0, err
		}
		for _, d := range rep.Differences {
			log.Warn("graph differs from state", slog.String("pipeline", name), slog.String("kind", string(d.Kind)),
				slog.String("label", d.Label), slog.String("id", d.ID), slog.String("detail", d.Detail))
		}
		return rep.Total(), nil
	}
}
