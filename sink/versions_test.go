package sink

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tableRow renders one row of the supported-version table of
// docs/memgraph-support.md from r.
func tableRow(r MemgraphRange) string {
	if !r.Supported {
		return "| " + r.Versions() + " | refused (Bolt sink, `validate --online`, `/readyz`, `sink.cypherl.memgraph_version`) | – | – | – | – |"
	}
	text, search, lexical := "none", "not called", "kgsync's lexical index in state"
	if r.TextIndexes {
		text = "`CREATE TEXT INDEX name ON :L(p)`"
		lexical = "the server's text indexes"
		search = "`text_search.search(index, query, limit)`, yields `node, score`"
		if r.TextLimitInConfig {
			search = "`text_search.search(index, query, {limit: n})`, yields `node, score`"
		}
	}
	vector := "`CREATE VECTOR INDEX … WITH CONFIG {…}`; `vector-indexes.cypherl`: CREATE only (a duplicate is a notification)"
	if r.DuplicateVectorIndexFails {
		vector = "`CREATE VECTOR INDEX … WITH CONFIG {…}`; `vector-indexes.cypherl`: DROP, then CREATE (a duplicate is an error)"
	}
	checks := "version, edge properties; reports text search on the server"
	if !r.TextIndexes {
		checks = "version, edge properties; reports no text search on the server"
	}
	return "| " + r.Versions() + " | " + text + " | " + search + " | " + vector + " | " + checks + " | " + lexical + " |"
}

// TestSupportTableIsTheCode: the version table of
// docs/memgraph-support.md is MemgraphRanges, row by row, so the claims
// the documentation makes are the ones the tests of the sinks, the
// replayer and validate check (each iterates MemgraphRanges or
// MemgraphFeatures).
func TestSupportTableIsTheCode(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "docs", "memgraph-support.md"))
	require.NoError(t, err)
	var got []string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "| Memgraph | text index"):
			in = true
		case in && strings.HasPrefix(line, "| ---"):
		case in && strings.HasPrefix(line, "|"):
			got = append(got, line)
		case in:
			in = false
		}
	}
	var want []string
	for _, r := range MemgraphRanges {
		want = append(want, tableRow(r))
	}
	require.Equal(t, want, got, "docs/memgraph-support.md's version table")
}

func TestMemgraphFeatures(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{"3.0.0": "3.0", "3.1.0": "3.1–3.5", "v3.5.2": "3.1–3.5", "3.6.0": "3.6–3.7",
		"3.8.1": "3.8–3.10", "3.11.0": "3.11 or later", "3.12.0-rc1": "3.11 or later", "4.0": "3.11 or later"} {
		r, err := MemgraphFeatures(v)
		require.NoError(t, err, v)
		require.Equal(t, want, r.Versions(), v)
	}
	for _, v := range []string{"", "latest", "2.21.0"} {
		_, err := MemgraphFeatures(v)
		require.Error(t, err, v)
	}
	r, _ := MemgraphFeatures("3.5.0")
	require.False(t, r.TextIndexes, "3.5 needs --experimental-enabled=text-search and its text_search.search has no score")
	r, _ = MemgraphFeatures("3.4.0")
	require.False(t, r.TextIndexes, "CREATE TEXT INDEX … (props) is a syntax error before 3.5")
}
