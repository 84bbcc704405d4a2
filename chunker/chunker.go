// Package chunker parses documents into an element tree (one parser per
// format) and packs neighbouring elements and small sections into chunks
// with overlap.
//
// chunker imports no other kgsync package.
package chunker

// Kind names what an element is.
type Kind string

// Element kinds.
const (
	KindDocument  Kind = "document"
	KindSection   Kind = "section"
	KindParagraph Kind = "paragraph"
	KindList      Kind = "list"
	KindTable     Kind = "table"
	KindCode      Kind = "code"
	// KindAnnex is a section that is an annex or appendix ("Annex A",
	// "Приложение I"); it holds children like a section.
	KindAnnex Kind = "annex"
	// KindClause is a numbered requirement or item that is not a heading
	// ("1.1.1 documented policy …" in a specification's list): a leaf whose
	// Address is its number, so cross-references can point at it.
	KindClause Kind = "clause"
	// KindNote is a footnote or endnote, placed after the paragraph that
	// references it; its text starts with its marker ("[1] …").
	KindNote Kind = "note"
	// KindCaption is a figure caption ("Figure 3 — Flow"), addressed by the
	// figure ("Figure 3"). Table captions are not leaves: they become the
	// table's Title.
	KindCaption Kind = "caption"
)

// Link is a hyperlink inside an element's text.
type Link struct {
	// Text is the link's visible text.
	Text string
	// Href is the target as written: "#7.6", "#Method_sets",
	// "document-creation-information.md#6.5", "https://…".
	Href string
}

// Element is an addressable part of a document: the document itself, a
// section, a paragraph, a list, a table.
type Element struct {
	// Kind says what the element is.
	Kind Kind
	// Address is the element's own segment of its address path, unique
	// among its siblings: a unit of the document's numbering ("Article 7",
	// "(3)", "6.5.1", "A.1", "Annex II", "Статья 71", "часть 2", "Table
	// 1") or, where the document numbers nothing, a heading slug or id
	// ("method-sets", "Method_sets") or a leaf name: a kind letter and an
	// ordinal ("p2") under a parent of few leaves, else a hash of the
	// start of the leaf's text ("p-3fa2c1"), so that inserting a paragraph
	// renames nothing else (see assignLeafAddresses).
	Address string
	// Citation is the element's address in full as the document and its
	// readers cite it ("Article 7(3)(a)", "Annex II 6.3", "Chapter V
	// Section 2", "Статья 81 часть 3", "6.5.1", "Table 1", "Method sets"),
	// set by Parse (see assignCitations for the rules); "" for a leaf
	// without a number of its own. ParseAddress turns what a user types
	// into the same form; compare with AddressKey.
	Citation string
	// Title is the heading text of a section or annex, the caption of a
	// table ("Table 13 — Metadata for the package name field"), "" for
	// other kinds.
	Title string
	// Text is the element's own text (paragraph body, table text); sections
	// carry their text in Children.
	Text string
	// Children are the element's sub-elements in document order.
	Children []*Element
	// HeaderRows is, for a table, how many leading lines of Text are header
	// rows (Text has one row a line, cells joined by " | "); Split repeats
	// them at the start of every row group of a table it must cut.
	HeaderRows int
	// Links are the hyperlinks in the element's own text (md, html, docx),
	// in document order; CrossRefs reads them.
	Links []Link
	// Noise, on the document root only, is the text the parser left out
	// of the tree because it is not the document's body: running headers
	// and footers, page numbers and page markers, a journal's page header,
	// amendment markers, front matter. Everything else is in exactly one
	// element.
	Noise []Noise
}

// Noise is one piece of text a parser dropped (see Element.Noise).
type Noise struct {
	// Text is what was dropped, white space collapsed.
	Text string
	// Reason says why: "running header", "page number", "page marker",
	// "page header or marker", "amendment marker", "front matter".
	Reason string
	// Line is the 1-based line of the source it was on, 0 where the
	// format has no lines (html, docx, pdf).
	Line int
}

// isContainer reports whether elements of kind hold children rather than
// text (sections and annexes, and the document).
func isContainer(k Kind) bool {
	return k == KindSection || k == KindAnnex || k == KindDocument
}

// Chunk is one retrieval unit: one or more neighbouring elements in
// document order (the leaves of one parent, or of several small
// consecutive sections), up to Options.MaxTokens, with overlap.
type Chunk struct {
	// ID is derived from the document key and the chunk's structural address,
	// so an edit changes only the ids/hashes of the chunks it touches.
	ID string
	// Address is the address path of the chunk's first element, e.g.
	// "rfc7231.txt › 6 › 6.5.1 › p2".
	Address string
	// Context is the heading path of the chunk's first element, e.g. "6.
	// Response Status Codes › 6.5.1. 400 Bad Request"; the headings of
	// sections the chunk enters later are in Text, before their elements.
	Context string
	// Text is the chunk's own text, overlap included.
	Text string
	// Position is the chunk's ordinal within the document, from 0.
	Position int
	// Tokens is the token count of Text.
	Tokens int
	// Parent is the address path of the deepest element that holds all of
	// the chunk's elements.
	Parent string
	// Citation is the address, as cited, of the chunk's first element or,
	// when that has none of its own (an unnumbered paragraph), of the
	// nearest element above it that has one ("Article 7(3)", "6.5.1"); ""
	// when nothing above the chunk is cited.
	Citation string
	// Elements are the address paths of the elements the chunk covers.
	Elements []string
}

// EmbedText is the text sent to the embedder: the context line, a blank
// line, then the chunk text. It is also what the embedding cache is keyed by.
func (c Chunk) EmbedText() string {
	if c.Context == "" {
		return c.Text
	}
	return c.Context + "\n\n" + c.Text
}

// Version is the chunker's algorithm version. It is part of every pipeline's
// config fingerprint: bump it when parsing or grouping changes the chunks of
// unchanged documents, so that they are rechunked once.
//
// Version 2: table captions became table titles and addresses ("Table 13"),
// figure captions and notes became their own kinds, md/html/txt input is
// decoded from UTF-16 and Windows-1251, docx and pdf were added.
//
// Version 3: element citations; leaves of large parents keyed by a hash
// of their text instead of their ordinal.
//
// Version 4: structure read from EUR-Lex HTML, PDF conversions and
// numbered plain text; running headers, page markers and footnote blocks
// kept out of the text, by the same rules in the md, txt, pdf and docx
// readers.
//
// Version 5: inserted Russian points ("пункт б.1") and annex points
// ("Annex I 3") cited, so the graph's citations are the ones ParseAddress
// reads back.
//
// Version 6: in PDF conversions, an unnumbered heading with no text of its
// own holds the headings after it (and the numbered sections), and
// unnumbered headings wrapped over two lines are read.
//
// Version 7: chunks are packed across elements and small sections
// (neighbouring small sections share a chunk up to MaxTokens, their
// headings in the text), with boundaries at local maxima of the gaps'
// structural strength and content hash (see Split).
//
// Version 8: a gap's content hash is of the start of the text before it
// (its first 32 bytes), so an edit after the first words of a paragraph
// or sentence re-ranks no gap and moves no boundary but by size.
//
// Version 9: laws in their official fixed-width layout are read
// paragraph by paragraph (wrapped headings whole), inserted articles,
// parts and points ("Статья 18-1", "2.1.", "5-1)") are elements cited as
// "Статья 18.1", "часть 2.1", "пункт 5.1".
//
// Version 10: a glossary's abbreviation lines are terms again (Version 9
// kept 2 of the 11 terms of mdcg-2019-9-rev1-sscp.md), a fixed-width
// act's header lines and centred headings stay apart, index letters and
// sentence ends are no drop caps or running lines.
//
// Version 11: the review fixes of Version 10 (glossary abbreviation
// lines, drop caps) changed output of layouts outside the corpus; in the
// fixed-width layout every line may be a heading (a header run on without
// blank lines into "Глава 1. …"), indented "Section N." headings are read,
// Belarus laws are named.
//
// TestVersionFollowsOutput fails when the corpus output (terms and
// cross-references included) changes under the same Version.
const Version = 11
