//go:build grammar

package grammartest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/cypherl"
)

// cypherlStatements writes a pipeline's CYPHERL for Memgraph version
// (indexes, text index, a vector index whose dimension changes, a batch
// of every statement kind) and returns every line without its ';'.
func cypherlStatements(t *testing.T, version string) []string {
	t.Helper()
	dir := t.TempDir()
	s, err := cypherl.New(dir, "docs", sink.Memgraph, cypherl.WithMemgraphVersion(version))
	require.NoError(t, err)
	sch := sink.Schema{
		Indexes:       []sink.Index{{Label: "Document", Property: "id"}, {Label: "Chunk", Property: "id"}},
		TextIndexes:   []sink.TextIndex{{Name: "chunk_lex", Label: "Chunk", Properties: []string{"lex"}}},
		VectorIndexes: []sink.VectorIndex{{Name: "chunk_embedding", Label: "Chunk", Property: "embedding", Dimension: 3}},
	}
	doc, chunk := sink.NodeRef{Label: "Document", ID: "a.md"}, sink.NodeRef{Label: "Chunk", ID: "a.md#0"}
	for run, dim := range []int{3, 4} {
		require.NoError(t, s.Begin(int64(run+1)))
		sch.VectorIndexes[0].Dimension = dim
		_, err := s.Ensure(t.Context(), sch)
		require.NoError(t, err)
		_, err = s.Write(t.Context(), &sink.Batch{
			DeleteNodes: []sink.NodeRef{{Label: "Chunk", ID: "old"}},
			DeleteEdges: []sink.EdgeRef{{Type: "CROSS_REF", From: chunk, To: doc, Key: "k"}, {Type: "NEXT", From: chunk, To: chunk}},
			NodeUpserts: []sink.NodeUpsert{
				{Label: "Document", ID: "a.md", Props: map[string]any{"title": `it's "quoted"; \ `, "n": int64(1), "gone": nil}},
				{Label: "Chunk", ID: "a.md#0", Props: map[string]any{"embedding": make([]float32, dim), "lex": "word", "meta": map[string]any{"k": []any{1.5, true}}}},
			},
			EdgeUpserts: []sink.EdgeUpsert{
				{Type: "PART_OF", From: chunk, To: doc},
				{Type: "CROSS_REF", From: chunk, To: doc, Key: "k", Props: map[string]any{"text": "see"}},
				{Type: "HAS", From: doc, To: chunk, Props: map[string]any{"position": int64(0)}},
			},
			EdgePrunes:    []sink.EdgePrune{{Type: "HAS", From: doc, ToLabel: "Chunk", Keep: []string{"a.md#0"}}},
			DeleteOrphans: []sink.NodeRef{{Label: "Document", ID: "b.md"}},
		})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close(t.Context()))
	names, err := filepath.Glob(filepath.Join(dir, "docs", "*.cypherl"))
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		data, err := os.ReadFile(n)
		require.NoError(t, err)
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			out = append(out, strings.TrimSuffix(l, ";"))
		}
	}
	return out
}

// boltStatements are the texts the Bolt sink sends besides the batch
// statements (which are cypherlStatements' with parameters).
func boltStatements(t *testing.T) []string {
	t.Helper()
	d := sink.Memgraph
	var out []string
	add := func(st sink.Statement, err error) {
		require.NoError(t, err)
		out = append(out, st.Query)
	}
	add(d.CreateIndex(sink.Index{Label: "Chunk", Property: "id"}))
	add(d.CreateVectorIndex(sink.VectorIndex{Name: "chunk_embedding", Label: "Chunk", Property: "embedding", Dimension: 3}))
	add(d.DropVectorIndex("chunk_embedding"))
	add(d.RemoveVectorProperty("Chunk", "embedding", "docs", 3, 100))
	add(d.CountVectors("Chunk", "embedding", "docs"))
	add(d.ShowVersion(), nil)
	add(d.ShowIndexes(), nil)
	add(d.ShowVectorIndexes(), nil)
	add(d.VectorSearch("chunk_embedding", "docs", 5, 20, []float32{1, 0, 0}))
	out = append(out,
		"CREATE (a:`kgsync_probe`)-[e:`kgsync_probe`]->(b:`kgsync_probe`) SET e.`probe` = true DETACH DELETE a, b",
		"MATCH (n:`kgsync_probe`) DETACH DELETE n")
	return out
}

// TestKgsyncStatementsParse: every statement kgsync sends or writes for
// a row of sink.MemgraphRanges parses with the grammar of each release
// of that row (docs/memgraph-support.md), and the property-list text
// index of the rows with text indexes does not parse before 3.5.
func TestKgsyncStatementsParse(t *testing.T) {
	tags := map[int]string{1: "v3.1.0", 2: "v3.2.0", 3: "v3.3.0", 4: "v3.4.0", 5: "v3.5.0", 6: "v3.6.0", 7: "v3.7.0",
		8: "v3.8.0", 9: "v3.9.0", 10: "v3.10.0", 11: "v3.11.0", 12: "v3.12.0"}
	bolt := boltStatements(t)
	for _, row := range sink.MemgraphRanges {
		if !row.Supported {
			continue
		}
		stmts := append(cypherlStatements(t, "3."+strconv.Itoa(row.MinMinor)), bolt...)
		if row.TextIndexes {
			for _, call := range []string{"{limit: $limit}", "$limit"} {
				st, err := sink.Memgraph.TextSearch("chunk_lex", "lex", "docs", []string{"word"}, 5)
				require.NoError(t, err)
				stmts = append(stmts, strings.Replace(st.Query, "{limit: $limit}", call, 1))
			}
		}
		maxMinor := row.MaxMinor
		if maxMinor < 0 {
			maxMinor = 12
		}
		for minor := row.MinMinor; minor <= maxMinor; minor++ {
			p := Open(t, tags[minor])
			for i, err := range p.Check(t, stmts) {
				require.NoError(t, err, "%s: %s", row.Versions(), stmts[i])
			}
		}
	}
	text := slices.DeleteFunc(cypherlStatements(t, "3.6"), func(s string) bool { return !strings.HasPrefix(s, "CREATE TEXT INDEX") })
	require.Len(t, text, 1)
	for minor := 1; minor <= 4; minor++ {
		errs := Open(t, tags[minor]).Check(t, text)
		require.Error(t, errs[0], "%s accepts %s", tags[minor], text[0])
	}
	require.NoError(t, Open(t, tags[5]).Check(t, text)[0], "the property list is grammar from 3.5 (the server refuses it without the flag)")
}
