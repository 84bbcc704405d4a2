package bolttest

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Schema emulates Memgraph's index bookkeeping for tests that run a whole
// pipeline: it remembers the label-property and vector indexes created
// through the server and answers SHOW INDEX INFO and SHOW VECTOR INDEX INFO
// with the columns of docs/memgraph.md §3 and §4 (label-property rows have
// `property` as a list of strings, as Memgraph ≥ 3.2 reports it).
type Schema struct {
	mu      sync.Mutex
	indexes map[[2]string]bool // label, property
	vectors map[string][]any   // name → row
	order   []string           // vector index names in creation order
}

var (
	reIndex  = regexp.MustCompile("^CREATE INDEX ON :`((?:[^`]|``)+)`\\(`((?:[^`]|``)+)`\\)")
	reVector = regexp.MustCompile("^CREATE VECTOR INDEX `((?:[^`]|``)+)` ON :`((?:[^`]|``)+)`\\(`((?:[^`]|``)+)`\\) WITH CONFIG \\{(.*)\\}")
	reDrop   = regexp.MustCompile("^DROP VECTOR INDEX `((?:[^`]|``)+)`")
	reDim    = regexp.MustCompile(`"dimension":\s*(\d+)`)
	reCap    = regexp.MustCompile(`"capacity":\s*(\d+)`)
	reMetric = regexp.MustCompile(`"metric":\s*"([^"]*)"`)
)

func unquote(s string) string { return strings.ReplaceAll(s, "``", "`") }

// EmulateSchema installs a Respond handler that keeps a Schema; other
// queries get the default answers. It returns the schema for inspection.
func (s *Server) EmulateSchema() *Schema {
	sc := &Schema{indexes: map[[2]string]bool{}, vectors: map[string][]any{}}
	s.Respond(sc.respond)
	return sc
}

func (sc *Schema) respond(q Query) ([]string, [][]any, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	text := strings.TrimSpace(q.Text)
	switch {
	case text == "SHOW INDEX INFO":
		var rows [][]any
		for k := range sc.indexes {
			rows = append(rows, []any{"label+property", k[0], []any{k[1]}, int64(0)})
		}
		return []string{"index type", "label", "property", "count"}, rows, true
	case text == "SHOW VECTOR INDEX INFO":
		var rows [][]any
		for _, n := range sc.order {
			if r, ok := sc.vectors[n]; ok {
				rows = append(rows, r)
			}
		}
		return []string{"index_name", "label", "property", "capacity", "dimension", "metric", "size"}, rows, true
	case strings.Contains(text, "RETURN count(n) AS removed"):
		return []string{"removed"}, [][]any{{int64(0)}}, true
	}
	if m := reIndex.FindStringSubmatch(text); m != nil {
		sc.indexes[[2]string{unquote(m[1]), unquote(m[2])}] = true
	} else if m := reVector.FindStringSubmatch(text); m != nil {
		name := unquote(m[1])
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
		if _, ok := sc.vectors[name]; !ok {
			sc.order = append(sc.order, name)
		}
		sc.vectors[name] = []any{name, unquote(m[2]), unquote(m[3]), capacity, dim, metric, int64(0)}
	} else if m := reDrop.FindStringSubmatch(text); m != nil {
		delete(sc.vectors, unquote(m[1]))
	}
	return nil, nil, false
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
		return int(r[4].(int64))
	}
	return 0
}
