package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/cypherl"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
)

// gatedCypherl is a CYPHERL sink whose first WriteRendered (batch 1's)
// waits until Render has been called twice (or 10 s have passed), then
// 300 ms more, and notes how many batches were rendered by then. The
// writer, busy with batch 1, has room for one more: batch 2 is handed
// over unrendered, and batch 3, which finds the writer full, is rendered
// by the run before it waits.
type gatedCypherl struct {
	*cypherl.Sink
	mu      sync.Mutex
	renders int
	two     chan struct{} // closed once renders reaches 2
	writes  int
	held    int // renders while batch 1 was held (-1: never reached 2)
}

func (g *gatedCypherl) Render(b *sink.Batch) (*cypherl.Rendered, error) {
	g.mu.Lock()
	g.renders++
	if g.renders == 2 {
		close(g.two)
	}
	g.mu.Unlock()
	return g.Sink.Render(b)
}

func (g *gatedCypherl) WriteRendered(ctx context.Context, r *cypherl.Rendered) (sink.Stats, error) {
	g.mu.Lock()
	g.writes++
	first := g.writes == 1
	g.mu.Unlock()
	if first {
		g.held = -1
		select {
		case <-g.two:
			time.Sleep(300 * time.Millisecond)
			g.mu.Lock()
			g.held = g.renders
			g.mu.Unlock()
		case <-time.After(10 * time.Second):
		}
	}
	return g.Sink.WriteRendered(ctx, r)
}

// TestRenderGoesToTheIdleSide syncs a table in batches of 10 through a
// CYPHERL sink twice: once with the sink's first write held (gatedCypherl),
// once without. Held, the writer renders batch 1, the run hands batch 2
// over unrendered (the writer has room) and renders batch 3 itself (the
// writer is full), then waits: two renders, not three. Either way the
// files hold the same bytes, every batch in order, each rendered once.
func TestRenderGoesToTheIdleSide(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// The first 100 rows of the corpus HS table: ten batches.
	body, err := os.ReadFile(filepath.Join(tablesDir(t), "harmonized-system.csv"))
	require.NoError(t, err)
	lines := strings.SplitAfterN(string(body), "\n", 102)
	path := filepath.Join(t.TempDir(), "hs.csv")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines[:101], "")), 0o600))
	src, err := csvtable.New("csv", csvtable.Config{Tables: []csvtable.Table{{
		Path: path, Table: "hs_code", Key: "hscode",
		Columns: map[string]string{"parent": "ref:hs_code", "level": "int"}}}}, nil)
	require.NoError(t, err)
	tok, err := chunker.NewTokenizer("cl100k_base")
	require.NoError(t, err)
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	run := func(gated bool) (files []string, g *gatedCypherl) {
		store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
		require.NoError(t, err)
		defer store.Close()
		cy, err := cypherl.New(t.TempDir(), "render", sink.Memgraph)
		require.NoError(t, err)
		var sk sink.Sink = cy
		if gated {
			g = &gatedCypherl{Sink: cy, two: make(chan struct{})}
			sk = g
		}
		p := &pipeline.Pipeline{
			Name: "render", Sources: []sources.Source{src}, Embedder: hashing.New("hashing-v1", 32), Sink: sk, Store: store,
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
		return files, g
	}
	plain, _ := run(false)
	held, g := run(true)
	require.Equal(t, 2, g.held, "batches rendered while batch 1 was being written")
	require.Equal(t, 10, g.writes)
	require.Equal(t, g.writes, g.renders, "every batch rendered once")
	require.Equal(t, plain, held)
}
