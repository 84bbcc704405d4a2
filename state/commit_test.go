package state_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/state"
)

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"row:1#child:", "row:1#child;", true},
		{"a\xff", "b", true},
		{"\xff\xff", "", false},
		{"", "", false},
	} {
		got, ok := state.PrefixEnd(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestRecordPosLess(t *testing.T) {
	require.True(t, state.RecordPos{Ord: 1, Key: "z"}.Less(state.RecordPos{Ord: 2, Key: "a"}))
	require.True(t, state.RecordPos{Ord: 2, Key: "B"}.Less(state.RecordPos{Ord: 2, Key: "a"}))
	require.False(t, state.RecordPos{Ord: 2, Key: "a"}.Less(state.RecordPos{Ord: 2, Key: "a"}))
}
