package corpus

import (
	"strings"

	"github.com/kgsync/kgsync/chunker"
)

// CitedParents maps every Citation in the tree to the Citation of its
// nearest cited ancestor ("" under the document). An ancestor cited by its
// title (an unnumbered heading, such as a document's title over its
// numbered clauses) is passed over for a numbered unit: the unit's parent
// is then the nearest numbered ancestor, "" for none.
func CitedParents(root *chunker.Element) map[string]string {
	out := map[string]string{}
	var walk func(e *chunker.Element, parent, numbered string)
	walk = func(e *chunker.Element, parent, numbered string) {
		for _, c := range e.Children {
			p, n := parent, numbered
			if c.Citation != "" {
				// An unnumbered heading, cited by its title, has a slug
				// or an id for its segment.
				_, structural := chunker.ParseAddress(c.Address)
				if _, dup := out[c.Citation]; !dup {
					if structural {
						out[c.Citation] = numbered
					} else {
						out[c.Citation] = parent
					}
				}
				p = c.Citation
				if structural || c.Kind == chunker.KindAnnex {
					n = c.Citation
				}
			}
			walk(c, p, n)
		}
	}
	walk(root, "", "")
	return out
}

// ExpectedBodyWords counts the words of body (BodyWords of raw) less the
// noise the parser reports (root.Noise): what every element together
// should hold, word → count. A footnote mark glued to a clause number on
// its line ("501.5." is call 50 and clause 1.5) leaves the body word
// without the call's digits; comments are no text to BodyWords either.
func ExpectedBodyWords(body []string, raw []byte, root *chunker.Element) map[string]int {
	want := map[string]int{}
	for _, w := range body {
		want[w]++
	}
	lines := strings.Split(string(raw), "\n")
	for _, n := range root.Noise {
		if n.Reason == "footnote call" && n.Line > 0 {
			if l := strings.TrimSpace(lines[n.Line-1]); len(l) > len(n.Text) && l[len(n.Text)] >= '0' && l[len(n.Text)] <= '9' {
				w := Words(l)[0]
				want[w]--
				want[w[len(n.Text):]]++
				continue
			}
		}
		if strings.HasPrefix(n.Text, "<!--") {
			continue
		}
		for _, w := range Words(n.Text) {
			want[w]--
		}
	}
	return want
}
