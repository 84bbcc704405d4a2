package baseline_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/chunker/baseline"
)

func TestFixedWindow(t *testing.T) {
	tok := chunker.DefaultTokenizer()
	// "hello world" is 2 tokens, so 100 repetitions joined by spaces are 200.
	text := strings.TrimSpace(strings.Repeat("hello world ", 100))
	require.Equal(t, 200, tok.Count(text))
	w := baseline.FixedWindow(text, 50, 10, tok)
	// Windows start every 40 tokens: 0, 40, 80, 120, 160 (the last reaches the end).
	require.Len(t, w, 5)
	for _, s := range w {
		require.LessOrEqual(t, tok.Count(s), 50)
	}
	require.True(t, strings.HasSuffix(text, w[len(w)-1]))
	require.Nil(t, baseline.FixedWindow(text, 0, 0, tok))
	require.Len(t, baseline.FixedWindow(text, 50, 99, tok), 151, "overlap clamps to size-1: a window per token")
	// Cyrillic windows drop partial characters instead of emitting bad UTF-8.
	for _, s := range baseline.FixedWindow(strings.Repeat("Каждый имеет право на жизнь. ", 20), 7, 0, tok) {
		require.True(t, strings.ToValidUTF8(s, "") == s)
	}
}

func TestRecursive(t *testing.T) {
	tok := chunker.DefaultTokenizer()
	text := strings.Repeat("Alpha beta gamma delta. ", 100) + "\n\nСтатья 1\n\nКаждый имеет право на жизнь."
	r := baseline.Recursive(text, 50, tok)
	require.Greater(t, len(r), 5)
	for _, s := range r {
		// Sums of part counts, as the toolkits do, may be off by one at a join.
		require.LessOrEqual(t, tok.Count(s), 52, s)
		require.NotEmpty(t, strings.TrimSpace(s))
	}
	// The short paragraphs at the end merge into one chunk.
	require.Equal(t, "Статья 1\n\nКаждый имеет право на жизнь.", r[len(r)-1])
	require.Nil(t, baseline.Recursive(text, 0, tok))
	// A word longer than the limit falls back to token windows.
	long := baseline.Recursive(strings.Repeat("x", 1000), 20, tok)
	require.Equal(t, strings.Repeat("x", 1000), strings.Join(long, ""))
}
