package sink_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/sink"
)

// backtickToken scans one backtick-quoted symbolic name at the start of q
// the way Cypher lexers do (a doubled backtick is a literal backtick) and
// returns its unquoted text and the number of bytes it spans.
func backtickToken(q string) (name string, n int, ok bool) {
	if !strings.HasPrefix(q, "`") {
		return "", 0, false
	}
	var b strings.Builder
	for i := 1; i < len(q); i++ {
		if q[i] != '`' {
			b.WriteByte(q[i])
			continue
		}
		if i+1 < len(q) && q[i+1] == '`' {
			b.WriteByte('`')
			i++
			continue
		}
		return b.String(), i + 1, true
	}
	return "", 0, false
}

// FuzzQuoteName: for any string ValidName accepts, QuoteName yields exactly
// one backtick token spanning the whole result, which unquotes to the
// input, and carries none of the characters that end a CYPHERL statement
// or open a string (';', quotes, line breaks).
func FuzzQuoteName(f *testing.F) {
	for _, s := range []string{"Chunk", "a`b", "`", "``", "x` RETURN 1 //", "名前", "\uff40grave", "a b", "tab\tname", "semi;colon", "quo'te", "line\u2028sep"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if sink.ValidName(s) != nil {
			return
		}
		q := sink.QuoteName(s)
		name, n, ok := backtickToken(q)
		require.True(t, ok, "%q", q)
		require.Equal(t, len(q), n, "one token spans %q", q)
		require.Equal(t, s, name)
		require.NotContains(t, q, ";")
		require.NotContains(t, q, "'")
		require.NotContains(t, q, "\"")
		require.NotContains(t, q, "\n")
		require.NotContains(t, q, "\r")
		require.NotContains(t, q, "\u2028")
	})
}
