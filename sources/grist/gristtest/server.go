// Package gristtest is an in-memory Grist document served over HTTP for
// tests. It answers the calls listed in grist-api.md (/tables, /columns,
// /records, /sql, /states, /compare, /attachments) with the shapes captured
// from a real grist-core 1.7.17 server (grist-samples/real): error bodies
// {"error": msg}, SQL storage encodings (Bool 0/1, lists as JSON text,
// marshal Buffers for errors and typed Any values), added rows listed in
// both addRows and updateRows, 500 "Cannot read hash" for unknown hashes,
// weak ETags in Express's format with 304 on If-None-Match, the
// _grist_Tables_column metadata table, and 429 past 10 parallel requests.
// Schema changes (AddTable, RenameTable, RemoveTable, AddColumn,
// RenameColumn, RemoveColumn) keep tableRefs and colRefs and show in
// /compare as grist-core's ActionSummary has them (tableRenames,
// columnRenames, "-name" for removed tables and columns), and a change to
// more than 10 rows keeps the cell values of 10 of them only
// (mayBeIncomplete), as /compare without maxRows does. Writes (POST
// /tables and /columns, POST and PATCH /records, /records/delete, /apply)
// follow the real server's answers and limits, trigger formulas included
// (write.go).
package gristtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DocID and APIKey are the document id and key the server accepts.
const (
	DocID  = "jjBJAMs6uZ6HDwqKZQGGyM"
	APIKey = "0123456789abcdef0123456789abcdef01234567"
)

// CellError is a formula error cell (exception name), shown by /records as
// null plus "errors": {col: Name} and by /sql as a marshal blob.
type CellError struct{ Name string }

// Column describes a column for AddTable.
type Column struct {
	ID        string
	Type      string // "Text", "Int", "Ref:T", "DateTime:Europe/London", ...
	IsFormula bool
	Formula   string
	Hidden    bool // manualSort / gristHelper_* style columns
	// Label is the column's label ("" = its id).
	Label string
	// RecalcWhen and RecalcDeps make a data column with a Formula a
	// trigger formula column (grist-core schema.RecalcWhen): 0 computes it
	// on new records and when a column whose colRef is in RecalcDeps
	// changes, 2 on new records and on any update, 1 never. The server
	// evaluates the few formulas write.go knows (NOW(), user.Email,
	// user.Name, $col, "x if $a or $b else y").
	RecalcWhen int
	RecalcDeps []int

	colRef int
	pos    int
}

type table struct {
	id      string
	ref     int
	summary int
	cols    []*Column
	rows    map[int64]map[string]any
	nextID  int64
	// gen counts the additions and removals of rows; sorted holds the row
	// ids in order as of generation sortedGen (see ids).
	gen, sortedGen uint64
	sorted         []int64
}

// ids returns the table's row ids in increasing order, sorted again only
// after rows were added or removed. The caller must not modify the slice.
func (t *table) ids() []int64 {
	if t.sorted == nil || t.sortedGen != t.gen || len(t.sorted) != len(t.rows) {
		t.sorted = slices.Sorted(maps.Keys(t.rows))
		t.sortedGen = t.gen
	}
	return t.sorted
}

func (t *table) col(id string) *Column {
	for _, c := range t.cols {
		if c.ID == id {
			return c
		}
	}
	return nil
}

type rowChange struct {
	before, after map[string]any // nil = absent
}

// action is one entry of the document's history, as /compare summarises
// it (grist-core app/common/ActionSummary.ts): row changes, then column
// renames, then table renames. In rename pairs "" stands for null: ["", b]
// is an addition, [a, ""] a removal.
type action struct {
	n      int
	h      string
	deltas map[string]map[int64]*rowChange // table id before this action's renames -> rows
	// colRenames are column renames by table id (before this action's
	// table renames); renames are table renames.
	colRenames map[string][][2]string
	renames    [][2]string
	// inline lists, per table whose change touched more than
	// maxInlineRows rows, the rows whose cell values the summary keeps;
	// set by record.
	inline map[string]map[int64]bool
}

// maxInlineRows is grist-core's MAXIMUM_INLINE_ROWS
// (app/common/ActionSummarizer.ts): of a bulk change to more rows, the
// summary keeps the cell values of the first 9 rows and the last one only,
// and marks the table delta mayBeIncomplete. /compare sends no maxRows, so
// this default applies to it.
const maxInlineRows = 10

// Server is a test Grist server holding one document.
type Server struct {
	*httptest.Server
	t testing.TB
	// broken: a refused recalcDeps left the data engine inconsistent;
	// writes fail until Reload.
	broken bool
	// pending: a POST /apply bundle is being applied; its trigger
	// formulas are computed at its end (flushTriggersLocked).
	pending *pendingTriggers

	mu          sync.Mutex
	tables      map[string]*table
	nextTabRef  int
	nextColRef  int
	history     []*action // oldest first
	n           int
	attachments map[int64]*attachment
	nextAtt     int64
	hooks       webhookStore

	users map[string]User // API key -> the user it acts as
	now   func() time.Time

	fail429     int
	fault       func(*http.Request) (int, string)
	lose        func(*http.Request) bool
	sqlMaxRows  int
	latency     time.Duration
	parallel    int
	counts      map[string]int
	statuses    map[int]int
	inflight    atomic.Int64
	maxInflight atomic.Int64
}

type attachment struct {
	name    string
	content []byte
	ident   string
}

// New starts a server with an empty document; it is closed by t.Cleanup.
func New(t testing.TB) *Server {
	s := &Server{t: t, tables: map[string]*table{}, nextTabRef: 1, nextColRef: 1,
		attachments: map[int64]*attachment{}, nextAtt: 1, parallel: 10, counts: map[string]int{}, statuses: map[int]int{},
		users: map[string]User{APIKey: Owner}, now: time.Now}
	s.Server = httptest.NewServer(s.handler())
	t.Cleanup(s.Server.Close)
	s.record(&action{deltas: map[string]map[int64]*rowChange{}}) // document creation
	return s
}

// record appends an action to the history, giving it the next number and
// a hash chained on the previous one. Callers hold s.mu or are in setup.
func (s *Server) record(a *action) {
	for tid, rows := range a.deltas {
		if len(rows) <= maxInlineRows || strings.HasPrefix(tid, "_grist") {
			continue
		}
		ids := slices.Sorted(maps.Keys(rows))
		keep := map[int64]bool{ids[len(ids)-1]: true}
		for _, id := range ids[:maxInlineRows-1] {
			keep[id] = true
		}
		if a.inline == nil {
			a.inline = map[string]map[int64]bool{}
		}
		a.inline[tid] = keep
	}
	s.n++
	a.n = s.n
	prev := ""
	if len(s.history) > 0 {
		prev = s.history[len(s.history)-1].h
	}
	sum := sha256.New()
	fmt.Fprintf(sum, "%s|%d|", prev, a.n)
	b, _ := json.Marshal([]any{a.renames, a.colRenames})
	sum.Write(b)
	for _, tid := range slices.Sorted(maps.Keys(a.deltas)) {
		fmt.Fprintf(sum, "%s:%d;", tid, len(a.deltas[tid]))
	}
	fmt.Fprintf(sum, "%d", time.Now().UnixNano())
	a.h = hex.EncodeToString(sum.Sum(nil))
	s.history = append(s.history, a)
}

// Head returns the newest action hash.
func (s *Server) Head() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.history[len(s.history)-1].h
}

// TrimHistory keeps only the newest keep actions, as POST /states/remove
// does: /compare then answers 500 "Cannot read hash" for older hashes.
func (s *Server) TrimHistory(keep int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if keep < len(s.history) {
		s.history = slices.Clone(s.history[len(s.history)-keep:])
	}
}

// AddTable creates a table with the given columns plus a hidden manualSort.
func (s *Server) AddTable(id string, cols ...Column) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.addTableLocked(id, cols)
	s.record(&action{deltas: map[string]map[int64]*rowChange{}, renames: [][2]string{{"", id}},
		colRenames: map[string][][2]string{id: addedColumns(t)}})
}

// addedColumns are the column additions of a new table.
func addedColumns(t *table) [][2]string {
	out := make([][2]string, 0, len(t.cols))
	for _, c := range t.cols {
		out = append(out, [2]string{"", c.ID})
	}
	return out
}

func (s *Server) addTableLocked(id string, cols []Column) *table {
	if _, ok := s.tables[id]; ok {
		s.t.Fatalf("gristtest: table %q exists", id)
	}
	t := &table{id: id, ref: s.nextTabRef, rows: map[int64]map[string]any{}, nextID: 1}
	s.nextTabRef++
	all := append([]Column{{ID: "manualSort", Type: "ManualSortPos", Hidden: true}}, cols...)
	for i := range all {
		c := all[i]
		c.colRef = s.nextColRef
		c.pos = s.nextColRef
		s.nextColRef++
		if c.Type == "" {
			c.Type = "Text"
		}
		t.cols = append(t.cols, &c)
	}
	s.tables[id] = t
	return t
}

func (s *Server) mustTable(id string) *table {
	t, ok := s.tables[id]
	if !ok {
		s.t.Fatalf("gristtest: no table %q", id)
	}
	return t
}

// emptyValue is the /records empty value per type (grist-api.md §3).
func emptyValue(typ string) any {
	base, _, _ := strings.Cut(typ, ":")
	switch base {
	case "Text", "Choice":
		return ""
	case "Numeric":
		return float64(0)
	case "Int", "Ref", "ManualSortPos":
		return int64(0)
	case "Bool":
		return false
	}
	return nil
}

func normValue(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case []string:
		out := []any{"L"}
		for _, e := range x {
			out = append(out, e)
		}
		return out
	}
	return v
}

// AddRows appends rows (values in /records normal encoding; a Go int is
// stored as int64; CellError marks an error) and returns their ids.
func (s *Server) AddRows(tableID string, rows ...map[string]any) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.mustTable(tableID)
	ids := s.addRowsLocked(t, rows)
	delta := map[int64]*rowChange{}
	for _, id := range ids {
		delta[id] = &rowChange{after: maps.Clone(t.rows[id])}
	}
	s.record(&action{deltas: map[string]map[int64]*rowChange{t.id: delta}})
	return ids
}

func (s *Server) addRowsLocked(t *table, rows []map[string]any) []int64 {
	ids, err := s.insertLocked(t, rows, Owner, false)
	if err != nil {
		s.t.Fatalf("gristtest: %v", err)
	}
	return ids
}

// insertLocked adds rows as user u: every column gets its type's empty
// value, then the given cells, then trigger formulas of columns not given
// are computed (new records). An unknown column fails before any change.
// asAction: the rows come through the API (the BulkAddRecord user action),
// which refuses values for formula columns and makes an empty column a
// data column (acceptDataLocked); AddRows sets cells as they are, formula
// columns' results included.
func (s *Server) insertLocked(t *table, rows []map[string]any, u User, asAction bool) ([]int64, error) {
	for _, in := range rows {
		for k := range in {
			if t.col(k) == nil {
				return nil, &apiErr{400, fmt.Sprintf("Invalid column %q", k)}
			}
		}
	}
	if asAction {
		if err := t.acceptDataLocked(rows); err != nil {
			return nil, err
		}
	}
	ids := make([]int64, 0, len(rows))
	for _, in := range rows {
		id := t.nextID
		t.nextID++
		r := make(map[string]any, len(t.cols))
		for _, c := range t.cols {
			r[c.ID] = emptyValue(c.Type)
		}
		r["manualSort"] = id
		for k, v := range in {
			r[k] = normValue(v)
		}
		s.triggersLocked(t, id, r, nil, in, u)
		t.rows[id] = r
		t.gen++
		ids = append(ids, id)
	}
	return ids, nil
}

// UpdateRows sets the given cells of existing rows as they are, formula
// columns' results included, as the owner.
func (s *Server) UpdateRows(tableID string, updates map[int64]map[string]any) {
	s.updateRows(Owner, tableID, updates, false)
}

// UpdateRowsAs sets the given cells of existing rows as user u: what an
// expert's edit in the Grist UI does (the BulkUpdateRecord user action),
// trigger formulas (user.Email, NOW()) included; a value for a column with
// a formula fails the test, and an empty column becomes a data column
// (acceptDataLocked).
func (s *Server) UpdateRowsAs(u User, tableID string, updates map[int64]map[string]any) {
	s.updateRows(u, tableID, updates, true)
}

func (s *Server) updateRows(u User, tableID string, updates map[int64]map[string]any, asAction bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.mustTable(tableID)
	delta, err := s.updateLocked(t, updates, u, asAction)
	if err != nil {
		s.t.Fatalf("gristtest: table %s: %v", t.id, err)
	}
	s.record(&action{deltas: map[string]map[int64]*rowChange{t.id: delta}})
}

// updateLocked sets cells of existing rows as user u and computes the
// trigger formulas the changes call for. An unknown row or column fails
// before any change. asAction is insertLocked's (BulkUpdateRecord).
func (s *Server) updateLocked(t *table, updates map[int64]map[string]any, u User, asAction bool) (map[int64]*rowChange, error) {
	ids := slices.Sorted(maps.Keys(updates))
	for _, id := range ids {
		if _, ok := t.rows[id]; !ok {
			return nil, &apiErr{400, fmt.Sprintf("Invalid row id %d", id)}
		}
		for k := range updates[id] {
			if t.col(k) == nil {
				return nil, &apiErr{400, fmt.Sprintf("Invalid column %q", k)}
			}
		}
	}
	if asAction {
		rows := make([]map[string]any, len(ids))
		for i, id := range ids {
			rows[i] = updates[id]
		}
		if err := t.acceptDataLocked(rows); err != nil {
			return nil, err
		}
	}
	delta := map[int64]*rowChange{}
	for id, upd := range updates {
		r := t.rows[id]
		before := maps.Clone(r)
		for k, v := range upd {
			r[k] = normValue(v)
		}
		s.triggersLocked(t, id, r, before, upd, u)
		delta[id] = &rowChange{before: before, after: maps.Clone(r)}
	}
	return delta, nil
}

// DeleteRows removes rows. As in Grist, a later AddRows may reuse the
// highest ids (grist-api.md "Observed" §3).
func (s *Server) DeleteRows(tableID string, ids ...int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.mustTable(tableID)
	delta := map[int64]*rowChange{}
	for _, id := range ids {
		r, ok := t.rows[id]
		if !ok {
			s.t.Fatalf("gristtest: table %s: Invalid row id %d", t.id, id)
		}
		delta[id] = &rowChange{before: r}
		delete(t.rows, id)
		t.gen++
	}
	maxID := int64(0)
	for id := range t.rows {
		maxID = max(maxID, id)
	}
	t.nextID = maxID + 1
	s.record(&action{deltas: map[string]map[int64]*rowChange{t.id: delta}})
}

// RenameTable renames a table and the Ref types pointing at it, keeping its
// tableRef (the RenameTable user action; a rename in the UI sets the raw
// view section's title, which renames the tableId the same way,
// grist-samples/real/probes/rename-*). /compare reports it in
// tableRenames, and the table's deltas under the new id.
func (s *Server) RenameTable(from, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.mustTable(from)
	if _, ok := s.tables[to]; ok {
		s.t.Fatalf("gristtest: table %q exists", to)
	}
	delete(s.tables, from)
	t.id = to
	s.tables[to] = t
	for _, ot := range s.tables {
		for _, c := range ot.cols {
			if base, arg, ok := strings.Cut(c.Type, ":"); ok && (base == "Ref" || base == "RefList") && arg == from {
				c.Type = base + ":" + to
			}
		}
	}
	// Webhooks refer to their table by tableRef (_grist_Triggers,
	// grist-api.md §6): they follow, and GET /webhooks shows the new id.
	for _, h := range s.hooks.list {
		if h.Fields.TableID == from {
			h.Fields.TableID = to
		}
	}
	s.record(&action{deltas: map[string]map[int64]*rowChange{}, renames: [][2]string{{from, to}}})
}

// SetColumnType changes a column's type and leaves its stored values as
// they are, so /records can answer the same body while
// _grist_Tables_column changes (Int to Numeric keeps 5 as 5).
func (s *Server) SetColumnType(tableID, col, typ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.mustTable(tableID).col(col)
	if c == nil {
		s.t.Fatalf("gristtest: table %s has no column %q", tableID, col)
	}
	c.Type = typ
	s.record(&action{deltas: map[string]map[int64]*rowChange{}})
}

// RemoveColumn drops a column and its values, as the RemoveColumn user
// action does (an expert deleting the column in the UI; DELETE
// /tables/{t}/columns/{c} and /apply do the same: removeColumnLocked).
// As in Grist, /compare lists the removal in columnRenames ([col, null]),
// every row in updateRows (the undo restores each row's value), and the
// old values under "-col" (grist-core ActionSummarizer: defunctTableName).
func (s *Server) RemoveColumn(tableID, col string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.mustTable(tableID)
	act := &action{deltas: map[string]map[int64]*rowChange{}, colRenames: map[string][][2]string{}}
	if !s.removeColumnLocked(act, t, col) {
		s.t.Fatalf("gristtest: table %s has no column %q", tableID, col)
	}
	s.record(act)
}

// removeColumnLocked removes column col of t into act; false when t has
// no such column. Like grist-core's RemoveColumn
// (sandbox/grist/useractions.py:1684-1688, doRemoveColumns :1410-1478 at
// f98cda9), it also drops the column's colRef from the other columns'
// recalcDeps: removing the _grist_Tables_column record removes the
// references to it from RefList columns of metadata tables
// (doBulkRemoveRecord :1248-1268), recalcDeps among them.
func (s *Server) removeColumnLocked(act *action, t *table, col string) bool {
	i := slices.IndexFunc(t.cols, func(c *Column) bool { return c.ID == col })
	if i < 0 {
		return false
	}
	ref := t.cols[i].colRef
	t.cols = slices.Delete(t.cols, i, i+1)
	for _, tt := range s.tables {
		for _, c := range tt.cols {
			c.RecalcDeps = slices.DeleteFunc(c.RecalcDeps, func(d int) bool { return d == ref })
		}
	}
	delta := map[int64]*rowChange{}
	for id, r := range t.rows {
		before := maps.Clone(r)
		delete(r, col)
		delta[id] = &rowChange{before: before, after: maps.Clone(r)}
	}
	act.merge(t.id, delta)
	act.colRenames[t.id] = append(act.colRenames[t.id], [2]string{col, ""})
	return true
}

// RenameColumn renames a column, keeping its colRef, position and values
// (the RenameColumn user action; renaming a column's label in the UI does
// the same unless untieColIdFromLabel is set, grist-api.md §1). /compare
// lists it in the table's columnRenames and changes no row.
func (s *Server) RenameColumn(tableID, from, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.mustTable(tableID)
	c := t.col(from)
	if c == nil {
		s.t.Fatalf("gristtest: table %s has no column %q", tableID, from)
	}
	if t.col(to) != nil {
		s.t.Fatalf("gristtest: table %s already has a column %q", tableID, to)
	}
	c.ID = to
	for _, r := range t.rows {
		r[to] = r[from]
		delete(r, from)
	}
	s.record(&action{deltas: map[string]map[int64]*rowChange{}, colRenames: map[string][][2]string{t.id: {{from, to}}}})
}

// AddColumn appends a column (hidden columns aside, after the others) with
// its type's empty value in every row, then sets the given values (row id
// -> value) as one bulk update. /compare lists the addition in
// columnRenames ([null, col]) and the rows given values in updateRows.
func (s *Server) AddColumn(tableID string, col Column, values map[int64]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.mustTable(tableID)
	if t.col(col.ID) != nil {
		s.t.Fatalf("gristtest: table %s already has a column %q", tableID, col.ID)
	}
	c := col
	c.colRef = s.nextColRef
	c.pos = s.nextColRef
	s.nextColRef++
	if c.Type == "" {
		c.Type = "Text"
	}
	t.cols = append(t.cols, &c)
	delta := map[int64]*rowChange{}
	for id, r := range t.rows {
		before := maps.Clone(r)
		r[c.ID] = emptyValue(c.Type)
		if v, ok := values[id]; ok {
			r[c.ID] = normValue(v)
			delta[id] = &rowChange{before: before, after: maps.Clone(r)}
		}
	}
	for id := range values {
		if _, ok := t.rows[id]; !ok {
			s.t.Fatalf("gristtest: table %s: Invalid row id %d", tableID, id)
		}
	}
	s.record(&action{deltas: map[string]map[int64]*rowChange{t.id: delta},
		colRenames: map[string][][2]string{t.id: {{"", c.ID}}}})
}

// RemoveTable deletes a table with its rows (POST /apply
// [["RemoveTable", id]], grist-samples/real/setup/05). /compare lists it
// in tableRenames ([id, null]) and its removed rows under "-id".
func (s *Server) RemoveTable(tableID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.mustTable(tableID)
	delete(s.tables, tableID)
	delta := map[int64]*rowChange{}
	for id, r := range t.rows {
		delta[id] = &rowChange{before: r}
	}
	cols := make([][2]string, 0, len(t.cols))
	for _, c := range t.cols {
		cols = append(cols, [2]string{c.ID, ""})
	}
	s.record(&action{deltas: map[string]map[int64]*rowChange{t.id: delta},
		colRenames: map[string][][2]string{t.id: cols}, renames: [][2]string{{tableID, ""}}})
}

// AddAttachment stores a file and returns its attachment id; fileIdent is
// the SHA-1 of the content plus the extension (grist-api.md "Observed" §5).
func (s *Server) AddAttachment(name string, content []byte) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextAtt
	s.nextAtt++
	ext := ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		ext = name[i:]
	}
	s.attachments[id] = &attachment{name: name, content: content, ident: sha1Hex(content) + ext}
	return id
}

// RowCount returns the number of rows of a table.
func (s *Server) RowCount(tableID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mustTable(tableID).rows)
}

// Inject429 makes the next n API requests fail with 429 and the message
// Grist uses for its per-document limit.
func (s *Server) Inject429(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail429 = n
}

// SetFault installs f: when it returns a status > 0 the request fails with
// that status and {"error": msg}. nil removes it.
func (s *Server) SetFault(f func(*http.Request) (status int, msg string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// SetLoseAnswer installs f: a request it returns true for is served in
// full (a write is applied) but its answer is replaced by a 502 from a
// proxy, as when a connection drops after the server acted. nil removes it.
func (s *Server) SetLoseAnswer(f func(*http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose = f
}

// SetSQLMaxRows makes SQL statements returning more than n rows fail with
// the statement timeout (400 "a slow statement resulted in a database
// interrupt"); 0 = no limit.
func (s *Server) SetSQLMaxRows(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sqlMaxRows = n
}

// SetLatency delays every response by d (to make requests overlap).
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// Requests returns how many requests had the method and a path ending in
// suffix (e.g. "GET", "/states"), counting 429-rejected ones.
func (s *Server) Requests(method, suffix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.counts {
		m, p, _ := strings.Cut(k, " ")
		if (method == "" || m == method) && strings.HasSuffix(p, suffix) {
			n += v
		}
	}
	return n
}

// Responses returns how many responses had the status (e.g. 304), every
// path counted; ResetCounts zeroes it too.
func (s *Server) Responses(status int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statuses[status]
}

// ResetCounts zeroes the request counters and the in-flight maximum.
func (s *Server) ResetCounts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = map[string]int{}
	s.statuses = map[int]int{}
	s.maxInflight.Store(0)
}

// MaxInFlight returns the largest number of requests seen at once.
func (s *Server) MaxInFlight() int { return int(s.maxInflight.Load()) }
