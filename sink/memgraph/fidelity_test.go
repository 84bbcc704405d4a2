package memgraph

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/bolttest"
	"github.com/kgsync/kgsync/sink"
)

// emulated starts a Bolt server emulating Memgraph with mg and a Sink of
// pipeline on it.
func emulated(t *testing.T, mg bolttest.Memgraph, pipeline string, mod func(*Config)) (*bolttest.Server, *bolttest.Schema, *Sink) {
	t.Helper()
	srv := bolttest.Start(t)
	sc := srv.EmulateMemgraph(mg)
	cfg := Config{URI: srv.URI(), Pipeline: pipeline, Timeout: 5 * time.Second,
		SleepFunc: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(t.Context(), cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close(context.Background())) })
	srv.Reset()
	return srv, sc, s
}

func edgeSchema() sink.Schema {
	s := testSchema(3)
	s.Edges = []sink.EdgeType{
		{Type: "CROSS_REF", Keyed: true, Properties: []string{"text"}},
		{Type: "MANDATORY", Keyed: true, Properties: []string{"note"}},
		{Type: "NEXT"},
	}
	return s
}

// TestEdgePropertiesOff (item 1): on a Memgraph started without
// --storage-properties-on-edges, Ensure of a schema whose edges carry
// properties fails naming the flag and those edges; a schema without them
// works and its edge writes set no property.
func TestEdgePropertiesOff(t *testing.T) {
	t.Parallel()
	srv, _, s := emulated(t, bolttest.Memgraph{NoEdgeProperties: true}, "docs", nil)
	_, err := s.Ensure(t.Context(), edgeSchema())
	require.ErrorContains(t, err, "--storage-properties-on-edges=true")
	require.ErrorContains(t, err, "CROSS_REF (_key, text)")
	require.ErrorContains(t, err, "MANDATORY (_key, note)")
	require.NotContains(t, err.Error(), "NEXT")
	for _, q := range srv.Queries() {
		require.False(t, q.Committed && strings.HasPrefix(q.Text, "CREATE (a:`kgsync_probe`)"), "the probe is rolled back")
	}

	info, err := s.Server(t.Context())
	require.NoError(t, err)
	require.False(t, info.EdgeProperties)
	require.Equal(t, "3.12.0", info.Version)

	_, err = s.Ensure(t.Context(), testSchema(3))
	require.NoError(t, err)
	_, err = s.Write(t.Context(), testBatch())
	require.NoError(t, err, "an edge without properties needs no flag")

	// A batch with an edge property is refused before it is sent.
	srv.Reset()
	b := testBatch()
	b.EdgeUpserts[0].Props = map[string]any{"position": int64(0)}
	_, err = s.Write(t.Context(), b)
	require.ErrorContains(t, err, "--storage-properties-on-edges=true")
	require.ErrorContains(t, err, "HAS_CHUNK")
	require.Empty(t, srv.Queries())
}

func TestEdgePropertiesOn(t *testing.T) {
	t.Parallel()
	_, _, s := emulated(t, bolttest.Memgraph{}, "docs", nil)
	_, err := s.Ensure(t.Context(), edgeSchema())
	require.NoError(t, err)
	info, err := s.Server(t.Context())
	require.NoError(t, err)
	require.True(t, info.EdgeProperties)
}

// TestVersionRefused: SHOW VECTOR INDEX INFO needs 3.1.
func TestVersionRefused(t *testing.T) {
	t.Parallel()
	_, _, s := emulated(t, bolttest.Memgraph{Version: "3.0.0"}, "docs", nil)
	_, err := s.Ensure(t.Context(), testSchema(3))
	require.ErrorContains(t, err, "Memgraph 3.0.0")
	require.ErrorContains(t, err, "3.1")
}

// TestVectorIndexCreationChecked (item 4): from 3.8 a failed CREATE VECTOR
// INDEX is only a notification; Ensure reads it and fails naming the index.
func TestVectorIndexCreationChecked(t *testing.T) {
	t.Parallel()
	_, sc, s := emulated(t, bolttest.Memgraph{Version: "3.8.0"}, "docs", nil)
	sc.RejectVectorIndex("chunk_embedding")
	_, err := s.Ensure(t.Context(), testSchema(3))
	require.ErrorContains(t, err, `vector index "chunk_embedding"`)
	require.ErrorContains(t, err, "Error while creating vector index")
}

// TestVectorIndexOlderServers: on every supported version the sink reads
// SHOW VECTOR INDEX INFO's columns and SHOW INDEX INFO's property (a string
// before 3.2) and does not create what exists.
func TestVectorIndexOlderServers(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"3.1.0", "3.3.0", "3.7.0", "3.8.0", "3.11.0"} {
		srv, sc, s := emulated(t, bolttest.Memgraph{Version: v}, "docs", nil)
		for range 2 {
			_, err := s.Ensure(t.Context(), testSchema(3))
			require.NoError(t, err, v)
		}
		require.Equal(t, 3, sc.VectorDimension("chunk_embedding"), v)
		n := 0
		for _, q := range srv.Queries() {
			if strings.HasPrefix(q.Text, "CREATE INDEX") || strings.HasPrefix(q.Text, "CREATE VECTOR INDEX") {
				n++
			}
		}
		require.Equal(t, 3, n, "%s: two label indexes and one vector index, each created once", v)
	}
}

// TestSharedIndexDimensionChange (item 3, Bolt): pipelines docs and tables
// share chunk_embedding; docs moves to dimension 4 while tables still
// stores 3-dimension vectors. docs removes only its own vectors and does
// not create an index the other pipeline's vectors would make fail.
func TestSharedIndexDimensionChange(t *testing.T) {
	t.Parallel()
	srv, sc, s := emulated(t, bolttest.Memgraph{}, "docs", nil)
	sc.AddVectorIndex("chunk_embedding", "Chunk", "embedding", 3)
	sc.SetVectorCounts([][]any{{"tables", int64(3), int64(120)}})
	_, err := s.Ensure(t.Context(), testSchema(4))
	require.NoError(t, err)
	var removes, creates int
	for _, q := range srv.Queries() {
		switch {
		case strings.Contains(q.Text, "REMOVE"):
			removes++
			require.Contains(t, q.Text, "WHERE n._pipeline = $pipeline AND")
			require.Equal(t, "docs", q.Params["pipeline"])
		case strings.HasPrefix(q.Text, "CREATE VECTOR INDEX"):
			creates++
		}
	}
	require.Equal(t, 1, removes)
	require.Zero(t, creates, "tables' 3-dimension vectors would make the creation fail")
	require.Zero(t, sc.VectorDimension("chunk_embedding"))

	// Once tables moved too, the next Ensure creates the index.
	sc.SetVectorCounts([][]any{{"tables", int64(4), int64(120)}})
	_, err = s.Ensure(t.Context(), testSchema(4))
	require.NoError(t, err)
	require.Equal(t, 4, sc.VectorDimension("chunk_embedding"))
}

// TestSerializationErrorRetried (item 5).
func TestSerializationErrorRetried(t *testing.T) {
	t.Parallel()
	srv, _, s := emulated(t, bolttest.Memgraph{}, "docs", nil)
	srv.FailNext(1, func(q string) bool { return strings.Contains(q, "MERGE") }, bolttest.Failure{
		Code: bolttest.CodeClient, OnCommit: true,
		Message: "Unable to commit due to serialization error. Try retrying this transaction when the conflicting transaction is finished.",
	})
	st, err := s.Write(t.Context(), testBatch())
	require.NoError(t, err)
	require.Equal(t, 1, st.Retries)
}

// TestDeleteBatches (item 5): a batch's node deletions run in transactions
// of at most DeleteBatchSize rows, before the rest of the batch.
func TestDeleteBatches(t *testing.T) {
	t.Parallel()
	srv, _, s := emulated(t, bolttest.Memgraph{}, "docs", func(c *Config) { c.DeleteBatchSize = 100; c.BatchSize = 40 })
	b := testBatch()
	for i := range 250 {
		b.DeleteNodes = append(b.DeleteNodes, sink.NodeRef{Label: "Gone", ID: fmt.Sprintf("g%03d", i)})
	}
	st, err := s.Write(t.Context(), b)
	require.NoError(t, err)
	txRows := map[int]int{}
	var txs []int
	for _, q := range srv.Committed() {
		if strings.Contains(q.Text, "DETACH DELETE") {
			if _, ok := txRows[q.Tx]; !ok {
				txs = append(txs, q.Tx)
			}
			txRows[q.Tx] += len(q.Params["rows"].([]any))
		}
	}
	require.Len(t, txs, 3)
	require.Equal(t, 100, txRows[txs[0]])
	require.Equal(t, 100, txRows[txs[1]])
	require.Equal(t, 51, txRows[txs[2]], "the last deletion transaction carries the rest of the batch too")
	require.Equal(t, 3, st.Batches)
}

// TestVectorIndexCreationRace: two pipelines sharing chunk_embedding
// ensure it at the same moment; the one whose CREATE comes second gets
// "Given vector index already exists." (3.0–3.7) or the notification
// "Error while creating vector index …" (3.8 and later) although an
// identical index now exists: that is success. An index the other client
// made with another dimension stays an error.
func TestVectorIndexCreationRace(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"3.1.0", "3.7.0", "3.8.0", "3.12.0"} {
		_, sc, s := emulated(t, bolttest.Memgraph{Version: v}, "docs", nil)
		sc.RaceVectorIndex("chunk_embedding", 0)
		_, err := s.Ensure(t.Context(), testSchema(3))
		require.NoError(t, err, v)
		require.Equal(t, 3, sc.VectorDimension("chunk_embedding"), v)

		_, sc, s = emulated(t, bolttest.Memgraph{Version: v}, "docs", nil)
		sc.RaceVectorIndex("chunk_embedding", 5)
		_, err = s.Ensure(t.Context(), testSchema(3))
		require.ErrorContains(t, err, `vector index "chunk_embedding"`, v)
		require.ErrorContains(t, err, "dimension 5", v)
	}
}

// TestVersionTable: on each version the Bolt sink does what its row of
// sink.MemgraphRanges (docs/memgraph-support.md) says: text indexes and
// text search only where the row has them (before 3.6 the property-list
// CREATE TEXT INDEX is a syntax error, on 3.5 it needs an experimental
// flag, and text_search.search has no score there), the limit positional
// on 3.6–3.10 and in the config map from 3.11; Check (validate --online,
// /readyz) reports the same and passes.
func TestVersionTable(t *testing.T) {
	t.Parallel()
	sch := testSchema(3)
	sch.TextIndexes = []sink.TextIndex{{Name: "chunk_lex", Label: "Chunk", Properties: []string{"lex"}}}
	for _, v := range []string{"3.1.0", "3.4.0", "3.5.0", "3.6.0", "3.7.0", "3.8.0", "3.10.0", "3.11.0", "3.12.0"} {
		row, err := sink.MemgraphFeatures(v)
		require.NoError(t, err)
		srv, sc, s := emulated(t, bolttest.Memgraph{Version: v}, "docs", nil)
		info, err := s.Check(t.Context(), sch)
		require.NoError(t, err, v)
		require.Equal(t, row, info.Features, v)
		require.Equal(t, row.TextIndexes, info.TextSearch, v)
		_, err = s.Ensure(t.Context(), sch)
		require.NoError(t, err, v)
		require.Equal(t, 3, sc.VectorDimension("chunk_embedding"), v)
		if !row.TextIndexes {
			require.Empty(t, sc.TextIndexes(), v)
			srv.Reset()
			_, err = s.TextSearch(t.Context(), "chunk_lex", "lex", []string{"proxi"}, 5)
			require.ErrorContains(t, err, "no text search", v)
			require.ErrorContains(t, err, "kgsync's state", v)
			require.Empty(t, srv.Queries(), "%s: nothing sent", v)
			continue
		}
		require.Equal(t, []string{"chunk_lex"}, sc.TextIndexes(), v)
		srv.Respond(func(q bolttest.Query) ([]string, [][]any, bool) {
			if strings.HasPrefix(q.Text, "CALL text_search.search") {
				return []string{"fetched", "hits"}, [][]any{{int64(0), []any{}}}, true
			}
			return nil, nil, false
		})
		srv.Reset()
		_, err = s.TextSearch(t.Context(), "chunk_lex", "lex", []string{"proxi"}, 5)
		require.NoError(t, err, v)
		qs := srv.Queries()
		require.Len(t, qs, 1, v)
		if row.TextLimitInConfig {
			require.Contains(t, qs[0].Text, "{limit: $limit}", v)
		} else {
			require.Contains(t, qs[0].Text, "text_search.search($index, $query, $limit)", v)
		}
	}
}

// TestProbeLeavesNothingInAnalyticalMode: in IN_MEMORY_ANALYTICAL storage
// a rollback undoes nothing, so the edge-property probe must remove its
// own nodes: on success in the probe query itself, after a failure (no
// edge properties: the CREATE ran, the SET failed) with a committed
// DETACH DELETE of the probe's label.
func TestProbeLeavesNothingInAnalyticalMode(t *testing.T) {
	t.Parallel()
	for _, noProps := range []bool{false, true} {
		srv, _, s := emulated(t, bolttest.Memgraph{Analytical: true, NoEdgeProperties: noProps}, "docs", nil)
		info, err := s.Server(t.Context())
		require.NoError(t, err)
		require.Equal(t, !noProps, info.EdgeProperties)
		var probe, cleanup *bolttest.Query
		for _, q := range srv.Queries() {
			switch {
			case strings.HasPrefix(q.Text, "CREATE (a:`kgsync_probe`)"):
				probe = &q
			case strings.Contains(q.Text, "kgsync_probe") && strings.Contains(q.Text, "DETACH DELETE"):
				cleanup = &q
			}
		}
		require.NotNil(t, probe)
		if !noProps {
			require.Contains(t, probe.Text, "DETACH DELETE a, b", "the probe deletes its nodes")
			require.Nil(t, cleanup)
			continue
		}
		require.NotNil(t, cleanup, "a failed probe's nodes are removed")
		require.True(t, cleanup.Committed)
		require.Zero(t, cleanup.Tx, "auto-commit")
	}
}
