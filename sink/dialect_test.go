package sink

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMemgraphParseIndexes(t *testing.T) {
	t.Parallel()
	// Rows shaped as docs/memgraph.md §3 describes SHOW INDEX INFO: a label
	// index has a null property, label+property has a list of strings from
	// 3.2 on and a plain string before, composites list several, vector
	// indexes are listed too and must not count as label-property ones.
	fields := []string{"index type", "label", "property", "count"}
	rows := [][]any{
		{"label", "Doc", nil, int64(3)},
		{"label+property", "Doc", []any{"id"}, int64(3)},
		{"label+property", "Chunk", "id", int64(9)},
		{"label+property", "Doc", []any{"tenant", "id"}, int64(3)},
		{"label+property_vector", ":Chunk", []any{"embedding"}, int64(9)},
		{"edge-type+property", "NEXT", "w", int64(1)},
	}
	got, err := Memgraph.ParseIndexes(fields, rows)
	require.NoError(t, err)
	require.Equal(t, []Index{{Label: "Doc", Property: "id"}, {Label: "Chunk", Property: "id"}}, got)

	// Pre-2.12 servers have no count column; it is not needed.
	got, err = Memgraph.ParseIndexes(fields[:3], [][]any{{"label+property", "Doc", "id"}})
	require.NoError(t, err)
	require.Equal(t, []Index{{Label: "Doc", Property: "id"}}, got)

	_, err = Memgraph.ParseIndexes([]string{"label"}, nil)
	require.ErrorContains(t, err, `no column "index type"`)
	_, err = Memgraph.ParseIndexes(fields, [][]any{{"label+property"}})
	require.ErrorContains(t, err, "row 0 has 1 values")
}

func TestMemgraphParseVectorIndexes(t *testing.T) {
	t.Parallel()
	// Columns of SHOW VECTOR INDEX INFO (docs/memgraph.md §4); labels are
	// shown as ":L" from 3.11 and "L" before.
	fields := []string{"index_name", "label", "property", "capacity", "dimension", "metric", "size", "scalar_kind", "index_type"}
	rows := [][]any{
		{"chunk_embedding", ":Chunk", "embedding", int64(1024), int64(768), "cos", int64(10), "f32", "label+property_vector"},
		{"faq_q", "Faq", "question_embedding", int64(64), int64(3), "l2sq", int64(0), "f32", "label+property_vector"},
		{"rel_emb", ":MENTIONS", "embedding", int64(64), int64(3), "cos", int64(0), "f32", "edge-type+property_vector"},
	}
	got, err := Memgraph.ParseVectorIndexes(fields, rows)
	require.NoError(t, err)
	require.Equal(t, []VectorIndex{
		{Name: "chunk_embedding", Label: "Chunk", Property: "embedding", Dimension: 768, Metric: "cos", Capacity: 1024},
		{Name: "faq_q", Label: "Faq", Property: "question_embedding", Dimension: 3, Metric: "l2sq", Capacity: 64},
	}, got)

	// 3.1-3.3 have no index_type / scalar_kind.
	got, err = Memgraph.ParseVectorIndexes(fields[:7], [][]any{{"v", "Chunk", "e", int64(64), int64(3), "angular", int64(0)}})
	require.NoError(t, err)
	require.Equal(t, []VectorIndex{{Name: "v", Label: "Chunk", Property: "e", Dimension: 3, Metric: "cos", Capacity: 64}}, got)

	_, err = Memgraph.ParseVectorIndexes(fields, [][]any{{"v", "Chunk", "e", int64(64), "three", "cos", int64(0), "f32", ""}})
	require.ErrorContains(t, err, "row 0")
}

func TestNeo4jParseIndexes(t *testing.T) {
	t.Parallel()
	// Columns of Neo4j 5 SHOW INDEXES (docs/memgraph.md §10).
	fields := []string{"name", "type", "entityType", "labelsOrTypes", "properties", "options"}
	rows := [][]any{
		{"index_1", "RANGE", "NODE", []any{"Doc"}, []any{"id"}, map[string]any{}},
		{"index_2", "RANGE", "RELATIONSHIP", []any{"NEXT"}, []any{"w"}, map[string]any{}},
		{"lookup", "LOOKUP", "NODE", nil, nil, map[string]any{}},
		{"chunk_embedding", "VECTOR", "NODE", []any{"Chunk"}, []any{"embedding"}, map[string]any{
			"indexProvider": "vector-2.0",
			"indexConfig":   map[string]any{"vector.dimensions": int64(768), "vector.similarity_function": "COSINE"},
		}},
	}
	ix, err := Neo4j.ParseIndexes(fields, rows)
	require.NoError(t, err)
	require.Equal(t, []Index{{Label: "Doc", Property: "id"}}, ix)
	vi, err := Neo4j.ParseVectorIndexes(fields, rows)
	require.NoError(t, err)
	require.Equal(t, []VectorIndex{{Name: "chunk_embedding", Label: "Chunk", Property: "embedding", Dimension: 768, Metric: "cos"}}, vi)
}

func TestDialectByName(t *testing.T) {
	t.Parallel()
	d, err := DialectByName("memgraph")
	require.NoError(t, err)
	require.Equal(t, Memgraph, d)
	d, err = DialectByName("neo4j")
	require.NoError(t, err)
	require.Equal(t, Neo4j, d)
	_, err = DialectByName("postgres")
	require.ErrorContains(t, err, `unknown dialect "postgres"`)
}

func TestDialectRejectsInvalidNames(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{Memgraph, Neo4j} {
		_, err := d.CreateIndex(Index{Label: "a;b", Property: "id"})
		require.ErrorContains(t, err, `"a;b"`)
		_, err = d.DropVectorIndex("x\ny")
		require.Error(t, err)
		_, err = d.RemoveVectorProperty("C", "", "docs", 0, 10)
		require.Error(t, err)
		_, err = d.RemoveVectorProperty("C", "embedding", "", 0, 10)
		require.Error(t, err, "a removal needs its owning pipeline")
		_, err = d.CountVectors("C", "embedding", "a`b\x00")
		require.Error(t, err)
		_, err = d.VectorSearch("idx", "docs", 0, 0, []float32{1})
		require.ErrorContains(t, err, "k = 0")
		_, err = d.VectorSearch("idx", "docs", 3, 0, nil)
		require.ErrorContains(t, err, "empty query vector")
	}
}

func TestTextIndexStatements(t *testing.T) {
	t.Parallel()
	ti := TextIndex{Name: "chunk_lex", Label: "Chunk", Properties: []string{"lex"}}
	st, err := Memgraph.CreateTextIndex(ti)
	require.NoError(t, err)
	require.Equal(t, "CREATE TEXT INDEX `chunk_lex` ON :`Chunk`(`lex`)", st.Query)
	st, err = Neo4j.CreateTextIndex(ti)
	require.NoError(t, err)
	require.Equal(t, "CREATE FULLTEXT INDEX `chunk_lex` IF NOT EXISTS FOR (n:`Chunk`) ON EACH [n.`lex`]", st.Query)

	// Memgraph's query names the property under "data." (Tantivy's JSON
	// field, docs/memgraph.md §8); terms are OR-ed, so scores are BM25 sums.
	// A text index holds every pipeline's nodes: the pipeline's are kept
	// after the call, and the answer says how many the index yielded.
	st, err = Memgraph.TextSearch("chunk_lex", "lex", "docs", []string{"proxi", "заголовк"}, 40)
	require.NoError(t, err)
	require.Equal(t, "CALL text_search.search($index, $query, {limit: $limit}) YIELD node, score "+
		"WITH count(node) AS fetched, collect(CASE WHEN node._pipeline = $pipeline THEN [node.id, score] END) AS hits RETURN fetched, hits", st.Query)
	require.Equal(t, map[string]any{"index": "chunk_lex", "query": "data.lex:proxi OR data.lex:заголовк", "limit": int64(40), "pipeline": "docs"}, st.Params)
	st, err = Neo4j.TextSearch("chunk_lex", "lex", "docs", []string{"proxi", "7231"}, 5)
	require.NoError(t, err)
	require.Equal(t, "proxi OR 7231", st.Params["query"])
	require.Equal(t, "CALL db.index.fulltext.queryNodes($index, $query, {limit: $limit}) YIELD node, score "+
		"WITH count(node) AS fetched, collect(CASE WHEN node._pipeline = $pipeline THEN [node.id, score] END) AS hits RETURN fetched, hits", st.Query)

	for _, d := range []Dialect{Memgraph, Neo4j} {
		_, err = d.TextSearch("chunk_lex", "lex", "docs", []string{"a:b"}, 5)
		require.ErrorContains(t, err, `term "a:b" is not a word`, "query syntax must not reach the engine")
		_, err = d.TextSearch("chunk_lex", "lex", "docs", nil, 5)
		require.ErrorContains(t, err, "no terms")
		_, err = d.TextSearch("chunk_lex", "lex", "", []string{"x"}, 5)
		require.Error(t, err, "a text search names its pipeline")
		_, err = d.TextSearch("chunk_lex", "lex", "docs", []string{"x"}, 0)
		require.ErrorContains(t, err, "limit = 0")
		_, err = d.CreateTextIndex(TextIndex{Name: "x", Label: "Chunk"})
		require.ErrorContains(t, err, "no properties")
	}
	require.Error(t, Schema{TextIndexes: []TextIndex{{Name: "a\nb", Label: "L", Properties: []string{"p"}}}}.Validate())

	// SHOW INDEX INFO lists a text index as "label_text (name: …)" with its
	// label and property list (Memgraph 3.6+, src/query/interpreter.cpp).
	got, err := Memgraph.ParseTextIndexes([]string{"index type", "label", "property", "count"}, [][]any{
		{"label+property", "Chunk", []any{"id"}, int64(3)},
		{"label_text (name: chunk_lex)", "Chunk", []any{"lex"}, int64(3)},
	})
	require.NoError(t, err)
	require.Equal(t, []TextIndex{ti}, got)
	got, err = Neo4j.ParseTextIndexes([]string{"name", "type", "entityType", "labelsOrTypes", "properties", "options"}, [][]any{
		{"chunk_lex", "FULLTEXT", "NODE", []any{"Chunk"}, []any{"lex"}, map[string]any{}},
		{"i", "RANGE", "NODE", []any{"Chunk"}, []any{"id"}, map[string]any{}},
	})
	require.NoError(t, err)
	require.Equal(t, []TextIndex{ti}, got)
}
