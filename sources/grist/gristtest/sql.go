package gristtest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The SQL subset: SELECT (* | col, ...) FROM tbl [WHERE col > ? | WHERE col
// IN (?, ...)] [ORDER BY col] [LIMIT n] [;]. Identifiers may be bare or
// double-quoted with "" escapes, as in SQLite; anything else is a syntax
// error like the real server's wrapped statement (grist-api.md §4).

type sqlTok struct {
	kind string // "id" (bare), "qid" (quoted), "num", "?", "punct", "str"
	text string
}

func lexSQL(q string) ([]sqlTok, error) {
	var toks []sqlTok
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			i++
		case c == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(q) {
					return nil, fmt.Errorf(`unrecognized token: "%s"`, q[i:])
				}
				if q[j] == '"' {
					if j+1 < len(q) && q[j+1] == '"' {
						b.WriteByte('"')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(q[j])
				j++
			}
			toks = append(toks, sqlTok{"qid", b.String()})
			i = j + 1
		case c == '\'':
			j := strings.IndexByte(q[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf(`unrecognized token: "%s"`, q[i:])
			}
			toks = append(toks, sqlTok{"str", q[i+1 : i+1+j]})
			i += j + 2
		case c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			j := i
			for j < len(q) && (q[j] == '_' || q[j] >= 'A' && q[j] <= 'Z' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= '0' && q[j] <= '9') {
				j++
			}
			toks = append(toks, sqlTok{"id", q[i:j]})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			toks = append(toks, sqlTok{"num", q[i:j]})
			i = j
		case c == '?':
			toks = append(toks, sqlTok{"?", "?"})
			i++
		case strings.IndexByte("*,()>;=<", c) >= 0:
			toks = append(toks, sqlTok{"punct", string(c)})
			i++
		default:
			return nil, fmt.Errorf(`unrecognized token: "%c"`, c)
		}
	}
	return toks, nil
}

type sqlQuery struct {
	cols     []string // nil = *
	table    string
	whereOp  string // "", ">", "in"
	whereCol string
	nArgs    int
	orderBy  string
	limit    int
}

// parseSQL parses the statements the source sends: SELECT columns or *
// FROM a table, optionally WHERE col > ? or col IN (?, …), ORDER BY a
// column, LIMIT n. Errors read as SQLite's.
func parseSQL(q string) (*sqlQuery, error) {
	toks, err := lexSQL(q)
	if err != nil {
		return nil, err
	}
	if n := len(toks); n > 0 && toks[n-1].text == ";" && toks[n-1].kind == "punct" {
		toks = toks[:n-1]
	}
	p := &sqlParser{toks: toks}
	sq := &sqlQuery{}
	for _, clause := range []func(*sqlQuery) error{p.selectFrom, p.where, p.orderLimit} {
		if err := clause(sq); err != nil {
			return nil, err
		}
	}
	if p.pos != len(p.toks) {
		return nil, p.syntax()
	}
	return sq, nil
}

// sqlParser reads the tokens of one statement, at pos.
type sqlParser struct {
	toks []sqlTok
	pos  int
}

func (p *sqlParser) peek() sqlTok {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return sqlTok{}
}

// kw takes the keyword w (any case) if it comes next.
func (p *sqlParser) kw(w string) bool {
	t := p.peek()
	if t.kind == "id" && strings.EqualFold(t.text, w) {
		p.pos++
		return true
	}
	return false
}

// syntax is SQLite's syntax error near the next token.
func (p *sqlParser) syntax() error {
	near := "end of input"
	if p.pos < len(p.toks) {
		near = `"` + p.toks[p.pos].text + `"`
	}
	return fmt.Errorf("SQLITE_ERROR: near %s: syntax error", near)
}

// ident takes a quoted or bare identifier if it comes next.
func (p *sqlParser) ident() (string, bool) {
	t := p.peek()
	if t.kind == "qid" || t.kind == "id" {
		p.pos++
		return t.text, true
	}
	return "", false
}

// punct takes the punctuation s if it comes next.
func (p *sqlParser) punct(s string) bool {
	if t := p.peek(); t.kind == "punct" && t.text == s {
		p.pos++
		return true
	}
	return false
}

// selectFrom parses SELECT's column list (or *) and FROM's table.
func (p *sqlParser) selectFrom(sq *sqlQuery) error {
	if !p.kw("select") {
		return p.syntax()
	}
	if !p.punct("*") {
		for {
			c, ok := p.ident()
			if !ok {
				return p.syntax()
			}
			sq.cols = append(sq.cols, c)
			if !p.punct(",") {
				break
			}
		}
	}
	if !p.kw("from") {
		return p.syntax()
	}
	tb, ok := p.ident()
	if !ok {
		return p.syntax()
	}
	sq.table = tb
	return nil
}

// where parses an optional WHERE col > ? or WHERE col IN (?, …).
func (p *sqlParser) where(sq *sqlQuery) error {
	if !p.kw("where") {
		return nil
	}
	c, ok := p.ident()
	if !ok {
		return p.syntax()
	}
	sq.whereCol = c
	switch {
	case p.punct(">"):
		if !p.punct("?") && p.peek().kind != "?" {
			return p.syntax()
		}
		if p.peek().kind == "?" {
			p.pos++
		}
		sq.whereOp, sq.nArgs = ">", 1
	case p.kw("in"):
		if !p.punct("(") {
			return p.syntax()
		}
		for {
			if p.peek().kind != "?" {
				return p.syntax()
			}
			p.pos++
			sq.nArgs++
			if !p.punct(",") {
				break
			}
		}
		if !p.punct(")") {
			return p.syntax()
		}
		sq.whereOp = "in"
	default:
		return p.syntax()
	}
	return nil
}

// orderLimit parses an optional ORDER BY col and LIMIT n (-1: none).
func (p *sqlParser) orderLimit(sq *sqlQuery) error {
	if p.kw("order") {
		if !p.kw("by") {
			return p.syntax()
		}
		c, ok := p.ident()
		if !ok {
			return p.syntax()
		}
		sq.orderBy = c
	}
	sq.limit = -1
	if p.kw("limit") {
		t := p.peek()
		if t.kind != "num" {
			return p.syntax()
		}
		p.pos++
		sq.limit, _ = strconv.Atoi(t.text)
	}
	return nil
}

func (s *Server) sqlGet(w http.ResponseWriter, r *http.Request) {
	s.runSQL(w, r, r.URL.Query().Get("q"), nil)
}

func (s *Server) sqlPost(w http.ResponseWriter, r *http.Request) {
	var body struct {
		SQL  *string `json:"sql"`
		Args []any   `json:"args"`
	}
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	if len(b) > 1<<20 {
		writeErr(w, r, 413, "request entity too large")
		return
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil || body.SQL == nil {
		writeJSON(w, r, 400, map[string]any{"error": "Invalid payload", "details": map[string]any{"userError": "Error: body.sql is missing"}})
		return
	}
	s.runSQL(w, r, *body.SQL, body.Args)
}

// runSQL answers stmt as /sql does: the rows of the table the WHERE
// clause keeps, in id order, up to LIMIT, each with the columns asked for
// in SQLite storage (sqlValue).
func (s *Server) runSQL(w http.ResponseWriter, r *http.Request, stmt string, args []any) {
	if !strings.Contains(strings.ToLower(stmt), "select") {
		writeErr(w, r, 400, "only select statements are supported")
		return
	}
	q, err := parseSQL(stmt)
	if err != nil {
		writeErr(w, r, 400, err.Error())
		return
	}
	if len(args) != q.nArgs {
		writeErr(w, r, 500, "SQLITE_MISMATCH: datatype mismatch")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tables[q.table]
	if !ok {
		writeErr(w, r, 400, "SQLITE_ERROR: no such table: "+q.table)
		return
	}
	cols, missing := q.columnsOf(t)
	if missing != "" {
		writeErr(w, r, 400, "SQLITE_ERROR: no such column: "+missing)
		return
	}
	a := sqlArgs{nums: make([]float64, len(args))}
	for i, v := range args {
		if str, ok := v.(string); ok && q.whereOp == "in" {
			a.text = append(a.text, str)
			a.nums[i] = math.NaN()
			continue
		}
		f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
		if err != nil {
			writeErr(w, r, 500, "SQLITE_MISMATCH: datatype mismatch")
			return
		}
		a.nums[i] = f
	}
	out := []map[string]any{}
	for _, id := range q.candidates(t, a) {
		if !q.keeps(t, id, a) {
			continue
		}
		if q.limit >= 0 && len(out) >= q.limit {
			break
		}
		fields := make(map[string]any, len(cols))
		for _, c := range cols {
			if c == "id" {
				fields["id"] = id
				continue
			}
			fields[c] = sqlValue(t.col(c).Type, t.rows[id][c])
		}
		out = append(out, map[string]any{"fields": fields})
	}
	if s.sqlMaxRows > 0 && len(out) > s.sqlMaxRows {
		writeErr(w, r, 400, "a slow statement resulted in a database interrupt")
		return
	}
	writeJSON(w, r, 200, map[string]any{"statement": stmt, "records": out})
}

// columnsOf returns the columns q selects from t ("id" and every column
// for *), and the first column q names that t does not have ("" if none).
func (q *sqlQuery) columnsOf(t *table) (cols []string, missing string) {
	cols = q.cols
	if cols == nil {
		cols = []string{"id"}
		for _, c := range t.cols {
			cols = append(cols, c.ID)
		}
	}
	for _, c := range append(slices.Clone(cols), q.whereCol, q.orderBy) {
		if c != "" && c != "id" && t.col(c) == nil {
			return nil, c
		}
	}
	return cols, ""
}

// sqlArgs are a statement's arguments as SQLite compares them: numbers
// with numbers (nums, NaN for a text argument), and text with text (an IN
// list of a Text column's values).
type sqlArgs struct {
	nums []float64
	text []string
}

// candidates returns the ids of t's rows q may keep, in id order: with
// id > ? those after the argument, found by a binary search (a keyset
// page); with id IN (…) the ids looked up, as SQLite's rowid; else all.
func (q *sqlQuery) candidates(t *table, a sqlArgs) []int64 {
	ids := t.ids()
	if q.whereCol == "id" && q.whereOp == ">" {
		ids = ids[sort.Search(len(ids), func(i int) bool { return float64(ids[i]) > a.nums[0] }):]
	}
	if q.whereCol == "id" && q.whereOp == "in" {
		var hit []int64
		for _, f := range a.nums {
			if id := int64(f); float64(id) == f && t.rows[id] != nil {
				hit = append(hit, id)
			}
		}
		slices.Sort(hit)
		ids = slices.Compact(hit)
	}
	return ids
}

// keeps reports whether row id of t passes q's WHERE clause.
func (q *sqlQuery) keeps(t *table, id int64, a sqlArgs) bool {
	if q.whereOp == "" {
		return true
	}
	v, _ := num(cellOf(t, id, q.whereCol))
	switch q.whereOp {
	case ">":
		return v > a.nums[0]
	case "in":
		cell := cellOf(t, id, q.whereCol)
		str, text := cell.(string)
		return !(text && !slices.Contains(a.text, str) || !text && !slices.Contains(a.nums, v))
	}
	return true
}

// sqlValue converts a stored (normal /records encoding) value to SQLite
// storage as /sql shows it (grist-api.md §4, "Observed" §4).
func sqlValue(typ string, v any) any {
	base, _, _ := strings.Cut(typ, ":")
	switch x := v.(type) {
	case CellError:
		return buffer(marshalPython([]any{"E", x.Name}))
	case bool:
		if base == "Bool" {
			if x {
				return 1
			}
			return 0
		}
		return x
	case []any:
		if (base == "ChoiceList" || base == "RefList" || base == "Attachments") && len(x) > 0 && x[0] == "L" {
			b, _ := json.Marshal(x[1:])
			return string(b)
		}
		return buffer(marshalPython(x))
	case map[string]any:
		return buffer(marshalPython(x))
	}
	return v
}
