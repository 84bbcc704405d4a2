package grist

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/kgsync/kgsync/internal/offheap"
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
	listed bloom
	// first is the smallest row id holding a key, for the keys asked for.
	first map[string]int64
}

func newDupCheck() *dupCheck { return &dupCheck{first: map[string]int64{}} }

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
		if dc.listed.mayContain(k) {
			asked[k] = true
			ask = append(ask, v)
			continue
		}
		dc.listed.add(k)
	}
	if i := slices.IndexFunc(t.Cols, func(c column) bool { return c.Name == t.KeyCol }); i >= 0 && len(ask) > 0 {
		c := t.Cols[i]
		for i, v := range ask {
			ask[i] = cellValue(c, v)
		}
		err := r.s.rowsWithValues(ctx, t, c, ask, func(found []row) error {
			for _, rw := range found {
				k, ok := keyString(rw.attrs[c.Name])
				if !ok || !asked[k] {
					continue
				}
				if f, had := dc.first[k]; !had || rw.id < f {
					dc.first[k] = rw.id
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("rows repeating keys: %w", err)
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

// bloom is a Bloom filter of strings that grows with what it holds: a
// chain of parts, each twice the capacity of the last, at least
// bloomBitsKey bits a key (4 bytes; a few false positives in 1,000,000
// keys over the chain).
type bloom struct {
	parts []*bloomPart
}

// bloomPart's bit count is a power of two (mask is it minus one). Its
// bits live outside the Go heap (offheap.Words): a listing of a million
// keys holds 4 MB of them, which on the heap would count twice toward the
// garbage collector's goal.
type bloomPart struct {
	bits     []uint64
	mask     uint64
	n, limit int
}

const (
	bloomHashes   = 22
	bloomFirstCap = 1 << 14
	bloomBitsKey  = 32
)

// probe returns the i-th bit position of hash h (double hashing).
func (p *bloomPart) probe(h uint64, i uint64) uint64 {
	return (h + i*(h>>33|h<<31|1)) & p.mask
}

func (b *bloom) add(key string) {
	if len(b.parts) == 0 || b.parts[len(b.parts)-1].n >= b.parts[len(b.parts)-1].limit {
		c := bloomFirstCap
		if len(b.parts) > 0 {
			c = 2 * b.parts[len(b.parts)-1].limit
		}
		nbits := uint64(c * bloomBitsKey) // a power of two: both factors are
		p := &bloomPart{mask: nbits - 1, limit: c}
		p.bits = offheap.Words(p, int(nbits/64))
		b.parts = append(b.parts, p)
	}
	p := b.parts[len(b.parts)-1]
	h := xxhash.Sum64String(key)
	for i := range uint64(bloomHashes) {
		bit := p.probe(h, i)
		p.bits[bit/64] |= 1 << (bit % 64)
	}
	p.n++
}

// mayContain reports whether key may have been added; false is certain.
func (b *bloom) mayContain(key string) bool {
	h := xxhash.Sum64String(key)
parts:
	for _, p := range b.parts {
		for i := range uint64(bloomHashes) {
			if bit := p.probe(h, i); p.bits[bit/64]&(1<<(bit%64)) == 0 {
				continue parts
			}
		}
		return true
	}
	return false
}
