package chunker

import (
	"regexp"
	"strings"
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

var (
	// definitionsTitle matches the title of a definitions section.
	definitionsTitle = regexp.MustCompile(`(?i)\b(?:terms|definitions|terminology|glossary)\b|^(?:термины|определения|терминология|глоссарий)|термины и определения`)
	// quotedDef: `"X" - …`, `«X» — …`, `“X”: …` at the start of a paragraph.
	quotedDef = regexp.MustCompile(`^["“«]([^"”»]{1,80})["”»]\s*(?:[-–—:]|means\b|refers to\b|is defined as\b|означает\b|—)\s*(\S.*)$`)
	// termRefersTo: `The term "X" refers to …` / `The term "X" means …`.
	termRefersTo = regexp.MustCompile(`(?i)\bthe term ["“]([^"”]{1,60})["”]\s+(?:refers to|means|is used to (?:refer to|mean)|denotes)\s+(\S[^.]*\.?)`)
	// plainDef: `X — …` or `X: …` with a short capitalised X; only inside
	// definitions sections.
	plainDef = regexp.MustCompile(`^([\p{Lu}][^:—–\-"“«.;]{0,60}?)\s*(?::|\s[—–-])\s+(\S.*)$`)
)

// Terms returns the terms root defines, in document order:
//
//   - In a definitions section (its title matches Terms, Definitions,
//     Terminology, Glossary, Определения, Термины): every sub-section with
//     a short title is one term, named by its title without the number
//     ("2.1 - Component Records" → "Component Records") and defined by its
//     first paragraph; without sub-sections, every paragraph that reads
//     `"X" - …`, `X: …` or `X — …` (X at most 8 words) is one term.
//   - Anywhere: a paragraph that starts with a quoted term and a dash or
//     "means" (`"Артефакты соответствия" - …`), and RFC phrasing
//     `The term "X" refers to …`.
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
		if name == "" || seen[key] || utf8.RuneCountInString(name) > 80 || len(strings.Fields(name)) > 8 {
			return
		}
		seen[key] = true
		out = append(out, Term{Name: name, Definition: strings.TrimSpace(def), Address: addr})
	}
	var walk func(e *Element, path string, inDefs bool)
	walk = func(e *Element, path string, inDefs bool) {
		isDefs := isContainer(e.Kind) && e.Kind != KindDocument && definitionsTitle.MatchString(stripNumber(e.Title))
		hasSub := false
		for _, c := range e.Children {
			hasSub = hasSub || c.Kind == KindSection
		}
		for _, c := range e.Children {
			p := joinPath(path, c.Address)
			if c.Kind == KindSection || c.Kind == KindAnnex {
				if isDefs && hasSub {
					name := stripNumber(c.Title)
					if def := firstText(c); def != "" && name != "" && !strings.HasSuffix(name, ":") {
						add(name, def, p)
					}
				}
				walk(c, p, false)
				continue
			}
			text := normalizeSpace(c.Text)
			if c.Kind != KindParagraph && c.Kind != KindClause {
				continue
			}
			if m := quotedDef.FindStringSubmatch(text); m != nil {
				add(m[1], m[2], p)
				continue
			}
			if isDefs && !hasSub {
				if m := plainDef.FindStringSubmatch(text); m != nil && len(strings.Fields(m[1])) <= 8 {
					add(m[1], m[2], p)
					continue
				}
			}
			for _, m := range termRefersTo.FindAllStringSubmatch(text, -1) {
				add(m[1], m[2], p)
			}
		}
	}
	walk(root, "", false)
	return out
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
