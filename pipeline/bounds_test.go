package pipeline_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
)

// boundDocs are the documents of the byte-bound tests: three, each of
// many chunks.
var boundDocs = []string{"rfc7239.txt", "openchain-security-specification-1.1.md", "spdx-2.3-package-information.md"}

// watch counts b's committed batches and records the writer's bytes in
// flight as reported (Pipeline.InFlightFunc).
func (b *bundle) watch() (commits *int, inflight *[]int) {
	commits, inflight = new(int), new([]int)
	b.p.Progress = func(pipeline.Progress) { *commits++ }
	b.p.InFlightFunc = func(n int) { *inflight = append(*inflight, n) }
	return commits, inflight
}

// TestBatchChunkBytesCutsBatches: with batch_chunk_bytes of 1 byte every
// document of a folder is a batch of its own, where the default bound
// writes the folder in one; the graph is the same, a second run finds
// nothing to do, and the writer's bytes in flight end at 0.
func TestBatchChunkBytesCutsBatches(t *testing.T) {
	t.Parallel()
	ref := setup(t, copyCorpus(t, boundDocs...), 256, 32)
	ref.p.BatchSize = 100
	refCommits, refInflight := ref.watch()
	refCounts := ref.sync(t, pipeline.Mode{})
	// The folder's batch, and the one that moves the cursor at the end.
	require.Equal(t, 2, *refCommits, "the default bound leaves the folder one batch")
	require.Zero(t, refCounts.BatchesCut)
	require.Positive(t, slices.Max(*refInflight))
	require.Zero(t, (*refInflight)[len(*refInflight)-1], "nothing in flight after the run")

	b := setup(t, copyCorpus(t, boundDocs...), 256, 32)
	b.p.BatchSize = 100
	b.p.BatchChunkBytes = 1
	commits, inflight := b.watch()
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, *refCommits+len(boundDocs)-1, *commits, "a batch per document")
	require.Equal(t, len(boundDocs)-1, c.BatchesCut)
	require.Equal(t, len(boundDocs), c.RecordsNew)
	require.Positive(t, slices.Max(*inflight))
	require.Zero(t, (*inflight)[len(*inflight)-1], "nothing in flight after the run")
	require.Equal(t, snapshot(ref.graph), snapshot(b.graph))

	again := b.sync(t, pipeline.Mode{})
	require.Equal(t, len(boundDocs), again.RecordsUnchanged)
	require.Zero(t, again.SinkStatements+again.BatchesCut)
}

// TestWriterBytesHoldsOneBatch: with writer_bytes of 1 byte the writer
// takes a batch only when it holds none: the bytes in flight grow only
// from 0, and end at 0.
func TestWriterBytesHoldsOneBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, boundDocs...), 256, 32)
	b.p.BatchSize = 1
	b.p.WriterBytes = 1
	commits, inflight := b.watch()
	b.sync(t, pipeline.Mode{})
	require.Greater(t, *commits, len(boundDocs))
	prev := 0
	for i, n := range *inflight {
		if n > prev {
			require.Zero(t, prev, "report %d: a batch handed over while %d bytes were in flight (%v)", i, prev, *inflight)
		}
		prev = n
	}
	require.Zero(t, prev, "nothing in flight after the run")
}

// TestBuildCarriesByteBounds: Build takes pipelines[].batch_chunk_bytes and
// writer_bytes from the config, and their defaults when not written.
func TestBuildCarriesByteBounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, err := config.Parse([]byte(`pipelines:
  - name: set
    batch_chunk_bytes: 1048576
    writer_bytes: 4194304
    sources: [{files: {root: .}}]
  - name: unset
    sources: [{files: {root: .}}]
`), dir)
	require.NoError(t, err)
	for i, want := range [][2]int{{1 << 20, 4 << 20}, {16 << 20, 96 << 20}} {
		p, err := pipeline.Build(t.Context(), cfg, &cfg.Pipelines[i], nil, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Sink.Close(context.Background()) })
		require.Equal(t, want, [2]int{p.BatchChunkBytes, p.WriterBytes}, cfg.Pipelines[i].Name)
	}
}
