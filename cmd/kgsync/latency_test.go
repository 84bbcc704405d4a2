package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/daemon"
	"github.com/kgsync/kgsync/internal/bolttest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
	"github.com/kgsync/kgsync/state"
)

const (
	latencySecret = "latency-hook-secret"
	latencyRows   = 20
)

// webhookHarness runs the real daemon with the real pipeline runner on a
// Grist pipeline (gristtest document, table Guides with latencyRows rows)
// writing to the Memgraph sink against a Bolt test server, state in
// SQLite, debounce 0.
type webhookHarness struct {
	grist *gristtest.Server
	bolt  *bolttest.Server
	store state.Store
	d     *daemon.Daemon
	hooks *httptest.Server
	seen  int // committed queries already looked at
}

func newWebhookHarness(tb testing.TB) *webhookHarness {
	tb.Helper()
	h := &webhookHarness{grist: gristtest.New(tb), bolt: bolttest.Start(tb)}
	h.bolt.EmulateSchema()
	h.grist.AddTable("Guides", gristtest.Column{ID: "guide_id", Type: "Int"}, gristtest.Column{ID: "title"})
	for i := 1; i <= latencyRows; i++ {
		h.grist.AddRows("Guides", map[string]any{"guide_id": 100 + i, "title": fmt.Sprintf("Guide %d", i)})
	}
	dir := tb.TempDir()
	yaml := `state:
  driver: sqlite
  path: state.db
daemon:
  webhook_secret: ` + latencySecret + `
sink:
  type: memgraph
  memgraph:
    uri: ` + h.bolt.URI() + `
embedder:
  provider: hashing
  dimensions: 16
pipelines:
  - name: tariff
    sources:
      - name: grist
        grist:
          server: ` + h.grist.URL + `
          doc_id: ` + gristtest.DocID + `
          api_key: ` + gristtest.APIKey + `
          tables: [Guides]
          key_columns: {Guides: guide_id}
    model:
      anchors:
        - name: guide
          table: Guides
          attributes:
            - {name: title, embeddable: true}
`
	path := filepath.Join(dir, "kgsync.yaml")
	require.NoError(tb, os.WriteFile(path, []byte(yaml), 0o600))
	cfg, err := config.Load(path)
	require.NoError(tb, err)
	cfg.Daemon.Debounce = 0
	cfg.Daemon.PollInterval = time.Hour
	ctx := context.Background()
	h.store, err = pipeline.OpenStore(ctx, cfg.State)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = h.store.Close() })
	log := slog.New(slog.DiscardHandler)
	d, err := daemon.New(daemon.Options{Config: cfg, Store: h.store, Runner: &pipelineRunner{cfg: cfg, store: h.store, log: log},
		Registerer: prometheus.NewRegistry(), Logger: log})
	require.NoError(tb, err)
	h.d = d
	h.hooks = httptest.NewServer(d.Handler())
	tb.Cleanup(h.hooks.Close)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx, nil) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(tb, err)
		case <-time.After(30 * time.Second):
			tb.Error("daemon did not stop")
		}
	})

	// The first, full sync.
	_, err = d.Trigger(ctx, "tariff", daemon.ModeIncremental, state.TriggerManual)
	require.NoError(tb, err)
	h.waitIdle(tb)
	runs, err := h.store.RunList(ctx, "tariff", 1)
	require.NoError(tb, err)
	require.Len(tb, runs, 1)
	require.Equal(tb, state.StatusSucceeded, runs[0].Status, runs[0].Error)
	require.Equal(tb, latencyRows, runs[0].Counts.RecordsNew)
	h.seen = len(h.bolt.Committed())
	return h
}

// waitIdle waits until no run job is queued or running and the newest run
// is closed.
func (h *webhookHarness) waitIdle(tb testing.TB) {
	tb.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		pending, err := h.d.ActiveJobs(context.Background(), "")
		require.NoError(tb, err)
		runs, err := h.store.RunList(context.Background(), "tariff", 1)
		require.NoError(tb, err)
		if len(pending) == 0 && len(runs) > 0 && runs[0].Status != state.StatusRunning {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			tb.Fatalf("pipeline not idle after 30s (pending %v)", pending)
		}
	}
}

// holds reports whether v, a decoded Bolt parameter, contains the string s.
func holds(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return x == s
	case []any:
		return slices.ContainsFunc(x, func(e any) bool { return holds(e, s) })
	case map[string]any:
		for _, e := range x {
			if holds(e, s) {
				return true
			}
		}
	}
	return false
}

// deliver changes the title of one row in Grist, posts the row as Grist
// would (a one-row delivery), and returns the time from the POST until the
// Bolt server holds a committed MERGE carrying the new title.
func (h *webhookHarness) deliver(tb testing.TB, i int) time.Duration {
	tb.Helper()
	row := int64(1 + i%latencyRows)
	title := fmt.Sprintf("Guide %d, revision %d", row, i)
	h.grist.UpdateRows("Guides", map[int64]map[string]any{row: {"title": title}})
	body := fmt.Sprintf(`[{"id": %d, "manualSort": %d, "guide_id": %d, "title": %q}]`, row, row, 100+row, title)
	req, err := http.NewRequest("POST", h.hooks.URL+"/hooks/grist/tariff/Guides", strings.NewReader(body))
	require.NoError(tb, err)
	req.Header.Set("Authorization", "Bearer "+latencySecret)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	resp.Body.Close()
	require.Equal(tb, http.StatusAccepted, resp.StatusCode)

	tick := time.NewTicker(200 * time.Microsecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		qs := h.bolt.Committed()
		for _, q := range qs[min(h.seen, len(qs)):] {
			if strings.Contains(q.Text, "MERGE") && holds(any(q.Params), title) {
				elapsed := time.Since(start)
				h.seen = len(qs)
				return elapsed
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			tb.Fatalf("delivery %d: no committed MERGE with %q after 30s", i, title)
		}
	}
}

// TestWebhookReachesGraph posts three one-row deliveries through the real
// daemon, runner, Grist source and Memgraph sink; each must reach the graph
// as a committed MERGE of the row's new value, and each run must read only
// that row.
func TestWebhookReachesGraph(t *testing.T) {
	t.Parallel()
	h := newWebhookHarness(t)
	for i := range 3 {
		require.Positive(t, h.deliver(t, i))
		h.waitIdle(t)
		runs, err := h.store.RunList(context.Background(), "tariff", 1)
		require.NoError(t, err)
		c := runs[0].Counts
		require.Equal(t, state.TriggerWebhook, runs[0].Trigger)
		require.Equal(t, 1, c.RecordsRead, "delivery %d: /compare names the one row: %+v", i, c)
		require.Equal(t, 1, c.RecordsChanged, "delivery %d: %+v", i, c)
		require.Equal(t, 1, c.ChunksEmbedded, "the new title only")
	}
}

// BenchmarkWebhookToGraph measures webhook-to-graph latency for one-row
// changes: each iteration is one delivery (run with -benchtime=100x for
// the 100 deliveries of docs/performance.md). It reports the median and
// p99 in milliseconds.
func BenchmarkWebhookToGraph(b *testing.B) {
	h := newWebhookHarness(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lat = append(lat, h.deliver(b, i))
		b.StopTimer()
		h.waitIdle(b)
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "ms-median")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "ms-p99")
	b.ReportMetric(ms(lat[len(lat)-1]), "ms-max")
}
