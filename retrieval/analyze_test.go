package retrieval

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTerms(t *testing.T) {
	t.Parallel()
	// Stop words go, words are stemmed in the text's language, Cyrillic
	// words always in Russian.
	require.Equal(t, []string{"proxi", "may", "add", "forward", "header"}, Terms("Which proxies may add the Forwarded header?", LangEnglish))
	require.Equal(t, []string{"президент", "избира", "срок", "шест", "лет"},
		Terms("Президент избирается сроком на шесть лет", LangRussian))
	require.Equal(t, []string{"anchur", "minim", "puert", "evacu"}, Terms("la anchura mínima de las puertas de evacuación", LangSpanish))
	// Ё is Е; a Latin look-alike inside a Cyrillic word is Cyrillic (the
	// Latin C of "Cпецификации" in the Russian OpenChain .docx).
	require.Equal(t, Terms("Спецификации ещё", LangRussian), Terms("Cпецификации еще", LangRussian))
	// Digits stay; one-letter words go.
	require.Equal(t, []string{"rfc", "7231", "6", "5", "1"}, Terms("RFC 7231 § 6.5.1 a", LangEnglish))
	// Every term is letters and digits only: what Memgraph's tokenizer
	// reads back unchanged.
	for _, term := range Terms("HTTP/1.1 «quoted» x-forwarded-for: naïve café", LangEnglish) {
		for _, r := range term {
			require.True(t, r >= 'a' && r <= 'z' || r >= '0' && r <= '9', "%q", term)
		}
	}
}

func TestDetectLanguage(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"The Forwarded header field is an OPTIONAL header field that, when used, contains a list": LangEnglish,
		"Президент Российской Федерации является главой государства":                              LangRussian,
		"¿Cuál es la anchura mínima de las puertas de evacuación en los edificios?":               LangSpanish,
		"Le présent règlement établit des règles concernant la mise sur le marché":                LangFrench,
		"c":          LangEnglish,
		"1234 — ///": "",
	} {
		require.Equal(t, want, DetectLanguage(text), text)
	}
}

func TestAnalyzeQuery(t *testing.T) {
	t.Parallel()
	// Question words go; a word has its stems in every corpus language.
	ws := analyzeQuery("What does RFC 7239 say about headers?", []string{LangEnglish, LangSpanish})
	var got []string
	for _, w := range ws {
		got = append(got, w.word)
	}
	require.Equal(t, []string{"rfc", "7239", "headers"}, got)
	require.Equal(t, []string{"header", "headers"}, ws[2].terms, "English and Spanish stems")
}

func TestFuse(t *testing.T) {
	t.Parallel()
	cfg := Config{RRFK: 60, Weights: Weights{Vector: 1, Lexical: 1, Address: 3}}
	out := fuse([]ranked{
		{signal: SignalVector, units: []int{1, 2, 3}},
		{signal: SignalLexical, units: []int{2, 1}},
		{signal: SignalElement, units: []int{3}}, // weight 0: ignored
		{signal: SignalAddress},                  // found nothing: not in the norm
	}, cfg)
	best := 2.0 / 61
	require.InDelta(t, (1.0/61+1.0/62)/best, out[1].score, 1e-12)
	require.InDelta(t, out[1].score, out[2].score, 1e-12, "first and second in two lists each")
	require.InDelta(t, (1.0/63)/best, out[3].score, 1e-12)
	require.Equal(t, map[string]int{SignalVector: 3}, out[3].ranks)
	// First everywhere: 1.
	out = fuse([]ranked{{signal: SignalVector, units: []int{7}}, {signal: SignalAddress, units: []int{7}}}, cfg)
	require.InDelta(t, 1.0, out[7].score, 1e-12)
}
