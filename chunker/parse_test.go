package chunker_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
)

func TestFormatForPath(t *testing.T) {
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"a/rfc7231.txt", "txt", true},
		{"spec.md", "md", true},
		{"README.markdown", "md", true},
		{"Spec.MD", "md", true},
		{"go_spec.html", "html", true},
		{"index.htm", "html", true},
		{"table.csv", "", false},
		{"Makefile", "", false},
	} {
		got, ok := chunker.FormatForPath(tc.path)
		require.Equal(t, tc.ok, ok, tc.path)
		require.Equal(t, tc.want, got, tc.path)
	}
	f := chunker.Formats()
	require.Equal(t, "md", f[".markdown"])
	f[".md"] = "changed"
	require.Equal(t, "md", chunker.Formats()[".md"], "Formats returns a copy")
}

func TestRegister(t *testing.T) {
	p := chunker.ParserFunc(func(b []byte) (*chunker.Element, error) {
		return &chunker.Element{Kind: chunker.KindDocument, Children: []*chunker.Element{
			{Kind: chunker.KindParagraph, Address: "p1", Text: string(b)},
		}}, nil
	})
	require.NoError(t, chunker.Register("testfmt", []string{"tfmt", ".TF2"}, p))
	f, ok := chunker.FormatForPath("x.tf2")
	require.True(t, ok)
	require.Equal(t, "testfmt", f)
	root, err := chunker.Parse("testfmt", []byte("hello"))
	require.NoError(t, err)
	require.Equal(t, "hello", root.Children[0].Text)

	require.ErrorContains(t, chunker.Register("other", []string{".tfmt"}, p), `already belongs to format "testfmt"`)
	require.Error(t, chunker.Register("", nil, p))
	require.Error(t, chunker.Register("x", nil, nil))
	// A failed registration changes nothing.
	_, ok = chunker.FormatForPath("x.other")
	require.False(t, ok)
}

func TestParseErrors(t *testing.T) {
	_, err := chunker.Parse("pdfx", []byte("x"))
	require.ErrorContains(t, err, `unknown format "pdfx"`)
	require.ErrorContains(t, err, "html, md")
	for _, f := range []string{"txt", "md", "html"} {
		_, err := chunker.Parse(f, []byte("ok text \xff\xfe more"))
		require.ErrorContains(t, err, "invalid UTF-8 at byte 8", f)
	}
}

// furniture matches what RFC page breaks leave behind.
var furniture = regexp.MustCompile(`\f|\[Page \d+\]|Fielding & Reschke|RFC 7231\s{3,}HTTP|Petersson & Nilsson|RFC 7239\s{3,}Forwarded`)

func TestParseRFC7231(t *testing.T) {
	root := parseDoc(t, "rfc7231.txt")
	secs := sections(root)
	for _, path := range []string{
		"1 › 1.1", "3 › 3.1 › 3.1.1 › 3.1.1.5", "6 › 6.5 › 6.5.1", "7 › 7.1 › 7.1.1 › 7.1.1.1",
		"Appendix A", "Appendix A › A.1", "Appendix A › A.6", "Appendix D", "abstract", "index",
	} {
		require.Contains(t, secs, path)
	}
	require.Equal(t, "6.5.1. 400 Bad Request", secs["6 › 6.5 › 6.5.1"].Title)
	// MANIFEST: about 150 numbered headings; counting the flush-left numbered
	// lines of the file (grep '^([0-9]+\.|[A-Z]\.[0-9]|Appendix [A-Z])') gives 150.
	numbered := 0
	for path := range secs {
		if regexp.MustCompile(`^([0-9]+|[A-D]|Appendix [A-D])(\.[0-9]+)*$`).MatchString(lastPart(path)) {
			numbered++
		}
	}
	require.Equal(t, 150, numbered)
	// MANIFEST: 18 ASCII tables.
	require.Equal(t, 18, countKind(root, chunker.KindTable))
	// No table-of-contents line became a heading: every numbered section has body text
	// or subsections, and no title has a dot leader.
	for path, s := range secs {
		require.NotContains(t, s.Title, "....", path)
	}
	requireNoFurniture(t, root)
	// A paragraph cut by the page 5/6 break is re-joined: this sentence spans it.
	requireLeafContains(t, root, "Each Hypertext Transfer Protocol (HTTP) message is either a request or a response.")
	requireLeafContains(t, root, "HTTP provides a uniform interface for interacting with a resource")
}

func TestParseRFC7239(t *testing.T) {
	root := parseDoc(t, "rfc7239.txt")
	secs := sections(root)
	numbered := 0
	for path := range secs {
		if regexp.MustCompile(`^([0-9]+|A|Appendix A)(\.[0-9]+)*$`).MatchString(lastPart(path)) {
			numbered++
		}
	}
	// MANIFEST: 29 section headings; grep of the flush-left numbered lines
	// gives 28 (1. … 10.2.) plus "Appendix A.".
	require.Equal(t, 29, numbered)
	require.Contains(t, secs, "5 › 5.1")
	require.Contains(t, secs, "10 › 10.2")
	require.Equal(t, 1, countKind(root, chunker.KindTable)) // MANIFEST: 1 ASCII table
	requireNoFurniture(t, root)
}

func TestParseConstitution(t *testing.T) {
	root := parseDoc(t, "constitutionrf.txt")
	secs := sections(root)
	var articles, chapters, parts int
	for path, s := range secs {
		addr := lastPart(path)
		switch {
		case strings.HasPrefix(addr, "Статья "):
			articles++
			require.Equal(t, 2, strings.Count(path, chunker.PathSep), "article %s nests under Раздел › Глава", path)
		case strings.HasPrefix(addr, "Глава "):
			chapters++
		case strings.HasPrefix(addr, "Раздел "):
			parts++
		default:
			t.Fatalf("section %q (%q) is neither Раздел, Глава nor Статья", path, s.Title)
		}
	}
	// MANIFEST: 142 articles, ГЛАВА 1…9, РАЗДЕЛ ПЕРВЫЙ/ВТОРОЙ.
	require.Equal(t, 142, articles)
	require.Equal(t, 9, chapters)
	require.Equal(t, 2, parts)
	for _, a := range []string{"67.1", "75.1", "79.1", "92.1", "103.1", "71"} {
		found := false
		for path := range secs {
			found = found || lastPart(path) == "Статья "+a
		}
		require.True(t, found, "Статья %s", a)
	}
	g1 := secs["Раздел первый › Глава 1"]
	require.NotNil(t, g1)
	require.Equal(t, "ГЛАВА 1. ОСНОВЫ КОНСТИТУЦИОННОГО СТРОЯ", g1.Title)
	require.Equal(t, "РАЗДЕЛ ВТОРОЙ ЗАКЛЮЧИТЕЛЬНЫЕ И ПЕРЕХОДНЫЕ ПОЛОЖЕНИЯ", secs["Раздел второй"].Title)
	// BOM stripped; the numbered parts of an article are its parts,
	// addressed as cited ("Статья 1 часть 2").
	require.Equal(t, "КОНСТИТУЦИЯ РОССИЙСКОЙ ФЕДЕРАЦИИ", root.Children[0].Text)
	a1 := secs["Раздел первый › Глава 1 › Статья 1"]
	require.Len(t, a1.Children, 2)
	require.Equal(t, "2. Наименования Российская Федерация и Россия равнозначны.", a1.Children[1].Text)
	require.Equal(t, chunker.KindClause, a1.Children[1].Kind)
	require.Equal(t, "часть 2", a1.Children[1].Address)
	require.Equal(t, "Статья 1 часть 2", a1.Children[1].Citation)
	require.Equal(t, "Статья 1", a1.Citation)
	require.Equal(t, "Глава 1", secs["Раздел первый › Глава 1"].Citation)
}

func TestParseSPDX(t *testing.T) {
	root := parseDoc(t, "spdx-2.3-package-information.md")
	secs := sections(root)
	// MANIFEST: # / ## / ### = 1 / 27 / 81 headings, 122 fenced code blocks,
	// 23 captioned tables; the file has 27 GFM delimiter rows (grep -c '^| *-'),
	// so 4 tables have no caption.
	require.Len(t, secs, 109)
	require.Equal(t, 27, countKind(root, chunker.KindTable))
	require.Equal(t, 122, countKind(root, chunker.KindCode))
	s := secs["7 › 7.1 › 7.1.1"]
	require.NotNil(t, s)
	require.Equal(t, "7.1.1 Description", s.Title)
	require.Equal(t, "7.1 Package name field", secs["7 › 7.1"].Title, "inline anchor stripped")
	var table *chunker.Element
	for _, c := range s.Children {
		if c.Kind == chunker.KindTable {
			table = c
		}
	}
	require.NotNil(t, table)
	require.Equal(t, "Attribute | Value\nRequired | Yes\nCardinality | 1..1\nFormat | Single line of text.", table.Text)
}

func TestParseOpenChainMarkdown(t *testing.T) {
	root := parseDoc(t, "openchain-security-specification-1.1.md")
	secs := sections(root)
	// MANIFEST: 58 headings; the subtitle "### OpenChain Project: …"
	// heads nothing (an "##" follows it) and is a paragraph.
	require.Len(t, secs, 57)
	require.Equal(t, chunker.KindParagraph, root.Children[0].Children[0].Kind)
	require.Contains(t, secs, "openchain-security-assurance-specification › 1")
	require.Contains(t, secs, "openchain-security-assurance-specification › 2 › 2.14")
	// "# 3 - Requirements" is written one "#" higher than "## 1: Scope" and
	// "## 2: …": numbering, not the count of "#", makes 3 their sibling.
	require.Contains(t, secs, "openchain-security-assurance-specification › 3 › 3.1 › 3.1.1")
	require.Contains(t, secs, "openchain-security-assurance-specification › 3 › 3.4 › 3.4.2 › rationale")
	require.Equal(t, "3.1.1 - Policy", secs["openchain-security-assurance-specification › 3 › 3.1 › 3.1.1"].Title)
	require.Zero(t, countKind(root, chunker.KindTable))
}

func TestParseGoSpec(t *testing.T) {
	root := parseDoc(t, "go_spec.html")
	secs := sections(root)
	// MANIFEST: h2/h3/h4 = 19/108/38, every heading has an id.
	require.Len(t, secs, 165)
	require.Contains(t, secs, "Properties_of_types_and_values › Method_sets")
	require.Equal(t, "Method sets", secs["Properties_of_types_and_values › Method_sets"].Title)
	require.Zero(t, countKind(root, chunker.KindTable))
	// MANIFEST: 326 <pre> blocks; those inside list items stay part of the list.
	code := countKind(root, chunker.KindCode)
	require.GreaterOrEqual(t, code, 300)
	require.LessOrEqual(t, code, 326)
	visit(root, "", func(e *chunker.Element, path string) {
		require.NotContains(t, e.Text, `"Subtitle"`, "metadata comment leaked into %s", path)
	})
	require.Equal(t, "Introduction", root.Children[0].Address)
}

func TestParseTxtHeuristics(t *testing.T) {
	doc := "Title of the document\n\n" +
		"Table of Contents\n\n" +
		"1. Scope ........................ 3\n" +
		"2. Terms ........................ 4\n\n" +
		"1. Scope\n\n" +
		"This text applies to widgets.\n\n" +
		"1.1. Details\n\n" +
		"1. Every widget has a long description that reads like a sentence.\n" +
		"2. Short item.\n\n" +
		"3.1. Out of place\n\n" +
		"Numbered 3.1 does not fit under 1.1, so it is text.\n\n" +
		"2. Terms\n\n" +
		"Body.\n\n" +
		"1. Back to one\n\n" +
		"A smaller top-level number is a list item, not a heading.\n\n" +
		"Section 4.1 - Keyword heading\n\n" +
		"Appendix B. Extras\n\n" +
		"B.1. Sub\n\n" +
		"text\n"
	root, err := chunker.Parse("txt", []byte(doc))
	require.NoError(t, err)
	var got []string
	visit(root, "", func(e *chunker.Element, path string) {
		if e.Kind == chunker.KindSection {
			got = append(got, path+" = "+e.Title)
		}
	})
	require.Equal(t, []string{
		"1 = 1. Scope",
		"1 › 1.1 = 1.1. Details",
		"2 = 2. Terms",
		"Appendix B = Appendix B. Extras",
		"Appendix B › B.1 = B.1. Sub",
	}, got)
	// "Section 4.1" needs an open 4: it stays text of section 2.
	requireLeafContains(t, root, "Section 4.1 - Keyword heading")
}

func TestParseTxtPageBreak(t *testing.T) {
	page := func(n int) string {
		return "\n\nDoe                      Informational                    [Page " + string(rune('0'+n)) + "]\n\f\nRFC 9999                 Example                    May 2020\n\n\n"
	}
	doc := "1.  Intro\n\n   The first paragraph runs over a page\n" + page(1) +
		"   break and continues here.\n\n   A complete sentence ends the page.\n" + page(2) +
		"   A new paragraph starts on the next page.\n" + page(3) + "2.  Next\n\n   End.\n\n\nDoe                      Informational                    [Page 4]\n"
	root, err := chunker.Parse("txt", []byte(doc))
	require.NoError(t, err)
	secs := sections(root)
	require.Len(t, secs, 2)
	var texts []string
	for _, c := range secs["1"].Children {
		texts = append(texts, c.Text)
	}
	require.Equal(t, []string{
		"The first paragraph runs over a page break and continues here.",
		"A complete sentence ends the page.",
		"A new paragraph starts on the next page.",
	}, texts)
	requireNoFurniture(t, root)
	require.Equal(t, "End.", secs["2"].Children[0].Text)
}

func TestParseEmpty(t *testing.T) {
	for _, tc := range []struct{ format, doc string }{
		{"txt", ""}, {"txt", " \n\n\t\n"}, {"txt", "\ufeff"}, {"md", ""}, {"md", "   \n"},
		{"html", ""}, {"html", "<p>  </p><!-- c -->"},
	} {
		root, err := chunker.Parse(tc.format, []byte(tc.doc))
		require.NoError(t, err, tc)
		require.Equal(t, chunker.KindDocument, root.Kind)
		chunks, err := chunker.Split("k", root, chunker.Options{MaxTokens: 64})
		require.NoError(t, err)
		require.Empty(t, chunks, tc)
	}
}

func TestParseHTMLFragment(t *testing.T) {
	doc := `<!--{"Title": "x"}-->
<h2 id="A">Alpha</h2><p>One
   two</p><pre>line 1
  line 2</pre>
<h3>Beta Gamma</h3><ul><li>x<ul><li>y</li></ul></li></ul>
<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
<dl><dt>term</dt><dd>def</dd></dl><div>loose <i>text</i></div>`
	root, err := chunker.Parse("html", []byte(doc))
	require.NoError(t, err)
	secs := sections(root)
	require.Contains(t, secs, "A")
	b := secs["A › beta-gamma"]
	require.NotNil(t, b)
	require.Equal(t, "One two", secs["A"].Children[0].Text)
	require.Equal(t, "line 1\n  line 2", secs["A"].Children[1].Text)
	var texts []string
	for _, c := range b.Children {
		texts = append(texts, string(c.Kind)+":"+c.Text)
	}
	require.Equal(t, []string{"list:- x\n  - y", "table:k | v\na | 1", "list:term\n  def", "paragraph:loose text"}, texts)
}

func lastPart(path string) string {
	parts := strings.Split(path, chunker.PathSep)
	return parts[len(parts)-1]
}

func requireNoFurniture(t *testing.T, root *chunker.Element) {
	t.Helper()
	visit(root, "", func(e *chunker.Element, path string) {
		require.False(t, furniture.MatchString(e.Text), "page furniture in %s: %q", path, e.Text)
		require.False(t, furniture.MatchString(e.Title), "page furniture in %s title", path)
	})
}

func requireLeafContains(t *testing.T, root *chunker.Element, s string) {
	t.Helper()
	found := false
	visit(root, "", func(e *chunker.Element, _ string) {
		found = found || strings.Contains(e.Text, s)
	})
	require.True(t, found, "no element contains %q", s)
}
