package chunker_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
)

// fuzzParse parses data and chunks the result; neither may panic, and
// chunks must keep Split's promises.
func fuzzParse(t *testing.T, format string, data []byte) {
	root, err := chunker.Parse(format, data)
	if err != nil {
		return
	}
	opts := chunker.Options{MaxTokens: 32, OverlapTokens: 8}
	chunks, err := chunker.Split("f", root, opts)
	require.NoError(t, err)
	for _, c := range chunks {
		require.NotEmpty(t, strings.TrimSpace(c.Text))
		require.LessOrEqual(t, c.Tokens, opts.MaxTokens+opts.OverlapTokens)
	}
}

func FuzzParseTxt(f *testing.F) {
	for _, s := range []string{
		"", "\ufeff1.  Intro\n\n   Text.\n",
		"1. Scope ..... 3\n\n1.  Scope\n\n   body\n\f\nRFC 1  x  2014\n\n   more\n",
		"РАЗДЕЛ ПЕРВЫЙ\n\nГЛАВА 1.\nОСНОВЫ\n\nСтатья 67.1 <*>\n\n1. Каждый имеет право.\n",
		"Appendix A.  X\n\nA.1.  Y\n\n+--+\n|a |\n+--+\n", "Section 4.1: Z\n\n\f\f\f",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, "txt", data) })
}

func FuzzParseMarkdown(f *testing.F) {
	for _, s := range []string{
		"", "# 7 X\n\n## 7.1 Y <a name=\"7.1\"></a>\n\ntext\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
		"- a\n  - b\n1. c\n\n```go\nx\n```\n\n> q\n\n<div>h</div>\n", "#\n##\n###### \n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, "md", data) })
}

func FuzzParseHTML(f *testing.F) {
	for _, s := range []string{
		"", "<!--{\"T\":1}-->\n<h2 id=\"a\">A</h2><p>x</p><pre>1\n 2</pre>",
		"<table><tr><td>1<table><tr><td>2</td></tr></table></td></tr></table>",
		"<ul><li>a<ol><li>b</li></ol></li></ul><dl><dt>t<dd>d</dl><h7>x</h7><h1></h1>",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, "html", data) })
}

// corpusSeeds adds the corpus files of ext to f, plus tiny malformed inputs.
func corpusSeeds(f *testing.F, names []string, tiny ...string) {
	for _, n := range names {
		f.Add(readDoc(f, n))
	}
	for _, s := range tiny {
		f.Add([]byte(s))
	}
}

func FuzzParseDocx(f *testing.F) {
	corpusSeeds(f, []string{"openchain-security-specification-1.1.docx", "OpenChainSpec-2.0-Translation-ru.docx"},
		"", "PK\x03\x04", "PK\x05\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, "docx", data) })
}

func FuzzParsePDF(f *testing.F) {
	corpusSeeds(f, []string{"openchain-security-specification-1.1.pdf"},
		"", "%PDF-1.4", "%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF",
		string(minimalPDF("BT /F1 12 Tf 72 700 Td (1 Scope) Tj ET")))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, "pdf", data) })
}
