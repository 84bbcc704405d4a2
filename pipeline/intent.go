package pipeline

import (
	"encoding/json"
	"fmt"

	"github.com/kgsync/kgsync/state"
)

// intent is the write-ahead state of a batch, committed before the sink
// write: every record of the batch with hash 0 ("interrupted"), props and
// chunks that are the union of the stored and the new version. If the
// process dies between the sink write and the state commit, the next run
// sees hash 0, rewrites the record from the source whatever its content is
// by then (even reverted to the stored version), and deletes every node
// either version had that the source's version no longer has.
func (r *runner) intent(source string, outs []*recordOutput, commit state.Commit) (*state.Commit, error) {
	in := &state.Commit{Pipeline: r.p.Name, ReplaceChunks: map[state.RecordRef][]state.Chunk{}}
	byKey := map[string]*recordOutput{}
	for _, o := range outs {
		byKey[o.it.rec.Key] = o
	}
	for _, rec := range commit.Records {
		o := byKey[rec.Key]
		if o == nil {
			continue
		}
		props := rec.Props
		if len(o.oldProps) > 0 {
			oldP, err := decodeRecordProps(o.oldProps)
			if err != nil {
				return nil, fmt.Errorf("record %q: %w", rec.Key, err)
			}
			newP, err := decodeRecordProps(rec.Props)
			if err != nil {
				return nil, fmt.Errorf("record %q: %w", rec.Key, err)
			}
			if props, err = json.Marshal(unionProps(oldP, newP)); err != nil {
				return nil, fmt.Errorf("record %q: %w", rec.Key, err)
			}
		}
		rec.Hash, rec.Props = 0, props
		in.Records = append(in.Records, rec)
		ref := state.RecordRef{Source: source, Key: rec.Key}
		var chunks []state.Chunk
		seen := map[string]bool{}
		for _, c := range append(append([]state.Chunk{}, commit.ReplaceChunks[ref]...), o.oldChunks...) {
			if !seen[c.ID] {
				seen[c.ID] = true
				c.Hash = 0
				c.RecordKey = rec.Key // a moved record's old chunks too
				chunks = append(chunks, c)
			}
		}
		in.ReplaceChunks[ref] = chunks
	}
	if len(in.Records) == 0 {
		return nil, nil
	}
	return in, nil
}

// unionProps merges a record's stored and new graph output: the new node,
// and every section, element, term, link and vector either version has, so
// that whatever the source holds next, the nodes it no longer has are
// deleted.
func unionProps(old, cur recordProps) recordProps {
	u := cur
	u.Sections = unionNodes(cur.Sections, old.Sections)
	u.Elements = unionNodes(cur.Elements, old.Elements)
	seenT := map[string]bool{}
	u.Terms = nil
	for _, t := range append(append([]termNode{}, cur.Terms...), old.Terms...) {
		if !seenT[t.ID] {
			seenT[t.ID] = true
			u.Terms = append(u.Terms, t)
		}
	}
	seenL := map[[3]string]bool{}
	u.Links = nil
	for _, l := range append(append([]linkRef{}, cur.Links...), old.Links...) {
		k := [3]string{l.Type, l.ToAnchor, l.ToID}
		if !seenL[k] {
			seenL[k] = true
			u.Links = append(u.Links, l)
		}
	}
	u.XRefs = dedupeEdges(append(append([]xrefEdge{}, cur.XRefs...), old.XRefs...))
	seenV := map[string]bool{}
	u.Vectors = nil
	for _, v := range append(append([]string{}, cur.Vectors...), old.Vectors...) {
		if !seenV[v] {
			seenV[v] = true
			u.Vectors = append(u.Vectors, v)
		}
	}
	if old.Edge != nil && (cur.Edge == nil || old.Edge.ref() != cur.Edge.ref()) {
		u.PrevEdge = old.Edge
	}
	return u
}

func unionNodes(cur, old []elementNode) []elementNode {
	seen := map[string]bool{}
	out := make([]elementNode, 0, len(cur)+len(old))
	for _, n := range append(append([]elementNode{}, cur...), old...) {
		if !seen[n.ID] {
			seen[n.ID] = true
			n.Hash = 0 // rewrite: the graph may hold either version
			out = append(out, n)
		}
	}
	return out
}
