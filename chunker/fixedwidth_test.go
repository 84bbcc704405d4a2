package chunker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
)

// citedUnits maps the citation of every element under root to the
// element.
func citedUnits(root *chunker.Element) map[string]*chunker.Element {
	out := map[string]*chunker.Element{}
	visit(root, "", func(e *chunker.Element, _ string) {
		if e.Citation != "" {
			out[e.Citation] = e
		}
	})
	return out
}

// TestFixedWidthLaw: a law in its official fixed-width plain-text layout
// (paragraphs' first lines indented, continuation lines flush left,
// justified with runs of spaces, no blank lines between paragraphs;
// testdata/fixedwidth-law.txt is written in that layout) keeps its
// wrapped headings whole, its inserted article, part and point as
// elements cited as the text cites them, its parts and points
// addressable, its definitions as terms, its type, date and number as its
// names, and its signature outside its last article.
func TestFixedWidthLaw(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "fixedwidth-law.txt"))
	require.NoError(t, err)
	root, err := chunker.Parse("txt", b)
	require.NoError(t, err)
	units := citedUnits(root)
	for cite, title := range map[string]string{
		"Статья 3":    "Статья 3. Основные понятия, используемые в настоящем Федеральном законе",
		"Статья 18.1": "Статья 18-1. Меры, направленные на обеспечение выполнения оператором обязанностей, предусмотренных настоящим Федеральным законом",
		"Статья 19":   "Статья 19. Меры по обеспечению безопасности персональных данных при их обработке",
		"Глава 2":     "Глава 2. Принципы и условия обработки персональных данных",
	} {
		require.Contains(t, units, cite)
		require.Equal(t, title, units[cite].Title, cite)
	}
	for _, cite := range []string{"Статья 1 часть 1", "Статья 1 часть 2", "Статья 1 часть 2 пункт 1", "Статья 1 часть 2 пункт 3",
		"Статья 3 пункт 1", "Статья 3 пункт 5", "Статья 3 пункт 5.1", "Статья 18 часть 2", "Статья 18 часть 2.1",
		"Статья 18.1 часть 1", "Статья 18.1 часть 1 пункт а", "Статья 18.1 часть 1 пункт б", "Статья 18.1 часть 2", "Статья 25 часть 1"} {
		require.Contains(t, units, cite)
		a, ok := chunker.ParseAddress(cite)
		require.True(t, ok, cite)
		require.Equal(t, cite, a.Citation)
	}
	// A part's text is the part alone: "2." does not swallow "2-1.".
	require.NotContains(t, units["Статья 18 часть 2"].Text, "2-1.")
	require.NotContains(t, units["Статья 25 часть 1"].Text+flatText(units["Статья 25 часть 1"]), "Путин")

	var names []string
	for _, tm := range chunker.Terms(root) {
		names = append(names, tm.Name)
	}
	require.Equal(t, []string{"персональные данные", "оператор", "обработка персональных данных", "распространение", "предоставление", "биометрические данные"}, names)

	ids := chunker.DocumentIDs(root, "law.txt")
	require.Contains(t, ids, "Федеральный закон от 27.07.2006 N 152-ФЗ")
	require.Contains(t, ids, "152-ФЗ")
	require.NotContains(t, ids, "РОССИЙСКАЯ ФЕДЕРАЦИЯ")
}

// flatText is the text of e's leaves.
func flatText(e *chunker.Element) string {
	s := e.Text
	for _, c := range e.Children {
		s += "\n" + flatText(c)
	}
	return s
}

// TestFindRussianAddresses: parts and points of articles as users type
// them, in a query.
func TestFindRussianAddresses(t *testing.T) {
	for q, want := range map[string]string{
		"что говорит часть 1 статьи 12": "Статья 12 часть 1",
		"статья 12 часть 1 закона":      "Статья 12 часть 1",
		"п. 3 ч. 1 ст. 6 о согласии":    "Статья 6 часть 1 пункт 3",
		"пункт 5.1 статьи 3":            "Статья 3 пункт 5.1",
		"ч. 2.1 ст. 18":                 "Статья 18 часть 2.1",
		"требования статьи 18.1 закона": "Статья 18.1",
	} {
		ms := chunker.FindAddresses(q)
		require.Len(t, ms, 1, q)
		require.Equal(t, want, ms[0].Citation, q)
	}
}

// TestRussianActHeaderLine: a copy that opens with a line citing the act
// ("Федеральный закон от 02.05.2006 N 59-ФЗ (ред. от 04.08.2023) "О …"")
// is named by it, without the edition.
func TestRussianActHeaderLine(t *testing.T) {
	doc := "Федеральный закон от 02.05.2006 N 59-ФЗ (ред. от 04.08.2023) \"О порядке рассмотрения обращений граждан Российской Федерации\"\n\n" +
		"Статья 1. Сфера применения настоящего Федерального закона\n\n1. Настоящим Федеральным законом регулируются правоотношения.\n"
	root, err := chunker.Parse("txt", []byte(doc))
	require.NoError(t, err)
	ids := chunker.DocumentIDs(root, "59.txt")
	require.Contains(t, ids, "Федеральный закон от 02.05.2006 N 59-ФЗ")
	require.Contains(t, ids, "59-ФЗ")
	require.Contains(t, ids, `Федеральный закон от 02.05.2006 N 59-ФЗ "О порядке рассмотрения обращений граждан Российской Федерации"`)
}

// TestFixedWidthTable: in the fixed-width layout a table drawn in ASCII
// keeps its lines and stays a table in the part that introduces it.
func TestFixedWidthTable(t *testing.T) {
	doc := "     Статья 5. Размеры\n\n" +
		"     1. Размеры  ставок  устанавливаются  согласно  следующей\nтаблице:\n" +
		"+-----------------------+-------------+\n| Вид                   | Ставка      |\n+-----------------------+-------------+\n| первый                | 10          |\n+-----------------------+-------------+\n" +
		"     2. Ставки  применяются  с  первого  числа  месяца,  следующего\nза месяцем опубликования.\n" +
		"     3. Порядок  применения  ставок  устанавливается  Правительством\nРоссийской Федерации.\n"
	root, err := chunker.Parse("txt", []byte(doc))
	require.NoError(t, err)
	units := citedUnits(root)
	for _, c := range []string{"Статья 5 часть 1", "Статья 5 часть 2", "Статья 5 часть 3"} {
		require.Contains(t, units, c)
	}
	require.Equal(t, 1, countKind(units["Статья 5 часть 1"], chunker.KindTable))
	require.Equal(t, "2. Ставки применяются с первого числа месяца, следующего за месяцем опубликования.", units["Статья 5 часть 2"].Text)
}

// TestFixedWidthTypeAndTitleRunOn: a centred type line run on with the
// act's title ("ФЕДЕРАЛЬНЫЙ ЗАКОН" over "О ПЕРСОНАЛЬНЫХ ДАННЫХ" without a
// blank line) still names the act.
func TestFixedWidthTypeAndTitleRunOn(t *testing.T) {
	doc := "                       ФЕДЕРАЛЬНЫЙ ЗАКОН\n                    О ПЕРСОНАЛЬНЫХ ДАННЫХ\n\n     Статья 1. Сфера\n\n" +
		"     1. Текст  первой  части  статьи  идет  здесь  и\nпродолжается.\n     2. Текст второй части\nпродолжается.\n     3. Текст третьей части\nпродолжается.\n\n" +
		"     Президент Российской Федерации                 В.Путин\n\n     Москва, Кремль\n     27 июля 2006 года\n     N 152-ФЗ\n"
	root, err := chunker.Parse("txt", []byte(doc))
	require.NoError(t, err)
	require.Equal(t, `Федеральный закон от 27.07.2006 N 152-ФЗ "О ПЕРСОНАЛЬНЫХ ДАННЫХ"`, root.Title)
	require.Contains(t, chunker.DocumentIDs(root, "x.txt"), "152-ФЗ")
}

// TestFixedWidthHeaderWithoutBlankLines: the centred lines of a law's
// header set without blank lines between them (the state's name, the
// act's type, the title) are not one wrapped heading: the act keeps its
// title and names; a centred heading is not run on into a centred
// heading below it.
func TestFixedWidthHeaderWithoutBlankLines(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "fixedwidth-law.txt"))
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	var doc []string
	for i, l := range lines {
		if i < 6 && strings.TrimSpace(l) == "" {
			continue // the header's blank lines
		}
		doc = append(doc, l)
	}
	root, err := chunker.Parse("txt", []byte(strings.Join(doc, "\n")))
	require.NoError(t, err)
	require.Equal(t, `Федеральный закон от 27.07.2006 N 152-ФЗ "О персональных данных"`, root.Title)
	require.Contains(t, chunker.DocumentIDs(root, "x.txt"), "152-ФЗ")

	doc2 := "                    Глава 1. Общие положения\n                    Статья 1. Сфера действия\n\n" +
		"     1. Текст  первой  части  статьи  идет  здесь  и\nпродолжается.\n     2. Текст второй части\nпродолжается.\n     3. Текст третьей части\nпродолжается.\n"
	root, err = chunker.Parse("txt", []byte(doc2))
	require.NoError(t, err)
	units := citedUnits(root)
	require.Contains(t, units, "Глава 1")
	require.Equal(t, "Глава 1. Общие положения", units["Глава 1"].Title)
	require.Contains(t, units, "Статья 1")
}

// TestFixedWidthVariants: fixed-width acts laid out otherwise than
// testdata/fixedwidth-law.txt keep their chapters, articles and sections,
// cited as the chunker numbers them, and their title:
//   - fixedwidth-header-runon.txt, a federal law whose header runs on
//     without blank lines ("О СВЯЗИ", "Принят", "Государственной Думой", …)
//     into "Глава 1. …" and "Статья 1. …";
//   - fixedwidth-belarus.txt, a Belarus law indented by 4 and 8 spaces,
//     its date and number under its type, "ГЛАВА 1" over its title;
//   - fixedwidth-sections.txt, an act numbered "Section 1." with its
//     headings indented like its paragraphs (such acts are not named).
func TestFixedWidthVariants(t *testing.T) {
	for name, tc := range map[string]struct {
		sections []string // citations of the sections, in order
		titles   map[string]string
		title    string
		signer   string // the signature, outside the last section
	}{
		"fixedwidth-header-runon.txt": {
			sections: []string{"Глава 1", "Статья 1", "Статья 2", "Глава 2", "Статья 5", "Статья 6"},
			titles: map[string]string{
				"Глава 1":  "Глава 1. Общие положения",
				"Статья 2": "Статья 2. Основные термины, используемые в настоящем Федеральном законе",
				"Статья 6": "Статья 6. Регулирование отношений, связанных с использованием земли",
			},
			title:  `Федеральный закон от 07.07.2003 N 126-ФЗ "О СВЯЗИ"`,
			signer: "Путин",
		},
		"fixedwidth-belarus.txt": {
			sections: []string{"Глава 1", "Статья 1", "Статья 2"},
			titles: map[string]string{
				"Глава 1":  "ГЛАВА 1 ОБЩИЕ ПОЛОЖЕНИЯ",
				"Статья 1": "Статья 1. Основные термины, применяемые в настоящем Законе, и их определения",
			},
			title:  `Закон Республики Беларусь от 10.11.2008 N 455-З "Об информации, информатизации и защите информации"`,
			signer: "Лукашенко",
		},
		"fixedwidth-sections.txt": {
			sections: []string{"1", "2", "3", "4"},
			titles: map[string]string{
				"1": "Section 1. Short title and commencement",
				"4": "Section 4. Purpose limitation",
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", name))
			require.NoError(t, err)
			root, err := chunker.Parse("txt", b)
			require.NoError(t, err)
			var got []string
			titles := map[string]string{}
			visit(root, "", func(e *chunker.Element, _ string) {
				if e.Kind == chunker.KindSection {
					got = append(got, e.Citation)
					titles[e.Citation] = e.Title
				}
			})
			require.Equal(t, tc.sections, got)
			for c, want := range tc.titles {
				require.Equal(t, want, titles[c], c)
			}
			require.Equal(t, tc.title, root.Title)
			if tc.signer != "" {
				require.NotContains(t, flatText(citedUnits(root)[got[len(got)-1]]), tc.signer)
			}
		})
	}
}
