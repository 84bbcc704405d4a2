package chunker

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Term is a term a document defines.
type Term struct {
	// Name is the term as written, without quotes or clause number
	// ("Component Records", "Артефакты соответствия").
	Name string
	// Definition is the defining text: the first paragraph of a term's own
	// sub-section, or the rest of a definition sentence after the separator.
	Definition string
	// Address is the address path of the defining element relative to root,
	// parts joined by PathSep ("2 › 2.1").
	Address string
}

// termsPatterns holds the patterns of definitions sections and defined
// terms; termsRe compiles them.
type termsPatterns struct {
	definitionsTitle, quotedDef, termRefersTo, plainDef, meansDef *regexp.Regexp
	acronymDefLine, leadLabel, quotedMeans                        *regexp.Regexp
}

// termsRe returns the patterns of definitions sections and defined terms,
// compiled on first use.
var termsRe = sync.OnceValue(func() *termsPatterns {
	return &termsPatterns{
		// definitionsTitle matches the title of a definitions section.
		definitionsTitle: regexp.MustCompile(`(?i)\b(?:terms|definitions|terminology|glossary|abbreviations|acronyms|definiciones|terminología|glosario|abreviaturas|définitions|terminologie|begriffsbestimmungen|glossar)\b|(?:^|\s)(?:термины|определения|терминология|глоссарий|основные понятия|понятия|сокращения)`),
		// quotedDef: `"X" - …`, `«X» — …`, `“X”: …`, `‘X’ means …` at the start
		// of a paragraph (after a point label).
		quotedDef: regexp.MustCompile(`^["“«‘']((?:[^"”»’']|[’']\pL){1,80})["”»’']\s*(?:or\s+["“«‘']([^"”»’']{1,80})["”»’']\s*)?(?:\(\s*["“«‘']?([^"”»’'()]{1,20}?)["”»’']?\s*\)\s*)?(?:,[^,]{1,120},\s*)?(?:[-–—:]|means\b|refers to\b|is defined as\b|shall mean\b|is\b|are\b|означает\b|significa\b|désigne\b|bezeichnet\b|—)\s*(\S.*)$`),
		// quotedMeans: `‘X’ of the data subject means …`: a quoted term
		// followed by a few words that qualify it, then a defining verb.
		quotedMeans: regexp.MustCompile(`^["“«‘']((?:[^"”»’']|[’']\pL){1,80})["”»’'](?:\s+[\pL\pN-]+){1,6}\s+(?:means|shall mean|refers to|is defined as|означает|significa|désigne|bezeichnet)\s+(\S.*)$`),
		// termRefersTo: `The term "X" refers to …` / `The term "X" means …`.
		termRefersTo: regexp.MustCompile(`(?i)\bthe term ["“‘]([^"”’]{1,60})["”’]\s+(?:refers to|means|is used to (?:refer to|mean)|denotes)\s+(\S[^.]*\.?)`),
		// plainDef: `X — …`, `X - …` or `X: …` with a short X; only inside
		// definitions sections.
		plainDef: regexp.MustCompile(`^(\pL[^:—–"“«.;]{0,60}?)\s*(?::|\s[—–-])\s+(\S.*)$`),
		// meansDef: `X means …` (an unquoted term, as the OJ printed them in
		// italics); only inside definitions sections.
		meansDef: regexp.MustCompile(`^(\pL[^,;:.]{0,60}?)\s+(?:means|shall mean|significa|означает|désigne)\s+(\S.*)$`),
		// acronymDefLine: an abbreviation list line, "CMR carcinogenic, …".
		acronymDefLine: regexp.MustCompile(`^([A-Z][A-Z0-9-]{1,9}(?:\s[A-Z]{2,5})?)\s+(\pL.{2,200})$`),
		// leadLabel: a point label or clause number before a definition
		// ("(1) ", "1. ", "a) ", "3.1 ").
		leadLabel: regexp.MustCompile(`^(?:\(\s*[0-9a-zа-я]{1,4}\s*\)|[0-9a-zа-я]{1,3}[.)]|\d{1,3}[.-]\d{1,2}\)|\d{1,3}(?:\.\d{1,3})+\.?)\s+`),
	}
})

// Terms returns the terms root defines, in document order:
//
//   - In a definitions section (its title names terms, definitions,
//     terminology, a glossary or abbreviations, in English, Spanish,
//     French, German or Russian: "Article 2 Definitions", "Anejo SI A
//     Terminología", "3 Термины и определения", "Статья 2. Основные
//     понятия"): every sub-section with a short title is one term, named by
//     its title without the number ("2.1 - Component Records" →
//     "Component Records") and defined by its first paragraph; without
//     sub-sections, every paragraph or point that reads `"X" - …`, `X: …`,
//     `X — …`, `X means …` (X at most 8 words, after any point label or
//     clause number), or an abbreviation line ("CMR carcinogenic, …").
//   - Anywhere: a paragraph or point that starts with a quoted term and a
//     dash or "means" (`"Артефакты соответствия" - …`, "(1) ‘medical
//     device’ means …"; an abbreviation in brackets after the term,
//     "‘Unique Device Identifier’ (‘UDI’) means …", is a term too), and RFC
//     phrasing `The term "X" refers to …`.
//
// Precision comes first: sentences that merely mention a word in quotes are
// not terms. A term defined twice keeps its first definition.
func Terms(root *Element) []Term {
	if root == nil {
		return nil
	}
	var out []Term
	seen := map[string]bool{}
	add := func(name, def, addr string) {
		name = strings.TrimSpace(name)
		key := strings.ToLower(name)
		if name == "" || seen[key] || utf8.RuneCountInString(name) > 80 || len(strings.Fields(name)) > 8 || strings.TrimSpace(def) == "" {
			return
		}
		seen[key] = true
		out = append(out, Term{Name: name, Definition: strings.TrimSpace(def), Address: addr})
	}
	var walk func(e *Element, path string, inDefs bool)
	walk = func(e *Element, path string, inDefs bool) {
		isDefs := inDefs || (isContainer(e.Kind) && e.Kind != KindDocument && termsRe().definitionsTitle.MatchString(stripNumber(e.Title)))
		hasSub := false
		for _, c := range e.Children {
			hasSub = hasSub || c.Kind == KindSection
		}
		// A glossary that sets each term on a line of its own, its
		// definition in the paragraph below: the pending term line.
		// A pending line with no definition below that reads as an
		// abbreviation and its expansion ("FSCA field safety corrective
		// action") is that.
		var termLine, termPath string
		endTermLine := func() {
			if abbr, expansion, ok := abbreviationLine(termLine); ok {
				add(abbr, expansion, termPath)
			}
			termLine = ""
		}
		for _, c := range e.Children {
			p := joinPath(path, c.Address)
			if termLine != "" {
				if c.Kind == KindParagraph || c.Kind == KindClause {
					if def := normalizeSpace(c.Text); def != "" && !isTermLine(def) && !isAbbreviationLine(def) {
						add(termLine, def, termPath)
						termLine = ""
						continue
					}
				}
				endTermLine()
			}
			if c.Kind == KindTable && isDefs && !hasSub {
				tableTerms(c, p, add)
				continue
			}
			if c.Kind == KindSection || c.Kind == KindAnnex {
				if u, ok := unitOf(c.Address); isDefs && hasSub && !(ok && u.kind != unitNumber) {
					// Sub-sections are terms; articles and chapters of a
					// "Scope and definitions" chapter are not.
					name := stripNumber(c.Title)
					if def := firstText(c); def != "" && name != "" && !strings.HasSuffix(name, ":") {
						add(name, def, p)
					}
				}
				walk(c, p, false)
				continue
			}
			if len(c.Children) > 0 {
				// A point or paragraph with sub-points: its own text first.
				walk(c, p, isDefs && !hasSub)
				continue
			}
			if c.Kind != KindParagraph && c.Kind != KindClause {
				continue
			}
			text := normalizeSpace(c.Text)
			body := termsRe().leadLabel.ReplaceAllString(text, "")
			if m := termsRe().quotedDef.FindStringSubmatch(body); m != nil {
				if strings.Trim(m[4], ":;,. ") == "" {
					// "‘business premises’ means:" and its points.
					m[4] = restText(e, c)
				}
				// The term, an alternative name ("‘CE marking of
				// conformity’ or ‘CE marking’"), an abbreviation ("(CS)").
				for _, name := range m[1:4] {
					if name != "" {
						add(name, m[4], p)
					}
				}
				continue
			}
			if m := termsRe().quotedMeans.FindStringSubmatch(body); m != nil {
				add(m[1], m[2], p)
				continue
			}
			if isDefs && !hasSub && isTermLine(body) && body == text {
				termLine, termPath = body, p
				continue
			}
			if isDefs && !hasSub {
				if m := termsRe().plainDef.FindStringSubmatch(body); m != nil && len(strings.Fields(m[1])) <= 8 {
					add(m[1], m[2], p)
					continue
				}
				if m := termsRe().meansDef.FindStringSubmatch(body); m != nil && len(strings.Fields(m[1])) <= 8 {
					add(m[1], m[2], p)
					continue
				}
				if abbr, expansion, ok := abbreviationLine(body); ok && body == text {
					add(abbr, expansion, p)
					continue
				}
			}
			for _, m := range termsRe().termRefersTo.FindAllStringSubmatch(text, -1) {
				add(m[1], m[2], p)
			}
		}
		if termLine != "" {
			endTermLine()
		}
	}
	walk(root, "", false)
	return out
}

// restText is the text of e's children after c, as one line.
func restText(e, c *Element) string {
	var parts []string
	after := false
	var walk func(x *Element)
	walk = func(x *Element) {
		if x.Text != "" {
			parts = append(parts, normalizeSpace(x.Text))
		}
		for _, k := range x.Children {
			walk(k)
		}
	}
	for _, k := range e.Children {
		if after {
			walk(k)
		}
		after = after || k == c
	}
	return strings.Join(parts, " ")
}

// abbreviationLine reads a line of an abbreviation list ("FSCA field
// safety corrective action", "CS 'common specifications' as defined in
// the MDR"): the abbreviation and its expansion, whose first word starts
// with the abbreviation's first letter. A term in capitals and other
// words ("JSON Web Token", "CPU time") or a definition that opens with an
// abbreviation ("TLS protocol that secures …") is no such line.
func abbreviationLine(s string) (abbr, expansion string, ok bool) {
	m := termsRe().acronymDefLine.FindStringSubmatch(s)
	if m == nil {
		return "", "", false
	}
	first := strings.TrimLeftFunc(m[2], func(r rune) bool { return !unicode.IsLetter(r) })
	r, _ := utf8.DecodeRuneInString(first)
	if unicode.ToUpper(r) != rune(m[1][0]) {
		return "", "", false
	}
	return m[1], m[2], true
}

func isAbbreviationLine(s string) bool {
	_, _, ok := abbreviationLine(s)
	return ok
}

// isTermLine reports whether a glossary paragraph is a term standing on
// its own line: at most 8 words and 80 characters, no sentence or lead-in
// punctuation at its end, no separator of a definition inside.
func isTermLine(s string) bool {
	if s == "" || utf8.RuneCountInString(s) > 80 || len(strings.Fields(s)) > 8 || !hasLetter(s) {
		return false
	}
	if strings.ContainsAny(s[len(s)-1:], ".;:,!?") || strings.Contains(s, ": ") || strings.Contains(s, " - ") || strings.Contains(s, " – ") || strings.Contains(s, " — ") {
		return false
	}
	return !termsRe().meansDef.MatchString(s)
}

// tableTerms adds the rows of a two-column glossary table (term | its
// definition), after its header rows.
func tableTerms(t *Element, path string, add func(name, def, addr string)) {
	for k, row := range strings.Split(t.Text, "\n") {
		if k < t.HeaderRows {
			continue
		}
		cells := strings.Split(row, " | ")
		if len(cells) != 2 {
			continue
		}
		name, def := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1])
		if isTermLine(name) && strings.ContainsRune(def, ' ') {
			add(name, def, path)
		}
	}
}

// stripNumber removes a leading clause number and its separator from a
// heading ("2.1 - Component Records" → "Component Records", "2) Определения"
// → "Определения").
func stripNumber(title string) string {
	t := strings.TrimSpace(title)
	t = strings.TrimLeftFunc(t, func(r rune) bool { return unicode.IsDigit(r) || r == '.' })
	if len(t) == len(strings.TrimSpace(title)) {
		return t
	}
	return strings.TrimSpace(strings.TrimLeft(t, ":-–—) "))
}

// firstText is the text of e's first paragraph-like leaf.
func firstText(e *Element) string {
	for _, c := range e.Children {
		if !isContainer(c.Kind) && strings.TrimSpace(c.Text) != "" && c.Kind != KindCode {
			return normalizeSpace(c.Text)
		}
	}
	return ""
}

func joinPath(path, addr string) string {
	if path == "" {
		return addr
	}
	return path + PathSep + addr
}
