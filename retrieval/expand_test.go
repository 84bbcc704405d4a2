package retrieval

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/chunker"
)

// TestDefinitionTakesWholePoint: a term defined in the first paragraph of
// an untitled numbered point ("(65) 'serious incident' means … any of the
// following:") is defined by the whole point, its list items included; a
// term heading a titled section is defined by its first paragraph only.
func TestDefinitionTakesWholePoint(t *testing.T) {
	const doc = "docs:act.html"
	art := doc + " › Article 2"
	pt := art + " › (65)"
	sec := doc + " › 4.3"
	c := &Corpus{Documents: []*Document{{ID: doc, Nodes: []Node{
		{ID: art, Label: LabelSection, Title: "Article 2 Definitions", Parent: doc},
		{ID: pt, Label: LabelSection, Address: "(65)", Parent: art},
		{ID: pt + " › p1", Label: LabelElement, Text: "(65) 'serious incident' means any incident that led to any of the following:", Parent: pt},
		{ID: pt + " › (a)", Label: LabelElement, Text: "(a) the death of a patient,", Parent: pt},
		{ID: pt + " › (b)", Label: LabelElement, Text: "(b) a serious public health threat;", Parent: pt},
		{ID: art + " › (66)", Label: LabelElement, Text: "(66) 'serious public health threat' means an event …", Parent: art},
		{ID: sec, Label: LabelSection, Title: "4.3. GET", Parent: doc},
		{ID: sec + " › p1", Label: LabelElement, Text: "The GET method requests transfer of a current selected representation.", Parent: sec},
		{ID: sec + " › p2", Label: LabelElement, Text: "It is the primary mechanism of information retrieval.", Parent: sec},
	}}}}
	x := newCorpusIndex(c)
	tok := chunker.DefaultTokenizer()

	id, leaves := x.definition(pt+" › p1", tok)
	require.Equal(t, pt, id)
	require.Equal(t, []string{pt + " › p1", pt + " › (a)", pt + " › (b)"}, leaves)

	id, leaves = x.definition(sec+" › p1", tok)
	require.Equal(t, sec+" › p1", id, "a titled section's first paragraph defines its term")
	require.Equal(t, []string{sec + " › p1"}, leaves)

	id, leaves = x.definition(art+" › (66)", tok)
	require.Equal(t, art+" › (66)", id, "a point that is one element is its own definition")
	require.Len(t, leaves, 1)
}
