package chunker

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Parts and points of articles. Whatever the format, an article's body is
// a run of paragraphs of which some open with a number or a letter: EU
// acts number their paragraphs "1.", "2." and their points "(a)", "(b)",
// sub-points "(i)", "(ii)"; Russian laws number the parts of an article
// "1.", "2." and their points "а)", "б)" (and "ж.1)" for an inserted one).
// structureParts turns those paragraphs into addressable elements, in
// every article (an element whose address is an Article or Статья unit)
// and, for points, in every numbered clause:
//
//   - A paragraph that starts with the next number of the article ("1."
//     first, then "2.", …) is a paragraph of the article: "(1)" in an EU
//     article, "часть 1" in a Russian one. Paragraphs after it up to the
//     next number belong to it (its subparagraphs).
//   - A paragraph that starts with a point label ("(a)", "a)", "а)") in
//     order (the first is a/а, each later one comes later in the
//     alphabet) is a point of the paragraph or article before it: "(a)",
//     "пункт а". "(i)" right after "(h)" is point i; otherwise "(i)",
//     "(ii)", … are sub-points of the point before them.
//   - An element that gets sub-elements becomes a container: its own
//     text stays as its first leaf.
//
// Numbers out of order, and labels inside a sentence, are left as text.
func structureParts(root *Element) {
	var walk func(e *Element)
	walk = func(e *Element) {
		for _, c := range e.Children {
			if len(c.Children) > 0 {
				walk(c)
			}
		}
		u, ok := unitOf(e.Address)
		if !ok {
			return
		}
		switch u.kind {
		case unitArticle:
			nestArticle(e, u.word == "Статья")
		case unitNumber, unitParen, unitChast:
			nestPoints(e, u.word == "Статья")
		}
	}
	walk(root)
}

// partsPatterns holds the patterns of an article's numbered paragraphs and
// points; partsRe compiles them.
type partsPatterns struct {
	partHead, pointHead, numPoint *regexp.Regexp
}

// partsRe returns the patterns of an article's numbered paragraphs and
// points, compiled on first use.
var partsRe = sync.OnceValue(func() *partsPatterns {
	return &partsPatterns{
		// partHead: "1. ", "1.\u00a0\u00a0\u00a0" (an article's numbered paragraph).
		// "2.1. " / "2-1. " is a part inserted after part 2.
		// "1a. " is one inserted after paragraph 1 of an EU act.
		partHead: regexp.MustCompile(`^(\d{1,3})(?:[.-](\d{1,2})|([a-z]{1,2}))?\.(?:\s|\x{00a0})+\S`),
		// pointHead: "(a) ", "(a)\u00a0", "a) ", "а) ", "ж.1) ", "(iv) ".
		pointHead: regexp.MustCompile(`^(?:\(([a-z]{1,4}|[ivxlc]{1,6})\)|([a-zа-яё](?:[.-]\d{1,2})?)\))(?:\s|\x{00a0})*\S`),
		// numPoint: "1) " (the numbered points of a Russian article, "пункт 1").
		// "5.1) " / "5-1) " is a point inserted after point 5.
		numPoint: regexp.MustCompile(`^(\d{1,2}(?:[.-]\d{1,2})?)\)\s+\S`),
	}
})

// nestArticle finds the numbered paragraphs and the points of an article.
// An article whose parser already made its paragraphs elements (the
// Official Journal's numbered paragraph blocks) is left as it is.
func nestArticle(a *Element, russian bool) {
	for _, c := range a.Children {
		if c.Kind == KindClause {
			if u, ok := unitOf(c.Address); ok && (u.kind == unitChast || u.kind == unitParen && isDigits(u.id)) {
				return
			}
		}
	}
	var out []*Element
	var part *Element // the open numbered paragraph
	next := 1
	for _, c := range a.Children {
		if c.Kind != KindParagraph && c.Kind != KindClause && c.Kind != KindList {
			if part != nil && !isContainer(c.Kind) && len(c.Children) == 0 {
				adopt(part, c)
				continue
			}
			part = nil
			out = append(out, c)
			continue
		}
		if c.Kind == KindParagraph {
			if m := partsRe().partHead.FindStringSubmatch(c.Text); m != nil && (m[2] == "" && m[3] == "" && m[1] == itoa(next) ||
				m[2] != "" && russian && m[1] == itoa(next-1) || m[3] != "" && !russian && m[1] == itoa(next-1)) {
				c.Kind = KindClause
				n := m[1]
				switch {
				case m[2] != "":
					n += "." + m[2] // an inserted part: "часть 2.1"
				case m[3] != "":
					n += m[3] // an inserted paragraph: "(1a)"
				default:
					next++
				}
				if russian {
					c.Address = "часть " + n
				} else {
					c.Address = "(" + n + ")"
				}
				part = c
				out = append(out, c)
				continue
			}
		}
		if part != nil {
			adopt(part, c)
			continue
		}
		out = append(out, c)
	}
	a.Children = out
	for _, c := range a.Children {
		nestPoints(c, russian)
	}
	nestPoints(a, russian)
}

// adopt moves leaf c under part, making part a container whose own text
// is its first child.
func adopt(part, c *Element) {
	if len(part.Children) == 0 {
		own := &Element{Kind: KindParagraph, Text: part.Text, Links: part.Links}
		part.Text, part.Links = "", nil
		part.Children = []*Element{own}
	}
	part.Children = append(part.Children, c)
}

// nestPoints turns the point paragraphs among e's children into points;
// it leaves e alone when its parser made points of it already, and never
// takes e's own first paragraph ("(a) …" of point (a)) for a point.
func nestPoints(e *Element, russian bool) {
	if len(e.Children) == 0 {
		return
	}
	for _, c := range e.Children {
		if c.Kind == KindClause {
			if u, ok := unitOf(c.Address); ok && (u.kind == unitParen || u.kind == unitPunkt) {
				return
			}
		}
	}
	var out []*Element
	var point, sub *Element
	var last rune // last letter label
	lastNum := 0  // last numbered point "N)"
	for _, c := range e.Children {
		if c.Kind != KindParagraph {
			if (point != nil || sub != nil) && !isContainer(c.Kind) && len(c.Children) == 0 && c.Kind != KindClause {
				adopt(innermost(point, sub), c)
				continue
			}
			point, sub = nil, nil
			out = append(out, c)
			continue
		}
		if m := partsRe().numPoint.FindStringSubmatch(c.Text); m != nil && russian && last == 0 {
			n := insertedNumber(m[1])
			if v := atoiOr(strings.SplitN(n, ".", 2)[0], -1); v == lastNum+1 || (v == lastNum && strings.Contains(n, ".")) {
				lastNum = v
				c.Kind = KindClause
				c.Address = "пункт " + n
				point, sub = c, nil
				out = append(out, c)
				continue
			}
		}
		label, paren := pointLabel(c.Text)
		if len(out) == 0 && label != "" && (e.Address == "("+label+")" || e.Address == "пункт "+label) {
			label = ""
		}
		switch {
		case label == "":
		case isRomanLabel(label) && !(last != 0 && nextLetter(last, label)) && point != nil:
			// A sub-point of the open point.
			c.Kind = KindClause
			c.Address = "(" + label + ")"
			adopt(point, c)
			sub = c
			continue
		case (last == 0 && (label == "a" || label == "а")) || (last != 0 && laterLabel(last, label)):
			c.Kind = KindClause
			if russian || !paren && isCyrillic(label) {
				c.Address = "пункт " + label
			} else {
				c.Address = "(" + label + ")"
			}
			r, _ := utf8.DecodeRuneInString(label)
			last = r
			point, sub = c, nil
			out = append(out, c)
			continue
		}
		if point != nil || sub != nil {
			adopt(innermost(point, sub), c)
			continue
		}
		out = append(out, c)
	}
	e.Children = out
}

func innermost(point, sub *Element) *Element {
	if sub != nil {
		return sub
	}
	return point
}

// pointLabel returns the label of a point paragraph ("a" for "(a) …" or
// "a) …", "ж.1" for "ж.1) …") and whether it was in brackets.
func pointLabel(text string) (string, bool) {
	m := partsRe().pointHead.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	if m[1] != "" {
		return m[1], true
	}
	return insertedNumber(m[2]), false
}

func isRomanLabel(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("ivxlc", r) {
			return false
		}
	}
	return true
}

// nextLetter reports whether label is the letter right after last ("i"
// after "h" is a point, not a sub-point).
func nextLetter(last rune, label string) bool {
	r, n := utf8.DecodeRuneInString(label)
	return n == len(label) && r == last+1
}

// laterLabel reports whether label ("c", "ж.1") comes after the letter last.
func laterLabel(last rune, label string) bool {
	r, _ := utf8.DecodeRuneInString(label)
	if r == last {
		return strings.Contains(label, ".")
	}
	return r > last && r-last <= 3 && sameScript(r, last)
}

func sameScript(a, b rune) bool { return isCyrillicRune(a) == isCyrillicRune(b) }

func isCyrillicRune(r rune) bool { return r >= 0x400 && r <= 0x4ff }

func isCyrillic(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isCyrillicRune(r)
}
