package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/state"
)

// TestWriterCacheGrowsWithWrites: the writer starts with the small page
// cache and gets the big one once bigCacheAfter records were committed,
// and keeps it.
func TestWriterCacheGrowsWithWrites(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	cache := func() int {
		t.Helper()
		var n int
		require.NoError(t, s.db.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&n))
		return n
	}
	require.Equal(t, -writerCacheKiB, cache())
	commit := func(from, n int) {
		t.Helper()
		recs := make([]state.Record, n)
		for i := range recs {
			recs[i] = state.Record{Source: "s", Key: fmt.Sprint(from + i), Hash: 1, Fingerprint: 1}
		}
		require.NoError(t, s.Commit(ctx, state.Commit{Pipeline: "p", Records: recs}))
	}
	commit(0, bigCacheAfter-1)
	require.Equal(t, -writerCacheKiB, cache(), "one record short")
	commit(bigCacheAfter, 1)
	require.Equal(t, -bigCacheKiB, cache())
	commit(bigCacheAfter+1, 1)
	require.Equal(t, -bigCacheKiB, cache())
}
