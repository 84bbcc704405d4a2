package retrieval

import (
	"slices"
	"strings"
)

// How a hit's Match was chosen (Match.By).
const (
	// MatchAddress: an address of the query named the node.
	MatchAddress = "address"
	// MatchTerm: the node defines a term the query names.
	MatchTerm = "term"
	// MatchWords: of the elements the chunk covers, the node holds the
	// largest idf-weighted share of the query's content words.
	MatchWords = "words"
	// MatchFirst: nothing singled out an element; the chunk's first.
	MatchFirst = "first"
)

// Match is the node of a chunk hit that the query matched. A chunk covers
// several elements (chunk packing puts neighbouring elements and small
// sections into one chunk); a hit is named by the one the query is about,
// not by the chunk's first element.
type Match struct {
	// ID is the node's id ("docs:rfc7239.txt › 6 › 6.3"): an element the
	// chunk covers, or a section whose elements it covers (an address
	// naming a section).
	ID string `json:"id"`
	// Label is LabelElement or LabelSection.
	Label string `json:"label"`
	// Citation is the node's address as its document is cited ("6.3",
	// "Article 7(3)"), "" for an element the document does not number.
	Citation string `json:"citation,omitempty"`
	// By says how it was chosen: MatchAddress, MatchTerm, MatchWords or
	// MatchFirst.
	By string `json:"by"`
	// Offset is the byte offset in the hit's Text where the node's text
	// (a section: its heading line) starts; 0 when it is not found there.
	Offset int `json:"offset"`
}

// unitMatches are the nodes the address and term signals matched in each
// unit: unit index → node id, the best first.
type unitMatches map[int][]string

func (m unitMatches) add(u int, id string) {
	if !slices.Contains(m[u], id) {
		m[u] = append(m[u], id)
	}
}

// match chooses the node a chunk hit is named by: the first node an address
// of the query named in it, else the first term the query names that it
// defines, else the covered element holding the largest weight of the
// query's content words (its own text and title; words of the sections
// above it within the chunk count half, to break ties), else the chunk's
// first element. words and weights are the floor's (content words, idf
// weights). Row hits (no elements) have no match.
func (d *corpusData) match(u int, addressed, defined unitMatches, words []queryWord, weights []float64) *Match {
	unit := d.units[u]
	if len(unit.Elements) == 0 {
		return nil
	}
	if ids := addressed[u]; len(ids) > 0 {
		return d.newMatch(unit, d.bestOf(unit, ids, words, weights), MatchAddress)
	}
	if ids := defined[u]; len(ids) > 0 {
		return d.newMatch(unit, ids[0], MatchTerm)
	}
	best, bestScore := unit.Elements[0], 0.0
	if len(words) > 0 {
		for _, e := range unit.Elements {
			if s := d.wordScore(e, unit, words, weights); s > bestScore+1e-9 {
				best, bestScore = e, s
			}
		}
	}
	by := MatchWords
	if bestScore == 0 {
		by = MatchFirst
	}
	return d.newMatch(unit, best, by)
}

// bestOf is the one of several matched nodes holding the most of the
// query's words, the first on a tie.
func (d *corpusData) bestOf(unit Unit, ids []string, words []queryWord, weights []float64) string {
	if len(ids) == 1 || len(words) == 0 {
		return ids[0]
	}
	best, bestScore := ids[0], -1.0
	for _, id := range ids {
		s := 0.0
		for _, e := range d.x.leaves(id) {
			s = max(s, d.wordScore(e, unit, words, weights))
		}
		if s > bestScore+1e-9 {
			best, bestScore = id, s
		}
	}
	return best
}

// wordScore is the weight of the query's words an element's own text and
// title hold, plus half the weight of those only the titles of the
// sections above it hold.
func (d *corpusData) wordScore(e string, unit Unit, words []queryWord, weights []float64) float64 {
	own := d.nodeTerms(e, unit)
	var heads []map[string]bool
	for p := d.x.parent(e); p != "" && p != unit.Node; p = d.x.parent(p) {
		if n, ok := d.x.nodes[p]; !ok || n.Label != LabelSection {
			break
		}
		heads = append(heads, d.nodeTerms(p, unit))
	}
	s := 0.0
	for i, w := range words {
		switch {
		case hasAny(own, w.terms):
			s += weights[i]
		case anyHas(heads, w.terms):
			s += weights[i] / 2
		}
	}
	return s
}

func hasAny(set map[string]bool, terms []string) bool {
	for _, t := range terms {
		if set[t] {
			return true
		}
	}
	return false
}

func anyHas(sets []map[string]bool, terms []string) bool {
	for _, s := range sets {
		if hasAny(s, terms) {
			return true
		}
	}
	return false
}

// nodeTerms is the set of lexical terms of a node's own text and title
// (cached), in the language of the unit holding it.
func (d *corpusData) nodeTerms(id string, unit Unit) map[string]bool {
	d.termsMu.Lock()
	defer d.termsMu.Unlock()
	if t, ok := d.nodeTermSets[id]; ok {
		return t
	}
	n := d.x.nodes[id]
	t := map[string]bool{}
	if n != nil {
		lang := langOr(unit)
		for _, term := range indexTerms(n.Title+"\n"+n.Text, lang) {
			t[term] = true
		}
	}
	d.nodeTermSets[id] = t
	return t
}

func (d *corpusData) newMatch(unit Unit, id, by string) *Match {
	m := &Match{ID: id, Label: d.x.label(id), By: by}
	n := d.x.nodes[id]
	if n == nil {
		return m
	}
	m.Citation = n.Citation
	if n.Label == LabelSection {
		if i := headingAt(unit.Text, unit.Context, n); i >= 0 {
			m.Offset = i
			return m
		}
		// No heading line in the chunk: its first leaf the chunk holds.
		for _, e := range d.x.leaves(id) {
			if slices.Contains(unit.Elements, e) {
				n = d.x.nodes[e]
				break
			}
		}
	}
	if n.Label == LabelElement {
		if i := textAt(unit.Text, unit.Context, n.Text); i >= 0 {
			m.Offset = i
		}
	}
	return m
}

// headingAt is the offset of the line of text, after the context line,
// that holds a section's heading ("6.3. Obfuscated Identifier"), -1 when
// none does.
func headingAt(text, context string, n *Node) int {
	title := strings.TrimSpace(n.Title)
	if title == "" {
		return -1
	}
	from := bodyStart(text, context)
	i := strings.Index(text[from:], title)
	if i < 0 {
		return -1
	}
	i += from
	return strings.LastIndexByte(text[:i], '\n') + 1
}

// textAt is the offset of an element's text in a chunk's text (after the
// context line), -1 when it is not there. Its first words are looked for,
// white space between them matched loosely (a chunk's text and an
// element's may space them differently).
func textAt(text, context, elem string) int {
	f := strings.Fields(elem)
	if len(f) == 0 {
		return -1
	}
	f = f[:min(len(f), 6)]
	from := bodyStart(text, context)
	for i := from; i < len(text); {
		j := strings.Index(text[i:], f[0])
		if j < 0 {
			return -1
		}
		at := i + j
		if followedBy(text[at+len(f[0]):], f[1:]) {
			return at
		}
		i = at + len(f[0])
	}
	return -1
}

// followedBy reports whether s starts with the words, each after white
// space.
func followedBy(s string, words []string) bool {
	for _, w := range words {
		t := strings.TrimLeft(s, " \t\r\n")
		if len(t) == len(s) || !strings.HasPrefix(t, w) {
			return false
		}
		s = t[len(w):]
	}
	return true
}

// bodyStart is where a chunk's text starts after its context line.
func bodyStart(text, context string) int {
	if context != "" && strings.HasPrefix(text, context) {
		return min(len(text), len(context))
	}
	return 0
}
