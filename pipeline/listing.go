package pipeline

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"

	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

// The run of one source's listing (design.md, "One run, step by step",
// steps 3 to 8), as the methods of listingRun:
//
//   - Read: syncListing opens the listing (openListing: from which
//     cursor) and reads it a page at a time (readPages);
//   - compare: each page is matched with state (diff.Listing.Page, in
//     diff/listing.go, given the page as runner.diffPage) and each record
//     classified (record, runner.classify: where a record's content hash
//     is compared with the stored one);
//   - batch: what changed joins the pending batch (add), which flush hands
//     on;
//   - hold: while a complete listing could still trip the mass-delete
//     guard, flush holds batches instead (holding);
//   - write: submit prepares a batch (Map, Chunk, Embed: prepareBatch) and
//     hands it to the batch writer (writer.go), which commits state with
//     the batch's intent, writes the sink and acknowledges the batch and
//     its cursor (Write, Commit: runner.writeBatch);
//   - end: after a complete listing the guard rules (rule), what is held
//     is written, the unlisted records are deleted (deleteUnlisted) and
//     the listing's last cursor and config mark are committed
//     (commitCursors).
//
// docs/run.md walks through it.

// listing is what syncListing learned of a source's listing.
type listing struct {
	// listed are the keys it listed (records and skips) among those in
	// quarantine when the run began.
	listed   map[string]bool
	partial  bool // an incremental listing
	complete bool // read to its end
}

// listedKey notes a listed key that was in quarantine.
func (r *runner) listedKey(l *listing, source, key string) {
	if _, ok := r.q.prev[state.RecordRef{Source: source, Key: key}]; ok {
		if l.listed == nil {
			l.listed = map[string]bool{}
		}
		l.listed[key] = true
	}
}

// listingRun is the run of one source's listing (see above).
type listingRun struct {
	r    *runner
	src  sources.Source
	name string
	l    *listing
	// stored is the comparison of the listing with state. Its Partial is
	// set from the first page (compare).
	stored *diff.Listing
	// w writes the batches while the next ones are read and prepared.
	w *batchWriter
	// cursor is the source's stored cursor, mark its stored config mark
	// (configMark), from the cursor the listing is read from.
	cursor, mark, from string
	// first: no page read yet; unconfirmed: the listing's end is not
	// vouched for (sources.Page.EndUnconfirmed). (An incremental listing
	// is l.partial.)
	first, unconfirmed bool
	// lastCursor is the cursor of the last page read, prevCursor the one
	// before: the cursor a batch commits (flush).
	lastCursor, prevCursor string

	// pending is the batch being formed, with its document bytes.
	pending      []item
	pendingBytes int
	batchSize    int
	// moving are the keys records of the pending batch move from.
	moving map[string]bool
	// origins are the origins of unchanged records that state lacks;
	// reorder the new places of unchanged records that moved in the
	// listing.
	origins map[state.RecordRef]state.Origin
	reorder map[state.RecordRef]int64
	// h holds batches while the mass-delete guard could still trip.
	h hold
}

// syncListing reads a source's listing and writes what changed.
func (r *runner) syncListing(ctx context.Context, src sources.Source, l *listing) error {
	lr, err := r.openListing(ctx, src, l)
	if err != nil {
		return err
	}
	lr.w = r.startWriter(ctx)
	defer func() { _ = lr.w.stop() }()
	if done, err := lr.readPages(ctx); done || err != nil {
		return err
	}
	return lr.end(ctx)
}

// openListing starts the run of a source's listing: it reads the stored
// cursor and config mark, and chooses the cursor to read from.
func (r *runner) openListing(ctx context.Context, src sources.Source, l *listing) (*listingRun, error) {
	name := src.Name()
	cursor, err := r.p.Store.CursorGet(ctx, r.p.Name, name)
	if err != nil {
		return nil, fmt.Errorf("get cursor: %w", err)
	}
	mark, err := r.p.Store.CursorGet(ctx, r.p.Name, configCursor(name))
	if err != nil {
		return nil, fmt.Errorf("get config mark: %w", err)
	}
	lr := &listingRun{r: r, src: src, name: name, l: l, cursor: cursor, mark: mark, from: cursor, first: true,
		// The listing is compared with the stored records as two streams
		// (diff.Listing): a source that reports "not modified" reads nothing.
		stored:    diff.NewListing(r.p.Store, r.p.Name, name, sources.ChildMarker),
		batchSize: max(r.p.BatchSize, 1),
		moving:    map[string]bool{}, origins: map[state.RecordRef]state.Origin{}, reorder: map[state.RecordRef]int64{}}
	if r.mode.Full || r.mode.Reembed || mark != r.p.configMark() || r.quarantined(name) {
		// A resync lists everything, whatever the cursor says (a source
		// answering "not modified" would make it a no-op), and so does the
		// first run after the mapping changed: records that did not change
		// upstream must be mapped anew. A source with quarantined records
		// is listed in full too, so that they are retried.
		lr.from = sources.FullCursor(src, cursor)
	}
	return lr, nil
}

// readPages reads the listing a page at a time (read ahead by prefetch)
// and compares each with state. done is set when the run of the listing
// is over before its end (listingRun.end): the source reported "not
// modified", or the listing failed.
func (lr *listingRun) readPages(ctx context.Context) (done bool, err error) {
	r := lr.r
	read := func(c context.Context) iter.Seq2[*sources.Page, error] { return r.p.read(c, lr.src, lr.from) }
	for page, err := range prefetch(ctx, read, 2) {
		if err != nil {
			// A listing that ends early deletes nothing: what it held is
			// written whatever the guard would say.
			lr.h.released = true
		}
		if errors.Is(err, sources.ErrNotModified) {
			return true, lr.notModified(ctx, err)
		}
		if err != nil {
			// A failed or partial listing deletes nothing; batches already
			// committed stay committed (they were acknowledged by the sink).
			if ferr := lr.drain(ctx); ferr != nil {
				return true, errors.Join(fmt.Errorf("read: %w", err), ferr)
			}
			return true, fmt.Errorf("read: %w", err)
		}
		if err := lr.compare(ctx, page); err != nil {
			return true, err
		}
	}
	return false, nil
}

// notModified ends the run of a listing the source reported unchanged
// (sources.ErrNotModified): what is pending is written, and the cursor the
// source gave moves, without any record read.
func (lr *listingRun) notModified(ctx context.Context, err error) error {
	r := lr.r
	r.warn(sources.NotModifiedWarnings(err))
	r.log.Info("source not modified", slog.String("source", lr.name))
	if err := lr.drain(ctx); err != nil {
		return err
	}
	if c := sources.NotModifiedCursor(err); c != "" && c != lr.cursor {
		// Unchanged in content, not in form: the cursor moves, and the
		// next read compares with the upstream as it is written now.
		if err := r.p.Store.Commit(ctx, state.Commit{Pipeline: r.p.Name, Cursors: map[string]string{lr.name: c}}); err != nil {
			return fmt.Errorf("commit cursor: %w", err)
		}
	}
	return nil
}

// compare compares one page with state: deletions the source reports,
// then its records in listing order (record), then its skips and the
// parts it could not list.
func (lr *listingRun) compare(ctx context.Context, page *sources.Page) error {
	r, stored := lr.r, lr.stored
	if lr.first {
		// An incremental listing is matched by look-ups, not streamed.
		stored.Partial, lr.first = page.Partial, false
	}
	if page.Partial {
		lr.l.partial = true
	}
	lr.unconfirmed = page.EndUnconfirmed
	if len(page.Deleted) > 0 {
		// Deletions the source reports explicitly (an incremental
		// listing): applied after the records before them are written.
		if err := lr.drain(ctx); err != nil {
			return err
		}
		if err := r.deleteKeys(ctx, lr.name, stored, page.Deleted); err != nil {
			return err
		}
	}
	r.warn(page.Warnings)
	matches, froms, err := stored.Page(ctx, r.diffPage(page))
	if err != nil {
		return err
	}
	for i, rec := range page.Records {
		if err := lr.record(ctx, rec, matches[i], froms[i]); err != nil {
			return err
		}
	}
	// Skips after the page's records: a skipped duplicate must not hide
	// the record with the same key that was read.
	for _, sk := range page.Skipped {
		r.counts().RecordsSkipped++
		r.quarantineRecord(lr.name, sk.Key, state.StageRead, sk.Err)
		r.listedKey(lr.l, lr.name, sk.Key)
	}
	for _, u := range page.Unlisted {
		r.quarantineRecord(lr.name, u.Prefix, state.StageList, u.Err)
		stored.KeepPrefix(u.Prefix)
	}
	if len(lr.h.batches) == 0 {
		// The new keys of the batches committed by now: all but the last
		// writerDepth handed to the writer.
		stored.Prune(writerDepth)
	}
	lr.prevCursor, lr.lastCursor = lr.lastCursor, page.Cursor
	return nil
}

// diffPage is a page of the listing in the comparison's terms
// (diff.Page): its records' keys in listing order, its renames and skips,
// and the content hash of a record listed under a new key (contentHash),
// which the mass-delete guard counts as a rename of a gone record with the
// same content; not asked for when the guard is off.
func (r *runner) diffPage(pg *sources.Page) *diff.Page {
	dp := &diff.Page{Keys: make([]string, len(pg.Records)), Renamed: pg.Renamed}
	for i := range pg.Records {
		dp.Keys[i] = pg.Records[i].Key
	}
	for _, sk := range pg.Skipped {
		dp.Skipped = append(dp.Skipped, sk.Key)
	}
	if !r.guardOff() {
		dp.Content = func(i int) (uint64, bool) { return contentHash(pg.Records[i]) }
	}
	return dp
}

// batchKeys yields the keys of a batch's items, for diff.Listing.Formed.
func batchKeys(items []item) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := range items {
			if !yield(items[i].rec.Key) {
				return
			}
		}
	}
}

// record classifies one listed record against its match in state (m; fm
// the match of the key it moves from) and adds it to the pending batch
// unless it is unchanged.
func (lr *listingRun) record(ctx context.Context, rec sources.Record, m, fm diff.Match) error {
	r, name := lr.r, lr.name
	if lr.moving[rec.Key] {
		// A record moved in this batch comes back under its old key:
		// the move is written first.
		if err := lr.drain(ctx); err != nil {
			return err
		}
		clear(lr.moving)
	}
	if m.Dup {
		r.counts().RecordsSkipped++
		r.log.Warn("duplicate record key in one listing; keeping the first", slog.String("source", name), slog.String("key", rec.Key), slog.String("at", rec.Where))
		return nil
	}
	r.listedKey(lr.l, name, rec.Key)
	if err := fieldNamesValid(rec); err != nil {
		// A record no sink could write is quarantined alone; it is
		// listed, so its stored version stays.
		r.counts().RecordsSkipped++
		r.quarantineRecord(name, rec.Key, state.StageRead, err)
		return nil
	}
	r.counts().RecordsRead++
	// The record's content hash is compared with the stored one here.
	it, err := r.classify(name, rec, m, fm)
	if err != nil {
		return err
	}
	if r.limitBackoff(name, rec.Key, it.hash) && !r.mode.Reembed && !r.mode.Full {
		// It hit a limit with this content: it waits in
		// quarantine, unparsed, until the content changes or its
		// back-off is over.
		r.counts().RecordsSkipped++
		return nil
	}
	if lr.count(it, m) {
		return nil
	}
	return lr.add(ctx, it)
}

// count counts a classified record; skip says it is unchanged and not
// written: its origin and place, when they changed, are committed with
// the next flush.
func (lr *listingRun) count(it item, m diff.Match) (skip bool) {
	r := lr.r
	switch {
	case it.from != "":
		r.counts().RecordsRenamed++
		lr.moving[it.from] = true
	case it.class == diff.ClassNew:
		r.counts().RecordsNew++
	case it.class == diff.ClassChanged:
		r.counts().RecordsChanged++
	case it.class == diff.ClassUnchanged:
		r.counts().RecordsUnchanged++
		ref := state.RecordRef{Source: lr.name, Key: it.rec.Key}
		if m.Entry.Origin != stateOrigin(it.rec.Origin) {
			lr.origins[ref] = stateOrigin(it.rec.Origin)
		}
		if !r.mode.Full && !r.mode.Reembed {
			if m.Moved {
				lr.reorder[ref] = m.Ord
			}
			return true
		}
	}
	return false
}

// add adds a record to the pending batch, and flushes the batch once it
// is full (batch size, or maxBatchDocumentBytes of documents).
func (lr *listingRun) add(ctx context.Context, it item) error {
	lr.pending = append(lr.pending, it)
	if it.rec.Document != nil {
		lr.pendingBytes += len(it.rec.Document.Content)
	}
	if len(lr.pending) >= lr.batchSize || lr.pendingBytes >= maxBatchDocumentBytes {
		// The batch commits the cursor of the last page whose
		// records it completes, never this page's: the rest of
		// this page is not written yet.
		return lr.flush(ctx)
	}
	return nil
}

// holding reports whether batches are held, not written: while a complete
// listing could still trip the mass-delete guard, the guard rules before
// the first write, and a tripped guard leaves graph and state as they
// were. Once released (the guard cannot trip, the listing is partial or
// ended early, or the hold is full), the hold stays released.
func (lr *listingRun) holding(ctx context.Context) bool {
	h := &lr.h
	if h.released {
		return false
	}
	if lr.l.partial {
		h.released = true
		return false
	}
	loss, live, err := lr.stored.NetLoss(ctx)
	if err != nil || !lr.r.guardTrips(loss, live) {
		// (A failed count writes as if it had not tripped: the guard
		// rules again, exactly, before deleting.)
		h.released = true
	}
	return !h.released
}

// flush hands the pending records to the writer as a batch, after the
// batches held before it; while the guard is undecided it holds them
// (holding). Either way the comparison numbers the batch's new keys then
// (diff.Listing.Formed). The batch carries lastCursor: the cursor moves
// once the sink acknowledged the batch (writer.go, runner.ack).
func (lr *listingRun) flush(ctx context.Context) error {
	if err := lr.commitPlaces(ctx); err != nil {
		return err
	}
	if len(lr.pending) == 0 {
		return nil
	}
	if lr.holding(ctx) {
		return lr.hold(ctx)
	}
	if err := lr.writeHeld(ctx); err != nil {
		return err
	}
	lr.stored.Formed(batchKeys(lr.pending))
	err := lr.submit(ctx, lr.pending, lr.lastCursor)
	lr.pending, lr.pendingBytes = lr.pending[:0], 0
	return err
}

// commitPlaces commits the origins and places of unchanged records:
// records stored before their origin was kept get it, and unchanged
// records that moved their place, without being rewritten.
func (lr *listingRun) commitPlaces(ctx context.Context) error {
	if len(lr.origins) == 0 && len(lr.reorder) == 0 {
		return nil
	}
	r := lr.r
	if err := r.p.Store.Commit(ctx, state.Commit{Pipeline: r.p.Name, SetOrigins: lr.origins, Ords: lr.reorder}); err != nil {
		return fmt.Errorf("commit origins: %w", err)
	}
	lr.origins = map[state.RecordRef]state.Origin{}
	lr.reorder = map[state.RecordRef]int64{}
	return nil
}

// hold holds the pending batch: the mass-delete guard holds writes here.
// Past the hold's bounds, everything held is written.
func (lr *listingRun) hold(ctx context.Context) error {
	h := &lr.h
	h.batches = append(h.batches, heldBatch{items: slices.Clone(lr.pending), cursor: lr.lastCursor})
	h.bytes += lr.pendingBytes
	h.records += len(lr.pending)
	lr.stored.Formed(batchKeys(lr.pending))
	lr.pending, lr.pendingBytes = lr.pending[:0], 0
	if !h.full() {
		return nil
	}
	// Past its bounds the hold is written: new and changed
	// records are not deletions, and the guard still rules on
	// the whole listing before the first delete.
	lr.r.log.Info("mass-delete guard undecided past the hold's bounds; writing the records held",
		slog.String("source", lr.name), slog.Int("records", h.records), slog.Int("bytes", h.bytes))
	h.released = true
	return lr.writeHeld(ctx)
}

// writeHeld hands the held batches to the writer, in order.
func (lr *listingRun) writeHeld(ctx context.Context) error {
	batches := lr.h.batches
	lr.h.batches, lr.h.bytes, lr.h.records = nil, 0, 0
	for _, hb := range batches {
		if err := lr.submit(ctx, hb.items, hb.cursor); err != nil {
			return err
		}
	}
	return nil
}

// submit prepares a batch (Map, Chunk, Embed: prepareBatch, which may
// split it) and hands it to the writer, which writes it while the next
// batch is read and prepared.
func (lr *listingRun) submit(ctx context.Context, items []item, cursor string) error {
	for {
		p, rest, err := lr.r.prepareBatch(ctx, lr.name, items, cursor)
		if err != nil {
			return errors.Join(err, lr.w.wait())
		}
		if err := lr.w.submit(p); err != nil || len(rest) == 0 {
			return err
		}
		items = rest
	}
}

// drain flushes and waits until everything before is written: before
// deletions, which follow the records read before them.
func (lr *listingRun) drain(ctx context.Context) error {
	if err := lr.flush(ctx); err != nil {
		return err
	}
	return lr.w.wait()
}

// end ends the run of a listing read to its end: the last batch is
// written, the mass-delete guard rules (a complete listing), what it held
// is written, the records the listing no longer has are deleted, and the
// cursors move.
func (lr *listingRun) end(ctx context.Context) error {
	lr.l.complete = true
	finalCursor := lr.lastCursor
	if !lr.l.partial {
		// A complete listing's last cursor is committed only after its
		// deletions: if they fail (the mass-delete guard), the next run
		// lists everything again instead of moving on without them.
		lr.lastCursor = lr.prevCursor
	}
	if err := lr.drain(ctx); err != nil {
		return err
	}
	gone, err := lr.rule(ctx)
	if err != nil {
		return err
	}
	lr.h.released = true
	if err := lr.writeHeld(ctx); err != nil {
		return err
	}
	if err := lr.w.wait(); err != nil {
		return err
	}
	if err := lr.deleteUnlisted(ctx, gone); err != nil {
		return err
	}
	return lr.commitCursors(ctx, finalCursor)
}

// rule lets the mass-delete guard rule on a complete listing, before
// anything held is written (runner.rule), and returns what it deletes. A
// partial listing deletes nothing here.
func (lr *listingRun) rule(ctx context.Context) (gone []string, err error) {
	if lr.l.partial {
		return nil, nil
	}
	return lr.r.rule(ctx, lr.stored, lr.unconfirmed)
}

// rule lets the mass-delete guard rule on a complete listing compared
// with state (stored): what it did not list (gone, the deletions), net of
// renames, of the live records, and whether its end was vouched for
// (unconfirmed: see unconfirmedGuard). A run and a plan judge alike; the
// run deletes gone only when the guard passes. gone is returned with the
// guard's error too.
func (r *runner) rule(ctx context.Context, stored *diff.Listing, unconfirmed bool) (gone []string, err error) {
	if gone, err = stored.Unlisted(ctx); err != nil {
		return nil, err
	}
	live, err := stored.Live(ctx)
	if err != nil {
		return gone, err
	}
	loss, err := r.netLoss(ctx, stored, gone, live)
	if err != nil {
		return gone, err
	}
	if err := r.guard(loss, live); err != nil {
		return gone, err
	}
	return gone, r.unconfirmedGuard(unconfirmed, len(gone))
}

// deleteUnlisted deletes, once every record read is written, what a
// complete listing did not list (gone, which the guard passed: rule), or
// the stale children of a partial listing's records.
func (lr *listingRun) deleteUnlisted(ctx context.Context, gone []string) error {
	if lr.l.partial {
		// An incremental listing names what changed, not everything that
		// exists: absent keys are not deletions — except the children of a
		// listed record (its attachments), which the listing lists whole.
		return lr.r.deleteStaleChildren(ctx, lr.name, lr.stored)
	}
	return lr.r.deleteStored(ctx, lr.name, gone)
}

// commitCursors moves the listing's cursor to the last page's (when it
// changed) and its config mark, with the acknowledgements waiting: the
// last cursor of a complete listing moves here, after its deletions.
func (lr *listingRun) commitCursors(ctx context.Context, finalCursor string) error {
	r := lr.r
	done := map[string]string{}
	// (Batches of a listing read from a reset cursor committed that one.)
	if finalCursor != "" && (finalCursor != lr.cursor || lr.from != lr.cursor) {
		done[lr.name] = finalCursor
	}
	if m := r.p.configMark(); m != lr.mark {
		done[configCursor(lr.name)] = m
	}
	c := state.Commit{Pipeline: r.p.Name, Cursors: done}
	taken := r.takeAcks(&c)
	if len(c.Cursors) > 0 || len(c.IntentsDone) > 0 {
		if err := r.p.Store.Commit(ctx, c); err != nil {
			r.giveBackAcks(taken)
			return fmt.Errorf("commit cursor: %w", err)
		}
	}
	return nil
}

// hold keeps a complete listing's batches while the mass-delete guard
// could still trip (listingRun.holding).
type hold struct {
	batches  []heldBatch
	bytes    int // document bytes held
	records  int
	released bool
}

type heldBatch struct {
	items  []item
	cursor string
}

// Bounds of a hold: past either, with the guard still undecided, the
// records held are written (they are new or changed, not deleted) and the
// guard rules on the whole listing before the first delete. Variables so
// that tests can lower them.
var (
	maxHeldBytes   = 64 << 20
	maxHeldRecords = 100000
)

// full reports whether the hold is past its bounds.
func (h *hold) full() bool { return h.bytes > maxHeldBytes || h.records > maxHeldRecords }
