package grist_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

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
