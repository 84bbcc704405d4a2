package memgraph

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kgsync/kgsync/internal/bolttest"
	"github.com/kgsync/kgsync/sink"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeSchema answers SHOW INDEX INFO and SHOW VECTOR INDEX INFO with the
// columns docs/memgraph.md §3/§4 lists, from rows the test controls, and
// the batched REMOVE with the counts in removed (then 0).
type fakeSchema struct {
	mu      sync.Mutex
	indexes [][]any // index type, label, property, count
	vectors [][]any // index_name, label, property, capacity, dimension, metric, size
	removed []int64
	foreign [][]any // other pipelines' vectors: pipeline, dimension, nodes
}

func (f *fakeSchema) respond(q bolttest.Query) ([]string, [][]any, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := reCreateIndex.FindStringSubmatch(q.Text); m != nil {
		f.indexes = append(f.indexes, []any{"label+property", m[1], []any{m[2]}, int64(0)})
	}
	if m := reCreateVector.FindStringSubmatch(q.Text); m != nil {
		dim, _ := strconv.ParseInt(m[4], 10, 64)
		f.vectors = append(f.vectors, []any{m[1], m[2], m[3], int64(1000), dim, "cos", int64(0)})
	}
	if m := reDropVector.FindStringSubmatch(q.Text); m != nil {
		f.vectors = slices.DeleteFunc(f.vectors, func(r []any) bool { return r[0] == m[1] })
	}
	switch {
	case q.Text == "SHOW VERSION":
		return []string{"version"}, [][]any{{"3.12.0"}}, true
	case strings.Contains(q.Text, "AS pipeline, size("):
		return []string{"pipeline", "dimension", "nodes"}, f.foreign, true
	case q.Text == "SHOW INDEX INFO":
		return []string{"index type", "label", "property", "count"}, f.indexes, true
	case q.Text == "SHOW VECTOR INDEX INFO":
		return []string{"index_name", "label", "property", "capacity", "dimension", "metric", "size"}, f.vectors, true
	case strings.Contains(q.Text, "RETURN count(n) AS removed"):
		n := int64(0)
		if len(f.removed) > 0 {
			n, f.removed = f.removed[0], f.removed[1:]
		}
		return []string{"removed"}, [][]any{{n}}, true
	}
	return nil, nil, false
}

var (
	reCreateIndex  = regexp.MustCompile("^CREATE INDEX ON :`([^`]+)`\\(`([^`]+)`\\)$")
	reCreateVector = regexp.MustCompile("^CREATE VECTOR INDEX `([^`]+)` ON :`([^`]+)`\\(`([^`]+)`\\) WITH CONFIG \\{\"dimension\": (\\d+)")
	reDropVector   = regexp.MustCompile("^DROP VECTOR INDEX `([^`]+)`$")
)

type testBundle struct {
	srv    *bolttest.Server
	sink   *Sink
	schema *fakeSchema

	mu     sync.Mutex
	sleeps []time.Duration
}

func (tb *testBundle) slept() []time.Duration {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]time.Duration(nil), tb.sleeps...)
}

func setup(t *testing.T, mod func(*Config)) *testBundle {
	t.Helper()
	tb := &testBundle{srv: bolttest.Start(t), schema: &fakeSchema{}}
	tb.srv.Respond(tb.schema.respond)
	cfg := Config{
		URI:      tb.srv.URI(),
		Pipeline: "docs",
		Timeout:  5 * time.Second,
		SleepFunc: func(ctx context.Context, d time.Duration) error {
			tb.mu.Lock()
			defer tb.mu.Unlock()
			tb.sleeps = append(tb.sleeps, d)
			return ctx.Err()
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(t.Context(), cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close(context.Background())) })
	tb.sink = s
	_, err = s.Server(t.Context()) // the version and edge-property checks, once per Sink
	require.NoError(t, err)
	tb.srv.Reset() // forget connectivity checks
	return tb
}

func testSchema(dim int) sink.Schema {
	return sink.Schema{
		Indexes:       []sink.Index{{Label: "Doc", Property: "id"}, {Label: "Chunk", Property: "id"}},
		VectorIndexes: []sink.VectorIndex{{Name: "chunk_embedding", Label: "Chunk", Property: "embedding", Dimension: dim}},
	}
}

func testBatch() *sink.Batch {
	return &sink.Batch{
		DeleteNodes: []sink.NodeRef{{Label: "Chunk", ID: "old#0"}},
		NodeUpserts: []sink.NodeUpsert{
			{Label: "Doc", ID: "d1", Props: map[string]any{"title": "T"}},
			{Label: "Chunk", ID: "d1#0", Props: map[string]any{"embedding": []float32{0.5, 0.25, -1}}},
		},
		EdgeUpserts: []sink.EdgeUpsert{{Type: "HAS_CHUNK", From: sink.NodeRef{Label: "Doc", ID: "d1"},
			To: sink.NodeRef{Label: "Chunk", ID: "d1#0"}}},
		EdgePrunes: []sink.EdgePrune{{Type: "HAS_CHUNK", From: sink.NodeRef{Label: "Doc", ID: "d1"},
			ToLabel: "Chunk", Keep: []string{"d1#0"}}},
	}
}

func texts(qs []bolttest.Query) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Text
	}
	return out
}

func isMerge(text string) bool { return strings.Contains(text, "MERGE") }

func TestEnsureThenWrite(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil)
	st, err := tb.sink.Ensure(t.Context(), testSchema(3))
	require.NoError(t, err)
	// SHOW INDEX INFO, 2 CREATE INDEX, SHOW INDEX INFO (confirm), SHOW VECTOR
	// INDEX INFO, removal of this pipeline's vectors of another length,
	// count of other pipelines' vectors, CREATE VECTOR INDEX, SHOW VECTOR
	// INDEX INFO (confirm).
	require.Equal(t, sink.Stats{Statements: 9, Batches: 9}, st)
	st, err = tb.sink.Write(t.Context(), testBatch())
	require.NoError(t, err)
	// delete Chunk, upsert Chunk, upsert Doc, upsert edges, prune edges.
	require.Equal(t, sink.Stats{Statements: 5, Batches: 1}, st)

	qs := tb.srv.Queries()
	require.Equal(t, []string{
		"SHOW INDEX INFO",
		"CREATE INDEX ON :`Doc`(`id`)",
		"CREATE INDEX ON :`Chunk`(`id`)",
		"SHOW INDEX INFO",
		"SHOW VECTOR INDEX INFO",
		"MATCH (n:`Chunk`) WHERE n._pipeline = $pipeline AND n.`embedding` IS NOT NULL AND size(n.`embedding`) <> $dimension " +
			"WITH n LIMIT $limit REMOVE n.`embedding` RETURN count(n) AS removed",
		"MATCH (n:`Chunk`) WHERE n.`embedding` IS NOT NULL AND (n._pipeline IS NULL OR n._pipeline <> $pipeline) " +
			"RETURN n._pipeline AS pipeline, size(n.`embedding`) AS dimension, count(*) AS nodes",
		"CREATE VECTOR INDEX `chunk_embedding` ON :`Chunk`(`embedding`) WITH CONFIG {\"dimension\": 3, \"capacity\": 1000, \"metric\": \"cos\"}",
		"SHOW VECTOR INDEX INFO",
		"UNWIND $rows AS row MATCH (n:`Chunk` {id: row.id, _pipeline: $pipeline}) DETACH DELETE n",
		"UNWIND $rows AS row MERGE (n:`Chunk` {id: row.id, _pipeline: $pipeline}) SET n += row.props",
		"UNWIND $rows AS row MERGE (n:`Doc` {id: row.id, _pipeline: $pipeline}) SET n += row.props",
		"UNWIND $rows AS row MATCH (a:`Doc` {id: row.from, _pipeline: $pipeline}), (b:`Chunk` {id: row.to, _pipeline: $pipeline}) MERGE (a)-[e:`HAS_CHUNK`]->(b)",
		"UNWIND $rows AS row MATCH (a:`Doc` {id: row.from, _pipeline: $pipeline})-[e:`HAS_CHUNK`]->(b:`Chunk`) WHERE NOT b.id IN row.keep DELETE e",
	}, texts(qs))
	// DDL and SHOW are auto-commit (docs/memgraph.md §2); the batch is one
	// explicit transaction, committed.
	for _, q := range qs[:9] {
		require.Zero(t, q.Tx, q.Text)
		require.True(t, q.Committed, q.Text)
	}
	tx := qs[9].Tx
	require.NotZero(t, tx)
	for _, q := range qs[9:] {
		require.Equal(t, tx, q.Tx, q.Text)
		require.True(t, q.Committed, q.Text)
	}
	// Parameters as the server decoded them: float32 vectors arrive as
	// 64-bit floats, keep as a list.
	rows := qs[10].Params["rows"].([]any)
	require.Equal(t, map[string]any{"id": "d1#0", "props": map[string]any{"embedding": []any{0.5, 0.25, -1.0}}}, rows[0])
	require.Equal(t, []any{map[string]any{"from": "d1", "keep": []any{"d1#0"}}}, qs[13].Params["rows"])
	require.Equal(t, "docs", qs[13].Params["pipeline"], "every statement names its pipeline")
	require.Equal(t, int64(5000), qs[9].Meta["tx_timeout"], "Timeout is sent as the tx_timeout in ms")
}

func TestEnsureIdempotent(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil)
	// The server already has everything: the label-property index in the
	// >= 3.2 list form and the < 3.2 string form, the vector index with a
	// ":L" label (>= 3.11).
	tb.schema.indexes = [][]any{
		{"label+property", "Doc", []any{"id"}, int64(1)},
		{"label+property", "Chunk", "id", int64(2)},
	}
	tb.schema.vectors = [][]any{{"chunk_embedding", ":Chunk", "embedding", int64(1024), int64(3), "cos", int64(2)}}
	for range 2 {
		st, err := tb.sink.Ensure(t.Context(), testSchema(3))
		require.NoError(t, err)
		require.Equal(t, 2, st.Statements)
	}
	require.Equal(t, []string{"SHOW INDEX INFO", "SHOW VECTOR INDEX INFO", "SHOW INDEX INFO", "SHOW VECTOR INDEX INFO"},
		texts(tb.srv.Queries()))

	// Without vector indexes the vector listing is not even asked for.
	tb.srv.Reset()
	_, err := tb.sink.Ensure(t.Context(), sink.Schema{Indexes: []sink.Index{{Label: "Doc", Property: "id"}}})
	require.NoError(t, err)
	require.Equal(t, []string{"SHOW INDEX INFO"}, texts(tb.srv.Queries()))
}

func TestEnsureRecreatesVectorIndex(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(c *Config) { c.RemoveBatch = 2 })
	tb.schema.indexes = [][]any{{"label+property", "Doc", []any{"id"}, int64(1)}, {"label+property", "Chunk", []any{"id"}, int64(3)}}
	tb.schema.vectors = [][]any{{"chunk_embedding", "Chunk", "embedding", int64(64), int64(3), "cos", int64(3)}}
	tb.schema.removed = []int64{2, 1} // 3 nodes with old vectors, 2 per statement
	st, err := tb.sink.Ensure(t.Context(), testSchema(5))
	require.NoError(t, err)
	require.Equal(t, 9, st.Statements)
	remove := "MATCH (n:`Chunk`) WHERE n._pipeline = $pipeline AND n.`embedding` IS NOT NULL AND size(n.`embedding`) <> $dimension WITH n LIMIT $limit REMOVE n.`embedding` RETURN count(n) AS removed"
	qs := tb.srv.Queries()
	require.Equal(t, []string{
		"SHOW INDEX INFO",
		"SHOW VECTOR INDEX INFO",
		"DROP VECTOR INDEX `chunk_embedding`",
		remove, remove, remove, // 2, 1, then 0: done
		"MATCH (n:`Chunk`) WHERE n.`embedding` IS NOT NULL AND (n._pipeline IS NULL OR n._pipeline <> $pipeline) " +
			"RETURN n._pipeline AS pipeline, size(n.`embedding`) AS dimension, count(*) AS nodes",
		"CREATE VECTOR INDEX `chunk_embedding` ON :`Chunk`(`embedding`) WITH CONFIG {\"dimension\": 5, \"capacity\": 1000, \"metric\": \"cos\"}",
		"SHOW VECTOR INDEX INFO",
	}, texts(qs))
	require.Equal(t, int64(2), qs[3].Params["limit"])
	for _, q := range qs {
		require.Zero(t, q.Tx, q.Text)
	}

	// Write now checks the new dimension: a 3-vector is refused before
	// anything is sent (Memgraph would fail the whole tx, docs/memgraph.md §4).
	tb.srv.Reset()
	_, err = tb.sink.Write(t.Context(), testBatch())
	require.ErrorContains(t, err, `node "d1#0"`)
	require.ErrorContains(t, err, "3 dimensions")
	require.ErrorContains(t, err, `"chunk_embedding" has 5`)
	require.Empty(t, tb.srv.Queries())
}

func TestWriteBatching(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(c *Config) { c.BatchSize = 1000 })
	b := &sink.Batch{}
	for i := range 2500 {
		id := fmt.Sprintf("d%04d", i)
		b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: "Doc", ID: id, Props: map[string]any{"n": int64(i)}})
		b.DeleteNodes = append(b.DeleteNodes, sink.NodeRef{Label: "Gone", ID: id})
		b.EdgePrunes = append(b.EdgePrunes, sink.EdgePrune{Type: "REF", From: sink.NodeRef{Label: "Doc", ID: id}, ToLabel: "Doc"})
	}
	st, err := tb.sink.Write(t.Context(), b)
	require.NoError(t, err)
	// 2500 rows in statements of at most 1000: 3 per group, 3 groups.
	require.Equal(t, sink.Stats{Statements: 9, Batches: 1}, st)
	qs := tb.srv.Committed()
	require.Len(t, qs, 9)
	wantRows := []int{1000, 1000, 500}
	prefixes := []string{
		"UNWIND $rows AS row MATCH (n:`Gone` {id: row.id, _pipeline: $pipeline}) DETACH DELETE n",
		"UNWIND $rows AS row MERGE (n:`Doc` {id: row.id, _pipeline: $pipeline})",
		"UNWIND $rows AS row MATCH (a:`Doc` {id: row.from, _pipeline: $pipeline})-[e:`REF`]->(b:`Doc`) WHERE NOT b.id IN row.keep DELETE e",
	}
	for i, q := range qs {
		require.Equal(t, qs[0].Tx, q.Tx, "one transaction for the whole batch")
		require.True(t, strings.HasPrefix(q.Text, prefixes[i/3]), q.Text)
		require.Len(t, q.Params["rows"], wantRows[i%3])
	}
	// Row order survives the split: the second Doc statement starts at row 1000.
	require.Equal(t, "d1000", qs[4].Params["rows"].([]any)[0].(map[string]any)["id"])
	require.Equal(t, []any{}, qs[6].Params["rows"].([]any)[0].(map[string]any)["keep"])
}

func TestWriteRetriesConflict(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil)
	tb.srv.FailNext(1, isMerge, bolttest.Conflict())
	st, err := tb.sink.Write(t.Context(), testBatch())
	require.NoError(t, err)
	require.Equal(t, sink.Stats{Statements: 5, Batches: 1, Retries: 1}, st)

	qs := tb.srv.Queries()
	var failedTx, committedTx []int
	for _, q := range qs {
		if q.Failed {
			failedTx = append(failedTx, q.Tx)
		}
	}
	committed := tb.srv.Committed()
	require.Len(t, committed, 5, "each statement committed exactly once")
	for _, q := range committed {
		committedTx = append(committedTx, q.Tx)
	}
	require.Len(t, failedTx, 1)
	require.NotContains(t, committedTx, failedTx[0], "the conflicting transaction was rolled back, not committed")
	// One back-off of InitialBackoff with ±20 % jitter.
	sleeps := tb.slept()
	require.Len(t, sleeps, 1)
	require.GreaterOrEqual(t, sleeps[0], 160*time.Millisecond)
	require.Less(t, sleeps[0], 240*time.Millisecond)
}

func TestWriteRetriesDroppedConnection(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil)
	tb.srv.FailNext(1, isMerge, bolttest.Failure{Drop: true})
	st, err := tb.sink.Write(t.Context(), testBatch())
	require.NoError(t, err)
	require.Equal(t, 1, st.Retries)
	require.Len(t, tb.srv.Committed(), 5)

	// A failure at COMMIT (storage access timeout) is retried too.
	tb.srv.Reset()
	tb.srv.FailNext(1, isMerge, bolttest.Failure{Code: bolttest.CodeTransient,
		Message: "Cannot get shared access to the storage. Try stopping other queries that are running in parallel.", OnCommit: true})
	st, err = tb.sink.Write(t.Context(), testBatch())
	require.NoError(t, err)
	require.Equal(t, 1, st.Retries)
	require.Len(t, tb.srv.Committed(), 5)
}

func TestWriteFailsFast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    bolttest.Failure
	}{
		{"client error", bolttest.Failure{Code: bolttest.CodeClient,
			Message: "Vector index property must have the same number of dimensions as specified in the index."}},
		// A TransientError that is not a conflict: retrying would fail again
		// (docs/memgraph.md §2).
		{"memory limit", bolttest.Failure{Code: bolttest.CodeTransient, Message: "Memory limit exceeded!"}},
		// Reported on the PULL: only a consumed result ties the error to its
		// statement (docs/memgraph.md §2).
		{"on pull", bolttest.Failure{Code: bolttest.CodeClient, Message: "Can't have null literal properties inside merge (n.id)!",
			OnPull: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, nil)
			tb.srv.FailNext(1, func(text string) bool { return strings.Contains(text, "MERGE (n:`Doc`") }, tt.f)
			st, err := tb.sink.Write(t.Context(), testBatch())
			require.Error(t, err)
			require.Contains(t, err.Error(), `upsert nodes "Doc"`)
			require.Contains(t, err.Error(), tt.f.Message)
			require.Equal(t, sink.Stats{}, st)
			require.Empty(t, tb.slept())
			require.Empty(t, tb.srv.Committed())
		})
	}
}

func TestWriteGivesUp(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(c *Config) { c.MaxRetries = 2 })
	tb.srv.FailNext(10, isMerge, bolttest.Conflict())
	st, err := tb.sink.Write(t.Context(), testBatch())
	require.ErrorContains(t, err, "gave up after 2 retries")
	require.ErrorContains(t, err, "Cannot resolve conflicting transactions")
	require.Equal(t, 2, st.Retries)
	require.Empty(t, tb.srv.Committed())
	sleeps := tb.slept()
	require.Len(t, sleeps, 2)
	// 200 ms then 300 ms (factor 1.5), each ±20 %.
	require.InDelta(t, 200, float64(sleeps[0].Milliseconds()), 40)
	require.InDelta(t, 300, float64(sleeps[1].Milliseconds()), 60)
}

func TestDDLRetriedOnStorageAccess(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil)
	tb.srv.FailNext(1, func(text string) bool { return strings.HasPrefix(text, "CREATE VECTOR INDEX") },
		bolttest.Failure{Code: bolttest.CodeTransient, Message: "Cannot get unique access to the storage."})
	st, err := tb.sink.Ensure(t.Context(), testSchema(3))
	require.NoError(t, err)
	require.Equal(t, 1, st.Retries)
	var creates int
	for _, q := range tb.srv.Committed() {
		if strings.HasPrefix(q.Text, "CREATE VECTOR INDEX") {
			creates++
		}
	}
	require.Equal(t, 1, creates)
}

func TestVectorSearch(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil)
	_, err := tb.sink.Ensure(t.Context(), testSchema(3))
	require.NoError(t, err)
	// The index is shared: the 40 nodes nearest to the query are another
	// pipeline's (some with docs' ids), then docs' own. Memgraph yields the
	// $fetch nearest of all; the Cypher after the call keeps docs'.
	var nodes []textNode
	for i := range 40 {
		nodes = append(nodes, textNode{fmt.Sprintf("c%d", i%5), "other", 0.99 - float64(i)/1000})
	}
	nodes = append(nodes, textNode{"c2", "docs", 0.5}, textNode{"c1", "docs", 0.9}, textNode{"c3", "docs", 0.1})
	slices.SortStableFunc(nodes, func(a, b textNode) int { return cmp.Compare(b.score, a.score) })
	tb.srv.Respond(func(q bolttest.Query) ([]string, [][]any, bool) {
		if !strings.HasPrefix(q.Text, "CALL vector_search.search") {
			return nil, nil, false
		}
		fetch, _ := q.Params["fetch"].(int64)
		yielded := nodes[:min(int(fetch), len(nodes))]
		hits := []any{}
		for _, n := range yielded {
			if n.pipeline == q.Params["pipeline"] {
				hits = append(hits, []any{n.id, n.score})
			}
		}
		return []string{"fetched", "hits"}, [][]any{{int64(len(yielded)), hits}}, true
	})
	tb.srv.Reset()
	hits, err := tb.sink.VectorSearch(t.Context(), "chunk_embedding", 2, []float32{1, 0, 0.5})
	require.NoError(t, err)
	require.Equal(t, []Hit{{ID: "c1", Similarity: 0.9}, {ID: "c2", Similarity: 0.5}}, hits, "docs' own 2 nearest")
	qs := tb.srv.Queries()
	require.Equal(t, "CALL vector_search.search($index, $fetch, $vec) YIELD node, similarity "+
		"WITH count(node) AS fetched, collect(CASE WHEN node._pipeline = $pipeline THEN [node.id, similarity] END) AS hits RETURN fetched, hits", qs[0].Text)
	require.Equal(t, map[string]any{"index": "chunk_embedding", "pipeline": "docs", "fetch": int64(8),
		"vec": []any{1.0, 0.0, 0.5}}, qs[0].Params)
	var asked []any
	for _, q := range qs {
		asked = append(asked, q.Params["fetch"])
	}
	require.Equal(t, []any{int64(8), int64(32), int64(128)}, asked, "4k, then four times as many while docs' share is short")

	// Memgraph would accept a wrong-length query vector silently (#4476).
	_, err = tb.sink.VectorSearch(t.Context(), "chunk_embedding", 2, []float32{1, 0})
	require.ErrorContains(t, err, "2 dimensions, index has 3")
}

func TestNewChecksURIAndAuth(t *testing.T) {
	t.Parallel()
	_, err := New(t.Context(), Config{URI: "neo4j://localhost:7687", Pipeline: "docs"}, nil)
	require.ErrorContains(t, err, "docs/memgraph.md §1")
	require.ErrorContains(t, err, "bolt://")
	_, err = New(t.Context(), Config{URI: "http://localhost:7687", Pipeline: "docs"}, nil)
	require.ErrorContains(t, err, `scheme "http"`)

	tb := setup(t, nil)
	logons := tb.srv.Logons()
	require.NotEmpty(t, logons)
	require.Equal(t, "none", logons[0]["scheme"], "no username: no auth")

	srv := bolttest.Start(t)
	srv.RequireAuth("kg", "secret")
	s, err := New(t.Context(), Config{URI: srv.URI(), Pipeline: "docs", Username: "kg", Password: "secret"}, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close(t.Context()))
	_, err = New(t.Context(), Config{URI: srv.URI(), Pipeline: "docs", Username: "kg", Password: "wrong", Timeout: 2 * time.Second}, nil)
	require.Error(t, err)
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	require.Equal(t, 160*time.Millisecond, Backoff(0, 0))
	require.Equal(t, 200*time.Millisecond, Backoff(0, 0.5))
	require.Equal(t, 300*time.Millisecond, Backoff(1, 0.5))
	require.Equal(t, 450*time.Millisecond, Backoff(2, 0.5))
	require.Equal(t, MaxBackoff, Backoff(40, 0.5))
}

func TestEnsureTextIndexes(t *testing.T) {
	t.Parallel()
	srv, sc, s := emulated(t, bolttest.Memgraph{Version: "3.12.0"}, "docs", nil)
	sch := sink.Schema{TextIndexes: []sink.TextIndex{
		{Name: "chunk_lex", Label: "Chunk", Properties: []string{"lex"}},
		{Name: "term_lex", Label: "Term", Properties: []string{"lex"}},
	}}
	// chunk_lex is listed as asked; term_lex is created, auto-commit.
	sc.AddTextIndex("chunk_lex", "Chunk", "lex")
	_, err := s.Server(t.Context())
	require.NoError(t, err)
	srv.Reset()
	st, err := s.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.Equal(t, 3, st.Statements)
	require.Equal(t, []string{"SHOW INDEX INFO", "CREATE TEXT INDEX `term_lex` ON :`Term`(`lex`)", "SHOW INDEX INFO"}, texts(srv.Queries()))
	require.Zero(t, srv.Queries()[1].Tx, "text index DDL is auto-commit only")
	require.Equal(t, []string{"chunk_lex", "term_lex"}, sc.TextIndexes())

	// Any failure (analytical mode) is an error naming the index.
	_, _, s = emulated(t, bolttest.Memgraph{Version: "3.12.0", Analytical: true}, "docs", nil)
	_, err = s.Ensure(t.Context(), sch)
	require.ErrorContains(t, err, `create text index "chunk_lex"`)
	require.ErrorContains(t, err, "analytical")
}

// TestTextIndexMatchedByLabelAndProperties: a text index is there only
// when its name, label and properties are the ones kgsync needs; a
// same-named index elsewhere (by hand, an older layout) is reported, not
// taken: CREATE TEXT INDEX of its name would only be a notification, and
// lexical search would query the wrong nodes.
func TestTextIndexMatchedByLabelAndProperties(t *testing.T) {
	t.Parallel()
	sch := sink.Schema{TextIndexes: []sink.TextIndex{{Name: "chunk_lex", Label: "Chunk", Properties: []string{"lex"}}}}
	for _, other := range []struct{ label, prop string }{{"Document", "lex"}, {"Chunk", "text"}} {
		_, sc, s := emulated(t, bolttest.Memgraph{}, "docs", nil)
		sc.AddTextIndex("chunk_lex", other.label, other.prop)
		_, err := s.Ensure(t.Context(), sch)
		require.ErrorContains(t, err, `text index "chunk_lex" exists on :`+other.label+"("+other.prop+")")
		require.ErrorContains(t, err, "needs it on :Chunk(lex)")
		require.ErrorContains(t, err, "DROP TEXT INDEX `chunk_lex`")
	}
}

// sharedTextIndex answers text_search.search as Memgraph would for one
// text index that several pipelines share: the procedure yields the limit
// best nodes of every pipeline (docs/memgraph-text-search.md), and the
// Cypher after the call decides what reaches the client. It reads the two
// statement shapes a sink may send: rows of every node yielded (RETURN
// node.id AS id, score) or one row of the count yielded and the
// [id, score] pairs whose _pipeline is $pipeline.
type sharedTextIndex struct {
	nodes []textNode // best first
}

type textNode struct {
	id, pipeline string
	score        float64
}

func (x *sharedTextIndex) respond(q bolttest.Query) ([]string, [][]any, bool) {
	if !strings.HasPrefix(q.Text, "CALL text_search.search") {
		return nil, nil, false
	}
	limit, _ := q.Params["limit"].(int64)
	yielded := x.nodes[:min(int(limit), len(x.nodes))]
	if strings.Contains(q.Text, "RETURN node.id AS id, score") {
		var rows [][]any
		for _, n := range yielded {
			rows = append(rows, []any{n.id, n.score})
		}
		return []string{"id", "score"}, rows, true
	}
	if !strings.Contains(q.Text, "collect(CASE WHEN node._pipeline = $pipeline THEN [node.id, score] END) AS hits RETURN fetched, hits") {
		return nil, nil, false
	}
	hits := []any{}
	for _, n := range yielded {
		if n.pipeline == q.Params["pipeline"] {
			hits = append(hits, []any{n.id, n.score})
		}
	}
	return []string{"fetched", "hits"}, [][]any{{int64(len(yielded)), hits}}, true
}

func TestTextSearch(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil)
	// The index holds 300 nodes of pipeline "other" that score above any of
	// the 12 of "docs" (several with the same ids as docs' nodes: the same
	// document synced by two pipelines), then docs' nodes.
	x := &sharedTextIndex{}
	for i := range 300 {
		x.nodes = append(x.nodes, textNode{fmt.Sprintf("c%d", i%20), "other", 100 - float64(i)/10})
	}
	for i := range 12 {
		x.nodes = append(x.nodes, textNode{fmt.Sprintf("c%d", i), "docs", 50 - float64(i)})
	}
	tb.srv.Respond(x.respond)
	hits, err := tb.sink.TextSearch(t.Context(), "chunk_lex", "lex", []string{"proxi", "header"}, 10)
	require.NoError(t, err)
	var want []Hit
	for i := range 10 {
		want = append(want, Hit{ID: fmt.Sprintf("c%d", i), Similarity: 50 - float64(i)})
	}
	require.Equal(t, want, hits, "the pipeline's own top 10, none of the other pipeline's")
	qs := tb.srv.Queries()
	require.Equal(t, "data.lex:proxi OR data.lex:header", qs[0].Params["query"])
	require.Equal(t, "docs", qs[0].Params["pipeline"])
	var asked []any
	for _, q := range qs {
		asked = append(asked, q.Params["limit"])
		require.Zero(t, q.Tx, "procedure calls are auto-commit")
	}
	require.Equal(t, []any{int64(20), int64(80), int64(320)}, asked, "twice the limit, then four times as many while the pipeline's share is short")

	// An index that has fewer matching nodes than asked for is not asked
	// again: 3 of the pipeline's nodes are all it has.
	tb.srv.Reset()
	x.nodes = []textNode{{"a", "other", 9}, {"b", "docs", 8}, {"c", "docs", 7}, {"d", "docs", 7}}
	hits, err = tb.sink.TextSearch(t.Context(), "chunk_lex", "lex", []string{"proxi"}, 10)
	require.NoError(t, err)
	require.Equal(t, []Hit{{ID: "b", Similarity: 8}, {ID: "c", Similarity: 7}, {ID: "d", Similarity: 7}}, hits)
	require.Len(t, tb.srv.Queries(), 1)

	// Memgraph 3.6–3.10 takes the limit as a positional argument: one retry
	// in that form, and the form is kept for the larger asks.
	tb.srv.Reset()
	x.nodes = x.nodes[:1]
	tb.srv.FailNext(1, func(text string) bool { return strings.Contains(text, "{limit: $limit}") },
		bolttest.Failure{Code: bolttest.CodeClient, Message: "'text_search.search' argument named 'limit' at position 2 must be of type INTEGER."})
	hits, err = tb.sink.TextSearch(t.Context(), "chunk_lex", "lex", []string{"proxi"}, 10)
	require.NoError(t, err)
	require.Empty(t, hits)
	qs = tb.srv.Queries()
	require.Len(t, qs, 2)
	require.Equal(t, "CALL text_search.search($index, $query, $limit) YIELD node, score "+
		"WITH count(node) AS fetched, collect(CASE WHEN node._pipeline = $pipeline THEN [node.id, score] END) AS hits RETURN fetched, hits", qs[1].Text)

	// An answer of another shape is an error naming the index.
	tb.srv.Respond(func(q bolttest.Query) ([]string, [][]any, bool) {
		return []string{"id", "score"}, [][]any{{"c1", 1.0}}, true
	})
	_, err = tb.sink.TextSearch(t.Context(), "chunk_lex", "lex", []string{"proxi"}, 10)
	require.ErrorContains(t, err, `text search "chunk_lex": columns ["id" "score"], want fetched and hits`)
}

// TestEnsureDropsRemovedVectorIndex: a vector index on one of the
// pipeline's labels that its schema no longer has (the attribute removed
// from the model, or renamed) is dropped; one under which another
// pipeline's nodes hold vectors is kept.
func TestEnsureDropsRemovedVectorIndex(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil)
	tb.schema.indexes = [][]any{{"label+property", "Doc", []any{"id"}, int64(1)}, {"label+property", "Chunk", []any{"id"}, int64(3)},
		{"label+property", "faq", []any{"id"}, int64(8)}}
	tb.schema.vectors = [][]any{{"chunk_embedding", "Chunk", "embedding", int64(1024), int64(3), "cos", int64(3)},
		{"faq_question_embedding", "faq", "question_embedding", int64(1024), int64(3), "cos", int64(8)},
		{"other_embedding", "Other", "embedding", int64(1024), int64(3), "cos", int64(2)}}
	sch := testSchema(3)
	sch.Indexes = append(sch.Indexes, sink.Index{Label: "faq", Property: "id"})

	tb.schema.foreign = [][]any{{"other", int64(3), int64(2)}}
	_, err := tb.sink.Ensure(t.Context(), sch)
	require.NoError(t, err)
	require.NotContains(t, texts(tb.srv.Queries()), "DROP VECTOR INDEX `faq_question_embedding`", "another pipeline's vectors")

	tb.schema.foreign = nil
	tb.srv.Reset()
	_, err = tb.sink.Ensure(t.Context(), sch)
	require.NoError(t, err)
	qs := texts(tb.srv.Queries())
	require.Contains(t, qs, "DROP VECTOR INDEX `faq_question_embedding`")
	require.NotContains(t, qs, "DROP VECTOR INDEX `other_embedding`", "not a label of the pipeline")
	require.NotContains(t, qs, "DROP VECTOR INDEX `chunk_embedding`")
}

// TestEnsureKeepsIndexDropsDisplaced: a vector index listed as wanted is
// kept while another index on its label and property is dropped; the
// vectors stay (they fit the kept index), nothing is created, and Write
// checks the kept dimension.
func TestEnsureKeepsIndexDropsDisplaced(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil)
	tb.schema.indexes = [][]any{{"label+property", "Doc", []any{"id"}, int64(1)}, {"label+property", "Chunk", []any{"id"}, int64(3)}}
	tb.schema.vectors = [][]any{{"chunk_embedding_v0", "Chunk", "embedding", int64(1024), int64(3), "cos", int64(3)},
		{"chunk_embedding", "Chunk", "embedding", int64(1024), int64(3), "cos", int64(3)}}
	st, err := tb.sink.Ensure(t.Context(), testSchema(3))
	require.NoError(t, err)
	require.Equal(t, []string{"SHOW INDEX INFO", "SHOW VECTOR INDEX INFO", "DROP VECTOR INDEX `chunk_embedding_v0`"},
		texts(tb.srv.Queries()))
	require.Equal(t, 3, st.Statements)

	tb.srv.Reset()
	b := testBatch()
	b.NodeUpserts[1].Props["embedding"] = []float32{1, 2, 3, 4}
	_, err = tb.sink.Write(t.Context(), b)
	require.ErrorContains(t, err, `"chunk_embedding" has 3`)
	require.Empty(t, tb.srv.Queries())
}
