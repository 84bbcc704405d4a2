package retrieval

import (
	"slices"
	"strings"
	"unicode"

	"github.com/cespare/xxhash/v2"
)

// minRenditionRunes is the shortest body (in letters and digits) whose
// copies are folded: a short line ("Verification Material(s):", "None.")
// recurs in unrelated places and names no one passage.
const minRenditionRunes = 80

// renditionKeys returns, for each chunk whose body (its text without the
// context line) a chunk of another document repeats, the hash both bodies
// share: one document synced in several formats (a standard as .md, .docx
// and .pdf), or a regulation and its consolidated copy. Bodies are
// compared as their lower-cased letters and digits, so line breaks,
// hyphenation points and list markers a converter writes differently do
// not keep two copies apart. Chunks whose body no other document repeats
// are absent, so the map is empty for a corpus without copies.
func renditionKeys(units []Unit) map[int]uint64 {
	type first struct {
		doc  string
		many bool
	}
	keyOf := map[int]uint64{}
	seen := map[uint64]*first{}
	for i, u := range units {
		// A row's long attribute ("<node>#<attribute>" in the address)
		// is a record of its own: rows that say the same are not copies.
		if u.Label != LabelChunk || strings.Contains(u.Address, u.Node+"#") {
			continue
		}
		h, ok := bodyHash(u)
		if !ok {
			continue
		}
		keyOf[i] = h
		switch f := seen[h]; {
		case f == nil:
			seen[h] = &first{doc: u.Node}
		case f.doc != u.Node:
			f.many = true
		}
	}
	for i, h := range keyOf {
		if !seen[h].many {
			delete(keyOf, i)
		}
	}
	return keyOf
}

// bodyHash is the xxhash64 of a chunk body's lower-cased letters and
// digits, and false for a body shorter than minRenditionRunes of them.
func bodyHash(u Unit) (uint64, bool) {
	body := u.Text
	if u.Context != "" {
		body = strings.TrimPrefix(body, u.Context+"\n\n")
	}
	var b strings.Builder
	n := 0
	for _, r := range body {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
			n++
		}
	}
	if n < minRenditionRunes {
		return 0, false
	}
	return xxhash.Sum64String(b.String()), true
}

// Rendition is a chunk folded into a hit because it holds the same text
// in another document (foldRenditions).
type Rendition struct {
	// ID is the chunk's id, Node its document's node id and Address its
	// element address path, as in Hit.
	ID      string `json:"id"`
	Node    string `json:"node"`
	Address string `json:"address,omitempty"`
}

// foldRenditions drops from order (units, best first) every chunk whose
// body a better-ranked chunk of another document already holds, and
// returns the kept order with, for each kept unit that stands for others,
// the chunks folded into it (best first). A search thus gives
// k different passages, not one passage in each format it was synced in.
func (d *corpusData) foldRenditions(order []int) ([]int, map[int][]Rendition) {
	if len(d.renditions) == 0 {
		return order, nil
	}
	kept := make([]int, 0, len(order))
	byKey := map[uint64]int{}
	var folded map[int][]Rendition
	for _, u := range order {
		h, ok := d.renditions[u]
		if !ok {
			kept = append(kept, u)
			continue
		}
		if k, dup := byKey[h]; dup && d.units[k].Node != d.units[u].Node {
			if folded == nil {
				folded = map[int][]Rendition{}
			}
			folded[k] = append(folded[k], Rendition{ID: d.units[u].ID, Node: d.units[u].Node, Address: d.units[u].Address})
			continue
		}
		if _, dup := byKey[h]; !dup {
			byKey[h] = u
		}
		kept = append(kept, u)
	}
	return kept, folded
}

// renditionKey is the rendition key of the chunk id, and false for a
// unit no other document repeats.
func (d *corpusData) renditionKey(id string) (uint64, bool) {
	for _, u := range d.byID[id] {
		if h, ok := d.renditions[u]; ok {
			return h, true
		}
	}
	return 0, false
}

// sameRendition reports whether hits a and b hold the same text in two
// documents.
func (d *corpusData) sameRendition(a, b Hit) bool {
	ka, ok := d.renditionKey(a.ID)
	if !ok || a.Node == b.Node {
		return false
	}
	kb, ok := d.renditionKey(b.ID)
	return ok && ka == kb
}

// withRenditions returns hits whose Elements also hold the elements of
// the chunks folded into them, for eval: the answer's text is in what
// the user receives whichever copy the golden set names. A hit cut to a
// part of its chunk (expansion's matched part) keeps its own elements.
func (d *corpusData) withRenditions(hits []Hit) []Hit {
	out, cloned := hits, false
	for i, h := range hits {
		if len(h.Renditions) == 0 {
			continue
		}
		own := d.byID[h.ID]
		if len(own) == 0 || len(d.units[own[0]].Elements) != len(h.Elements) {
			continue
		}
		if !cloned {
			out, cloned = slices.Clone(hits), true
		}
		els := slices.Clone(h.Elements)
		for _, r := range h.Renditions {
			for _, u := range d.byID[r.ID] {
				els = append(els, d.units[u].Elements...)
			}
		}
		out[i].Elements = els
	}
	return out
}
