package main

import (
	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

func newResyncCmd(g *globals) *cobra.Command {
	var full, reembed, rebuild, asJSON, allow bool
	cmd := &cobra.Command{
		Use:   "resync PIPELINE (--full | --reembed | --rebuild-graph)",
		Short: "Run a pipeline ignoring part of its state",
		Long: `Run one pipeline ignoring part of its state:
  --full           ignore stored record hashes: rewrite every node (vectors come from the cache)
  --reembed        ignore the embedding cache: embed every chunk again
  --rebuild-graph  rewrite the graph from state and the embedding cache without
                   reading the sources: zero embedding calls when the cache is whole
                   (Memgraph keeps its data in memory; losing it must not cost a
                   re-embedding bill). With the cypherl sink, the file of a
                   rebuild starts with the label-property and text indexes and
                   loads into an emptied Memgraph on its own; it has no vector
                   index: load vector-indexes.cypherl after it
                   (cat <rebuild file> vector-indexes.cypherl | mgconsole).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, b := range []bool{full, reembed, rebuild} {
				if b {
					n++
				}
			}
			if n != 1 {
				return &exitError{code: 2, err: errUsage("resync needs exactly one of --full, --reembed, --rebuild-graph")}
			}
			mode := pipeline.Mode{Full: full, Reembed: reembed, RebuildGraph: rebuild, AllowMassDelete: allow}
			return runPipelines(cmd.Context(), g, args, mode, state.TriggerResync, asJSON)
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "ignore stored record hashes")
	cmd.Flags().BoolVar(&reembed, "reembed", false, "ignore the embedding cache")
	cmd.Flags().BoolVar(&rebuild, "rebuild-graph", false, "rewrite the graph from state and the embedding cache")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON line for the run")
	cmd.Flags().BoolVar(&allow, "allow-mass-delete", false, "confirm a run that deletes more than max_delete_ratio of the records")
	return cmd
}

type errUsage string

func (e errUsage) Error() string { return string(e) }
