package retrieval

import (
	"maps"
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
	return regexp.MustCompile(`(?i)\bhow (?:many|much|long|old|often|far|soon|large|big|high|frequently)\b(?:[^-]|$)|` +
		`\b(?:maximum|minimum|max|min) (?:number|amount|size|length|duration|period|age|value|sum|fine|fee|penalty|term|time|count|rate|percentage)\b|` +
		`\b(?:what|which) (?:age|percentage|proportion|amount|sum|fee|price|cost|deadline|time limit)\b|\bat what age\b|` +
		`\b(?:what|which)(?:'s| is| are) the (?:deadline|time limit)s?\b|` +
		`(?:^|[^\p{L}])сколь(?:ко|ких|ким|кими)(?:[^\p{L}-]|$)|на какой срок|какого (?:срока|времени|периода|возраста)|(?:какой|каков) (?:срок|возраст|размер|процент)|` +
		`как\p{L}* (?:максимальн|минимальн)\p{L}* (?:размер|срок|число|количеств|возраст|сумм|штраф)|(?:какое|каково) (?:\p{L}+ )?(?:число|количество)|` +
		`(?:какова|какая) (?:сумма|величина|продолжительность)|как (?:долго|часто)|` +
		`cu[áa]nt[oa]s?\b|qu[ée] (?:edad|plazo|importe|porcentaje)|por cu[áa]nto tiempo|con qu[ée] frecuencia|` +
		`cu[áa]l(?:es)? (?:es|son) (?:el|la|los|las) (?:plazo|importe|edad|duraci[óo]n|cantidad|n[úu]mero|porcentaje|cuant[íi]a)s?\b|` +
		`\b(?:plazo|importe|edad|duraci[óo]n|cantidad|n[úu]mero|porcentaje|multa|cuant[íi]a|anchura|altura|longitud|tama[ñn]o|per[íi]odo|valor|sanci[óo]n)(?:es|s)? (?:m[áa]xim|m[íi]nim)[oa]s?\b|` +
		`combien\b|quel (?:âge|délai|montant)|à quelle fréquence|` +
		`quel(?:le)?s? (?:est|sont) (?:le |la |les |l['’])(?:délai|montant|durée|âge|nombre|taille|prix|coût|pourcentage|taux)|` +
		`(?:^|[^\p{L}])(?:délai|montant|durée|âge|nombre|taille|amende|période|valeur)s? (?:maxim|minim)(?:al|ale|ales|aux|um)\b`)
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

// Unit classes: the words a quantity of one kind is given in, as stems
// (unitClasses). A question asking "how long" is answered by a number of
// days or years, or of characters or bytes (a duration or a length); "how much does it cost" by
// euros or roubles.
const (
	unitTime   = "time"
	unitLength = "length"
	unitSize   = "size"
	unitMoney  = "money"
	unitAge    = "age"
	unitFreq   = "frequency"
)

// unitWords are the words of each unit class, in the languages the
// analyzer stems (forms a stem does not join are listed each).
var unitWords = map[string]string{
	unitTime: `second seconds minute minutes hour hours day days week weeks month months year years
		business calendar working annually yearly monthly weekly daily hourly
		секунда секунды секунд минута минуты минут час часа часов сутки суток день дня дней неделя недели недель
		месяц месяца месяцев год года годы лет ежегодно ежемесячно еженедельно ежедневно
		segundo segundos minuto minutos hora horas día días semana semanas mes meses año años
		seconde secondes heure heures jour jours semaine semaines mois an ans année années`,
	unitLength: `character characters char chars byte bytes octet octets bit bits letter letters digit digits word words
		символ символа символов байт байта байтов бит бита битов буква букв цифр слов
		carácter caracteres octeto octetos caractère caractères octet`,
	unitSize: `byte bytes kb kib mb mib gb gib kilobyte kilobytes megabyte megabytes gigabyte gigabytes bit bits
		байт байта байтов килобайт мегабайт гигабайт`,
	unitMoney: `euro euros eur dollar dollars usd cent cents pound pounds
		рубль рубля рублей руб евро доллар доллара долларов копеек
		dólar dólares`,
	unitAge: `year years old age aged
		лет год года возраст возраста возрасте
		año años edad âge ans`,
	unitFreq: `time times per every once twice annually yearly monthly weekly daily hourly
		раз раза каждые каждый каждую ежегодно ежемесячно еженедельно ежедневно
		vez veces cada fois chaque`,
}

// unitClasses returns the stems of each unit class, built on first use.
var unitClasses = sync.OnceValue(func() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for class, words := range unitWords {
		set := map[string]bool{}
		for _, w := range strings.Fields(words) {
			for _, lang := range []string{LangEnglish, LangSpanish, LangFrench} {
				set[stem(wordLang(lang, w), w)] = true
			}
			set[w] = true
		}
		out[class] = set
	}
	return out
})

// reAskedUnit returns the patterns that tell which unit a quantity
// question asks in, compiled on first use: "noun" the word after "how
// many" ("how many days", "сколько судей"), or a class.
var reAskedUnit = sync.OnceValue(func() []askedUnitPattern {
	p := func(class, re string) askedUnitPattern {
		return askedUnitPattern{class, regexp.MustCompile(`(?i)` + re)}
	}
	return []askedUnitPattern{
		p(unitMoney, `\bhow much\b.*\b(?:cost|costs|pay|paid|charge|charges|charged|fee|fees|price)\b|\b(?:what|which) (?:fee|price|cost|sum)\b|`+
			`\b(?:maximum|minimum|max|min) (?:amount|sum|fine|fee|penalty|price)\b|сколько (?:сто(?:ит|ят|ил)|плат(?:ит|ят|ить|ил)|денег)|`+
			`(?:какой|каков\p{L}*|какая) (?:\p{L}+ )?(?:размер|сумма) (?:\p{L}+ )?(?:штраф|пошлин|платы|взнос|пенси|зарплат|оплат)|cu[áa]nto cuesta|`+
			`(?:importe|cuant[íi]a) (?:de la|del) (?:multa|tasa|sanci[óo]n)|multa (?:m[áa]xima|m[íi]nima)|quel (?:est le )?montant|montant (?:maximal|minimal)|combien co[ûu]te`),
		p(unitAge, `\bhow old\b|\b(?:at )?what age\b|\b(?:maximum|minimum|max|min) age\b|(?:какого|каком|какой) возраст|qu[ée] edad|edad (?:m[íi]nima|m[áa]xima)|quel âge`),
		p(unitFreq, `\bhow (?:often|frequently)\b|как часто|cada cu[áa]nto|con qu[ée] frecuencia|à quelle fréquence`),
		p(unitSize, `\bhow (?:big|large)\b|\b(?:maximum|minimum|max|min) size\b|какого размера|tama[ñn]o (?:m[áa]ximo|m[íi]nimo)|taille (?:maximale|minimale)`),
		p(unitLength, `\b(?:maximum|minimum|max|min) length\b|\bhow long\s[^?]*\bbe(?: at (?:most|least))?\s*\??\s*$`),
		p(unitTime, `\bhow (?:long|soon)\b(?:[^-]|$)|как долго|сколько времени|\b(?:maximum|minimum|max|min) (?:duration|period|term|time)\b|\b(?:what|which)(?:(?:'s| is| are) the)? (?:deadline|time limit)s?\b|`+
			`на какой срок|(?:какой|каков\p{L}*) (?:\p{L}+ )?срок|какого (?:срока|времени|периода)|какова продолжительность|`+
			`cu[áa]nto tiempo|qu[ée] plazo|cu[áa]l es el plazo|plazo (?:m[áa]ximo|m[íi]nimo)|combien de temps|quel délai|quel(?:le)? est (?:le délai|la durée)|(?:délai|durée) (?:maximal|minimal)`),
		p("noun", `\bhow many ([\p{L}-]+)(?: ([\p{L}-]+))?|\b(?:maximum|minimum|max|min) number of ([\p{L}-]+)|(?:^|[^\p{L}])сколь(?:ко|ких|ким|кими) ([\p{L}-]+)|`+
			`(?:какое|каково) (?:\p{L}+ )?(?:число|количество) ([\p{L}-]+)|cu[áa]nt[oa]s ([\p{L}-]+)|combien de ([\p{L}-]+)`),
	}
})

type askedUnitPattern struct {
	class string
	re    *regexp.Regexp
}

// askedUnits are the stems of the unit a quantity question asks in: the
// class its wording asks for ("how long": a time or a length, a length
// when it ends "… be?", "how long may the name be"; "how much does it
// cost": money), else the
// noun after "how many" ("how many judges" → judg), with its unit class
// when it has one ("how many days": every unit of time); name says it
// ("time", "money", "judges"). Nil when the question names no unit ("how
// many of them").
func askedUnits(query string) (units map[string]bool, name string) {
	classes := unitClasses()
	for _, p := range reAskedUnit() {
		m := p.re.FindStringSubmatch(query)
		if m == nil {
			continue
		}
		if p.class != "noun" {
			out := maps.Clone(classes[p.class])
			name := p.class
			if p.class == unitTime && strings.Contains(strings.ToLower(m[0]), "how long") {
				maps.Copy(out, classes[unitLength]) // a duration or a length
				name = "time or length"
			}
			return out, name
		}
		out := map[string]bool{}
		for _, w := range m[1:] {
			w = foldWord(strings.ToLower(w))
			lang := wordLang(DetectLanguage(query), w)
			if w == "" || !keepWord(w) || isStopWord(lang, w) {
				continue
			}
			s := stem(lang, w)
			for _, set := range classes {
				if set[s] || set[w] {
					maps.Copy(out, set)
				}
			}
			out[s] = true
			name = w
			break // the noun; a second word only when the first was a stop word ("how many of the")
		}
		if len(out) == 0 {
			return nil, ""
		}
		return out, name
	}
	return nil, ""
}

// unitDistance is how many terms a quantity may stand from the unit it
// is given in ("15 days", "не более двух сроков подряд", "a period of at
// least 10 years").
const unitDistance = 3

// withUnit keeps, of the quantities qty marks among terms, those given
// in one of units: within unitDistance terms of one of them, or one
// itself ("annually"). Nil units keep every quantity.
func withUnit(terms []string, qty []bool, units map[string]bool) []bool {
	if units == nil {
		return qty
	}
	out := make([]bool, len(qty))
	for i, q := range qty {
		if !q {
			continue
		}
		for j := max(0, i-unitDistance); j <= min(len(terms)-1, i+unitDistance) && !out[i]; j++ {
			out[i] = units[terms[j]]
		}
	}
	return out
}
