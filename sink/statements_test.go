package sink

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// representativeBatch touches every kind of operation, several labels and
// edge types, a group larger than the statement size used in the golden
// test (2), and values of every supported type.
func representativeBatch() *Batch {
	return &Batch{
		DeleteNodes: []NodeRef{
			{Label: "Document", ID: "old.md"},
			{Label: "Chunk", ID: "old.md#0"},
			{Label: "Chunk", ID: "old.md#1"},
		},
		NodeUpserts: []NodeUpsert{
			{Label: "Document", ID: "guide.md", Props: map[string]any{
				"title": `Guide "v2"`, "pages": int64(3), "draft": false, "stale": nil, "_hash": "9f2c04aa",
			}},
			{Label: "Chunk", ID: "guide.md#0", Props: map[string]any{
				"text": "line 1\nline 2", "position": int64(0), "embedding": []float32{0.25, -1, 0.5},
			}},
			{Label: "Chunk", ID: "guide.md#1", Props: map[string]any{
				"text": "it's; done", "position": int64(1), "embedding": []float32{1, 0, -0.125},
				"tags": []string{"a", "b"},
			}},
			{Label: "Document", ID: "cited.md", Props: map[string]any{"_placeholder": true}, CreateOnly: true},
			{Label: "Chunk", ID: "guide.md#2", Props: map[string]any{
				"text": "tail", "position": int64(2), "embedding": []float32{0, 0, 1}, "score": 0.1,
				"mixed": []any{"x", int64(1), true},
			}},
		},
		EdgeUpserts: []EdgeUpsert{
			{Type: "NEXT", From: NodeRef{Label: "Chunk", ID: "guide.md#0"}, To: NodeRef{Label: "Chunk", ID: "guide.md#1"}},
			{Type: "HAS_CHUNK", From: NodeRef{Label: "Document", ID: "guide.md"}, To: NodeRef{Label: "Chunk", ID: "guide.md#0"},
				Props: map[string]any{"position": int64(0)}},
			{Type: "HAS_CHUNK", From: NodeRef{Label: "Document", ID: "guide.md"}, To: NodeRef{Label: "Chunk", ID: "guide.md#1"},
				Props: map[string]any{"position": int64(1)}},
			{Type: "REQUIRES", From: NodeRef{Label: "Heading", ID: "2901"}, To: NodeRef{Label: "Guide", ID: "g7"},
				Key: "links:row-12", Props: map[string]any{"kind": "classification"}},
		},
		DeleteOrphans: []NodeRef{{Label: "Heading", ID: "2902"}},
		DeleteEdges: []EdgeRef{
			{Type: "REQUIRES", From: NodeRef{Label: "Heading", ID: "2901"}, To: NodeRef{Label: "Guide", ID: "g3"}, Key: "links:row-9"},
			{Type: "CITES", From: NodeRef{Label: "Document", ID: "guide.md"}, To: NodeRef{Label: "Document", ID: "old.md"}},
		},
		EdgePrunes: []EdgePrune{
			{Type: "MENTIONS", From: NodeRef{Label: "Chunk", ID: "guide.md#1"}, ToLabel: "Term"},
			{Type: "HAS_CHUNK", From: NodeRef{Label: "Document", ID: "guide.md"}, ToLabel: "Chunk",
				Keep: []string{"guide.md#0", "guide.md#1", "guide.md#2"}},
		},
	}
}

func representativeSchema() Schema {
	return Schema{
		Indexes: []Index{{Label: "Document", Property: "id"}, {Label: "Chunk", Property: "id"}},
		VectorIndexes: []VectorIndex{
			{Name: "chunk_embedding", Label: "Chunk", Property: "embedding", Dimension: 3},
			{Name: "doc`title", Label: "Document", Property: "title_embedding", Dimension: 768, Metric: "l2sq", Capacity: 5000},
		},
	}
}

// renderStatements is the golden format: a comment line with kind and
// target, the query with the ';' a file would carry, and the parameters as
// JSON (map keys sorted by encoding/json).
func renderStatements(t *testing.T, sts []Statement) string {
	t.Helper()
	var sb strings.Builder
	for _, st := range sts {
		fmt.Fprintf(&sb, "// %s: %s\n%s;\n", st.Kind, st.Target, st.Query)
		if st.Params != nil {
			p, err := json.Marshal(st.Params)
			require.NoError(t, err)
			fmt.Fprintf(&sb, "// params: %s\n", p)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// dialectStatements is everything a dialect produces for the representative
// schema and batch: DDL, index listing, vector search, then the batch.
func dialectStatements(t *testing.T, d Dialect) []Statement {
	t.Helper()
	s := representativeSchema()
	var sts []Statement
	for _, ix := range s.Indexes {
		st, err := d.CreateIndex(ix)
		require.NoError(t, err)
		sts = append(sts, st)
	}
	drop, err := d.DropVectorIndex("chunk_embedding")
	require.NoError(t, err)
	removeAll, err := d.RemoveVectorProperty("Chunk", "embedding", "docs", 0, 0)
	require.NoError(t, err)
	removeSome, err := d.RemoveVectorProperty("Chunk", "embedding", "docs", 5, 10000)
	require.NoError(t, err)
	count, err := d.CountVectors("Chunk", "embedding", "docs")
	require.NoError(t, err)
	sts = append(sts, drop, removeAll, removeSome, count, d.ShowVersion())
	for _, vi := range s.VectorIndexes {
		st, err := d.CreateVectorIndex(vi)
		require.NoError(t, err)
		sts = append(sts, st)
	}
	search, err := d.VectorSearch("chunk_embedding", "docs", 5, 20, []float32{0.5, 0.25, -1})
	require.NoError(t, err)
	sts = append(sts, d.ShowIndexes(), d.ShowVectorIndexes(), search)
	batch, err := Statements(d, representativeBatch(), Options{Pipeline: "docs", RowsPerStatement: 2})
	require.NoError(t, err)
	return append(sts, batch...)
}

// TestStatementsGolden pins the Cypher of both dialects. The golden files
// were reviewed line by line against docs/memgraph.md:
//   - memgraph: CREATE INDEX ON :`L`(`p`) is the native label-property form
//     (§3); CREATE VECTOR INDEX `n` ON :`L`(`p`) WITH CONFIG {"dimension",
//     "capacity", "metric"} with the required dimension and capacity and
//     metric names cos / l2sq (§4); DROP VECTOR INDEX `n` (§4); SHOW INDEX
//     INFO and SHOW VECTOR INDEX INFO (§3, §4); vector_search.search(index,
//     k, vector) YIELD node, similarity (§4).
//   - neo4j: CREATE INDEX IF NOT EXISTS FOR (n:`L`) ON (n.`p`), CREATE
//     VECTOR INDEX … IF NOT EXISTS FOR … ON n.`p` OPTIONS {indexConfig:
//     {`vector.dimensions`, `vector.similarity_function`}} with 'cosine' and
//     'euclidean', DROP INDEX … IF EXISTS, db.index.vector.queryNodes …
//     YIELD node, score (§10).
//   - both: the UNWIND forms of §5 (MERGE by the id key and the owning
//     $pipeline, SET += a props map; an edge group without properties
//     sets none, §12), removals and the vector count scoped to $pipeline,
//     every identifier backtick-quoted and a backtick in "doc`title"
//     doubled (§6); deletes come first, then node upserts, edge upserts and
//     prunes, groups in name order (Chunk before Document; Chunk-[NEXT]->
//     Chunk before Document-[HAS_CHUNK]->Chunk), rows in batch order, and the
//     three Chunk upserts split 2 + 1 by rowsPerStatement = 2; vectors are
//     plain float lists, an unset keep is [] and a missing props is {}.
//     Orphan placeholders are deleted last, only when marked
//     `_placeholder` and touched by no edge (Memgraph: NOT exists((n)--()),
//     its WHERE docs' pattern filter; Neo4j 5: the bare NOT (n)--()).
//     A create-only node is merged with ON CREATE SET before the plain
//     upserts, so a record's own upsert in the same batch wins.
//     Edge deletes come right after node deletes; an edge with a Key is
//     matched and merged by its `_key` property (one edge per link-table
//     row), an edge without one by its type and endpoints.
func TestStatementsGolden(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{Memgraph, Neo4j} {
		got := renderStatements(t, dialectStatements(t, d))
		path := filepath.Join("testdata", "statements_"+d.Name()+".golden")
		if *update {
			require.NoError(t, os.MkdirAll("testdata", 0o755))
			require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "run go test ./sink -update to create %s", path)
		require.Equal(t, string(want), got, "%s differs; review and rerun with -update", path)
	}
}

func TestStatementsBatching(t *testing.T) {
	t.Parallel()
	b := &Batch{}
	for i := range 2500 {
		b.NodeUpserts = append(b.NodeUpserts, NodeUpsert{Label: "Doc", ID: fmt.Sprintf("d%04d", i)})
		b.DeleteNodes = append(b.DeleteNodes, NodeRef{Label: "Old", ID: fmt.Sprintf("o%04d", i)})
	}
	sts, err := Statements(Memgraph, b, Options{Pipeline: "docs", RowsPerStatement: 1000})
	require.NoError(t, err)
	// 2500 rows in groups of at most 1000 = 1000 + 1000 + 500, per label,
	// deletes first.
	require.Len(t, sts, 6)
	sizes := []int{1000, 1000, 500, 1000, 1000, 500}
	kinds := []string{KindDeleteNodes, KindDeleteNodes, KindDeleteNodes, KindUpsertNodes, KindUpsertNodes, KindUpsertNodes}
	next := 0
	for i, st := range sts {
		require.Equal(t, kinds[i], st.Kind)
		rows := st.Params["rows"].([]any)
		require.Len(t, rows, sizes[i])
		if st.Kind == KindUpsertNodes {
			for _, r := range rows { // batch order kept across statements
				require.Equal(t, fmt.Sprintf("d%04d", next), r.(map[string]any)["id"])
				require.Equal(t, map[string]any{}, r.(map[string]any)["props"], "nil props must be an empty map")
				next++
			}
		}
	}
	require.Equal(t, 2500, next)

	// rowsPerStatement <= 0: one statement per group.
	sts, err = Statements(Memgraph, b, Options{Pipeline: "docs", RowsPerStatement: 0})
	require.NoError(t, err)
	require.Len(t, sts, 2)

	sts, err = Statements(Memgraph, &Batch{}, Options{Pipeline: "docs", RowsPerStatement: 1000})
	require.NoError(t, err)
	require.Empty(t, sts)
	sts, err = Statements(Memgraph, nil, Options{Pipeline: "docs", RowsPerStatement: 1000})
	require.NoError(t, err)
	require.Empty(t, sts)
}

func TestStatementsValues(t *testing.T) {
	t.Parallel()
	b := &Batch{
		NodeUpserts: []NodeUpsert{{Label: "Chunk", ID: "c1", Props: map[string]any{
			"embedding": []float32{0.1, 2}, "n": 7, "f": float32(0.5), "meta": map[string]any{"k": []float32{1}},
		}}},
		EdgePrunes: []EdgePrune{{Type: "NEXT", From: NodeRef{Label: "Chunk", ID: "c1"}, ToLabel: "Chunk"}},
	}
	sts, err := Statements(Memgraph, b, Options{Pipeline: "docs", RowsPerStatement: 10})
	require.NoError(t, err)
	require.Len(t, sts, 2)
	props := sts[0].Params["rows"].([]any)[0].(map[string]any)["props"].(map[string]any)
	// float32 widened exactly: float64(float32(0.1)) is 0.10000000149011612.
	require.Equal(t, []float64{float64(float32(0.1)), 2}, props["embedding"])
	require.Equal(t, int64(7), props["n"])
	require.Equal(t, 0.5, props["f"])
	require.Equal(t, map[string]any{"k": []float64{1}}, props["meta"])
	keep := sts[1].Params["rows"].([]any)[0].(map[string]any)["keep"]
	require.NotNil(t, keep, "a nil keep would make NOT b.id IN null drop every row, pruning nothing")
	require.Equal(t, []string{}, keep)

	// The batch's own slices are not shared with the parameters.
	vec := []float64{1, 2}
	b2 := &Batch{NodeUpserts: []NodeUpsert{{Label: "C", ID: "x", Props: map[string]any{"v": vec}}}}
	sts, err = Statements(Memgraph, b2, Options{Pipeline: "docs", RowsPerStatement: 10})
	require.NoError(t, err)
	vec[0] = 99
	require.Equal(t, []float64{1, 2}, sts[0].Params["rows"].([]any)[0].(map[string]any)["props"].(map[string]any)["v"])
}

func TestStatementsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    Dialect
		b    Batch
		want []string
	}{
		{"bad label", Memgraph, Batch{NodeUpserts: []NodeUpsert{{Label: "a;b", ID: "1"}}},
			[]string{"upsert nodes", "row 0", `"a;b"`}},
		{"empty id", Memgraph, Batch{DeleteNodes: []NodeRef{{Label: "Doc"}}},
			[]string{"delete nodes", `"Doc"`, "empty id"}},
		{"bad type", Memgraph, Batch{EdgeUpserts: []EdgeUpsert{{Type: "A\nB", From: NodeRef{"X", "1"}, To: NodeRef{"Y", "2"}}}},
			[]string{"upsert edges", "row 0", "control"}},
		{"bad to label", Memgraph, Batch{EdgePrunes: []EdgePrune{{Type: "T", From: NodeRef{"X", "1"}, ToLabel: ""}}},
			[]string{"prune edges", "empty"}},
		{"bad prop name", Memgraph, Batch{NodeUpserts: []NodeUpsert{{Label: "Doc", ID: "d1", Props: map[string]any{"x;y": 1}}}},
			[]string{"upsert nodes", `"Doc"`, `"d1"`, `"x;y"`}},
		{"nan", Memgraph, Batch{NodeUpserts: []NodeUpsert{{Label: "Doc", ID: "d1", Props: map[string]any{"v": []float32{float32(math.NaN())}}}}},
			[]string{`"d1"`, `"v"`, "NaN"}},
		{"map in neo4j", Neo4j, Batch{NodeUpserts: []NodeUpsert{{Label: "Doc", ID: "d1", Props: map[string]any{"m": map[string]any{}}}}},
			[]string{`"m"`, "map value", "neo4j"}},
		{"unsupported", Memgraph, Batch{EdgeUpserts: []EdgeUpsert{{Type: "T", From: NodeRef{"X", "1"}, To: NodeRef{"Y", "2"},
			Props: map[string]any{"c": complex(1, 2)}}}},
			[]string{"upsert edges", `"c"`, "complex128"}},
	}
	for _, tt := range tests {
		_, err := Statements(tt.d, &tt.b, Options{Pipeline: "docs", RowsPerStatement: 10})
		require.Error(t, err, tt.name)
		for _, w := range tt.want {
			require.Contains(t, err.Error(), w, tt.name)
		}
	}
}

func TestSchemaValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, representativeSchema().Validate())
	bad := Schema{
		Indexes: []Index{{Label: "Doc", Property: "a;b"}},
		VectorIndexes: []VectorIndex{
			{Name: "v", Label: "C", Property: "e", Dimension: 0},
			{Name: "v", Label: "C", Property: "e", Dimension: 3, Metric: "jaccard"},
		},
	}
	err := bad.Validate()
	require.Error(t, err)
	for _, w := range []string{"indexes[0]", `"a;b"`, "vector_indexes[0]", "dimension 0", "jaccard", `duplicate name "v"`} {
		require.Contains(t, err.Error(), w)
	}
	_, err = Neo4j.CreateVectorIndex(VectorIndex{Name: "v", Label: "C", Property: "e", Dimension: 3, Metric: "ip"})
	require.ErrorContains(t, err, "no Neo4j similarity")
}

// TestStatementsEdgeWithoutProperties: Memgraph refuses any property write
// on an edge, even SET e += {}, when --storage-properties-on-edges is off
// (docs/memgraph.md §12), so an edge group whose rows have no properties
// must not SET anything.
func TestStatementsEdgeWithoutProperties(t *testing.T) {
	t.Parallel()
	b := &Batch{EdgeUpserts: []EdgeUpsert{
		{Type: "NEXT", From: NodeRef{Label: "Chunk", ID: "a#0"}, To: NodeRef{Label: "Chunk", ID: "a#1"}},
		{Type: "NEXT", From: NodeRef{Label: "Chunk", ID: "a#1"}, To: NodeRef{Label: "Chunk", ID: "a#2"}, Props: map[string]any{}},
		{Type: "CITES", From: NodeRef{Label: "Chunk", ID: "a#1"}, To: NodeRef{Label: "Chunk", ID: "a#2"}, Props: map[string]any{"text": "see 2"}},
	}}
	sts, err := Statements(Memgraph, b, Options{Pipeline: "docs", RowsPerStatement: 0})
	require.NoError(t, err)
	require.Len(t, sts, 2)
	for _, st := range sts {
		switch st.Target {
		case "Chunk-[NEXT]->Chunk":
			require.NotContains(t, st.Query, "SET e", "an edge without properties sets none")
			for _, r := range st.Params["rows"].([]any) {
				require.NotContains(t, r.(map[string]any), "props")
			}
		case "Chunk-[CITES]->Chunk":
			require.Contains(t, st.Query, "SET e += row.props")
		default:
			t.Fatalf("unexpected target %q", st.Target)
		}
	}
}

// TestStatementsOwnership: every statement that matches or merges a node
// names its owning pipeline, so that a pipeline's deletions and removals
// never reach another pipeline's nodes in a shared Memgraph.
func TestStatementsOwnership(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{Memgraph, Neo4j} {
		sts, err := Statements(d, representativeBatch(), Options{Pipeline: "docs"})
		require.NoError(t, err)
		rm, err := d.RemoveVectorProperty("Chunk", "embedding", "docs", 0, 0)
		require.NoError(t, err)
		rmSome, err := d.RemoveVectorProperty("Chunk", "embedding", "docs", 4, 100)
		require.NoError(t, err)
		for _, st := range append(sts, rm, rmSome) {
			require.Equal(t, "docs", st.Params["pipeline"], st.Query)
			for _, pat := range []string{"(n:", "(a:"} {
				if i := strings.Index(st.Query, pat); i >= 0 {
					rest := st.Query[i:]
					require.Regexp(t, `^\([an]:`+"`[^`]+`"+`( \{id: row\.(id|from), _pipeline: \$pipeline\}\)|\) WHERE n\._pipeline = \$pipeline )`, rest, st.Query)
				}
			}
		}
		_, err = Statements(d, representativeBatch(), Options{})
		require.ErrorContains(t, err, "pipeline")
	}
}

// TestStatementsFirstBadProperty: of several bad properties, the error
// names the first in key order, whatever the map's iteration order.
func TestStatementsFirstBadProperty(t *testing.T) {
	t.Parallel()
	props := map[string]any{"d": math.NaN(), "c;": 1, "b": []float32{1, float32(math.Inf(1))}, "e;": 2, "a": "ok",
		"m": map[string]any{"z;": 1, "y": math.NaN()}}
	for _, inline := range []bool{false, true} {
		for range 20 {
			_, err := Statements(Memgraph, &Batch{NodeUpserts: []NodeUpsert{{Label: "Doc", ID: "d1", Props: props}}},
				Options{Pipeline: "docs", Inline: inline})
			require.EqualError(t, err, `upsert nodes "Doc": row 0 (id "d1"): property "b": float +Inf has no Cypher representation`)
			_, err = Statements(Memgraph, &Batch{NodeUpserts: []NodeUpsert{{Label: "Doc", ID: "d1", Props: map[string]any{"m": props["m"]}}}},
				Options{Pipeline: "docs", Inline: inline})
			require.EqualError(t, err, `upsert nodes "Doc": row 0 (id "d1"): property "m": "y": float NaN has no Cypher representation`)
		}
	}
}

// TestStatementsPlaceholdersOncePerNode: a create-only placeholder is
// written for a node only once a batch, and not at all when the batch
// upserts the node in full (that upsert creates it, and every node upsert
// runs before the edges that need it), in both dialects and whatever the
// order of the rows.
func TestStatementsPlaceholdersOncePerNode(t *testing.T) {
	t.Parallel()
	ph := func(label, id string) NodeUpsert {
		return NodeUpsert{Label: label, ID: id, Props: map[string]any{"_placeholder": true}, CreateOnly: true}
	}
	full := func(label, id string) NodeUpsert {
		return NodeUpsert{Label: label, ID: id, Props: map[string]any{"name": id}}
	}
	b := &Batch{
		NodeUpserts: []NodeUpsert{
			ph("Code", "01"), full("Code", "0101"), ph("Code", "01"), ph("Code", "0101"),
			full("Code", "01"), // named by two placeholders before it
			ph("Code", "02"), ph("Code", "02"), ph("Unit", "02"), ph("Code", "03"), full("Unit", "kg"),
		},
		EdgeUpserts: []EdgeUpsert{{Type: "PARENT", From: NodeRef{Label: "Code", ID: "0101"}, To: NodeRef{Label: "Code", ID: "01"}}},
	}
	for _, d := range []Dialect{Memgraph, Neo4j} {
		sts, err := Statements(d, b, Options{Pipeline: "tables", RowsPerStatement: 100})
		require.NoError(t, err)
		var created, merged []string
		for _, st := range sts {
			if st.Kind != KindUpsertNodes {
				continue
			}
			for _, r := range st.Params["rows"].([]any) {
				id := st.Target + "/" + r.(map[string]any)["id"].(string)
				if strings.Contains(st.Query, "ON CREATE SET") {
					created = append(created, id)
				} else {
					merged = append(merged, id)
				}
			}
		}
		require.Equal(t, []string{"Code/02", "Code/03", "Unit/02"}, created, d.Name())
		require.Equal(t, []string{"Code/0101", "Code/01", "Unit/kg"}, merged, d.Name())
	}

	// A batch of placeholders only keeps one of each.
	sts, err := Statements(Memgraph, &Batch{NodeUpserts: []NodeUpsert{ph("Code", "9"), ph("Code", "9")}}, Options{Pipeline: "tables"})
	require.NoError(t, err)
	require.Len(t, sts, 1)
	require.Len(t, sts[0].Params["rows"], 1)
}

// TestStatementsRefuseToMoveANodeOffItsIdentity: a node upsert whose props
// set id to another value, or _pipeline to null, would leave the node
// where no later statement matches it (SET n += …); Statements refuses it.
func TestStatementsRefuseToMoveANodeOffItsIdentity(t *testing.T) {
	for _, props := range []map[string]any{{"id": "1"}, {"id": nil}, {PropPipeline: nil}} {
		_, err := Statements(Memgraph, &Batch{NodeUpserts: []NodeUpsert{{Label: "faq", ID: "faq:1", Props: props}}},
			Options{Pipeline: "p"})
		require.Error(t, err, "%v", props)
		require.Contains(t, err.Error(), `"faq:1"`)
	}
	_, err := Statements(Memgraph, &Batch{NodeUpserts: []NodeUpsert{{Label: "faq", ID: "faq:1",
		Props: map[string]any{"id": "faq:1", PropPipeline: "p", "title": nil}}}}, Options{Pipeline: "p"})
	require.NoError(t, err, "the same id, the pipeline, and any other property removed")
}

// TestStatementsFirstKindErrs: with bad rows in several kinds, the error
// is the first kind's in the order Write applies them (deletes, node
// upserts, edge upserts, prunes, orphans), and no statement is returned.
func TestStatementsFirstKindErrs(t *testing.T) {
	t.Parallel()
	badNode := NodeRef{Label: "Doc"}                // empty id
	from, to := NodeRef{"X", ""}, NodeRef{"Y", "2"} // empty from id
	full := Batch{
		DeleteNodes:   []NodeRef{{Label: "Doc", ID: "ok"}, badNode},
		DeleteEdges:   []EdgeRef{{Type: "T", From: from, To: to}},
		NodeUpserts:   []NodeUpsert{{Label: "Doc", ID: ""}},
		EdgeUpserts:   []EdgeUpsert{{Type: "T", From: from, To: to}},
		EdgePrunes:    []EdgePrune{{Type: "T", From: NodeRef{"X", "1"}, ToLabel: ""}},
		DeleteOrphans: []NodeRef{badNode},
	}
	for _, want := range []string{"delete nodes: row 1", "delete edges: row 0", "upsert nodes: row 0", "upsert edges: row 0",
		"prune edges: row 0", "delete orphans: row 0"} {
		sts, err := Statements(Memgraph, &full, Options{Pipeline: "docs"})
		require.ErrorContains(t, err, want)
		require.True(t, strings.HasPrefix(err.Error(), want), err.Error())
		require.Nil(t, sts)
		// The next kind's error shows once this kind's rows are gone.
		switch {
		case full.DeleteNodes != nil:
			full.DeleteNodes = nil
		case full.DeleteEdges != nil:
			full.DeleteEdges = nil
		case full.NodeUpserts != nil:
			full.NodeUpserts = nil
		case full.EdgeUpserts != nil:
			full.EdgeUpserts = nil
		case full.EdgePrunes != nil:
			full.EdgePrunes = nil
		}
	}
}
