package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkRead100k reads 100,000 tickets (1,000 cursor pages of 100) from a
// local server serving pre-encoded bodies, with explicit attributes and two
// link types, and reports records/s and the peak heap in use (sampled every
// 5ms).
func BenchmarkRead100k(b *testing.B) {
	const pages, perPage = 1000, 100
	bodies := make([][]byte, pages)
	for p := range pages {
		recs := make([]map[string]any, perPage)
		for i := range recs {
			id := p*perPage + i + 1
			recs[i] = ticket(id, time.Date(2024, 3, 1, 0, 0, id, 0, time.UTC).Format(time.RFC3339))
		}
		next := any(nil)
		if p+1 < pages {
			next = strconv.Itoa(p + 1)
		}
		var err error
		bodies[p], err = json.Marshal(map[string]any{"data": recs, "meta": map[string]any{"next_cursor": next}})
		require.NoError(b, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(bodies[p])
	}))
	defer srv.Close()
	src, err := New("tickets", Config{
		URL: srv.URL + "/api/v2/tickets", Records: ".data[]", Key: ".id | tostring", Anchor: "ticket",
		Pagination: Pagination{Style: StyleCursor, Param: "cursor", Next: ".meta.next_cursor"},
		Attributes: map[string]string{"subject": ".subject", "status": ".status", "priority": ".priority", "updated_at": ".updated_at"},
		Links: map[string]LinkConfig{
			"REQUESTED_BY": {Anchor: "user", Expr: ".requester_id"},
			"TAGGED":       {Anchor: "tag", Expr: ".tag_ids"},
		},
	}, nil)
	require.NoError(b, err)
	defer src.client.HTTPClient.CloseIdleConnections()

	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()

	b.ReportAllocs()
	b.ResetTimer()
	total := 0
	for b.Loop() {
		n := 0
		for p, err := range src.Read(b.Context(), "") {
			if err != nil {
				b.Fatal(err)
			}
			n += len(p.Records)
		}
		if n != pages*perPage {
			b.Fatal(fmt.Sprintf("read %d records, want %d", n, pages*perPage))
		}
		total += n
	}
	b.StopTimer()
	close(stop)
	<-sampled
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}
