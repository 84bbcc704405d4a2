package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/kgsync/kgsync/state"
)

// jobStates are the non-final job states kgsync_jobs{state} reports.
var jobStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRetryable, rivertype.JobStateRunning,
}

// attemptKey identifies one attempt of a job.
type attemptKey struct {
	id      int64
	attempt int
}

// watch runs every poll interval until ctx is done: it refreshes the
// queue-depth gauge kgsync_jobs{pipeline,state} and takes over the jobs
// whose replica died (takeOver).
func (d *Daemon) watch(ctx context.Context) {
	suspects := map[attemptKey]time.Time{}
	for {
		t := d.clock.NewTimer(d.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		jobs, err := d.jobs.list(ctx, river.NewJobListParams().Kinds(KindSync).States(jobStates...).First(10000))
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("list jobs", slog.String("err", err.Error()))
			}
			continue
		}
		d.countJobs(jobs)
		suspects = d.takeOver(ctx, jobs, suspects)
		d.catchUp(ctx)
	}
}

// countJobs sets kgsync_jobs from the non-final SyncArgs jobs.
func (d *Daemon) countJobs(jobs []*rivertype.JobRow) {
	counts := map[string]map[rivertype.JobState]int{}
	for _, name := range d.names {
		counts[name] = map[rivertype.JobState]int{}
	}
	for _, j := range jobs {
		var a SyncArgs
		if json.Unmarshal(j.EncodedArgs, &a) != nil || counts[a.Pipeline] == nil {
			continue
		}
		if j.State == rivertype.JobStateRunning && metaOf(j).CancelAttemptedAt != nil {
			continue // taken over from a dead replica; River finalizes it later
		}
		counts[a.Pipeline][j.State]++
	}
	for name, c := range counts {
		for _, s := range jobStates {
			d.m.jobs.WithLabelValues(name, string(s)).Set(float64(c[s]))
		}
	}
}

// takeOverAfter is how long a running job must be seen with its
// pipeline's lock free before it is taken over: River's completer records
// a job's end (success, failure or snooze) within about 250 ms after its
// worker returned and released the lock, so a finished job looks dead for
// that long.
const takeOverAfter = time.Second

// takeOver handles the jobs that River shows running although no process
// runs them: their replica died (SIGKILL, a lost machine) in the middle of
// the run. River's own rescue only acts after RescueStuckJobsAfter
// (run_timeout plus a minute), since it cannot tell a dead worker from a
// slow one; the pipeline lock can. A running job whose pipeline lock is
// free on polls at least max(poll interval, takeOverAfter) apart (a live
// job holds the lock for its whole run; before it takes it and after it
// released it River shows it running for less than that) is taken over:
// its run is queued again (enqueue, with the job's mode and reason, and
// "replaces" naming it) and the job is cancelled, which River's rescuer
// later turns into state cancelled instead of a retry. Should the job
// still be alive after all, the cancel stops its run and the new job
// serves its triggers, so a wrong guess costs a run, never a trigger.
// suspects maps the attempts seen with a free lock to when they were
// first seen; takeOver returns the map for the next poll.
func (d *Daemon) takeOver(ctx context.Context, jobs []*rivertype.JobRow, suspects map[attemptKey]time.Time) map[attemptKey]time.Time {
	next := map[attemptKey]time.Time{}
	now := time.Now()
	wait := max(d.cfg.PollInterval, takeOverAfter)
	for _, j := range jobs {
		if j.State != rivertype.JobStateRunning || j.AttemptedAt == nil {
			continue
		}
		if _, mine := d.running.Load(j.ID); mine {
			continue
		}
		if metaOf(j).CancelAttemptedAt != nil {
			continue
		}
		var a SyncArgs
		if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
			continue
		}
		w, ok := d.workers[a.Pipeline]
		if !ok {
			continue
		}
		unlock, err := d.store.Lock(ctx, a.Pipeline)
		if errors.Is(err, state.ErrLocked) {
			continue // its run is alive somewhere
		}
		if err != nil {
			d.log.Warn("look for dead jobs: lock pipeline", slog.String("pipeline", a.Pipeline), slog.String("err", err.Error()))
			continue
		}
		_ = unlock()
		key := attemptKey{j.ID, j.Attempt}
		first, seen := suspects[key]
		if !seen {
			first = now
		}
		if now.Sub(first) < wait {
			next[key] = first
			continue
		}
		log := d.log.With(slog.String("pipeline", a.Pipeline), slog.Int64("job_id", j.ID))
		// A job that died before taking its lock still holds the current
		// generation: move it on, or the new job would join the dead one.
		if _, err := d.gens.AdvanceGeneration(ctx, a.Pipeline, a.Generation); err != nil {
			log.Warn("take over job: advance generation", slog.String("err", err.Error()))
			continue
		}
		q, err := d.enqueue(ctx, w, a.mode(), a.Reason, append(jobReplaces(j), j.ID)...)
		if err != nil {
			log.Warn("take over job", slog.String("err", err.Error()))
			continue
		}
		if err := d.jobs.cancelJob(ctx, j.ID); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
			log.Warn("take over job: cancel it", slog.String("err", err.Error()))
		}
		// Finalized now: River's rescuer would show it running until
		// run_timeout plus a minute, and another replica's watch could
		// take it over a second time. A replica still alive after all
		// finds it cancelled when its run returns.
		if err := d.jobs.finalizeDead(ctx, j.ID); err != nil {
			log.Warn("take over job: finalize it", slog.String("err", err.Error()))
		}
		d.m.takeovers.WithLabelValues(a.Pipeline).Inc()
		log.Warn("job left running by a replica that stopped without finishing it; its run is queued again",
			slog.Int64("new_job_id", q.Job.ID), slog.Duration("attempted_ago", now.Sub(*j.AttemptedAt).Round(time.Millisecond)),
			slog.Any("attempted_by", j.AttemptedBy))
	}
	return next
}
