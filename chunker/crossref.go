package chunker

import (
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unicode"
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
	// Target is the address referred to, in canonical form (see
	// ParseAddress): "6.5.1", "A.1", "Article 5(2)", "Annex IX 3", "Table
	// 7.1", "Таблица 7.1", "Статья 3 часть 1", or relative to the element
	// the text is in ("(3)" for "paragraph 3"); an HTML id ("Method_sets")
	// for a link; "" when the reference names a whole document.
	Target string
	// Doc identifies another document when the reference is external
	// ("RFC 7230", "Regulation (EU) 2017/745", "MDR", "СП 1.13130",
	// "123-ФЗ", "ISO/IEC 5230", a linked file name or URL); "" for the
	// same document.
	Doc string
}

// CrossRefs returns the cross-references in the text and links of root's
// leaves, in document order. Textual references are read by the address
// grammar (see FindAddresses): "Section 6.4", "sections 3.1 and 3.2",
// "§3.1.4", "Clause 11", "Article 5(2)", "point (a) of Article 7(3)",
// "Section 3 of Annex IX", "Annexes II and III", "Articles 52 to 56",
// "Recital 43", "Table 7.1", "таблице 7.1", "Figure 3", "частью 1 статьи
// 3", "пункта «а» части 1 статьи 72", "apartado 4.1 de esta Sección",
// "see 4.1", "в соответствии с 5.2.3"; each Ref's Target is the address in
// canonical form, relative where the text is ("paragraph 3" gives "(3)",
// which Resolve reads inside the element's own article). A document named
// with the address makes the reference external: "Section 2.7 of
// [RFC7230]", "[RFC7230], Section 2.7", "Article 2(3) of Directive
// 2014/30/EU", "MDR, Article 32 (1)" (an abbreviation the document
// defines, see documentAcronyms); "Annex I to that Directive" has Doc
// "directive (not named)", kept and counted but never resolved. Citations
// of whole documents ("[RFC7230]", "RFC 2616", "Regulation (EC) No
// 178/2002", "ISO 14971:2012", "ГОСТ Р 12.3.047", "СП 1.13130", "123-ФЗ")
// give Refs with Doc set and no Target. Links: "#id" is a same-document
// target, "file.md#6.5" a target in another document, "http(s)://…" a
// document (Doc is the URL). A textual reference to the same target as a
// link of the same element is not repeated.
func CrossRefs(root *Element) []Ref {
	if root == nil {
		return nil
	}
	acr := documentAcronyms(root)
	var out []Ref
	var walk func(e *Element, path string)
	walk = func(e *Element, path string) {
		for _, c := range e.Children {
			p := joinPath(path, c.Address)
			if isContainer(c.Kind) || len(c.Children) > 0 {
				walk(c, p)
				continue
			}
			out = append(out, elementRefs(c, p, acr)...)
		}
	}
	walk(root, "")
	return out
}

func elementRefs(e *Element, from string, acr map[string]bool) []Ref {
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
	text := strings.NewReplacer("’", "'", "‘", "'").Replace(normalizeSpace(e.Text))
	if text == "" {
		return links
	}
	sc := refScanner{text: text, acronyms: acr}
	out := links
	for _, m := range sc.scan(nil) {
		if m.Doc == "" && m.Citation != "" && (linkTargets[m.Citation] || linkTargets[m.Text]) {
			continue
		}
		out = append(out, Ref{From: from, Text: m.Text, Target: m.Citation, Doc: m.Doc})
	}
	return out
}

// crossrefPatterns holds the patterns links and document identifiers are
// read with; crossrefRe compiles them.
type crossrefPatterns struct {
	footnoteMark, genericTitle, rfcFileName, rfcFrontLine, subjectRe *regexp.Regexp
	statedName, ruLawNumber                                          *regexp.Regexp
}

// crossrefRe returns the patterns of links and document identifiers,
// compiled on first use.
var crossrefRe = sync.OnceValue(func() *crossrefPatterns {
	return &crossrefPatterns{
		// footnoteMark is the visible text of a footnote call or back-link.
		footnoteMark: regexp.MustCompile(`^(?:\(\s*\*?\d{1,3}\s*\)|\[\s*\d{1,3}\s*\]|\d{1,3}|\*{1,3}|[↩↑†‡])$`),
		genericTitle: regexp.MustCompile(`^(?:abstract|introduction|contents|table-of-contents|preface|foreword|содержание|оглавление|введение|предисловие)$`),
		rfcFileName:  regexp.MustCompile(`(?i)^rfc[-_ ]?(\d{1,5})$`),
		rfcFrontLine: regexp.MustCompile(`Request for Comments:\s*(\d{1,5})`),
		// subjectRe: what an act's title says it is on, up to the first comma,
		// bracket, or "amending"/"repealing".
		subjectRe: regexp.MustCompile(`(?i)\bon (?:the )?([a-z][a-z -]{2,60}?)(?:,|\(| amending| repealing| and repealing| and amending|$)`),
		// statedName: a short name the title states in parentheses,
		// ending in the act's kind: "(General Data Protection Regulation)".
		statedName: regexp.MustCompile(`\(((?:\p{Lu}[\p{L}-]*\s+)(?:(?:\p{Lu}[\p{L}-]*|of|on|and|the|for|in)\s+){0,6}(?:Regulation|Directive|Act|Decision|Code|Convention|Law))\)`),
		// ruLawNumber: a Russian federal law's number, "N 152-ФЗ", "№ 2-ФКЗ".
		ruLawNumber: regexp.MustCompile(`(?:№|N)\s*(\d+(?:-\d+)?-Ф[КЗ]?З)`),
	}
})

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
	case strings.HasPrefix(h, "#") && crossrefRe().footnoteMark.MatchString(strings.TrimSpace(l.Text)):
		// A footnote call or its back-link: the note sits after the
		// element that calls it; no cross-reference.
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

// Resolve matches the same-document refs (Doc == "") to elements of root
// by address (Element.Citation, compared with AddressKey). A relative
// target is read first inside the element that holds the reference and
// each of its ancestors, innermost first ("paragraph 3" in Article 7 is
// "Article 7(3)"; "apartado 4.1 de esta Sección" in Sección SI 1 is
// "Sección SI 1 4.1"; "Section 4" in Annex IX is "Annex IX 4"), then as
// written. A point that is no element of its own resolves to the element
// that holds it ("Article 7(3)(a)" to "Article 7(3)"), a division that
// the document leaves out of the address is dropped ("Annex IX Chapter I
// 3" finds "Annex IX 3"), and "1.0" answers to "1" when no element has
// that number. Link targets that are HTML ids ("Method_sets") match the
// element segment they name. The first element in document order wins.
// resolved maps a ref's index in refs to the target's address path
// (relative to root, parts joined by PathSep); unresolved lists the
// indexes of same-document refs that matched nothing. Refs with Doc set
// are in neither: the pipeline resolves them by document identifier
// (DocumentIDs).
func Resolve(root *Element, refs []Ref) (resolved map[int]string, unresolved []int) {
	resolved = map[int]string{}
	idx := NewAddressIndex(root)
	for i, r := range refs {
		if r.Doc != "" {
			continue
		}
		if p, ok := idx.Resolve(r.From, r.Target); ok {
			resolved[i] = p
		} else {
			unresolved = append(unresolved, i)
		}
	}
	return resolved, unresolved
}

// AddressIndex finds the elements of one document by address.
type AddressIndex struct {
	byKey     map[string]string // AddressKey(Citation) → path
	bySegment map[string]string // lower-cased segment address or id → path
	cite      map[string]string // path → Citation
}

// NewAddressIndex indexes the elements under root by their citations and
// segment addresses.
func NewAddressIndex(root *Element) *AddressIndex {
	idx := &AddressIndex{byKey: map[string]string{}, bySegment: map[string]string{}, cite: map[string]string{}}
	put := func(m map[string]string, k, path string) {
		if _, ok := m[k]; !ok && k != "" {
			m[k] = path
		}
	}
	var aliases [][2]string
	var walk func(e *Element, path string)
	walk = func(e *Element, path string) {
		for _, c := range e.Children {
			p := joinPath(path, c.Address)
			if c.Citation != "" {
				idx.cite[p] = c.Citation
				put(idx.byKey, foldKey(c.Citation), p)
				if strings.HasSuffix(c.Citation, ".0") && isNumberAddress(c.Citation) {
					aliases = append(aliases, [2]string{strings.TrimSuffix(c.Citation, ".0"), p})
				}
			}
			addr := c.Address
			if i := strings.Index(addr, "~"); i > 0 {
				addr = addr[:i]
			}
			if !isLeafKey(addr) {
				put(idx.bySegment, strings.ToLower(addr), p)
			}
			if isContainer(c.Kind) {
				if a, ok := annexAddress(c.Title); ok {
					put(idx.byKey, AddressKey(a), p)
				}
			}
			walk(c, p)
		}
	}
	if root != nil {
		walk(root, "")
	}
	for _, a := range aliases {
		put(idx.byKey, foldKey(a[0]), a[1])
	}
	return idx
}

// Citation is the citation of the element at path ("" for none).
func (idx *AddressIndex) Citation(path string) string { return idx.cite[path] }

// Lookup finds the element with the address (as typed or canonical); it
// returns its path.
func (idx *AddressIndex) Lookup(address string) (string, bool) {
	p, ok := idx.byKey[AddressKey(address)]
	return p, ok
}

// Resolve finds the element a reference from the element at path from
// means by target (see Resolve for the rules); from may be "".
func (idx *AddressIndex) Resolve(from, target string) (string, bool) {
	if strings.TrimSpace(target) == "" {
		return "", false
	}
	units, ok := unitsOf(target)
	if !ok {
		if p, ok := idx.bySegment[strings.ToLower(target)]; ok {
			return p, true
		}
		p, ok := idx.byKey[AddressKey(target)]
		return p, ok
	}
	try := func(us []addrUnit) (string, bool) {
		if len(us) == 0 {
			return "", false
		}
		if relative(us[0]) {
			for p := from; p != ""; p = parentPath(p) {
				c := idx.cite[p]
				if c == "" {
					continue
				}
				if path, ok := idx.byKey[foldKey(joinCitation(c, us))]; ok && path != from {
					return path, true
				}
			}
		}
		p, ok := idx.byKey[foldKey(formatUnits(us))]
		return p, ok
	}
	if p, ok := try(units); ok {
		return p, true
	}
	// A division the document leaves out of its addresses.
	var slim []addrUnit
	for _, u := range units {
		if !u.isDivision() || u == units[len(units)-1] {
			slim = append(slim, u)
		}
	}
	if len(slim) < len(units) {
		if p, ok := try(slim); ok {
			return p, true
		}
	}
	// A point that is no element of its own: the element that holds it.
	for n := len(units) - 1; n >= 1; n-- {
		k := units[n].kind
		if k != unitParen && k != unitPunkt && k != unitChast {
			break
		}
		if p, ok := try(units[:n]); ok {
			return p, true
		}
	}
	if p, ok := idx.bySegment[strings.ToLower(target)]; ok {
		return p, true
	}
	return "", false
}

// unitsOf parses a canonical target into its units.
func unitsOf(target string) ([]addrUnit, bool) {
	t := quotePunkt(normalizeSpace(target))
	var cs []comp
	for i := 0; i < len(t); {
		i = spaces(t, i)
		if i >= len(t) {
			break
		}
		c, ok := parseComp(t, i)
		if !ok {
			if m := addrSyntax().numberID.FindStringIndex(t[i:]); m != nil && boundaryNumber(t, i+m[1]) {
				c = comp{units: []addrUnit{{kind: unitNumber, id: t[i : i+m[1]]}}, start: i, end: i + m[1]}
			} else {
				return nil, false
			}
		}
		cs = append(cs, c)
		i = c.end
	}
	if len(cs) == 0 {
		return nil, false
	}
	var out []addrUnit
	for _, c := range cs {
		out = append(out, c.units...)
	}
	return out, true
}

// relative reports whether an address that starts with u may be part of
// the element that cites it.
func relative(u addrUnit) bool {
	switch u.kind {
	case unitParen, unitChast, unitPunkt, unitNumber, unitTable, unitFigure, unitSection, unitChapter, unitPart:
		return true
	}
	return false
}

// joinCitation appends units to a citation.
func joinCitation(c string, us []addrUnit) string {
	rest := formatUnits(us)
	if us[0].kind == unitParen {
		return c + rest
	}
	return c + " " + rest
}

func parentPath(p string) string {
	if i := strings.LastIndex(p, PathSep); i >= 0 {
		return p[:i]
	}
	return ""
}

// DocumentIDs guesses the identifiers other documents use to cite this
// one, most specific first, without duplicates: "RFC 7231" from the file
// name (rfc7231.txt) or the front matter ("Request for Comments: 7231" in
// the first leaves); the act's type and number from its title
// ("REGULATION (EU) 2017/745 OF THE EUROPEAN PARLIAMENT …" gives
// "Regulation (EU) 2017/745" and "2017/745"), and the short name the
// title implies ("… on medical devices" gives "Medical Devices
// Regulation" and its abbreviation "MDR", which guidance cites); the base
// file name ("spdx-2.3-package-information.md", as relative links cite
// it); and the document's title (root.Title, else the first section
// title, else the first paragraph when it is short), which is how prose
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
	if m := crossrefRe().rfcFileName.FindStringSubmatch(stem); m != nil {
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
			if m := crossrefRe().rfcFrontLine.FindStringSubmatch(c.Text); m != nil {
				add("RFC " + m[1])
			}
			if title == "" && leaves == 1 && utf8.RuneCountInString(strings.TrimSpace(c.Text)) <= 120 {
				title = c.Text
			}
		}
	}
	if root != nil {
		if root.Title != "" {
			title = root.Title
		}
		walk(root)
	}
	stated := statedNames(title)
	for _, id := range ruActIDs(title) {
		add(id)
	}
	if id, rest, ok := actID(title); ok {
		add(id)
		if i := strings.LastIndexByte(id, ' '); i > 0 {
			add(id[i+1:])
		}
		// A title that states the act's short name gives it; otherwise
		// the name is read from what the title says the act is on.
		if name, abbr := shortName(id, rest); name != "" && len(stated) == 0 {
			add(abbr)
			add(name)
		}
	}
	for _, n := range stated {
		add(n)
	}
	if fileName != "" && base != "." {
		add(base)
	}
	if !crossrefRe().genericTitle.MatchString(slug(title)) {
		add(title)
	}
	return out
}

// statedNames are the short names an act's title states itself: a
// parenthesised name ending in the act's kind ("… (General Data Protection
// Regulation)") with its initials ("GDPR"), and a Russian federal law's
// number ("Федеральный закон от 27.07.2006 N 152-ФЗ" → "152-ФЗ",
// "Федеральный закон № 152-ФЗ").
func statedNames(title string) []string {
	var out []string
	for _, m := range crossrefRe().statedName.FindAllStringSubmatch(title, -1) {
		name := normalizeSpace(m[1])
		out = append(out, name)
		var abbr strings.Builder
		for _, w := range strings.Fields(name) {
			if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) {
				abbr.WriteRune(r)
			}
		}
		if abbr.Len() >= 2 {
			out = append(out, abbr.String())
		}
	}
	if m := crossrefRe().ruLawNumber.FindStringSubmatch(title); m != nil {
		out = append(out, m[1], "Федеральный закон № "+m[1])
	}
	return out
}

// actID finds the identifier of an act at the start of its title
// ("REGULATION (EU) 2017/745 OF THE EUROPEAN PARLIAMENT …") in canonical
// form, and the rest of the title.
func actID(title string) (string, string, bool) {
	t := normalizeSpace(title)
	for i := 0; i < len(t) && i < 40; i++ {
		if !boundaryBefore(t, i) {
			continue
		}
		if d, end, ok := matchDoc(t, i); ok {
			return d, t[end:], true
		}
	}
	return "", "", false
}

// shortName is the name an act is known by, from what its title says it
// is on: "Regulation (EU) 2017/745", "… on medical devices, amending …"
// → "Medical Devices Regulation", "MDR".
func shortName(id, rest string) (string, string) {
	kind := strings.Fields(id)[0]
	m := crossrefRe().subjectRe.FindStringSubmatch(rest)
	if m == nil {
		return "", ""
	}
	words := strings.Fields(m[1])
	if len(words) == 0 || len(words) > 5 {
		return "", ""
	}
	var name, abbr strings.Builder
	for _, w := range words {
		if len(w) <= 3 && (w == "the" || w == "of" || w == "and" || w == "for" || w == "on" || w == "in") {
			name.WriteString(w + " ")
			continue
		}
		r, n := utf8.DecodeRuneInString(w)
		name.WriteString(strings.ToUpper(string(r)) + w[n:] + " ")
		abbr.WriteString(strings.ToUpper(string(r)))
	}
	name.WriteString(kind)
	abbr.WriteString(strings.ToUpper(kind[:1]))
	return name.String(), abbr.String()
}
