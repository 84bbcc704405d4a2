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
