package chunker

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Page noise in text converted from paginated documents (PDF to Markdown
// or text: docling, marker, pymupdf4llm, LlamaParse and in-house
// extractors). cleanLines finds it by its shape, not by its words:
//
//   - Page markers: a line that is only a page comment ("<!-- page=7 -->",
//     "<!-- Page 7 -->", "<!-- PageNumber="7" -->", "<!-- PageBreak -->",
//     "<!-- PDF_PAGE_BEGIN 7 -->"), a paginated separator ("{7}------"),
//     or, where a text has none of those, thematic breaks ("-----") that
//     recur (three or more). They divide the text into pages and are
//     dropped, and the sentence they interrupted is joined again.
//   - Running headers and footers: among the first and last two non-blank
//     lines of each page, a line that recurs (digits ignored, Markdown
//     heading marks and emphasis ignored) on at least three pages and a
//     quarter of them. Without page markers: a line repeated at least four
//     times, 15 lines apart or more, that is not a numbered clause. The
//     first occurrence of a repeated heading stays (the section it names
//     begins there); the rest go.
//   - Page numbers: a line at a page edge that is only a page number ("12",
//     "- 12 -", "Page 12 of 40", "12/40").
//   - Footnote blocks: at the end of a page, lines that start with
//     consecutive footnote numbers continuing the document's count ("16
//     MDR, Article 29 (4)", "17 …", with wrapped lines under each). They
//     become notes of the line that calls them.
//   - Footnote calls glued to the start of a line ("1617The SSCP shall",
//     "501.5. Medical device", "8NB notified body") by the same page's
//     footnote numbers: the numbers are taken off and the line records
//     its calls.
//   - Markdown front matter ("---" … "---" with "key: value" lines).
//
// Everything dropped is recorded as Noise with its line number.

// cleanText is a text with its page noise taken out.
type cleanText struct {
	lines []string // the kept lines
	orig  []int    // 1-based source line of each kept line
	// notes are the footnotes called on each kept line, in call order.
	notes map[int][]string
	noise []Noise
	pages int
}

// noisePatterns holds the line patterns of the page-noise rules; noiseRe
// compiles them.
type noisePatterns struct {
	pageComment, pageSep, ruleLine, pageNumOnly, footnoteHead, yamlLine *regexp.Regexp
	clauseStart, listLine                                               *regexp.Regexp
}

// noiseRe returns the line patterns of the page-noise rules, compiled on
// first use.
var noiseRe = sync.OnceValue(func() *noisePatterns {
	return &noisePatterns{
		pageComment: regexp.MustCompile(`(?i)^\s*<!--\s*(?:page\s*(?:=|:|\s)\s*"?\d+"?|page\s*number\s*=?\s*"?\d+"?|pagenumber\s*=?\s*"?\d+"?|page\s*-?\s*break|pdf_page_(?:begin|end)\s*\d*|end\s*of\s*page\s*\d*|start\s*of\s*page\s*\d*)\s*-->\s*$`),
		pageSep:     regexp.MustCompile(`^\s*\{\d+\}-{5,}\s*$`),
		ruleLine:    regexp.MustCompile(`^\s*-{3,}\s*$`),
		pageNumOnly: regexp.MustCompile(`(?i)^(?:page\s+)?[-–—]?\s*\d{1,4}\s*[-–—]?(?:\s*(?:of|/|из|de)\s*\d{1,4})?$`),
		// footnoteHead: a footnote's number at the start of a one-line unit
		// ("20 MDR, Article 61 (11)", "32nd MDR, …"); see footnoteNumber.
		footnoteHead: regexp.MustCompile(`^(\d{1,3})(?:st|nd|rd|th)?(?:\s|$)`),
		yamlLine:     regexp.MustCompile(`^(?:[\w.-]+\s*:.*|\s+-\s.*|\s*#.*|\s*)$`),
		clauseStart:  regexp.MustCompile(`^\d{1,3}(?:\.\d{1,3})*\.?\s+\S`),
		listLine:     regexp.MustCompile(`^(?:[-*+•]\s|\d{1,3}[.)]\s|\([a-z0-9]{1,3}\)\s)`),
	}
})

// mdStrip removes Markdown heading marks and emphasis for comparing lines.
func mdStrip(l string) string {
	t := strings.TrimSpace(l)
	t = strings.TrimLeft(t, "#")
	if strings.ContainsAny(t, "*_") {
		t = emphasisMarks.Replace(t)
	}
	return normalizeSpace(t)
}

var emphasisMarks = strings.NewReplacer("**", "", "__", "", "*", "", "_", " ")

// lineSig is how running headers and footers are compared: the line
// without Markdown marks, in lower case, with a page number at its start
// or end ("SI 1 - 12", "46/144 ELI: …", "Page 3 of 40") replaced by "#".
// Numbers inside the line stay, so numbered headings differ.
func lineSig(l string) string {
	t := strings.ToLower(mdStrip(l))
	if t == "" || t[0] >= '0' && t[0] <= '9' && noiseRe().clauseStart.MatchString(t) {
		return t
	}
	return edgeNumbers(t)
}

// edgeNumbers replaces a page number at the start or end of a line ("12
// …", "… 12", "… 12/40", "… 12 of 40") by "#".
func edgeNumbers(t string) string {
	digitsAt := func(i int) int { // end of the digit run at i
		j := i
		for j < len(t) && t[j] >= '0' && t[j] <= '9' {
			j++
		}
		return j
	}
	start, end := 0, len(t)
	if j := digitsAt(0); j > 0 && j <= 4 && (j == len(t) || t[j] == ' ' || t[j] == '/') {
		k := j
		if k < len(t) && t[k] == '/' {
			if m := digitsAt(k + 1); m > k+1 {
				k = m
			}
		}
		start = k
	}
	// The last digit run, and "N of M" or "N/M" before it.
	i := end
	for i > start && t[i-1] >= '0' && t[i-1] <= '9' {
		i--
	}
	if i < end && end-i <= 4 && (i == 0 || t[i-1] == ' ' || t[i-1] == '/' || t[i-1] == '-') {
		head := strings.TrimRight(t[start:i], " /")
		for _, w := range []string{" of", " de", " из"} {
			head = strings.TrimSuffix(head, w)
		}
		j := len(head)
		for j > 0 && head[j-1] >= '0' && head[j-1] <= '9' {
			j--
		}
		if j < len(head) && (j == 0 || head[j-1] == ' ') {
			head = head[:j]
		}
		t2 := strings.TrimSpace(head) + " #"
		if start > 0 {
			return "# " + strings.TrimSpace(t2)
		}
		return strings.TrimSpace(t2)
	}
	if start > 0 {
		return strings.TrimSpace("# " + strings.TrimSpace(t[start:]))
	}
	return t
}

// cleanLines removes the page noise from lines (see above); markdown
// enables the Markdown forms (front matter, page comments, rules).
func cleanLines(lines []string, markdown bool) cleanText {
	n := len(lines)
	drop := make([]string, n) // reason, "" to keep
	// Front matter.
	if markdown && n > 2 && strings.TrimSpace(lines[0]) == "---" {
		for j := 1; j < n && j < 80; j++ {
			if t := strings.TrimSpace(lines[j]); t == "---" || t == "..." {
				for k := 0; k <= j; k++ {
					drop[k] = "front matter"
				}
				break
			}
			if !noiseRe().yamlLine.MatchString(lines[j]) {
				break
			}
		}
	}
	// Page boundaries.
	var bounds []int
	for i, l := range lines {
		if drop[i] != "" {
			continue
		}
		t := strings.TrimLeft(l, " ")
		if t == "" {
			continue
		}
		if (markdown && (t[0] == '<' && noiseRe().pageComment.MatchString(l) || t[0] == '{' && noiseRe().pageSep.MatchString(l))) || t[0] == '\f' && strings.TrimSpace(l) == "\f" {
			drop[i] = "page marker"
			bounds = append(bounds, i)
		}
	}
	if markdown && len(bounds) == 0 {
		var rules []int
		for i, l := range lines {
			if drop[i] == "" && strings.HasPrefix(strings.TrimLeft(l, " "), "---") && noiseRe().ruleLine.MatchString(l) && (i == 0 || strings.TrimSpace(lines[i-1]) == "") {
				rules = append(rules, i)
			}
		}
		if len(rules) >= 3 {
			for _, i := range rules {
				drop[i] = "page marker"
			}
			bounds = rules
		}
	}
	// Pages: [start, end) line ranges between boundaries.
	var pages []page
	start := 0
	for _, b := range bounds {
		pages = append(pages, page{start, b})
		start = b + 1
	}
	pages = append(pages, page{start, n})

	out := cleanText{lines: make([]string, 0, n), orig: make([]int, 0, n), notes: map[int][]string{}, pages: len(pages)}
	pt := &pagedText{units: lines, drop: drop, pages: pages, lineNumbers: true}
	notes, callNoise := pt.run()
	if len(pages) < 3 {
		unmarkedFurniture(lines, drop)
		repeatedLines(lines, drop)
	}
	// Keep the rest; a dropped run inside a sentence leaves no blank line.
	outIdx := make([]int, n) // unit → kept line at or before it, -1 for none
	for i := 0; i < n; i++ {
		outIdx[i] = len(out.lines) - 1
		if drop[i] == "footnote" {
			continue // written as a note of the line that calls it
		}
		if drop[i] != "" {
			out.noise = append(out.noise, Noise{Text: normalizeSpace(lines[i]), Reason: drop[i], Line: i + 1})
			continue
		}
		if strings.TrimSpace(lines[i]) == "" && joinsAcross(lines, drop, i) {
			continue
		}
		outIdx[i] = len(out.lines)
		out.lines = append(out.lines, lines[i])
		out.orig = append(out.orig, i+1)
	}
	out.noise = mergeNoise(out.noise, callNoise)
	units := make([]int, 0, len(notes))
	for j := range notes {
		units = append(units, j)
	}
	sort.Ints(units)
	for _, j := range units {
		at := max(outIdx[j], 0)
		out.notes[at] = append(out.notes[at], notes[j]...)
	}
	return out
}

// mergeNoise merges two lists of Noise in line order (b's entries go
// before a's on the same line).
func mergeNoise(a, b []Noise) []Noise {
	if len(b) == 0 {
		return a
	}
	out := make([]Noise, 0, len(a)+len(b))
	i := 0
	for _, x := range b {
		for i < len(a) && a[i].Line < x.Line {
			out = append(out, a[i])
			i++
		}
		out = append(out, x)
	}
	return append(out, a[i:]...)
}

// page is a [start, end) range of a pagedText's units.
type page struct{ start, end int }

// span is a byte range [start, end) of a unit's text.
type span struct{ start, end int }

// pagedText is a paginated document's text, as units in reading order,
// for the page-noise rules every reader of paginated input shares: the
// lines of a text converted from PDF (pages between page markers), the
// lines of a PDF's pages, the paragraphs of a DOCX (pages between page and
// section breaks). The layout fields are nil where the format does not
// know them.
type pagedText struct {
	units []string // footnote calls found are cut out in place
	drop  []string // per unit: why it is dropped ("" keeps it)
	pages []page
	// band: the unit lies in the top or bottom tenth of its page (PDF).
	band []bool
	// bodySize: the unit is set in the body text's size or larger, so it
	// is no footnote (PDF, DOCX with sizes).
	bodySize []bool
	// sups: superscript runs of a unit (DOCX, PDF), footnote calls where
	// their numbers are footnotes of the unit's page. Where it is set,
	// digits not in a superscript are not calls.
	sups [][]span
	// known: signatures (lineSig) of running headers and footers the
	// document declares (a DOCX's header and footer parts).
	known map[string]bool
	// lineNumbers: units are the source's lines (Noise.Line is set).
	lineNumbers bool

	sigs    []string
	hasSigs []bool
}

// sig is unit j's lineSig, cached.
func (pt *pagedText) sig(j int) string {
	if pt.sigs == nil {
		pt.sigs, pt.hasSigs = make([]string, len(pt.units)), make([]bool, len(pt.units))
	}
	if !pt.hasSigs[j] {
		pt.sigs[j], pt.hasSigs[j] = lineSig(pt.units[j]), true
	}
	return pt.sigs[j]
}

func (pt *pagedText) live(j int) bool {
	return pt.drop[j] == "" && strings.TrimSpace(pt.units[j]) != ""
}

// edges are the page's first and last two kept non-blank units and the
// kept units in its top and bottom bands.
func (pt *pagedText) edges(pg page) []int {
	var out []int
	for j, k := pg.start, 0; j < pg.end && k < 2; j++ {
		if pt.live(j) {
			out = append(out, j)
			k++
		}
	}
	lo := pg.start
	if len(out) > 0 {
		lo = out[len(out)-1] + 1
	}
	var tail []int
	for j, k := pg.end-1, 0; j >= lo && k < 2; j-- {
		if pt.live(j) {
			tail = append(tail, j)
			k++
		}
	}
	if pt.band != nil {
		inner := pg.end
		if len(tail) > 0 {
			inner = tail[len(tail)-1]
		}
		for j := lo; j < inner; j++ {
			if pt.band[j] && pt.live(j) {
				out = append(out, j)
			}
		}
	}
	for k := len(tail) - 1; k >= 0; k-- {
		out = append(out, tail[k])
	}
	return out
}

func (pt *pagedText) pageNumber(j int) bool {
	t := strings.TrimSpace(pt.units[j])
	if len(t) > 48 || !strings.ContainsAny(t, "0123456789") {
		return false // no page number line (pageNumOnly) is longer
	}
	return noiseRe().pageNumOnly.MatchString(mdStrip(t))
}

func (pt *pagedText) lineOf(j int) int {
	if pt.lineNumbers {
		return j + 1
	}
	return 0
}

// run applies the page-noise rules: page numbers, footnote blocks,
// running headers and footers, footnote calls (see the top of this file).
// It fills drop ("footnote" for footnote blocks, whose text comes back as
// notes) and returns the footnotes each kept unit calls, in call order —
// a page's footnotes whose call was not found go to its last kept unit —
// and the footnote calls it took off the units.
func (pt *pagedText) run() (map[int][]string, []Noise) {
	n := len(pt.pages)
	if n < 2 {
		return nil, nil
	}
	// Page numbers at a page's outer edge, first: a page number under a
	// footnote block would read as the end of its last footnote.
	for _, pg := range pt.pages {
		for j := pg.start; j < pg.end; j++ {
			if pt.live(j) {
				if pt.pageNumber(j) {
					pt.drop[j] = "page number"
				}
				break
			}
		}
		for j := pg.end - 1; j >= pg.start; j-- {
			if pt.live(j) {
				if pt.pageNumber(j) {
					pt.drop[j] = "page number"
				}
				break
			}
		}
	}
	furniture := pt.furniture()
	// Footnote blocks at page ends.
	defined := make([]map[string]string, n) // page → number → text
	last := 0
	for p, pg := range pt.pages {
		nums, texts, from := pt.footnoteBlock(pg, last, furniture)
		if from < 0 {
			continue
		}
		defined[p] = map[string]string{}
		for k, num := range nums {
			defined[p][strconv.Itoa(num)] = texts[k]
		}
		for j := from; j < pg.end; j++ {
			if pt.live(j) && !furniture(j) {
				pt.drop[j] = "footnote"
			}
		}
		last = nums[len(nums)-1]
	}
	// Running headers and footers, page numbers.
	kept := map[string]bool{}
	for _, pg := range pt.pages {
		for _, j := range pt.edges(pg) {
			switch {
			case furniture(j):
				if s := pt.sig(j); !kept[s] && headingLike(pt.units[j]) {
					kept[s] = true
					continue
				}
				pt.drop[j] = "running header or footer"
			case pt.pageNumber(j):
				pt.drop[j] = "page number"
			}
		}
	}
	// Footnote calls: superscripts the format marked, and numbers glued to
	// the start of a unit.
	notes := map[int][]string{}
	var noise []Noise
	for p, pg := range pt.pages {
		if len(defined[p]) == 0 {
			continue
		}
		called := map[string]bool{}
		for j := pg.start; j < pg.end; j++ {
			if pt.drop[j] != "" {
				continue
			}
			var calls []string
			if pt.sups != nil && len(pt.sups[j]) > 0 {
				calls = pt.cutSups(j, defined[p])
			}
			// Where the format marks superscripts, digits on the line are
			// text ("1 Scope" is a heading).
			if t := strings.TrimLeft(pt.units[j], " "); t != "" && t[0] >= '0' && t[0] <= '9' && pt.sups == nil {
				if cs, rest, ok := splitCalls(t, defined[p]); ok {
					pt.units[j] = rest
					calls = append(cs, calls...)
				}
			}
			if len(calls) == 0 {
				continue
			}
			noise = append(noise, Noise{Text: strings.Join(calls, ""), Reason: "footnote call", Line: pt.lineOf(j)})
			for _, c := range calls {
				called[c] = true
				notes[j] = append(notes[j], defined[p][c])
			}
		}
		// Footnotes whose call was not found stay as notes of the page's
		// last kept unit.
		var rest []string
		for num := range defined[p] {
			if !called[num] {
				rest = append(rest, num)
			}
		}
		if len(rest) == 0 {
			continue
		}
		sort.Slice(rest, func(a, b int) bool { return atoiOr(rest[a], 0) < atoiOr(rest[b], 0) })
		at := -1
		for j := pg.end - 1; j >= 0 && at < 0; j-- {
			if pt.live(j) {
				at = j
			}
		}
		if at < 0 {
			at = 0
		}
		for _, num := range rest {
			notes[at] = append(notes[at], defined[p][num])
		}
	}
	return notes, noise
}

// cutSups takes the superscript runs of unit j that are footnote numbers
// of its page ("16", "16,17") out of its text and returns them in order.
func (pt *pagedText) cutSups(j int, defined map[string]string) []string {
	t := pt.units[j]
	var calls []string
	var b strings.Builder
	at := 0
	for _, sp := range pt.sups[j] {
		if sp.start < at || sp.end > len(t) {
			continue
		}
		nums := strings.FieldsFunc(t[sp.start:sp.end], func(r rune) bool { return r == ',' || r == ' ' })
		ok := len(nums) > 0
		for _, num := range nums {
			if _, def := defined[num]; !def {
				ok = false
			}
		}
		if !ok {
			continue
		}
		b.WriteString(t[at:sp.start])
		at = sp.end
		calls = append(calls, nums...)
	}
	if len(calls) > 0 {
		b.WriteString(t[at:])
		pt.units[j] = normalizeSpace(b.String())
	}
	return calls
}

// furniture returns whether unit j's line recurs at page edges as running
// headers and footers do: on at least three pages and a quarter of them,
// or, in a PDF's top or bottom band, on half the pages with every number
// ignored, or it is one of the document's declared header or footer lines.
// A line that starts with a number recurs only where the number follows
// the pages (a page number, not a footnote's).
func (pt *pagedText) furniture() func(j int) bool {
	n := len(pt.pages)
	count, countBand := map[string]int{}, map[string]int{}
	type at struct{ page, num int }
	lead := map[string][]at{}
	for p, pg := range pt.pages {
		seen := map[string]bool{}
		for _, j := range pt.edges(pg) {
			s := pt.sig(j)
			if s == "" {
				continue
			}
			if !seen[s] {
				seen[s] = true
				count[s]++
				if strings.HasPrefix(s, "# ") {
					lead[s] = append(lead[s], at{p, atoiOr(leadingDigits(mdStrip(pt.units[j])), -1)})
				}
			}
			if pt.band != nil && pt.band[j] {
				if d := txtRe().digitRun.ReplaceAllString(s, "#"); !seen["\x00"+d] {
					seen["\x00"+d] = true
					countBand[d]++
				}
			}
		}
	}
	minPages := max(3, (n+3)/4)
	minBand := max(2, (n+1)/2)
	recurs, recursBand := map[string]bool{}, map[string]bool{}
	var cands []string
	for s, c := range count {
		if c >= minPages {
			cands = append(cands, s)
		}
	}
	for d, c := range countBand {
		if c >= minBand {
			recursBand[d] = true
		}
	}
	// Furniture lives at page edges: a line found as often in the body
	// ("Rationale:" under every requirement, now and then the first line
	// of a page) is text.
	if len(cands) > 0 || len(recursBand) > 0 {
		atEdge := map[int]bool{}
		for _, pg := range pt.pages {
			for _, j := range pt.edges(pg) {
				atEdge[j] = true
			}
		}
		want := map[string]bool{}
		for _, s := range cands {
			want[s] = true
		}
		lo, hi := 1<<30, 0
		for j := range atEdge {
			if s := pt.sig(j); want[s] || pt.band != nil && pt.band[j] && recursBand[txtRe().digitRun.ReplaceAllString(s, "#")] {
				l := len(strings.TrimSpace(pt.units[j]))
				lo, hi = min(lo, l), max(hi, l)
			}
		}
		inside, insideBand := map[string]int{}, map[string]int{}
		for j := range pt.units {
			if l := len(strings.TrimSpace(pt.units[j])); l < lo-8 || l > hi+8 || atEdge[j] || !pt.live(j) {
				continue
			}
			s := pt.sig(j)
			if want[s] {
				inside[s]++
			}
			if len(recursBand) > 0 {
				if d := txtRe().digitRun.ReplaceAllString(s, "#"); recursBand[d] {
					insideBand[d]++
				}
			}
		}
		kept := cands[:0]
		for _, s := range cands {
			if 2*inside[s] <= count[s] {
				kept = append(kept, s)
			}
		}
		cands = kept
		for d := range recursBand {
			if 2*insideBand[d] > countBand[d] {
				delete(recursBand, d)
			}
		}
	}
	for _, s := range cands {
		if occ := lead[s]; len(occ) > 0 {
			follow := 0
			for k := 1; k < len(occ); k++ {
				if occ[k].num-occ[k-1].num == occ[k].page-occ[k-1].page {
					follow++
				}
			}
			if 2*follow < len(occ)-1 {
				continue
			}
		}
		recurs[s] = true
	}
	return func(j int) bool {
		s := pt.sig(j)
		if s == "" {
			return false
		}
		if recurs[s] || pt.known[s] {
			return true
		}
		return pt.band != nil && pt.band[j] && recursBand[txtRe().digitRun.ReplaceAllString(s, "#")]
	}
}

// leadingDigits is the run of digits a string starts with.
func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// headingLike reports whether a line reads as a heading (a Markdown
// heading, a keyword or numbered heading).
func headingLike(l string) bool {
	t := strings.TrimSpace(l)
	if strings.HasPrefix(t, "#") {
		return true
	}
	t = mdStrip(t)
	if _, _, ok := headingUnit(t); ok {
		return true
	}
	return isNumberedTitle(t) && !strings.ContainsAny(t[len(t)-1:], ".;,")
}

// joinsAcross reports whether the blank line i sits in a run of blank and
// dropped lines between two text lines of one sentence (the earlier does
// not end a sentence, or the later starts in lower case).
func joinsAcross(lines, drop []string, i int) bool {
	removed := false
	p := i - 1
	for ; p >= 0 && (drop[p] != "" || strings.TrimSpace(lines[p]) == ""); p-- {
		removed = removed || drop[p] != ""
	}
	q := i + 1
	for ; q < len(lines) && (drop[q] != "" || strings.TrimSpace(lines[q]) == ""); q++ {
		removed = removed || drop[q] != ""
	}
	if !removed || p < 0 || q >= len(lines) {
		return false
	}
	prev := strings.TrimRight(lines[p], " ")
	next := strings.TrimSpace(lines[q])
	if prev == "" || next == "" || strings.HasPrefix(strings.TrimSpace(prev), "#") || strings.HasPrefix(next, "#") ||
		strings.HasPrefix(next, "|") || strings.HasPrefix(strings.TrimSpace(prev), "|") {
		return false
	}
	r, _ := utf8.DecodeRuneInString(next)
	if unicode.IsLower(r) {
		return true
	}
	return !strings.ContainsAny(prev[len(prev)-1:], ".!?:;") && utf8.RuneCountInString(next) >= 50
}

// footnoteBlock finds the footnote block that ends page pg: units that
// start with consecutive numbers, the first one a little after last (the
// document's count so far) or 1, each with the units under it. Running
// headers and footers under the block are skipped; a unit set in the body
// size ends it. It returns the numbers, their texts and the block's first
// unit, or -1.
func (pt *pagedText) footnoteBlock(pg page, last int, furniture func(int) bool) ([]int, []string, int) {
	var nums []int
	var texts []string
	var pending []string
	from := -1
	for j := pg.end - 1; j >= pg.start; j-- {
		if pt.drop[j] != "" {
			continue
		}
		t := strings.TrimSpace(pt.units[j])
		if t == "" {
			if len(nums) == 0 && len(pending) == 0 {
				continue
			}
			break
		}
		if len(nums) == 0 && len(pending) == 0 && furniture(j) {
			continue
		}
		if pt.bodySize != nil && pt.bodySize[j] {
			break
		}
		var m []string
		if t[0] >= '0' && t[0] <= '9' {
			m = footnoteNumber(t)
		}
		if m != nil {
			v, _ := strconv.Atoi(m[1])
			if len(nums) == 0 || v == nums[0]-1 {
				text := t
				if len(pending) > 0 {
					text = strings.TrimSpace(strings.Join(append([]string{t}, pending...), " "))
				}
				nums = append([]int{v}, nums...)
				texts = append([]string{text}, texts...)
				pending = nil
				from = j
				continue
			}
		}
		if len(nums) == 0 && len(pending) < 3 {
			// The wrapped end of the last footnote.
			pending = append([]string{t}, pending...)
			continue
		}
		if len(pending) < 3 && m == nil && !headingLike(t) {
			pending = append([]string{t}, pending...)
			continue
		}
		break
	}
	// The block continues the document's count (a few numbers may have
	// been missed on an earlier page) or starts again at 1.
	if len(nums) == 0 || (nums[0] <= last || nums[0] > last+10) && nums[0] != 1 {
		return nil, nil, -1
	}
	return nums, texts, from
}

// footnoteNumber matches footnoteHead at the start of a one-line unit
// (nil for a unit of several lines); the match stops after the number.
func footnoteNumber(t string) []string {
	if strings.IndexByte(t, '\n') >= 0 {
		return nil
	}
	return noiseRe().footnoteHead.FindStringSubmatch(t)
}

// splitCalls takes footnote numbers defined on the page off the start of a
// line: "1617The" → calls 16, 17 and "The"; "501.5. Medical" → 50 and
// "1.5. Medical"; "4 replace" → 4 and "replace". What is left must start a
// word (a letter, an opening bracket or quote) or a clause number.
func splitCalls(t string, defined map[string]string) ([]string, string, bool) {
	digits := 0
	for digits < len(t) && t[digits] >= '0' && t[digits] <= '9' {
		digits++
	}
	var try func(k int, calls []string) ([]string, string, bool)
	try = func(k int, calls []string) ([]string, string, bool) {
		if len(calls) > 0 {
			rest := t[k:]
			if okRest(rest, k < digits) {
				return calls, strings.TrimLeft(rest, " "), true
			}
		}
		for e := k + 1; e <= digits && e-k <= 3; e++ {
			num := t[k:e]
			if _, ok := defined[num]; !ok || num[0] == '0' {
				continue
			}
			if c, r, ok := try(e, append(calls, num)); ok {
				return c, r, true
			}
		}
		return nil, "", false
	}
	return try(0, nil)
}

// okRest reports whether rest can follow footnote calls; inDigits is set
// when rest starts inside the line's leading digits (a clause number such
// as "1.5." must follow then).
func okRest(rest string, inDigits bool) bool {
	if rest == "" {
		return false
	}
	if inDigits {
		return noiseRe().clauseStart.MatchString(rest)
	}
	r, _ := utf8.DecodeRuneInString(rest)
	switch {
	case r == ' ':
		t := strings.TrimLeft(rest, " ")
		r2, _ := utf8.DecodeRuneInString(t)
		return t != "" && (unicode.IsLetter(r2) || r2 == '(' || r2 == '"' || r2 == '\'')
	case unicode.IsLetter(r), r == '(', r == '"', r == '\'', r == '“', r == '‘':
		return true
	}
	return false
}

// endsSentenceAbove reports whether a trimmed line starts with a lower-case
// letter and ends with a sentence's full stop, question or exclamation
// mark: the end of a sentence the line above began.
func endsSentenceAbove(t string) bool {
	r, _ := utf8.DecodeRuneInString(t)
	return unicode.IsLower(r) && strings.ContainsAny(t[len(t)-1:], ".!?")
}

// repeatedLines drops, in a text without page markers, lines repeated at
// page-like intervals: at least four times, 15 lines apart or more, not
// list items, table rows, lead-ins (":") or numbered clauses, and cutting
// a sentence at least a third of the times (the text before does not end
// one) — running headers fall where a page broke, repeated boilerplate
// where a paragraph ends. A line that starts in lower case and ends a
// sentence ends the sentence above it and is never dropped so.
func repeatedLines(lines, drop []string) {
	// Only lines whose trimmed text occurs four times or more are looked
	// at closely.
	seen := make(map[string]int, len(lines))
	for i, l := range lines {
		if drop[i] == "" && len(l) >= 12 {
			seen[strings.TrimSpace(l)]++
		}
	}
	at := map[string][]int{}
	for i, l := range lines {
		if drop[i] != "" || len(l) < 12 || seen[strings.TrimSpace(l)] < 4 {
			continue
		}
		t := strings.TrimSpace(l)
		s := strings.ToLower(mdStrip(l))
		if utf8.RuneCountInString(s) < 12 || strings.HasSuffix(s, ":") || strings.HasPrefix(t, "|") || noiseRe().listLine.MatchString(t) ||
			noiseRe().clauseStart.MatchString(s) || isNumberedTitle(s) && !headingUnitOK(s) || endsSentenceAbove(t) {
			continue
		}
		at[s] = append(at[s], i)
	}
	for _, is := range at {
		if len(is) < 4 {
			continue
		}
		spaced, cuts := true, 0
		for k, i := range is {
			if k > 0 && i-is[k-1] < 15 {
				spaced = false
			}
			if p := prevText(lines, drop, i); p != "" && !strings.ContainsAny(p[len(p)-1:], ".!?:;|`") && !strings.HasPrefix(strings.TrimSpace(p), "#") {
				cuts++
			}
		}
		if !spaced || cuts*3 < len(is) {
			continue
		}
		for k, i := range is {
			if k == 0 && headingLike(lines[i]) {
				continue
			}
			drop[i] = "running header or footer"
		}
	}
}

// prevText is the last non-blank kept line before i, right-trimmed.
func prevText(lines, drop []string, i int) string {
	for j := i - 1; j >= 0; j-- {
		if drop[j] == "" && strings.TrimSpace(lines[j]) != "" {
			return strings.TrimRight(lines[j], " ")
		}
	}
	return ""
}

func headingUnitOK(s string) bool { _, _, ok := headingUnit(s); return ok }
