package cypherl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	for version, minors := range replayTargets {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			testReplaySharedIndex(t, version, minors)
		})
	}
}

// replayTargets are the versions the files are written for
// (WithMemgraphVersion), each with the minor versions of 3.x whose
// answers the replay gives: the rows of sink.MemgraphRanges that differ
// in vector index DDL.
var replayTargets = map[string][]int{"3.1": {1, 5}, "3.7": {6, 7}, "3.8": {8, 10}, "3.12": {11, 12}}

func testReplaySharedIndex(t *testing.T, version string, minors []int) {
	dir := t.TempDir()
	docs, err := New(dir, "docs", sink.Memgraph, WithMemgraphVersion(version))
	require.NoError(t, err)
	tables, err := New(dir, "tables", sink.Memgraph, WithMemgraphVersion(version))
	require.NoError(t, err)

	writeChunks(t, docs, 1, 3, 3)
	writeChunks(t, tables, 2, 2, 3)
	firstDocs, firstTables := docs.Files(), tables.Files()

	for _, minor := range minors {
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

	// Both change to dimension 4 (every command refuses a shared index
	// with two dimensions) and rewrite their chunks.
	writeChunks(t, docs, 3, 3, 4)
	writeChunks(t, tables, 4, 2, 4)

	for _, minor := range minors {
		// From scratch, twice: every numbered file, then the vector index files.
		g := crashtest.NewGraphMinor(minor)
		for range 2 {
			require.NoError(t, replay(g, filepath.Join(dir, "*", "0*.cypherl"), filepath.Join(dir, "*", VectorIndexFile)), "3.%d", minor)
			require.Equal(t, 4, g.Vectors["chunk_embedding"].Dimension)
			require.Len(t, g.Nodes, 5)
			for k, n := range g.Nodes {
				require.Len(t, n["embedding"], 4, "%v", k)
			}
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

// TestReplayTwiceAfterDimensionChange: run 1 writes chunks of dimension 3,
// run 2 of dimension 4. Replaying the whole directory from scratch, and
// then again onto the loaded graph (mgconsole, `cat dir/*.cypherl`), must
// end with the index of dimension 4 and only vectors of dimension 4, on
// every version: the second replay met the index of dimension 4 left by
// the first one while run 1's file wrote vectors of dimension 3, and
// Memgraph refuses them.
func TestReplayTwiceAfterDimensionChange(t *testing.T) {
	t.Parallel()
	for version, minors := range replayTargets {
		dir := t.TempDir()
		docs, err := New(dir, "docs", sink.Memgraph, WithMemgraphVersion(version))
		require.NoError(t, err)
		writeChunks(t, docs, 1, 3, 3)
		writeChunks(t, docs, 2, 3, 4)
		require.NoError(t, docs.Close(t.Context()))
		replayTwice(t, filepath.Join(dir, "docs", "*.cypherl"), minors)
	}
}

// replayTwice replays the files of pattern from scratch and again onto
// the loaded graph, answering like each 3.minor, and checks the end: the
// index of dimension 4 over 3 chunks with vectors of dimension 4.
func replayTwice(t *testing.T, pattern string, minors []int) {
	t.Helper()
	for _, minor := range minors {
		g := crashtest.NewGraphMinor(minor)
		for i := range 2 {
			require.NoError(t, replay(g, pattern), "3.%d, replay %d", minor, i+1)
			require.Equal(t, crashtest.VectorIndex{Label: "Chunk", Property: "embedding", Dimension: 4}, g.Vectors["chunk_embedding"],
				"3.%d, replay %d", minor, i+1)
			require.Len(t, g.Nodes, 3)
			for k, n := range g.Nodes {
				require.Len(t, n["embedding"], 4, "3.%d, replay %d: %v", minor, i+1, k)
			}
		}
	}
}

// TestReplayEachVersion: for each supported row of sink.MemgraphRanges
// (docs/memgraph-support.md), files written for its versions replay from
// scratch twice on each of them with a replayer as strict as that
// version's grammar and server, and create the text indexes only where
// the row has them; files written for 3.6 or later fail on 3.4 (a syntax
// error) and on 3.5 without the experimental flag, as Memgraph does.
func TestReplayEachVersion(t *testing.T) {
	t.Parallel()
	sch := schema(3)
	sch.TextIndexes = []sink.TextIndex{{Name: "chunk_lex", Label: "Chunk", Properties: []string{"lex"}}}
	write := func(version string) string {
		dir := t.TempDir()
		s, err := New(dir, "docs", sink.Memgraph, WithMemgraphVersion(version))
		require.NoError(t, err)
		for run, dim := range []int{3, 4} {
			require.NoError(t, s.Begin(int64(run+1)))
			sch.VectorIndexes[0].Dimension = dim
			_, err = s.Ensure(t.Context(), sch)
			require.NoError(t, err)
			b := &sink.Batch{}
			for i := range 3 {
				v := make([]float32, dim)
				v[i%dim] = 1
				b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: "Chunk", ID: "c" + string(rune('0'+i)),
					Props: map[string]any{"embedding": v, "lex": "word"}})
			}
			_, err = s.Write(t.Context(), b)
			require.NoError(t, err)
		}
		require.NoError(t, s.Close(t.Context()))
		return filepath.Join(dir, "docs", "*.cypherl")
	}
	for _, row := range sink.MemgraphRanges {
		if !row.Supported {
			_, err := New(t.TempDir(), "docs", sink.Memgraph, WithMemgraphVersion(fmt.Sprintf("3.%d", row.MinMinor)))
			require.ErrorContains(t, err, "3.1 or later")
			continue
		}
		maxMinor := row.MaxMinor
		if maxMinor < 0 {
			maxMinor = row.MinMinor + 1
		}
		pattern := write(fmt.Sprintf("3.%d", row.MinMinor))
		for minor := row.MinMinor; minor <= maxMinor; minor++ {
			g := crashtest.NewGraphMinor(minor)
			for pass := range 2 {
				require.NoError(t, replay(g, pattern), "%s: 3.%d, pass %d", row.Versions(), minor, pass+1)
				require.Equal(t, 4, g.Vectors["chunk_embedding"].Dimension)
				for k, n := range g.Nodes {
					require.Len(t, n["embedding"], 4, "3.%d: %v", minor, k)
				}
				require.Equal(t, row.TextIndexes, g.HasTextIndex("chunk_lex"), "3.%d", minor)
			}
		}
	}
	pattern := write("3.6")
	for _, minor := range []int{1, 4, 5} {
		err := replay(crashtest.NewGraphMinor(minor), pattern)
		require.Error(t, err, "3.%d", minor)
		require.Contains(t, strings.ToLower(err.Error()), "text", "3.%d", minor)
	}
	g := crashtest.NewGraphMinor(5)
	g.TextSearchFlag = true
	require.NoError(t, replay(g, pattern), "3.5 with --experimental-enabled=text-search")
}
