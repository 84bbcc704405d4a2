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

func parseSQL(q string) (*sqlQuery, error) {
	toks, err := lexSQL(q)
	if err != nil {
		return nil, err
	}
	if n := len(toks); n > 0 && toks[n-1].text == ";" && toks[n-1].kind == "punct" {
		toks = toks[:n-1]
	}
	pos := 0
	peek := func() sqlTok {
		if pos < len(toks) {
			return toks[pos]
		}
		return sqlTok{}
	}
	kw := func(w string) bool {
		t := peek()
		if t.kind == "id" && strings.EqualFold(t.text, w) {
			pos++
			return true
		}
		return false
	}
	syntax := func() error {
		near := "end of input"
		if pos < len(toks) {
			near = `"` + toks[pos].text + `"`
		}
		return fmt.Errorf("SQLITE_ERROR: near %s: syntax error", near)
	}
	ident := func() (string, bool) {
		t := peek()
		if t.kind == "qid" || t.kind == "id" {
			pos++
			return t.text, true
		}
		return "", false
	}
	punct := func(p string) bool {
		if t := peek(); t.kind == "punct" && t.text == p {
			pos++
			return true
		}
		return false
	}
	if !kw("select") {
		return nil, syntax()
	}
	sq := &sqlQuery{}
	if !punct("*") {
		for {
			c, ok := ident()
			if !ok {
				return nil, syntax()
			}
			sq.cols = append(sq.cols, c)
			if !punct(",") {
				break
			}
		}
	}
	if !kw("from") {
		return nil, syntax()
	}
	tb, ok := ident()
	if !ok {
		return nil, syntax()
	}
	sq.table = tb
	if kw("where") {
		c, ok := ident()
		if !ok {
			return nil, syntax()
		}
		sq.whereCol = c
		switch {
		case punct(">"):
			if !punct("?") && peek().kind != "?" {
				return nil, syntax()
			}
			if peek().kind == "?" {
				pos++
			}
			sq.whereOp, sq.nArgs = ">", 1
		case kw("in"):
			if !punct("(") {
				return nil, syntax()
			}
			for {
				if peek().kind != "?" {
					return nil, syntax()
				}
				pos++
				sq.nArgs++
				if !punct(",") {
					break
				}
			}
			if !punct(")") {
				return nil, syntax()
			}
			sq.whereOp = "in"
		default:
			return nil, syntax()
		}
	}
	if kw("order") {
		if !kw("by") {
			return nil, syntax()
		}
		c, ok := ident()
		if !ok {
			return nil, syntax()
		}
		sq.orderBy = c
	}
	sq.limit = -1
	if kw("limit") {
		t := peek()
		if t.kind != "num" {
			return nil, syntax()
		}
		pos++
		sq.limit, _ = strconv.Atoi(t.text)
	}
	if pos != len(toks) {
		return nil, syntax()
	}
	return sq, nil
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
	cols := q.cols
	if cols == nil {
		cols = []string{"id"}
		for _, c := range t.cols {
			cols = append(cols, c.ID)
		}
	}
	for _, c := range append(slices.Clone(cols), q.whereCol, q.orderBy) {
		if c != "" && c != "id" && t.col(c) == nil {
			writeErr(w, r, 400, "SQLITE_ERROR: no such column: "+c)
			return
		}
	}
	ids := t.ids()
	// Arguments compare as numbers with numbers, and text with text (an
	// IN list of a Text column's values), as SQLite compares them.
	argNums := make([]float64, len(args))
	var argText []string
	for i, a := range args {
		if str, ok := a.(string); ok && q.whereOp == "in" {
			argText = append(argText, str)
			argNums[i] = math.NaN()
			continue
		}
		f, err := strconv.ParseFloat(fmt.Sprint(a), 64)
		if err != nil {
			writeErr(w, r, 500, "SQLITE_MISMATCH: datatype mismatch")
			return
		}
		argNums[i] = f
	}
	if q.whereCol == "id" && q.whereOp == ">" {
		// Rows are visited in id order: those with id <= the argument
		// are skipped by a binary search, not one by one (a keyset page).
		ids = ids[sort.Search(len(ids), func(i int) bool { return float64(ids[i]) > argNums[0] }):]
	}
	if q.whereCol == "id" && q.whereOp == "in" {
		// Rows by id are looked up, not scanned (SQLite's rowid).
		var hit []int64
		for _, f := range argNums {
			if id := int64(f); float64(id) == f && t.rows[id] != nil {
				hit = append(hit, id)
			}
		}
		slices.Sort(hit)
		ids = slices.Compact(hit)
	}
	out := []map[string]any{}
	for _, id := range ids {
		if q.whereOp != "" {
			v, _ := num(cellOf(t, id, q.whereCol))
			switch q.whereOp {
			case ">":
				if !(v > argNums[0]) {
					continue
				}
			case "in":
				cell := cellOf(t, id, q.whereCol)
				str, text := cell.(string)
				if text && !slices.Contains(argText, str) || !text && !slices.Contains(argNums, v) {
					continue
				}
			}
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
