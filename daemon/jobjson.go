package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/kgsync/kgsync/state"
)

// JobJSON is a run job as the API (POST /api/pipelines/{name}/sync,
// GET /api/jobs/{id}, GET /api/pipelines) and `kgsync status --json` show
// it.
type JobJSON struct {
	ID       int64  `json:"job_id"`
	Pipeline string `json:"pipeline"`
	// Mode is the run's mode, with "+allow-mass-delete" when it confirms
	// a mass delete.
	Mode   string `json:"mode"`
	Reason string `json:"reason"`
	// State is River's job state: available (queued), scheduled,
	// retryable (waiting for a retry), running, completed, cancelled or
	// discarded (failed max_attempts times).
	State       string     `json:"state"`
	Attempt     int        `json:"attempt"`
	MaxAttempts int        `json:"max_attempts"`
	CreatedAt   time.Time  `json:"created_at"`
	ScheduledAt time.Time  `json:"scheduled_at"`
	AttemptedAt *time.Time `json:"attempted_at,omitempty"`
	FinalizedAt *time.Time `json:"finalized_at,omitempty"`
	// RunID is the run of the job's last attempt that opened one.
	RunID int64 `json:"run_id,omitempty"`
	// Error is the last failed attempt's error.
	Error string `json:"error,omitempty"`
	// Coalesced (in a POST's answer) is set when the request joined a job
	// already queued for the pipeline.
	Coalesced bool `json:"coalesced,omitempty"`
	// Replaces are the ids of the jobs this one took the place of: queued
	// jobs it replaced with a stronger mode, and jobs of dead replicas it
	// took over. GET /api/jobs/{id} of such an id answers with this job.
	Replaces []int64 `json:"replaces,omitempty"`
	// TakenOver marks a job left running by a replica that died: another
	// job (the one whose Replaces name it) runs it again.
	TakenOver bool `json:"taken_over,omitempty"`
}

func jobJSON(j *rivertype.JobRow) JobJSON {
	var a SyncArgs
	_ = json.Unmarshal(j.EncodedArgs, &a)
	m := metaOf(j)
	out := JobJSON{ID: j.ID, Pipeline: a.Pipeline, Mode: string(a.mode()), Reason: string(a.Reason), State: string(j.State),
		Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, CreatedAt: j.CreatedAt.UTC(), ScheduledAt: j.ScheduledAt.UTC(),
		Replaces: m.Replaces, TakenOver: m.CancelAttemptedAt != nil && j.State == rivertype.JobStateRunning}
	if j.AttemptedAt != nil {
		t := j.AttemptedAt.UTC()
		out.AttemptedAt = &t
	}
	if j.FinalizedAt != nil {
		t := j.FinalizedAt.UTC()
		out.FinalizedAt = &t
	}
	var o jobOutput
	if b := j.Output(); len(b) > 0 && json.Unmarshal(b, &o) == nil {
		out.RunID = o.RunID
	}
	if n := len(j.Errors); n > 0 {
		out.Error = j.Errors[n-1].Error
	}
	return out
}

// lookupJob returns job id, or the newest job whose Replaces name it when
// id was replaced (deleted), taken over or cancelled; rivertype.ErrNotFound
// when there is neither.
func lookupJob(ctx context.Context, q queue, id int64) (JobJSON, error) {
	j, err := q.get(ctx, id)
	if err != nil && !errors.Is(err, rivertype.ErrNotFound) {
		return JobJSON{}, err
	}
	if j != nil && j.Kind != KindSync {
		return JobJSON{}, rivertype.ErrNotFound
	}
	if j != nil && j.State != rivertype.JobStateCancelled && !jobJSON(j).TakenOver {
		return jobJSON(j), nil
	}
	by, lerr := q.list(ctx, river.NewJobListParams().Kinds(KindSync).Where(q.replacedBy(), river.NamedArgs{"id": id}).
		States(rivertype.JobStates()...).OrderBy(river.JobListOrderByID, river.SortOrderDesc).First(1))
	if lerr != nil {
		return JobJSON{}, lerr
	}
	if len(by) > 0 {
		return jobJSON(by[0]), nil
	}
	if j == nil {
		return JobJSON{}, rivertype.ErrNotFound
	}
	return jobJSON(j), nil
}

// ListJobs returns the newest limit run jobs of pipeline ("" = all), newest
// first, from River's tables in store (a *postgres.Store or *sqlite.Store),
// without starting a River client: what `kgsync status` shows. River keeps
// finished jobs for 24 hours.
func ListJobs(ctx context.Context, store state.Store, pipeline string, limit int) ([]JobJSON, error) {
	q, err := newQueue(store, &river.Config{})
	if err != nil {
		return nil, err
	}
	defer q.close()
	p := river.NewJobListParams().Kinds(KindSync).States(rivertype.JobStates()...).
		OrderBy(river.JobListOrderByID, river.SortOrderDesc).First(max(1, min(limit, 10000)))
	if pipeline != "" {
		p = p.Where(q.argsPipeline()+" = @pipeline", river.NamedArgs{"pipeline": pipeline})
	}
	jobs, err := q.list(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	out := make([]JobJSON, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, jobJSON(j))
	}
	return out, nil
}

// ActiveJobs returns the run jobs of pipeline ("" = all) that are not
// finished (available, scheduled, retryable, running), oldest first, at
// most 1000.
func (d *Daemon) ActiveJobs(ctx context.Context, pipeline string) ([]JobJSON, error) {
	p := river.NewJobListParams().Kinds(KindSync).States(jobStates...).First(1000)
	if pipeline != "" {
		p = d.pipelineJobs(pipeline).States(jobStates...).First(1000)
	}
	jobs, err := d.jobs.list(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	out := make([]JobJSON, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, jobJSON(j))
	}
	return out, nil
}
