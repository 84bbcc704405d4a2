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
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/internal/corpus"
	"github.com/kgsync/kgsync/internal/testlog"
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
	select {
	case c := <-b.runner.calls:
		return c
	case <-time.After(waitFor):
		t.Fatal("no run started")
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

// settled waits until no trigger is pending.
func (b *testBundle) settled(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		p, err := b.store.TriggerPending(context.Background())
		return err == nil && len(p) == 0
	}, waitFor, time.Millisecond)
}

func (b *testBundle) do(t *testing.T, method, path, auth string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(out)
}

func TestScheduleFiresWithFakeClock(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{pipelines: []config.Pipeline{
		{Name: "p", Schedule: "*/5 * * * *", TimeZone: "Europe/Berlin"},
		{Name: "q", TimeZone: "UTC"},
	}})
	// Timers: the poller's and p's schedule.
	b.clock.waitTimers(t, 2)
	// 09:58 UTC: the next five-minute tick is 10:00 (Berlin is a whole hour
	// off UTC, so the tick is the same instant).
	b.clock.Advance(time.Minute)
	b.noCall(t, 50*time.Millisecond)
	b.clock.Advance(time.Minute)
	c := b.nextCall(t)
	require.Equal(t, call{name: "p", trigger: state.TriggerCron, mode: ModeIncremental}, call{name: c.name, trigger: c.trigger, mode: c.mode})
	b.settled(t)
	b.clock.waitTimers(t, 2)
	b.clock.Advance(5 * time.Minute)
	require.Equal(t, "p", b.nextCall(t).name)

	// GET /api/pipelines reports the schedule and the next tick, 10:10.
	b.clock.waitTimers(t, 2)
	code, body := b.do(t, "GET", "/api/pipelines", "", nil)
	require.Equal(t, http.StatusOK, code)
	var got struct{ Pipelines []PipelineJSON }
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got.Pipelines, 2)
	require.Equal(t, "*/5 * * * *", got.Pipelines[0].Schedule)
	require.NotNil(t, got.Pipelines[0].NextRun)
	require.True(t, got.Pipelines[0].NextRun.Equal(time.Date(2026, 3, 2, 10, 10, 0, 0, time.UTC)), "next run %v", got.Pipelines[0].NextRun)
	require.Nil(t, got.Pipelines[1].NextRun)
	require.Nil(t, got.Pipelines[1].LastRun)
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
	require.Equal(t, ModeIncremental, b.nextCall(t).mode)
	// Five triggers while the first run is going on, one asking for full.
	var ids []int64
	for i := range 5 {
		mode := ModeIncremental
		if i == 2 {
			mode = ModeFull
		}
		tr, err := b.d.Trigger(ctx, "p", mode, state.TriggerWebhook)
		require.NoError(t, err)
		ids = append(ids, tr.ID)
	}
	b.noCall(t, 50*time.Millisecond) // no second run while the first runs
	close(release)
	follow := b.nextCall(t)
	require.Equal(t, ModeFull, follow.mode, "the follow-up run takes the strongest mode asked for")
	b.settled(t)
	b.noCall(t, 50*time.Millisecond)

	first0, err := b.store.TriggerGet(ctx, t0.ID)
	require.NoError(t, err)
	var followRun int64
	for _, id := range ids {
		tr, err := b.store.TriggerGet(ctx, id)
		require.NoError(t, err)
		require.NotZero(t, tr.RunID)
		if followRun == 0 {
			followRun = tr.RunID
		}
		require.Equal(t, followRun, tr.RunID, "all five served by one run")
	}
	require.NotEqual(t, first0.RunID, followRun)
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
	pending, err := b.store.TriggerPending(t.Context())
	require.NoError(t, err)
	require.Empty(t, pending)

	// The right secret, as "Bearer <secret>" or as the whole header.
	code, _ := b.do(t, "POST", "/hooks/grist/p/Guides", "Bearer "+testSecret, strings.NewReader(row))
	require.Equal(t, http.StatusAccepted, code)
	code, _ = b.do(t, "POST", "/hooks/grist/p/Guides", testSecret, strings.NewReader(`[{"id": 21}]`))
	require.Equal(t, http.StatusAccepted, code)
	code, _ = b.do(t, "POST", "/hooks/grist/nope/Guides", "Bearer "+testSecret, strings.NewReader(row))
	require.Equal(t, http.StatusNotFound, code)
	b.clock.waitTimers(t, 2) // poller and the debounce window
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
	var tr TriggerJSON
	require.NoError(t, json.Unmarshal([]byte(body), &tr))
	require.NotZero(t, tr.ID)
	require.Equal(t, "reembed", tr.Mode)
	require.Equal(t, "manual", tr.Reason)
	c := b.nextCall(t)
	require.Equal(t, ModeReembed, c.mode)
	require.Equal(t, state.TriggerManual, c.trigger)
	b.settled(t)

	code, body = b.do(t, "GET", fmt.Sprintf("/api/triggers/%d", tr.ID), "", nil)
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal([]byte(body), &tr))
	require.Equal(t, "done", tr.Status)
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
		{"GET", "/api/triggers/999", http.StatusNotFound},
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
// it, and the run's trigger stays queued for the next start.
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
	got, err := b.store.TriggerGet(t.Context(), tr.ID)
	require.NoError(t, err)
	require.True(t, got.DoneAt.IsZero(), "a cancelled run leaves its trigger queued")
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
	got, err := b.store.TriggerGet(t.Context(), tr.ID)
	require.NoError(t, err)
	require.False(t, got.DoneAt.IsZero())
}
