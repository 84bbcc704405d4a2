package retrieval

import (
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// referenceLexicalText is LexicalText by the general path for every text:
// Unicode words (NFC, letters, digits and combining marks, folded), kept
// by their rune count, stemmed and joined.
func referenceLexicalText(text, lang string) string {
	var out []string
	for _, w := range unicodeWords(text) {
		r := []rune(w)
		if len(w) > 40 || len(r) < 2 && !unicode.IsDigit(r[0]) {
			continue
		}
		out = append(out, stem(wordLang(lang, w), w))
	}
	return strings.Join(out, " ")
}

// analyzerTexts are texts of every kind the analyzer meets: ASCII table
// rows and prose, punctuation only, digits, one-letter words, words at
// and over 40 bytes, Russian, mixed scripts, accents, decomposed accents
// (NFC composes them), Latin look-alikes in Cyrillic words, invalid UTF-8.
var analyzerTexts = []string{
	"", " ", "a", "7", "ab", "Horses, asses, mules and hinnies; live",
	"Meat of bovine animals, fresh or chilled: carcasses & half-carcasses",
	"The Forwarded HTTP header field (RFC 7239, section 4) MAY be used by proxies.",
	"RFC 7231 § 6.5.1 a", "x-forwarded-for: 10.0.0.1;by=_hidden", "I/O, a.b.c, e-mail, U.S.A.",
	strings.Repeat("x", 40) + " " + strings.Repeat("y", 41) + " " + strings.Repeat("9", 45),
	"ALL CAPS TEXT WITH NUMBERS 123ABC and MiXeD cAsE", "tab\tnew\nline\r\nend", "1234 — ///",
	"Президент Российской Федерации является главой государства", "Cпецификации ещё", "Ёлка ёж",
	"naïve café résumé", "nai\u0308ve cafe\u0301", "¿Cuál es la anchura mínima de las puertas de evacuación?",
	"Le présent règlement établit des règles", "HTTP/1.1 «quoted» text", "İstanbul ß straße",
	"mixed English и русский text", "\xff\xfe invalid \xc3", "日本語のテキスト 123",
}

// TestLexicalTextFastPath: the ASCII path of LexicalText and words gives
// what the general path gives, in every language.
func TestLexicalTextFastPath(t *testing.T) {
	t.Parallel()
	for _, text := range analyzerTexts {
		for _, lang := range []string{LangEnglish, LangRussian, LangSpanish, LangFrench, "de", ""} {
			require.Equal(t, referenceLexicalText(text, lang), LexicalText(text, lang), "%q in %q", text, lang)
		}
		if isASCII(text) {
			require.Equal(t, unicodeWords(text), asciiWords(text), "%q", text)
		}
	}
	require.Equal(t, "hors ass mule and hinni live", LexicalText("Horses, asses, mules and hinnies; live", LangEnglish))
}

// referenceDetectLanguage is DetectLanguage by the general path: script
// counts, then stop words among the Unicode words.
func referenceDetectLanguage(text string) string {
	if len(text) > 64<<10 {
		text = text[:64<<10]
	}
	var cyr, lat int
	for _, r := range text {
		switch {
		case unicode.Is(unicode.Cyrillic, r):
			cyr++
		case unicode.Is(unicode.Latin, r):
			lat++
		}
	}
	if cyr+lat == 0 {
		return ""
	}
	if cyr > lat {
		return LangRussian
	}
	return latinLanguage(unicodeWords(text), 1)
}

// TestDetectLanguageFastPath: the ASCII path of DetectLanguage gives what
// the general path gives, Spanish and French written without accents
// included.
func TestDetectLanguageFastPath(t *testing.T) {
	t.Parallel()
	texts := append([]string{"de la casa y el perro que los otros", "le chat et la maison sur les toits de une ville",
		"el y la", "le et les", strings.Repeat("de la y el ", 7000) + "the of and"}, analyzerTexts...)
	for _, text := range texts {
		require.Equal(t, referenceDetectLanguage(text), DetectLanguage(text), "%q", text)
	}
	require.Equal(t, LangSpanish, DetectLanguage("de la casa y el perro que los otros"))
	require.Equal(t, LangFrench, DetectLanguage("le chat et la maison sur les toits de une ville"))
}

// TestLexicalTextDetect: LexicalTextDetect gives LexicalText in the
// language DetectLanguage gives, for texts of every kind, over 64 KiB
// included (only the first 64 KiB choose the language).
func TestLexicalTextDetect(t *testing.T) {
	t.Parallel()
	texts := append([]string{"de la casa y el perro que los otros", "le chat et la maison sur les toits de une ville",
		"EL Y LA CASA", "123 456", strings.Repeat("de la y el ", 7000) + "the of and",
		strings.Repeat("the ", 17000) + strings.Repeat(" de la y el", 9000)}, analyzerTexts...)
	for _, text := range texts {
		lang := DetectLanguage(text)
		lex, got := LexicalTextDetect(text)
		require.Equal(t, lang, got, "%q", text)
		require.Equal(t, LexicalText(text, lang), lex, "%q", text)
	}
	lex, lang := LexicalTextDetect("Horses, asses, mules and hinnies; live")
	require.Equal(t, "hors ass mule and hinni live", lex)
	require.Equal(t, LangEnglish, lang)
	lex, lang = LexicalTextDetect("DE LA CASA Y EL PERRO QUE LOS OTROS")
	require.Equal(t, LangSpanish, lang)
	// Upper case lowered, stop words kept, "y" dropped (one letter), the
	// rest stemmed in Spanish (casa → cas, perro → perr).
	require.Equal(t, "de la cas el perr que los otros", lex)
}

func FuzzLexicalText(f *testing.F) {
	for _, text := range analyzerTexts {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, lang := range []string{LangEnglish, LangRussian} {
			if got, want := LexicalText(text, lang), referenceLexicalText(text, lang); got != want {
				t.Fatalf("LexicalText(%q, %q) = %q, want %q", text, lang, got, want)
			}
		}
		if isASCII(text) {
			require.Equal(t, unicodeWords(text), asciiWords(text), "%q", text)
		}
		if got, want := DetectLanguage(text), referenceDetectLanguage(text); got != want {
			t.Fatalf("DetectLanguage(%q) = %q, want %q", text, got, want)
		}
		if lex, lang := LexicalTextDetect(text); lang != DetectLanguage(text) || lex != LexicalText(text, lang) {
			t.Fatalf("LexicalTextDetect(%q) = %q, %q", text, lex, lang)
		}
	})
}
