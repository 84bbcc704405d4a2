package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/state"
)

// TestWriterCacheGrowsWithWrites: the writer starts with the idle page
// cache and keeps it through commits that write no record (a no-op run's
// cursors and origins), gets the batch cache after the first record
// written or deleted, the big one once bigCacheAfter were, and keeps it.
// The readers keep their own size.
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
	readerCache := func() int {
		t.Helper()
		var n int
		require.NoError(t, s.rdb.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&n))
		return n
	}
	require.Equal(t, -idleCacheKiB, cache())
	require.Equal(t, -readerCacheKiB, readerCache())
	require.NoError(t, s.Commit(ctx, state.Commit{Pipeline: "p", Cursors: map[string]string{"s": "c1"}}))
	require.Equal(t, -idleCacheKiB, cache(), "a commit of a cursor only")
	commit := func(from, n int) {
		t.Helper()
		recs := make([]state.Record, n)
		for i := range recs {
			recs[i] = state.Record{Source: "s", Key: fmt.Sprint(from + i), Hash: 1, Fingerprint: 1}
		}
		require.NoError(t, s.Commit(ctx, state.Commit{Pipeline: "p", Records: recs}))
	}
	commit(0, 1)
	require.Equal(t, -writerCacheKiB, cache(), "after the first record")
	commit(1, bigCacheAfter-3)
	require.Equal(t, -writerCacheKiB, cache(), "two records short")
	require.NoError(t, s.Commit(ctx, state.Commit{Pipeline: "p", DeleteRecords: []state.RecordRef{{Source: "s", Key: "0"}}}))
	require.Equal(t, -writerCacheKiB, cache(), "one record short")
	commit(bigCacheAfter, 1)
	require.Equal(t, -bigCacheKiB, cache())
	commit(bigCacheAfter+1, 1)
	require.Equal(t, -bigCacheKiB, cache())
	require.Equal(t, -readerCacheKiB, readerCache())
}

// TestDeletionRaisesWriterCache: a Store whose first commit deletes
// records gets the batch cache too.
func TestDeletionRaisesWriterCache(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, s.Commit(ctx, state.Commit{Pipeline: "p", Records: []state.Record{{Source: "s", Key: "k", Hash: 1, Fingerprint: 1}}}))
	require.NoError(t, s.Close())
	s, err = Open(ctx, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	var n int
	require.NoError(t, s.db.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&n))
	require.Equal(t, -idleCacheKiB, n, "reopened")
	require.NoError(t, s.Commit(ctx, state.Commit{Pipeline: "p", DeleteRecords: []state.RecordRef{{Source: "s", Key: "k"}}}))
	require.NoError(t, s.db.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&n))
	require.Equal(t, -writerCacheKiB, n)
}

// TestEmbeddingsPutKeepsEqualVectors: a put over cached vectors (more than
// one multi-row statement's worth) rewrites only those that differ: an
// equal vector keeps the time it was stored at, a differing one gets the
// new vector and time.
func TestEmbeddingsPutKeepsEqualVectors(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	at := time.UnixMicro(1_000_000)
	s.now = func() time.Time { return at }
	const n = rowsPerStatement + 100
	vecs := make(map[uint64][]float32, n)
	for i := range uint64(n) {
		vecs[i<<40|i] = []float32{float32(i), 1}
	}
	require.NoError(t, s.EmbeddingsPut(ctx, "m", vecs))
	at = at.Add(time.Second)
	again := make(map[uint64][]float32, n)
	for h, v := range vecs {
		if h%2 == 0 {
			again[h] = []float32{v[0], 2}
		} else {
			again[h] = []float32{v[0], 1}
		}
	}
	require.NoError(t, s.EmbeddingsPut(ctx, "m", again))
	rows, err := s.db.QueryContext(ctx, `SELECT text_hash, vector, created_at FROM embeddings WHERE model = 'm'`)
	require.NoError(t, err)
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var h, created int64
		var raw []byte
		require.NoError(t, rows.Scan(&h, &raw, &created))
		v, err := state.DecodeVector(raw)
		require.NoError(t, err)
		require.Equal(t, again[uint64(h)], v, "hash %d", h)
		if h%2 == 0 {
			require.Equal(t, int64(2_000_000), created, "hash %d: replaced", h)
		} else {
			require.Equal(t, int64(1_000_000), created, "hash %d: kept", h)
		}
		seen++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, n, seen)
}

// TestRowStatementSQL: shared values are ?1 … ?k in every tuple; a row's
// own values are numbered in the first tuple and plain '?' after it (SQLite
// numbers those one above the largest number so far).
func TestRowStatementSQL(t *testing.T) {
	st := rowStatement{prefix: "INSERT INTO t (a, b, c, d) VALUES ", tuple: "(?1, #, #, ?2)", suffix: "RETURNING b"}
	require.Equal(t, "INSERT INTO t (a, b, c, d) VALUES (?1, ?3, ?4, ?2), (?1, ?, ?, ?2), (?1, ?, ?, ?2) RETURNING b", st.sql(2, 2, 3))
	plain := rowStatement{prefix: "INSERT INTO t (a, b) VALUES ", suffix: ""}
	require.Equal(t, "INSERT INTO t (a, b) VALUES (?, ?), (?, ?) ", plain.sql(0, 2, 2))
}
