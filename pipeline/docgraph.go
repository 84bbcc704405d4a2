package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/state"
)

// Labels and relationship types of the document graph (issue "Documents as
// a graph"): a document is an addressable tree plus a graph of references.
const (
	// LabelElement is a leaf element: paragraph, list, table, code block,
	// note, caption, clause.
	LabelElement = "Element"
	// LabelTerm is a defined term.
	LabelTerm = "Term"
	// RelCovers links a chunk to the elements it covers.
	RelCovers = "COVERS"
	// RelDefinedIn links a term to the element that defines it.
	RelDefinedIn = "DEFINED_IN"
	// RelCrossRef links an element to the element it refers to ("see 4.1",
	// "Section 2.7 of [RFC7230]"), in the same or another document.
	RelCrossRef = "CROSS_REF"
	// RelMandatory links elements that must always be retrieved together.
	RelMandatory = "MANDATORY"
	// TermVectorIndex is the vector index of term definitions.
	TermVectorIndex = "term_embedding"
)

// termNode is one (:Term) of a document.
type termNode struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Definition string `json:"definition"`
	// DefinedIn is the id of the defining element and its label.
	DefinedIn      string `json:"defined_in"`
	DefinedInLabel string `json:"defined_in_label"`
}

// embedText is what a term's vector is computed from.
func (t termNode) embedText() string { return t.Name + ": " + t.Definition }

// xrefEdge is one CROSS_REF edge between elements (ids and labels).
type xrefEdge struct {
	From      string `json:"from"`
	FromLabel string `json:"from_label"`
	To        string `json:"to"`
	ToLabel   string `json:"to_label"`
	Text      string `json:"text"`
	// Source is "expert" for a MANDATORY edge an expert asked for in the
	// review (By and At: who, when), "" otherwise.
	Source string `json:"source,omitempty"`
	By     string `json:"by,omitempty"`
	At     string `json:"at,omitempty"`
}

func (e xrefEdge) ref() sink.EdgeRef {
	return sink.EdgeRef{Type: RelCrossRef, From: sink.NodeRef{Label: e.FromLabel, ID: e.From},
		To: sink.NodeRef{Label: e.ToLabel, ID: e.To}, Key: "xref:" + e.From + "->" + e.To}
}

func (e xrefEdge) upsert() sink.EdgeUpsert {
	r := e.ref()
	return sink.EdgeUpsert{Type: r.Type, From: r.From, To: r.To, Key: r.Key, Props: map[string]any{"text": e.Text}}
}

// extRef is a reference to another document, resolved by document
// identifier after the run's documents are written (linkPass).
type extRef struct {
	From      string `json:"from"`
	FromLabel string `json:"from_label"`
	Text      string `json:"text"`
	Target    string `json:"target"`
	Doc       string `json:"doc"`
}

// docGraph is the element tree, terms and references of one document.
type docGraph struct {
	sections, elements []elementNode
	terms              []termNode
	xrefs              []xrefEdge
	ext                []extRef
	ids                []string
	resolved           int
	unresolved         int
}

// buildDocGraph walks a parsed document: containers (sections, annexes, and
// any element with children) become (:Section) nodes, leaves (:Element)
// nodes, both with ids = address paths under docID (the same paths as
// chunker.Chunk.Parent and Chunk.Elements); then terms and references.
func buildDocGraph(docID, docLabel, key string, root *chunker.Element) docGraph {
	gb := &docGraphBuilder{docID: docID, labelOf: map[string]string{docID: docLabel}}
	gb.walk(root, docID, docLabel, 1)
	gb.addTerms(root)
	gb.addRefs(key, root)
	return gb.g
}

// docGraphBuilder is one buildDocGraph: the graph so far, and the label of
// each node it holds by id (the document's own among them).
type docGraphBuilder struct {
	g       docGraph
	docID   string
	labelOf map[string]string
}

// walk adds e's children under path (a node labelled parentLabel) at
// level, and theirs, depth first.
func (gb *docGraphBuilder) walk(e *chunker.Element, path, parentLabel string, level int) {
	for _, c := range e.Children {
		id := path + PathSep + c.Address
		n := elementNode{ID: id, Kind: string(c.Kind), Address: c.Address, Citation: c.Citation, Title: c.Title, Level: level, Parent: path, ParentLabel: parentLabel}
		if len(c.Children) > 0 || c.Kind == chunker.KindSection || c.Kind == chunker.KindAnnex {
			gb.labelOf[id] = LabelSection
			gb.g.sections = append(gb.g.sections, n)
			gb.walk(c, id, LabelSection, level+1)
			continue
		}
		n.Text = c.Text
		gb.labelOf[id] = LabelElement
		gb.g.elements = append(gb.g.elements, n)
	}
}

// abs is the node id of an address relative to the document ("" is the
// document itself).
func (gb *docGraphBuilder) abs(rel string) string {
	if rel == "" {
		return gb.docID
	}
	return gb.docID + PathSep + rel
}

// addTerms adds the document's defined terms: one per name, each defined
// in a node of the graph and with a definition.
func (gb *docGraphBuilder) addTerms(root *chunker.Element) {
	seenTerm := map[string]bool{}
	for _, t := range chunker.Terms(root) {
		at := gb.abs(t.Address)
		id := gb.docID + "#term:" + strings.ToLower(t.Name)
		if seenTerm[id] || gb.labelOf[at] == "" || strings.TrimSpace(t.Definition) == "" {
			continue
		}
		seenTerm[id] = true
		gb.g.terms = append(gb.g.terms, termNode{ID: id, Name: t.Name, Definition: t.Definition, DefinedIn: at, DefinedInLabel: gb.labelOf[at]})
	}
}

// addRefs adds the document's identifiers and its references: those to
// another document (ext, resolved by linkPass), those resolved within it
// (xrefs, one edge per pair of nodes), and the texts of those not
// resolved, on the nodes they are made from.
func (gb *docGraphBuilder) addRefs(key string, root *chunker.Element) {
	g, labelOf := &gb.g, gb.labelOf
	g.ids = chunker.DocumentIDs(root, key)
	own := map[string]bool{}
	for _, id := range g.ids {
		own[normalizeDocID(id)] = true
	}
	refs := chunker.CrossRefs(root)
	resolved, unresolved := chunker.Resolve(root, refs)
	unresolvedBy := map[string][]string{}
	seenEdge := map[string]bool{}
	for i, r := range refs {
		from := gb.abs(r.From)
		if labelOf[from] == "" {
			continue
		}
		if r.Doc != "" && !own[normalizeDocID(r.Doc)] {
			g.ext = append(g.ext, extRef{From: from, FromLabel: labelOf[from], Text: r.Text, Target: r.Target, Doc: r.Doc})
			continue
		}
		if r.Doc != "" { // a document citing itself: resolve here
			sub, _ := chunker.Resolve(root, []chunker.Ref{{From: r.From, Text: r.Text, Target: r.Target}})
			if p, ok := sub[0]; ok {
				resolved[i] = p
			} else if r.Target == "" {
				continue
			}
		}
		p, ok := resolved[i]
		if !ok {
			continue
		}
		to := gb.abs(p)
		if labelOf[to] == "" || to == from {
			continue
		}
		e := xrefEdge{From: from, FromLabel: labelOf[from], To: to, ToLabel: labelOf[to], Text: r.Text}
		if k := e.ref().Key; !seenEdge[k] {
			seenEdge[k] = true
			g.xrefs = append(g.xrefs, e)
		}
		g.resolved++
	}
	for _, i := range unresolved {
		from := gb.abs(refs[i].From)
		unresolvedBy[from] = append(unresolvedBy[from], refs[i].Text)
		g.unresolved++
	}
	for i := range g.elements {
		g.elements[i].Unresolved = unresolvedBy[g.elements[i].ID]
	}
	for i := range g.sections {
		g.sections[i].Unresolved = unresolvedBy[g.sections[i].ID]
	}
}

// normalizeDocID folds a document identifier for comparison: "RFC7230",
// "rfc 7230" and "RFC 7230" are one document.
func normalizeDocID(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), ""))
	return strings.Trim(s, "[]")
}

// nodeHash is the content hash of a graph node's properties, to write only
// the nodes that changed.
func nodeHash(props map[string]any) uint64 {
	h, err := diff.Hash(props)
	if err != nil {
		panic(fmt.Sprintf("pipeline: hash node props: %v", err)) // strings, ints and string lists only
	}
	return h
}

func (s elementNode) props(docID string) map[string]any {
	p := map[string]any{"kind": s.Kind, "address": s.Address, "title": s.Title, "level": int64(s.Level), "document": docID}
	if s.Citation != "" {
		// The element's address as cited ("Article 7(3)", "6.5.1"): what
		// address look-ups match, with chunker.ParseAddress and AddressKey.
		p["citation"] = s.Citation
	}
	if s.Text != "" {
		p["text"] = s.Text
	}
	s.Prov.props(p)
	if len(s.Unresolved) > 0 {
		u := make([]any, len(s.Unresolved))
		for i, t := range s.Unresolved {
			u[i] = t
		}
		p["unresolved_refs"] = u
	} else {
		p["unresolved_refs"] = nil
	}
	return p
}

// docGraphOps writes a document's element tree, terms and same-document
// references, skipping nodes whose content did not change since the stored
// version (unless o.forceAll), and deletes what the document no longer has.
func (r *runner) docGraphOps(b *sink.Batch, o *recordOutput, vectors map[uint64][]float32) {
	keep := o.elementOps(b)
	o.termOps(b, vectors)
	o.xrefOps(b, keep)
}

// elementOps writes o's sections and elements whose hash differs from the
// stored one (all of them when o.forceAll) and deletes the stored ones it no
// longer has; it sets each node's Hash, and returns the nodes o has.
//
// Invariant: a node is keyed by label and id (an element that became a
// section, as it gained sub-clauses, keeps its id but is another node).
func (o *recordOutput) elementOps(b *sink.Batch) (keep map[sink.NodeRef]bool) {
	old := map[sink.NodeRef]uint64{}
	for _, s := range o.oldSections {
		old[sink.NodeRef{Label: LabelSection, ID: s.ID}] = s.Hash
	}
	for _, s := range o.oldElements {
		old[sink.NodeRef{Label: LabelElement, ID: s.ID}] = s.Hash
	}
	keep = map[sink.NodeRef]bool{}
	heading := map[string]string{}
	for _, s := range o.sections {
		heading[s.ID] = s.Title
	}
	write := func(label string, nodes []elementNode) {
		for i := range nodes {
			s := &nodes[i]
			props := s.props(o.nodeID)
			if label == LabelElement {
				props[PropLex] = retrieval.LexicalText(elementLexText(*s, heading[s.Parent]), o.lang())
			}
			s.Hash = nodeHash(props)
			ref := sink.NodeRef{Label: label, ID: s.ID}
			keep[ref] = true
			if h, ok := old[ref]; ok && h == s.Hash && !o.forceAll {
				continue
			}
			b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: label, ID: s.ID, Props: props})
			b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: RelPartOf, From: ref, To: sink.NodeRef{Label: s.ParentLabel, ID: s.Parent}})
			if label == LabelElement {
				o.lexRows = append(o.lexRows, state.LexicalRow{LexicalRef: state.LexicalRef{Source: o.it.source, RecordKey: o.it.rec.Key, ID: s.ID},
					Kind: state.LexicalElement, Text: props[PropLex].(string)})
			}
		}
	}
	write(LabelSection, o.sections)
	write(LabelElement, o.elements)
	for _, s := range o.oldSections {
		if ref := (sink.NodeRef{Label: LabelSection, ID: s.ID}); !keep[ref] {
			b.DeleteNodes = append(b.DeleteNodes, ref)
		}
	}
	for _, s := range o.oldElements {
		if ref := (sink.NodeRef{Label: LabelElement, ID: s.ID}); !keep[ref] {
			b.DeleteNodes = append(b.DeleteNodes, ref)
			o.lexDelete(s.ID)
		}
	}
	return keep
}

// termOps writes o's terms, rewritten with the document, their vectors
// from the embed pass; the lexical index gets only the terms whose text
// changed (all of them when o.forceAll). Stored terms o no longer has go.
func (o *recordOutput) termOps(b *sink.Batch, vectors map[uint64][]float32) {
	oldTerm := map[string]string{}
	for _, t := range o.oldTerms {
		oldTerm[t.ID] = t.embedText()
	}
	keepTerm := map[string]bool{}
	for _, t := range o.terms {
		keepTerm[t.ID] = true
		tref := sink.NodeRef{Label: LabelTerm, ID: t.ID}
		b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: LabelTerm, ID: t.ID, Props: map[string]any{
			"name": t.Name, "name_lower": strings.ToLower(t.Name), "definition": t.Definition, "document": o.nodeID,
			PropEmbedding: vectors[diff.TextHash(t.embedText())],
			PropLex:       retrieval.LexicalText(t.embedText(), o.lang()),
		}})
		if old, ok := oldTerm[t.ID]; o.forceAll || !ok || old != t.embedText() {
			o.lexUpsert(state.LexicalTerm, t.ID, t.embedText())
		}
		b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: RelDefinedIn, From: tref, To: sink.NodeRef{Label: t.DefinedInLabel, ID: t.DefinedIn}})
		b.EdgePrunes = append(b.EdgePrunes, sink.EdgePrune{Type: RelDefinedIn, From: tref, ToLabel: t.DefinedInLabel, Keep: []string{t.DefinedIn}})
	}
	for _, t := range o.oldTerms {
		if !keepTerm[t.ID] {
			b.DeleteNodes = append(b.DeleteNodes, sink.NodeRef{Label: LabelTerm, ID: t.ID})
			o.lexDelete(t.ID)
		}
	}
}

// xrefOps writes o's same-document references as keyed edges, diffed
// against the stored ones: a stored edge not wanted is deleted when both
// its ends stay (keep); an edge whose end is deleted goes with that node.
func (o *recordOutput) xrefOps(b *sink.Batch, keep map[sink.NodeRef]bool) {
	want := map[string]bool{}
	for _, e := range o.xrefs {
		want[e.ref().Key] = true
		b.EdgeUpserts = append(b.EdgeUpserts, e.upsert())
	}
	for _, e := range o.oldXRefs {
		if !want[e.ref().Key] && keep[sink.NodeRef{Label: e.FromLabel, ID: e.From}] && keep[sink.NodeRef{Label: e.ToLabel, ID: e.To}] {
			b.DeleteEdges = append(b.DeleteEdges, e.ref())
		}
	}
}

// coversOps links a written chunk to the elements it covers.
func coversOps(b *sink.Batch, chunk sink.NodeRef, elements []string, labelOf func(string) string) {
	var keep []string
	for _, e := range elements {
		if l := labelOf(e); l == LabelElement {
			b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: RelCovers, From: chunk, To: sink.NodeRef{Label: LabelElement, ID: e}})
			keep = append(keep, e)
		}
	}
	slices.Sort(keep)
	b.EdgePrunes = append(b.EdgePrunes, sink.EdgePrune{Type: RelCovers, From: chunk, ToLabel: LabelElement, Keep: slices.Compact(keep)})
}

// dropDocGraph deletes the chunks, sections, elements and terms a record
// stored as a node, when it no longer writes a node.
func (r *runner) dropDocGraph(b *sink.Batch, o *recordOutput) {
	b.DeleteNodes = append(b.DeleteNodes, ownedNodes(o.oldChunks, o.oldSections, o.oldElements, o.oldTerms)...)
	r.counts().ChunksDeleted += len(o.oldChunks)
}

// ownedNodes are the chunk, section, element and term nodes a record's node
// owns, which go with it.
func ownedNodes(chunks []state.Chunk, sections, elements []elementNode, terms []termNode) []sink.NodeRef {
	out := make([]sink.NodeRef, 0, len(chunks)+len(sections)+len(elements)+len(terms))
	for _, c := range chunks {
		out = append(out, sink.NodeRef{Label: LabelChunk, ID: c.ID})
	}
	for _, s := range sections {
		out = append(out, sink.NodeRef{Label: LabelSection, ID: s.ID})
	}
	for _, e := range elements {
		out = append(out, sink.NodeRef{Label: LabelElement, ID: e.ID})
	}
	for _, t := range terms {
		out = append(out, sink.NodeRef{Label: LabelTerm, ID: t.ID})
	}
	return out
}
