package pipeline_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/retrieval"
)

// search.weights.proximity reaches the search; unset keys keep their
// defaults.
func TestSearchConfigProximityWeight(t *testing.T) {
	t.Parallel()
	off := 0.0
	c := pipeline.SearchConfig(&config.Search{Weights: &config.SearchWeights{Proximity: &off}})
	require.Zero(t, c.Weights.Proximity)
	require.Equal(t, retrieval.DefaultConfig().Weights.Lexical, c.Weights.Lexical)
	require.Equal(t, retrieval.DefaultConfig().Weights.Proximity, pipeline.SearchConfig(&config.Search{}).Weights.Proximity)
	require.Positive(t, retrieval.DefaultConfig().Weights.Proximity)
}
