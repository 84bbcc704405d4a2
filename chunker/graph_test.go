package chunker_test

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/kgsync/kgsync/chunker"
)

var numbered = regexp.MustCompile(`^\d+(\.\d+)*$`)

// numberedAddresses is the set of numeric section addresses under root.
func numberedAddresses(root *chunker.Element) []string {
	var out []string
	visit(root, "", func(e *chunker.Element, path string) {
		if e.Kind == chunker.KindSection && numbered.MatchString(e.Address) {
			out = append(out, e.Address)
		}
	})
	sort.Strings(out)
	return out
}

// TestOpenChainThreeFormats: the md, docx and pdf renditions of one
// specification give the same numbered sections (MANIFEST: 1, 2, 2.1–2.14,
// 3, 3.1–3.4 and the leaves 3.1.1 … 3.4.2, 3 levels) and the same 14 terms.
func TestOpenChainThreeFormats(t *testing.T) {
	want := []string{"1", "2", "3", "3.1", "3.2", "3.3", "3.4",
		"3.1.1", "3.1.2", "3.1.3", "3.1.4", "3.1.5", "3.2.1", "3.2.2", "3.3.1", "3.3.2", "3.4.1", "3.4.2"}
	for i := 1; i <= 14; i++ {
		want = append(want, "2."+itoa(i))
	}
	sort.Strings(want)
	var terms [][]string
	for _, name := range []string{"openchain-security-specification-1.1.md", "openchain-security-specification-1.1.docx", "openchain-security-specification-1.1.pdf"} {
		root := parseDoc(t, name)
		require.Equal(t, want, numberedAddresses(root), name)
		var names []string
		for _, tm := range chunker.Terms(root) {
			names = append(names, tm.Name)
			require.NotEmpty(t, tm.Definition, name)
			require.True(t, strings.HasSuffix(tm.Address, "2"+chunker.PathSep+lastPart(tm.Address)), "%s: term %q at %s", name, tm.Name, tm.Address)
		}
		require.Len(t, names, 14, name)
		require.Equal(t, "Component Records", names[0])
		require.Equal(t, "Verification Materials", names[13])
		terms = append(terms, names)
		// "Section 2 defines…" and "Section 3 defines…" resolve inside the document.
		refs := chunker.CrossRefs(root)
		res, _ := chunker.Resolve(root, refs)
		got := map[string]bool{}
		for i, r := range refs {
			if p, ok := res[i]; ok {
				got[r.Target+"="+lastPart(p)] = true
			}
		}
		require.True(t, got["2=2"] && got["3=3"], "%s: %v", name, got)
	}
	require.Equal(t, terms[0], terms[1])
	require.Equal(t, terms[0], terms[2])
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestParseOpenChainDocx(t *testing.T) {
	root := parseDoc(t, "openchain-security-specification-1.1.docx")
	secs := sections(root)
	require.Equal(t, "3.1.1 - Policy", secs["3 › 3.1 › 3.1.1"].Title)
	// The verification items are literal "3.1.1.1:" text in Word bullet
	// paragraphs: they become clauses addressed by their number.
	var clauses []string
	visit(root, "", func(e *chunker.Element, path string) {
		if e.Kind == chunker.KindClause {
			clauses = append(clauses, e.Address)
		}
	})
	require.Contains(t, clauses, "3.1.1.1")
	require.Contains(t, clauses, "3.4.2.1")
	require.Zero(t, countKind(root, chunker.KindTable)) // MANIFEST: no tables
	// MANIFEST: 2 hyperlinks.
	links := 0
	visit(root, "", func(e *chunker.Element, _ string) { links += len(e.Links) })
	require.Equal(t, 2, links)
	requireLeafContains(t, root, "Section 2 defines") // the no-break space became a space
}

// TestParseRussianDocx: Heading1 auto-numbered "1)"…"3)", Heading2 "1.0"…
// "6.0", clauses 1.1 (Word auto-numbering %1.%2) and 1.2 (literal text),
// verification items 1.1.1 …; the TOC does not become sections.
func TestParseRussianDocx(t *testing.T) {
	root := parseDoc(t, "OpenChainSpec-2.0-Translation-ru.docx")
	secs := sections(root)
	for _, p := range []string{"1", "2", "3", "3 › 1.0", "3 › 6.0", "3 › 1.0 › 1.1", "3 › 1.0 › 1.2", "3 › 6.0 › 6.2"} {
		require.Contains(t, secs, p)
	}
	require.Equal(t, "1) Введение", secs["1"].Title, "Word renders numId 25 level 0 as %1)")
	require.Equal(t, "1.1 Политика", secs["3 › 1.0 › 1.1"].Title, "auto-numbered %1.%2 clause")
	require.Equal(t, "6.0 Соблюдение требований Cпецификации", secs["3 › 6.0"].Title)
	heading2 := 0
	for p := range secs {
		if regexp.MustCompile(`^3 › \d\.0$`).MatchString(p) {
			heading2++
		}
	}
	require.Equal(t, 6, heading2) // MANIFEST: Heading2 (6)
	var annex *chunker.Element
	for _, c := range root.Children {
		if c.Kind == chunker.KindAnnex {
			annex = c
		}
	}
	require.NotNil(t, annex)
	require.Equal(t, "Приложение I", annex.Address)
	// The TOC entries ("2)Определения4") are dropped, not sections or text.
	visit(root, "", func(e *chunker.Element, path string) {
		require.NotContains(t, e.Text, "Определения4", path)
	})
	clauses := map[string]bool{}
	visit(root, "", func(e *chunker.Element, path string) {
		if e.Kind == chunker.KindClause {
			clauses[path] = true
		}
	})
	require.True(t, clauses["3 › 1.0 › 1.1 › 1.1.1"])
	require.True(t, clauses["3 › 6.0 › 6.2 › 6.2.1"])
	require.Equal(t, 1, countKind(root, chunker.KindNote), "one footnote reference in the document")
	terms := chunker.Terms(root)
	require.Len(t, terms, 9) // MANIFEST: 9 quoted terms
	require.Equal(t, "Артефакты соответствия", terms[0].Name)
	require.Equal(t, "2"+chunker.PathSep+"p1", terms[0].Address)
	require.Equal(t, "Проверочные материалы", terms[8].Name)
	// "указанную в требовании 1.4" resolves to clause 1.4.
	refs := chunker.CrossRefs(root)
	res, _ := chunker.Resolve(root, refs)
	found := false
	for i, r := range refs {
		if r.Target == "1.4" {
			require.Equal(t, "3 › 1.0 › 1.4", res[i])
			found = true
		}
	}
	require.True(t, found)
}

// TestRFC7231CrossRefs: MANIFEST counts 383 "Section X.Y" mentions, 79 of
// them external ("Section 2.7 of [RFC7230]"). Hand counts over the joined
// text: 384 "Section(s) N" occurrences, 108 followed by "of/in [".
func TestRFC7231CrossRefs(t *testing.T) {
	root := parseDoc(t, "rfc7231.txt")
	refs := chunker.CrossRefs(root)
	res, un := chunker.Resolve(root, refs)
	var section, external, sameDoc int
	for i, r := range refs {
		if !strings.Contains(r.Text, "Section") && !regexp.MustCompile(`^\d`).MatchString(r.Text) {
			continue
		}
		section++
		if r.Doc != "" {
			external++
			require.Regexp(t, `^RFC \d+$|^[A-Za-z]`, r.Doc)
			continue
		}
		sameDoc++
		_, ok := res[i]
		require.True(t, ok || contains(un, i))
	}
	require.InDelta(t, 384, section, 40, "section references found")
	require.GreaterOrEqual(t, external, 79)
	// Same-document section references resolve to existing sections.
	rate := float64(sameDoc-len(un)) / float64(sameDoc)
	require.GreaterOrEqual(t, rate, 0.95)
	secs := sections(root)
	cites := citations(root)
	for i, r := range refs {
		if p, ok := res[i]; ok && r.Doc == "" {
			require.Contains(t, secs, p)
			require.Equal(t, r.Target, cites[p], "a reference resolves to the element with that address")
		}
	}
	// "Section 2.7 of [RFC7230]" is external, target 2.7.
	ok := false
	for _, r := range refs {
		ok = ok || (r.Target == "2.7" && r.Doc == "RFC 7230")
	}
	require.True(t, ok)
	// [RFCnnnn] citations (MANIFEST: 225) are doc-only refs.
	docCites := 0
	for _, r := range refs {
		if r.Target == "" && strings.HasPrefix(r.Doc, "RFC ") {
			docCites++
		}
	}
	require.Greater(t, docCites, 100)
	require.Equal(t, []string{"RFC 7231", "rfc7231.txt"}, chunker.DocumentIDs(root, "docs/rfc7231.txt"))
	// RFC 7231 4.3 "Method Definitions": each sub-section defines a method.
	var names []string
	for _, tm := range chunker.Terms(root) {
		names = append(names, tm.Name)
	}
	require.Equal(t, []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE"}, names)
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestConstitutionRefs: article references ("статьи 65", "частью 1 статьи
// 3", "пункта "а" части 1" of the same article) resolve to the article,
// part or point they name; gazette pages ("N 3, ст. 152") are no
// references; there is no definitions section (MANIFEST), so no terms.
func TestConstitutionRefs(t *testing.T) {
	root := parseDoc(t, "constitutionrf.txt")
	refs := chunker.CrossRefs(root)
	require.GreaterOrEqual(t, len(refs), 38) // MANIFEST: 38 of the forms статьи/части/пункта
	res, un := chunker.Resolve(root, refs)
	require.Empty(t, un)
	cites := citations(root)
	for i, r := range refs {
		c := cites[res[i]]
		require.True(t, c == r.Target || strings.HasSuffix(c, " "+r.Target), "%q (%q) resolved to %q", r.Text, r.Target, c)
		require.NotContains(t, r.Text, "ст. 152")
	}
	require.Empty(t, chunker.Terms(root))
}

// citations maps address path → Citation.
func citations(root *chunker.Element) map[string]string {
	out := map[string]string{}
	visit(root, "", func(e *chunker.Element, path string) { out[path] = e.Citation })
	return out
}

// TestSPDXTables: captioned tables keep the caption as
// Title and take "Table N" as their address; all 27 tables have a header.
func TestSPDXTables(t *testing.T) {
	root := parseDoc(t, "spdx-2.3-package-information.md")
	captioned := 0
	visit(root, "", func(e *chunker.Element, path string) {
		if e.Kind != chunker.KindTable {
			return
		}
		require.Equal(t, 1, e.HeaderRows, path)
		require.True(t, strings.HasPrefix(e.Text, "Attribute | Value"), path)
		if strings.HasPrefix(e.Address, "Table ") {
			captioned++
			require.True(t, strings.HasPrefix(e.Title, e.Address+" — "), e.Title)
		}
	})
	// MANIFEST counts the 23 bold captions (`**Table 13 — …**`); grep
	// '^\**Table [0-9]' finds 4 more plain ones (Table 24, 37, 38, 39), so
	// all 27 tables (Table 13 … Table 39) are captioned.
	require.Equal(t, 27, captioned)
	secs := sections(root)
	var tbl *chunker.Element
	for _, c := range secs["7 › 7.1 › 7.1.1"].Children {
		if c.Kind == chunker.KindTable {
			tbl = c
		}
	}
	require.Equal(t, "Table 13", tbl.Address)
	require.Equal(t, "Table 13 — Metadata for the package name field", tbl.Title)
	// In-document links "([7.6](#7.6))" resolve (MANIFEST: 17).
	refs := chunker.CrossRefs(root)
	res, _ := chunker.Resolve(root, refs)
	links := 0
	for i, r := range refs {
		if r.Target == "7.6" && r.Doc == "" {
			links++
			require.Equal(t, "7 › 7.6", res[i])
		}
	}
	require.Positive(t, links)
	// The caption is part of the chunk text.
	chunks, err := chunker.Split("spdx", root, chunker.Options{MaxTokens: 256})
	require.NoError(t, err)
	found := false
	for _, c := range chunks {
		found = found || strings.Contains(c.Text, "Table 13 — Metadata for the package name field\nAttribute | Value")
	}
	require.True(t, found)
}

func TestGoSpecLinks(t *testing.T) {
	root := parseDoc(t, "go_spec.html")
	refs := chunker.CrossRefs(root)
	res, un := chunker.Resolve(root, refs)
	internal := 0
	for _, r := range refs {
		if r.Doc == "" && r.Text != "" && !strings.HasPrefix(r.Text, "Section") && !strings.HasPrefix(r.Text, "§") {
			internal++
		}
	}
	require.InDelta(t, 702, internal, 10) // MANIFEST: 702 internal links
	require.GreaterOrEqual(t, float64(len(res))/float64(len(res)+len(un)), 0.98)
	for i, r := range refs {
		if r.Target == "Method_sets" {
			require.Equal(t, "Properties_of_types_and_values › Method_sets", res[i])
		}
	}
}

// TestTableSplitRepeatsHeader: a table over MaxTokens is cut into row
// groups, each starting with the caption and header row.
func TestTableSplitRepeatsHeader(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("# 1 Data\n\n**Table 1 — Codes**\n\n| Code | Meaning |\n|---|---|\n")
	for i := 0; i < 120; i++ {
		sb.WriteString("| c" + itoa(i%100) + " | meaning number " + itoa(i%100) + " of the code list |\n")
	}
	root, err := chunker.Parse("md", []byte(sb.String()))
	require.NoError(t, err)
	opts := chunker.Options{MaxTokens: 128, OverlapTokens: 0}
	chunks, err := chunker.Split("d", root, opts)
	require.NoError(t, err)
	require.Greater(t, len(chunks), 3)
	rows := 0
	for _, c := range chunks {
		require.True(t, strings.HasPrefix(c.Text, "Table 1 — Codes\nCode | Meaning\n"), c.Text)
		require.LessOrEqual(t, c.Tokens, opts.MaxTokens)
		require.Equal(t, []string{"d › 1 › Table 1"}, c.Elements)
		rows += strings.Count(c.Text, "meaning number")
	}
	require.Equal(t, 120, rows, "every row in exactly one chunk")
	requireChunkInvariants(t, "d", root, chunks, opts)
}

func TestDecode(t *testing.T) {
	ru := "Статья 1. Российская Федерация - Россия есть демократическое государство."
	cp1251, err := charmap.Windows1251.NewEncoder().String(ru)
	require.NoError(t, err)
	u16le, err := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder().String(ru)
	require.NoError(t, err)
	u16be, err := unicode.UTF16(unicode.BigEndian, unicode.UseBOM).NewEncoder().String(ru)
	require.NoError(t, err)
	for _, tc := range []struct{ in, enc string }{
		{ru, "utf-8"}, {"\ufeff" + ru, "utf-8-bom"}, {cp1251, "windows-1251"}, {u16le, "utf-16le"}, {u16be, "utf-16be"}, {"", "utf-8"},
	} {
		s, enc, err := chunker.Decode([]byte(tc.in))
		require.NoError(t, err, tc.enc)
		require.Equal(t, tc.enc, enc)
		if tc.in != "" {
			require.Equal(t, ru, s, tc.enc)
		}
	}
	_, _, err = chunker.Decode([]byte("plain latin text \xe9t\xe9 \xff"))
	require.ErrorContains(t, err, "invalid UTF-8 at byte 17")
	// The txt parser decodes Windows-1251.
	root, err := chunker.Parse("txt", []byte(cp1251))
	require.NoError(t, err)
	require.Equal(t, "Статья 1", root.Children[0].Address)
}

func TestDocxLimits(t *testing.T) {
	raw := readDoc(t, "openchain-security-specification-1.1.docx")
	old := chunker.MaxDocxBytes
	chunker.MaxDocxBytes = 1000
	defer func() { chunker.MaxDocxBytes = old }()
	_, err := chunker.Parse("docx", raw)
	require.ErrorContains(t, err, "docx part word/")
	require.ErrorContains(t, err, "exceeds the limit of 1000 bytes")
	chunker.MaxDocxBytes = old
	_, err = chunker.Parse("docx", []byte("PK\x03\x04 not a zip"))
	require.ErrorContains(t, err, "open docx archive")
}

func TestPDFNoTextLayer(t *testing.T) {
	// A one-page PDF whose page draws only a rectangle: no text.
	doc := minimalPDF("0 0 100 100 re f")
	_, err := chunker.Parse("pdf", doc)
	require.ErrorIs(t, err, chunker.ErrNoTextLayer)
	require.ErrorContains(t, err, "no text layer (scanned PDF?)")
	_, err = chunker.Parse("pdf", []byte("%PDF-1.4 garbage"))
	require.Error(t, err)
}

// minimalPDF builds a one-page PDF with the content stream content and a
// correct xref table.
func minimalPDF(content string) []byte {
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << >> >>",
		"<< /Length " + itoa(len(content)) + " >>\nstream\n" + content + "\nendstream",
	}
	var sb strings.Builder
	sb.WriteString("%PDF-1.4\n")
	var offs []int
	for i, o := range objs {
		offs = append(offs, sb.Len())
		sb.WriteString(itoa(i+1) + " 0 obj\n" + o + "\nendobj\n")
	}
	xref := sb.Len()
	sb.WriteString("xref\n0 5\n0000000000 65535 f \n")
	for _, o := range offs {
		s := itoa(o)
		sb.WriteString(strings.Repeat("0", 10-len(s)) + s + " 00000 n \n")
	}
	sb.WriteString("trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n" + itoa(xref) + "\n%%EOF\n")
	return []byte(sb.String())
}

func TestFormatsRegistered(t *testing.T) {
	f := chunker.Formats()
	require.Equal(t, "docx", f[".docx"])
	require.Equal(t, "pdf", f[".pdf"])
}
