package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/state"
)

// GraphReader is the part of a sink that Verify reads the graph back
// through: sink/memgraph (Cypher over Bolt) and internal/graphtest
// (in memory) implement it. Nodes are identified by label and `id`
// property, as sink.NodeRef does.
type GraphReader interface {
	// NodeProps returns the properties named in props of the nodes labelled
	// label whose id is among ids, by id. An id without a node is absent
	// from the result; a property the node lacks is absent from its map.
	NodeProps(ctx context.Context, label string, ids, props []string) (map[string]map[string]any, error)
	// CountBy counts, by label, the nodes whose property prop equals one of
	// values.
	CountBy(ctx context.Context, prop string, values []string) (map[string]int, error)
	// NodesBy lists the nodes whose property prop equals one of values,
	// sorted by label, then id.
	NodesBy(ctx context.Context, prop string, values []string) ([]sink.NodeRef, error)
	// VectorIndexes lists the graph's vector indexes (name, label,
	// property, dimension).
	VectorIndexes(ctx context.Context) ([]sink.VectorIndex, error)
}

// ErrNotReadable is returned by Verify when the pipeline's sink cannot be
// read back (the CYPHERL sink writes files).
var ErrNotReadable = errors.New("the sink cannot be read back; verify needs a readable graph (memgraph)")

// Properties Verify reads. PropPipeline is on every record node (the
// pipeline's name), PropHash on record nodes (the record hash) and chunk
// nodes (the chunk hash), PropDocument on chunk and section nodes (their
// record node's id); all are written by buildBatch.
const (
	PropPipeline = sink.PropPipeline
	PropHash     = "_hash"
	PropDocument = "document"
)

// DefaultVerifySample is the number of records Verify compares node by
// node when VerifyOptions.Sample is 0: all of them when the pipeline has at
// most this many records, else a random sample of this size.
const DefaultVerifySample = 10000

// verifyIDBatch is the number of ids per NodeProps call.
const verifyIDBatch = 1000

// DifferenceKind classifies a difference between state and graph.
type DifferenceKind string

// Difference kinds.
const (
	// DiffMissing: a node state has is not in the graph.
	DiffMissing DifferenceKind = "missing"
	// DiffStale: the node's _hash (or a chunk's text) differs from state.
	DiffStale DifferenceKind = "stale"
	// DiffExtra: a node of the pipeline that state does not have.
	DiffExtra DifferenceKind = "extra"
	// DiffCount: a label's node count differs (reported when not every
	// record was compared node by node).
	DiffCount DifferenceKind = "count"
	// DiffVectorIndex: a vector index is missing or has another dimension,
	// label or property.
	DiffVectorIndex DifferenceKind = "vector_index"
)

// Difference is one way the graph differs from state.
type Difference struct {
	Kind  DifferenceKind `json:"kind"`
	Label string         `json:"label"`
	// ID is the node's id, or the vector index's name; "" for counts.
	ID string `json:"id,omitempty"`
	// Source and Key name the record of state the node belongs to; "" for
	// extra nodes, counts and indexes.
	Source string `json:"source,omitempty"`
	Key    string `json:"key,omitempty"`
	// Detail says how it differs, e.g. "_hash 00ab… want 12cd…".
	Detail string `json:"detail,omitempty"`
	// Nodes is the number of nodes the difference stands for: 1 for a
	// node, the absolute count difference for a count, 0 for an index.
	Nodes int `json:"nodes"`
}

// LabelCount compares one label's number of nodes of the pipeline.
type LabelCount struct {
	Label string `json:"label"`
	State int    `json:"state"`
	Graph int    `json:"graph"`
}

// VerifyOptions select what Verify compares and whether it repairs.
type VerifyOptions struct {
	// Sample is the number of records whose nodes (record, section and
	// chunk nodes) are compared one by one: 0 means DefaultVerifySample
	// (every record when there are at most that many), negative means none
	// (counts and vector indexes only, the daemon's cheap check). Repair
	// compares every record whatever Sample says.
	Sample int
	// Repair rewrites the missing and stale records from state and the
	// embedding cache (zero embedding calls when the cache is whole),
	// deletes extra nodes and recreates missing vector indexes.
	Repair bool
	// Rand picks the sample; nil uses a randomly seeded generator.
	Rand *rand.Rand
}

// VerifyReport is what Verify found (and repaired).
type VerifyReport struct {
	Pipeline string `json:"pipeline"`
	// Records is the number of records in state; Checked the number
	// compared node by node.
	Records int `json:"records"`
	Checked int `json:"checked"`
	// Counts compares node counts per label: record labels (nodes with
	// `_pipeline`), Section, Element, Term and Chunk (nodes whose `document` is one of the
	// pipeline's record nodes).
	Counts      []LabelCount `json:"counts"`
	Differences []Difference `json:"differences"`
	// Repaired is set when a repair ran: Rewritten records, Deleted extra
	// nodes, and the repair's counters (embedding calls, sink statements).
	Repaired *Repair `json:"repaired,omitempty"`
}

// Repair is what a repair did.
type Repair struct {
	Rewritten int          `json:"records_rewritten"`
	Deleted   int          `json:"nodes_deleted"`
	Indexes   bool         `json:"indexes_ensured"`
	Counts    state.Counts `json:"counts"`
}

// Total is the number of differing nodes plus differing vector indexes:
// the value of the daemon's kgsync_verify_differences metric.
func (r *VerifyReport) Total() int {
	n := 0
	for _, d := range r.Differences {
		if d.Kind == DiffVectorIndex {
			n++
		} else {
			n += d.Nodes
		}
	}
	return n
}

// partLabels are the labels of the nodes a record's node owns, which name
// it in their `document` property.
var partLabels = []string{LabelSection, LabelElement, LabelTerm, LabelChunk}

// parts lists the section, element and term nodes a record's props name
// (chunks come from state's chunk list).
func (rp recordProps) parts() []sink.NodeRef {
	var out []sink.NodeRef
	for _, s := range rp.Sections {
		out = append(out, sink.NodeRef{Label: LabelSection, ID: s.ID})
	}
	for _, e := range rp.Elements {
		out = append(out, sink.NodeRef{Label: LabelElement, ID: e.ID})
	}
	for _, t := range rp.Terms {
		out = append(out, sink.NodeRef{Label: LabelTerm, ID: t.ID})
	}
	return out
}

// verifyRecord is one record of state with what it expects in the graph.
type verifyRecord struct {
	source string
	rec    state.Record
	props  recordProps
	nodeID string
}

// Verify compares the graph with state: node counts per label, the stored
// hashes of a sample of records (see VerifyOptions.Sample), extra nodes of
// the pipeline, and the vector indexes with their dimensions. With
// opts.Repair it then rewrites what is missing or stale from state and the
// embedding cache, through the same path as resync --rebuild-graph, and
// deletes the extra nodes; the report lists the differences found before
// the repair.
//
// Verify holds the pipeline's lock (state.ErrLocked while a run is going
// on) and reads no source. It returns ErrNotReadable when the sink is not
// a GraphReader.
func (p *Pipeline) Verify(ctx context.Context, opts VerifyOptions) (rep *VerifyReport, err error) {
	gr, ok := p.Sink.(GraphReader)
	if !ok {
		return nil, fmt.Errorf("pipeline %q: verify: %w", p.Name, ErrNotReadable)
	}
	unlock, err := p.Store.Lock(ctx, p.Name)
	if err != nil {
		return nil, fmt.Errorf("pipeline %q: verify: lock: %w", p.Name, err)
	}
	defer func() {
		if uerr := unlock(); uerr != nil && err == nil {
			err = fmt.Errorf("pipeline %q: verify: unlock: %w", p.Name, uerr)
		}
	}()
	v := &verifier{p: p, gr: gr, opts: opts, rep: &VerifyReport{Pipeline: p.Name}}
	if err := v.verify(ctx); err != nil {
		return v.rep, fmt.Errorf("pipeline %q: verify: %w", p.Name, err)
	}
	log := p.logger().With(slog.String("pipeline", p.Name))
	if !opts.Repair {
		log.Info("verify finished", slog.Int("records", v.rep.Records), slog.Int("checked", v.rep.Checked), slog.Int("differences", v.rep.Total()))
		return v.rep, nil
	}
	if err := v.repair(ctx); err != nil {
		return v.rep, fmt.Errorf("pipeline %q: repair: %w", p.Name, err)
	}
	log.Info("verify repaired", slog.Int("differences", v.rep.Total()),
		slog.Int("rewritten", v.rep.Repaired.Rewritten), slog.Int("deleted", v.rep.Repaired.Deleted),
		slog.Int("chunks_embedded", v.rep.Repaired.Counts.ChunksEmbedded))
	return v.rep, nil
}

type verifier struct {
	p    *Pipeline
	gr   GraphReader
	opts VerifyOptions
	rep  *VerifyReport
	// recs are state's records with a node, by source then key; edges are
	// the link-table rows (records that are one edge, no node).
	recs  []verifyRecord
	edges []verifyRecord
	// affected are the records (by index into recs) with a missing or stale
	// node (or part node); extra the nodes to delete; badIndex a vector index with another
	// dimension (every vector must be rewritten).
	affected map[int]bool
	extra    []sink.NodeRef
	badIndex bool
	all      bool // every record was compared
	// chunkIDs are the stored chunk ids of the compared records.
	chunkIDs map[string]bool
}

// verify compares state with the graph: the records state holds
// (readState), the node counts by label (verifyCounts), the vector
// indexes, and a sample of the records' nodes, or every one with the
// nodes nobody's record holds (verifyExtra) when the sample is all.
func (v *verifier) verify(ctx context.Context) error {
	stateCount, err := v.readState(ctx)
	if err != nil {
		return err
	}
	docIDs, err := v.verifyCounts(ctx, stateCount)
	if err != nil {
		return err
	}
	if err := v.verifyIndexes(ctx); err != nil {
		return err
	}
	idx := v.sample()
	v.all = len(idx) == len(v.recs)
	v.rep.Checked = len(idx)
	if v.all {
		v.rep.Checked += len(v.edges)
	}
	v.affected = map[int]bool{}
	v.chunkIDs = map[string]bool{}
	if err := v.verifyNodes(ctx, idx); err != nil {
		return err
	}
	if v.all {
		return v.verifyExtra(ctx, docIDs)
	}
	// A sample leaves the nodes nobody's record holds unfound: a count
	// that differs says there are some.
	for _, c := range v.rep.Counts {
		if c.State != c.Graph {
			v.rep.Differences = append(v.rep.Differences, Difference{Kind: DiffCount, Label: c.Label,
				Detail: fmt.Sprintf("graph has %d nodes, state %d", c.Graph, c.State), Nodes: abs(c.Graph - c.State)})
		}
	}
	return nil
}

// readState reads state's records of every source into v.recs (records
// with a node, by source then key) and v.edges (link-table rows), and
// returns the nodes state expects, by label.
func (v *verifier) readState(ctx context.Context) (map[string]int, error) {
	p := v.p
	stateCount := map[string]int{}
	for _, src := range p.Sources {
		name := src.Name()
		stored, err := p.Store.RecordList(ctx, p.Name, name)
		if err != nil {
			return nil, fmt.Errorf("source %q: list stored records: %w", name, err)
		}
		for _, key := range slices.Sorted(maps.Keys(stored)) {
			rec := stored[key]
			rp, err := decodeRecordProps(rec.Props)
			if err != nil {
				return nil, fmt.Errorf("source %q: record %q: %w", name, key, err)
			}
			vr := verifyRecord{source: name, rec: rec, props: rp}
			if rp.Edge != nil {
				v.edges = append(v.edges, vr)
				continue
			}
			vr.nodeID = nodeIDOf(name, key, rp)
			v.recs = append(v.recs, vr)
			stateCount[rec.Anchor]++
			for _, n := range rp.parts() {
				stateCount[n.Label]++
			}
		}
	}
	v.rep.Records = len(v.recs) + len(v.edges)
	chunks, err := p.Store.ChunkCount(ctx, p.Name)
	if err != nil {
		return nil, fmt.Errorf("count stored chunks: %w", err)
	}
	stateCount[LabelChunk] = chunks
	return stateCount, nil
}

// verifyCounts counts the graph's nodes by label beside state's
// (stateCount) into the report, and returns the record nodes' ids,
// sorted and without repeats.
func (v *verifier) verifyCounts(ctx context.Context, stateCount map[string]int) (docIDs []string, _ error) {
	p := v.p
	// Counts: record nodes carry _pipeline; chunks, sections, elements and
	// terms name their record node in `document`.
	graphCount, err := v.gr.CountBy(ctx, PropPipeline, []string{p.Name})
	if err != nil {
		return nil, fmt.Errorf("count record nodes: %w", err)
	}
	docIDs = make([]string, 0, len(v.recs))
	for _, r := range v.recs {
		docIDs = append(docIDs, r.nodeID)
	}
	slices.Sort(docIDs)
	docIDs = slices.Compact(docIDs)
	parts, err := v.gr.CountBy(ctx, PropDocument, docIDs)
	if err != nil {
		return nil, fmt.Errorf("count chunk, section, element and term nodes: %w", err)
	}
	for _, l := range partLabels {
		graphCount[l] = parts[l]
	}
	for _, l := range slices.Sorted(maps.Keys(mergeKeys(stateCount, graphCount))) {
		v.rep.Counts = append(v.rep.Counts, LabelCount{Label: l, State: stateCount[l], Graph: graphCount[l]})
	}
	return docIDs, nil
}

// sample picks the records whose nodes are compared (indexes into v.recs,
// ascending): every one for a repair, else VerifyOptions.Sample of them
// (DefaultVerifySample when 0) at random.
func (v *verifier) sample() []int {
	sample := v.opts.Sample
	if v.opts.Repair || sample == 0 {
		sample = DefaultVerifySample
		if v.opts.Repair {
			sample = len(v.recs)
		}
	}
	if sample < 0 {
		sample = 0
	}
	idx := make([]int, len(v.recs))
	for i := range idx {
		idx[i] = i
	}
	if sample < len(v.recs) {
		rng := v.opts.Rand
		if rng == nil {
			rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
		}
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		idx = idx[:sample]
		slices.Sort(idx)
	}
	return idx
}

func mergeKeys(a, b map[string]int) map[string]int {
	out := maps.Clone(a)
	for k, n := range b {
		if _, ok := out[k]; !ok && n != 0 {
			out[k] = 0
		}
	}
	for k, n := range out {
		if n == 0 && b[k] == 0 {
			delete(out, k)
		}
	}
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// verifyIndexes compares the vector indexes the pipeline's schema needs
// with the graph's.
func (v *verifier) verifyIndexes(ctx context.Context) error {
	have, err := v.gr.VectorIndexes(ctx)
	if err != nil {
		return fmt.Errorf("list vector indexes: %w", err)
	}
	byName := map[string]sink.VectorIndex{}
	for _, vi := range have {
		byName[vi.Name] = vi
	}
	anchors := []string{}
	for _, r := range v.recs {
		anchors = append(anchors, r.rec.Anchor)
	}
	for _, want := range v.p.Schema(anchors).VectorIndexes {
		got, ok := byName[want.Name]
		d := Difference{Kind: DiffVectorIndex, Label: want.Label, ID: want.Name}
		switch {
		case !ok:
			d.Detail = fmt.Sprintf("missing (want %s.%s, dimension %d)", want.Label, want.Property, want.Dimension)
		case got.Label != want.Label || got.Property != want.Property:
			d.Detail = fmt.Sprintf("on %s.%s, want %s.%s", got.Label, got.Property, want.Label, want.Property)
			v.badIndex = true
		case got.Dimension != want.Dimension:
			d.Detail = fmt.Sprintf("dimension %d, want %d", got.Dimension, want.Dimension)
			v.badIndex = true
		default:
			continue
		}
		v.rep.Differences = append(v.rep.Differences, d)
	}
	return nil
}

// expected is one node a record expects, with the hash and text it must carry.
type expected struct {
	rec  int // index into v.recs
	hash string
	text *string // chunks: the stored text
}

// verifyNodes compares the record, part (section, element, term) and chunk
// nodes of the records idx with the graph: presence, and the _hash of
// record and chunk nodes and the text of chunks.
func (v *verifier) verifyNodes(ctx context.Context, idx []int) error {
	want := map[string]map[string]expected{} // label → id → expected
	add := func(label, id string, e expected) {
		if want[label] == nil {
			want[label] = map[string]expected{}
		}
		want[label][id] = e
	}
	// The records' stored chunks, one query per source.
	keysOf := map[string][]string{}
	for _, i := range idx {
		keysOf[v.recs[i].source] = append(keysOf[v.recs[i].source], v.recs[i].rec.Key)
	}
	chunksOf := map[string]map[string][]state.Chunk{}
	for source, keys := range keysOf {
		cs, err := v.p.Store.ChunkGet(ctx, v.p.Name, source, keys)
		if err != nil {
			return fmt.Errorf("source %q: %w", source, err)
		}
		chunksOf[source] = cs
	}
	for _, i := range idx {
		r := v.recs[i]
		add(r.rec.Anchor, r.nodeID, expected{rec: i, hash: fmt.Sprintf("%016x", r.rec.Hash)})
		for _, n := range r.props.parts() {
			add(n.Label, n.ID, expected{rec: i})
		}
		for _, c := range chunksOf[r.source][r.rec.Key] {
			props, err := decodeProps(c.Props)
			if err != nil {
				return fmt.Errorf("record %q chunk %q: %w", r.rec.Key, c.ID, err)
			}
			text, _ := props["text"].(string)
			v.chunkIDs[c.ID] = true
			add(LabelChunk, c.ID, expected{rec: i, hash: fmt.Sprintf("%016x", c.Hash), text: &text})
		}
	}
	for _, label := range slices.Sorted(maps.Keys(want)) {
		ids := slices.Sorted(maps.Keys(want[label]))
		props := []string{PropHash}
		if label == LabelChunk {
			props = append(props, "text")
		}
		for start := 0; start < len(ids); start += verifyIDBatch {
			part := ids[start:min(start+verifyIDBatch, len(ids))]
			got, err := v.gr.NodeProps(ctx, label, part, props)
			if err != nil {
				return fmt.Errorf("read %s nodes: %w", label, err)
			}
			for _, id := range part {
				e := want[label][id]
				r := v.recs[e.rec]
				d := Difference{Label: label, ID: id, Source: r.source, Key: r.rec.Key, Nodes: 1}
				n, ok := got[id]
				switch {
				case !ok:
					d.Kind = DiffMissing
				case e.hash != "" && n[PropHash] != e.hash:
					d.Kind, d.Detail = DiffStale, fmt.Sprintf("_hash %v, want %s", orNone(n[PropHash]), e.hash)
				case e.text != nil && n["text"] != *e.text:
					d.Kind, d.Detail = DiffStale, "text differs from state"
				default:
					continue
				}
				v.rep.Differences = append(v.rep.Differences, d)
				v.affected[e.rec] = true
			}
		}
	}
	return nil
}

func orNone(v any) any {
	if v == nil {
		return "none"
	}
	return v
}

// verifyExtra lists the pipeline's nodes that state does not have: record
// nodes with its `_pipeline`, and chunk, section, element and term nodes
// whose `document` is one of its record nodes.
func (v *verifier) verifyExtra(ctx context.Context, docIDs []string) error {
	known := map[sink.NodeRef]bool{}
	for _, r := range v.recs {
		known[sink.NodeRef{Label: r.rec.Anchor, ID: r.nodeID}] = true
		for _, n := range r.props.parts() {
			known[n] = true
		}
	}
	recNodes, err := v.gr.NodesBy(ctx, PropPipeline, []string{v.p.Name})
	if err != nil {
		return fmt.Errorf("list record nodes: %w", err)
	}
	ids := slices.Clone(docIDs)
	for _, n := range recNodes {
		if !known[n] {
			v.extra = append(v.extra, n)
			ids = append(ids, n.ID)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	parts, err := v.gr.NodesBy(ctx, PropDocument, ids)
	if err != nil {
		return fmt.Errorf("list chunk, section, element and term nodes: %w", err)
	}
	for _, n := range parts {
		switch {
		case n.Label == LabelChunk:
			if !v.chunkIDs[n.ID] {
				v.extra = append(v.extra, n)
			}
		case slices.Contains(partLabels, n.Label) && !known[n]:
			v.extra = append(v.extra, n)
		}
	}
	slices.SortFunc(v.extra, func(a, b sink.NodeRef) int {
		if c := strings.Compare(a.Label, b.Label); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	v.extra = slices.Compact(v.extra)
	for _, n := range v.extra {
		v.rep.Differences = append(v.rep.Differences, Difference{Kind: DiffExtra, Label: n.Label, ID: n.ID, Nodes: 1})
	}
	return nil
}

// repair deletes the extra nodes, ensures the schema, and rewrites the
// affected records from state: those with a missing or stale node, the
// records linking to them and the link-table rows touching them (their
// edges went with the node), or every record when a vector index had the
// wrong dimension (recreating it removes every vector).
func (v *verifier) repair(ctx context.Context) error {
	p := v.p
	run := &state.Run{Pipeline: p.Name}
	r := &runner{p: p, run: run, log: p.logger().With(slog.String("pipeline", p.Name), slog.String("step", "repair"))}
	rp := &Repair{}
	v.rep.Repaired = rp
	defer func() { rp.Counts = run.Counts }()

	batchSize := max(p.BatchSize, 1)
	for i := 0; i < len(v.extra); i += batchSize {
		b := &sink.Batch{DeleteNodes: v.extra[i:min(i+batchSize, len(v.extra))]}
		if err := r.writeAndCommit(ctx, b, state.Commit{Pipeline: p.Name}, nil); err != nil {
			return fmt.Errorf("delete extra nodes: %w", err)
		}
		rp.Deleted += len(b.DeleteNodes)
	}

	anchors := []string{}
	for _, rec := range v.recs {
		anchors = append(anchors, rec.rec.Anchor)
	}
	if err := r.ensure(ctx, anchors); err != nil {
		return err
	}
	rp.Indexes = true

	// Nodes whose edges a rewrite must restore.
	lost := map[sink.NodeRef]bool{}
	for i := range v.recs {
		if v.badIndex {
			v.affected[i] = true
		}
		if v.affected[i] {
			lost[sink.NodeRef{Label: v.recs[i].rec.Anchor, ID: v.recs[i].nodeID}] = true
		}
	}
	if len(lost) > 0 {
		for i, rec := range v.recs {
			for _, l := range rec.props.Links {
				if lost[sink.NodeRef{Label: l.ToAnchor, ID: l.ToID}] {
					v.affected[i] = true
				}
			}
		}
	}
	bySource := map[string][]state.Record{}
	var order []string
	for i, rec := range v.recs {
		if !v.affected[i] {
			continue
		}
		if _, ok := bySource[rec.source]; !ok {
			order = append(order, rec.source)
		}
		bySource[rec.source] = append(bySource[rec.source], rec.rec)
	}
	for _, e := range v.edges {
		ed := e.props.Edge
		if !lost[sink.NodeRef{Label: ed.FromLabel, ID: ed.FromID}] && !lost[sink.NodeRef{Label: ed.ToLabel, ID: ed.ToID}] {
			continue
		}
		if _, ok := bySource[e.source]; !ok {
			order = append(order, e.source)
		}
		bySource[e.source] = append(bySource[e.source], e.rec)
	}
	for _, source := range order {
		recs := bySource[source]
		sortRecords(recs)
		for i := 0; i < len(recs); i += batchSize {
			if err := r.rebuildBatch(ctx, source, recs[i:min(i+batchSize, len(recs))]); err != nil {
				return fmt.Errorf("source %q: %w", source, err)
			}
		}
		rp.Rewritten += len(recs)
	}
	return nil
}
