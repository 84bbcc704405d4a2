package retrieval

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// reAsksQuantity returns the pattern of a question whose answer is a
// quantity, compiled on first use: a number, an amount, a duration, an
// age, a limit ("how many", "how long", "what is the maximum number",
// "сколько", "на какой срок", "с какого возраста", "cuántos"). Its answer
// has a number near the question's words.
var reAsksQuantity = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\bhow (?:many|much|long|old|often|far|soon|large|big|high|frequently)\b|` +
		`\b(?:maximum|minimum|max|min) (?:number|amount|size|length|duration|period|age|value|sum|fine|fee|penalty|term|time|count|rate|percentage)\b|` +
		`\b(?:what|which) (?:age|percentage|proportion|amount|sum|fee|price|cost|deadline|time limit)\b|\bat what age\b|` +
		`(?:^|[^\p{L}])сколько|на какой срок|какого (?:срока|времени|периода|возраста)|какой (?:срок|возраст|размер|процент)|` +
		`как\p{L}* (?:максимальн|минимальн)\p{L}* (?:размер|срок|число|количеств|возраст|сумм|штраф)|какое (?:число|количество)|` +
		`какова (?:сумма|величина|продолжительность)|` +
		`cu[áa]nt[oa]s?\b|qu[ée] (?:edad|plazo|importe|porcentaje)|por cu[áa]nto tiempo|` +
		`combien\b|quel (?:âge|délai|montant)`)
})

// quantityTables holds the word lists quantityTerms tells quantities from
// other numbers with; quantityWords builds them.
type quantityTables struct {
	// numberWords are numerals and frequencies written out, in the
	// languages the analyzer stems: quantities without digits ("six years",
	// "шесть лет", "более двух сроков", "annually"). "One" and its forms
	// are left out: "one of the following" is no quantity.
	numberWords map[string]bool
	// referenceWords are the words a number names a part of a document
	// after ("Section 6", "Article 7", "статья 81", "часть 3"): such a
	// number is no quantity.
	referenceWords map[string]bool
}

// quantityWords returns the word lists of quantities, built on first use.
var quantityWords = sync.OnceValue(func() *quantityTables {
	return &quantityTables{
		numberWords: wordSet(`two three four five six seven eight nine ten eleven twelve thirteen fourteen
			fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred
			thousand million billion once twice thrice half dozen annually yearly monthly weekly daily hourly
			два две двух двум двумя три трех трем тремя четыре четырех четырем четырьмя пять пяти пятью шесть шести
			шестью семь семи восемь восьми девять девяти десять десяти одиннадцать одиннадцати двенадцать двенадцати
			пятнадцать пятнадцати двадцать двадцати тридцать тридцати сорок сорока пятьдесят пятидесяти сто ста
			двести трехсот пятьсот тысяча тысячи тысяч миллион миллиона полтора полутора дважды трижды половина
			ежегодно ежемесячно еженедельно ежедневно
			dos tres cuatro cinco seis siete ocho nueve diez once doce quince veinte treinta cuarenta cincuenta cien
			ciento mil millón anualmente mensualmente semanalmente diariamente
			deux trois quatre cinq sept huit neuf dix douze quinze vingt trente quarante cinquante cent mille`),
		referenceWords: wordSet(`section sections article articles art rfc annex annexes appendix table tables
			figure chapter chapters paragraph paragraphs point points clause clauses subsection item items step version
			regulation directive decision no nr
			статья статьи статье статью статьей статей ст часть части частью пункт пункта пункте пунктом пункты пунктов
			п пп глава главы главе раздел раздела разделе приложение приложения таблица таблицы таблице
			artículo artículos art apartado anexo capítulo tabla sección
			article chapitre annexe tableau`),
	}
})

// wordSet is the set of the words of s (separated by white space).
func wordSet(s string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(s) {
		set[w] = true
	}
	return set
}

// quantityTerms are text's terms as indexTerms has them, and for each
// whether it is a quantity: a number that is not a reference's
// ("Section 6.3", "Статья 81"), a list marker or heading number at the
// start of a line ("6.3. Obfuscated Identifier"), or part of an address,
// version or identifier ("192.0.2.43", "2017/745"); or a numeral written
// out ("six", "двух").
func quantityTerms(text, lang string) ([]string, []bool) {
	text = norm.NFC.String(text)
	var terms []string
	var qty []bool
	prev := ""
	for s, end := range wordSpans(text) {
		w := foldWord(strings.ToLower(text[s:end]))
		if !keepWord(w) {
			prev = w
			continue
		}
		terms = append(terms, stem(wordLang(lang, w), w))
		qty = append(qty, quantityWords().numberWords[w] || isNumber(w) && isQuantity(text, s, end, prev))
		prev = w
	}
	return terms, qty
}

// isQuantity reports whether the digits text[s:e], after the word prev,
// are a quantity: not a reference's number ("Section 6", "статьи 81"),
// not part of a dotted, colon or slash group ("6.3", "192.0.2.43",
// "12:30", "2017/745"), not attached to a label ("е.1", "A1"), a footnote
// or citation mark ("<19>", "[3]"), an ABNF repetition ("1*DIGIT",
// "1#element"), and not a list marker or heading number at the start of
// a line ("1. …", "2) …").
func isQuantity(text string, s, e int, prev string) bool {
	if quantityWords().referenceWords[prev] {
		return false
	}
	if s > 0 {
		switch c := text[s-1]; {
		case c == '.' || c == ':' || c == '/' || c == '<' || c == '[' || c == '#' || c == '-' && s > 1 && isDigitByte(text[s-2]):
			return false
		default:
			if r, _ := utf8.DecodeLastRuneInString(text[:s]); unicode.IsLetter(r) || r == '§' {
				return false // "е1", "§3"
			}
		}
	}
	if e < len(text) {
		switch text[e] {
		case '*', '#', '>', ']':
			return false
		case '.', ':', '/':
			if e+1 < len(text) && isDigitByte(text[e+1]) {
				return false
			}
		}
	}
	// A list marker or heading number: first on its line (or after a
	// heading path's "›"), followed by "." or ")".
	before := strings.TrimRight(text[strings.LastIndexByte(text[:s], '\n')+1:s], " \t(")
	if (before == "" || strings.HasSuffix(before, "›")) && e < len(text) && (text[e] == '.' || text[e] == ')') {
		return false
	}
	return true
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }
