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
	"github.com/kgsync/kgsync/pipeline/review"
	"github.com/kgsync/kgsync/state"
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
with the run each one ran. Records in quarantine (a run could not read,
parse or embed them; they keep their last good version and are retried
on every run) are listed between the two with their error. With --json,
one line per run, then one per quarantined record (the objects with
"quarantined", its key), then one per job (the objects with "job_id").`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			e, err := g.openRead(ctx)
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
				markAbandoned(ctx, e.store, pc.Name, runs)
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
			if err := printQuarantine(ctx, g, e, pcs, asJSON); err != nil {
				return err
			}
			if err := printReviews(ctx, g, e, pcs, asJSON); err != nil {
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

// printQuarantine lists the quarantined records of pcs, as a table after
// the runs', or as JSON lines.
func printQuarantine(ctx context.Context, g *globals, e *env, pcs []*config.Pipeline, asJSON bool) error {
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	header := false
	for _, pc := range pcs {
		qs, err := e.store.QuarantineList(ctx, pc.Name)
		if err != nil {
			return fmt.Errorf("pipeline %q: %w", pc.Name, err)
		}
		for _, q := range qs {
			if asJSON {
				b, _ := json.Marshal(q)
				fmt.Fprintln(g.stdout, string(b))
				continue
			}
			if !header {
				fmt.Fprintln(tw, "\nPIPELINE\tSOURCE\tQUARANTINED\tSTAGE\tSINCE\tATTEMPTS\tLAST RUN\tERROR")
				header = true
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", pc.Name, q.Source, q.Key, q.Stage,
				q.FirstAt.Local().Format(time.DateTime), q.Attempts, q.RunID, oneLine(q.Error, 120))
		}
	}
	return tw.Flush()
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

// printReviews prints, for each reviewed pipeline, its review summary and
// the elements that need review, from state alone.
func printReviews(ctx context.Context, g *globals, e *env, pcs []*config.Pipeline, asJSON bool) error {
	rs, ok := e.store.(state.ReviewStore)
	if !ok {
		return nil
	}
	for _, pc := range pcs {
		if pc.Review == nil {
			continue
		}
		s, err := review.Summarize(ctx, rs, pc.Name)
		if err != nil {
			return fmt.Errorf("pipeline %q: review: %w", pc.Name, err)
		}
		if asJSON {
			b, _ := json.Marshal(struct {
				Pipeline string         `json:"pipeline"`
				Review   review.Summary `json:"review"`
			}{pc.Name, s})
			fmt.Fprintln(g.stdout, string(b))
			continue
		}
		fmt.Fprintf(g.stdout, "\n%s review (Grist %s, tables %s/%s): %d documents, %d elements; %d corrected, %d excluded, %d with mandatory links; %d need review",
			pc.Name, pc.Review.Grist.DocID, pc.Review.Grist.DocumentsTable, pc.Review.Grist.ElementsTable,
			s.Documents, s.Elements, s.Corrected, s.Excluded, s.Linked, len(s.NeedsReview))
		if s.Pending > 0 {
			fmt.Fprintf(g.stdout, "; %d documents wait to be written to Grist again", s.Pending)
		}
		fmt.Fprintln(g.stdout)
		for _, f := range s.NeedsReview {
			fmt.Fprintf(g.stdout, "  NEEDS REVIEW row %d %s (%s): %s\n", f.Row, f.Element, f.Status, oneLine(f.Reason, 100))
			if f.Corrected != "" {
				fmt.Fprintf(g.stdout, "    corrected: %s\n", oneLine(f.Corrected, 100))
			}
			if f.Then != "" && f.Status == review.StatusCurrent {
				fmt.Fprintf(g.stdout, "    made against: %s\n", oneLine(f.Then, 100))
			}
		}
	}
	return nil
}

// markAbandoned shows runs still marked running whose process is gone as
// abandoned: a run holds its pipeline's lock (Postgres advisory lock,
// SQLite file lock) until it closes, so when the lock can be taken no
// process runs the pipeline. Only what is shown changes: the next run
// closes such runs in state.
func markAbandoned(ctx context.Context, store state.Store, pipeline string, runs []state.Run) {
	running := false
	for _, r := range runs {
		running = running || r.Status == state.StatusRunning
	}
	if !running {
		return
	}
	unlock, err := store.Lock(ctx, pipeline)
	if err != nil {
		return // locked: the newest running run is alive
	}
	_ = unlock()
	for i := range runs {
		if runs[i].Status == state.StatusRunning {
			runs[i].Status = state.StatusAbandoned
			if runs[i].Error == "" {
				runs[i].Error = "abandoned: no process holds the pipeline's lock (it stopped before closing the run)"
			}
		}
	}
}
