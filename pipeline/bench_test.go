package pipeline_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/files"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

func benchPipeline(b *testing.B, root string) *pipeline.Pipeline {
	b.Helper()
	store, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "state.db"))
	require.NoError(b, err)
	b.Cleanup(func() { _ = store.Close() })
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(b, err)
	src, err := files.New("docs", config.FilesSource{Root: root, Anchor: "Document", MaxFileBytes: 64 << 20}, chunker.Formats(), nil)
	require.NoError(b, err)
	return &pipeline.Pipeline{
		Name: "docs", Sources: []sources.Source{src}, Embedder: hashing.New("hashing-v1", 384),
		Sink: graphtest.New(), Store: store, BatchSize: 64, MaxDeleteRatio: 1, Fingerprint: 1,
		Chunking: chunker.Options{MaxTokens: 256, OverlapTokens: 32, Tokenizer: tok},
	}
}

func benchCorpus(b *testing.B) (string, int64) {
	b.Helper()
	src := corpusDir(b)
	dst := b.TempDir()
	var total int64
	for _, n := range allDocs {
		body, err := os.ReadFile(filepath.Join(src, n))
		require.NoError(b, err)
		require.NoError(b, os.WriteFile(filepath.Join(dst, n), body, 0o644))
		total += int64(len(body))
	}
	return dst, total
}

// BenchmarkFirstSync syncs the six corpus documents into empty state.
func BenchmarkFirstSync(b *testing.B) {
	root, size := benchCorpus(b)
	b.SetBytes(size)
	for b.Loop() {
		b.StopTimer()
		p := benchPipeline(b, root)
		b.StartTimer()
		_, err := p.Run(b.Context(), state.TriggerManual, pipeline.Mode{})
		require.NoError(b, err)
	}
}

// BenchmarkNoopResync re-syncs the six unchanged corpus documents.
func BenchmarkNoopResync(b *testing.B) {
	root, size := benchCorpus(b)
	b.SetBytes(size)
	p := benchPipeline(b, root)
	_, err := p.Run(b.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(b, err)
	for b.Loop() {
		res, err := p.Run(b.Context(), state.TriggerManual, pipeline.Mode{})
		require.NoError(b, err)
		require.Zero(b, res.Run.Counts.ChunksEmbedded)
	}
}
