package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// countingGets counts the records a run reads whole (RecordGet).
type countingGets struct {
	state.Store
	keys atomic.Int64
}

func (c *countingGets) RecordGet(ctx context.Context, pipeline, source string, keys []string) (map[string]state.Record, error) {
	c.keys.Add(int64(len(keys)))
	return c.Store.RecordGet(ctx, pipeline, source, keys)
}

// TestLinkPassReadsWhatChanged: after an edit of one document, the link
// pass reads that document and the ones its references name, not every
// document; the graph equals a first sync of the same files. Deleting a
// document that others cite re-resolves those.
func TestLinkPassReadsWhatChanged(t *testing.T) {
	t.Parallel()
	files := []string{"rfc7231.txt", "rfc7239.txt", "spdx-2.3-package-information.md", "openchain-security-specification-1.1.md", "go_spec.html"}
	b := setup(t, copyCorpus(t, files...), 256, 32)
	cg := &countingGets{Store: b.store}
	b.p.Store = cg
	b.sync(t, pipeline.Mode{})

	path := filepath.Join(b.root, "openchain-security-specification-1.1.md")
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(text, []byte("\n\nA closing paragraph added by an edit.\n")...), 0o644))
	cg.keys.Store(0)
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 1, c.RecordsChanged)
	require.LessOrEqual(t, cg.keys.Load(), int64(4), "the edited document (its stored version, the link pass, its commit) and what it cites, not all five")

	ref := setup(t, b.root, 256, 32)
	ref.sync(t, pipeline.Mode{})
	require.Equal(t, snapshot(ref.graph), snapshot(b.graph))

	// RFC 7239 cites RFC 7231: deleting 7231 drops those edges.
	require.NoError(t, os.Remove(filepath.Join(b.root, "rfc7231.txt")))
	b.p.MaxDeleteRatio = 1
	b.sync(t, pipeline.Mode{})
	ref = setup(t, b.root, 256, 32)
	ref.sync(t, pipeline.Mode{})
	require.Equal(t, snapshot(ref.graph), snapshot(b.graph))
}
