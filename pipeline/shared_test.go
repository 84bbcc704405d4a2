package pipeline_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
)

// TestCheckShared (issue: two pipelines share label and index names in one
// Memgraph): pipelines writing to one graph must agree on every vector
// index they share.
func TestCheckShared(t *testing.T) {
	t.Parallel()
	parse := func(dims2 string, sink2 string) *config.Config {
		cfg, err := config.Parse([]byte(`
embedder: {provider: hashing, dimensions: 64}
pipelines:
  - name: docs
    sources: [{name: docs, files: {root: .}}]
  - name: tables
    `+sink2+`
    embedder: {provider: hashing, dimensions: `+dims2+`}
    sources: [{name: docs2, files: {root: .}}]
`), t.TempDir())
		require.NoError(t, err)
		return cfg
	}
	require.NoError(t, pipeline.CheckShared(parse("64", "")))
	err := pipeline.CheckShared(parse("128", ""))
	require.ErrorContains(t, err, `pipelines "docs" and "tables" share vector index name chunk_embedding`)
	require.ErrorContains(t, err, "dimension 64")
	require.ErrorContains(t, err, "dimension 128")
	require.ErrorContains(t, err, "term_embedding")
	// A pipeline writing to its own Memgraph shares nothing.
	require.NoError(t, pipeline.CheckShared(parse("128", "sink: {type: memgraph, memgraph: {uri: 'bolt://other:7687'}}")))

	s, err := pipeline.SchemaOf(&parse("64", "").Pipelines[0])
	require.NoError(t, err)
	require.Contains(t, s.Edges, sink.EdgeType{Type: "CROSS_REF", Keyed: true, Properties: []string{"text"}})
}
