package assistant

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/kgsync/kgsync/internal/editdist"
	"github.com/kgsync/kgsync/retrieval"
)

// maxNearest bounds the nearest term names a term without a match lists.
const maxNearest = 5

// termHint is what tool term says when no defined term matches term: the
// names of the defined terms nearest to it and a hint naming them, or
// saying to search when none is near or the pipeline defines no terms.
func termHint(c *retrieval.Corpus, pipeline, term string) ([]string, string) {
	want := strings.ToLower(term)
	type near struct {
		name string
		dist int
	}
	seen := map[string]bool{}
	var all []near
	for _, d := range c.Documents {
		for _, t := range d.Terms {
			name := strings.ToLower(t.Name)
			if seen[name] {
				continue
			}
			seen[name] = true
			if dist, ok := termDistance(want, name); ok {
				all = append(all, near{t.Name, dist})
			}
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Sprintf("no defined term %q: pipeline %s defines no terms; try search", term, pipeline)
	}
	if len(all) == 0 {
		return nil, fmt.Sprintf("no defined term %q in pipeline %s and none near it; try search for it", term, pipeline)
	}
	slices.SortFunc(all, func(a, b near) int {
		return cmp.Or(cmp.Compare(a.dist, b.dist), strings.Compare(a.name, b.name))
	})
	names := make([]string, 0, maxNearest)
	for _, n := range all[:min(len(all), maxNearest)] {
		names = append(names, n.name)
	}
	return names, fmt.Sprintf("no defined term %q in pipeline %s; nearest defined terms: %s (call term with one), or try search",
		term, pipeline, strings.Join(names, ", "))
}

// termDistance is how far a defined term's name (lower case) is from the
// term asked for, and whether it is near enough to suggest: within an
// edit distance of a third of the longer one's runes (at least 2), or
// sharing a prefix of 4 runes or more, or a name the term contains.
func termDistance(want, name string) (int, bool) {
	d := editdist.Levenshtein(want, name)
	n := max(utf8.RuneCountInString(want), utf8.RuneCountInString(name))
	if d <= max(2, n/3) {
		return d, true
	}
	if len(name) >= 3 && strings.Contains(want, name) {
		return d, true
	}
	p := 0
	for w, m := []rune(want), []rune(name); p < min(len(w), len(m)) && w[p] == m[p]; p++ {
	}
	return d, p >= 4
}
