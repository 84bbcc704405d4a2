package state

import (
	"context"
	"fmt"
)

// ReviewElement is what state keeps of one element of a reviewed
// document: the Grist row it was published as and the expert's input read
// back from it (pipeline/review owns Data's shape). One per element the
// document has, plus those it lost that still carry expert input.
type ReviewElement struct {
	// Doc is the document's node id ("docs:rules/mdr.md"); Element the
	// element's node id (its address path under Doc), or for a row kept
	// after its element left the document a key no element has (pipeline/
	// review: "<id> #missing"), since another element may hold its id now.
	Doc, Element string
	// RowID is the element's row in the review's Elements table, 0 while it
	// has none.
	RowID int64
	// Expert says the element carries expert input (a corrected text, an
	// exclusion, a mandatory link, a note) or is the target of another
	// element's mandatory link: it is never dropped without the expert.
	Expert bool
	// Flagged says the element needs review: its parsed text changed under
	// a correction, or it left the document while carrying expert input.
	Flagged bool
	// Data is the rest, JSON.
	Data []byte
}

// ReviewDocument is what state keeps of one reviewed document's row.
type ReviewDocument struct {
	Doc string
	// RowID is the document's row in the review's Documents table, 0 while
	// it has none.
	RowID int64
	// Pending says its rows must be written to Grist again: a publish failed
	// or was cut short, so Grist may hold any mix of old and new rows.
	Pending bool
	// Data is the rest, JSON.
	Data []byte
}

// ReviewRef names one element of a reviewed document.
type ReviewRef struct{ Doc, Element string }

// ReviewCommit is one atomic change of a pipeline's review state.
// Deletions apply before upserts.
type ReviewCommit struct {
	Pipeline string
	// DeleteDocuments are removed with all their elements.
	DeleteDocuments []string
	// DeleteElements are removed.
	DeleteElements []ReviewRef
	// Documents are upserted by Doc, Elements by (Doc, Element).
	Documents []ReviewDocument
	Elements  []ReviewElement
}

// Check reports a commit state stores must refuse: an element or document
// without ids, or listed twice.
func (c ReviewCommit) Check() error {
	if c.Pipeline == "" {
		return fmt.Errorf("review commit: empty pipeline")
	}
	seen := map[ReviewRef]bool{}
	for _, e := range c.Elements {
		r := ReviewRef{e.Doc, e.Element}
		if e.Doc == "" || e.Element == "" {
			return fmt.Errorf("review commit %q: element %q of document %q: empty id", c.Pipeline, e.Element, e.Doc)
		}
		if seen[r] {
			return fmt.Errorf("review commit %q: element %q of document %q listed twice", c.Pipeline, e.Element, e.Doc)
		}
		seen[r] = true
	}
	docs := map[string]bool{}
	for _, d := range c.Documents {
		if d.Doc == "" {
			return fmt.Errorf("review commit %q: document with an empty id", c.Pipeline)
		}
		if docs[d.Doc] {
			return fmt.Errorf("review commit %q: document %q listed twice", c.Pipeline, d.Doc)
		}
		docs[d.Doc] = true
	}
	return nil
}

// ReviewCounts summarise a pipeline's review state.
type ReviewCounts struct {
	// Documents and Elements are the rows kept; Expert the elements with
	// expert input, Flagged those that need review, Pending the documents
	// whose rows must be written to Grist again.
	Documents, Elements, Expert, Flagged, Pending int
}

// ReviewStore keeps the state of pipelines' expert reviews in Grist.
// state/sqlite and state/postgres implement it (the pipeline checks for it
// by type assertion).
type ReviewStore interface {
	// ReviewElements returns the stored elements of the documents, by
	// document, in element order (documents with none are absent).
	ReviewElements(ctx context.Context, pipeline string, docs []string) (map[string][]ReviewElement, error)
	// ReviewRows returns the stored elements with the given row ids, by row
	// id (ids not stored are absent).
	ReviewRows(ctx context.Context, pipeline string, rows []int64) (map[int64]ReviewElement, error)
	// ReviewExpert returns every stored element that carries expert input
	// or is flagged, sorted by document and element.
	ReviewExpert(ctx context.Context, pipeline string) ([]ReviewElement, error)
	// ReviewDocuments returns the named documents' rows (every document
	// when docs is nil), by document.
	ReviewDocuments(ctx context.Context, pipeline string, docs []string) (map[string]ReviewDocument, error)
	// ReviewCommit applies c atomically.
	ReviewCommit(ctx context.Context, c ReviewCommit) error
	// ReviewCounts counts a pipeline's review state.
	ReviewCounts(ctx context.Context, pipeline string) (ReviewCounts, error)
}
