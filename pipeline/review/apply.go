package review

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/state"
)

// data is what state keeps of one element besides its ids and row
// (state.ReviewElement.Data).
type data struct {
	Kind string `json:"kind,omitempty"`
	Pos  int    `json:"pos"`
	// Parent is the element's parent id, Address its address as
	// published: what matching an element that lost its id looks at.
	Parent  string `json:"parent,omitempty"`
	Address string `json:"addr,omitempty"`
	// Parsed is the text hash of the parsed text last published, Pub the
	// hash of the cells kgsync wrote last (0 = write them).
	Parsed uint64 `json:"parsed,omitempty"`
	Pub    uint64 `json:"pub,omitempty"`

	// The expert's input, as last read back.
	Corrected string  `json:"corrected,omitempty"`
	Exclude   bool    `json:"exclude,omitempty"`
	With      []int64 `json:"with,omitempty"` // mandatory_with: row ids
	Note      string  `json:"note,omitempty"`
	By        string  `json:"by,omitempty"`
	At        string  `json:"at,omitempty"`
	// Base and BaseText are the parsed text the expert's input was given
	// against (its text hash and the text): a correction whose element's
	// parsed text is no longer Base is a conflict.
	Base     uint64 `json:"base,omitempty"`
	BaseText string `json:"base_text,omitempty"`

	// Flag is needs_review as Grist has it (read back or written); Reason
	// the review_reason kgsync wrote.
	Flag   bool   `json:"flag,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Status is "" while the element is in its document, StatusMissing
	// once it left it, StatusDeleted once its document was deleted.
	Status string `json:"status,omitempty"`
	// Of is, for a row kept missing, the id its element had: state keys
	// the row apart (missingKey), since a present element (a neighbour
	// that moved up into an ordinal id, p1) may hold that id now.
	Of string `json:"of,omitempty"`
	// Push says the expert's cells must be written to Grist (kgsync moved
	// an edit of parsed_text to corrected_text, or restores rows lost in
	// Grist).
	Push bool `json:"push,omitempty"`
}

// Element statuses (the Elements table's status column).
const (
	StatusCurrent = "current"
	StatusMissing = "missing"
	StatusDeleted = "document deleted"
)

func (d *data) expert() bool {
	return d.Corrected != "" || d.Exclude || len(d.With) > 0 || d.Note != ""
}

// elem is one stored element, decoded.
type elem struct {
	state.ReviewElement
	d data
}

// id is the element id the row was published for: its state key, or for
// a missing row the id its element had (data.Of).
func (e *elem) id() string {
	if e.d.Of != "" {
		return e.d.Of
	}
	return e.Element
}

// missingKey returns the state key of a row kept missing for element id:
// "<id> #missing" (or "#missing-2"…: the first not in used), never an
// element id, so that the row and the element that takes its id (the
// next paragraph, once an ordinal p1 is removed) are two entries.
func missingKey(id string, used map[string]bool) string {
	k := id + " #missing"
	for n := 2; used[k]; n++ {
		k = fmt.Sprintf("%s #missing-%d", id, n)
	}
	return k
}

func decodeElem(e state.ReviewElement) (elem, error) {
	out := elem{ReviewElement: e}
	if len(e.Data) > 0 {
		if err := json.Unmarshal(e.Data, &out.d); err != nil {
			return out, fmt.Errorf("review element %q: %w", e.Element, err)
		}
	}
	return out, nil
}

func (e *elem) encode() state.ReviewElement {
	r := e.ReviewElement
	r.Data, _ = json.Marshal(e.d)
	r.Expert = e.d.expert()
	r.Flagged = e.d.Flag || e.d.Status == StatusMissing || e.d.Status == StatusDeleted
	return r
}

// parsed is one element of a parsed document, in document order.
type parsed struct {
	ID, Parent, Kind, Address, Citation, Heading string
	// Text is a leaf's text, a section's title; Hash its text hash.
	Text string
	Hash uint64
	// Pos is the element's index in document order; Order its ordinal
	// path ("0009.0007": the 7th child of the 9th), which sorts in
	// document order and changes only for the later siblings of an
	// inserted or removed element.
	Pos   int
	Order string
	node  *chunker.Element
	up    *chunker.Element // parent node
}

// listElements walks a parsed tree as the graph does (pipeline
// buildDocGraph): every child of the root and below is an element, a
// section when it has children or is a section or annex.
func listElements(docID string, root *chunker.Element) []parsed {
	var out []parsed
	var walk func(e *chunker.Element, path, order string, headings []string)
	walk = func(e *chunker.Element, path, order string, headings []string) {
		for i, c := range e.Children {
			id := path + chunker.PathSep + c.Address
			ord := fmt.Sprintf("%04d", i+1)
			if order != "" {
				ord = order + "." + ord
			}
			p := parsed{ID: id, Parent: path, Kind: string(c.Kind), Address: c.Address, Citation: c.Citation,
				Heading: strings.Join(headings, chunker.PathSep), Pos: len(out), Order: ord, node: c, up: e}
			section := len(c.Children) > 0 || c.Kind == chunker.KindSection || c.Kind == chunker.KindAnnex
			if section {
				p.Text = c.Title
			} else {
				p.Text = c.Text
			}
			p.Hash = diff.TextHash(p.Text)
			out = append(out, p)
			if section {
				h := headings
				if c.Title != "" {
					h = append(headings[:len(headings):len(headings)], c.Title)
				}
				walk(c, id, ord, h)
			}
		}
	}
	walk(root, docID, "", nil)
	return out
}

// Provenance is where an element's text in the graph came from.
type Provenance struct {
	// Source is "expert" for a corrected element, "parsed" otherwise.
	Source string
	// By and At are who corrected it and when (ISO 8601), when Grist's
	// corrected_by / corrected_at columns say.
	By, At string
	// Parsed is the parsed text a correction replaced.
	Parsed string
	// Conflict says the parsed text changed since the correction was made
	// (the correction is kept; the row needs review).
	Conflict bool
	// Note is the expert's note.
	Note string
}

// Provenance sources.
const (
	SourceParsed = "parsed"
	SourceExpert = "expert"
)

// assignment is what one parsed element gets: the stored row it is
// published as (nil: a new row) and the expert input it carries.
type assignment struct {
	p        parsed
	row      *elem // stored row, nil when new
	conflict bool
}

// Applied is one document's review overlay for one run: what Apply did to
// its tree and what Publish must write.
type Applied struct {
	Source, Key, DocID string
	// Prov is, by element id, where the text of each element of the
	// graph came from (every element; corrected ones have SourceExpert).
	Prov map[string]Provenance
	// Excluded are the ids of the elements the expert excluded (they are
	// not in the tree any more).
	Excluded []string
	// Corrections, Conflicts and Missing count corrected elements,
	// corrections whose parsed text changed, and elements with expert
	// input that left the document.
	Corrections, Conflicts, Missing int

	elements []assignment
	gone     []*elem // stored rows no element took
	stored   map[string]*elem
	dups     []int64 // rows to delete: duplicates found reconciling
	doc      *state.ReviewDocument
	chunks   map[string][]string // element id → chunk ids
	info     DocInfo
	noise    []chunker.Noise
}

// DocInfo is what the Documents row says of a document besides its
// elements.
type DocInfo struct {
	Path, Title, Format string
	Size                int64
	ContentHash         string
	Chunks              int
	Unresolved          []string
}

// SetChunks records which chunks hold each element (chunker.Chunk
// Elements; a section is held by the chunks of its first leaf).
func (a *Applied) SetChunks(chunks []chunker.Chunk) {
	a.chunks = map[string][]string{}
	for _, c := range chunks {
		for _, e := range c.Elements {
			if l := a.chunks[e]; len(l) == 0 || l[len(l)-1] != c.ID {
				a.chunks[e] = append(l, c.ID)
			}
		}
	}
	a.info.Chunks = len(chunks)
}

// SetInfo records the document's row fields.
func (a *Applied) SetInfo(info DocInfo) { a.info = info }

// ChunkSource returns where a chunk's text came from: SourceExpert when
// one of the elements it covers, or a section above them, was corrected;
// and the corrected elements, with the latest correction's author and time.
func (a *Applied) ChunkSource(elements []string, parent string) (src string, corrected []string, by, at string) {
	src = SourceParsed
	seen := map[string]bool{}
	check := func(id string) {
		p, ok := a.Prov[id]
		if !ok || p.Source != SourceExpert || seen[id] {
			return
		}
		seen[id] = true
		src = SourceExpert
		corrected = append(corrected, id)
		if p.At >= at {
			by, at = p.By, p.At
		}
	}
	for _, e := range elements {
		check(e)
	}
	for p := parent; p != a.DocID && p != ""; {
		check(p)
		i := strings.LastIndex(p, chunker.PathSep)
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return src, corrected, by, at
}

// words are a text's lower-case words, for the similarity of a changed
// element to the one it was.
func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out[w] = true
	}
	return out
}

// similarity is the Jaccard index of two texts' word sets.
func similarity(a, b string) float64 {
	wa, wb := words(a), words(b)
	if len(wa) == 0 || len(wb) == 0 {
		return 0
	}
	both := 0
	for w := range wa {
		if wb[w] {
			both++
		}
	}
	return float64(both) / float64(len(wa)+len(wb)-both)
}

// minSimilarity is how alike (Jaccard over words) an element that lost its
// id must be to the text an expert's input was given against to take it.
const minSimilarity = 0.5

// match assigns stored rows to parsed elements. Rows that must not be lost
// (expert input, or the target of another row's mandatory link: sticky)
// are matched first in each pass, each pass claiming elements the earlier
// ones left: (1) the same element id with the same parsed text; (2) the
// same text under another id (a renumbered or moved element), for every
// row, so that a paragraph whose ordinal id (p1, p2) now names a neighbour
// is found by its text first; (3) the same id with another text (a
// conflict when it carries a correction), only when the element stands
// where the row's element stood, is alike (words, Jaccard >=
// minSimilarity) or the row had no siblings: an element removed from its
// file must not hand its input to the neighbour that took its id. Other
// rows then take the element with their id. Last (4), a sticky row still
// unmatched takes the changed element of its kind that stands where its
// element stood, between the elements its stored neighbours went to, or
// else the most alike under the same parent: an element keyed by its text
// whose text changed (a conflict too). Rows no element took are gone (kept
// and marked when sticky).
func match(elements []parsed, stored []*elem, sticky func(*elem) bool) ([]assignment, []*elem) {
	m := newMatcher(elements, stored, sticky)
	m.sameID(m.stick) // 1, sticky rows first
	m.sameID(m.others)
	m.sameText(m.stick) // 2
	m.sameText(m.others)
	m.sameIDChanged() // 3
	m.ownID()
	m.samePlace() // 4
	return m.out, m.gone()
}

// matcher holds one match: the parsed elements, the stored rows, and what
// the passes claimed so far. Invariant (claim is the only writer): an
// element is claimed by at most one row and a row claims at most one
// element; taken[si] exactly when some out[pi].row is stored[si]. Each
// pass only claims what is still free, so an earlier pass always wins.
type matcher struct {
	elements []parsed
	stored   []*elem
	out      []assignment
	byID     map[string]int   // element id → index in elements
	byHash   map[uint64][]int // text hash → indexes in elements
	taken    []bool           // by index in stored
	// stick and others are the indexes in stored of the sticky rows and
	// of the rest, in stored order.
	stick, others []int
	// at is the element a matched row went to, for the passes that place
	// a row between its siblings (3 and 4).
	at map[*elem]int
}

func newMatcher(elements []parsed, stored []*elem, sticky func(*elem) bool) *matcher {
	m := &matcher{
		elements: elements, stored: stored,
		out: make([]assignment, len(elements)), byID: map[string]int{}, byHash: map[uint64][]int{},
		taken: make([]bool, len(stored)), at: map[*elem]int{},
	}
	for i, p := range elements {
		m.out[i].p = p
		m.byID[p.ID] = i
	}
	for si, e := range stored {
		if sticky(e) {
			m.stick = append(m.stick, si)
		} else {
			m.others = append(m.others, si)
		}
	}
	for pi, p := range elements {
		m.byHash[p.Hash] = append(m.byHash[p.Hash], pi)
	}
	return m
}

// claim gives element pi to stored row si.
func (m *matcher) claim(si, pi int, conflict bool) {
	m.taken[si] = true
	m.out[pi].row = m.stored[si]
	m.out[pi].conflict = conflict
}

// inputBase is the hash of the text a row's input was given against:
// Base, or the parsed text's when the row has none.
func inputBase(e *elem) uint64 {
	if e.d.Base != 0 {
		return e.d.Base
	}
	return e.d.Parsed
}

// sameID is pass 1 for rows: the same element id with the same text.
func (m *matcher) sameID(rows []int) {
	for _, si := range rows {
		if pi, ok := m.byID[m.stored[si].Element]; ok && m.out[pi].row == nil && m.elements[pi].Hash == inputBase(m.stored[si]) {
			m.claim(si, pi, false)
		}
	}
}

// sameText is pass 2 for rows: the same text elsewhere, so that an element
// renamed by a removal or insertion before it (ordinal ids: p1, p2) is
// found by its text before a row takes it by id.
func (m *matcher) sameText(rows []int) {
	for _, si := range rows {
		if m.taken[si] {
			continue
		}
		for _, pi := range m.byHash[inputBase(m.stored[si])] {
			if m.out[pi].row == nil && m.elements[pi].Text != "" {
				m.claim(si, pi, false)
				break
			}
		}
	}
}

// markAt records in at where every matched row went.
func (m *matcher) markAt() {
	for pi := range m.out {
		if m.out[pi].row != nil {
			m.at[m.out[pi].row] = pi
		}
	}
}

// sameIDChanged is pass 3, for sticky rows: the same id with another text,
// when the element stands where the row's stood (between the elements its
// stored siblings went to), is alike, or the row had no siblings: an id is
// a position, and the element holding it now may be a neighbour that
// moved up.
func (m *matcher) sameIDChanged() {
	m.markAt()
	for _, si := range m.stick {
		if m.taken[si] {
			continue
		}
		e := m.stored[si]
		pi, ok := m.byID[e.Element]
		if !ok || m.out[pi].row != nil {
			continue
		}
		lo, hi, bounded, alone := bounds(e, m.stored, m.at, m.elements)
		inPlace := bounded && m.elements[pi].Pos > lo && m.elements[pi].Pos < hi
		if inPlace || alone || similarity(e.d.BaseText, m.elements[pi].Text) >= minSimilarity {
			m.claim(si, pi, e.d.Corrected != "")
			m.at[e] = pi
		}
	}
}

// ownID gives the rows that are not sticky their own element, whatever its
// text.
func (m *matcher) ownID() {
	for _, si := range m.others {
		if m.taken[si] {
			continue
		}
		if pi, ok := m.byID[m.stored[si].Element]; ok && m.out[pi].row == nil {
			m.claim(si, pi, false)
		}
	}
}

// samePlace is pass 4, for sticky rows still unmatched: the changed element
// of the row's kind in the place the row's element had (between the
// elements its stored neighbours went to), or else the most alike under
// the same parent; the place outweighs the words. An element that is
// another row's id is left to that row.
func (m *matcher) samePlace() {
	rowOf := map[string]bool{}
	for _, e := range m.stored {
		rowOf[e.Element] = true
	}
	m.markAt()
	for _, si := range m.stick {
		e := m.stored[si]
		if m.taken[si] {
			continue
		}
		lo, hi, bounded, _ := bounds(e, m.stored, m.at, m.elements)
		best, bestSim := -1, -1.0
		for pi, p := range m.elements {
			if m.out[pi].row != nil || p.Parent != e.d.Parent || p.Kind != e.d.Kind || (rowOf[p.ID] && p.ID != e.Element) {
				continue
			}
			sim := similarity(e.d.BaseText, p.Text)
			inPlace := bounded && p.Pos > lo && p.Pos < hi
			if !inPlace && sim < minSimilarity {
				continue
			}
			if inPlace {
				sim += 1 // the place outweighs the words
			}
			if sim > bestSim {
				best, bestSim = pi, sim
			}
		}
		if best >= 0 {
			m.claim(si, best, e.d.Corrected != "")
			m.at[e] = best
		}
	}
}

// gone are the rows no element took.
func (m *matcher) gone() []*elem {
	var gone []*elem
	for si, e := range m.stored {
		if !m.taken[si] {
			gone = append(gone, e)
		}
	}
	return gone
}

// bounds returns where a stored row's element stood among the parsed
// elements: after lo and before hi, the positions its stored siblings
// (same parent) were matched to; bounded says a sibling was matched, alone
// that the row had no stored sibling.
func bounds(e *elem, stored []*elem, at map[*elem]int, elements []parsed) (lo, hi int, bounded, alone bool) {
	lo, hi, alone = -1, len(elements), true
	for _, o := range stored {
		if o == e || o.Doc != e.Doc || o.d.Parent != e.d.Parent {
			continue
		}
		alone = false
		pi, ok := at[o]
		if !ok {
			continue
		}
		if o.d.Pos < e.d.Pos && elements[pi].Pos > lo {
			lo, bounded = elements[pi].Pos, true
		}
		if o.d.Pos > e.d.Pos && elements[pi].Pos < hi {
			hi, bounded = elements[pi].Pos, true
		}
	}
	return lo, hi, bounded, alone
}

// overlay applies the assigned expert input to the tree: a corrected text
// replaces a leaf's text or a section's title, an excluded element leaves
// its parent (with everything under it). It fills a.Prov.
func (a *Applied) overlay() {
	a.Prov = make(map[string]Provenance, len(a.elements))
	drop := map[*chunker.Element]map[*chunker.Element]bool{}
	for _, as := range a.elements {
		p, e := as.p, as.row
		prov := Provenance{Source: SourceParsed}
		if e != nil {
			prov.Note = e.d.Note
			if e.d.Exclude {
				a.Excluded = append(a.Excluded, p.ID)
				if drop[p.up] == nil {
					drop[p.up] = map[*chunker.Element]bool{}
				}
				drop[p.up][p.node] = true
			}
			if e.d.Corrected != "" {
				as.conflict = e.d.Base != 0 && e.d.Base != p.Hash
				prov = Provenance{Source: SourceExpert, By: e.d.By, At: e.d.At, Parsed: p.Text, Conflict: as.conflict, Note: e.d.Note}
				if p.Kind == string(chunker.KindSection) || p.Kind == string(chunker.KindAnnex) || len(p.node.Children) > 0 {
					p.node.Title = e.d.Corrected
				} else {
					p.node.Text = e.d.Corrected
				}
				a.Corrections++
				if as.conflict {
					a.Conflicts++
				}
			}
		}
		a.Prov[p.ID] = prov
	}
	for up, set := range drop {
		up.Children = slices.DeleteFunc(up.Children, func(c *chunker.Element) bool { return set[c] })
	}
	// Excluded sections take their elements with them.
	for _, x := range a.Excluded {
		for id := range a.Prov {
			if strings.HasPrefix(id, x+chunker.PathSep) {
				delete(a.Prov, id)
			}
		}
		delete(a.Prov, x)
	}
}
