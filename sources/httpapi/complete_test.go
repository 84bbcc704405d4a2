package httpapi

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEmptyPageBeforeTheTotalIsIncomplete: an API that answers an empty
// 200 page mid-way while its body says there are 15 records: the listing
// used to count as complete (and deleted the rest); now it fails, so the
// pipeline deletes nothing — with the total found in the body or
// configured, and for every pagination style.
func TestEmptyPageBeforeTheTotalIsIncomplete(t *testing.T) {
	t.Parallel()
	all := tickets(15)
	for _, tc := range []struct {
		name  string
		pag   Pagination
		body  func(page int, data []map[string]any) map[string]any
		wantE string
	}{
		{"page, total in body", Pagination{Style: StylePage, Param: "page"},
			func(p int, d []map[string]any) map[string]any { return map[string]any{"data": d, "total": 15} },
			"after 6 of the 15 records the body announces as its total"},
		{"offset, meta.total_count in body", Pagination{Style: StyleOffset, Param: "offset"},
			func(p int, d []map[string]any) map[string]any {
				return map[string]any{"data": d, "meta": map[string]any{"total_count": 15}}
			}, "after 6 of the 15 records"},
		{"page, configured total", Pagination{Style: StylePage, Param: "page", Total: ".count_all"},
			func(p int, d []map[string]any) map[string]any { return map[string]any{"data": d, "count_all": 15} },
			"after 6 of the 15 records"},
		{"page, has_more in body", Pagination{Style: StylePage, Param: "page"},
			func(p int, d []map[string]any) map[string]any { return map[string]any{"data": d, "has_more": true} },
			"has_more is true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				page := atoi(r.URL.Query().Get("page"), 1)
				if off := r.URL.Query().Get("offset"); off != "" {
					page = atoi(off, 0)/3 + 1
				}
				data := []map[string]any{}
				if page <= 2 { // page 3 comes back empty, though 9 more exist
					data = window(all, (page-1)*3, 3)
				}
				writeJSON(w, tc.body(page, data))
			})
			b := setup(t, Config{URL: srv.URL + "/tickets", Records: ".data[]", Key: ".id", Anchor: "ticket", Pagination: tc.pag})
			pages, err := readAll(t, b.src, "")
			require.ErrorContains(t, err, tc.wantE)
			require.ErrorContains(t, err, "incomplete and deletes nothing")
			require.Equal(t, []string{"1", "2", "3", "4", "5", "6"}, keys(pages))
		})
	}
}

// TestTheSourceSaysWhenTheListingEnds: a configured total or has_more
// ends the listing without asking for an empty page; a total in the body
// that the listing reaches ends it cleanly.
func TestTheSourceSaysWhenTheListingEnds(t *testing.T) {
	t.Parallel()
	all := tickets(6)
	for _, tc := range []struct {
		name string
		pag  Pagination
		body func(page int, data []map[string]any) map[string]any
		reqs int32
	}{
		{"configured total", Pagination{Style: StylePage, Param: "page", Total: ".total"},
			func(p int, d []map[string]any) map[string]any { return map[string]any{"data": d, "total": 6} }, 2},
		{"configured has_more", Pagination{Style: StylePage, Param: "page", HasMore: ".more"},
			func(p int, d []map[string]any) map[string]any { return map[string]any{"data": d, "more": p < 2} }, 2},
		{"total in body only guards", Pagination{Style: StylePage, Param: "page"},
			func(p int, d []map[string]any) map[string]any { return map[string]any{"data": d, "total": 6} }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				page := atoi(r.URL.Query().Get("page"), 1)
				writeJSON(w, tc.body(page, window(all, (page-1)*3, 3)))
			})
			b := setup(t, Config{URL: srv.URL + "/tickets", Records: ".data[]", Key: ".id", Anchor: "ticket", Pagination: tc.pag})
			pages, err := readAll(t, b.src, "")
			require.NoError(t, err)
			require.Equal(t, []string{"1", "2", "3", "4", "5", "6"}, keys(pages))
			require.Equal(t, tc.reqs, n.Load(), "requests")
		})
	}
}
