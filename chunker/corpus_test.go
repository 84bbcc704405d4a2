package chunker_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/corpus"

	"github.com/kgsync/kgsync/chunker"
)

// corpusDir is the shared corpus (internal/corpus).
func corpusDir(tb testing.TB) string { return corpus.Dir(tb) }

// readDoc reads docs/<name> from the corpus.
func readDoc(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(corpus.DocPath(tb, name))
	require.NoError(tb, err)
	return b
}

// parseDoc parses docs/<name> in the format of its extension.
func parseDoc(tb testing.TB, name string) *chunker.Element {
	tb.Helper()
	format, ok := chunker.FormatForPath(name)
	require.True(tb, ok, "no format for %s", name)
	root, err := chunker.Parse(format, readDoc(tb, name))
	require.NoError(tb, err)
	return root
}

// corpusDocs are the corpus documents in formats this package parses.
var corpusDocs = []string{
	"rfc7231.txt",
	"rfc7239.txt",
	"constitutionrf.txt",
	"spdx-2.3-package-information.md",
	"openchain-security-specification-1.1.md",
	"go_spec.html",
	"openchain-security-specification-1.1.docx",
	"openchain-security-specification-1.1.pdf",
	"OpenChainSpec-2.0-Translation-ru.docx",
	"eu-mdr-2017-745-oj.html",
	"mdcg-2019-9-rev1-sscp.md",
	"crd-2011-83-consolidated-excerpt.html",
}

// visit calls f for every element under root with its address path
// (docKey-relative, "" for the root) and its depth.
func visit(e *chunker.Element, path string, f func(e *chunker.Element, path string)) {
	f(e, path)
	for _, c := range e.Children {
		p := c.Address
		if path != "" {
			p = path + chunker.PathSep + c.Address
		}
		visit(c, p, f)
	}
}

// sections maps address path → section element.
func sections(root *chunker.Element) map[string]*chunker.Element {
	out := map[string]*chunker.Element{}
	visit(root, "", func(e *chunker.Element, path string) {
		if e.Kind == chunker.KindSection {
			out[path] = e
		}
	})
	return out
}

// countKind counts the elements of kind under root.
func countKind(root *chunker.Element, kind chunker.Kind) int {
	n := 0
	visit(root, "", func(e *chunker.Element, _ string) {
		if e.Kind == kind {
			n++
		}
	})
	return n
}
