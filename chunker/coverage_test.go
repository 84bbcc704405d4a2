package chunker_test

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/internal/corpus"
)

// generated are the words a parser may add that are not in the source:
// list and clause numbers it renders (Word's auto-numbering, a Markdown
// ordered list numbered 1, 1, 1 in the source), Roman numerals, single
// letters.
var generated = regexp.MustCompile(`^(?:\d{1,3}|[ivxlcIVXLC]{1,6}|\pL)$`)

func countWords(ws []string) map[string]int {
	m := map[string]int{}
	for _, w := range ws {
		m[w]++
	}
	return m
}

// elementWords are the words of every element: section and annex titles
// and leaf texts (the root's title repeats a title paragraph).
func elementWords(root *chunker.Element) map[string]int {
	var ws []string
	visit(root, "", func(e *chunker.Element, path string) {
		if path == "" {
			return
		}
		ws = append(ws, corpus.Words(e.Title)...)
		ws = append(ws, corpus.Words(e.Text)...)
	})
	return countWords(ws)
}

// TestNoTextLost: on every corpus document, every word of the body (the
// file's text read without the chunker, less what the parser reports as
// noise) is in exactly one element, and every element's words are in a
// chunk that covers it (its text, or the context line for headings).
func TestNoTextLost(t *testing.T) {
	for _, name := range corpusDocs {
		t.Run(name, func(t *testing.T) {
			raw := readDoc(t, name)
			root := parseDoc(t, name)
			elems := elementWords(root)
			if body, ok := corpus.BodyWords(name, raw); ok {
				want := corpus.ExpectedBodyWords(body, raw, root)
				var missing, extra []string
				for w, n := range want {
					if elems[w] < n {
						missing = append(missing, w)
					}
				}
				for w, n := range elems {
					if n > max(want[w], 0) && !generated.MatchString(w) {
						extra = append(extra, w)
					}
				}
				sort.Strings(missing)
				sort.Strings(extra)
				require.Empty(t, missing, "body words in no element")
				require.Empty(t, extra, "words in more elements than the body has them")
			}
			chunks, err := chunker.Split(name, root, testOpts)
			require.NoError(t, err)
			covered := map[string]map[string]bool{} // element path → words of its chunks
			context := map[string]bool{}
			for _, c := range chunks {
				ws := corpus.Words(c.Text)
				for _, e := range c.Elements {
					if covered[e] == nil {
						covered[e] = map[string]bool{}
					}
					for _, w := range ws {
						covered[e][w] = true
					}
				}
				// A section's heading is in the context line of a chunk
				// that starts with it, else in the text of the chunk that
				// enters it.
				for _, w := range corpus.Words(c.Context + "\n" + c.Text) {
					context[w] = true
				}
			}
			visit(root, "", func(e *chunker.Element, path string) {
				if path == "" {
					return
				}
				if len(e.Children) == 0 && strings.TrimSpace(e.Text) != "" {
					got := covered[name+chunker.PathSep+path]
					for _, w := range corpus.Words(e.Text) {
						require.True(t, got[w], "%q of %s in no chunk", w, path)
					}
				}
				if e.Kind == chunker.KindSection || e.Kind == chunker.KindAnnex {
					for _, w := range corpus.Words(e.Title) {
						require.True(t, context[w], "heading word %q of %s in no context line or chunk text", w, path)
					}
				}
			})
		})
	}
}
