package cypherl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/crashtest"
	"github.com/kgsync/kgsync/sink"
)

// writeChunks writes n chunks of one pipeline with vectors of dim values.
func writeChunks(t *testing.T, s *Sink, run int64, n, dim int) {
	t.Helper()
	require.NoError(t, s.Begin(run))
	_, err := s.Ensure(t.Context(), schema(dim))
	require.NoError(t, err)
	b := &sink.Batch{}
	for i := range n {
		v := make([]float32, dim)
		v[i%dim] = 1
		b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: "Chunk", ID: "c" + string(rune('0'+i)),
			Props: map[string]any{"embedding": v}})
	}
	_, err = s.Write(t.Context(), b)
	require.NoError(t, err)
}

// replay applies the files matched by the patterns, in order and each
// pattern's matches in lexical order (as `cat a/*.cypherl b/*.cypherl`).
func replay(g *crashtest.Graph, patterns ...string) error {
	for _, p := range patterns {
		names, err := filepath.Glob(p)
		if err != nil {
			return err
		}
		for _, n := range names {
			data, err := os.ReadFile(n)
			if err != nil {
				return err
			}
			var st crashtest.ReplayStats
			if _, err := g.ReplayFile(data, &st); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestReplaySharedIndex: two pipelines (docs, tables) write chunks into one
// Memgraph, so they share the chunk_embedding index on :Chunk(embedding).
// Their CYPHERL must replay on Memgraph 3.0–3.7, where a second CREATE
// VECTOR INDEX of a name is an error that stops mgconsole, and on 3.8+,
// where it is a notification that leaves the old index; from scratch, twice,
// and file by file after a dimension change of both, without one
// pipeline's statements removing the other's vectors (issue: loading the
// docs file and then the tables file left the docs chunks without
// vectors).
func TestReplaySharedIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs, err := New(dir, "docs", sink.Memgraph)
	require.NoError(t, err)
	tables, err := New(dir, "tables", sink.Memgraph)
	require.NoError(t, err)

	writeChunks(t, docs, 1, 3, 3)
	writeChunks(t, tables, 2, 2, 3)
	firstDocs, firstTables := docs.Files(), tables.Files()

	for _, minor := range []int{0, 7, 8, 12} {
		// Each directory as the README says, one after the other, twice.
		g := crashtest.NewGraphMinor(minor)
		for range 2 {
			require.NoError(t, replay(g, filepath.Join(dir, "docs", "*.cypherl"), filepath.Join(dir, "tables", "*.cypherl")), "3.%d", minor)
		}
		require.Equal(t, crashtest.VectorIndex{Label: "Chunk", Property: "embedding", Dimension: 3}, g.Vectors["chunk_embedding"])
		require.Len(t, g.Nodes, 5)
		for _, n := range g.Nodes {
			require.Len(t, n["embedding"], 3)
		}
	}

	// Both change to dimension 4 (validate refuses a shared index with two
	// dimensions) and rewrite their chunks.
	writeChunks(t, docs, 3, 3, 4)
	writeChunks(t, tables, 4, 2, 4)

	for _, minor := range []int{0, 7, 8, 12} {
		// From scratch: every numbered file, then the vector index files.
		g := crashtest.NewGraphMinor(minor)
		require.NoError(t, replay(g, filepath.Join(dir, "*", "0*.cypherl"), filepath.Join(dir, "*", VectorIndexFile)), "3.%d", minor)
		require.Equal(t, 4, g.Vectors["chunk_embedding"].Dimension)
		for k, n := range g.Nodes {
			require.Len(t, n["embedding"], 4, "%v", k)
		}

		// Onto a graph that loaded the first files: the new files of docs,
		// then those of tables, then the vector index files.
		g = crashtest.NewGraphMinor(minor)
		require.NoError(t, replay(g, filepath.Join(dir, "docs", IndexFile), firstDocs[0], filepath.Join(dir, "tables", IndexFile), firstTables[0]))
		_, err := g.Apply("CREATE VECTOR INDEX `chunk_embedding` ON :`Chunk`(`embedding`) WITH CONFIG {\"dimension\": 3, \"capacity\": 1000, \"metric\": \"cos\"}")
		require.NoError(t, err)
		require.NoError(t, replay(g, docs.Files()[1], tables.Files()[1], filepath.Join(dir, "docs", VectorIndexFile),
			filepath.Join(dir, "tables", VectorIndexFile)), "3.%d", minor)
		require.Equal(t, 4, g.Vectors["chunk_embedding"].Dimension)
		require.Len(t, g.Nodes, 5)
		for k, n := range g.Nodes {
			require.Len(t, n["embedding"], 4, "%v keeps its vector", k)
		}
	}
}
