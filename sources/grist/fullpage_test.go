package grist_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

// pageIndex is a sources.RowIndex over a map that counts the questions
// asked and their size.
type pageIndex struct {
	mu     sync.Mutex
	keys   map[string]map[int64]string // scope -> id -> key
	asked  int                         // RowKeysOf calls
	most   int                         // most ids in one call
	topAsk int64                       // the largest id asked for
}

func (x *pageIndex) RowKeysOf(_ context.Context, scope string, ids []int64) (map[int64]string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.asked++
	x.most = max(x.most, len(ids))
	out := map[int64]string{}
	for _, id := range ids {
		x.topAsk = max(x.topAsk, id)
		if k, ok := x.keys[scope][id]; ok {
			out[id] = k
		}
	}
	return out, nil
}

// boundedIndex is a pageIndex that tells the largest id it holds of a
// scope (sources.RowIDBound), counting the questions.
type boundedIndex struct {
	*pageIndex
	bounds int
}

func (x *boundedIndex) MaxRowID(_ context.Context, scope string) (int64, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.bounds++
	var top int64
	for id := range x.keys[scope] {
		top = max(top, id)
	}
	return top, nil
}

func readIndexed(t *testing.T, src *grist.Source, cursor string, idx sources.RowIndex) listing {
	t.Helper()
	return collect(t, src.ReadIndexed(t.Context(), cursor, idx))
}

// indexOf is a pageIndex holding the origins of l's records.
func indexOf(l listing) *pageIndex {
	idx := &pageIndex{keys: map[string]map[int64]string{}}
	for _, r := range l.records {
		o := r.Origin
		if idx.keys[o.Scope] == nil {
			idx.keys[o.Scope] = map[int64]string{}
		}
		idx.keys[o.Scope][o.ID] = r.Key
	}
	return idx
}

// codesDoc is a table keyed by code, 60 rows on pages of 7, with a Ref to
// itself (parent) and one from another table (Items.code):
//   - row 1's parent is row 55 (page 8), row 12's row 3 (page 1);
//   - row 20's parent is row 21, whose code is empty (no key: no link),
//     row 22's is row 999 (no such row: no link);
//   - rows 40 and 58 repeat row 2's code, row 44 repeats row 43's (the same
//     page);
//   - Items row 1 refers to row 59, row 2 to row 40 (a repeat: the key
//     it holds is row 2's).
func codesDoc(t *testing.T) *gristtest.Server {
	s := gristtest.New(t)
	s.AddTable("Codes", gristtest.Column{ID: "code", Type: "Text"}, gristtest.Column{ID: "parent", Type: "Ref:Codes"})
	var rows []map[string]any
	for id := int64(1); id <= 60; id++ {
		rows = append(rows, map[string]any{"code": fmt.Sprintf("c%02d", id), "parent": int64(0)})
	}
	s.AddRows("Codes", rows...)
	s.UpdateRows("Codes", map[int64]map[string]any{
		1: {"parent": int64(55)}, 12: {"parent": int64(3)}, 20: {"parent": int64(21)}, 21: {"code": ""},
		22: {"parent": int64(999)}, 40: {"code": "c02"}, 58: {"code": "c02"}, 44: {"code": "c43"},
	})
	s.AddTable("Items", gristtest.Column{ID: "name", Type: "Text"}, gristtest.Column{ID: "code", Type: "Ref:Codes"})
	s.AddRows("Items", map[string]any{"name": "a", "code": int64(59)}, map[string]any{"name": "b", "code": int64(40)})
	return s
}

// listCodes is codesDoc read in full through codesSource, without error.
func listCodes(t *testing.T) (*gristtest.Server, *grist.Source, listing) {
	t.Helper()
	s := codesDoc(t)
	src := codesSource(t, s)
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	return s, src, l
}

func codesSource(t *testing.T, s *gristtest.Server) *grist.Source {
	return newSource(t, s, func(c *grist.Config) {
		c.Tables = []string{"Items", "Codes"}
		c.KeyColumns = map[string]string{"Codes": "code"}
		c.PageSize = 7
	})
}

func linkOf(t *testing.T, r sources.Record) []string {
	t.Helper()
	var out []string
	for _, l := range r.Links {
		out = append(out, l.ToKey)
	}
	return out
}

// TestFullListingResolvesRefsPerPage: a full listing resolves a Ref to a
// row on a later page, to a row of a table listed after, and to a repeated
// key, as reading the key column whole did; a Ref to a row without a key
// or without a row makes no link and is counted.
func TestFullListingResolvesRefsPerPage(t *testing.T) {
	_, src, l := listCodes(t)
	require.False(t, l.partial)
	require.Equal(t, []string{"Codes:c55"}, linkOf(t, l.records["Codes:c01"]), "a row on a later page")
	require.Equal(t, []string{"Codes:c03"}, linkOf(t, l.records["Codes:c12"]))
	require.Empty(t, l.records["Codes:c20"].Links, "a row with an empty key")
	require.Empty(t, l.records["Codes:c22"].Links, "no such row")
	require.Equal(t, []string{"Codes:c59"}, linkOf(t, l.records["Items:1"]), "a table listed after")
	require.Equal(t, []string{"Codes:c02"}, linkOf(t, l.records["Items:2"]), "a repeated key: the key the row holds")
	require.Equal(t, int64(2), src.Stats().RefDangling)
}

// TestFullListingRepeatedKeys: a row repeating the key of an earlier row,
// pages before or on the same page, is a Skip naming the row and the key
// column; the first row is kept.
func TestFullListingRepeatedKeys(t *testing.T) {
	s, src, l := listCodes(t)
	require.Equal(t, int64(2), l.records["Codes:c02"].Origin.ID, "the first row keeps the key")
	require.Equal(t, int64(43), l.records["Codes:c43"].Origin.ID)
	var skipped []string
	for _, pg := range l.pages {
		for _, sk := range pg.Skipped {
			skipped = append(skipped, sk.Err.Error())
		}
	}
	require.Equal(t, []string{
		fmt.Sprintf("grist document %s table Codes row 21: key column code is empty or not a scalar", gristtest.DocID),
		fmt.Sprintf(`grist document %s table Codes row 40: key "c02" in column code repeats an earlier row`, gristtest.DocID),
		fmt.Sprintf(`grist document %s table Codes row 44: key "c43" in column code repeats an earlier row`, gristtest.DocID),
		fmt.Sprintf(`grist document %s table Codes row 58: key "c02" in column code repeats an earlier row`, gristtest.DocID),
	}, skipped)
	require.Equal(t, int64(3), src.Stats().DuplicateKeys)
	require.Len(t, l.records, 2+60-4)

	// Through /records (SQL refused): the same.
	s.SetFault(func(r *http.Request) (int, string) {
		if r.URL.Path == "/api/docs/"+gristtest.DocID+"/sql" {
			return http.StatusForbidden, "No view access"
		}
		return 0, ""
	})
	src = codesSource(t, s)
	l2 := readAll(t, src, "")
	require.NoError(t, l2.err)
	require.Equal(t, int64(3), src.Stats().DuplicateKeys)
	require.Equal(t, len(l.records), len(l2.records))
	require.Equal(t, []string{"Codes:c02"}, linkOf(t, l2.records["Items:2"]))
}

// TestFullListingRenamesPerPage: a full listing asks state for the stored
// keys of each page's rows only, and a key changed on a late page is still
// reported as renamed from the key state has for the row.
func TestFullListingRenamesPerPage(t *testing.T) {
	s, src, l := listCodes(t)
	idx := indexOf(l)
	s.UpdateRows("Codes", map[int64]map[string]any{52: {"code": "c52new"}, 3: {"code": "c03new"}})
	src = codesSource(t, s)
	s.ResetCounts()
	l2 := readIndexed(t, src, "", idx)
	require.NoError(t, l2.err)
	require.False(t, l2.partial)
	renamed := renamedIn(l2)
	require.Equal(t, map[string]string{"Codes:c52new": "Codes:c52", "Codes:c03new": "Codes:c03"}, renamed)
	require.Equal(t, []string{"Codes:c03new"}, linkOf(t, l2.records["Codes:c12"]), "a Ref follows the new key")
	// One question to state per page of rows (1 of Items, 9 of Codes), none
	// larger than a page.
	require.Equal(t, 10, idx.asked)
	require.Equal(t, 7, idx.most)
	// Requests: the schema, a /sql page per page of rows and one ending
	// each table, and at most one more per page for Ref keys and repeats.
	sqlReads := s.Requests(http.MethodPost, "/sql")
	require.LessOrEqual(t, sqlReads, 2*10+2, "%d /sql requests", sqlReads)
	t.Logf("%d /sql requests, %d requests in all", sqlReads, s.Requests("", ""))
}

// TestIncrementalAsksStatePerRow: an incremental read asks state for the
// rows it reads only, never a whole table: a changed key is renamed and
// the row referring to it relinked, and a Ref to a row state does not
// have (a repeated key, skipped) resolves through Grist.
func TestIncrementalAsksStatePerRow(t *testing.T) {
	s, src, l := listCodes(t)
	idx := indexOf(l)
	s.UpdateRows("Codes", map[int64]map[string]any{55: {"code": "c55z"}})
	s.UpdateRows("Items", map[int64]map[string]any{2: {"name": "bb"}})
	l2 := readIndexed(t, src, l.cursor, idx)
	require.NoError(t, l2.err)
	require.True(t, l2.partial)
	renamed := renamedIn(l2)
	require.Equal(t, map[string]string{"Codes:c55z": "Codes:c55"}, renamed)
	require.Equal(t, []string{"Codes:c55z"}, linkOf(t, l2.records["Codes:c01"]), "relinked to the new key")
	require.Equal(t, []string{"Codes:c02"}, linkOf(t, l2.records["Items:2"]))
	require.Len(t, l2.records, 3)
	require.LessOrEqual(t, idx.most, 7)
}

// TestFullListingAsksStateUpToItsBound: with an index that tells the
// largest row id it holds (sources.RowIDBound), a full listing asks state
// for the stored keys of rows up to that id only, once a table is asked
// the bound: a key changed on a row state holds is renamed, one changed
// on a row above the bound is new; a first sync (an empty index) asks for
// no row at all and lists what a listing without an index lists.
func TestFullListingAsksStateUpToItsBound(t *testing.T) {
	s, _, l := listCodes(t)
	// State holds Items and Codes rows 1–20 (as after a first sync cut
	// short).
	all := indexOf(l)
	idx := &boundedIndex{pageIndex: &pageIndex{keys: map[string]map[int64]string{}}}
	for scope, ids := range all.keys {
		idx.keys[scope] = map[int64]string{}
		for id, k := range ids {
			if !strings.HasPrefix(k, "Codes:") || id <= 20 {
				idx.keys[scope][id] = k
			}
		}
	}
	s.UpdateRows("Codes", map[int64]map[string]any{52: {"code": "c52new"}, 3: {"code": "c03new"}})
	l2 := readIndexed(t, codesSource(t, s), "", idx)
	require.NoError(t, l2.err)
	renamed := renamedIn(l2)
	require.Equal(t, map[string]string{"Codes:c03new": "Codes:c03"}, renamed, "row 52 is above the bound: not stored, so new")
	require.Contains(t, l2.records, "Codes:c52new")
	require.Equal(t, 2, idx.bounds, "one bound a table")
	// Items' one page, and the Codes pages holding rows 1–20 (1–7, 8–14,
	// 15–21); no row above 20 asked for.
	require.Equal(t, 4, idx.asked)
	require.LessOrEqual(t, idx.topAsk, int64(20))

	first := &boundedIndex{pageIndex: &pageIndex{keys: map[string]map[int64]string{}}}
	l3 := readIndexed(t, codesSource(t, s), "", first)
	require.NoError(t, l3.err)
	require.Zero(t, first.asked, "a first sync asks state for no row")
	plain := readAll(t, codesSource(t, s), "")
	require.NoError(t, plain.err)
	require.Equal(t, len(plain.records), len(l3.records))
	for k, r := range plain.records {
		require.Equal(t, r.Links, l3.records[k].Links, k)
		require.Equal(t, r.Origin, l3.records[k].Origin, k)
	}
}

// renamedIn is new key -> old key of every page of l (sources.Page.Renamed).
func renamedIn(l listing) map[string]string {
	renamed := map[string]string{}
	for _, pg := range l.pages {
		for k, v := range pg.Renamed {
			renamed[k] = v
		}
	}
	return renamed
}
