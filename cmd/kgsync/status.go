package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/daemon"
)

func newStatusCmd(g *globals) *cobra.Command {
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [PIPELINE...]",
		Short: "Show the last runs of each pipeline with their counts, and its daemon jobs",
		Long: `Show the last runs of each pipeline with their counts, then the
pipeline's newest daemon jobs (River jobs: queued, running, retrying,
completed, cancelled or discarded; River keeps finished ones for 24 hours)
with the run each one ran. With --json, one line per run, then one per job
(the objects with "job_id").`,
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
			if err := tw.Flush(); err != nil {
				return err
			}
			return printJobs(ctx, g, e, pcs, limit, asJSON)
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

// printJobs prints the newest limit daemon jobs of each of pcs, as a table
// after the runs', or as JSON lines.
func printJobs(ctx context.Context, g *globals, e *env, pcs []*config.Pipeline, limit int, asJSON bool) error {
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	header := false
	for _, pc := range pcs {
		jobs, err := daemon.ListJobs(ctx, e.store, pc.Name, limit)
		if err != nil {
			return fmt.Errorf("pipeline %q: %w", pc.Name, err)
		}
		for _, j := range jobs {
			if asJSON {
				b, _ := json.Marshal(j)
				fmt.Fprintln(g.stdout, string(b))
				continue
			}
			if !header {
				fmt.Fprintln(tw, "\nPIPELINE\tJOB\tSTATE\tMODE\tREASON\tATTEMPT\tRUN\tCREATED\tERROR")
				header = true
			}
			run := "-"
			if j.RunID != 0 {
				run = strconv.FormatInt(j.RunID, 10)
			}
			st := j.State
			if j.TakenOver {
				st = "taken over"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", pc.Name, j.ID, st, j.Mode, j.Reason,
				j.Attempt, j.MaxAttempts, run, j.CreatedAt.Local().Format(time.DateTime), oneLine(j.Error, 80))
		}
	}
	return tw.Flush()
}
