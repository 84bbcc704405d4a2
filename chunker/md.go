package chunker

import (
	"bytes"
	"context"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"golang.org/x/net/html"
)

// mdPatterns holds the Markdown parser's patterns; mdRe compiles them.
type mdPatterns struct {
	headingNumber, escListNum, mdClause *regexp.Regexp
}

// mdRe returns the Markdown parser's patterns, compiled on first use.
var mdRe = sync.OnceValue(func() *mdPatterns {
	return &mdPatterns{
		// headingNumber finds an explicit clause number at the start of a heading:
		// "7.1.1 Description" → "7.1.1", "3.1.1 - Policy" → "3.1.1", "1: Scope" → "1",
		// "A.2. Examples" → "A.2". The first component has at most 3 digits so a
		// year ("2014 Update") is not taken for a number; a lone capital letter
		// needs a ".N" after it so "A Guide" is not numbered.
		headingNumber: regexp.MustCompile(`^(\d{1,3}(?:\.\d+)*|[A-Z](?:\.\d+)+)\.?(?:\s*[:\-–—])?\s+\S`),
		// escListNum finds "N. " at a line start (an ordered list marker to CommonMark).
		escListNum: regexp.MustCompile(`^(\s{0,3}\d{1,3})\.\s`),
		// mdClause: a clause number at the start of a paragraph, then its text.
		mdClause: regexp.MustCompile(`^((?:[A-Z]\.)?\d{1,3}(?:\.\d{1,3})*)\.?\s+()\S`),
	}
})

// mdParser returns goldmark with GitHub tables, built on first use and
// shared (goldmark parsers are safe for concurrent use).
// stopInline (cancel.go) lets a cancelled parse stop.
var mdParser = sync.OnceValue(func() parser.Parser {
	return goldmark.New(goldmark.WithExtensions(extension.Table),
		goldmark.WithParserOptions(parser.WithInlineParsers(util.Prioritized(stopInline{}, 0)))).Parser()
})

// parseMarkdown parses CommonMark with GFM tables. Page noise (page
// markers, running headers and footers, page numbers, footnote blocks,
// front matter; see cleanLines) is taken out first, and a hard-wrapped
// conversion from PDF is cut into blocks (see reflow).
//
// Levels come from numbering, not from the count of "#" (converters set
// them at random): a numbered heading ("4.1 Residual risks", "## 1:
// Scope", "E.2.3.2.3 …") sits at its number's depth below the level at
// which the document's first top-level number stood ("4.1" under "4",
// "E.2.3.2.3" under "E.2.3.2"; in an annex, below the annex); a keyword
// heading ("Article 5", "CHAPTER II", "ANNEX II", "Appendix: Template")
// at its kind's level; an unnumbered heading after numbering has begun one
// level below the innermost numbered section, unless it names a part of
// the document that stands at the top (References, Bibliography, Annexes,
// Revision history, …). A paragraph (or one-item ordered list) that opens
// with a clause number continuing the numbering is a heading when it does
// not end a sentence (a numbered heading without "#", as converters leave
// them, joined over its wrapped lines), else that numbered clause, holding
// what follows up to the next number or heading.
//
// Paragraphs, lists, tables, code blocks, block quotes and HTML blocks
// become leaves; footnotes become notes after the element that calls
// them. Inline markup is reduced to its text; inline HTML (for example
// `<a name="7.1"></a>` anchors in headings) is dropped.
func parseMarkdown(content []byte) (*Element, error) {
	return parseMarkdownContext(context.Background(), content)
}

// parseMarkdownContext is parseMarkdown that stops when ctx is done.
func parseMarkdownContext(ctx context.Context, content []byte) (_ *Element, err error) {
	defer recoverStop(&err)
	decoded, _, err := Decode(content)
	if err != nil {
		return nil, err
	}
	if err := checkNesting([]byte(decoded)); err != nil {
		return nil, err
	}
	decoded = strings.ReplaceAll(decoded, "\r\n", "\n")
	ct := cleanLines(strings.Split(decoded, "\n"), true)
	lines, from := ct.lines, make([]int, len(ct.lines))
	for i := range from {
		from[i] = i
	}
	var synthetic, groups map[int]bool
	if hardWrapped(ct.lines) {
		rf := reflow(ct.lines)
		lines, from, synthetic, groups = rf.lines, rf.from, rf.headings, rf.groups
		for i, l := range lines {
			// "1. The identification …" is a numbered heading or clause,
			// not a list of one item.
			if t := strings.TrimLeft(l, " \t"); t == "" || t[0] < '0' || t[0] > '9' {
				continue
			}
			if m := mdRe().escListNum.FindStringSubmatchIndex(l); m != nil {
				lines[i] = l[:m[3]] + "\\" + l[m[3]:]
			}
		}
	}
	// Line starts, and the notes called on each output line (an output
	// line stands for the input lines after the previous one's, up to its
	// own).
	starts := make([]int, len(lines)+1)
	off := 0
	notes := map[int][]string{}
	next := 0
	for i, l := range lines {
		starts[i] = off
		off += len(l) + 1
		for ; next <= from[i]; next++ {
			if ns := ct.notes[next]; len(ns) > 0 {
				notes[i] = append(notes[i], ns...)
			}
		}
	}
	for ; next < len(ct.lines); next++ {
		if ns := ct.notes[next]; len(ns) > 0 {
			notes[len(lines)-1] = append(notes[len(lines)-1], ns...)
		}
	}
	starts[len(lines)] = off
	src := []byte(strings.Join(lines, "\n"))
	pc := parser.NewContext()
	pc.Set(mdCancelKey, ctx)
	doc := mdParser().Parse(stopReader{text.NewReader(src), ctx}, parser.WithContext(pc))
	m := &mdState{b: newBuilder(), src: src, starts: starts, notes: notes, synthetic: synthetic, groups: groups, top: -1}
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		m.block(n)
	}
	m.notesUpTo(len(lines))
	m.b.root.Noise = ct.noise
	return m.b.root, nil
}

// mdState is the Markdown tree being built.
type mdState struct {
	b         *builder
	src       []byte
	starts    []int            // byte offset of each source line
	notes     map[int][]string // line → footnotes called there
	noteLine  int              // notes of lines before this are written
	synthetic map[int]bool     // lines that reflow made headings
	groups    map[int]bool     // those of them that hold the headings after them
	// group is the level of the open heading of headings (reflow's
	// groups), 0 for none: unnumbered headings and the numbered sections
	// after it nest below it.
	group int
	// inGroup: the heading being opened is a heading of headings.
	inGroup bool
	// top is the level of top-level numbered sections (-1 until the first).
	top     int
	annex   int // level of the open annex or division, 0 for none
	annexID string
	// scopeKind is the kind of that annex or division.
	scopeKind unitKind
	// annexLevel is the level of the open annex, 0 for none.
	annexLevel int
	lastTop    int
	fresh      bool
}

// lineOf is the source line of a byte offset.
func (m *mdState) lineOf(off int) int {
	return sort.Search(len(m.starts), func(i int) bool { return m.starts[i] > off }) - 1
}

// lastLine is the last source line of block n (-1 when n has no lines).
func (m *mdState) lastLine(n ast.Node) int {
	end := -1
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering && c.Type() == ast.TypeBlock {
			if ls := c.Lines(); ls.Len() > 0 {
				end = max(end, ls.At(ls.Len()-1).Stop-1)
			}
		}
		if t, ok := c.(*ast.Text); ok && entering {
			end = max(end, t.Segment.Stop-1)
		}
		return ast.WalkContinue, nil
	})
	if end < 0 {
		return -1
	}
	return m.lineOf(end)
}

func (m *mdState) firstLine(n ast.Node) int {
	start := -1
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if start >= 0 {
			return ast.WalkStop, nil
		}
		if entering && c.Type() == ast.TypeBlock {
			if ls := c.Lines(); ls.Len() > 0 {
				start = ls.At(0).Start
			}
		}
		if t, ok := c.(*ast.Text); ok && entering {
			start = t.Segment.Start
		}
		return ast.WalkContinue, nil
	})
	if start < 0 {
		return -1
	}
	return m.lineOf(start)
}

// notesUpTo writes the footnotes called on lines before end, as notes of
// the innermost open element.
func (m *mdState) notesUpTo(end int) {
	for ; m.noteLine < end && m.noteLine < len(m.starts); m.noteLine++ {
		for _, t := range m.notes[m.noteLine] {
			m.b.leaf(KindNote, t)
		}
	}
}

func (m *mdState) block(n ast.Node) {
	b, src := m.b, m.src
	if len(m.notes) > 0 {
		if last := m.lastLine(n); last >= 0 {
			defer m.notesUpTo(last + 1)
		}
	}
	switch n := n.(type) {
	case *ast.Heading:
		title := normalizeSpace(mdInline(n, src))
		m.heading(title, n.Level, m.isSynthetic(n))
	case *ast.Paragraph, *ast.TextBlock:
		text := normalizeSpace(mdInline(n, src))
		if m.isSynthetic(n) {
			m.inGroup = m.groups[m.firstLine(n)]
			m.heading(text, 0, true)
			m.inGroup = false
			return
		}
		if m.numbered(text) {
			return
		}
		if len(text) <= 320 && utf8.RuneCountInString(text) <= 80 && reflowRe().lineAnnex.MatchString(text) && !endsWithSentence(text) {
			// "Appendix: Template for the SSCP" left as a paragraph.
			m.heading(text, 0, true)
			return
		}
		withLinks(b.leaf(KindParagraph, text), n, src)
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		b.leaf(KindCode, strings.TrimRight(string(mdLines(n, src)), "\n"))
	case *ast.List:
		if n.IsOrdered() && n.ChildCount() == 1 {
			text := strconv.Itoa(n.Start) + ". " + normalizeSpace(mdFlatten(n.FirstChild(), src))
			if m.numbered(text) {
				return
			}
		}
		withLinks(b.leaf(KindList, mdList(n, src, "")), n, src)
	case *east.Table:
		if el := b.leaf(KindTable, mdTable(n, src)); el != nil {
			el.HeaderRows = 1 // a GFM table always has its header row first
			withLinks(el, n, src)
		}
	case *ast.Blockquote:
		withLinks(b.leaf(KindParagraph, mdFlatten(n, src)), n, src)
	case *ast.HTMLBlock:
		b.leaf(KindParagraph, normalizeSpace(htmlFragmentText(mdLines(n, src))))
	case *ast.ThematicBreak:
	default:
		b.leaf(KindParagraph, mdFlatten(n, src))
	}
}

// isSynthetic reports whether block n is a heading reflow found.
func (m *mdState) isSynthetic(n ast.Node) bool {
	return len(m.synthetic) > 0 && m.synthetic[m.firstLine(n)]
}

// numberLevelMD is the level of a clause number (see parseMarkdown).
func (m *mdState) numberLevel(number string, hashLevel int) int {
	parts := strings.Split(number, ".")
	depth := len(parts)
	if m.annex > 0 {
		if m.annexID != "" && !isDigits(m.annexID) && parts[0] == m.annexID {
			depth--
		}
		return m.annex + max(depth, 1)
	}
	if m.top < 0 {
		m.top = m.group + 1
		if hashLevel > 0 {
			m.top = max(hashLevel-(depth-1), 1)
		}
	}
	return m.top + depth - 1
}

// innerNumbered is the level of the innermost open numbered section.
func (m *mdState) innerNumbered() int {
	for i := len(m.b.stack) - 1; i >= 1; i-- {
		f := m.b.stack[i]
		if _, ok := unitOf(f.el.Address); ok && isContainer(f.el.Kind) {
			return f.level
		}
	}
	return 0
}

// heading opens a heading (hashLevel 0 for one that reflow found).
func (m *mdState) heading(title string, hashLevel int, synthetic bool) {
	b := m.b
	if u, rest, ok := headingUnit(title); ok {
		switch u.kind {
		case unitAnnex:
			lv := m.topLevel()
			m.group = 0
			b.annex(lv, u.String(), title)
			m.annex, m.annexID, m.lastTop, m.fresh, m.scopeKind = lv, lastField(u.id), 0, true, unitAnnex
			m.annexLevel = lv
		case unitSection:
			if (m.top >= 0 || m.annex > 0) && isDigits(u.id) && m.scopeKind != unitSection {
				// "Section 4" in a numbered document is clause 4.
				m.openNumber(u.id, title, hashLevel)
				return
			}
			fallthrough
		default:
			base := max(m.top, 1) - 1
			if m.annexLevel > 0 {
				base = m.annexLevel - 1
			}
			lv := base + unitLevel(u) - 1
			b.section(lv, u.String(), title)
			m.fresh = true
			if u.kind != unitArticle {
				// Numbers inside a division ("Sección SI 1", "CHAPTER 2")
				// nest below it.
				m.annex, m.annexID, m.scopeKind = lv, lastField(u.id), u.kind
			}
		}
		_ = rest
		return
	}
	if reflowRe().lineAnnex.MatchString(title) {
		lv := m.topLevel()
		m.group = 0
		b.annex(lv, slug(title), title)
		m.annex, m.annexID, m.lastTop, m.fresh, m.scopeKind = lv, "", 0, true, unitAnnex
		m.annexLevel = lv
		return
	}
	if num := mdRe().headingNumber.FindStringSubmatch(title); num != nil {
		m.openNumber(num[1], title, hashLevel)
		return
	}
	switch {
	case synthetic && m.inGroup && m.annex == 0 && (m.top < 0 || m.group > 0):
		// A heading of headings, at the top (see reflow).
		lv := max(m.group, 1)
		b.section(lv, slug(title), title)
		m.group = lv
	case m.top < 0 && m.annex == 0:
		if synthetic {
			hashLevel = 1
			if m.group > 0 && !reflowRe().topHeading.MatchString(title) {
				hashLevel = m.group + 1
			} else {
				m.group = 0
			}
		}
		b.section(hashLevel, slug(title), title)
	case reflowRe().topHeading.MatchString(title):
		b.section(m.topLevel(), slug(title), title)
		m.annex, m.annexLevel, m.group = 0, 0, 0
	default:
		b.section(max(m.innerNumbered(), m.annex)+1, slug(title), title)
	}
}

// topLevel is the level of a heading that stands at the top: an annex,
// "References" after the numbered sections (above the heading of headings
// that holds them, if any).
func (m *mdState) topLevel() int {
	if m.group > 0 {
		return m.group
	}
	return max(m.top, 1)
}

func (m *mdState) openNumber(number, title string, hashLevel int) {
	if !strings.Contains(number, ".") {
		m.lastTop = atoiOr(number, m.lastTop)
		m.fresh = false
	}
	m.b.section(m.numberLevel(number, hashLevel), number, title)
}

// numbered reads a paragraph that opens with a clause number continuing
// the numbering (see parseMarkdown); it reports false for any other.
func (m *mdState) numbered(text string) bool {
	if text == "" || !(text[0] >= '0' && text[0] <= '9' || text[0] >= 'A' && text[0] <= 'Z' && len(text) > 1 && text[1] == '.') {
		return false
	}
	number, rest, ok := clauseNumber(text)
	if !ok || !m.fits(number) {
		return false
	}
	if !endsWithSentence(text) && utf8.RuneCountInString(text) <= 400 && hasLetter(rest) {
		m.openNumber(number, text, 0)
		return true
	}
	if !strings.Contains(number, ".") {
		m.lastTop = atoiOr(number, m.lastTop)
		m.fresh = false
	}
	m.b.clause(m.numberLevel(number, 0), number)
	m.b.leaf(KindParagraph, text)
	return true
}

// clauseNumber reads a clause number at the start of a one-line text and
// the text after it (mdClause); the match stops at the number, so a long
// paragraph costs no more than a short one.
func clauseNumber(text string) (number, rest string, ok bool) {
	m := mdRe().mdClause.FindStringSubmatchIndex(text)
	if m == nil {
		return "", "", false
	}
	rest = text[m[4]:]
	if strings.IndexByte(rest, '\n') >= 0 {
		return "", "", false
	}
	return text[m[2]:m[3]], rest, true
}

func endsWithSentence(s string) bool {
	s = strings.TrimRight(s, " ")
	return s != "" && strings.ContainsAny(s[len(s)-1:], ".!?;:")
}

// fits reports whether a clause number continues the numbering: the next
// top-level numbers (or 1 at the start of an annex or division), or a
// sub-number whose parent is open.
func (m *mdState) fits(n string) bool {
	parts := strings.Split(n, ".")
	if len(parts) == 1 {
		v := atoiOr(n, -1)
		return (v > m.lastTop && v <= m.lastTop+3) || (m.fresh && v == 1)
	}
	parent := strings.Join(parts[:len(parts)-1], ".")
	if _, ok := m.b.openLevel(parent); ok {
		return true
	}
	if m.annexID != "" && parts[0] == m.annexID && len(parts) == 2 {
		return true
	}
	top := atoiOr(parts[0], -1)
	return len(parts) == 2 && parts[1] == "1" && (top == m.lastTop+1 || top == m.lastTop)
}

// withLinks records the links under n (inline and reference-style links;
// autolinks are text) on el; el may be nil.
func withLinks(el *Element, n ast.Node, src []byte) {
	if el == nil {
		return
	}
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if l, ok := c.(*ast.Link); ok && entering {
			el.Links = append(el.Links, Link{Text: normalizeSpace(mdInline(l, src)), Href: string(l.Destination)})
		}
		return ast.WalkContinue, nil
	})
}

// sectionAddress is a heading's leading number or, failing that, its slug.
func sectionAddress(title string) string {
	if m := mdRe().headingNumber.FindStringSubmatch(title); m != nil {
		return m[1]
	}
	return slug(title)
}

func mdLines(n ast.Node, src []byte) []byte {
	var buf bytes.Buffer
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		buf.Write(seg.Value(src))
	}
	return buf.Bytes()
}

// mdInline is the plain text of n's inline children.
func mdInline(n ast.Node, src []byte) string {
	var sb strings.Builder
	var walk func(ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.CodeSpan:
				for t := c.FirstChild(); t != nil; t = t.NextSibling() {
					if tx, ok := t.(*ast.Text); ok {
						sb.Write(tx.Segment.Value(src))
					}
				}
			case *ast.Text:
				// Backslash escapes ("1\. Title") are not text.
				sb.Write(util.UnescapePunctuations(c.Segment.Value(src)))
				if c.HardLineBreak() {
					sb.WriteByte('\n')
				} else if c.SoftLineBreak() {
					sb.WriteByte(' ')
				}
			case *ast.String:
				sb.Write(c.Value)
			case *ast.RawHTML:
				// Inline tags carry no text of their own; the text between an
				// opening and closing tag is a sibling Text node. A tag
				// separates words ("…ssZ<br>where", "<li>…</li><li>").
				sb.WriteByte(' ')
			case *ast.AutoLink:
				sb.Write(c.URL(src))
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return sb.String()
}

// mdFlatten is the text of every block under n, blocks separated by newlines.
func mdFlatten(n ast.Node, src []byte) string {
	if n.Type() != ast.TypeBlock || n.FirstChild() == nil || n.FirstChild().Type() == ast.TypeInline {
		if n.Type() == ast.TypeBlock && n.Lines().Len() > 0 && n.FirstChild() == nil {
			return strings.TrimSpace(string(mdLines(n, src)))
		}
		return normalizeSpace(mdInline(n, src))
	}
	var parts []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.List:
			parts = append(parts, mdList(c, src, ""))
		case *east.Table:
			parts = append(parts, mdTable(c, src))
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			parts = append(parts, strings.TrimRight(string(mdLines(c, src)), "\n"))
		default:
			if t := mdFlatten(c, src); t != "" {
				parts = append(parts, t)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// mdList renders a list one item a line ("- item", "3. item"), nested lists
// indented by two spaces.
func mdList(l *ast.List, src []byte, indent string) string {
	var lines []string
	i := l.Start
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		marker := "- "
		if l.IsOrdered() {
			marker = strconv.Itoa(i) + ". "
			i++
		}
		var body []string
		var nested []string
		for c := item.FirstChild(); c != nil; c = c.NextSibling() {
			if sub, ok := c.(*ast.List); ok {
				nested = append(nested, mdList(sub, src, indent+"  "))
				continue
			}
			if t := mdFlatten(c, src); t != "" {
				body = append(body, t)
			}
		}
		lines = append(lines, indent+marker+strings.Join(body, " "))
		lines = append(lines, nested...)
	}
	return strings.Join(lines, "\n")
}

// mdTable renders a table one row a line, cells joined by " | ", header
// row first.
func mdTable(t *east.Table, src []byte) string {
	var rows []string
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var cells []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, normalizeSpace(mdInline(c, src)))
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	return strings.Join(rows, "\n")
}

// htmlFragmentText is the text content of an HTML fragment, tags and
// comments dropped.
func htmlFragmentText(b []byte) string {
	z := html.NewTokenizer(bytes.NewReader(b))
	var sb strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			return sb.String()
		case html.TextToken:
			sb.Write(z.Text())
			sb.WriteByte(' ')
		}
	}
}
