package grist_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

// refuse makes the server answer 403 to /states and /sql, as Grist does
// for a key without full read access (grist-api.md §4, §7), and 403 to
// more paths ending as given.
func refuse(s *gristtest.Server, suffixes ...string) {
	suffixes = append(suffixes, "/states", "/sql")
	s.SetFault(func(r *http.Request) (int, string) {
		for _, suf := range suffixes {
			if strings.HasSuffix(r.URL.Path, suf) {
				return 403, "insufficient document access"
			}
		}
		return 0, ""
	})
}

// threeTables loads three corpus tables: Guides 19 rows, Themes 31, FAQ
// 213 (corpus/MANIFEST.md).
func threeTables(t *testing.T, s *gristtest.Server) {
	s.LoadCSV("Guides", corpus(t, "uk-tariff-guides.csv"), map[string]string{"active": "Bool"})
	s.LoadCSV("Themes", corpus(t, "windsor-framework-green-lanes-themes.csv"), nil)
	s.LoadCSV("FAQ", corpus(t, "faq_covidbert.csv"), nil)
}

func cursorETags(t *testing.T, cursor string) map[string]string {
	var c struct {
		ETags map[string]string `json:"etags"`
	}
	require.NoError(t, json.Unmarshal([]byte(cursor), &c))
	return c.ETags
}

// TestETagAllUnchanged: with /states refused, a second Read of an
// unchanged document sends /states, the schema probe and one conditional
// GET per table, each answered 304, and yields ErrNotModified alone.
func TestETagAllUnchanged(t *testing.T) {
	s := gristtest.New(t)
	threeTables(t, s)
	refuse(s)
	src := newSource(t, s, nil)
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.False(t, l.partial)
	require.Len(t, l.records, 19+31+213)
	tags := cursorETags(t, l.cursor)
	require.Len(t, tags, 4, "three tables and the schema probe")
	require.Contains(t, tags, "/tables/_grist_Tables_column/records")
	require.Regexp(t, `^W/"[0-9a-f]+-`, tags["/tables/Guides/records?sort=id"])

	// A new Source, as after a restart: the cursor alone carries the tags.
	src2 := newSource(t, s, nil)
	s.ResetCounts()
	l2 := readAll(t, src2, l.cursor)
	require.ErrorIs(t, l2.err, sources.ErrNotModified)
	require.Empty(t, l2.pages)
	require.Equal(t, 1, s.Requests(http.MethodGet, "/states"))
	require.Equal(t, 1, s.Requests(http.MethodGet, "/_grist_Tables_column/records"))
	for _, tbl := range []string{"Guides", "Themes", "FAQ"} {
		require.Equal(t, 1, s.Requests(http.MethodGet, "/tables/"+tbl+"/records"), tbl)
	}
	require.Equal(t, 5, s.Requests("", ""), "/states + schema probe + 3 tables")
	require.Equal(t, 4, s.Responses(http.StatusNotModified), "every probe 304: no body")
	require.Zero(t, s.Responses(http.StatusOK))
	st := src2.Stats()
	require.Equal(t, int64(1), st.NotModified)
	require.Equal(t, int64(4), st.ETag304)
	require.Zero(t, st.Rows)
}

// TestETagOneTableChanged: an edit and a delete in one table make the next
// Read a complete listing of all tables (not partial), so the deleted row
// is a deletion by absence; the Read after that is not modified again.
func TestETagOneTableChanged(t *testing.T) {
	s := gristtest.New(t)
	threeTables(t, s)
	refuse(s)
	src := newSource(t, s, nil)
	l := readAll(t, src, "")
	require.NoError(t, l.err)

	s.UpdateRows("Themes", map[int64]map[string]any{2: {"Theme": "edited"}})
	s.DeleteRows("Themes", 3)
	s.ResetCounts()
	l2 := readAll(t, src, l.cursor)
	require.NoError(t, l2.err)
	require.False(t, l2.partial, "a complete listing: absent keys are deletions")
	require.Empty(t, l2.deleted)
	require.Len(t, l2.records, 19+30+213)
	require.NotContains(t, l2.records, "Themes:3")
	require.Contains(t, l2.records, "Guides:1")
	require.Equal(t, "edited", l2.records["Themes:2"].Attributes["Theme"])
	// Probes in order: schema 304, FAQ 304, Guides 304, Themes 200 (stop).
	// Listing: /tables, 3 /columns, 3 /records (SQL already known refused).
	require.Equal(t, 1+4+1+3+3, s.Requests("", ""))
	require.Equal(t, 3, s.Responses(http.StatusNotModified))
	require.Zero(t, s.Requests(http.MethodPost, "/sql"))

	s.ResetCounts()
	l3 := readAll(t, src, l2.cursor)
	require.ErrorIs(t, l3.err, sources.ErrNotModified)
	require.Equal(t, 5, s.Requests("", ""))
}

// TestETagTypeChangeDetected: Int -> Numeric leaves a table's /records body
// as it was (5 stays 5) but changes _grist_Tables_column, so the schema
// probe catches it and the values decode with the new type.
func TestETagTypeChangeDetected(t *testing.T) {
	s := gristtest.New(t)
	s.AddTable("T", gristtest.Column{ID: "n", Type: "Int"})
	s.AddRows("T", map[string]any{"n": 5})
	refuse(s)
	src := newSource(t, s, nil)
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.Equal(t, int64(5), l.records["T:1"].Attributes["n"])

	s.SetColumnType("T", "n", "Numeric")
	l2 := readAll(t, src, l.cursor)
	require.NoError(t, l2.err)
	require.False(t, l2.partial)
	require.Equal(t, float64(5), l2.records["T:1"].Attributes["n"])
}

// TestETagStatesRouteMissing: a 404 route for /states (not "document not
// found") also switches to ETag polling; with SQL allowed the rows come
// through /sql, so each table's tag is taken by a probe sent before the
// listing.
func TestETagStatesRouteMissing(t *testing.T) {
	s := gristtest.New(t)
	threeTables(t, s)
	s.SetFault(func(r *http.Request) (int, string) {
		if strings.HasSuffix(r.URL.Path, "/states") {
			return 404, "not found: " + r.URL.Path
		}
		return 0, ""
	})
	src := newSource(t, s, nil)
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.Len(t, l.records, 19+31+213)
	require.Positive(t, s.Requests(http.MethodPost, "/sql"))
	require.Len(t, cursorETags(t, l.cursor), 4)

	s.ResetCounts()
	l2 := readAll(t, src, l.cursor)
	require.ErrorIs(t, l2.err, sources.ErrNotModified)
	require.Equal(t, 5, s.Requests("", ""))

	// A "document not found" 404 is an error, not a reason to poll.
	s.SetFault(func(r *http.Request) (int, string) {
		if strings.HasSuffix(r.URL.Path, "/states") {
			return 404, "document not found"
		}
		return 0, ""
	})
	l3 := readAll(t, src, l.cursor)
	require.Error(t, l3.err)
	require.NotErrorIs(t, l3.err, sources.ErrNotModified)
}

// TestETagOldCursor: a cursor written before ETags existed (only h, full
// and schema) is read as a cursor without tags: a full listing whose new
// cursor has them.
func TestETagOldCursor(t *testing.T) {
	s := gristtest.New(t)
	threeTables(t, s)
	refuse(s)
	src := newSource(t, s, nil)
	old := `{"h":"6f1b7c0e1d2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4","full":1795988466,"schema":"0123456789abcdef"}`
	l := readAll(t, src, old)
	require.NoError(t, l.err)
	require.False(t, l.partial)
	require.Len(t, l.records, 19+31+213)
	require.Len(t, cursorETags(t, l.cursor), 4)
	l2 := readAll(t, src, l.cursor)
	require.ErrorIs(t, l2.err, sources.ErrNotModified)
}

// TestETagRenamedTableListsAgain: a renamed table's old probe answers 404
// "Table not found": a full listing under the new name.
func TestETagRenamedTableListsAgain(t *testing.T) {
	s := gristtest.New(t)
	threeTables(t, s)
	refuse(s)
	src := newSource(t, s, nil)
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	s.RenameTable("Guides", "Manuals")
	l2 := readAll(t, src, l.cursor)
	require.NoError(t, l2.err)
	require.False(t, l2.partial)
	require.Contains(t, l2.records, "Manuals:1")
	require.NotContains(t, l2.records, "Guides:1")
	require.Contains(t, cursorETags(t, l2.cursor), "/tables/Manuals/records?sort=id")
}

// TestETagConfigOrFullEvery: a changed table selection, or a full listing
// falling due, lists everything even though every probe would answer 304.
func TestETagConfigOrFullEvery(t *testing.T) {
	s := gristtest.New(t)
	threeTables(t, s)
	refuse(s)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := func(c *grist.Config) {
		c.FullEvery = time.Hour
		c.Now = func() time.Time { return now }
	}
	src := newSource(t, s, clock)
	l := readAll(t, src, "")
	require.NoError(t, l.err)

	narrow := newSource(t, s, func(c *grist.Config) { clock(c); c.Tables = []string{"Guides"} })
	l2 := readAll(t, narrow, l.cursor)
	require.NoError(t, l2.err)
	require.Len(t, l2.records, 19)

	now = now.Add(30 * time.Minute)
	require.ErrorIs(t, readAll(t, src, l.cursor).err, sources.ErrNotModified)
	now = now.Add(time.Hour)
	l3 := readAll(t, src, l.cursor)
	require.NoError(t, l3.err)
	require.Len(t, l3.records, 19+31+213)
}

// TestETagDependencies: a Ref target keyed by a column but not selected is
// probed too, since its key values become the link keys; changing one
// lists again and the link follows.
func TestETagDependencies(t *testing.T) {
	s := gristtest.New(t)
	s.AddTable("Codes", gristtest.Column{ID: "code"})
	s.AddRows("Codes", map[string]any{"code": "01"})
	s.AddTable("Items", gristtest.Column{ID: "name"}, gristtest.Column{ID: "code", Type: "Ref:Codes"})
	s.AddRows("Items", map[string]any{"name": "horse", "code": int64(1)})
	refuse(s)
	src := newSource(t, s, func(c *grist.Config) {
		c.Tables = []string{"Items"}
		c.KeyColumns = map[string]string{"Codes": "code"}
	})
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.Equal(t, "Codes:01", l.records["Items:1"].Links[0].ToKey)
	require.Contains(t, cursorETags(t, l.cursor), "/tables/Codes/records?sort=id")

	s.UpdateRows("Codes", map[int64]map[string]any{1: {"code": "0101"}})
	l2 := readAll(t, src, l.cursor)
	require.NoError(t, l2.err)
	require.Equal(t, "Codes:0101", l2.records["Items:1"].Links[0].ToKey)
}

// TestETagChangeDuringListing: a row changed after its table was listed
// but before the listing ended is listed by the next Read, because the
// table's tag was taken before its rows were read.
func TestETagChangeDuringListing(t *testing.T) {
	s := gristtest.New(t)
	threeTables(t, s)
	var sqlCalls atomic.Int64
	s.SetFault(func(r *http.Request) (int, string) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/states"):
			return 404, "not found: " + r.URL.Path
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/sql"):
			// Tables are listed FAQ, Guides, Themes, two statements each
			// (rows, then an empty page): the 5th is Themes' first.
			if sqlCalls.Add(1) == 5 {
				s.UpdateRows("Guides", map[int64]map[string]any{1: {"title": "late edit"}})
			}
		}
		return 0, ""
	})
	src := newSource(t, s, nil)
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.Equal(t, int64(6), sqlCalls.Load())
	require.NotEqual(t, "late edit", l.records["Guides:1"].Attributes["title"])

	l2 := readAll(t, src, l.cursor)
	require.NoError(t, l2.err, "the late edit must not be answered 'not modified'")
	require.Equal(t, "late edit", l2.records["Guides:1"].Attributes["title"])
	require.ErrorIs(t, readAll(t, src, l2.cursor).err, sources.ErrNotModified)
}
