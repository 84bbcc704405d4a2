package pipeline_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// TestRenameOfEveryFileIsNotAMassDelete: renaming 2 of 2 documents used to
// write both new ones, then trip the guard (2 of 2 "deleted") and leave
// both copies in the graph. Net of the records that reappear under new
// keys nothing is lost: the run succeeds with one copy of each.
func TestRenameOfEveryFileIsNotAMassDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "spdx-2.3-package-information.md"), 256, 32)
	b.sync(t, pipeline.Mode{})
	for _, n := range []string{"rfc7239.txt", "spdx-2.3-package-information.md"} {
		require.NoError(t, os.Rename(filepath.Join(b.root, n), filepath.Join(b.root, "renamed-"+n)))
	}
	c := b.sync(t, pipeline.Mode{})
	require.Equal(t, 2, c.RecordsNew)
	require.Equal(t, 2, c.RecordsDeleted)
	require.ElementsMatch(t, []string{"docs:renamed-rfc7239.txt", "docs:renamed-spdx-2.3-package-information.md"}, b.graph.Nodes("Document"))
}

// TestTrippedGuardLeavesGraphExactlyAsItWas: three of four documents gone,
// one new (unrelated content, so no rename) and one edited: the guard trips
// (3 of 4) before the
// first write, so graph, state and the embedding bill are exactly as
// before; confirming writes everything.
func TestTrippedGuardLeavesGraphExactlyAsItWas(t *testing.T) {
	t.Parallel()
	b := setup(t, copyCorpus(t, "rfc7239.txt", "spdx-2.3-package-information.md", "openchain-security-specification-1.1.md", "go_spec.html"), 256, 32)
	b.sync(t, pipeline.Mode{})
	graphBefore := b.graph.Props()
	recsBefore, err := b.store.RecordList(t.Context(), "docs", "docs")
	require.NoError(t, err)
	b.emb.reset()
	for _, n := range []string{"rfc7239.txt", "spdx-2.3-package-information.md", "go_spec.html"} {
		require.NoError(t, os.Remove(filepath.Join(b.root, n)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(b.root, "new.md"), []byte("# New\n\nA new document.\n"), 0o644))
	path := filepath.Join(b.root, "openchain-security-specification-1.1.md")
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(body, []byte("\n\nAn edited closing paragraph.\n")...), 0o644))

	_, err = b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
	require.Equal(t, graphBefore, b.graph.Props(), "the graph is exactly as it was")
	require.ErrorIs(t, err, pipeline.ErrMassDelete)
	require.ErrorContains(t, err, "delete 3 of 4 records")
	recsAfter, err := b.store.RecordList(t.Context(), "docs", "docs")
	require.NoError(t, err)
	require.Equal(t, recsBefore, recsAfter, "state is exactly as it was")
	calls, _ := b.emb.reset()
	require.Zero(t, calls, "nothing embedded before the guard ruled")

	c := b.sync(t, pipeline.Mode{AllowMassDelete: true})
	require.Equal(t, 3, c.RecordsDeleted)
	require.Equal(t, 1, c.RecordsNew)
	require.Equal(t, 1, c.RecordsChanged)
}
