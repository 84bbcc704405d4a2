package chunker

import (
	"strings"
)

// Citations. assignCitations gives every element its address in full
// (Element.Citation) from the segment addresses of its ancestors, the way
// the document and its readers cite it:
//
//   - Articles, recitals, annexes, tables and figures are numbered through
//     the document and cited alone: "Article 7", never "Chapter II Article
//     7".
//   - Divisions (part, title, chapter, section) are cited alone unless they
//     sit in an annex ("Annex I Chapter II") or are the sections of a
//     chapter ("Chapter V Section 2").
//   - Clause numbers carry their own hierarchy ("6.5.1") and are cited
//     alone, except inside an annex, whose numbering is its own ("Annex II
//     6.3"; an appendix numbered after its letter, "A.1" in Appendix A,
//     keeps "A.1").
//   - Paragraphs and points follow the element they divide: "Article
//     7(3)(a)", "Annex I 3(c)", "3.1(a)", "Статья 81 часть 3", "Статья 71
//     пункт а"; a point under nothing citable has no citation.
//   - A section the document does not number is cited by its title
//     ("Method sets"); leaves without a number of their own (paragraphs,
//     lists, unlabelled tables) have no citation.
//
// Where two elements would get the same citation because a division
// numbers its content afresh (each CTE "Sección" restarts at 1, Part A and
// Part C of an annex both have a point 1), every citation inside the
// divisions concerned is prefixed with the division's ("Annex VI Part A 1",
// "Sección SI 1 1.1"); what still collides keeps the first element as the
// owner of the plain citation and the later ones get their parent's
// citation in front.
func assignCitations(root *Element) {
	scoped := map[*Element]bool{}
	size := countElements(root)
	for pass := 0; pass < 3; pass++ {
		byKey := make(map[string][]*Element, size)
		var owners []*Element // first element of each key, in order
		var ownerKeys []string
		parents := make(map[*Element]*Element, size)
		var walk func(e *Element, ctx citeCtx)
		walk = func(e *Element, ctx citeCtx) {
			for _, c := range e.Children {
				parents[c] = e
				cctx := ctx.child(c, scoped[c])
				c.Citation = cctx.self
				if c.Citation != "" {
					k := foldKey(c.Citation)
					if len(byKey[k]) == 0 {
						owners = append(owners, c)
						ownerKeys = append(ownerKeys, k)
					}
					byKey[k] = append(byKey[k], c)
				}
				walk(c, cctx)
			}
		}
		walk(root, citeCtx{})
		changed := false
		for i, o := range owners {
			group := byKey[ownerKeys[i]]
			if len(group) < 2 {
				continue
			}
			// Mark the division (or, for all but the first, the titled
			// section) nearest to each member that the others do not share.
			if _, structural := unitOf(o.Address); !structural {
				continue
			}
			for n, e := range group {
				for p := parents[e]; p != nil && p != root; p = parents[p] {
					u, ok := unitOf(p.Address)
					division := ok && u.isDivision()
					titled := !ok && isContainer(p.Kind) && p.Title != ""
					if !division && !titled {
						continue
					}
					if !sharedAncestor(p, group, e, parents) && !scoped[p] && (division || n > 0) {
						scoped[p] = true
						changed = true
					}
					break
				}
			}
		}
		if !changed || pass == 2 {
			// Whatever still collides: the later ones take their parent's
			// citation in front.
			for i := range owners {
				group := byKey[ownerKeys[i]]
				for _, e := range group[1:] {
					if p := parents[e]; p != nil && p.Citation != "" && !strings.HasPrefix(e.Citation, p.Citation) {
						e.Citation = p.Citation + " " + e.Citation
					}
				}
			}
			return
		}
	}
}

// countElements is the number of elements under e.
func countElements(e *Element) int {
	n := len(e.Children)
	for _, c := range e.Children {
		n += countElements(c)
	}
	return n
}

// sharedAncestor reports whether p is an ancestor of another member of
// group than e (then p does not tell them apart).
func sharedAncestor(p *Element, group []*Element, e *Element, parents map[*Element]*Element) bool {
	for _, o := range group {
		if o == e {
			continue
		}
		for q := parents[o]; q != nil; q = parents[q] {
			if q == p {
				return true
			}
		}
	}
	return false
}

// citeCtx is what the citation of an element's children depends on.
type citeCtx struct {
	self string // the element's own citation
	// parent is the citation paragraphs and points under the element
	// append to ("" when nothing citable encloses them).
	parent string
	// scope prefixes clause numbers, divisions, tables and figures: the
	// enclosing annex or a division that numbers afresh; scopeID is the
	// scope's own identifier ("A" of "Appendix A").
	scope, scopeID string
	inAnnex        bool
	// division is the citation of the enclosing division, for the
	// sections of a chapter.
	division     string
	divisionKind unitKind
}

func (ctx citeCtx) child(c *Element, scoped bool) citeCtx {
	u, ok := unitOf(c.Address)
	out := ctx
	out.self = ""
	prefix := func(p, s string) string {
		if p == "" {
			return s
		}
		return p + " " + s
	}
	if !ok {
		if isContainer(c.Kind) && c.Title != "" {
			out.self = titleCitation(c.Title)
			out.parent = ""
			if scoped {
				out.scope, out.scopeID = out.self, ""
			}
			if ctx.scope != "" && scoped {
				out.self = prefix(ctx.scope, out.self)
			}
		} else {
			out.parent = ""
		}
		return out
	}
	switch u.kind {
	case unitAnnex:
		out.self = u.String()
		out.parent = out.self
		out.scope, out.scopeID, out.inAnnex = out.self, lastField(u.id), true
		out.division, out.divisionKind = out.self, u.kind
	case unitArticle, unitRecital:
		out.self = u.String()
		out.parent = out.self
	case unitTable, unitFigure:
		// Numbered through the document ("Tabla 1.1" says its section);
		// a repeated number takes its parent's citation (see above).
		out.self = u.String()
		out.parent = out.self
	case unitPart, unitTitle, unitChapter, unitSection:
		s := u.String()
		switch {
		case ctx.inAnnex, u.kind == unitSection && ctx.division != "" && ctx.divisionKind != unitSection,
			ctx.division != "" && scoped:
			s = prefix(ctx.division, s)
		}
		out.self = s
		out.parent = s
		out.division, out.divisionKind = s, u.kind
		if scoped {
			out.scope, out.scopeID = s, lastField(u.id)
		}
	case unitNumber:
		s := u.id
		// "A.1" in Appendix A carries its scope; "1.1" in Sección SI 1
		// does not (a numeric scope id is no clause prefix).
		if ctx.scope != "" && !(ctx.scopeID != "" && !isDigits(ctx.scopeID) && strings.HasPrefix(u.id, ctx.scopeID+".")) {
			s = prefix(ctx.scope, s)
		}
		out.self = s
		out.parent = s
	case unitParen, unitChast, unitPunkt:
		if ctx.parent == "" {
			out.parent = ""
			return out
		}
		if u.kind == unitParen {
			out.self = ctx.parent + u.String()
		} else {
			out.self = ctx.parent + " " + u.String()
		}
		out.parent = out.self
	}
	return out
}

func lastField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// titleCitation is how a section the document does not number is cited:
// its title with white space collapsed and a trailing colon or full stop
// dropped.
func titleCitation(title string) string {
	t := normalizeSpace(title)
	return strings.TrimRight(t, ":.")
}
