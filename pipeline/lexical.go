package pipeline

import (
	"maps"

	"github.com/kgsync/kgsync/chunker"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/state"
)

// Lexical search (design.md "retrieval"): every chunk, element, term and
// table row with embeddable attributes gets its text normalized by the
// lexical analyzer (retrieval.LexicalText: lower-case, stop words out,
// Snowball stems in the document's language), written to the graph as the
// property PropLex (Memgraph's text indexes do not stem) and to the
// lexical index in state. A run touches only the rows of what it writes or
// deletes.
const (
	// PropLex is the normalized text property of chunks, elements and terms
	// that the text indexes cover.
	PropLex = "lex"
	// PropRowLex is the same for a table row's node (its embeddable
	// attributes' texts): an anchor may have an attribute called "lex".
	PropRowLex = "_lex"
	// PropLang is a document node's detected language ("en", "ru", …).
	PropLang = "lang"
	// Text index names.
	ChunkTextIndex   = "chunk_lex"
	ElementTextIndex = "element_lex"
	TermTextIndex    = "term_lex"
)

// TextIndexName is the text index of an anchor's rows.
func TextIndexName(label string) string { return strings.ToLower(label) + "_lex" }

// lang is the language the record's texts are analyzed in: the document's
// detected language, or for a table row the language of its embeddable
// texts.
func (o *recordOutput) lang() string {
	if l, _ := o.node[PropLang].(string); l != "" {
		return l
	}
	if o.rowLang == "" {
		o.rowLang = retrieval.DetectLanguage(o.rowText())
	}
	return o.rowLang
}

// rowText is a table row's embeddable texts, in attribute order.
func (o *recordOutput) rowText() string {
	if len(o.vecTexts) == 1 {
		for _, text := range o.vecTexts {
			return text
		}
	}
	var parts []string
	for _, attr := range slices.Sorted(maps.Keys(o.vecTexts)) {
		parts = append(parts, o.vecTexts[attr])
	}
	return strings.Join(parts, "\n")
}

// lexUpsert adds a lexical row of the record to its commit.
func (o *recordOutput) lexUpsert(kind, id, text string) string {
	return o.addLexRow(kind, id, retrieval.LexicalText(text, o.lang()))
}

// lexUpsertNode adds the lexical row of a table row's node: its
// embeddable texts (rowText), whose language, when nothing names it, is
// detected with the lexical text from the same words.
func (o *recordOutput) lexUpsertNode() string {
	if l, _ := o.node[PropLang].(string); l != "" || o.rowLang != "" {
		return o.lexUpsert(state.LexicalNode, o.nodeID, o.rowText())
	}
	var lex string
	lex, o.rowLang = retrieval.LexicalTextDetect(o.rowText())
	return o.addLexRow(state.LexicalNode, o.nodeID, lex)
}

// addLexRow adds a lexical row of lexical text lex to the record's commit
// and returns lex.
func (o *recordOutput) addLexRow(kind, id, lex string) string {
	o.lexRows = append(o.lexRows, state.LexicalRow{
		LexicalRef: state.LexicalRef{Source: o.it.source, RecordKey: o.it.rec.Key, ID: id}, Kind: kind, Text: lex})
	return lex
}

// lexDelete removes a lexical row of the record.
func (o *recordOutput) lexDelete(id string) {
	o.lexGone = append(o.lexGone, state.LexicalRef{Source: o.it.source, RecordKey: o.it.rec.Key, ID: id})
}

// lexDeleteAll removes every row the stored version of the record has: its
// chunks, elements, terms and node.
func (o *recordOutput) lexDeleteAll() {
	for _, c := range o.oldChunks {
		o.lexDelete(c.ID)
	}
	for _, e := range o.oldElements {
		o.lexDelete(e.ID)
	}
	for _, t := range o.oldTerms {
		o.lexDelete(t.ID)
	}
	if len(o.oldVectors) > 0 && o.oldNode == nil {
		o.lexDelete(o.nodeID)
	}
	if o.oldNode != nil {
		o.lexDelete(o.oldNode.ID)
	}
}

// chunkLexText is what a chunk is indexed by: its context line and text,
// and its innermost heading once more — a heading names the topic of all
// its text, so its words weigh double (as a BM25F title field would).
func chunkLexText(c chunker.Chunk) string {
	if c.Context == "" {
		return c.Text
	}
	parts := strings.Split(c.Context, " › ")
	return c.EmbedText() + "\n" + parts[len(parts)-1]
}

// elementLexText is what an element is indexed by: its title (a table's
// caption) and text, and the title of the section it is in.
func elementLexText(e elementNode, heading string) string {
	return e.Title + "\n" + e.Text + "\n" + heading
}

// documentLanguage detects a document's language from its elements' text.
func documentLanguage(elements []elementNode) string {
	var b strings.Builder
	for _, e := range elements {
		if b.Len() > 64<<10 {
			break
		}
		b.WriteString(e.Title)
		b.WriteString(" ")
		b.WriteString(e.Text)
		b.WriteString("\n")
	}
	return retrieval.DetectLanguage(b.String())
}
