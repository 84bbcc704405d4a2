package chunker

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
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

var (
	pageComment  = regexp.MustCompile(`(?i)^\s*<!--\s*(?:page\s*(?:=|:|\s)\s*"?\d+"?|page\s*number\s*=?\s*"?\d+"?|pagenumber\s*=?\s*"?\d+"?|page\s*-?\s*break|pdf_page_(?:begin|end)\s*\d*|end\s*of\s*page\s*\d*|start\s*of\s*page\s*\d*)\s*-->\s*$`)
	pageSep      = regexp.MustCompile(`^\s*\{\d+\}-{5,}\s*$`)
	ruleLine     = regexp.MustCompile(`^\s*-{3,}\s*$`)
	pageNumOnly  = regexp.MustCompile(`(?i)^(?:page\s+)?[-–—]?\s*\d{1,4}\s*[-–—]?(?:\s*(?:of|/|из|de)\s*\d{1,4})?$`)
	footnoteHead = regexp.MustCompile(`^(\d{1,3})(?:st|nd|rd|th)?(?:\s+|\s*$)(\S.*)?$`)
	yamlLine     = regexp.MustCompile(`^(?:[\w.-]+\s*:.*|\s+-\s.*|\s*#.*|\s*)$`)
)

// mdStrip removes Markdown heading marks and emphasis for comparing lines.
func mdStrip(l string) string {
	t := strings.TrimSpace(l)
	t = strings.TrimLeft(t, "#")
	t = emphasisMarks.Replace(t)
	return normalizeSpace(t)
}

var emphasisMarks = strings.NewReplacer("**", "", "__", "", "*", "", "_", " ")

// lineSig is how running headers and footers are compared: the line
// without Markdown marks, in lower case, with a page number at its start
// or end ("SI 1 - 12", "46/144 ELI: …", "Page 3 of 40") replaced by "#".
// Numbers inside the line stay, so numbered headings differ.
func lineSig(l string) string {
	t := strings.ToLower(mdStrip(l))
	if t == "" || t[0] >= '0' && t[0] <= '9' && clauseStart.MatchString(t) {
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
			if !yamlLine.MatchString(lines[j]) {
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
		if (markdown && (t[0] == '<' && pageComment.MatchString(l) || t[0] == '{' && pageSep.MatchString(l))) || t[0] == '\f' && strings.TrimSpace(l) == "\f" {
			drop[i] = "page marker"
			bounds = append(bounds, i)
		}
	}
	if markdown && len(bounds) == 0 {
		var rules []int
		for i, l := range lines {
			if drop[i] == "" && strings.HasPrefix(strings.TrimLeft(l, " "), "---") && ruleLine.MatchString(l) && (i == 0 || strings.TrimSpace(lines[i-1]) == "") {
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
	type page struct{ start, end int }
	var pages []page
	start := 0
	for _, b := range bounds {
		pages = append(pages, page{start, b})
		start = b + 1
	}
	pages = append(pages, page{start, n})

	out := cleanText{notes: map[int][]string{}, pages: len(pages)}
	// Footnote blocks at page ends.
	footnotes := make([]map[string]string, len(pages)) // page → number → text
	last := 0
	if len(bounds) > 0 {
		for p, pg := range pages {
			if nums, texts, from := footnoteBlock(lines, drop, pg.start, pg.end, last); from >= 0 {
				footnotes[p] = map[string]string{}
				for k, num := range nums {
					footnotes[p][strconv.Itoa(num)] = texts[k]
				}
				for j := from; j < pg.end; j++ {
					if drop[j] == "" && strings.TrimSpace(lines[j]) != "" {
						drop[j] = "footnote"
					}
				}
				last = nums[len(nums)-1]
			}
		}
	}
	// Running headers and footers, page numbers.
	edges := func(pg page) []int {
		var first, lastL []int
		for j := pg.start; j < pg.end && len(first) < 2; j++ {
			if drop[j] == "" && strings.TrimSpace(lines[j]) != "" {
				first = append(first, j)
			}
		}
		for j := pg.end - 1; j >= pg.start && len(lastL) < 2; j-- {
			if drop[j] == "" && strings.TrimSpace(lines[j]) != "" {
				lastL = append(lastL, j)
			}
		}
		return append(first, lastL...)
	}
	if len(pages) >= 3 {
		count := map[string]int{}
		sigs := map[int]string{}
		sigOf := func(j int) string {
			s, ok := sigs[j]
			if !ok {
				s = lineSig(lines[j])
				sigs[j] = s
			}
			return s
		}
		for _, pg := range pages {
			seen := map[string]bool{}
			for _, j := range edges(pg) {
				if s := sigOf(j); s != "" && !seen[s] {
					seen[s] = true
					count[s]++
				}
			}
		}
		min := max(3, (len(pages)+3)/4)
		kept := map[string]bool{}
		for _, pg := range pages {
			for _, j := range edges(pg) {
				if drop[j] != "" {
					continue
				}
				s := sigOf(j)
				switch {
				case count[s] >= min:
					if !kept[s] && headingLike(lines[j]) {
						kept[s] = true
						continue
					}
					drop[j] = "running header or footer"
				case pageNumOnly.MatchString(mdStrip(lines[j])):
					drop[j] = "page number"
				}
			}
		}
	} else {
		repeatedLines(lines, drop)
	}
	// Footnote calls glued to line starts.
	callsAt := map[int][]string{}
	for p, pg := range pages {
		if len(footnotes[p]) == 0 {
			continue
		}
		for j := pg.start; j < pg.end; j++ {
			if drop[j] != "" {
				continue
			}
			l := lines[j]
			t := strings.TrimLeft(l, " ")
			if t == "" || t[0] < '0' || t[0] > '9' {
				continue
			}
			if calls, rest, ok := splitCalls(t, footnotes[p]); ok {
				out.noise = append(out.noise, Noise{Text: strings.Join(calls, ""), Reason: "footnote call", Line: j + 1})
				lines[j] = rest
				for _, c := range calls {
					callsAt[j] = append(callsAt[j], footnotes[p][c])
				}
			}
		}
	}
	// Keep the rest; a dropped run inside a sentence leaves no blank line.
	for i := 0; i < n; i++ {
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
		if c, ok := callsAt[i]; ok {
			out.notes[len(out.lines)] = c
		}
		out.lines = append(out.lines, lines[i])
		out.orig = append(out.orig, i+1)
	}
	// Footnotes whose call was not found stay as notes of the page's last line.
	for p, fs := range footnotes {
		if len(fs) == 0 {
			continue
		}
		called := map[string]bool{}
		for j := pages[p].start; j < pages[p].end; j++ {
			for _, c := range callsAt[j] {
				called[footnoteNumber(c)] = true
			}
		}
		var rest []string
		for num := range fs {
			if !called[num] {
				rest = append(rest, num)
			}
		}
		sort.Slice(rest, func(a, b int) bool { return atoiOr(rest[a], 0) < atoiOr(rest[b], 0) })
		if len(rest) == 0 {
			continue
		}
		at := keptBefore(out.orig, pages[p].end)
		if at < 0 {
			at = 0
		}
		for _, num := range rest {
			out.notes[at] = append(out.notes[at], fs[num])
		}
	}
	return out
}

// footnoteNumber is the number a footnote's text starts with.
func footnoteNumber(text string) string {
	if m := footnoteHead.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// keptBefore is the index of the last kept line whose source line is
// before end (0-based), or -1.
func keptBefore(orig []int, end int) int {
	i := sort.Search(len(orig), func(k int) bool { return orig[k]-1 >= end }) - 1
	return i
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
	return numberedTitle.MatchString(t) && !strings.ContainsAny(t[len(t)-1:], ".;,")
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

// footnoteBlock finds the footnote block that ends the page [start, end):
// lines that start with consecutive numbers, the first one a little after
// last (the document's count so far) or 1, each with the lines under it. It
// returns the numbers, their texts and the block's first line, or -1.
func footnoteBlock(lines, drop []string, start, end, last int) ([]int, []string, int) {
	var nums []int
	var texts []string
	var pending []string
	from := -1
	for j := end - 1; j >= start; j-- {
		if drop[j] != "" {
			continue
		}
		t := strings.TrimSpace(lines[j])
		if t == "" {
			if len(nums) == 0 && len(pending) == 0 {
				continue
			}
			break
		}
		m := footnoteHead.FindStringSubmatch(t)
		if m != nil {
			v, _ := strconv.Atoi(m[1])
			if len(nums) == 0 || v == nums[0]-1 {
				text := strings.TrimSpace(strings.Join(append([]string{t}, pending...), " "))
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
		return clauseStart.MatchString(rest)
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

var clauseStart = regexp.MustCompile(`^\d{1,3}(?:\.\d{1,3})*\.?\s+\S`)

// repeatedLines drops, in a text without page markers, lines repeated at
// page-like intervals: at least four times, 15 lines apart or more, not
// list items, table rows, lead-ins (":") or numbered clauses, and cutting
// a sentence at least a third of the times (the text before does not end
// one) — running headers fall where a page broke, repeated boilerplate
// where a paragraph ends.
func repeatedLines(lines, drop []string) {
	// Only lines whose trimmed text occurs four times or more are looked
	// at closely.
	seen := map[string]int{}
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
		if utf8.RuneCountInString(s) < 12 || strings.HasSuffix(s, ":") || strings.HasPrefix(t, "|") || listLine.MatchString(t) ||
			clauseStart.MatchString(s) || numberedTitle.MatchString(s) && !headingUnitOK(s) {
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

var listLine = regexp.MustCompile(`^(?:[-*+•]\s|\d{1,3}[.)]\s|\([a-z0-9]{1,3}\)\s)`)

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
