package chunker

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// parseHTML parses an HTML document or fragment (no <html>/<body> needed;
// comments such as a leading <!--{json}--> metadata block are ignored).
//
//   - h1…h6 open nested sections whose address is the heading's id
//     attribute, else its number or keyword unit ("6.2 Title" → "6.2",
//     "Article 5" → "Article 5"), else a slug of its text.
//   - Headings by meaning: legislation published as HTML carries its
//     structure in class names and numbering, not heading tags. The
//     classes of the EUR-Lex renditions are read with or without their
//     "oj-" prefix (Official Journal since 2015, "ti-art" and "normal"
//     before, "title-article-norm" and "norm" in consolidated texts):
//     doc-ti / title-doc-* (the act's title, then annex headings
//     "ANNEX I"), ti-section-1 / title-division-1 (PART, TITLE, CHAPTER,
//     SECTION) with ti-section-2 / title-division-2 (its title), ti-art /
//     title-article-norm ("Article 5") with sti-art / stitle-article-norm
//     (its title), title-annex-1/2, ti-grseq-1 / title-gr-seq-level-N
//     (headings inside annexes: "10.4. Substances", "CHAPTER I", "PART A",
//     or a title), note (footnotes), ti-tbl (table titles). Whatever the
//     class, a block whose whole text is a keyword heading ("Article 7",
//     "CHAPTER IV", "ANNEX II", "Статья 5") is one too. Levels follow the
//     kind: annex, part, title, chapter, section, article, then clause
//     numbers by their depth ("4.1" under "4", "10.4.1" under "10.4").
//   - Article paragraphs: a block id "NNN.MMM" (the Official Journal's
//     numbered paragraphs) or a paragraph opening with the article's next
//     number ("2.   …") is paragraph "(2)" of the article; its later
//     paragraphs are its subparagraphs. Inside annexes a paragraph opening
//     with a clause number that fits the numbering ("1.   Devices shall …",
//     "10.1. …") is that clause, with what follows up to the next number.
//   - Layout tables and grids are points: a table whose rows are a short
//     label cell ("(a)", "(1)", "(iv)", "a)", "1.", "—") and a body cell
//     (the 4 %/96 % tables of the Official Journal, after any empty indent
//     cells), or a consolidated text's grid-list, gives one point per row,
//     addressed by its label ("(a)"; "Recital 12" in the preamble), holding
//     the body and the points nested in it; dash and bullet rows are
//     indents of the point around them. Other tables are tables.
//   - Footnotes (class note, or a block holding the target of a footnote
//     call) become KindNote elements placed after the element that calls
//     them.
//   - Not text: script, style, head, template, noscript, nav, the Official
//     Journal's page header (hd-date, hd-lg, hd-ti, hd-oj), amendment
//     markers ("▼B", "►M1", standing alone or inside a text), a
//     consolidated text's reference line ("02016R0679 — EN — 04.05.2016 —
//     000.001 — 1"); the dropped visible text is recorded in
//     root.Noise. Non-breaking spaces are normalised with other white
//     space.
//
// p, pre, ul, ol, dl, table and blockquote become leaves; div, section,
// article, main and other containers are walked through. Text is
// whitespace-normalised except in pre, which keeps its lines.
func parseHTML(content []byte) (*Element, error) {
	decoded, _, err := Decode(content)
	if err != nil {
		return nil, err
	}
	doc, err := html.Parse(strings.NewReader(decoded))
	if err != nil {
		return nil, fmt.Errorf("read html: %w", err)
	}
	b := newBuilder()
	h := &htmlWalker{b: b}
	h.walk(doc)
	h.flush()
	h.flushLabel()
	h.placeNotes()
	if len(h.title) > 0 {
		b.root.Title = normalizeSpace(strings.Join(h.title, " "))
	} else {
		b.root.Title = metaTitle(doc)
	}
	b.root.Noise = append(b.root.Noise, h.noise...)
	return b.root, nil
}

type htmlWalker struct {
	b *builder
	// loose collects text and inline elements that sit directly in a
	// container, outside any block; it becomes a paragraph at the next block.
	loose      strings.Builder
	looseLinks []Link
	// label is a point label ("(a)") waiting for the point's first paragraph.
	label string
	// pending is the heading just opened, which a title block that follows
	// ("Definitions" after "Article 2") completes.
	pending *Element
	title   []string // the document title's blocks
	started bool     // an article, division or annex heading was seen
	inAnnex bool
	lastTop int // the last top-level clause number in the current annex
	// fresh is set after a division heading, where numbering may start
	// again at 1.
	fresh bool
	notes []htmlNote
	noise []Noise
}

type htmlNote struct {
	el  *Element
	ids []string // ids of the anchors in the note (the targets of its calls)
}

func (h *htmlWalker) flush() {
	text := normalizeSpace(h.loose.String())
	h.loose.Reset()
	links := h.looseLinks
	h.looseLinks = nil
	if text == "" {
		return
	}
	if h.label == "" && htmlRe().labelCell.MatchString(text) {
		// A label standing before its block ("<span
		// class="no-parag">1.</span><div>…</div>"): it opens the block.
		h.label = text
		return
	}
	if el := h.paragraph(text); el != nil {
		el.Links = links
	}
}

// flushLabel writes a point label that got no paragraph of its own.
func (h *htmlWalker) flushLabel() {
	if h.label != "" {
		l := h.label
		h.label = ""
		h.b.leaf(KindParagraph, l)
	}
}

// paragraph adds a paragraph leaf, prefixed by a waiting point label.
func (h *htmlWalker) paragraph(text string) *Element {
	h.pending = nil
	if h.label != "" {
		text = h.label + " " + text
		h.label = ""
	}
	return h.b.leaf(KindParagraph, text)
}

// htmlPatterns holds the HTML parser's patterns; htmlRe compiles them.
type htmlPatterns struct {
	metaTitleRe, markerOnly, numberedTitle, numberedTitleStart, clauseParagraph *regexp.Regexp
	inlineMarker, celexReference                                                *regexp.Regexp
	paraID, closingFormula, labelCell                                           *regexp.Regexp
}

// htmlRe returns the HTML parser's patterns, compiled on first use.
var htmlRe = sync.OnceValue(func() *htmlPatterns {
	return &htmlPatterns{
		// metaTitleRe reads the title of a metadata comment (`<!--{"Title": …}-->`).
		metaTitleRe: regexp.MustCompile(`"Title"\s*:\s*"([^"]+)"`),
		// markerOnly matches an amendment marker standing alone ("▼B", "►M1 ◄").
		markerOnly: regexp.MustCompile(`^(?:[▼►◄]\s*[A-Z]{0,2}\d{0,3}\s*)+$`),
		// inlineMarker: an amendment marker inside a text ("►M1", "▼C2",
		// the closing "◄").
		inlineMarker: regexp.MustCompile(`[▼►]\s*[A-Z]{1,2}\d{0,3}\b|◄`),
		// celexReference: a consolidated text's reference line, "02016R0679
		// — EN — 04.05.2016 — 000.001 — 1" (CELEX number, language, date of
		// the version, version number, page).
		celexReference: regexp.MustCompile(`^0\d{4}[A-Z]\d{4}(?:\(\d{1,2}\))?\s*[—–-]\s*[A-Z]{2}\s*[—–-]\s*\d{2}\.\d{2}\.\d{4}(?:\s*[—–-]\s*\d{3}\.\d{3})?(?:\s*[—–-]\s*\d{1,4})?$`),
		// numberedTitle: a clause number, an optional full stop, and a title.
		numberedTitle: regexp.MustCompile(`^((?:[A-Z]\.)?\d{1,3}(?:\.\d{1,3})*)\.?(?:\s*[:\-–—]\s*|\s+)(\S.*)$`),
		// numberedTitleStart is numberedTitle up to the first letter of the title.
		numberedTitleStart: regexp.MustCompile(`^(?:[A-Z]\.)?\d{1,3}(?:\.\d{1,3})*\.?(?:\s*[:\-–—]\s*|\s+)\S`),
		// clauseParagraph: a paragraph that opens with a clause number ("1.   Devices
		// shall …", "10.1. …", "2.3 The …").
		clauseParagraph: regexp.MustCompile(`^(\d{1,3}(?:\.\d{1,3})*)\.?(?:\s|\x{00a0})+\S`),
		// paraID is the id of an Official Journal numbered paragraph: "005.002".
		paraID: regexp.MustCompile(`^\d{3}\.(\d{3})$`),
		// closingFormula opens the closing part of an act.
		closingFormula: regexp.MustCompile(`^(?:This (?:Regulation|Directive|Decision) (?:shall be binding|is addressed)|Done at |Hecho en |Fait à |Geschehen zu |Fatto a |Feito em |Gedaan te |Совершено в )`),
		// labelCell matches the label of a point row.
		labelCell: regexp.MustCompile(`^(?:\(\s*(?:\d{1,3}[a-z]?|[a-z]{1,4}|[A-Z]{1,2})\s*\)|(?:\d{1,3}[a-z]?|[a-z]{1,3}|[A-Z])[.)]|\d{1,3}(?:\.\d{1,3})+\.?|[—–\-•·▪◦*o]|[a-zа-я]\))$`),
	}
})

// metaTitle is the document's title from its metadata: a leading
// `<!--{"Title": …}-->` comment, else a <title> that is not a file name.
func metaTitle(doc *html.Node) string {
	var title string
	var walk func(n *html.Node) bool
	walk = func(n *html.Node) bool {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.CommentNode:
				if m := htmlRe().metaTitleRe.FindStringSubmatch(c.Data); m != nil {
					title = m[1]
					return true
				}
			case c.Type == html.ElementNode && c.DataAtom == atom.Title:
				if t := normalizeSpace(nodeText(c)); strings.Contains(t, " ") {
					title = t
					return true
				}
			case c.Type == html.ElementNode && c.DataAtom == atom.Body:
				return false
			default:
				if walk(c) {
					return true
				}
			}
		}
		return false
	}
	walk(doc)
	return title
}

// htmlRole is what a block is by its class.
type htmlRole int

const (
	roleNone htmlRole = iota
	roleChrome
	roleDocTitle
	roleDivision
	roleDivisionTitle
	roleArticle
	roleArticleTitle
	roleAnnex
	roleAnnexTitle
	roleGroup
	roleNote
	roleFinal
	rolePoints
)

// roleOf classifies a block by its class tokens, with the Official
// Journal's "oj-" prefix removed.
func roleOf(n *html.Node) htmlRole {
	cls := attr(n, "class")
	if cls == "" {
		return roleNone
	}
	for _, c := range strings.Fields(cls) {
		c = strings.TrimPrefix(strings.ToLower(c), "oj-")
		switch {
		case strings.HasPrefix(c, "hd-") || c == "modref" || c == "arrow":
			return roleChrome
		case c == "doc-ti" || c == "title-doc-first" || c == "title-doc-last":
			return roleDocTitle
		case c == "ti-section-1" || c == "title-division-1":
			return roleDivision
		case c == "ti-section-2" || c == "title-division-2":
			return roleDivisionTitle
		case c == "ti-art" || c == "title-article-norm":
			return roleArticle
		case c == "sti-art" || c == "stitle-article-norm":
			return roleArticleTitle
		case c == "title-annex-1":
			return roleAnnex
		case c == "title-annex-2":
			return roleAnnexTitle
		case strings.HasPrefix(c, "ti-grseq") || strings.HasPrefix(c, "title-gr-seq"):
			return roleGroup
		case c == "note" || c == "footnote":
			return roleNote
		case c == "final":
			return roleFinal
		case c == "grid-container" || c == "grid-list":
			return rolePoints
		}
	}
	return roleNone
}

func (h *htmlWalker) drop(text, reason string) {
	if t := normalizeSpace(text); t != "" {
		h.noise = append(h.noise, Noise{Text: t, Reason: reason})
	}
}

// Levels of headings by kind; clause numbers nest below articles.
const (
	levelAnnex   = 1
	levelPart    = 2
	levelTitle   = 3
	levelChapter = 4
	levelSection = 5
	levelArticle = 6
)

func unitLevel(u addrUnit) int {
	switch u.kind {
	case unitAnnex:
		return levelAnnex
	case unitPart:
		return levelPart
	case unitTitle:
		return levelTitle
	case unitChapter:
		return levelChapter
	case unitSection:
		return levelSection
	}
	return levelArticle
}

// numberLevel is the level of a clause number: below articles, by depth.
func numberLevel(n string) int { return levelArticle + strings.Count(n, ".") + 1 }

// openUnit opens the heading of a keyword unit ("Article 5", "CHAPTER I",
// "ANNEX II") with the whole heading text as its title.
func (h *htmlWalker) openUnit(u addrUnit, title string) *Element {
	h.flush()
	h.flushLabel()
	h.started = true
	var s *Element
	if u.kind == unitAnnex {
		h.inAnnex = true
		s = h.b.annex(levelAnnex, u.String(), title)
	} else {
		s = h.b.section(unitLevel(u), u.String(), title)
	}
	if u.kind == unitAnnex {
		h.lastTop = 0
	}
	h.fresh = true
	h.pending = s
	return s
}

// openNumber opens a numbered heading ("10.4. Substances").
func (h *htmlWalker) openNumber(number, title string) *Element {
	h.flush()
	h.flushLabel()
	if !strings.Contains(number, ".") {
		h.lastTop = atoiOr(number, h.lastTop)
		h.fresh = false
	}
	s := h.b.section(numberLevel(number), number, title)
	h.pending = nil
	return s
}

// openTitle opens an unnumbered heading one level below the innermost
// open numbered or keyword section (so that a run of them are siblings).
func (h *htmlWalker) openTitle(title string) {
	h.flush()
	h.flushLabel()
	lv := 0
	for i := len(h.b.stack) - 1; i >= 1; i-- {
		f := h.b.stack[i]
		if _, ok := unitOf(f.el.Address); ok && isContainer(f.el.Kind) {
			lv = f.level
			break
		}
	}
	h.b.section(lv+1, slug(title), title)
	h.pending = nil
}

// completeTitle appends a title block to the heading just opened; it
// reports false when there is none.
func (h *htmlWalker) completeTitle(text string) bool {
	if h.pending == nil || text == "" {
		return false
	}
	h.pending.Title = normalizeSpace(h.pending.Title + " " + text)
	return true
}

func atoiOr(s string, def int) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return def
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// blockHeading classifies the text of a heading-like block: a keyword
// unit ("Article 5", "CHAPTER I", "ANNEX II", "SECTION 1") with what
// follows as its title, or a clause number and its title ("10.4.
// Substances").
func blockHeading(text string) (u addrUnit, number, rest string, ok bool) {
	if u, rest, ok := headingUnit(text); ok {
		return u, "", rest, true
	}
	if m := htmlRe().numberedTitle.FindStringSubmatch(text); m != nil && hasLetter(m[2]) {
		return addrUnit{}, m[1], m[2], true
	}
	return addrUnit{}, "", "", false
}

// isNumberedTitle is numberedTitle.MatchString for a one-line s; the match
// stops at the title, so a long line costs no more than a short one.
func isNumberedTitle(s string) bool {
	if s == "" || !(s[0] >= '0' && s[0] <= '9' || s[0] >= 'A' && s[0] <= 'Z') || strings.IndexByte(s, '\n') >= 0 {
		return false
	}
	return htmlRe().numberedTitleStart.MatchString(s)
}

func (h *htmlWalker) walk(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch c.Type {
		case html.TextNode:
			h.loose.WriteString(c.Data)
			continue
		case html.ElementNode:
		default:
			if c.Type == html.DocumentNode {
				h.walk(c)
			}
			continue
		}
		switch c.DataAtom {
		case atom.Script, atom.Style, atom.Nav, atom.Head, atom.Template, atom.Noscript, atom.Button, atom.Svg:
			continue
		}
		role := roleOf(c)
		if role == roleChrome {
			h.flush()
			h.drop(spacedText(c), "page header or marker")
			continue
		}
		switch c.DataAtom {
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			h.flush()
			h.flushLabel()
			level := int(c.Data[1] - '0')
			title := normalizeSpace(nodeText(c))
			addr := attr(c, "id")
			if addr == "" {
				addr = sectionAddress(title)
			}
			h.b.section(level, addr, title)
			h.pending = nil
		case atom.P, atom.Blockquote, atom.Figure, atom.Address:
			h.flush()
			h.block(c, role)
		case atom.Pre:
			h.flush()
			linked(h.b.leaf(KindCode, strings.Trim(nodeText(c), "\n")), c)
		case atom.Ul, atom.Ol:
			h.flush()
			linked(h.b.leaf(KindList, htmlList(c, "")), c)
		case atom.Dl:
			h.flush()
			linked(h.b.leaf(KindList, htmlDefList(c)), c)
		case atom.Table:
			h.flush()
			if onlyChrome(c) {
				h.drop(spacedText(c), "page header or marker")
				continue
			}
			if rows, ok := layoutRows(c); ok {
				h.points(rows)
				continue
			}
			h.flushLabel()
			text, headers, caption := htmlTable(c)
			if caption != "" {
				h.b.leaf(KindParagraph, caption)
			}
			if el := h.b.leaf(KindTable, text); el != nil {
				el.HeaderRows = headers
				linked(el, c)
			}
			h.pending = nil
		case atom.Html, atom.Body, atom.Div, atom.Section, atom.Article, atom.Main,
			atom.Header, atom.Footer, atom.Aside, atom.Details, atom.Center, atom.Form:
			h.flush()
			h.container(c, role)
			h.flush()
		case atom.Br, atom.Hr:
			h.flush()
		case atom.Img:
		default:
			// Inline element (a, i, code, span, …) outside a block.
			h.loose.WriteString(nodeText(c))
			h.looseLinks = append(h.looseLinks, htmlLinks(c)...)
		}
	}
}

// container walks a div-like element.
func (h *htmlWalker) container(c *html.Node, role htmlRole) {
	id := attr(c, "id")
	switch {
	case role == roleFinal || strings.HasPrefix(id, "fnp_"):
		// The closing formula and signatures belong to the act, not to its
		// last article.
		h.flushLabel()
		h.b.stack = h.b.stack[:1]
		h.inAnnex = false
		h.walk(c)
		return
	case role == rolePoints:
		if rows, ok := gridRows(c); ok {
			h.points(rows)
			return
		}
	case htmlRe().paraID.MatchString(id) && h.inArticle():
		// A numbered paragraph of an article.
		h.flushLabel()
		m := htmlRe().paraID.FindStringSubmatch(id)
		depth := len(h.b.stack)
		h.b.push(KindClause, "("+strings.TrimLeft(m[1], "0")+")")
		h.walk(c)
		h.flush()
		h.flushLabel()
		h.b.stack = h.b.stack[:depth]
		return
	case strings.HasPrefix(id, "enc_") || strings.HasPrefix(id, "art_") || strings.HasPrefix(id, "cpt_"):
		h.started = true
	}
	if inlineBlocks(c) {
		// Blocks displayed inline form one line ("I   General safety and
		// performance requirements" in a list of annexes).
		h.flushLabel()
		linked(h.paragraph(normalizeSpace(nodeText(c))), c)
		return
	}
	if role != roleNone && role != rolePoints && !hasBlockChild(c) {
		// A div that is a block of its own ("div.oj-ti-art").
		h.block(c, role)
		return
	}
	h.walk(c)
}

// inArticle reports whether the innermost open section is an article.
func (h *htmlWalker) inArticle() bool {
	for i := len(h.b.stack) - 1; i >= 1; i-- {
		el := h.b.stack[i].el
		if isContainer(el.Kind) {
			u, ok := unitOf(el.Address)
			return ok && u.kind == unitArticle
		}
	}
	return false
}

// inlineBlocks reports whether every child block of n is displayed
// inline (style "display: inline").
func inlineBlocks(n *html.Node) bool {
	seen := false
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode && strings.TrimSpace(c.Data) != "" {
			return false
		}
		if c.Type != html.ElementNode {
			continue
		}
		if !strings.Contains(strings.ReplaceAll(attr(c, "style"), " ", ""), "display:inline") {
			return false
		}
		seen = true
	}
	return seen
}

// onlyChrome reports whether all the text of n is in chrome blocks (the
// Official Journal's page header table).
func onlyChrome(n *html.Node) bool {
	chrome := false
	var walk func(n *html.Node) bool
	walk = func(n *html.Node) bool {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				if strings.TrimSpace(c.Data) != "" {
					return false
				}
			case html.ElementNode:
				if roleOf(c) == roleChrome {
					chrome = true
					continue
				}
				if !walk(c) {
					return false
				}
			}
		}
		return true
	}
	return walk(n) && chrome
}

func hasBlockChild(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		switch c.DataAtom {
		case atom.P, atom.Div, atom.Table, atom.Ul, atom.Ol, atom.Dl, atom.Pre, atom.Blockquote,
			atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Section, atom.Figure:
			return true
		}
	}
	return false
}

// block handles a paragraph-like block by its role and text.
func (h *htmlWalker) block(c *html.Node, role htmlRole) {
	text := normalizeSpace(nodeText(c))
	if text == "" {
		if raw := spacedText(c); raw != "" && htmlRe().markerOnly.MatchString(raw) {
			h.drop(raw, "amendment marker")
		}
		return
	}
	if htmlRe().markerOnly.MatchString(text) {
		h.drop(text, "amendment marker")
		return
	}
	if len(text) < 80 && htmlRe().celexReference.MatchString(text) {
		h.drop(text, "page header or marker")
		return
	}
	switch role {
	case roleDocTitle:
		if u, rest, ok := headingUnit(text); ok && u.kind == unitAnnex {
			h.openUnit(u, normalizeSpace(u.String()+" "+rest)).Title = text
			return
		}
		if !h.started {
			h.title = append(h.title, text)
			linked(h.paragraph(text), c)
			return
		}
		if isCapitals(text) && h.completeTitle(text) {
			return
		}
		if h.annexesList(text) {
			return
		}
	case roleDivision, roleArticle, roleAnnex:
		if u, _, ok := headingUnit(text); ok {
			h.openUnit(u, text)
			return
		}
	case roleDivisionTitle, roleArticleTitle, roleAnnexTitle:
		if h.completeTitle(text) {
			return
		}
	case roleGroup:
		if u, number, rest, ok := blockHeading(text); ok {
			if number != "" {
				h.openNumber(number, text)
			} else {
				h.openUnit(u, text)
			}
			_ = rest
			return
		}
		if h.completeTitle(text) {
			return
		}
		h.openTitle(text)
		return
	case roleNote:
		h.flushLabel()
		if el := h.b.leaf(KindNote, text); el != nil {
			linked(el, c)
			h.notes = append(h.notes, htmlNote{el: el, ids: anchorIDs(c)})
		}
		return
	}
	if h.started && htmlRe().closingFormula.MatchString(text) {
		// The closing formula and what follows (signatures) belong to the
		// act, not to its last article.
		h.flushLabel()
		h.b.stack = h.b.stack[:1]
		h.inAnnex = false
	}
	// Any block whose whole text is a keyword heading ("Article 7",
	// "CHAPTER IV"), or one with a title after a separator ("Статья 5.
	// Основные понятия", "ANNEX II — Technical documentation").
	if h.label == "" && utf8.RuneCountInString(text) <= maxHeadingRunes {
		if u, rest, ok := headingUnit(text); ok && u.kind != unitSection && (rest == "" || titledHeading(text, rest)) {
			h.openUnit(u, text)
			return
		}
	}
	// Inside an annex, a paragraph that opens with a clause number that
	// fits is that clause.
	if h.inAnnex && h.label == "" {
		if m := htmlRe().clauseParagraph.FindStringSubmatch(text); m != nil && h.fits(m[1]) {
			h.flushLabel()
			if !strings.Contains(m[1], ".") {
				h.lastTop = atoiOr(m[1], h.lastTop)
				h.fresh = false
			}
			h.b.clause(numberLevel(m[1]), m[1])
			linked(h.paragraph(text), c)
			return
		}
	}
	linked(h.paragraph(text), c)
}

// titledHeading reports whether rest, what follows the unit of a heading
// text, is a title: set off by a full stop, colon or dash, and not a
// sentence.
func titledHeading(text, rest string) bool {
	head := strings.TrimSuffix(text, rest)
	head = strings.TrimRight(head, " ")
	if head == "" || !strings.ContainsAny(head[len(head)-1:], ".:-") && !strings.HasSuffix(head, "—") && !strings.HasSuffix(head, "–") {
		return false
	}
	return !strings.ContainsAny(rest[len(rest)-1:], ".;,")
}

// fits reports whether a clause number continues the numbering: a top
// level number larger than the last one, or a sub-number whose parent is
// open.
func (h *htmlWalker) fits(n string) bool {
	parts := strings.Split(n, ".")
	if len(parts) == 1 {
		v := atoiOr(n, -1)
		return (v > h.lastTop && v <= h.lastTop+3) || (h.fresh && v == 1)
	}
	parent := strings.Join(parts[:len(parts)-1], ".")
	if _, ok := h.b.openLevel(parent); ok {
		return true
	}
	// "1.1." with no "1." before it (an annex that starts at 1.1).
	top := atoiOr(parts[0], -1)
	return len(parts) == 2 && parts[1] == "1" && (top == h.lastTop+1 || top == h.lastTop)
}

// annexesList reads the "ANNEXES" heading of an act's list of annexes.
func (h *htmlWalker) annexesList(text string) bool {
	if !isCapitals(text) || utf8.RuneCountInString(text) > 40 {
		return false
	}
	h.flush()
	h.flushLabel()
	h.b.section(levelAnnex, slug(text), text)
	h.pending = nil
	return true
}

// anchorIDs are the ids of n and of the anchors under it.
func anchorIDs(n *html.Node) []string {
	var out []string
	if id := attr(n, "id"); id != "" {
		out = append(out, id)
	}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode {
				if id := attr(c, "id"); id != "" && (c.DataAtom == atom.A || c.DataAtom == atom.Span) {
					out = append(out, id)
				}
				walk(c)
			}
		}
	}
	walk(n)
	return out
}

// placeNotes moves every note after the first leaf that calls it (a link
// to one of the note's anchors), in that leaf's parent.
func (h *htmlWalker) placeNotes() {
	if len(h.notes) == 0 {
		return
	}
	noteOf := map[string]*Element{}
	isNote := map[*Element]bool{}
	for _, n := range h.notes {
		isNote[n.el] = true
		for _, id := range n.ids {
			noteOf["#"+id] = n.el
		}
	}
	type place struct {
		parent *Element
		after  *Element
	}
	target := map[*Element]place{}
	var walk func(e *Element)
	walk = func(e *Element) {
		for _, c := range e.Children {
			if len(c.Children) > 0 {
				walk(c)
				continue
			}
			if isNote[c] {
				continue
			}
			for _, l := range c.Links {
				if n, ok := noteOf[l.Href]; ok {
					if _, done := target[n]; !done {
						target[n] = place{parent: e, after: c}
					}
				}
			}
		}
	}
	walk(h.b.root)
	if len(target) == 0 {
		return
	}
	// Take the placed notes out, then insert each after its caller.
	var remove func(e *Element)
	remove = func(e *Element) {
		out := e.Children[:0]
		for _, c := range e.Children {
			if _, ok := target[c]; ok && isNote[c] {
				continue
			}
			remove(c)
			out = append(out, c)
		}
		e.Children = out
	}
	remove(h.b.root)
	byCaller := map[*Element][]*Element{}
	for _, n := range h.notes {
		if p, ok := target[n.el]; ok {
			byCaller[p.after] = append(byCaller[p.after], n.el)
		}
	}
	var insert func(e *Element)
	insert = func(e *Element) {
		var out []*Element
		for _, c := range e.Children {
			insert(c)
			out = append(out, c)
			out = append(out, byCaller[c]...)
		}
		e.Children = out
	}
	insert(h.b.root)
}

// pointRow is one row of a layout table or grid: the label cell's text
// and the body cell.
type pointRow struct {
	label string
	body  *html.Node
}

// layoutRows reads a table laid out as points: every row, after its
// empty leading cells, has a label cell and one body cell. Tables with a
// header, a caption or more columns are tables.
func layoutRows(t *html.Node) ([]pointRow, bool) {
	if strings.Contains(strings.ToLower(attr(t, "class")), "table") {
		return nil, false
	}
	var rows []pointRow
	ok := true
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil && ok; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.DataAtom {
			case atom.Thead, atom.Caption:
				ok = false
			case atom.Tbody, atom.Tfoot:
				walk(c)
			case atom.Tr:
				var cells []*html.Node
				for td := c.FirstChild; td != nil; td = td.NextSibling {
					if td.Type == html.ElementNode && (td.DataAtom == atom.Td || td.DataAtom == atom.Th) {
						if td.DataAtom == atom.Th {
							ok = false
						}
						cells = append(cells, td)
					}
				}
				for len(cells) > 2 && strings.TrimSpace(nodeText(cells[0])) == "" {
					cells = cells[1:]
				}
				if len(cells) != 2 {
					ok = false
					return
				}
				label := normalizeSpace(nodeText(cells[0]))
				if !htmlRe().labelCell.MatchString(label) {
					ok = false
					return
				}
				rows = append(rows, pointRow{label: label, body: cells[1]})
			}
		}
	}
	walk(t)
	return rows, ok && len(rows) > 0
}

// gridRows reads a consolidated text's grid-list: label column, body column.
func gridRows(n *html.Node) ([]pointRow, bool) {
	var label string
	var body *html.Node
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		cls := attr(c, "class")
		switch {
		case strings.Contains(cls, "grid-list-column-1"):
			label = normalizeSpace(nodeText(c))
		case strings.Contains(cls, "grid-list-column-2"):
			body = c
		}
	}
	if body == nil || !htmlRe().labelCell.MatchString(label) {
		return nil, false
	}
	return []pointRow{{label: label, body: body}}, true
}

// pointAddress is the address of a point row: "(a)", "(1)", "(iv)";
// "Recital 12" in the preamble; "(2)" for a "2." row in an article, clause
// number "1" for a "1." row elsewhere; "" for an indent ("—", "•").
func (h *htmlWalker) pointAddress(label string) string {
	l := strings.TrimSpace(label)
	switch {
	case strings.HasPrefix(l, "(") && strings.HasSuffix(l, ")"):
		id := strings.TrimSpace(l[1 : len(l)-1])
		if !h.started && isDigits(id) {
			return "Recital " + id
		}
		return "(" + id + ")"
	case strings.HasSuffix(l, ")"):
		return "(" + strings.TrimSuffix(l, ")") + ")"
	case strings.HasSuffix(l, ".") && isDigits(strings.TrimSuffix(l, ".")):
		if h.inArticle() {
			return "(" + strings.TrimSuffix(l, ".") + ")"
		}
		return strings.TrimSuffix(l, ".")
	case addrSyntax().numberID.MatchString(l) && strings.Contains(l, "."):
		return strings.TrimSuffix(l, ".")
	}
	return ""
}

// points adds the rows of a layout table as points.
func (h *htmlWalker) points(rows []pointRow) {
	for _, r := range rows {
		h.flushLabel()
		addr := h.pointAddress(r.label)
		h.pending = nil
		if addr == "" {
			// An indent: its text is a paragraph of the point around it.
			h.label = r.label
			h.walk(r.body)
			h.flush()
			h.flushLabel()
			continue
		}
		depth := len(h.b.stack)
		h.b.push(KindClause, addr)
		h.label = r.label
		h.walk(r.body)
		h.flush()
		h.flushLabel()
		h.b.stack = h.b.stack[:depth]
	}
}

// htmlLinks are the a[href] elements under n (n included).
func htmlLinks(n *html.Node) []Link {
	var out []Link
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.DataAtom == atom.A {
			if href := attr(n, "href"); href != "" {
				out = append(out, Link{Text: normalizeSpace(nodeText(n)), Href: href})
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

// linked records n's links on el, which may be nil.
func linked(el *Element, n *html.Node) {
	if el != nil {
		el.Links = htmlLinks(n)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return strings.TrimSpace(a.Val)
		}
	}
	return ""
}

// spacedText is the text under n with a space between elements (for
// reporting dropped text: "30.12.2006 EN Official Journal …").
func spacedText(n *html.Node) string {
	var sb strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.TextNode {
				sb.WriteString(c.Data)
			} else if c.Type == html.ElementNode {
				sb.WriteByte(' ')
				walk(c)
				sb.WriteByte(' ')
			}
		}
	}
	walk(n)
	return normalizeSpace(sb.String())
}

// markerClass reports whether n is an amendment marker's element (class
// modref or arrow), without tokenising every element's classes.
func markerClass(n *html.Node) bool {
	for _, a := range n.Attr {
		if a.Key == "class" && (strings.Contains(a.Val, "modref") || strings.Contains(a.Val, "arrow")) {
			return roleOf(n) == roleChrome
		}
	}
	return false
}

// nodeText is the raw text under n (<br> as a newline), white space as in
// the source.
func nodeText(n *html.Node) string {
	var sb strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				if strings.Contains(c.Data, "\xe2\x96") && strings.ContainsAny(c.Data, "▼►") || strings.Contains(c.Data, "◄") {
					// Amendment markers inside the text ("►M1 … ◄").
					sb.WriteString(htmlRe().inlineMarker.ReplaceAllString(c.Data, " "))
					continue
				}
				sb.WriteString(c.Data)
			case c.Type == html.ElementNode && (c.DataAtom == atom.Script || c.DataAtom == atom.Style || markerClass(c)):
			case c.Type == html.ElementNode && c.DataAtom == atom.Br:
				sb.WriteByte('\n')
			case c.Type == html.ElementNode:
				walk(c)
			}
		}
	}
	walk(n)
	return sb.String()
}

// htmlList renders li items one a line ("- text"), nested lists indented.
func htmlList(n *html.Node, indent string) string {
	var lines []string
	for li := n.FirstChild; li != nil; li = li.NextSibling {
		if li.Type != html.ElementNode || li.DataAtom != atom.Li {
			continue
		}
		var own strings.Builder
		var nested []string
		for c := li.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && (c.DataAtom == atom.Ul || c.DataAtom == atom.Ol) {
				nested = append(nested, htmlList(c, indent+"  "))
				continue
			}
			if c.Type == html.TextNode {
				own.WriteString(c.Data)
			} else {
				own.WriteString(nodeText(c))
			}
		}
		lines = append(lines, indent+"- "+normalizeSpace(own.String()))
		lines = append(lines, nested...)
	}
	return strings.Join(lines, "\n")
}

// htmlDefList renders dt lines as they are and dd lines indented by two.
func htmlDefList(n *html.Node) string {
	var lines []string
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		t := normalizeSpace(nodeText(c))
		if c.DataAtom == atom.Dd {
			t = "  " + t
		}
		lines = append(lines, t)
	}
	return strings.Join(lines, "\n")
}

// htmlTable renders every tr one a line, th/td cells joined by " | ". It
// also returns how many leading rows are header rows (in thead, or made of
// th cells only) and the caption text. A caption that names the table
// ("Table 2 — …") becomes the table's Title and Address in the builder.
func htmlTable(n *html.Node) (text string, headerRows int, caption string) {
	var rows []string
	body := false // a non-header row was seen
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.DataAtom {
			case atom.Tr:
				var cells []string
				allTh := true
				for td := c.FirstChild; td != nil; td = td.NextSibling {
					if td.Type == html.ElementNode && (td.DataAtom == atom.Td || td.DataAtom == atom.Th) {
						cells = append(cells, normalizeSpace(nodeText(td)))
						allTh = allTh && td.DataAtom == atom.Th
					}
				}
				inHead := c.Parent != nil && c.Parent.DataAtom == atom.Thead
				if !body && len(cells) > 0 && (allTh || inHead) {
					headerRows++
				} else {
					body = true
				}
				rows = append(rows, strings.Join(cells, " | "))
			case atom.Caption:
				if caption == "" {
					caption = normalizeSpace(nodeText(c))
				} else {
					rows = append(rows, normalizeSpace(nodeText(c)))
				}
			case atom.Table:
				// A nested table's rows are rendered in place.
				walk(c)
			default:
				walk(c)
			}
		}
	}
	walk(n)
	if headerRows >= len(rows) {
		headerRows = 0
	}
	return strings.Join(rows, "\n"), headerRows, caption
}
