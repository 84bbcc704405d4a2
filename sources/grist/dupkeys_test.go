package grist_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

// TestFullListingRepeatedDateKeys: a table keyed by a Date column whose
// rows 2 and 9 (another page) hold the same date: row 9 is a Skip, as for
// a Text key, through /sql and through /records.
func TestFullListingRepeatedDateKeys(t *testing.T) {
	s := gristtest.New(t)
	s.AddTable("Days", gristtest.Column{ID: "day", Type: "Date"}, gristtest.Column{ID: "n", Type: "Int"})
	for id := int64(1); id <= 10; id++ {
		d := float64(1699920000 + 86400*id) // midnights UTC
		if id == 9 {
			d = 1699920000 + 86400*2
		}
		s.AddRows("Days", map[string]any{"day": d, "n": id})
	}
	mk := func() *grist.Source {
		return newSource(t, s, func(c *grist.Config) {
			c.Tables = []string{"Days"}
			c.KeyColumns = map[string]string{"Days": "day"}
			c.PageSize = 7
		})
	}
	src := mk()
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.Equal(t, int64(1), src.Stats().DuplicateKeys, "through /sql")
	require.Len(t, l.records, 9)

	s.SetFault(func(r *http.Request) (int, string) {
		if r.URL.Path == "/api/docs/"+gristtest.DocID+"/sql" {
			return http.StatusForbidden, "No view access"
		}
		return 0, ""
	})
	src = mk()
	l = readAll(t, src, "")
	require.NoError(t, l.err)
	require.Equal(t, int64(1), src.Stats().DuplicateKeys, "through /records")
}

// TestFullListingRepeatedBoolKeys: a table keyed by a Bool column (two
// rows, the second repeating the first's value) lists one record and
// skips the other; the read does not fail.
func TestFullListingRepeatedBoolKeys(t *testing.T) {
	s := gristtest.New(t)
	s.AddTable("Flags", gristtest.Column{ID: "on", Type: "Bool"})
	s.AddRows("Flags", map[string]any{"on": true}, map[string]any{"on": true})
	src := newSource(t, s, func(c *grist.Config) {
		c.Tables = []string{"Flags"}
		c.KeyColumns = map[string]string{"Flags": "on"}
		c.PageSize = 7
	})
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.Equal(t, int64(1), src.Stats().DuplicateKeys)
}

// TestIncrementalKeyTakenFromAnotherRow: an edit that gives row 4 the key
// of row 3 is not a rename of row 4's record onto row 3's key: row 4 is a
// Skip (kept as it was) naming row 3, and row 3's record is untouched, as
// a full listing would have it.
func TestIncrementalKeyTakenFromAnotherRow(t *testing.T) {
	s := gristtest.New(t)
	s.AddTable("Codes", gristtest.Column{ID: "code"}, gristtest.Column{ID: "name"})
	for i := range 6 {
		s.AddRows("Codes", map[string]any{"code": fmt.Sprintf("C%d", i+1), "name": fmt.Sprintf("name %d", i+1)})
	}
	src := newSource(t, s, func(c *grist.Config) {
		c.Tables = []string{"Codes"}
		c.KeyColumns = map[string]string{"Codes": "code"}
	})
	l := readAll(t, src, "")
	require.NoError(t, l.err)
	require.Len(t, l.records, 6)

	s.UpdateRows("Codes", map[int64]map[string]any{4: {"code": "C3", "name": "was four"}})
	l2 := collect(t, src.ReadIndexed(t.Context(), l.cursor, indexOf(l)))
	require.NoError(t, l2.err)
	require.True(t, l2.partial)
	require.NotContains(t, l2.records, "Codes:C3", "row 3's record is not overwritten by row 4")
	var skipped []sources.Skip
	for _, pg := range l2.pages {
		skipped = append(skipped, pg.Skipped...)
		require.NotContains(t, pg.Renamed, "Codes:C3")
	}
	require.Len(t, skipped, 1)
	require.Equal(t, "Codes:C4", skipped[0].Key, "the row's record is kept as it was")
	require.ErrorContains(t, skipped[0].Err, "row 4")
	require.ErrorContains(t, skipped[0].Err, "row 3")
	require.Equal(t, int64(1), src.Stats().DuplicateKeys)
}
