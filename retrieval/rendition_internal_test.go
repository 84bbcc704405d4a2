package retrieval

import (
	"strings"
	"testing"
)

// TestRenditionKeysSkipRowAttributes: two rows whose long attribute holds
// the same text are two records, not two renditions of one document, so
// neither chunk is folded into the other; two documents' chunks are.
func TestRenditionKeysSkipRowAttributes(t *testing.T) {
	text := strings.Repeat("The same boilerplate description of a product line and its warranty. ", 3)
	units := []Unit{
		{ID: "c1", Label: LabelChunk, Node: "items:1", NodeLabel: "Item", Text: text, Address: "items:1#description"},
		{ID: "c2", Label: LabelChunk, Node: "items:2", NodeLabel: "Item", Text: text, Address: "items:2#description"},
		{ID: "c3", Label: LabelChunk, Node: "docs:a.md", NodeLabel: "Document", Text: text, Address: "docs:a.md/p1"},
		{ID: "c4", Label: LabelChunk, Node: "docs:a.docx", NodeLabel: "Document", Text: text, Address: "docs:a.docx/p1"},
	}
	keys := renditionKeys(units)
	if _, ok := keys[0]; ok {
		t.Errorf("a row's attribute chunk has a rendition key: %v", keys)
	}
	if _, ok := keys[1]; ok {
		t.Errorf("a row's attribute chunk has a rendition key: %v", keys)
	}
	if _, ok := keys[2]; !ok {
		t.Errorf("a document chunk another document repeats has no rendition key: %v", keys)
	}
}

// TestRenditionsInExpandAndEval: a wide search's hit that is another copy
// of a result's hit is that hit again (sameRendition), and eval counts the
// elements of the copies folded into an uncut hit as received, but not
// those of a hit cut to a part of its chunk.
func TestRenditionsInExpandAndEval(t *testing.T) {
	text := strings.Repeat("The archive keeper retains every signed archive for ten years. ", 3)
	units := []Unit{
		{ID: "md", Label: LabelChunk, Node: "docs:a.md", NodeLabel: "Document", Text: text, Elements: []string{"docs:a.md › 1 › p1", "docs:a.md › 1 › p2"}},
		{ID: "pdf", Label: LabelChunk, Node: "docs:a.pdf", NodeLabel: "Document", Text: text, Elements: []string{"docs:a.pdf › 1 › p1", "docs:a.pdf › 1 › p2"}},
		{ID: "other", Label: LabelChunk, Node: "docs:b.md", NodeLabel: "Document", Text: strings.Repeat("Another passage about tides and the harvest fair. ", 3), Elements: []string{"docs:b.md › p1"}},
	}
	d := newCorpusData(&Corpus{Units: units})
	md, pdf, other := units[0].hit(), units[1].hit(), units[2].hit()
	if !d.sameRendition(md, pdf) || !d.sameRendition(pdf, md) {
		t.Errorf("two documents' copies of one text are not the same rendition")
	}
	if d.sameRendition(md, other) || d.sameRendition(md, md) {
		t.Errorf("different texts, or one hit with itself, taken for renditions")
	}
	md.Renditions = []Rendition{{ID: "pdf", Node: "docs:a.pdf"}}
	got := d.withRenditions([]Hit{md})
	if len(got[0].Elements) != 4 || got[0].Elements[3] != "docs:a.pdf › 1 › p2" {
		t.Errorf("the folded copy's elements are not counted: %v", got[0].Elements)
	}
	if len(md.Elements) != 2 {
		t.Errorf("withRenditions changed its input: %v", md.Elements)
	}
	cut := md
	cut.Elements = cut.Elements[:1]
	if got := d.withRenditions([]Hit{cut}); len(got[0].Elements) != 1 {
		t.Errorf("a cut hit took its copy's whole elements: %v", got[0].Elements)
	}
}
