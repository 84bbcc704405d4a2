package main

import (
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
	// replicaWait bounds every wait of the replica process test: 20
	// pipelines over three daemon processes took over 15 s on a 2-core
	// machine at load average 20, so the bound leaves room for that.
	replicaWait = 60 * time.Second
	// replicaPoll is the daemons' poll_interval.
	replicaPoll = 200 * time.Millisecond
	// slowDims is the slow pipeline's embedding dimension: that of the
	// config's embedder, since both pipelines write one graph and share
	// chunk_embedding (every command refuses two dimensions).
	slowDims = 32
)

// replicaClient bounds every request to the daemons.
var replicaClient = &http.Client{Timeout: 5 * time.Second}

// replicaConfig is a daemon config on Postgres schema with the API token,
// the poll interval and the given pipelines section.
func replicaConfig(dsn, schema, pipelines string) string {
	return fmt.Sprintf(`state:
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
%s`, dsn, schema, replicaToken, replicaPoll, pipelines)
}

// startReplicas starts n daemon processes of bin in dir and waits until
// each answers /healthz.
func startReplicas(t *testing.T, bin, dir, schema string, n int) []*replicaProcess {
	t.Helper()
	var procs []*replicaProcess
	for i := range n {
		procs = append(procs, startReplicaProcess(t, bin, dir, string(rune('a'+i))+"-"+schema))
	}
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
	return procs
}

// TestReplicaProcessesShareOnePostgres runs two `kgsync daemon` processes
// of the built binary with one config on one Postgres schema (docs/daemon.md,
// "Jobs and replicas"). Phase 1 sends 20 triggers of pipeline docs, in
// pairs (one to each daemon at once), and checks in Postgres that the
// pipeline's runs never overlapped in time, that every trigger's job
// completed with a succeeded run that started after the trigger was sent,
// and that every run served a trigger. Phase 2 holds pipeline slow's lock
// in a run blocked on its embedding provider, SIGKILLs the process holding
// the advisory lock, and checks that the survivor, with no new trigger,
// takes the dead job over and runs it to success, then runs a new
// trigger's job.
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
	cfg := replicaConfig(dsn, schema, fmt.Sprintf(`  - name: docs
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
`, emb.srv.URL, slowDims))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kgsync.yaml"), []byte(cfg), 0o644))
	procs := startReplicas(t, bin, dir, schema, 2)
	a, b := procs[0], procs[1]
	runsTable := pgx.Identifier{schema, "runs"}.Sanitize()
	ctx := t.Context()

	// Phase 1: ten pairs of triggers, each pair sent to both daemons at
	// once; the next pair goes out once both jobs have started, so
	// triggers also arrive during runs.
	type sent struct {
		job int64
		at  time.Time
	}
	var all []sent
	for round := range 10 {
		first, second := procs[round%2], procs[1-round%2]
		var pair []sent
		for _, p := range []*replicaProcess{first, second} {
			at := time.Now()
			pair = append(pair, sent{p.trigger(t, "docs", "incremental").ID, at})
		}
		all = append(all, pair...)
		for _, s := range pair {
			waitFor(t, fmt.Sprintf("job %d started", s.job), func() (bool, error) {
				st := a.job(t, s.job).State
				return st == "running" || st == "completed", nil
			})
		}
	}
	byJob := map[int64]daemon.JobJSON{}
	for i, s := range all {
		p := procs[i%2]
		waitFor(t, fmt.Sprintf("job %d completed", s.job), func() (bool, error) {
			j := p.job(t, s.job)
			byJob[s.job] = j
			return j.State == "completed", nil
		})
	}

	runs := queryRuns(t, db, runsTable, "docs")
	require.NotEmpty(t, runs)
	require.LessOrEqual(t, len(runs), len(all), "a run serves at least one trigger")
	byID := map[int64]dbRun{}
	for i, r := range runs {
		require.Equal(t, "succeeded", r.status, "run %d: %s", r.id, r.err)
		require.NotNil(t, r.finished, "run %d", r.id)
		if i > 0 {
			prev := runs[i-1]
			require.False(t, r.started.Before(*prev.finished),
				"runs %d (%v–%v) and %d (from %v) of docs overlap", prev.id, prev.started, *prev.finished, r.id, r.started)
		}
		byID[r.id] = r
	}
	served := map[int64]int{}
	for _, s := range all {
		j := byJob[s.job]
		run, ok := byID[j.RunID]
		require.True(t, ok, "job %d names run %d, not a run of docs", j.ID, j.RunID)
		require.False(t, run.started.Before(s.at.Truncate(time.Microsecond)), "trigger sent at %v served by run %d started at %v", s.at, run.id, run.started)
		served[j.RunID]++
	}
	require.Len(t, served, len(runs), "every run of docs served a trigger")
	ranBy := map[string]int{}
	for _, p := range procs {
		ranBy[p.name] = len(p.logged("run succeeded", "docs"))
	}
	require.Equal(t, len(runs), ranBy[a.name]+ranBy[b.name], "each run succeeded in one process")
	t.Logf("phase 1: %d triggers served by %d runs of docs (process a ran %d, b ran %d), 0 overlaps",
		len(all), len(runs), ranBy[a.name], ranBy[b.name])

	// Phase 2: a run of slow blocks at its first embedding request; the
	// process holding slow's advisory lock is killed.
	killedJob := a.trigger(t, "slow", "incremental")
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
	// The survivor sees the job running (River's state is shared) and
	// does not run slow itself.
	slowState := func(p *replicaProcess) daemon.PipelineJSON {
		var list struct{ Pipelines []daemon.PipelineJSON }
		p.api(t, "GET", "/api/pipelines", &list)
		for _, pl := range list.Pipelines {
			if pl.Name == "slow" {
				return pl
			}
		}
		t.Fatal("no pipeline slow")
		return daemon.PipelineJSON{}
	}
	st := slowState(survivor)
	require.Equal(t, "running", st.State)
	require.Len(t, st.Jobs, 1)
	require.Equal(t, killedJob.ID, st.Jobs[0].ID)
	time.Sleep(3 * replicaPoll)
	slowRuns := queryRuns(t, db, runsTable, "slow")
	require.Len(t, slowRuns, 1, "only the lock holder runs slow")
	killed := slowRuns[0]
	require.Equal(t, "running", killed.status)

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
	// No new trigger: the survivor's watch must find the dead job running
	// with the lock free, take it over and run it.
	var takenOver daemon.JobJSON
	waitFor(t, fmt.Sprintf("the killed job %d taken over and completed", killedJob.ID), func() (bool, error) {
		takenOver = survivor.job(t, killedJob.ID)
		return takenOver.ID != killedJob.ID && takenOver.State == "completed", nil
	})
	require.Contains(t, takenOver.Replaces, killedJob.ID)
	require.Equal(t, "incremental", takenOver.Mode)
	followUp := survivor.trigger(t, "slow", "incremental")
	require.NotEqual(t, takenOver.ID, followUp.ID)
	waitFor(t, fmt.Sprintf("job %d of slow completed", followUp.ID), func() (bool, error) {
		followUp = survivor.job(t, followUp.ID)
		return followUp.State == "completed", nil
	})

	slowRuns = queryRuns(t, db, runsTable, "slow")
	require.Len(t, slowRuns, 3, "the killed run, the taken-over job's run and the new trigger's run")
	require.Equal(t, killed.id, slowRuns[0].id)
	takeoverRun, followRun := slowRuns[1], slowRuns[2]
	require.Equal(t, takeoverRun.id, takenOver.RunID)
	require.Equal(t, followRun.id, followUp.RunID)
	for _, r := range slowRuns[1:] {
		require.Equal(t, "succeeded", r.status, "run %d: %s", r.id, r.err)
		require.True(t, r.started.After(killAt), "run %d started before the kill", r.id)
	}
	require.False(t, followRun.started.Before(*takeoverRun.finished), "runs of slow overlap")
	// The watch needs the lock seen free for max(poll_interval, 1 s); 15
	// polls (3 s) is a generous bound for a loaded machine.
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
	t.Logf("phase 2: killed %s holding slow's lock in run %d of job %d (its run row left %q); lock released ≤%v after the kill; survivor %s took the job over as job %d, whose run %d started %v after the kill (poll_interval %v); follow-up job %d ran as run %d; %d records stored",
		holder.name, killed.id, killedJob.ID, slowRuns[0].status, released.Round(time.Millisecond), survivor.name, takenOver.ID, takeoverRun.id,
		takeoverRun.started.Sub(killAt).Round(time.Millisecond), replicaPoll, followUp.ID, followRun.id, stored)
}

// TestReplicaProcessesManyPipelines runs 3 daemon processes on one
// Postgres schema with 20 pipelines and sends each pipeline 200 triggers,
// spread over the replicas (one in 25 asks for a full run). Every
// trigger's job (or the job that replaced it) completes with a succeeded
// run that started after the trigger was sent, no two runs of a pipeline
// overlap, every run served a trigger, and the runs are spread over the
// replicas.
func TestReplicaProcessesManyPipelines(t *testing.T) {
	t.Parallel()
	const replicas, pipelines, triggers = 3, 20, 200
	bin := crashtest.BuildKgsync(t, t.TempDir())
	dsn, schema := pgtest.Schema(t)
	db := pgtest.Connect(t)
	dir := t.TempDir()
	corpus := crashtest.CorpusDocs(t)
	var pl strings.Builder
	for i := range pipelines {
		name := fmt.Sprintf("p%02d", i)
		copyDocs(t, corpus, filepath.Join(dir, name), "openchain-security-specification-1.1.md")
		fmt.Fprintf(&pl, "  - name: %s\n    sources:\n      - name: docs\n        files:\n          root: %s\n", name, name)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kgsync.yaml"), []byte(replicaConfig(dsn, schema, pl.String())), 0o644))
	procs := startReplicas(t, bin, dir, schema, replicas)

	type sent struct {
		pipeline string
		job      int64
		at       time.Time
	}
	var (
		mu  sync.Mutex
		all []sent
		wg  sync.WaitGroup
	)
	start := time.Now()
	for i := range pipelines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("p%02d", i)
			for k := range triggers {
				mode := "incremental"
				if k%25 == 24 {
					mode = "full"
				}
				at := time.Now()
				j := procs[(i+k)%replicas].trigger(t, name, mode)
				mu.Lock()
				all = append(all, sent{name, j.ID, at})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sentIn := time.Since(start)
	river := pgx.Identifier{schema, "river_job"}.Sanitize()
	waitFor(t, "every job finished", func() (bool, error) {
		var n int
		err := db.QueryRow(t.Context(), `SELECT count(*) FROM `+river+` WHERE kind = 'kgsync_sync'
			AND state NOT IN ('completed', 'cancelled', 'discarded')`).Scan(&n)
		return n == 0, err
	})
	drained := time.Since(start)

	// The jobs as River keeps them: state, the run (output) and the ids
	// each one replaced.
	type row struct {
		state    string
		run      int64
		replaces []int64
	}
	rows, err := db.Query(t.Context(), `SELECT id, state, coalesce((metadata->'output'->>'run_id')::bigint, 0),
		coalesce(metadata->'replaces', '[]') FROM `+river+` WHERE kind = 'kgsync_sync'`)
	require.NoError(t, err)
	jobs := map[int64]row{}
	replacedBy := map[int64]int64{}
	for rows.Next() {
		var id int64
		var r row
		var repl []byte
		require.NoError(t, rows.Scan(&id, &r.state, &r.run, &repl))
		require.NoError(t, json.Unmarshal(repl, &r.replaces))
		jobs[id] = r
		for _, old := range r.replaces {
			if replacedBy[old] < id {
				replacedBy[old] = id
			}
		}
	}
	require.NoError(t, rows.Err())

	runsTable := pgx.Identifier{schema, "runs"}.Sanitize()
	served := map[int64]bool{}
	totalRuns := 0
	for i := range pipelines {
		name := fmt.Sprintf("p%02d", i)
		runs := queryRuns(t, db, runsTable, name)
		totalRuns += len(runs)
		byID := map[int64]dbRun{}
		for k, r := range runs {
			require.Equal(t, "succeeded", r.status, "%s run %d: %s", name, r.id, r.err)
			if k > 0 {
				require.False(t, r.started.Before(*runs[k-1].finished), "%s: runs %d and %d overlap", name, runs[k-1].id, r.id)
			}
			byID[r.id] = r
		}
		for _, s := range all {
			if s.pipeline != name {
				continue
			}
			id := s.job
			if by, ok := replacedBy[id]; ok {
				id = by
			}
			j, ok := jobs[id]
			require.True(t, ok, "%s: job %d (sent as %d) not in River", name, id, s.job)
			require.Equal(t, "completed", j.state, "%s: job %d", name, id)
			run, ok := byID[j.run]
			require.True(t, ok, "%s: job %d names run %d, not one of %s", name, id, j.run, name)
			require.False(t, run.started.Before(s.at.Truncate(time.Microsecond)), "%s: trigger sent at %v served by run %d started at %v", name, s.at, run.id, run.started)
			served[run.id] = true
		}
		for _, r := range runs {
			if !served[r.id] {
				var ids []int64
				for id, j := range jobs {
					if j.run == r.id {
						ids = append(ids, id)
					}
				}
				t.Fatalf("%s: run %d served no trigger (River jobs naming it: %v)", name, r.id, ids)
			}
		}
	}
	ranBy := map[string]int{}
	sum := 0
	for _, p := range procs {
		for i := range pipelines {
			ranBy[p.name] += len(p.logged("run succeeded", fmt.Sprintf("p%02d", i)))
		}
		sum += ranBy[p.name]
	}
	require.Equal(t, totalRuns, sum, "each run succeeded in one process")
	for _, p := range procs {
		require.Greater(t, ranBy[p.name], totalRuns/(4*replicas), "replica %s ran %d of %d runs", p.name, ranBy[p.name], totalRuns)
	}
	t.Logf("%d replicas × %d pipelines × %d triggers: %d triggers sent in %v, all served by %d runs (a %d, b %d, c %d) after %v, 0 overlaps",
		replicas, pipelines, triggers, len(all), sentIn.Round(time.Millisecond), totalRuns, ranBy["a"], ranBy["b"], ranBy["c"], drained.Round(time.Millisecond))
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

func (p *replicaProcess) trigger(t *testing.T, pipeline, mode string) daemon.JobJSON {
	t.Helper()
	var j daemon.JobJSON
	p.api(t, "POST", "/api/pipelines/"+pipeline+"/sync?mode="+mode, &j)
	require.Positive(t, j.ID)
	return j
}

// job is GET /api/jobs/{id}: the job, or the one that replaced it.
func (p *replicaProcess) job(t *testing.T, id int64) daemon.JobJSON {
	t.Helper()
	var j daemon.JobJSON
	p.api(t, "GET", "/api/jobs/"+strconv.FormatInt(id, 10), &j)
	return j
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
