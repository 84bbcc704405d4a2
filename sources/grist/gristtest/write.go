package gristtest

// Writes: the calls a client makes to create tables and columns and to
// add, update and delete rows, with the shapes and limits of a real
// grist-core 1.7.17 (grist-api.md §2, §3, §7 and "Observed"; captures in
// grist-samples/real/setup and errors):
//
//   - POST /tables {"tables":[{"id","columns":[{"id","fields"}]}]} →
//     {"tables":[{"id"}]}; POST /tables/{t}/columns {"columns":[…]} →
//     {"columns":[{"id"}]}. A taken id gets a number appended ("Notes2"),
//     as Grist's AddTable and AddColumn do.
//     A column POST /columns or AddColumn adds without isFormula is an
//     empty column (isFormula true, formula "", type Any unless given);
//     POST /tables makes it a data column unless it has a formula
//     (sandbox/grist/useractions.py _make_clean_col_info, doAddTable).
//   - POST /tables/{t}/records {"records":[{"fields"}]} →
//     {"records":[{"id"}]}; an unknown column is 400 `Invalid column "x"`.
//     Writes through the API (POST and PATCH /records, BulkAddRecord and
//     BulkUpdateRecord) refuse a value for a column with a formula and make
//     an empty column a data column (acceptDataLocked).
//   - PATCH /tables/{t}/records {"records":[{"id","fields"}]} → null; every
//     record must have the same fields (400 `PATCH requires all records to
//     have same fields`), an unknown row is 400 `Invalid row id N`.
//   - POST /tables/{t}/records/delete [ids] → null.
//   - DELETE /tables/{t}/columns/{c} → null: the RemoveColumn user action
//     (DocApi.ts:863-873 at f98cda9), as an expert removing the column in
//     the UI; an unknown column is 404 `Table or column not found "t.c"`
//     (docmodel.py:239-244 get_column_rec's ValueError, mapped by
//     app/plugin/TableOperationsImpl.ts:234-262). A later write naming the
//     removed column is 400 `Invalid column "c"` (the sandbox's KeyError
//     from useractions.py:1051 _ensure_column_accepts_data, mapped by
//     TableOperationsImpl.ts:247-253 for the columns the request names).
//   - POST /apply [[action, …], …] → {actionNum, actionHash, retValues,
//     isModification} for the user actions AddColumn, AddVisibleColumn,
//     RemoveColumn, RemoveTable,
//     BulkAddRecord, BulkUpdateRecord and BulkRemoveRecord, and UpdateRecord
//     and BulkUpdateRecord of recalcWhen and recalcDeps on
//     _grist_Tables_column. recalcDeps given to a column being added is
//     refused as grist-core refuses it (recalcDepsError).
//   - A JSON body over 1 MiB is 413 {"error":"request entity too large"}
//     (1,048,576 bytes accepted, one more refused).
//
// Each write is one action of the document's history (/states, /compare).
// Rows are written as the user of the request's API key (AddAPIKey), which
// is what trigger formulas see as `user`.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxBodyBytes is the largest JSON body Grist accepts (express.json
// "1mb" = 1 MiB, grist-api.md "Observed" §7).
const MaxBodyBytes = 1 << 20

// User is the person an API key belongs to: `user.Email` and `user.Name`
// in trigger formulas.
type User struct{ Email, Name string }

// Owner is the user of APIKey.
var Owner = User{Email: "owner@example.com", Name: "Owner"}

func (e *apiErr) Error() string { return e.msg }

// AddAPIKey makes key a valid API key acting as u (an expert editing
// through the API, as in the UI).
func (s *Server) AddAPIKey(key string, u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[key] = u
}

// SetNow sets the clock NOW() reads in trigger formulas.
func (s *Server) SetNow(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// Table returns a copy of a table's rows by id (cells in /records normal
// encoding, hidden columns included), nil when there is no such table.
func (s *Server) Table(tableID string) map[int64]map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tables[tableID]
	if !ok {
		return nil
	}
	out := make(map[int64]map[string]any, len(t.rows))
	for id, r := range t.rows {
		out[id] = maps.Clone(r)
	}
	return out
}

// Columns returns a copy of a table's columns in position order, nil when
// there is no such table.
func (s *Server) Columns(tableID string) []Column {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tables[tableID]
	if !ok {
		return nil
	}
	out := make([]Column, 0, len(t.cols))
	for _, c := range t.cols {
		cc := *c
		cc.RecalcDeps = slices.Clone(c.RecalcDeps)
		out = append(out, cc)
	}
	return out
}

func (s *Server) writeRoutes(mux *http.ServeMux, p string) {
	mux.HandleFunc("POST "+p+"/tables", s.unlessBroken(s.postTables))
	mux.HandleFunc("POST "+p+"/tables/{table}/columns", s.unlessBroken(s.postColumns))
	mux.HandleFunc("DELETE "+p+"/tables/{table}/columns/{col}", s.unlessBroken(s.deleteColumn))
	mux.HandleFunc("POST "+p+"/tables/{table}/records", s.unlessBroken(s.postRecords))
	mux.HandleFunc("PATCH "+p+"/tables/{table}/records", s.unlessBroken(s.patchRecords))
	mux.HandleFunc("POST "+p+"/tables/{table}/records/delete", s.unlessBroken(s.deleteRecords))
	mux.HandleFunc("POST "+p+"/apply", s.unlessBroken(s.apply))
}

// Trigger formula columns (docs/grist-notes.md). grist-core's
// doAddColumn (sandbox/grist/useractions.py) copies colInfo.recalcDeps
// into the _grist_Tables_column record as it came, without decoding it
// (BulkUpdateRecord decodes its values: actions.decode_bulk_values), so
// the encoded ["L", colRef…] is stored as an AltText that the engine then
// iterates (engine.py _maybe_update_trigger_dependencies: `for dc in
// col_rec.recalcDeps`). AddColumn and AddVisibleColumn through /apply, and
// POST /tables/{t}/columns (DocApi.ts: AddVisibleColumn with the fields),
// fail with HTTP 500 and the sandbox's TypeError, and the document's data
// engine stays inconsistent until it reloads: every later write fails
// (grist-core 1.7.17). The Grist UI adds the column first, then sets
// recalcWhen and recalcDeps with ["UpdateRecord", "_grist_Tables_column",
// colRef, {…}] (app/client/ui/TriggerFormulas.ts setRecalc), which this
// server takes.

// recalcDepsError is the answer grist-core gives an added column with
// recalcDeps.
const recalcDepsError = "[Sandbox] TypeError 'AltText' object is not iterable"

// addsRecalcDeps reports whether column fields or an AddColumn colInfo
// set recalcDeps on a column whose recalcDeps grist-core then iterates:
// a data column (isFormula defaults to true, useractions.py
// _make_clean_col_info) with a formula and recalcWhen DEFAULT (0, also
// when absent) — engine.py _maybe_update_trigger_dependencies skips
// formula columns, columns without a formula and other recalcWhen.
func addsRecalcDeps(f map[string]any) bool {
	if v, ok := f["recalcDeps"]; !ok || v == nil {
		return false
	}
	if isFormula, ok := f["isFormula"].(bool); !ok || isFormula {
		return false
	}
	if formula, _ := f["formula"].(string); formula == "" {
		return false
	}
	when, ok := cellValue(f["recalcWhen"]).(int64)
	return !ok || when == 0
}

// unlessBroken refuses every write while the document's data engine is
// inconsistent (after a refused recalcDeps, until Reload).
func (s *Server) unlessBroken(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		broken := s.broken
		s.mu.Unlock()
		if broken {
			writeErr(w, r, 500, recalcDepsError)
			return
		}
		h(w, r)
	}
}

// Reload is the document reloading (an owner's "Reload" in the UI, or a
// server restart): its data engine is consistent again after a refused
// recalcDeps.
func (s *Server) Reload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.broken = false
}

// userOf returns the user of the request's API key (the auth check has
// passed).
func (s *Server) userOf(r *http.Request) User {
	return s.users[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
}

// readBody decodes a JSON body of at most MaxBodyBytes into v, numbers as
// json.Number; it writes the error answer and returns false on failure.
func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		writeErr(w, r, 400, "Invalid payload")
		return false
	}
	if len(b) > MaxBodyBytes {
		writeErr(w, r, 413, "request entity too large")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		writeJSON(w, r, 400, map[string]any{"error": "Invalid payload", "details": map[string]any{"userError": err.Error()}})
		return false
	}
	return true
}

// cellValue turns a decoded JSON cell into the stored form: json.Number
// to int64 or float64, recursively in lists.
func cellValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cellValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cellValue(e)
		}
		return out
	}
	return v
}

type colSpec struct {
	ID     string         `json:"id"`
	Fields map[string]any `json:"fields"`
}

// newColumn builds a column from REST fields or an AddColumn colInfo as
// grist-core's _make_clean_col_info does (sandbox/grist/useractions.py:130-142
// at f98cda9): isFormula absent is isFormula, the type absent is Any for a
// formula column and Text for a data one, the formula absent is "". A
// formula column with no formula is an empty column (acceptDataLocked).
func newColumn(id string, f map[string]any, isFormula bool) Column {
	c := Column{ID: id, IsFormula: isFormula}
	if v, ok := f["isFormula"].(bool); ok {
		c.IsFormula = v
	}
	c.Type = "Text"
	if c.IsFormula {
		c.Type = "Any"
	}
	if v, ok := f["type"].(string); ok && v != "" {
		c.Type = v
	}
	c.Formula, _ = f["formula"].(string)
	c.Label, _ = f["label"].(string)
	if n, ok := cellValue(f["recalcWhen"]).(int64); ok {
		c.RecalcWhen = int(n)
	}
	if l, ok := cellValue(f["recalcDeps"]).([]any); ok && len(l) > 0 && l[0] == "L" {
		for _, e := range l[1:] {
			if n, ok := e.(int64); ok {
				c.RecalcDeps = append(c.RecalcDeps, int(n))
			}
		}
	}
	return c
}

// addTableFields returns the fields of a column POST /tables keeps:
// grist-core's AddTable (DocApi.ts POST /tables) stores only type,
// isFormula, formula, label and widgetOptions of each column
// (sandbox/grist/useractions.py doAddTable), so recalcWhen and
// recalcDeps given there are dropped, not refused.
func addTableFields(f map[string]any) map[string]any {
	out := maps.Clone(f)
	delete(out, "recalcWhen")
	delete(out, "recalcDeps")
	return out
}

// uniqueID appends 2, 3, … to id until taken (ignoring case, as Grist
// compares table and column ids) returns false.
func uniqueID(id string, taken func(string) bool) string {
	if !taken(id) {
		return id
	}
	for n := 2; ; n++ {
		if c := id + strconv.Itoa(n); !taken(c) {
			return c
		}
	}
}

func (s *Server) tableTaken(id string) bool {
	for k := range s.tables {
		if strings.EqualFold(k, id) {
			return true
		}
	}
	return false
}

func (t *table) colTaken(id string) bool {
	return slices.ContainsFunc(t.cols, func(c *Column) bool { return strings.EqualFold(c.ID, id) })
}

func (s *Server) postTables(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Tables []struct {
			ID      string    `json:"id"`
			Columns []colSpec `json:"columns"`
		} `json:"tables"`
	}
	if !readBody(w, r, &body) {
		return
	}
	if len(body.Tables) == 0 {
		writeErr(w, r, 400, "Invalid payload")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, tb := range body.Tables {
		id := uniqueID(tb.ID, s.tableTaken)
		cols := make([]Column, 0, len(tb.Columns))
		for _, cs := range tb.Columns {
			// doAddTable: isFormula defaults to bool(formula)
			// (useractions.py:2160), a data column unless a formula is given.
			formula, _ := cs.Fields["formula"].(string)
			cols = append(cols, newColumn(cs.ID, addTableFields(cs.Fields), formula != ""))
		}
		t := s.addTableLocked(id, cols)
		s.record(&action{deltas: map[string]map[int64]*rowChange{}, renames: [][2]string{{"", id}},
			colRenames: map[string][][2]string{id: addedColumns(t)}})
		out = append(out, map[string]any{"id": id})
	}
	writeJSON(w, r, 200, map[string]any{"tables": out})
}

// addColumnLocked appends a column with its type's empty value in every
// row and returns it; the caller records the action.
func (s *Server) addColumnLocked(t *table, c Column) *Column {
	c.ID = uniqueID(c.ID, t.colTaken)
	c.colRef = s.nextColRef
	c.pos = s.nextColRef
	s.nextColRef++
	if c.Type == "" {
		c.Type = "Any"
	}
	t.cols = append(t.cols, &c)
	for _, row := range t.rows {
		row[c.ID] = emptyValue(c.Type)
	}
	return &c
}

func (s *Server) postColumns(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Columns []colSpec `json:"columns"`
	}
	if !readBody(w, r, &body) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tableOr404(w, r)
	if t == nil {
		return
	}
	for _, cs := range body.Columns {
		if addsRecalcDeps(cs.Fields) {
			s.broken = true
			writeErr(w, r, 500, recalcDepsError)
			return
		}
	}
	out := []map[string]any{}
	var added [][2]string
	for _, cs := range body.Columns {
		// AddVisibleColumn (DocApi.ts:617-626): an empty column unless
		// isFormula or a formula says otherwise.
		c := s.addColumnLocked(t, newColumn(cs.ID, cs.Fields, true))
		added = append(added, [2]string{"", c.ID})
		out = append(out, map[string]any{"id": c.ID})
	}
	s.record(&action{deltas: map[string]map[int64]*rowChange{}, colRenames: map[string][][2]string{t.id: added}})
	writeJSON(w, r, 200, map[string]any{"columns": out})
}

func (s *Server) deleteColumn(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tableOr404(w, r)
	if t == nil {
		return
	}
	col := r.PathValue("col")
	act := &action{deltas: map[string]map[int64]*rowChange{}, colRenames: map[string][][2]string{}}
	if !s.removeColumnLocked(act, t, col) {
		writeErr(w, r, 404, fmt.Sprintf("Table or column not found %q", t.id+"."+col))
		return
	}
	s.record(act)
	writeJSON(w, r, 200, nil)
}

func (s *Server) postRecords(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Records []struct {
			Fields map[string]any `json:"fields"`
		} `json:"records"`
	}
	if !readBody(w, r, &body) {
		return
	}
	if len(body.Records) == 0 {
		writeErr(w, r, 400, "Invalid payload")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tableOr404(w, r)
	if t == nil {
		return
	}
	rows := make([]map[string]any, len(body.Records))
	for i, rec := range body.Records {
		rows[i] = map[string]any{}
		for k, v := range rec.Fields {
			rows[i][k] = cellValue(v)
		}
	}
	ids, err := s.insertLocked(t, rows, s.userOf(r), true)
	if err != nil {
		writeAPIErr(w, r, err)
		return
	}
	delta := map[int64]*rowChange{}
	out := make([]map[string]any, len(ids))
	for i, id := range ids {
		delta[id] = &rowChange{after: maps.Clone(t.rows[id])}
		out[i] = map[string]any{"id": id}
	}
	s.record(&action{deltas: map[string]map[int64]*rowChange{t.id: delta}})
	writeJSON(w, r, 200, map[string]any{"records": out})
}

// writeAPIErr answers a failed /records write. A data engine error
// ("[Sandbox] …") is a 400 "Error manipulating data: …", as grist-core's
// TableOperations answer it (app/plugin/TableOperationsImpl.ts
// handleSandboxErrorOnPlatform); /apply answers it as it came.
func writeAPIErr(w http.ResponseWriter, r *http.Request, err error) {
	if ae, ok := err.(*apiErr); ok {
		if strings.HasPrefix(ae.msg, "[Sandbox] ") {
			writeErr(w, r, 400, "Error manipulating data: "+ae.msg)
			return
		}
		writeErr(w, r, ae.status, ae.msg)
		return
	}
	writeErr(w, r, 500, err.Error())
}

func (s *Server) patchRecords(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Records []struct {
			ID     int64          `json:"id"`
			Fields map[string]any `json:"fields"`
		} `json:"records"`
	}
	if !readBody(w, r, &body) {
		return
	}
	if len(body.Records) == 0 {
		writeErr(w, r, 400, "Invalid payload")
		return
	}
	first := slices.Sorted(maps.Keys(body.Records[0].Fields))
	updates := map[int64]map[string]any{}
	for _, rec := range body.Records {
		if !slices.Equal(slices.Sorted(maps.Keys(rec.Fields)), first) {
			writeErr(w, r, 400, "PATCH requires all records to have same fields")
			return
		}
		u := map[string]any{}
		for k, v := range rec.Fields {
			u[k] = cellValue(v)
		}
		updates[rec.ID] = u
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tableOr404(w, r)
	if t == nil {
		return
	}
	delta, err := s.updateLocked(t, updates, s.userOf(r), true)
	if err != nil {
		writeAPIErr(w, r, err)
		return
	}
	s.record(&action{deltas: map[string]map[int64]*rowChange{t.id: delta}})
	writeJSON(w, r, 200, nil)
}

func (s *Server) deleteRecords(w http.ResponseWriter, r *http.Request) {
	var ids []int64
	if !readBody(w, r, &ids) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tableOr404(w, r)
	if t == nil {
		return
	}
	delta, err := s.removeLocked(t, ids)
	if err != nil {
		writeAPIErr(w, r, err)
		return
	}
	s.record(&action{deltas: map[string]map[int64]*rowChange{t.id: delta}})
	writeJSON(w, r, 200, nil)
}

// removeLocked deletes rows; as in Grist a later add may reuse the highest
// ids. An unknown row fails before any change.
func (s *Server) removeLocked(t *table, ids []int64) (map[int64]*rowChange, error) {
	for _, id := range ids {
		if _, ok := t.rows[id]; !ok {
			return nil, &apiErr{400, fmt.Sprintf("Invalid row id %d", id)}
		}
	}
	delta := map[int64]*rowChange{}
	for _, id := range ids {
		delta[id] = &rowChange{before: t.rows[id]}
		delete(t.rows, id)
		t.gen++
	}
	maxID := int64(0)
	for id := range t.rows {
		maxID = max(maxID, id)
	}
	t.nextID = maxID + 1
	return delta, nil
}

// apply runs user actions (POST /apply): all of them or, on the first
// error, none.
func (s *Server) apply(w http.ResponseWriter, r *http.Request) {
	var actions [][]any
	if !readBody(w, r, &actions) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Check everything first: the real server applies a bundle atomically.
	for i, a := range actions {
		if err := s.checkAction(a); err != nil {
			writeErr(w, r, 400, fmt.Sprintf("action %d: %v", i, err))
			return
		}
		if name := argString(a, 0); (name == "AddColumn" || name == "AddVisibleColumn") && len(a) > 3 {
			if info, _ := cellValue(a[3]).(map[string]any); addsRecalcDeps(info) {
				s.broken = true
				writeErr(w, r, 500, recalcDepsError)
				return
			}
		}
	}
	u := s.userOf(r)
	ret := make([]any, 0, len(actions))
	act := &action{deltas: map[string]map[int64]*rowChange{}, colRenames: map[string][][2]string{}}
	// engine.py apply_user_actions (grist-core f98cda9, :1313-1340): on an
	// exception the changes of the bundle's earlier actions are undone
	// (_undo_to_checkpoint) and the exception is raised as it came, so the
	// answer is the failing action's alone and nothing is applied.
	snap := s.snapshotLocked()
	s.pending = &pendingTriggers{dirty: map[string]map[int64]map[string]bool{}}
	defer func() { s.pending = nil }()
	for _, a := range actions {
		// engine.py:1318-1320: protections of given trigger values last
		// one user action.
		s.pending.kept = map[string]map[int64]map[string]bool{}
		v, err := s.applyOne(act, a, u)
		if err != nil {
			s.restoreLocked(snap)
			status := 400
			if ae, ok := err.(*apiErr); ok {
				status = ae.status
			}
			writeErr(w, r, status, err.Error())
			return
		}
		ret = append(ret, v)
	}
	s.flushTriggersLocked(act, u)
	s.record(act)
	head := s.history[len(s.history)-1]
	writeJSON(w, r, 200, map[string]any{"actionNum": head.n, "actionHash": head.h, "retValues": ret, "isModification": true})
}

// sandboxErr is a /records write error as grist-core's data engine raises
// it, which /apply answers as it came (HTTP 500, app/server/lib/expressWrap.ts
// jsonErrorHandler: no status on a SandboxError) and the /records endpoints
// translate (app/plugin/TableOperationsImpl.ts:240-250
// handleSandboxErrorOnPlatform at f98cda9): an unknown row fails the
// docaction's assertion (sandbox/grist/docactions.py:70-72), an unknown
// column the schema lookup (useractions.py:1051).
func sandboxErr(err error) error {
	ae, ok := err.(*apiErr)
	if !ok || ae.status != 400 {
		return err
	}
	if n, ok := strings.CutPrefix(ae.msg, "Invalid row id "); ok {
		return &apiErr{500, "[Sandbox] AssertionError docactions.[Bulk]UpdateRecord for non-existent record #" + n}
	}
	if c, ok := strings.CutPrefix(ae.msg, "Invalid column "); ok {
		if col, err := strconv.Unquote(c); err == nil {
			return &apiErr{500, "[Sandbox] KeyError '" + col + "'"}
		}
	}
	return err
}

func argString(a []any, i int) string {
	if i < len(a) {
		s, _ := a[i].(string)
		return s
	}
	return ""
}

func (s *Server) checkAction(a []any) error {
	name := argString(a, 0)
	tid := argString(a, 1)
	if tid == metaColumns {
		if name != "UpdateRecord" && name != "BulkUpdateRecord" {
			return fmt.Errorf("gristtest does not emulate the user action %q on %s", name, tid)
		}
		_, err := s.metaColumnUpdates(a)
		return err
	}
	switch name {
	case "AddColumn", "AddVisibleColumn", "RemoveColumn", "RemoveTable", "BulkAddRecord", "BulkUpdateRecord", "BulkRemoveRecord":
	default:
		return fmt.Errorf("gristtest does not emulate the user action %q", name)
	}
	if _, ok := s.tables[tid]; !ok {
		return fmt.Errorf("Table not found %q", tid)
	}
	return nil
}

// bulkRows reads BulkAddRecord/BulkUpdateRecord's column-oriented values
// {col: [v…]} into one map per row.
func bulkRows(n int, cols any) ([]map[string]any, error) {
	m, _ := cols.(map[string]any)
	rows := make([]map[string]any, n)
	for i := range rows {
		rows[i] = map[string]any{}
	}
	for k, v := range m {
		l, ok := v.([]any)
		if !ok || len(l) != n {
			return nil, fmt.Errorf("column %q needs %d values", k, n)
		}
		for i, e := range l {
			rows[i][k] = cellValue(e)
		}
	}
	return rows, nil
}

func rowIDs(v any) []int64 {
	l, _ := cellValue(v).([]any)
	out := make([]int64, 0, len(l))
	for _, e := range l {
		if n, ok := e.(int64); ok {
			out = append(out, n)
		}
	}
	return out
}

// metaColumns is the metadata table of columns, whose recalcWhen and
// recalcDeps UpdateRecord sets (by colRef).
const metaColumns = "_grist_Tables_column"

// metaColumnUpdates reads ["UpdateRecord", "_grist_Tables_column", colRef,
// {recalcWhen, recalcDeps}] (or BulkUpdateRecord's column-oriented form)
// into the columns and the fields to set; only recalcWhen and recalcDeps
// are emulated.
func (s *Server) metaColumnUpdates(a []any) (map[*Column]map[string]any, error) {
	var refs []int64
	var rows []map[string]any
	switch argString(a, 0) {
	case "UpdateRecord":
		n, _ := cellValue(a[min(2, len(a)-1)]).(int64)
		f, _ := cellValue(a[min(3, len(a)-1)]).(map[string]any)
		refs, rows = []int64{n}, []map[string]any{f}
	default:
		refs = rowIDs(a[min(2, len(a)-1)])
		var err error
		if rows, err = bulkRows(len(refs), a[min(3, len(a)-1)]); err != nil {
			return nil, err
		}
	}
	out := map[*Column]map[string]any{}
	for i, ref := range refs {
		var col *Column
		for _, t := range s.tables {
			for _, c := range t.cols {
				if int64(c.colRef) == ref {
					col = c
				}
			}
		}
		if col == nil {
			return nil, fmt.Errorf("Invalid row id %d", ref)
		}
		for k := range rows[i] {
			if k != "recalcWhen" && k != "recalcDeps" {
				return nil, fmt.Errorf("gristtest does not emulate updating %s of %s", k, metaColumns)
			}
		}
		out[col] = rows[i]
	}
	return out, nil
}

// applyOne applies user action a to the document as u, recording its
// changes in act, and returns the action's return value.
func (s *Server) applyOne(act *action, a []any, u User) (any, error) {
	tid := argString(a, 1)
	if tid == metaColumns {
		return nil, s.applyMetaColumns(a)
	}
	t := s.tables[tid]
	switch argString(a, 0) {
	case "AddColumn", "AddVisibleColumn":
		// ["AddColumn", tableId, colId, colInfo] (AddVisibleColumn also
		// shows it in the table's views, which the server has none of)
		info, _ := cellValue(a[min(3, len(a)-1)]).(map[string]any)
		c := s.addColumnLocked(t, newColumn(argString(a, 2), info, true))
		act.colRenames[t.id] = append(act.colRenames[t.id], [2]string{"", c.ID})
		return map[string]any{"colId": c.ID, "colRef": c.colRef}, nil
	case "RemoveColumn":
		// ["RemoveColumn", tableId, colId]
		col := argString(a, 2)
		if !s.removeColumnLocked(act, t, col) {
			// /apply maps no sandbox error (DocApi.ts:191-194)
			return nil, fmt.Errorf("[Sandbox] ValueError No such column: %s.%s", t.id, col)
		}
		return nil, nil
	case "RemoveTable":
		delete(s.tables, tid)
		delta := map[int64]*rowChange{}
		for id, row := range t.rows {
			delta[id] = &rowChange{before: row}
		}
		act.merge(t.id, delta)
		for _, c := range t.cols {
			act.colRenames[t.id] = append(act.colRenames[t.id], [2]string{c.ID, ""})
		}
		act.renames = append(act.renames, [2]string{tid, ""})
		return nil, nil
	case "BulkAddRecord":
		return s.bulkAdd(act, t, a, u)
	case "BulkUpdateRecord":
		ids := rowIDs(a[min(2, len(a)-1)])
		rows, err := bulkRows(len(ids), a[min(3, len(a)-1)])
		if err != nil {
			return nil, err
		}
		updates := map[int64]map[string]any{}
		for i, id := range ids {
			updates[id] = rows[i]
		}
		delta, err := s.updateLocked(t, updates, u, true)
		if err != nil {
			return nil, sandboxErr(err)
		}
		act.merge(t.id, delta)
		return nil, nil
	case "BulkRemoveRecord":
		// docactions.py BulkRemoveRecord ignores records that do not exist.
		ids := slices.DeleteFunc(rowIDs(a[min(2, len(a)-1)]), func(id int64) bool { return t.rows[id] == nil })
		delta, err := s.removeLocked(t, ids)
		if err != nil {
			return nil, err
		}
		act.merge(t.id, delta)
		return nil, nil
	}
	return nil, fmt.Errorf("unsupported action %v", a[0])
}

// applyMetaColumns applies an update of _grist_Tables_column: the
// recalcWhen and recalcDeps it sets.
func (s *Server) applyMetaColumns(a []any) error {
	ups, err := s.metaColumnUpdates(a)
	if err != nil {
		return err
	}
	for c, f := range ups {
		nc := newColumn(c.ID, f, c.IsFormula)
		if _, ok := f["recalcWhen"]; ok {
			c.RecalcWhen = nc.RecalcWhen
		}
		if _, ok := f["recalcDeps"]; ok {
			c.RecalcDeps = nc.RecalcDeps
		}
	}
	return nil
}

// bulkAdd applies ["BulkAddRecord", tableId, [null…], {col: [v…]}] and
// returns the new rows' ids.
func (s *Server) bulkAdd(act *action, t *table, a []any, u User) (any, error) {
	l, _ := a[min(2, len(a)-1)].([]any)
	rows, err := bulkRows(len(l), a[min(3, len(a)-1)])
	if err != nil {
		return nil, err
	}
	ids, err := s.insertLocked(t, rows, u, true)
	if err != nil {
		return nil, sandboxErr(err)
	}
	delta := map[int64]*rowChange{}
	ret := make([]any, len(ids))
	for i, id := range ids {
		delta[id] = &rowChange{after: maps.Clone(t.rows[id])}
		ret[i] = id
	}
	act.merge(t.id, delta)
	return ret, nil
}

// merge adds the row changes delta of table tid to act; a row already
// changed by act keeps its value from before act.
func (act *action) merge(tid string, delta map[int64]*rowChange) {
	if act.deltas[tid] == nil {
		act.deltas[tid] = map[int64]*rowChange{}
	}
	for id, ch := range delta {
		if old, ok := act.deltas[tid][id]; ok {
			ch.before = old.before
		}
		act.deltas[tid][id] = ch
	}
}

// triggersLocked computes the trigger formula columns of row r (after the
// change) as grist-core does (sandbox/grist/schema.py RecalcWhen; checked
// by running grist-core f98cda9's engine on these cases):
//   - on a new record (before == nil), every trigger column not given, and
//     one with RecalcWhen 0 and RecalcDeps even when given: a new record
//     invalidates all its columns, so the dependencies' edges make the
//     column dirty, and BulkAddRecord prevents no recalculation
//     (useractions.py:448-458 doBulkAddOrReplace, engine.py:1094-1111
//     invalidate_records, :1231-1236 the trigger edges, docactions.py:21-29);
//   - on an update, one with RecalcWhen 2 when the update changed any
//     cell, and one with RecalcWhen 0 one of whose RecalcDeps columns
//     changed value. A column the update sets to another value keeps it
//     (docactions.py:85-86 prevent_recalc), unless it is among its own
//     RecalcDeps (useractions.py:585-590); one set to the value it had is
//     trimmed from the update (useractions.py:520, engine.py:1062-1092
//     trim_update_action) and so is recomputed like any other.
func (s *Server) triggersLocked(t *table, id int64, r, before, given map[string]any, u User) {
	byRef := map[int]string{}
	for _, c := range t.cols {
		byRef[c.colRef] = c.ID
	}
	changed := func(col string) bool { return before != nil && !sameCell(before[col], r[col]) }
	rowChanged := false
	for col := range given {
		rowChanged = rowChanged || changed(col)
	}
	for _, c := range t.cols {
		if c.IsFormula || c.Formula == "" || c.RecalcWhen == 1 {
			continue
		}
		_, set := given[c.ID]
		// dirty: the change invalidates the column's cell; kept: the
		// action gives it a new value, which prevents its recalculation
		// (docactions.py:85-86) unless the column depends on itself
		// (useractions.py:585-590).
		dirty, kept := false, false
		switch {
		case before == nil:
			dirty = !set || c.RecalcWhen == 0 && len(c.RecalcDeps) > 0
		default:
			dirty = c.RecalcWhen == 2 && rowChanged
			for _, ref := range c.RecalcDeps {
				if col := byRef[ref]; col != "" && changed(col) && c.RecalcWhen == 0 {
					dirty = true
				}
			}
			kept = set && changed(c.ID) && !(c.RecalcWhen == 0 && slices.Contains(c.RecalcDeps, c.colRef))
		}
		if p := s.pending; p != nil {
			if dirty {
				p.mark(p.dirty, t.id, id, c.ID)
			}
			if kept {
				p.mark(p.kept, t.id, id, c.ID)
			}
			continue
		}
		if dirty && !kept {
			s.evalTriggerLocked(t, c, r, u)
		}
	}
}

func (s *Server) evalTriggerLocked(t *table, c *Column, r map[string]any, u User) {
	v, err := evalTrigger(c.Formula, r, u, s.now())
	if err != nil {
		s.t.Errorf("gristtest: table %s column %s: %v", t.id, c.ID, err)
		return
	}
	r[c.ID] = v
}

// pendingTriggers are the trigger formula cells a POST /apply bundle has
// invalidated so far (dirty) and those its current user action gives a
// value that prevents their recalculation (kept), by table, row and
// column. grist-core computes formulas once, after all the user actions
// of a bundle (engine.py apply_user_actions :1346-1354,
// _bring_all_up_to_date at f98cda9), on the rows as the bundle left them,
// skipping the cells its recompute map exempts (engine.py:799-807); that
// map is cleared before each user action (engine.py:1318-1320), so only
// the last action's given values are kept.
type pendingTriggers struct {
	dirty, kept map[string]map[int64]map[string]bool
}

func (p *pendingTriggers) mark(m map[string]map[int64]map[string]bool, tid string, id int64, col string) {
	if m[tid] == nil {
		m[tid] = map[int64]map[string]bool{}
	}
	if m[tid][id] == nil {
		m[tid][id] = map[string]bool{}
	}
	m[tid][id][col] = true
}

// flushTriggersLocked computes, at the end of a bundle, the trigger cells
// it invalidated and its last action does not keep, of the rows and
// columns still there, and records the rows' final values in act.
func (s *Server) flushTriggersLocked(act *action, u User) {
	p := s.pending
	for _, tid := range slices.Sorted(maps.Keys(p.dirty)) {
		t := s.tables[tid]
		if t == nil {
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(p.dirty[tid])) {
			r := t.rows[id]
			if r == nil {
				continue
			}
			for _, c := range t.cols {
				if p.dirty[tid][id][c.ID] && !p.kept[tid][id][c.ID] {
					s.evalTriggerLocked(t, c, r, u)
				}
			}
		}
	}
	for tid, delta := range act.deltas {
		t := s.tables[tid]
		if t == nil {
			continue
		}
		for id, ch := range delta {
			if r := t.rows[id]; r != nil && ch.after != nil {
				ch.after = maps.Clone(r)
			}
		}
	}
	s.pending = nil
}

// snapshot is the document's tables and counters, which POST /apply
// restores when one of its actions fails.
type snapshot struct {
	tables                 map[string]*table
	nextTabRef, nextColRef int
}

func (s *Server) snapshotLocked() snapshot {
	out := snapshot{tables: make(map[string]*table, len(s.tables)), nextTabRef: s.nextTabRef, nextColRef: s.nextColRef}
	for id, t := range s.tables {
		tc := *t
		tc.cols = make([]*Column, len(t.cols))
		for i, c := range t.cols {
			cc := *c
			cc.RecalcDeps = slices.Clone(c.RecalcDeps)
			tc.cols[i] = &cc
		}
		tc.rows = make(map[int64]map[string]any, len(t.rows))
		for rid, r := range t.rows {
			tc.rows[rid] = maps.Clone(r)
		}
		tc.sorted = slices.Clone(t.sorted)
		out.tables[id] = &tc
	}
	return out
}

func (s *Server) restoreLocked(snap snapshot) {
	s.tables = snap.tables
	s.nextTabRef, s.nextColRef = snap.nextTabRef, snap.nextColRef
	for _, t := range s.tables {
		t.gen++ // row order caches are rebuilt
	}
}

func sameCell(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// evalTrigger evaluates the small subset of Python formulas the server
// knows: an atom (NOW(), user.Email, user.Name, None, "", ”, $col), or
// "A if C1 or C2 … else B" with atoms. NOW() is seconds since the epoch,
// as a DateTime cell holds it.
func evalTrigger(formula string, r map[string]any, u User, now time.Time) (any, error) {
	f := strings.TrimSpace(formula)
	f = strings.TrimSpace(strings.TrimPrefix(f, "return "))
	atom := func(a string) (any, error) {
		switch a = strings.TrimSpace(a); {
		case a == "NOW()":
			return float64(now.UnixMilli()) / 1000, nil
		case a == "user.Email":
			return u.Email, nil
		case a == "user.Name":
			return u.Name, nil
		case a == "None":
			return nil, nil
		case a == `""` || a == "''":
			return "", nil
		case strings.HasPrefix(a, "$"):
			return r[a[1:]], nil
		}
		return nil, fmt.Errorf("formula %q: gristtest cannot evaluate %q", formula, a)
	}
	then, rest, ok := strings.Cut(f, " if ")
	if !ok {
		return atom(f)
	}
	cond, alt, ok := strings.Cut(rest, " else ")
	if !ok {
		return nil, fmt.Errorf("formula %q: if without else", formula)
	}
	truth := false
	for _, c := range strings.Split(cond, " or ") {
		v, err := atom(strings.Trim(strings.TrimSpace(c), "()"))
		if err != nil {
			return nil, err
		}
		truth = truth || truthy(v)
	}
	if truth {
		return atom(then)
	}
	return atom(alt)
}

// truthy is Python truthiness of a cell: None, False, 0, "" and an empty
// list (["L"] or null) are false.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case int64:
		return x != 0
	case float64:
		return x != 0
	case []any:
		return len(x) > 1 || (len(x) == 1 && x[0] != "L")
	}
	return true
}

func (c *Column) label() string {
	if c.Label != "" {
		return c.Label
	}
	return c.ID
}

// recalcDeps is the column's recalcDeps as the API shows it: ["L", colRef…]
// or null.
func (c *Column) recalcDeps() any {
	if len(c.RecalcDeps) == 0 {
		return nil
	}
	out := []any{"L"}
	for _, r := range c.RecalcDeps {
		out = append(out, r)
	}
	return out
}

// acceptDataLocked is grist-core's _ensure_column_accepts_data
// (sandbox/grist/useractions.py:1043-1075 at f98cda9), which the
// BulkAddRecord and BulkUpdateRecord user actions run on each column they
// write (useractions.py:396, :615): a value for a column with a formula is
// refused ("[Sandbox] ValueError Can't save value to formula column X",
// :1058), and an empty column (isFormula with no formula) becomes a data
// column (ModifyColumn isFormula false, :1074) of its type or, when it is
// Any, of the type guessed from the values written (:1062-1072), unless
// they are all blank, which leaves it empty. Every refusal comes before a
// change; the values of a column guessed from text are converted in rows.
func (t *table) acceptDataLocked(rows []map[string]any) error {
	var ids []string
	for _, r := range rows {
		for k := range r {
			if !slices.Contains(ids, k) {
				ids = append(ids, k)
			}
		}
	}
	slices.Sort(ids)
	for _, k := range ids {
		if c := t.col(k); c.IsFormula && c.Formula != "" {
			return &apiErr{500, "[Sandbox] ValueError Can't save value to formula column " + k}
		}
	}
	for _, k := range ids {
		c := t.col(k)
		if !c.IsFormula {
			continue
		}
		if c.Type == "Any" {
			var vals []any
			for _, r := range rows {
				if v, ok := r[k]; ok {
					vals = append(vals, v)
				}
			}
			typ, conv := guessColType(vals)
			if typ == "" {
				continue
			}
			c.Type = typ
			if conv != nil {
				for _, r := range rows {
					if v, ok := r[k]; ok {
						r[k] = conv(v)
					}
				}
			}
		}
		c.IsFormula = false
	}
	return nil
}

// guessColType is the type grist-core gives an empty Any column from the
// first values written to it, "" when they are all blank (None or "")
// (useractions.py guess_col_info): text alone goes to the client's
// guessColInfo (app/common/ValueGuesser.ts: Bool when every value is
// "true" or "false", Numeric when every non-blank one is a number written
// as it formats, Text otherwise; its 10% of unparsed values allowed and
// its Date guess are not emulated), with conv turning the values into the
// type's; other values to guess_type (Numeric when 90% of the non-blank
// ones convert to a number, bools included, Text otherwise; values kept).
func guessColType(vals []any) (typ string, conv func(any) any) {
	text, blank := true, true
	for _, v := range vals {
		_, isStr := v.(string)
		text = text && (v == nil || isStr)
		blank = blank && (v == nil || v == "")
	}
	switch {
	case blank:
		return "", nil
	case !text:
		numeric, total := 0, 0
		for _, v := range vals {
			if v == nil || v == "" {
				continue
			}
			total++
			switch x := v.(type) {
			case int64, float64, bool:
				numeric++
			case string:
				if _, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
					numeric++
				}
			}
		}
		if numeric*10 >= total*9 {
			return "Numeric", nil
		}
		return "Text", nil
	}
	if !slices.ContainsFunc(vals, func(v any) bool { return v != "true" && v != "false" }) {
		return "Bool", func(v any) any { return v == "true" }
	}
	isNumber := func(v any) bool {
		s, _ := v.(string)
		f, err := strconv.ParseFloat(s, 64)
		return s == "" || err == nil && strconv.FormatFloat(f, 'f', -1, 64) == s
	}
	if !slices.ContainsFunc(vals, func(v any) bool { return v != nil && !isNumber(v) }) {
		return "Numeric", func(v any) any {
			if s, _ := v.(string); s != "" {
				f, _ := strconv.ParseFloat(s, 64)
				return f
			}
			return nil
		}
	}
	return "Text", nil
}
