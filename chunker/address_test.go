package chunker_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
)

// TestParseAddress: addresses typed the ways users and documents write
// them come out in the one canonical form elements carry.
func TestParseAddress(t *testing.T) {
	for _, tc := range []struct{ in, doc, cite string }{
		{"Article 7(3)(a)", "", "Article 7(3)(a)"},
		{"art. 7 (3) (a)", "", "Article 7(3)(a)"},
		{"point (a) of Article 7(3)", "", "Article 7(3)(a)"},
		{"point (a) of paragraph 3 of Article 7", "", "Article 7(3)(a)"},
		{"Article 7, paragraph 3, point (a)", "", "Article 7(3)(a)"},
		{"Article 2 (71)", "", "Article 2(71)"},
		{"Article 10a", "", "Article 10a"},
		{"Articles 5", "", "Article 5"},
		{"Annex II 6.3", "", "Annex II 6.3"},
		{"Section 6.3 of Annex II", "", "Annex II 6.3"},
		{"annex ii 6.3", "", "Annex II 6.3"},
		{"ANNEX VIII", "", "Annex VIII"},
		{"Annex VI Part A 2.14", "", "Annex VI Part A 2.14"},
		{"Section 2 of Part A of Annex VI", "", "Annex VI Part A 2"},
		{"Annex I, 23.4 (d)", "", "Annex I 23.4(d)"},
		{"Annex II (2)", "", "Annex II 2"},
		{"Chapter IV", "", "Chapter IV"},
		{"chapter iv", "", "Chapter IV"},
		{"Section 2 of Chapter V", "", "Chapter V Section 2"},
		{"Chapter V, Section 2", "", "Chapter V Section 2"},
		{"Recital 12", "", "Recital 12"},
		{"recital (43)", "", "Recital 43"},
		{"RFC 7231 4.2.2", "RFC 7231", "4.2.2"},
		{"RFC7231 section 4.2.2", "RFC 7231", "4.2.2"},
		{"Section 4.2.2 of RFC 7231", "RFC 7231", "4.2.2"},
		{"[RFC7230], Section 2.7", "RFC 7230", "2.7"},
		{"MDR Article 2(71)", "MDR", "Article 2(71)"},
		{"MDR, Article 61 (11)", "MDR", "Article 61(11)"},
		{"Article 5 of the MDR", "MDR", "Article 5"},
		{"Article 7 of Regulation (EU) 2017/745", "Regulation (EU) 2017/745", "Article 7"},
		{"Regulation (EU) 2017/745", "Regulation (EU) 2017/745", ""},
		{"Статья 81 часть 3", "", "Статья 81 часть 3"},
		{"ч. 3 ст. 81", "", "Статья 81 часть 3"},
		{"часть 3 статьи 81", "", "Статья 81 часть 3"},
		{"п. «а» ч. 1 ст. 71", "", "Статья 71 часть 1 пункт а"},
		{"пункт «б» статьи 71", "", "Статья 71 пункт б"},
		{"Статья 71 пункт б", "", "Статья 71 пункт б"},
		{"Статья 83 пункт б.1", "", "Статья 83 пункт б.1"},
		{"пункт «д.1» статьи 83", "", "Статья 83 пункт д.1"},
		{"Статья 72 часть 1 пункт ж.1", "", "Статья 72 часть 1 пункт ж.1"},
		{"Annex I 3", "", "Annex I 3"},
		{"Annex I 3(a)", "", "Annex I 3(a)"},
		{"Annex VI Part A 2", "", "Annex VI Part A 2"},
		{"MDR Annex I 3", "MDR", "Annex I 3"},
		{"Статья 67.1", "", "Статья 67.1"},
		{"часть 1 статьи 12", "", "Статья 12 часть 1"},
		{"статья 12 часть 1", "", "Статья 12 часть 1"},
		{"п. 3 ч. 1 ст. 6", "", "Статья 6 часть 1 пункт 3"},
		{"пункт 3 части 1 статьи 6", "", "Статья 6 часть 1 пункт 3"},
		{"статья 18.1", "", "Статья 18.1"},
		{"ч. 2.1 ст. 18", "", "Статья 18 часть 2.1"},
		{"часть 5.1 статьи 11", "", "Статья 11 часть 5.1"},
		{"пункт 5.1 статьи 3", "", "Статья 3 пункт 5.1"},
		{"п. 5.1 ст. 3", "", "Статья 3 пункт 5.1"},
		{"Статья 3 пункт 5.1", "", "Статья 3 пункт 5.1"},
		{"Статья 18.1 часть 1 пункт а", "", "Статья 18.1 часть 1 пункт а"},
		{"статьи 65 Конституции", "Конституции", "Статья 65"},
		{"Глава 1", "", "Глава 1"},
		{"Раздел первый", "", "Раздел первый"},
		{"Table 1", "", "Table 1"},
		{"таблица 7.1", "", "Таблица 7.1"},
		{"табл. 7.1", "", "Таблица 7.1"},
		{"Tabla 1.2", "", "Tabla 1.2"},
		{"Figure 3", "", "Figure 3"},
		{"6.2.2", "", "6.2.2"},
		{"6.2.2.", "", "6.2.2"},
		{"п. 6.2.2", "", "6.2.2"},
		{"section 6.5.1", "", "6.5.1"},
		{"§ 6.5.1", "", "6.5.1"},
		{"clause 7.1", "", "7.1"},
		{"A.1", "", "A.1"},
		{"Appendix A", "", "Appendix A"},
		{"E.2.3.2.3", "", "E.2.3.2.3"},
		{"apartado 4.1 de la Sección SI 1", "", "Sección SI 1 4.1"},
		{"Anejo SI A", "", "Anejo SI A"},
		{"в соответствии с 5.2.3", "", "5.2.3"},
		{"7", "", "7"},
	} {
		a, ok := chunker.ParseAddress(tc.in)
		require.True(t, ok, tc.in)
		require.Equal(t, tc.cite, a.Citation, tc.in)
		require.Equal(t, tc.doc, a.Doc, tc.in)
	}
	a, ok := chunker.ParseAddress("Method sets")
	require.False(t, ok)
	require.Equal(t, "Method sets", a.Citation)
}

func TestAddressKey(t *testing.T) {
	for _, same := range [][]string{
		{"Tabla 1.2", "table 1.2", "Таблица 1.2", "TABLE 1.2"},
		{"Appendix A", "Annex A", "Приложение А"}, // the last with a Cyrillic А
		{"Article 7(3)", "article 7 (3)", "Art. 7(3)"},
		{"Method sets", "method_sets", "Method  Sets"},
		{"Статья 81 часть 3", "ч. 3 ст. 81"},
	} {
		for _, s := range same[1:] {
			require.Equal(t, chunker.AddressKey(same[0]), chunker.AddressKey(s), "%q vs %q", same[0], s)
		}
	}
	require.NotEqual(t, chunker.AddressKey("Article 7(3)"), chunker.AddressKey("Article 7(4)"))
	require.NotEqual(t, chunker.AddressKey("Annex II"), chunker.AddressKey("Annex III"))
}

// TestCitationsParseBack: the citation of every numbered element of every
// corpus document, typed back as it is shown, is read as that same address
// (no part of it taken for a document name), so a user can look up what
// the graph shows. Citations inside a division cited by its title
// ("Appendix: Template for the SSCP 1.1") are looked up by the index, not
// parsed.
func TestCitationsParseBack(t *testing.T) {
	for _, name := range corpusDocs {
		root := parseDoc(t, name)
		var bad []string
		n := 0
		var walk func(e *chunker.Element, titled bool)
		walk = func(e *chunker.Element, titled bool) {
			for _, c := range e.Children {
				_, structural := chunker.ParseAddress(c.Address)
				if c.Citation != "" && structural && !titled {
					n++
					a, ok := chunker.ParseAddress(c.Citation)
					if !ok || a.Doc != "" || chunker.AddressKey(a.Citation) != chunker.AddressKey(c.Citation) {
						bad = append(bad, fmt.Sprintf("%q → %+v", c.Citation, a))
					}
				}
				walk(c, titled || c.Citation != "" && !structural)
			}
		}
		walk(root, false)
		require.Empty(t, bad, "%s: %d of %d citations do not parse back", name, len(bad), n)
	}
}
