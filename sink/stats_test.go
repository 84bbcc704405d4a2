package sink

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStatsAdd(t *testing.T) {
	t.Parallel()
	got := Stats{Statements: 3, Batches: 1, Retries: 2}.Add(Stats{Statements: 5, Batches: 2})
	require.Equal(t, Stats{Statements: 8, Batches: 3, Retries: 2}, got)
}
