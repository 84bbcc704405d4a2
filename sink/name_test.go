package sink

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// lexEscapedName reads one EscapedSymbolicName token at the start of s, as
// Memgraph's lexer does: ( '`' ~[`]* '`' )+ (CypherLexer.g4), the runs joined
// by a backtick (docs/memgraph.md §6). It returns the decoded name and the
// rest of s after the token.
func lexEscapedName(t *testing.T, s string) (name, rest string) {
	t.Helper()
	require.True(t, strings.HasPrefix(s, "`"), "token must start with a backtick: %q", s)
	var runs []string
	for strings.HasPrefix(s, "`") {
		end := strings.IndexByte(s[1:], '`')
		require.GreaterOrEqual(t, end, 0, "unterminated backtick run in %q", s)
		runs = append(runs, s[1:1+end])
		s = s[1+end+1:]
	}
	return strings.Join(runs, "`"), s
}

func TestValidNameAndQuoteName(t *testing.T) {
	t.Parallel()
	// Hostile names: either ValidName rejects them or QuoteName turns them
	// into exactly one identifier token that decodes back to the name.
	tests := []struct {
		name    string
		wantErr string // substring; "" when the name is accepted
	}{
		{name: "Chunk"},
		{name: "chunk_embedding"},
		{name: "a`b"},
		{name: "`"},
		{name: "``"},
		{name: "a`) DETACH DELETE n //"},
		{name: "x` {id: 1}) MATCH (m) DETACH DELETE m RETURN `"},

		{name: `back\slash`},
		{name: "$rows"},
		{name: "ｍatch"},               // fullwidth m
		{name: "look｀alike"},          // U+FF40 fullwidth grave accent is not a backtick
		{name: "ˋmodifier"},           // U+02CB
		{name: "fullwidth；semicolon"}, // U+FF1B holds no ';' byte in UTF-8
		{name: "Ünïcödé 名前"},
		{name: "space inside"},
		{name: "", wantErr: "empty"},
		{name: "a;b", wantErr: "';'"},
		{name: "a`;`b", wantErr: "';'"},
		{name: `quote"double`, wantErr: `'"'`},
		{name: "quote'single", wantErr: `'\''`},
		{name: "x`'", wantErr: "CYPHERL"},
		{name: "line\nbreak", wantErr: "control"},
		{name: "carriage\rreturn", wantErr: "control"},
		{name: "tab\there", wantErr: "control"},
		{name: "nul\x00", wantErr: "control"},
		{name: "del\x7f", wantErr: "control"},
		{name: "nel\u0085", wantErr: "control"},
		{name: "ls\u2028", wantErr: "control"},
		{name: "bad\xffutf8", wantErr: "UTF-8"},
		{name: strings.Repeat("x", MaxNameBytes+1), wantErr: "257 bytes"},
	}
	for _, tt := range tests {
		err := ValidName(tt.name)
		if tt.wantErr != "" {
			require.Error(t, err, "%q", tt.name)
			require.Contains(t, err.Error(), tt.wantErr)
			require.Contains(t, err.Error(), "invalid name")
			continue
		}
		require.NoError(t, err, "%q", tt.name)
		q := QuoteName(tt.name)
		got, rest := lexEscapedName(t, q)
		require.Equal(t, tt.name, got, "quoted %q must decode to the name", q)
		require.Empty(t, rest, "quoted %q must be one token", q)

		// Inside a query the name ends where the quoting says, and the text
		// after it is what we wrote.
		query := "MATCH (n:" + q + ") RETURN n"
		got, rest = lexEscapedName(t, strings.TrimPrefix(query, "MATCH (n:"))
		require.Equal(t, tt.name, got)
		require.Equal(t, ") RETURN n", rest)
		// Nothing mgconsole splits on survives ValidName (docs/memgraph.md §7).
		require.NotContains(t, q, ";")
		require.NotContains(t, q, "\n")
	}
	require.NoError(t, ValidName(strings.Repeat("x", MaxNameBytes)))
	require.Equal(t, "`a``b`", QuoteName("a`b"), "docs/memgraph.md §6: a literal backtick is written twice")
}
