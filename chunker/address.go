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

// Addresses.
//
// An element's address is how the document and its readers cite it, in
// the document's own numbering: "Article 7(3)(a)", "Annex II 6.3",
// "Chapter V Section 2", "Recital 12", "6.2.2", "A.1", "Статья 81 часть
// 3", "Table 1", "Tabla 1.2", "Таблица 7.1", or, for a section the
// document does not number, its title ("Method sets"). Element.Citation
// holds it (set by Parse); Element.Address is only the last part, the one
// segment that names the element among its siblings in address paths.
//
// One grammar reads all three kinds of input: the segments parsers give
// elements, addresses users type (ParseAddress) and references in running
// text (CrossRefs, FindAddresses). An address is a sequence of units:
//
//	annex      Annex II, Appendix A, Anejo SI A, Приложение Б, Anexo III
//	part       Part A, Part Three, Parte I, Раздел первый
//	title      Title II
//	chapter    Chapter IV, Capítulo 2, Глава 1
//	section    Section 2 (a division of a chapter), Sección SI 1
//	article    Article 7, Artículo 5, Статья 81, Статья 67.1
//	recital    Recital 12
//	table      Table 1, Tabla 1.2, Таблица 7.1
//	figure     Figure 3, Рисунок 2
//	number     6.2.2, A.1, E.2.3.2.3 (a clause number)
//	paren      (3), (a), (iv): a paragraph or point of an article or clause
//	часть      часть 3 (a numbered part of a Russian article)
//	пункт      пункт а, пункт 3 (a point of a Russian article or part)
//
// Canonical form: units outermost first, separated by one space, except
// that parenthesised units follow the unit before them directly
// ("Article 7(3)(a)", "Annex I 3(c)"). Keywords are spelt as the
// document's language spells them, capitalised and in the nominative
// ("статьи 65" → "Статья 65", "ANNEX VIII" → "Annex VIII", "таблице 7.1" →
// "Таблица 7.1"); identifiers keep their case except Roman numerals and
// annex letters, which are upper case. AddressKey folds the remaining
// differences (case, keyword language, look-alike Latin and Cyrillic
// letters) for comparison.

// unitKind is what one part of an address is.
type unitKind uint8

const (
	unitNone unitKind = iota
	unitAnnex
	unitPart
	unitTitle
	unitChapter
	unitSection
	unitArticle
	unitRecital
	unitTable
	unitFigure
	unitNumber
	unitParen
	unitChast
	unitPunkt
)

// addrUnit is one part of an address.
type addrUnit struct {
	kind unitKind
	word string // canonical keyword ("Article", "Статья"); "" for number and paren
	id   string
}

func (u addrUnit) String() string {
	switch u.kind {
	case unitNumber:
		return u.id
	case unitParen:
		return "(" + u.id + ")"
	}
	return u.word + " " + u.id
}

// isDivision reports whether u is a division of the text (part, title,
// chapter, section).
func (u addrUnit) isDivision() bool {
	switch u.kind {
	case unitPart, unitTitle, unitChapter, unitSection:
		return true
	}
	return false
}

// rank orders units from the outermost (annex) to the innermost (point).
func (u addrUnit) rank() int {
	switch u.kind {
	case unitAnnex:
		return 1
	case unitPart:
		return 2
	case unitTitle:
		return 3
	case unitChapter:
		return 4
	case unitSection:
		return 5
	case unitArticle, unitRecital, unitTable, unitFigure:
		return 6
	case unitNumber:
		return 7
	case unitChast:
		return 8
	case unitParen:
		if u.id != "" && u.id[0] >= '0' && u.id[0] <= '9' {
			return 8
		}
		return 9
	case unitPunkt:
		return 9
	}
	return 10
}

// formatUnits writes units in canonical form.
func formatUnits(us []addrUnit) string {
	var sb strings.Builder
	for i, u := range us {
		if i > 0 && u.kind != unitParen {
			sb.WriteByte(' ')
		}
		sb.WriteString(u.String())
	}
	return sb.String()
}

// Keyword lexicon: each entry matches the keyword forms of one kind (case
// folded, any inflection listed) and gives the canonical word for a form.
type keyword struct {
	kind unitKind
	re   *regexp.Regexp // anchored; group 1 is the keyword
	// canon maps the lower-cased keyword to its canonical spelling.
	canon func(kw string) string
}

func fixed(s string) func(string) string { return func(string) string { return s } }

// byPrefix returns the canonical word of the first prefix kw starts with.
func byPrefix(pairs ...string) func(string) string {
	return func(kw string) string {
		for i := 0; i+1 < len(pairs); i += 2 {
			if strings.HasPrefix(kw, pairs[i]) {
				return pairs[i+1]
			}
		}
		return pairs[len(pairs)-1]
	}
}

// kw builds an anchored, case-insensitive keyword pattern; forms is an
// alternation. The keyword must be followed by white space or, for
// abbreviations ending in ".", directly by the identifier.
func kwRe(forms string) *regexp.Regexp {
	return regexp.MustCompile(`^(?i)(` + forms + `)`)
}

// firstLetters are the first letters of the forms of a keyword pattern.
func firstLetters(re *regexp.Regexp) string {
	src := strings.TrimSuffix(strings.TrimPrefix(re.String(), "^(?i)("), ")")
	var sb strings.Builder
	for _, f := range strings.Split(src, "|") {
		r, _ := utf8.DecodeRuneInString(f)
		r = unicode.ToLower(r)
		if !strings.ContainsRune(sb.String(), r) {
			sb.WriteRune(r)
			if u := unicode.ToUpper(r); u != r {
				sb.WriteRune(u)
			}
		}
	}
	return sb.String()
}

// addressSyntax is the keyword lexicon and the patterns the address
// grammar reads with; addrSyntax builds it, and documents each field.
type addressSyntax struct {
	keywords     []keyword
	keywordFirst []string

	romanID, numberID, articleID, tableID  *regexp.Regexp
	parenRe, cyrPoint, esCode, ordinalWord *regexp.Regexp
	sepRe                                  *regexp.Regexp
	docRes                                 []*regexp.Regexp
	barePunkt                              *regexp.Regexp
}

// addrSyntax returns the address grammar's keyword lexicon and patterns,
// built on first use.
var addrSyntax = sync.OnceValue(func() *addressSyntax {
	a := &addressSyntax{
		keywords: keywordLexicon(),
		// romanID is an upper-case Roman numeral of at most seven letters.
		romanID: regexp.MustCompile(`^(?i)[IVXLC]{1,7}`),
		// numberID is a clause number: "6.2.2", "A.1", "E.2.3.2.3", "10", an
		// optional trailing full stop is not part of it.
		numberID: regexp.MustCompile(`^(?:[A-Z]{1,2}\.)?\d{1,3}(?:\.\d{1,3})*`),
		// articleID: "7", "10a", "67.1".
		articleID: regexp.MustCompile(`^\d{1,4}(?:\.\d{1,3})?[a-z]?`),
		// tableID: "1", "7.1", "A.2", "Б.1".
		tableID: regexp.MustCompile(`^(?:[A-ZА-Я]\.)?\d{1,3}(?:\.\d{1,3})*`),
		// parenRe is one parenthesised point or paragraph label.
		parenRe: regexp.MustCompile(`^\(\s*(\d{1,3}(?:\.\d{1,3})+|\d{1,3}[a-z]?|[a-z]{1,2}|[ivxlc]{1,6}|[а-яё])\s*\)`),
		// cyrPoint: a Russian point letter, quoted or with a bracket: «а», "а", а).
		cyrPoint: regexp.MustCompile(`^(?:[«"“„]([а-яё](?:\.\d{1,2})?)[»"”“]|([а-яё](?:\.\d{1,2})?)\))`),
		// esCode: the document code before a CTE number ("Sección SI 1", "Anejo SI A").
		esCode: regexp.MustCompile(`^([A-Z]{2,3})\s+`),
		// ordinalWord: "первый", "второй", "Three", "First".
		ordinalWord: regexp.MustCompile(`^(?i)(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|one|two|three|four|five|six|seven|eight|nine|ten|перв\p{L}*|втор\p{L}*|трет\p{L}*|четв[её]рт\p{L}*|пят\p{L}*|шест\p{L}*|седьм\p{L}*|восьм\p{L}*|девят\p{L}*|десят\p{L}*)`),
		// sepRe: the words that may join the components of one address:
		// "point (a) of paragraph 3 of Article 7", "Section 3 of Annex IX",
		// "apartado 4.1 de esta Sección", "Article 7(3), point (a)".
		sepRe: regexp.MustCompile(`^(?i)(?:\s*,\s*|\s+)(?:(?:of|in|to|under|from|de|del|de la|de los|de las|du|des|der|des|von|в|из)\s+)?(?:(?:the|this|that|these|those|el|la|los|las|este|esta|estos|estas|presente|настоящ\p{L}*|эт\p{L}*|указанн\p{L}*|данн\p{L}*)\s+)?(?:(?:first|second|third|fourth|fifth|sixth|last|introductory|closing)\s+(?:subparagraph|indent|sentence|wording)\s+(?:of\s+(?:the\s+)?)?)?`),
		// docRes recognise the identifiers of whole documents: RFCs, EU acts,
		// standards, Russian codes and laws, CTE Documentos Básicos.
		docRes: []*regexp.Regexp{
			regexp.MustCompile(`^\[?RFC\s?(\d{1,5})\]?`),
			regexp.MustCompile(`^(?:(?:Commission|Council|European Parliament and Council|Implementing|Delegated)\s+)*((?i:regulation|directive|decision|recommendation|reglamento|directiva|decisión|règlement|verordnung|richtlinie|регламент|директива))\s*(\((?:EU|EC|EEC|EU,\s*Euratom|Euratom|UE|CE|CEE|ЕС|ЕЭС)\)\s*)?(?:No\.?\s*|n\.?º\s*|№\s*)?(\d{1,4}/\d{1,4}(?:/(?:EU|EC|EEC|Euratom|UE|CE|CEE|ЕС|ЕЭС))?)`),
			regexp.MustCompile(`^(?:(?:EN|UNE-EN|UNE|DIN EN|BS EN|ГОСТ Р|ГОСТ)\s+)?(?:ISO/IEC|ISO|IEC|ИСО/МЭК|ИСО|МЭК)(?:/TR|/TS)?\s+\d{3,5}(?:-\d{1,3})*(?::\d{4})?`),
			regexp.MustCompile(`^ГОСТ(?:\s+Р)?\s+\d{1,6}(?:[.\-–]\d{1,6})*`),
			regexp.MustCompile(`^СП\s+\d{1,3}\.\d{3,6}(?:\.\d{4})?`),
			regexp.MustCompile(`^\d{1,4}-ФЗ`),
			regexp.MustCompile(`^(?:CTE\s+)?DB[\s-](?:SI|SUA|HE|HR|HS|SE(?:-[A-Z]{1,2})?)`),
			regexp.MustCompile(`^(?:the\s+)?(?:Treaty on (?:the )?Functioning of the European Union|Treaty on European Union|Charter of Fundamental Rights of the European Union|TFEU|TEU)`),
		},
		// barePunkt is a canonical Russian point ("пункт а"), whose letter text
		// quotes: quotePunkt makes it read as "пункт «а»".
		barePunkt: regexp.MustCompile(`пункт ([а-яё](?:\.\d{1,2})?)(\s|$)`),
	}
	// keywordFirst holds, for each keyword, the first letters of its forms
	// (both cases), so that parseComp tries only the patterns that can match.
	a.keywordFirst = make([]string, len(a.keywords))
	for i, k := range a.keywords {
		a.keywordFirst[i] = firstLetters(k.re)
	}
	return a
})

// keywordLexicon builds the keyword lexicon, in the order parseComp tries
// it.
func keywordLexicon() []keyword {
	return []keyword{
		{unitArticle, kwRe(`articles|article|arts?\.|artículos|artículo|articulos|articulo|artigos|artigo|articoli|articolo|artikels|artikel|artykuł|статьями|статьях|статьям|статьей|статьёй|статья|статьи|статье|статью|статей|ст\.`),
			byPrefix("ст", "Статья", "artí", "Artículo", "articulo", "Artículo", "artig", "Artigo", "artico", "Articolo", "artik", "Artikel", "artyk", "Artykuł", "Article")},
		{unitAnnex, kwRe(`annexes|annexe|annex|appendices|appendix|app\.|anexos|anexo|anejos|anejo|apéndices|apéndice|apendice|anhang|allegati|allegato|bijlage|приложениям|приложениях|приложение|приложения|приложению|приложении|приложений|прил\.`),
			byPrefix("appendi", "Appendix", "app.", "Appendix", "anex", "Anexo", "anej", "Anejo", "apé", "Apéndice", "ape", "Apéndice", "anh", "Anhang", "alleg", "Allegato", "bijl", "Bijlage", "прил", "Приложение", "Annex")},
		{unitChapter, kwRe(`chapters|chapter|chapitre|capítulos|capítulo|capitulo|kapitel|capo|главами|главах|глава|главы|главе|главу|главой|гл\.`),
			byPrefix("chapi", "Chapitre", "cap", "Capítulo", "kap", "Kapitel", "capo", "Capo", "гл", "Глава", "Chapter")},
		{unitPart, kwRe(`partie|partes|parte|parts|part|teil`),
			byPrefix("partie", "Partie", "parte", "Parte", "teil", "Teil", "Part")},
		{unitTitle, kwRe(`titles|title|titre|títulos|título|titulo|titel`),
			byPrefix("titr", "Titre", "tít", "Título", "titu", "Título", "tite", "Titel", "Title")},
		{unitRecital, kwRe(`recitals|recital|considerandos|considerando|considérants|considérant|erwägungsgründe|erwägungsgrund`),
			byPrefix("consid", "Considerando", "erw", "Erwägungsgrund", "Recital")},
		{unitTable, kwRe(`tableaux|tableau|tables|table|tablas|tabla|tabellen|tabelle|tabella|таблицами|таблицей|таблица|таблицы|таблице|таблицу|табл\.|tab\.`),
			byPrefix("tabla", "Tabla", "tableau", "Tableau", "tabelle", "Tabelle", "tabella", "Tabella", "таб", "Таблица", "Table")},
		{unitFigure, kwRe(`figures|figure|figs?\.|figuras|figura|abbildung|abb\.|рисунками|рисунок|рисунка|рисунке|рисунку|рисунком|рис\.`),
			byPrefix("figura", "Figura", "abb", "Abbildung", "рис", "Рисунок", "Figure")},
		{unitChast, kwRe(`частями|частях|частям|частью|часть|части|ч\.`), fixed("часть")},
		// Locators: words that introduce a number or a paren without being a
		// unit of their own ("Section 6.5.1", "point (a)", "пункт 6.2.2").
		// Their canonical word is the locator class (see locator).
		{unitSection, kwRe(`sections|section|subsections|subsection|sec\.|§§|§|secciones|sección|seccion|abschnitt|sezione|разделами|разделах|разделе|раздела|разделу|разделом|раздел`),
			byPrefix("secc", "Sección", "secci", "Sección", "abs", "Abschnitt", "sez", "Sezione", "раз", "Раздел", "Section")},
		{unitNone, kwRe(`clauses|clause|subclauses|subclause|paragraphs|paragraph|paras?\.|subparagraphs|subparagraph|points|point|pt\.|items|item|apartados|apartado|subapartados|subapartado|puntos|punto|párrafos|párrafo|requirements|requirement|подпунктами|подпунктах|подпункта|подпункте|подпунктом|подпункту|подпункт|пунктами|пунктах|пунктам|пункта|пункте|пунктом|пункту|пункт|пп\.|п\.|требованиям|требованиях|требованию|требовании|требования|требование|параграф\p{L}*`),
			func(kw string) string {
				switch {
				case strings.HasPrefix(kw, "paragraph"), strings.HasPrefix(kw, "subparagraph"), strings.HasPrefix(kw, "para"), strings.HasPrefix(kw, "párr"):
					return "paragraph"
				case strings.HasPrefix(kw, "point"), strings.HasPrefix(kw, "pt."), strings.HasPrefix(kw, "punt"), strings.HasPrefix(kw, "item"):
					return "point"
				case strings.HasPrefix(kw, "подпункт"), strings.HasPrefix(kw, "пп."):
					return "подпункт"
				case strings.HasPrefix(kw, "пункт"), kw == "п.":
					return "пункт"
				case strings.HasPrefix(kw, "apartado"), strings.HasPrefix(kw, "subapartado"):
					return "apartado"
				}
				return "clause"
			}},
	}
}

// boundaryAt reports whether s[i:] starts at the end of a word: the end of
// s, or a rune that is neither a letter nor a digit.
func boundaryAt(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// boundaryBefore reports whether s[:i] ends a word (or is empty).
func boundaryBefore(s string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// comp is one parsed component of an address: a unit, or a paren chain,
// with its span in the scanned text.
type comp struct {
	units      []addrUnit
	start, end int
	// locator is the locator word class that introduced the component
	// ("paragraph", "point", "пункт", "clause", "apartado"), "" if none.
	locator string
	// word is the canonical spelling of a section locator ("Section",
	// "Sección", "Раздел"), for "Section 2" read as a division.
	word string
	// plural is set for a plural keyword ("Articles", "статьями"), which
	// announces a list.
	plural bool
	// genitive is set for a Russian keyword in the genitive ("статьи",
	// "части", "главы"), which names the unit that holds the one before
	// it ("частью 1 статьи 3").
	genitive bool
}

func (c comp) rank() int { return c.units[0].rank() }

// spaces skips white space.
func spaces(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) && r != '\u00a0' {
			break
		}
		i += n
	}
	return i
}

// parseParens reads a chain of parenthesised labels at s[i:] ("(3)(a)",
// "(3) (a)", "( 1 )").
func parseParens(s string, i int) ([]addrUnit, int) {
	var out []addrUnit
	j := i
	for {
		k := j
		if len(out) > 0 && k < len(s) && s[k] == ' ' {
			k++ // "(3) (a)"
		}
		m := addrSyntax().parenRe.FindStringSubmatchIndex(s[k:])
		if m == nil {
			break
		}
		out = append(out, addrUnit{kind: unitParen, id: s[k+m[2] : k+m[3]]})
		j = k + m[1]
	}
	return out, j
}

// parseComp reads one component at s[i:] (i at a word start).
func parseComp(s string, i int) (comp, bool) {
	if i >= len(s) {
		return comp{}, false
	}
	if s[i] == '(' {
		if us, j := parseParens(s, i); len(us) > 0 {
			return comp{units: us, start: i, end: j}, true
		}
		return comp{}, false
	}
	r0, _ := utf8.DecodeRuneInString(s[i:])
	syn := addrSyntax()
	for ki, k := range syn.keywords {
		if !strings.ContainsRune(syn.keywordFirst[ki], r0) {
			continue
		}
		m := k.re.FindStringSubmatchIndex(s[i:])
		if m == nil {
			continue
		}
		kwText := s[i+m[2] : i+m[3]]
		j := i + m[1]
		if !strings.HasSuffix(kwText, ".") && !strings.HasSuffix(kwText, "§") && !boundaryAt(s, j) {
			continue
		}
		lower := strings.ToLower(kwText)
		plural := isPluralKeyword(lower)
		word := k.canon(lower)
		j = spaces(s, j)
		if c, ok := parseKeywordID(s, i, j, k.kind, word); ok {
			c.plural = plural
			c.genitive = isGenitive(lower)
			return c, true
		}
	}
	if m := addrSyntax().numberID.FindStringIndex(s[i:]); m != nil && boundaryNumber(s, i+m[1]) {
		id := s[i : i+m[1]]
		if strings.Contains(id, ".") {
			return comp{units: []addrUnit{{kind: unitNumber, id: id}}, start: i, end: i + m[1]}, true
		}
	}
	return comp{}, false
}

// boundaryNumber reports whether a number ending at s[i:] ends there: a
// full stop followed by a digit continues it, a letter glued to it ("2nd")
// makes it a word.
func boundaryNumber(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	if s[i] == '.' {
		return i+1 >= len(s) || !(s[i+1] >= '0' && s[i+1] <= '9')
	}
	return boundaryAt(s, i)
}

func isGenitive(kw string) bool {
	switch kw {
	case "статьи", "статей", "части", "главы", "раздела", "приложения", "пункта", "подпункта", "таблицы", "рисунка", "ст.", "гл.", "ч.", "п.", "пп.":
		return true
	}
	return false
}

func isPluralKeyword(kw string) bool {
	switch kw {
	case "articles", "annexes", "appendices", "chapters", "parts", "titles", "recitals", "tables", "figures",
		"sections", "subsections", "§§", "clauses", "subclauses", "paragraphs", "subparagraphs", "points", "items",
		"apartados", "puntos", "requirements", "artículos", "articulos", "anexos", "anejos", "capítulos", "tablas", "secciones":
		return true
	}
	return strings.HasSuffix(kw, "ями") || strings.HasSuffix(kw, "ами") || strings.HasSuffix(kw, "ях") || strings.HasSuffix(kw, "ах") ||
		kw == "статьям" || kw == "статей" || kw == "пунктам" || kw == "частям" || kw == "приложениям"
}

// parseKeywordID reads the identifier after a keyword of kind (word is its
// canonical spelling, j the position after the keyword and its space).
func parseKeywordID(s string, start, j int, kind unitKind, word string) (comp, bool) {
	one := func(u addrUnit, end int) (comp, bool) {
		return comp{units: []addrUnit{u}, start: start, end: end}, true
	}
	switch kind {
	case unitArticle:
		if m := addrSyntax().articleID.FindStringIndex(s[j:]); m != nil && boundaryNumber(s, j+m[1]) {
			return one(addrUnit{kind: kind, word: word, id: s[j : j+m[1]]}, j+m[1])
		}
	case unitRecital:
		k := j
		paren := k < len(s) && s[k] == '('
		if paren {
			k = spaces(s, k+1)
		}
		n := 0
		for k+n < len(s) && s[k+n] >= '0' && s[k+n] <= '9' && n < 4 {
			n++
		}
		if n == 0 {
			break
		}
		end := k + n
		if paren {
			e := spaces(s, end)
			if e >= len(s) || s[e] != ')' {
				break
			}
			end = e + 1
		} else if !boundaryNumber(s, end) {
			break
		}
		return one(addrUnit{kind: kind, word: word, id: s[k : k+n]}, end)
	case unitTable, unitFigure:
		if m := addrSyntax().tableID.FindStringIndex(s[j:]); m != nil && boundaryNumber(s, j+m[1]) {
			return one(addrUnit{kind: kind, word: word, id: s[j : j+m[1]]}, j+m[1])
		}
	case unitChast:
		n := 0
		for j+n < len(s) && s[j+n] >= '0' && s[j+n] <= '9' && n < 3 {
			n++
		}
		if n > 0 && j+n+1 < len(s) && s[j+n] == '.' && s[j+n+1] >= '0' && s[j+n+1] <= '9' {
			// An inserted part: "часть 5.1".
			n++
			for k := 0; k < 2 && j+n < len(s) && s[j+n] >= '0' && s[j+n] <= '9'; k++ {
				n++
			}
		}
		if n > 0 && boundaryNumber(s, j+n) {
			return one(addrUnit{kind: kind, word: word, id: s[j : j+n]}, j+n)
		}
	case unitAnnex, unitChapter, unitPart, unitTitle:
		code := ""
		k := j
		if m := addrSyntax().esCode.FindStringSubmatchIndex(s[k:]); m != nil && (word == "Anejo" || word == "Anexo" || word == "Apéndice") {
			code = s[k+m[2]:k+m[3]] + " "
			k += m[1]
		}
		if id, end, ok := divisionID(s, k, kind); ok {
			return one(addrUnit{kind: kind, word: word, id: code + id}, end)
		}
	case unitSection:
		// "Sección SI 1": a CTE section code makes it a division.
		if m := addrSyntax().esCode.FindStringSubmatchIndex(s[j:]); m != nil && word == "Sección" {
			k := j + m[1]
			n := 0
			for k+n < len(s) && s[k+n] >= '0' && s[k+n] <= '9' && n < 3 {
				n++
			}
			if n > 0 && boundaryNumber(s, k+n) {
				return one(addrUnit{kind: unitSection, word: word, id: s[j+m[2]:j+m[3]] + " " + s[k:k+n]}, k+n)
			}
		}
		if word == "Раздел" {
			if m := addrSyntax().ordinalWord.FindStringIndex(s[j:]); m != nil && boundaryAt(s, j+m[1]) {
				return one(addrUnit{kind: unitPart, word: word, id: strings.ToLower(s[j : j+m[1]])}, j+m[1])
			}
		}
		if m := addrSyntax().romanID.FindStringIndex(s[j:]); m != nil && boundaryAt(s, j+m[1]) && strings.ToUpper(s[j:j+m[1]]) == s[j:j+m[1]] {
			// "SECTION II" (a Roman numeral) is a division.
			return one(addrUnit{kind: unitSection, word: word, id: s[j : j+m[1]]}, j+m[1])
		}
		c, ok := locatorTail(s, start, j, "section")
		c.word = word
		return c, ok
	case unitNone:
		return locatorTail(s, start, j, word)
	}
	return comp{}, false
}

// divisionID reads a division identifier: a Roman numeral, a single
// letter, a number of at most three digits, or (for parts) an ordinal word.
func divisionID(s string, k int, kind unitKind) (string, int, bool) {
	if m := addrSyntax().romanID.FindStringIndex(s[k:]); m != nil && boundaryAt(s, k+m[1]) {
		id := s[k : k+m[1]]
		if kind == unitAnnex || strings.ToUpper(id) == id || len(id) > 1 {
			return strings.ToUpper(id), k + m[1], true
		}
	}
	if k < len(s) {
		r, n := utf8.DecodeRuneInString(s[k:])
		if unicode.IsLetter(r) && boundaryAt(s, k+n) && (unicode.IsUpper(r) || kind == unitAnnex) {
			return strings.ToUpper(string(r)), k + n, true
		}
	}
	n := 0
	for k+n < len(s) && s[k+n] >= '0' && s[k+n] <= '9' && n < 4 {
		n++
	}
	if n > 0 && n <= 3 && boundaryNumber(s, k+n) {
		return s[k : k+n], k + n, true
	}
	if kind == unitPart {
		if m := addrSyntax().ordinalWord.FindStringIndex(s[k:]); m != nil && boundaryAt(s, k+m[1]) {
			w := strings.ToLower(s[k : k+m[1]])
			return strings.ToUpper(w[:1]) + w[1:], k + m[1], true
		}
	}
	return "", 0, false
}

// locatorTail reads what follows a locator word: a paren chain ("point
// (a)"), a Russian point letter ("пункт «а»"), or a number ("section
// 6.5.1", "paragraph 3", "пункт 4.1").
func locatorTail(s string, start, j int, locator string) (comp, bool) {
	if j < len(s) && s[j] == '(' {
		if us, end := parseParens(s, j); len(us) > 0 {
			return comp{units: us, start: start, end: end, locator: locator}, true
		}
	}
	if locator == "пункт" || locator == "подпункт" {
		if m := addrSyntax().cyrPoint.FindStringSubmatchIndex(s[j:]); m != nil {
			g := 2
			if m[2] < 0 {
				g = 4
			}
			return comp{units: []addrUnit{{kind: unitPunkt, word: "пункт", id: s[j+m[g] : j+m[g+1]]}}, start: start, end: j + m[1], locator: locator}, true
		}
	}
	if m := addrSyntax().numberID.FindStringIndex(s[j:]); m != nil && boundaryNumber(s, j+m[1]) {
		id := s[j : j+m[1]]
		return comp{units: []addrUnit{{kind: unitNumber, id: id}}, start: start, end: j + m[1], locator: locator}, true
	}
	return comp{}, false
}

// isInsertedNumber reports whether id is a number with one sub-number
// ("5.1"), as an inserted point or part is numbered.
func isInsertedNumber(id string) bool {
	a, b, ok := strings.Cut(id, ".")
	return ok && isDigits(a) && isDigits(b) && len(b) <= 2
}

// arrange orders the components of one address outermost first and turns
// integers after locators into what they mean there: "paragraph 3" of an
// article is "(3)", "пункт 3" of a Russian article "пункт 3", "Section 2"
// of a chapter a division, "(2)" right after an annex its number 2.
func arrange(cs []comp) []addrUnit {
	hasArticle, hasChapter, hasStatya, hasAnnex := false, false, false, false
	for _, c := range cs {
		for _, u := range c.units {
			switch {
			case u.kind == unitArticle && u.word == "Статья":
				hasStatya = true
				hasArticle = true
			case u.kind == unitArticle:
				hasArticle = true
			case u.kind == unitChapter || u.kind == unitPart || u.kind == unitTitle:
				hasChapter = true
			case u.kind == unitAnnex:
				hasAnnex = true
			}
		}
	}
	for i := range cs {
		c := &cs[i]
		if len(c.units) != 1 || c.units[0].kind != unitNumber {
			continue
		}
		id := c.units[0].id
		if !isDigits(id) && !(hasStatya && (c.locator == "пункт" || c.locator == "подпункт") && isInsertedNumber(id)) {
			// A clause number ("п. 6.2.2"), except a point inserted
			// into an article ("пункт 5.1 статьи 3").
			continue
		}
		switch c.locator {
		case "paragraph":
			c.units[0] = addrUnit{kind: unitParen, id: id}
		case "point", "apartado":
			if hasArticle {
				c.units[0] = addrUnit{kind: unitParen, id: id}
			}
		case "пункт", "подпункт":
			if hasStatya {
				c.units[0] = addrUnit{kind: unitPunkt, word: "пункт", id: id}
			}
		case "section":
			if hasChapter && !hasAnnex {
				// "Section 2 of Chapter V" is a division; "Section 2 of
				// Part A of Annex VI" is point 2 of the annex.
				c.units[0] = addrUnit{kind: unitSection, word: c.word, id: id}
			}
		}
	}
	sort.SliceStable(cs, func(a, b int) bool { return cs[a].rank() < cs[b].rank() })
	var out []addrUnit
	for _, c := range cs {
		for k, u := range c.units {
			if u.kind == unitParen && strings.Contains(u.id, ".") {
				// "Annex I (23.2)": a clause number in brackets.
				u = addrUnit{kind: unitNumber, id: u.id}
			}
			if k == 0 && u.kind == unitParen && len(out) > 0 && out[len(out)-1].kind == unitAnnex && isDigits(u.id) {
				u = addrUnit{kind: unitNumber, id: u.id}
			}
			if u.kind == unitNumber && len(out) > 0 && out[len(out)-1].kind == unitNumber {
				prev := out[len(out)-1].id
				if strings.HasPrefix(u.id, prev+".") {
					out[len(out)-1] = u
				}
				continue
			}
			if len(out) > 0 && out[len(out)-1] == u {
				continue
			}
			out = append(out, u)
		}
	}
	return out
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// matchDoc returns the document identifier at s[i:] in canonical form
// ("RFC 7231", "Regulation (EU) 2017/745", "ISO 14971:2012") and its end.
func matchDoc(s string, i int) (string, int, bool) {
	if !boundaryBefore(s, i) {
		return "", 0, false
	}
	for k, re := range addrSyntax().docRes {
		m := re.FindStringSubmatchIndex(s[i:])
		if m == nil || !boundaryAt(s, i+m[1]) && !strings.HasSuffix(s[i:i+m[1]], "]") {
			continue
		}
		text := s[i : i+m[1]]
		switch k {
		case 7:
			switch t := strings.ToLower(text); {
			case strings.Contains(t, "functioning") || strings.HasSuffix(t, "tfeu"):
				return "TFEU", i + m[1], true
			case strings.Contains(t, "charter"):
				return "Charter of Fundamental Rights", i + m[1], true
			}
			return "TEU", i + m[1], true
		case 0:
			return "RFC " + s[i+m[2]:i+m[3]], i + m[1], true
		case 1:
			kind := s[i+m[2] : i+m[3]]
			if r, n := utf8.DecodeRuneInString(kind); n > 0 {
				kind = string(r) + strings.ToLower(kind[n:])
			}
			inst := ""
			if m[4] >= 0 {
				inst = "(" + strings.TrimSpace(strings.Trim(strings.TrimSpace(s[i+m[4]:i+m[5]]), "()")) + ") "
			}
			return kind + " " + inst + s[i+m[6]:i+m[7]], i + m[1], true
		}
		return normalizeSpace(text), i + m[1], true
	}
	return "", 0, false
}

// addrStopWords join an address and a document name ("Article 5 of the
// MDR", "apartado 4.1 de esta Sección").
var addrStopWords = map[string]bool{
	"of": true, "the": true, "in": true, "to": true, "from": true, "see": true, "cf.": true, "this": true, "that": true,
	"de": true, "del": true, "la": true, "el": true, "los": true, "las": true, "esta": true, "este": true, "presente": true,
	"du": true, "des": true, "der": true, "von": true, "см.": true, "в": true, "из": true,
	"настоящей": true, "настоящего": true, "настоящая": true, "настоящий": true, "этой": true, "этого": true,
	// Lead-ins of references: "в соответствии с 5.2.3", "según el apartado 4.1", "referred to in".
	"соответствии": true, "с": true, "согласно": true, "according": true, "referred": true, "pursuant": true,
	"under": true, "según": true, "conforme": true, "al": true, "a": true, "y": true,
}

// Address is a parsed address: the document it names, if any, and the
// element's address in canonical form.
type Address struct {
	// Doc is the document as the input names it: a recognised identifier
	// in canonical form ("RFC 7231", "Regulation (EU) 2017/745", "ISO
	// 14971:2012") or the remaining words as written ("MDR", "Go spec",
	// "Конституции"); "" for a bare address. Match it against
	// DocumentIDs.
	Doc string
	// Citation is the element address in canonical form ("Article
	// 7(3)(a)", "Annex II 6.3", "Статья 81 часть 3", "4.2.2"), "" when the
	// input names only a document. It equals the Element.Citation of the
	// element the input names (compare with AddressKey).
	Citation string
}

// ParseAddress parses an address as a user types it, bare or with a
// document name before or after it, into canonical form. Examples, each
// giving the Citation shown:
//
//	"Article 7(3)(a)", "art. 7 (3) (a)", "point (a) of Article 7(3)",
//	"Article 7, paragraph 3, point (a)"       → "Article 7(3)(a)"
//	"Section 6.3 of Annex II", "annex ii 6.3" → "Annex II 6.3"
//	"chapter iv"                              → "Chapter IV"
//	"Section 2 of Chapter V"                  → "Chapter V Section 2"
//	"Recital (12)", "recital 12"              → "Recital 12"
//	"RFC 7231 section 4.2.2", "Section 4.2.2 of RFC 7231"
//	                                          → Doc "RFC 7231", "4.2.2"
//	"MDR Article 2(71)"                       → Doc "MDR", "Article 2(71)"
//	"ч. 3 ст. 81", "часть 3 статьи 81"        → "Статья 81 часть 3"
//	"п. «а» ч. 1 ст. 71"                      → "Статья 71 часть 1 пункт а"
//	"таблица 7.1", "табл. 7.1"                → "Таблица 7.1"
//	"Tabla 1.2"                               → "Tabla 1.2"
//	"п. 6.2.2", "section 6.2.2", "6.2.2."     → "6.2.2"
//	"apartado 4.1 de la Sección SI 1"         → "Sección SI 1 4.1"
//
// ok is false when s holds no address and no recognised document
// identifier; Citation is then s with white space collapsed, which is how
// a section the document does not number is cited (its title, "Method
// sets"). A bare integer ("7") is taken as clause number 7.
func ParseAddress(s string) (a Address, ok bool) {
	t := quotePunkt(normalizeSpace(strings.NewReplacer("’", "'", "‘", "'").Replace(s)))
	var cs []comp
	var doc []string
	var rest []string
	for i := 0; i < len(t); {
		i = spaces(t, i)
		if i >= len(t) {
			break
		}
		if d, end, ok := matchDoc(t, i); ok {
			doc = append(doc, d)
			i = end
			continue
		}
		if t[i] == '(' || boundaryBefore(t, i) {
			if c, ok := parseComp(t, i); ok {
				cs = append(cs, c)
				i = c.end
				continue
			}
		}
		if k := annexPointEnd(t, i, cs); k > i {
			// "Annex I 3", "Annex VI Part A 2(c)": a point of the annex,
			// numbered by the annex alone.
			cs = append(cs, comp{units: []addrUnit{{kind: unitNumber, id: t[i:k]}}, start: i, end: k})
			i = k
			continue
		}
		j := i
		for j < len(t) {
			r, n := utf8.DecodeRuneInString(t[j:])
			if unicode.IsSpace(r) || r == ',' || r == ';' || (r == '(' && j > i) {
				break
			}
			j += n
		}
		if j == i {
			j = i + 1
		}
		rest = append(rest, t[i:j])
		i = j
	}
	// Words joining the address and the document name are not part of it.
	var words []string
	for _, w := range rest {
		w = strings.Trim(w, ",;:")
		if w == "" || w == "." || addrStopWords[strings.ToLower(w)] {
			continue
		}
		words = append(words, w)
	}
	if len(cs) == 0 && len(doc) == 0 && len(words) == 1 && isDigits(strings.TrimSuffix(words[0], ".")) {
		// A bare integer is a clause number when it is all there is.
		cs = append(cs, comp{units: []addrUnit{{kind: unitNumber, id: strings.TrimSuffix(words[0], ".")}}})
		words = nil
	}
	if len(cs) == 0 {
		if len(doc) > 0 {
			return Address{Doc: strings.Join(append(doc, words...), " ")}, true
		}
		return Address{Citation: t}, false
	}
	a.Citation = formatUnits(arrange(cs))
	a.Doc = strings.Join(append(doc, words...), " ")
	return a, true
}

// annexPointEnd is the end of a bare integer at t[i:] that follows an
// annex (or a part of an annex) read just before it, i when there is none.
func annexPointEnd(t string, i int, cs []comp) int {
	if len(cs) == 0 || cs[len(cs)-1].end > i {
		return i
	}
	last := cs[len(cs)-1].units
	if len(last) == 0 {
		return i
	}
	inAnnex := false
	for _, c := range cs {
		for _, u := range c.units {
			if u.kind == unitAnnex {
				inAnnex = true
			}
		}
	}
	if k := last[len(last)-1].kind; !inAnnex || (k != unitAnnex && k != unitPart && k != unitChapter && k != unitSection) {
		return i
	}
	k := i
	for k < len(t) && k-i < 4 && t[k] >= '0' && t[k] <= '9' {
		k++
	}
	if k == i || k-i > 3 || (k < len(t) && t[k] != ' ' && t[k] != '(') {
		return i
	}
	return k
}

// lookalike folds Cyrillic letters that look like Latin ones (in annex
// letters and Roman numerals: "Приложение А" with a Cyrillic А) to Latin.
var lookalike = strings.NewReplacer(
	"а", "a", "в", "b", "е", "e", "к", "k", "м", "m", "н", "h", "о", "o", "р", "p", "с", "c", "т", "t", "у", "y", "х", "x", "ё", "e",
)

// keyWords fold canonical keywords of any language to one word.
var keyWords = map[string]string{
	"article": "article", "artículo": "article", "статья": "article", "artikel": "article", "articolo": "article", "artigo": "article", "artykuł": "article",
	"annex": "annex", "appendix": "annex", "anexo": "annex", "anejo": "annex", "apéndice": "annex", "приложение": "annex", "anhang": "annex", "allegato": "annex", "bijlage": "annex",
	"chapter": "chapter", "capítulo": "chapter", "глава": "chapter", "chapitre": "chapter", "kapitel": "chapter", "capo": "chapter",
	"part": "part", "parte": "part", "partie": "part", "teil": "part", "раздел": "part",
	"title": "title", "título": "title", "titre": "title", "titel": "title",
	"section": "section", "sección": "section", "abschnitt": "section", "sezione": "section",
	"recital": "recital", "considerando": "recital", "erwägungsgrund": "recital",
	"table": "table", "tabla": "table", "таблица": "table", "tableau": "table", "tabelle": "table", "tabella": "table",
	"figure": "figure", "figura": "figure", "рисунок": "figure", "abbildung": "figure",
	"часть": "part-of-article", "пункт": "point",
}

// AddressKey folds an address (canonical or as typed) for comparison:
// ParseAddress's canonical form, then lower case, keywords of any language
// mapped to one word ("Tabla 1.2", "Таблица 1.2" and "table 1.2" are one
// key; "Appendix A" and "Annex A" too), Cyrillic look-alike letters to
// Latin, "_" and "-" between words to spaces. A title address ("Method
// sets", "method_sets") is folded the same way.
func AddressKey(s string) string {
	a, ok := ParseAddress(s)
	if !ok || a.Citation == "" {
		t := normalizeSpace(strings.NewReplacer("_", " ").Replace(s))
		t = strings.TrimSuffix(t, ".")
		return strings.Join(strings.FieldsFunc(foldKey(t), func(r rune) bool { return r == '-' || unicode.IsSpace(r) }), " ")
	}
	return foldKey(a.Citation)
}

// foldKey folds an address already in canonical form (see AddressKey).
func foldKey(c string) string {
	var sb strings.Builder
	sb.Grow(len(c))
	cyrillic := false
	for i := 0; i < len(c); {
		// One field at a time.
		for i < len(c) && c[i] == ' ' {
			i++
		}
		if i >= len(c) {
			break
		}
		j := i
		for j < len(c) && c[j] != ' ' {
			if c[j] >= 0x80 {
				cyrillic = true
			}
			j++
		}
		f := c[i:j]
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		head, tail := f, ""
		if k := strings.IndexByte(f, '('); k > 0 {
			head, tail = f[:k], f[k:]
		}
		if r, _ := utf8.DecodeRuneInString(head); unicode.IsLetter(r) {
			if w, ok := keyWords[strings.ToLower(head)]; ok {
				sb.WriteString(w)
				sb.WriteString(strings.ToLower(tail))
				i = j
				continue
			}
		}
		sb.WriteString(strings.ToLower(f))
		i = j
	}
	if !cyrillic {
		return sb.String()
	}
	return lookalike.Replace(sb.String())
}

// unitOf reads an element segment address ("Article 7", "(3)", "6.3",
// "часть 2", "Annex II") as one unit; ok is false for a segment that is
// not exactly one unit (a slug, an HTML id, a leaf key).
func unitOf(segment string) (addrUnit, bool) {
	if segment == "" {
		return addrUnit{}, false
	}
	if isLeafKey(segment) {
		return addrUnit{}, false
	}
	unitCache.Lock()
	r, ok := unitCache.m[segment]
	unitCache.Unlock()
	if ok {
		return r.u, r.ok
	}
	u, found := parseUnit(segment)
	unitCache.Lock()
	if len(unitCache.m) >= 8192 {
		unitCache.m = map[string]unitResult{}
	}
	unitCache.m[segment] = unitResult{u, found}
	unitCache.Unlock()
	return u, found
}

// unitCache remembers unitOf's answers: segments repeat ("1", "(a)",
// "Article 5") and parsers ask about them many times. It is bounded (it
// starts afresh past 8192 segments).
var unitCache = struct {
	sync.Mutex
	m map[string]unitResult
}{m: map[string]unitResult{}}

type unitResult struct {
	u  addrUnit
	ok bool
}

func parseUnit(segment string) (addrUnit, bool) {
	if i := strings.IndexByte(segment, '~'); i > 0 {
		segment = segment[:i]
	}
	if isLeafKey(segment) {
		return addrUnit{}, false
	}
	segment = quotePunkt(segment)
	if m := addrSyntax().numberID.FindStringIndex(segment); m != nil && m[1] == len(segment) {
		return addrUnit{kind: unitNumber, id: segment}, true
	}
	c, ok := parseComp(segment, 0)
	if !ok || c.end != len(segment) || len(c.units) != 1 {
		return addrUnit{}, false
	}
	u := c.units[0]
	if u.kind == unitNumber && c.locator == "section" && isDigits(u.id) {
		// "Section 2", "SECTION 1": a division of a chapter.
		return addrUnit{kind: unitSection, word: c.word, id: u.id}, true
	}
	if u.kind == unitNumber && c.locator == "пункт" {
		// "пункт 1" of a Russian article.
		return addrUnit{kind: unitPunkt, word: "пункт", id: u.id}, true
	}
	if u.kind == unitNumber && c.locator != "" {
		return addrUnit{}, false
	}
	return u, true
}

// itoa is strconv.Itoa, kept short for address building.
func itoa(n int) string { return strconv.Itoa(n) }

// isLeafKey reports whether a segment is a leaf key the builder made: a
// kind letter and a hex content key or an ordinal ("p-3fa2c1", "t2").
func isLeafKey(s string) bool {
	if len(s) < 2 || !strings.ContainsRune(leafKinds, rune(s[0])) {
		return false
	}
	if s[1] == '-' {
		return len(s) > 2
	}
	return isDigits(s[1:])
}

// leafKinds are the kind letters of leaf keys (see leafAddress).
const leafKinds = "plctnkf"

func quotePunkt(s string) string {
	if !strings.Contains(s, "пункт ") {
		return s
	}
	return addrSyntax().barePunkt.ReplaceAllString(s, "пункт «$1»$2")
}

// headingUnit reads a heading that starts with a keyword unit ("Article 5",
// "CHAPTER I", "ANNEX II", "SECTION 1", "Статья 5.", "Anejo SI A
// Terminología") and returns the unit and the rest of the heading (its
// title, without a separating full stop, colon or dash). Articles and
// recitals need the unit to stand first; "Section N" is a division here.
func headingUnit(text string) (addrUnit, string, bool) {
	t := normalizeSpace(text)
	c, ok := parseComp(t, 0)
	if !ok || len(c.units) != 1 {
		return addrUnit{}, "", false
	}
	u := c.units[0]
	switch u.kind {
	case unitAnnex, unitPart, unitTitle, unitChapter, unitArticle:
	case unitSection:
	case unitNumber:
		if c.locator != "section" || !isDigits(u.id) {
			return addrUnit{}, "", false
		}
		u = addrUnit{kind: unitSection, word: c.word, id: u.id}
	default:
		return addrUnit{}, "", false
	}
	rest := strings.TrimLeft(t[c.end:], " ")
	if rest != "" {
		r, _ := utf8.DecodeRuneInString(rest)
		switch {
		case strings.ContainsRune(".:—–-", r):
			rest = strings.TrimSpace(rest[utf8.RuneLen(r):])
		case c.end < len(t) && t[c.end] != ' ':
			return addrUnit{}, "", false // "Article 5(2)" is a reference, not a heading
		}
	}
	if u.kind == unitAnnex && u.id == "" {
		return addrUnit{}, "", false
	}
	return u, rest, true
}
