package chunker

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Page furniture in conversions that kept no page markers (pdf2md-style
// Markdown, text from converters that drop form feeds). Without page
// boundaries a running line is found by what it says and where it recurs:
//
//   - Page labels: a short line that carries a page number after a page
//     word ("CHAPTER THREE PAGE 12", "Página 7 de 40", "стр. 5"), three or
//     more of them with rising numbers.
//   - Notices: a line with a URL or an availability notice ("This
//     publication is available free of charge from: https://doi.org/…",
//     "https://doi.org/…" alone) recurring three times or more, eight
//     lines apart or more.
//   - Title lines: the document's title (its first heading or first line)
//     recurring three times or more, eight lines apart or more, after its
//     first occurrence.
//   - Neighbours: a line recurring three times or more (digits at its
//     ends ignored) of which two in three sit beside furniture found by
//     the rules above (the running header above a
//     page label, the document number beside a footer); or a heading
//     whose every later copy sits so (a section's name running on its
//     pages). Beside means next to it but for blank lines; the rule runs
//     again over what it found, three rounds at most.
//
// A line that starts or ends with a running line found so, followed or
// preceded by more text ("Guide to Widget Security 3.1 Small widgets",
// the running title glued to a section name), loses the running part; the
// rest is dropped too where it recurs as running text itself, else kept.
// Drop caps (a lone capital letter on its own line, the rest of the word
// at the start of the next) are joined to their word.

// unmarkedPatterns holds the patterns of the rules above; unmarkedRe
// compiles them.
type unmarkedPatterns struct {
	pageLabel, notice, url *regexp.Regexp
}

// unmarkedRe returns the patterns of furniture in conversions without page
// markers, compiled on first use.
var unmarkedRe = sync.OnceValue(func() *unmarkedPatterns {
	return &unmarkedPatterns{
		pageLabel: regexp.MustCompile(`(?i)(?:^|[\s|–—-])(?:page|pág\.?|página|pagina|seite|стр\.?|страница)\s*(\d{1,4})(?:\s*(?:of|de|von|из|/)\s*\d{1,4})?\s*$|^(?:page|pág\.?|página|pagina|seite|стр\.?|страница)\s*(\d{1,4})\b`),
		notice:    regexp.MustCompile(`(?i)\b(?:available (?:free of charge |online |for download )?(?:from|at)|downloaded from|disponible (?:en|gratuitamente en)|доступ(?:ен|но|на) (?:по адресу|на сайте))\b`),
		url:       regexp.MustCompile(`(?i)\b(?:https?://|www\.)\S+|\bdoi\.org/\S+`),
	}
})

// maxFurnitureRunes bounds a running line: furniture is short.
const maxFurnitureRunes = 200

// unmarkedFurniture applies the rules above to lines without page
// markers, marking what it drops in drop.
func unmarkedFurniture(lines, drop []string) {
	joinDropCaps(lines, drop)
	type occ struct{ at []int }
	bySig := map[string]*occ{}
	var order []string
	sigOf := make([]string, len(lines))
	// Only lines that recur, page numbers at their ends aside, are looked
	// at closely (lineSig is dear).
	keys := make([]string, len(lines))
	seen := make(map[string]int, len(lines)/2)
	for i, l := range lines {
		if drop[i] != "" {
			continue
		}
		t := strings.TrimSpace(l)
		if t == "" || len(t) > 4*maxFurnitureRunes || t[0] == '|' || strings.HasPrefix(t, "```") {
			continue
		}
		k := strings.Trim(strings.TrimLeft(t, "# "), "0123456789 -–/")
		keys[i] = k
		seen[k]++
	}
	for i, l := range lines {
		if keys[i] == "" || seen[keys[i]] < 2 {
			continue
		}
		s := lineSig(l)
		if s == "" || utf8.RuneCountInString(s) > maxFurnitureRunes {
			continue
		}
		sigOf[i] = s
		o := bySig[s]
		if o == nil {
			o = &occ{}
			bySig[s] = o
			order = append(order, s)
		}
		o.at = append(o.at, i)
	}
	spaced := func(at []int, gap int) bool {
		for k := 1; k < len(at); k++ {
			if at[k]-at[k-1] < gap {
				return false
			}
		}
		return true
	}
	seed := map[string]bool{}
	mark := func(i int, reason string) {
		if drop[i] == "" {
			drop[i] = reason
		}
	}
	// Page labels with rising numbers.
	var labels []int
	last := -1
	for i, l := range lines {
		if keys[i] == "" || len(l) > 200 || !strings.ContainsAny(l, "0123456789") || !pageWord(l) || len(strings.Fields(l)) > 12 {
			continue
		}
		m := unmarkedRe().pageLabel.FindStringSubmatch(mdStrip(l))
		if m == nil {
			continue
		}
		num := atoiOr(m[1]+m[2], -1)
		if num <= last {
			continue
		}
		last = num
		labels = append(labels, i)
	}
	if len(labels) >= 3 {
		for _, i := range labels {
			mark(i, "page number")
			if sigOf[i] == "" {
				sigOf[i] = lineSig(lines[i])
			}
			seed[sigOf[i]] = true
		}
	}
	// Notices and URLs.
	for _, s := range order {
		at := bySig[s].at
		if len(at) < 3 || !spaced(at, 8) {
			continue
		}
		if mayBeNotice(s) && (unmarkedRe().notice.MatchString(s) || unmarkedRe().url.MatchString(s)) {
			for _, i := range at {
				mark(i, "running header or footer")
			}
			seed[s] = true
		}
	}
	// The title.
	if title := documentTitleLine(lines, drop); title >= 0 {
		s := sigOf[title]
		if o := bySig[s]; s != "" && o != nil && len(o.at) >= 3 && spaced(o.at, 8) {
			for _, i := range o.at {
				if i != title {
					mark(i, "running header or footer")
				}
			}
			seed[s] = true
		}
	}
	if len(seed) == 0 {
		return
	}
	// Neighbours of furniture.
	near := func(i int) bool {
		for _, dir := range []int{-1, 1} {
			for j, k := i+dir, 0; j >= 0 && j < len(lines) && k < 1; j += dir {
				if strings.TrimSpace(lines[j]) == "" {
					continue
				}
				if drop[j] == "page number" || drop[j] == "running header or footer" {
					return true
				}
				k++
			}
		}
		return false
	}
	// Rounds: a line found in one makes its neighbours' case in the next.
	for changed, round := true, 0; changed && round < 3; round++ {
		changed = false
		for _, s := range order {
			at := bySig[s].at
			if seed[s] || len(at) < 2 || noiseRe().listLine.MatchString(s) || noiseRe().clauseStart.MatchString(s) {
				continue
			}
			n, later := 0, 0
			for k, i := range at {
				if near(i) {
					n++
					if k > 0 {
						later++
					}
				}
			}
			first := headingLike(lines[at[0]])
			switch {
			case len(at) >= 3 && spaced(at, 8) && 3*n >= 2*len(at):
			case first && later == len(at)-1 && spaced(at[1:], 8):
				// A section's name running on its pages after its heading.
			default:
				continue
			}
			for k, i := range at {
				if k == 0 && first {
					continue
				}
				mark(i, "running header or footer")
			}
			seed[s] = true
			changed = true
		}
	}
	gluedFurniture(lines, drop, seed, sigOf, keys)
}

// mayBeNotice reports whether a line signature (lower case) can match the
// notice or URL patterns, before they are tried.
func mayBeNotice(s string) bool {
	return strings.Contains(s, "://") || strings.Contains(s, "www.") || strings.Contains(s, "doi.org") || strings.Contains(s, "availab") ||
		strings.Contains(s, "download") || strings.Contains(s, "disponible") || strings.Contains(s, "доступ")
}

// pageWord reports whether l has a word that labels a page number
// ("page", "pág", "página", "seite", "стр", "страница"), in any case.
func pageWord(l string) bool {
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case 'p', 'P':
			if i+3 <= len(l) && strings.EqualFold(l[i:i+3], "pag") || i+4 <= len(l) && strings.EqualFold(l[i:i+4], "pág") {
				return true
			}
		case 's', 'S':
			if i+5 <= len(l) && strings.EqualFold(l[i:i+5], "seite") {
				return true
			}
		case 0xD1, 0xD0: // Cyrillic "с"/"С"
			if strings.HasPrefix(l[i:], "стр") || strings.HasPrefix(l[i:], "Стр") || strings.HasPrefix(l[i:], "СТР") {
				return true
			}
		}
	}
	return false
}

// documentTitleLine is the index of the document's first heading, else
// of its first kept non-blank line; -1 for none.
func documentTitleLine(lines, drop []string) int {
	first := -1
	for i, l := range lines {
		if i > 200 {
			break
		}
		t := strings.TrimSpace(l)
		if drop[i] != "" || t == "" {
			continue
		}
		if strings.HasPrefix(t, "#") {
			return i
		}
		if first < 0 {
			first = i
		}
	}
	return first
}

// gluedFurniture takes running text found (seed, by lineSig) off the
// start or end of lines that carry more ("NIST SP 800-999 3.1 Small
// widgets").
func gluedFurniture(lines, drop []string, seed map[string]bool, sigOf, keys []string) {
	var texts []string
	for s := range seed {
		if utf8.RuneCountInString(s) >= 12 && !strings.HasPrefix(s, "# ") && !strings.HasSuffix(s, " #") {
			texts = append(texts, s)
		}
	}
	if len(texts) == 0 {
		return
	}
	rests := map[string][]int{}
	for i, l := range lines {
		if drop[i] != "" || sigOf[i] == "" && strings.TrimSpace(l) == "" {
			continue
		}
		low := strings.ToLower(mdStrip(l))
		for _, f := range texts {
			if len(low) <= len(f)+1 {
				continue
			}
			var rest string
			switch {
			case strings.HasPrefix(low, f) && low[len(f)] == ' ':
				rest = strings.TrimSpace(mdStrip(l)[len(f):])
			case strings.HasSuffix(low, f) && low[len(low)-len(f)-1] == ' ':
				rest = strings.TrimSpace(mdStrip(l)[:len(low)-len(f)])
			default:
				continue
			}
			if !hasLetterOrDigit(rest) {
				continue
			}
			marks := ""
			if t := strings.TrimSpace(l); strings.HasPrefix(t, "#") {
				marks = t[:len(t)-len(strings.TrimLeft(t, "#"))] + " "
			}
			lines[i] = marks + rest
			rests[lineSig(rest)] = append(rests[lineSig(rest)], i)
			break
		}
	}
	// A rest that recurs is running text itself (the section name beside
	// the running title); its first occurrence as a heading of its own
	// stays.
	for s, at := range rests {
		all := append([]int(nil), at...)
		k := strings.Trim(strings.TrimLeft(strings.TrimSpace(lines[at[0]]), "# "), "0123456789 -–/")
		for i := range lines {
			if keys[i] == k && drop[i] == "" && !slices.Contains(at, i) && lineSig(lines[i]) == s {
				all = append(all, i)
			}
		}
		if len(all) < 2 {
			continue
		}
		for _, i := range at {
			drop[i] = "running header or footer"
		}
	}
}

func hasLetterOrDigit(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// joinDropCaps joins a drop cap, a line that is one capital letter, to
// the rest of its word at the start of the next non-blank line (at most
// one blank line between): "T" / "his chapter …" → "This chapter …".
func joinDropCaps(lines, drop []string) {
	for i, l := range lines {
		if drop[i] != "" {
			continue
		}
		if len(l) > 16 {
			continue
		}
		t := mdStrip(l)
		r, n := utf8.DecodeRuneInString(t)
		if n == 0 || n != len(t) || !unicode.IsUpper(r) {
			continue
		}
		j := i + 1
		if j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j >= len(lines) || drop[j] != "" {
			continue
		}
		next := strings.TrimLeft(lines[j], " \t")
		nr, _ := utf8.DecodeRuneInString(next)
		if !unicode.IsLower(nr) || unicode.ToUpper(nr) == r {
			// The rest of a dropped word goes on from the letter, at the
			// letter's left edge or, from a converter that keeps the
			// layout, set clear of it ("T" / "     his chapter …"); an
			// entry under an index letter starts with the letter again
			// ("C" over "   cacheable  24").
			continue
		}
		lines[j] = t + next
		drop[i] = "drop cap"
	}
}
