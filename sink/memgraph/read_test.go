package memgraph

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/bolttest"
	"github.com/kgsync/kgsync/sink"
)

// readModel is a small graph the Bolt test server answers the read queries
// from, by interpreting their text with the patterns below: the test fails
// if read.go sends a query shape the model does not know.
type readModel struct {
	mu    sync.Mutex
	nodes []modelNode
}

type modelNode struct {
	labels []string
	props  map[string]any
}

var (
	reNodeProps = regexp.MustCompile("^MATCH \\(n:`((?:[^`]|``)+)`\\) WHERE n\\.id IN \\$ids AND n\\._pipeline = \\$pipeline RETURN n\\.id AS id((?:, n\\.`(?:[^`]|``)+` AS p\\d+)*)$")
	reRetProp   = regexp.MustCompile("n\\.`((?:[^`]|``)+)` AS p\\d+")
	reByProp    = regexp.MustCompile("^MATCH \\(n\\) WHERE n\\.`((?:[^`]|``)+)` IN \\$values AND n\\._pipeline = \\$pipeline UNWIND labels\\(n\\) AS label RETURN label, (count\\(\\*\\) AS n|n\\.id AS id ORDER BY label, id)$")
)

func unquote(s string) string { return strings.ReplaceAll(s, "``", "`") }

func anyStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

func (m *readModel) respond(q bolttest.Query) ([]string, [][]any, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := reNodeProps.FindStringSubmatch(q.Text); g != nil {
		label := unquote(g[1])
		var props []string
		for _, p := range reRetProp.FindAllStringSubmatch(g[2], -1) {
			props = append(props, unquote(p[1]))
		}
		ids := anyStrings(q.Params["ids"])
		fields := []string{"id"}
		for i := range props {
			fields = append(fields, "p"+string(rune('0'+i)))
		}
		var rows [][]any
		for _, n := range m.nodes {
			id, _ := n.props["id"].(string)
			if !slices.Contains(n.labels, label) || !slices.Contains(ids, id) {
				continue
			}
			row := []any{id}
			for _, p := range props {
				row = append(row, n.props[p])
			}
			rows = append(rows, row)
		}
		return fields, rows, true
	}
	if g := reByProp.FindStringSubmatch(q.Text); g != nil {
		prop, values := unquote(g[1]), anyStrings(q.Params["values"])
		counts := map[string]int64{}
		var refs [][]any
		for _, n := range m.nodes {
			v, ok := n.props[prop].(string)
			if !ok || !slices.Contains(values, v) {
				continue
			}
			for _, l := range n.labels {
				counts[l]++
				refs = append(refs, []any{l, n.props["id"]})
			}
		}
		if strings.HasPrefix(g[2], "count") {
			var rows [][]any
			for l, c := range counts {
				rows = append(rows, []any{l, c})
			}
			return []string{"label", "n"}, rows, true
		}
		return []string{"label", "id"}, refs, true
	}
	if q.Text == "SHOW VECTOR INDEX INFO" {
		return []string{"index_name", "label", "property", "capacity", "dimension", "metric", "size"},
			[][]any{{"chunk_embedding", ":Chunk", "embedding", int64(1000), int64(64), "cos", int64(3)}}, true
	}
	return nil, nil, false
}

func readSetup(t *testing.T) (*testBundle, *readModel) {
	t.Helper()
	tb := setup(t, nil)
	m := &readModel{nodes: []modelNode{
		{[]string{"Doc"}, map[string]any{"id": "d1", "_pipeline": "docs", "_hash": "00000000000000aa"}},
		{[]string{"Doc"}, map[string]any{"id": "d2", "_pipeline": "docs"}},
		{[]string{"Doc"}, map[string]any{"id": "x1", "_pipeline": "other", "_hash": "1"}},
		{[]string{"Chunk"}, map[string]any{"id": "d1#0", "document": "d1", "_hash": "b0", "text": "first"}},
		{[]string{"Chunk"}, map[string]any{"id": "d1#1", "document": "d1", "_hash": "b1", "text": "second"}},
		{[]string{"Section"}, map[string]any{"id": "d1 › 1", "document": "d1"}},
		{[]string{"Odd`Label"}, map[string]any{"id": "q1", "_pipeline": "docs"}},
	}}
	tb.srv.Respond(m.respond)
	return tb, m
}

func TestNodeProps(t *testing.T) {
	tb, _ := readSetup(t)
	got, err := tb.sink.NodeProps(t.Context(), "Doc", []string{"d1", "d2", "gone"}, []string{"_hash", "title"})
	require.NoError(t, err)
	// d2 has no _hash: absent from its map; "gone" has no node: absent.
	require.Equal(t, map[string]map[string]any{"d1": {"_hash": "00000000000000aa"}, "d2": {}}, got)

	got, err = tb.sink.NodeProps(t.Context(), "Odd`Label", []string{"q1"}, []string{"_pipeline"})
	require.NoError(t, err)
	require.Equal(t, map[string]map[string]any{"q1": {"_pipeline": "docs"}}, got)

	qs := tb.srv.Queries()
	require.Len(t, qs, 2)
	require.Equal(t, "MATCH (n:`Doc`) WHERE n.id IN $ids AND n._pipeline = $pipeline RETURN n.id AS id, n.`_hash` AS p0, n.`title` AS p1", qs[0].Text)
	require.Equal(t, []any{"d1", "d2", "gone"}, qs[0].Params["ids"])
	require.Equal(t, "MATCH (n:`Odd``Label`) WHERE n.id IN $ids AND n._pipeline = $pipeline RETURN n.id AS id, n.`_pipeline` AS p0", qs[1].Text)
}

func TestCountAndListByProperty(t *testing.T) {
	tb, _ := readSetup(t)
	counts, err := tb.sink.CountBy(t.Context(), "_pipeline", []string{"docs"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"Doc": 2, "Odd`Label": 1}, counts)
	counts, err = tb.sink.CountBy(t.Context(), "document", []string{"d1", "d2"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"Chunk": 2, "Section": 1}, counts)

	refs, err := tb.sink.NodesBy(t.Context(), "_pipeline", []string{"docs"})
	require.NoError(t, err)
	require.Equal(t, []sink.NodeRef{{Label: "Doc", ID: "d1"}, {Label: "Doc", ID: "d2"}, {Label: "Odd`Label", ID: "q1"}}, refs)

	vis, err := tb.sink.VectorIndexes(t.Context())
	require.NoError(t, err)
	require.Equal(t, []sink.VectorIndex{{Name: "chunk_embedding", Label: "Chunk", Property: "embedding",
		Dimension: 64, Capacity: 1000, Metric: "cos"}}, vis)
}

func TestReadRejectsUnsafeNames(t *testing.T) {
	tb, _ := readSetup(t)
	for _, name := range []string{"a;b", "a'b", "a\"b", "a\nb", "a\u2028b", ""} {
		_, err := tb.sink.NodeProps(t.Context(), name, []string{"x"}, nil)
		require.ErrorContains(t, err, "invalid name", "%q", name)
		_, err = tb.sink.NodeProps(t.Context(), "Doc", []string{"x"}, []string{name})
		require.ErrorContains(t, err, "invalid name", "%q", name)
		_, err = tb.sink.CountBy(t.Context(), name, []string{"x"})
		require.ErrorContains(t, err, "invalid name", "%q", name)
		_, err = tb.sink.NodesBy(t.Context(), name, []string{"x"})
		require.ErrorContains(t, err, "invalid name", "%q", name)
	}
	require.Empty(t, tb.srv.Queries(), "nothing is sent for an unsafe name")
}

func TestReadReportsQueryErrors(t *testing.T) {
	tb, _ := readSetup(t)
	tb.srv.FailNext(1, func(string) bool { return true }, bolttest.Failure{Code: bolttest.CodeClient, Message: "boom"})
	_, err := tb.sink.CountBy(t.Context(), "_pipeline", []string{"docs"})
	require.ErrorContains(t, err, "boom")
}
