package retrieval

import (
	"context"
	"strings"
)

// Labels of the document graph a search returns and expands into (the
// pipeline's default mapping, design.md "Graph shape written to Memgraph").
const (
	LabelChunk   = "Chunk"
	LabelSection = "Section"
	LabelElement = "Element"
	LabelTerm    = "Term"
	// PropEmbedding is a chunk's (and a term's) vector property.
	PropEmbedding = "embedding"
	// ChunkVectorIndex is the vector index of the chunks.
	ChunkVectorIndex = "chunk_embedding"
	// PathSep joins the addresses of an element path into a node id
	// ("docs:rfc7231.txt › 6 › 6.5.1").
	PathSep = " › "
)

// Corpus is what a search reads of one pipeline: its documents with their
// element trees, terms and references, and the units it ranks (chunks and
// the short embeddable attributes of table rows). The pipeline builds it
// from state (pipeline.Pipeline.Corpus), so searching needs no graph
// database.
type Corpus struct {
	// Documents are the pipeline's documents (files, attachments).
	Documents []*Document
	// Units are the ranked retrieval units: every chunk and every short
	// embeddable attribute.
	Units []Unit
	// Mandatory are the MANDATORY edges, each once in its configured
	// direction.
	Mandatory []Edge
}

// Document is one document node with its element tree.
type Document struct {
	// ID and Label name the document's node ("docs:rfc7231.txt", "Document").
	ID, Label string
	// Source and Key name its record in state.
	Source, Key string
	// Title is the document's title ("" when it has none).
	Title string
	// Names are the identifiers a user or another document names it by:
	// the file name, "RFC 7231", the title (chunker.DocumentIDs).
	Names []string
	// Lang is the language of its text ("en", "ru", "es"; "" unknown), as
	// DetectLanguage found it when the document was indexed.
	Lang string
	// Nodes are its sections (containers) and elements (leaves) in
	// document order.
	Nodes []Node
	// Terms are the terms it defines.
	Terms []Term
	// Refs are the CROSS_REF edges from its nodes, to the same or another
	// document.
	Refs []Edge
}

// Node is a (:Section) or an (:Element) of a document.
type Node struct {
	// ID is the node's id: the document id and the address path joined by
	// PathSep. Label is LabelSection or LabelElement.
	ID, Label string
	// Kind is the chunker's element kind ("section", "paragraph", "clause", …).
	Kind string
	// Address is the node's own address within its parent ("6.5.1",
	// "Статья 81", "Table 13", "p2").
	Address string
	// Citation is the node's full address as its document is cited
	// ("Article 7(3)(a)", "Статья 81 часть 3", "4.2.2", "Table 13"), ""
	// for a leaf the document does not number (chunker.Element.Citation).
	Citation string
	// Title is a section's heading or a table's caption.
	Title string
	// Text is an element's own text ("" for sections).
	Text string
	// Parent is the id of the enclosing section, or the document id.
	Parent string
	// Level is the depth below the document, from 1.
	Level int
}

// Term is a defined term of a document.
type Term struct {
	ID, Name, Definition string
	// DefinedIn is the id of the defining node and DefinedInLabel its label.
	DefinedIn, DefinedInLabel string
}

// Edge is a CROSS_REF or MANDATORY edge between nodes; Text is the
// reference as written ("Section 5.2") or the MANDATORY note.
type Edge struct {
	From, FromLabel, To, ToLabel, Text string
	// Source is "expert" for a MANDATORY edge an expert asked for in the
	// review, "" otherwise; By and At are who asked for it and when, as
	// the edge's corrected_by and corrected_at hold them.
	Source, By, At string
}

// Unit is one ranked retrieval unit: a chunk, or a row's embeddable
// attribute (its node and vector property).
type Unit struct {
	// ID is the node holding the vector: a chunk id or a row's node id.
	ID string
	// Label is that node's label; Property its vector property
	// (PropEmbedding for chunks, "<attribute>_embedding" for rows).
	Label, Property string
	// Node is the record's node the unit belongs to (a chunk's document or
	// row) and NodeLabel its label (the anchor: "Document" for files).
	Node, NodeLabel string
	// Text is the embedded text: a chunk's context line and text, or the
	// attribute's value.
	Text string
	// Context is a chunk's context line (its heading path).
	Context string
	// Address is a chunk's element address path ("" for attributes).
	Address string
	// Parent is the id of the node whose elements the chunk groups.
	Parent string
	// Elements are the ids of the leaf elements a chunk covers.
	Elements []string
	// Next is the id of the chunk that follows a chunk (its NEXT edge),
	// "" for the last one and for attributes.
	Next string
	// TextHash keys the embedding cache (diff.TextHash of Text).
	TextHash uint64
	// Tokens is a chunk's token count (0 for attributes: count Text).
	Tokens int
	// Lang is the unit's language ("" unknown), for the lexical analyzer.
	Lang string
}

// Attribute is the embeddable attribute a row unit holds ("" for chunks).
func (u Unit) Attribute() string {
	if u.Label == LabelChunk {
		return ""
	}
	return strings.TrimSuffix(u.Property, "_embedding")
}

// CorpusLoader reads a pipeline's corpus from state; pipeline.Pipeline
// implements it.
type CorpusLoader interface {
	Corpus(ctx context.Context) (*Corpus, error)
}
