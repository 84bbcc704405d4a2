package grist

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kgsync/kgsync/sources"
)

// readIncremental yields the rows /compare reports changed, as a partial
// listing: removed rows' keys first (Page.Deleted), then the added and
// updated rows, then the rows that refer to a keyed row whose key changed,
// was removed or is new (their edges follow the key). A removed row's
// key, and a row's key before a change, come from state (idx) and, without
// it, from /compare's columnDeltas; when neither has it (a bulk change
// keeps the values of 10 rows only) the read falls back to a full listing.
//
// Its stages, in order: plan each table's delta (planTable: the rows to
// read, the keys that stop existing, the keyed rows whose key changed),
// add the rows referring to those (addReferrers), yield the deletions
// (emitDeleted), read and yield the rows (readListed), and move the cursor
// (to next only when every changed row was read).
func (s *Source) readIncremental(ctx context.Context, si *schemaInfo, d *compareResult, idx sources.RowIndex, old string, next cursorState, yield yieldFunc) error {
	in := &incremental{r: s.newRun(si, idx, false), d: d, todo: map[string]map[int64]bool{}, relink: map[string][]int64{}}
	for _, t := range si.tables {
		td := d.Deltas[t.ID]
		if td == nil {
			continue
		}
		// A fallback comes before any page is yielded: the full listing
		// that replaces this read starts from the same cursor.
		full, err := in.planTable(ctx, t, td)
		if err != nil {
			return err
		}
		if full {
			return s.fallbackFull(ctx, si, idx, old, next, yield)
		}
	}
	if err := in.addReferrers(ctx); err != nil {
		return err
	}
	p := &pager{yield: yield, old: old, warnings: si.warnings}
	if err := in.emitDeleted(p); err != nil {
		return err
	}
	unread, err := in.readListed(ctx, p)
	if err != nil {
		return err
	}
	if len(unread) > 0 {
		// A cursor moves only past what was read: these rows changed
		// (/compare) and the read did not return them (removed since, or
		// a proxy that dropped them); the next run compares from the same
		// point and reads them again.
		w := fmt.Sprintf("grist document %s: %s changed but the read by id did not return them; the cursor stays, and the next run reads them again",
			s.cfg.DocID, strings.Join(unread, "; "))
		s.logger.Warn("grist rows changed but not returned; the cursor stays", "doc", s.cfg.DocID, "rows", strings.Join(unread, "; "))
		if p.pending == nil {
			p.pending, p.warnings = &sources.Page{Partial: true, Warnings: p.warnings}, nil
		}
		p.pending.Warnings = append(p.pending.Warnings, w)
		return p.finish(old, true)
	}
	// Every row /compare named was read (or is gone with its key
	// deleted): the last page carries the new cursor.
	return p.finish(next.String(), true)
}

// incremental is what one incremental read (readIncremental) gathers from
// /compare's deltas before it reads a row.
type incremental struct {
	r *run
	d *compareResult
	// todo holds, by tableId, the ids of the rows to read; order is the
	// tables of todo in the order they were first added.
	todo  map[string]map[int64]bool
	order []*table
	// deleted are the record keys that stop existing.
	deleted []string
	// relink holds, by keyed tableId, the ids of the rows whose key
	// mapping changed (new, removed or another key): the rows referring
	// to them are read again.
	relink map[string][]int64
}

// add marks ids of t to be read.
func (in *incremental) add(t *table, ids ...int64) {
	if len(ids) == 0 {
		return
	}
	m := in.todo[t.ID]
	if m == nil {
		m = map[int64]bool{}
		in.todo[t.ID] = m
		in.order = append(in.order, t)
	}
	for _, id := range ids {
		m[id] = true
	}
}

// planTable takes t's delta td: its added and updated rows that still
// exist are to be read, its removed rows' keys are deleted, and for a
// table keyed by a column the rows whose key changed are found. full
// reports that a key the read needs is neither in state nor in td (the
// read must fall back to a full listing).
func (in *incremental) planTable(ctx context.Context, t *table, td *tableDelta) (full bool, err error) {
	stored, err := in.r.storedKeys(ctx, t, slices.Concat(td.AddRows, td.UpdateRows, td.RemoveRows))
	if err != nil {
		return false, err
	}
	removed, added := idSet(td.RemoveRows), idSet(td.AddRows)
	var live []int64
	for _, id := range slices.Concat(td.AddRows, td.UpdateRows) {
		if !removed[id] || added[id] {
			live = append(live, id)
		}
	}
	in.add(t, live...)
	if !in.removedKeys(t, td, stored) {
		return true, nil
	}
	if t.KeyCol == "" {
		return false, nil
	}
	return in.keyChanges(ctx, t, td, stored, removed, added, live)
}

// idSet returns the row ids of l as a set.
func idSet(l []int64) map[int64]bool {
	m := make(map[int64]bool, len(l))
	for _, id := range l {
		m[id] = true
	}
	return m
}

// removedKeys adds the keys of td's removed rows to the deletions: state's
// key, the row id key of a table keyed by row id, else the key column's
// old value in columnDeltas. It returns false when a key is in neither.
func (in *incremental) removedKeys(t *table, td *tableDelta, stored map[int64]string) bool {
	for _, id := range td.RemoveRows {
		if k, ok := stored[id]; ok {
			in.deleted = append(in.deleted, k)
			continue
		}
		if t.KeyCol == "" {
			in.deleted = append(in.deleted, rowKey(t.Name, id))
			continue
		}
		oldV, _, ok := cellDelta(td, t.KeyColID, id)
		k, kok := keyString(normJSON(oldV))
		if !ok || !kok {
			return false
		}
		in.deleted = append(in.deleted, t.Name+":"+k)
	}
	return true
}

// keyChanges learns the current keys of t's listed rows (live) before
// any row is mapped, so that Refs to them resolve to their new keys, and
// marks for relinking the rows whose key mapping changed: removed rows,
// and rows whose key differs from the stored one (or from the old value
// in columnDeltas, whose old key is then deleted). removed and added are
// td's removed and added rows. full is as planTable's.
func (in *incremental) keyChanges(ctx context.Context, t *table, td *tableDelta, stored map[int64]string, removed, added map[int64]bool, live []int64) (full bool, err error) {
	kt, err := in.r.keyTableOf(ctx, t.ID)
	if err != nil {
		return false, err
	}
	kt.learn(stored)
	// Rows whose key may have changed: every listed row when the key
	// column has deltas or the deltas are incomplete, else the added
	// ones and those state has no key for.
	_, keyTouched := td.ColumnDeltas[t.KeyColID]
	keyTouched = keyTouched || td.MayBeIncomplete
	var fetch []int64
	for _, id := range live {
		if _, had := stored[id]; keyTouched || !had || added[id] {
			fetch = append(fetch, id)
		}
	}
	if err := in.r.fetchKeys(ctx, kt, fetch, true); err != nil {
		return false, err
	}
	for id := range removed {
		// A removed row is listed (live) only when also added.
		if !added[id] {
			delete(kt.vals, id)
			kt.absent[id] = true
			in.relink[t.ID] = append(in.relink[t.ID], id)
		}
	}
	for _, id := range live {
		cur, ok := kt.vals[id]
		if !ok {
			continue
		}
		if stored != nil {
			prev, had := stored[id]
			if !had || prev != t.Name+":"+cur {
				in.relink[t.ID] = append(in.relink[t.ID], id)
			}
			if had || added[id] {
				continue
			}
		}
		// Not in state (no index, or a record stored before rows had
		// origins): the old key from columnDeltas.
		oldV, _, ok := cellDelta(td, t.KeyColID, id)
		if !ok {
			if td.MayBeIncomplete && !added[id] {
				return true, nil
			}
			continue
		}
		if ko, _ := keyString(normJSON(oldV)); ko != "" && ko != cur {
			in.deleted = append(in.deleted, t.Name+":"+ko)
			in.relink[t.ID] = append(in.relink[t.ID], id)
		}
	}
	return false, nil
}

// addReferrers marks to be read again the rows referring (Ref, RefList)
// to a row whose key mapping changed: their edges follow the key.
func (in *incremental) addReferrers(ctx context.Context) error {
	for target, ids := range in.relink {
		slices.Sort(ids)
		ids = slices.Compact(ids)
		for _, t := range in.r.si.tables {
			for _, c := range t.Cols {
				if c.Target != target || c.Base != "Ref" && c.Base != "RefList" {
					continue
				}
				refs, err := in.r.s.referencing(ctx, t, c, ids)
				if err != nil {
					return err
				}
				in.add(t, refs...)
			}
		}
	}
	return nil
}

// emitDeleted yields the deleted keys, sorted and once each, a page size
// at a time. Deletions come first: a key freed by one row may be taken by
// another.
func (in *incremental) emitDeleted(p *pager) error {
	slices.Sort(in.deleted)
	in.deleted = slices.Compact(in.deleted)
	size := in.r.s.cfg.PageSize
	for start := 0; start < len(in.deleted); start += size {
		end := min(len(in.deleted), start+size)
		if err := p.emit(&sources.Page{Partial: true, Deleted: in.deleted[start:end]}); err != nil {
			return err
		}
	}
	return nil
}

// readListed reads the rows marked, table by table in id order, and
// yields them as partial pages. unread names, by table, the rows the read
// by id did not return although /compare did not report them removed.
func (in *incremental) readListed(ctx context.Context, p *pager) (unread []string, err error) {
	r := in.r
	for _, t := range in.order {
		ids := slices.Sorted(maps.Keys(in.todo[t.ID]))
		if err := r.scanBound(ctx, t); err != nil {
			return nil, err
		}
		got := make(map[int64]bool, len(ids))
		err := r.s.rowsByID(ctx, t, t.Cols, ids, func(rows []row) error {
			for _, rw := range rows {
				got[rw.id] = true
			}
			pg, err := r.page(ctx, t, rows)
			if err != nil {
				return err
			}
			pg.Partial = true
			return p.emit(pg)
		})
		if err != nil {
			return nil, err
		}
		var missing []string
		td := in.d.Deltas[t.ID]
		for _, id := range ids {
			// A row /compare also lists as removed (removed, re-added,
			// removed again) is gone: its key went with the removals.
			if !got[id] && (td == nil || !slices.Contains(td.RemoveRows, id)) {
				missing = append(missing, strconv.FormatInt(id, 10))
			}
		}
		if len(missing) > 0 {
			unread = append(unread, fmt.Sprintf("table %s rows %s", t.ID, strings.Join(firstN(missing, 10), ", ")))
		}
	}
	return unread, nil
}
