package pipeline

import (
	"context"
	"fmt"
	"maps"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

// rebuild rewrites the graph from state and the embedding cache
// (resync --rebuild-graph): no source is read.
func (r *runner) rebuild(ctx context.Context) error {
	for _, src := range r.p.Sources {
		name := src.Name()
		stored, err := r.p.Store.RecordList(ctx, r.p.Name, name)
		if err != nil {
			return fmt.Errorf("source %q: list stored records: %w", name, err)
		}
		recs := make([]state.Record, 0, len(stored))
		anchors := []string{}
		for _, rec := range stored {
			recs = append(recs, rec)
			anchors = append(anchors, rec.Anchor)
		}
		sortRecords(recs)
		if err := r.ensure(ctx, anchors); err != nil {
			return err
		}
		batchSize := max(r.p.BatchSize, 1)
		for i := 0; i < len(recs); i += batchSize {
			if err := r.rebuildBatch(ctx, name, recs[i:min(i+batchSize, len(recs))]); err != nil {
				return fmt.Errorf("source %q: %w", name, err)
			}
		}
	}
	return nil
}

func (r *runner) rebuildBatch(ctx context.Context, source string, recs []state.Record) error {
	outs := make([]*recordOutput, 0, len(recs))
	keys := make([]string, len(recs))
	for i, rec := range recs {
		keys[i] = rec.Key
	}
	stored, err := r.p.Store.ChunkGet(ctx, r.p.Name, source, keys)
	if err != nil {
		return fmt.Errorf("get stored chunks: %w", err)
	}
	for _, rec := range recs {
		r.counts().RecordsRebuilt++
		r.counts().ChunksRebuilt += len(stored[rec.Key])
		rp, err := decodeRecordProps(rec.Props)
		if err != nil {
			return fmt.Errorf("record %q: %w", rec.Key, err)
		}
		chunks := stored[rec.Key]
		o := &recordOutput{
			it:        item{source: source, rec: sources.Record{Key: rec.Key, Anchor: rec.Anchor}, hash: rec.Hash},
			label:     rec.Anchor,
			nodeID:    nodeIDOf(source, rec.Key, rp),
			node:      rebuiltNode(rp.Node),
			sections:  rp.Sections,
			elements:  rp.Elements,
			terms:     rp.Terms,
			xrefs:     rp.XRefs,
			ext:       rp.Ext,
			docIDs:    rp.DocIDs,
			forceAll:  true,
			links:     rp.Links,
			edge:      rp.Edge,
			oldEdge:   rp.Edge,
			mandatory: rp.Mandatory,
			states:    chunks,
			write:     make([]bool, len(chunks)),
			vecTexts:  map[string]string{},
		}
		for _, attr := range rp.Vectors {
			if text, ok := rp.Node[attr].(string); ok {
				o.vecTexts[attr] = text
			}
		}
		for i, c := range chunks {
			props, err := decodeProps(c.Props)
			if err != nil {
				return fmt.Errorf("record %q chunk %q: %w", rec.Key, c.ID, err)
			}
			text, _ := props["text"].(string)
			cctx, _ := props["context"].(string)
			parent, _ := props["parent"].(string)
			var elems []string
			if list, ok := props["elements"].([]any); ok {
				for _, e := range list {
					if s, ok := e.(string); ok {
						elems = append(elems, s)
					}
				}
			}
			o.chunks = append(o.chunks, chunker.Chunk{ID: c.ID, Text: text, Context: cctx, Parent: parent, Position: c.Position, Elements: elems})
			o.write[i] = true
		}
		outs = append(outs, o)
	}
	vectors, err := r.embedChunks(ctx, outs, r.cache())
	if err != nil {
		return err
	}
	b, _ := r.buildBatch(source, outs, vectors)
	for _, rec := range recs {
		rp, _ := decodeRecordProps(rec.Props)
		for _, e := range rp.ExtEdges {
			b.EdgeUpserts = append(b.EdgeUpserts, e.upsert())
		}
	}
	r.run.Counts.ChunksDeleted = 0
	// State is unchanged by a rebuild: only the graph is rewritten.
	return r.writeAndCommit(ctx, b, state.Commit{Pipeline: r.p.Name}, nil)
}

// rebuiltNode is a stored node's properties for a rebuild: a node stored
// before MappingVersion 3 may hold a source's field id over the node's
// id; it is written as source_id, as the mapping writes it now (the
// other stored "_" properties are kgsync's own).
func rebuiltNode(node map[string]any) map[string]any {
	if _, ok := node["id"]; !ok {
		return node
	}
	node = maps.Clone(node)
	renameReserved(node, func(k string) bool { return k == "id" })
	return node
}
