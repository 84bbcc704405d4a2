package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/memgraph"
	"github.com/kgsync/kgsync/state"
)

// Both readers the product has.
var (
	_ pipeline.GraphReader = (*memgraph.Sink)(nil)
	_ pipeline.GraphReader = (*graphtest.Graph)(nil)
)

// verifyDocs syncs two corpus documents and returns the bundle with the
// graph's node counts per label right after the sync: every node then is
// the pipeline's and state knows it.
func verifyDocs(t *testing.T) (*bundle, map[string]int) {
	t.Helper()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "spdx-2.3-package-information.md"), 256, 32)
	b.sync(t, pipeline.Mode{})
	counts := map[string]int{}
	for ref := range b.graph.Props() {
		counts[ref.Label]++
	}
	for _, l := range []string{"Document", pipeline.LabelSection, pipeline.LabelChunk} {
		require.Positive(t, counts[l], l)
	}
	b.emb.reset()
	return b, counts
}

func total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

func verify(t *testing.T, p *pipeline.Pipeline, opts pipeline.VerifyOptions) *pipeline.VerifyReport {
	t.Helper()
	rep, err := p.Verify(t.Context(), opts)
	require.NoError(t, err)
	return rep
}

// byKind groups a report's differences as "label|id" by kind.
func byKind(rep *pipeline.VerifyReport) map[pipeline.DifferenceKind][]string {
	out := map[pipeline.DifferenceKind][]string{}
	for _, d := range rep.Differences {
		out[d.Kind] = append(out[d.Kind], d.Label+"|"+d.ID)
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// repairClean repairs, checks that no embedding was requested and that a
// second verify finds nothing.
func repairClean(t *testing.T, b *bundle) *pipeline.VerifyReport {
	t.Helper()
	rep := verify(t, b.p, pipeline.VerifyOptions{Repair: true})
	require.NotNil(t, rep.Repaired)
	calls, _ := b.emb.reset()
	require.Zero(t, calls, "a repair embeds nothing: vectors come from the cache")
	require.Zero(t, rep.Repaired.Counts.ChunksEmbedded)
	require.Empty(t, b.graph.Dangling())
	again := verify(t, b.p, pipeline.VerifyOptions{})
	require.Empty(t, again.Differences)
	require.Zero(t, again.Total())
	return rep
}

func TestVerifyCleanAfterSync(t *testing.T) {
	t.Parallel()
	b, counts := verifyDocs(t)
	rep := verify(t, b.p, pipeline.VerifyOptions{})
	require.Empty(t, rep.Differences)
	require.Equal(t, 2, rep.Records)
	require.Equal(t, 2, rep.Checked)
	for _, c := range rep.Counts {
		require.Equal(t, counts[c.Label], c.State, c.Label)
		require.Equal(t, counts[c.Label], c.Graph, c.Label)
	}
	require.Len(t, rep.Counts, len(counts), "every label of the graph is counted")
}

func TestVerifyWipedGraphRepairsWithoutEmbedding(t *testing.T) {
	t.Parallel()
	b, counts := verifyDocs(t)
	want := snapshot(b.graph)
	var indexes []string
	for _, vi := range b.graph.Schema().VectorIndexes {
		indexes = append(indexes, vi.Label+"|"+vi.Name)
	}
	slices.Sort(indexes)
	b.graph.Wipe() // Memgraph restarted empty
	writes := b.graph.Writes

	rep := verify(t, b.p, pipeline.VerifyOptions{})
	kinds := byKind(rep)
	require.Len(t, kinds[pipeline.DiffMissing], total(counts))
	require.Equal(t, indexes, kinds[pipeline.DiffVectorIndex], "every index the sync had ensured")
	require.Empty(t, kinds[pipeline.DiffExtra])
	require.Empty(t, kinds[pipeline.DiffStale])
	for _, c := range rep.Counts {
		require.Zero(t, c.Graph, c.Label)
	}
	require.Equal(t, total(counts)+len(indexes), rep.Total())
	require.Equal(t, writes, b.graph.Writes, "verify alone writes nothing")
	require.Zero(t, b.graph.Count(""))

	fixed := repairClean(t, b)
	require.Equal(t, 2, fixed.Repaired.Rewritten)
	require.Equal(t, want, snapshot(b.graph))
	require.Len(t, b.graph.Schema().VectorIndexes, len(indexes))
}

func TestVerifyTruncatedChunks(t *testing.T) {
	t.Parallel()
	b, counts := verifyDocs(t)
	chunks := b.graph.Nodes(pipeline.LabelChunk)
	var gone []string
	batch := &sink.Batch{}
	for i, id := range chunks {
		if i%2 == 0 {
			gone = append(gone, id)
			batch.DeleteNodes = append(batch.DeleteNodes, sink.NodeRef{Label: pipeline.LabelChunk, ID: id})
		}
	}
	_, err := b.graph.Write(t.Context(), batch)
	require.NoError(t, err)

	// Counts only (the daemon's cheap check): one count difference of the
	// number of chunks deleted.
	cheap := verify(t, b.p, pipeline.VerifyOptions{Sample: -1})
	require.Zero(t, cheap.Checked)
	require.Equal(t, []pipeline.Difference{{Kind: pipeline.DiffCount, Label: pipeline.LabelChunk,
		Detail: fmt.Sprintf("graph has %d nodes, state %d", counts[pipeline.LabelChunk]-len(gone), counts[pipeline.LabelChunk]),
		Nodes:  len(gone)}}, cheap.Differences)
	require.Equal(t, len(gone), cheap.Total())

	rep := verify(t, b.p, pipeline.VerifyOptions{})
	got := byKind(rep)
	wantMissing := make([]string, len(gone))
	for i, id := range gone {
		wantMissing[i] = "Chunk|" + id
	}
	require.Equal(t, map[pipeline.DifferenceKind][]string{pipeline.DiffMissing: wantMissing}, got)
	for _, d := range rep.Differences {
		require.Equal(t, "docs", d.Source)
		require.Contains(t, []string{"rfc7239.txt", "spdx-2.3-package-information.md"}, d.Key)
	}
	repairClean(t, b)
	require.Equal(t, counts[pipeline.LabelChunk], b.graph.Count(pipeline.LabelChunk))
}

func TestVerifyHandEditIsStale(t *testing.T) {
	t.Parallel()
	b, _ := verifyDocs(t)
	chunks := b.graph.Nodes(pipeline.LabelChunk)
	hashEdited, textEdited := chunks[0], chunks[len(chunks)-1]
	orig, _ := b.graph.Node(pipeline.LabelChunk, textEdited)
	require.True(t, b.graph.SetProp(pipeline.LabelChunk, hashEdited, "_hash", "0000000000000000"))
	require.True(t, b.graph.SetProp(pipeline.LabelChunk, textEdited, "text", "edited by hand"))
	require.True(t, b.graph.SetProp("Document", "docs:rfc7239.txt", "_hash", nil))

	rep := verify(t, b.p, pipeline.VerifyOptions{})
	require.Equal(t, map[pipeline.DifferenceKind][]string{pipeline.DiffStale: sorted(
		"Chunk|"+hashEdited, "Chunk|"+textEdited, "Document|docs:rfc7239.txt")}, byKind(rep))
	for _, d := range rep.Differences {
		switch d.ID {
		case hashEdited:
			require.Contains(t, d.Detail, "_hash 0000000000000000, want ")
		case textEdited:
			require.Equal(t, "text differs from state", d.Detail)
		default:
			require.Contains(t, d.Detail, "_hash none, want ")
		}
	}
	repairClean(t, b)
	n, _ := b.graph.Node(pipeline.LabelChunk, textEdited)
	require.Equal(t, orig["text"], n["text"])
}

func sorted(s ...string) []string { slices.Sort(s); return s }

func TestVerifyExtraNodesAreDeleted(t *testing.T) {
	t.Parallel()
	b, counts := verifyDocs(t)
	_, err := b.graph.Write(t.Context(), &sink.Batch{NodeUpserts: []sink.NodeUpsert{
		{Label: "Document", ID: "docs:ghost.txt", Props: map[string]any{"_pipeline": "docs", "_hash": "1"}},
		{Label: pipeline.LabelChunk, ID: "docs:ghost.txt#0", Props: map[string]any{"document": "docs:ghost.txt", "_hash": "2"}},
		{Label: pipeline.LabelChunk, ID: "docs:rfc7239.txt#999", Props: map[string]any{"document": "docs:rfc7239.txt"}},
		// Another pipeline's node is none of this pipeline's business.
		{Label: "Document", ID: "other:a.txt", Props: map[string]any{"_pipeline": "other"}},
	}})
	require.NoError(t, err)

	rep := verify(t, b.p, pipeline.VerifyOptions{})
	require.Equal(t, map[pipeline.DifferenceKind][]string{pipeline.DiffExtra: {
		"Chunk|docs:ghost.txt#0", "Chunk|docs:rfc7239.txt#999", "Document|docs:ghost.txt"}}, byKind(rep))
	fixed := repairClean(t, b)
	require.Equal(t, 3, fixed.Repaired.Deleted)
	require.Zero(t, fixed.Repaired.Rewritten)
	require.Equal(t, counts["Document"]+1, b.graph.Count("Document"))
	_, ok := b.graph.Node("Document", "other:a.txt")
	require.True(t, ok)
}

func TestVerifyVectorIndexDimension(t *testing.T) {
	t.Parallel()
	b, _ := verifyDocs(t)
	b.graph.SetVectorDimension(pipeline.ChunkVectorIndex, 8)
	rep := verify(t, b.p, pipeline.VerifyOptions{})
	require.Equal(t, []pipeline.Difference{{Kind: pipeline.DiffVectorIndex, Label: pipeline.LabelChunk,
		ID: pipeline.ChunkVectorIndex, Detail: "dimension 8, want 64"}}, rep.Differences)
	require.Equal(t, 1, rep.Total())
	fixed := repairClean(t, b)
	require.Equal(t, 2, fixed.Repaired.Rewritten, "a recreated index loses every vector: all records are rewritten")
	for _, vi := range b.graph.Schema().VectorIndexes {
		require.Equal(t, 64, vi.Dimension, vi.Name)
	}
}

func TestVerifySample(t *testing.T) {
	t.Parallel()
	b, counts := verifyDocs(t)
	b.graph.Wipe()
	rep := verify(t, b.p, pipeline.VerifyOptions{Sample: 1, Rand: rand.New(rand.NewPCG(1, 2))})
	require.Equal(t, 1, rep.Checked)
	kinds := byKind(rep)
	var labels []string
	for l := range counts {
		labels = append(labels, l+"|")
	}
	require.ElementsMatch(t, labels, kinds[pipeline.DiffCount], "every label's count differs")
	require.NotEmpty(t, kinds[pipeline.DiffMissing])
	require.Less(t, len(kinds[pipeline.DiffMissing]), total(counts))
	keys := map[string]bool{}
	for _, d := range rep.Differences {
		if d.Kind == pipeline.DiffMissing {
			keys[d.Key] = true
		}
	}
	require.Len(t, keys, 1, "one record's nodes")
}

func TestVerifyModelRestoresEdges(t *testing.T) {
	t.Parallel()
	b := setupModel(t)
	b.sync(t)
	edges := b.graph.EdgeCount("")
	nodes := b.graph.Count("")
	require.Positive(t, b.graph.EdgeCount("REQUIRES_GUIDE"))
	rep, err := b.p.Verify(t.Context(), pipeline.VerifyOptions{})
	require.NoError(t, err)
	require.Empty(t, rep.Differences)

	// One cn_code node deleted by hand: its PARENT edges, its children's
	// PARENT edges to it and the link-table edges go with it.
	_, err = b.graph.Write(t.Context(), &sink.Batch{DeleteNodes: []sink.NodeRef{{Label: "cn_code", ID: "hs:0101"}}})
	require.NoError(t, err)
	require.Less(t, b.graph.EdgeCount(""), edges)
	b.emb.reset()
	rep, err = b.p.Verify(t.Context(), pipeline.VerifyOptions{Repair: true})
	require.NoError(t, err)
	require.Equal(t, map[pipeline.DifferenceKind][]string{pipeline.DiffMissing: {"cn_code|hs:0101"}}, byKind(rep))
	calls, _ := b.emb.reset()
	require.Zero(t, calls)
	require.Equal(t, edges, b.graph.EdgeCount(""))
	require.Equal(t, nodes, b.graph.Count(""))
	require.Empty(t, b.graph.Dangling())
}

// writeOnly is a sink that cannot be read back.
type writeOnly struct{ sink.Sink }

func TestVerifyNeedsReadableSink(t *testing.T) {
	t.Parallel()
	b, _ := verifyDocs(t)
	b.p.Sink = writeOnly{graphtest.New()}
	_, err := b.p.Verify(t.Context(), pipeline.VerifyOptions{})
	require.ErrorIs(t, err, pipeline.ErrNotReadable)
}

func TestVerifyHoldsTheLock(t *testing.T) {
	t.Parallel()
	b, _ := verifyDocs(t)
	unlock, err := b.store.Lock(t.Context(), "docs")
	require.NoError(t, err)
	defer func() { require.NoError(t, unlock()) }()
	_, err = b.p.Verify(context.Background(), pipeline.VerifyOptions{})
	require.True(t, errors.Is(err, state.ErrLocked), "%v", err)
}
