package assistant_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/assistant"
)

// TestStructuredGoldenSet scores the tools on the quick start's structured
// golden questions (answers computed from tables/*.csv): rows gives the
// complete list and the right count for at least 95 % of them, and the
// search-only baselines are in the same report.
func TestStructuredGoldenSet(t *testing.T) {
	srv, _ := serve(t)
	path := filepath.Join(filepath.Dir(quickstart(t)), "golden-tables.jsonl")
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	qs, err := assistant.ReadQuestions(f, path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(qs), 25)
	rep, err := srv.Eval(context.Background(), "tables", qs)
	require.NoError(t, err)
	tools := map[string]assistant.ToolScore{}
	for _, ts := range rep.Tools {
		tools[ts.Tool] = ts
	}
	require.Len(t, tools, 3)
	rows := tools[assistant.ToolRows]
	require.GreaterOrEqual(t, rows.ExactList, 0.95, "%+v", rows)
	require.GreaterOrEqual(t, rows.Count, 0.95, "%+v", rows)
	for _, r := range rep.Results {
		if x, ok := r.Tools[assistant.ToolRows]; ok {
			require.Empty(t, x.Error, r.ID)
		}
	}
	// Search cannot list or count: far below rows.
	require.Less(t, tools[assistant.ToolSearch].Count, 0.5)
	require.Less(t, tools[assistant.ToolSearchRestricted].ExactList, 0.5)
	var b strings.Builder
	require.NoError(t, rep.WriteText(&b))
	require.Contains(t, b.String(), "search+anchor/attribute")
}

func TestReadQuestionsNamesBadLines(t *testing.T) {
	in := `{"id": "a", "question": "q", "kind": "list", "answers": [], "rows": {"anchor": "guide"}}
{"id": "a", "question": "q", "kind": "list", "answers": [], "rows": {"anchor": "guide"}}
{"id": "b", "question": "q", "kind": "count", "answers": []}
{"id": "c", "question": "q", "kind": "list", "answers": [], "rows": {"anchor": "guide", "where": 1}}
`
	qs, err := assistant.ReadQuestions(strings.NewReader(in), "g.jsonl")
	require.Len(t, qs, 1)
	require.ErrorContains(t, err, `g.jsonl:2: id "a" already used on line 1`)
	require.ErrorContains(t, err, "g.jsonl:3: a count question needs its rows call")
	require.ErrorContains(t, err, `g.jsonl:4: json: unknown field "where"`)
}
