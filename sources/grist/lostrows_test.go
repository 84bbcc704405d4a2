package grist_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

// TestIncrementalRowsNotReturnedKeepTheCursor: rows /compare lists as
// changed that the read by id does not return (a proxy answering
// {"records":[]}, a row removed in between) are not dropped: the listing
// keeps the old cursor, says so, and the next read lists them.
func TestIncrementalRowsNotReturnedKeepTheCursor(t *testing.T) {
	s := gristtest.New(t)
	loadHS(t, s)
	var drop atomic.Bool
	target, err := url.Parse(s.URL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/sql") && drop.Load() {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"id\" IN`)) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"statement":"","records":[]}`)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	src := newSource(t, s, func(c *grist.Config) {
		c.Server = proxy.URL
		c.KeyColumns = map[string]string{"HSCodes": "hscode"}
	})
	l := readAll(t, src, "")
	require.NoError(t, l.err)

	s.UpdateRows("HSCodes", map[int64]map[string]any{100: {"description": "edited 100"}, 101: {"description": "edited 101"}})
	drop.Store(true)
	l2 := readAll(t, src, l.cursor)
	require.NoError(t, l2.err)
	require.Empty(t, l2.records)
	require.Equal(t, l.cursor, l2.cursor, "the cursor does not move past rows it did not read")
	var warned bool
	for _, pg := range l2.pages {
		for _, w := range pg.Warnings {
			warned = warned || strings.Contains(w, "100") && strings.Contains(w, "HSCodes")
		}
	}
	require.True(t, warned, "the listing says which rows it could not read")

	drop.Store(false)
	l3 := readAll(t, src, l2.cursor)
	require.NoError(t, l3.err)
	require.Len(t, l3.records, 2)
	for _, r := range l3.records {
		require.True(t, strings.HasPrefix(fmt.Sprint(r.Attributes["description"]), "edited "))
	}
	_ = gristtest.DocID
}
