package sink

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVectorIndexWithDefaults(t *testing.T) {
	t.Parallel()
	vi := VectorIndex{Name: "chunk_embedding", Label: "Chunk", Property: "embedding", Dimension: 384}
	require.Equal(t, VectorIndex{Name: "chunk_embedding", Label: "Chunk", Property: "embedding", Dimension: 384,
		Metric: "cos", Capacity: 500}, vi.WithDefaults(500))
	set := VectorIndex{Name: "n", Label: "L", Property: "p", Dimension: 3, Metric: "ip", Capacity: 7}
	require.Equal(t, set, set.WithDefaults(500), "set fields are kept")
}

func TestVectorIndexDisplaces(t *testing.T) {
	t.Parallel()
	vi := VectorIndex{Name: "chunk_embedding", Label: "Chunk", Property: "embedding", Dimension: 384}
	for _, tc := range []struct {
		old  VectorIndex
		want bool
	}{
		{VectorIndex{Name: "chunk_embedding", Label: "Other", Property: "x", Dimension: 3}, true},  // same name
		{VectorIndex{Name: "old_name", Label: "Chunk", Property: "embedding", Dimension: 3}, true}, // same label and property
		{VectorIndex{Name: "old_name", Label: "Chunk", Property: "other", Dimension: 384}, false},
		{VectorIndex{Name: "old_name", Label: "Other", Property: "embedding", Dimension: 384}, false},
	} {
		require.Equal(t, tc.want, vi.Displaces(tc.old), "%+v", tc.old)
	}
}
