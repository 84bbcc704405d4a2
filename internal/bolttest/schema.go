package bolttest

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Memgraph configures EmulateMemgraph: the server version and flags whose
// answers the emulation gives.
type Memgraph struct {
	// Version is what SHOW VERSION answers (default "3.12.0"). Its minor
	// number selects version-dependent answers: a duplicate CREATE VECTOR
	// INDEX fails below 3.8 and is a notification from 3.8 on
	// (docs/memgraph.md §12); SHOW INDEX INFO lists a label-property
	// index's property as a string below 3.2, as a list from 3.2
	// (§3); SHOW VECTOR INDEX INFO has scalar_kind and index_type from 3.4
	// and shows the label as ":L" from 3.11 (§3, §4); a write in a
	// transaction begun with mode "r" fails from 3.2 (§1).
	Version string
	// NoEdgeProperties emulates a server started with
	// --storage-properties-on-edges=false (the binary's default): any query
	// that writes an edge property (SET e…, a keyed edge MERGE, the
	// kgsync_probe edge) fails with Memgraph's error (§12).
	NoEdgeProperties bool
	// TextSearchFlag emulates --experimental-enabled=text-search, which
	// text indexes need on 3.5 (PrepareTextIndexQuery, v3.5.0). Before 3.5
	// CREATE TEXT INDEX with a property list is a syntax error (grammar
	// MemgraphCypher.g4 createTextIndex, v3.0.0–v3.4.0).
	TextSearchFlag bool
	// Analytical emulates IN_MEMORY_ANALYTICAL storage: text index DDL
	// fails ("Text index is not supported in analytical storage mode.").
	// There a ROLLBACK undoes nothing: the writes of a rolled-back
	// transaction stay, so a test checks what removes them.
	Analytical bool
}

// textIndex is one emulated text index.
type textIndex struct {
	name, label string
	props       []any
}

// Schema emulates Memgraph's index bookkeeping for tests that run a whole
// pipeline: it remembers the label-property and vector indexes created
// through the server and answers SHOW VERSION, SHOW INDEX INFO and SHOW
// VECTOR INDEX INFO with the columns of docs/memgraph.md §3 and §4, index
// DDL with Memgraph's notifications (or errors), and refuses index DDL
// inside explicit transactions, as Memgraph does (§2).
type Schema struct {
	mu      sync.Mutex
	cfg     Memgraph
	minor   int
	indexes map[[2]string]bool // label, property
	order   [][2]string
	vectors map[string][]any // name → label, property, capacity, dimension, metric
	vorder  []string         // vector index names in creation order
	reject  map[string]bool  // vector index names whose CREATE fails quietly
	race    map[string]int   // vector index name → dimension another client creates first
	counted [][]any          // rows for the vector count statement
	texts   []textIndex      // text indexes in creation order
}

var (
	reIndex  = regexp.MustCompile("^CREATE INDEX ON :`((?:[^`]|``)+)`\\(`((?:[^`]|``)+)`\\)")
	reVector = regexp.MustCompile("^CREATE VECTOR INDEX `((?:[^`]|``)+)` ON :`((?:[^`]|``)+)`\\(`((?:[^`]|``)+)`\\) WITH CONFIG \\{(.*)\\}")
	reDrop   = regexp.MustCompile("^DROP VECTOR INDEX `((?:[^`]|``)+)`")
	reText   = regexp.MustCompile("^CREATE TEXT INDEX `((?:[^`]|``)+)` ON :`((?:[^`]|``)+)`(\\((.*)\\))?$")
	reTextP  = regexp.MustCompile("`((?:[^`]|``)+)`")
	reDim    = regexp.MustCompile(`"dimension":\s*(\d+)`)
	reCap    = regexp.MustCompile(`"capacity":\s*(\d+)`)
	reMetric = regexp.MustCompile(`"metric":\s*"([^"]*)"`)
	reMinor  = regexp.MustCompile(`^3\.(\d+)`)
	// a write clause, outside backtick-quoted names (kgsync passes
	// values as parameters).
	reWrite = regexp.MustCompile(`(^|\s)(CREATE|MERGE|DELETE|SET|REMOVE)\s`)
	// edge property writes: SET e…, a keyed edge pattern in MERGE.
	reEdgeWrite = regexp.MustCompile("SET e[ .]|MERGE \\(a\\)-\\[e:`(?:[^`]|``)+` \\{")
)

func unquote(s string) string { return strings.ReplaceAll(s, "``", "`") }

// EmulateSchema is EmulateMemgraph with the defaults (Memgraph 3.12.0,
// edge properties on).
func (s *Server) EmulateSchema() *Schema { return s.EmulateMemgraph(Memgraph{}) }

// EmulateMemgraph installs an Answer handler that keeps a Schema; other
// queries get the default answers. It returns the schema for inspection.
func (s *Server) EmulateMemgraph(cfg Memgraph) *Schema {
	if cfg.Version == "" {
		cfg.Version = "3.12.0"
	}
	sc := &Schema{cfg: cfg, indexes: map[[2]string]bool{}, vectors: map[string][]any{}, reject: map[string]bool{},
		race: map[string]int{}, minor: 12}
	if m := reMinor.FindStringSubmatch(cfg.Version); m != nil {
		sc.minor, _ = strconv.Atoi(m[1])
	}
	s.Answer(sc.answer)
	return sc
}

func info(code, title string) []Notification {
	return []Notification{{Severity: "INFO", Code: code, Title: title}}
}

func clientError(msg string) *Failure {
	return &Failure{Code: CodeClient, Message: msg, OnPull: true}
}

func (sc *Schema) answer(q Query) (Answer, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	text := strings.TrimSpace(q.Text)
	// Every index query, CREATE or DROP, throws IndexInMulticommandTxException
	// in an explicit transaction (interpreter.cpp v3.8.0:3810 PrepareIndexQuery,
	// :4142 PrepareVectorIndexQuery, :4310 PrepareTextIndexQuery).
	ddl := slices.ContainsFunc([]string{"CREATE INDEX", "CREATE VECTOR INDEX", "CREATE TEXT INDEX", "DROP INDEX", "DROP VECTOR INDEX",
		"DROP TEXT INDEX", "SHOW "}, func(p string) bool { return strings.HasPrefix(text, p) })
	if ddl && q.Tx != 0 {
		return Answer{Fail: clientError(sc.multicommand(text))}, true
	}
	// A write in a transaction begun with mode "r" fails from 3.2, which
	// reads the mode (src/glue/SessionHL.cpp v3.2.0:53) and checks the
	// plan against the storage access (interpreter.cpp v3.2.0:2328
	// AccessorCompliance); 3.0 and 3.1 ignore the mode. An auto-commit
	// query runs whatever its RUN's mode: only BEGIN turns the mode into a
	// READ accessor (interpreter.cpp v3.2.0:2390, v3.12.0:3449); outside a
	// transaction the accessor follows the query's own plan
	// (v3.2.0:6054–6070 parsed_query.is_cypher_read, v3.12.0:9948).
	if q.Tx != 0 && q.Meta["mode"] == "r" && sc.minor >= 2 && reWrite.MatchString(text) {
		return Answer{Fail: &Failure{Code: CodeClient, Message: "Accessor type READ and query type RW are misaligned!"}}, true
	}
	if sc.cfg.NoEdgeProperties && reEdgeWrite.MatchString(text) {
		return Answer{Fail: clientError("Can't set property because properties on edges are disabled.")}, true
	}
	switch {
	case text == "SHOW VERSION":
		return Answer{Fields: []string{"version"}, Rows: [][]any{{sc.cfg.Version}}}, true
	case text == "SHOW INDEX INFO":
		var rows [][]any
		for _, k := range sc.order {
			var prop any = []any{k[1]}
			if sc.minor < 2 {
				prop = k[1]
			}
			rows = append(rows, []any{"label+property", k[0], prop, int64(0)})
		}
		// Text indexes are "text (name: N)" on 3.5 and "label_text (name:
		// N)" from 3.6 (interpreter.cpp v3.5.0:5195, v3.6.0:5344).
		textMark := "label_text"
		if sc.minor < 6 {
			textMark = "text"
		}
		for _, ti := range sc.texts {
			rows = append(rows, []any{textMark + " (name: " + ti.name + ")", ti.label, ti.props, int64(0)})
		}
		// The vector indexes are listed too, the property a string: as
		// "vector" on 3.0–3.3, "label+property_vector" from 3.4
		// (interpreter.cpp v3.0.0:4454 and :4489, v3.4.0:4963 and :5007,
		// v3.12.0:7071).
		vectorMark := "label+property_vector"
		if sc.minor < 4 {
			vectorMark = "vector"
		}
		for _, n := range sc.vorder {
			r := sc.vectors[n]
			rows = append(rows, []any{vectorMark, sc.vectorLabel(r[0].(string)), r[1], int64(0)})
		}
		return Answer{Fields: []string{"index type", "label", "property", "count"}, Rows: rows}, true
	case text == "SHOW VECTOR INDEX INFO" && sc.minor < 1:
		// 3.0's grammar has no vectorIndexInfo (Cypher.g4 gains it in
		// v3.1.0:61); 3.0 listed vector indexes by a procedure.
		return Answer{Fail: clientError("Error on line 1 position 6. The underlying parsing error is mismatched input 'VECTOR'")}, true
	case text == "SHOW VECTOR INDEX INFO":
		fields := []string{"index_name", "label", "property", "capacity", "dimension", "metric", "size"}
		if sc.minor >= 4 {
			fields = append(fields, "scalar_kind", "index_type")
		}
		var rows [][]any
		for _, n := range sc.vorder {
			r := sc.vectors[n]
			row := []any{n, sc.vectorLabel(r[0].(string)), r[1], r[2], r[3], r[4], int64(0)}
			if sc.minor >= 4 {
				row = append(row, "f32", "label+property_vector")
			}
			rows = append(rows, row)
		}
		return Answer{Fields: fields, Rows: rows}, true
	case strings.Contains(text, "RETURN count(n) AS removed"):
		return Answer{Fields: []string{"removed"}, Rows: [][]any{{int64(0)}}}, true
	case strings.Contains(text, "AS pipeline, size("):
		return Answer{Fields: []string{"pipeline", "dimension", "nodes"}, Rows: sc.counted}, true
	}
	if m := reIndex.FindStringSubmatch(text); m != nil {
		k := [2]string{unquote(m[1]), unquote(m[2])}
		if sc.indexes[k] {
			return Answer{Notifications: info("IndexAlreadyExists", fmt.Sprintf("Index on label %s on properties %s already exists.", k[0], k[1]))}, true
		}
		sc.indexes[k] = true
		sc.order = append(sc.order, k)
		return Answer{Notifications: info("CreateIndex", fmt.Sprintf("Created index on label %s on properties %s.", k[0], k[1]))}, true
	}
	if m := reVector.FindStringSubmatch(text); m != nil {
		name, label, prop := unquote(m[1]), unquote(m[2]), unquote(m[3])
		dim, capacity, metric := int64(0), int64(0), "l2sq"
		if d := reDim.FindStringSubmatch(m[4]); d != nil {
			dim, _ = strconv.ParseInt(d[1], 10, 64)
		}
		if c := reCap.FindStringSubmatch(m[4]); c != nil {
			capacity, _ = strconv.ParseInt(c[1], 10, 64)
		}
		if mm := reMetric.FindStringSubmatch(m[4]); mm != nil {
			metric = mm[1]
		}
		if d, ok := sc.race[name]; ok {
			// Another client's identical CREATE committed a moment
			// before this one.
			delete(sc.race, name)
			if d == 0 {
				d = int(dim)
			}
			sc.vorder = append(sc.vorder, name)
			sc.vectors[name] = []any{label, prop, capacity, int64(d), metric}
		}
		clash := sc.reject[name]
		for n, r := range sc.vectors {
			clash = clash || n == name || r[0] == label && r[1] == prop
		}
		if clash {
			if sc.minor < 8 && !sc.reject[name] {
				return Answer{Fail: clientError("Given vector index already exists.")}, true
			}
			return Answer{Notifications: info("CreateIndex", "Error while creating vector index "+sc.vectorTitle(name, label, prop)+
				", for more information check the logs.")}, true
		}
		sc.vorder = append(sc.vorder, name)
		sc.vectors[name] = []any{label, prop, capacity, dim, metric}
		return Answer{Notifications: info("CreateIndex", "Created vector index "+sc.vectorTitle(name, label, prop)+".")}, true
	}
	if m := reText.FindStringSubmatch(text); m != nil {
		return sc.createText(unquote(m[1]), unquote(m[2]), m[3] != "", m[4]), true
	}
	if m := reDrop.FindStringSubmatch(text); m != nil {
		name := unquote(m[1])
		if _, ok := sc.vectors[name]; !ok {
			return Answer{Notifications: info("IndexDoesNotExist", fmt.Sprintf("Vector index %s doesn't exist.", name))}, true
		}
		delete(sc.vectors, name)
		for i, n := range sc.vorder {
			if n == name {
				sc.vorder = append(sc.vorder[:i:i], sc.vorder[i+1:]...)
				break
			}
		}
		return Answer{Notifications: info("DropIndex", fmt.Sprintf("Dropped vector index %s.", name))}, true
	}
	return Answer{}, false
}

// multicommand is the error of SHOW or index DDL text in an explicit
// transaction on the emulated version: 3.0's own messages, from 3.1
// MulticommandTxException's (src/query/exceptions.hpp v3.0.0:108, :140,
// :430; v3.1.0:113, :142, :169, :440).
func (sc *Schema) multicommand(text string) string {
	what, old := "Index manipulation", "Index manipulation not allowed in multicommand transactions."
	switch {
	case strings.HasPrefix(text, "SHOW VERSION"):
		what, old = "Version information query", "Version info query not allowed in multicommand transactions."
	case strings.HasPrefix(text, "SHOW "):
		what, old = "Storage information query", "Info reporting not allowed in multicommand transactions."
	}
	if sc.minor < 1 {
		return old
	}
	return what + " is not allowed in multicommand transactions. A multicommand transaction, also known as an explicit transaction, " +
		"groups multiple commands into a single atomic operation."
}

// vectorLabel is a vector index's label as the emulated version lists
// it: ":L" from 3.11 (the index's label filter, formatted), else "L".
func (sc *Schema) vectorLabel(label string) string {
	if sc.minor >= 11 {
		return ":" + label
	}
	return label
}

// vectorTitle is how the emulated version names a vector index in the
// titles of CREATE VECTOR INDEX's notifications: "on label L, property
// p" before 3.11, the index name from 3.11 (interpreter.cpp v3.10.0:4680,
// v3.11.0:4708 and :4725).
func (sc *Schema) vectorTitle(name, label, prop string) string {
	if sc.minor >= 11 {
		return name
	}
	return fmt.Sprintf("on label %s, property %s", label, prop)
}

// createText answers CREATE TEXT INDEX name ON :label[(props)] as the
// emulated version does: a syntax error for the property list before 3.5,
// the disabled-feature error on 3.5 without TextSearchFlag, an error in
// analytical mode; from 3.6 a duplicate name is a notification
// (interpreter.cpp v3.6.0: "Text index on label L with name N already
// exists."), and 3.5 (experimental) fails on it.
func (sc *Schema) createText(name, label string, hasProps bool, props string) Answer {
	switch {
	case hasProps && sc.minor < 5:
		return Answer{Fail: clientError(fmt.Sprintf("Error on line 1 position %d. The underlying parsing error is mismatched input '(' expecting <EOF>",
			len("CREATE TEXT INDEX `"+name+"` ON :`"+label+"`")+1))}
	case sc.minor == 5 && !sc.cfg.TextSearchFlag:
		return Answer{Fail: clientError(" To use text indices and text search, start Memgraph with the --experimental-enabled='text-search' flag.")}
	case sc.cfg.Analytical:
		return Answer{Fail: clientError("Text index is not supported in analytical storage mode.")}
	}
	for _, ti := range sc.texts {
		if ti.name == name {
			if sc.minor < 6 {
				return Answer{Fail: clientError("Text index " + name + " already exists.")}
			}
			return Answer{Notifications: info("IndexAlreadyExists", fmt.Sprintf("Text index on label %s with name %s already exists.", label, name))}
		}
	}
	var ps []any
	for _, m := range reTextP.FindAllStringSubmatch(props, -1) {
		ps = append(ps, unquote(m[1]))
	}
	sc.texts = append(sc.texts, textIndex{name: name, label: label, props: ps})
	return Answer{Notifications: info("CreateIndex", fmt.Sprintf("Created text index on label %s.", label))}
}

// AddTextIndex records a text index as if created earlier (by another
// pipeline, or by hand).
func (sc *Schema) AddTextIndex(name, label string, props ...string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	ti := textIndex{name: name, label: label}
	for _, p := range props {
		ti.props = append(ti.props, p)
	}
	sc.texts = append(sc.texts, ti)
}

// TextIndexes returns the names of the text indexes, in creation order.
func (sc *Schema) TextIndexes() []string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	var out []string
	for _, ti := range sc.texts {
		out = append(out, ti.name)
	}
	return out
}

// Restart answers from now on as a server started with cfg (a restart
// with other flags or another version); the indexes stay.
func (sc *Schema) Restart(cfg Memgraph) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if cfg.Version == "" {
		cfg.Version = "3.12.0"
	}
	sc.cfg, sc.minor = cfg, 12
	if m := reMinor.FindStringSubmatch(cfg.Version); m != nil {
		sc.minor, _ = strconv.Atoi(m[1])
	}
}

// Indexes returns the number of label-property indexes created.
func (sc *Schema) Indexes() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.indexes)
}

// VectorDimension returns the dimension of the named vector index (0 when absent).
func (sc *Schema) VectorDimension(name string) int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if r, ok := sc.vectors[name]; ok {
		return int(r[3].(int64))
	}
	return 0
}

// AddVectorIndex records a vector index as if created earlier (by another
// pipeline, or an earlier run).
func (sc *Schema) AddVectorIndex(name, label, property string, dimension int) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if _, ok := sc.vectors[name]; !ok {
		sc.vorder = append(sc.vorder, name)
	}
	sc.vectors[name] = []any{label, property, int64(1000), int64(dimension), "cos"}
}

// RejectVectorIndex makes every CREATE VECTOR INDEX of name fail as
// Memgraph 3.8+ reports a clash the listing does not show: only an INFO
// notification "Error while creating vector index …", no error
// (docs/memgraph.md §12). Bad existing vectors are an error on every
// version (v3.8.0 vector_index.cpp CreateIndex rethrows).
func (sc *Schema) RejectVectorIndex(name string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.reject[name] = true
}

// RaceVectorIndex makes the next CREATE VECTOR INDEX of name meet the
// same index created a moment before by another client (two pipelines
// sharing it, starting together): the index is added with the statement's
// label, property and config — with dimension when it is not 0 — and the
// statement then answers as a duplicate does on the emulated version: the
// error "Given vector index already exists." before 3.8, the notification
// "Error while creating vector index …" from 3.8 (docs/memgraph.md §12).
func (sc *Schema) RaceVectorIndex(name string, dimension int) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.race[name] = dimension
}

// SetVectorCounts sets the rows (pipeline, dimension, nodes) answering the
// count of other pipelines' vectors (sink.Dialect.CountVectors).
func (sc *Schema) SetVectorCounts(rows [][]any) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.counted = rows
}
