package gristtest

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

func sha1Hex(b []byte) string {
	h := sha1.Sum(b)
	return hex.EncodeToString(h[:])
}

type apiErr struct {
	status int
	msg    string
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = 500, []byte(`{"error":"encode"}`)
	}
	tag := etag(b)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("ETag", tag)
	w.Header().Set("Cache-Control", "no-cache")
	// GET honours If-None-Match; POST /sql does not
	// (grist-samples/real/read/get-records-Guides-if-none-match.txt).
	if status == 200 && r.Method == http.MethodGet && noneMatchHits(r.Header.Get("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(status)
	w.Write(b)
}

// etag is the weak ETag Express gives a body: W/"<length in hex>-<first 27
// characters of the base64 SHA-1>". Checked against a real capture:
// grist-samples/real/read/get-records-_grist_Tables_column-limit3.json is
// 938 (0x3aa) bytes and was served with W/"3aa-m/8jdoWw7NilvqEs+oIKR0/0PTA".
func etag(body []byte) string {
	sum := sha1.Sum(body)
	return fmt.Sprintf(`W/"%x-%s"`, len(body), base64.StdEncoding.EncodeToString(sum[:])[:27])
}

// noneMatchHits reports whether an If-None-Match header matches tag the way
// Express (the "fresh" package) compares: "*", or any entry of a comma
// separated list equal to tag once a "W/" prefix is ignored on both sides.
func noneMatchHits(header, tag string) bool {
	header = strings.TrimSpace(header)
	if header == "" {
		return false
	}
	if header == "*" {
		return true
	}
	for _, e := range strings.Split(header, ",") {
		if strings.TrimPrefix(strings.TrimSpace(e), "W/") == strings.TrimPrefix(tag, "W/") {
			return true
		}
	}
	return false
}

func writeErr(w http.ResponseWriter, r *http.Request, status int, msg string) {
	writeJSON(w, r, status, map[string]string{"error": msg})
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	p := "/api/docs/{doc}"
	mux.HandleFunc("GET "+p+"/tables", s.getTables)
	mux.HandleFunc("GET "+p+"/tables/{table}/columns", s.getColumns)
	mux.HandleFunc("GET "+p+"/tables/{table}/records", s.getRecords)
	mux.HandleFunc("GET "+p+"/sql", s.sqlGet)
	mux.HandleFunc("POST "+p+"/sql", s.sqlPost)
	mux.HandleFunc("GET "+p+"/states", s.getStates)
	mux.HandleFunc("GET "+p+"/compare", s.getCompare)
	mux.HandleFunc("GET "+p+"/attachments", s.getAttachments)
	mux.HandleFunc("GET "+p+"/attachments/{id}/download", s.download)
	s.webhookRoutes(mux, p)
	s.writeRoutes(mux, p)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, r, 404, "not found: "+r.URL.Path)
	})
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := &statusRecorder{ResponseWriter: rw, status: http.StatusOK}
		defer func() {
			s.mu.Lock()
			s.statuses[w.status]++
			s.mu.Unlock()
		}()
		n := s.inflight.Add(1)
		defer s.inflight.Add(-1)
		for {
			m := s.maxInflight.Load()
			if n <= m || s.maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		if !s.admit(w, r, n) {
			return
		}
		s.mu.Lock()
		lose := s.lose
		s.mu.Unlock()
		if lose != nil && lose(r) {
			mux.ServeHTTP(&discardWriter{header: http.Header{}}, r)
			writeErr(w, r, 502, "Bad Gateway")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// admit counts request r (the n-th in flight), waits the set latency and
// answers it as the real server does when it does not get through: no or
// a bad key, too many requests (injected or over the parallel limit), an
// injected fault, another document. It reports whether r gets through.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, n int64) bool {
	s.mu.Lock()
	s.counts[r.Method+" "+r.URL.Path]++
	inj := s.fail429 > 0
	if inj {
		s.fail429--
	}
	fault, latency, parallel := s.fault, s.latency, s.parallel
	_, known := s.users[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	s.mu.Unlock()
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return false
		}
	}
	auth := r.Header.Get("Authorization")
	switch {
	case auth == "":
		writeErr(w, r, 503, "Grist is not yet configured. Visit /boot to set up this installation.")
		return false
	case !strings.HasPrefix(auth, "Bearer "):
		writeErr(w, r, 401, "Bad request: unsupported Authorization scheme, expected 'Bearer'")
		return false
	case !known:
		writeErr(w, r, 401, "Bad request: invalid API key")
		return false
	}
	if inj || (parallel > 0 && n > int64(parallel)) {
		writeErr(w, r, 429, "Too many backlogged requests for document "+DocID+" - try again later?")
		return false
	}
	if fault != nil {
		if st, msg := fault(r); st > 0 {
			writeErr(w, r, st, msg)
			return false
		}
	}
	if strings.HasPrefix(r.URL.Path, "/api/docs/") {
		doc, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/api/docs/"), "/")
		if doc != DocID {
			writeErr(w, r, 404, "document not found")
			return false
		}
	}
	return true
}

func (s *Server) getTables(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Not in tableRef order: the real server's order is not reliable.
	ids := slices.Sorted(maps.Keys(s.tables))
	slices.Reverse(ids)
	out := []map[string]any{}
	for _, id := range ids {
		t := s.tables[id]
		out = append(out, map[string]any{"id": id, "fields": map[string]any{
			"tableRef": t.ref, "primaryViewId": t.ref, "summarySourceTable": t.summary, "onDemand": false,
			"rawViewSectionRef": t.ref*3 + 2, "recordCardViewSectionRef": t.ref*3 + 3,
		}})
	}
	writeJSON(w, r, 200, map[string]any{"tables": out})
}

func (s *Server) tableOr404(w http.ResponseWriter, r *http.Request) *table {
	id := r.PathValue("table")
	t, ok := s.tables[id]
	if !ok {
		writeErr(w, r, 404, fmt.Sprintf("Table not found %q", id))
		return nil
	}
	return t
}

func (s *Server) getColumns(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tableOr404(w, r)
	if t == nil {
		return
	}
	hidden := r.URL.Query().Get("hidden") == "true"
	out := []map[string]any{}
	// Reverse order: clients must sort by parentPos (grist-api.md "Observed" §2).
	for i := len(t.cols) - 1; i >= 0; i-- {
		c := t.cols[i]
		if c.Hidden && !hidden {
			continue
		}
		out = append(out, map[string]any{"id": c.ID, "fields": map[string]any{
			"colRef": c.colRef, "label": c.label(), "isFormula": c.IsFormula, "type": c.Type, "parentId": t.ref,
			"parentPos": c.pos, "widgetOptions": "", "formula": c.Formula, "description": "",
			"untieColIdFromLabel": false, "summarySourceCol": 0, "displayCol": 0, "visibleCol": 0,
			"rules": nil, "reverseCol": 0, "recalcWhen": c.RecalcWhen, "recalcDeps": c.recalcDeps(),
		}})
	}
	writeJSON(w, r, 200, map[string]any{"columns": out})
}

// getRecords answers GET /records: the rows the filter keeps, sorted as
// asked (newest first without sort), up to limit; the metadata tables
// _grist_Tables_column and _grist_Attachments as well.
func (s *Server) getRecords(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.PathValue("table") {
	case "_grist_Tables_column":
		writeJSON(w, r, 200, map[string]any{"records": s.columnRecordsLocked()})
		return
	case "_grist_Attachments":
		writeJSON(w, r, 200, map[string]any{"records": s.attachmentRecordsLocked()})
		return
	}
	t := s.tableOr404(w, r)
	if t == nil {
		return
	}
	q := r.URL.Query()
	hidden := q.Get("hidden") == "true"
	filter, msg := parseFilter(t, q.Get("filter"))
	if msg != "" {
		writeErr(w, r, 400, msg)
		return
	}
	ids := slices.Sorted(maps.Keys(t.rows))
	// Unspecified order without sort: serve newest first.
	slices.Reverse(ids)
	if srt := q.Get("sort"); srt != "" {
		sortRows(t, ids, strings.Split(srt, ","))
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	out := []map[string]any{}
	for _, id := range ids {
		if !matches(t, id, filter) {
			continue
		}
		out = append(out, recordOf(t, id, hidden))
		if limit > 0 && len(out) == limit {
			break
		}
	}
	writeJSON(w, r, 200, map[string]any{"records": out})
}

// attachmentRecordsLocked lists _grist_Attachments as /records does.
func (s *Server) attachmentRecordsLocked() []map[string]any {
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.attachments)) {
		a := s.attachments[id]
		out = append(out, map[string]any{"id": id, "fields": map[string]any{
			"fileIdent": a.ident, "fileName": a.name, "fileType": "", "fileSize": len(a.content),
			"fileExt": a.ident[strings.IndexByte(a.ident, '.')+1:], "imageHeight": 0, "imageWidth": 0,
			"timeDeleted": nil, "timeUploaded": int64(1795988466141) + id,
		}})
	}
	return out
}

// parseFilter parses /records' filter parameter f ("" for none): a JSON
// object of arrays by column of t. msg is the 400 answer's message when
// it is not one.
func parseFilter(t *table, f string) (filter map[string]any, msg string) {
	if f == "" {
		return nil, ""
	}
	if err := json.Unmarshal([]byte(f), &filter); err != nil {
		return nil, "Invalid query: filter must be a JSON object"
	}
	for k, v := range filter {
		if _, ok := v.([]any); !ok {
			return nil, "Invalid query: filter values must be arrays"
		}
		if k != "id" && t.col(k) == nil {
			return nil, fmt.Sprintf("Error manipulating data: [Sandbox] KeyError '%s'", k)
		}
	}
	return filter, ""
}

// sortRows sorts ids stably by the columns keys ("-col": descending).
func sortRows(t *table, ids []int64, keys []string) {
	sort.SliceStable(ids, func(i, j int) bool {
		for _, k := range keys {
			desc := strings.HasPrefix(k, "-")
			k = strings.TrimPrefix(k, "-")
			a, b := cellOf(t, ids[i], k), cellOf(t, ids[j], k)
			if c := compareCells(a, b); c != 0 {
				return (c < 0) != desc
			}
		}
		return false
	})
}

// recordOf is row id of t as /records shows it: its fields (hidden
// columns only when hidden), an error cell as null with its name under
// "errors".
func recordOf(t *table, id int64, hidden bool) map[string]any {
	fields := map[string]any{}
	errs := map[string]string{}
	for _, c := range t.cols {
		if c.Hidden && !hidden {
			continue
		}
		v := t.rows[id][c.ID]
		if e, ok := v.(CellError); ok {
			fields[c.ID] = nil
			errs[c.ID] = e.Name
			continue
		}
		fields[c.ID] = v
	}
	rec := map[string]any{"id": id, "fields": fields}
	if len(errs) > 0 {
		rec["errors"] = errs
	}
	return rec
}

func cellOf(t *table, id int64, col string) any {
	if col == "id" {
		return id
	}
	return t.rows[id][col]
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

func compareCells(a, b any) int {
	if fa, ok := num(a); ok {
		if fb, ok := num(b); ok {
			switch {
			case fa < fb:
				return -1
			case fa > fb:
				return 1
			}
			return 0
		}
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// matches applies a /records filter: exact values, numbers numerically,
// strings never equal numbers (grist-api.md "Observed" §3).
func matches(t *table, id int64, filter map[string]any) bool {
	for col, vals := range filter {
		v := cellOf(t, id, col)
		ok := false
		for _, want := range vals.([]any) {
			if fw, isNum := num(want); isNum {
				if fv, isNum := num(v); isNum && fv == fw {
					ok = true
				}
			} else if reflect.DeepEqual(want, v) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func (s *Server) getStates(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for i := len(s.history) - 1; i >= 0; i-- {
		out = append(out, map[string]any{"n": s.history[i].n, "h": s.history[i].h})
	}
	writeJSON(w, r, 200, map[string]any{"states": out})
}

func (s *Server) getCompare(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	left := r.URL.Query().Get("left")
	if right := r.URL.Query().Get("right"); right != "" && right != "HEAD" {
		writeErr(w, r, 500, "gristtest supports right=HEAD only")
		return
	}
	idx := slices.IndexFunc(s.history, func(a *action) bool { return a.h == left })
	if idx < 0 {
		writeErr(w, r, 500, "Cannot read hash")
		return
	}
	head := s.history[len(s.history)-1]
	state := func(a *action) map[string]any { return map[string]any{"n": a.n, "h": a.h} }
	summary := "same"
	if idx < len(s.history)-1 {
		summary = "right"
	}
	writeJSON(w, r, 200, map[string]any{
		"left": state(s.history[idx]), "right": state(head), "parent": state(s.history[idx]), "summary": summary,
		"details": map[string]any{
			"leftChanges":  map[string]any{"tableRenames": []any{}, "tableDeltas": map[string]any{}},
			"rightChanges": summarize(s.history[idx+1:]),
		},
	})
}

func nz(x []int64) []int64 {
	if x == nil {
		return []int64{}
	}
	return x
}

func sqlishDelta(v any) any {
	if e, ok := v.(CellError); ok {
		return []any{"E", e.Name}
	}
	return v
}

func (s *Server) getAttachments(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.attachments)) {
		a := s.attachments[id]
		out = append(out, map[string]any{"id": id, "fields": map[string]any{"fileName": a.name, "fileSize": len(a.content), "timeUploaded": "2026-11-29T21:41:06.141Z"}})
	}
	writeJSON(w, r, 200, map[string]any{"records": out})
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	a, ok := s.attachments[id]
	s.mu.Unlock()
	if !ok {
		writeErr(w, r, 404, fmt.Sprintf("Attachment not found: %d", id))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", a.name))
	w.Header().Set("Cache-Control", "private, max-age=3600")
	w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'")
	w.Write(bytes.Clone(a.content))
}

// statusRecorder remembers the status a handler wrote, for Responses.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// columnRecordsLocked is GET /tables/_grist_Tables_column/records: one
// record per column of every table, hidden ones included, id = colRef,
// with the fields of
// grist-samples/real/read/get-records-_grist_Tables_column-limit3.json.
// The caller holds s.mu.
func (s *Server) columnRecordsLocked() []map[string]any {
	var out []map[string]any
	for _, t := range s.tables {
		for _, c := range t.cols {
			out = append(out, map[string]any{"id": c.colRef, "fields": map[string]any{
				"parentId": t.ref, "parentPos": c.pos, "colId": c.ID, "type": c.Type, "widgetOptions": "",
				"isFormula": c.IsFormula, "formula": c.Formula, "label": c.label(), "description": "",
				"untieColIdFromLabel": false, "summarySourceCol": 0, "displayCol": 0, "visibleCol": 0,
				"rules": nil, "reverseCol": 0, "recalcWhen": c.RecalcWhen, "recalcDeps": c.recalcDeps(),
			}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["id"].(int) < out[j]["id"].(int) })
	if out == nil {
		out = []map[string]any{}
	}
	return out
}

// discardWriter swallows an answer (SetLoseAnswer).
type discardWriter struct{ header http.Header }

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
