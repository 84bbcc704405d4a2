package cypherl_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/crashtest"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/cypherl"
)

// TestBeginRepairsTornTail simulates a process killed in the middle of a
// write (the kernel may cut a write short on SIGKILL): the newest file ends
// in half a statement. The next run's Begin cuts the incomplete line off,
// so `cat *.cypherl | mgconsole` never sees it run into the next file's
// first statement; complete statements before it stay.
func TestBeginRepairsTornTail(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	batch := func(id string) *sink.Batch {
		return &sink.Batch{NodeUpserts: []sink.NodeUpsert{{Label: "Doc", ID: id, Props: map[string]any{"text": "line; with \"quotes\"\n"}}}}
	}

	s, err := cypherl.New(dir, "p", sink.Memgraph)
	require.NoError(t, err)
	require.NoError(t, s.Begin(1))
	_, err = s.Write(ctx, batch("a"))
	require.NoError(t, err)
	_, err = s.Write(ctx, batch("b"))
	require.NoError(t, err)
	require.NoError(t, s.Close(ctx))
	first := s.Files()[0]
	body, err := os.ReadFile(first)
	require.NoError(t, err)
	complete := bytes.IndexByte(body, '\n') + 1 // the first batch's line
	// The second batch's write was cut short 10 bytes into its line.
	require.NoError(t, os.Truncate(first, int64(complete+10)))

	s2, err := cypherl.New(dir, "p", sink.Memgraph)
	require.NoError(t, err)
	require.NoError(t, s2.Begin(2))
	_, err = s2.Write(ctx, batch("b")) // the run redoes the uncommitted batch
	require.NoError(t, err)
	require.NoError(t, s2.Close(ctx))

	repaired, err := os.ReadFile(first)
	require.NoError(t, err)
	require.Equal(t, body[:complete], repaired, "the incomplete line is cut, the complete one kept")

	// The concatenation of all files is a clean statement stream.
	var all []byte
	for _, f := range append([]string{first}, s2.Files()...) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		all = append(all, b...)
	}
	g := crashtest.NewGraph()
	var st crashtest.ReplayStats
	torn, err := g.ReplayFile(all, &st)
	require.NoError(t, err)
	require.False(t, torn)
	require.Equal(t, 2, st.Statements)
	require.Len(t, g.Nodes, 2)
	_, err = os.Stat(filepath.Join(dir, "p", cypherl.SchemaFile))
	require.ErrorIs(t, err, os.ErrNotExist, "no DDL was written")
}

// TestBeginWithoutTornTailChangesNothing: an intact newest file, or an
// empty one, is left as it is.
func TestBeginWithoutTornTailChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	s, err := cypherl.New(dir, "p", sink.Memgraph)
	require.NoError(t, err)
	require.NoError(t, s.Begin(1))
	_, err = s.Write(ctx, &sink.Batch{DeleteNodes: []sink.NodeRef{{Label: "Doc", ID: "x"}}})
	require.NoError(t, err)
	require.NoError(t, s.Close(ctx))
	before, err := os.ReadFile(s.Files()[0])
	require.NoError(t, err)

	s2, err := cypherl.New(dir, "p", sink.Memgraph)
	require.NoError(t, err)
	require.NoError(t, s2.Begin(2))
	require.NoError(t, s2.Close(ctx))
	after, err := os.ReadFile(s.Files()[0])
	require.NoError(t, err)
	require.Equal(t, before, after)
}
