package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecentVectorsAreBounded: stored vectors move from held to recent,
// are found there, and what recent and older keep never passes
// recentBytes, however many are stored; the newest are always kept.
func TestRecentVectorsAreBounded(t *testing.T) {
	t.Parallel()
	const dims = 384
	h := &heldVectors{m: map[string]map[uint64][]float32{"m": {}}}
	perGen := recentBytes / 2 / recentEntryBytes(dims)
	total := 5*perGen + 17
	for i := range total {
		v := make([]float32, dims)
		v[0] = float32(i)
		h.m["m"][uint64(i)] = v
		h.stored("m", map[uint64][]float32{uint64(i): v})
		kept := len(h.recent["m"]) + len(h.older["m"])
		require.LessOrEqual(t, kept*recentEntryBytes(dims), recentBytes, "after %d stored", i+1)
		require.Empty(t, h.m["m"], "a stored vector is no longer held")
	}
	out := map[uint64][]float32{}
	newest := []uint64{uint64(total - 1), uint64(total - perGen)}
	ask := h.lookup("m", append(newest, 0, uint64(total)), out)
	require.Equal(t, []uint64{0, uint64(total)}, ask, "the oldest and an unknown hash are asked of the cache")
	for _, n := range newest {
		require.Equal(t, float32(n), out[n][0])
	}
	require.GreaterOrEqual(t, len(h.recent["m"])+len(h.older["m"]), perGen, "at least half the bound is kept")
	require.Empty(t, h.lookup("other", nil, out), "no hashes, nothing to ask")
}
