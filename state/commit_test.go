package state_test

import (
	"strings"
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

// TestLexicalLen: a row's length is what strings.Fields counts, for the
// analyzer's single-spaced text and for any other white space.
func TestLexicalLen(t *testing.T) {
	for _, text := range []string{
		"", " ", "a", "a b", " a  b ", "fish live tunas", "\tx\ny\r\n", "a\u00a0b", "a\u2003b\u3000c",
		"закон о связи", "x\u0085y", "a\rb", "a\vb", "a\fb", "\xffa b\xfe", "a\u200bb", strings.Repeat("w ", 1000),
	} {
		require.Equal(t, len(strings.Fields(text)), state.LexicalLen(text), "%q", text)
	}
}
