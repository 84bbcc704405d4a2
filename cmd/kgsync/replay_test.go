package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/crashtest"
	"github.com/kgsync/kgsync/sink"
)

// TestQuickstartReplayAfterDimensionChange: the quick start's two
// pipelines (docs and tables, which share chunk_embedding) sync, the
// embedder's dimension changes for both, they sync again. Their CYPHERL
// replays from scratch, and again onto the loaded graph, as the README
// says (`cat */0*.cypherl */vector-indexes.cypherl | mgconsole`), on
// every version the files are written for, and ends with every index the
// schema records and every vector of the current dimension.
func TestQuickstartReplayAfterDimensionChange(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, _, errOut := kgsync(t, "sync", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(cfg)
	require.NoError(t, err)
	changed := strings.Replace(string(data), "dimensions: 384", "dimensions: 96", 1)
	require.NotEqual(t, string(data), changed)
	require.NoError(t, os.WriteFile(cfg, []byte(changed), 0o644))
	code, _, errOut = kgsync(t, "sync", "--config", cfg)
	require.Equal(t, 0, code, errOut)

	dir := filepath.Join(filepath.Dir(cfg), ".kgsync", "cypherl")
	var want []sink.VectorIndex
	var texts []sink.TextIndex
	for _, p := range []string{"docs", "tables"} {
		var rec struct {
			VectorIndexes []sink.VectorIndex `json:"vector_indexes"`
			TextIndexes   []sink.TextIndex   `json:"text_indexes"`
		}
		data, err := os.ReadFile(filepath.Join(dir, p, "schema.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &rec))
		want = append(want, rec.VectorIndexes...)
		texts = append(texts, rec.TextIndexes...)
	}
	require.NotEmpty(t, want)
	require.NotEmpty(t, texts)
	var files []string
	for _, pattern := range []string{"*/0*.cypherl", "*/vector-indexes.cypherl"} {
		names, err := filepath.Glob(filepath.Join(dir, pattern))
		require.NoError(t, err)
		files = append(files, names...)
	}
	for _, minor := range []int{8, 12} { // the default target, 3.8
		g := crashtest.NewGraphMinor(minor)
		for pass := range 2 {
			for _, f := range files {
				data, err := os.ReadFile(f)
				require.NoError(t, err)
				var st crashtest.ReplayStats
				_, err = g.ReplayFile(data, &st)
				require.NoError(t, err, "3.%d, pass %d, %s", minor, pass+1, f)
			}
			for _, vi := range want {
				require.Equal(t, crashtest.VectorIndex{Label: vi.Label, Property: vi.Property, Dimension: 96}, g.Vectors[vi.Name],
					"3.%d, pass %d: %s", minor, pass+1, vi.Name)
			}
			for _, ti := range texts {
				require.True(t, g.HasTextIndex(ti.Name), "3.%d: text index %s", minor, ti.Name)
			}
			vectors := 0
			for k, props := range g.Nodes {
				for _, vi := range want {
					if k.Label != vi.Label || props[vi.Property] == nil {
						continue
					}
					vectors++
					require.Len(t, props[vi.Property], 96, "3.%d, pass %d: %v", minor, pass+1, k)
				}
			}
			require.Positive(t, vectors)
		}
	}
}

// TestSharedIndexDimensionChangeRefused: the quick start's pipelines share
// chunk_embedding; when only one of them changes dimension, sync and the
// daemon refuse the config before writing anything, as validate does
// (the run dropped the shared index and neither pipeline created it
// again).
func TestSharedIndexDimensionChangeRefused(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	data, err := os.ReadFile(cfg)
	require.NoError(t, err)
	changed := strings.Replace(string(data), "  - name: tables\n", "  - name: tables\n    embedder: {provider: hashing, dimensions: 96}\n", 1)
	require.NotEqual(t, string(data), changed)
	require.NoError(t, os.WriteFile(cfg, []byte(changed), 0o644))
	for _, args := range [][]string{{"sync"}, {"sync", "tables"}, {"resync", "tables", "--full"}, {"daemon", "--listen", "127.0.0.1:0"}, {"validate"}} {
		code, _, errOut := kgsync(t, append(args, "--config", cfg)...)
		require.Equal(t, 3, code, "%v: %s", args, errOut)
		require.Contains(t, errOut, `pipelines "docs" and "tables" share vector index name chunk_embedding`, "%v", args)
		require.Contains(t, errOut, "dimension 384", "%v", args)
		require.Contains(t, errOut, "dimension 96", "%v", args)
	}
	_, err = os.Stat(filepath.Join(filepath.Dir(cfg), ".kgsync", "cypherl"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written")
}

// TestSchemaSaysIdentity: a node is identified by id and _pipeline
// together; `kgsync schema` says so (markdown and JSON), and the quick
// start's query examples match nodes by both and keep their pipeline's
// search results (an assistant copying `{id: …}` alone would match
// another pipeline's node of the same label and id).
func TestSchemaSaysIdentity(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, out, errOut := kgsync(t, "schema", "tables", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "A node is identified by `id` and `_pipeline` together")
	require.Contains(t, out, "`{id: '…', _pipeline: 'tables'}`")
	code, out, errOut = kgsync(t, "schema", "tables", "--config", cfg, "--format", "json")
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Identity []string `json:"identity"`
		Anchors  []struct {
			QueryExample string `json:"query_example"`
		} `json:"anchors"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Equal(t, []string{"id", "_pipeline"}, doc.Identity)
	n := 0
	for _, a := range doc.Anchors {
		if a.QueryExample == "" {
			continue
		}
		n++
		require.Contains(t, a.QueryExample, "_pipeline", a.QueryExample)
		require.Contains(t, a.QueryExample, "'tables'", a.QueryExample)
	}
	require.Positive(t, n)
}
