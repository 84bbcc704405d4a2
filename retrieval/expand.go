package retrieval

import (
	"context"
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

// text is a node's text for an expansion: an element's own text, or a
// section's title and its own paragraphs (bounded).
func (x *corpusIndex) text(id string) string {
	n, ok := x.nodes[id]
	if !ok {
		return ""
	}
	if n.Label == LabelElement {
		return n.Text
	}
	var b strings.Builder
	b.WriteString(n.Title)
	for _, c := range x.children[id] {
		if b.Len() > maxSectionText {
			b.WriteString(" …")
			break
		}
		b.WriteString("\n\n")
		b.WriteString(x.nodes[c].Text)
	}
	return b.String()
}

// Expand adds to each chunk hit the minimal sufficient context: the
// elements its chunk covers, their MANDATORY neighbours (and their
// sections'), the targets of their cross-references one hop away, and the
// definitions of terms that occur in the hit's text — each saying why.
// Context already added for an earlier hit is not repeated.
func (s *Searcher) Expand(ctx context.Context, hits []Hit) ([]Hit, error) {
	_, x, err := s.load(ctx)
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
			h.Expansions = append(h.Expansions, Expansion{ID: id, Label: label, Reason: reason, Address: id, Text: x.text(id)})
		}
		for _, e := range h.Elements {
			add(e, x.label(e), "covered by the hit")
		}
		// Mandatory neighbours of covered elements and of their sections.
		seen := map[string]bool{}
		for _, e := range h.Elements {
			// The element, then its sections up to the document.
			for id := e; id != "" && !seen[id]; id = x.parent(id) {
				seen[id] = true
				for _, m := range x.mandatory[id] {
					reason := "mandatory with " + id
					if m.Text != "" {
						reason += " (" + m.Text + ")"
					}
					add(m.To, m.ToLabel, reason)
				}
			}
		}
		for _, e := range h.Elements {
			for _, r := range x.refs[e] {
				add(r.To, r.ToLabel, fmt.Sprintf("referenced as %q", r.Text))
			}
		}
		low := strings.ToLower(h.Text)
		for _, t := range x.terms {
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

// parent is the id of a node's parent ("" for a document or an unknown id).
func (x *corpusIndex) parent(id string) string {
	if n, ok := x.nodes[id]; ok {
		return n.Parent
	}
	return ""
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
func (s *Searcher) Lookup(ctx context.Context, address string) (*LookupResult, error) {
	c, x, err := s.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	n, doc, ok := x.lookup(c, address)
	switch {
	case doc == nil:
		return nil, fmt.Errorf("lookup %q: no document of pipeline %q has an identifier that starts the address (known: %s)",
			address, s.Pipeline, knownNames(c))
	case !ok:
		return nil, fmt.Errorf("lookup %q: document %s has no element with that address", address, doc.ID)
	}
	if n == nil {
		return &LookupResult{ID: doc.ID, Label: doc.Label, Document: doc.ID, Title: doc.Title}, nil
	}
	return &LookupResult{ID: n.ID, Label: n.Label, Document: doc.ID, Title: n.Title, Text: x.text(n.ID)}, nil
}

// lookup resolves an address such as "RFC 7231 6.5.1": the longest document
// identifier that prefixes it, then the rest as an element address. A bare
// identifier names the document (nil node, ok).
func (x *corpusIndex) lookup(c *Corpus, address string) (*Node, *Document, bool) {
	norm := strings.Join(strings.Fields(address), " ")
	var best *Document
	var rest string
	bestLen := -1
	for _, d := range c.Documents {
		for _, id := range append([]string{d.Key}, d.Names...) {
			id = strings.Join(strings.Fields(id), " ")
			if len(id) > bestLen && len(norm) >= len(id) && strings.EqualFold(norm[:len(id)], id) &&
				(len(norm) == len(id) || norm[len(id)] == ' ') {
				best, bestLen, rest = d, len(id), strings.TrimSpace(norm[len(id):])
			}
		}
	}
	if best == nil {
		return nil, nil, false
	}
	if rest == "" {
		return nil, best, true
	}
	n, ok := x.byAddress[best][addressKey(strings.TrimPrefix(rest, "›"))]
	return n, best, ok
}

func knownNames(c *Corpus) string {
	var ids []string
	for _, d := range c.Documents {
		if len(d.Names) > 0 {
			ids = append(ids, fmt.Sprintf("%q", d.Names[0]))
		}
		if len(ids) == 8 {
			ids = append(ids, "…")
			break
		}
	}
	return strings.Join(ids, ", ")
}
