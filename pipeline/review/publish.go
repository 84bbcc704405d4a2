package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/state"
)

// Reasons kgsync gives in review_reason.
const (
	reasonConflict = "The parsed text changed since this correction was made: corrected_from holds the parsed text then, parsed_text the text now. " +
		"The correction still applies; check it against the new text, then untick needs_review."
	reasonMissing = "This element is no longer in the document (it was at %s). Its expert input is kept here and applies to nothing; " +
		"copy it to the element that replaced it, or delete this row to drop it."
	reasonDeleted = "The document was deleted. This row is kept for its expert input; delete it to drop the input."
)

// Apply overlays the expert input kept for document docID on its parsed
// tree (root, as chunker.Parse returned it): corrected texts replace
// elements' texts (a section's title), excluded elements leave the tree.
// It matches stored rows to the parsed elements (match), so that input
// follows an element that was renumbered or moved and a changed element's
// correction is kept and flagged. A document whose last publish did not
// finish is first reconciled with the rows Grist has. The returned Applied
// is given to Publish after the document's batch is committed.
func (r *Review) Apply(ctx context.Context, source, key, docID string, root *chunker.Element) (*Applied, error) {
	p := r.cfg.Pipeline
	got, err := r.cfg.Store.ReviewElements(ctx, p, []string{docID})
	if err != nil {
		return nil, err
	}
	docs, err := r.cfg.Store.ReviewDocuments(ctx, p, []string{docID})
	if err != nil {
		return nil, err
	}
	a := &Applied{Source: source, Key: key, DocID: docID, stored: map[string]*elem{}}
	if d, ok := docs[docID]; ok {
		a.doc = &d
	} else {
		a.doc = &state.ReviewDocument{Doc: docID}
	}
	stored := make([]*elem, 0, len(got[docID]))
	for _, se := range got[docID] {
		e, err := decodeElem(se)
		if err != nil {
			return nil, err
		}
		stored = append(stored, &e)
	}
	if a.doc.Pending || r.Pending(docID) {
		if rs, dups, err := r.reconcile(ctx, a.doc, stored); err != nil {
			r.log.Warn("review: reconcile with Grist failed; publishing from state", "document", docID, "err", err)
		} else {
			stored, a.dups = rs, dups
		}
	}
	for _, e := range stored {
		a.stored[e.Element] = e
	}
	a.elements, a.gone = match(listElements(docID, root), stored, r.sticky)
	a.overlay()
	a.noise = root.Noise
	return a, nil
}

// reconcile brings stored in line with the rows Grist holds for doc, after
// a publish that may have written rows state does not know (its answer
// lost) or lost rows (deleted meanwhile): it adopts rows of known elements,
// takes the expert input of rows state lost, and returns the duplicates to
// delete. Every row is rewritten afterwards.
func (r *Review) reconcile(ctx context.Context, doc *state.ReviewDocument, stored []*elem) ([]*elem, []int64, error) {
	if doc.RowID == 0 {
		rows, err := r.w.Records(ctx, r.cfg.DocumentsTable, map[string][]any{ColDocument: {doc.Doc}})
		if err != nil {
			return nil, nil, err
		}
		if len(rows) > 0 {
			doc.RowID = rows[0].ID
		}
	}
	byRow := map[int64]*elem{}
	byElem := map[string]*elem{}
	for _, e := range stored {
		e.d.Pub = 0
		if e.RowID != 0 {
			byRow[e.RowID] = e
		}
		byElem[e.Element] = e
	}
	if doc.RowID == 0 {
		for _, e := range stored {
			if e.RowID != 0 {
				e.RowID, e.d.Push = 0, e.d.expert()
			}
		}
		return stored, nil, nil
	}
	rows, err := r.w.Records(ctx, r.cfg.ElementsTable, map[string][]any{ColDoc: {doc.RowID}})
	if err != nil {
		return nil, nil, err
	}
	var dups []int64
	present := map[int64]bool{}
	for _, row := range rows {
		present[row.ID] = true
		if _, ok := byRow[row.ID]; ok {
			continue
		}
		in := readInput(row.Fields)
		e, known := byElem[in.Element]
		hasInput := in.Corrected != "" || in.Exclude || len(in.With) > 0 || in.Note != ""
		switch {
		case known && e.RowID == 0:
			e.RowID = row.ID
			byRow[row.ID] = e
			take(e, in)
		case known && hasInput && !e.d.expert():
			dups = append(dups, e.RowID)
			delete(byRow, e.RowID)
			e.RowID = row.ID
			byRow[row.ID] = e
			take(e, in)
		case !known && hasInput && in.Element != "":
			ne := &elem{ReviewElement: state.ReviewElement{Doc: doc.Doc, Element: in.Element, RowID: row.ID}}
			take(ne, in)
			stored = append(stored, ne)
			byElem[in.Element] = ne
			byRow[row.ID] = ne
		case hasInput:
			r.warn("review: Elements row %d duplicates element %q with expert input of its own; kgsync keeps row %d and leaves this one", row.ID, in.Element, e.RowID)
		default:
			dups = append(dups, row.ID)
		}
	}
	for _, e := range stored {
		if e.RowID != 0 && !present[e.RowID] {
			e.RowID, e.d.Push = 0, e.d.expert()
		}
	}
	slices.Sort(dups)
	return stored, dups, nil
}

// expertCells are an element's expert columns as Grist stores them, for
// rows kgsync writes on the expert's behalf (Push). Grist computes the
// trigger columns corrected_by and corrected_at of such a write as
// kgsync's API user, now (stampCells gives them back).
func expertCells(d *data, cells map[string]any) {
	cells[ColCorrectedText] = d.Corrected
	cells[ColExclude] = d.Exclude
	if len(d.With) > 0 {
		l := []any{"L"}
		for _, id := range d.With {
			l = append(l, id)
		}
		cells[ColMandatoryWith] = l
	} else {
		cells[ColMandatoryWith] = nil
	}
	cells[ColNote] = d.Note
}

// stampCells are corrected_by and corrected_at as last read back, or nil
// when Grist had not set them: written in a request of their own after a
// row whose expert cells kgsync wrote (plan.stamps), since Grist computes
// them again in the write itself whatever it is given: a new record's
// (grist-core sandbox/grist/useractions.py doBulkAddOrReplace invalidates
// every column, and they depend on the expert's columns), and an update's
// when the value given is the one the cell has (trimmed, engine.py
// trim_update_action) and an expert column changes. A value that changes
// the cell is kept (docactions.py BulkUpdateRecord: prevent_recalc).
func stampCells(d *data) map[string]any {
	cells := map[string]any{}
	if d.By != "" {
		cells[ColCorrectedBy] = d.By
	}
	if at, err := time.Parse(time.RFC3339Nano, d.At); err == nil {
		cells[ColCorrectedAt] = float64(at.UnixNano()) / 1e9 // DateTime: seconds
	}
	if len(cells) == 0 {
		return nil
	}
	return cells
}

func cellsHash(cells map[string]any) uint64 {
	h, err := diff.Hash(cells)
	if err != nil {
		panic(fmt.Sprintf("review: hash cells: %v", err)) // strings, ints and bools only
	}
	return h
}

// rowWrite is one Elements row to add or update.
type rowWrite struct {
	e     *elem
	cells map[string]any
}

// plan is what one Publish writes.
type plan struct {
	adds    []rowWrite
	patches []grist.Row
	deletes []int64
	// stamps are the rows of adds and patches whose expert cells kgsync
	// writes: their stampCells follow (writeStamps).
	stamps []*elem
	commit state.ReviewCommit
}

// elementRows plans the Elements rows of a (its Documents row is docRow):
// a row per parsed element (elementRow), the rows no element took
// (goneRows), and the deletion of the duplicates reconcile found.
func (r *Review) elementRows(a *Applied, docRow int64, pl *plan) {
	for _, as := range a.elements {
		r.elementRow(a, as, docRow, pl)
	}
	r.goneRows(a, docRow, pl)
	pl.deletes = append(pl.deletes, a.dups...)
}

// elementRow plans the row of one parsed element and the row (stored or
// new) assigned to it: the row takes the element's id, place and hash; its
// cells are written when their hash (Pub) changed or kgsync writes the
// expert's columns on their behalf (Push), and needs_review is set when a
// correction's parsed text changed (a conflict) and cleared when kgsync
// had set it and the conflict is gone.
func (r *Review) elementRow(a *Applied, as assignment, docRow int64, pl *plan) {
	p, e := as.p, as.row
	if e == nil {
		e = &elem{ReviewElement: state.ReviewElement{Doc: a.DocID, Element: p.ID}}
	}
	if e.Element != p.ID {
		pl.commit.DeleteElements = append(pl.commit.DeleteElements, state.ReviewRef{Doc: e.Doc, Element: e.Element})
		e.Element = p.ID
	}
	e.d.Of = ""
	wasMissing := e.d.Status != ""
	e.d.Status, e.d.Kind, e.d.Pos, e.d.Parent, e.d.Parsed = "", p.Kind, p.Pos, p.Parent, p.Hash
	e.d.Address = p.Citation
	if e.d.Address == "" {
		e.d.Address = strings.TrimPrefix(p.ID, a.DocID+chunker.PathSep)
	}
	if e.d.expert() && e.d.BaseText == "" && e.d.Base == p.Hash {
		e.d.BaseText = p.Text
	}
	c := e.d.Corrected != "" && e.d.Base != 0 && e.d.Base != p.Hash
	reason, from := "", ""
	if c {
		reason, from = reasonConflict, e.d.BaseText
	}
	chunks := strings.Join(a.chunks[p.ID], " ")
	cells := map[string]any{
		ColElement: p.ID, ColDoc: docRow, ColKind: p.Kind, ColAddress: e.d.Address, ColHeadingPath: p.Heading,
		ColOrder: p.Order, ColParsedText: p.Text, ColChunk: chunks, ColElementStatus: StatusCurrent,
		ColReviewReason: reason, ColCorrectedFrom: from,
	}
	h := cellsHash(cells)
	flag := e.d.Flag
	switch {
	case c && !e.d.Flag:
		flag = true
		r.mu.Lock()
		r.stats.Conflicts++
		r.mu.Unlock()
	case !c && e.d.Flag && (e.d.Reason != "" || wasMissing):
		flag = false
	}
	if e.d.Push || e.RowID == 0 && e.d.expert() {
		pl.stamps = append(pl.stamps, e)
	}
	if e.d.Push {
		expertCells(&e.d, cells)
	}
	switch {
	case e.RowID == 0:
		cells[ColNeedsReview] = flag
		expertCells(&e.d, cells) // empty unless kept input
		pl.adds = append(pl.adds, rowWrite{e: e, cells: cells})
	case h != e.d.Pub || e.d.Push:
		pl.patches = append(pl.patches, grist.Row{ID: e.RowID, Fields: cells})
	}
	if e.RowID != 0 && flag != e.d.Flag {
		pl.patches = append(pl.patches, grist.Row{ID: e.RowID, Fields: map[string]any{ColNeedsReview: flag}})
	}
	e.d.Pub, e.d.Reason, e.d.Flag, e.d.Push = h, reason, flag, false
	pl.commit.Elements = append(pl.commit.Elements, e.encode())
}

// goneRows plans the rows of a that no element took: deleted without
// expert input (deleteRow), kept and marked missing with it, under a key of
// their own so that the element that took their id keeps it.
func (r *Review) goneRows(a *Applied, docRow int64, pl *plan) {
	// Keys a missing row must not take: the elements' ids and the stored
	// rows' keys.
	used := map[string]bool{}
	for _, as := range a.elements {
		used[as.p.ID] = true
	}
	for k := range a.stored {
		used[k] = true
	}
	for _, e := range a.gone {
		used[e.Element] = true
	}
	for _, e := range a.gone {
		if !r.sticky(e) {
			pl.deleteRow(e)
			continue
		}
		if e.d.Of == "" {
			// Keyed apart from the element that may take its id.
			pl.commit.DeleteElements = append(pl.commit.DeleteElements, state.ReviewRef{Doc: e.Doc, Element: e.Element})
			e.d.Of = e.Element
			e.Element = missingKey(e.Element, used)
			used[e.Element] = true
		}
		r.keepGone(e, StatusMissing, fmt.Sprintf(reasonMissing, e.d.Address), docRow, pl)
		a.Missing++
	}
}

// deleteRow plans the deletion of a row without expert input whose element
// is gone: its Grist row, if it has one, and its state.
func (pl *plan) deleteRow(e *elem) {
	if e.RowID != 0 {
		pl.deletes = append(pl.deletes, e.RowID)
	}
	pl.commit.DeleteElements = append(pl.commit.DeleteElements, state.ReviewRef{Doc: e.Doc, Element: e.Element})
}

// keepGone plans the row of an element with expert input that is no
// longer in its document (status missing) or whose document was deleted.
func (r *Review) keepGone(e *elem, status, reason string, docRow int64, pl *plan) {
	if e.d.Status != status {
		r.mu.Lock()
		r.stats.Missing++
		r.mu.Unlock()
	}
	e.d.Status = status
	cells := map[string]any{ColElementStatus: status, ColReviewReason: reason}
	h := cellsHash(cells)
	switch {
	case e.RowID == 0:
		cells[ColElement], cells[ColDoc], cells[ColKind], cells[ColAddress] = e.id(), docRow, e.d.Kind, e.d.Address
		cells[ColParsedText], cells[ColCorrectedFrom], cells[ColNeedsReview] = e.d.BaseText, e.d.BaseText, true
		expertCells(&e.d, cells)
		pl.adds = append(pl.adds, rowWrite{e: e, cells: cells})
		pl.stamps = append(pl.stamps, e)
	case h != e.d.Pub || !e.d.Flag:
		pl.patches = append(pl.patches, grist.Row{ID: e.RowID, Fields: map[string]any{ColElementStatus: status, ColReviewReason: reason, ColNeedsReview: true}})
	}
	e.d.Pub, e.d.Reason, e.d.Flag, e.d.Push = h, reason, true, false
	pl.commit.Elements = append(pl.commit.Elements, e.encode())
}

// docCells are a document's Documents row.
func (r *Review) docCells(a *Applied, now float64) map[string]any {
	path := a.info.Path
	if path == "" {
		path = a.Key
	}
	return map[string]any{
		ColDocument: a.DocID, ColSource: a.Source, ColPath: path, ColTitle: a.info.Title, ColFormat: a.info.Format,
		ColSize: a.info.Size, ColContentHash: a.info.ContentHash, ColLastSynced: now,
		ColElements: int64(len(a.elements)), ColChunks: int64(a.info.Chunks), ColCorrections: int64(a.Corrections),
		ColExcluded: int64(len(a.Excluded)), ColConflicts: int64(a.Conflicts + a.Missing), ColWarnings: warnings(a),
		ColStatus: StatusCurrent,
	}
}

// warnings are a document's parse warnings: unresolved references and
// the text the parser left out as noise (chunker.Element.Noise).
func warnings(a *Applied) string {
	var parts []string
	if n := len(a.info.Unresolved); n > 0 {
		ex := a.info.Unresolved[:min(n, 5)]
		parts = append(parts, fmt.Sprintf("%d unresolved references (%s)", n, strings.Join(ex, "; ")))
	}
	if len(a.noise) > 0 {
		by := map[string]int{}
		for _, n := range a.noise {
			by[n.Reason]++
		}
		var list []string
		for _, k := range slices.Sorted(maps.Keys(by)) {
			list = append(list, fmt.Sprintf("%d %s", by[k], k))
		}
		parts = append(parts, "left out as noise: "+strings.Join(list, ", "))
	}
	return strings.Join(parts, "; ")
}

// docMeta is a ReviewDocument's Data: the document's record, and whether
// it is being deleted.
type docMeta struct {
	Source  string `json:"source,omitempty"`
	Key     string `json:"key,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
}

func decodeMeta(b []byte) docMeta {
	var m docMeta
	_ = json.Unmarshal(b, &m)
	return m
}

func encodeMeta(m docMeta) []byte {
	b, _ := json.Marshal(m)
	return b
}

// Prepare marks a batch's documents pending before the batch's graph
// write and state commit: a process that dies before Publish finished
// leaves them pending, so the next run reprocesses and publishes them.
func (r *Review) Prepare(ctx context.Context, batch []*Applied) error {
	c := state.ReviewCommit{Pipeline: r.cfg.Pipeline}
	for _, a := range batch {
		if a.doc.Pending {
			continue
		}
		a.doc.Pending = true
		a.doc.Data = encodeMeta(docMeta{Source: a.Source, Key: a.Key})
		c.Documents = append(c.Documents, *a.doc)
	}
	if len(c.Documents) == 0 {
		return nil
	}
	return r.cfg.Store.ReviewCommit(ctx, c)
}

// PrepareDeleted marks documents about to be deleted (docIDs, with the
// keys of their records in source) pending deletion before the graph
// write: the next run's Begin finishes a deletion a dead process left, or
// publishes the document again when its record turns out to be kept.
func (r *Review) PrepareDeleted(ctx context.Context, source string, keys, docIDs []string) error {
	if len(docIDs) == 0 {
		return nil
	}
	docs, err := r.cfg.Store.ReviewDocuments(ctx, r.cfg.Pipeline, docIDs)
	if err != nil {
		return err
	}
	c := state.ReviewCommit{Pipeline: r.cfg.Pipeline}
	for i, id := range docIDs {
		d, ok := docs[id]
		if !ok {
			continue
		}
		d.Pending = true
		d.Data = encodeMeta(docMeta{Source: source, Key: keys[i], Deleted: true})
		c.Documents = append(c.Documents, d)
	}
	if len(c.Documents) == 0 {
		return nil
	}
	return r.cfg.Store.ReviewCommit(ctx, c)
}

// Publish writes the Grist rows of a batch's documents after the batch was
// committed: only rows whose cells changed are written (new rows with one
// POST per 500 rows or 1 MB, changed ones with PATCH, gone ones with a
// delete), and the review state is committed once Grist has acknowledged
// them. A document whose publish fails is marked pending and written again
// (reconciled first) on the next run; the error is returned for the run's
// warnings, the graph is not affected.
func (r *Review) Publish(ctx context.Context, batch []*Applied) error {
	if len(batch) == 0 {
		return nil
	}
	err := r.publish(ctx, batch)
	if err == nil {
		return nil
	}
	r.refusedColumn(ctx, err)
	c := state.ReviewCommit{Pipeline: r.cfg.Pipeline}
	r.mu.Lock()
	for _, a := range batch {
		d := *a.doc
		d.Pending = true
		c.Documents = append(c.Documents, d)
		r.pending[a.DocID] = true
	}
	r.mu.Unlock()
	if cerr := r.cfg.Store.ReviewCommit(context.WithoutCancel(ctx), c); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return fmt.Errorf("review: publish to Grist: %w", err)
}

// refusedColumn adds back the review columns when Grist refused a write
// for a column the table no longer has (removed since the read-back, or a
// Documents column, which the read-back does not read), so that the next
// batches and runs write again; the refused batch stays pending.
func (r *Review) refusedColumn(ctx context.Context, err error) {
	table, col, ok := invalidColumn(err)
	if !ok || ctx.Err() != nil {
		return
	}
	_ = r.reinstall(ctx, table, col, "is gone from the Grist document (Grist refused a write naming it: the documents of that write are written on the next run)")
}

// publish is Publish's work, in stages: the write-ahead (writeAhead), the
// Documents rows (publishDocuments; elements refer to them), the Elements
// rows planned (elementRows) and written (writeElementRows), then the
// review state committed with the documents no longer pending.
func (r *Review) publish(ctx context.Context, batch []*Applied) error {
	if err := r.ensure(ctx); err != nil {
		return err
	}
	now := float64(r.cfg.Now().UnixMilli()) / 1000
	if err := r.writeAhead(ctx, batch); err != nil {
		return err
	}
	if err := r.publishDocuments(ctx, batch, now); err != nil {
		return err
	}
	pl := &plan{commit: state.ReviewCommit{Pipeline: r.cfg.Pipeline}}
	for _, a := range batch {
		r.elementRows(a, a.doc.RowID, pl)
	}
	if err := r.writeElementRows(ctx, pl); err != nil {
		return err
	}
	r.mu.Lock()
	r.stats.RowsAdded += len(pl.adds)
	r.stats.RowsUpdated += len(pl.patches)
	r.stats.RowsDeleted += len(pl.deletes)
	r.mu.Unlock()
	for _, a := range batch {
		d := *a.doc
		d.Pending = false
		d.Data = encodeMeta(docMeta{Source: a.Source, Key: a.Key})
		pl.commit.Documents = append(pl.commit.Documents, d)
	}
	pl.commit.DeleteElements = dedupeRefs(pl.commit.DeleteElements, pl.commit.Elements)
	if err := r.cfg.Store.ReviewCommit(ctx, pl.commit); err != nil {
		return err
	}
	r.mu.Lock()
	for _, a := range batch {
		delete(r.pending, a.DocID)
	}
	r.mu.Unlock()
	return nil
}

// writeAhead marks the batch's documents pending in state before any row
// is written: a batch that adds or deletes rows is pending until its state
// is committed, so that a crash in between reconciles.
func (r *Review) writeAhead(ctx context.Context, batch []*Applied) error {
	ahead := state.ReviewCommit{Pipeline: r.cfg.Pipeline}
	for _, a := range batch {
		if !a.doc.Pending {
			d := *a.doc
			d.Pending = true
			ahead.Documents = append(ahead.Documents, d)
		}
	}
	if len(ahead.Documents) == 0 {
		return nil
	}
	return r.cfg.Store.ReviewCommit(ctx, ahead)
}

// publishDocuments adds the Documents rows of the batch's new documents
// (their row ids go to a.doc, also those added before an error) and
// updates the others' (docCells at now).
func (r *Review) publishDocuments(ctx context.Context, batch []*Applied, now float64) error {
	var newDocs []map[string]any
	var newAt []*Applied
	var docPatches []grist.Row
	for _, a := range batch {
		cells := r.docCells(a, now)
		if a.doc.RowID == 0 {
			newDocs = append(newDocs, cells)
			newAt = append(newAt, a)
		} else {
			docPatches = append(docPatches, grist.Row{ID: a.doc.RowID, Fields: cells})
		}
	}
	if len(newDocs) > 0 {
		ids, err := r.w.AddRecords(ctx, r.cfg.DocumentsTable, newDocs)
		for i, id := range ids {
			newAt[i].doc.RowID = id
		}
		if err != nil {
			return err
		}
	}
	return r.w.UpdateRecords(ctx, r.cfg.DocumentsTable, docPatches)
}

// writeElementRows writes pl's Elements rows: the adds (addElementRows),
// the patches, the stamps (writeStamps), then the deletes (sorted, each
// once).
func (r *Review) writeElementRows(ctx context.Context, pl *plan) error {
	if err := r.addElementRows(ctx, pl); err != nil {
		return err
	}
	if err := r.w.UpdateRecords(ctx, r.cfg.ElementsTable, pl.patches); err != nil {
		return err
	}
	if err := r.writeStamps(ctx, pl); err != nil {
		return err
	}
	sort.Slice(pl.deletes, func(i, j int) bool { return pl.deletes[i] < pl.deletes[j] })
	return r.w.DeleteRecords(ctx, r.cfg.ElementsTable, slices.Compact(pl.deletes))
}

// addElementRows adds pl's new Elements rows. Each row's id goes to its
// elem (also those added before an error) and, once all are added, to the
// element in pl.commit, which holds the elements as planned.
func (r *Review) addElementRows(ctx context.Context, pl *plan) error {
	if len(pl.adds) == 0 {
		return nil
	}
	rows := make([]map[string]any, len(pl.adds))
	for i, w := range pl.adds {
		rows[i] = w.cells
	}
	ids, err := r.w.AddRecords(ctx, r.cfg.ElementsTable, rows)
	for i, id := range ids {
		pl.adds[i].e.RowID = id
	}
	if err != nil {
		return err
	}
	byKey := map[state.ReviewRef]int64{}
	for _, w := range pl.adds {
		byKey[state.ReviewRef{Doc: w.e.Doc, Element: w.e.Element}] = w.e.RowID
	}
	for i, e := range pl.commit.Elements {
		if id, ok := byKey[state.ReviewRef{Doc: e.Doc, Element: e.Element}]; ok {
			pl.commit.Elements[i].RowID = id
		}
	}
	return nil
}

// writeStamps gives the rows of pl.stamps, once written, their
// corrected_by and corrected_at as read back (stampCells).
func (r *Review) writeStamps(ctx context.Context, pl *plan) error {
	var rows []grist.Row
	for _, e := range pl.stamps {
		if cells := stampCells(&e.d); cells != nil {
			rows = append(rows, grist.Row{ID: e.RowID, Fields: cells})
		}
	}
	return r.w.UpdateRecords(ctx, r.cfg.ElementsTable, rows)
}

// dedupeRefs drops the deletions of keys that are upserted too (an element
// moved onto the id of another that left).
func dedupeRefs(del []state.ReviewRef, up []state.ReviewElement) []state.ReviewRef {
	keep := map[state.ReviewRef]bool{}
	for _, e := range up {
		keep[state.ReviewRef{Doc: e.Doc, Element: e.Element}] = true
	}
	out := del[:0]
	seen := map[state.ReviewRef]bool{}
	for _, r := range del {
		if !keep[r] && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// Deleted handles documents whose files are gone: their rows without
// expert input are deleted from Grist, those with it are kept and marked
// (status "document deleted", needs_review), with the document's row; a
// document left with no such row leaves Grist and state. A failure leaves
// the documents pending deletion, retried by the next run's Begin.
func (r *Review) Deleted(ctx context.Context, docIDs []string) error {
	if len(docIDs) == 0 {
		return nil
	}
	err := r.deleted(ctx, docIDs)
	if err == nil {
		return nil
	}
	r.refusedColumn(ctx, err)
	// The documents stay pending deletion (PrepareDeleted): the next
	// run's Begin retries.
	return fmt.Errorf("review: document deletion in Grist: %w", err)
}

// deleted is Deleted's work: the rows planned (planDeleted), the Elements
// rows written, then the Documents rows, then the review state.
func (r *Review) deleted(ctx context.Context, docIDs []string) error {
	p := r.cfg.Pipeline
	docs, err := r.cfg.Store.ReviewDocuments(ctx, p, docIDs)
	if err != nil {
		return err
	}
	els, err := r.cfg.Store.ReviewElements(ctx, p, docIDs)
	if err != nil {
		return err
	}
	if len(docs) == 0 && len(els) == 0 {
		return nil
	}
	if err := r.ensure(ctx); err != nil {
		return err
	}
	pl := &plan{commit: state.ReviewCommit{Pipeline: p}}
	docDeletes, docPatches, err := r.planDeleted(docIDs, docs, els, pl)
	if err != nil {
		return err
	}
	if err := r.addElementRows(ctx, pl); err != nil {
		return err
	}
	if err := r.w.UpdateRecords(ctx, r.cfg.ElementsTable, pl.patches); err != nil {
		return err
	}
	if err := r.writeStamps(ctx, pl); err != nil {
		return err
	}
	if err := r.w.DeleteRecords(ctx, r.cfg.ElementsTable, pl.deletes); err != nil {
		return err
	}
	if err := r.w.UpdateRecords(ctx, r.cfg.DocumentsTable, docPatches); err != nil {
		return err
	}
	if err := r.w.DeleteRecords(ctx, r.cfg.DocumentsTable, docDeletes); err != nil {
		return err
	}
	r.mu.Lock()
	r.stats.RowsUpdated += len(pl.patches)
	r.stats.RowsDeleted += len(pl.deletes)
	r.mu.Unlock()
	return r.cfg.Store.ReviewCommit(ctx, pl.commit)
}

// planDeleted plans, into pl, the rows of the deleted documents docIDs
// (docs and els as state has them): rows without expert input go
// (deleteRow), rows with it are kept and marked (keepGone). A document
// that keeps rows has its Documents row marked deleted (docPatches) and
// stays in state, no longer pending; one that keeps none leaves Grist
// (docDeletes) and state.
func (r *Review) planDeleted(docIDs []string, docs map[string]state.ReviewDocument, els map[string][]state.ReviewElement,
	pl *plan,
) (docDeletes []int64, docPatches []grist.Row, err error) {
	for _, id := range docIDs {
		d, hasDoc := docs[id]
		kept := 0
		for _, se := range els[id] {
			e, err := decodeElem(se)
			if err != nil {
				return nil, nil, err
			}
			if !r.sticky(&e) {
				pl.deleteRow(&e)
				continue
			}
			kept++
			r.keepGone(&e, StatusDeleted, reasonDeleted, d.RowID, pl)
		}
		switch {
		case kept > 0 && hasDoc:
			if d.RowID != 0 {
				docPatches = append(docPatches, grist.Row{ID: d.RowID, Fields: map[string]any{ColStatus: StatusDeleted}})
			}
			d.Pending = false
			m := decodeMeta(d.Data)
			m.Deleted = true
			d.Data = encodeMeta(m)
			pl.commit.Documents = append(pl.commit.Documents, d)
		case kept == 0:
			if d.RowID != 0 {
				docDeletes = append(docDeletes, d.RowID)
			}
			pl.commit.DeleteDocuments = append(pl.commit.DeleteDocuments, id)
		}
	}
	return docDeletes, docPatches, nil
}

// retryDeleted finishes the deletions a failed or dead run left pending:
// a document whose record is gone from state is deleted from the review;
// one whose record is still there (its deletion did not commit) is only
// published again.
func (r *Review) retryDeleted(ctx context.Context) error {
	docs, err := r.cfg.Store.ReviewDocuments(ctx, r.cfg.Pipeline, nil)
	if err != nil {
		return err
	}
	var ids []string
	keep := state.ReviewCommit{Pipeline: r.cfg.Pipeline}
	for _, id := range slices.Sorted(maps.Keys(docs)) {
		d := docs[id]
		m := decodeMeta(d.Data)
		if !d.Pending || !m.Deleted {
			continue
		}
		if m.Key != "" {
			got, err := r.cfg.Store.RecordGet(ctx, r.cfg.Pipeline, m.Source, []string{m.Key})
			if err != nil {
				return err
			}
			if _, ok := got[m.Key]; ok {
				m.Deleted = false
				d.Data = encodeMeta(m)
				keep.Documents = append(keep.Documents, d)
				continue
			}
		}
		ids = append(ids, id)
	}
	if len(keep.Documents) > 0 {
		if err := r.cfg.Store.ReviewCommit(ctx, keep); err != nil {
			return err
		}
	}
	return r.Deleted(ctx, ids)
}
