package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newStatusCmd(g *globals) *cobra.Command {
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [PIPELINE...]",
		Short: "Show the last runs of each pipeline with their counts",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			e, err := g.open(ctx)
			if err != nil {
				return err
			}
			defer e.Close()
			pcs, err := e.selectPipelines(args)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			if !asJSON {
				fmt.Fprintln(tw, "PIPELINE\tRUN\tTRIGGER\tSTATUS\tSTARTED\tDURATION\tREAD\tNEW\tCHANGED\tDELETED\tEMBEDDED\tREUSED\tSTATEMENTS\tERROR")
			}
			for _, pc := range pcs {
				runs, err := e.store.RunList(ctx, pc.Name, limit)
				if err != nil {
					return fmt.Errorf("pipeline %q: list runs: %w", pc.Name, err)
				}
				if len(runs) == 0 && !asJSON {
					fmt.Fprintf(tw, "%s\t-\t\tnever run\t\t\t\t\t\t\t\t\t\t\n", pc.Name)
				}
				for _, r := range runs {
					if asJSON {
						b, _ := json.Marshal(r)
						fmt.Fprintln(g.stdout, string(b))
						continue
					}
					dur := "-"
					if !r.FinishedAt.IsZero() {
						dur = r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
					}
					c := r.Counts
					note := r.Error
					if note == "" && len(r.Warnings) > 0 {
						note = fmt.Sprintf("%d warning(s): %s", len(r.Warnings), r.Warnings[0])
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n",
						pc.Name, r.ID, r.Trigger, r.Status, r.StartedAt.Local().Format(time.DateTime), dur,
						c.RecordsRead, c.RecordsNew, c.RecordsChanged, c.RecordsDeleted, c.ChunksEmbedded, c.ChunksReused, c.SinkStatements, oneLine(note, 80))
				}
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 5, "runs per pipeline")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON line per run")
	return cmd
}

func oneLine(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\t' {
			r[i] = ' '
		}
	}
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}
