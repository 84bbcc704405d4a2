package chunker

import (
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Hard-wrapped text without blank lines between paragraphs (what many PDF
// extractors write: one source line per printed line) carries its
// structure in line shapes. reflow separates it into blocks before the
// Markdown parser reads it:
//
//   - A line that opens with a clause number ("3. A description of …") or
//     a keyword ("Appendix: Template …", "ANNEX II") starts a block of its
//     own; its wrapped continuation lines (while a line fills the measure
//     or the next starts in lower case, three lines at most) are joined to
//     it. Whether it is a heading or a numbered clause is the parser's
//     decision (see mdParser).
//   - A short line (under 85 % of the measure) without final punctuation,
//     starting with a capital, between a line that ends a sentence (not a
//     lead-in ending in ":") or a heading and one that starts with a
//     capital, of at most twelve words and not a single token with
//     digits, is an unnumbered heading ("Introduction",
//     "Validation of the initial SSCP by the NB").
//   - A paragraph ends after a line that ends a sentence and is shorter
//     than 85 % of the measure, after a short line without final
//     punctuation that is followed by a capital (list items and
//     abbreviation lines whose bullets were lost), and before a line
//     indented by a space.
//   - Table rows ("| … |") stay; a line inside a table that does not start
//     with "|" continues the row before it (a cell the extractor broke).
//
// The measure is the 90th percentile of line lengths. reflow applies
// only where most text sits in long runs of short lines (see hardWrapped).

// hardWrapped reports whether a Markdown text is hard-wrapped without
// blank lines between paragraphs: its runs of plain lines (not headings,
// tables, lists, code, quotes, HTML or link definitions) are at least
// eight lines long at the median, half its plain lines have 45 characters
// or more and 90 % fit 110.
func hardWrapped(lines []string) bool {
	var runs, lengths []int
	run := 0
	for _, l := range lines {
		t := strings.TrimSpace(l)
		plain := t != "" && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "|") && !strings.HasPrefix(t, "```") &&
			!strings.HasPrefix(t, "- ") && !strings.HasPrefix(t, "* ") && !strings.HasPrefix(t, ">") && !strings.HasPrefix(t, "<") &&
			!strings.HasPrefix(t, "[") && !strings.HasPrefix(l, "    ")
		if plain {
			run++
			lengths = append(lengths, utf8.RuneCountInString(l))
			continue
		}
		if run > 0 {
			runs = append(runs, run)
		}
		run = 0
	}
	if run > 0 {
		runs = append(runs, run)
	}
	if len(runs) == 0 || len(lengths) < 40 {
		return false
	}
	sort.Ints(runs)
	sort.Ints(lengths)
	return runs[len(runs)/2] >= 8 && lengths[len(lengths)/2] >= 45 && lengths[len(lengths)*9/10] <= 110
}

// measure is the 90th percentile of the lengths of non-blank lines.
func measure(lines []string) int {
	var hist [257]int
	n := 0
	for _, l := range lines {
		t := strings.TrimRight(l, " ")
		if t == "" {
			continue
		}
		hist[min(utf8.RuneCountInString(t), 256)]++
		n++
	}
	if n == 0 {
		return 80
	}
	k := n * 9 / 10
	for length, c := range hist {
		if k -= c; k < 0 {
			return max(length, 20)
		}
	}
	return 256
}

// reflowPatterns holds the line patterns reflow and the Markdown parser
// read headings with; reflowRe compiles them.
type reflowPatterns struct {
	lineClause, lineAnnex, topHeading *regexp.Regexp
}

// reflowRe returns the line patterns of clause, annex and top-level
// headings, compiled on first use.
var reflowRe = sync.OnceValue(func() *reflowPatterns {
	return &reflowPatterns{
		// lineClause: a line that opens with a clause number.
		lineClause: regexp.MustCompile(`^(?:[A-Z]\.)?\d{1,3}(?:\.\d{1,3})*\.?\s+\S`),
		// lineAnnex: an annex or appendix heading, with or without a label.
		lineAnnex: regexp.MustCompile(`^(?i)(?:annex|appendix|anexo|anejo|apéndice|приложение)(?:\s+[A-Z0-9IVX]{1,6})?\s*(?:[:.—–-]\s*\S.*)?$`),
		// topHeading: the words of unnumbered headings that stand at the top
		// level even after numbered sections.
		topHeading: regexp.MustCompile(`(?i)^(?:references|bibliography|normative references|revision history|document history|change history|annex(?:es)?|appendi(?:x|ces)|glossary|abbreviations|acronyms|index|foreword|preface|introduction|contents|table of contents|bibliografía|referencias|anexos?|anejos?|литература|библиография|приложени[ея]|содержание|введение)\b`),
	}
})

// reflowed is a hard-wrapped text cut into blocks: lines (with blank lines
// between blocks), where each came from (an index into the input), and the
// output lines that are unnumbered headings.
type reflowed struct {
	lines    []string
	from     []int
	headings map[int]bool
	// groups are the headings of headings: an unnumbered heading whose
	// next block is a heading too (numbered or not) has no text of its
	// own and holds the headings after it.
	groups map[int]bool
}

// reflow separates hard-wrapped lines into blocks (see above).
func reflow(lines []string) reflowed {
	w := measure(lines)
	// Blocks add about one blank line for every two or three lines.
	out := reflowed{lines: make([]string, 0, len(lines)*3/2), from: make([]int, 0, len(lines)*3/2), headings: map[int]bool{}, groups: map[int]bool{}}
	emit := func(s string, from int) {
		out.lines = append(out.lines, s)
		out.from = append(out.from, from)
	}
	blank := func(from int) {
		if n := len(out.lines); n > 0 && strings.TrimSpace(out.lines[n-1]) != "" {
			emit("", from)
		}
	}
	endsSentence := func(s string) bool {
		s = strings.TrimRight(s, " ")
		return s != "" && strings.ContainsAny(s[len(s)-1:], ".!?:;")
	}
	startsUpper := func(s string) bool {
		r, _ := utf8.DecodeRuneInString(strings.TrimSpace(s))
		return unicode.IsUpper(r) || unicode.IsDigit(r)
	}
	startsLower := func(s string) bool {
		r, _ := utf8.DecodeRuneInString(strings.TrimSpace(s))
		return unicode.IsLower(r)
	}
	length := func(s string) int { return utf8.RuneCountInString(strings.TrimRight(s, " ")) }
	lens := make([]int, len(lines)+1) // length of each line (0 past the end)
	for i, l := range lines {
		lens[i] = length(l)
	}
	inFence, inTable := false, false
	lastHeading := -1 // input line of the last heading found
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "```"):
			inFence = !inFence
			emit(l, i)
			continue
		case inFence:
			emit(l, i)
			continue
		case t == "":
			inTable = false
			blank(i)
			continue
		case strings.HasPrefix(t, "|"):
			if !inTable {
				blank(i)
			}
			inTable = true
			emit(l, i)
			continue
		case inTable && !strings.HasSuffix(strings.TrimSpace(out.lines[len(out.lines)-1]), "|"):
			// A broken cell: the row goes on.
			out.lines[len(out.lines)-1] += " " + t
			continue
		case inTable:
			inTable = false
			blank(i)
		case strings.HasPrefix(t, "#"), strings.HasPrefix(t, "<"):
			blank(i)
			emit(l, i)
			blank(i)
			continue
		}
		prev := ""
		if i > 0 {
			prev = lines[i-1]
		}
		next := ""
		if i+1 < len(lines) {
			next = lines[i+1]
		}
		pt := strings.TrimSpace(prev)
		atStart := pt == "" || endsSentence(prev) || strings.HasPrefix(pt, "#") || strings.HasPrefix(pt, "|") || lastHeading == i-1 ||
			// After an abbreviation list ("URL Uniform Resource Locator"),
			// when text follows at once.
			i > 0 && lens[i-1] < w*60/100 && abbreviationEntry(pt) && utf8.RuneCountInString(strings.TrimSpace(next)) >= w*60/100 &&
				startsLetterUpper(next) && wordsHeading(t)
		afterLeadIn := strings.HasSuffix(pt, ":")
		// A numbered or keyword line: a block of its own, wraps joined.
		if clauseLike(t) || (annexLike(t) && reflowRe().lineAnnex.MatchString(t) && utf8.RuneCountInString(t) <= 80) {
			blank(i)
			joined := t
			cur := l
			for k := 0; k < 3 && i+1 < len(lines) && clauseLike(t); k++ {
				nx := strings.TrimSpace(lines[i+1])
				if nx == "" || endsSentence(cur) || clauseLike(nx) || strings.HasPrefix(nx, "#") || strings.HasPrefix(nx, "|") {
					break
				}
				if !(startsLower(nx) || length(cur) >= w*85/100) {
					break
				}
				i++
				cur = lines[i]
				joined += " " + nx
			}
			emit(joined, i)
			if !hasSentenceEnd(joined) || annexLike(t) && reflowRe().lineAnnex.MatchString(t) {
				// A heading: its own block. A clause that is a sentence
				// goes on as a paragraph.
				blank(i)
			}
			continue
		}
		// An unnumbered heading line.
		if atStart && !afterLeadIn && lens[i] < w*85/100 && !endsSentence(t) && startsUpper(t) &&
			(startsUpper(next) || strings.TrimSpace(next) == "") && !strings.HasPrefix(next, " ") && textFollows(lines, i, w) &&
			fewWords(t) && hasLetter(t) {
			blank(i)
			out.headings[len(out.lines)] = true
			emit(t, i)
			blank(i)
			lastHeading = i
			continue
		}
		// An unnumbered heading wrapped over two lines: the second short,
		// in lower case, without final punctuation, and text after it.
		if atStart && !afterLeadIn && i+2 < len(lines) && startsLower(next) && !strings.HasPrefix(next, " ") && startsUpper(t) && !endsSentence(t) {
			n1 := strings.TrimSpace(next)
			if length(n1) < w*60/100 && !endsSentence(n1) && startsLetterUpper(lines[i+2]) && lens[i+2] >= w*60/100 &&
				hasLetter(t) && wordsHeading(t) && !strings.HasPrefix(l, " ") {
				if joined := t + " " + n1; fewWordsN(joined, 16) && !hasSentenceEnd(joined) {
					blank(i)
					out.headings[len(out.lines)] = true
					emit(joined, i+1)
					blank(i + 1)
					i++
					lastHeading = i
					continue
				}
			}
		}
		if strings.HasPrefix(l, " ") && atStart {
			blank(i)
		}
		emit(l, i)
		short := lens[i] < w*85/100
		if (endsSentence(l) && short) || (lens[i] < w*60/100 && !endsSentence(l) && startsUpper(next) && !startsLower(next)) {
			blank(i)
		}
	}
	for k := range out.headings {
		j := k + 1
		for j < len(out.lines) && strings.TrimSpace(out.lines[j]) == "" {
			j++
		}
		if j < len(out.lines) {
			t := strings.TrimSpace(out.lines[j])
			if out.headings[j] || clauseLike(t) && !hasSentenceEnd(t) {
				out.groups[k] = true
			}
		}
	}
	return out
}

// startsLetterUpper: s starts with an upper-case letter.
func startsLetterUpper(s string) bool {
	r, _ := utf8.DecodeRuneInString(strings.TrimSpace(s))
	return unicode.IsUpper(r)
}

// wordsHeading: a line that reads as a title, not as a list entry: its
// first word is not an abbreviation in capitals ("PSUR periodic safety
// update report" is an entry of an abbreviation list) and it holds no
// bullet glyph of a symbol font (U+F0B7 and the rest of the private use
// area).
func wordsHeading(t string) bool {
	first, _, _ := strings.Cut(t, " ")
	if utf8.RuneCountInString(first) > 1 && strings.ToUpper(first) == first {
		return false
	}
	return !strings.ContainsFunc(t, func(r rune) bool { return r >= 0xe000 && r <= 0xf8ff })
}

// abbreviationEntry: a line of an abbreviation list, an abbreviation in
// capitals and its expansion ("PSUR periodic safety update report").
func abbreviationEntry(t string) bool {
	first, rest, ok := strings.Cut(t, " ")
	return ok && rest != "" && utf8.RuneCountInString(first) > 1 && strings.ToUpper(first) == first && hasLetter(first)
}

// textFollows reports whether one of the two lines after i is a long line
// (60 % of the measure): headings are followed by text, list items and
// abbreviation lines by more short lines.
func textFollows(lines []string, i, w int) bool {
	for k := i + 1; k <= i+2 && k < len(lines); k++ {
		t := strings.TrimSpace(lines[k])
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "|") {
			return k > i+1
		}
		if utf8.RuneCountInString(t) >= w*60/100 {
			return true
		}
	}
	return false
}

// hasSentenceEnd reports whether s ends a sentence or holds one ("2.2. The
// indications shall be described. This includes …": a lower-case letter
// or ")" , a full stop, space, a capital).
func hasSentenceEnd(s string) bool {
	t := strings.TrimRight(s, " ")
	if t != "" && strings.ContainsAny(t[len(t)-1:], ".!?;:") {
		return true
	}
	for i := 1; i+2 < len(t); i++ {
		if (t[i] == '.' || t[i] == '!' || t[i] == '?') && (t[i-1] >= 'a' && t[i-1] <= 'z' || t[i-1] == ')') && t[i+1] == ' ' {
			j := i + 1
			for j < len(t) && t[j] == ' ' {
				j++
			}
			if j < len(t) && t[j] >= 'A' && t[j] <= 'Z' {
				return true
			}
		}
	}
	return false
}

// fewWords: at most twelve words, and not a single token with digits.
func fewWords(t string) bool { return fewWordsN(t, 12) }

// fewWordsN: at most n words, and not a single token with digits.
func fewWordsN(t string, n int) bool {
	words := 0
	in := false
	for i := 0; i < len(t); i++ {
		if t[i] == ' ' || t[i] == '\t' {
			in = false
			continue
		}
		if !in {
			words++
			if words > n {
				return false
			}
		}
		in = true
	}
	return !(words == 1 && strings.IndexFunc(t, unicode.IsDigit) >= 0)
}

// clauseLike is lineClause with a cheap first test.
func clauseLike(t string) bool {
	return t != "" && (t[0] >= '0' && t[0] <= '9' || len(t) > 1 && t[0] >= 'A' && t[0] <= 'Z' && t[1] == '.') && reflowRe().lineClause.MatchString(t)
}

// annexLike: the line starts with an annex keyword (lineAnnex's).
func annexLike(t string) bool {
	r, _ := utf8.DecodeRuneInString(t)
	if !strings.ContainsRune("aAпП", r) {
		return false
	}
	for _, kw := range annexKeywords {
		if len(t) >= len(kw) && strings.EqualFold(t[:len(kw)], kw) {
			return true
		}
	}
	return false
}

var annexKeywords = []string{"annex", "appendix", "anexo", "anejo", "apéndice", "приложение"}
