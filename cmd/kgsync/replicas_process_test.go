package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/daemon"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/crashtest"
	"github.com/kgsync/kgsync/internal/pgtest"
	"github.com/kgsync/kgsync/state/postgres"
)

const (
	replicaToken = "replica-token-5d2e"
	// replicaWait bounds every wait of the replica process test.
	replicaWait = 15 * time.Second
	// replicaPoll is the daemons' poll_interval.
	replicaPoll = 200 * time.Millisecond
	slowDims    = 16
)

// replicaClient bounds every request to the daemons.
var replicaClient = &http.Client{Timeout: 5 * time.Second}

// TestReplicaProcessesShareOnePostgres runs two `kgsync daemon` processes
// of the built binary with one config on one Postgres schema (docs/daemon.md,
// "Shutdown and replicas"). Phase 1 sends 20 triggers of pipeline docs, in
// pairs (one to each daemon at once), and checks in Postgres that the
// pipeline's runs never overlapped in time, that every trigger was served by
// exactly one succeeded run which started after the trigger was claimed, and
// that every run served a trigger. Phase 2 holds pipeline slow's lock in a
// run blocked on its embedding provider, SIGKILLs the process holding the
// advisory lock, and checks that the survivor runs the dead run's claimed
// trigger and a new one to success.
func TestReplicaProcessesShareOnePostgres(t *testing.T) {
	t.Parallel()
	bin := crashtest.BuildKgsync(t, t.TempDir())
	dsn, schema := pgtest.Schema(t)
	db := pgtest.Connect(t)
	dir := t.TempDir()
	corpus := crashtest.CorpusDocs(t)
	copyDocs(t, corpus, filepath.Join(dir, "docs"), "rfc7239.txt", "openchain-security-specification-1.1.md", "spdx-2.3-package-information.md")
	copyDocs(t, corpus, filepath.Join(dir, "slow"), "rfc7239.txt", "openchain-security-specification-1.1.md")
	emb := newGatedEmbedServer(t, "slow-v1", slowDims)

	cfg := fmt.Sprintf(`state:
  driver: postgres
  dsn: %q
  schema: %s
sink:
  type: cypherl
  cypherl:
    dir: cypherl
embedder:
  provider: hashing
  dimensions: 32
chunking:
  max_tokens: 256
  overlap_tokens: 32
log:
  level: info
  format: json
daemon:
  api_token: %s
  poll_interval: %s
  debounce: 0s
  grace_period: 1s
  verify_interval: 0s
pipelines:
  - name: docs
    sources:
      - name: docs
        files:
          root: docs
  - name: slow
    embedder:
      provider: openai
      base_url: %s
      model: slow-v1
      dimensions: %d
      batch_size: 8
      max_concurrency: 1
      max_retries: 0
      timeout: 30s
    sources:
      - name: slow
        files:
          root: slow
`, dsn, schema, replicaToken, replicaPoll, emb.srv.URL, slowDims)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kgsync.yaml"), []byte(cfg), 0o644))

	a := startReplicaProcess(t, bin, dir, "a-"+schema)
	b := startReplicaProcess(t, bin, dir, "b-"+schema)
	procs := []*replicaProcess{a, b}
	for _, p := range procs {
		waitFor(t, "daemon "+p.name+" answers /healthz", func() (bool, error) {
			select {
			case <-p.exited:
				return false, fmt.Errorf("daemon %s exited: %s", p.name, p.logs.String())
			default:
			}
			resp, err := replicaClient.Get(p.url + "/healthz")
			if err != nil {
				return false, nil //nolint:nilerr // not listening yet
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
	}
	runsTable := pgx.Identifier{schema, "runs"}.Sanitize()
	triggersTable := pgx.Identifier{schema, "triggers"}.Sanitize()
	ctx := t.Context()

	// Phase 1: ten pairs of triggers, each pair sent to both daemons at once
	// so that both wake for the lock; the next pair goes out once both are
	// claimed, so triggers also arrive during runs.
	var ids []int64
	for round := range 10 {
		first, second := procs[round%2], procs[1-round%2]
		pair := []int64{first.trigger(t, "docs", "incremental").ID, second.trigger(t, "docs", "incremental").ID}
		ids = append(ids, pair...)
		for _, id := range pair {
			waitFor(t, fmt.Sprintf("trigger %d claimed", id), func() (bool, error) {
				s := a.triggerStatus(t, id).Status
				return s == "claimed" || s == "done", nil
			})
		}
	}
	for i, id := range ids {
		p := procs[i%2]
		waitFor(t, fmt.Sprintf("trigger %d done", id), func() (bool, error) {
			return p.triggerStatus(t, id).Status == "done", nil
		})
	}

	runs := queryRuns(t, db, runsTable, "docs")
	require.NotEmpty(t, runs)
	require.LessOrEqual(t, len(runs), len(ids), "a run serves at least one trigger")
	byID := map[int64]dbRun{}
	for i, r := range runs {
		require.Equal(t, "succeeded", r.status, "run %d: %s", r.id, r.err)
		require.NotContains(t, strings.ToLower(r.err), "lock", "run %d", r.id)
		require.NotNil(t, r.finished, "run %d", r.id)
		if i > 0 {
			prev := runs[i-1]
			require.False(t, r.started.Before(*prev.finished),
				"runs %d (%v–%v) and %d (from %v) of docs overlap", prev.id, prev.started, *prev.finished, r.id, r.started)
		}
		byID[r.id] = r
	}
	served := map[int64]int{}
	rows, err := db.Query(ctx, `SELECT id, run_id, claimed_at, done_at FROM `+triggersTable+` WHERE id = ANY($1) ORDER BY id`, ids)
	require.NoError(t, err)
	type trow struct {
		id, runID       int64
		claimed, doneAt *time.Time
	}
	trs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (trow, error) {
		var x trow
		return x, r.Scan(&x.id, &x.runID, &x.claimed, &x.doneAt)
	})
	require.NoError(t, err)
	require.Len(t, trs, len(ids))
	for _, tr := range trs {
		require.NotNil(t, tr.doneAt, "trigger %d", tr.id)
		require.NotNil(t, tr.claimed, "trigger %d", tr.id)
		run, ok := byID[tr.runID]
		require.True(t, ok, "trigger %d names run %d, not a run of docs", tr.id, tr.runID)
		// A run serves the triggers claimed before it started and marks
		// them done after it finished (docs/daemon.md, steps 2 and 3).
		require.False(t, run.started.Before(*tr.claimed), "trigger %d claimed at %v after its run %d started at %v", tr.id, *tr.claimed, run.id, run.started)
		require.False(t, tr.doneAt.Before(*run.finished), "trigger %d done before its run %d finished", tr.id, run.id)
		served[tr.runID]++
	}
	require.Len(t, served, len(runs), "every run of docs served a trigger")
	ranBy := map[string]int{}
	for _, p := range procs {
		ranBy[p.name] = len(p.logged("run succeeded", "docs"))
	}
	require.Equal(t, len(runs), ranBy[a.name]+ranBy[b.name], "each run succeeded in one process")
	t.Logf("phase 1: %d triggers served by %d runs of docs (process a ran %d, b ran %d), 0 overlaps",
		len(ids), len(runs), ranBy[a.name], ranBy[b.name])

	// Phase 2: a run of slow blocks at its first embedding request; the
	// process holding slow's advisory lock is killed.
	killedTrigger := a.trigger(t, "slow", "incremental")
	select {
	case <-emb.entered:
	case <-time.After(replicaWait):
		t.Fatalf("no run of slow reached the embedding provider\n%s", a.logs.String())
	}
	holder := lockHolder(t, db, schema, "slow", procs)
	require.NotNil(t, holder, "nobody holds slow's lock while its run is blocked")
	survivor := procs[0]
	if survivor == holder {
		survivor = procs[1]
	}
	// The survivor polls the claimed, never-done trigger and finds the
	// pipeline locked, without starting a run of its own.
	waitFor(t, survivor.name+" finds slow locked", func() (bool, error) {
		return survivor.lockBusy(t, "slow") >= 1, nil
	})
	slowRuns := queryRuns(t, db, runsTable, "slow")
	require.Len(t, slowRuns, 1, "only the lock holder runs slow")
	killed := slowRuns[0]
	require.Equal(t, "running", killed.status)
	require.Equal(t, "claimed", a.triggerStatus(t, killedTrigger.ID).Status)

	killAt := time.Now()
	require.NoError(t, holder.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-holder.exited:
	case <-time.After(replicaWait):
		t.Fatal("the killed daemon did not exit")
	}
	var released time.Duration
	waitFor(t, "Postgres releases the dead session's lock", func() (bool, error) {
		if h := lockHolder(t, db, schema, "slow", procs); h == holder {
			return false, nil
		}
		released = time.Since(killAt)
		return true, nil
	})
	emb.open()
	// No new trigger yet: the survivor's poll alone must find the dead
	// holder's claimed, never-done trigger and run it.
	waitFor(t, fmt.Sprintf("the killed run's trigger %d done", killedTrigger.ID), func() (bool, error) {
		return survivor.triggerStatus(t, killedTrigger.ID).Status == "done", nil
	})
	reclaimed := survivor.triggerStatus(t, killedTrigger.ID)
	newTrigger := survivor.trigger(t, "slow", "incremental")
	waitFor(t, fmt.Sprintf("trigger %d of slow done", newTrigger.ID), func() (bool, error) {
		return survivor.triggerStatus(t, newTrigger.ID).Status == "done", nil
	})
	followUp := survivor.triggerStatus(t, newTrigger.ID)

	slowRuns = queryRuns(t, db, runsTable, "slow")
	require.Len(t, slowRuns, 3, "the killed run, the reclaimed trigger's run and the new trigger's run")
	require.Equal(t, killed.id, slowRuns[0].id)
	takeoverRun, followRun := slowRuns[1], slowRuns[2]
	require.Equal(t, takeoverRun.id, reclaimed.RunID)
	require.Equal(t, followRun.id, followUp.RunID)
	for _, r := range slowRuns[1:] {
		require.Equal(t, "succeeded", r.status, "run %d: %s", r.id, r.err)
		require.True(t, r.started.After(killAt), "run %d started before the kill", r.id)
	}
	require.False(t, followRun.started.Before(*takeoverRun.finished), "runs of slow overlap")
	// Postgres frees the lock with the dead session, so the survivor starts
	// within a poll or two; 15 polls is a generous bound for a loaded machine.
	require.Less(t, takeoverRun.started.Sub(killAt), 15*replicaPoll, "takeover after the kill")
	// The killed run stopped at its first embedding request, before any
	// commit, so the survivor's first run found every record of slow new
	// and the follow-up run none.
	var stored int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "records"}.Sanitize()+` WHERE pipeline = 'slow'`).Scan(&stored))
	require.Positive(t, stored)
	require.Equal(t, stored, takeoverRun.counts.New)
	require.Zero(t, followRun.counts.New)
	require.Equal(t, []int64{takeoverRun.id, followRun.id}, survivor.logged("run succeeded", "slow"), "the survivor ran both")
	t.Logf("phase 2: killed %s holding slow's lock in run %d (its row left %q, finished_at %v); lock released ≤%v after the kill; survivor %s's poll started run %d for the orphaned trigger %v after the kill (poll_interval %v); follow-up trigger ran as run %d; %d records stored",
		holder.name, killed.id, slowRuns[0].status, slowRuns[0].finished, released.Round(time.Millisecond), survivor.name, takeoverRun.id,
		takeoverRun.started.Sub(killAt).Round(time.Millisecond), replicaPoll, followRun.id, stored)
}

// copyDocs copies the named corpus documents into dir, which it creates.
func copyDocs(t *testing.T, corpus, dir string, names ...string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(corpus, n))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), b, 0o644))
	}
}

// waitFor polls cond every 10 ms until it is true, failing the test after
// replicaWait or on an error.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.NewTimer(replicaWait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		require.NoError(t, err, what)
		if ok {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting until %s", replicaWait, what)
		case <-tick.C:
		}
	}
}

// lockedBuffer is an io.Writer safe for a process's output and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// replicaProcess is one `kgsync daemon` process. Its Postgres sessions
// carry application_name appName (PGAPPNAME), so pg_stat_activity tells
// which process holds a lock.
type replicaProcess struct {
	name, appName, url string
	cmd                *exec.Cmd
	logs               *lockedBuffer
	exited             chan struct{}
}

// startReplicaProcess starts `bin daemon` in dir on a free port of
// 127.0.0.1; the test's cleanup stops it (SIGTERM, then SIGKILL).
func startReplicaProcess(t *testing.T, bin, dir, appName string) *replicaProcess {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	p := &replicaProcess{name: appName[:1], appName: appName, url: "http://" + addr, logs: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, "daemon", "-c", "kgsync.yaml", "--listen", addr)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), "PGAPPNAME="+appName)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(10 * time.Second):
				t.Errorf("daemon %s ignored SIGTERM", p.name)
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		}
		if t.Failed() {
			t.Logf("daemon %s output:\n%s", p.name, p.logs.String())
		}
	})
	return p
}

// api calls the daemon's API with the token and decodes a 2xx answer into out.
func (p *replicaProcess) api(t *testing.T, method, path string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, p.url+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+replicaToken)
	resp, err := replicaClient.Do(req)
	require.NoError(t, err, "%s %s on %s", method, path, p.name)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 2, resp.StatusCode/100, "%s %s on %s: %s", method, path, p.name, body)
	if out != nil {
		require.NoError(t, json.Unmarshal(body, out), "%s", body)
	}
}

func (p *replicaProcess) trigger(t *testing.T, pipeline, mode string) daemon.TriggerJSON {
	t.Helper()
	var tr daemon.TriggerJSON
	p.api(t, "POST", "/api/pipelines/"+pipeline+"/sync?mode="+mode, &tr)
	require.Positive(t, tr.ID)
	return tr
}

func (p *replicaProcess) triggerStatus(t *testing.T, id int64) daemon.TriggerJSON {
	t.Helper()
	var tr daemon.TriggerJSON
	p.api(t, "GET", "/api/triggers/"+strconv.FormatInt(id, 10), &tr)
	return tr
}

// lockBusy reads kgsync_lock_busy_total{pipeline} from /metrics (0 when
// the series does not exist yet).
func (p *replicaProcess) lockBusy(t *testing.T, pipeline string) float64 {
	t.Helper()
	resp, err := replicaClient.Get(p.url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	prefix := `kgsync_lock_busy_total{pipeline="` + pipeline + `"} `
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, sc.Text())
			return f
		}
	}
	require.NoError(t, sc.Err())
	return 0
}

// logged returns the run ids of the process's JSON log lines with msg for
// pipeline.
func (p *replicaProcess) logged(msg, pipeline string) []int64 {
	var ids []int64
	for _, line := range strings.Split(p.logs.String(), "\n") {
		var l struct {
			Msg      string `json:"msg"`
			Pipeline string `json:"pipeline"`
			RunID    int64  `json:"run_id"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == msg && l.Pipeline == pipeline {
			ids = append(ids, l.RunID)
		}
	}
	return ids
}

// lockHolder returns the process whose Postgres session holds pipeline's
// run lock, found in pg_locks as documented at postgres.AdvisoryKey, or nil.
func lockHolder(t *testing.T, db *pgx.Conn, schema, pipeline string, procs []*replicaProcess) *replicaProcess {
	t.Helper()
	key := uint64(postgres.LockKey(schema, pipeline))
	rows, err := db.Query(t.Context(), `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
		  AND l.classid::bigint = $1 AND l.objid::bigint = $2
		  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
		int64(key>>32), int64(key&0xffffffff))
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.LessOrEqual(t, len(names), 1, "one session holds the lock: %v", names)
	for _, n := range names {
		i := slices.IndexFunc(procs, func(p *replicaProcess) bool { return p.appName == n })
		require.GreaterOrEqual(t, i, 0, "lock held by session %q", n)
		return procs[i]
	}
	return nil
}

// dbRun is a row of the runs table.
type dbRun struct {
	id          int64
	status, err string
	started     time.Time
	finished    *time.Time
	counts      struct{ New int }
}

// queryRuns returns pipeline's runs ordered by started_at.
func queryRuns(t *testing.T, db *pgx.Conn, table, pipeline string) []dbRun {
	t.Helper()
	rows, err := db.Query(t.Context(), `SELECT id, status, error, started_at, finished_at, counts FROM `+table+` WHERE pipeline = $1 ORDER BY started_at, id`, pipeline)
	require.NoError(t, err)
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dbRun, error) {
		var x dbRun
		var counts []byte
		if err := r.Scan(&x.id, &x.status, &x.err, &x.started, &x.finished, &counts); err != nil {
			return x, err
		}
		return x, json.Unmarshal(counts, &x.counts)
	})
	require.NoError(t, err)
	return runs
}

// gatedEmbedServer is an OpenAI-compatible embeddings endpoint answering
// with the hashing embedder's vectors. Until open is called, each request
// signals entered and waits until open or until its client goes away.
type gatedEmbedServer struct {
	srv      *httptest.Server
	emb      *hashing.Embedder
	entered  chan struct{}
	gate     chan struct{}
	openOnce sync.Once
}

func newGatedEmbedServer(t *testing.T, model string, dims int) *gatedEmbedServer {
	t.Helper()
	s := &gatedEmbedServer{emb: hashing.New(model, dims), entered: make(chan struct{}, 1), gate: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() { s.open(); s.srv.Close() })
	return s
}

// open lets every request through from now on.
func (s *gatedEmbedServer) open() { s.openOnce.Do(func() { close(s.gate) }) }

func (s *gatedEmbedServer) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case <-s.gate:
	default:
		select {
		case s.entered <- struct{}{}:
		default:
		}
		select {
		case <-s.gate:
		case <-r.Context().Done():
			return
		}
	}
	vecs, err := s.emb.Embed(context.WithoutCancel(r.Context()), req.Input)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var resp struct {
		Data []item `json:"data"`
	}
	for i, v := range vecs {
		resp.Data = append(resp.Data, item{Index: i, Embedding: v})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
