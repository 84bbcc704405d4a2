package grist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
)

// Limits of one write request (grist-api.md §7 and "Observed" §7): Grist
// refuses a JSON body over 1 MiB (413), so the Writer keeps each body
// under MaxWriteBytes, with room for the envelope, and sends at most
// MaxWriteRows records per request (the size the captures of a real
// server used, grist-samples/real/setup/09 and 10).
const (
	MaxWriteBytes = 1000 * 1000
	MaxWriteRows  = 500
)

// Writer writes to one document: tables, columns and records, within the
// limits above, one request at a time (the Config's MaxInFlight bounds it
// too). Requests that cannot have been applied are retried (429, which
// Grist answers before doing anything); GET and PATCH are also retried
// after a 5xx or a network error, being idempotent. A POST or a delete
// that failed otherwise is not repeated: it may have been applied, and the
// caller reconciles (reads the rows back) before writing again.
type Writer struct {
	c     *client
	doc   string
	stats counters
}

type noRetryKey struct{}

// NewWriter returns a Writer for cfg's document (Server, DocID, APIKey,
// HTTPClient, MaxInFlight and the retry settings are used); cfg's errors
// are New's.
func NewWriter(cfg Config, logger *slog.Logger) (*Writer, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &Writer{doc: cfg.DocID}
	c, err := newClient(cfg, &w.stats, logger)
	if err != nil {
		return nil, err
	}
	check := c.rc.CheckRetry
	c.rc.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Value(noRetryKey{}) != nil && (resp == nil || resp.StatusCode != http.StatusTooManyRequests) {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			return false, nil
		}
		return check(ctx, resp, err)
	}
	w.c = c
	return w, nil
}

// Requests returns the number of HTTP requests sent (retries not counted).
func (w *Writer) Requests() int64 { return w.stats.Requests.Load() }

func (w *Writer) call(ctx context.Context, method, path string, q url.Values, body any, table, op string, out any) error {
	if method != http.MethodGet && method != http.MethodPatch {
		ctx = context.WithValue(ctx, noRetryKey{}, true)
	}
	resp, err := w.c.do(ctx, method, path, q, body, nil, table, op)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("grist document %s table %s: %s: decode response: %w", w.doc, table, op, err)
	}
	return nil
}

// TableInfo is one table of GET /tables.
type TableInfo struct {
	ID  string
	Ref int64
}

// Tables lists the document's tables (summary and metadata tables
// included), sorted by id.
func (w *Writer) Tables(ctx context.Context) ([]TableInfo, error) {
	var tl struct {
		Tables []struct {
			ID     string `json:"id"`
			Fields struct {
				TableRef int64 `json:"tableRef"`
			} `json:"fields"`
		} `json:"tables"`
	}
	if err := w.call(ctx, http.MethodGet, "/tables", nil, nil, "", "list tables", &tl); err != nil {
		return nil, err
	}
	out := make([]TableInfo, 0, len(tl.Tables))
	for _, t := range tl.Tables {
		out = append(out, TableInfo{ID: t.ID, Ref: t.Fields.TableRef})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ColumnInfo is one column of GET /tables/{t}/columns (grist-api.md §2).
type ColumnInfo struct {
	ID        string
	Ref       int64
	Type      string
	Label     string
	IsFormula bool
	Formula   string
	// RecalcWhen and RecalcDeps (colRefs) make a data column with a
	// formula a trigger formula column.
	RecalcWhen int
	RecalcDeps []int64
	ParentPos  float64
}

// Columns lists a table's columns, hidden ones (manualSort, gristHelper_*)
// left out, in parentPos order (the array order is not reliable,
// grist-api.md "Observed" §2).
func (w *Writer) Columns(ctx context.Context, table string) ([]ColumnInfo, error) {
	var cl struct {
		Columns []struct {
			ID     string `json:"id"`
			Fields struct {
				ColRef     int64       `json:"colRef"`
				Type       string      `json:"type"`
				Label      string      `json:"label"`
				IsFormula  bool        `json:"isFormula"`
				Formula    string      `json:"formula"`
				RecalcWhen int         `json:"recalcWhen"`
				RecalcDeps []any       `json:"recalcDeps"`
				ParentPos  json.Number `json:"parentPos"`
			} `json:"fields"`
		} `json:"columns"`
	}
	if err := w.call(ctx, http.MethodGet, "/tables/"+url.PathEscape(table)+"/columns", nil, nil, table, "list columns", &cl); err != nil {
		return nil, err
	}
	out := make([]ColumnInfo, 0, len(cl.Columns))
	for _, c := range cl.Columns {
		if hiddenColumn(c.ID, c.Fields.Type) {
			continue
		}
		pos, _ := c.Fields.ParentPos.Float64()
		ci := ColumnInfo{ID: c.ID, Ref: c.Fields.ColRef, Type: c.Fields.Type, Label: c.Fields.Label, IsFormula: c.Fields.IsFormula,
			Formula: c.Fields.Formula, RecalcWhen: c.Fields.RecalcWhen, ParentPos: pos}
		if len(c.Fields.RecalcDeps) > 0 && c.Fields.RecalcDeps[0] == "L" {
			for _, d := range c.Fields.RecalcDeps[1:] {
				if n, ok := normJSON(d).(int64); ok {
					ci.RecalcDeps = append(ci.RecalcDeps, n)
				}
			}
		}
		out = append(out, ci)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ParentPos < out[j].ParentPos })
	return out, nil
}

// NewColumn is a column to create: its colId and fields (type, label,
// isFormula, formula, recalcWhen, recalcDeps, …, as POST /columns and the
// AddColumn user action take them).
type NewColumn struct {
	ID     string         `json:"id"`
	Fields map[string]any `json:"fields"`
}

// AddTable creates a table with columns (POST /tables) and returns the
// tableId Grist gave it: a taken id gets a number appended.
func (w *Writer) AddTable(ctx context.Context, id string, cols []NewColumn) (string, error) {
	type tbl struct {
		ID      string      `json:"id"`
		Columns []NewColumn `json:"columns"`
	}
	var out struct {
		Tables []struct {
			ID string `json:"id"`
		} `json:"tables"`
	}
	body := map[string]any{"tables": []tbl{{ID: id, Columns: cols}}}
	if err := w.call(ctx, http.MethodPost, "/tables", nil, body, id, "create table", &out); err != nil {
		return "", err
	}
	if len(out.Tables) != 1 {
		return "", fmt.Errorf("grist document %s: create table %s: %d tables in the answer", w.doc, id, len(out.Tables))
	}
	return out.Tables[0].ID, nil
}

// AddColumns adds columns to a table (POST /tables/{t}/columns) and
// returns the colIds Grist gave them, in order.
func (w *Writer) AddColumns(ctx context.Context, table string, cols []NewColumn) ([]string, error) {
	var out struct {
		Columns []struct {
			ID string `json:"id"`
		} `json:"columns"`
	}
	body := map[string]any{"columns": cols}
	if err := w.call(ctx, http.MethodPost, "/tables/"+url.PathEscape(table)+"/columns", nil, body, table, "add columns", &out); err != nil {
		return nil, err
	}
	if len(out.Columns) != len(cols) {
		return nil, fmt.Errorf("grist document %s table %s: add columns: %d ids for %d columns", w.doc, table, len(out.Columns), len(cols))
	}
	ids := make([]string, len(cols))
	for i, c := range out.Columns {
		ids[i] = c.ID
	}
	return ids, nil
}

// Apply sends user actions (POST /apply, applied together or not at all)
// and returns their retValues.
func (w *Writer) Apply(ctx context.Context, actions [][]any) ([]any, error) {
	var out struct {
		RetValues []any `json:"retValues"`
	}
	if err := w.call(ctx, http.MethodPost, "/apply", nil, actions, "", "apply user actions", &out); err != nil {
		return nil, err
	}
	return out.RetValues, nil
}

// Row is one record as GET /records returns it: id and fields in /records
// normal encoding, numbers as int64 or float64.
type Row struct {
	ID     int64
	Fields map[string]any
}

// Records reads the rows of table matching filter (column → allowed values;
// nil = every row), sorted by id (GET /records?filter=&sort=id,
// grist-api.md §3).
func (w *Writer) Records(ctx context.Context, table string, filter map[string][]any) ([]Row, error) {
	q := url.Values{"sort": {"id"}}
	if len(filter) > 0 {
		b, err := json.Marshal(filter)
		if err != nil {
			return nil, err
		}
		q.Set("filter", string(b))
	}
	var out struct {
		Records []struct {
			ID     int64          `json:"id"`
			Fields map[string]any `json:"fields"`
		} `json:"records"`
	}
	if err := w.call(ctx, http.MethodGet, "/tables/"+url.PathEscape(table)+"/records", q, nil, table, "read rows", &out); err != nil {
		return nil, err
	}
	rows := make([]Row, len(out.Records))
	for i, r := range out.Records {
		f := make(map[string]any, len(r.Fields))
		for k, v := range r.Fields {
			f[k] = normJSON(v)
		}
		rows[i] = Row{ID: r.ID, Fields: f}
	}
	return rows, nil
}

// batches splits items into runs of at most MaxWriteRows whose JSON
// encodings sum to at most MaxWriteBytes; an item alone over the limit is
// an error naming it.
func batches[T any](items []T, name func(int) string) ([][]T, error) {
	var out [][]T
	start, size := 0, 0
	for i, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, fmt.Errorf("%s: encode: %w", name(i), err)
		}
		n := len(b) + 1
		if n > MaxWriteBytes {
			return nil, fmt.Errorf("%s: %d bytes of JSON, more than the %d bytes a Grist request may carry", name(i), n, MaxWriteBytes)
		}
		if i > start && (i-start >= MaxWriteRows || size+n > MaxWriteBytes) {
			out = append(out, items[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(items) {
		out = append(out, items[start:])
	}
	return out, nil
}

// AddRecords adds rows (each a map colId → value in /records normal
// encoding) in batches within the request limits (POST /records) and
// returns their new row ids in order. Rows with different sets of columns
// go in different requests, so that Grist never fills a column a row did
// not name. On error, the ids of the rows added before it are returned
// with it (0 for the others).
func (w *Writer) AddRecords(ctx context.Context, table string, rows []map[string]any) ([]int64, error) {
	type rec struct {
		Fields map[string]any `json:"fields"`
	}
	groups := map[string][]int{}
	var order []string
	for i, r := range rows {
		k := fieldSet(r)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	ids := make([]int64, len(rows))
	for _, k := range order {
		at := groups[k]
		recs := make([]rec, len(at))
		for i, j := range at {
			recs[i] = rec{Fields: rows[j]}
		}
		parts, err := batches(recs, func(i int) string { return fmt.Sprintf("grist document %s table %s: new row %d", w.doc, table, at[i]) })
		if err != nil {
			return ids, err
		}
		n := 0
		for _, part := range parts {
			var out struct {
				Records []struct {
					ID int64 `json:"id"`
				} `json:"records"`
			}
			if err := w.call(ctx, http.MethodPost, "/tables/"+url.PathEscape(table)+"/records", nil, map[string]any{"records": part}, table, "add rows", &out); err != nil {
				return ids, err
			}
			if len(out.Records) != len(part) {
				return ids, fmt.Errorf("grist document %s table %s: add rows: %d ids for %d rows", w.doc, table, len(out.Records), len(part))
			}
			for _, r := range out.Records {
				ids[at[n]] = r.ID
				n++
			}
		}
	}
	return ids, nil
}

// fieldSet is a row's sorted column names, as a map key.
func fieldSet(r map[string]any) string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b, _ := json.Marshal(keys)
	return string(b)
}

// UpdateRecords sets fields of existing rows (PATCH /records) in batches
// within the request limits. Rows are grouped by their set of fields, as
// Grist requires one set per request ("PATCH requires all records to have
// same fields", grist-api.md "Observed" §3).
func (w *Writer) UpdateRecords(ctx context.Context, table string, rows []Row) error {
	type rec struct {
		ID     int64          `json:"id"`
		Fields map[string]any `json:"fields"`
	}
	groups := map[string][]rec{}
	var order []string
	for _, r := range rows {
		k := fieldSet(r.Fields)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], rec{ID: r.ID, Fields: r.Fields})
	}
	for _, k := range order {
		parts, err := batches(groups[k], func(i int) string {
			return fmt.Sprintf("grist document %s table %s: row %d", w.doc, table, groups[k][i].ID)
		})
		if err != nil {
			return err
		}
		for _, part := range parts {
			if err := w.call(ctx, http.MethodPatch, "/tables/"+url.PathEscape(table)+"/records", nil, map[string]any{"records": part}, table, "update rows", nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// DeleteRecords removes rows by id (POST /records/delete) in batches.
func (w *Writer) DeleteRecords(ctx context.Context, table string, ids []int64) error {
	for start := 0; start < len(ids); start += MaxWriteRows * 10 {
		part := ids[start:min(len(ids), start+MaxWriteRows*10)]
		if err := w.call(ctx, http.MethodPost, "/tables/"+url.PathEscape(table)+"/records/delete", nil, part, table, "delete rows", nil); err != nil {
			return err
		}
	}
	return nil
}

// InvalidRowID returns the row id of a 400 "Invalid row id N" answer (a
// row deleted by someone else since it was read), or 0.
func InvalidRowID(err error) int64 {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		return 0
	}
	var n int64
	if _, err := fmt.Sscanf(ae.Message, "Invalid row id %d", &n); err != nil {
		return 0
	}
	return n
}
