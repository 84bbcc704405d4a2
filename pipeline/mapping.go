package pipeline

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/pipeline/review"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/cypherl"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

// PathSep separates the parts of an address path, as in chunker.Chunk.Address.
const PathSep = " › "

// NodeID is the graph id of a document's node: "<source>:<key>", e.g.
// "docs:rfc/rfc7231.txt". It traces every node to its source and record.
// A table row's node id is its record key, "<table>:<key>" (e.g.
// "hs_code:0101"), so that Ref columns and link tables of any source can
// name it; nodes are identified by label and id together.
func NodeID(source, key string) string { return source + ":" + key }

// nodeIDOf returns a stored record's node id.
func nodeIDOf(source, key string, rp recordProps) string {
	if rp.ID != "" {
		return rp.ID
	}
	return NodeID(source, key)
}

// recordProps is what state keeps of a record's graph output (state.Record.Props).
type recordProps struct {
	// ID is the node's id (NodeID for documents, the record key for rows).
	ID       string         `json:"id,omitempty"`
	Node     map[string]any `json:"node"`
	Sections []elementNode  `json:"sections,omitempty"`
	// Elements are the document's leaf elements, Terms its defined terms,
	// XRefs its same-document references, Ext its references to other
	// documents and ExtEdges those resolved (by linkPass), DocIDs the
	// identifiers other documents cite it by.
	Elements []elementNode `json:"elements,omitempty"`
	Terms    []termNode    `json:"terms,omitempty"`
	XRefs    []xrefEdge    `json:"xrefs,omitempty"`
	Ext      []extRef      `json:"ext,omitempty"`
	ExtEdges []xrefEdge    `json:"ext_edges,omitempty"`
	DocIDs   []string      `json:"doc_ids,omitempty"`
	Links    []linkRef     `json:"links,omitempty"`
	// Edge is set for a link-table row: the record is this edge, not a node.
	Edge *edgeRef `json:"edge,omitempty"`
	// Mandatory is set for a mandatory-table row.
	Mandatory *MandatoryLink `json:"mandatory,omitempty"`
	// PrevEdge is the row's previous edge while a write that changes it is
	// in flight (intent): deleted when the record is next written.
	PrevEdge *edgeRef `json:"prev_edge,omitempty"`
	// Vectors are the attributes whose text is embedded into the node
	// property VectorProperty(attr).
	Vectors []string `json:"vectors,omitempty"`
	// Content is a document's content hash without its key (contentHash,
	// hex): a document under a new key with the same content is a rename
	// for the mass-delete guard. Empty for rows and for documents stored
	// before it was kept.
	Content string `json:"content,omitempty"`
}

// contentHash is a document record's content hash without its key: the
// format and bytes of its document. ok is false for records without a
// document.
func contentHash(rec sources.Record) (h uint64, ok bool) {
	if rec.Document == nil {
		return 0, false
	}
	d := xxhash.New()
	_, _ = d.WriteString(rec.Document.Format)
	_, _ = d.Write([]byte{0})
	_, _ = d.Write(rec.Document.Content)
	return d.Sum64(), true
}

// storedContentHash reads contentHash from stored props (0 when absent).
func storedContentHash(props []byte) uint64 {
	var rp struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(props, &rp) != nil || len(rp.Content) != 16 {
		return 0
	}
	h, err := strconv.ParseUint(rp.Content, 16, 64)
	if err != nil {
		return 0
	}
	return h
}

// linkRef is one edge a record's node has to another record's node.
type linkRef struct {
	Type     string         `json:"type"`
	ToAnchor string         `json:"to_anchor"`
	ToID     string         `json:"to_id"`
	Props    map[string]any `json:"props,omitempty"`
}

// elementNode is one node of a document's element tree: a (:Section) for
// containers, an (:Element) for leaves.
type elementNode struct {
	ID          string   `json:"id"`
	Kind        string   `json:"kind,omitempty"`
	Address     string   `json:"address"`
	Citation    string   `json:"citation,omitempty"`
	Title       string   `json:"title"`
	Text        string   `json:"text,omitempty"`
	Level       int      `json:"level"`
	Parent      string   `json:"parent"`
	ParentLabel string   `json:"parent_label"`
	Unresolved  []string `json:"unresolved,omitempty"`
	// Prov is where the node's text came from, in a reviewed pipeline
	// (expert.go); nil otherwise.
	Prov *textProv `json:"prov,omitempty"`
	// Hash is the content hash of the node's properties when written.
	Hash uint64 `json:"hash,omitempty"`
}

func decodeRecordProps(b []byte) (recordProps, error) {
	var rp recordProps
	if len(b) == 0 {
		return rp, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&rp); err != nil {
		return rp, fmt.Errorf("decode stored props: %w", err)
	}
	rp.Node = normalizeJSON(rp.Node).(map[string]any)
	return rp, nil
}

func decodeProps(b []byte) (map[string]any, error) {
	m := map[string]any{}
	if len(b) == 0 {
		return m, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode stored props: %w", err)
	}
	return normalizeJSON(m).(map[string]any), nil
}

// normalizeJSON turns json.Number into int64 or float64, recursively.
func normalizeJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		if x == nil {
			return map[string]any{}
		}
		for k, e := range x {
			x[k] = normalizeJSON(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalizeJSON(e)
		}
		return x
	case nil:
		return nil
	}
	return v
}

// recordOutput is one processed record: its node (or edge, or mandatory
// link), its document graph and chunks, and what state held of it.
type recordOutput struct {
	it item
	// label is the node's label (the anchor), "" for a link-table row.
	label    string
	nodeID   string
	node     map[string]any
	sections []elementNode
	chunks   []chunker.Chunk
	states   []state.Chunk
	// write marks the chunks (by index) whose nodes must be (re)written.
	write []bool
	// removed are stored chunk ids the document no longer has.
	removed []string
	// The document graph: elements, terms, references, and their stored
	// versions; forceAll rewrites every node of the record.
	elements                     []elementNode
	oldSections, oldElements     []elementNode
	oldDocIDs                    []string
	terms, oldTerms              []termNode
	xrefs, oldXRefs, oldExtEdges []xrefEdge
	ext                          []extRef
	docIDs                       []string
	refsResolved, refsUnresolved int
	forceAll                     bool
	// links are the record's edges to other records; oldLinks the stored ones.
	links, oldLinks []linkRef
	// oldChunks and oldProps are the stored chunks and props, for the
	// write-ahead intent.
	oldChunks []state.Chunk
	oldProps  []byte
	// mandatory is a mandatory-table row's link (written by the link pass).
	mandatory *MandatoryLink
	// oldNode is the stored node when it is not the node the record writes
	// now (another label or id, or no node at all).
	oldNode *sink.NodeRef
	// edge is the link-table row's edge; oldEdge the stored one; prevEdge
	// an edge left by an interrupted write.
	edge, oldEdge, prevEdge *edgeRef
	// vecTexts are the short embeddable attributes' texts, by attribute;
	// oldVectors the attributes that had a vector property before.
	vecTexts   map[string]string
	oldVectors []string
	// oldNodeProps are the properties the stored node was written with.
	oldNodeProps []string
	// group numbers the chunk runs (one per document or long attribute):
	// NEXT edges stay within a run.
	group []int
	// lexRows and lexGone are the record's lexical index changes (upserts,
	// deletes) for the commit; rowLang caches a row's detected language.
	lexRows []state.LexicalRow
	lexGone []state.LexicalRef
	rowLang string
	// review is the expert review overlay of a reviewed document.
	review *review.Applied
}

// prepared is a batch ready for the sink: its graph operations, the state
// commit that follows them, its write-ahead intent (nil when only the
// cursor moves) and the labels whose indexes must exist before it.
type prepared struct {
	b       *sink.Batch
	commit  state.Commit
	intent  *intentData
	anchors []string
	// outs are the mapped records, published to the review once written.
	outs []*recordOutput
	// puts are the vectors embedded for the batch, stored by the writer
	// before its write (heldVectors).
	puts heldPuts
	// rendered is b rendered by the sink ahead of its write (renderer;
	// see batchWriter.submit), or nil: the writer renders it.
	rendered *cypherl.Rendered
	// size is what the batch holds, in bytes (preparedBytes): the
	// writer bounds the batches in flight by it (Pipeline.WriterBytes).
	size int
}

// preparedBytes measures a prepared batch for the writer's bound: the
// JSON properties of its records and chunks as committed to state and the
// float32 vectors it writes. Its graph operations, rendered statements and
// intent are in proportion to them.
func preparedBytes(c *state.Commit, vectors map[uint64][]float32) int {
	n := 0
	for _, rec := range c.Records {
		n += len(rec.Props)
	}
	for _, chunks := range c.ReplaceChunks {
		for _, ch := range chunks {
			n += len(ch.Props)
		}
	}
	for _, v := range vectors {
		n += 4 * len(v)
	}
	return n
}

// batchChunkBytes is the bound on a batch's chunks in bytes
// (Pipeline.BatchChunkBytes, its default when 0).
func (p *Pipeline) batchChunkBytes() int {
	return cmp.Or(p.BatchChunkBytes, config.DefaultPipelineBatchChunkBytes)
}

// outputChunkBytes is the text a mapped record's chunks hold, and its
// stored chunks' properties.
func outputChunkBytes(out *recordOutput) int {
	n := 0
	for _, c := range out.chunks {
		n += len(c.Text) + len(c.Context) + len(c.Address)
	}
	for _, c := range out.oldChunks {
		n += len(c.Props)
	}
	return n
}

// prepareBatch loads the stored version of a batch's records, maps, chunks
// and embeds them, and builds the graph operations and the state commit.
//
// A batch is cut by the documents it reads (maxBatchDocumentBytes); what
// they become is bounded too: once the chunks mapped (and the stored ones
// they replace) hold Pipeline.BatchChunkBytes, the batch ends there and rest are
// the items left for the next one, which alone carries cursor (a chunking
// change makes more and larger chunks of the same documents than a first
// sync does).
func (r *runner) prepareBatch(ctx context.Context, source string, items []item, cursor string) (_ *prepared, rest []item, _ error) {
	if err := r.loadStored(ctx, source, items); err != nil {
		return nil, nil, err
	}
	outs, rest, err := r.mapBatch(ctx, source, items)
	if err != nil {
		return nil, nil, err
	}
	if len(rest) > 0 {
		cursor = "" // only the batch that ends the page moves its cursor
	}
	var cursors map[string]string
	if cursor != "" {
		cursors = map[string]string{source: cursor}
	}
	if len(outs) == 0 {
		// Nothing could be mapped (a document that fails to parse is kept
		// as it is): no sink call, only the cursor moves on.
		return &prepared{b: &sink.Batch{}, commit: state.Commit{Pipeline: r.p.Name, Cursors: cursors}}, rest, nil
	}
	anchors := batchAnchors(outs)
	// A local embedder's new vectors are held for the batch's writer to
	// store (heldVectors); a provider's are stored as soon as they come,
	// so that a run killed later pays for them once.
	var cache embed.Cache = r.cache()
	var held *batchCache
	if embed.IsLocal(r.p.Embedder) {
		held = &batchCache{inner: cache, held: &r.held}
		cache = held
	}
	vectors, outs, err := r.embedIsolated(ctx, source, outs, cache)
	if err != nil {
		return nil, nil, err
	}
	if len(outs) == 0 {
		return &prepared{b: &sink.Batch{}, commit: state.Commit{Pipeline: r.p.Name, Cursors: cursors}, puts: held.heldPuts()}, rest, nil
	}
	b, commit := r.buildBatch(source, outs, vectors)
	commit.Cursors = cursors
	r.markLinksPending(&commit)
	if err := r.prepareReview(ctx, outs); err != nil {
		return nil, nil, err
	}
	return &prepared{b: b, commit: commit, intent: batchIntent(source, outs), anchors: anchors, outs: outs, puts: held.heldPuts(),
		size: preparedBytes(&commit, vectors)}, rest, nil
}

// mapBatch maps a batch's items (mapRecord), in order, until the chunks
// they map to (and the stored chunks they replace) hold
// Pipeline.BatchChunkBytes: the items after that are rest, left for the
// next batch (counted in state.Counts.BatchesCut). A record that cannot be mapped is quarantined and left out of
// outs; err is set only when ctx is done.
func (r *runner) mapBatch(ctx context.Context, source string, items []item) (outs []*recordOutput, rest []item, _ error) {
	outs = make([]*recordOutput, 0, len(items))
	chunkBytes, bound := 0, r.p.batchChunkBytes()
	for i, it := range items {
		if chunkBytes >= bound {
			r.counts().BatchesCut++
			return outs, items[i:], nil
		}
		out, err := r.mapRecord(ctx, it)
		if out != nil {
			chunkBytes += outputChunkBytes(out)
		}
		if err != nil && ctx.Err() != nil {
			return nil, nil, err // stopping: not this record's fault
		}
		if err != nil {
			// A record that cannot be parsed is quarantined and kept as it
			// is in state and graph: nothing is lost.
			r.unprocessed(it)
			if errors.Is(err, chunker.ErrTooComplex) {
				// A limit: the same content would hit it again. The mark
				// keeps it from being parsed again until it changes
				// (limitBackoff).
				err = fmt.Errorf("%w%s", err, limitMark(it.hash))
			}
			r.quarantineRecord(source, it.rec.Key, stageOf(err), err)
			continue
		}
		outs = append(outs, out)
	}
	return outs, nil, nil
}

// batchAnchors are the labels a batch's nodes and edges use, sorted and
// without repeats: their indexes must exist before the batch is written.
func batchAnchors(outs []*recordOutput) []string {
	anchors := []string{}
	for _, o := range outs {
		if o.label != "" {
			anchors = append(anchors, o.label)
		}
		if o.edge != nil {
			anchors = append(anchors, o.edge.FromLabel, o.edge.ToLabel)
		}
		for _, l := range o.links {
			anchors = append(anchors, l.ToAnchor)
		}
	}
	slices.Sort(anchors)
	return slices.Compact(anchors)
}

// unprocessed takes a record that will not be written out of the run's
// new and changed counts, into skipped.
func (r *runner) unprocessed(it item) {
	r.counts().RecordsSkipped++
	if it.class == diff.ClassNew {
		r.counts().RecordsNew--
	} else if it.class == diff.ClassChanged {
		r.counts().RecordsChanged--
	}
}

// embedIsolated embeds a batch's texts. When the provider refuses them
// (embedRefused: an input it will not take), each record is embedded on
// its own and the records it refuses are quarantined, so that one bad
// document does not block the others; it returns the vectors and the
// records left to write. Any other failure (the provider down, throttling,
// a malformed answer) fails the batch, as every record would fail alike.
func (r *runner) embedIsolated(ctx context.Context, source string, outs []*recordOutput, c embed.Cache) (map[uint64][]float32, []*recordOutput, error) {
	vectors, err := r.embedChunks(ctx, outs, c)
	if err == nil || !embedRefused(err) {
		return vectors, outs, err
	}
	vectors = map[uint64][]float32{}
	kept := outs[:0:0]
	for _, o := range outs {
		v, err := r.embedChunks(ctx, []*recordOutput{o}, c)
		switch {
		case err == nil:
			maps.Copy(vectors, v)
			kept = append(kept, o)
		case embedRefused(err):
			r.unprocessed(o.it)
			r.quarantineRecord(source, o.it.rec.Key, state.StageEmbed, err)
		default:
			return nil, nil, err
		}
	}
	return vectors, kept, nil
}

// mapRecord is the Map and Chunk steps for one record (design.md "One
// run, step by step"): its node (or edge, or mandatory link), its
// document's graph and chunks, its embeddable attributes, and, compared
// with what state holds of it, the chunks that must be written.
func (r *runner) mapRecord(ctx context.Context, it item) (*recordOutput, error) {
	out := &recordOutput{it: it, label: it.rec.Anchor, vecTexts: map[string]string{}}
	embeds, err := r.mapNode(out)
	if err != nil {
		return nil, err
	}
	if it.rec.Document != nil {
		if err := r.chunkDocument(ctx, out); err != nil {
			return nil, err
		}
	}
	if err := r.chunkAttributes(out, embeds); err != nil {
		return nil, err
	}
	if err := out.decodeStored(); err != nil {
		return nil, err
	}
	if err := r.compareChunks(out); err != nil {
		return nil, err
	}
	return out, nil
}

// mapNode applies the data model to out's record (the Map step): out gets
// its label, node id, links and node properties, or its edge, or its
// mandatory link. embeds are the record's embeddable attributes' texts by
// attribute (none for a document).
func (r *runner) mapNode(out *recordOutput) (embeds map[string]string, _ error) {
	it, rec := out.it, out.it.rec
	attrs := rec.Attributes
	ownAttrs := false // attrs is this call's own map, not the record's
	if rec.Document != nil {
		out.nodeID = NodeID(it.source, rec.Key)
		if len(rec.Links) > 0 { // an attachment's link to its row
			mp, err := r.p.Model.apply(sources.Record{Key: rec.Key, Anchor: rec.Anchor, Links: rec.Links})
			if err != nil {
				return nil, err
			}
			out.links = mp.links
		}
	} else {
		mp, err := r.p.Model.apply(rec)
		if err != nil {
			return nil, err
		}
		switch {
		case mp.mandatory != nil:
			out.label, out.mandatory = "", mp.mandatory
		case mp.edge != nil:
			out.label, out.edge = "", mp.edge
		default:
			out.label, out.nodeID, attrs, embeds, out.links = mp.label, rec.Key, mp.attrs, mp.embeds, mp.links
			ownAttrs = true
		}
	}
	if out.edge == nil && out.mandatory == nil {
		node := attrs
		if !ownAttrs {
			node = make(map[string]any, len(attrs)+4)
			for k, v := range attrs {
				node[k] = v
			}
		}
		// A field of the source named like a property kgsync writes (id,
		// _hash, …) is kept under another name, for rows and documents
		// alike (an HTTP document source copies every field).
		renameReserved(node, sink.ReservedProperty)
		node["_source"] = it.source
		node["_pipeline"] = r.p.Name
		node["_key"] = rec.Key
		node["_hash"] = hashHex(it.hash)
		out.node = node
	}
	return embeds, nil
}

// chunkDocument parses and chunks out's document (the Chunk step): its
// element tree, terms and references, its chunks, and the node
// properties that count them.
func (r *runner) chunkDocument(ctx context.Context, out *recordOutput) error {
	it, rec := out.it, out.it.rec
	pd, err := r.parseDocument(ctx, out)
	if err != nil {
		return err
	}
	if n := chunker.ControlBytes(rec.Document.Format, rec.Document.Content); n > 0 {
		r.log.Warn("control characters stripped from document text", slog.String("source", it.source),
			slog.String("key", rec.Key), slog.Int("bytes", n))
	}
	if pd.title != "" {
		out.node["title"] = pd.title
	}
	g, chunks := pd.graph, pd.chunks
	out.review = pd.review
	out.sections, out.elements, out.terms, out.xrefs, out.ext, out.docIDs = g.sections, g.elements, g.terms, g.xrefs, g.ext, g.ids
	out.refsResolved, out.refsUnresolved = g.resolved, g.unresolved
	out.node["refs_resolved"] = int64(g.resolved)
	out.node["refs_unresolved"] = int64(g.unresolved)
	out.node["refs_external"] = int64(len(g.ext))
	out.node["refs_external_resolved"] = int64(0) // set by the link pass
	out.node["terms"] = int64(len(g.terms))
	if lang := documentLanguage(g.elements); lang != "" {
		out.node[PropLang] = lang
	}
	out.chunks = chunks
	out.group = make([]int, len(chunks))
	r.reviewProvenance(out, pd.root)
	return nil
}

// chunkAttributes places a record's embeddable attributes: short texts
// become a vector property, long ones chunk nodes linked to the record's
// node, each attribute its own chunk run (group) after the document's.
func (r *runner) chunkAttributes(out *recordOutput, embeds map[string]string) error {
	key := out.it.rec.Key
	names := slices.Sorted(maps.Keys(embeds))
	for gi, attr := range names {
		text := embeds[attr]
		// Every token covers at least one byte: a text of no more bytes
		// than the limit needs no counting.
		if limit := r.p.Model.LongTextTokens(); r.p.Chunking.Tokenizer == nil || len(text) <= limit || r.p.Chunking.Tokenizer.Count(text) <= limit {
			out.vecTexts[attr] = text
			continue
		}
		root, err := chunker.Parse("txt", []byte(text))
		if err != nil {
			return fmt.Errorf("record %s: attribute %q: %w", key, attr, err)
		}
		chunks, err := chunker.Split(out.nodeID+"#"+attr, root, r.p.Chunking)
		if err != nil {
			return fmt.Errorf("record %s: attribute %q: %w", key, attr, err)
		}
		for _, c := range chunks {
			c.Position = len(out.chunks)
			out.chunks = append(out.chunks, c)
			out.group = append(out.group, gi+1)
		}
	}
	return nil
}

// decodeStored takes what state holds of o's record into o (its stored
// chunks, props, document graph, links, edge, vectors and node
// properties; nothing for a record state does not hold). It sets oldNode
// when the record's node is no longer the one stored.
func (o *recordOutput) decodeStored() error {
	it := o.it
	if it.stored == nil {
		return nil
	}
	o.oldChunks = it.storedChunks
	o.oldProps = it.stored.Props
	sp, err := decodeRecordProps(it.stored.Props)
	if err != nil {
		return fmt.Errorf("record %s: %w", it.rec.Key, err)
	}
	o.oldSections, o.oldElements, o.oldTerms, o.oldXRefs, o.oldExtEdges = sp.Sections, sp.Elements, sp.Terms, sp.XRefs, sp.ExtEdges
	o.oldDocIDs = sp.DocIDs
	o.oldLinks = sp.Links
	o.oldEdge = sp.Edge
	o.prevEdge = sp.PrevEdge
	o.oldVectors = sp.Vectors
	o.oldNodeProps = slices.Collect(maps.Keys(sp.Node))
	// The record's node under another label or id (the anchor was
	// renamed), or a record that is no node any more (its table became
	// a link or mandatory table): the old node goes, the rest is
	// rewritten.
	if sp.Edge == nil && sp.Mandatory == nil && it.stored.Anchor != "" {
		old := sink.NodeRef{Label: it.stored.Anchor, ID: nodeIDOf(it.source, it.rec.Key, sp)}
		if o.edge != nil || o.mandatory != nil || old.Label != o.label || old.ID != o.nodeID {
			o.oldNode = &old
		}
	}
	return nil
}

// compareChunks hashes each of out's chunks as its node is written and
// compares the hash with the stored one (out.oldChunks): out.write marks
// the chunks to write, out.removed the stored chunks that go.
//
// Invariant: a chunk whose stored hash equals its hash is not rewritten,
// unless the whole record is (forceAll); every stored chunk the record
// no longer has is in removed.
func (r *runner) compareChunks(out *recordOutput) error {
	it, rec := out.it, out.it.rec
	old := make(map[string]uint64, len(out.oldChunks)) // the stored chunks' hashes, by id
	for _, c := range out.oldChunks {
		old[c.ID] = c.Hash
	}
	// A stored hash of 0 marks a write that was interrupted (see intent):
	// the graph may hold any mix of the two versions, so rewrite it all.
	forceAll := it.stored == nil || it.stored.Hash == 0 || r.mode.Full || r.mode.Reembed ||
		it.stored.Fingerprint != r.fingerprint(rec) || out.oldNode != nil
	out.forceAll = forceAll
	keep := map[string]bool{}
	out.states = make([]state.Chunk, len(out.chunks))
	out.write = make([]bool, len(out.chunks))
	// A chunk's position property counts within its parent element, so a
	// chunk inserted in one section does not renumber (and rewrite) every
	// later chunk of the document; document order is in NEXT and in state.
	inParent := map[string]int{}
	for i, c := range out.chunks {
		next := ""
		if i+1 < len(out.chunks) && out.group[i+1] == out.group[i] {
			next = out.chunks[i+1].ID
		}
		props := chunkProps(c, out.nodeID, next, inParent[c.Parent])
		inParent[c.Parent]++
		out.reviewChunk(c, props)
		h, err := diff.Hash(props)
		if err != nil {
			return fmt.Errorf("hash chunk %s of %s: %w", c.ID, rec.Key, err)
		}
		pj, err := json.Marshal(props)
		if err != nil {
			return fmt.Errorf("encode chunk %s of %s: %w", c.ID, rec.Key, err)
		}
		out.states[i] = state.Chunk{
			Pipeline: r.p.Name, Source: it.source, RecordKey: rec.Key, ID: c.ID,
			Hash: h, TextHash: diff.TextHash(c.EmbedText()), Position: c.Position, Props: pj,
		}
		keep[c.ID] = true
		oh, had := old[c.ID]
		out.write[i] = forceAll || !had || oh != h
	}
	for id := range old {
		if !keep[id] {
			out.removed = append(out.removed, id)
		}
	}
	slices.Sort(out.removed)
	return nil
}

// chunkProps are a chunk node's properties without its vector; "next" is the
// following chunk's id so that a neighbour change rewrites the NEXT edge, and
// "position" the chunk's ordinal among the chunks of its parent element.
func chunkProps(c chunker.Chunk, docID, next string, position int) map[string]any {
	elems := make([]any, len(c.Elements))
	for i, e := range c.Elements {
		elems[i] = e
	}
	return map[string]any{
		"text":     c.Text,
		"context":  c.Context,
		"address":  c.Address,
		"citation": c.Citation,
		"parent":   c.Parent,
		"position": int64(position),
		"tokens":   int64(c.Tokens),
		"document": docID,
		"elements": elems,
		"next":     next,
	}
}

// embedChunks embeds (or takes from cache) the texts of the chunks to write.
func (r *runner) embedChunks(ctx context.Context, outs []*recordOutput, cache embed.Cache) (map[uint64][]float32, error) {
	var texts []string
	for _, o := range outs {
		texts = append(texts, o.embedTexts()...)
	}
	vectors := map[uint64][]float32{}
	if len(texts) == 0 {
		return vectors, nil
	}
	vecs, st, err := embed.EmbedAll(ctx, r.p.Embedder, cache, texts)
	r.counts().EmbedRequests += st.Calls
	if err != nil {
		r.counts().EmbedErrors++
		return nil, fmt.Errorf("embed %d chunks: %w", len(texts), err)
	}
	r.counts().ChunksEmbedded += st.Embedded
	r.counts().ChunksReused += len(texts) - st.Embedded
	for i, text := range texts {
		vectors[diff.TextHash(text)] = vecs[i]
	}
	return vectors, nil
}

// embedTexts are the texts a record's write needs vectors for: its written
// chunks (context line and text), its short embeddable attributes, and its
// terms' definitions. Vectors are looked up by diff.TextHash of each.
func (o *recordOutput) embedTexts() []string {
	var texts []string
	for i, c := range o.chunks {
		if o.write[i] {
			texts = append(texts, c.EmbedText())
		}
	}
	for _, attr := range slices.Sorted(maps.Keys(o.vecTexts)) {
		texts = append(texts, o.vecTexts[attr])
	}
	for _, t := range o.terms {
		texts = append(texts, t.embedText())
	}
	return texts
}

// buildBatch turns mapped records into the graph operations of the Write
// step and the state commit that follows their acknowledgement (the
// Commit step), record by record in the order of outs.
func (r *runner) buildBatch(source string, outs []*recordOutput, vectors map[uint64][]float32) (*sink.Batch, state.Commit) {
	b, commit := r.newBatch(outs)
	var synced syncedClock
	for _, o := range outs {
		ref := state.RecordRef{Source: source, Key: o.it.rec.Key}
		r.moveOps(b, &commit, source, o)
		r.retireOps(b, &commit, ref, o)
		switch {
		case o.mandatory != nil:
			r.docsChanged = true // the link pass rewrites the MANDATORY edges
			rp, _ := json.Marshal(recordProps{Mandatory: o.mandatory})
			commit.Records = append(commit.Records, r.recordState(o, rp))
		case o.edge != nil:
			r.edgeOps(b, o.edge, o.oldEdge, o.prevEdge)
			rp, _ := json.Marshal(recordProps{Edge: o.edge})
			commit.Records = append(commit.Records, r.recordState(o, rp))
		default:
			r.nodeRecordOps(b, &commit, ref, o, vectors, &synced)
		}
	}
	lexicalCommit(&commit, outs)
	return b, commit
}

// newBatch is an empty batch and commit with room for outs: every record
// has its state record; a node, with a placeholder per link, or an edge,
// with its two ends' placeholders, is upserted.
func (r *runner) newBatch(outs []*recordOutput) (*sink.Batch, state.Commit) {
	b := &sink.Batch{}
	commit := state.Commit{Pipeline: r.p.Name, ReplaceChunks: make(map[state.RecordRef][]state.Chunk, len(outs))}
	if len(outs) == 0 {
		return b, commit
	}
	nodes := 0
	for _, o := range outs {
		switch {
		case o.mandatory != nil:
		case o.edge != nil:
			nodes += 2
		default:
			nodes += 1 + len(o.links)
		}
	}
	commit.Records = make([]state.Record, 0, len(outs))
	if nodes > 0 {
		b.NodeUpserts = make([]sink.NodeUpsert, 0, nodes)
	}
	return b, commit
}

// retireOps deletes what a record wrote before and writes no more: its
// old node (oldNode), and, for a record that is now an edge or a
// mandatory link, its document graph, chunks and lexical rows, or, for
// one that is a node now, the edge it was.
func (r *runner) retireOps(b *sink.Batch, commit *state.Commit, ref state.RecordRef, o *recordOutput) {
	if o.oldNode != nil {
		b.DeleteNodes = append(b.DeleteNodes, *o.oldNode)
	}
	if o.edge != nil || o.mandatory != nil {
		// Whatever the record wrote as a node goes with its old node.
		r.dropDocGraph(b, o)
		if len(o.oldChunks) > 0 {
			commit.ReplaceChunks[ref] = []state.Chunk{}
		}
		o.lexDeleteAll()
	} else if o.oldEdge != nil || o.prevEdge != nil {
		for _, e := range []*edgeRef{o.oldEdge, o.prevEdge} {
			if e != nil {
				b.DeleteEdges = append(b.DeleteEdges, e.ref())
			}
		}
	}
}

// recordState is the state record a mapped record commits: its hash,
// fingerprint, anchor (its node's label, "" for a record that is no
// node) and stored props (rp).
func (r *runner) recordState(o *recordOutput, rp []byte) state.Record {
	rec := o.it.rec
	return state.Record{
		Pipeline: r.p.Name, Source: o.it.source, Key: rec.Key, Hash: o.it.hash,
		Fingerprint: r.fingerprint(rec), Anchor: o.label, Props: rp, Origin: stateOrigin(rec.Origin), Ord: o.it.ord,
	}
}

// nodeRecordOps writes a record that is a node: the chunks it no longer
// has go, its node, links, document graph and written chunks are
// upserted, and its state record and chunks join the commit.
//
// Invariant: a row's stored props are taken before its node map gets
// the write's own properties (_synced_at, vectors, nulls), a document's
// after docGraphOps has set its elements' hashes.
func (r *runner) nodeRecordOps(b *sink.Batch, commit *state.Commit, ref state.RecordRef, o *recordOutput, vectors map[uint64][]float32, synced *syncedClock) {
	for _, id := range o.removed {
		b.DeleteNodes = append(b.DeleteNodes, sink.NodeRef{Label: LabelChunk, ID: id})
		o.lexDelete(id)
	}
	if o.oldNode != nil {
		o.lexDelete(o.oldNode.ID)
	}
	r.counts().ChunksDeleted += len(o.removed)
	vecAttrs := slices.Sorted(maps.Keys(o.vecTexts))
	docGraph := o.it.rec.Document != nil || len(o.sections)+len(o.elements) > 0
	var rp []byte
	if !docGraph {
		// A row's stored props are final here: its node map becomes
		// the node upserted.
		rp = o.storedProps(vecAttrs)
	}
	node := r.nodeProps(o, vecAttrs, vectors, synced, docGraph)
	b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: o.label, ID: o.nodeID, Props: node})
	docRef := sink.NodeRef{Label: o.label, ID: o.nodeID}
	r.linkOps(b, docRef, o.links, o.oldLinks)
	if docGraph {
		r.docGraphOps(b, o, vectors)
		r.docsChanged = true
		r.touchDocs(o.it.rec.Key, o.docIDs, o.oldDocIDs)
		if commit.LinkDocs == nil {
			commit.LinkDocs = map[state.RecordRef][]byte{}
		}
		commit.LinkDocs[ref] = linkEntry(o.nodeID, o.label, o.docIDs, o.ext)
	}
	chunkOps(b, o, docRef, vectors)
	if docGraph {
		rp = o.storedProps(vecAttrs)
	}
	commit.Records = append(commit.Records, r.recordState(o, rp))
	if len(o.states) > 0 || o.it.found {
		// A record state does not hold has no chunks to replace.
		commit.ReplaceChunks[ref] = o.states
	}
}

// storedProps is what state keeps of a node record (recordProps);
// vecAttrs are its vector attributes, sorted.
func (o *recordOutput) storedProps(vecAttrs []string) []byte {
	content := ""
	if h, ok := contentHash(o.it.rec); ok {
		content = hashHex(h)
	}
	return marshalRowProps(recordProps{ID: o.nodeID, Node: o.node, Sections: o.sections, Links: o.links, Vectors: vecAttrs,
		Elements: o.elements, Terms: o.terms, XRefs: o.xrefs, Ext: o.ext, ExtEdges: o.oldExtEdges, DocIDs: o.docIDs, Content: content})
}

// nodeProps are the properties a node record's node is upserted with: its
// mapping, when it was synced, its vectors, and null for every property
// it was written with and has no more. A document's node (docGraph) is a
// copy of o.node; a row's is o.node itself.
func (r *runner) nodeProps(o *recordOutput, vecAttrs []string, vectors map[uint64][]float32, synced *syncedClock, docGraph bool) map[string]any {
	node := o.node
	if docGraph {
		// Stored once its graph is written (docGraphOps sets its
		// elements' hashes); the node upserted is a copy.
		node = make(map[string]any, len(o.node)+len(o.vecTexts)+3) // and _synced_at, _placeholder, _lex
		for k, v := range o.node {
			node[k] = v
		}
	}
	node["_synced_at"] = synced.at(r.p.now())
	node[PropPlaceholder] = nil
	for _, attr := range vecAttrs {
		node[VectorProperty(attr)] = vectors[diff.TextHash(o.vecTexts[attr])]
	}
	// The node is exactly its mapping: a property it was written with
	// and has no more (a column removed upstream or from the model)
	// goes, and so does a vector whose attribute is gone or no longer
	// embedded (SET n += {p: null} removes p, memgraph.md §5; the
	// vector index drops the node with it).
	// The node's identity properties are never removed
	// (sink.IdentityProperty): a node stored before a column named id
	// was written as source_id has id among its old properties.
	for _, k := range o.oldNodeProps {
		if _, ok := node[k]; !ok && !sink.IdentityProperty(k) {
			node[k] = nil
		}
	}
	for _, attr := range o.oldVectors {
		if _, ok := o.vecTexts[attr]; !ok {
			node[VectorProperty(attr)] = nil
		}
	}
	if len(vecAttrs) > 0 {
		node[PropRowLex] = o.lexUpsertNode()
	} else if len(o.oldVectors) > 0 {
		node[PropRowLex] = nil
		o.lexDelete(o.nodeID)
	}
	return node
}

// chunkOps upserts the chunks of o marked to write, each with its vector,
// its PART_OF edge to the record's node (docRef), its IN_SECTION and NEXT
// edges (pruning the ones it no longer has) and its COVERS edges.
func chunkOps(b *sink.Batch, o *recordOutput, docRef sink.NodeRef, vectors map[uint64][]float32) {
	labels := map[string]string{}
	for _, s := range o.sections {
		labels[s.ID] = LabelSection
	}
	for _, e := range o.elements {
		labels[e.ID] = LabelElement
	}
	labelOf := func(id string) string { return labels[id] }
	for i, c := range o.chunks {
		if !o.write[i] {
			continue
		}
		props, _ := decodeProps(o.states[i].Props)
		props["_hash"] = hashHex(o.states[i].Hash)
		props[PropEmbedding] = vectors[o.states[i].TextHash]
		props[PropLex] = o.lexUpsert(state.LexicalChunk, c.ID, chunkLexText(c))
		cref := sink.NodeRef{Label: LabelChunk, ID: c.ID}
		b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: LabelChunk, ID: c.ID, Props: props})
		b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: RelPartOf, From: cref, To: docRef})
		var keepSection []string
		if labels[c.Parent] == LabelSection {
			b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: RelInSection, From: cref, To: sink.NodeRef{Label: LabelSection, ID: c.Parent}})
			keepSection = []string{c.Parent}
		}
		b.EdgePrunes = append(b.EdgePrunes, sink.EdgePrune{Type: RelInSection, From: cref, ToLabel: LabelSection, Keep: keepSection})
		var keepNext []string
		if next, _ := props["next"].(string); next != "" {
			b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: RelNext, From: cref, To: sink.NodeRef{Label: LabelChunk, ID: next}})
			keepNext = []string{next}
		}
		b.EdgePrunes = append(b.EdgePrunes, sink.EdgePrune{Type: RelNext, From: cref, ToLabel: LabelChunk, Keep: keepNext})
		coversOps(b, cref, c.Elements, labelOf)
	}
}

// lexicalCommit gathers the batch's lexical index changes into its
// commit, in the order of outs.
func lexicalCommit(commit *state.Commit, outs []*recordOutput) {
	var gone, rows int
	for _, o := range outs {
		gone, rows = gone+len(o.lexGone), rows+len(o.lexRows)
	}
	if gone > 0 {
		commit.LexicalDeletes = make([]state.LexicalRef, 0, gone)
	}
	if rows > 0 {
		commit.LexicalUpserts = make([]state.LexicalRow, 0, rows)
	}
	for _, o := range outs {
		commit.LexicalDeletes = append(commit.LexicalDeletes, o.lexGone...)
		commit.LexicalUpserts = append(commit.LexicalUpserts, o.lexRows...)
	}
}

// hashHex is a hash as nodes carry it: 16 lower-case hex digits
// (fmt's %016x).
func hashHex(h uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = digits[h&0xf]
		h >>= 4
	}
	return string(b[:])
}

// syncedClock writes times as a node's _synced_at: RFC 3339 in UTC to the
// second, each second formatted once.
type syncedClock struct {
	sec  int64
	text string
}

func (c *syncedClock) at(t time.Time) string {
	if sec := t.Unix(); sec != c.sec || c.text == "" {
		c.sec, c.text = sec, t.UTC().Format("2006-01-02T15:04:05Z07:00")
	}
	return c.text
}

// moveOps handles a record that moves from another key (item.from): the
// old record leaves state in the same commit, and its node goes — a table
// row's node as a placeholder (retireRow) that is deleted once nothing
// points to it, so that edges from records not read again follow when
// those are (the rows referring to a changed key are listed with it).
func (r *runner) moveOps(b *sink.Batch, commit *state.Commit, source string, o *recordOutput) {
	it := o.it
	if it.from == "" {
		return
	}
	commit.DeleteRecords = append(commit.DeleteRecords, state.RecordRef{Source: source, Key: it.from})
	if it.fromRec == nil || it.fromRec.Anchor == "" {
		return
	}
	sp, err := decodeRecordProps(it.fromRec.Props)
	if err == nil && (len(sp.DocIDs) > 0 || len(sp.Sections) > 0) {
		r.docsChanged = true
		r.touchDocs(it.from, sp.DocIDs)
	}
	if err != nil || sp.Edge != nil || sp.Mandatory != nil {
		if err == nil && sp.Edge != nil && (o.edge == nil || sp.Edge.ref() != o.edge.ref()) {
			b.DeleteEdges = append(b.DeleteEdges, sp.Edge.ref())
		}
		return
	}
	old := sink.NodeRef{Label: it.fromRec.Anchor, ID: nodeIDOf(source, it.from, sp)}
	if o.edge == nil && o.mandatory == nil && old == (sink.NodeRef{Label: o.label, ID: o.nodeID}) {
		return
	}
	if o.oldNode != nil && *o.oldNode == old {
		o.oldNode = nil
	}
	if isRow(sp) {
		r.retireRow(b, old, sp)
		return
	}
	b.DeleteNodes = append(b.DeleteNodes, old)
}

// edgeOps writes a link-table row's edge, deleting its old edge when the row
// now links other nodes. Both ends are MERGEd (as stubs when their records
// come later), so the edge never depends on page order.
func (r *runner) edgeOps(b *sink.Batch, e, old, prev *edgeRef) {
	for _, o := range []*edgeRef{prev, old} {
		if o != nil && o.ref() != e.ref() {
			b.DeleteEdges = append(b.DeleteEdges, o.ref())
			// Its ends may be placeholders nothing needs now.
			b.DeleteOrphans = append(b.DeleteOrphans, sink.NodeRef{Label: o.FromLabel, ID: o.FromID}, sink.NodeRef{Label: o.ToLabel, ID: o.ToID})
		}
	}
	from, to := sink.NodeRef{Label: e.FromLabel, ID: e.FromID}, sink.NodeRef{Label: e.ToLabel, ID: e.ToID}
	b.NodeUpserts = append(b.NodeUpserts, placeholder(from), placeholder(to))
	props := e.Props
	if old != nil && old.ref() == e.ref() {
		// The same edge: a property it no longer has (a link-table column
		// removed) goes, as on nodes.
		var gone []string
		for k := range old.Props {
			if _, ok := e.Props[k]; !ok {
				gone = append(gone, k)
			}
		}
		if len(gone) > 0 {
			props = maps.Clone(e.Props)
			if props == nil {
				props = map[string]any{}
			}
			for _, k := range gone {
				props[k] = nil
			}
		}
	}
	b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: e.Type, From: from, To: to, Key: e.Key, Props: props})
}

// PropPlaceholder marks a node created as an edge's end before (or without)
// its own record: a Ref to a row not synced yet, or to a deleted row. The
// record's own upsert removes the mark.
const PropPlaceholder = "_placeholder"

func placeholder(n sink.NodeRef) sink.NodeUpsert {
	return sink.NodeUpsert{Label: n.Label, ID: n.ID, Props: map[string]any{PropPlaceholder: true}, CreateOnly: true}
}

func (e *edgeRef) ref() sink.EdgeRef {
	return sink.EdgeRef{Type: e.Type, From: sink.NodeRef{Label: e.FromLabel, ID: e.FromID},
		To: sink.NodeRef{Label: e.ToLabel, ID: e.ToID}, Key: e.Key}
}

// fingerprint is a record's config fingerprint: the pipeline's (chunking,
// embedder, mapping version) combined with its anchor's part of the model.
func (r *runner) fingerprint(rec sources.Record) uint64 {
	mf := r.p.Model.Fingerprint(rec.Anchor)
	if mf == 0 {
		return r.p.Fingerprint
	}
	return r.p.Fingerprint ^ (mf * 0x9e3779b97f4a7c15)
}

// linkOps adds a record's link edges to the batch and prunes the edges it
// no longer has. The target node is MERGEd (as a stub with only its id when
// its record comes later in the listing) so that the edge is never lost to
// page order; the target's own record fills in its properties.
func (r *runner) linkOps(b *sink.Batch, from sink.NodeRef, links, old []linkRef) {
	if len(links) == 1 && len(old) == 0 {
		// A new row's one link (a parent): one group, keeping its target.
		l := links[0]
		to := sink.NodeRef{Label: l.ToAnchor, ID: l.ToID}
		b.NodeUpserts = append(b.NodeUpserts, placeholder(to))
		b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: l.Type, From: from, To: to, Props: l.Props})
		b.EdgePrunes = append(b.EdgePrunes, sink.EdgePrune{Type: l.Type, From: from, ToLabel: l.ToAnchor, Keep: []string{l.ToID}})
		return
	}
	type group struct{ typ, anchor string }
	keep := map[group][]string{}
	for _, l := range links {
		g := group{l.Type, l.ToAnchor}
		keep[g] = append(keep[g], l.ToID)
		to := sink.NodeRef{Label: l.ToAnchor, ID: l.ToID}
		b.NodeUpserts = append(b.NodeUpserts, placeholder(to))
		b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: l.Type, From: from, To: to, Props: l.Props})
	}
	stillLinked := map[sink.NodeRef]bool{}
	for _, l := range links {
		stillLinked[sink.NodeRef{Label: l.ToAnchor, ID: l.ToID}] = true
	}
	for _, l := range old {
		if _, ok := keep[group{l.Type, l.ToAnchor}]; !ok {
			keep[group{l.Type, l.ToAnchor}] = nil
		}
		// A target no longer linked may be a placeholder nobody needs now.
		if to := (sink.NodeRef{Label: l.ToAnchor, ID: l.ToID}); !stillLinked[to] {
			b.DeleteOrphans = append(b.DeleteOrphans, to)
			stillLinked[to] = true
		}
	}
	groups := make([]group, 0, len(keep))
	for g := range keep {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b group) int {
		if c := strings.Compare(a.typ, b.typ); c != 0 {
			return c
		}
		return strings.Compare(a.anchor, b.anchor)
	})
	for _, g := range groups {
		b.EdgePrunes = append(b.EdgePrunes, sink.EdgePrune{Type: g.typ, From: from, ToLabel: g.anchor, Keep: keep[g]})
	}
}

// documentTitle is the title of the document's first section, if any.
func documentTitle(root *chunker.Element) string {
	if root.Title != "" {
		return root.Title
	}
	for _, c := range root.Children {
		if c.Kind == chunker.KindSection && c.Title != "" {
			return strings.TrimSpace(c.Title)
		}
	}
	return ""
}

func sortRecords(recs []state.Record) {
	slices.SortFunc(recs, func(a, b state.Record) int { return strings.Compare(a.Key, b.Key) })
}
