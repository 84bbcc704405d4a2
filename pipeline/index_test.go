package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

func testIndex(keys ...string) *recordIndex {
	x := &recordIndex{extra: map[string]bool{}}
	for i, k := range keys {
		x.keys = append(x.keys, k)
		x.sums = append(x.sums, state.RecordSummary{Hash: uint64(i + 1)})
	}
	x.seen = make([]bool, len(keys))
	x.removed = make([]bool, len(keys))
	x.live = len(keys)
	return x
}

func TestRecordIndex(t *testing.T) {
	x := testIndex("a", "b", "b"+sources.ChildMarker+"1", "c")
	s, ok := x.get("c")
	require.True(t, ok)
	require.Equal(t, uint64(4), s.Hash)
	_, ok = x.get("z")
	require.False(t, ok)

	require.False(t, x.markSeen("a"))
	require.True(t, x.markSeen("a"), "a key listed twice")
	require.False(t, x.markSeen("new"))
	require.True(t, x.markSeen("new"))
	require.True(t, x.isSeen("new"))
	require.Equal(t, []string{"b", "b" + sources.ChildMarker + "1", "c"}, x.unseen())

	require.Equal(t, []string{"b" + sources.ChildMarker + "1"}, x.children(func(parent, _ string) bool { return parent == "b" }))
	x.remove("b")
	x.remove("b")
	require.Equal(t, 3, x.len())
	_, ok = x.get("b")
	require.False(t, ok, "a removed key is gone: listed again, it is new")
	require.False(t, x.markSeen("b"))
	require.Equal(t, []string{"b" + sources.ChildMarker + "1", "c"}, x.unseen())
}
