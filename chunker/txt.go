package chunker

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Plain-text structure is guessed from line shapes. The rules, and why:
//
//   - Page furniture. Paginated text (RFCs, printed specs) separates pages
//     with form feeds; the last non-blank line before one (running footer,
//     "Fielding & Reschke  Standards Track  [Page 3]") and the first after
//     it (running header, "RFC 7231  HTTP/1.1 …  June 2014") are dropped when
//     they recur at two or more page breaks once digits are ignored, or carry
//     a "[Page N]" marker. A paragraph cut by a page break is re-joined unless
//     the text before the break ends a sentence or either side is a flush-left
//     heading line.
//   - Headings start a block (a blank line or the start of the text before
//     them) and are at most maxHeadingRunes long: numbered paragraphs and
//     articles' numbered parts ("1. Каждый имеет право …") are long sentences.
//     A line with a dot leader ("1.1. Conformance ........ 5") is a
//     table-of-contents entry, never a heading.
//   - Keyword headings: "Section 4.1", "Appendix A.", "Раздел 3", "РАЗДЕЛ
//     ПЕРВЫЙ", "ГЛАВА 1." / "Глава 1", "Статья 71", "Статья 67.1". Russian
//     legal texts nest Раздел > Глава > Статья (levels 1, 2, 3). A keyword
//     heading without a title takes the next line as its title when that line
//     is in capitals (the chapter title under "ГЛАВА 1.").
//   - Bare numbers ("6.2.2.  Title", "6.2.2 Title", "A.1.  Title") are
//     headings only when the line is flush left, the title has a letter and
//     does not end in . , ; or : (a sentence or a lead-in to a list does),
//     the next line is blank (a heading stands alone; list items run on),
//     the numbering fits the open sections (6.2.2 needs an open 6.2, A.1 an
//     open A, and a new top-level number must be larger than the last one),
//     and the text has not used keyword headings (there, "1." numbers the
//     parts of an article).
//   - Where most lines are indented (RFC body text is indented by three
//     spaces), a short flush-left line standing alone between blank lines
//     is an unnumbered heading ("Abstract", "Index"), addressed by its slug.
//
// Section addresses: the number as written without its trailing dot
// ("6.5.1", "A.1"); "Appendix A." → "A"; Russian keyword headings keep the
// keyword, capitalised, so articles read as they are cited: "Статья 67.1",
// "Глава 1", "Раздел первый". Section titles are the whole heading line with
// white space collapsed ("6.5.1. 400 Bad Request").
//
// Paragraphs are blocks between blank lines, hard-wrapped lines joined with
// spaces. Where lines are not hard-wrapped (unwrappedShare of the lines are
// longer than unwrappedRunes), every line is its own paragraph: such texts
// put one article part or list point on each line. Blocks drawn as ASCII
// tables ("+---+", "| a |") are tables, blocks indented deeper than the body
// text (figures, ABNF) and bullet lists keep their lines.

const (
	maxHeadingRunes  = 100
	unwrappedRunes   = 100
	unwrappedShare   = 0.05
	maxUnnumberedLen = 60
)

// txtPatterns holds the plain-text parser's line patterns; txtRe compiles
// them.
type txtPatterns struct {
	tocLine, numHeading, sectionKw, appendixKw, razdelKw, glavaKw *regexp.Regexp
	statyaKw, pageMarker, digitRun, bulletMarker                  *regexp.Regexp
}

// txtRe returns the plain-text parser's line patterns, compiled on first
// use.
var txtRe = sync.OnceValue(func() *txtPatterns {
	return &txtPatterns{
		tocLine:      regexp.MustCompile(`(?:\.{3,}|(?:\s\.){3,})\s*\d+\s*$`),
		numHeading:   regexp.MustCompile(`^(\d{1,3}(?:\.\d{1,3})*|[A-Z](?:\.\d{1,3})+)\.?\s+(\S.*)$`),
		sectionKw:    regexp.MustCompile(`^(?:Section|SECTION)\s+(\d{1,3}(?:\.\d{1,3})*)\.?(?:\s*[:\-–—]\s*|\s+)(\S.*)$`),
		appendixKw:   regexp.MustCompile(`^(?:Appendix|APPENDIX)\s+([A-Z])\.?(?:(?:\s*[:\-–—]\s*|\s+)(\S.*))?$`),
		razdelKw:     regexp.MustCompile(`^(?:Раздел|РАЗДЕЛ)\s+([0-9IVXLC]+|[А-ЯЁа-яё]+)\.?(?:\s+(\S.*))?$`),
		glavaKw:      regexp.MustCompile(`^(?:Глава|ГЛАВА)\s+(\d{1,3}(?:[.-]\d{1,2})?|[IVXLC]+)\.?(?:\s+(\S.*))?$`),
		statyaKw:     regexp.MustCompile(`^(?:Статья|СТАТЬЯ)\s+(\d{1,4}(?:[.-]\d{1,3})*)\.?(?:\s+(\S.*))?$`),
		pageMarker:   regexp.MustCompile(`\[Page \d+\]\s*$`),
		digitRun:     regexp.MustCompile(`\d+`),
		bulletMarker: regexp.MustCompile(`^(?:[o*•\-–]|\d{1,2}[.)]|[a-zа-я][.)])\s+\S`),
	}
})

// txtHeading is one recognised heading line.
type txtHeading struct {
	level   int
	address string
	title   string
	keyword bool   // a keyword heading (Section, Appendix, Раздел, …)
	body    string // text after the heading on its line, when it is a sentence
	needCap bool   // keyword heading without title text: may take the next capitals line
}

type txtParser struct {
	b          *builder
	lines      []string
	unwrapped  bool
	indented   bool // most non-blank lines are indented
	baseIndent int  // the most common indentation of non-blank lines
	keywords   bool // a keyword heading was seen
	lastTop    int  // last top-level bare number, 0 before any
	hanging    bool // fixed-width layout: paragraphs' first lines indented, the rest flush left
}

// parseTxt parses plain text (decoded by Decode: UTF-8, UTF-16 with a BOM,
// Windows-1251); see the rules above.
func parseTxt(content []byte) (*Element, error) {
	s, _, err := Decode(content)
	if err != nil {
		return nil, err
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines, noise := removePageFurniture(s)
	p := &txtParser{b: newBuilder(), lines: lines}
	p.b.root.Noise = noise
	p.measure()
	if joined, ok := joinHangingParagraphs(lines); ok {
		// Fixed-width official layout: one logical line a paragraph.
		p.lines, p.unwrapped, p.hanging = joined, true, true
	}
	p.run()
	if t := ruActTitle(p.b.root); t != "" {
		p.b.root.Title = t
	}
	return p.b.root, nil
}

// removePageFurniture drops running headers and footers around form feeds
// and re-joins the pages; it returns the lines of the joined text and
// what it dropped.
func removePageFurniture(s string) ([]string, []Noise) {
	if !strings.Contains(s, "\f") {
		return strings.Split(s, "\n"), nil
	}
	var noise []Noise
	pages := strings.Split(s, "\f")
	paged := make([][]string, len(pages))
	for i, pg := range pages {
		paged[i] = strings.Split(pg, "\n")
	}
	sig := func(l string) string { return txtRe().digitRun.ReplaceAllString(normalizeSpace(l), "#") }
	// Candidates: last non-blank line of every page but the last, first
	// non-blank line of every page but the first.
	counts := map[string]int{}
	for i, pg := range paged {
		if i < len(paged)-1 {
			if j := lastNonBlank(pg); j >= 0 {
				counts[sig(pg[j])]++
			}
		}
		if i > 0 {
			if j := firstNonBlank(pg); j >= 0 {
				counts[sig(pg[j])]++
			}
		}
	}
	furniture := func(l string) bool { return txtRe().pageMarker.MatchString(l) || counts[sig(l)] >= 2 }
	for i, pg := range paged {
		// The last page has a footer but no form feed after it.
		if j := lastNonBlank(pg); j >= 0 && furniture(pg[j]) {
			noise = append(noise, Noise{Text: normalizeSpace(pg[j]), Reason: "running header or footer"})
			pg = pg[:j]
		}
		if i > 0 {
			if j := firstNonBlank(pg); j >= 0 && furniture(pg[j]) {
				noise = append(noise, Noise{Text: normalizeSpace(pg[j]), Reason: "running header or footer"})
				pg = pg[j+1:]
			}
		}
		paged[i] = trimBlankLines(pg)
	}
	var out []string
	for _, pg := range paged {
		if len(pg) == 0 {
			continue
		}
		if len(out) > 0 {
			prev := out[len(out)-1]
			if !continuesAcrossPage(prev, pg[0]) {
				out = append(out, "")
			}
		}
		out = append(out, pg...)
	}
	return out, noise
}

// insertedNumber writes the number of an inserted unit as it is cited:
// official plain text prints the superscript of article 18¹ as "18-1",
// citations write "18.1".
func insertedNumber(n string) string { return strings.ReplaceAll(n, "-", ".") }

// joinHangingParagraphs reads the fixed-width layout of laws as officially
// published in plain text: a paragraph's first line is indented (five
// spaces), its continuation lines are flush left, justified with runs of
// spaces, and paragraphs follow each other without blank lines; headings
// are indented like paragraphs ("     Статья 3. Основные понятия, …" over
// a flush-left "законе") or centred, a centred heading wrapped onto a
// second centred line. It returns one line per paragraph or heading, the
// lines of each joined as unwrap joins them, and whether the text is in
// that layout: at least a fifth of its non-blank lines flush left, nine in
// ten of those right under a non-blank line (continuations, not headings
// standing alone), and at least three paragraphs of that shape. Table lines
// (rules, cell bars) keep their lines, between blank lines.
func joinHangingParagraphs(lines []string) ([]string, bool) {
	var nonBlank, flush, cont, starts int
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		nonBlank++
		if indentOf(l) != 0 {
			continue
		}
		flush++
		if i > 0 && strings.TrimSpace(lines[i-1]) != "" {
			cont++
			if ind := indentOf(lines[i-1]); ind >= 2 && ind <= 12 {
				starts++
			}
		}
	}
	if starts < 3 || flush*5 < nonBlank || cont*10 < flush*9 {
		return nil, false
	}
	out := make([]string, 0, len(lines)-flush)
	var group []string
	emit := func() {
		if len(group) > 0 {
			out = append(out, strings.Repeat(" ", indentOf(group[0]))+unwrap(group))
			group = group[:0]
		}
	}
	centred := func(l string) bool { return indentOf(l) > 12 }
	inTable := false
	for _, l := range lines {
		table := strings.TrimSpace(l) != "" && isTableLine(l)
		if table != inTable {
			// A table keeps its lines and stands between blank lines.
			emit()
			if len(out) > 0 && out[len(out)-1] != "" {
				out = append(out, "")
			}
		}
		inTable = table
		switch {
		case table:
			emit()
			out = append(out, l)
		case strings.TrimSpace(l) == "":
			emit()
			out = append(out, "")
		case len(group) > 0 && indentOf(l) == 0:
			group = append(group, l)
		case len(group) > 0 && centred(l) && centred(group[len(group)-1]) && !isTableLine(l) && !isTableLine(group[0]) &&
			!headerLine(group[len(group)-1]) && !headerLine(l) && !opensHeading(l):
			// A centred heading wrapped onto a second centred line.
			group = append(group, l)
		default:
			emit()
			group = append(group, l)
		}
	}
	emit()
	return out, true
}

// headerLine reports whether a centred line is a whole line of a law's
// header, never part of a wrapped heading: the state's name ("РОССИЙСКАЯ
// ФЕДЕРАЦИЯ"), the act's type ("ФЕДЕРАЛЬНЫЙ ЗАКОН"). A header set without
// blank lines keeps its lines apart.
func headerLine(l string) bool {
	t := strings.TrimSpace(l)
	if strings.EqualFold(t, "Российская Федерация") {
		return true
	}
	m := ruActRe().typeLine.FindStringSubmatch(t)
	return m != nil && m[1] == ""
}

// opensHeading reports whether a line opens a keyword heading ("Глава
// 2. …", "Раздел I", "Статья 5"), which no heading above continues into.
func opensHeading(l string) bool {
	t := strings.TrimSpace(l)
	return txtRe().glavaKw.MatchString(t) || txtRe().razdelKw.MatchString(t) || txtRe().statyaKw.MatchString(t)
}

// isTableLine reports whether l is drawn as part of a table (box-drawing
// or ASCII rules, cell bars).
func isTableLine(l string) bool {
	return strings.ContainsAny(l, "|│┌┐└┘├┤┬┴┼─═") || strings.Contains(l, "+-") || strings.Contains(l, "---")
}

// continuesAcrossPage reports whether the line after a page break continues
// the block of the line before it: the earlier line does not end a sentence
// and neither line is flush left (flush-left lines are headings in
// paginated text, whose body is indented).
func continuesAcrossPage(prev, next string) bool {
	p := strings.TrimRight(prev, " \t")
	if p == "" || strings.TrimSpace(next) == "" {
		return false
	}
	if indentOf(p) == 0 || indentOf(next) == 0 {
		return false
	}
	switch p[len(p)-1] {
	case '.', '!', '?', ':':
		return false
	}
	return true
}

func lastNonBlank(ls []string) int {
	for j := len(ls) - 1; j >= 0; j-- {
		if strings.TrimSpace(ls[j]) != "" {
			return j
		}
	}
	return -1
}

func firstNonBlank(ls []string) int {
	for j, l := range ls {
		if strings.TrimSpace(l) != "" {
			return j
		}
	}
	return -1
}

func trimBlankLines(ls []string) []string {
	i, j := firstNonBlank(ls), lastNonBlank(ls)
	if i < 0 {
		return nil
	}
	return ls[i : j+1]
}

func indentOf(l string) int {
	n := 0
	for _, r := range l {
		switch r {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return n
}

// measure learns the text's layout: wrapped or not, indented body or not.
func (p *txtParser) measure() {
	var nonBlank, long, indented int
	hist := map[int]int{}
	for _, l := range p.lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		nonBlank++
		if utf8.RuneCountInString(l) > unwrappedRunes {
			long++
		}
		ind := indentOf(l)
		if ind > 0 {
			indented++
		}
		hist[ind]++
	}
	if nonBlank == 0 {
		return
	}
	p.unwrapped = float64(long) >= unwrappedShare*float64(nonBlank)
	p.indented = indented*2 > nonBlank
	best := -1
	for ind, n := range hist {
		if best < 0 || n > hist[best] || (n == hist[best] && ind < best) {
			best = ind
		}
	}
	p.baseIndent = best
}

func (p *txtParser) run() {
	var block []string
	for i := 0; i < len(p.lines); i++ {
		line := strings.TrimRight(p.lines[i], " \t")
		if strings.TrimSpace(line) == "" {
			p.flush(block)
			block = block[:0]
			continue
		}
		// In the fixed-width layout every line is a paragraph or a
		// heading of its own, blank lines or not: a header set without
		// them runs on into "Глава 1. …" and "Статья 1. …".
		if len(block) == 0 || p.hanging && !isTableLine(line) {
			next := ""
			if i+1 < len(p.lines) {
				next = p.lines[i+1]
			}
			if h, ok := p.heading(line, next); ok {
				p.flush(block)
				block = block[:0]
				i = p.open(h, i)
				continue
			}
		}
		block = append(block, line)
	}
	p.flush(block)
}

// open adds heading h found on line i, taking a capitals title line after
// a bare keyword heading, and returns the index of the last line used.
func (p *txtParser) open(h txtHeading, i int) int {
	if h.needCap {
		j := i + 1
		if j < len(p.lines) && strings.TrimSpace(p.lines[j]) == "" {
			j++
		}
		if j < len(p.lines) {
			// The line as set: a title indented like the keyword line
			// ("        ГЛАВА 1" over "        ОБЩИЕ ПОЛОЖЕНИЯ") is no
			// flush-left heading of its own.
			cand := strings.TrimSpace(p.lines[j])
			if _, isHeading := p.heading(strings.TrimRight(p.lines[j], " \t"), ""); !isHeading && isCapitals(cand) && utf8.RuneCountInString(cand) <= 2*maxHeadingRunes {
				h.title += " " + normalizeSpace(cand)
				i = j
			}
		}
	}
	p.b.section(h.level, h.address, h.title)
	if h.body != "" {
		p.b.leaf(KindParagraph, normalizeSpace(h.body))
	}
	return i
}

// isCapitals reports whether s has letters and all of them are upper case.
func isCapitals(s string) bool {
	letters := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			if !unicode.IsUpper(r) {
				return false
			}
			letters++
		}
	}
	return letters > 0
}

// heading classifies line (right-trimmed) as a heading; next is the line
// after it ("" at the end of the text). It records state (keyword use, the
// last top-level number) only for lines it accepts.
func (p *txtParser) heading(line, next string) (txtHeading, bool) {
	trimmed := strings.TrimSpace(line)
	title := normalizeSpace(trimmed)
	if m := txtRe().statyaKw.FindStringSubmatch(trimmed); m != nil && (m[2] == "" || utf8.RuneCountInString(trimmed) <= maxHeadingRunes ||
		strings.HasPrefix(strings.TrimSpace(trimmed[len(strings.Fields(trimmed)[0]):]), m[1]+".")) {
		p.keywords = true
		h := txtHeading{level: 3, address: "Статья " + insertedNumber(m[1]), title: title, keyword: true}
		if body := m[2]; body != "" && (endsWithSentence(body) || !p.hanging && utf8.RuneCountInString(body) > 80) {
			// "Статья 2. Настоящий Федеральный закон вступает в силу …":
			// the heading carries its body.
			h.title, h.body = normalizeSpace(strings.TrimSuffix(trimmed, body)), body
			h.title = strings.TrimRight(h.title, " .")
		}
		return h, true
	}
	if utf8.RuneCountInString(trimmed) > maxHeadingRunes || txtRe().tocLine.MatchString(trimmed) {
		return txtHeading{}, false
	}

	if m := txtRe().glavaKw.FindStringSubmatch(trimmed); m != nil {
		p.keywords = true
		return txtHeading{level: 2, address: "Глава " + insertedNumber(m[1]), title: title, keyword: true, needCap: m[2] == ""}, true
	}
	if m := txtRe().razdelKw.FindStringSubmatch(trimmed); m != nil {
		p.keywords = true
		return txtHeading{level: 1, address: "Раздел " + strings.ToLower(m[1]), title: title, keyword: true, needCap: m[2] == ""}, true
	}
	if m := txtRe().appendixKw.FindStringSubmatch(trimmed); m != nil && indentOf(line) == 0 {
		return txtHeading{level: 1, address: "Appendix " + m[1], title: title, keyword: true}, true
	}
	if m := txtRe().sectionKw.FindStringSubmatch(trimmed); m != nil && (indentOf(line) == 0 ||
		// The fixed-width layout indents headings like paragraphs; a
		// sentence opening with "Section 2 applies …" ends in a stop.
		p.hanging && !strings.ContainsAny(m[2][len(m[2])-1:], ".,;:")) {
		if h, ok := p.numbered(m[1], title); ok {
			return h, true
		}
	}
	if indentOf(line) != 0 {
		return txtHeading{}, false
	}
	if m := txtRe().numHeading.FindStringSubmatch(trimmed); m != nil {
		if p.keywords || strings.TrimSpace(next) != "" || !hasLetter(m[2]) || strings.ContainsAny(m[2][len(m[2])-1:], ".,;:") {
			return txtHeading{}, false
		}
		return p.numbered(m[1], title)
	}
	if p.indented && strings.TrimSpace(next) == "" && utf8.RuneCountInString(trimmed) <= maxUnnumberedLen &&
		!strings.Contains(trimmed, "   ") && hasLetter(trimmed) && !strings.ContainsAny(trimmed[len(trimmed)-1:], ".,;") {
		return txtHeading{level: 1, address: slug(trimmed), title: title}, true
	}
	return txtHeading{}, false
}

// numbered checks that number fits the open sections (see the rules above).
func (p *txtParser) numbered(number, title string) (txtHeading, bool) {
	parts := strings.Split(number, ".")
	depth := len(parts)
	if depth == 1 {
		n, err := strconv.Atoi(parts[0])
		if err != nil || n <= p.lastTop {
			return txtHeading{}, false
		}
		p.lastTop = n
		return txtHeading{level: 1, address: number, title: title}, true
	}
	parent := strings.Join(parts[:depth-1], ".")
	for _, a := range p.b.openAddresses() {
		if a == parent || a == "Appendix "+parent {
			return txtHeading{level: depth, address: number, title: title}, true
		}
	}
	return txtHeading{}, false
}

func hasLetter(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

// flush turns one block of lines into leaves.
func (p *txtParser) flush(block []string) {
	if len(block) == 0 {
		return
	}
	if isASCIITable(block) {
		p.b.leaf(KindTable, dedent(block))
		return
	}
	if p.unwrapped {
		for _, l := range block {
			p.paragraph(normalizeSpace(l))
		}
		return
	}
	minIndent := -1
	for _, l := range block {
		if ind := indentOf(l); minIndent < 0 || ind < minIndent {
			minIndent = ind
		}
	}
	first := strings.TrimSpace(block[0])
	switch {
	case minIndent > p.baseIndent:
		p.b.leaf(KindParagraph, dedent(block))
	case txtRe().bulletMarker.MatchString(first) && len(block) > 1:
		p.b.leaf(KindList, dedent(block))
	default:
		p.paragraph(unwrap(block))
	}
}

// paragraph adds a paragraph; one that opens with a clause number fitting
// the open sections ("5.2.3 Ширина выхода …" under 5.2, "1.2 Not
// applicable." after 1.1) is that numbered clause, holding what follows
// up to the next number or heading.
func (p *txtParser) paragraph(text string) {
	if p.keywords && isRuSignature(text) {
		// The signature block belongs to the act, not to its last article.
		p.b.stack = p.b.stack[:1]
	}
	if !p.keywords && text != "" && (text[0] >= '0' && text[0] <= '9' || text[0] >= 'A' && text[0] <= 'Z') {
		if n, _, ok := clauseNumber(text); ok && strings.Contains(n, ".") && p.clauseFits(n) {
			p.b.clause(strings.Count(n, ".")+1, n)
		}
	}
	p.b.leaf(KindParagraph, text)
}

// clauseFits reports whether clause number n sits under an open section
// or clause (its parent number, or a sibling's parent).
func (p *txtParser) clauseFits(n string) bool {
	parts := strings.Split(n, ".")
	parent := strings.Join(parts[:len(parts)-1], ".")
	for _, a := range p.b.openAddresses() {
		if a == parent || a == "Appendix "+parent {
			return true
		}
	}
	return false
}

// isASCIITable reports whether most of block's lines are table borders or
// rows ("+----+", "| a | b |").
func isASCIITable(block []string) bool {
	if len(block) < 2 {
		return false
	}
	n := 0
	for _, l := range block {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "+-") || strings.HasPrefix(t, "|") || strings.HasPrefix(t, "+=") {
			n++
		}
	}
	return n*2 >= len(block)
}

// dedent removes the block's common indentation and keeps its lines.
func dedent(block []string) string {
	minIndent := -1
	for _, l := range block {
		if ind := indentOf(l); minIndent < 0 || ind < minIndent {
			minIndent = ind
		}
	}
	out := make([]string, len(block))
	for i, l := range block {
		l = strings.ReplaceAll(l, "\t", "    ")
		if len(l) >= minIndent {
			l = l[minIndent:]
		}
		out[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(out, "\n")
}

// unwrap joins hard-wrapped lines with spaces; a line ending in a hyphen
// after a letter ("application-") joins the next without one.
func unwrap(block []string) string {
	var sb strings.Builder
	for i, l := range block {
		l = strings.TrimSpace(l)
		if i > 0 {
			prev := sb.String()
			if !(strings.HasSuffix(prev, "-") && len(prev) > 1 && unicode.IsLetter(rune(prev[len(prev)-2]))) {
				sb.WriteByte(' ')
			}
		}
		sb.WriteString(l)
	}
	return sb.String()
}
