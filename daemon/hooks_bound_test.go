package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/state"
)

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestWebhookIntakeMemoryFlat: 10,000 deliveries of 20 new rows each (200k
// rows, ~90 MB of bodies) inside one debounce window keep at most
// daemon.webhook_buffer_rows rows: the heap after 10,000 deliveries is
// within a few MB of the heap after 1,000, the rows beyond the bound are
// counted as dropped, the one run they trigger still comes, and its
// success releases the rows. Not parallel: it measures the process heap.
func TestWebhookIntakeMemoryFlat(t *testing.T) {
	b := setup(t, setupOpts{daemon: config.Daemon{WebhookSecret: testSecret, Debounce: time.Second, WebhookBufferRows: 500}})
	h := b.d.Handler()
	pad := strings.Repeat("x", 400)
	deliver := func(i int) {
		var sb strings.Builder
		sb.WriteString("[")
		for k := range 20 {
			if k > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, `{"id": %d, "manualSort": %d, "description": "%s %d"}`, i*20+k+1, i*20+k+1, pad, i)
		}
		sb.WriteString("]")
		req := httptest.NewRequest(http.MethodPost, "/hooks/grist/p/HSCodes", strings.NewReader(sb.String()))
		req.Header.Set("Authorization", "Bearer "+testSecret)
		req.RemoteAddr = "127.0.0.1:5000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	}
	for i := range 1000 {
		deliver(i)
	}
	before := heapAlloc()
	for i := 1000; i < 10000; i++ {
		deliver(i)
	}
	after := heapAlloc()
	t.Logf("heap after 1,000 deliveries %.1f MB, after 10,000 %.1f MB", float64(before)/(1<<20), float64(after)/(1<<20))
	require.Less(t, int64(after)-int64(before), int64(4<<20), "the heap stays flat")

	b.clock.waitTimers(t, 2) // poller and the debounce window
	b.clock.Advance(time.Second)
	require.Equal(t, state.TriggerWebhook, b.nextCall(t).trigger)
	b.settled(t)
	require.Eventually(t, func() bool { return b.d.Rows().Len("p") == 0 }, waitFor, time.Millisecond, "released by the run's success")
	code, metrics := b.do(t, "GET", "/metrics", "", nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, metrics, `kgsync_webhook_rows_dropped_total{pipeline="p"} 199500`)
	require.Contains(t, metrics, `kgsync_webhook_rows_buffered{pipeline="p"} 0`)
}

// TestRowBufferBoundAndRelease: the buffer keeps at most its bound of
// rows, a repeated id replaces its row without counting twice, Release
// frees the rows of the generations a run consumed and keeps later ones.
func TestRowBufferBoundAndRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rb := NewBoundedRowBuffer(3)
	row := func(id int) map[string]any { return map[string]any{"id": jsonNumber(id)} }
	require.NoError(t, rb.ApplyRows(ctx, "p", "T", []map[string]any{row(1), row(2), row(1)}))
	gen := rb.Mark("p") // a run starts: rows 1, 2 are its
	require.NoError(t, rb.ApplyRows(ctx, "p", "T", []map[string]any{row(3), row(4), row(2)}))
	require.Equal(t, 3, rb.Len("p"))
	require.Equal(t, int64(1), rb.Dropped("p"), "row 4 did not fit")
	rb.Release("p", gen) // the run succeeded
	require.Equal(t, []int64{2, 3}, rb.IDs("p", "T"), "row 2 came again after the run started: kept; row 1 released")
	require.Equal(t, 0, rb.Len("q"))
}

// TestWebhookOnlyForSyncedTables: a delivery for a table the pipeline's
// Grist sources do not read, or for a pipeline without a Grist source, is
// refused with 404 and counted; nothing is kept or queued.
func TestWebhookOnlyForSyncedTables(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{
		pipelines: []config.Pipeline{
			{Name: "p", TimeZone: "UTC", Sources: gristSources("HSCodes", "Guides")},
			{Name: "docs", TimeZone: "UTC", Sources: []config.Source{{Name: "files", Files: &config.FilesSource{Root: t.TempDir()}}}},
		},
		daemon: config.Daemon{WebhookSecret: testSecret, Debounce: time.Second},
	})
	code, body := b.do(t, "POST", "/hooks/grist/p/FAQ", "Bearer "+testSecret, strings.NewReader(`[{"id": 1}]`))
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, `syncs no Grist table \"FAQ\"`)
	code, _ = b.do(t, "POST", "/hooks/grist/docs/FAQ", "Bearer "+testSecret, strings.NewReader(`[{"id": 1}]`))
	require.Equal(t, http.StatusNotFound, code)
	code, _ = b.do(t, "POST", "/hooks/grist/docs", "Bearer "+testSecret, strings.NewReader(`[{"id": 1}]`))
	require.Equal(t, http.StatusNotFound, code)
	require.Empty(t, b.d.workers["p"].hooks.take())
	code, _ = b.do(t, "POST", "/hooks/grist/p/Guides", "Bearer "+testSecret, strings.NewReader(`[{"id": 1}]`))
	require.Equal(t, http.StatusAccepted, code)
	_, metrics := b.do(t, "GET", "/metrics", "", nil)
	require.Contains(t, metrics, `kgsync_webhook_deliveries_total{outcome="unknown_table",pipeline="p"} 1`)
	require.Contains(t, metrics, `kgsync_webhook_deliveries_total{outcome="unknown_table",pipeline="docs"} 2`)
}

func jsonNumber(i int) json.Number { return json.Number(fmt.Sprint(i)) }

// TestWebhookBufferBoundedInBytes: 200 deliveries of one 64 KiB row each
// (12.5 MiB) within the row bound but past daemon.webhook_buffer_bytes
// (1 MiB) keep about 1 MiB: the rows bound alone let large rows take
// gigabytes. The dropped rows are counted and the run still comes. Not
// parallel: it measures the process heap.
func TestWebhookBufferBoundedInBytes(t *testing.T) {
	b := setup(t, setupOpts{daemon: config.Daemon{WebhookSecret: testSecret, Debounce: time.Second, WebhookBufferBytes: 1 << 20}})
	h := b.d.Handler()
	before := heapAlloc()
	for i := range 200 {
		body := fmt.Sprintf(`[{"id": %d, "description": "%s"}]`, i+1, strings.Repeat(string(rune('a'+i%26)), 64<<10))
		req := httptest.NewRequest(http.MethodPost, "/hooks/grist/p/HSCodes", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testSecret)
		req.RemoteAddr = "127.0.0.1:5000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	}
	after := heapAlloc()
	t.Logf("heap grew by %.1f MiB for 12.5 MiB of rows", float64(int64(after)-int64(before))/(1<<20))
	require.Less(t, int64(after)-int64(before), int64(4<<20), "the buffer is bounded in bytes")

	b.clock.waitTimers(t, 2)
	b.clock.Advance(time.Second)
	require.Equal(t, state.TriggerWebhook, b.nextCall(t).trigger)
	b.settled(t)
	code, metrics := b.do(t, "GET", "/metrics", "", nil)
	require.Equal(t, http.StatusOK, code)
	require.Regexp(t, `kgsync_webhook_rows_dropped_total\{pipeline="p"\} 1[89][0-9]`, metrics)
	require.Contains(t, metrics, `kgsync_webhook_buffered_bytes{pipeline="p"}`)
}
