package retrieval

import (
	"iter"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"github.com/kljensen/snowball/french"
	"github.com/kljensen/snowball/russian"
	"github.com/kljensen/snowball/spanish"
	"golang.org/x/text/unicode/norm"
)

// AnalyzerVersion names the lexical analyzer's output format. It is part of
// every pipeline's config fingerprint: a change re-indexes every record once.
const AnalyzerVersion = "lex-3"

// Languages the analyzer stems (Snowball stemmers,
// github.com/kljensen/snowball); others are lower-cased and split only.
const (
	LangEnglish = "en"
	LangRussian = "ru"
	LangSpanish = "es"
	LangFrench  = "fr"
)

// latinLanguages are the Latin-script languages DetectLanguage tells apart.
var latinLanguages = [...]string{LangEnglish, LangSpanish, LangFrench}

// DetectLanguage guesses the language of text from its script and its stop
// words: "ru" when most letters are Cyrillic; otherwise the Latin-script
// language among en, es and fr whose stop words are the most frequent
// (en when none stands out); "" when the text has no letters. It reads at
// most the first 64 KiB.
func DetectLanguage(text string) string {
	if len(text) > 64<<10 {
		text = text[:64<<10]
	}
	var cyr, lat int
	ascii := true
	for _, r := range text {
		switch {
		case r < utf8.RuneSelf: // ASCII: a Latin letter or no letter
			if c := r | 0x20; c >= 'a' && c <= 'z' {
				lat++
			}
			continue
		case unicode.Is(unicode.Cyrillic, r):
			cyr++
		case unicode.Is(unicode.Latin, r):
			lat++
		}
		ascii = false
	}
	if cyr+lat == 0 {
		return ""
	}
	if cyr > lat {
		return LangRussian
	}
	var counts stopCounts
	if !ascii {
		for _, w := range words(text) {
			counts.add(w)
		}
		return counts.language(1)
	}
	sc := scanASCIIWords(text)
	for w, ok := sc.next(); ok; w, ok = sc.next() {
		counts.add(w)
	}
	return counts.language(1)
}

// stopCounts counts the stop words of each of latinLanguages among words,
// by index in latinLanguages (English first).
type stopCounts [len(latinLanguages)]int

func (c *stopCounts) add(w string) {
	for i, l := range latinLanguages {
		if isStopWord(l, w) {
			c[i]++
		}
	}
}

// latinLanguage picks en, es or fr by stop-word counts among ws: another
// language than English needs more than min stop words, and more than
// English has.
func latinLanguage(ws []string, min int) string {
	var counts stopCounts
	for _, w := range ws {
		counts.add(w)
	}
	return counts.language(min)
}

// language is latinLanguage of the counted words.
func (counts *stopCounts) language(min int) string {
	best, bestN := LangEnglish, 0
	for i, l := range latinLanguages {
		if n := counts[i]; n > bestN {
			best, bestN = l, n
		}
	}
	if best != LangEnglish && (bestN <= min || bestN <= counts[0]) {
		return LangEnglish
	}
	return best
}

// words splits text into lower-cased words: maximal runs of letters, digits
// and combining marks, in Unicode NFC, with ё folded to е and Latin
// look-alike letters inside a Cyrillic word folded to Cyrillic (PDF and
// DOCX conversions mix them: "Cпецификации" with a Latin C).
func words(text string) []string {
	if isASCII(text) {
		return asciiWords(text)
	}
	return unicodeWords(text)
}

// isASCII reports whether s has only ASCII bytes.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiWords is words of an ASCII text: NFC leaves it as it is, its
// letters and digits are [A-Za-z0-9] (it has no combining mark) and a
// word without Cyrillic letters has nothing to fold, so the words are the
// runs of [a-z0-9] of the lower-cased text.
func asciiWords(text string) []string {
	return appendASCIIWords(nil, text)
}

// asciiWordScanner reads the words of asciiWords one by one, without
// collecting them.
type asciiWordScanner struct {
	lower string // the text, lower-cased
	i     int    // where the next word is looked for
}

func scanASCIIWords(text string) asciiWordScanner {
	return asciiWordScanner{lower: lowerASCII(text)}
}

// next returns the next word, or false after the last.
func (s *asciiWordScanner) next() (string, bool) {
	for s.i < len(s.lower) && !isASCIIWordByte(s.lower[s.i]) {
		s.i++
	}
	if s.i == len(s.lower) {
		return "", false
	}
	j := s.i + 1
	for j < len(s.lower) && isASCIIWordByte(s.lower[j]) {
		j++
	}
	w := s.lower[s.i:j]
	s.i = j
	return w, true
}

// lowerASCII is strings.ToLower of an ASCII text: text itself when it has
// no upper-case letter, else one copy, written a run of other bytes at a
// time (strings.ToLower writes it a byte at a time).
func lowerASCII(text string) string {
	var b strings.Builder
	start := 0 // of the run of bytes not written yet that need no change
	for i := 0; i < len(text); i++ {
		if c := text[i]; c >= 'A' && c <= 'Z' {
			if b.Cap() == 0 {
				b.Grow(len(text))
			}
			b.WriteString(text[start:i])
			b.WriteByte(c + ('a' - 'A'))
			start = i + 1
		}
	}
	if b.Cap() == 0 {
		return text
	}
	b.WriteString(text[start:])
	return b.String()
}

// isASCIIWordByte reports whether c, a byte of a lower-cased ASCII text,
// belongs to a word: a letter or a digit.
func isASCIIWordByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// unicodeWords is words of any text.
func unicodeWords(text string) []string {
	text = norm.NFC.String(text)
	var out []string
	for start, end := range wordSpans(text) {
		out = append(out, foldWord(strings.ToLower(text[start:end])))
	}
	return out
}

// wordSpans yields the byte ranges [start, end) of text's words: runs of
// letters, digits and nonspacing marks.
func wordSpans(text string) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		start := -1
		for i, r := range text {
			if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) {
				if start < 0 {
					start = i
				}
				continue
			}
			if start >= 0 {
				if !yield(start, i) {
					return
				}
				start = -1
			}
		}
		if start >= 0 {
			yield(start, len(text))
		}
	}
}

// latinToCyrillic maps Latin letters to the Cyrillic letters they look like.
var latinToCyrillic = map[rune]rune{
	'a': 'а', 'c': 'с', 'e': 'е', 'o': 'о', 'p': 'р', 'x': 'х', 'y': 'у', 'k': 'к', 'm': 'м', 'h': 'н', 't': 'т', 'b': 'в',
}

func foldWord(w string) string {
	var cyr, lat int
	for _, r := range w {
		switch {
		case unicode.Is(unicode.Cyrillic, r):
			cyr++
		case unicode.Is(unicode.Latin, r):
			lat++
		}
	}
	if cyr == 0 {
		return w
	}
	return strings.Map(func(r rune) rune {
		if r == 'ё' {
			return 'е'
		}
		if lat > 0 && cyr > lat {
			if c, ok := latinToCyrillic[r]; ok {
				return c
			}
		}
		return r
	}, w)
}

func isCyrillic(w string) bool {
	for _, r := range w {
		if unicode.Is(unicode.Cyrillic, r) {
			return true
		}
	}
	return false
}

func isStopWord(lang, w string) bool {
	switch lang {
	case LangEnglish:
		return english.IsStopWord(w)
	case LangRussian:
		return russian.IsStopWord(w)
	case LangSpanish:
		return spanish.IsStopWord(w)
	case LangFrench:
		return french.IsStopWord(w)
	}
	return false
}

// stem is the Snowball stem of a lower-cased word in lang, with accents
// folded afterwards ("evacuación" → "evacu"); a word in another script
// than lang's, or in an unknown language, is returned as it is.
func stem(lang, w string) string {
	k := stemKey{lang, w}
	stems.Lock()
	s, ok := stems.m[k]
	stems.Unlock()
	if ok {
		return s
	}
	s = stemUncached(lang, w)
	stems.Lock()
	if len(stems.m) >= maxStems {
		clear(stems.m) // bounded: a long index run's vocabulary starts over
	}
	stems.m[k] = s
	stems.Unlock()
	return s
}

// stems caches stem: Snowball costs microseconds a word, and the words of
// a table's rows repeat.
var stems = struct {
	sync.Mutex
	m map[stemKey]string
}{m: map[stemKey]string{}}

type stemKey struct{ lang, word string }

// maxStems bounds the stem cache (a few MiB).
const maxStems = 1 << 16

func stemUncached(lang, w string) string {
	var s string
	switch lang {
	case LangEnglish:
		s = english.Stem(w, true)
	case LangRussian:
		s = russian.Stem(w, true)
	case LangSpanish:
		s = spanish.Stem(w, true)
	case LangFrench:
		s = french.Stem(w, true)
	default:
		s = w
	}
	return foldAccents(s)
}

// foldAccents drops combining marks after canonical decomposition: "á" → "a".
// Cyrillic "й" keeps its breve (it is a letter of its own).
func foldAccents(s string) string {
	if isCyrillic(s) {
		return s
	}
	d := norm.NFD.String(s)
	b := make([]rune, 0, len(d))
	for _, r := range d {
		if !unicode.Is(unicode.Mn, r) {
			b = append(b, r)
		}
	}
	return norm.NFC.String(string(b))
}

// wordLang is the language a word of a text in lang is stemmed in: Cyrillic
// words are Russian whatever the document's language; other words follow it.
func wordLang(lang, w string) string {
	if isCyrillic(w) {
		return LangRussian
	}
	if lang == LangRussian {
		return LangEnglish // Latin words in a Russian text are mostly English
	}
	return lang
}

// keepWord drops one-letter words (not digits) and words over 40 bytes
// (Tantivy drops tokens over 40 characters).
func keepWord(w string) bool {
	if len(w) > 40 {
		return false
	}
	if len(w) > 1 && w[0] < utf8.RuneSelf {
		return true // more than one rune
	}
	r, size := utf8.DecodeRuneInString(w)
	return size < len(w) || unicode.IsDigit(r)
}

// Terms is the lexical analyzer: the words of text (see words), without
// stop words and one-letter words, each stemmed in lang (a Cyrillic word in
// Russian). The same function analyzes indexed text and queries, so their
// terms meet in every lexical index.
func Terms(text, lang string) []string {
	var out []string
	for _, w := range words(text) {
		if !keepWord(w) {
			continue
		}
		l := wordLang(lang, w)
		if isStopWord(l, w) {
			continue
		}
		out = append(out, stem(l, w))
	}
	return out
}

// indexTerms are the terms a text is indexed by: Terms with the stop words
// kept (stemmed like the others), so that a query that quotes one (the
// "for" parameter) can find it; unquoted, a query drops them.
func indexTerms(text, lang string) []string {
	var out []string
	for _, w := range words(text) {
		if keepWord(w) {
			out = append(out, stem(wordLang(lang, w), w))
		}
	}
	return out
}

// LexicalText is the normalized text kept for lexical search: the text's
// terms, stop words included (indexTerms), joined by spaces. Every word of it is letters and digits only, so Memgraph's
// tokenizer (split on non-alphanumerics, lower-case) reads back the same
// terms.
func LexicalText(text, lang string) string {
	if !isASCII(text) {
		return strings.Join(indexTerms(text, lang), " ")
	}
	var buf [64]string
	return asciiLexical(appendASCIIWords(buf[:0], text), lang, len(text))
}

// appendASCIIWords appends the words of an ASCII text (asciiWords) to ws.
func appendASCIIWords(ws []string, text string) []string {
	sc := scanASCIIWords(text)
	for w, ok := sc.next(); ok; w, ok = sc.next() {
		ws = append(ws, w)
	}
	return ws
}

// asciiLexical is LexicalText of an ASCII text of size bytes in lang, given
// its words (asciiWords). They are not Cyrillic: each is stemmed in
// wordLang's language for them, written as the terms are found.
func asciiLexical(words []string, lang string, size int) string {
	wl := wordLang(lang, "")
	var b strings.Builder
	b.Grow(size)
	terms := 0
	for _, w := range words {
		if keepWord(w) {
			if terms > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(stem(wl, w))
			terms++
		}
	}
	return b.String()
}

// LexicalTextDetect is LexicalText(text, DetectLanguage(text)) and the
// language detected, with an ASCII text of up to 64 KiB (a table row's
// text, mostly) lower-cased and split into words once for both.
func LexicalTextDetect(text string) (lex, lang string) {
	if len(text) > 64<<10 || !isASCII(text) {
		lang = DetectLanguage(text)
		return LexicalText(text, lang), lang
	}
	var buf [64]string
	ws := appendASCIIWords(buf[:0], text)
	// DetectLanguage of an ASCII text: no letter, no language; else the
	// Latin language its stop words point to.
	if strings.IndexFunc(text, func(r rune) bool { return r|0x20 >= 'a' && r|0x20 <= 'z' }) >= 0 {
		lang = latinLanguage(ws, 1)
	}
	return asciiLexical(ws, lang, len(text)), lang
}

// queryWord is one content word of a query with the terms it may be
// indexed as: its stems in each candidate language.
type queryWord struct {
	word  string
	terms []string
}

// questionWords are words of questions that name no content, dropped from
// queries besides the stop words.
var questionWords = map[string]bool{
	// en
	"say": true, "says": true, "said": true, "according": true, "tell": true, "describe": true, "described": true,
	"explain": true, "mean": true, "means": true, "meaning": true, "please": true, "list": true, "give": true,
	"find": true, "show": true, "state": true, "states": true, "stated": true, "provide": true, "provides": true,
	"specify": true, "specifies": true, "happen": true, "happens": true, "happened": true, "possible": true,
	"many": true, "much": true, "whether": true, "way": true, "ways": true,
	// ru
	"какой": true, "какая": true, "какое": true, "какие": true, "каков": true, "какова": true, "каковы": true,
	"каким": true, "какого": true, "какую": true, "сказано": true, "говорится": true, "согласно": true,
	"почему": true, "сколько": true, "скольких": true, "ли": true, "что": true, "кто": true, "чем": true, "где": true,
	"каких": true, "каком": true, "какому": true, "такое": true, "нужно": true, "надо": true, "можно": true,
	// es
	"qué": true, "cuál": true, "cuáles": true, "cómo": true, "dónde": true, "cuándo": true, "cuánto": true,
	"cuántos": true, "cuánta": true, "cuántas": true, "dice": true, "según": true, "indica": true, "establece": true,
	// fr
	"quel": true, "quelle": true, "quels": true, "quelles": true, "comment": true, "pourquoi": true,
}

// reQuoted returns the pattern of a quoted phrase of a query ("by",
// «для», ‘for’), compiled on first use.
var reQuoted = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`"([^"]{1,80})"|«([^»]{1,80})»|“([^”]{1,80})”|‘([^’]{1,80})’`)
})

// quotedWords are the words a query quotes: a quoted word is a content
// word even when it is a stop word (the "for" parameter, the "by"
// parameter).
func quotedWords(query string) map[string]bool {
	out := map[string]bool{}
	for _, m := range reQuoted().FindAllStringSubmatch(query, -1) {
		for _, g := range m[1:] {
			for _, w := range words(g) {
				out[w] = true
			}
		}
	}
	return out
}

// analyzeQuery splits a query into its content words, each with its stems
// in the languages langs (the corpus's languages; a Cyrillic word is
// Russian only). A query in a language the corpus has is thus matched
// however short it is.
func analyzeQuery(query string, langs []string) []queryWord {
	if len(langs) == 0 {
		langs = []string{LangEnglish}
	}
	var out []queryWord
	seen := map[string]bool{}
	quoted := quotedWords(query)
	for _, w := range words(query) {
		if !keepWord(w) || questionWords[w] && !quoted[w] || seen[w] {
			continue
		}
		seen[w] = true
		cand := langs
		if isCyrillic(w) {
			cand = []string{LangRussian}
		}
		stop := false
		var terms []string
		for _, l := range cand {
			l = wordLang(l, w)
			if isStopWord(l, w) && !quoted[w] {
				stop = true
				break
			}
			if t := stem(l, w); !slices.Contains(terms, t) {
				terms = append(terms, t)
			}
		}
		if stop || len(terms) == 0 {
			continue
		}
		out = append(out, queryWord{word: w, terms: terms})
	}
	return out
}
