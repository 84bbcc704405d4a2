package httpapi

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPaginationCycleFails: pages that lead A→B→C→A fail the listing at
// the first cursor or next URL already followed, naming it and the page
// first read with it, instead of repeating the pages (their records
// skipped as duplicates) until max_pages. The Read ends with the error, so
// the pipeline deletes nothing. Page 1 is A for the URL styles; a cursor
// listing's page 1 has no cursor, so its cycle A→B→C→A takes one page more.
func TestPaginationCycleFails(t *testing.T) {
	t.Parallel()
	all := tickets(4)
	// next maps a page to the one it points to; "" is page 1.
	next := map[string]string{"": "B", "B": "C", "C": ""}
	cursorNext := map[string]string{"": "A", "A": "B", "B": "C", "C": "A"}
	for _, tc := range []struct {
		name     string
		pag      Pagination
		serve    func(w http.ResponseWriter, r *http.Request, n int)
		requests int32
		wantE    func(srvURL string) string
	}{
		{"cursor", Pagination{Style: StyleCursor, Param: "cursor", Next: ".next"},
			func(w http.ResponseWriter, r *http.Request, n int) {
				writeJSON(w, map[string]any{"data": window(all, n-1, 1), "next": cursorNext[r.URL.Query().Get("cursor")]})
			}, 4,
			func(u string) string {
				return fmt.Sprintf(`page 4 (GET %s/tickets?cursor=C): pagination.next ".next" yielded cursor "A", which page 2 was already read with; the pages cycle, so the listing is incomplete and deletes nothing`, u)
			}},
		{"next url", Pagination{Style: StyleNextURL, Next: ".next"},
			func(w http.ResponseWriter, r *http.Request, n int) {
				writeJSON(w, map[string]any{"data": window(all, n-1, 1), "next": "/tickets?p=" + next[r.URL.Query().Get("p")]})
			}, 3,
			func(u string) string {
				return fmt.Sprintf(`page 3 (GET %s/tickets?p=C): next URL %s/tickets?p=, which page 1 was already read with; the pages cycle, so the listing is incomplete and deletes nothing`, u, u)
			}},
		{"link header", Pagination{Style: StyleLink},
			func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Link", `</tickets?p=`+next[r.URL.Query().Get("p")]+`>; rel="next"`)
				writeJSON(w, map[string]any{"data": window(all, n-1, 1)})
			}, 3,
			func(u string) string {
				return fmt.Sprintf(`page 3 (GET %s/tickets?p=C): next URL %s/tickets?p=, which page 1 was already read with; the pages cycle, so the listing is incomplete and deletes nothing`, u, u)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var requests atomic.Int32
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				tc.serve(w, r, int(requests.Add(1)))
			})
			cfg := Config{URL: srv.URL + "/tickets?p=", Records: ".data[]", Key: ".id", Anchor: "ticket",
				Pagination: tc.pag, MaxPages: 50}
			if tc.pag.Style == StyleCursor {
				cfg.URL = srv.URL + "/tickets"
			}
			b := setup(t, cfg)
			pages, err := readAll(t, b.src, "")
			require.EqualError(t, err, tc.wantE(srv.URL))
			require.Equal(t, tc.requests, requests.Load())
			require.Len(t, pages, int(tc.requests)-1, "the page that closes the cycle is not yielded")
			for _, p := range pages {
				require.Empty(t, p.Skipped, "no page repeated")
			}
		})
	}
}
