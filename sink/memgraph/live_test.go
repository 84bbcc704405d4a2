package memgraph

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sink"
)

// TestLive runs against a real Memgraph (3.1 or later, for SHOW VECTOR
// INDEX INFO) when KGSYNC_TEST_MEMGRAPH_URI is set, e.g.
// bolt://127.0.0.1:7687 (KGSYNC_TEST_MEMGRAPH_USER / _PASSWORD optional).
// Memgraph has no schemas, so the test's labels and index names carry a
// unique prefix and are removed at the end.
func TestLive(t *testing.T) {
	uri := os.Getenv("KGSYNC_TEST_MEMGRAPH_URI")
	if uri == "" {
		t.Skip("set KGSYNC_TEST_MEMGRAPH_URI=bolt://host:7687 to run the live Memgraph suite")
	}
	ctx := t.Context()
	open := func(pipeline string) *Sink {
		s, err := New(ctx, Config{URI: uri, Pipeline: pipeline, Username: os.Getenv("KGSYNC_TEST_MEMGRAPH_USER"),
			Password: os.Getenv("KGSYNC_TEST_MEMGRAPH_PASSWORD"), BatchSize: 7, DeleteBatchSize: 2}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close(context.Background())) })
		return s
	}
	s, other := open("live"), open("live_other")
	info, err := s.Server(ctx)
	require.NoError(t, err)
	t.Logf("Memgraph %s, edge properties %v", info.Version, info.EdgeProperties)

	prefix := fmt.Sprintf("KgTest%d", time.Now().UnixNano())
	doc, chunk := prefix+"_Doc", prefix+"_Chunk"
	vindex := prefix + "_chunk_embedding"
	schema := sink.Schema{
		Indexes:       []sink.Index{{Label: doc, Property: "id"}, {Label: chunk, Property: "id"}},
		VectorIndexes: []sink.VectorIndex{{Name: vindex, Label: chunk, Property: "embedding", Dimension: 3, Capacity: 100}},
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, q := range []string{
			"MATCH (n:" + sink.QuoteName(doc) + ") DETACH DELETE n",
			"MATCH (n:" + sink.QuoteName(chunk) + ") DETACH DELETE n",
			"DROP VECTOR INDEX " + sink.QuoteName(vindex),
			"DROP VECTOR INDEX " + sink.QuoteName(vindex+"_bad"),
			"DROP INDEX ON :" + sink.QuoteName(doc) + "(id)",
			"DROP INDEX ON :" + sink.QuoteName(chunk) + "(id)",
		} {
			_, _, _, err := s.runAuto(ctx, sink.Statement{Query: q, Kind: "cleanup", Target: prefix})
			require.NoError(t, err, q)
		}
	})

	_, err = s.Ensure(ctx, schema)
	require.NoError(t, err)
	st, err := s.Ensure(ctx, schema)
	require.NoError(t, err)
	require.Equal(t, 2, st.Statements, "second Ensure only lists indexes")

	b := &sink.Batch{}
	vecs := [][]float32{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	for d := range 3 {
		did := fmt.Sprintf("doc%d", d)
		b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: doc, ID: did, Props: map[string]any{"title": "it's \"doc\"; " + did}})
		for c := range 10 {
			cid := fmt.Sprintf("%s#%d", did, c)
			b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: chunk, ID: cid,
				Props: map[string]any{"embedding": vecs[(d+c)%3], "position": int64(c)}})
			b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: "HAS_CHUNK",
				From: sink.NodeRef{Label: doc, ID: did}, To: sink.NodeRef{Label: chunk, ID: cid}})
		}
	}
	_, err = s.Write(ctx, b)
	require.NoError(t, err)
	_, err = s.Write(ctx, b) // idempotent
	require.NoError(t, err)

	count := func(q string) int64 {
		t.Helper()
		_, rows, _, err := s.runAuto(ctx, sink.Statement{Query: q, Kind: "count", Target: prefix})
		require.NoError(t, err, q)
		require.Len(t, rows, 1)
		return rows[0][0].(int64)
	}
	require.Equal(t, int64(3), count("MATCH (n:"+sink.QuoteName(doc)+") RETURN count(n)"))
	require.Equal(t, int64(30), count("MATCH (n:"+sink.QuoteName(chunk)+") RETURN count(n)"))
	require.Equal(t, int64(30), count("MATCH (:"+sink.QuoteName(doc)+")-[e:HAS_CHUNK]->() RETURN count(e)"))

	hits, err := s.VectorSearch(ctx, vindex, 5, []float32{0, 0.1, 1})
	require.NoError(t, err)
	require.Len(t, hits, 5)
	// (d+c)%3 == 2 has vector (0,0,1), nearest to the query.
	for _, h := range hits {
		var d, c int
		_, err = fmt.Sscanf(h.ID, "doc%d#%d", &d, &c)
		require.NoError(t, err, h.ID)
		require.Equal(t, 2, (d+c)%3, "hit %s should carry (0,0,1)", h.ID)
		require.Greater(t, h.Similarity, 0.9)
	}

	// Prune and delete.
	_, err = s.Write(ctx, &sink.Batch{
		DeleteNodes: []sink.NodeRef{{Label: doc, ID: "doc2"}},
		EdgePrunes: []sink.EdgePrune{{Type: "HAS_CHUNK", From: sink.NodeRef{Label: doc, ID: "doc0"}, ToLabel: chunk,
			Keep: []string{"doc0#0"}}},
	})
	require.NoError(t, err)
	require.Equal(t, int64(2), count("MATCH (n:"+sink.QuoteName(doc)+") RETURN count(n)"))
	require.Equal(t, int64(11), count("MATCH (:"+sink.QuoteName(doc)+")-[e:HAS_CHUNK]->() RETURN count(e)"))

	// Item 1: edge properties need --storage-properties-on-edges; Ensure
	// says so for a schema that needs them, and keyed edges work when on.
	keyed := schema
	keyed.Edges = []sink.EdgeType{{Type: "CITES", Keyed: true, Properties: []string{"text"}}}
	_, err = s.Ensure(ctx, keyed)
	cites := &sink.Batch{EdgeUpserts: []sink.EdgeUpsert{{Type: "CITES", From: sink.NodeRef{Label: doc, ID: "doc0"},
		To: sink.NodeRef{Label: doc, ID: "doc1"}, Key: "k1", Props: map[string]any{"text": "see doc1"}}}}
	if info.EdgeProperties {
		require.NoError(t, err)
		_, err = s.Write(ctx, cites)
		require.NoError(t, err)
		require.Equal(t, int64(1), count("MATCH ()-[e:CITES {_key: 'k1'}]->() RETURN count(e)"))
	} else {
		require.ErrorContains(t, err, FlagEdgeProperties)
		_, err = s.Write(ctx, cites)
		require.ErrorContains(t, err, FlagEdgeProperties)
	}

	// Item 3: another pipeline's nodes with the same label and ids are
	// other nodes, and a dimension change of one pipeline removes only its
	// own vectors.
	_, err = other.Ensure(ctx, schema)
	require.NoError(t, err)
	_, err = other.Write(ctx, b)
	require.NoError(t, err)
	require.Equal(t, int64(60), count("MATCH (n:"+sink.QuoteName(chunk)+") RETURN count(n)"))
	_, err = s.Write(ctx, &sink.Batch{DeleteNodes: []sink.NodeRef{{Label: doc, ID: "doc1"}}})
	require.NoError(t, err)
	require.Equal(t, int64(3), count("MATCH (n:"+sink.QuoteName(doc)+" {_pipeline: 'live_other'}) RETURN count(n)"))

	schema.VectorIndexes[0].Dimension = 4
	_, err = s.Ensure(ctx, schema)
	require.NoError(t, err)
	require.Equal(t, int64(0), count("MATCH (n:"+sink.QuoteName(chunk)+" {_pipeline: 'live'}) WHERE n.embedding IS NOT NULL RETURN count(n)"))
	require.Equal(t, int64(30), count("MATCH (n:"+sink.QuoteName(chunk)+" {_pipeline: 'live_other'}) WHERE n.embedding IS NOT NULL RETURN count(n)"),
		"the other pipeline keeps its vectors")
	indexes, err := s.VectorIndexes(ctx)
	require.NoError(t, err)
	for _, vi := range indexes {
		require.NotEqual(t, vindex, vi.Name, "not created while the other pipeline's 3-dimension vectors are there")
	}
	_, err = other.Ensure(ctx, schema) // the other pipeline moves too: now it is created
	require.NoError(t, err)
	indexes, err = s.VectorIndexes(ctx)
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(indexes, func(vi sink.VectorIndex) bool { return vi.Name == vindex && vi.Dimension == 4 }))

	// Item 4: a creation the server refuses (existing values that are no
	// vectors) is an error naming the index, whether the server reports it
	// as an error (3.0–3.7) or as a notification (3.8+).
	_, err = s.Write(ctx, &sink.Batch{NodeUpserts: []sink.NodeUpsert{{Label: chunk, ID: "bad", Props: map[string]any{"bad": "not a vector"}}}})
	require.NoError(t, err)
	bad := schema
	bad.VectorIndexes = []sink.VectorIndex{{Name: vindex + "_bad", Label: chunk, Property: "bad", Dimension: 3, Capacity: 10}}
	_, err = s.Ensure(ctx, bad)
	require.ErrorContains(t, err, vindex+"_bad")
}

// TestLiveTextSearch checks the text index facts of
// docs/memgraph-text-search.md against a real Memgraph (3.6 or later): a
// second Ensure creates nothing, text_search.search ranks by BM25 over the
// property's words, and a query term that is no word is refused before it
// is sent.
func TestLiveTextSearch(t *testing.T) {
	uri := os.Getenv("KGSYNC_TEST_MEMGRAPH_URI")
	if uri == "" {
		t.Skip("set KGSYNC_TEST_MEMGRAPH_URI=bolt://host:7687 to run the live Memgraph suite")
	}
	ctx := t.Context()
	s, err := New(ctx, Config{URI: uri, Pipeline: "live_text", Username: os.Getenv("KGSYNC_TEST_MEMGRAPH_USER"),
		Password: os.Getenv("KGSYNC_TEST_MEMGRAPH_PASSWORD")}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close(context.Background())) })
	prefix := fmt.Sprintf("KgText%d", time.Now().UnixNano())
	label, index := prefix+"_Chunk", prefix+"_chunk_lex"
	textSearch := true // the server has text indexes (3.6 or later)
	t.Cleanup(func() {
		for _, q := range []string{"MATCH (n:" + sink.QuoteName(label) + ") DETACH DELETE n", "DROP TEXT INDEX " + sink.QuoteName(index),
			"DROP INDEX ON :" + sink.QuoteName(label) + "(id)"} {
			if !textSearch && strings.HasPrefix(q, "DROP TEXT INDEX") {
				continue
			}
			_, _, _, err := s.runAuto(context.Background(), sink.Statement{Query: q, Kind: "cleanup", Target: prefix})
			require.NoError(t, err, q)
		}
	})
	schema := sink.Schema{Indexes: []sink.Index{{Label: label, Property: "id"}},
		TextIndexes: []sink.TextIndex{{Name: index, Label: label, Properties: []string{"lex"}}}}
	_, err = s.Ensure(ctx, schema)
	require.NoError(t, err)
	info, err := s.Server(ctx)
	require.NoError(t, err)
	textSearch = info.TextSearch
	if !info.TextSearch {
		// Memgraph before 3.6 (docs/memgraph-support.md): no text index,
		// and text search is refused before any query.
		_, err = s.TextSearch(ctx, index, "lex", []string{"proxi"}, 10)
		require.ErrorContains(t, err, "no text search")
		return
	}
	st, err := s.Ensure(ctx, schema)
	require.NoError(t, err)
	require.Equal(t, 1, st.Statements, "SHOW INDEX INFO lists the text index: nothing to create")

	_, err = s.Write(ctx, &sink.Batch{NodeUpserts: []sink.NodeUpsert{
		{Label: label, ID: "a", Props: map[string]any{"lex": "proxi forward header proxi"}},
		{Label: label, ID: "b", Props: map[string]any{"lex": "header field registri"}},
		{Label: label, ID: "c", Props: map[string]any{"lex": "президент избира срок"}},
	}})
	require.NoError(t, err)
	// Another pipeline's node in the same index, scoring above all of ours,
	// is never returned.
	other, err := New(ctx, Config{URI: uri, Pipeline: "live_text_other", Username: os.Getenv("KGSYNC_TEST_MEMGRAPH_USER"),
		Password: os.Getenv("KGSYNC_TEST_MEMGRAPH_PASSWORD")}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, other.Close(context.Background())) })
	_, err = other.Write(ctx, &sink.Batch{NodeUpserts: []sink.NodeUpsert{
		{Label: label, ID: "z", Props: map[string]any{"lex": "proxi header proxi header"}},
	}})
	require.NoError(t, err)
	var hits []Hit
	require.Eventually(t, func() bool { // the index sees committed writes
		hits, err = s.TextSearch(ctx, index, "lex", []string{"proxi", "header"}, 10)
		return err == nil && len(hits) == 2
	}, 10*time.Second, 100*time.Millisecond, "err %v, hits %v", err, hits)
	require.Equal(t, "a", hits[0].ID, "two terms, one twice: the best BM25")
	require.Greater(t, hits[0].Similarity, hits[1].Similarity)
	hits, err = s.TextSearch(ctx, index, "lex", []string{"избира"}, 10)
	require.NoError(t, err)
	require.Len(t, hits, 1, "Cyrillic words are tokens as they are")
	_, err = s.TextSearch(ctx, index, "lex", []string{"data.lex:*"}, 10)
	require.ErrorContains(t, err, "not a word")
}
