package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kgsync/kgsync/sources"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testBundle is one source under test with what it asked to wait.
type testBundle struct {
	src   *Source
	mu    sync.Mutex
	waits []time.Duration // back-offs the retry policy asked for
}

func (b *testBundle) askedWaits() []time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]time.Duration(nil), b.waits...)
}

// setup builds a source whose retry waits are recorded and not slept.
func setup(t *testing.T, cfg Config) *testBundle {
	t.Helper()
	src, err := New("tickets", cfg, nil)
	require.NoError(t, err)
	b := &testBundle{src: src}
	src.wait = func(d time.Duration) time.Duration {
		b.mu.Lock()
		b.waits = append(b.waits, d)
		b.mu.Unlock()
		return 0
	}
	t.Cleanup(src.client.HTTPClient.CloseIdleConnections)
	return b
}

// newServer starts an httptest server closed at cleanup.
func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// readAll ranges over a Read and returns the pages and the error that ended it.
func readAll(t *testing.T, src *Source, cursor string) ([]*sources.Page, error) {
	t.Helper()
	var pages []*sources.Page
	for p, err := range src.Read(t.Context(), cursor) {
		if err != nil {
			return pages, err
		}
		pages = append(pages, p)
	}
	return pages, nil
}

// keys lists the record keys of pages in order.
// keys are the API keys of the pages' records: their record keys
// without the "<anchor>:" every record key starts with (a key without it is
// returned whole, failing the comparison).
func keys(pages []*sources.Page) []string {
	var out []string
	for _, p := range pages {
		for _, r := range p.Records {
			k, ok := strings.CutPrefix(r.Key, r.Anchor+":")
			if !ok {
				k = r.Key
			}
			out = append(out, k)
		}
	}
	return out
}

// ticket is a help-desk ticket as such APIs return it.
func ticket(id int, updated string) map[string]any {
	return map[string]any{
		"id":           id,
		"subject":      fmt.Sprintf("Printer on floor %d jams", id),
		"status":       []string{"open", "pending", "solved"}[id%3],
		"priority":     id%4 + 1,
		"requester_id": 9000 + id%5,
		"tag_ids":      []int{id % 2, 10 + id%3},
		"updated_at":   updated,
		"via":          map[string]any{"channel": "email"},
	}
}

// tickets returns tickets 1..n updated one minute apart from 2024-03-01T09:00:00Z.
func tickets(n int) []map[string]any {
	t0 := time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = ticket(i+1, t0.Add(time.Duration(i)*time.Minute).Format(time.RFC3339))
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

// window returns all[from:from+n] clipped.
func window(all []map[string]any, from, n int) []map[string]any {
	if from >= len(all) {
		return []map[string]any{}
	}
	return all[from:min(from+n, len(all))]
}

func atoi(s string, def int) int {
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// TestPaginationStyles reads 25 tickets, 10 per page, through every style;
// every style must yield the 25 keys in order, each exactly once.
func TestPaginationStyles(t *testing.T) {
	t.Parallel()
	all := tickets(25)
	want := make([]string, 25)
	for i := range want {
		want[i] = strconv.Itoa(i + 1)
	}
	tests := []struct {
		name    string
		handler func(srvURL *string) http.HandlerFunc
		cfg     Config
		// pages is the number of pages yielded: page and offset styles stop
		// at the first empty page, so 3 full pages + 1 empty.
		pages int
	}{
		{
			name: "page",
			handler: func(*string) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					page, size := atoi(r.URL.Query().Get("page"), 1), atoi(r.URL.Query().Get("per_page"), 0)
					writeJSON(w, map[string]any{"tickets": window(all, (page-1)*size, size), "page": page})
				}
			},
			cfg:   Config{Records: ".tickets[]", Pagination: Pagination{Style: StylePage, Param: "page", SizeParam: "per_page", Size: 10}},
			pages: 4,
		},
		{
			name: "offset",
			handler: func(*string) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					off, lim := atoi(r.URL.Query().Get("offset"), 0), atoi(r.URL.Query().Get("limit"), 0)
					writeJSON(w, map[string]any{"data": window(all, off, lim), "total": len(all)})
				}
			},
			cfg:   Config{Records: ".data[]", Pagination: Pagination{Style: StyleOffset, Param: "offset", SizeParam: "limit", Size: 10}},
			pages: 4,
		},
		{
			name: "cursor in body",
			handler: func(*string) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					from := 0
					if c := r.URL.Query().Get("cursor"); c != "" {
						from = atoi(c[len("tkt_"):], 0)
					}
					next := any(nil)
					if from+10 < len(all) {
						next = fmt.Sprintf("tkt_%d", from+10)
					}
					writeJSON(w, map[string]any{"data": window(all, from, 10), "meta": map[string]any{"next_cursor": next, "has_more": next != nil}})
				}
			},
			cfg:   Config{Records: ".data[]", Pagination: Pagination{Style: StyleCursor, Param: "cursor", Next: ".meta.next_cursor"}},
			pages: 3,
		},
		{
			name: "next url in body, relative",
			handler: func(*string) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					from := atoi(r.URL.Query().Get("after"), 0)
					next := any(nil)
					if from+10 < len(all) {
						next = fmt.Sprintf("/api/v2/tickets?after=%d", from+10)
					}
					writeJSON(w, map[string]any{"results": window(all, from, 10), "links": map[string]any{"next": next}})
				}
			},
			cfg:   Config{Records: ".results[]", Pagination: Pagination{Style: StyleNextURL, Next: ".links.next"}},
			pages: 3,
		},
		{
			name: "link header",
			handler: func(srvURL *string) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					page := atoi(r.URL.Query().Get("page"), 1)
					links := fmt.Sprintf(`<%s/api/v2/tickets?page=3>; rel="last", <%s/api/v2/tickets?page=1>; rel="first"`, *srvURL, *srvURL)
					if page < 3 {
						links += fmt.Sprintf(`, <%s/api/v2/tickets?page=%d>; rel="next"`, *srvURL, page+1)
					}
					w.Header().Set("Link", links)
					writeJSON(w, window(all, (page-1)*10, 10))
				}
			},
			cfg:   Config{Records: ".[]", Pagination: Pagination{Style: StyleLink}},
			pages: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var srvURL string
			var authSeen sync.Map
			h := tt.handler(&srvURL)
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				authSeen.Store(r.Header.Get("Authorization"), true)
				h(w, r)
			})
			srvURL = srv.URL
			cfg := tt.cfg
			cfg.URL = srv.URL + "/api/v2/tickets"
			cfg.Key = ".id | tostring"
			cfg.Anchor = "ticket"
			cfg.Auth = Auth{Bearer: "tok-123"}
			cfg.Links = map[string]LinkConfig{
				"REQUESTED_BY": {Anchor: "user", Expr: ".requester_id"},
				"TAGGED":       {Anchor: "tag", Expr: ".tag_ids"},
			}
			b := setup(t, cfg)
			pages, err := readAll(t, b.src, "")
			require.NoError(t, err)
			require.Len(t, pages, tt.pages)
			require.Equal(t, want, keys(pages))
			for _, p := range pages {
				require.Empty(t, p.Skipped)
				require.False(t, p.Partial)
				require.Empty(t, p.Cursor, "no incremental config: no cursor")
			}
			// Ticket 7 (see ticket()): status "open" (7%3=1 → "pending"), priority 7%4+1=4,
			// requester 9000+7%5=9002, tags [1, 11]; arrays and objects are not default attributes.
			r := pages[0].Records[6]
			require.Equal(t, "ticket", r.Anchor)
			require.Equal(t, map[string]any{
				"id": int64(7), "subject": "Printer on floor 7 jams", "status": "pending",
				"priority": int64(4), "requester_id": int64(9002), "updated_at": "2024-03-01T09:06:00Z",
			}, r.Attributes)
			require.Equal(t, []sources.Link{
				{Type: "REQUESTED_BY", ToAnchor: "user", ToKey: "user:9002"},
				{Type: "TAGGED", ToAnchor: "tag", ToKey: "tag:1"},
				{Type: "TAGGED", ToAnchor: "tag", ToKey: "tag:11"},
			}, r.Links)
			_, onlyBearer := authSeen.Load("Bearer tok-123")
			require.True(t, onlyBearer)
			n := 0
			authSeen.Range(func(any, any) bool { n++; return true })
			require.Equal(t, 1, n, "every request carries the bearer token")
		})
	}
}

// TestPricesMapping maps a price list with explicit attributes, a document
// and a string key.
func TestPricesMapping(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "k-42", r.Header.Get("X-API-Key"))
		require.Equal(t, "EUR", r.URL.Query().Get("currency"))
		_, _ = w.Write([]byte(`{"prices":[
			{"sku":"CN-8471-30","price":{"amount":1249.90,"currency":"EUR"},"valid_from":"2024-01-01","stock":12,"notes":"Portable **ADP** machines"},
			{"sku":"CN-0901-21","price":{"amount":18,"currency":"EUR"},"valid_from":"2024-02-15","stock":0,"notes":null}
		]}`))
	})
	b := setup(t, Config{
		URL:     srv.URL + "/v1/prices",
		Query:   map[string]string{"currency": "EUR", "since": "{{.since}}"},
		Auth:    Auth{APIKeyHeader: "X-API-Key", APIKey: "k-42"},
		Records: ".prices[]", Key: ".sku", Anchor: "price",
		Attributes: map[string]string{"amount": ".price.amount", "currency": ".price.currency", "in_stock": ".stock > 0"},
		Document:   &DocumentConfig{Format: "md", Content: ".notes"},
	})
	pages, err := readAll(t, b.src, "")
	require.NoError(t, err)
	require.Len(t, pages, 1)
	recs := pages[0].Records
	require.Len(t, recs, 2)
	// 1249.90 has a fraction → float64; 18 has none → int64 (canonical numbers).
	require.Equal(t, map[string]any{"amount": 1249.90, "currency": "EUR", "in_stock": true}, recs[0].Attributes)
	require.Equal(t, map[string]any{"amount": int64(18), "currency": "EUR", "in_stock": false}, recs[1].Attributes)
	require.Equal(t, &sources.Document{Format: "md", Content: []byte("Portable **ADP** machines")}, recs[0].Document)
	require.Nil(t, recs[1].Document, "null notes: no document")
}

// incServer is a ticket API with updated_since, ordered by updated_at, two
// per page, whose page 3 can be made to fail.
type incServer struct {
	mu        sync.Mutex
	all       []map[string]any
	failPage3 bool
	sinces    []string // updated_since of each page-1 request ("" = none)
}

func (s *incServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	page := atoi(q.Get("page"), 1)
	since := q.Get("updated_since")
	if page == 1 {
		s.sinces = append(s.sinces, since)
	}
	if page == 3 && s.failPage3 {
		http.Error(w, `{"error":"upstream timeout"}`, http.StatusInternalServerError)
		return
	}
	var sel []map[string]any
	for _, tk := range s.all { // s.all is kept sorted by updated_at
		if tk["updated_at"].(string) >= since {
			sel = append(sel, tk)
		}
	}
	writeJSON(w, map[string]any{"tickets": window(sel, (page-1)*2, 2)})
}

// touch sets ticket id's updated_at and keeps all sorted by it.
func (s *incServer) touch(id int, at string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, tk := range s.all {
		if tk["id"] == id {
			s.all = append(s.all[:i:i], s.all[i+1:]...)
			s.all = append(s.all, ticket(id, at))
			return
		}
	}
}

func decodeTestCursor(t *testing.T, c string) cursorState {
	t.Helper()
	var cs cursorState
	require.NoError(t, json.Unmarshal([]byte(c), &cs))
	return cs
}

// TestIncrementalResumeAndFullEvery: a full first listing, an incremental
// run whose page 3 fails after retries (error yielded, pages 1–2 carry a
// resumable cursor), a rerun from that cursor, then a full listing once
// FullEvery has passed.
func TestIncrementalResumeAndFullEvery(t *testing.T) {
	t.Parallel()
	api := &incServer{all: tickets(5)} // updated 09:00 … 09:04
	srv := newServer(t, api.ServeHTTP)
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	var clockMu sync.Mutex
	b := setup(t, Config{
		URL: srv.URL + "/api/v2/tickets", Records: ".tickets[]", Key: ".id", Anchor: "ticket",
		Pagination:  Pagination{Style: StylePage, Param: "page"},
		Incremental: &Incremental{Param: "updated_since", Cursor: ".updated_at", Ordered: true, FullEvery: 24 * time.Hour},
		Retry:       Retry{Max: 2},
		Now:         func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now },
	})
	advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }

	// Run 1: no cursor → full listing of 5 tickets: pages [1,2] [3,4] [5] [].
	pages, err := readAll(t, b.src, "")
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2", "3", "4", "5"}, keys(pages))
	for _, p := range pages {
		require.False(t, p.Partial, "a full listing is complete")
	}
	c1 := pages[len(pages)-1].Cursor
	require.Equal(t, cursorState{Since: "2024-03-01T09:04:00Z", LastFull: "2024-03-01T12:00:00Z"}, decodeTestCursor(t, c1))
	// A page before the last must not claim a full listing happened.
	require.Empty(t, decodeTestCursor(t, pages[0].Cursor).LastFull)

	// Tickets 1..5 touched at 10:01..10:05 (1 first); page 3 fails with 500s.
	for id := 1; id <= 5; id++ {
		api.touch(id, fmt.Sprintf("2024-03-01T10:%02d:00Z", id))
	}
	api.mu.Lock()
	api.failPage3 = true
	api.mu.Unlock()
	advance(time.Hour)
	pages, err = readAll(t, b.src, c1)
	require.Error(t, err)
	require.ErrorContains(t, err, "page 3 (GET "+srv.URL+"/api/v2/tickets?page=3&updated_since=2024-03-01T09%3A04%3A00Z)")
	require.ErrorContains(t, err, "status 500 Internal Server Error after 3 attempts")
	require.Equal(t, []string{"1", "2", "3", "4"}, keys(pages), "pages 1 and 2 were yielded before the failure")
	for _, p := range pages {
		require.True(t, p.Partial, "an incremental listing is partial")
	}
	require.Len(t, b.askedWaits(), 2, "two retries of page 3")
	stored := pages[len(pages)-1].Cursor // what the pipeline committed last
	require.Equal(t, cursorState{Since: "2024-03-01T10:04:00Z", LastFull: "2024-03-01T12:00:00Z"}, decodeTestCursor(t, stored))

	// Rerun from the stored cursor: resumes at 10:04 (ticket 4 again, >=), then 5.
	api.mu.Lock()
	api.failPage3 = false
	api.mu.Unlock()
	pages, err = readAll(t, b.src, stored)
	require.NoError(t, err)
	require.Equal(t, []string{"4", "5"}, keys(pages))
	c3 := pages[len(pages)-1].Cursor
	require.Equal(t, cursorState{Since: "2024-03-01T10:05:00Z", LastFull: "2024-03-01T12:00:00Z"}, decodeTestCursor(t, c3))

	// 25h after the full listing: a full listing again, without updated_since.
	advance(24 * time.Hour)
	pages, err = readAll(t, b.src, c3)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"1", "2", "3", "4", "5"}, keys(pages))
	require.False(t, pages[0].Partial)
	require.Equal(t, "2024-03-02T13:00:00Z", decodeTestCursor(t, pages[len(pages)-1].Cursor).LastFull)

	api.mu.Lock()
	defer api.mu.Unlock()
	// page-1 requests: run 1 full, run 2 from 09:04, run 3 from 10:04, run 4 full.
	require.Equal(t, []string{"", "2024-03-01T09:04:00Z", "2024-03-01T10:04:00Z", ""}, api.sinces)
}

// TestFullListingFailsMidway: a non-incremental listing whose page 2 answers
// 503 beyond retries ends with an error, so the pipeline deletes nothing.
func TestFullListingFailsMidway(t *testing.T) {
	t.Parallel()
	all := tickets(6)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		page := atoi(r.URL.Query().Get("page"), 1)
		if page == 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, map[string]any{"data": window(all, (page-1)*3, 3)})
	})
	b := setup(t, Config{
		URL: srv.URL + "/tickets", Records: ".data[]", Key: ".id", Anchor: "ticket",
		Pagination: Pagination{Style: StylePage, Param: "page"}, Retry: Retry{Max: 1},
	})
	pages, err := readAll(t, b.src, "")
	require.ErrorContains(t, err, "page 2 (GET "+srv.URL+"/tickets?page=2): status 503 Service Unavailable after 2 attempts")
	require.Equal(t, []string{"1", "2", "3"}, keys(pages))
}

// TestDuplicateKeyAcrossPages: ticket 2 appears on pages 1 and 2 (it moved
// while paging); the first copy is kept and the second reported.
func TestDuplicateKeyAcrossPages(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("cursor") {
		case "":
			writeJSON(w, map[string]any{"data": []any{ticket(1, "a"), ticket(2, "first copy")}, "next": "p2"})
		case "p2":
			writeJSON(w, map[string]any{"data": []any{ticket(2, "second copy"), ticket(3, "c")}, "next": nil})
		}
	})
	b := setup(t, Config{
		URL: srv.URL + "/tickets", Records: ".data[]", Key: ".id | tostring", Anchor: "ticket",
		Pagination: Pagination{Style: StyleCursor, Param: "cursor", Next: ".next"},
	})
	pages, err := readAll(t, b.src, "")
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2", "3"}, keys(pages))
	require.Equal(t, "first copy", pages[0].Records[1].Attributes["updated_at"])
	require.Empty(t, pages[0].Skipped)
	require.Len(t, pages[1].Skipped, 1)
	require.Equal(t, "ticket:2", pages[1].Skipped[0].Key)
	require.EqualError(t, pages[1].Skipped[0].Err, `duplicate key "2" on page 2, first seen on page 1; the first is kept`)
}

// TestRetryAfterHonoured: a 429 with Retry-After: 1 makes the client ask for
// exactly one second before retrying (recorded, not slept).
func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		writeJSON(w, []any{ticket(1, "x")})
	})
	b := setup(t, Config{URL: srv.URL + "/tickets", Records: ".[]", Key: ".id", Anchor: "ticket",
		Retry: Retry{WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond}})
	pages, err := readAll(t, b.src, "")
	require.NoError(t, err)
	require.Equal(t, []string{"1"}, keys(pages))
	// Without Retry-After the first back-off would be WaitMin (1ms); the header says 1s.
	require.Equal(t, []time.Duration{time.Second}, b.askedWaits())
}

// TestRateLimit: at 50 requests/s with burst 1, 6 requests need at least 5
// intervals of 20ms.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	all := tickets(5)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		page := atoi(r.URL.Query().Get("page"), 1)
		writeJSON(w, window(all, page-1, 1))
	})
	b := setup(t, Config{URL: srv.URL + "/tickets", Records: ".[]", Key: ".id", Anchor: "ticket",
		Pagination: Pagination{Style: StylePage, Param: "page"}, RateLimit: 50})
	start := time.Now()
	pages, err := readAll(t, b.src, "")
	require.NoError(t, err)
	require.Len(t, pages, 6)
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
}

// TestJQErrors: compile errors name the field and expression; a record
// without a key is unlisted under the anchor's prefix, naming the page and
// record index, and the other records are read; an attribute that fails at
// run time skips only that record.
func TestJQErrors(t *testing.T) {
	t.Parallel()
	_, err := New("tickets", Config{
		URL: "https://api.example.com/tickets", Records: ".data[", Key: ".id", Anchor: "ticket",
		Attributes: map[string]string{"title": ".subject |", "ok": ".status"},
		Links:      map[string]LinkConfig{"REQUESTED_BY": {Anchor: "user", Expr: ".requester_id | nosuchfn"}},
	}, nil)
	require.ErrorContains(t, err, `records: jq ".data["`)
	require.ErrorContains(t, err, `attributes["title"]: jq ".subject |"`)
	require.ErrorContains(t, err, `links["REQUESTED_BY"].expr: jq ".requester_id | nosuchfn"`)
	require.NotContains(t, err.Error(), `attributes["ok"]`)

	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("page") {
		case "", "1":
			_, _ = w.Write([]byte(`{"data":[{"id":1,"subject":"Paper jam"},{"id":2,"subject":17}]}`))
		case "2":
			_, _ = w.Write([]byte(`{"data":[{"ticket_id":4,"subject":"no id"},7,{"id":3,"subject":"ok"}],"total":5}`))
		default:
			_, _ = w.Write([]byte(`{"data":[],"total":5}`))
		}
	})
	b := setup(t, Config{
		URL: srv.URL + "/tickets", Records: ".data[]", Key: ".id", Anchor: "ticket",
		Pagination: Pagination{Style: StylePage, Param: "page"},
		Attributes: map[string]string{"title": ".subject | ascii_downcase"},
	})
	pages, err := readAll(t, b.src, "")
	require.NoError(t, err)
	require.Len(t, pages, 3)
	require.Equal(t, []string{"1", "3"}, keys(pages))
	require.Equal(t, "paper jam", pages[0].Records[0].Attributes["title"])
	require.Len(t, pages[0].Skipped, 1)
	require.Equal(t, "ticket:2", pages[0].Skipped[0].Key)
	require.ErrorContains(t, pages[0].Skipped[0].Err, `record "2" (index 1): attributes["title"]: jq ".subject | ascii_downcase": ascii_downcase cannot be applied to: number (17)`)
	require.Empty(t, pages[1].Skipped)
	require.Len(t, pages[1].Unlisted, 2)
	for _, u := range pages[1].Unlisted {
		require.Equal(t, "ticket:", u.Prefix)
	}
	require.EqualError(t, pages[1].Unlisted[0].Err, `page 2 (GET `+srv.URL+`/tickets?page=2): record index 0: key ".id" yielded no key (got null null), want a non-empty string or number`)
	require.EqualError(t, pages[1].Unlisted[1].Err, `page 2 (GET `+srv.URL+`/tickets?page=2): record index 1: records ".data[]" yielded number, want object`)
}

// TestHTMLErrorPage200: a maintenance page served with status 200 is an
// invalid JSON error naming the page and URL, not an empty listing.
func TestHTMLErrorPage200(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("page") == "2" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte("<!DOCTYPE html>\n<html><head><title>Down for maintenance</title></head></html>"))
			return
		}
		writeJSON(w, map[string]any{"data": []any{ticket(1, "x")}})
	})
	b := setup(t, Config{URL: srv.URL + "/tickets", Records: ".data[]", Key: ".id", Anchor: "ticket",
		Pagination: Pagination{Style: StylePage, Param: "page"}})
	_, err := readAll(t, b.src, "")
	require.ErrorContains(t, err, "page 2 (GET "+srv.URL+"/tickets?page=2): invalid JSON (status 200, content-type \"text/html\"): invalid character '<' looking for beginning of value; body \"<!DOCTYPE html>")
}

// TestMaxPages: an API that always returns a new cursor stops at MaxPages
// with an error naming the endpoint.
func TestMaxPages(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := int(requests.Add(1))
		writeJSON(w, map[string]any{"data": []any{ticket(n, "x")}, "next": fmt.Sprintf("c%d", n)})
	})
	b := setup(t, Config{URL: srv.URL + "/tickets", Records: ".data[]", Key: ".id", Anchor: "ticket",
		Pagination: Pagination{Style: StyleCursor, Param: "cursor", Next: ".next"}, MaxPages: 5})
	pages, err := readAll(t, b.src, "")
	require.EqualError(t, err, "endpoint GET "+srv.URL+"/tickets: more than 5 pages (max_pages); raise max_pages or check the pagination settings")
	require.Len(t, pages, 5)
	require.EqualValues(t, 5, requests.Load())
}

// TestNextURLOtherHostRefused: credentials are not sent to another origin.
func TestNextURLOtherHostRefused(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"results": []any{ticket(1, "x")}, "next": "https://evil.example/steal"})
	})
	b := setup(t, Config{URL: srv.URL + "/tickets", Records: ".results[]", Key: ".id", Anchor: "ticket",
		Auth: Auth{Bearer: "tok"}, Pagination: Pagination{Style: StyleNextURL, Next: ".next"}})
	_, err := readAll(t, b.src, "")
	require.ErrorContains(t, err, "next URL points to https://evil.example, not "+srv.URL+"; refusing to send credentials elsewhere")
}

// TestDetailFetchConcurrency: 12 details fetched at most 3 at a time, merged
// in list order; a 404 detail skips its record only.
func TestDetailFetchConcurrency(t *testing.T) {
	t.Parallel()
	const bound = 3
	var mu sync.Mutex
	inFlight, maxInFlight, gateTimed := 0, 0, false
	gate := make(chan struct{}) // closed 50ms after `bound` details are first in flight together
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/tickets" {
			writeJSON(w, map[string]any{"tickets": tickets(12)})
			return
		}
		mu.Lock()
		inFlight++
		maxInFlight = max(maxInFlight, inFlight)
		if inFlight == bound && !gateTimed {
			// Hold the first batch 50ms longer: a client without the bound
			// would have all 12 detail requests in flight by then.
			gateTimed = true
			time.AfterFunc(50*time.Millisecond, func() { close(gate) })
		}
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		select {
		case <-gate:
		case <-time.After(5 * time.Second):
			http.Error(w, "gate never opened", http.StatusGatewayTimeout)
			return
		}
		id := r.URL.Path[len("/tickets/"):]
		if id == "5" {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		_, _ = fmt.Fprintf(w, `{"ticket":{"body":"Body of ticket %s","status":"closed"}}`, id)
	})
	b := setup(t, Config{
		URL: srv.URL + "/tickets", Records: ".tickets[]", Key: ".id", Anchor: "ticket",
		Detail:      &Detail{URL: srv.URL + "/tickets/{{.key}}", Path: ".ticket"},
		Concurrency: bound,
		Retry:       Retry{Max: -1},
	})
	pages, err := readAll(t, b.src, "")
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2", "3", "4", "6", "7", "8", "9", "10", "11", "12"}, keys(pages))
	for _, r := range pages[0].Records {
		require.Equal(t, "Body of ticket "+strings.TrimPrefix(r.Key, "ticket:"), r.Attributes["body"], "detail merged into its own record")
		require.Equal(t, "closed", r.Attributes["status"], "detail fields override list fields")
	}
	require.Len(t, pages[0].Skipped, 1)
	require.Equal(t, "ticket:5", pages[0].Skipped[0].Key)
	require.ErrorContains(t, pages[0].Skipped[0].Err, `record "5": detail GET `+srv.URL+`/tickets/5: client error: status 404 Not Found`)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, bound, maxInFlight)
}

// TestSecretsNeverInErrors: a server that echoes the credentials it got in
// its error body (some do) must not leak them into error strings.
func TestSecretsNeverInErrors(t *testing.T) {
	t.Parallel()
	const secret = "sk_live_9fQ2xT7Lw0"
	tests := []struct {
		name   string
		auth   Auth
		status int
	}{
		{"bearer 401", Auth{Bearer: secret}, http.StatusUnauthorized},
		{"api key 403", Auth{APIKeyHeader: "X-API-Key", APIKey: secret}, http.StatusForbidden},
		{"basic 401", Auth{Username: "svc-sync", Password: secret}, http.StatusUnauthorized},
		{"bearer html 200", Auth{Bearer: secret}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = fmt.Fprintf(w, "<html>denied: Authorization=%q X-API-Key=%q</html>", r.Header.Get("Authorization"), r.Header.Get("X-API-Key"))
			})
			b := setup(t, Config{URL: srv.URL + "/tickets", Records: ".[]", Key: ".id", Anchor: "ticket", Auth: tt.auth})
			_, err := readAll(t, b.src, "")
			require.Error(t, err)
			require.Contains(t, err.Error(), "[redacted]", "the echo is there, redacted")
			require.NotContains(t, err.Error(), secret)
			require.NotContains(t, err.Error(), basicToken("svc-sync", secret))
		})
	}
	// Construction errors do not echo secrets either.
	_, err := New("tickets", Config{URL: "https://api.example.com", Auth: Auth{Bearer: secret, APIKey: secret}}, nil)
	require.Error(t, err)
	require.NotContains(t, err.Error(), secret)
}

// TestNotModified: a 304 on the first page ends the listing with
// sources.ErrNotModified.
func TestNotModified(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) })
	b := setup(t, Config{URL: srv.URL + "/tickets", Records: ".[]", Key: ".id", Anchor: "ticket"})
	_, err := readAll(t, b.src, "")
	require.ErrorIs(t, err, sources.ErrNotModified)
}

// TestNewValidation: every configuration problem is reported at once, each
// naming its field.
func TestNewValidation(t *testing.T) {
	t.Parallel()
	_, err := New("tickets", Config{
		URL:         "https://api.example.com/tickets?page={{.pgae}}",
		Method:      "DELETE",
		Pagination:  Pagination{Style: "scroll"},
		Incremental: &Incremental{},
		Detail:      &Detail{URL: "https://api.example.com/tickets/{{.id}}"},
		Links:       map[string]LinkConfig{"OWNER": {Expr: ".owner"}},
	}, nil)
	for _, want := range []string{
		`http source "tickets"`,
		`url: template "https://api.example.com/tickets?page={{.pgae}}"`, `map has no entry for key "pgae"`,
		`method: "DELETE", want GET or POST`,
		"records: required", "key: required", "anchor: required",
		`pagination.style: "scroll"`,
		"incremental.cursor: required",
		`detail.url: template "https://api.example.com/tickets/{{.id}}"`,
		`links["OWNER"].anchor: required`,
	} {
		require.ErrorContains(t, err, want)
	}
}

func TestNextLink(t *testing.T) {
	t.Parallel()
	base, err := url.Parse("https://api.example.com/v1/items?page=1")
	require.NoError(t, err)
	tests := []struct {
		name   string
		values []string
		want   string
	}{
		{"github style", []string{`<https://api.example.com/v1/items?page=2>; rel="next", <https://api.example.com/v1/items?page=9>; rel="last"`}, "https://api.example.com/v1/items?page=2"},
		{"next not first, relative", []string{`</v1/items?page=1>; rel="prev"`, `</v1/items?page=3>; rel=next`}, "https://api.example.com/v1/items?page=3"},
		{"several rels, comma in URI", []string{`<https://api.example.com/v1/items?ids=1,2>; title="a, b"; rel="last next"`}, "https://api.example.com/v1/items?ids=1,2"},
		{"no next", []string{`<https://api.example.com/v1/items?page=1>; rel="first"`}, ""},
		{"no header", nil, ""},
	}
	for _, tt := range tests {
		got, err := nextLink(base, tt.values)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, got, tt.name)
	}
}

func TestMaxMark(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mark string
		v    any
		want string
	}{
		{"", "2024-03-01T09:00:00Z", "2024-03-01T09:00:00Z"},
		{"2024-03-01T09:00:00Z", "2024-02-28T23:00:00Z", "2024-03-01T09:00:00Z"},
		{"9", json.Number("10"), "10"}, // numeric, not lexical ("9" > "10" as strings)
		{"1700000000", nil, "1700000000"},
		{"5", map[string]any{}, "5"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, maxMark(tt.mark, tt.v), "%q vs %v", tt.mark, tt.v)
	}
}

// TestStopRangingEarly: a consumer that stops after the first page ends the
// listing without further requests.
func TestStopRangingEarly(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		writeJSON(w, map[string]any{"data": []any{ticket(atoi(r.URL.Query().Get("page"), 1), "x")}})
	})
	b := setup(t, Config{URL: srv.URL + "/t", Records: ".data[]", Key: ".id", Anchor: "ticket",
		Pagination: Pagination{Style: StylePage, Param: "page"}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for p, err := range b.src.Read(ctx, "") {
		require.NoError(t, err)
		require.Len(t, p.Records, 1)
		break
	}
	require.EqualValues(t, 1, requests.Load())
}

// TestFastPathMatchesGojq: the direct evaluation of simple paths gives the
// same outputs and errors as gojq itself on every input shape.
func TestFastPathMatchesGojq(t *testing.T) {
	t.Parallel()
	v, err := decodeJSON([]byte(`{"id":12345678901234567890,"f":1.50,"s":"x","n":null,"b":false,
		"o":{"a":{"b":"deep"},"arr":[1,"two",{"k":3}]},"arr":[{"id":1},{"id":"2"}],"e":[]}`))
	require.NoError(t, err)
	inputs := []any{v, nil, "str", []any{json.Number("1"), "a"}, map[string]any{}}
	exprs := []string{".", ".id", ".id | tostring", ".f|tostring", ".s | tostring", ".n | tostring", ".b | tostring",
		".o.a.b", ".o.arr[]", ".arr[]", ".e[]", ".missing.deeper", ".s.x", ".[]", ".o | tostring", " .o.a "}
	for _, expr := range exprs {
		fast, err := compileJQ("f", expr)
		require.NoError(t, err)
		require.True(t, fast.fast, "%q is a simple path", expr)
		slow := *fast
		slow.fast = false
		for _, in := range inputs {
			got, gotErr := fast.all(t.Context(), in)
			want, wantErr := slow.all(t.Context(), in)
			require.Equal(t, wantErr, gotErr, "%q on %v", expr, in)
			if len(want) == 0 {
				require.Empty(t, got, "%q on %v", expr, in)
			} else {
				require.Equal(t, want, got, "%q on %v", expr, in)
			}
			g1, gok, gerr := fast.first(t.Context(), in)
			w1, wok, werr := slow.first(t.Context(), in)
			require.Equal(t, []any{w1, wok, werr}, []any{g1, gok, gerr}, "first: %q on %v", expr, in)
		}
	}
	for _, expr := range []string{".a[0]", ".a | length", `.["a b"]`, ".a?", ".a.b[]?"} {
		e, err := compileJQ("f", expr)
		require.NoError(t, err)
		require.False(t, e.fast, "%q is not a simple path", expr)
	}
}
