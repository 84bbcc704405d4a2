package assistant_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/assistant"
)

// TestTermNoMatchHints: a term the documents do not define gives no
// definitions and a hint naming the nearest defined terms (a typo, a
// plural) or, when none is near, saying to search instead.
func TestTermNoMatchHints(t *testing.T) {
	_, cs := serve(t)
	var tm assistant.TermOutput
	for _, typo := range []string{"Progam", "programs", "program rules"} {
		call(t, cs, "term", map[string]any{"pipeline": "docs", "term": typo}, &tm)
		require.Empty(t, tm.Definitions, typo)
		require.Contains(t, tm.Nearest, "Program", typo)
		require.Contains(t, tm.Hint, `no defined term "`+typo+`"`)
		require.Contains(t, tm.Hint, "Program")
	}
	call(t, cs, "term", map[string]any{"pipeline": "docs", "term": "xylophone quartet"}, &tm)
	require.Empty(t, tm.Definitions)
	require.Empty(t, tm.Nearest)
	require.Contains(t, tm.Hint, `no defined term "xylophone quartet"`)
	require.Contains(t, tm.Hint, "search")

	// A pipeline whose documents define no terms says so.
	call(t, cs, "term", map[string]any{"pipeline": "tables", "term": "horse"}, &tm)
	require.Empty(t, tm.Definitions)
	require.Contains(t, tm.Hint, "defines no terms")

	// A match has no hint.
	call(t, cs, "term", map[string]any{"pipeline": "docs", "term": "program"}, &tm)
	require.NotEmpty(t, tm.Definitions)
	require.Empty(t, tm.Hint)
	require.Empty(t, tm.Nearest)
}
