package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/kgsync/kgsync/state"
)

// intentData is the data of a batch's write-ahead intent (state.Intent):
// the batch's records as state held them before it. It is committed with
// the batch's new state, before the sink write, and removed by the commit
// after the sink acknowledged the batch, so each record is written to state
// once. If the process dies in between, the next run finds the intent
// (recoverIntents) and marks each of its records as interrupted: hash 0,
// props and chunks the union of the version before and the version after
// the batch. That run rewrites the record from the source whatever its
// content is by then (even reverted to the version before), and deletes
// every node either version had that the source's version no longer has.
type intentData struct {
	Records []intentRecord `json:"records"`
}

// intentRecord is one record of an intent; Stored is nil for a record the
// batch created.
type intentRecord struct {
	Source string        `json:"source"`
	Key    string        `json:"key"`
	Stored *state.Record `json:"stored,omitempty"`
	Chunks []state.Chunk `json:"chunks,omitempty"`
}

// batchIntent is the intent of a batch of mapped records.
func batchIntent(source string, outs []*recordOutput) *intentData {
	in := &intentData{Records: make([]intentRecord, 0, len(outs))}
	for _, o := range outs {
		ir := intentRecord{Source: source, Key: o.it.rec.Key}
		if o.it.stored != nil {
			ir.Stored, ir.Chunks = o.it.stored, o.it.storedChunks
		}
		in.Records = append(in.Records, ir)
		if o.it.from != "" && o.it.fromRec != nil {
			// A record moving from another key: the batch deletes the old
			// key's record, which an interrupted batch gets back (as
			// interrupted), so that the next run moves it again.
			in.Records = append(in.Records, intentRecord{Source: source, Key: o.it.from, Stored: o.it.fromRec, Chunks: o.it.fromChunks})
		}
	}
	return in
}

// recoverIntents marks the records of the batches whose sink write may
// have been interrupted (intents still stored) as interrupted, one commit
// per intent that also removes it. It runs before a run reads anything.
func (r *runner) recoverIntents(ctx context.Context) error {
	ins, err := r.p.Store.IntentList(ctx, r.p.Name)
	if err != nil {
		return fmt.Errorf("list intents: %w", err)
	}
	for _, in := range ins {
		if err := r.recoverIntent(ctx, in); err != nil {
			return fmt.Errorf("recover interrupted batch %d: %w", in.ID, err)
		}
		r.log.Warn("interrupted batch recovered: its records will be rewritten", slog.Int64("intent", in.ID))
	}
	return nil
}

// recoverIntent applies one intent: each of its records gets hash 0 and the
// union of its state before the batch (from the intent) and after it (from
// state), chunks included, with chunk hashes 0.
func (r *runner) recoverIntent(ctx context.Context, in state.Intent) error {
	var data intentData
	if err := json.Unmarshal(in.Data, &data); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	bySource := map[string][]intentRecord{}
	var order []string
	for _, ir := range data.Records {
		if _, ok := bySource[ir.Source]; !ok {
			order = append(order, ir.Source)
		}
		bySource[ir.Source] = append(bySource[ir.Source], ir)
	}
	c := state.Commit{Pipeline: r.p.Name, ReplaceChunks: map[state.RecordRef][]state.Chunk{}, IntentsDone: []int64{in.ID}}
	for _, source := range order {
		irs := bySource[source]
		keys := make([]string, len(irs))
		for i, ir := range irs {
			keys[i] = ir.Key
		}
		cur, err := r.p.Store.RecordGet(ctx, r.p.Name, source, keys)
		if err != nil {
			return err
		}
		curChunks, err := r.p.Store.ChunkGet(ctx, r.p.Name, source, keys)
		if err != nil {
			return err
		}
		for _, ir := range irs {
			now, found := cur[ir.Key]
			var rec state.Record
			switch {
			case found && ir.Stored != nil:
				oldP, err := decodeRecordProps(ir.Stored.Props)
				if err != nil {
					return fmt.Errorf("record %q: %w", ir.Key, err)
				}
				newP, err := decodeRecordProps(now.Props)
				if err != nil {
					return fmt.Errorf("record %q: %w", ir.Key, err)
				}
				rec = now
				if rec.Props, err = json.Marshal(unionProps(oldP, newP)); err != nil {
					return fmt.Errorf("record %q: %w", ir.Key, err)
				}
			case found:
				rec = now
			case ir.Stored != nil:
				rec = *ir.Stored
			default:
				continue // created and deleted again: nothing of it is left
			}
			rec.Pipeline, rec.Source, rec.Hash = r.p.Name, source, 0
			c.Records = append(c.Records, rec)
			var chunks []state.Chunk
			seen := map[string]bool{}
			for _, ch := range append(append([]state.Chunk{}, curChunks[ir.Key]...), ir.Chunks...) {
				if !seen[ch.ID] {
					seen[ch.ID] = true
					ch.Hash = 0
					ch.RecordKey = ir.Key // a moved record's old chunks too
					chunks = append(chunks, ch)
				}
			}
			c.ReplaceChunks[state.RecordRef{Source: source, Key: ir.Key}] = chunks
		}
	}
	return r.p.Store.Commit(ctx, c)
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
