package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/cypherl"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

// runner holds one run's progress.
type runner struct {
	p    *Pipeline
	run  *state.Run
	mode Mode
	log  *slog.Logger
	// ensured is set once the sink's schema was ensured in this run, for
	// the labels in labels.
	ensured bool
	labels  map[string]bool
	// q is the run's quarantine (quarantine.go).
	q quarantine
	// docsChanged is set when the run wrote or deleted a document: the
	// link pass then re-resolves references between documents.
	docsChanged bool
	// intentSeq numbers the run's write-ahead intents; acked are the
	// intents of batches the sink acknowledged and ackCursors their
	// cursors, both committed with the next commit (writeAndCommit);
	// ackMu guards them (the batch writer's two stages, writer.go).
	intentSeq  int64
	ackMu      sync.Mutex
	acked      []int64
	ackCursors map[string]string
	// touched are the normalized identifiers of the documents the run
	// wrote or deleted (touchDocs); linksAll makes the link pass resolve
	// every document (a run that stopped left it to do).
	touched  map[string]bool
	linksAll bool
	// held are the vectors of batches handed to the writer, not yet
	// stored (heldvectors.go).
	held heldVectors
}

// maxBatchDocumentBytes ends a batch early once its documents hold this
// many bytes: a batch of a thousand table rows is a few hundred KiB, one of
// a thousand documents could be gigabytes of parsed trees and chunks.
const maxBatchDocumentBytes = 8 << 20

// item is one record that must be processed in a batch.
type item struct {
	source string
	rec    sources.Record
	hash   uint64
	class  diff.Class
	reason diff.Reason
	// foundOwn says the record is in state under its own key.
	foundOwn bool
	// found says the record is in state; stored is its stored version and
	// storedChunks its stored chunks by position, loaded for the batch (nil
	// when new).
	found        bool
	stored       *state.Record
	storedChunks []state.Chunk
	// from is the key the record had before (sources.Page.Renamed) when
	// that record is stored: it moves to the new key. fromRec is its stored
	// version (loaded for the batch).
	from       string
	fromRec    *state.Record
	fromChunks []state.Chunk
	// ord is the record's place in the listing (state.Record.Ord).
	ord int64
}

// storedKey is the key the item's stored version is under: its own, or
// the key it moves from.
func (it *item) storedKey() string {
	if it.from != "" && !it.foundOwn {
		return it.from
	}
	return it.rec.Key
}

func (r *runner) counts() *state.Counts { return &r.run.Counts }

func (r *runner) execute(ctx context.Context) (err error) {
	if err := r.recoverIntents(ctx); err != nil {
		return err
	}
	// Batches the sink acknowledged are recorded as such even when the
	// run fails after them (else the next run would rewrite them).
	defer func() {
		if ferr := r.flushAcks(context.WithoutCancel(ctx)); ferr != nil && err == nil {
			err = ferr
		}
	}()
	// A link pass that a failed or killed run left to do is done now.
	pending, err := r.p.Store.CursorGet(ctx, r.p.Name, linksPendingCursor)
	if err != nil {
		return fmt.Errorf("get link pass mark: %w", err)
	}
	r.docsChanged = pending != ""
	r.linksAll = pending != ""
	if r.mode.RebuildGraph {
		if err := r.rebuild(ctx); err != nil {
			return err
		}
		return r.linkPass(ctx)
	}
	defer r.reviewEnd()
	if err := r.reviewBegin(ctx); err != nil {
		return err
	}
	if err := r.loadQuarantine(ctx); err != nil {
		return fmt.Errorf("load quarantine: %w", err)
	}
	// A source that fails does not stop the others: the run goes on and
	// fails at the end, naming every failed source.
	var failed []error
	for _, src := range r.p.Sources {
		if err := r.syncSource(ctx, src); err != nil {
			failed = append(failed, fmt.Errorf("source %q: %w", src.Name(), err))
			if ctx.Err() != nil {
				return errors.Join(failed...)
			}
		}
	}
	if err := r.linkPass(ctx); err != nil {
		failed = append(failed, err)
	}
	if len(failed) == 0 {
		if err := r.storeSettings(ctx); err != nil {
			failed = append(failed, fmt.Errorf("store settings: %w", err))
		}
	}
	return errors.Join(failed...)
}

// ensure creates the sink's indexes before the first write of the run, and
// again when a batch brings labels not yet ensured in this run.
func (r *runner) ensure(ctx context.Context, anchors []string) error {
	st, err := r.ensureSchema(ctx, anchors)
	r.addSinkStats(st)
	return err
}

// needsSchema reports whether ensureSchema would ask the sink: nothing is
// ensured yet in this run, or anchors holds a label not ensured.
func (r *runner) needsSchema(anchors []string) bool {
	if !r.ensured {
		return true
	}
	for _, a := range anchors {
		if !r.labels[a] {
			return true
		}
	}
	return false
}

// ensureSchema is ensure without counting (the batch writer's goroutine
// returns the stats instead).
func (r *runner) ensureSchema(ctx context.Context, anchors []string) (sink.Stats, error) {
	if r.labels == nil {
		r.labels = map[string]bool{}
	}
	grew := !r.ensured
	for _, a := range anchors {
		if !r.labels[a] {
			r.labels[a] = true
			grew = true
		}
	}
	if !grew {
		return sink.Stats{}, nil
	}
	if err := r.checkLock(ctx); err != nil {
		return sink.Stats{}, err
	}
	all := make([]string, 0, len(r.labels))
	for l := range r.labels {
		all = append(all, l)
	}
	slices.Sort(all)
	st, err := r.p.Sink.Ensure(ctx, r.p.Schema(all))
	if err != nil {
		return st, fmt.Errorf("ensure sink schema: %w", err)
	}
	r.ensured = true
	return st, nil
}

// addSinkStats counts sink calls.
func (r *runner) addSinkStats(st sink.Stats) {
	r.counts().SinkStatements += st.Statements
	r.counts().SinkBatches += st.Batches
	r.counts().SinkRetries += st.Retries
}

// syncSource syncs one source, then stores its quarantine.
func (r *runner) syncSource(ctx context.Context, src sources.Source) error {
	var l listing
	err := r.syncListing(ctx, src, &l)
	seen := func(k string) bool { return l.listed[k] }
	qerr := r.settleQuarantine(context.WithoutCancel(ctx), src.Name(), seen, l.complete && !l.partial, err == nil && l.complete)
	return errors.Join(err, qerr)
}

// fieldNamesValid checks that every attribute name of rec can be a
// property name (sink.ValidName: not empty, at most sink.MaxNameBytes
// bytes, no control character, quote or semicolon). Errors name the record
// and the field.
//
// It also refuses a NUL byte in a text value: Memgraph and the CYPHERL
// files would carry it into the graph, and no text holds one on purpose.
func fieldNamesValid(rec sources.Record) error {
	where := rec.Where
	if where == "" {
		where = rec.Key
	}
	for k, v := range rec.Attributes {
		if err := sink.ValidName(k); err != nil {
			return fmt.Errorf("%s: field %q: %w; the record is not written", where, truncateName(k), err)
		}
		if i := nulAt(v); i >= 0 {
			return fmt.Errorf("%s: field %q: NUL byte at offset %d of its value; the record is not written", where, k, i)
		}
	}
	return nil
}

// nulAt returns the offset of the first NUL byte in a text value (or in a
// list's texts), -1 when there is none.
func nulAt(v any) int {
	switch v := v.(type) {
	case string:
		return strings.IndexByte(v, 0)
	case []any:
		for _, e := range v {
			if i := nulAt(e); i >= 0 {
				return i
			}
		}
	case []string:
		for _, e := range v {
			if i := strings.IndexByte(e, 0); i >= 0 {
				return i
			}
		}
	}
	return -1
}

// truncateName shortens a field name for an error message.
func truncateName(k string) string {
	if len(k) > 64 {
		return k[:64] + "…"
	}
	return k
}

// configCursor names the cursor entry holding the config mark of a
// source's last complete run (configMark).
func configCursor(source string) string { return "_config:" + source }

// configMark fingerprints what shapes every record's output: the
// pipeline's fingerprint and the data model's part that reaches the graph
// (not descriptions). A source whose mark differs from the stored one is
// listed in full, whatever its cursor says, so that a mapping change
// reaches records that did not change upstream.
func (p *Pipeline) configMark() string {
	return fmt.Sprintf("%016x", p.Fingerprint^p.Model.Mark())
}

// deleteKeys deletes records the source reported as removed, with their
// children, once the mass-delete guard passes them (reported).
func (r *runner) deleteKeys(ctx context.Context, source string, stored *diff.Listing, keys []string) error {
	gone, err := r.reported(ctx, source, stored, keys)
	if err != nil {
		return err
	}
	return r.deleteStored(ctx, source, gone)
}

// reported lets the mass-delete guard rule on deletions the source
// reports (sources.Page.Deleted, an incremental listing), summed over the
// listing, and returns what they delete: the stored records among keys,
// with their children (sources.ChildMarker). A run and a plan judge alike
// (as rule does for a complete listing); the run deletes gone only when
// the guard passes. gone is returned with the guard's error too, and
// stored counts it as deleted either way.
func (r *runner) reported(ctx context.Context, source string, stored *diff.Listing, keys []string) (gone []string, err error) {
	sums, err := r.p.Store.RecordSummaries(ctx, r.p.Name, source, keys)
	if err != nil {
		return nil, fmt.Errorf("get stored records: %w", err)
	}
	for _, k := range keys {
		if _, ok := sums[k]; ok {
			gone = append(gone, k)
			delete(sums, k) // a key reported twice is deleted once
		}
	}
	// Deletions the source reports count against the guard too, summed
	// over the run (children follow their parent and are not counted): a
	// mistaken mass delete upstream stops here.
	reported := len(gone)
	total, err := stored.Total(ctx)
	if err != nil {
		return nil, err
	}
	guardErr := r.guard(stored.Deleted+reported, total)
	children, err := stored.ChildrenOf(ctx, keys)
	if err != nil {
		return nil, err
	}
	gone = append(gone, children...)
	stored.Forget(gone)
	stored.Deleted += reported
	return gone, guardErr
}

// deleteStaleChildren deletes, after a partial listing, the stored children
// of listed records that the listing did not list.
func (r *runner) deleteStaleChildren(ctx context.Context, source string, stored *diff.Listing) error {
	gone, err := stored.StaleChildren(ctx)
	if err != nil {
		return err
	}
	return r.deleteStored(ctx, source, gone)
}

// deleteStored deletes stored records by key, a batch at a time.
func (r *runner) deleteStored(ctx context.Context, source string, keys []string) error {
	slices.Sort(keys)
	batchSize := max(r.p.BatchSize, 1)
	for i := 0; i < len(keys); i += batchSize {
		part := keys[i:min(i+batchSize, len(keys))]
		recs, err := r.p.Store.RecordGet(ctx, r.p.Name, source, part)
		if err != nil {
			return fmt.Errorf("get stored records: %w", err)
		}
		gone := make([]state.Record, 0, len(part))
		for _, k := range part {
			if rec, ok := recs[k]; ok {
				gone = append(gone, rec)
			}
		}
		if err := r.deleteBatch(ctx, source, gone); err != nil {
			return err
		}
	}
	return nil
}

// classify compares a record with state: m is the match of its key, fm
// that of the key it had before (sources.Page.Renamed) when that record is
// stored and not listed yet: the record moves from it, and is compared
// with it unless the new key is stored too (the intent of an interrupted
// move).
func (r *runner) classify(source string, rec sources.Record, m, fm diff.Match) (item, error) {
	h, err := recordHash(r.p.Model.listed(rec))
	if err != nil {
		return item{}, fmt.Errorf("record %q: hash: %w", rec.Key, err)
	}
	mark, pendingReview := r.reviewMark(source, rec)
	h ^= mark
	st, found := m.Entry.RecordSummary, m.Found
	foundOwn := found
	from := ""
	if fm.Found {
		from = fm.Entry.Key
		if !found {
			st, found = fm.Entry.RecordSummary, true
		}
	}
	class, reason := diff.Classify(found, st.Hash, st.Fingerprint, h, r.fingerprint(rec))
	it := item{source: source, rec: rec, hash: h, class: class, reason: reason, found: found, foundOwn: foundOwn, from: from, ord: m.Ord}
	if from != "" {
		it.reason = diff.ReasonRenamed
		if it.class == diff.ClassUnchanged {
			it.class = diff.ClassChanged
		}
	}
	if pendingReview && it.class == diff.ClassUnchanged {
		it.class, it.reason = diff.ClassChanged, diff.ReasonReview
	}
	if class == diff.ClassUnchanged && (r.mode.Full || r.mode.Reembed) {
		it.reason = diff.ReasonForced
		if r.mode.Reembed {
			it.reason = diff.ReasonReembed
		}
	}
	return it, nil
}

// recordHash is a record's content hash (diff.RecordHash).
func recordHash(rec sources.Record) (uint64, error) {
	var small [4]diff.Link
	d := diff.Record{Key: rec.Key, Anchor: rec.Anchor, Attributes: rec.Attributes, Links: small[:0]}
	for _, l := range rec.Links {
		d.Links = append(d.Links, diff.Link(l))
	}
	if rec.Document != nil {
		d.Document = &diff.Document{Format: rec.Document.Format, Content: rec.Document.Content}
	}
	return diff.RecordHash(d)
}

// loadStored fills in the stored version of the batch's known records (and
// of the records they move from).
func (r *runner) loadStored(ctx context.Context, source string, items []item) error {
	var keys []string
	for _, it := range items {
		if it.found && it.stored == nil {
			keys = append(keys, it.storedKey())
		}
		if it.from != "" && it.fromRec == nil {
			keys = append(keys, it.from)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	recs, err := r.p.Store.RecordGet(ctx, r.p.Name, source, keys)
	if err != nil {
		return fmt.Errorf("get stored records: %w", err)
	}
	chunks, err := r.p.Store.ChunkGet(ctx, r.p.Name, source, keys)
	if err != nil {
		return fmt.Errorf("get stored chunks: %w", err)
	}
	for i := range items {
		it := &items[i]
		if rec, ok := recs[it.storedKey()]; ok && it.found && it.stored == nil {
			it.stored = &rec
			it.storedChunks = chunks[rec.Key]
			if it.from != "" && it.foundOwn {
				// The new key holds an interrupted move's intent: the old
				// key's chunks go too.
				it.storedChunks = append(slices.Clone(it.storedChunks), chunks[it.from]...)
			}
		}
		if rec, ok := recs[it.from]; ok && it.from != "" {
			it.fromRec = &rec
			it.fromChunks = chunks[it.from]
		}
	}
	return nil
}

// read reads src from cursor, through state's row index when both the
// source and the store have one (sources.IndexedReader, state.OriginIndex).
func (p *Pipeline) read(ctx context.Context, src sources.Source, cursor string) iter.Seq2[*sources.Page, error] {
	if ir, ok := src.(sources.IndexedReader); ok {
		if oi, ok := p.Store.(state.OriginIndex); ok {
			return ir.ReadIndexed(ctx, cursor, rowIndex{oi: oi, pipeline: p.Name, source: src.Name()})
		}
	}
	return src.Read(ctx, cursor)
}

// rowIndex is sources.RowIndex over state.
type rowIndex struct {
	oi               state.OriginIndex
	pipeline, source string
}

func (x rowIndex) RowKeysOf(ctx context.Context, scope string, ids []int64) (map[int64]string, error) {
	return x.oi.RecordOriginsOf(ctx, x.pipeline, x.source, scope, ids)
}

// MaxRowID is sources.RowIDBound over state.
func (x rowIndex) MaxRowID(ctx context.Context, scope string) (int64, error) {
	return x.oi.MaxRecordOrigin(ctx, x.pipeline, x.source, scope)
}

func stateOrigin(o sources.Origin) state.Origin { return state.Origin{Scope: o.Scope, ID: o.ID} }

// warn logs a source's warnings and keeps them with the run, once each.
func (r *runner) warn(ws []string) {
	for _, w := range ws {
		if slices.Contains(r.run.Warnings, w) {
			continue
		}
		r.run.Warnings = append(r.run.Warnings, w)
		r.log.Warn("source warning", slog.String("warning", w))
	}
}

// deleteRatio is the share of a source's stored records the mass-delete
// guard lets a run delete: Pipeline.MaxDeleteRatio, 0.3 when unset.
func (r *runner) deleteRatio() float64 {
	if r.p.MaxDeleteRatio <= 0 {
		return 0.3
	}
	return r.p.MaxDeleteRatio
}

// guardTrips reports whether deleting deletes of stored records is more
// than the mass-delete guard allows.
func (r *runner) guardTrips(deletes, stored int) bool {
	if r.guardOff() || deletes < 2 {
		return false
	}
	return float64(deletes) > r.deleteRatio()*float64(stored)
}

// guardOff reports whether the mass-delete guard stops nothing in this
// run: the operator allowed a mass delete, or the ratio is 1.
func (r *runner) guardOff() bool {
	return r.mode.AllowMassDelete || r.deleteRatio() >= 1
}

// netLoss is what a complete listing deletes net of renames: the stored
// records it did not list (gone) less those whose content a new key
// brought (diff.Listing.Renames, reading stored content with
// storedContentHash). A new key with unrelated content (a
// replacement) offsets nothing. It reads the gone records' stored content
// only when the count of gone records alone trips the guard.
func (r *runner) netLoss(ctx context.Context, stored *diff.Listing, gone []string, live int) (int, error) {
	loss := len(gone)
	if !r.guardTrips(loss, live) {
		return loss, nil
	}
	renamed, err := stored.Renames(ctx, gone, loss, storedContentHash)
	if err != nil {
		return 0, err
	}
	return loss - renamed, nil
}

// unconfirmedGuard stops a complete listing whose end the source could
// not vouch for (sources.Page.EndUnconfirmed: an empty page with no stated
// total) before it deletes anything, whatever the ratio: an upstream
// failure answering an empty page would otherwise delete up to the limit.
func (r *runner) unconfirmedGuard(unconfirmed bool, gone int) error {
	if !unconfirmed || gone == 0 || r.guardOff() {
		return nil
	}
	return fmt.Errorf("%w: the listing ended at an empty page with no stated total, and the run would delete %d records; "+
		"nothing was deleted; rerun with --allow-mass-delete to confirm (or configure pagination.total or has_more)", ErrMassDelete, gone)
}

// guard is the mass-delete guard: deleting more than MaxDeleteRatio of a
// source's stored records stops the run, unless the operator allowed it. A
// single deletion never trips it.
func (r *runner) guard(deletes, stored int) error {
	if r.guardTrips(deletes, stored) {
		return fmt.Errorf("%w: the run would delete %d of %d records (%.0f%%, limit %.0f%%); nothing was deleted; rerun with --allow-mass-delete to confirm",
			ErrMassDelete, deletes, stored, 100*float64(deletes)/float64(stored), 100*r.deleteRatio())
	}
	return nil
}

func (r *runner) deleteBatch(ctx context.Context, source string, gone []state.Record) error {
	b := &sink.Batch{}
	commit := state.Commit{Pipeline: r.p.Name}
	keys := make([]string, len(gone))
	for i, rec := range gone {
		keys[i] = rec.Key
	}
	stored, err := r.p.Store.ChunkGet(ctx, r.p.Name, source, keys)
	if err != nil {
		return fmt.Errorf("get chunks of deleted records: %w", err)
	}
	for _, rec := range gone {
		ref := state.RecordRef{Source: source, Key: rec.Key}
		chunks := stored[rec.Key]
		sp, err := decodeRecordProps(rec.Props)
		if err != nil {
			return fmt.Errorf("record %q: %w", rec.Key, err)
		}
		b.DeleteNodes = append(b.DeleteNodes, ownedNodes(chunks, sp.Sections, sp.Elements, sp.Terms)...)
		if sp.Mandatory != nil { // its MANDATORY edge goes in the link pass
			r.docsChanged = true
			commit.DeleteRecords = append(commit.DeleteRecords, ref)
			r.counts().RecordsDeleted++
			continue
		}
		if sp.PrevEdge != nil {
			b.DeleteEdges = append(b.DeleteEdges, sp.PrevEdge.ref())
		}
		switch {
		case sp.Edge != nil:
			b.DeleteEdges = append(b.DeleteEdges, sp.Edge.ref())
			b.DeleteOrphans = append(b.DeleteOrphans, sink.NodeRef{Label: sp.Edge.FromLabel, ID: sp.Edge.FromID},
				sink.NodeRef{Label: sp.Edge.ToLabel, ID: sp.Edge.ToID})
		case isRow(sp) && rec.Anchor != "":
			// A table row's node may be the target of other rows' Ref
			// edges, which those unchanged rows would not write again if
			// the row came back: it becomes a placeholder, deleted at once
			// unless something still points to it.
			r.retireRow(b, sink.NodeRef{Label: rec.Anchor, ID: nodeIDOf(source, rec.Key, sp)}, sp)
		default:
			b.DeleteNodes = append(b.DeleteNodes, sink.NodeRef{Label: rec.Anchor, ID: nodeIDOf(source, rec.Key, sp)})
		}
		commit.DeleteRecords = append(commit.DeleteRecords, ref)
		if len(sp.DocIDs) > 0 || len(sp.Sections) > 0 {
			r.docsChanged = true
			r.touchDocs(rec.Key, sp.DocIDs)
		}
		r.counts().RecordsDeleted++
		r.counts().ChunksDeleted += len(chunks)
	}
	r.markLinksPending(&commit)
	intent := &intentData{}
	for _, rec := range gone {
		// Interrupted, the record comes back with hash 0: rewritten if the
		// source has it again, deleted again if not.
		intent.Records = append(intent.Records, intentRecord{Source: source, Key: rec.Key, Stored: &rec, Chunks: stored[rec.Key]})
	}
	reviewed, err := r.prepareReviewDeleted(ctx, source, gone)
	if err != nil {
		return err
	}
	if err := r.writeAndCommit(ctx, b, commit, intent); err != nil {
		return err
	}
	r.reviewDeleted(ctx, reviewed)
	r.releaseDeleted(commit.DeleteRecords)
	return nil
}

// writeAndCommit writes a batch to the sink and commits state around it
// (writeBatch), counts it and reports progress.
func (r *runner) writeAndCommit(ctx context.Context, b *sink.Batch, commit state.Commit, intent *intentData) error {
	st, err := r.writeBatch(ctx, b, nil, commit, intent)
	r.addSinkStats(st)
	if err == nil {
		r.progress()
	}
	return err
}

// writeBatch writes a batch to the sink and commits state around it; state
// never records a write the sink has not acknowledged unless an intent
// marks it as possibly interrupted.
//
// With an intent (a batch of records): one commit before the sink write
// holds the batch's new state and its intent (intentData), and acknowledges
// the batches the sink has written since the commit before (removes their
// intents, stores their cursors); a later commit acknowledges this one
// (flushAcks at the latest). So each batch costs one transaction, and each
// record is written to state once. The batch writer runs the two halves
// (commitIntent, writeIntended) on two goroutines, so that one batch's
// sink write and the next one's commit overlap.
//
// Without an intent (the link pass, a rebuild, a repair): the sink write,
// then the commit.
func (r *runner) writeBatch(ctx context.Context, b *sink.Batch, rendered *cypherl.Rendered, commit state.Commit, intent *intentData) (sink.Stats, error) {
	if intent == nil || b.Len() == 0 {
		st, err := r.sinkWrite(ctx, b, rendered)
		if err != nil {
			return st, err
		}
		taken := r.takeAcks(&commit)
		if err := r.p.Store.Commit(ctx, commit); err != nil {
			r.giveBackAcks(taken)
			return st, fmt.Errorf("commit state: %w", err)
		}
		return st, nil
	}
	in, cursors, err := r.commitIntent(ctx, commit, intent)
	if err != nil {
		return sink.Stats{}, err
	}
	return r.writeIntended(ctx, b, rendered, in, cursors)
}

// commitIntent is the first half of writeBatch with an intent: it commits
// the batch's new state with its intent, and the acknowledgements waiting
// (takeAcks); the batch's cursors are returned, to be stored once the
// sink has the batch (writeIntended).
func (r *runner) commitIntent(ctx context.Context, commit state.Commit, intent *intentData) (state.Intent, map[string]string, error) {
	data, err := json.Marshal(intent)
	if err != nil {
		return state.Intent{}, nil, fmt.Errorf("encode write intent: %w", err)
	}
	r.intentSeq++
	in := state.Intent{ID: r.run.ID<<32 | r.intentSeq, Data: data}
	cursors := commit.Cursors
	commit.Cursors = nil
	taken := r.takeAcks(&commit)
	commit.Intent = &in
	if err := r.p.Store.Commit(ctx, commit); err != nil {
		r.giveBackAcks(taken)
		return state.Intent{}, nil, fmt.Errorf("commit state: %w", err)
	}
	return in, cursors, nil
}

// writeIntended is the second half of writeBatch with an intent: the
// sink write of a batch whose state and intent are committed. Written, the
// batch is acknowledged (its intent and cursors go with the next commit);
// failed, its records are marked as interrupted (recoverIntent).
func (r *runner) writeIntended(ctx context.Context, b *sink.Batch, rendered *cypherl.Rendered, in state.Intent, cursors map[string]string) (sink.Stats, error) {
	st, err := r.sinkWrite(ctx, b, rendered)
	if err != nil {
		r.interrupted(ctx, in)
		return st, err
	}
	r.ack(in.ID, cursors)
	return st, nil
}

// interrupted marks the records of a batch that is committed with its
// intent but not (or not wholly) in the graph as interrupted now; the next
// run would otherwise.
func (r *runner) interrupted(ctx context.Context, in state.Intent) {
	if err := r.recoverIntent(context.WithoutCancel(ctx), in); err != nil {
		r.log.Warn("marking an interrupted batch failed; the next run does it", slog.String("err", err.Error()))
	}
}

// ack records that the sink has the batch of intent id: the intent is
// removed and cursors stored by the next commit (takeAcks).
func (r *runner) ack(id int64, cursors map[string]string) {
	r.ackMu.Lock()
	defer r.ackMu.Unlock()
	r.acked = append(r.acked, id)
	if len(cursors) > 0 && r.ackCursors == nil {
		r.ackCursors = map[string]string{}
	}
	maps.Copy(r.ackCursors, cursors)
}

// sinkWrite writes a batch to the sink (rendered ahead when the sink
// renders: renderer).
func (r *runner) sinkWrite(ctx context.Context, b *sink.Batch, rendered *cypherl.Rendered) (sink.Stats, error) {
	if b.Len() == 0 {
		return sink.Stats{}, nil
	}
	if err := r.checkLock(ctx); err != nil {
		return sink.Stats{}, err
	}
	var st sink.Stats
	var err error
	if rs, ok := r.p.Sink.(renderer); ok && rendered != nil {
		st, err = rs.WriteRendered(ctx, rendered)
	} else {
		st, err = r.p.Sink.Write(ctx, b)
	}
	if err != nil {
		return st, fmt.Errorf("write batch: %w", err)
	}
	return st, nil
}

// checkLock makes sure the run still holds its pipeline's lock before it
// writes to the sink, when the store's locks can be lost
// (state.LockChecker): a run whose lock went with its Postgres session
// stops instead of writing beside the next holder.
func (r *runner) checkLock(ctx context.Context) error {
	lc, ok := r.p.Store.(state.LockChecker)
	if !ok {
		return nil
	}
	if err := lc.CheckLock(ctx, r.p.Name); err != nil {
		return fmt.Errorf("write batch: %w", err)
	}
	return nil
}

// renderer is a sink that renders a batch apart from writing it (the
// CYPHERL sink): the run renders a batch on its own goroutine, while the
// batch writer writes the previous one.
type renderer interface {
	Render(b *sink.Batch) (*cypherl.Rendered, error)
	WriteRendered(ctx context.Context, r *cypherl.Rendered) (sink.Stats, error)
}

// takeAcks moves the acknowledgements waiting for a commit into c: the
// acknowledged batches' intents are removed and their cursors stored (a
// cursor c already sets wins, being newer). It returns what it took, for
// giveBackAcks when the commit fails.
func (r *runner) takeAcks(c *state.Commit) takenAcks {
	r.ackMu.Lock()
	defer r.ackMu.Unlock()
	taken := takenAcks{ids: r.acked, cursors: r.ackCursors}
	c.IntentsDone = append(c.IntentsDone, r.acked...)
	if len(r.ackCursors) > 0 {
		merged := maps.Clone(r.ackCursors)
		maps.Copy(merged, c.Cursors)
		c.Cursors = merged
	}
	r.acked, r.ackCursors = nil, nil
	return taken
}

// takenAcks are the acknowledgements a commit took (takeAcks).
type takenAcks struct {
	ids     []int64
	cursors map[string]string
}

// giveBackAcks returns the acknowledgements of a commit that failed, so
// that a later commit (flushAcks at the latest) stores them: their
// batches are in the sink, and their intents would otherwise make the
// next run rewrite their records. Acknowledgements taken since are newer:
// their cursors win.
func (r *runner) giveBackAcks(t takenAcks) {
	if len(t.ids) == 0 && len(t.cursors) == 0 {
		return
	}
	r.ackMu.Lock()
	defer r.ackMu.Unlock()
	r.acked = append(t.ids, r.acked...)
	if len(t.cursors) > 0 {
		merged := maps.Clone(t.cursors)
		maps.Copy(merged, r.ackCursors)
		r.ackCursors = merged
	}
}

// flushAcks commits the acknowledgements still waiting, if any.
func (r *runner) flushAcks(ctx context.Context) error {
	c := state.Commit{Pipeline: r.p.Name}
	taken := r.takeAcks(&c)
	if len(c.IntentsDone) == 0 && len(c.Cursors) == 0 {
		return nil
	}
	if err := r.p.Store.Commit(ctx, c); err != nil {
		r.giveBackAcks(taken)
		return fmt.Errorf("commit state: %w", err)
	}
	return nil
}

// progress reports the run's advance after a batch.
func (r *runner) progress() {
	if r.p.Progress != nil {
		r.p.Progress(Progress{Records: r.counts().RecordsRead, Counts: *r.counts()})
	}
}

// reembedCache hides cached vectors (resync --reembed) but still stores new ones.
type reembedCache struct{ embed.Cache }

func (reembedCache) EmbeddingsGet(context.Context, string, []uint64) (map[uint64][]float32, error) {
	return map[uint64][]float32{}, nil
}

func (r *runner) cache() embed.Cache {
	if r.mode.Reembed {
		return reembedCache{r.p.Store}
	}
	return r.p.Store
}

// isRow reports whether stored props are a table row's node (not a document,
// a link-table edge or a mandatory link).
func isRow(sp recordProps) bool {
	return sp.Edge == nil && sp.Mandatory == nil && len(sp.DocIDs) == 0 && len(sp.Sections) == 0 && len(sp.Elements) == 0
}

// retireRow turns a deleted row's node into a placeholder: its properties
// and outgoing links go, incoming edges stay, and the node itself is deleted
// when nothing points to it (like the placeholders its links pointed to).
// Its id and PropPipeline stay: every statement after this one (the
// prune of its links, the delete of the orphan) matches the node by them
// (sink.CheckNodeProps).
func (r *runner) retireRow(b *sink.Batch, node sink.NodeRef, sp recordProps) {
	props := map[string]any{PropPlaceholder: true}
	for k := range sp.Node {
		if !sink.IdentityProperty(k) {
			props[k] = nil
		}
	}
	for _, v := range sp.Vectors {
		props[VectorProperty(v)] = nil
	}
	props["_synced_at"] = nil
	props[PropRowLex] = nil // out of the anchor's text index
	b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: node.Label, ID: node.ID, Props: props})
	r.linkOps(b, node, nil, sp.Links)
	b.DeleteOrphans = append(b.DeleteOrphans, node)
}
