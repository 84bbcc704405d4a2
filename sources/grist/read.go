package grist

import (
	"context"
	"encoding/json"
	"errors"
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
}

// run holds what one Read learns lazily: attachment metadata and the
// row id -> key maps of tables keyed by a column.
type run struct {
	s       *Source
	keyCols map[string]string // current tableId -> key column, every keyed table
	keyMaps map[string]map[int64]string
	att     map[int64]map[string]any
	seen    map[string]map[string]bool // full listings: keys seen per keyed table
}

func (s *Source) newRun() *run {
	r := &run{s: s, keyCols: map[string]string{}, keyMaps: map[string]map[int64]string{}, seen: map[string]map[string]bool{}}
	for k, v := range s.cfg.KeyColumns {
		r.keyCols[s.current(k)] = v
	}
	return r
}

// pager holds back one page so that only the last page carries the new
// cursor; every earlier page carries the old one.
type pager struct {
	yield   yieldFunc
	pending *sources.Page
	old     string
}

func (p *pager) emit(pg *sources.Page) error {
	pg.Cursor = p.old
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
		p.pending = &sources.Page{Partial: partial}
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
func (s *Source) readFull(ctx context.Context, tables []*table, old string, next cursorState, tags *etagSet, yield yieldFunc) error {
	r := s.newRun()
	p := &pager{yield: yield, old: old}
	for _, t := range tables {
		if t.KeyCol != "" {
			r.seen[t.ID] = map[string]bool{}
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
		delete(r.seen, t.ID)
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
		attrs := make(map[string]any, len(cols))
		for ci := range cols {
			c := &cols[ci]
			v, err := decodeSQLCell(c, rec.Fields[c.ID])
			if err != nil {
				return nil, fmt.Errorf("grist document %s table %s row %d: %w", s.cfg.DocID, t.ID, id, err)
			}
			attrs[c.ID] = v
		}
		rows = append(rows, row{id: id, attrs: attrs})
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
			attrs[c.ID] = errorCell(name)
			continue
		}
		attrs[c.ID] = decodeRecordsCell(c, fields[c.ID])
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

var errNeedFull = errors.New("incremental read needs a full listing")

func (s *Source) readIncremental(ctx context.Context, tables []*table, d *compareResult, old string, next cursorState, yield yieldFunc) error {
	type work struct {
		t   *table
		ids []int64
	}
	var todo []work
	var deleted []string
	for _, t := range tables {
		td := d.Deltas[t.ID]
		if td == nil {
			continue
		}
		ids := slices.Concat(td.AddRows, td.UpdateRows, td.RemoveRows)
		slices.Sort(ids)
		ids = slices.Compact(ids)
		if len(ids) > 0 {
			todo = append(todo, work{t: t, ids: ids})
		}
		// Keys that stop existing: removed rows, and rows whose key value
		// changed. Both come from columnDeltas ([old, new], each a
		// one-element list or null; grist-api.md "Observed" §8).
		for _, id := range td.RemoveRows {
			if t.KeyCol == "" {
				deleted = append(deleted, rowKey(t.ID, id))
				continue
			}
			oldV, _, ok := cellDelta(td, t.KeyCol, id)
			k, kok := keyString(normJSON(oldV))
			if !ok || !kok {
				return s.fallbackFull(ctx, tables, old, next, yield)
			}
			deleted = append(deleted, t.ID+":"+k)
		}
		if t.KeyCol != "" {
			for _, id := range td.UpdateRows {
				oldV, newV, ok := cellDelta(td, t.KeyCol, id)
				if !ok || oldV == nil {
					continue
				}
				ko, _ := keyString(normJSON(oldV))
				kn, _ := keyString(normJSON(newV))
				if ko != "" && ko != kn {
					deleted = append(deleted, t.ID+":"+ko)
				}
			}
		}
	}
	r := s.newRun()
	p := &pager{yield: yield, old: old}
	// Deletions first: a key freed by one row may be taken by another.
	for start := 0; start < len(deleted); start += s.cfg.PageSize {
		end := min(len(deleted), start+s.cfg.PageSize)
		if err := p.emit(&sources.Page{Partial: true, Deleted: deleted[start:end]}); err != nil {
			return err
		}
	}
	for _, w := range todo {
		err := s.rowsByID(ctx, w.t, w.t.Cols, w.ids, func(rows []row) error {
			pg, err := r.page(ctx, w.t, rows)
			if err != nil {
				return err
			}
			pg.Partial = true
			return p.emit(pg)
		})
		if err != nil {
			return err
		}
	}
	return p.finish(next.String(), true)
}

func (s *Source) fallbackFull(ctx context.Context, tables []*table, old string, next cursorState, yield yieldFunc) error {
	s.stats.Incremental.Add(-1)
	s.stats.Fallbacks.Add(1)
	s.stats.FullScans.Add(1)
	next.Full = s.cfg.Now().Unix()
	return s.readFull(ctx, tables, old, next, nil, yield)
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

// page turns decoded rows into a Page: keys, links, attachment metadata.
func (r *run) page(ctx context.Context, t *table, rows []row) (*sources.Page, error) {
	s := r.s
	for _, c := range t.Cols {
		if c.Base == "Ref" || c.Base == "RefList" {
			if _, err := r.keyMap(ctx, s.current(c.Target)); err != nil {
				return nil, err
			}
		}
	}
	if t.HasAtt && r.att == nil {
		if err := r.loadAttachments(ctx); err != nil {
			return nil, err
		}
	}
	pg := &sources.Page{Records: make([]sources.Record, 0, len(rows))}
	for _, rw := range rows {
		key := rowKey(t.ID, rw.id)
		if t.KeyCol != "" {
			k, ok := keyString(rw.attrs[t.KeyCol])
			if !ok {
				pg.Skipped = append(pg.Skipped, sources.Skip{Key: key, Err: fmt.Errorf("grist document %s table %s row %d: key column %s is empty or not a scalar", s.cfg.DocID, t.ID, rw.id, t.KeyCol)})
				continue
			}
			key = t.ID + ":" + k
			if seen := r.seen[t.ID]; seen != nil {
				if seen[key] {
					s.stats.DuplicateKeys.Add(1)
					pg.Skipped = append(pg.Skipped, sources.Skip{Key: key, Err: fmt.Errorf("grist document %s table %s row %d: key %q in column %s repeats an earlier row", s.cfg.DocID, t.ID, rw.id, k, t.KeyCol)})
					continue
				}
				seen[key] = true
			}
		}
		rec := sources.Record{Key: key, Anchor: t.ID, Attributes: rw.attrs}
		for _, c := range t.Cols {
			v := rw.attrs[c.ID]
			switch c.Base {
			case "Ref":
				r.link(&rec, c, v)
			case "RefList":
				if l, ok := v.([]any); ok {
					for _, e := range l {
						r.link(&rec, c, e)
					}
				} else if _, ok := v.(string); ok {
					s.stats.RefUnmatched.Add(1)
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
					rw.attrs[c.ID] = out
				}
			}
		}
		s.stats.Rows.Add(1)
		s.stats.Links.Add(int64(len(rec.Links)))
		pg.Records = append(pg.Records, rec)
		if len(s.cfg.AttachmentFormats) > 0 {
			r.attachmentRecords(ctx, pg, t, rec)
		}
	}
	return pg, nil
}

// AttachmentMarker separates a row's key from its attachment's id in the
// key of an attachment document record.
const AttachmentMarker = sources.ChildMarker + "attachment:"

// attachmentRecords appends a document record per attachment of rec whose
// file extension has a format. A download that fails is a Skip: the
// attachment's document is kept as it is, never deleted.
func (r *run) attachmentRecords(ctx context.Context, pg *sources.Page, t *table, rec sources.Record) {
	for _, c := range t.Cols {
		if c.Base != "Attachments" {
			continue
		}
		list, _ := rec.Attributes[c.ID].([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			id, _ := m["id"].(int64)
			name, _ := m["fileName"].(string)
			format, ok := r.s.cfg.AttachmentFormats[strings.ToLower(path.Ext(name))]
			if id <= 0 || !ok {
				continue
			}
			key := rec.Key + AttachmentMarker + strconv.FormatInt(id, 10)
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
					"row": rec.Key, "column": c.ID,
				},
				Links:    []sources.Link{{Type: "ATTACHED_TO", ToAnchor: t.ID, ToKey: rec.Key}},
				Document: &sources.Document{Format: format, Content: content},
			})
		}
	}
}

// link adds a Link for one Ref value: a row id > 0. Text (an unmatched
// lookup, grist-api.md "Observed" §3) stays a property and is counted; 0 is
// an empty Ref.
func (r *run) link(rec *sources.Record, c column, v any) {
	switch x := v.(type) {
	case int64:
		if x <= 0 {
			return
		}
		target := r.s.current(c.Target)
		key := rowKey(target, x)
		if m := r.keyMaps[target]; m != nil {
			k, ok := m[x]
			if !ok {
				r.s.stats.RefDangling.Add(1)
				return
			}
			key = target + ":" + k
		}
		rec.Links = append(rec.Links, sources.Link{Type: strings.ToUpper(c.ID), ToAnchor: target, ToKey: key})
	case string:
		r.s.stats.RefUnmatched.Add(1)
	}
}

// keyMap returns row id -> key value for a table keyed by a column (nil
// for tables keyed by row id), reading the id and key column once per Read.
func (r *run) keyMap(ctx context.Context, tableID string) (map[int64]string, error) {
	col, ok := r.keyCols[tableID]
	if !ok {
		return nil, nil
	}
	if m, ok := r.keyMaps[tableID]; ok {
		return m, nil
	}
	t, err := r.s.columns(ctx, tableID)
	if err != nil {
		return nil, err
	}
	var kc []column
	for _, c := range t.Cols {
		if c.ID == col {
			kc = append(kc, c)
		}
	}
	if len(kc) == 0 {
		return nil, fmt.Errorf("grist document %s table %s: key column %q not found", r.s.cfg.DocID, tableID, col)
	}
	t.Cols = kc
	m := map[int64]string{}
	_, err = r.s.scanTable(ctx, t, func(rows []row) error {
		for _, rw := range rows {
			if k, ok := keyString(rw.attrs[col]); ok {
				m[rw.id] = k
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.keyMaps[tableID] = m
	return m, nil
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
