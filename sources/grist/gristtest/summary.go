package gristtest

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// netRow is a row's net change over a range of actions: its values before
// the first and after the last (nil = absent), and whether some bulk action
// of the range dropped its cell values from the summary.
type netRow struct {
	before, after map[string]any
	partial       bool
}

type rowKey struct {
	table string
	id    int64
}

// composeRename adds the rename [from, to] to a list of net renames the way
// grist-core's concatenateSummaries does: a chain a→b, b→c becomes a→c,
// and an addition followed by a removal disappears. "" stands for null.
func composeRename(list [][2]string, from, to string) [][2]string {
	if from != "" {
		for i, r := range list {
			if r[1] == from {
				if r[0] == "" && to == "" {
					return slices.Delete(list, i, i+1)
				}
				list[i][1] = to
				return list
			}
		}
	}
	return append(list, [2]string{from, to})
}

// renameKeys returns m with key from renamed to to, or moved to "-from"
// when to is "" (a removed column keeps its old value under its defunct
// name); m itself is left alone.
func renameKeys(m map[string]any, from, to string, keepRemoved bool) map[string]any {
	if m == nil {
		return nil
	}
	v, ok := m[from]
	if !ok {
		return m
	}
	out := maps.Clone(m)
	delete(out, from)
	switch {
	case to != "":
		out[to] = v
	case keepRemoved:
		out["-"+from] = v
	}
	return out
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func renamePairs(list [][2]string) []any {
	out := []any{}
	for _, r := range list {
		out = append(out, []any{nullable(r[0]), nullable(r[1])})
	}
	return out
}

// summarize is the ActionSummary of a range of actions (grist-core
// app/common/ActionSummary.ts, as /compare returns it in rightChanges):
// net table renames, and per table (keyed by its name at the end, "-name"
// when removed) the rows added, updated and removed, the column renames,
// and the cell deltas [old, new] (each a one-element list or null; a
// removed column's cells under "-col"). Rows whose values a bulk action
// dropped (maxInlineRows) have no cell deltas and mark the table
// mayBeIncomplete. Added rows are listed in both addRows and updateRows,
// as a real server does (grist-samples/real/changes/a-*).
func summarize(actions []*action) map[string]any {
	n := &netChanges{rows: map[rowKey]*netRow{}, colRenames: map[string][][2]string{}}
	for _, a := range actions {
		n.apply(a)
	}
	byTable := map[string]*summaryTable{}
	get := func(t string) *summaryTable {
		d := byTable[t]
		if d == nil {
			d = &summaryTable{cols: map[string]map[string]any{}}
			byTable[t] = d
		}
		return d
	}
	for t := range n.colRenames {
		get(t)
	}
	for k, ch := range n.rows {
		if ch.before == nil && ch.after == nil {
			continue // added and removed inside the range
		}
		get(k.table).addRow(k.id, ch)
	}
	deltas := map[string]any{}
	for tid, d := range byTable {
		slices.Sort(d.add)
		slices.Sort(d.upd)
		slices.Sort(d.rem)
		m := map[string]any{"updateRows": nz(d.upd), "removeRows": nz(d.rem), "addRows": nz(d.add),
			"columnDeltas": d.cols, "columnRenames": renamePairs(n.colRenames[tid])}
		if d.incomplete {
			m["mayBeIncomplete"] = true
		}
		deltas[tid] = m
	}
	return map[string]any{"tableRenames": renamePairs(n.tableRenames), "tableDeltas": deltas}
}

// netChanges is the net effect of a range of actions: each row's values
// before the first and after the last (by table name at the end), and the
// composed table and column renames.
type netChanges struct {
	rows         map[rowKey]*netRow
	tableRenames [][2]string
	colRenames   map[string][][2]string // by table
}

// apply composes a's cell changes, column renames and table renames, in
// that order, into n.
func (n *netChanges) apply(a *action) {
	for tid, rows := range a.deltas {
		for id, ch := range rows {
			k := rowKey{tid, id}
			prev, ok := n.rows[k]
			if !ok {
				prev = &netRow{before: ch.before}
				n.rows[k] = prev
			}
			prev.after = ch.after
			if keep := a.inline[tid]; keep != nil && !keep[id] {
				prev.partial = true
			}
		}
	}
	for tid, list := range a.colRenames {
		for _, cr := range list {
			n.colRenames[tid] = composeRename(n.colRenames[tid], cr[0], cr[1])
			if cr[0] == "" {
				continue
			}
			for k, v := range n.rows {
				if k.table == tid {
					v.before = renameKeys(v.before, cr[0], cr[1], true)
					v.after = renameKeys(v.after, cr[0], cr[1], false)
				}
			}
		}
	}
	for _, rn := range a.renames {
		n.tableRenames = composeRename(n.tableRenames, rn[0], rn[1])
		switch {
		case rn[0] == "":
		case rn[1] == "":
			n.moveTable(rn[0], "-"+rn[0])
		default:
			n.moveTable(rn[0], rn[1])
		}
	}
}

// moveTable files the rows and column renames of table from under to.
func (n *netChanges) moveTable(from, to string) {
	for k, v := range n.rows {
		if k.table == from {
			delete(n.rows, k)
			n.rows[rowKey{to, k.id}] = v
		}
	}
	if cr, ok := n.colRenames[from]; ok {
		delete(n.colRenames, from)
		n.colRenames[to] = cr
	}
}

// summaryTable is one table's part of the summary being built.
type summaryTable struct {
	add, upd, rem []int64
	cols          map[string]map[string]any // column -> row id -> [old, new]
	incomplete    bool
}

// addRow lists row id as added, removed or updated by its net change ch,
// with its cell deltas.
func (d *summaryTable) addRow(id int64, ch *netRow) {
	idKey := strconv.FormatInt(id, 10)
	set := func(col string, old, nw any, hasOld, hasNew bool) {
		if ch.partial {
			d.incomplete = true
			return
		}
		m := d.cols[col]
		if m == nil {
			m = map[string]any{}
			d.cols[col] = m
		}
		var o, n any
		if hasOld {
			o = []any{sqlishDelta(old)}
		}
		if hasNew {
			n = []any{sqlishDelta(nw)}
		}
		m[idKey] = []any{o, n}
	}
	switch {
	case ch.before == nil:
		d.add = append(d.add, id)
		d.upd = append(d.upd, id) // real servers list added rows in both
		for c, v := range ch.after {
			set(c, nil, v, false, true)
		}
	case ch.after == nil:
		d.rem = append(d.rem, id)
		for c, v := range ch.before {
			set(c, v, nil, true, false)
		}
	default:
		d.upd = append(d.upd, id)
		for c, v := range ch.after {
			if ov, ok := ch.before[c]; !ok || !reflect.DeepEqual(ov, v) {
				set(c, ov, v, ok, true)
			}
		}
		for c, ov := range ch.before {
			if strings.HasPrefix(c, "-") {
				set(c, ov, nil, true, false)
			}
		}
	}
}
