package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/internal/corpus"
	"github.com/kgsync/kgsync/internal/testlog"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	testSecret = "hook-secret-7f3a9c"
	testToken  = "api-token-51bd2e"
	waitFor    = 5 * time.Second
	// longWait bounds the waits on River's own timing, which a loaded
	// machine stretches: the first firing of a schedule (River's leader
	// starts its periodic job enqueuer after a random sleep of up to a
	// second for it and for each maintenance service started before it,
	// and "@every 1s" first fires on the next whole second after that), a
	// take-over (a poll at least takeOverAfter after the first one that
	// saw the lock free), a job's completion. Reaching it fails the test;
	// when things are fast it costs nothing.
	longWait = 60 * time.Second
)

// call is one Runner.Run call.
type call struct {
	name    string
	trigger state.Trigger
	mode    Mode
	at      time.Time
}

// fakeRunner records calls, opens and closes a run row in the store as a
// pipeline does, and runs block (when set) in the middle of the run.
type fakeRunner struct {
	store state.Store
	calls chan call
	// block, when set, is called inside each run of pipeline name; its
	// error fails the run.
	block func(ctx context.Context, name string) error
}

func (f *fakeRunner) Run(ctx context.Context, name string, trigger state.Trigger, mode Mode) (state.Run, error) {
	f.calls <- call{name: name, trigger: trigger, mode: mode, at: time.Now()}
	run, err := f.store.RunOpen(ctx, name, trigger)
	if err != nil {
		return state.Run{}, err
	}
	if f.block != nil {
		err = f.block(ctx, name)
	}
	run.Status, run.Counts.RecordsRead, run.Counts.ChunksEmbedded = state.StatusSucceeded, 3, 2
	if err != nil {
		run.Status, run.Error = state.StatusFailed, err.Error()
	}
	if cerr := f.store.RunClose(context.WithoutCancel(ctx), run); cerr != nil {
		return run, cerr
	}
	return run, err
}

// gristSources is a pipeline's Grist source reading every table: webhook
// deliveries for any table are its.
func gristSources(tables ...string) []config.Source {
	return []config.Source{{Name: "grist", Grist: &config.GristSource{Server: "https://grist.example", DocID: "doc", APIKey: "k", Tables: tables}}}
}

type testBundle struct {
	d      *Daemon
	store  *sqlite.Store
	runner *fakeRunner
	clock  *fakeClock
	reg    *prometheus.Registry
	srv    *httptest.Server
	logs   *testlog.Buffer
	cancel context.CancelFunc
	done   chan error
}

type setupOpts struct {
	pipelines []config.Pipeline
	daemon    config.Daemon
	block     func(ctx context.Context, name string) error
	// strict keeps daemon.anonymous_writes as given (setup turns it on
	// when no api_token is set, as most tests call the API anonymously).
	strict bool
}

// setup starts a daemon on a fresh SQLite store with a fake runner and a
// fake clock; it stops when the test ends.
func setup(t *testing.T, o setupOpts) *testBundle {
	t.Helper()
	if o.pipelines == nil {
		o.pipelines = []config.Pipeline{{Name: "p", TimeZone: "UTC", Sources: gristSources()}}
	}
	if o.daemon.PollInterval == 0 {
		o.daemon.PollInterval = time.Hour
	}
	if o.daemon.GracePeriod == 0 {
		o.daemon.GracePeriod = time.Minute
	}
	if !o.strict && o.daemon.APIToken == "" {
		o.daemon.AnonymousWrites = true
	}
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	b := &testBundle{
		store:  store,
		runner: &fakeRunner{store: store, calls: make(chan call, 1000), block: o.block},
		clock:  newFakeClock(time.Date(2026, 3, 2, 9, 58, 0, 0, time.UTC)),
		reg:    prometheus.NewRegistry(),
		logs:   &testlog.Buffer{},
		done:   make(chan error, 1),
	}
	b.d, err = New(Options{
		Config: &config.Config{Daemon: o.daemon, Pipelines: o.pipelines},
		Store:  store, Runner: b.runner, Registerer: b.reg, Clock: b.clock,
		Logger: slog.New(slog.NewJSONHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.NoError(t, err)
	b.srv = httptest.NewServer(b.d.Handler())
	t.Cleanup(b.srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() { b.done <- b.d.Run(ctx, nil) }()
	t.Cleanup(func() {
		b.cancel()
		b.clock.Advance(24 * time.Hour) // end any grace period
		select {
		case <-b.done:
		case <-time.After(waitFor):
			t.Error("daemon did not stop")
		}
	})
	return b
}

// nextCall waits for the next runner call.
func (b *testBundle) nextCall(t *testing.T) call {
	t.Helper()
	return b.nextCallWithin(t, waitFor)
}

// nextCallWithin waits up to d of wall time for the next runner call.
func (b *testBundle) nextCallWithin(t *testing.T, d time.Duration) call {
	t.Helper()
	select {
	case c := <-b.runner.calls:
		return c
	case <-time.After(d):
		t.Fatalf("no run started within %v", d)
		return call{}
	}
}

// noCall fails when a run starts within d of wall time; it is the negative
// of nextCall and only bounds how long the test looks.
func (b *testBundle) noCall(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case c := <-b.runner.calls:
		t.Fatalf("unexpected run %+v", c)
	case <-time.After(d):
	}
}

// settled waits until no run job is queued or running.
func (b *testBundle) settled(t *testing.T) {
	t.Helper()
	settled(t, b.d)
}

// settled waits until d's River shows no run job queued or running.
func settled(t *testing.T, d *Daemon) {
	t.Helper()
	require.Eventually(t, func() bool {
		jobs, err := d.jobs.list(context.Background(), river.NewJobListParams().Kinds(KindSync).States(jobStates...))
		return err == nil && len(jobs) == 0
	}, longWait, time.Millisecond)
}

// job returns job id (or the job that replaced it) as the API shows it.
func (b *testBundle) job(t *testing.T, id int64) JobJSON {
	t.Helper()
	j, err := lookupJob(t.Context(), b.d.jobs, id)
	require.NoError(t, err, "job %d", id)
	return j
}

// do sends one JSON request to the bundle's server, with auth as its
// Authorization header unless empty.
func (b *testBundle) do(t *testing.T, method, path, auth string, body io.Reader) (int, string) {
	t.Helper()
	header := map[string]string{"Content-Type": "application/json"}
	if auth != "" {
		header["Authorization"] = auth
	}
	return b.request(t, method, path, header, body)
}

// request sends one request to the bundle's server with header (a "Host"
// entry sets the request's Host).
func (b *testBundle) request(t *testing.T, method, path string, header map[string]string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	require.NoError(t, err)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(out)
}

func TestZonedSchedule(t *testing.T) {
	t.Parallel()
	sched, err := cron.NewParser(config.ScheduleFields).Parse("0 9 * * *")
	require.NoError(t, err)
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	z := zonedSchedule{sched, berlin}
	// 09:00 in Berlin is 08:00 UTC in winter (CET) and 07:00 UTC in summer (CEST).
	require.True(t, z.Next(time.Date(2026, 3, 2, 7, 30, 0, 0, time.UTC)).Equal(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)))
	require.True(t, z.Next(time.Date(2026, 7, 1, 7, 30, 0, 0, time.UTC)).Equal(time.Date(2026, 7, 2, 7, 0, 0, 0, time.UTC)))
	require.True(t, zonedSchedule{sched, time.UTC}.Next(time.Date(2026, 3, 2, 7, 30, 0, 0, time.UTC)).Equal(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)))
}

// TestScheduleRunsThroughRiver: a scheduled pipeline's firings are River
// periodic jobs (inserted by the leader, this single client); each one
// queues an incremental run with reason cron.
func TestScheduleRunsThroughRiver(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{pipelines: []config.Pipeline{
		{Name: "p", Schedule: "@every 1s", TimeZone: "Europe/Berlin"},
		{Name: "q", TimeZone: "UTC"},
	}, daemon: config.Daemon{PollInterval: 100 * time.Millisecond}})
	// The first firing waits for River's leader to start its periodic
	// job enqueuer (see longWait).
	c := b.nextCallWithin(t, longWait)
	require.Equal(t, call{name: "p", trigger: state.TriggerCron, mode: ModeIncremental}, call{name: c.name, trigger: c.trigger, mode: c.mode})
	require.Equal(t, "p", b.nextCallWithin(t, longWait).name, "and again a second later")

	before := time.Now()
	code, body := b.do(t, "GET", "/api/pipelines", "", nil)
	after := time.Now()
	require.Equal(t, http.StatusOK, code)
	var got struct{ Pipelines []PipelineJSON }
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got.Pipelines, 2)
	require.Equal(t, "@every 1s", got.Pipelines[0].Schedule)
	require.NotNil(t, got.Pipelines[0].NextRun)
	// "@every 1s" next fires on the whole second after the request was
	// served, some time between before and after.
	next := *got.Pipelines[0].NextRun
	require.Zero(t, next.Nanosecond(), "next run %v", next)
	require.False(t, next.Before(before.Truncate(time.Second).Add(time.Second)), "next run %v, request at %v", next, before)
	require.False(t, next.After(after.Truncate(time.Second).Add(time.Second)), "next run %v, answer at %v", next, after)
	require.Nil(t, got.Pipelines[1].NextRun)
	require.Nil(t, got.Pipelines[1].LastRun)
	require.Empty(t, got.Pipelines[1].Jobs)
}

func TestOverlappingTriggersQueueOneFollowUp(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	first := true
	var mu sync.Mutex
	b := setup(t, setupOpts{block: func(ctx context.Context, _ string) error {
		mu.Lock()
		wait := first
		first = false
		mu.Unlock()
		if wait {
			<-release
		}
		return nil
	}})
	ctx := t.Context()
	t0, err := b.d.Trigger(ctx, "p", ModeIncremental, state.TriggerManual)
	require.NoError(t, err)
	require.False(t, t0.Coalesced)
	require.Equal(t, ModeIncremental, b.nextCall(t).mode)
	// Five triggers while the first run is going on, the third asking for
	// full: the first queues a job, the third replaces it with a full one,
	// the others join.
	var qs []Queued
	for i := range 5 {
		mode := ModeIncremental
		if i == 2 {
			mode = ModeFull
		}
		q, err := b.d.Trigger(ctx, "p", mode, state.TriggerWebhook)
		require.NoError(t, err)
		require.NotEqual(t, t0.Job.ID, q.Job.ID, "a trigger during a run does not join the running job")
		require.Equal(t, i > 0, q.Coalesced, "trigger %d", i)
		require.Equal(t, i == 2, q.Replaced, "trigger %d", i)
		qs = append(qs, q)
	}
	require.Equal(t, qs[0].Job.ID, qs[1].Job.ID)
	require.Equal(t, qs[2].Job.ID, qs[4].Job.ID)
	b.noCall(t, 50*time.Millisecond) // no second run while the first runs
	close(release)
	follow := b.nextCall(t)
	require.Equal(t, ModeFull, follow.mode, "the follow-up run takes the strongest mode asked for")
	require.Equal(t, state.TriggerWebhook, follow.trigger)
	b.settled(t)
	b.noCall(t, 50*time.Millisecond)

	first0 := b.job(t, t0.Job.ID)
	require.Equal(t, "completed", first0.State)
	var followRun int64
	for i, q := range qs {
		j := b.job(t, q.Job.ID)
		require.Equal(t, qs[4].Job.ID, j.ID, "trigger %d: the replaced job's id leads to its replacement", i)
		require.Equal(t, "completed", j.State)
		require.Equal(t, "full", j.Mode)
		require.NotZero(t, j.RunID)
		if followRun == 0 {
			followRun = j.RunID
		}
		require.Equal(t, followRun, j.RunID, "all five served by one run")
	}
	require.Equal(t, []int64{qs[0].Job.ID}, b.job(t, qs[4].Job.ID).Replaces)
	require.NotEqual(t, first0.RunID, followRun)
	_, metrics := b.do(t, "GET", "/metrics", "", nil)
	require.Contains(t, metrics, `kgsync_triggers_coalesced_total{pipeline="p"} 4`)
	require.Contains(t, metrics, `kgsync_job_latency_seconds_count{pipeline="p"} 2`)
}

func TestModeMerge(t *testing.T) {
	t.Parallel()
	tests := []struct{ a, b, want Mode }{
		{ModeIncremental, ModeIncremental, ModeIncremental},
		{ModeIncremental, ModeFull, ModeFull},
		{ModeFull, ModeReembed, ModeReembed},
		{ModeRebuildGraph, ModeRebuildGraph, ModeRebuildGraph},
		{ModeIncremental, ModeRebuildGraph, ModeFull}, // a rebuild reads no source
		{ModeRebuildGraph, ModeIncremental, ModeFull},
		{ModeRebuildGraph, ModeReembed, ModeReembed},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.a.Merge(tt.b), "%s + %s", tt.a, tt.b)
	}
	_, err := ParseMode("everything")
	require.ErrorContains(t, err, `unknown mode "everything"`)
}

// sharedDoc reads <shared>/docs/<rel> (internal/corpus).
func sharedDoc(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpus.Shared(t), "docs", rel))
	require.NoError(t, err)
	return b
}

func TestWebhookAuthLimitsAndSecretsNotLogged(t *testing.T) {
	t.Parallel()
	var b *testBundle
	inRun := make(chan []int64, 10)
	b = setup(t, setupOpts{daemon: config.Daemon{WebhookSecret: testSecret, APIToken: testToken, MaxBodyBytes: 64 << 10, Debounce: time.Second},
		block: func(context.Context, string) error { inRun <- b.d.Rows().IDs("p", "Guides"); return nil }})
	row := `[{"id": 20, "manualSort": 20, "title": "x"}]`
	tests := []struct {
		name, auth, body string
		want             int
	}{
		{"missing", "", row, http.StatusUnauthorized},
		{"wrong", "Bearer not-the-secret", row, http.StatusUnauthorized},
		{"prefix", "Bearer " + testSecret[:5], row, http.StatusUnauthorized},
		{"malformed", "Bearer " + testSecret, `[{"id": 20,`, http.StatusBadRequest},
		{"not an array", "Bearer " + testSecret, `{"id": 20}`, http.StatusBadRequest},
		{"no id", "Bearer " + testSecret, `[{"title": "x"}]`, http.StatusBadRequest},
		{"trailing data", "Bearer " + testSecret, row + `[]`, http.StatusBadRequest},
		{"too large", "Bearer " + testSecret, `[{"id": 1, "t": "` + strings.Repeat("a", 64<<10) + `"}]`, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		code, body := b.do(t, "POST", "/hooks/grist/p/Guides", tt.auth, strings.NewReader(tt.body))
		require.Equal(t, tt.want, code, "%s: %s", tt.name, body)
	}
	// Nothing was gathered or queued by the rejected deliveries.
	require.Empty(t, b.d.workers["p"].hooks.take())
	require.Empty(t, b.d.workers["p"].hooks.signal)
	jobs, err := b.d.jobs.list(t.Context(), river.NewJobListParams().Kinds(KindSync).States(rivertype.JobStates()...))
	require.NoError(t, err)
	require.Empty(t, jobs)

	// The right secret, as "Bearer <secret>" or as the whole header.
	code, _ := b.do(t, "POST", "/hooks/grist/p/Guides", "Bearer "+testSecret, strings.NewReader(row))
	require.Equal(t, http.StatusAccepted, code)
	code, _ = b.do(t, "POST", "/hooks/grist/p/Guides", testSecret, strings.NewReader(`[{"id": 21}]`))
	require.Equal(t, http.StatusAccepted, code)
	code, _ = b.do(t, "POST", "/hooks/grist/nope/Guides", "Bearer "+testSecret, strings.NewReader(row))
	require.Equal(t, http.StatusNotFound, code)
	b.clock.waitTimers(t, 2) // the dead-job watch and the debounce window
	b.clock.Advance(time.Second)
	require.Equal(t, state.TriggerWebhook, b.nextCall(t).trigger)
	b.settled(t)
	require.Equal(t, []int64{20, 21}, <-inRun, "the run finds the rows delivered before it")
	require.Empty(t, b.d.Rows().IDs("p", "Guides"), "and they are released when it succeeds")

	// The API wants the token.
	code, _ = b.do(t, "GET", "/api/pipelines", "", nil)
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = b.do(t, "GET", "/api/pipelines", "Bearer wrong", nil)
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = b.do(t, "GET", "/api/pipelines", "Bearer "+testToken, nil)
	require.Equal(t, http.StatusOK, code)

	code, metrics := b.do(t, "GET", "/metrics", "", nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, metrics, `kgsync_webhook_deliveries_total{outcome="unauthorized",pipeline="p"} 3`)
	require.Contains(t, metrics, `kgsync_webhook_deliveries_total{outcome="malformed",pipeline="p"} 4`)
	require.Contains(t, metrics, `kgsync_webhook_deliveries_total{outcome="too_large",pipeline="p"} 1`)
	require.Contains(t, metrics, `kgsync_webhook_deliveries_total{outcome="accepted",pipeline="p"} 2`)
	require.Contains(t, metrics, `kgsync_webhook_deliveries_total{outcome="unknown_pipeline",pipeline=""} 1`)
	require.Contains(t, metrics, `kgsync_webhook_coalesced_total{pipeline="p"} 1`)
	require.Contains(t, metrics, `kgsync_runs_total{outcome="succeeded",pipeline="p"} 1`)
	require.Contains(t, metrics, `kgsync_chunks_total{outcome="embedded",pipeline="p"} 2`)

	logs := b.logs.String()
	require.Contains(t, logs, "webhook delivery rejected", "the logs were captured")
	require.NotContains(t, logs, testSecret)
	require.NotContains(t, logs, testSecret[:5]+`"`)
	require.NotContains(t, logs, testToken)
	require.NotContains(t, metrics, testSecret)
}

func TestWebhookDisabledWithoutSecret(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	code, body := b.do(t, "POST", "/hooks/grist/p/T", "Bearer anything", strings.NewReader(`[{"id":1}]`))
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "daemon.webhook_secret")
}

// TestWebhookBurstAndRealDeliveries posts a real capture where one POST
// holds one row five times (the last copy wins), then a burst of 100
// deliveries within one debounce window: one run serves them all.
func TestWebhookBurstAndRealDeliveries(t *testing.T) {
	t.Parallel()
	var b *testBundle
	inRun := make(chan []map[string]any, 10)
	b = setup(t, setupOpts{daemon: config.Daemon{WebhookSecret: testSecret, Debounce: 2 * time.Second},
		block: func(context.Context, string) error { inRun <- b.d.Rows().Take("p", "HSCodes"); return nil }})
	dup := sharedDoc(t, "grist-samples/real/webhooks/deliveries/022-same-row-5-rapid-updates.hscodes.json")
	code, _ := b.do(t, "POST", "/hooks/grist/p/HSCodes", "Bearer "+testSecret, bytes.NewReader(dup))
	require.Equal(t, http.StatusAccepted, code)
	for i := range 100 {
		body := fmt.Sprintf(`[{"id": %d, "manualSort": %d, "description": "v%d"}]`, 5000+i%10, i, i)
		code, _ := b.do(t, "POST", "/hooks/grist/p/HSCodes", "Bearer "+testSecret, strings.NewReader(body))
		require.Equal(t, http.StatusAccepted, code)
	}
	b.clock.waitTimers(t, 2)
	b.clock.Advance(2 * time.Second)
	require.Equal(t, state.TriggerWebhook, b.nextCall(t).trigger)
	b.settled(t)
	b.noCall(t, 50*time.Millisecond)

	rows := <-inRun
	require.Len(t, rows, 11, "row 3000 of the capture and ids 5000..5009")
	require.Equal(t, json.Number("3000"), rows[0]["id"])
	require.True(t, strings.HasSuffix(rows[0]["description"].(string), "[dup test v5]"), "the last of five copies wins: %v", rows[0]["description"])
	// id 5009 was last posted by delivery i = 99.
	require.Equal(t, "v99", rows[10]["description"])
	code, metrics := b.do(t, "GET", "/metrics", "", nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, metrics, `kgsync_webhook_coalesced_total{pipeline="p"} 100`)
	require.Contains(t, metrics, `kgsync_runs_total{outcome="succeeded",pipeline="p"} 1`)
}

func TestAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	code, body := b.do(t, "POST", "/api/pipelines/p/sync?mode=reembed", "", nil)
	require.Equal(t, http.StatusAccepted, code, body)
	var tr JobJSON
	require.NoError(t, json.Unmarshal([]byte(body), &tr))
	require.NotZero(t, tr.ID)
	require.Equal(t, "reembed", tr.Mode)
	require.Equal(t, "manual", tr.Reason)
	require.Equal(t, "available", tr.State)
	require.Equal(t, 5, tr.MaxAttempts, "daemon.max_attempts' default")
	c := b.nextCall(t)
	require.Equal(t, ModeReembed, c.mode)
	require.Equal(t, state.TriggerManual, c.trigger)
	b.settled(t)

	code, body = b.do(t, "GET", fmt.Sprintf("/api/jobs/%d", tr.ID), "", nil)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal([]byte(body), &tr))
	require.Equal(t, "completed", tr.State)
	require.Equal(t, 1, tr.Attempt)
	require.NotNil(t, tr.FinalizedAt)
	require.NotZero(t, tr.RunID)

	code, body = b.do(t, "GET", fmt.Sprintf("/api/runs/%d", tr.RunID), "", nil)
	require.Equal(t, http.StatusOK, code)
	var run RunJSON
	require.NoError(t, json.Unmarshal([]byte(body), &run))
	require.Equal(t, "succeeded", run.Status)
	require.Equal(t, 3, run.Counts.RecordsRead)

	code, body = b.do(t, "GET", "/api/pipelines", "", nil)
	require.Equal(t, http.StatusOK, code)
	var list struct{ Pipelines []PipelineJSON }
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Pipelines, 1)
	require.Equal(t, "idle", list.Pipelines[0].State)
	require.NotNil(t, list.Pipelines[0].LastRun)
	require.Equal(t, tr.RunID, list.Pipelines[0].LastRun.ID)

	for _, tt := range []struct {
		method, path string
		want         int
	}{
		{"POST", "/api/pipelines/p/sync?mode=everything", http.StatusBadRequest},
		{"POST", "/api/pipelines/nope/sync", http.StatusNotFound},
		{"GET", "/api/runs/999", http.StatusNotFound},
		{"GET", "/api/runs/x", http.StatusBadRequest},
		{"GET", "/api/jobs/999", http.StatusNotFound},
		{"GET", "/api/jobs/x", http.StatusBadRequest},
		{"GET", "/healthz", http.StatusOK},
		{"GET", "/readyz", http.StatusOK},
		{"DELETE", "/api/pipelines", http.StatusMethodNotAllowed},
	} {
		code, body := b.do(t, tt.method, tt.path, "", nil)
		require.Equal(t, tt.want, code, "%s %s: %s", tt.method, tt.path, body)
	}
}

type failingPinger struct{}

func (failingPinger) Ping(context.Context) error { return errors.New("connection refused") }

func TestReadyzFailsWithUnreachableSink(t *testing.T) {
	t.Parallel()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	defer store.Close()
	d, err := New(Options{Config: &config.Config{Pipelines: []config.Pipeline{{Name: "p"}}}, Store: store,
		Runner: &fakeRunner{store: store}, Checks: map[string]any{"sink p": failingPinger{}, "other": 42}})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Contains(t, rec.Body.String(), `"sink p":"connection refused"`)
}

// TestGracefulShutdown stops the daemon in the middle of a run that only
// ends when its context is cancelled: Run waits the grace period, cancels
// it, and the run's job is queued again for the next start (or another
// replica), without counting as a failed attempt.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{})
	b := setup(t, setupOpts{daemon: config.Daemon{GracePeriod: 30 * time.Second}, block: func(ctx context.Context, _ string) error {
		<-ctx.Done() // the batch in flight "finishes", then the run stops before its next commit
		close(cancelled)
		return ctx.Err()
	}})
	tr, err := b.d.Trigger(t.Context(), "p", ModeIncremental, state.TriggerManual)
	require.NoError(t, err)
	b.nextCall(t)
	b.cancel()
	// Stopping: no new triggers, readyz fails, webhooks refused.
	require.Eventually(t, b.d.isStopping, waitFor, time.Millisecond)
	_, err = b.d.Trigger(t.Context(), "p", ModeIncremental, state.TriggerManual)
	require.ErrorIs(t, err, ErrStopping)
	code, _ := b.do(t, "GET", "/readyz", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, code)
	// The run goes on until the grace period ends.
	b.clock.waitTimers(t, 1)
	select {
	case <-cancelled:
		t.Fatal("run cancelled before the grace period ended")
	case err := <-b.done:
		t.Fatalf("daemon stopped during the grace period: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	b.clock.Advance(30 * time.Second)
	select {
	case err := <-b.done:
		require.ErrorIs(t, err, ErrGraceExpired)
		b.done <- err // for the cleanup
	case <-time.After(waitFor):
		t.Fatal("daemon did not stop after the grace period")
	}
	<-cancelled
	got := b.job(t, tr.Job.ID)
	require.Equal(t, "available", got.State, "a cancelled run leaves its job queued")
	require.Zero(t, got.Attempt, "a run cancelled by shutdown is not a failed attempt")
	runs, err := b.store.RunList(t.Context(), "p", 0)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, state.StatusFailed, runs[0].Status)
}

// TestShutdownWaitsForRunToFinish: a run that ends within the grace period
// completes and Run returns nil.
func TestShutdownWaitsForRunToFinish(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	b := setup(t, setupOpts{block: func(ctx context.Context, _ string) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	tr, err := b.d.Trigger(t.Context(), "p", ModeIncremental, state.TriggerManual)
	require.NoError(t, err)
	b.nextCall(t)
	b.cancel()
	b.clock.waitTimers(t, 1) // the grace timer
	close(release)
	select {
	case err := <-b.done:
		require.NoError(t, err)
		b.done <- err
	case <-time.After(waitFor):
		t.Fatal("daemon did not stop")
	}
	require.Equal(t, "completed", b.job(t, tr.Job.ID).State)
}

// TestFailedRunRetriedWithBackoff: a run that fails transiently is retried
// by River after retry_backoff, then twice that, and its job completes at
// the third attempt; a run that keeps failing is tried max_attempts times
// and its job discarded.
func TestFailedRunRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	fails := map[string]int{"flaky": 2, "broken": 1 << 30}
	b := setup(t, setupOpts{
		pipelines: []config.Pipeline{{Name: "flaky"}, {Name: "broken"}},
		daemon:    config.Daemon{PollInterval: 20 * time.Millisecond, RetryBackoff: 100 * time.Millisecond, MaxAttempts: 3},
		block: func(_ context.Context, name string) error {
			mu.Lock()
			defer mu.Unlock()
			if fails[name] > 0 {
				fails[name]--
				return errors.New("sink: connection refused")
			}
			return nil
		},
	})
	flaky, err := b.d.Trigger(t.Context(), "flaky", ModeIncremental, state.TriggerManual)
	require.NoError(t, err)
	var at []time.Time
	for range 3 {
		c := b.nextCall(t)
		require.Equal(t, "flaky", c.name)
		at = append(at, c.at)
	}
	for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
		gap := at[i+1].Sub(at[i])
		require.GreaterOrEqual(t, gap, want*9/10, "retry %d after %v, back-off %v", i+1, gap, want)
	}
	b.settled(t)
	j := b.job(t, flaky.Job.ID)
	require.Equal(t, "completed", j.State)
	require.Equal(t, 3, j.Attempt)
	require.Equal(t, "sink: connection refused", j.Error, "the last failed attempt's error")

	broken, err := b.d.Trigger(t.Context(), "broken", ModeIncremental, state.TriggerManual)
	require.NoError(t, err)
	for range 3 {
		require.Equal(t, "broken", b.nextCall(t).name)
	}
	b.settled(t)
	b.noCall(t, 300*time.Millisecond)
	j = b.job(t, broken.Job.ID)
	require.Equal(t, "discarded", j.State, "tried max_attempts times")
	require.Equal(t, 3, j.Attempt)
	_, metrics := b.do(t, "GET", "/metrics", "", nil)
	require.Contains(t, metrics, `kgsync_runs_total{outcome="failed",pipeline="broken"} 3`)
	require.Contains(t, metrics, `kgsync_runs_total{outcome="failed",pipeline="flaky"} 2`)
}

// TestMassDeleteRefusalNotRetried: a run refused by the mass-delete guard
// would be refused again; its job is cancelled after one attempt.
func TestMassDeleteRefusalNotRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{
		daemon: config.Daemon{PollInterval: 20 * time.Millisecond, RetryBackoff: 10 * time.Millisecond},
		block: func(context.Context, string) error {
			return fmt.Errorf("pipeline p: %w: 9 of 10 records", pipeline.ErrMassDelete)
		},
	})
	q, err := b.d.Trigger(t.Context(), "p", ModeIncremental, state.TriggerManual)
	require.NoError(t, err)
	b.nextCall(t)
	b.settled(t)
	b.noCall(t, 200*time.Millisecond)
	require.Equal(t, "cancelled", b.job(t, q.Job.ID).State)
}

// TestLockedPipelineSnoozes: while another process holds the pipeline's
// lock (here a Lock of the test), the job snoozes instead of failing; once
// the lock is free it runs.
func TestLockedPipelineSnoozes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{daemon: config.Daemon{PollInterval: 20 * time.Millisecond}})
	unlock, err := b.store.Lock(t.Context(), "p")
	require.NoError(t, err)
	q, err := b.d.Trigger(t.Context(), "p", ModeFull, state.TriggerManual)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, metrics := b.do(t, "GET", "/metrics", "", nil)
		return strings.Contains(metrics, `kgsync_lock_busy_total{pipeline="p"} 2`)
	}, waitFor, 10*time.Millisecond, "snoozed, then tried again")
	b.noCall(t, 50*time.Millisecond)
	// River counts an attempt while a fetched job runs and takes it back
	// when the job snoozes: look between two tries.
	var j JobJSON
	require.Eventually(t, func() bool { j = b.job(t, q.Job.ID); return j.State != "running" }, waitFor, time.Millisecond)
	require.Equal(t, "available", j.State, "snoozed: available again at scheduled_at")
	require.True(t, j.ScheduledAt.After(j.CreatedAt))
	require.Zero(t, j.Attempt, "snoozes are not attempts")
	require.NoError(t, unlock())
	require.Equal(t, ModeFull, b.nextCall(t).mode)
	b.settled(t)
	require.Equal(t, "completed", b.job(t, q.Job.ID).State)
}

// TestSQLiteManyPipelines drives River on the embedded SQLite store, one
// connection shared by River and the runs, with concurrent triggers of
// eight pipelines whose runs write run rows: every trigger is served, no
// run fails, nothing logs an error (SQLITE_BUSY would).
func TestSQLiteManyPipelines(t *testing.T) {
	t.Parallel()
	var pipelines []config.Pipeline
	for i := range 8 {
		pipelines = append(pipelines, config.Pipeline{Name: fmt.Sprintf("p%d", i)})
	}
	b := setup(t, setupOpts{pipelines: pipelines, daemon: config.Daemon{PollInterval: 50 * time.Millisecond},
		block: func(ctx context.Context, _ string) error { sleep(ctx, time.Millisecond); return nil }})
	type sent struct {
		id int64
		at time.Time
	}
	var mu sync.Mutex
	var all []sent
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 40 {
				at := time.Now()
				mode := ModeIncremental
				if k%10 == 9 {
					mode = ModeFull
				}
				q, err := b.d.Trigger(context.Background(), fmt.Sprintf("p%d", i), mode, state.TriggerWebhook)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				all = append(all, sent{q.Job.ID, at})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	b.settled(t)
	for _, s := range all {
		j := b.job(t, s.id)
		require.Equal(t, "completed", j.State, "job %d", s.id)
		run, err := b.store.RunGet(t.Context(), j.RunID)
		require.NoError(t, err)
		require.Equal(t, state.StatusSucceeded, run.Status)
		require.False(t, run.StartedAt.Before(s.at.Truncate(time.Microsecond)), "job %d", s.id)
	}
	runs, err := b.store.RunList(t.Context(), "", 0)
	require.NoError(t, err)
	t.Logf("SQLite: %d triggers of 8 pipelines served by %d runs", len(all), len(runs))
	require.NotContains(t, b.logs.String(), `"level":"ERROR"`)
}
