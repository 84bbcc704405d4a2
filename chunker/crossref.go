package chunker

import (
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Ref is a cross-reference found in a document's text or links.
type Ref struct {
	// From is the address path (relative to root, parts joined by PathSep)
	// of the element whose text holds the reference.
	From string
	// Text is the matched text ("Section 2.7 of [RFC7230]", "статьи 65",
	// or a link's visible text).
	Text string
	// Target is the normalized target: a clause number ("6.5.1", "A.1"), a
	// label ("Table 7.1", "Таблица 7.1", "Figure 3", "Annex A", "Appendix B",
	// "Приложение I", "Статья 65"), an HTML id ("Method_sets"), or "" when
	// the reference names a whole document.
	Target string
	// Doc identifies another document when the reference is external
	// ("RFC 7230", "СП 1.13130", "123-ФЗ", "ISO/IEC 5230", a linked file
	// name or URL); "" for the same document.
	Doc string
}

const numRe = `\d{1,3}(?:\.\d{1,3})*`

// refPattern is one kind of textual reference. Patterns are tried in order
// and a later pattern never matches inside an earlier pattern's match.
type refPattern struct {
	re *regexp.Regexp
	// make builds the refs of one match (sub are the submatch strings);
	// rest is the text after the match, for lists ("Sections 3.1 and 3.2").
	make func(sub []string) (target, doc string)
	list bool // numbers after the match joined by ",", "and", "or", "и" are more targets
}

var (
	listNext = regexp.MustCompile(`^(?:,\s*|\s*,?\s+(?:and|or|и|или)\s+)(` + numRe + `)\b`)

	refPatterns = []refPattern{
		// "Section 2.7 of [RFC7230]", "Appendix B of RFC 7230".
		{re: regexp.MustCompile(`\b(?:Sections?|Appendix|§)\s*(` + numRe + `|[A-Z](?:\.\d{1,3})*)\s+(?:of|in)\s+(\[[A-Za-z][\w.\-]*\]|RFC\s?\d{1,5})`),
			make: func(s []string) (string, string) { return s[1], docLabel(s[2]) }},
		// "[RFC7230], Section 2.7", "[RFC7231], Section 3.1.1.1".
		{re: regexp.MustCompile(`(\[[A-Za-z][\w.\-]*\]|RFC\s?\d{1,5}),?\s+(?:Sections?|§)\s*(` + numRe + `)`),
			make: func(s []string) (string, string) { return s[2], docLabel(s[1]) }},
		// "Section 6.4", "sections 3.1 and 3.2", "§3.1.4".
		{re: regexp.MustCompile(`(?:\b[Ss]ections?\s+|§\s*)(` + numRe + `)\b`), list: true,
			make: func(s []string) (string, string) { return s[1], "" }},
		// "Clause 11", "subclause 7.1.2".
		{re: regexp.MustCompile(`\b(?:[Ss]ub)?[Cc]lauses?\s+(` + numRe + `)\b`), list: true,
			make: func(s []string) (string, string) { return s[1], "" }},
		// "Appendix B", "Annex A", "Приложение I", "приложения А.2".
		{re: regexp.MustCompile(`(Appendix|Annex|Приложени[еяюи]|приложени[еяюи])\s+([A-ZА-Я]|[IVX]{1,5})(\.\d{1,3}(?:\.\d{1,3})*)?\b`),
			make: func(s []string) (string, string) {
				if s[3] != "" {
					return s[2] + s[3], ""
				}
				return annexLabel(s[1], s[2]), ""
			}},
		// "Table 7.1", "таблице 7.1", "табл. 3".
		{re: regexp.MustCompile(`(Tables?|TABLE|[Тт]аблиц[аеуыи]|[Тт]абл\.)\s*((?:[A-ZА-Я]\.)?` + numRe + `)\b`),
			make: func(s []string) (string, string) {
				if strings.HasPrefix(strings.ToLower(s[1]), "т") {
					return "Таблица " + s[2], ""
				}
				return "Table " + s[2], ""
			}},
		// "Figure 3", "рисунке 2".
		{re: regexp.MustCompile(`(Figures?|[Рр]исун(?:ок|ке|ка|ку))\s+((?:[A-ZА-Я]\.)?` + numRe + `)\b`),
			make: func(s []string) (string, string) {
				if strings.HasPrefix(strings.ToLower(s[1]), "р") {
					return "Рисунок " + s[2], ""
				}
				return "Figure " + s[2], ""
			}},
		// "частью 1 статьи 3", "статьи 65", "статьями 71 и 72".
		{re: regexp.MustCompile(`(?i)(?:(?:част(?:ь|и|ью|ям|ями|ях)|пункт(?:а|ом|у|ах|ами)?)\s+(?:(?:\d{1,3}|"[а-я]"|«[а-я]»|[а-я]\))\s+)?)?стать(?:я|и|ей|ю|е|ям|ях|ями)\s+(\d{1,3}(?:\.\d{1,2})?)\b`), list: true,
			make: func(s []string) (string, string) { return "Статья " + s[1], "" }},
		// "see 4.1", "(see 6.5.1)".
		{re: regexp.MustCompile(`\b[Ss]ee\s+(\d{1,3}(?:\.\d{1,3})+)\b`), list: true,
			make: func(s []string) (string, string) { return s[1], "" }},
		// "в соответствии с 5.2.3", "согласно пункту 4.1", "см. 3.2",
		// "указанную в требовании 1.4", "Раздел 2".
		{re: regexp.MustCompile(`(?:в соответствии с|согласно|см\.)\s+(?:(?:пункт\p{L}*|подпункт\p{L}*|п\.|раздел\p{L}*|требовани\p{L}*)\s*)?(\d{1,3}(?:\.\d{1,3})+)\b`), list: true,
			make: func(s []string) (string, string) { return s[1], "" }},
		{re: regexp.MustCompile(`(?:[Пп]ункт\p{L}*|[Пп]одпункт\p{L}*|(?:^|\s)п\.|[Тт]ребовани\p{L}*)\s*(\d{1,3}(?:\.\d{1,3})+)\b`), list: true,
			make: func(s []string) (string, string) { return s[1], "" }},
		{re: regexp.MustCompile(`[Рр]аздел\p{L}*\s+(` + numRe + `)\b`), list: true,
			make: func(s []string) (string, string) { return s[1], "" }},
		// Citations of whole documents.
		{re: regexp.MustCompile(`\[RFC\s?(\d{1,5})\]|\bRFC\s(\d{2,5})\b`),
			make: func(s []string) (string, string) { return "", "RFC " + s[1] + s[2] }},
		{re: regexp.MustCompile(`СП\s+(\d{1,3}\.\d{3,6})\b`),
			make: func(s []string) (string, string) { return "", "СП " + s[1] }},
		{re: regexp.MustCompile(`ГОСТ(?:\s+Р)?(?:\s+(?:ИСО|ISO|МЭК|IEC)(?:/(?:МЭК|IEC))?)?\s+\d{1,6}(?:[.\-–]\d{1,6})*`),
			make: func(s []string) (string, string) { return "", normalizeSpace(s[0]) }},
		{re: regexp.MustCompile(`(\d{1,4}-ФЗ)`),
			make: func(s []string) (string, string) { return "", s[1] }},
		{re: regexp.MustCompile(`\bISO/IEC\s+(\d{3,5}(?:-\d{1,3})?)`),
			make: func(s []string) (string, string) { return "", "ISO/IEC " + s[1] }},
	}
)

var rfcLabel = regexp.MustCompile(`^RFC\s?(\d+)$`)

// docLabel turns a citation label into a document identifier: "[RFC7230]"
// and "RFC 7230" → "RFC 7230", "[HTML5]" → "HTML5".
func docLabel(l string) string {
	l = strings.Trim(l, "[]")
	if m := rfcLabel.FindStringSubmatch(l); m != nil {
		return "RFC " + m[1]
	}
	return l
}

// annexLabel capitalises the keyword and puts it in the nominative:
// "приложения", "А" → "Приложение А".
func annexLabel(kw, id string) string {
	switch strings.ToLower(kw)[:2] {
	case "ap":
		return "Appendix " + id
	case "an":
		return "Annex " + id
	}
	return "Приложение " + id
}

// CrossRefs returns the cross-references in the text and links of root's
// leaves, in document order. Textual patterns (tried in this order, none
// inside an earlier match): "Section X of [DOC]" and "[DOC], Section X"
// (external), "Section(s) X", "§X", "Clause X", "Appendix/Annex/Приложение
// X", "Table/Таблица X", "Figure/Рисунок X", Russian article references
// ("частью 1 статьи 3" → "Статья 3"), "see X.Y", "в соответствии с X.Y",
// "пункт X.Y", "требовании X.Y", "Раздел X", and whole-document citations
// ("[RFC7230]", "RFC 2616", "СП 1.13130", "ГОСТ Р 12.3.047", "123-ФЗ",
// "ISO/IEC 5230"). Lists after a number ("Sections 3.1 and 3.2", "статьями
// 71 и 72") give one Ref per number. Links: "#id" is a same-document
// target, "file.md#6.5" a target in another document, "http(s)://…" a
// document (Doc is the URL). A textual reference to the same target as a
// link of the same element is not repeated.
func CrossRefs(root *Element) []Ref {
	if root == nil {
		return nil
	}
	var out []Ref
	var walk func(e *Element, path string)
	walk = func(e *Element, path string) {
		for _, c := range e.Children {
			p := joinPath(path, c.Address)
			if isContainer(c.Kind) {
				walk(c, p)
				continue
			}
			out = append(out, elementRefs(c, p)...)
		}
	}
	walk(root, "")
	return out
}

type span struct {
	start int
	ref   Ref
}

func elementRefs(e *Element, from string) []Ref {
	var links []Ref
	linkTargets := map[string]bool{} // targets and texts of the element's links
	for _, l := range e.Links {
		linkTargets[strings.TrimSpace(l.Text)] = true
		r, ok := linkRef(l, from)
		if !ok {
			continue
		}
		links = append(links, r)
		if r.Target != "" {
			linkTargets[r.Target] = true
		}
	}
	text := normalizeSpace(e.Text)
	if text == "" {
		return links
	}
	var used [][2]int
	overlaps := func(a, b int) bool {
		for _, u := range used {
			if a < u[1] && b > u[0] {
				return true
			}
		}
		return false
	}
	var found []span
	for _, p := range refPatterns {
		for _, loc := range p.re.FindAllStringSubmatchIndex(text, -1) {
			if overlaps(loc[0], loc[1]) {
				continue
			}
			sub := make([]string, len(loc)/2)
			for i := range sub {
				if loc[2*i] >= 0 {
					sub[i] = text[loc[2*i]:loc[2*i+1]]
				}
			}
			target, doc := p.make(sub)
			end := loc[1]
			add := func(start, end int, target string) {
				if doc == "" && target != "" && linkTargets[target] {
					return
				}
				found = append(found, span{start: start, ref: Ref{From: from, Text: text[start:end], Target: target, Doc: doc}})
			}
			add(loc[0], end, target)
			if p.list {
				for {
					m := listNext.FindStringSubmatchIndex(text[end:])
					if m == nil {
						break
					}
					n := text[end+m[2] : end+m[3]]
					t := n
					if strings.HasPrefix(target, "Статья ") {
						t = "Статья " + n
					}
					add(end+m[2], end+m[3], t)
					end += m[1]
				}
			}
			used = append(used, [2]int{loc[0], end})
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].start < found[j].start })
	out := links
	for _, f := range found {
		out = append(out, f.ref)
	}
	return out
}

// linkRef turns a hyperlink into a Ref; ok is false for links that point
// nowhere useful (empty, mailto:, javascript:).
func linkRef(l Link, from string) (Ref, bool) {
	h := strings.TrimSpace(l.Href)
	text := l.Text
	if text == "" {
		text = h
	}
	switch {
	case h == "" || h == "#":
		return Ref{}, false
	case strings.HasPrefix(h, "#"):
		frag, err := url.PathUnescape(h[1:])
		if err != nil {
			frag = h[1:]
		}
		return Ref{From: from, Text: text, Target: frag}, true
	case strings.HasPrefix(h, "mailto:") || strings.HasPrefix(h, "javascript:"):
		return Ref{}, false
	case strings.Contains(h, "://"):
		return Ref{From: from, Text: text, Doc: h}, true
	}
	doc, frag, _ := strings.Cut(h, "#")
	return Ref{From: from, Text: text, Target: frag, Doc: doc}, true
}

// refKey normalizes a target or an address for matching: lower case,
// "Таблица"/"Table" → "table", "Рисунок"/"Figure" → "figure",
// "Annex"/"Appendix"/"Приложение" → "annex"; Cyrillic letters that look
// like Latin ones in annex labels are kept as they are.
func refKey(s string) string {
	s = strings.ToLower(normalizeSpace(s))
	for _, r := range [][2]string{
		{"таблица ", "table "}, {"рисунок ", "figure "}, {"appendix ", "annex "}, {"приложение ", "annex "},
	} {
		if strings.HasPrefix(s, r[0]) {
			s = r[1] + s[len(r[0]):]
		}
	}
	return s
}

// Resolve matches the same-document refs (Doc == "") to elements of root:
// section and clause numbers ("6.5.1"; "1.0" also answers to "1" when no
// other element has that number), table and figure labels, annexes
// ("Appendix A" finds a section addressed "A" whose title starts with
// "Appendix A", or an annex addressed "Приложение А"), articles
// ("Статья 65"), and HTML ids. The first element in document order wins.
// resolved maps a ref's index in refs to the target's address path
// (relative to root, parts joined by PathSep); unresolved lists the indexes
// of same-document refs that matched nothing. Refs with Doc set are in
// neither: the pipeline resolves them by document identifier (DocumentIDs).
func Resolve(root *Element, refs []Ref) (resolved map[int]string, unresolved []int) {
	resolved = map[int]string{}
	index := map[string]string{}
	aliases := map[string]string{}
	put := func(m map[string]string, k, path string) {
		if _, ok := m[k]; !ok && k != "" {
			m[k] = path
		}
	}
	var walk func(e *Element, path string)
	walk = func(e *Element, path string) {
		for _, c := range e.Children {
			p := joinPath(path, c.Address)
			addr := c.Address
			if i := strings.Index(addr, "~"); i > 0 {
				addr = addr[:i]
			}
			switch {
			case isContainer(c.Kind):
				put(index, refKey(addr), p)
				if strings.HasSuffix(addr, ".0") && isNumberAddress(addr) {
					put(aliases, strings.TrimSuffix(addr, ".0"), p)
				}
				if a, ok := annexAddress(c.Title); ok {
					put(index, refKey(a), p)
				}
				walk(c, p)
			case c.Kind == KindClause || c.Kind == KindTable || c.Kind == KindCaption:
				if !leafOrdinal.MatchString(addr) {
					put(index, refKey(addr), p)
				}
			}
		}
	}
	if root != nil {
		walk(root, "")
	}
	for k, v := range aliases {
		put(index, k, v)
	}
	for i, r := range refs {
		if r.Doc != "" {
			continue
		}
		if p, ok := index[refKey(r.Target)]; ok {
			resolved[i] = p
		} else {
			unresolved = append(unresolved, i)
		}
	}
	return resolved, unresolved
}

// leafOrdinal matches the ordinal addresses builder gives leaves ("p3").
var leafOrdinal = regexp.MustCompile(`^[plctnkf]\d+$`)

var (
	genericTitle = regexp.MustCompile(`^(?:abstract|introduction|contents|table-of-contents|preface|foreword|содержание|оглавление|введение|предисловие)$`)
	rfcFileName  = regexp.MustCompile(`(?i)^rfc[-_ ]?(\d{1,5})$`)
	rfcFrontLine = regexp.MustCompile(`Request for Comments:\s*(\d{1,5})`)
)

// DocumentIDs guesses the identifiers other documents use to cite this
// one, most specific first, without duplicates: "RFC 7231" from the file
// name (rfc7231.txt) or the front matter ("Request for Comments: 7231" in
// the first leaves); the base file name ("spdx-2.3-package-information.md",
// as relative links cite it); and the document's title (the first section
// title, or the first paragraph when it is short), which is how prose
// cites a specification. fileName may be a path.
func DocumentIDs(root *Element, fileName string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		s = normalizeSpace(s)
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	base := filepath.Base(fileName)
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	if m := rfcFileName.FindStringSubmatch(stem); m != nil {
		add("RFC " + m[1])
	}
	var title string
	leaves := 0
	var walk func(e *Element)
	walk = func(e *Element) {
		for _, c := range e.Children {
			if leaves > 40 {
				return
			}
			if isContainer(c.Kind) {
				if title == "" {
					title = c.Title
				}
				walk(c)
				continue
			}
			leaves++
			if m := rfcFrontLine.FindStringSubmatch(c.Text); m != nil {
				add("RFC " + m[1])
			}
			if title == "" && leaves == 1 && utf8.RuneCountInString(strings.TrimSpace(c.Text)) <= 120 {
				title = c.Text
			}
		}
	}
	if root != nil {
		walk(root)
	}
	if fileName != "" && base != "." {
		add(base)
	}
	if !genericTitle.MatchString(slug(title)) {
		add(title)
	}
	return out
}
