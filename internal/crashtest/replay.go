// Package crashtest is test-only harness code for kgsync's crash and fault
// tests: a replayer that loads CYPHERL files (sink/cypherl) into an
// in-memory graph with Memgraph's semantics for exactly the statement
// shapes kgsync writes (sink.Statements and the sink.Dialect DDL), and
// helpers to build and drive the kgsync binary. docs/reliability.md lists
// what the tests built on it check.
package crashtest

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// NodeKey names a node: kgsync MERGEs nodes by label, id property and
// owning pipeline (the `_pipeline` property, sink.PropPipeline).
type NodeKey struct {
	Label    string
	ID       string
	Pipeline string
}

// EdgeKey names an edge: its type, its ends and its `_key` property ("" for
// edges without one).
type EdgeKey struct {
	Type     string
	From, To NodeKey
	Key      string
}

// Graph is the in-memory result of replaying CYPHERL statements. Nodes and
// edges map to their properties (the node's "id" and the edge's "_key"
// included, as in Memgraph).
type Graph struct {
	Nodes map[NodeKey]map[string]any
	Edges map[EdgeKey]map[string]any
	// adj indexes Edges by both ends.
	adj map[NodeKey]map[EdgeKey]bool
	// Vectors are the vector indexes by name. A vector index checks, as
	// Memgraph's does (docs/memgraph.md §4), that every value of its
	// label and property is a list of its dimension: when it is created
	// over existing nodes and on every later write.
	Vectors map[string]VectorIndex
	// Minor is the Memgraph 3.x minor version whose answers to index DDL
	// the graph gives: below 8, a CREATE VECTOR INDEX whose name or label
	// and property is taken fails the statement (and stops mgconsole);
	// from 8 on it is only a notification, recorded in Notices. CREATE
	// TEXT INDEX … (props) fails below 6 (Apply says why).
	Minor int
	// TextSearchFlag emulates --experimental-enabled=text-search, without
	// which 3.5 refuses text index DDL.
	TextSearchFlag bool
	// Notices are the notifications a server would have returned for
	// statements that did nothing (a duplicate index from 3.8 on).
	Notices []string
	// texts are the text indexes created, by name.
	texts map[string]bool
}

// VectorIndex is one vector index of a replayed graph.
type VectorIndex struct {
	Label, Property string
	Dimension       int
}

// NewGraph returns an empty graph answering like Memgraph 3.0–3.7 (Minor 7),
// the versions that refuse a duplicate vector index.
func NewGraph() *Graph { return NewGraphMinor(7) }

// NewGraphMinor returns an empty graph answering like Memgraph 3.minor.
func NewGraphMinor(minor int) *Graph {
	return &Graph{Nodes: map[NodeKey]map[string]any{}, Edges: map[EdgeKey]map[string]any{}, adj: map[NodeKey]map[EdgeKey]bool{},
		Vectors: map[string]VectorIndex{}, Minor: minor}
}

func (g *Graph) addEdge(e EdgeKey, props map[string]any) {
	g.Edges[e] = props
	for _, n := range []NodeKey{e.From, e.To} {
		if g.adj[n] == nil {
			g.adj[n] = map[EdgeKey]bool{}
		}
		g.adj[n][e] = true
	}
}

func (g *Graph) deleteEdge(e EdgeKey) {
	delete(g.Edges, e)
	delete(g.adj[e.From], e)
	delete(g.adj[e.To], e)
}

// ReplayStats describes one replay.
type ReplayStats struct {
	// Files and Statements count what was applied; DDL counts the index
	// statements among them (label-property indexes are ignored: the
	// graph needs none).
	Files, Statements, DDL int
	// TornTails lists the files whose last line was incomplete (no ";\n")
	// and was ignored.
	TornTails []string
}

var (
	quoted = "`((?:[^`]|``)+)`"
	// str is a double-quoted string literal as Literal writes it.
	strLit = `("(?:[^"\\]|\\.)*")`
	// node patterns: (n:`L` {id: row.id, _pipeline: "p"}).
	nodeID   = ` \{id: row\.id, _pipeline: ` + strLit + `\}\)`
	nodeFrom = ` \{id: row\.from, _pipeline: ` + strLit + `\}\)`
	nodeTo   = ` \{id: row\.to, _pipeline: ` + strLit + `\}\)`
	// Data statements after "UNWIND <rows> AS row " (sink.Statements).
	reDeleteNodes   = regexp.MustCompile(`^MATCH \(n:` + quoted + nodeID + ` DETACH DELETE n$`)
	reDeleteOrphans = regexp.MustCompile(`^MATCH \(n:` + quoted + nodeID + ` WHERE n\._placeholder = true AND NOT exists\(\(n\)--\(\)\) DETACH DELETE n$`)
	reDeleteEdges   = regexp.MustCompile(`^MATCH \(a:` + quoted + nodeFrom + `-\[e:` + quoted +
		`( \{_key: row\.key\})?\]->\(b:` + quoted + nodeTo + ` DELETE e$`)
	reMergeNodes = regexp.MustCompile(`^MERGE \(n:` + quoted + nodeID + ` (ON CREATE SET|SET) n \+= row\.props$`)
	reMergeEdges = regexp.MustCompile(`^MATCH \(a:` + quoted + nodeFrom + `, \(b:` + quoted +
		nodeTo + ` MERGE \(a\)-\[e:` + quoted + `( \{_key: row\.key\})?\]->\(b\)( SET e \+= row\.props)?$`)
	rePrune = regexp.MustCompile(`^MATCH \(a:` + quoted + nodeFrom + `-\[e:` + quoted + `\]->\(b:` + quoted +
		`\) WHERE NOT b\.id IN row\.keep DELETE e$`)
	// DDL (sink.Dialect for Memgraph).
	reIndexDDL   = regexp.MustCompile("^CREATE INDEX ON :" + quoted + `\(` + quoted + `\)$`)
	reCreateVec  = regexp.MustCompile(`^CREATE VECTOR INDEX ` + quoted + ` ON :` + quoted + `\(` + quoted + `\) WITH CONFIG \{"dimension": (\d+), .*\}$`)
	reDropVec    = regexp.MustCompile("^DROP VECTOR INDEX " + quoted + "$")
	reTextDDL    = regexp.MustCompile("^CREATE TEXT INDEX " + quoted + " ON :" + quoted + `\(` + quoted + `(, ` + quoted + `)*\)$`)
	reRemoveProp = regexp.MustCompile(`^MATCH \(n:` + quoted + `\) WHERE n\._pipeline = ` + strLit + ` AND n\.` + quoted +
		` IS NOT NULL REMOVE n\.` + quoted + `$`)
)

func unquote(s string) string { return strings.ReplaceAll(s, "``", "`") }

// ReplayDir replays every NNNNNN-*.cypherl file of dir in name order (the
// order sink/cypherl wrote them in) into a new graph answering like
// Memgraph 3.minor (NewGraphMinor): a statement that version refuses fails
// the replay, as it stops mgconsole. A file's incomplete
// last line — one not ending in ";\n", the tail of a write cut short by a
// crash — is ignored and reported in ReplayStats.TornTails; any other line
// that is not a complete statement of a known shape fails the replay.
func ReplayDir(dir string, minor int) (*Graph, ReplayStats, error) {
	var st ReplayStats
	names, err := cypherlFiles(dir)
	if err != nil {
		return nil, st, err
	}
	g := NewGraphMinor(minor)
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, st, fmt.Errorf("replay: %w", err)
		}
		torn, err := g.ReplayFile(data, &st)
		if err != nil {
			return nil, st, fmt.Errorf("replay %s: %w", n, err)
		}
		if torn {
			st.TornTails = append(st.TornTails, n)
		}
		st.Files++
	}
	return g, st, nil
}

// ReplayStream replays the concatenation of every NNNNNN-*.cypherl file of
// dir in name order as one stream into a new graph answering like Memgraph
// 3.minor, as `cat dir/*.cypherl | mgconsole` loads them into that
// version: an incomplete line at the end of one file runs into the next
// file's first line and fails the replay.
func ReplayStream(dir string, minor int) (*Graph, ReplayStats, error) {
	var st ReplayStats
	names, err := cypherlFiles(dir)
	if err != nil {
		return nil, st, err
	}
	var all []byte
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, st, fmt.Errorf("replay: %w", err)
		}
		all = append(all, data...)
		st.Files++
	}
	g := NewGraphMinor(minor)
	torn, err := g.ReplayFile(all, &st)
	if err != nil {
		return nil, st, fmt.Errorf("replay stream of %s: %w", dir, err)
	}
	if torn {
		st.TornTails = append(st.TornTails, names[len(names)-1])
	}
	return g, st, nil
}

func cypherlFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".cypherl") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// ReplayFile applies the statements of one file's content, counting them in
// st. It reports whether an incomplete last line was ignored.
func (g *Graph) ReplayFile(data []byte, st *ReplayStats) (torn bool, err error) {
	for lineNo := 1; len(data) > 0; lineNo++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return true, nil // the tail of a write cut short
		}
		line := string(data[:i])
		data = data[i+1:]
		stmt, ok := strings.CutSuffix(line, ";")
		if !ok {
			if len(data) == 0 {
				return true, nil
			}
			return false, fmt.Errorf("line %d: no ';' at the end of a line that is not the last", lineNo)
		}
		ddl, err := g.Apply(stmt)
		if err != nil {
			return false, fmt.Errorf("line %d: %w", lineNo, err)
		}
		st.Statements++
		if ddl {
			st.DDL++
		}
	}
	return false, nil
}

// Apply runs one statement (without its ';') and reports whether it was
// DDL. Only the shapes kgsync writes are understood; anything else — a
// CREATE of a node or edge among them — is an error naming the statement.
func (g *Graph) Apply(stmt string) (ddl bool, err error) {
	if reIndexDDL.MatchString(stmt) {
		return true, nil
	}
	if m := reTextDDL.FindStringSubmatch(stmt); m != nil {
		// The property list is a syntax error before 3.5 (grammar
		// MemgraphCypher.g4 createTextIndex, v3.0.0–v3.4.0); 3.5 needs the
		// experimental flag (PrepareTextIndexQuery, v3.5.0) and fails on a
		// duplicate name; from 3.6 a duplicate name is only a notification
		// (docs/memgraph-text-search.md).
		name := unquote(m[1])
		switch {
		case g.Minor < 5:
			return true, fmt.Errorf("3.%d: syntax error: CREATE TEXT INDEX takes no property list before 3.5: %.120s", g.Minor, stmt)
		case g.Minor == 5 && !g.TextSearchFlag:
			return true, fmt.Errorf("3.5: To use text indices and text search, start Memgraph with the --experimental-enabled='text-search' flag.")
		case g.texts[name] && g.Minor < 6:
			return true, fmt.Errorf("3.%d: text index %s already exists", g.Minor, name)
		case g.texts[name]:
			g.Notices = append(g.Notices, "Text index with name "+name+" already exists.")
		}
		if g.texts == nil {
			g.texts = map[string]bool{}
		}
		g.texts[name] = true
		return true, nil
	}
	if m := reCreateVec.FindStringSubmatch(stmt); m != nil {
		return true, g.createVector(unquote(m[1]), unquote(m[2]), unquote(m[3]), m[4])
	}
	if m := reDropVec.FindStringSubmatch(stmt); m != nil {
		name := unquote(m[1])
		if _, ok := g.Vectors[name]; !ok {
			g.Notices = append(g.Notices, "Vector index "+name+" doesn't exist.")
		}
		delete(g.Vectors, name)
		return true, nil
	}
	if m := reRemoveProp.FindStringSubmatch(stmt); m != nil {
		label, prop := unquote(m[1]), unquote(m[3])
		pipeline, err := unquoteString(m[2])
		if err != nil {
			return false, err
		}
		if prop != unquote(m[4]) {
			return false, fmt.Errorf("remove statement names two properties: %.120s", stmt)
		}
		for k, props := range g.Nodes {
			if k.Label == label && k.Pipeline == pipeline {
				delete(props, prop)
			}
		}
		return true, nil
	}
	rest, ok := strings.CutPrefix(stmt, "UNWIND ")
	if !ok {
		return false, fmt.Errorf("unknown statement: %.120s", stmt)
	}
	v, n, err := ParseLiteral(rest)
	if err != nil {
		return false, fmt.Errorf("rows: %w", err)
	}
	rowList, ok := v.([]any)
	if !ok {
		return false, fmt.Errorf("rows are a %T, want a list", v)
	}
	rows := make([]map[string]any, len(rowList))
	for i, r := range rowList {
		m, ok := r.(map[string]any)
		if !ok {
			return false, fmt.Errorf("row %d is a %T, want a map", i, r)
		}
		rows[i] = m
	}
	body, ok := strings.CutPrefix(rest[n:], " AS row ")
	if !ok {
		return false, fmt.Errorf("want ' AS row ' after the rows: %.120s", rest[n:])
	}
	return false, g.applyRows(body, rows)
}

func (g *Graph) applyRows(body string, rows []map[string]any) error {
	// lit returns the pipeline string literals of a match, unquoted.
	lits := func(m []string, at ...int) ([]string, error) {
		out := make([]string, len(at))
		for i, j := range at {
			p, err := unquoteString(m[j])
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		return out, nil
	}
	switch {
	case reDeleteNodes.MatchString(body):
		m := reDeleteNodes.FindStringSubmatch(body)
		p, err := lits(m, 2)
		if err != nil {
			return err
		}
		label := unquote(m[1])
		for i, r := range rows {
			id, err := str(r, "id", i)
			if err != nil {
				return err
			}
			g.detachDelete(NodeKey{label, id, p[0]})
		}
	case reDeleteOrphans.MatchString(body):
		m := reDeleteOrphans.FindStringSubmatch(body)
		p, err := lits(m, 2)
		if err != nil {
			return err
		}
		label := unquote(m[1])
		for i, r := range rows {
			id, err := str(r, "id", i)
			if err != nil {
				return err
			}
			n := NodeKey{label, id, p[0]}
			props, ok := g.Nodes[n]
			if !ok || props["_placeholder"] != true {
				continue
			}
			if len(g.adj[n]) == 0 {
				g.detachDelete(n)
			}
		}
	case reDeleteEdges.MatchString(body):
		m := reDeleteEdges.FindStringSubmatch(body)
		p, err := lits(m, 2, 6)
		if err != nil {
			return err
		}
		from, typ, keyed, to := unquote(m[1]), unquote(m[3]), m[4] != "", unquote(m[5])
		for i, r := range rows {
			e, err := edgeRow(r, i, typ, from, to, keyed, p[0], p[1])
			if err != nil {
				return err
			}
			for k := range g.adj[e.From] {
				if k.Type == e.Type && k.From == e.From && k.To == e.To && (!keyed || k.Key == e.Key) {
					g.deleteEdge(k)
				}
			}
		}
	case reMergeNodes.MatchString(body):
		m := reMergeNodes.FindStringSubmatch(body)
		p, err := lits(m, 2)
		if err != nil {
			return err
		}
		label, createOnly := unquote(m[1]), m[3] == "ON CREATE SET"
		for i, r := range rows {
			id, err := str(r, "id", i)
			if err != nil {
				return err
			}
			props, ok := r["props"].(map[string]any)
			if !ok {
				return fmt.Errorf("row %d: props is a %T, want a map", i, r["props"])
			}
			k := NodeKey{label, id, p[0]}
			node, exists := g.Nodes[k]
			if exists && createOnly {
				continue
			}
			if err := g.checkVectors(k, props); err != nil {
				return fmt.Errorf("row %d: %w", i, err)
			}
			if !exists {
				node = map[string]any{"id": id, "_pipeline": p[0]}
				g.Nodes[k] = node
			}
			setProps(node, props)
		}
	case reMergeEdges.MatchString(body):
		m := reMergeEdges.FindStringSubmatch(body)
		p, err := lits(m, 2, 4)
		if err != nil {
			return err
		}
		from, to, typ, keyed, withProps := unquote(m[1]), unquote(m[3]), unquote(m[5]), m[6] != "", m[7] != ""
		for i, r := range rows {
			e, err := edgeRow(r, i, typ, from, to, keyed, p[0], p[1])
			if err != nil {
				return err
			}
			props, ok := r["props"].(map[string]any)
			if withProps && !ok {
				return fmt.Errorf("row %d: props is a %T, want a map", i, r["props"])
			}
			if !withProps && r["props"] != nil {
				return fmt.Errorf("row %d: props %v in a statement that does not set them", i, r["props"])
			}
			if g.Nodes[e.From] == nil || g.Nodes[e.To] == nil {
				continue // MATCH found no pair: no edge
			}
			matched := false
			for k := range g.adj[e.From] {
				p := g.Edges[k]
				// MERGE on a pattern without _key matches any edge of the
				// type between the two nodes, keyed or not.
				if k.Type == e.Type && k.From == e.From && k.To == e.To && (!keyed || k.Key == e.Key) {
					setProps(p, props)
					matched = true
				}
			}
			if !matched {
				p := map[string]any{}
				if keyed {
					p["_key"] = e.Key
				}
				setProps(p, props)
				g.addEdge(e, p)
			}
		}
	case rePrune.MatchString(body):
		m := rePrune.FindStringSubmatch(body)
		p, err := lits(m, 2)
		if err != nil {
			return err
		}
		from, typ, toLabel := unquote(m[1]), unquote(m[3]), unquote(m[4])
		for i, r := range rows {
			id, err := str(r, "from", i)
			if err != nil {
				return err
			}
			keep, ok := r["keep"].([]any)
			if !ok {
				return fmt.Errorf("row %d: keep is a %T, want a list", i, r["keep"])
			}
			a := NodeKey{from, id, p[0]}
			for k := range g.adj[a] {
				if k.Type == typ && k.From == a && k.To.Label == toLabel && !slices.Contains(keep, any(k.To.ID)) {
					g.deleteEdge(k)
				}
			}
		}
	default:
		return fmt.Errorf("unknown statement shape: UNWIND … AS row %.160s", body)
	}
	return nil
}

// createVector creates a vector index as Memgraph 3.minor would.
func (g *Graph) createVector(name, label, prop, dim string) error {
	d, err := strconv.Atoi(dim)
	if err != nil {
		return fmt.Errorf("vector index %s: dimension %q", name, dim)
	}
	for n, vi := range g.Vectors {
		if n == name || vi.Label == label && vi.Property == prop {
			if g.Minor < 8 {
				return fmt.Errorf("Given vector index already exists. (CREATE VECTOR INDEX %s on 3.%d)", name, g.Minor)
			}
			// The title names the index from 3.11 (interpreter.cpp
			// v3.10.0:4680, v3.11.0:4725).
			what := fmt.Sprintf("on label %s, property %s", label, prop)
			if g.Minor >= 11 {
				what = name
			}
			g.Notices = append(g.Notices, "Error while creating vector index "+what+", for more information check the logs.")
			return nil
		}
	}
	vi := VectorIndex{Label: label, Property: prop, Dimension: d}
	for k, props := range g.Nodes {
		if k.Label == label {
			if err := vi.check(k, props[prop]); err != nil {
				return fmt.Errorf("create vector index %s over existing data: %w", name, err)
			}
		}
	}
	g.Vectors[name] = vi
	return nil
}

// check is the vector index's test of a value written to a node.
func (vi VectorIndex) check(k NodeKey, v any) error {
	if v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		return fmt.Errorf("node %s %q: Vector index property must be a list of floats or integers.", k.Label, k.ID)
	}
	if len(l) != vi.Dimension {
		return fmt.Errorf("node %s %q (pipeline %s): %d values: Vector index property must have the same number of dimensions as specified in the index (%d).",
			k.Label, k.ID, k.Pipeline, len(l), vi.Dimension)
	}
	return nil
}

// checkVectors checks props, about to be set on node k, against the
// vector indexes.
func (g *Graph) checkVectors(k NodeKey, props map[string]any) error {
	for _, vi := range g.Vectors {
		if vi.Label != k.Label {
			continue
		}
		if v, ok := props[vi.Property]; ok {
			if err := vi.check(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func unquoteString(lit string) (string, error) {
	v, _, err := ParseLiteral(lit)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%.40s is not a string", lit)
	}
	return s, nil
}

func (g *Graph) detachDelete(n NodeKey) {
	delete(g.Nodes, n)
	for k := range g.adj[n] {
		g.deleteEdge(k)
	}
	delete(g.adj, n)
}

// setProps is SET x += props: a null value removes the property.
func setProps(dst, props map[string]any) {
	for k, v := range props {
		if v == nil {
			delete(dst, k)
		} else {
			dst[k] = v
		}
	}
}

func str(r map[string]any, key string, row int) (string, error) {
	s, ok := r[key].(string)
	if !ok || s == "" {
		return "", fmt.Errorf("row %d: %s is %v, want a non-empty string", row, key, r[key])
	}
	return s, nil
}

func edgeRow(r map[string]any, row int, typ, fromLabel, toLabel string, keyed bool, fromPipeline, toPipeline string) (EdgeKey, error) {
	from, err := str(r, "from", row)
	if err != nil {
		return EdgeKey{}, err
	}
	to, err := str(r, "to", row)
	if err != nil {
		return EdgeKey{}, err
	}
	e := EdgeKey{Type: typ, From: NodeKey{fromLabel, from, fromPipeline}, To: NodeKey{toLabel, to, toPipeline}}
	if keyed {
		if e.Key, err = str(r, "key", row); err != nil {
			return EdgeKey{}, err
		}
	}
	return e, nil
}

// Canonical returns the graph as comparable maps: "Label|id" → properties
// and "Type|FromLabel|from|ToLabel|to|key" → properties, each properties map
// copied without the names in ignore (for example "_synced_at", which
// differs between any two runs).
func (g *Graph) Canonical(ignore ...string) (nodes, edges map[string]map[string]any) {
	nodes, edges = map[string]map[string]any{}, map[string]map[string]any{}
	strip := func(p map[string]any) map[string]any {
		c := maps.Clone(p)
		for _, k := range ignore {
			delete(c, k)
		}
		return c
	}
	for k, p := range g.Nodes {
		nodes[k.Label+"|"+k.ID] = strip(p)
	}
	for k, p := range g.Edges {
		edges[k.Type+"|"+k.From.Label+"|"+k.From.ID+"|"+k.To.Label+"|"+k.To.ID+"|"+k.Key] = strip(p)
	}
	return nodes, edges
}

// Count returns the number of nodes with label.
func (g *Graph) Count(label string) int {
	n := 0
	for k := range g.Nodes {
		if k.Label == label {
			n++
		}
	}
	return n
}

// HasTextIndex reports whether a text index called name was created.
func (g *Graph) HasTextIndex(name string) bool { return g.texts[name] }
