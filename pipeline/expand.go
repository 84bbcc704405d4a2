package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Expansion is one piece of context added to a search hit: the minimal
// sufficient context an assistant needs besides the hit itself.
type Expansion struct {
	// ID and Label name the node (an Element, Section, Term or Document).
	ID    string `json:"id"`
	Label string `json:"label"`
	// Reason says why it was added: "covered by the hit", "mandatory with
	// <address>", "referenced as \"Section 5.2\"", "defines \"proxy\"".
	Reason string `json:"reason"`
	// Address is the element's address path; Text its text (a section's
	// title and its own paragraphs, a term's definition).
	Address string `json:"address,omitempty"`
	Text    string `json:"text"`
}

// maxSectionText bounds the text shown for a section.
const maxSectionText = 2000

// docContext is what Expand and Lookup read from state.
type docContext struct {
	idx       *corpusIndex
	nodes     map[string]elementNode // element and section ids
	labels    map[string]string
	children  map[string][]string // section id → its leaf elements, in order
	refs      map[string][]xrefEdge
	mandatory map[string][]xrefEdge
	terms     []termNode
}

func (p *Pipeline) loadDocContext(ctx context.Context) (*docContext, error) {
	idx, err := p.loadCorpusIndex(ctx, true)
	if err != nil {
		return nil, err
	}
	dc := &docContext{idx: idx, nodes: map[string]elementNode{}, labels: map[string]string{},
		children: map[string][]string{}, refs: map[string][]xrefEdge{}, mandatory: map[string][]xrefEdge{}}
	for _, d := range idx.all {
		for _, s := range d.props.Sections {
			dc.nodes[s.ID], dc.labels[s.ID] = s, LabelSection
		}
		for _, e := range d.props.Elements {
			dc.nodes[e.ID], dc.labels[e.ID] = e, LabelElement
			dc.children[e.Parent] = append(dc.children[e.Parent], e.ID)
		}
		for _, e := range append(append([]xrefEdge{}, d.props.XRefs...), d.props.ExtEdges...) {
			dc.refs[e.From] = append(dc.refs[e.From], e)
		}
		dc.terms = append(dc.terms, d.props.Terms...)
	}
	cur, err := p.Store.CursorGet(ctx, p.Name, mandatoryCursor)
	if err != nil {
		return nil, err
	}
	if cur != "" {
		var m struct {
			Edges []xrefEdge `json:"edges"`
		}
		if err := json.Unmarshal([]byte(cur), &m); err != nil {
			return nil, fmt.Errorf("stored mandatory links: %w", err)
		}
		for _, e := range m.Edges {
			dc.mandatory[e.From] = append(dc.mandatory[e.From], e)
			dc.mandatory[e.To] = append(dc.mandatory[e.To], xrefEdge{From: e.To, FromLabel: e.ToLabel, To: e.From, ToLabel: e.FromLabel, Text: e.Text})
		}
	}
	return dc, nil
}

// text is a node's text for an expansion: an element's own text, or a
// section's title and its own paragraphs (bounded).
func (dc *docContext) text(id string) string {
	n, ok := dc.nodes[id]
	if !ok {
		return ""
	}
	if dc.labels[id] == LabelElement {
		return n.Text
	}
	var b strings.Builder
	b.WriteString(n.Title)
	for _, c := range dc.children[id] {
		if b.Len() > maxSectionText {
			b.WriteString(" …")
			break
		}
		b.WriteString("\n\n")
		b.WriteString(dc.nodes[c].Text)
	}
	return b.String()
}

// Expand adds to each chunk hit the minimal sufficient context: the
// elements its chunk covers, their MANDATORY neighbours (and their
// sections'), the targets of their cross-references one hop away, and the
// definitions of terms that occur in the hit's text — each saying why.
// Context already added for an earlier hit is not repeated.
func (p *Pipeline) Expand(ctx context.Context, hits []Hit) ([]Hit, error) {
	dc, err := p.loadDocContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("expand: %w", err)
	}
	added := map[string]bool{}
	for _, h := range hits {
		added[h.ID] = true
	}
	out := make([]Hit, len(hits))
	patterns := map[string]*regexp.Regexp{}
	for i, h := range hits {
		add := func(id, label, reason string) {
			if added[id] || id == "" {
				return
			}
			added[id] = true
			h.Expansions = append(h.Expansions, Expansion{ID: id, Label: label, Reason: reason, Address: id, Text: dc.text(id)})
		}
		for _, e := range h.Elements {
			add(e, dc.labels[e], "covered by the hit")
		}
		// Mandatory neighbours of covered elements and of their sections.
		seen := map[string]bool{}
		for _, e := range h.Elements {
			// The element, then its sections up to the document.
			for id := e; id != "" && !seen[id]; id = dc.nodes[id].Parent {
				seen[id] = true
				for _, m := range dc.mandatory[id] {
					reason := "mandatory with " + id
					if m.Text != "" {
						reason += " (" + m.Text + ")"
					}
					add(m.To, m.ToLabel, reason)
				}
			}
		}
		for _, e := range h.Elements {
			for _, r := range dc.refs[e] {
				add(r.To, r.ToLabel, fmt.Sprintf("referenced as %q", r.Text))
			}
		}
		low := strings.ToLower(h.Text)
		for _, t := range dc.terms {
			if !added[t.ID] && termIn(low, strings.ToLower(t.Name), patterns) {
				added[t.ID] = true
				h.Expansions = append(h.Expansions, Expansion{ID: t.ID, Label: LabelTerm, Reason: fmt.Sprintf("defines %q", t.Name),
					Address: t.DefinedIn, Text: t.Name + ": " + t.Definition})
			}
		}
		out[i] = h
	}
	return out, nil
}

// termIn reports whether term occurs in text as a whole word or phrase;
// patterns caches the compiled expressions by term.
func termIn(text, term string, patterns map[string]*regexp.Regexp) bool {
	if len([]rune(term)) < 3 || !strings.Contains(text, term) {
		return false
	}
	re, ok := patterns[term]
	if !ok {
		re = regexp.MustCompile(`(?:^|[^\p{L}\p{N}])` + regexp.QuoteMeta(term) + `(?:$|[^\p{L}\p{N}])`)
		patterns[term] = re
	}
	return re.MatchString(text)
}

// LookupResult is the element an address names.
type LookupResult struct {
	ID       string `json:"id"`
	Label    string `json:"label"`
	Document string `json:"document"`
	Title    string `json:"title,omitempty"`
	Text     string `json:"text"`
}

// Lookup finds an element by address, e.g. "RFC 7231 6.5.1" or
// "constitutionrf.txt Статья 71": the longest document identifier that
// prefixes it, then the element's address within that document.
func (p *Pipeline) Lookup(ctx context.Context, address string) (*LookupResult, error) {
	dc, err := p.loadDocContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	ref, doc, ok := dc.idx.lookup(address)
	switch {
	case doc == nil:
		return nil, fmt.Errorf("lookup %q: no document of pipeline %q has an identifier that starts the address (known: %s)",
			address, p.Name, knownIDs(dc.idx))
	case !ok:
		return nil, fmt.Errorf("lookup %q: document %s has no element with that address", address, doc.id)
	}
	res := &LookupResult{ID: ref.ID, Label: ref.Label, Document: doc.id, Text: dc.text(ref.ID)}
	if n, ok := dc.nodes[ref.ID]; ok {
		res.Title = n.Title
	}
	return res, nil
}

func knownIDs(idx *corpusIndex) string {
	var ids []string
	for _, d := range idx.all {
		if len(d.ids) > 0 {
			ids = append(ids, fmt.Sprintf("%q", d.ids[0]))
		}
		if len(ids) == 8 {
			ids = append(ids, "…")
			break
		}
	}
	return strings.Join(ids, ", ")
}
