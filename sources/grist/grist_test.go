package grist_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	kgcorpus "github.com/kgsync/kgsync/internal/corpus"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

func corpus(t testing.TB, name string) string { return kgcorpus.Table(t, name) }

// loadHS loads the HS nomenclature: parent is a Ref to the same table,
// matched on the code text (codes keep their leading zeros).
func loadHS(t testing.TB, s *gristtest.Server) {
	s.LoadCSV("HSCodes", corpus(t, "harmonized-system.csv"), map[string]string{"parent": "Ref:HSCodes/hscode", "level": "Int"})
}

func newSource(t testing.TB, s *gristtest.Server, mod func(*grist.Config)) *grist.Source {
	cfg := grist.Config{Server: s.URL, DocID: gristtest.DocID, APIKey: gristtest.APIKey,
		RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	src, err := grist.New("grist", cfg, nil)
	require.NoError(t, err)
	return src
}

type listing struct {
	records map[string]sources.Record
	deleted []string
	pages   []*sources.Page
	cursor  string
	partial bool
	err     error
}

func readAll(t testing.TB, src *grist.Source, cursor string) listing {
	return collect(t, src.Read(context.Background(), cursor))
}

// collect reads a listing to its end or first error; a key listed twice
// fails the test.
func collect(t testing.TB, pages iter.Seq2[*sources.Page, error]) listing {
	l := listing{records: map[string]sources.Record{}}
	for pg, err := range pages {
		if err != nil {
			l.err = err
			break
		}
		l.pages = append(l.pages, pg)
		for _, r := range pg.Records {
			_, dup := l.records[r.Key]
			require.False(t, dup, "key %s twice", r.Key)
			l.records[r.Key] = r
		}
		l.deleted = append(l.deleted, pg.Deleted...)
		l.cursor = pg.Cursor
		l.partial = l.partial || pg.Partial
	}
	return l
}

func countAnchor(l listing, anchor string) int {
	n := 0
	for _, r := range l.records {
		if r.Anchor == anchor {
			n++
		}
	}
	return n
}

// TestFullReadCorpus reads every corpus table; counts are from
// corpus/MANIFEST.md.
func TestFullReadCorpus(t *testing.T) {
	s := gristtest.New(t)
	loadHS(t, s)
	s.LoadCSV("Guides", corpus(t, "uk-tariff-guides.csv"), map[string]string{"id2": "Int", "active": "Bool"})
	s.LoadCSV("HeadingGuides", corpus(t, "uk-tariff-headings_guides.csv"), map[string]string{
		"heading_id": "Ref:HSCodes/hscode", "id2": "Ref:Guides/id2"})
	s.LoadCSV("Themes", corpus(t, "windsor-framework-green-lanes-themes.csv"), nil)
	s.LoadCSV("FAQ", corpus(t, "faq_covidbert.csv"), nil)

	src := newSource(t, s, func(c *grist.Config) {
		c.KeyColumns = map[string]string{"HSCodes": "hscode"}
		c.PageSize = 500
	})
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.False(t, l.partial)
	require.Equal(t, 6940, countAnchor(l, "HSCodes"))
	require.Equal(t, 19, countAnchor(l, "Guides"))
	require.Equal(t, 340, countAnchor(l, "HeadingGuides"))
	require.Equal(t, 31, countAnchor(l, "Themes"))
	require.Equal(t, 213, countAnchor(l, "FAQ"))

	// Keys keep leading zeros; the heading 0101's parent is chapter 01.
	h := l.records["HSCodes:0101"]
	require.Equal(t, "Horses, asses, mules and hinnies; live", h.Attributes["description"])
	require.Equal(t, []sources.Link{{Type: "PARENT", ToAnchor: "HSCodes", ToKey: "HSCodes:01"}}, h.Links)
	require.Equal(t, int64(4), h.Attributes["level"])
	require.NotContains(t, h.Attributes, "manualSort")
	// The root row points to itself (MANIFEST: "TOTAL,TOTAL,…,TOTAL,5").
	require.Equal(t, "HSCodes:TOTAL", l.records["HSCodes:TOTAL"].Links[0].ToKey)

	// HeadingGuides: 340 rows, each with a HEADING_ID and an ID2 link
	// (the README says all 340 headings resolved).
	links := 0
	for _, r := range l.records {
		if r.Anchor == "HeadingGuides" {
			links += len(r.Links)
			for _, ln := range r.Links {
				if ln.Type == "HEADING_ID" {
					require.True(t, strings.HasPrefix(ln.ToKey, "HSCodes:"), ln.ToKey)
					require.Len(t, strings.TrimPrefix(ln.ToKey, "HSCodes:"), 4)
				}
			}
		}
	}
	require.Equal(t, 680, links)
	require.Zero(t, src.Stats().RefUnmatched)

	// Themes: 14 columns, 9 with empty headers named by position.
	for _, r := range l.records {
		if r.Anchor == "Themes" {
			require.Len(t, r.Attributes, 14)
			break
		}
	}
	// FAQ: a multi-line cell survives (LF inside CRLF rows).
	multi := 0
	for _, r := range l.records {
		if a, ok := r.Attributes["answer"].(string); ok && r.Anchor == "FAQ" && strings.Contains(a, "\n") {
			multi++
		}
	}
	require.Positive(t, multi)
}

func TestUnmatchedRefCounted(t *testing.T) {
	s := gristtest.New(t)
	loadHS(t, s)
	s.AddRows("HSCodes", map[string]any{"hscode": "999901", "parent": "ZZ99", "level": 6})
	src := newSource(t, s, nil)
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	r := l.records["HSCodes:6941"]
	require.Equal(t, "ZZ99", r.Attributes["parent"])
	require.Empty(t, r.Links)
	require.Equal(t, int64(1), src.Stats().RefUnmatched)
	// Every loaded row has a parent link; the added one has none.
	require.Equal(t, int64(6940), src.Stats().Links)
}

func TestNotModifiedOneRequest(t *testing.T) {
	s := gristtest.New(t)
	s.LoadCSV("Guides", corpus(t, "uk-tariff-guides.csv"), nil)
	src := newSource(t, s, nil)
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.NotEmpty(t, l.cursor)
	s.ResetCounts()
	l2 := readAll(t, src, l.cursor)
	require.ErrorIs(t, l2.err, sources.ErrNotModified)
	require.Empty(t, l2.pages)
	require.Equal(t, 1, s.Requests("", ""))
	require.Equal(t, 1, s.Requests(http.MethodGet, "/states"))
}

func TestIncrementalUpdatesAndDeletes(t *testing.T) {
	s := gristtest.New(t)
	loadHS(t, s)
	src := newSource(t, s, func(c *grist.Config) { c.KeyColumns = map[string]string{"HSCodes": "hscode"} })
	l := readAll(t, src, "")
	require.NoError(t, l.err)

	upd := map[int64]map[string]any{}
	for id := int64(100); id < 110; id++ {
		upd[id] = map[string]any{"description": fmt.Sprintf("edited %d", id)}
	}
	s.UpdateRows("HSCodes", upd)
	// Rows 3 and 4 are 010121 and 010129 in the CSV's order.
	s.DeleteRows("HSCodes", 3, 4)
	s.ResetCounts()
	l2 := readAll(t, src, l.cursor)
	require.NoError(t, l2.err)
	require.True(t, l2.partial)
	require.Len(t, l2.records, 10)
	for _, r := range l2.records {
		require.True(t, strings.HasPrefix(r.Attributes["description"].(string), "edited "))
	}
	require.ElementsMatch(t, []string{"HSCodes:010121", "HSCodes:010129"}, l2.deleted)
	require.Equal(t, 1, s.Requests(http.MethodGet, "/compare"))
	require.Zero(t, s.Requests(http.MethodGet, "/records"))
	for _, pg := range l2.pages[:len(l2.pages)-1] {
		require.Equal(t, l.cursor, pg.Cursor, "only the last page moves the cursor")
	}

	// Added rows are listed under addRows and updateRows: read once.
	ids := s.AddRows("HSCodes", map[string]any{"hscode": "999902", "parent": int64(2), "level": 6})
	l3 := readAll(t, src, l2.cursor)
	require.NoError(t, l3.err)
	require.Len(t, l3.records, 1)
	require.Equal(t, []sources.Link{{Type: "PARENT", ToAnchor: "HSCodes", ToKey: "HSCodes:0101"}}, l3.records["HSCodes:999902"].Links)
	require.Len(t, ids, 1)
	l4 := readAll(t, src, l3.cursor)
	require.ErrorIs(t, l4.err, sources.ErrNotModified)
}

func TestTrimmedOrUnknownHashFallsBackToFullScan(t *testing.T) {
	s := gristtest.New(t)
	s.LoadCSV("Guides", corpus(t, "uk-tariff-guides.csv"), nil)
	src := newSource(t, s, nil)
	l := readAll(t, src, "")
	require.NoError(t, l.err)

	s.UpdateRows("Guides", map[int64]map[string]any{1: {"title": "changed"}})
	s.TrimHistory(1)
	l2 := readAll(t, src, l.cursor)
	require.NoError(t, l2.err)
	require.False(t, l2.partial)
	require.Len(t, l2.records, 19)
	require.Equal(t, "changed", l2.records["Guides:1"].Attributes["title"])
	require.Equal(t, int64(1), src.Stats().Fallbacks)

	// A hash the server never had: 500 "Cannot read hash" -> full listing.
	bad := `{"h":"0000000000000000000000000000000000000000000000000000000000000000","full":` +
		fmt.Sprint(time.Now().Unix()) + `,"schema":"x"}`
	l3 := readAll(t, src, bad)
	require.NoError(t, l3.err)
	require.False(t, l3.partial)
	require.Len(t, l3.records, 19)
	require.Equal(t, int64(2), src.Stats().Fallbacks)
}

func TestFullEveryForcesFullListing(t *testing.T) {
	s := gristtest.New(t)
	s.LoadCSV("Guides", corpus(t, "uk-tariff-guides.csv"), nil)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	src := newSource(t, s, func(c *grist.Config) {
		c.FullEvery = time.Hour
		c.Now = func() time.Time { return now }
	})
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	now = now.Add(2 * time.Hour)
	l2 := readAll(t, src, l.cursor)
	require.NoError(t, l2.err, "unchanged document but a full listing is due")
	require.False(t, l2.partial)
	require.Len(t, l2.records, 19)
}

// allTypes builds a table with every column type, holding the value shapes
// seen in grist-samples/real/read/get-records-Guides.json.
func allTypes(t *testing.T, s *gristtest.Server) {
	s.AddTable("Target", gristtest.Column{ID: "name"})
	s.AddRows("Target", map[string]any{"name": "a"}, map[string]any{"name": "b"})
	s.AddTable("All",
		gristtest.Column{ID: "text"}, gristtest.Column{ID: "num", Type: "Numeric"}, gristtest.Column{ID: "int", Type: "Int"},
		gristtest.Column{ID: "flag", Type: "Bool"}, gristtest.Column{ID: "day", Type: "Date"},
		gristtest.Column{ID: "at", Type: "DateTime:Europe/London"}, gristtest.Column{ID: "choice", Type: "Choice"},
		gristtest.Column{ID: "tags", Type: "ChoiceList"}, gristtest.Column{ID: "target", Type: "Ref:Target"},
		gristtest.Column{ID: "targets", Type: "RefList:Target"}, gristtest.Column{ID: "files", Type: "Attachments"},
		gristtest.Column{ID: "any", Type: "Any", IsFormula: true}, gristtest.Column{ID: "ratio", Type: "Numeric", IsFormula: true},
		gristtest.Column{ID: "gristHelper_Display", Type: "Any", IsFormula: true, Hidden: true},
	)
	att := s.AddAttachment("note.txt", []byte("hello attachment"))
	s.AddRows("All",
		map[string]any{"text": "x", "num": 4.5, "int": 7, "flag": true, "day": int64(1772409600), "at": 1772445600.5,
			"choice": "Industry", "tags": []any{"L", "goods", "food"}, "target": int64(2), "targets": []any{"L", int64(1), int64(2)},
			"files": []any{"L", att}, "any": []any{"L", "Drones", int64(1)}, "ratio": 100.0},
		map[string]any{"text": "", "num": "n/a", "flag": false, "target": "nomatch", "any": []any{"R", "Target", int64(1)},
			"ratio": gristtest.CellError{Name: "ZeroDivisionError"}},
		map[string]any{"any": []any{"O", map[string]any{"k": int64(1), "s": "v"}}, "tags": []any{"L"}, "ratio": 50.0},
		map[string]any{"any": []any{"d", int64(1785283200)}},
		map[string]any{"any": 12.5},
		map[string]any{"any": gristtest.CellError{Name: "TypeError"}},
	)
}

func TestSQLAndRecordsEndpointsAgree(t *testing.T) {
	s := gristtest.New(t)
	allTypes(t, s)
	viaSQL := readAll(t, newSource(t, s, nil), "")
	require.NoError(t, viaSQL.err)
	require.Positive(t, s.Requests(http.MethodPost, "/sql"))

	// Refuse /sql as Grist does without full read access (grist-api.md §4).
	s.SetFault(func(r *http.Request) (int, string) {
		if strings.HasSuffix(r.URL.Path, "/sql") {
			return 403, "insufficient document access"
		}
		return 0, ""
	})
	src := newSource(t, s, nil)
	viaRecords := readAll(t, src, "")
	require.NoError(t, viaRecords.err)
	require.Positive(t, src.Stats().RecordsReads)
	require.Equal(t, len(viaSQL.records), len(viaRecords.records))
	for k, r := range viaSQL.records {
		require.Equal(t, r, viaRecords.records[k], k)
	}

	r1 := viaSQL.records["All:1"].Attributes
	require.Equal(t, true, r1["flag"])
	require.Equal(t, "2026-03-02", r1["day"])
	require.Equal(t, "2026-03-02T10:00:00.5Z", r1["at"])
	require.Equal(t, []any{"goods", "food"}, r1["tags"])
	require.Equal(t, []any{"Drones", int64(1)}, r1["any"])
	require.Equal(t, 100.0, r1["ratio"])
	files := r1["files"].([]any)
	require.Len(t, files, 1)
	// fileIdent = SHA-1 of "hello attachment" + ".txt".
	require.Equal(t, map[string]any{"id": int64(1), "fileName": "note.txt", "fileIdent": "8ba47fe96711a417f81be2eeda2b9f5d6dc58cd7.txt", "fileSize": int64(16)}, files[0])
	require.NotContains(t, r1, "gristHelper_Display")
	require.ElementsMatch(t, []sources.Link{
		{Type: "TARGET", ToAnchor: "Target", ToKey: "Target:2"},
		{Type: "TARGETS", ToAnchor: "Target", ToKey: "Target:1"},
		{Type: "TARGETS", ToAnchor: "Target", ToKey: "Target:2"},
	}, viaSQL.records["All:1"].Links)
	r2 := viaSQL.records["All:2"].Attributes
	require.Equal(t, map[string]any{"error": "ZeroDivisionError"}, r2["ratio"])
	require.Equal(t, "n/a", r2["num"])
	require.Equal(t, "nomatch", r2["target"])
	require.Empty(t, viaSQL.records["All:2"].Links)
	require.Equal(t, map[string]any{"table": "Target", "id": int64(1)}, r2["any"])
	require.Equal(t, map[string]any{"k": int64(1), "s": "v"}, viaSQL.records["All:3"].Attributes["any"])
	require.Equal(t, []any{}, viaSQL.records["All:3"].Attributes["tags"])
	require.Equal(t, "2026-07-29", viaSQL.records["All:4"].Attributes["any"])
	require.Equal(t, 12.5, viaSQL.records["All:5"].Attributes["any"])
	require.Equal(t, map[string]any{"error": "TypeError"}, viaSQL.records["All:6"].Attributes["any"])

	data, err := src.Attachment(context.Background(), 1)
	require.NoError(t, err)
	require.Equal(t, "hello attachment", string(data))
}

func Test429BackoffRetries(t *testing.T) {
	s := gristtest.New(t)
	s.LoadCSV("Guides", corpus(t, "uk-tariff-guides.csv"), nil)
	s.Inject429(3)
	src := newSource(t, s, nil)
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.Len(t, l.records, 19)
	require.Equal(t, int64(3), src.Stats().Retries429)

	s.Inject429(100)
	src2 := newSource(t, s, func(c *grist.Config) { c.RetryMax = 2 })
	l2 := readAll(t, src2, "")
	require.Error(t, l2.err)
	require.Contains(t, l2.err.Error(), "429")
}

func Test401NamesDocNotKey(t *testing.T) {
	s := gristtest.New(t)
	s.LoadCSV("Guides", corpus(t, "uk-tariff-guides.csv"), nil)
	const key = "secret-key-that-must-not-leak-123456"
	src := newSource(t, s, func(c *grist.Config) { c.APIKey = key })
	l := readAll(t, src, "")
	require.Error(t, l.err)
	msg := l.err.Error()
	require.Contains(t, msg, gristtest.DocID)
	require.Contains(t, msg, "401")
	require.Contains(t, msg, "invalid API key")
	require.NotContains(t, msg, key)
	var ae *grist.APIError
	require.True(t, errors.As(l.err, &ae))

	// A table that does not exist is named in the error.
	src2 := newSource(t, s, func(c *grist.Config) { c.Tables = []string{"Nope"} })
	l2 := readAll(t, src2, "")
	require.ErrorContains(t, l2.err, "table Nope")
}

func TestFailureMidwayYieldsError(t *testing.T) {
	s := gristtest.New(t)
	loadHS(t, s)
	var mu sync.Mutex
	sqlCalls := 0
	s.SetFault(func(r *http.Request) (int, string) {
		if !strings.HasSuffix(r.URL.Path, "/sql") {
			return 0, ""
		}
		mu.Lock()
		defer mu.Unlock()
		sqlCalls++
		if sqlCalls >= 3 {
			return 500, "boom"
		}
		return 0, ""
	})
	src := newSource(t, s, func(c *grist.Config) { c.RetryMax = 1 })
	l := readAll(t, src, "")
	require.Error(t, l.err)
	require.ErrorContains(t, l.err, "HTTP 500")
	require.NotEmpty(t, l.pages, "pages before the failure were yielded")
	for _, pg := range l.pages {
		require.Empty(t, pg.Cursor, "no page of a failed listing carries a new cursor")
	}
}

func TestHostileNamesQuoted(t *testing.T) {
	s := gristtest.New(t)
	tbl := `We"ird; DROP TABLE x; --`
	s.AddTable(tbl, gristtest.Column{ID: `co"l`}, gristtest.Column{ID: "select"}, gristtest.Column{ID: "x) OR (1"})
	s.AddRows(tbl, map[string]any{`co"l`: "a", "select": "b", "x) OR (1": "c"}, map[string]any{`co"l`: "d"})
	src := newSource(t, s, func(c *grist.Config) { c.PageSize = 1 })
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.Len(t, l.records, 2)
	require.Equal(t, map[string]any{`co"l`: "a", "select": "b", "x) OR (1": "c"}, l.records[tbl+":1"].Attributes)
	require.Equal(t, 3, s.Requests(http.MethodPost, "/sql"), "two one-row pages and an empty one")
}

func TestMaxInFlight(t *testing.T) {
	s := gristtest.New(t)
	s.LoadCSV("Guides", corpus(t, "uk-tariff-guides.csv"), nil)
	s.SetLatency(10 * time.Millisecond)
	src := newSource(t, s, func(c *grist.Config) { c.MaxInFlight = 2; c.PageSize = 5 })
	s.ResetCounts()
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			errs <- readAll(t, src, "").err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.LessOrEqual(t, s.MaxInFlight(), 2)
	require.Positive(t, s.MaxInFlight())
}

func TestSQLTimeoutShrinksPages(t *testing.T) {
	s := gristtest.New(t)
	loadHS(t, s)
	s.SetSQLMaxRows(300)
	src := newSource(t, s, func(c *grist.Config) { c.PageSize = 1000 })
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.Len(t, l.records, 6940)
	// 1000 -> 500 -> 250: two halvings.
	require.Equal(t, int64(2), src.Stats().PageShrinks)
}

// TestTableRenameFollowed: a table renamed in Grist while the config names
// it by its old name is followed by its tableRef: records keep the old name
// (no key changes), and the read warns with the config line to change. Once
// the config says the new name, the records take it and each says the key
// it had before.
func TestTableRenameFollowed(t *testing.T) {
	s := gristtest.New(t)
	s.LoadCSV("Guides", corpus(t, "uk-tariff-guides.csv"), nil)
	src := newSource(t, s, func(c *grist.Config) { c.Tables = []string{"Guides"}; c.Path = "pipelines[0].sources[0].grist" })
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	s.RenameTable("Guides", "Manuals")
	l2 := readAll(t, src, l.cursor)
	require.NoError(t, l2.err)
	require.True(t, l2.partial, "records do not change: an incremental read")
	require.Empty(t, l2.records)
	require.Len(t, l2.pages[0].Warnings, 1)
	require.Contains(t, l2.pages[0].Warnings[0], `table "Guides" was renamed to "Manuals"`)
	require.Contains(t, l2.pages[0].Warnings[0], `pipelines[0].sources[0].grist.tables[0]`)

	// An edit after the rename: read under the old name.
	s.UpdateRows("Manuals", map[int64]map[string]any{1: {"title": "edited"}})
	l3 := readAll(t, src, l2.cursor)
	require.NoError(t, l3.err)
	require.Contains(t, l3.records, "Guides:1")
	require.Equal(t, "Guides", l3.records["Guides:1"].Anchor)
	require.ErrorIs(t, readAll(t, src, l3.cursor).err, sources.ErrNotModified)

	// The config takes the new name: every key moves.
	renamed := newSource(t, s, func(c *grist.Config) { c.Tables = []string{"Manuals"} })
	l4 := readAll(t, renamed, l3.cursor)
	require.NoError(t, l4.err)
	require.False(t, l4.partial)
	require.Len(t, l4.records, 19)
	require.Contains(t, l4.records, "Manuals:1")
	moved := map[string]string{}
	for _, pg := range l4.pages {
		maps.Copy(moved, pg.Renamed)
	}
	require.Len(t, moved, 19)
	require.Equal(t, "Guides:1", moved["Manuals:1"])
	require.ErrorIs(t, readAll(t, renamed, l4.cursor).err, sources.ErrNotModified)
}

func TestRemovedColumnFullListing(t *testing.T) {
	s := gristtest.New(t)
	s.LoadCSV("Guides", corpus(t, "uk-tariff-guides.csv"), nil)
	src := newSource(t, s, nil)
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	s.RemoveColumn("Guides", "image")
	l2 := readAll(t, src, l.cursor)
	require.NoError(t, l2.err)
	require.Len(t, l2.records, 19)
	require.NotContains(t, l2.records["Guides:1"].Attributes, "image")
}

// TestUserTable: the tables a source with no configured tables reads, and
// webhooks install covers: not summary, metadata or hidden helper tables.
func TestUserTable(t *testing.T) {
	t.Parallel()
	require.True(t, grist.UserTable("Rules", 0))
	require.True(t, grist.UserTable("grist_notes", 0)) // only the _grist prefix is metadata
	require.False(t, grist.UserTable("Rules_summary_Section", 3))
	require.False(t, grist.UserTable("_grist_Tables", 0))
	require.False(t, grist.UserTable("GristHidden_Import", 0))
}

// TestAdmin: the admin calls go through the source's client: the tables a
// source would read, a JSON answer decoded, and a rejected payload as an
// *APIError carrying Grist's details.userError, never the key.
func TestAdmin(t *testing.T) {
	t.Parallel()
	s := gristtest.New(t)
	loadHS(t, s)
	s.LoadCSV("FAQ", corpus(t, "faq_covidbert.csv"), nil)
	a, err := grist.NewAdmin(grist.Config{Server: s.URL, DocID: gristtest.DocID, APIKey: gristtest.APIKey})
	require.NoError(t, err)

	tables, err := a.UserTables(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"FAQ", "HSCodes"}, tables)

	var hooks struct {
		Webhooks []json.RawMessage `json:"webhooks"`
	}
	require.NoError(t, a.Call(t.Context(), http.MethodGet, "/webhooks", nil, &hooks))
	require.Empty(t, hooks.Webhooks)

	bad := map[string]any{"webhooks": []any{map[string]any{"fields": map[string]any{
		"url": "https://kg/hooks", "tableId": "FAQ", "eventTypes": []string{"delete"}}}}}
	err = a.Call(t.Context(), http.MethodPost, "/webhooks", bad, nil)
	var ae *grist.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusBadRequest, ae.Status)
	require.Equal(t, "POST /webhooks", ae.Op)
	require.True(t, strings.HasPrefix(ae.Message, "Invalid payload: Error: "), ae.Message)
	require.Contains(t, ae.Message, `eventTypes[0] is none of "add", "update"`)
	require.NotContains(t, err.Error(), gristtest.APIKey)
	require.Empty(t, s.Webhooks())
}

// TestEmptyColumnFirstValueIncremental: a column added without isFormula
// is an empty formula column until its first value makes it a data column
// (grist-core useractions.py _ensure_column_accepts_data); the two hold
// the same records, so the flip lists only the rows written, not the
// whole table.
func TestEmptyColumnFirstValueIncremental(t *testing.T) {
	s := gristtest.New(t)
	s.LoadCSV("Guides", corpus(t, "uk-tariff-guides.csv"), nil)
	src := newSource(t, s, nil)
	a, err := grist.NewAdmin(grist.Config{Server: s.URL, DocID: gristtest.DocID, APIKey: gristtest.APIKey})
	require.NoError(t, err)
	ctx := context.Background()
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.Len(t, l.records, 19)

	require.NoError(t, a.Call(ctx, http.MethodPost, "/tables/Guides/columns",
		map[string]any{"columns": []any{map[string]any{"id": "note", "fields": map[string]any{"type": "Text"}}}}, nil))
	l2 := readAll(t, src, l.cursor)
	require.NoError(t, l2.err)
	require.Equal(t, 19, len(l2.records), "an added column lists the table")

	require.NoError(t, a.Call(ctx, http.MethodPatch, "/tables/Guides/records",
		map[string]any{"records": []any{map[string]any{"id": 1, "fields": map[string]any{"note": "checked"}}}}, nil))
	var cl struct {
		Columns []struct {
			ID     string
			Fields struct{ IsFormula bool }
		}
	}
	require.NoError(t, a.Call(ctx, http.MethodGet, "/tables/Guides/columns", nil, &cl))
	for _, c := range cl.Columns {
		if c.ID == "note" {
			require.False(t, c.Fields.IsFormula, "the first value makes the column data")
		}
	}
	l3 := readAll(t, src, l2.cursor)
	require.NoError(t, l3.err)
	require.Equal(t, 1, len(l3.records), "only the row written is listed")
	require.Equal(t, "checked", l3.records["Guides:1"].Attributes["note"])
	require.ErrorIs(t, readAll(t, src, l3.cursor).err, sources.ErrNotModified)
}
