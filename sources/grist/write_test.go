package grist_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/sources/grist/gristtest"
)

func newWriter(t *testing.T, s *gristtest.Server) *grist.Writer {
	t.Helper()
	w, err := grist.NewWriter(grist.Config{Server: s.URL, DocID: gristtest.DocID, APIKey: gristtest.APIKey,
		RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}, nil)
	require.NoError(t, err)
	return w
}

// TestWriterBatchesWithinLimits writes 1,200 rows of about 2 KB: 2.4 MB in
// all, which Grist would refuse in one body (413 over 1 MiB). The Writer
// sends bodies under the cap and at most 500 rows each.
func TestWriterBatchesWithinLimits(t *testing.T) {
	s := gristtest.New(t)
	w := newWriter(t, s)
	ctx := t.Context()
	id, err := w.AddTable(ctx, "Elements", []grist.NewColumn{{ID: "text", Fields: map[string]any{"type": "Text"}}, {ID: "n", Fields: map[string]any{"type": "Int"}}})
	require.NoError(t, err)
	require.Equal(t, "Elements", id)
	rows := make([]map[string]any, 1200)
	for i := range rows {
		rows[i] = map[string]any{"text": strings.Repeat("é", 1000), "n": i}
	}
	ids, err := w.AddRecords(ctx, "Elements", rows)
	require.NoError(t, err)
	require.Len(t, ids, 1200)
	require.Equal(t, 1200, s.RowCount("Elements"))
	require.Zero(t, s.Responses(413))
	// 2 KB a row: 1,000,000 / ~2,030 bytes → 3 requests of ≤ 492 rows.
	require.Equal(t, 3, s.Requests("POST", "/records"))

	// PATCH groups rows by field set: two sets, two requests.
	err = w.UpdateRecords(ctx, "Elements", []grist.Row{
		{ID: ids[0], Fields: map[string]any{"text": "a"}},
		{ID: ids[1], Fields: map[string]any{"n": 7}},
		{ID: ids[2], Fields: map[string]any{"text": "c"}},
	})
	require.NoError(t, err)
	require.Equal(t, 2, s.Requests("PATCH", "/records"))
	got := s.Table("Elements")
	require.Equal(t, "c", got[ids[2]]["text"])
	require.Equal(t, int64(7), got[ids[1]]["n"])

	// A row deleted meanwhile: PATCH answers 400 Invalid row id.
	require.NoError(t, w.DeleteRecords(ctx, "Elements", ids[:1]))
	err = w.UpdateRecords(ctx, "Elements", []grist.Row{{ID: ids[0], Fields: map[string]any{"text": "x"}}})
	require.Equal(t, ids[0], grist.InvalidRowID(err))

	// A single row over the cap is refused before anything is sent.
	_, err = w.AddRecords(ctx, "Elements", []map[string]any{{"text": strings.Repeat("x", grist.MaxWriteBytes)}})
	require.ErrorContains(t, err, "more than the 1000000 bytes")
}

// TestWriterRetriesOnlyWhatIsSafe: a 429 is retried for every call (Grist
// refuses it before doing anything); a 500 after a POST is not (it may
// have added the rows), after a PATCH it is.
func TestWriterRetriesOnlyWhatIsSafe(t *testing.T) {
	s := gristtest.New(t)
	s.AddTable("T", gristtest.Column{ID: "a", Type: "Text"})
	w := newWriter(t, s)
	ctx := t.Context()
	s.Inject429(2)
	ids, err := w.AddRecords(ctx, "T", []map[string]any{{"a": "x"}})
	require.NoError(t, err)
	require.Len(t, ids, 1)

	fails := 1
	s.SetFault(func(r *http.Request) (int, string) {
		if fails > 0 && strings.HasSuffix(r.URL.Path, "/records") {
			fails--
			return 500, "boom"
		}
		return 0, ""
	})
	_, err = w.AddRecords(ctx, "T", []map[string]any{{"a": "y"}})
	require.ErrorContains(t, err, "HTTP 500")
	require.Equal(t, 1, s.RowCount("T"))

	fails = 1
	require.NoError(t, w.UpdateRecords(ctx, "T", []grist.Row{{ID: ids[0], Fields: map[string]any{"a": "z"}}}))
	require.Equal(t, "z", s.Table("T")[ids[0]]["a"])
}
