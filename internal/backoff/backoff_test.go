package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDoubled(t *testing.T) {
	t.Parallel()
	week := 7 * 24 * time.Hour
	for n, want := range map[int]time.Duration{-1: time.Hour, 0: time.Hour, 1: 2 * time.Hour, 7: 128 * time.Hour, 8: week, 1 << 40: week} {
		require.Equal(t, want, Doubled(time.Hour, week, n), "n=%d", n)
	}
	require.Equal(t, 10*time.Minute, Doubled(10*time.Second, 10*time.Minute, 30))
	require.Equal(t, 10*time.Minute, Doubled(time.Hour, 10*time.Minute, 0), "base past the limit")
}
