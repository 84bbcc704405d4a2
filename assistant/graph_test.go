package assistant_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/assistant"
	"github.com/kgsync/kgsync/internal/bolttest"
)

// TestRowsOnGraph runs rows on a Memgraph sink: the count and list queries
// go to the server in read transactions, scoped to the pipeline and
// without placeholders, and the answers map to rows with their via edges.
func TestRowsOnGraph(t *testing.T) {
	srv, a, _ := serveGraph(t, assistant.Options{})
	srv.Answer(func(q bolttest.Query) (bolttest.Answer, bool) {
		switch {
		case strings.HasSuffix(q.Text, "RETURN count(x) AS total"):
			return bolttest.Answer{Fields: []string{"total"}, Rows: [][]any{{int64(2)}}, Type: "r"}, true
		case strings.Contains(q.Text, "AS via ORDER BY"):
			return bolttest.Answer{Fields: []string{"id", "props", "via"}, Rows: [][]any{
				{"guide:24", map[string]any{"title": "Edible fruit", "url": nil}, []any{map[string]any{"from": "hs_code:0702", "props": map[string]any{"fqcc": "0702000000", "_source_key": "heading_guide:2"}}}},
				{"guide:25", map[string]any{"title": "Other"}, []any{}},
			}, Type: "r"}, true
		}
		return bolttest.Answer{}, false
	})
	cs := connect(t, a)
	var out assistant.RowsOutput
	call(t, cs, "rows", map[string]any{"anchor": "cn_code",
		"filters": []map[string]any{{"attribute": "code", "op": "in", "values": []any{"0701", "0702"}}},
		"follow":  []map[string]any{{"link": "REQUIRES_GUIDE"}}}, &out)
	require.Equal(t, "graph", out.From)
	require.Equal(t, 2, out.Total)
	require.True(t, out.Complete)
	require.Equal(t, "guide:24", out.Rows[0].ID)
	require.Equal(t, map[string]any{"title": "Edible fruit"}, out.Rows[0].Props)
	require.Equal(t, []assistant.ViaEdge{{From: "hs_code:0702", Link: "REQUIRES_GUIDE", Props: map[string]any{"fqcc": "0702000000"}}}, out.Rows[0].Via)
	qs := srv.Queries()
	require.Len(t, qs, 2)
	for _, q := range qs {
		require.Equal(t, "tables", q.Params["pipeline"])
		require.Equal(t, "0701", q.Params["p0"])
		require.Equal(t, "0702", q.Params["p1"])
		require.Contains(t, q.Text, "MATCH (n0:`cn_code`) WHERE n0._pipeline = $pipeline AND n0._placeholder IS NULL AND (toString(n0.`code`) = $p0 OR toString(n0.`code`) = $p1)")
		require.Contains(t, q.Text, "MATCH (n0)-[r1:`REQUIRES_GUIDE`]->(n1:`guide`) WHERE n1._pipeline = $pipeline AND n1._placeholder IS NULL")
		require.Equal(t, "r", q.Meta["mode"])
		require.False(t, q.Committed)
	}
	require.Equal(t, int64(50), qs[1].Params["limit"])

	// The same call from state gives the same rows.
	call(t, cs, "rows", map[string]any{"anchor": "cn_code", "from": "state",
		"filters": []map[string]any{{"attribute": "code", "op": "in", "values": []any{"0701", "0702"}}},
		"follow":  []map[string]any{{"link": "REQUIRES_GUIDE"}}}, &out)
	require.Equal(t, "state", out.From)
	require.Equal(t, 1, out.Total)
	require.Equal(t, "guide:24", out.Rows[0].ID)
	require.Len(t, out.Rows[0].Via, 2)
}

// TestNeighborsOnGraph reads a node's edges from Memgraph.
func TestNeighborsOnGraph(t *testing.T) {
	srv, a, _ := serveGraph(t, assistant.Options{})
	srv.Answer(func(q bolttest.Query) (bolttest.Answer, bool) {
		if !strings.Contains(q.Text, "startNode(r) = n AS out") {
			return bolttest.Answer{}, false
		}
		return bolttest.Answer{Fields: []string{"type", "out", "id", "labels", "props", "text", "self"}, Rows: [][]any{
			{"REQUIRES_GUIDE", true, "guide:24", []any{"guide"}, map[string]any{"fqcc": "0701000000", "_source_key": "k"}, "Edible fruit", []any{"cn_code"}},
			{"PARENT", true, "hs_code:07", []any{"cn_code"}, map[string]any{}, "Edible vegetables", []any{"cn_code"}},
		}, Type: "r"}, true
	})
	cs := connect(t, a)
	var out assistant.NeighborsOutput
	call(t, cs, "neighbors", map[string]any{"id": "hs_code:0701"}, &out)
	require.Equal(t, "graph", out.From)
	require.Equal(t, "cn_code", out.Label)
	require.Equal(t, 2, out.Total)
	require.Equal(t, "PARENT", out.Edges[0].Type)
	require.Equal(t, map[string]any{"fqcc": "0701000000"}, out.Edges[1].Props)
	require.Equal(t, "hs_code:0701", srv.Queries()[0].Params["id"])
}

// TestEveryToolOnGraph calls the state-backed tools and search on a
// pipeline whose sink is Memgraph: search takes its vector hits from
// Memgraph's index, the others answer as on the default.
func TestEveryToolOnGraph(t *testing.T) {
	srv, a, _ := serveGraph(t, assistant.Options{})
	srv.Answer(func(q bolttest.Query) (bolttest.Answer, bool) {
		switch {
		case strings.Contains(q.Text, "vector_search.search") && q.Params["index"] == "faq_question_embedding":
			return bolttest.Answer{Fields: []string{"fetched", "hits"}, Rows: [][]any{{int64(1), []any{[]any{"faq:133", 0.9}}}}, Type: "r"}, true
		case strings.Contains(q.Text, "vector_search.search") || strings.Contains(q.Text, "text_search."):
			return bolttest.Answer{Fields: []string{"fetched", "hits"}, Rows: [][]any{{int64(0), []any{}}}, Type: "r"}, true
		}
		return bolttest.Answer{}, false
	})
	cs := connect(t, a)
	var out assistant.SearchOutput
	call(t, cs, "search", map[string]any{"query": "is a package from an affected area safe", "anchor": "faq", "attribute": "question"}, &out)
	require.NotEmpty(t, out.Hits, "%+v", out)
	require.Equal(t, "faq:133", out.Hits[0].ID)
	var sc assistant.SchemaOutput
	call(t, cs, "schema", map[string]any{}, &sc)
	require.Equal(t, "memgraph", sc.Pipelines[0].Sink)
	var tools []string
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	for _, tool := range res.Tools {
		tools = append(tools, tool.Name)
	}
	require.Contains(t, tools, "cypher")
	for _, q := range srv.Queries() {
		require.False(t, q.Committed && q.Tx != 0, q.Text)
	}
}
