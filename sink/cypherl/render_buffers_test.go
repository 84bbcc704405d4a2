package cypherl

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sink"
)

// TestRenderReusesBuffers: a batch rendered into a buffer a written batch
// gave back renders as into a new one.
func TestRenderReusesBuffers(t *testing.T) {
	t.Parallel()
	s, err := New(t.TempDir(), "tables", sink.Memgraph)
	require.NoError(t, err)
	require.NoError(t, s.Begin(1))
	big, small := rowBatch(t, 60, 16), rowBatch(t, 5, 4)
	for _, b := range []*sink.Batch{big, small, big, small, small, big} {
		sts, err := sink.Statements(sink.Memgraph, b, sink.Options{Pipeline: "tables", RowsPerStatement: DefaultRowsPerStatement, Inline: true})
		require.NoError(t, err)
		want, err := render(nil, sts)
		require.NoError(t, err)
		r, err := s.Render(b)
		require.NoError(t, err)
		require.Equal(t, string(want), string(r.text))
		_, err = s.WriteRendered(t.Context(), r)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close(t.Context()))
}
