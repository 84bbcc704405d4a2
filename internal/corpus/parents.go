package corpus

import "github.com/kgsync/kgsync/chunker"

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
