package grist

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/kgsync/kgsync/sources"
)

// row is one decoded table row.
type row struct {
	id    int64
	attrs map[string]any
	// bad says why a cell of the row could not be decoded: the row's
	// record is skipped, kept as it was, and the other rows are read.
	bad error
}

// run holds what one Read learns lazily: attachment metadata, the keys of
// rows of tables keyed by a column, and what state remembers of the rows.
//
// Nothing it holds grows with a table: state is asked for the stored keys
// of the rows at hand (a page, or the rows /compare names), the keys of
// Ref targets are asked for a page at a time (a full listing keeps the
// latest pages' only), and a full listing finds repeated keys through a
// Bloom filter of the keys listed (dupCheck).
type run struct {
	s   *Source
	si  *schemaInfo
	idx sources.RowIndex
	// full is set for a full listing: keys of Ref targets are cached a few
	// pages' worth at a time; an incremental read keeps what it asked for.
	full bool
	keys map[string]*keyTable // by current tableId
	att  map[int64]map[string]any
	dups map[string]*dupCheck // full listings: the keyed table being listed
	// bounds are, by tableId, the largest row id state held a record of
	// when the table's scan began (scanBound): a scan lists a row once, and
	// only a row's own record has its id as origin, so a row of the scan
	// with a larger id is not stored, and storedKeysOf does not ask.
	bounds map[string]int64
}

// keyTable resolves the row ids of a table keyed by a column to key values.
type keyTable struct {
	t    *table // the table with its key column only
	col  column
	vals map[int64]string
	// absent are ids asked for that have no row.
	absent map[int64]bool
	// synced: the source syncs the table, so state knows its rows' keys
	// (an incremental read asks state before Grist).
	synced bool
}

// keyCachePages bounds the Ref target keys a full listing keeps: when a
// target's cache holds more than keyCachePages pages of ids, it starts
// again empty before the next page.
const keyCachePages = 8

func (s *Source) newRun(si *schemaInfo, idx sources.RowIndex, full bool) *run {
	return &run{s: s, si: si, idx: idx, full: full, keys: map[string]*keyTable{}, dups: map[string]*dupCheck{}, bounds: map[string]int64{}}
}

// keyColumnOf returns the key column name configured for the table whose
// tableId is id ("" when it is keyed by row id).
func (r *run) keyColumnOf(id string) string {
	for _, t := range r.si.tables {
		if t.ID == id {
			return t.KeyCol
		}
	}
	if kc, ok := r.s.cfg.KeyColumns[r.si.nameOf(id)]; ok {
		return kc
	}
	return r.s.cfg.KeyColumns[id]
}

// keyTableOf returns the resolver of table id, nil when it is keyed by row
// id. It starts empty.
func (r *run) keyTableOf(ctx context.Context, id string) (*keyTable, error) {
	if kt, ok := r.keys[id]; ok {
		return kt, nil
	}
	kc := r.keyColumnOf(id)
	if kc == "" {
		r.keys[id] = nil
		return nil, nil
	}
	var src *table
	for _, t := range r.si.tables {
		if t.ID == id {
			src = t
		}
	}
	if src == nil {
		t, err := r.s.columns(ctx, id)
		if err != nil {
			return nil, err
		}
		t.Name = r.si.nameOf(id)
		src = t
	}
	i := slices.IndexFunc(src.Cols, func(c column) bool { return c.Name == kc })
	if i < 0 {
		return nil, fmt.Errorf("grist document %s table %s: key column %q not found", r.s.cfg.DocID, id, kc)
	}
	kt := &keyTable{t: &table{ID: src.ID, Ref: src.Ref, Name: src.Name, Cols: []column{src.Cols[i]}}, col: src.Cols[i],
		vals: map[int64]string{}, absent: map[int64]bool{}, synced: src.Ref != 0 && slices.Contains(r.si.tables, src)}
	r.keys[id] = kt
	return kt, nil
}

// fetchKeys reads the current key values of ids (all of them when force,
// else only those not known yet).
func (r *run) fetchKeys(ctx context.Context, kt *keyTable, ids []int64, force bool) error {
	var need []int64
	for _, id := range ids {
		if _, ok := kt.vals[id]; force || !ok && !kt.absent[id] {
			need = append(need, id)
		}
	}
	if len(need) == 0 {
		return nil
	}
	slices.Sort(need)
	need = slices.Compact(need)
	found := map[int64]bool{}
	err := r.s.rowsByID(ctx, kt.t, kt.t.Cols, need, func(rows []row) error {
		for _, rw := range rows {
			found[rw.id] = true
			if k, ok := keyString(rw.attrs[kt.col.Name]); ok {
				kt.vals[rw.id] = k
			} else {
				delete(kt.vals, rw.id)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range need {
		if !found[id] {
			delete(kt.vals, id)
			kt.absent[id] = true
		}
	}
	return nil
}

// storedKeys returns row id -> stored record key of t's rows ids that
// state has, in one question, none for no ids (nil without a RowIndex:
// then nothing is known, which callers tell from an empty answer).
func (r *run) storedKeys(ctx context.Context, t *table, ids []int64) (map[int64]string, error) {
	if r.idx == nil || t.Ref == 0 {
		return nil, nil
	}
	if len(ids) == 0 {
		return map[int64]string{}, nil
	}
	m, err := r.idx.RowKeysOf(ctx, scopeOf(t), ids)
	if err != nil {
		return nil, fmt.Errorf("stored row keys of table %s: %w", t.ID, err)
	}
	if m == nil {
		m = map[int64]string{}
	}
	return m, nil
}

// storedKeysOf is storedKeys for the ids of rows, asking only for those
// up to the scan's bound (scanBound), when it has one.
func (r *run) storedKeysOf(ctx context.Context, t *table, rows []row) (map[int64]string, error) {
	bound, bounded := r.bounds[t.ID]
	ids := make([]int64, 0, len(rows))
	for _, rw := range rows {
		if !bounded || rw.id <= bound {
			ids = append(ids, rw.id)
		}
	}
	return r.storedKeys(ctx, t, ids)
}

// scanBound takes, as t's bound for the scan about to begin, the largest
// row id of t state holds a record of, when the index can tell
// (sources.RowIDBound); otherwise t has none, and storedKeysOf asks for
// every row. It runs before the scan's first page, so no row of the scan
// is stored yet.
func (r *run) scanBound(ctx context.Context, t *table) error {
	delete(r.bounds, t.ID)
	b, ok := r.idx.(sources.RowIDBound)
	if !ok || t.Ref == 0 {
		return nil
	}
	top, err := b.MaxRowID(ctx, scopeOf(t))
	if err != nil {
		return fmt.Errorf("largest stored row id of table %s: %w", t.ID, err)
	}
	r.bounds[t.ID] = top
	return nil
}

// knownKeys fills kt with the stored keys of ids that kt does not know
// yet (an incremental read: the keys of rows /compare does not name are
// the ones state has).
func (r *run) knownKeys(ctx context.Context, kt *keyTable, ids []int64) error {
	var need []int64
	for _, id := range ids {
		if _, ok := kt.vals[id]; !ok && !kt.absent[id] {
			need = append(need, id)
		}
	}
	if len(need) == 0 {
		return nil
	}
	slices.Sort(need)
	stored, err := r.storedKeys(ctx, kt.t, slices.Compact(need))
	if err != nil {
		return err
	}
	kt.learn(stored)
	return nil
}

// learn takes stored record keys ("<table>:<key>", by row id) as the key
// values of kt's rows.
func (kt *keyTable) learn(stored map[int64]string) {
	for id, key := range stored {
		if _, v, ok := strings.Cut(key, ":"); ok {
			kt.vals[id] = v
		}
	}
}

// scopeOf is the Origin scope of t's rows: its tableRef.
func scopeOf(t *table) string { return strconv.FormatInt(t.Ref, 10) }

// pager holds back one page so that only the last page carries the new
// cursor; every earlier page carries the old one.
type pager struct {
	yield   yieldFunc
	pending *sources.Page
	old     string
	// warnings go with the first page.
	warnings []string
}

func (p *pager) emit(pg *sources.Page) error {
	pg.Cursor = p.old
	if p.warnings != nil {
		pg.Warnings, p.warnings = append(pg.Warnings, p.warnings...), nil
	}
	if p.pending != nil {
		if !p.yield(p.pending, nil) {
			return errStopped
		}
	}
	p.pending = pg
	return nil
}

func (p *pager) finish(cursor string, partial bool) error {
	if p.pending == nil {
		p.pending = &sources.Page{Partial: partial, Warnings: p.warnings}
	}
	p.pending.Cursor = cursor
	if !p.yield(p.pending, nil) {
		return errStopped
	}
	return nil
}

// readFull lists every row of tables. When tags is non-nil (ETag polling,
// etag.go) it records the ETag of each table read through /records, taken
// from the very response listed, and the new cursor carries the tags if
// they cover every probe.
func (s *Source) readFull(ctx context.Context, si *schemaInfo, idx sources.RowIndex, old string, next cursorState, tags *etagSet, yield yieldFunc) error {
	r := s.newRun(si, idx, true)
	p := &pager{yield: yield, old: old, warnings: si.warnings}
	for _, t := range si.tables {
		if t.KeyCol != "" {
			r.dups[t.ID] = newDupCheck()
		}
		if err := r.scanBound(ctx, t); err != nil {
			return err
		}
		tag, err := s.scanTable(ctx, t, func(rows []row) error {
			pg, err := r.page(ctx, t, rows)
			if err != nil {
				return err
			}
			return p.emit(pg)
		})
		if err != nil {
			return err
		}
		if tags != nil && tag != "" {
			tags.tags[recordsProbe(t.ID)] = tag
		}
		delete(r.dups, t.ID)
	}
	if tags != nil {
		next.ETags = tags.complete(s)
	}
	return p.finish(next.String(), false)
}

// scanTable reads every row of t in id order, PageSize rows at a time. It
// returns the ETag of the /records answer when it read through /records
// ("" after /sql, which sends none worth keeping: POST ignores
// If-None-Match).
func (s *Source) scanTable(ctx context.Context, t *table, fn func([]row) error) (string, error) {
	if !s.sqlOff() {
		after := int64(0)
		for {
			rows, err := s.sqlPage(ctx, t, t.Cols, after)
			if err != nil {
				if after == 0 && s.refusesSQL(err) {
					break
				}
				return "", err
			}
			if len(rows) == 0 {
				return "", nil
			}
			if err := fn(rows); err != nil {
				return "", err
			}
			after = rows[len(rows)-1].id
		}
	}
	return s.streamRecords(ctx, t, url.Values{"sort": {"id"}}, fn)
}

func (s *Source) sqlOff() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.noSQL
}

// refusesSQL reports an answer meaning "no SQL for this key": 403 (SQL needs
// full read access, grist-api.md §4) or a 404 route (servers before v1.1.4).
// The source then reads through /records.
func (s *Source) refusesSQL(err error) bool {
	code := statusOf(err)
	if code != http.StatusForbidden && !(code == http.StatusNotFound && !isDocNotFound(err)) {
		return false
	}
	s.mu.Lock()
	s.noSQL = true
	s.mu.Unlock()
	s.logger.Info("sql endpoint refused, reading through /records", "err", err)
	return true
}

// quoteIdent quotes a SQLite identifier: double quotes, inner quotes doubled.
func quoteIdent(id string) (string, error) {
	if strings.ContainsRune(id, 0) {
		return "", fmt.Errorf("identifier %q contains NUL", id)
	}
	return `"` + strings.ReplaceAll(id, `"`, `""`) + `"`, nil
}

func selectList(t *table, cols []column) (string, string, error) {
	var b strings.Builder
	b.WriteString(`"id"`)
	for _, c := range cols {
		q, err := quoteIdent(c.ID)
		if err != nil {
			return "", "", fmt.Errorf("grist document table %s: %w", t.ID, err)
		}
		b.WriteString(", ")
		b.WriteString(q)
	}
	from, err := quoteIdent(t.ID)
	if err != nil {
		return "", "", fmt.Errorf("grist table: %w", err)
	}
	return b.String(), from, nil
}

// sqlPage reads up to the current page size rows with id > after. On the
// SQL statement timeout it halves the page size and tries again.
func (s *Source) sqlPage(ctx context.Context, t *table, cols []column, after int64) ([]row, error) {
	sel, from, err := selectList(t, cols)
	if err != nil {
		return nil, err
	}
	for {
		s.mu.Lock()
		n := s.pageSize
		s.mu.Unlock()
		stmt := fmt.Sprintf(`SELECT %s FROM %s WHERE "id" > ? ORDER BY "id" LIMIT %d`, sel, from, n)
		rows, err := s.sql(ctx, t, cols, stmt, []any{after})
		if err == nil {
			return rows, nil
		}
		if !sqlTimeout(err) || n == 1 {
			return nil, err
		}
		s.mu.Lock()
		if s.pageSize == n {
			s.pageSize = max(1, n/2)
		}
		s.mu.Unlock()
		s.stats.PageShrinks.Add(1)
		s.logger.Warn("sql statement timed out, halving page size", "table", t.ID, "page_size", max(1, n/2))
	}
}

func (s *Source) sql(ctx context.Context, t *table, cols []column, stmt string, args []any) ([]row, error) {
	var res struct {
		Records []struct {
			Fields map[string]any `json:"fields"`
		} `json:"records"`
	}
	body := map[string]any{"sql": stmt, "args": args}
	if err := s.c.getJSON(ctx, http.MethodPost, "/sql", nil, body, t.ID, "read rows", &res); err != nil {
		return nil, err
	}
	rows := make([]row, 0, len(res.Records))
	for i, rec := range res.Records {
		id, ok := normJSON(rec.Fields["id"]).(int64)
		if !ok {
			return nil, fmt.Errorf("grist document %s table %s: sql row %d has no integer id", s.cfg.DocID, t.ID, i)
		}
		rw := row{id: id, attrs: make(map[string]any, len(cols))}
		for ci := range cols {
			c := &cols[ci]
			v, err := decodeSQLCell(c, rec.Fields[c.ID])
			if err != nil {
				rw.bad = fmt.Errorf("grist document %s table %s row %d: %w", s.cfg.DocID, t.ID, id, err)
				continue
			}
			rw.attrs[c.Name] = v
		}
		rows = append(rows, rw)
	}
	return rows, nil
}

// streamRecords reads GET /records (no pagination upstream, grist-api.md §3)
// decoding one record at a time, and hands rows to fn in pages. It returns
// the answer's ETag header ("" if none).
func (s *Source) streamRecords(ctx context.Context, t *table, q url.Values, fn func([]row) error) (string, error) {
	resp, err := s.c.do(ctx, http.MethodGet, "/tables/"+url.PathEscape(t.ID)+"/records", q, nil, nil, t.ID, "read rows")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	tag := resp.Header.Get("ETag")
	if resp.StatusCode == http.StatusNotModified {
		return "", fmt.Errorf("grist document %s table %s: read rows: unexpected 304 Not Modified", s.cfg.DocID, t.ID)
	}
	fail := func(err error) error {
		return fmt.Errorf("grist document %s table %s: read rows: decode: %w", s.cfg.DocID, t.ID, err)
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", fail(fmt.Errorf("expected object, got %v (%v)", tok, err))
	}
	page := make([]row, 0, s.cfg.PageSize)
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", fail(err)
		}
		if key != "records" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", fail(err)
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return "", fail(fmt.Errorf("expected records array, got %v (%v)", tok, err))
		}
		for dec.More() {
			var rec struct {
				ID     int64             `json:"id"`
				Fields map[string]any    `json:"fields"`
				Errors map[string]string `json:"errors"`
			}
			if err := dec.Decode(&rec); err != nil {
				return "", fail(err)
			}
			page = append(page, row{id: rec.ID, attrs: recordsAttrs(t.Cols, rec.Fields, rec.Errors)})
			if len(page) == s.cfg.PageSize {
				s.stats.RecordsReads.Add(1)
				if err := fn(page); err != nil {
					return "", err
				}
				page = make([]row, 0, s.cfg.PageSize)
			}
		}
		if _, err := dec.Token(); err != nil {
			return "", fail(err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return "", fail(err)
	}
	if len(page) > 0 {
		s.stats.RecordsReads.Add(1)
		if err := fn(page); err != nil {
			return "", err
		}
	}
	return tag, nil
}

func recordsAttrs(cols []column, fields map[string]any, errs map[string]string) map[string]any {
	attrs := make(map[string]any, len(cols))
	for ci := range cols {
		c := &cols[ci]
		if name, ok := errs[c.ID]; ok {
			attrs[c.Name] = errorCell(name)
			continue
		}
		attrs[c.Name] = decodeRecordsCell(c, fields[c.ID])
	}
	return attrs
}

// rowsByID reads the rows with the given ids (sorted), in chunks of the
// page size.
func (s *Source) rowsByID(ctx context.Context, t *table, cols []column, ids []int64, fn func([]row) error) error {
	for start := 0; start < len(ids); {
		s.mu.Lock()
		n := s.pageSize
		s.mu.Unlock()
		end := min(len(ids), start+n)
		chunk := ids[start:end]
		var rows []row
		var err error
		if !s.sqlOff() {
			sel, from, qerr := selectList(t, cols)
			if qerr != nil {
				return qerr
			}
			marks := strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",")
			args := make([]any, len(chunk))
			for i, id := range chunk {
				args[i] = id
			}
			stmt := fmt.Sprintf(`SELECT %s FROM %s WHERE "id" IN (%s) ORDER BY "id"`, sel, from, marks)
			rows, err = s.sql(ctx, t, cols, stmt, args)
			if err != nil && sqlTimeout(err) && n > 1 {
				s.mu.Lock()
				s.pageSize = max(1, n/2)
				s.mu.Unlock()
				s.stats.PageShrinks.Add(1)
				continue
			}
			if err != nil && s.refusesSQL(err) {
				continue
			}
		} else {
			filter, _ := json.Marshal(map[string][]int64{"id": chunk})
			q := url.Values{"filter": {string(filter)}, "sort": {"id"}}
			_, err = s.streamRecords(ctx, t, q, func(page []row) error {
				rows = append(rows, page...)
				return nil
			})
		}
		if err != nil {
			return err
		}
		if err := fn(rows); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// firstN returns the first n of l, and "… (k more)" for the rest.
func firstN(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return append(l[:n:n], fmt.Sprintf("… (%d more)", len(l)-n))
}

// referencing returns the ids of t's rows whose Ref or RefList column c
// holds one of ids: for a Ref, a query filtered on the column (/sql, or
// /records with a filter); for a RefList, whose cells no filter matches
// (grist-api.md "Observed" §3), a read of the column.
func (s *Source) referencing(ctx context.Context, t *table, c column, ids []int64) ([]int64, error) {
	want := map[int64]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []int64
	collect := func(rows []row) error {
		for _, rw := range rows {
			v := rw.attrs[c.Name]
			if l, ok := v.([]any); ok {
				for _, e := range l {
					if id, ok := e.(int64); ok && want[id] {
						out = append(out, rw.id)
						break
					}
				}
			} else if id, ok := v.(int64); ok && want[id] {
				out = append(out, rw.id)
			}
		}
		return nil
	}
	only := &table{ID: t.ID, Ref: t.Ref, Name: t.Name, Cols: []column{c}}
	if c.Base == "RefList" {
		_, err := s.scanTable(ctx, only, collect)
		return out, err
	}
	for start := 0; start < len(ids); start += s.cfg.PageSize {
		chunk := ids[start:min(len(ids), start+s.cfg.PageSize)]
		if !s.sqlOff() {
			sel, from, err := selectList(only, only.Cols)
			if err != nil {
				return nil, err
			}
			col, _ := quoteIdent(c.ID)
			args := make([]any, len(chunk))
			for i, id := range chunk {
				args[i] = id
			}
			stmt := fmt.Sprintf(`SELECT %s FROM %s WHERE %s IN (%s) ORDER BY "id"`, sel, from, col,
				strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ","))
			rows, err := s.sql(ctx, only, only.Cols, stmt, args)
			if err == nil {
				_ = collect(rows)
				continue
			}
			if !s.refusesSQL(err) {
				return nil, err
			}
		}
		filter, _ := json.Marshal(map[string][]int64{c.ID: chunk})
		if _, err := s.streamRecords(ctx, only, url.Values{"filter": {string(filter)}, "sort": {"id"}}, collect); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Source) fallbackFull(ctx context.Context, si *schemaInfo, idx sources.RowIndex, old string, next cursorState, yield yieldFunc) error {
	s.stats.Incremental.Add(-1)
	s.stats.Fallbacks.Add(1)
	s.stats.FullScans.Add(1)
	next.Full = s.cfg.Now().Unix()
	return s.readFull(ctx, si, idx, old, next, nil, yield)
}

// cellDelta returns the old and new value of column col for row id from
// columnDeltas; ok is false when the column or row is absent.
func cellDelta(td *tableDelta, col string, id int64) (oldV, newV any, ok bool) {
	cells, found := td.ColumnDeltas[col]
	if !found {
		return nil, nil, false
	}
	pair, found := cells[strconv.FormatInt(id, 10)]
	if !found || len(pair) != 2 {
		return nil, nil, false
	}
	one := func(v any) any {
		if l, ok := v.([]any); ok && len(l) == 1 {
			return l[0]
		}
		return nil
	}
	return one(pair[0]), one(pair[1]), true
}

func rowKey(table string, id int64) string { return table + ":" + strconv.FormatInt(id, 10) }

// page turns decoded rows into a Page: keys, links, attachment metadata,
// origins, and the keys records had before (Page.Renamed). Its stages:
// learn what the rows need (pageFacts), then per row its key (recordKey),
// its former key and its columns' links and attachments (fill).
func (r *run) page(ctx context.Context, t *table, rows []row) (*sources.Page, error) {
	f, err := r.pageFacts(ctx, t, rows)
	if err != nil {
		return nil, err
	}
	s := r.s
	pg := &sources.Page{Records: make([]sources.Record, 0, len(rows))}
	for _, rw := range rows {
		key, skip := r.recordKey(t, rw, f)
		if skip != nil {
			pg.Skipped = append(pg.Skipped, *skip)
			continue
		}
		rec := sources.Record{Key: key, Anchor: t.Name, Attributes: rw.attrs, Origin: sources.Origin{Scope: scopeOf(t), ID: rw.id}}
		// The key the row's record had: state's, or the same key under the
		// name the table was synced under before.
		prev, ok := f.stored[rw.id]
		if !ok && t.Prev != "" {
			_, v, _ := strings.Cut(key, ":")
			prev = t.Prev + ":" + v
		}
		if prev != "" && prev != key {
			if pg.Renamed == nil {
				pg.Renamed = map[string]string{}
			}
			pg.Renamed[key] = prev
		}
		r.fill(&rec, t, rw)
		s.stats.Rows.Add(1)
		s.stats.Links.Add(int64(len(rec.Links)))
		pg.Records = append(pg.Records, rec)
		if len(s.cfg.AttachmentFormats) > 0 {
			r.attachmentRecords(ctx, pg, t, rec, pg.Renamed[key])
		}
	}
	return pg, nil
}

// pageFacts is what a page of rows needs to know before its rows become
// records.
type pageFacts struct {
	// stored is row id -> the key state has for the row's record.
	stored map[int64]string
	// dup marks rows whose key repeats an earlier row's (a full listing
	// of a keyed table).
	dup map[int64]bool
	// holder is row id -> the row already holding its key (an
	// incremental read of a keyed table).
	holder map[int64]int64
}

// pageFacts resolves the keys rows refer to, loads the attachment
// metadata once per read, and asks state for the rows' stored keys and
// the key checks (repeated, taken) for rows' keys.
func (r *run) pageFacts(ctx context.Context, t *table, rows []row) (pageFacts, error) {
	var f pageFacts
	if err := r.resolveRefs(ctx, t, rows); err != nil {
		return f, err
	}
	if t.HasAtt && r.att == nil {
		if err := r.loadAttachments(ctx); err != nil {
			return f, err
		}
	}
	var err error
	if f.stored, err = r.storedKeysOf(ctx, t, rows); err != nil {
		return f, err
	}
	if dc := r.dups[t.ID]; dc != nil {
		if f.dup, err = r.repeated(ctx, dc, t, rows); err != nil {
			return f, err
		}
	} else if !r.full && t.KeyCol != "" {
		if f.holder, err = r.takenKeys(ctx, t, rows, f.stored); err != nil {
			return f, err
		}
	}
	return f, nil
}

// recordKey returns the key of rw's record: "<table>:<row id>", or
// "<table>:<key column value>" for a keyed table. skip is set instead when
// a cell of the row could not be decoded or the row has no usable key: an
// empty key cell, a key another row holds (the skip names the row's
// stored record, which is kept as it was) or one an earlier row of the
// listing has.
func (r *run) recordKey(t *table, rw row, f pageFacts) (key string, skip *sources.Skip) {
	s := r.s
	key = rowKey(t.Name, rw.id)
	if rw.bad != nil {
		if prev, had := f.stored[rw.id]; had {
			key = prev // the row's record, kept as it was
		}
		return "", &sources.Skip{Key: key, Err: rw.bad}
	}
	if t.KeyCol == "" {
		return key, nil
	}
	k, ok := keyString(rw.attrs[t.KeyCol])
	if !ok {
		return "", &sources.Skip{Key: key, Err: fmt.Errorf("grist document %s table %s row %d: key column %s is empty or not a scalar", s.cfg.DocID, t.ID, rw.id, t.KeyColID)}
	}
	key = t.Name + ":" + k
	if h, ok := f.holder[rw.id]; ok {
		s.stats.DuplicateKeys.Add(1)
		skipKey := key
		if prev, had := f.stored[rw.id]; had {
			skipKey = prev // the row's record, kept as it was
		}
		return "", &sources.Skip{Key: skipKey, Err: fmt.Errorf("grist document %s table %s row %d: key %q in column %s is held by row %d; the row's record is kept as it was until its key is unique", s.cfg.DocID, t.ID, rw.id, k, t.KeyColID, h)}
	}
	if f.dup[rw.id] {
		s.stats.DuplicateKeys.Add(1)
		return "", &sources.Skip{Key: key, Err: fmt.Errorf("grist document %s table %s row %d: key %q in column %s repeats an earlier row", s.cfg.DocID, t.ID, rw.id, k, t.KeyColID)}
	}
	return key, nil
}

// fill gives rec the links of rw's Ref and RefList cells and replaces
// its Attachments cells' ids with the attachments' metadata.
func (r *run) fill(rec *sources.Record, t *table, rw row) {
	for _, c := range t.Cols {
		v := rw.attrs[c.Name]
		switch c.Base {
		case "Ref":
			r.link(rec, c, v)
		case "RefList":
			if l, ok := v.([]any); ok {
				for _, e := range l {
					r.link(rec, c, e)
				}
			} else if _, ok := v.(string); ok {
				r.s.stats.RefUnmatched.Add(1)
			}
		case "Attachments":
			if l, ok := v.([]any); ok {
				out := make([]any, 0, len(l))
				for _, e := range l {
					id, _ := e.(int64)
					if m, ok := r.att[id]; ok {
						out = append(out, m)
					} else {
						out = append(out, map[string]any{"id": e})
					}
				}
				rw.attrs[c.Name] = out
			}
		}
	}
}

// resolveRefs makes sure the keys of the rows rows refer to in keyed
// tables are known: one question per keyed target table for the ids not
// known yet (rowsByID). A full listing keeps at most keyCachePages pages
// of a target's ids, and learns the keys of a page of its own target table
// from the page itself.
func (r *run) resolveRefs(ctx context.Context, t *table, rows []row) error {
	want := map[string][]int64{} // target tableId -> ids
	var targets []string
	for _, c := range t.Cols {
		if c.Base != "Ref" && c.Base != "RefList" {
			continue
		}
		kt, err := r.keyTableOf(ctx, c.Target)
		if err != nil {
			return err
		}
		if kt == nil {
			continue
		}
		if _, ok := want[c.Target]; !ok {
			targets = append(targets, c.Target)
			want[c.Target] = nil
			if r.full {
				if len(kt.vals)+len(kt.absent) > keyCachePages*r.s.cfg.PageSize {
					clear(kt.vals)
					clear(kt.absent)
				}
				if c.Target == t.ID {
					for _, rw := range rows {
						if k, ok := keyString(rw.attrs[kt.col.Name]); ok {
							kt.vals[rw.id] = k
							delete(kt.absent, rw.id)
						}
					}
				}
			}
		}
		ids := want[c.Target]
		for _, rw := range rows {
			switch v := rw.attrs[c.Name].(type) {
			case int64:
				if v > 0 {
					ids = append(ids, v)
				}
			case []any:
				for _, e := range v {
					if id, ok := e.(int64); ok && id > 0 {
						ids = append(ids, id)
					}
				}
			}
		}
		want[c.Target] = ids
	}
	for _, target := range targets {
		kt := r.keys[target]
		if !r.full && kt.synced {
			if err := r.knownKeys(ctx, kt, want[target]); err != nil {
				return err
			}
		}
		if err := r.fetchKeys(ctx, kt, want[target], false); err != nil {
			return err
		}
	}
	return nil
}

// AttachmentMarker separates a row's key from its attachment's id in the
// key of an attachment document record.
const AttachmentMarker = sources.ChildMarker + "attachment:"

// attachmentRecords appends a document record per attachment of rec whose
// file extension has a format. A download that fails is a Skip: the
// attachment's document is kept as it is, never deleted.
func (r *run) attachmentRecords(ctx context.Context, pg *sources.Page, t *table, rec sources.Record, prevRow string) {
	for _, c := range t.Cols {
		if c.Base != "Attachments" {
			continue
		}
		list, _ := rec.Attributes[c.Name].([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			id, _ := m["id"].(int64)
			name, _ := m["fileName"].(string)
			format, ok := r.s.cfg.AttachmentFormats[strings.ToLower(path.Ext(name))]
			if id <= 0 || !ok {
				continue
			}
			key := rec.Key + AttachmentMarker + strconv.FormatInt(id, 10)
			if prevRow != "" {
				pg.Renamed[key] = prevRow + AttachmentMarker + strconv.FormatInt(id, 10)
			}
			content, err := r.s.Attachment(ctx, id)
			if err != nil {
				pg.Skipped = append(pg.Skipped, sources.Skip{Key: key, Err: fmt.Errorf("grist document %s table %s: attachment %d (%s): %w", r.s.cfg.DocID, t.ID, id, name, err)})
				continue
			}
			pg.Records = append(pg.Records, sources.Record{
				Key:    key,
				Anchor: "Document",
				Attributes: map[string]any{
					"name": name, "format": format, "fileIdent": m["fileIdent"], "size": int64(len(content)),
					"row": rec.Key, "column": c.Name,
				},
				Links:    []sources.Link{{Type: "ATTACHED_TO", ToAnchor: t.Name, ToKey: rec.Key}},
				Document: &sources.Document{Format: format, Content: content},
			})
		}
	}
}

// link adds a Link for one Ref value: a row id > 0. Text (an unmatched
// lookup, grist-api.md "Observed" §3) stays a property and is counted; 0 is
// an empty Ref. The target's key is its key column's value when it is keyed
// by one (a row id with no key, or no row, makes no link).
func (r *run) link(rec *sources.Record, c column, v any) {
	switch x := v.(type) {
	case int64:
		if x <= 0 {
			return
		}
		key := rowKey(c.TargetName, x)
		if kt := r.keys[c.Target]; kt != nil {
			k, ok := kt.vals[x]
			if !ok {
				r.s.stats.RefDangling.Add(1)
				return
			}
			key = c.TargetName + ":" + k
		}
		rec.Links = append(rec.Links, sources.Link{Type: strings.ToUpper(c.Name), ToAnchor: c.TargetName, ToKey: key})
	case string:
		r.s.stats.RefUnmatched.Add(1)
	}
}

// loadAttachments reads _grist_Attachments (fileIdent is the SHA-1 of the
// content plus the extension, grist-api.md "Observed" §5).
func (r *run) loadAttachments(ctx context.Context) error {
	var res struct {
		Records []struct {
			ID     int64 `json:"id"`
			Fields struct {
				FileName  string `json:"fileName"`
				FileIdent string `json:"fileIdent"`
				FileSize  int64  `json:"fileSize"`
			} `json:"fields"`
		} `json:"records"`
	}
	if err := r.s.c.getJSON(ctx, http.MethodGet, "/tables/_grist_Attachments/records", nil, nil, "_grist_Attachments", "read attachment metadata", &res); err != nil {
		return err
	}
	r.att = make(map[int64]map[string]any, len(res.Records))
	for _, a := range res.Records {
		r.att[a.ID] = map[string]any{"id": a.ID, "fileName": a.Fields.FileName, "fileIdent": a.Fields.FileIdent, "fileSize": a.Fields.FileSize}
	}
	return nil
}

// Attachment downloads attachment id's content
// (GET /attachments/{id}/download, grist-api.md §5).
func (s *Source) Attachment(ctx context.Context, id int64) ([]byte, error) {
	return s.c.download(ctx, "/attachments/"+strconv.FormatInt(id, 10)+"/download", fmt.Sprintf("download attachment %d", id))
}
