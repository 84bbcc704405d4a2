package daemon

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/riverqueue/river/rivertype"

	"github.com/kgsync/kgsync/state"
)

// routes builds the HTTP API:
//
//	POST /hooks/grist/{pipeline}/{table}    Grist webhook delivery → 202
//	POST /hooks/grist/{pipeline}            the same without a table id
//	POST /api/pipelines/{name}/sync?mode=   queue a run → 202 {"job_id",...}
//	                 &allow_mass_delete=true  confirm deleting past max_delete_ratio
//	GET  /api/pipelines                     pipelines: schedule, state, jobs, last and next run
//	GET  /api/runs/{id}                     one run
//	GET  /api/jobs/{id}                     one job (or the job that replaced it) and its run
//	GET  /healthz                           200 while the process serves
//	GET  /readyz                            200 when state (and each check) answers, else 503
//	GET  /metrics                           Prometheus text format
//	     /mcp                               the assistant tools (MCP streamable HTTP), with Options.MCP
func (d *Daemon) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/grist/{pipeline}/{table}", d.handleHook)
	mux.HandleFunc("POST /hooks/grist/{pipeline}", d.handleHook)
	mux.Handle("POST /api/pipelines/{name}/sync", d.api(d.handleSync))
	mux.Handle("GET /api/pipelines", d.api(d.handlePipelines))
	mux.Handle("GET /api/runs/{id}", d.api(d.handleRun))
	mux.Handle("GET /api/jobs/{id}", d.api(d.handleJob))
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		writeJSON(rw, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", d.handleReady)
	if d.mcp != nil {
		mux.Handle("/mcp", d.api(d.mcp.ServeHTTP))
	}
	if d.gather != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(d.gather, promhttp.HandlerOpts{}))
	}
	return mux
}

// api wraps an /api handler with the bearer token check (when
// daemon.api_token is set).
func (d *Daemon) api(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if d.cfg.APIToken != "" {
			got := r.Header.Get("Authorization")
			ok := len(got) > 7 && (got[:7] == "Bearer " || got[:7] == "bearer ") &&
				subtle.ConstantTimeCompare([]byte(got[7:]), []byte(d.cfg.APIToken)) == 1
			if !ok {
				rw.Header().Set("WWW-Authenticate", `Bearer realm="kgsync"`)
				writeError(rw, http.StatusUnauthorized, "missing or wrong bearer token")
				return
			}
		}
		h(rw, r)
	})
}

func (d *Daemon) isStopping() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stopping
}

// RunJSON is a run as the API shows it; Counts are state.Counts' JSON.
type RunJSON struct {
	ID         int64        `json:"run_id"`
	Pipeline   string       `json:"pipeline"`
	Trigger    string       `json:"trigger"`
	Status     string       `json:"status"`
	StartedAt  time.Time    `json:"started_at"`
	FinishedAt *time.Time   `json:"finished_at,omitempty"`
	Counts     state.Counts `json:"counts"`
	Error      string       `json:"error,omitempty"`
}

func runJSON(r state.Run) RunJSON {
	j := RunJSON{ID: r.ID, Pipeline: r.Pipeline, Trigger: string(r.Trigger), Status: string(r.Status),
		StartedAt: r.StartedAt, Counts: r.Counts, Error: r.Error}
	if !r.FinishedAt.IsZero() {
		f := r.FinishedAt
		j.FinishedAt = &f
	}
	return j
}

// PipelineJSON is one entry of GET /api/pipelines.
type PipelineJSON struct {
	Name     string     `json:"name"`
	Schedule string     `json:"schedule,omitempty"`
	TimeZone string     `json:"time_zone,omitempty"`
	State    string     `json:"state"` // idle, queued, running (on any replica)
	NextRun  *time.Time `json:"next_run,omitempty"`
	LastRun  *RunJSON   `json:"last_run,omitempty"`
	// Jobs are the pipeline's jobs not finished yet (queued, snoozed,
	// retrying, running), oldest first.
	Jobs []JobJSON `json:"jobs"`
}

func (d *Daemon) handleSync(rw http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	mode, err := ParseMode(r.URL.Query().Get("mode"))
	if err != nil {
		writeError(rw, http.StatusBadRequest, "%v", err)
		return
	}
	if mode, err = withMassDeleteParam(mode, r.URL.Query()); err != nil {
		writeError(rw, http.StatusBadRequest, "%v", err)
		return
	}
	q, err := d.Trigger(r.Context(), name, mode, state.TriggerManual)
	switch {
	case errors.Is(err, ErrUnknownPipeline):
		writeError(rw, http.StatusNotFound, "no pipeline %q", name)
		return
	case errors.Is(err, ErrStopping):
		writeError(rw, http.StatusServiceUnavailable, "daemon is shutting down")
		return
	case err != nil:
		d.log.Error("queue manual run", slog.String("pipeline", name), slog.String("err", err.Error()))
		writeError(rw, http.StatusInternalServerError, "queue run: %v", err)
		return
	}
	j := jobJSON(q.Job)
	j.Coalesced = q.Coalesced
	rw.Header().Set("Location", "/api/jobs/"+strconv.FormatInt(j.ID, 10))
	writeJSON(rw, http.StatusAccepted, j)
}

func (d *Daemon) handlePipelines(rw http.ResponseWriter, r *http.Request) {
	out := make([]PipelineJSON, 0, len(d.names))
	for _, name := range d.pipelineNames() {
		w := d.workers[name]
		p := PipelineJSON{Name: name, Schedule: w.schedule, TimeZone: w.zone, State: "idle", Jobs: []JobJSON{}}
		if w.sched != nil {
			next := w.sched.Next(time.Now().In(w.loc))
			p.NextRun = &next
		}
		jobs, err := d.jobs.list(r.Context(), d.pipelineJobs(name).States(jobStates...).First(20))
		if err != nil {
			writeError(rw, http.StatusInternalServerError, "list jobs of %q: %v", name, err)
			return
		}
		for _, job := range jobs {
			j := jobJSON(job)
			switch {
			case j.TakenOver:
			case j.State == string(rivertype.JobStateRunning):
				p.State = "running"
			case p.State == "idle":
				p.State = "queued"
			}
			p.Jobs = append(p.Jobs, j)
		}
		runs, err := d.store.RunList(r.Context(), name, 1)
		if err != nil {
			writeError(rw, http.StatusInternalServerError, "list runs of %q: %v", name, err)
			return
		}
		if len(runs) > 0 {
			j := runJSON(runs[0])
			p.LastRun = &j
		}
		out = append(out, p)
	}
	writeJSON(rw, http.StatusOK, map[string]any{"pipelines": out})
}

func (d *Daemon) handleRun(rw http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(rw, http.StatusBadRequest, "run id %q is not a positive integer", r.PathValue("id"))
		return
	}
	run, err := d.store.RunGet(r.Context(), id)
	if errors.Is(err, state.ErrNotFound) {
		writeError(rw, http.StatusNotFound, "no run %d", id)
		return
	}
	if err != nil {
		writeError(rw, http.StatusInternalServerError, "get run %d: %v", id, err)
		return
	}
	writeJSON(rw, http.StatusOK, runJSON(run))
}

func (d *Daemon) handleJob(rw http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(rw, http.StatusBadRequest, "job id %q is not a positive integer", r.PathValue("id"))
		return
	}
	j, err := lookupJob(r.Context(), d.jobs, id)
	if errors.Is(err, rivertype.ErrNotFound) {
		writeError(rw, http.StatusNotFound, "no job %d", id)
		return
	}
	if err != nil {
		writeError(rw, http.StatusInternalServerError, "get job %d: %v", id, err)
		return
	}
	writeJSON(rw, http.StatusOK, j)
}

// handleReady answers 200 when the state store answers a query and every
// check pings within 5 s, else 503 naming what failed.
func (d *Daemon) handleReady(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	failed := map[string]string{}
	if _, err := d.store.RunList(ctx, "", 1); err != nil {
		failed["state"] = err.Error()
	}
	for name, p := range d.checks {
		if err := p.Ping(ctx); err != nil {
			failed[name] = err.Error()
		}
	}
	if d.isStopping() {
		failed["daemon"] = "shutting down"
	}
	if len(failed) > 0 {
		writeJSON(rw, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failed": failed})
		return
	}
	writeJSON(rw, http.StatusOK, map[string]string{"status": "ready"})
}

func writeJSON(rw http.ResponseWriter, code int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	_ = json.NewEncoder(rw).Encode(v)
}

func writeError(rw http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(rw, code, map[string]string{"error": fmt.Sprintf(format, args...)})
}
