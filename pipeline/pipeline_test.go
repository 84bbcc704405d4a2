package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/kgsync/kgsync/internal/corpus"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/internal/graphtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/files"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

// corpusDir is the corpus's docs directory.
func corpusDir(t testing.TB) string { return corpus.Docs(t) }

// copyCorpus copies the named corpus documents into a fresh directory.
func copyCorpus(t *testing.T, names ...string) string {
	t.Helper()
	src := corpusDir(t)
	dst := t.TempDir()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, n), b, 0o644))
	}
	return dst
}

// countingEmbedder records every text sent to the provider.
type countingEmbedder struct {
	embed.Embedder
	mu    sync.Mutex
	calls int
	texts []string
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.calls++
	c.texts = append(c.texts, texts...)
	c.mu.Unlock()
	return c.Embedder.Embed(ctx, texts)
}

// count returns the calls so far.
func (c *countingEmbedder) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func (c *countingEmbedder) reset() (calls int, texts []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, texts = c.calls, c.texts
	c.calls, c.texts = 0, nil
	return calls, texts
}

type bundle struct {
	root  string
	store state.Store
	graph *graphtest.Graph
	emb   *countingEmbedder
	p     *pipeline.Pipeline
}

func setup(t *testing.T, root string, maxTokens, overlap int) *bundle {
	t.Helper()
	ctx := t.Context()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(t, err)
	src, err := files.New("docs", config.FilesSource{Root: root, Anchor: "Document", MaxFileBytes: 64 << 20}, chunker.Formats(), nil,
		files.WithTextCheck(pipeline.TextCheck))
	require.NoError(t, err)
	emb := &countingEmbedder{Embedder: hashing.New("hashing-v1", 64)}
	g := graphtest.New()
	b := &bundle{root: root, store: store, graph: g, emb: emb}
	b.p = &pipeline.Pipeline{
		Name:           "docs",
		Sources:        []sources.Source{src},
		Embedder:       emb,
		Sink:           g,
		Store:          store,
		Chunking:       chunker.Options{MaxTokens: maxTokens, OverlapTokens: overlap, Tokenizer: tok},
		BatchSize:      2,
		MaxDeleteRatio: 0.3,
		Fingerprint:    1,
	}
	return b
}

func (b *bundle) sync(t *testing.T, mode pipeline.Mode) state.Counts {
	t.Helper()
	res, err := b.p.Run(t.Context(), state.TriggerManual, mode)
	require.NoError(t, err)
	require.Equal(t, state.StatusSucceeded, res.Run.Status)
	require.Empty(t, b.graph.Dangling())
	return res.Run.Counts
}

var allDocs = []string{"rfc7231.txt", "rfc7239.txt", "constitutionrf.txt", "spdx-2.3-package-information.md", "openchain-security-specification-1.1.md", "go_spec.html"}

func TestSyncTwiceDoesNothingTheSecondTime(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, allDocs...), 256, 32)

	first := b.sync(t, pipeline.Mode{})
	require.Equal(t, len(allDocs), first.RecordsNew)
	require.Equal(t, len(allDocs), b.graph.Count("Document"))
	chunks := b.graph.Count(pipeline.LabelChunk)
	require.Greater(t, chunks, 300, "six real documents make hundreds of chunks")
	require.Equal(t, chunks, first.ChunksTotal)
	require.Greater(t, b.graph.Count(pipeline.LabelSection), 300)
	_, texts := b.emb.reset()
	require.Equal(t, first.ChunksEmbedded, len(texts))
	for _, text := range texts {
		require.NotEmpty(t, strings.TrimSpace(text), "no empty text reaches the embedder")
	}
	// Every chunk node carries a vector of the embedder's dimension.
	for _, id := range b.graph.Nodes(pipeline.LabelChunk) {
		n, _ := b.graph.Node(pipeline.LabelChunk, id)
		require.Len(t, n[pipeline.PropEmbedding], 64, id)
	}

	writes := b.graph.Writes
	second := b.sync(t, pipeline.Mode{})
	require.Equal(t, len(allDocs), second.RecordsUnchanged)
	require.Zero(t, second.RecordsNew+second.RecordsChanged+second.RecordsDeleted)
	require.Zero(t, second.ChunksEmbedded)
	require.Zero(t, second.SinkStatements)
	require.Equal(t, writes, b.graph.Writes, "a no-op run writes nothing")
	calls, _ := b.emb.reset()
	require.Zero(t, calls)
}

// editMiddleSentence changes one sentence near the middle of a file.
func editMiddleSentence(t *testing.T, path, old, replacement string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(b)
	i := strings.Index(s, old)
	require.GreaterOrEqual(t, i, 0, "sentence %q not in %s", old, path)
	require.NoError(t, os.WriteFile(path, []byte(s[:i]+replacement+s[i+len(old):]), 0o644))
}

func TestEditOneParagraphReembedsOnlyItsChunk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, old, new string }{
		{"rfc7231.txt", "The 400 (Bad Request) status code indicates that the server cannot or",
			"The 400 (Bad Request) status code says that the server will not or cannot"},
		{"constitutionrf.txt", "Каждый имеет право на жизнь.", "Каждый человек имеет право на жизнь."},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			b := setup(t, copyCorpus(t, tc.file), 256, 32)
			b.sync(t, pipeline.Mode{})
			before := b.graph.Count(pipeline.LabelChunk)
			b.emb.reset()

			editMiddleSentence(t, filepath.Join(b.root, tc.file), tc.old, tc.new)
			c := b.sync(t, pipeline.Mode{})
			require.Equal(t, 1, c.RecordsChanged)
			require.GreaterOrEqual(t, c.ChunksEmbedded, 1)
			require.LessOrEqual(t, c.ChunksEmbedded, 2, "one edit re-embeds the chunk holding it (two in an overlap)")
			_, texts := b.emb.reset()
			require.Len(t, texts, c.ChunksEmbedded)
			joined := strings.Join(texts, "\n")
			require.Contains(t, joined, firstWords(tc.new, 3))
			require.Equal(t, before, b.graph.Count(pipeline.LabelChunk))
		})
	}
}

func firstWords(s string, n int) string {
	return strings.Join(strings.Fields(s)[:n], " ")
}

func TestDeletedFileDeletesItsNodes(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md", "spdx-2.3-package-information.md", "go_spec.html"), 256, 32)
	b.sync(t, pipeline.Mode{})
	before := b.graph.Count(pipeline.LabelChunk)
	n, err := b.store.ChunkCount(t.Context(), "docs")
	require.NoError(t, err)
	require.Equal(t, before, n)

	require.NoError(t, os.Remove(filepath.Join(b.root, "rfc7239.txt")))
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 1, c.RecordsDeleted)
	require.Equal(t, 3, b.graph.Count("Document"))
	_, ok := b.graph.Node("Document", "docs:rfc7239.txt")
	require.False(t, ok)
	for _, label := range []string{pipeline.LabelChunk, pipeline.LabelSection} {
		for _, id := range b.graph.Nodes(label) {
			require.False(t, strings.HasPrefix(id, "docs:rfc7239.txt"), "%s %s survived its document", label, id)
		}
	}
	require.Equal(t, before-c.ChunksDeleted, b.graph.Count(pipeline.LabelChunk))
	n, err = b.store.ChunkCount(t.Context(), "docs")
	require.NoError(t, err)
	require.Equal(t, b.graph.Count(pipeline.LabelChunk), n, "state matches the graph")
}

func TestFailedSourceReadDeletesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md"), 256, 32)
	b.sync(t, pipeline.Mode{})
	docs, chunks := b.graph.Count("Document"), b.graph.Count(pipeline.LabelChunk)

	// The whole folder disappears (an unmounted share): the listing fails.
	require.NoError(t, os.Rename(b.root, b.root+".gone"))
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.Error(t, err)
	require.Equal(t, state.StatusFailed, res.Run.Status)
	require.Zero(t, res.Run.Counts.RecordsDeleted)
	require.Equal(t, docs, b.graph.Count("Document"))
	require.Equal(t, chunks, b.graph.Count(pipeline.LabelChunk))
	recs, err := b.store.RecordList(t.Context(), "docs", "docs")
	require.NoError(t, err)
	require.Len(t, recs, 2)

	// The run is recorded as failed with its error.
	runs, err := b.store.RunList(t.Context(), "docs", 1)
	require.NoError(t, err)
	require.Equal(t, state.StatusFailed, runs[0].Status)
	require.NotEmpty(t, runs[0].Error)
}

func TestUnreadableFileIsSkippedNotDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md"), 256, 32)
	b.sync(t, pipeline.Mode{})
	// The file becomes invalid UTF-8: reported and skipped, its nodes kept.
	path := filepath.Join(b.root, "rfc7239.txt")
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(body, 0xff, 0xfe, 0x00), 0o644))
	res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	c := res.Run.Counts
	require.Equal(t, state.StatusPartial, res.Run.Status, "the run says a record is quarantined")
	require.Equal(t, 1, c.RecordsSkipped)
	require.Equal(t, 1, c.Quarantined)
	require.Zero(t, c.RecordsDeleted)
	_, ok := b.graph.Node("Document", "docs:rfc7239.txt")
	require.True(t, ok)
	qs, err := b.store.QuarantineList(t.Context(), "docs")
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, "rfc7239.txt", qs[0].Key)
	require.Equal(t, state.StageRead, qs[0].Stage)
	require.Contains(t, qs[0].Error, "invalid UTF-8")
	// Still bad: a second attempt is counted.
	res, err = b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, state.StatusPartial, res.Run.Status)
	qs, _ = b.store.QuarantineList(t.Context(), "docs")
	require.Equal(t, 2, qs[0].Attempts)
	// Repaired: the next run reads it and releases it.
	require.NoError(t, os.WriteFile(path, body, 0o644))
	c = b.sync(t, pipeline.Mode{})
	require.Zero(t, c.Quarantined)
	qs, _ = b.store.QuarantineList(t.Context(), "docs")
	require.Empty(t, qs)
}

func TestSameTextInTwoFilesEmbedsOnce(t *testing.T) {
	t.Parallel()
	root := copyCorpus(t, "openchain-security-specification-1.1.md")
	body, err := os.ReadFile(filepath.Join(root, "openchain-security-specification-1.1.md"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "copy.md"), body, 0o644))
	b := setup(t, root, 128, 16)
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 2, b.graph.Count("Document"))
	_, texts := b.emb.reset()
	distinct := map[string]bool{}
	for _, s := range texts {
		distinct[s] = true
	}
	require.Len(t, texts, len(distinct), "each distinct text (chunk or term definition) is sent once")
	var perDoc [2]int
	for _, id := range b.graph.Nodes(pipeline.LabelChunk) {
		n, _ := b.graph.Node(pipeline.LabelChunk, id)
		if n["document"] == "docs:copy.md" {
			perDoc[0]++
		} else {
			perDoc[1]++
		}
	}
	require.Positive(t, perDoc[0])
	require.Equal(t, perDoc[0], perDoc[1], "two documents, each with all its chunks")
	require.Equal(t, len(texts), c.ChunksEmbedded)
	require.Equal(t, len(texts), c.ChunksReused, "the second document's texts all come from the cache")
}

func TestEmptyAndWhitespaceFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "empty.txt"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "blank.md"), []byte(" \n\t\n  \r\n"), 0o644))
	b := setup(t, root, 128, 16)
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 2, c.RecordsNew)
	require.Equal(t, 2, b.graph.Count("Document"))
	require.Zero(t, b.graph.Count(pipeline.LabelChunk))
	calls, _ := b.emb.reset()
	require.Zero(t, calls, "no empty chunk is sent to the embedder")
}

func TestParagraphLongerThanLimitIsSplitNotTruncated(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var words []string
	for i := range 3000 {
		words = append(words, "word"+strings.Repeat("x", i%7)+string(rune('a'+i%26)))
	}
	para := strings.Join(words, " ") + "."
	require.NoError(t, os.WriteFile(filepath.Join(root, "long.txt"), []byte(para+"\n"), 0o644))
	b := setup(t, root, 128, 0)
	b.sync(t, pipeline.Mode{})
	ids := b.graph.Nodes(pipeline.LabelChunk)
	require.Greater(t, len(ids), 10)
	var got []string
	for _, id := range ids {
		n, _ := b.graph.Node(pipeline.LabelChunk, id)
		require.LessOrEqual(t, n["tokens"], int64(128))
		got = append(got, strings.Fields(n["text"].(string))...)
	}
	seen := map[string]bool{}
	for _, w := range got {
		seen[strings.TrimSuffix(w, ".")] = true
	}
	for _, w := range words {
		require.True(t, seen[w], "word %q lost", w)
	}
}

func TestRenameCostsNoEmbedding(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md"), 256, 32)
	b.sync(t, pipeline.Mode{})
	b.emb.reset()
	require.NoError(t, os.Rename(filepath.Join(b.root, "rfc7239.txt"), filepath.Join(b.root, "forwarded.txt")))
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 1, c.RecordsNew)
	require.Equal(t, 1, c.RecordsDeleted)
	require.Zero(t, c.ChunksEmbedded)
	require.Positive(t, c.ChunksReused)
	_, ok := b.graph.Node("Document", "docs:forwarded.txt")
	require.True(t, ok)
	_, ok = b.graph.Node("Document", "docs:rfc7239.txt")
	require.False(t, ok)
}

func TestConfigChangeReprocessesAndPlanSaysWhy(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md"), 256, 32)
	b.sync(t, pipeline.Mode{})
	b.emb.reset()

	plan, err := b.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Empty(t, plan.Items)
	require.Equal(t, 2, plan.Unchanged)

	b.p.Chunking.MaxTokens = 128
	b.p.Fingerprint = 2
	plan, err = b.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Len(t, plan.Items, 2)
	for _, it := range plan.Items {
		require.Equal(t, diff.ReasonConfig, it.Reason)
	}
	require.Positive(t, plan.EmbedMisses)
	calls, _ := b.emb.reset()
	require.Zero(t, calls, "plan makes no embedding calls")

	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 2, c.RecordsChanged)
	require.Equal(t, plan.EmbedMisses, c.ChunksEmbedded, "plan predicted the embedding calls")
}

func TestRebuildGraphMakesNoEmbeddingCalls(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "spdx-2.3-package-information.md"), 256, 32)
	b.sync(t, pipeline.Mode{})
	want := snapshot(b.graph)
	b.emb.reset()

	// Memgraph restarted empty.
	b.graph = graphtest.New()
	b.p.Sink = b.graph
	c := b.sync(t, pipeline.Mode{RebuildGraph: true})
	calls, _ := b.emb.reset()
	require.Zero(t, calls)
	require.Zero(t, c.ChunksEmbedded)
	got := snapshot(b.graph)
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Logf("missing after rebuild: %s", k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Logf("extra after rebuild: %s", k)
		}
	}
	require.Equal(t, want, got)
}

func TestReembedIgnoresCache(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt"), 256, 32)
	first := b.sync(t, pipeline.Mode{})
	b.emb.reset()
	c := b.sync(t, pipeline.Mode{Reembed: true})
	require.Equal(t, first.ChunksEmbedded, c.ChunksEmbedded)
}

func TestMassDeleteGuard(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md", "spdx-2.3-package-information.md"), 256, 32)
	b.sync(t, pipeline.Mode{})
	for _, f := range []string{"rfc7239.txt", "spdx-2.3-package-information.md"} {
		require.NoError(t, os.Remove(filepath.Join(b.root, f)))
	}
	_, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.ErrorIs(t, err, pipeline.ErrMassDelete)
	require.Equal(t, 3, b.graph.Count("Document"), "nothing deleted")
	c := b.sync(t, pipeline.Mode{AllowMassDelete: true})
	require.Equal(t, 2, c.RecordsDeleted)
	require.Equal(t, 1, b.graph.Count("Document"))
}

func TestSinkFailureMidRunConverges(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md", "spdx-2.3-package-information.md", "go_spec.html"), 256, 32)
	b.p.BatchSize = 1
	writes := 0
	b.graph.FailWrite = func(*sink.Batch) error {
		writes++
		if writes == 3 {
			return errors.New("connection refused")
		}
		return nil
	}
	_, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.Error(t, err)
	require.Equal(t, 3, writes, "no batch is written after the one that failed (the next may have been handed to the writer already)")
	_, firstTexts := b.emb.reset()
	b.graph.FailWrite = nil
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 2, c.RecordsNew+c.RecordsChanged, "two documents were committed before the failure; the failed batch's intent makes its document count as changed")
	_, texts := b.emb.reset()
	// The batch that failed was embedded and cached before the write failed:
	// its chunks are reused, not embedded again.
	require.Less(t, len(texts), len(firstTexts)+1)

	// The result equals an uninterrupted run.
	ref := setup(t, b.root, 256, 32)
	ref.sync(t, pipeline.Mode{})
	require.Equal(t, snapshot(ref.graph), snapshot(b.graph))
}

func TestPlanWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md"), 256, 32)
	plan, err := b.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, 2, plan.Count(diff.ClassNew))
	require.Positive(t, plan.EmbedMisses)
	require.Positive(t, plan.EmbedTokens)
	require.Zero(t, b.graph.Writes)
	calls, _ := b.emb.reset()
	require.Zero(t, calls)
	runs, err := b.store.RunList(t.Context(), "docs", 10)
	require.NoError(t, err)
	require.Empty(t, runs)
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, plan.EmbedMisses, c.ChunksEmbedded)
}

// snapshot is a comparable picture of a graph: node ids with properties and edges.
func snapshot(g *graphtest.Graph) map[string]any {
	out := map[string]any{}
	for _, label := range []string{"Document", pipeline.LabelSection, pipeline.LabelChunk} {
		for _, id := range g.Nodes(label) {
			n, _ := g.Node(label, id)
			delete(n, "_synced_at")
			out[label+"|"+id] = n
		}
	}
	for _, e := range g.Edges() {
		out[e.Type+"|"+e.From.ID+"|"+e.To.ID] = true
	}
	return out
}

func TestLegacyEncodingsAreRead(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// The first articles of the Constitution, as Windows-1251 and as UTF-16LE with a BOM.
	text := "Статья 1\n\n1. Российская Федерация - Россия есть демократическое федеративное правовое государство с республиканской формой правления.\n"
	cp, err := charmap.Windows1251.NewEncoder().String(text)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "cp1251.txt"), []byte(cp), 0o644))
	u16, err := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder().String(text)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "utf16.txt"), []byte(u16), 0o644))
	b := setup(t, root, 128, 16)
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 2, c.RecordsNew)
	require.Zero(t, c.RecordsSkipped)
	for _, id := range b.graph.Nodes(pipeline.LabelChunk) {
		n, _ := b.graph.Node(pipeline.LabelChunk, id)
		require.Contains(t, n["text"], "демократическое федеративное правовое государство", "decoded to the same text")
	}
	require.Equal(t, 2, b.graph.Count(pipeline.LabelChunk))
	_, texts := b.emb.reset()
	require.Len(t, texts, 1, "both files decode to one text: embedded once")
}

// failingCommits fails the state commit that follows a sink write (the one
// that acknowledges a batch: it removes the batch's write-ahead intent), as
// a crash between the two would leave things.
type failingCommits struct {
	state.Store
	fail bool
}

func (f *failingCommits) Commit(ctx context.Context, c state.Commit) error {
	if f.fail && len(c.IntentsDone) > 0 {
		f.fail = false
		return errors.New("crashed before the commit")
	}
	return f.Store.Commit(ctx, c)
}

// TestInterruptedWriteThenRevertedSource: a run writes version 2 of a
// document to the graph and dies before committing state; the document is
// then reverted to version 1. The next run must leave the graph of version
// 1, not the stray version 2 (the write-ahead intent marks the record).
func TestInterruptedWriteThenRevertedSource(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt"), 256, 32)
	fc := &failingCommits{Store: b.store}
	b.p.Store = fc
	b.sync(t, pipeline.Mode{})
	path := filepath.Join(b.root, "rfc7239.txt")
	v1, err := os.ReadFile(path)
	require.NoError(t, err)

	v2 := strings.Replace(string(v1), "5.1.  Forwarded By", "5.1.  Forwarded By\n\n   A new paragraph that only version 2 has, long enough to be its own element in the graph.\n", 1)
	v2 = strings.Replace(v2, "The \"by\" parameter is used to disclose", "The \"by\" parameter discloses", 1)
	require.NotEqual(t, string(v1), v2)
	require.NoError(t, os.WriteFile(path, []byte(v2), 0o644))
	fc.fail = true
	_, err = b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.ErrorContains(t, err, "crashed before the commit")

	require.NoError(t, os.WriteFile(path, v1, 0o644))
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 1, c.RecordsChanged, "the interrupted record is rewritten although its content equals the stored hash")

	ref := setup(t, copyCorpus(t, "rfc7239.txt"), 256, 32)
	ref.sync(t, pipeline.Mode{})
	require.Equal(t, snapshot(ref.graph), snapshot(b.graph), "the graph is version 1's, with nothing of version 2 left")
	n, err := b.store.ChunkCount(t.Context(), "docs")
	require.NoError(t, err)
	require.Equal(t, b.graph.Count(pipeline.LabelChunk), n)
}

func TestAbandonedRunIsClosed(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt"), 256, 32)
	// A process opened a run and died.
	dead, err := b.store.RunOpen(t.Context(), "docs", state.TriggerCron)
	require.NoError(t, err)
	b.sync(t, pipeline.Mode{})
	runs, err := b.store.RunList(t.Context(), "docs", 10)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	for _, r := range runs {
		if r.ID == dead.ID {
			require.Equal(t, state.StatusAbandoned, r.Status)
			require.Contains(t, r.Error, "abandoned")
			require.False(t, r.FinishedAt.IsZero())
		} else {
			require.Equal(t, state.StatusSucceeded, r.Status)
		}
	}
}

// TestDocumentAnchorRename: the files source's anchor changes from Document
// to Doc: the node moves, with its sections' and chunks' edges.
func TestDocumentAnchorRename(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt"), 256, 32)
	b.sync(t, pipeline.Mode{})
	src, err := files.New("docs", config.FilesSource{Root: b.root, Anchor: "Doc", MaxFileBytes: 1 << 20}, chunker.Formats(), nil,
		files.WithTextCheck(pipeline.TextCheck))
	require.NoError(t, err)
	b.p.Sources = []sources.Source{src}
	b.sync(t, pipeline.Mode{})
	require.Zero(t, b.graph.Count("Document"))
	require.Equal(t, 1, b.graph.Count("Doc"))
	partOf := 0
	for _, e := range b.graph.Edges() {
		require.NotEqual(t, "Document", e.To.Label)
		if e.Type == pipeline.RelPartOf && e.To.Label == "Doc" {
			partOf++
		}
	}
	require.Positive(t, partOf)
}

// TestChunkerUpgradeReprocesses: state synced by the previous chunker
// version is reprocessed once by this one — every document, for the reason
// "config changed", the plan naming the chunker version — and not again.
func TestChunkerUpgradeReprocesses(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md"), 256, 32)
	pc := &config.Pipeline{Chunking: &config.Chunking{MaxTokens: 256, OverlapTokens: 32}}
	old := pipeline.Settings(pc, b.p.Embedder)
	old["chunker_version"] = int64(chunker.Version - 1)
	b.p.Settings = old
	b.p.Fingerprint, _ = diff.Hash(old)
	b.sync(t, pipeline.Mode{})

	b.p.Settings = pipeline.Settings(pc, b.p.Embedder)
	b.p.Fingerprint = pipeline.Fingerprint(pc, b.p.Embedder)
	plan, err := b.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Len(t, plan.Items, 2)
	for _, it := range plan.Items {
		require.Equal(t, diff.ReasonConfig, it.Reason)
	}
	require.Equal(t, []string{fmt.Sprintf("kgsync's chunker version: %d → %d", chunker.Version-1, chunker.Version)}, plan.ConfigChanges)
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 2, c.RecordsChanged)
	plan, err = b.p.Plan(t.Context(), pipeline.Mode{})
	require.NoError(t, err)
	require.Empty(t, plan.Items)
}
