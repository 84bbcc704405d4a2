package grist

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/kgsync/kgsync/internal/bloom"
)

// Repeated keys in a full listing, in memory that does not grow with the
// table.
//
// A row whose key column repeats the key of a row with a smaller id is
// skipped (the first is kept). The listing reads rows in id order, so the
// earlier row was listed already: a Bloom filter of the keys listed says
// "certainly not listed" for almost every row. For the few it cannot
// clear (the repeats, and a few false positives in 1,000,000 rows), one
// question per page asks Grist for the rows holding those values (/sql
// WHERE col IN, or /records with a filter), whose smallest id is the
// first row with the key; the keys found that way are kept, so a key
// repeated many times is asked for once.

// dupCheck is what a full listing of one keyed table knows of its keys.
type dupCheck struct {
	listed bloom.Filter // dupFilter: 4 bytes a key
	// first is the smallest row id holding a key, for the keys asked for.
	first map[string]int64
}

// dupFilter sizes the filter of listed keys: 32 bits and 22 probes a
// key, about 2 × 10⁻⁷ false positives a part (a few in 1,000,000 keys
// over the chain), each of which costs a question to Grist.
var dupFilter = bloom.Params{BitsPerKey: 32, Hashes: 22, FirstCap: 1 << 14}

func newDupCheck() *dupCheck {
	return &dupCheck{listed: bloom.Filter{Params: dupFilter}, first: map[string]int64{}}
}

// repeated returns the ids of rows whose key an earlier row holds.
func (r *run) repeated(ctx context.Context, dc *dupCheck, t *table, rows []row) (map[int64]bool, error) {
	var ask []any
	asked := map[string]bool{}
	for _, rw := range rows {
		v := rw.attrs[t.KeyCol]
		k, ok := keyString(v)
		if !ok {
			continue
		}
		if _, known := dc.first[k]; known || asked[k] {
			continue
		}
		if dc.listed.MayContain(k) {
			asked[k] = true
			ask = append(ask, v)
			continue
		}
		dc.listed.Add(k)
	}
	if i := slices.IndexFunc(t.Cols, func(c column) bool { return c.Name == t.KeyCol }); i >= 0 && len(ask) > 0 {
		c := t.Cols[i]
		for i, v := range ask {
			ask[i] = cellValue(c, v)
		}
		holders, err := r.keyHolders(ctx, t, c, ask, asked)
		if err != nil {
			return nil, fmt.Errorf("rows repeating keys: %w", err)
		}
		for k, ids := range holders {
			m := slices.Min(ids)
			if f, had := dc.first[k]; !had || m < f {
				dc.first[k] = m
			}
		}
	}
	var dup map[int64]bool
	for _, rw := range rows {
		k, ok := keyString(rw.attrs[t.KeyCol])
		if !ok {
			continue
		}
		f, known := dc.first[k]
		if !known {
			if asked[k] {
				// Asked for and not found (changed since it was read):
				// this row is the first.
				dc.first[k] = rw.id
			}
			continue
		}
		if f < rw.id {
			if dup == nil {
				dup = map[int64]bool{}
			}
			dup[rw.id] = true
		}
	}
	return dup, nil
}

// cellValue is a decoded value v of column c as Grist's API holds the
// cell: a Date or DateTime (decoded to ISO 8601, isoDate / isoDateTime)
// as seconds since the epoch (grist-api.md §4: /records filters match
// dates only as those numbers); other values as they are.
func cellValue(c column, v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	switch c.Base {
	case "Date":
		if t, err := time.Parse("2006-01-02", s); err == nil {
			return float64(t.Unix())
		}
	case "DateTime":
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return float64(t.UnixNano()) / 1e9
		}
	}
	return v
}

// sqlArg is an API cell value as /sql compares it: SQLite storage, where
// a Bool is 1 or 0 (grist-api.md §4).
func sqlArg(v any) any {
	if b, ok := v.(bool); ok {
		if b {
			return int64(1)
		}
		return int64(0)
	}
	return v
}

// rowsWithValues reads the id and column c of t's rows whose c is one of
// vals (API cell values, cellValue): /sql WHERE c IN (...), or /records
// with a filter when SQL is refused, PageSize values a question.
func (s *Source) rowsWithValues(ctx context.Context, t *table, c column, vals []any, fn func([]row) error) error {
	only := &table{ID: t.ID, Ref: t.Ref, Name: t.Name, Cols: []column{c}}
	for start := 0; start < len(vals); start += s.cfg.PageSize {
		chunk := vals[start:min(len(vals), start+s.cfg.PageSize)]
		if !s.sqlOff() {
			sel, from, err := selectList(only, only.Cols)
			if err != nil {
				return err
			}
			col, err := quoteIdent(c.ID)
			if err != nil {
				return err
			}
			stmt := fmt.Sprintf(`SELECT %s FROM %s WHERE %s IN (%s) ORDER BY "id"`, sel, from, col,
				strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ","))
			args := make([]any, len(chunk))
			for i, v := range chunk {
				args[i] = sqlArg(v)
			}
			rows, err := s.sql(ctx, only, only.Cols, stmt, args)
			if err == nil {
				if err := fn(rows); err != nil {
					return err
				}
				continue
			}
			if !s.refusesSQL(err) {
				return err
			}
		}
		filter, err := json.Marshal(map[string][]any{c.ID: chunk})
		if err != nil {
			return err
		}
		if _, err := s.streamRecords(ctx, only, url.Values{"filter": {string(filter)}, "sort": {"id"}}, fn); err != nil {
			return err
		}
	}
	return nil
}

// takenKeys checks, in an incremental read, the rows whose key is new to
// their record (an added row, a key edited; stored maps row ids to the
// keys state holds): a key another row of the table holds is not taken
// over, whichever row has the smaller id, so an edit never moves a record
// onto another row's node. It asks Grist once a page for the rows holding
// those values (rowsWithValues) and returns, by row id, the row holding
// its key.
func (r *run) takenKeys(ctx context.Context, t *table, rows []row, stored map[int64]string) (map[int64]int64, error) {
	i := slices.IndexFunc(t.Cols, func(c column) bool { return c.Name == t.KeyCol })
	if i < 0 {
		return nil, nil
	}
	c := t.Cols[i]
	var ask []any
	asked := map[string]bool{}
	for _, rw := range rows {
		k, ok := keyString(rw.attrs[t.KeyCol])
		if !ok || asked[k] || stored[rw.id] == t.Name+":"+k {
			continue
		}
		asked[k] = true
		ask = append(ask, cellValue(c, rw.attrs[t.KeyCol]))
	}
	if len(ask) == 0 {
		return nil, nil
	}
	holders, err := r.keyHolders(ctx, t, c, ask, asked)
	if err != nil {
		return nil, fmt.Errorf("rows holding changed keys: %w", err)
	}
	var out map[int64]int64
	for _, rw := range rows {
		k, ok := keyString(rw.attrs[t.KeyCol])
		if !ok || !asked[k] {
			continue
		}
		for _, h := range holders[k] {
			if h != rw.id {
				if out == nil {
					out = map[int64]int64{}
				}
				out[rw.id] = h
				break
			}
		}
	}
	return out, nil
}

// keyHolders asks Grist for the rows of t whose key column c holds one of
// the values ask (rowsWithValues; asked are their keys) and returns their
// ids by key.
func (r *run) keyHolders(ctx context.Context, t *table, c column, ask []any, asked map[string]bool) (map[string][]int64, error) {
	holders := map[string][]int64{}
	err := r.s.rowsWithValues(ctx, t, c, ask, func(found []row) error {
		for _, rw := range found {
			if k, ok := keyString(rw.attrs[c.Name]); ok && asked[k] {
				holders[k] = append(holders[k], rw.id)
			}
		}
		return nil
	})
	return holders, err
}
