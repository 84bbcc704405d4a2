package pipeline_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/cypherl"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

// oneWriterStore is a state store with one writing connection, as SQLite
// has: commits and embedding cache writes take turns (conn). With a gate,
// the first commit of a batch (the one with an intent) waits, holding
// the connection, until the embedder has been called three times (or
// wait has passed), and notes the calls by then.
type oneWriterStore struct {
	state.Store
	conn    sync.Mutex
	calls   func() int
	wait    time.Duration
	gated   bool
	engaged chan struct{} // closed when the first batch's commit is held
	seen    int           // embedder calls while it was held
}

func (s *oneWriterStore) Commit(ctx context.Context, c state.Commit) error {
	s.conn.Lock()
	defer s.conn.Unlock()
	if c.Intent != nil && !s.gated {
		s.gated = true
		close(s.engaged)
		deadline := time.Now().Add(s.wait)
		for s.calls() < 3 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		s.seen = s.calls()
	}
	return s.Store.Commit(ctx, c)
}

func (s *oneWriterStore) EmbeddingsPut(ctx context.Context, model string, vecs map[uint64][]float32) error {
	s.conn.Lock()
	defer s.conn.Unlock()
	return s.Store.EmbeddingsPut(ctx, model, vecs)
}

// secondCallWaits is an embedder whose second call waits until engaged is
// closed (or 10 s have passed): batch 2 is embedded once batch 1's commit
// holds the writing connection. It is local (embed.Local) when local is.
type secondCallWaits struct {
	*countingEmbedder
	engaged chan struct{}
	local   bool
}

func (e secondCallWaits) Local() bool { return e.local }

func (e secondCallWaits) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if e.count() == 1 {
		select {
		case <-e.engaged:
		case <-time.After(10 * time.Second):
		}
	}
	return e.countingEmbedder.Embed(ctx, texts)
}

// TestBatchVectorsAreStoredByTheWriter syncs 30 rows of the corpus HS
// table in batches of 10: rows 1–20, then rows 11–15 under new keys and
// rows 21–25. The store has one writing connection, and its first batch
// commit is held: meanwhile (batch 2 is embedded only then) the run
// embeds batches 2 and 3 (it does not wait for the connection to store
// batch 2's vectors), and batch 3 finds
// batch 2's vectors, held for the writer, not stored yet: no text is
// embedded twice. After the run every vector is in the cache.
func TestBatchVectorsAreStoredByTheWriter(t *testing.T) {
	t.Parallel()
	require.True(t, embed.IsLocal(hashing.New("hashing-v1", 32)))
	t.Run("local", func(t *testing.T) { t.Parallel(); heldVectorsRun(t, true) })
	t.Run("provider", func(t *testing.T) { t.Parallel(); heldVectorsRun(t, false) })
}

// heldVectorsRun is TestBatchVectorsAreStoredByTheWriter with a local
// embedder or not: a provider's vectors are stored as they come, so the
// run waits for the connection to store batch 2's (two calls while batch
// 1's commit is held, not three).
func heldVectorsRun(t *testing.T, local bool) {
	ctx := t.Context()
	lines := hsLines(t, 25)
	rows := append([]string{}, lines[:21]...)          // header and rows 1–20: batches 1 and 2
	rows = append(rows, rekeyed(lines[11:16], "x")...) // rows 11–15 under new keys, then rows 21–25: batch 3
	inner := openState(t)
	em := &countingEmbedder{Embedder: hashing.New("hashing-v1", 32)}
	// A local run must reach three calls; a provider's must not, and a
	// second is enough to see it does not.
	wait := 10 * time.Second
	if !local {
		wait = time.Second
	}
	store := &oneWriterStore{Store: inner, calls: em.count, wait: wait, engaged: make(chan struct{})}
	p := tablePipeline(t, "held", append(rows, lines[21:26]...), secondCallWaits{em, store.engaged, local}, store)
	res, err := p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, 30, res.Run.Counts.RecordsNew)
	want := 3
	if !local {
		want = 2
	}
	require.Equal(t, want, store.seen, "embedder calls while batch 1's commit held the writing connection")
	_, texts := em.reset()
	requireEmbeddedOnce(t, texts)
	require.Len(t, texts, res.Run.Counts.ChunksEmbedded)
	hashes := make([]uint64, 0, len(texts))
	for _, text := range texts {
		hashes = append(hashes, diff.TextHash(text))
	}
	cached, err := inner.EmbeddingsGet(ctx, em.Model(), hashes)
	require.NoError(t, err)
	require.Len(t, cached, len(hashes), "every vector is stored")
}

// askCountingStore counts the text hashes the run asks the embedding
// cache for.
type askCountingStore struct {
	state.Store
	mu    sync.Mutex
	asked map[uint64]int
}

func (s *askCountingStore) EmbeddingsGet(ctx context.Context, model string, hashes []uint64) (map[uint64][]float32, error) {
	s.mu.Lock()
	for _, h := range hashes {
		s.asked[h]++
	}
	s.mu.Unlock()
	return s.Store.EmbeddingsGet(ctx, model, hashes)
}

// TestRecentVectorsAreNotAskedAgain syncs 70 rows of the corpus HS table
// in batches of 10 with a local embedder: rows 1–60, then rows 1–10 again
// under new keys. Batch 7's texts are batch 1's, stored five batches
// before: the run finds their vectors among the recent ones it keeps, and
// asks the embedding cache for no text hash twice; nothing is embedded
// twice either.
func TestRecentVectorsAreNotAskedAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	lines := hsLines(t, 60)
	rows := append(append([]string{}, lines...), rekeyed(lines[1:11], "again")...)
	em := &countingEmbedder{Embedder: hashing.New("hashing-v1", 32)}
	store := &askCountingStore{Store: openState(t), asked: map[uint64]int{}}
	res, err := tablePipeline(t, "recent", rows, localEmbedder{em}, store).Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	require.Equal(t, 70, res.Run.Counts.RecordsNew)
	require.NotEmpty(t, store.asked)
	for h, n := range store.asked {
		require.Equal(t, 1, n, "text hash %x asked of the embedding cache %d times", h, n)
	}
	_, texts := em.reset()
	requireEmbeddedOnce(t, texts)
}

// localEmbedder is a counting embedder that is local (embed.Local), as the
// hashing embedder it wraps is.
type localEmbedder struct{ *countingEmbedder }

func (localEmbedder) Local() bool { return true }

// rekeyed is lines of the corpus HS table under new keys: the hscode
// (the second column) with suffix.
func rekeyed(lines []string, suffix string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		f := strings.SplitN(l, ",", 3)
		out = append(out, f[0]+","+f[1]+suffix+","+f[2])
	}
	return out
}

// openState opens a SQLite state in a temporary folder, closed when the
// test ends.
func openState(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// tablePipeline is a pipeline named name over the HS table rows (a
// header first) in batches of 10, with em, store and a CYPHERL sink in a
// temporary folder, closed when the test ends.
func tablePipeline(t *testing.T, name string, rows []string, em embed.Embedder, store state.Store) *pipeline.Pipeline {
	t.Helper()
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(t, err)
	cy, err := cypherl.New(t.TempDir(), name, sink.Memgraph)
	require.NoError(t, err)
	t.Cleanup(func() { cy.Close(context.Background()) })
	return &pipeline.Pipeline{
		Name: name, Sources: []sources.Source{hsSource(t, rows)}, Embedder: em, Sink: cy, Store: store,
		Chunking:  chunker.Options{MaxTokens: 256, OverlapTokens: 32, Tokenizer: tok},
		BatchSize: 10, MaxDeleteRatio: 0.3, Fingerprint: 1, Model: pipeline.NewModel(csvModel),
	}
}

// requireEmbeddedOnce requires no text twice among texts.
func requireEmbeddedOnce(t *testing.T, texts []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, text := range texts {
		require.False(t, seen[text], "embedded twice: %q", text)
		seen[text] = true
	}
}
