package retrieval

import (
	"strings"

	"github.com/kgsync/kgsync/chunker"
)

// corpusIndex is a corpus arranged for look-ups: nodes by id, children,
// references, mandatory neighbours, documents by name, nodes by address.
type corpusIndex struct {
	nodes     map[string]*Node
	docOf     map[string]*Document // node id (and document id) → document
	children  map[string][]string  // section id → its leaf elements, in order
	sub       map[string][]string  // node id → its child nodes (sections and elements), in order
	pos       map[string]int       // node id → its place in its document
	refs      map[string][]Edge
	mandatory map[string][]Edge
	terms     []Term
	docs      map[string]*Document // normalized name → document
	byAddress map[*Document]map[string]*Node
}

func newCorpusIndex(c *Corpus) *corpusIndex {
	x := &corpusIndex{nodes: map[string]*Node{}, docOf: map[string]*Document{}, children: map[string][]string{}, sub: map[string][]string{}, pos: map[string]int{},
		refs: map[string][]Edge{}, mandatory: map[string][]Edge{}, docs: map[string]*Document{},
		byAddress: map[*Document]map[string]*Node{}}
	for _, d := range c.Documents {
		x.docOf[d.ID] = d
		addr := map[string]*Node{}
		x.byAddress[d] = addr
		add := func(a string, n *Node) {
			if k := chunker.AddressKey(a); k != "" {
				if _, dup := addr[k]; !dup {
					addr[k] = n
				}
			}
		}
		for i := range d.Nodes {
			n := &d.Nodes[i]
			x.nodes[n.ID], x.docOf[n.ID] = n, d
			x.sub[n.Parent] = append(x.sub[n.Parent], n.ID)
			x.pos[n.ID] = i
			if n.Label == LabelElement {
				x.children[n.Parent] = append(x.children[n.Parent], n.ID)
				if n.Kind == "clause" || n.Kind == "table" || n.Kind == "caption" {
					add(n.Address, n)
				}
				continue
			}
			add(n.Address, n)
			for _, w := range []string{"appendix ", "annex ", "приложение "} {
				if t := strings.ToLower(n.Title); strings.HasPrefix(t, w) {
					if f := strings.Fields(t); len(f) >= 2 {
						add(strings.TrimRight(f[1], ".:"), n)
					}
				}
			}
		}
		for _, e := range d.Refs {
			x.refs[e.From] = append(x.refs[e.From], e)
		}
		x.terms = append(x.terms, d.Terms...)
		for _, id := range append([]string{d.Key}, d.Names...) {
			if n := normalizeDocName(id); n != "" {
				if _, dup := x.docs[n]; !dup {
					x.docs[n] = d
				}
			}
		}
	}
	for _, e := range c.Mandatory {
		x.mandatory[e.From] = append(x.mandatory[e.From], e)
		x.mandatory[e.To] = append(x.mandatory[e.To], Edge{From: e.To, FromLabel: e.ToLabel, To: e.From, ToLabel: e.FromLabel, Text: e.Text,
			Source: e.Source, By: e.By, At: e.At})
	}
	return x
}

// leaves lists the leaf elements under a section (all depths), in
// document order; an element is its own leaf.
func (x *corpusIndex) leaves(id string) []string {
	if n, ok := x.nodes[id]; ok && n.Label == LabelElement {
		return []string{id}
	}
	var out []string
	for _, c := range x.sub[id] {
		out = append(out, x.leaves(c)...)
	}
	return out
}

// label is a node's label ("" when the id is no section or element).
func (x *corpusIndex) label(id string) string {
	if n, ok := x.nodes[id]; ok {
		return n.Label
	}
	return ""
}

// normalizeDocName folds a document identifier for comparison: "RFC7230",
// "rfc 7230" and "RFC 7230" are one document.
func normalizeDocName(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), ""))
	return strings.Trim(s, "[]")
}

// parent is the id of a node's parent (the document id for a top-level
// node; "" for a document or an unknown id).
func (x *corpusIndex) parent(id string) string {
	if n, ok := x.nodes[id]; ok {
		return n.Parent
	}
	return ""
}
