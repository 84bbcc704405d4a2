package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/daemon"
	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

func TestVerifyCypherlSinkSaysItCannot(t *testing.T) {
	t.Parallel()
	cfg := quickstart(t)
	code, _, errOut := kgsync(t, "verify", "docs", "--config", cfg)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "the cypherl sink writes files; verify needs a readable graph (memgraph)")
	code, _, _ = kgsync(t, "verify", "--config", cfg)
	require.Equal(t, 2, code, "verify needs exactly one pipeline")
}

// memgraphConfig writes, next to the quick start's config, one whose sink
// is Memgraph, sharing its state; buildPipeline is replaced so that this
// sink is the in-memory graph g (no server needed), until the test ends.
func memgraphConfig(t *testing.T, cfg string, g *graphtest.Graph) string {
	t.Helper()
	body, err := os.ReadFile(cfg)
	require.NoError(t, err)
	old := "sink:\n  type: cypherl\n  cypherl:\n    dir: .kgsync/cypherl\n"
	require.Contains(t, string(body), old)
	out := filepath.Join(filepath.Dir(cfg), "memgraph.yaml")
	require.NoError(t, os.WriteFile(out, []byte(strings.Replace(string(body), old,
		"sink:\n  type: memgraph\n  memgraph:\n    uri: bolt://127.0.0.1:7687\n", 1)), 0o644))
	prev := buildPipeline
	buildPipeline = func(ctx context.Context, c *config.Config, pc *config.Pipeline, store state.Store, log *slog.Logger) (*pipeline.Pipeline, error) {
		require.Equal(t, "memgraph", pc.Sink.Type)
		files := *pc
		files.Sink = &config.Sink{Type: "cypherl", Cypherl: &config.CypherlSink{Dir: t.TempDir()}}
		p, err := pipeline.Build(ctx, c, &files, store, log)
		if err != nil {
			return nil, err
		}
		_ = p.Sink.Close(ctx)
		p.Sink = g
		return p, nil
	}
	t.Cleanup(func() { buildPipeline = prev })
	return out
}

// Not parallel: it replaces buildPipeline.
func TestVerifyCommandFindsAndRepairsAnEmptyGraph(t *testing.T) {
	cfg := quickstart(t)
	code, _, errOut := kgsync(t, "sync", "docs", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	g := graphtest.New() // Memgraph restarted empty; state says done
	mg := memgraphConfig(t, cfg, g)

	code, out, errOut := kgsync(t, "verify", "docs", "--config", mg)
	require.Equal(t, 1, code, out)
	require.Contains(t, errOut, "run kgsync verify docs --repair")
	require.Contains(t, out, "docs: 3 records in state, 3 compared node by node")
	require.Contains(t, out, "missing      Document docs:rfc7239.txt (record docs/rfc7239.txt)")
	require.Contains(t, out, "vector_index Chunk chunk_embedding: missing (want Chunk.embedding, dimension 384)")

	code, out, errOut = kgsync(t, "verify", "docs", "--config", mg, "--repair", "--json")
	require.Equal(t, 0, code, errOut)
	var rep pipeline.VerifyReport
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &rep))
	require.Equal(t, 3, rep.Repaired.Rewritten)
	require.Zero(t, rep.Repaired.Counts.ChunksEmbedded, "the repair embeds nothing")
	chunks := 0
	for _, c := range rep.Counts {
		require.Zero(t, c.Graph)
		if c.Label == pipeline.LabelChunk {
			chunks = c.State
		}
	}
	require.Positive(t, chunks)
	require.Equal(t, chunks, g.Count(pipeline.LabelChunk))

	code, out, errOut = kgsync(t, "verify", "docs", "--config", mg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "docs: the graph matches state")

	// The daemon's check: counts only.
	loaded, err := config.Load(mg)
	require.NoError(t, err)
	store, err := pipeline.OpenStore(t.Context(), loaded.State)
	require.NoError(t, err)
	defer store.Close()
	check := daemonVerify(loaded, store, slog.New(slog.DiscardHandler))
	n, err := check(t.Context(), "docs")
	require.NoError(t, err)
	require.Zero(t, n)
	nodes, indexes := g.Count(""), len(g.Schema().VectorIndexes)
	g.Wipe()
	n, err = check(t.Context(), "docs")
	require.NoError(t, err)
	require.Equal(t, nodes+indexes, n, "every node the repair wrote plus every vector index")

	files, err := config.Load(cfg)
	require.NoError(t, err)
	_, err = daemonVerify(files, store, slog.New(slog.DiscardHandler))(t.Context(), "docs")
	require.ErrorIs(t, err, daemon.ErrVerifySkipped)
}
