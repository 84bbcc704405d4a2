package chunker

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// A reference in running text is a cluster of address components joined
// by the words of sepRe ("point (a) of Article 7(3) of Regulation (EU)
// 2017/745", "Sections 2 and 3 of Annex IX", "частью 1 статьи 3"),
// optionally naming a document before or after it ("MDR, Article 32 (1)",
// "[RFC7230], Section 2.7", "Section 2.7 of [RFC7230]"). A list or range
// of identifiers after a component ("Articles 52 to 56", "points (a) and
// (b)", "статьями 71 и 72") gives one target per identifier, each with the
// rest of the cluster.

// AddressMatch is an address found in free text.
type AddressMatch struct {
	// Start and End are the byte offsets of the matched text.
	Start, End int
	// Text is the matched text.
	Text string
	// Address is the target in canonical form; Doc is set when the text
	// names the document ("Article 7 of Regulation (EU) 2017/745"). A
	// Citation that starts with a paragraph or point ("(3)", "(a)",
	// "часть 2") or a bare clause number is relative: it may mean a part
	// of the element the text is in ("paragraph 3" of the article that
	// says it).
	Address
}

// FindAddresses returns the addresses in free text, in order: a query
// ("what does Article 7(3) of the MDR require", "статья 81 часть 3",
// "RFC 7231 section 4.2.2", "Tabla 1.2") or a document's sentence.
// Bare numbers count only with two or more parts after a lead-in ("see
// 4.1", "в соответствии с 5.2.3") or when the whole text is the number;
// a list gives one match per item ("Articles 5 and 6": Article 5, Article
// 6, both with the span of the whole list). Whole-document citations
// ("[RFC7230]", "Directive 93/42/EEC") come with an empty Citation.
func FindAddresses(text string) []AddressMatch {
	t := strings.NewReplacer("\u00a0", " ", "’", "'", "‘", "'").Replace(text)
	sc := refScanner{text: t}
	return sc.scan(nil)
}

type refScanner struct {
	text string
	// acronyms are document abbreviations the document defines ("MDR").
	acronyms map[string]bool
}

// refPatterns holds the reference scanner's patterns; refRe compiles them.
type refPatterns struct {
	startAt, leadIn, gazette, acronymRe, docContinues, defaultDocRe         *regexp.Regexp
	andNext, otherDoc, thereof, docSep, listNextRe, connectorRe, acronymDef *regexp.Regexp
	docTypeWord, abbrevLine                                                 *regexp.Regexp
}

// startPattern matches the places a reference can start; every one starts
// with a letter, a digit, "§" or "[".
const startPattern = `(?i)(?:articles?|arts?\.|artículos?|articulos?|artigos?|artico[li]|artikels?|artykuł|стат\p{L}*|ст\.|annex\p{L}*|appendi\p{L}*|app\.|anex\p{L}*|anej\p{L}*|apéndice\p{L}*|apendice|anhang|allegat\p{L}*|bijlage|приложени\p{L}*|прил\.|chapters?|chapitre|cap[íi]tul\p{L}*|kapitel|capo|глав\p{L}*|гл\.|parts?|partie|parte\p{L}*|teil|titles?|titre|t[íi]tul\p{L}*|titel|recitals?|considerando\p{L}*|considérant\p{L}*|erwägungsgr\p{L}*|tabl\p{L}*|tabelle\p{L}*|tabella|таблиц\p{L}*|табл\.|tab\.|figur\p{L}*|figs?\.|abbildung|abb\.|рисун\p{L}*|рис\.|част\p{L}*|ч\.|sections?|subsections?|sec\.|§|secci\p{L}*|abschnitt|sezione|раздел\p{L}*|clauses?|subclauses?|paragraphs?|paras?\.|subparagraphs?|points?|pt\.|items?|apartados?|subapartados?|puntos?|párraf\p{L}*|requirements?|подпункт\p{L}*|пункт\p{L}*|пп\.|п\.|требовани\p{L}*|параграф\p{L}*|see|cf\.|в соответствии с|согласно|см\.|según|véase|conforme a|de acuerdo con|\[?RFC|regulation|directive|decision|recommendation|reglamento|directiva|decisión|règlement|verordnung|richtlinie|регламент|директива|commission|council|implementing|delegated|(?:EN |UNE-EN |UNE |DIN EN |BS EN )?(?:ISO|IEC|ИСО|МЭК)|ГОСТ|СП|\d{1,4}-ФЗ|(?:CTE )?DB[\s-])`

// refRe returns the reference scanner's patterns, compiled on first use.
var refRe = sync.OnceValue(func() *refPatterns {
	return &refPatterns{
		// startAt matches a place a reference can start, anchored where it
		// is tried: an address keyword, a document identifier, a lead-in
		// before a bare number, an acronym.
		startAt: regexp.MustCompile(`^(?:` + startPattern + `)`),
		// leadIn matches a lead-in before a bare clause number.
		leadIn: regexp.MustCompile(`^(?i)(?:see|cf\.|в соответствии с|согласно|см\.|según|véase|conforme a|de acuerdo con)\s+(?:(?:the|el|la|los)\s+)?`),
		// gazette ends the issue number of an official gazette before "ст. N".
		gazette: regexp.MustCompile(`(?:N|№)\s?\d{1,3}(?:\s?\(ч(?:асть|\.)\s?[IVX\d]+\))?,\s*$`),
		// acronymRe is an abbreviation that may name a document ("MDR", "IVDR",
		// "GDPR", "TFEU").
		acronymRe: regexp.MustCompile(`^[A-Z][A-Z0-9]{1,7}\b`),
		// docContinues is what may stand between two references to one document.
		docContinues: regexp.MustCompile(`^(?i)(?:\s*[,;]?\s*(?:and|or|as well as|и|или|y|o)?\s*)$`),
		// defaultDocRe: a text that opens with a document ("13 MDR, …", "MDR: …").
		defaultDocRe: regexp.MustCompile(`^(?:\d{1,3}(?:st|nd|rd|th)?\s+)?([A-Z][A-Z0-9]{1,7})\s*[,:]`),
		// andNext joins two references that share what follows the second
		// ("Section 2.8 of Chapter I and Section 7 of Chapter III of Annex XV").
		andNext: regexp.MustCompile(`^(?:\s*,\s*|\s+)(?:and|or|и|y)\s+`),
		// otherDoc: "of that Directive", "of the said Regulation": another
		// document the text does not name here.
		otherDoc: regexp.MustCompile(`^(?i)(?:\s*,\s*|\s+)(?:of|to|in|under|de|del)\s+(?:that|the said|those|the same|dicha|dicho|dichos|la citada|el citado|указанн\p{L}*)\s+(regulation|directive|decision|act|reglamento|directiva|decisión|регламент\p{L}*|директив\p{L}*|закон\p{L}*)`),
		// thereof: "Article 114 and Article 168(4)(c) thereof", an act named
		// earlier in the sentence.
		thereof: regexp.MustCompile(`^(?i)\s+(?:thereof|of the said act|de (?:dicho|dicha|este|esta) (?:tratado|acto))\b`),
		// docSep joins a cluster and the document after it.
		docSep: regexp.MustCompile(`^(?i)(?:\s*,\s*|\s+)(?:(?:of|in|to|under|from|de|del|de la|du|des|der|von)\s+)?(?:(?:the|el|la|le|die|des)\s+)?`),
		// listNextRe joins the items of a list or range.
		listNextRe: regexp.MustCompile(`^(?i)(?:\s*,\s*(?:and\s+|or\s+|y\s+|и\s+)?|\s+(?:and|or|and/or|и|или|y|o|e|et|und|ou|to|through|до|al|a)\s+|\s*[–—-]\s*)`),
		// connectorRe finds a word that joins an inner component to an outer one.
		connectorRe: regexp.MustCompile(`(?i)(?:^|\s)(?:of|in|to|under|from|de|del|du|des|der|von|в|из)(?:\s|$)`),
		// acronymDef finds an abbreviation defined after the words it stands for:
		// "Medical Device Regulation (MDR)", "(‘GDPR’)", "(hereinafter ‘the AI
		// Act’)" is not an acronym and is not read here.
		acronymDef: regexp.MustCompile(`\(\s*['"“]?([A-Z][A-Z0-9]{1,7})['"”]?\s*\)`),
		// docTypeWord is a word that names a kind of document.
		docTypeWord: regexp.MustCompile(`(?i)\b(?:regulation|directive|decision|act|code|law|standard|specification|convention|treaty|guideline|guidance|reglamento|directiva|ley|código|norma|règlement|verordnung|richtlinie)\b|регламент|закон|кодекс|стандарт|правил`),
		// abbrevLine is a line of an abbreviation list: "MDR Medical Device
		// Regulation (1)", "MDR — Medical Device Regulation".
		abbrevLine: regexp.MustCompile(`^([A-Z][A-Z0-9]{1,7})\s+(?:[-–—:]\s+)?([A-Z][^.]{3,80})$`),
	}
})

// target is one address a cluster names.
type target struct {
	comps []comp
	start int
	end   int
}

// scan finds the references in sc.text.
func (sc *refScanner) scan(out []AddressMatch) []AddressMatch {
	t := sc.text
	next := 0 // text before next is used
	prevDoc, prevEnd := sc.defaultDoc(), -1
	locs := startLocs(t)
	// Acronyms are only candidates when the document defines them.
	if len(sc.acronyms) > 0 {
		locs = mergeLocs(locs, acronymLocs(t, sc.acronyms))
	}
	for _, loc := range locs {
		i := loc[0]
		if i < next || !boundaryBefore(t, i) {
			continue
		}
		ms, end := sc.at(i)
		if end <= i {
			continue
		}
		// "MDR, Article 61 (11) and Article 83 (3)(d)": the document named
		// first goes on through the list; a note that opens with a
		// document ("13 MDR, as specified in Annexes II and III") names it
		// for all its references.
		if len(ms) > 0 && ms[0].Doc == "" && ms[0].Citation != "" && prevDoc != "" &&
			(prevEnd < 0 || refRe().docContinues.MatchString(t[prevEnd:ms[0].Start])) {
			for k := range ms {
				ms[k].Doc = prevDoc
			}
		}
		if len(ms) > 0 {
			if ms[len(ms)-1].Doc != "" && ms[len(ms)-1].Citation != "" {
				prevDoc = ms[len(ms)-1].Doc
			} else if ms[len(ms)-1].Doc == "" && prevEnd >= 0 && !refRe().docContinues.MatchString(t[prevEnd:ms[0].Start]) {
				prevDoc = ""
			}
			prevEnd = end
		}
		out = append(out, ms...)
		next = end
	}
	return out
}

// defaultDoc is the document a text names at its start, if it is one of
// the document's abbreviations.
func (sc *refScanner) defaultDoc() string {
	if m := refRe().defaultDocRe.FindStringSubmatch(sc.text); m != nil && sc.acronyms[m[1]] {
		return m[1]
	}
	return ""
}

// startLocs returns where references can start in t: the matches of
// startAt that start at a word boundary, each tried only there (not at
// every byte, as an unanchored FindAllStringIndex does, which costs seconds on a
// megabyte of text), none inside the one before.
func startLocs(t string) [][]int {
	var out [][]int
	prev := ' ' // the rune before i
	for i := 0; i < len(t); {
		r, n := utf8.DecodeRuneInString(t[i:])
		if !unicode.IsLetter(prev) && !unicode.IsDigit(prev) && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '§' || r == '[') {
			if m := refRe().startAt.FindStringIndex(t[i:]); m != nil {
				out = append(out, []int{i, i + m[1]})
				i += m[1]
				prev, _ = utf8.DecodeLastRuneInString(t[:i])
				continue
			}
		}
		prev = r
		i += n
	}
	return out
}

func mergeLocs(a, b [][]int) [][]int {
	out := make([][]int, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if j >= len(b) || (i < len(a) && a[i][0] <= b[j][0]) {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	return out
}

func acronymLocs(t string, acr map[string]bool) [][]int {
	var out [][]int
	for i := 0; i < len(t); {
		r, n := utf8.DecodeRuneInString(t[i:])
		if r >= 'A' && r <= 'Z' && boundaryBefore(t, i) {
			if m := refRe().acronymRe.FindStringIndex(t[i:]); m != nil && acr[t[i:i+m[1]]] {
				out = append(out, []int{i, i + m[1]})
				i += m[1]
				continue
			}
		}
		i += n
	}
	return out
}

// at reads the reference starting at t[i:] and returns its matches and
// where it ends (<= i for none).
func (sc *refScanner) at(i int) ([]AddressMatch, int) {
	t := sc.text
	// A document named first: "[RFC7230], Section 2.7", "MDR, Article 32".
	if doc, end, ok := sc.docAt(i); ok {
		j := end
		if k := strings.IndexByte(t[j:min(j+3, len(t))], ','); k >= 0 {
			j += k + 1
		}
		j = spaces(t, j)
		if j > end || j == len(t) {
			if ts, cend := sc.cluster(j); len(ts) > 0 {
				return sc.matches(ts, doc, i, cend), cend
			}
		}
		if sc.acronyms[doc] {
			// A bare acronym is no reference.
			return nil, end
		}
		return []AddressMatch{{Start: i, End: end, Text: t[i:end], Address: Address{Doc: doc}}}, end
	}
	// A lead-in before a bare number: "see 4.1", "в соответствии с 5.2.3".
	if m := refRe().leadIn.FindStringIndex(t[i:]); m != nil {
		j := i + m[1]
		if n := addrSyntax().numberID.FindStringIndex(t[j:]); n != nil && strings.Contains(t[j:j+n[1]], ".") && boundaryNumber(t, j+n[1]) {
			if ts, end := sc.cluster(j); len(ts) > 0 {
				doc, dend := sc.docAfter(end)
				return sc.matches(ts, doc, j, dend), dend
			}
		}
		return nil, i
	}
	if refRe().gazette.MatchString(t[max(0, i-16):i]) {
		// "(Собрание законодательства …, 1996, N 3, ст. 152)": a page of
		// the official gazette, not an article.
		return nil, i + 1
	}
	ts, end := sc.cluster(i)
	if len(ts) == 0 {
		return nil, i
	}
	sc.sharedTail(ts, end)
	doc, dend := sc.docAfter(end)
	return sc.matches(ts, doc, i, dend), dend
}

// sharedTail gives the targets of a reference to a division (a chapter or
// part, no annex) the annex the next reference names, when the two are
// joined by "and".
func (sc *refScanner) sharedTail(ts []target, end int) {
	for _, tg := range ts {
		for _, c := range tg.comps {
			if k := c.units[0].kind; k == unitAnnex || k == unitArticle {
				return
			}
		}
	}
	hasDivision := false
	for _, c := range ts[0].comps {
		hasDivision = hasDivision || c.units[0].isDivision()
	}
	m := refRe().andNext.FindStringIndex(sc.text[end:])
	if !hasDivision || m == nil {
		return
	}
	next, _ := sc.cluster(end + m[1])
	if len(next) == 0 {
		return
	}
	for _, c := range next[0].comps {
		if c.units[0].kind == unitAnnex {
			for k := range ts {
				ts[k].comps = append(ts[k].comps, c)
			}
			return
		}
	}
}

func (sc *refScanner) matches(ts []target, doc string, start, end int) []AddressMatch {
	out := make([]AddressMatch, 0, len(ts))
	for _, tg := range ts {
		out = append(out, AddressMatch{Start: start, End: end, Text: strings.TrimSpace(sc.text[start:end]),
			Address: Address{Doc: doc, Citation: formatUnits(arrange(tg.comps))}})
	}
	return out
}

// docAt reads a document identifier or a defined acronym at t[i:].
func (sc *refScanner) docAt(i int) (string, int, bool) {
	if d, end, ok := matchDoc(sc.text, i); ok {
		return d, end, true
	}
	if len(sc.acronyms) > 0 {
		if m := refRe().acronymRe.FindStringIndex(sc.text[i:]); m != nil && sc.acronyms[sc.text[i:i+m[1]]] {
			return sc.text[i : i+m[1]], i + m[1], true
		}
	}
	return "", 0, false
}

// docAfter reads a document named after a cluster ending at end ("… of
// Regulation (EU) 2017/745", "… of the MDR", "… of that Directive").
func (sc *refScanner) docAfter(end int) (string, int) {
	t := sc.text
	if m := refRe().otherDoc.FindStringSubmatchIndex(t[end:]); m != nil {
		return strings.ToLower(t[end+m[2]:end+m[3]]) + " (not named)", end + m[1]
	}
	if m := refRe().thereof.FindStringIndex(t[end:]); m != nil {
		return "the act named before (not named)", end + m[1]
	}
	m := refRe().docSep.FindStringIndex(t[end:])
	if m == nil {
		return "", end
	}
	j := end + m[1]
	if d, dend, ok := sc.docAt(j); ok {
		return d, dend
	}
	return "", end
}

// rangeWords are the separators of a range ("52 to 56", "(a)–(d)").
func isRangeSep(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "to", "through", "–", "—", "-", "до", "al", "a":
		return true
	}
	return false
}

// cluster reads the components of one reference at t[i:]; it returns the
// targets (one for each item of a list) and the end of the text read.
func (sc *refScanner) cluster(i int) ([]target, int) {
	t := sc.text
	var groups []struct{ alts []comp }
	j := i
	for {
		c, ok := parseCompAt(t, j)
		if !ok {
			break
		}
		g := struct{ alts []comp }{alts: []comp{c}}
		j = c.end
		// List items of the same kind.
		for {
			m := refRe().listNextRe.FindStringIndex(t[j:])
			if m == nil {
				break
			}
			k := j + m[1]
			item, ok := listItem(t, k, c)
			if !ok {
				break
			}
			if isRangeSep(t[j:k]) {
				g.alts = append(g.alts, expandRange(g.alts[len(g.alts)-1], item)...)
			}
			g.alts = append(g.alts, item)
			j = item.end
		}
		groups = append(groups, g)
		// The next component: inner ones follow directly or after a comma
		// ("Article 7(3)", "Article 7 (3)", "Annex I, 23.4 (d)"), outer
		// ones after "of" or in the genitive ("point (a) of Article 7",
		// "частью 1 статьи 3").
		k, connector := j, false
		if k >= len(t) {
			break
		}
		if t[k] != '(' {
			m := addrSyntax().sepRe.FindStringIndex(t[j:])
			if m == nil {
				break
			}
			k = j + m[1]
			connector = hasConnector(t[j:k])
		}
		nc, ok := parseCompAt(t, k)
		if !ok || hasKind(groups, nc.units[0].kind) {
			break
		}
		prev := c.rank()
		if (c.locator == "пункт" || c.locator == "подпункт") && c.units[0].kind == unitNumber && nc.genitive {
			// "п. 3 ч. 1 ст. 6": a point of a part.
			prev = addrUnit{kind: unitPunkt}.rank()
		}
		if connector || nc.genitive {
			if nc.rank() >= prev && !(nc.genitive && nc.rank() == prev) {
				break
			}
		} else if nc.rank() <= prev {
			break
		}
		j = k
	}
	if len(groups) == 0 {
		return nil, i
	}
	// One target per alternative of the first list; the other groups
	// contribute their first item.
	list := -1
	for gi, g := range groups {
		if len(g.alts) > 1 {
			list = gi
			break
		}
	}
	n := 1
	if list >= 0 {
		n = len(groups[list].alts)
	}
	out := make([]target, 0, n)
	for a := 0; a < n; a++ {
		var cs []comp
		for gi, g := range groups {
			if gi == list {
				cs = append(cs, g.alts[a])
			} else {
				cs = append(cs, g.alts[0])
			}
		}
		out = append(out, target{comps: cs, start: i, end: j})
	}
	return out, j
}

func hasConnector(sep string) bool { return refRe().connectorRe.MatchString(sep) }

// hasKind reports whether a keyword unit of kind is in the groups already
// ("Section 3 of Annex IX, Section 3 of Annex X" is two references).
func hasKind(groups []struct{ alts []comp }, kind unitKind) bool {
	if kind == unitParen || kind == unitNumber {
		return false
	}
	for _, g := range groups {
		for _, u := range g.alts[0].units {
			if u.kind == kind {
				return true
			}
		}
	}
	return false
}

// parseCompAt is parseComp where a component may start: at a word start,
// or at a parenthesis.
func parseCompAt(t string, j int) (comp, bool) {
	if j >= len(t) {
		return comp{}, false
	}
	if t[j] != '(' && !boundaryBefore(t, j) {
		return comp{}, false
	}
	c, ok := parseComp(t, j)
	if ok && len(c.units) == 1 && c.units[0].kind == unitNumber && c.locator == "" && !strings.Contains(c.units[0].id, ".") {
		return comp{}, false
	}
	return c, ok
}

// listItem reads the next item of a list whose first item is first: the
// same keyword left out ("Articles 5 and 6": "6"), or repeated.
func listItem(t string, k int, first comp) (comp, bool) {
	if k >= len(t) {
		return comp{}, false
	}
	if c, ok := parseCompAt(t, k); ok {
		if c.locator != "" && c.locator != first.locator {
			// "Article 78(14) and point (h) of …": a new reference.
			return comp{}, false
		}
		if first.units[0].kind == unitParen && c.units[0].kind == unitParen {
			// "(9)(b) and (c)": (c) replaces the last label only.
			if len(c.units) < len(first.units) {
				c.units = append(append([]addrUnit{}, first.units[:len(first.units)-len(c.units)]...), c.units...)
			}
			return c, true
		}
		if c.units[0].kind == first.units[0].kind {
			return c, true
		}
		return comp{}, false
	}
	last := first.units[len(first.units)-1]
	switch first.units[0].kind {
	case unitParen:
		return comp{}, false
	case unitArticle:
		if m := addrSyntax().articleID.FindStringIndex(t[k:]); m != nil && boundaryNumber(t, k+m[1]) {
			c := comp{units: []addrUnit{{kind: unitArticle, word: first.units[0].word, id: t[k : k+m[1]]}}, start: k, end: k + m[1]}
			// "Articles 5(2) and 6(1)".
			if ps, end := parseParens(t, c.end); len(ps) > 0 {
				c.units = append(c.units, ps...)
				c.end = end
			}
			return c, true
		}
	case unitAnnex, unitChapter, unitPart, unitTitle:
		if id, end, ok := divisionID(t, k, first.units[0].kind); ok && t[k] >= 'A' && t[k] <= 'Z' {
			return comp{units: []addrUnit{{kind: first.units[0].kind, word: first.units[0].word, id: id}}, start: k, end: end}, true
		}
	case unitRecital, unitChast:
		n := 0
		for k+n < len(t) && t[k+n] >= '0' && t[k+n] <= '9' && n < 4 {
			n++
		}
		if n > 0 && boundaryNumber(t, k+n) {
			return comp{units: []addrUnit{{kind: first.units[0].kind, word: first.units[0].word, id: t[k : k+n]}}, start: k, end: k + n}, true
		}
	case unitTable, unitFigure:
		if m := addrSyntax().tableID.FindStringIndex(t[k:]); m != nil && boundaryNumber(t, k+m[1]) {
			return comp{units: []addrUnit{{kind: first.units[0].kind, word: first.units[0].word, id: t[k : k+m[1]]}}, start: k, end: k + m[1]}, true
		}
	case unitNumber, unitSection, unitPunkt:
		if last.kind == unitPunkt {
			if m := addrSyntax().cyrPoint.FindStringSubmatchIndex(t[k:]); m != nil {
				g := 2
				if m[2] < 0 {
					g = 4
				}
				return comp{units: []addrUnit{{kind: unitPunkt, word: "пункт", id: t[k+m[g] : k+m[g+1]]}}, start: k, end: k + m[1], locator: first.locator}, true
			}
		}
		if m := addrSyntax().numberID.FindStringIndex(t[k:]); m != nil && boundaryNumber(t, k+m[1]) {
			id := t[k : k+m[1]]
			if first.locator == "" && !strings.Contains(id, ".") {
				return comp{}, false
			}
			return comp{units: []addrUnit{{kind: unitNumber, id: id}}, start: k, end: k + m[1], locator: first.locator, word: first.word}, true
		}
	}
	return comp{}, false
}

// maxRange bounds the items a range expands to.
const maxRange = 50

// expandRange returns the items strictly between a and b when both end in
// integers, Roman numerals or letters of the same kind ("52 to 56": 53,
// 54, 55; "(a) to (d)": (b), (c)).
func expandRange(a, b comp) []comp {
	ua, ub := a.units[len(a.units)-1], b.units[len(b.units)-1]
	if ua.kind != ub.kind {
		return nil
	}
	mk := func(id string) comp {
		c := comp{units: append([]addrUnit{}, b.units...), start: b.start, end: b.end, locator: b.locator, word: b.word}
		c.units[len(c.units)-1].id = id
		return c
	}
	var out []comp
	if x, err1 := strconv.Atoi(ua.id); err1 == nil {
		if y, err2 := strconv.Atoi(ub.id); err2 == nil && y > x && y-x <= maxRange {
			for v := x + 1; v < y; v++ {
				out = append(out, mk(strconv.Itoa(v)))
			}
		}
		return out
	}
	if x, ok1 := romanValue(ua.id); ok1 && ua.kind != unitParen {
		if y, ok2 := romanValue(ub.id); ok2 && y > x && y-x <= maxRange {
			for v := x + 1; v < y; v++ {
				out = append(out, mk(romanString(v)))
			}
		}
		return out
	}
	if len(ua.id) == 1 && len(ub.id) == 1 && unicode.IsLetter(rune(ua.id[0])) && ub.id[0] > ua.id[0] && ub.id[0]-ua.id[0] <= 26 {
		for c := ua.id[0] + 1; c < ub.id[0]; c++ {
			out = append(out, mk(string(rune(c))))
		}
	}
	return out
}

func romanValue(s string) (int, bool) {
	vals := map[byte]int{'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100}
	s = strings.ToUpper(s)
	total := 0
	for i := 0; i < len(s); i++ {
		v, ok := vals[s[i]]
		if !ok {
			return 0, false
		}
		if i+1 < len(s) && vals[s[i+1]] > v {
			total -= v
		} else {
			total += v
		}
	}
	return total, total > 0
}

func romanString(n int) string {
	var sb strings.Builder
	for _, p := range []struct {
		v int
		s string
	}{{100, "C"}, {90, "XC"}, {50, "L"}, {40, "XL"}, {10, "X"}, {9, "IX"}, {5, "V"}, {4, "IV"}, {1, "I"}} {
		for n >= p.v {
			sb.WriteString(p.s)
			n -= p.v
		}
	}
	return sb.String()
}

// documentAcronyms are the abbreviations a document defines for documents
// ("the Medical Device Regulation (MDR)", an abbreviation list line "MDR
// Medical Device Regulation"): references such as "MDR, Article 32 (1)"
// name that document.
func documentAcronyms(root *Element) map[string]bool {
	out := map[string]bool{}
	var walk func(e *Element)
	walk = func(e *Element) {
		for _, c := range e.Children {
			if isContainer(c.Kind) || len(c.Children) > 0 {
				walk(c)
				continue
			}
			t := c.Text
			for _, m := range refRe().acronymDef.FindAllStringSubmatchIndex(t, -1) {
				before := t[max(0, m[0]-80):m[0]]
				if loc := refRe().docTypeWord.FindAllStringIndex(before, -1); len(loc) > 0 {
					// The type word ends the phrase the abbreviation stands for.
					if last := loc[len(loc)-1]; len(strings.TrimSpace(before[last[1]:])) <= 3 {
						out[t[m[2]:m[3]]] = true
					}
				}
			}
			for _, line := range strings.Split(t, "\n") {
				if m := refRe().abbrevLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil && refRe().docTypeWord.MatchString(m[2]) {
					out[m[1]] = true
				}
			}
		}
	}
	walk(root)
	return out
}
