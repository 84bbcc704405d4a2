package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/pipeline"
)

func newPlanCmd(g *globals) *cobra.Command {
	var full, reembed bool
	cmd := &cobra.Command{
		Use:   "plan [PIPELINE...]",
		Short: "Dry run: say what a sync would add, change and delete, and what it would embed",
		Long: `Read and diff the sources and say what a sync would do: records added,
changed (and why: content or config) and deleted, chunks to write, and how
many chunk texts miss the embedding cache with their estimated tokens.
No embedding calls, no writes to the sink or state.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return g.eachPipeline(ctx, args, func(p *pipeline.Pipeline) error {
				plan, err := p.Plan(ctx, pipeline.Mode{Full: full, Reembed: reembed})
				if err != nil {
					return err
				}
				printPlan(g, plan)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "plan a resync --full")
	cmd.Flags().BoolVar(&reembed, "reembed", false, "plan a resync --reembed")
	return cmd
}

func printPlan(g *globals, p *pipeline.Plan) {
	w := g.stdout
	fmt.Fprintf(w, "%s: %d to add, %d to change, %d to delete, %d unchanged, %d skipped",
		p.Pipeline, p.Count(diff.ClassNew), p.Count(diff.ClassChanged), p.Count(diff.ClassDeleted), p.Unchanged, p.Skipped)
	if len(p.Items) == 0 && p.Unchanged == 0 && p.Skipped == 0 && len(p.Incomplete) == 0 {
		fmt.Fprint(w, noChangeNote)
	}
	fmt.Fprintln(w)
	for _, c := range p.ConfigChanges {
		fmt.Fprintf(w, "  config changed: %s\n", c)
	}
	if p.SettingsUnknown {
		fmt.Fprintln(w, "  config changed since the last run (which stored no settings to compare)")
	}
	for _, it := range p.Items {
		mark := map[diff.Class]string{diff.ClassNew: "+", diff.ClassChanged: "~", diff.ClassDeleted: "-"}[it.Class]
		if it.Class == diff.ClassDeleted {
			fmt.Fprintf(w, "  %s %s:%s (%s)\n", mark, it.Source, it.Key, it.Reason)
			continue
		}
		reason := string(it.Reason)
		if it.From != "" {
			reason += " from " + it.From
		}
		fmt.Fprintf(w, "  %s %s:%s (%s): %d chunks, %d to write, %d to embed\n", mark, it.Source, it.Key, reason, it.Chunks, it.Write, it.Misses)
	}
	for _, s := range p.Skips {
		fmt.Fprintf(w, "  ! %s:%s skipped: %s\n", s.Source, s.Key, s.Reason)
	}
	fmt.Fprintf(w, "  chunks: %d to write, %d to delete; embedding: %d texts not in the cache, ~%d tokens\n",
		p.ChunksToWrite, p.ChunksToDelete, p.EmbedMisses, p.EmbedTokens)
	for _, s := range p.Incomplete {
		fmt.Fprintf(w, "  incomplete listing, nothing would be deleted: %s\n", s)
	}
	if p.GuardError != "" {
		fmt.Fprintf(w, "  the run would stop: %s\n", p.GuardError)
	}
	for _, s := range p.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", s)
	}
}
