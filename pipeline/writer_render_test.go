package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/cypherl"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

// renderSpy is a CYPHERL sink that counts its Render calls and how many
// of them the run made while handing a batch over (a caller in
// batchWriter.submit) rather than the writer. With a gate, its first
// WriteRendered (batch 1's) waits until Render has been called four times
// (or 10 s have passed), then 300 ms more, and notes the counts by then.
type renderSpy struct {
	*cypherl.Sink
	gate     bool
	mu       sync.Mutex
	renders  int
	bySubmit int
	four     chan struct{} // closed once renders reaches 4
	writes   int
	written  int // writes that have returned
	held     int // renders while batch 1 was held (-1: never reached 4)
	heldBy   int // of them, made by the run
}

// calledFromSubmit reports whether the caller's stack holds the run's
// hand-over of a batch.
func calledFromSubmit() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "(*batchWriter).submit") {
			return true
		}
		if !more {
			return false
		}
	}
}

func (g *renderSpy) Render(b *sink.Batch) (*cypherl.Rendered, error) {
	g.mu.Lock()
	g.renders++
	if calledFromSubmit() {
		g.bySubmit++
	}
	if g.renders == 4 && g.gate {
		close(g.four)
	}
	g.mu.Unlock()
	return g.Sink.Render(b)
}

func (g *renderSpy) WriteRendered(ctx context.Context, r *cypherl.Rendered) (sink.Stats, error) {
	g.mu.Lock()
	g.writes++
	first := g.writes == 1
	g.mu.Unlock()
	if first && g.gate {
		g.held = -1
		select {
		case <-g.four:
			time.Sleep(300 * time.Millisecond)
			g.mu.Lock()
			g.held, g.heldBy = g.renders, g.bySubmit
			g.mu.Unlock()
		case <-time.After(10 * time.Second):
		}
	}
	st, err := g.Sink.WriteRendered(ctx, r)
	g.mu.Lock()
	g.written++
	g.mu.Unlock()
	return st, err
}

// waitForWrites waits until n writes have returned (or 10 s have passed).
func (g *renderSpy) waitForWrites(n int) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		done := g.written >= n
		g.mu.Unlock()
		if done {
			return
		}
	}
}

// slowEmbedder takes 40 ms per call: preparing a batch takes longer than
// writing it (on a machine not too loaded).
type slowEmbedder struct{ embed.Embedder }

func (s slowEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	time.Sleep(40 * time.Millisecond)
	return s.Embedder.Embed(ctx, texts)
}

// waitingEmbedder embeds a batch (one call each: its texts are new and
// fewer than a request holds) only once the sink has written every batch
// before it, so preparing a batch always takes longer than writing the
// one before, however slow the machine is.
type waitingEmbedder struct {
	embed.Embedder
	spy   *renderSpy
	calls int
}

func (w *waitingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	w.spy.waitForWrites(w.calls)
	w.calls++
	return w.Embedder.Embed(ctx, texts)
}

// hsLines returns the corpus HS table's header line and its first n rows,
// each line with its line end.
func hsLines(t *testing.T, n int) []string {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(tablesDir(t), "harmonized-system.csv"))
	require.NoError(t, err)
	lines := strings.SplitAfterN(string(body), "\n", n+2)
	require.Greater(t, len(lines), n+1)
	return lines[:n+1]
}

// hsSource is a CSV source of lines (a header and HS table rows) written
// to a file: table hs_code keyed by hscode, parent a reference.
func hsSource(t *testing.T, lines []string) sources.Source {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hs.csv")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))
	src, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{{
		Path: path, Table: "hs_code", Key: "hscode",
		Columns: map[string]string{"parent": "ref:hs_code", "level": "int"}}}}, nil)
	require.NoError(t, err)
	return src
}

// TestRenderGoesToTheIdleSide syncs the first 100 rows of the corpus HS
// table in batches of 10 through a CYPHERL sink three ways:
//   - plainly;
//   - with batch 1's write held (renderSpy's gate): the writer's state
//     stage renders batch 1, the run hands batches 2 and 3 over
//     unrendered (the writer has room) and the state stage renders and
//     commits them while the sink stage holds batch 1; the run renders
//     batch 4 itself (the writer is full), then waits: four renders, one
//     by the run, not five;
//   - with an embedder that waits for the writer (waitingEmbedder): the
//     writer is idle at each hand-over, finished batches are taken in
//     first, so the writer renders every batch.
//
// The files hold the same bytes each way, each batch rendered once.
func TestRenderGoesToTheIdleSide(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	lines := hsLines(t, 100)
	src := hsSource(t, lines)
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(t, err)
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	run := func(gate, slow bool) (files []string, spy *renderSpy) {
		store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
		require.NoError(t, err)
		defer store.Close()
		cy, err := cypherl.New(t.TempDir(), "render", sink.Memgraph)
		require.NoError(t, err)
		spy = &renderSpy{Sink: cy, gate: gate, four: make(chan struct{})}
		var em embed.Embedder = hashing.New("hashing-v1", 32)
		if slow {
			em = &waitingEmbedder{Embedder: em, spy: spy}
		}
		p := &pipeline.Pipeline{
			Name: "render", Sources: []sources.Source{src}, Embedder: em, Sink: spy, Store: store,
			Chunking:  chunker.Options{MaxTokens: 256, OverlapTokens: 32, Tokenizer: tok},
			BatchSize: 10, MaxDeleteRatio: 0.3, Fingerprint: 1, Model: pipeline.NewModel(csvModel),
			Now: func() time.Time { return clock },
		}
		res, err := p.Run(ctx, state.TriggerManual, pipeline.Mode{})
		require.NoError(t, err)
		require.Equal(t, 100, res.Run.Counts.RecordsNew)
		require.NoError(t, cy.Close(ctx))
		for _, f := range cy.Files() {
			body, err := os.ReadFile(f)
			require.NoError(t, err)
			files = append(files, string(body))
		}
		require.Equal(t, 10, spy.writes)
		require.Equal(t, spy.writes, spy.renders, "every batch rendered once")
		return files, spy
	}
	plain, _ := run(false, false)
	held, g := run(true, false)
	require.Equal(t, 4, g.held, "batches rendered while batch 1 was being written")
	require.Equal(t, 1, g.heldBy, "of them, rendered by the run")
	require.Equal(t, plain, held)
	slow, s := run(false, true)
	require.Zero(t, s.bySubmit, "batches rendered by the run while the writer was idle")
	require.Equal(t, plain, slow)
}
