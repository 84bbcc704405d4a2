package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

type syncFlags struct {
	json            bool
	allowMassDelete bool
	remote, token   string // sync --remote: trigger a running daemon (daemon.go)
}

func newSyncCmd(g *globals) *cobra.Command {
	f := &syncFlags{}
	cmd := &cobra.Command{
		Use:   "sync [PIPELINE...]",
		Short: "Run the pipelines once (all of them when none is named)",
		Long: `Run the pipelines once: read every source, hash each record, chunk the
changed documents, embed only chunk texts not in the embedding cache, write
the changes to the sink and commit state batch by batch.

With --json, one line of JSON per pipeline run is printed on stdout:
{"pipeline","run_id","status","records":{...},"chunks":{...},"sink":{...},"duration_ms"}.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.remote != "" {
				return remoteSync(cmd.Context(), g, f.remote, f.token, args, f.json, f.allowMassDelete)
			}
			return runPipelines(cmd.Context(), g, args, pipeline.Mode{AllowMassDelete: f.allowMassDelete}, state.TriggerManual, f.json)
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print one JSON line per pipeline run")
	cmd.Flags().StringVar(&f.remote, "remote", "", "queue the runs on the daemon at this URL (http://host:port) instead of running them here")
	cmd.Flags().StringVar(&f.token, "token", "", "bearer token of the daemon's API, with --remote (default $"+envAPIToken+")")
	cmd.Flags().BoolVar(&f.allowMassDelete, "allow-mass-delete", false, "confirm a run that deletes more than the pipeline's max_delete_ratio of its records")
	return cmd
}

// runJSON is the --json line of one pipeline run.
type runJSON struct {
	Pipeline string `json:"pipeline"`
	RunID    int64  `json:"run_id"`
	Status   string `json:"status"`
	Records  struct {
		Read      int `json:"read"`
		New       int `json:"new"`
		Changed   int `json:"changed"`
		Unchanged int `json:"unchanged"`
		Deleted   int `json:"deleted"`
		Skipped   int `json:"skipped"`
		Renamed   int `json:"renamed"`
		// Rebuilt counts the records a graph rebuild rewrote from state.
		Rebuilt int `json:"rebuilt"`
		// Quarantined counts the pipeline's records in quarantine at the
		// end of the run (status "partial" when > 0).
		Quarantined int `json:"quarantined"`
	} `json:"records"`
	Chunks struct {
		Total    int `json:"total"`
		Embedded int `json:"embedded"`
		Reused   int `json:"reused"`
		Deleted  int `json:"deleted"`
		Rebuilt  int `json:"rebuilt"`
	} `json:"chunks"`
	Sink struct {
		Statements int `json:"statements"`
		Batches    int `json:"batches"`
	} `json:"sink"`
	DurationMS int64    `json:"duration_ms"`
	Error      string   `json:"error,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}

func toJSON(name string, res pipeline.Result) runJSON {
	c := res.Run.Counts
	var j runJSON
	j.Pipeline, j.RunID, j.Status = name, res.Run.ID, string(res.Run.Status)
	j.Records.Read, j.Records.New, j.Records.Changed = c.RecordsRead, c.RecordsNew, c.RecordsChanged
	j.Records.Unchanged, j.Records.Deleted, j.Records.Skipped = c.RecordsUnchanged, c.RecordsDeleted, c.RecordsSkipped
	j.Chunks.Total, j.Chunks.Embedded, j.Chunks.Reused, j.Chunks.Deleted = c.ChunksTotal, c.ChunksEmbedded, c.ChunksReused, c.ChunksDeleted
	j.Sink.Statements, j.Sink.Batches = c.SinkStatements, c.SinkBatches
	j.DurationMS = res.Duration.Milliseconds()
	j.Error = res.Run.Error
	j.Records.Renamed = c.RecordsRenamed
	j.Records.Quarantined = c.Quarantined
	j.Records.Rebuilt, j.Chunks.Rebuilt = c.RecordsRebuilt, c.ChunksRebuilt
	j.Warnings = res.Run.Warnings
	return j
}

// exitPartial is the exit code of a sync or resync whose runs all
// finished but at least one partially (records in quarantine).
const exitPartial = 5

// runPipelines builds and runs the selected pipelines in order. A failed
// pipeline does not stop the others; the command fails (exit 1) if any
// failed, and exits exitPartial when none failed but a run was partial.
func runPipelines(ctx context.Context, g *globals, names []string, mode pipeline.Mode, trigger state.Trigger, asJSON bool) error {
	var partial, failed, cancelled []string
	err := g.forPipelines(ctx, names, func(e *env, pc *config.Pipeline) error {
		res, err := runOne(ctx, g, e, pc, mode, trigger, asJSON)
		if asJSON {
			line, _ := json.Marshal(toJSON(pc.Name, res))
			fmt.Fprintln(g.stdout, string(line))
		} else {
			printSummary(g.stdout, pc.Name, res, err)
		}
		if err == nil && res.Run.Status == state.StatusPartial {
			partial = append(partial, fmt.Sprintf("%s (%d quarantined)", pc.Name, res.Run.Counts.Quarantined))
		}
		switch {
		case err != nil && res.Run.Status == state.StatusCancelled:
			cancelled = append(cancelled, pc.Name)
		case err != nil:
			failed = append(failed, pc.Name)
		}
		return err
	})
	var ee *exitError
	if len(failed)+len(cancelled) > 0 && errors.As(err, &ee) {
		// Each failure is in its run's summary (or JSON line) above; a
		// run stopped by a signal is cancelled, not failed, as its
		// summary and `kgsync status` say.
		var parts []string
		if len(failed) > 0 {
			parts = append(parts, fmt.Sprintf("%d of the pipelines failed: %s", len(failed), strings.Join(failed, ", ")))
		}
		if len(cancelled) > 0 {
			parts = append(parts, fmt.Sprintf("cancelled before the end: %s (the next run goes on from what it committed)", strings.Join(cancelled, ", ")))
		}
		ee.shown = strings.Join(parts, "; ") + " (see above)"
	}
	if err == nil && len(partial) > 0 {
		return &exitError{code: exitPartial, err: fmt.Errorf("partial: %s; `kgsync status` lists the quarantined records and why",
			strings.Join(partial, ", "))}
	}
	return err
}

func runOne(ctx context.Context, g *globals, e *env, pc *config.Pipeline, mode pipeline.Mode, trigger state.Trigger, asJSON bool) (pipeline.Result, error) {
	p, err := pipeline.Build(ctx, e.cfg, pc, e.store, e.log)
	if err != nil {
		return pipeline.Result{Run: state.Run{Pipeline: pc.Name, Status: state.StatusFailed, Error: err.Error()}}, err
	}
	defer func() { _ = p.Sink.Close(context.WithoutCancel(ctx)) }()
	if !asJSON && isTerminal(g.stderr) {
		bar := progressbar.NewOptions(-1,
			progressbar.OptionSetWriter(g.stderr),
			progressbar.OptionSetDescription(pc.Name),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("records"),
			progressbar.OptionShowIts(),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
		p.Progress = func(pr pipeline.Progress) { _ = bar.Set(pr.Records) }
		defer func() { _ = bar.Finish() }()
	}
	res, err := p.Run(ctx, trigger, mode)
	if res.Run.Pipeline == "" {
		res.Run.Pipeline = pc.Name
		res.Run.Status = state.StatusFailed
		if ctx.Err() != nil {
			res.Run.Status = state.StatusCancelled
		}
		if err != nil {
			res.Run.Error = err.Error()
		}
	}
	return res, err
}

func printSummary(w io.Writer, name string, res pipeline.Result, err error) {
	c := res.Run.Counts
	status := string(res.Run.Status)
	if res.Run.ID != 0 {
		fmt.Fprintf(w, "%s: run %d %s in %s\n", name, res.Run.ID, status, res.Duration.Round(time.Millisecond))
	} else {
		fmt.Fprintf(w, "%s: %s\n", name, status)
	}
	if c.RecordsRebuilt > 0 && c.RecordsRead == 0 {
		// A graph rebuild reads no source: say what it rewrote.
		fmt.Fprintf(w, "  rebuilt from state: %d records, %d chunks (no source read)\n", c.RecordsRebuilt, c.ChunksRebuilt)
	}
	fmt.Fprintf(w, "  records: %d read, %d new, %d changed, %d unchanged, %d deleted, %d skipped",
		c.RecordsRead, c.RecordsNew, c.RecordsChanged, c.RecordsUnchanged, c.RecordsDeleted, c.RecordsSkipped)
	if c.RecordsRenamed > 0 {
		fmt.Fprintf(w, ", %d renamed", c.RecordsRenamed)
	}
	if err == nil && c.RecordsRead == 0 && c.RecordsRebuilt == 0 && c.RecordsDeleted == 0 && c.RecordsSkipped == 0 {
		fmt.Fprint(w, noChangeNote)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  chunks:  %d total; texts: %d embedded, %d reused from cache; %d chunks deleted\n",
		c.ChunksTotal, c.ChunksEmbedded, c.ChunksReused, c.ChunksDeleted)
	fmt.Fprintf(w, "  sink:    %d statements in %d batches\n", c.SinkStatements, c.SinkBatches)
	if c.Quarantined > 0 {
		fmt.Fprintf(w, "  quarantined: %d records kept at their last good version, retried next run (kgsync status)\n", c.Quarantined)
	}
	for _, s := range res.Run.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", s)
	}
	if err != nil {
		fmt.Fprintf(w, "  error:   %v\n", err)
	}
}

// noChangeNote ends a summary's records line when the sources listed
// nothing: they report no change since the last run (an unchanged CSV
// file, a Grist document whose /states did not move, an incremental API
// with nothing newer), so no record was read, and the stored ones stand.
const noChangeNote = " (nothing listed: the sources report no change since the last run, or hold nothing)"
