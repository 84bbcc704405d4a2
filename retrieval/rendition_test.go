package retrieval_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/retrieval"
)

// writeDocs writes name → text files into dir/docs and syncs them.
func writeDocs(t *testing.T, docs map[string]string) *fixture {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "docs"), 0o755))
	for name, text := range docs {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "docs", name), []byte(text), 0o644))
	}
	f, err := newFixture(t, dir, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.store.Close() })
	return f
}

// body is a hit's text without its context line.
func body(h retrieval.Hit) string {
	return strings.TrimPrefix(h.Text, h.Context+"\n\n")
}

// TestSearchFoldsRenditions: a passage held by two documents (one
// standard synced as .md and as .txt) is one hit that names the other
// copy, so the other hits are other passages; the same paragraph twice in
// one document stays two hits (two places of the document).
func TestSearchFoldsRenditions(t *testing.T) {
	t.Parallel()
	keep := "The archive keeper retains every signed archive for ten years after the last delivery of the product."
	other := "A signed archive that fails its checksum is quarantined by the archive keeper and reported the same day."
	// Sections long enough to be chunks of their own.
	filler := strings.Repeat("Unrelated sentence about the weather, the tides, the harvest and the village fair. ", 25)
	keep += " " + filler
	other += " " + filler
	doc := func(h1, h2 string) string {
		return h1 + "\n\n" + h2 + "1 Keeping\n\n" + keep + "\n\n" + h2 + "2 Checking\n\n" + other + "\n\n" + h2 + "3 Other\n\n" + filler + "\n"
	}
	twice := "# Twice\n\n## 1 First\n\n" + keep + " Twice.\n\n## 2 Second\n\n" + keep + " Twice.\n"
	f := writeDocs(t, map[string]string{"archives.md": doc("# Archives", "## "), "archives-copy.md": doc("# Archives (copy)", "### "), "twice.md": twice})
	res := search(t, f.p.Searcher(), "How long does the archive keeper retain a signed archive?", retrieval.Options{K: 5, NoFloor: true})
	require.NotEmpty(t, res.Hits)

	var keepHits, twiceHits int
	for _, h := range res.Hits {
		switch b := body(h); {
		case strings.HasSuffix(strings.TrimSpace(b), "Twice."):
			twiceHits++
			require.Empty(t, h.Renditions, "a paragraph repeated within one document is two places, not two renditions: %+v", h)
		case strings.Contains(b, "retains every signed archive"):
			keepHits++
			require.Len(t, h.Renditions, 1, "the other copy is named: %+v", h)
			r := h.Renditions[0]
			require.NotEqual(t, h.Node, r.Node, "a rendition is in another document")
			require.NotEmpty(t, r.ID)
		}
	}
	require.Equal(t, 1, keepHits, "the passage is one hit, not one per copy: %v", hitIDs(res.Hits))
	require.Equal(t, 2, twiceHits, "both places of the repeated paragraph are hits: %v", hitIDs(res.Hits))
	require.True(t, slices.ContainsFunc(res.Hits, func(h retrieval.Hit) bool { return strings.Contains(body(h), "fails its checksum") }),
		"the slot the copy took goes to another passage: %+v", res.Hits)
}

// TestExpandSkipsSharedHeadings: a heading every section of a document
// repeats ("Verification material") names no one section, so a hit that
// uses its words pulls none of them in; a heading of one section is still
// named.
func TestExpandSkipsSharedHeadings(t *testing.T) {
	t.Parallel()
	filler := strings.Repeat("Unrelated sentence about the weather, the tides, the harvest and the village fair. ", 25)
	var b strings.Builder
	b.WriteString("# Program\n\n")
	for _, s := range []string{"1 Policy", "2 Training", "3 Review"} {
		b.WriteString("## " + s + "\n\nThe organisation keeps the " + strings.ToLower(s[2:]) + " records up to date and current. " + filler + "\n\n")
		b.WriteString("### Verification material\n\n- A documented " + strings.ToLower(s[2:]) + " record.\n\n")
	}
	b.WriteString("## 4 Escalation contacts\n\nEach contact is named with a deputy. " + filler + "\n\n")
	b.WriteString("## 5 Audits\n\nThe audit checks the verification material and the escalation contacts of the program. " + filler + "\n")
	f := writeDocs(t, map[string]string{"program.md": b.String()})
	s := f.p.Searcher()
	res := search(t, s, "What does the audit check?", retrieval.Options{K: 1, NoFloor: true})
	require.NotEmpty(t, res.Hits)
	require.Contains(t, body(res.Hits[0]), "The audit checks")
	c, err := s.ExpandResult(t.Context(), res, 5000)
	require.NoError(t, err)
	var reasons []string
	for _, x := range c.Hits[0].Expansions {
		reasons = append(reasons, x.Reason)
	}
	require.Contains(t, reasons, `names the heading "4 Escalation contacts"`, "%v %v %v", reasons, c.Hits[0].Address, c.Hits[0].Elements)
	for _, r := range reasons {
		require.NotContains(t, r, "Verification material", "%v", reasons)
	}
}

// TestCapitalTermNeedsCapitals: a term the document writes in capitals
// (the GET method) is named by a question that writes it so, or by one
// written all in lower case, but not by a question in sentence case
// whose "get" is the verb.
func TestCapitalTermNeedsCapitals(t *testing.T) {
	t.Parallel()
	doc := "# Methods\n\n## 1 Definitions\n\n" +
		"(1) ‘GET’ means the method that asks the store for the current state of a record.\n\n" +
		"(2) ‘store’ means the service that keeps the records.\n\n" +
		"## 2 Records\n\nA record that was never written is absent: a look-up of it answers that nothing is there.\n"
	f := writeDocs(t, map[string]string{"methods.md": doc})
	s := f.p.Searcher()
	for q, want := range map[string]bool{
		"What do I get back when I look up a record that was never written?": false,
		"What does a GET ask the store for?":                                 true,
		"what does get mean":                                                 true,
	} {
		res := search(t, s, q, retrieval.Options{K: 3, NoFloor: true})
		require.Equal(t, want, slices.Contains(res.Terms, "GET"), "%q: terms %v", q, res.Terms)
	}
}

// hitIDs lists hits as "node address (renditions)" for failure messages.
func hitIDs(hs []retrieval.Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, fmt.Sprintf("%s %s (%d renditions)", h.Node, h.Address, len(h.Renditions)))
	}
	return out
}
