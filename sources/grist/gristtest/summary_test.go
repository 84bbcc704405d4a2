package gristtest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

type compareBody struct {
	Details struct {
		RightChanges struct {
			TableRenames [][]any `json:"tableRenames"`
			TableDeltas  map[string]struct {
				AddRows, UpdateRows, RemoveRows []int64
				ColumnDeltas                    map[string]map[string][]any
				ColumnRenames                   [][]any
				MayBeIncomplete                 bool
			}
		}
	}
}

func compareSince(t *testing.T, s *Server, h string) compareBody {
	t.Helper()
	code, body, _ := call(t, s, "GET", "/compare?left="+h+"&right=HEAD", "", nil)
	require.Equal(t, 200, code, body)
	var res compareBody
	require.NoError(t, json.Unmarshal([]byte(body), &res))
	return res
}

// TestCompareSummarisesSchemaChanges follows grist-core's ActionSummary
// (app/common/ActionSummary.ts, ActionSummarizer.ts): renames are
// [before, after] pairs with null for an addition or removal, chained
// renames compose, deltas are keyed by the final names and removed ones
// by "-name".
func TestCompareSummarisesSchemaChanges(t *testing.T) {
	s := New(t)
	s.AddTable("FAQ", Column{ID: "question"}, Column{ID: "answer"}, Column{ID: "old"})
	s.AddTable("Gone", Column{ID: "x"})
	ids := s.AddRows("FAQ", map[string]any{"question": "q1", "answer": "a1", "old": "o1"})
	s.AddRows("Gone", map[string]any{"x": "1"})
	h := s.Head()

	s.RenameColumn("FAQ", "question", "q")
	s.RenameColumn("FAQ", "q", "question_text")
	s.UpdateRows("FAQ", map[int64]map[string]any{ids[0]: {"question_text": "q1b"}})
	s.RemoveColumn("FAQ", "old")
	s.AddColumn("FAQ", Column{ID: "note"}, map[int64]any{ids[0]: "n"})
	s.RenameTable("FAQ", "FAQs")
	s.RemoveTable("Gone")

	rc := compareSince(t, s, h).Details.RightChanges
	require.Equal(t, [][]any{{"FAQ", "FAQs"}, {"Gone", nil}}, rc.TableRenames)
	d, ok := rc.TableDeltas["FAQs"]
	require.True(t, ok, "deltas are keyed by the table's final name")
	require.Equal(t, [][]any{{"question", "question_text"}, {"old", nil}, {nil, "note"}}, d.ColumnRenames)
	require.Equal(t, []any{[]any{"q1"}, []any{"q1b"}}, d.ColumnDeltas["question_text"]["1"])
	require.Equal(t, []any{[]any{"o1"}, nil}, d.ColumnDeltas["-old"]["1"], "a removed column's old values under its defunct name")
	require.Equal(t, []int64{1}, d.UpdateRows)
	g, ok := rc.TableDeltas["-Gone"]
	require.True(t, ok, "a removed table's deltas under -name")
	require.Equal(t, []int64{1}, g.RemoveRows)
}

// TestCompareDropsBulkCellValues: of a change to more than 10 rows the
// summary keeps the cells of the first 9 and the last row only, and says
// so (mayBeIncomplete); every row id is still listed.
func TestCompareDropsBulkCellValues(t *testing.T) {
	s := New(t)
	s.AddTable("T", Column{ID: "k"})
	var rows []map[string]any
	for i := range 12 {
		rows = append(rows, map[string]any{"k": string(rune('a' + i))})
	}
	ids := s.AddRows("T", rows...)
	h := s.Head()
	up := map[int64]map[string]any{}
	for _, id := range ids {
		up[id] = map[string]any{"k": "z"}
	}
	s.UpdateRows("T", up)
	d := compareSince(t, s, h).Details.RightChanges.TableDeltas["T"]
	require.Len(t, d.UpdateRows, 12)
	require.True(t, d.MayBeIncomplete)
	require.Len(t, d.ColumnDeltas["k"], 10)
	require.NotContains(t, d.ColumnDeltas["k"], "10")
	require.Contains(t, d.ColumnDeltas["k"], "12")

	h = s.Head()
	s.UpdateRows("T", map[int64]map[string]any{ids[9]: {"k": "y"}})
	d = compareSince(t, s, h).Details.RightChanges.TableDeltas["T"]
	require.False(t, d.MayBeIncomplete)
	require.Equal(t, []any{[]any{"z"}, []any{"y"}}, d.ColumnDeltas["k"]["10"])
}
