package pipeline_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// TestLimitWaitsInQuarantineUntilContentChanges: a document refused for
// a limit (here list nesting; a time or memory budget alike) was parsed
// again on every run, costing its whole budget each time. With the same
// content it now waits in quarantine, unparsed (its entry untouched),
// until its back-off is over or its content changes.
func TestLimitWaitsInQuarantineUntilContentChanges(t *testing.T) {
	t.Parallel()
	root := copyCorpus(t, "rfc7239.txt")
	deep := filepath.Join(root, "deep.md")
	require.NoError(t, os.WriteFile(deep, []byte(strings.Repeat("- ", 1000)+"x\n"), 0o644))
	b := setup(t, root, 256, 32)
	// The store stamps entries with the real clock: the run's clock is
	// set as an offset from it, the time since the last attempt.
	var offset time.Duration
	b.p.Now = func() time.Time { return time.Now().Add(offset) }
	entry := func() state.Quarantined {
		qs, err := b.store.QuarantineList(t.Context(), "docs")
		require.NoError(t, err)
		require.Len(t, qs, 1)
		return qs[0]
	}
	run := func() state.Run {
		res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
		require.NoError(t, err)
		return res.Run
	}
	require.Equal(t, state.StatusPartial, run().Status)
	first := entry()
	require.Contains(t, first.Error, "too complex")
	require.Equal(t, 1, first.Attempts)

	offset = 10 * time.Minute
	r := run()
	require.Equal(t, state.StatusPartial, r.Status, "still in quarantine")
	require.Equal(t, 1, entry().Attempts, "not parsed again: same content, back-off not over")

	offset = 2 * time.Hour // past the first back-off (1 h)
	run()
	require.Equal(t, 2, entry().Attempts, "retried once the back-off is over")
	offset = 90 * time.Minute // within the second back-off (2 h)
	run()
	require.Equal(t, 2, entry().Attempts)

	require.NoError(t, os.WriteFile(deep, []byte(strings.Repeat("- ", 999)+"y\n"), 0o644))
	run()
	require.Equal(t, 3, entry().Attempts, "changed content is parsed at once")

	require.NoError(t, os.WriteFile(deep, []byte("# Fine\n\nNow a plain document.\n"), 0o644))
	require.Equal(t, state.StatusSucceeded, run().Status)
}
