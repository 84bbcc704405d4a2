package retrieval

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAsksQuantity(t *testing.T) {
	for _, q := range []string{
		"How many days does a manufacturer have to report an incident?",
		"How long is a certificate valid?",
		"What is the maximum number of retries?",
		"At what age can a citizen vote?",
		"Сколько раз можно переизбираться?",
		"На какой срок назначается судья?",
		"С какого возраста можно голосовать?",
		"Каков минимальный размер штрафа?",
		"¿Cuántos días tiene el fabricante?",
	} {
		require.True(t, reAsksQuantity().MatchString(q), q)
	}
	for _, q := range []string{
		"Which proxies may add the Forwarded header?",
		"What is a Software Bill of Materials?",
		"Кто назначает судей?",
		"Насколько важна безопасность программы?", // "how important": a degree
		"How does the server choose a representation?",
	} {
		require.False(t, reAsksQuantity().MatchString(q), q)
	}
}

func TestQuantityTerms(t *testing.T) {
	quantities := func(text, lang string) []string {
		terms, qty := quantityTerms(text, lang)
		require.Len(t, qty, len(terms))
		require.Equal(t, indexTerms(text, lang), terms, "the terms indexTerms has")
		var out []string
		for i, q := range qty {
			if q {
				out = append(out, terms[i])
			}
		}
		return out
	}
	// Quantities: numbers in running text, numerals written out.
	require.Equal(t, []string{"21"}, quantities("гражданин, достигший 21 года", LangRussian))
	require.Equal(t, []string{"шест"}, quantities("избирается сроком на шесть лет", LangRussian))
	require.Equal(t, []string{"15", "1", "000"}, quantities("within 15 days, at most 1,000 units", LangEnglish))
	require.Equal(t, []string{"0"}, quantities("If the received Max-Forwards value is zero (0), the recipient", LangEnglish))
	require.Equal(t, []string{"annual"}, quantities("The review takes place annually.", LangEnglish))
	// No quantities: references, list markers, headings, addresses,
	// identifiers, ABNF, footnote marks, labels.
	for _, text := range []string{
		"as defined in Section 6.3 and Article 7",
		"Статья 81, часть 3 статьи 92",
		"1. The first item\n2) the second",
		"6. Node Identifiers › 6.1. IPv4 and IPv6 Identifiers",
		"for=192.0.2.43, for=\"[2001:db8:cafe::17]:4711\"",
		"Regulation (EU) 2017/745",
		"Max-Forwards = 1*DIGIT and Forwarded = 1#forwarded-element",
		"в Совете Федерации <19>; see [3]",
		"е.1) назначает на должность",
		"one of the following",
	} {
		require.Empty(t, quantities(text, DetectLanguage(text)), text)
	}
}

func TestFloorQuantityWithoutNumberIsWeak(t *testing.T) {
	f := DefaultFloor()
	// The question's words together in a hit, no number near them.
	e := Evidence{Quantity: true, Window: 0.7, QuantityWindow: 0.1, Score: 0.9, Coverage: 1}
	v := f.judge(e)
	require.False(t, v.Declined, "weak, not declined")
	require.Equal(t, ConfidenceLow, v.Confidence)
	require.Contains(t, v.Reason, "asks for a quantity")
	e.QuantityWindow = 0.5
	require.Equal(t, ConfidenceHigh, f.judge(e).Confidence, "a number near most of them")
	e.QuantityWindow, e.Quantity = 0, false
	require.Equal(t, ConfidenceHigh, f.judge(e).Confidence, "not a quantity question")
	f.QuantityShare = 0
	e.Quantity = true
	require.Equal(t, ConfidenceHigh, f.judge(e).Confidence, "the check off")
}

// TestAskedUnits: a quantity question's unit is read from its wording
// ("how long": time or a length; "how much does it cost": money) or from
// the noun after "how many", with its class when it has one.
func TestAskedUnits(t *testing.T) {
	has := func(q string, words ...string) {
		t.Helper()
		u, _ := askedUnits(q)
		require.NotNil(t, u, q)
		for _, w := range words {
			require.True(t, u[stem(wordLang(LangEnglish, w), w)], "%s: %s in %v", q, w, u)
		}
	}
	has("Within how many days must a manufacturer report an incident?", "days", "weeks", "years")
	has("How long is a certificate valid?", "years", "months", "characters")
	has("How long may the package name be at most?", "characters", "bytes")
	length, _ := askedUnits("How long may the package name be?")
	require.False(t, length[stem(LangEnglish, "years")], "how long … be: a length")
	has("How many judges sit on the court?", "judges")
	has("How much does it cost to register a device?", "euros")
	has("At what age can a citizen vote?", "years")
	has("Сколько судей в Конституционном Суде?", "судей")
	has("На какой срок избирается Президент?", "лет")
	has("Сколько стоит подать жалобу?", "рублей")
	has("Сколько платят за регистрацию?", "рублей")
	// "сколько сто…", "сколько плат…" ask a price only as a verb's start
	// ("стоит", "платят"); "сторон", "платформ" are the nouns counted.
	for q, noun := range map[string]string{"Сколько сторон участвует в договоре?": "сторон", "Сколько платформ поддерживается?": "платформ"} {
		u, name := askedUnits(q)
		require.Equal(t, noun, name, q)
		require.False(t, u[stem(LangRussian, "рублей")], "%s: no money", q)
	}
	days, name := askedUnits("How many days must pass?")
	require.False(t, days[stem(LangEnglish, "characters")], "days ask time, not a length")
	require.Equal(t, "days", name)
	_, name = askedUnits("How many judges sit on the court?")
	require.Equal(t, "judges", name)
	none, _ := askedUnits("How many of them are there?")
	require.Nil(t, none, "no noun")
	none, _ = askedUnits("Which proxies may add the header?")
	require.Nil(t, none)
}

// TestWithUnit: a quantity counts only near the unit asked, or when it is
// one ("annually").
func TestWithUnit(t *testing.T) {
	marked := func(text string, units map[string]bool) []string {
		terms, qty := quantityTerms(text, LangEnglish)
		var out []string
		for i, q := range withUnit(terms, qty, units) {
			if q {
				out = append(out, terms[i])
			}
		}
		return out
	}
	time, _ := askedUnits("How long must it be kept?")
	often, _ := askedUnits("How often is it reviewed?")
	require.Equal(t, []string{"10"}, marked("kept for a period of at least 10 years after the last device", time))
	require.Empty(t, marked("all severity scores above 4.5 are fixed", time))
	require.Equal(t, []string{"annual"}, marked("The review takes place annually.", often))
	require.Equal(t, []string{"4"}, marked("scores above 4 are fixed", nil), "no unit asked: every quantity")
}

// TestQuantityPatternsUnseen tries the quantity patterns on questions in
// each language they were not written for: whether it asks a quantity,
// and the unit askedUnits reads ("" for none). Every question whose unit
// askedUnits reads asks a quantity (askedUnits is only asked then).
func TestQuantityPatternsUnseen(t *testing.T) {
	for _, c := range []struct {
		q    string
		asks bool
		unit string
	}{
		{"What's the deadline to notify a breach?", true, "time"},
		{"What is the time limit for an appeal?", true, "time"},
		{"How many members does the board have?", true, "members"},
		{"How long-lived are the identifiers meant to be, conceptually?", false, ""},
		{"How does the server handle a long request?", false, ""},
		{"What time zone is used for timestamps?", false, ""},
		{"Как долго хранятся персональные данные?", true, "time"},
		{"Как часто проводится проверка?", true, "frequency"},
		{"Каков размер штрафа за нарушение?", true, "money"},
		{"Какова сумма государственной пошлины?", true, "money"},
		{"Каково число членов Совета Федерации?", true, "членов"},
		{"Скольких судей назначает Совет Федерации?", true, "судей"},
		{"Сколько-нибудь значимые изменения требуют согласования?", false, ""},
		{"Какой документ подтверждает личность?", false, ""},
		{"Кто определяет размер оплаты труда?", false, ""},
		{"¿Cuánto tiempo se conservan los datos?", true, "time"},
		{"¿Cuál es el plazo para notificar una violación?", true, "time"},
		{"¿Cuál es la multa máxima?", true, "money"},
		{"¿Cuál es la anchura mínima de las puertas de evacuación?", true, ""},
		{"¿Con qué frecuencia se realiza la auditoría?", true, "frequency"},
		{"¿Cuál es el importe de la tasa?", true, "money"},
		{"¿Qué es un producto sanitario?", false, ""},
		{"¿Cuándo entra en vigor el reglamento?", false, ""},
		{"Combien de temps les données sont-elles conservées ?", true, "time"},
		{"Quel est le délai de notification ?", true, "time"},
		{"Quelle est la durée maximale de conservation ?", true, "time"},
		{"Quel est le montant maximal de l'amende ?", true, "money"},
		{"Quelle est la taille maximale d'un fichier ?", true, "size"},
		{"À partir de quel âge peut-on voter ?", true, "age"},
		{"Qu'est-ce qu'un dispositif médical ?", false, ""},
	} {
		require.Equal(t, c.asks, reAsksQuantity().MatchString(c.q), c.q)
		_, name := askedUnits(c.q)
		require.Equal(t, c.unit, name, c.q)
	}
}
