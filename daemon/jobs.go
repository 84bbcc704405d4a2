package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/robfig/cron/v3"

	"github.com/kgsync/kgsync/internal/backoff"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// River queues and job kinds of the daemon.
const (
	// QueueSync is the River queue of pipeline runs (SyncArgs).
	QueueSync = "kgsync"
	// QueueSchedule is the River queue of schedule firings (ScheduleArgs),
	// apart so a firing is not held up behind long runs.
	QueueSchedule = "kgsync_schedule"
	// KindSync is SyncArgs' job kind.
	KindSync = "kgsync_sync"
	// KindSchedule is ScheduleArgs' job kind.
	KindSchedule = "kgsync_schedule"
)

// SyncArgs is the River job of one pipeline run (kind KindSync, queue
// QueueSync). Every trigger — a schedule firing, a webhook burst, an API
// call, `kgsync sync --remote` — becomes one, or joins the one already
// queued for its pipeline (Daemon.Trigger).
//
// Queued jobs are River unique jobs by (Pipeline, Generation) over the
// states available, pending, scheduled, retryable and running, so a
// pipeline has at most one queued job of its current generation. The job
// that takes the pipeline's lock advances the generation
// (state.JobGenerations) before its run starts, so a trigger arriving
// during the run queues exactly one follow-up job instead of joining the
// running one (River's unique states must include running, which would
// otherwise drop it).
type SyncArgs struct {
	Pipeline string `json:"pipeline" river:"unique"`
	// Generation is the pipeline's job generation when the job was queued.
	Generation int64 `json:"generation" river:"unique"`
	// Mode is the run variant (a Mode constant, without the mass-delete
	// confirmation, which is AllowMassDelete).
	Mode            Mode `json:"mode"`
	AllowMassDelete bool `json:"allow_mass_delete,omitempty"`
	// Reason is what asked for the run first (cron, webhook, manual).
	Reason state.Trigger `json:"reason"`
}

// Kind returns KindSync.
func (SyncArgs) Kind() string { return KindSync }

// syncUniqueStates are the states SyncArgs is unique over: River's
// default without completed (a finished run does not block the next one).
var syncUniqueStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled,
}

// InsertOpts puts the job in QueueSync, unique by pipeline and generation.
func (SyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueSync, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: syncUniqueStates}}
}

// mode returns the run mode with its mass-delete confirmation.
func (a SyncArgs) mode() Mode { return a.Mode.withAllow(a.AllowMassDelete) }

// ScheduleArgs is one firing of a pipeline's schedule (kind KindSchedule):
// River's leader inserts it at each time of the pipeline's robfig/cron
// schedule in its time zone, so a firing is inserted once across
// replicas; working it triggers an incremental run (reason cron) as any
// trigger does.
type ScheduleArgs struct {
	Pipeline string `json:"pipeline"`
}

// Kind returns KindSchedule.
func (ScheduleArgs) Kind() string { return KindSchedule }

// InsertOpts puts the job in QueueSchedule.
func (ScheduleArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueSchedule} }

// zonedSchedule is a robfig/cron schedule evaluated in a time zone, as a
// river.PeriodicSchedule.
type zonedSchedule struct {
	sched cron.Schedule
	loc   *time.Location
}

// Next returns the schedule's next time after t, computed in the zone.
func (z zonedSchedule) Next(t time.Time) time.Time { return z.sched.Next(t.In(z.loc)) }

// retryPolicy is the retry policy of failed jobs: base, then doubling with
// each further failed attempt, capped at max, with ±10% jitter so
// replicas' retries do not line up.
type retryPolicy struct{ base, max time.Duration }

// NextRetry returns when job, which just failed, is tried again.
func (b retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	// Doubled once for each earlier failure (snoozes are not errors).
	d := backoff.Doubled(b.base, b.max, len(job.Errors))
	jitter := time.Duration((rand.Float64()*0.2 - 0.1) * float64(d))
	return time.Now().Add(d + jitter)
}

// syncWorker works SyncArgs jobs.
type syncWorker struct {
	river.WorkerDefaults[SyncArgs]
	d *Daemon
}

// Timeout is the config's run_timeout.
func (w *syncWorker) Timeout(*river.Job[SyncArgs]) time.Duration { return w.d.cfg.RunTimeout }

// Work runs the job's pipeline once (Daemon.work).
func (w *syncWorker) Work(ctx context.Context, job *river.Job[SyncArgs]) error {
	return w.d.work(ctx, job)
}

// scheduleWorker works ScheduleArgs jobs.
type scheduleWorker struct {
	river.WorkerDefaults[ScheduleArgs]
	d *Daemon
}

// Work queues the scheduled run.
func (w *scheduleWorker) Work(ctx context.Context, job *river.Job[ScheduleArgs]) error {
	pw, ok := w.d.workers[job.Args.Pipeline]
	if !ok {
		return river.JobCancel(fmt.Errorf("schedule of pipeline %q: %w", job.Args.Pipeline, ErrUnknownPipeline))
	}
	if _, err := w.d.enqueue(ctx, pw, ModeIncremental, state.TriggerCron); err != nil {
		return err
	}
	// Recorded, so that the watch loop knows this firing happened
	// (catchUp): the job's ScheduledAt is the firing's time (River's
	// periodic-job enqueuer sets it so), this replica's clock may lag the
	// database's by which River made the job available.
	if err := w.d.recordFiring(ctx, pw.name, job.ScheduledAt); err != nil {
		w.d.log.Warn("record schedule firing", slog.String("err", err.Error()))
	}
	return nil
}

// work is one attempt of a SyncArgs job. It takes the pipeline's lock
// (Store.Lock); when another process holds it, the job snoozes for a
// poll interval (a snooze is not a failed attempt) and the lock holder
// wakes it when its run ends. With the lock, it advances the pipeline's
// generation, runs the pipeline and records the run id as the job's
// output. A failed run returns its error: River retries the job with
// back-off until max_attempts, except a run refused by the mass-delete
// guard, which no retry would change (the job is cancelled). A run
// cancelled by the daemon's shutdown snoozes the job at once, so another
// replica (or the next start) runs it again.
func (d *Daemon) work(ctx context.Context, job *river.Job[SyncArgs]) error {
	a := job.Args
	w, ok := d.workers[a.Pipeline]
	if !ok {
		return river.JobCancel(fmt.Errorf("job %d: pipeline %q: %w in this replica's config", job.ID, a.Pipeline, ErrUnknownPipeline))
	}
	log := d.log.With(slog.String("pipeline", w.name), slog.Int64("job_id", job.ID))
	d.running.Store(job.ID, struct{}{})
	defer d.running.Delete(job.ID)
	unlock, err := d.store.Lock(ctx, w.name)
	if errors.Is(err, state.ErrLocked) {
		d.m.lockBusy.WithLabelValues(w.name).Inc()
		log.Debug("pipeline locked by another process; job snoozed")
		return river.JobSnooze(d.snooze())
	}
	if err != nil {
		return fmt.Errorf("lock pipeline %q: %w", w.name, err)
	}
	woke := false
	defer func() {
		if err := unlock(); err != nil {
			log.Error("unlock pipeline", slog.String("err", err.Error()))
		}
		if woke {
			d.wakeSnoozed(context.WithoutCancel(ctx), w.name, job.ID)
		}
	}()
	if _, err := d.gens.AdvanceGeneration(ctx, w.name, a.Generation); err != nil {
		return err
	}
	woke = true
	mode := a.mode()
	start := time.Now()
	d.m.jobLatency.WithLabelValues(w.name).Observe(start.Sub(job.CreatedAt).Seconds())
	w.setRunning(1)
	d.m.running.WithLabelValues(w.name).Set(1)
	// The webhook rows kept so far are the run's: released when it
	// succeeds, kept (bounded) for the next run when it fails.
	var rowsGen uint64
	if d.rows != nil {
		rowsGen = d.rows.Mark(w.name)
	}
	log.Info("run starting", slog.String("mode", string(mode)), slog.String("trigger", string(a.Reason)),
		slog.Int("attempt", job.Attempt))
	run, err := d.runner.Run(ctx, w.name, a.Reason, mode)
	elapsed := time.Since(start)
	w.setRunning(-1)
	d.m.running.WithLabelValues(w.name).Set(0)
	d.m.inflight.WithLabelValues(w.name).Set(0) // also after a run that could not report its last
	if run.ID != 0 {
		_ = river.RecordOutput(ctx, jobOutput{RunID: run.ID})
	}
	rlog := log.With(slog.Int64("run_id", run.ID))
	if err != nil && ctx.Err() != nil && d.isStopping() {
		d.m.observeRun(w.name, "cancelled", run, elapsed.Seconds())
		rlog.Warn("run cancelled by shutdown; its job is queued again", slog.String("err", err.Error()))
		return river.JobSnooze(0)
	}
	if err != nil {
		d.m.observeRun(w.name, "failed", run, elapsed.Seconds())
		rlog.Error("run failed", slog.Duration("duration", elapsed), slog.Int("attempt", job.Attempt),
			slog.Int("max_attempts", job.MaxAttempts), slog.String("err", err.Error()))
		if errors.Is(err, pipeline.ErrMassDelete) {
			return river.JobCancel(err)
		}
		return err
	}
	d.m.observeRun(w.name, "succeeded", run, elapsed.Seconds())
	if d.rows != nil {
		d.rows.Release(w.name, rowsGen)
		d.observeBuffer(w.name)
	}
	d.m.lastSuccess.WithLabelValues(w.name).Set(float64(time.Now().UnixNano()) / 1e9)
	rlog.Info("run succeeded", slog.Duration("duration", elapsed))
	// Completed before the lock is released, so that a job River shows
	// running with its lock free is one whose run did not succeed; River's
	// completer would record it up to 250 ms later.
	if err := d.jobs.complete(context.WithoutCancel(ctx), job); err != nil {
		rlog.Warn("complete job", slog.String("err", err.Error()))
	}
	d.evalAfter(ctx, w, run) // still under the lock, as the run
	return nil
}

// jobOutput is a SyncArgs job's output (River's metadata "output").
type jobOutput struct {
	RunID int64 `json:"run_id"`
}

// snooze is how long a job that found its pipeline locked waits when the
// lock holder does not wake it first (a `kgsync sync` outside the daemon
// holds the lock, or the holder died): a poll interval, at least 1 s and
// at most 5 s (River makes a job snoozed that briefly available at once
// instead of leaving it to the leader's scheduler).
func (d *Daemon) snooze() time.Duration {
	return min(max(d.cfg.PollInterval, time.Second), 5*time.Second)
}

// wakeSnoozed makes the pipeline's snoozed jobs (other than self)
// available now: the lock they waited for was just released.
func (d *Daemon) wakeSnoozed(ctx context.Context, pipeline string, self int64) {
	jobs, err := d.jobs.list(ctx, d.pipelineJobs(pipeline).
		States(rivertype.JobStateAvailable, rivertype.JobStateScheduled).First(100))
	if err != nil {
		d.log.Warn("list snoozed jobs", slog.String("pipeline", pipeline), slog.String("err", err.Error()))
		return
	}
	now := time.Now()
	for _, j := range jobs {
		if j.ID == self || !j.ScheduledAt.After(now) || snoozes(j) == 0 {
			continue
		}
		if err := d.jobs.retryJob(ctx, j.ID); err != nil {
			d.log.Warn("wake snoozed job", slog.String("pipeline", pipeline), slog.Int64("job_id", j.ID), slog.String("err", err.Error()))
		}
	}
}

// snoozes is River's count of a job's snoozes (metadata "snoozes").
func snoozes(j *rivertype.JobRow) int {
	var m struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(j.Metadata, &m)
	return m.Snoozes
}

// pipelineJobs lists the SyncArgs jobs of pipeline.
func (d *Daemon) pipelineJobs(pipeline string) *river.JobListParams {
	return river.NewJobListParams().Kinds(KindSync).
		Where(d.jobs.argsPipeline()+" = @pipeline", river.NamedArgs{"pipeline": pipeline})
}

// Queued is what Trigger did with a request.
type Queued struct {
	// Job is the job that will serve the request.
	Job *rivertype.JobRow
	// Coalesced is set when the request joined a job already queued; with
	// Replaced, that job was replaced by Job with a stronger mode.
	Coalesced bool
	Replaced  bool
}

// enqueueWait bounds how long enqueue waits for a running job of the
// current generation to take its lock (a few milliseconds normally)
// before it advances the generation itself, taking the job for stuck.
const enqueueWait = 5 * time.Second

// enqueue queues a run of w's pipeline with mode, or joins the job of the
// pipeline's current generation: when that job's mode already covers
// mode it is returned as is (it is queued, or running but has not taken
// the lock yet, so its run starts after this request), else it is
// replaced, in one transaction, by a job with the merged mode
// (Mode.Merge) and its reason (metadata "replaces" keeps the ids it took
// the place of); a running one is waited for until it takes the lock or
// snoozes. replaces adds ids to that list and forces the replacement (a
// take-over).
func (d *Daemon) enqueue(ctx context.Context, w *worker, mode Mode, reason state.Trigger, replaces ...int64) (Queued, error) {
	q, err := d.enqueueJob(ctx, w.name, mode, reason, replaces)
	if err != nil {
		return Queued{}, fmt.Errorf("trigger %q: %w", w.name, err)
	}
	d.m.triggers.WithLabelValues(w.name, string(reason)).Inc()
	if q.Coalesced {
		d.m.coalescedJobs.WithLabelValues(w.name).Inc()
	}
	d.log.Debug("trigger queued", slog.String("pipeline", w.name), slog.Int64("job_id", q.Job.ID),
		slog.String("mode", string(mode)), slog.String("reason", string(reason)), slog.Bool("coalesced", q.Coalesced))
	return q, nil
}

func (d *Daemon) enqueueJob(ctx context.Context, name string, mode Mode, reason state.Trigger, replaces []int64) (Queued, error) {
	var waited time.Duration
	pause := time.Millisecond
	for {
		if err := ctx.Err(); err != nil {
			return Queued{}, err
		}
		g, err := d.gens.Generation(ctx, name)
		if err != nil {
			return Queued{}, err
		}
		args := SyncArgs{Pipeline: name, Generation: g, Mode: mode.Base(), AllowMassDelete: mode.AllowsMassDelete(), Reason: reason}
		res, err := d.jobs.insert(ctx, args, d.insertOpts(replaces))
		if err != nil {
			return Queued{}, fmt.Errorf("insert job: %w", err)
		}
		if !res.UniqueSkippedAsDuplicate {
			return Queued{Job: res.Job}, nil
		}
		old := res.Job
		var oa SyncArgs
		if err := json.Unmarshal(old.EncodedArgs, &oa); err != nil {
			return Queued{}, fmt.Errorf("job %d: decode args: %w", old.ID, err)
		}
		merged := oa.mode().Merge(mode)
		if merged == oa.mode() && len(replaces) == 0 {
			// Queued, or running but not yet past its lock: a job of the
			// generation read above advances it only once it holds the
			// lock, so its run starts after this request either way.
			return Queued{Job: old, Coalesced: true}, nil
		}
		if old.State == rivertype.JobStateRunning {
			// It cannot be replaced while River runs it: wait until it
			// takes the lock (the generation moves on) or snoozes.
			if waited >= enqueueWait {
				if _, err := d.gens.AdvanceGeneration(ctx, name, g); err != nil {
					return Queued{}, err
				}
				d.log.Warn("job left running before taking its lock; the pipeline's generation moved on",
					slog.String("pipeline", name), slog.Int64("job_id", old.ID))
				continue
			}
			sleep(ctx, pause)
			waited += pause
			pause = min(2*pause, 50*time.Millisecond)
			continue
		}
		ids := append(append(jobReplaces(old), old.ID), replaces...)
		na := SyncArgs{Pipeline: name, Generation: g, Mode: merged.Base(), AllowMassDelete: merged.AllowsMassDelete(), Reason: oa.Reason}
		res, err = d.jobs.replace(ctx, old.ID, na, d.insertOpts(ids))
		if errors.Is(err, rivertype.ErrJobRunning) || errors.Is(err, rivertype.ErrNotFound) || errors.Is(err, errNotQueued) {
			continue // it started or ran, or another request replaced it: look again
		}
		if err != nil {
			return Queued{}, fmt.Errorf("replace job %d: %w", old.ID, err)
		}
		if res.UniqueSkippedAsDuplicate { // cannot happen within the transaction; look again
			continue
		}
		return Queued{Job: res.Job, Coalesced: true, Replaced: true}, nil
	}
}

// insertOpts are SyncArgs' options with the config's max_attempts and a
// "replaces" list in the metadata.
func (d *Daemon) insertOpts(replaces []int64) *river.InsertOpts {
	opts := SyncArgs{}.InsertOpts()
	opts.MaxAttempts = d.cfg.MaxAttempts
	if len(replaces) > 0 {
		slices.Sort(replaces)
		opts.Metadata, _ = json.Marshal(jobMeta{Replaces: slices.Compact(replaces)})
	}
	return &opts
}

// jobMeta is the part of a job's River metadata kgsync reads.
type jobMeta struct {
	// Replaces are the ids of the jobs this one took the place of.
	Replaces []int64 `json:"replaces,omitempty"`
	// CancelAttemptedAt is set by River's JobCancel on a running job.
	CancelAttemptedAt *time.Time `json:"cancel_attempted_at,omitempty"`
}

func metaOf(j *rivertype.JobRow) jobMeta {
	var m jobMeta
	_ = json.Unmarshal(j.Metadata, &m)
	return m
}

func jobReplaces(j *rivertype.JobRow) []int64 { return metaOf(j).Replaces }

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
