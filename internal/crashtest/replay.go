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
	"strings"
)

// NodeKey names a node: kgsync MERGEs nodes by label and id property.
type NodeKey struct {
	Label string
	ID    string
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
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{Nodes: map[NodeKey]map[string]any{}, Edges: map[EdgeKey]map[string]any{}, adj: map[NodeKey]map[EdgeKey]bool{}}
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
	// statements among them (ignored: the graph has no indexes).
	Files, Statements, DDL int
	// TornTails lists the files whose last line was incomplete (no ";\n")
	// and was ignored.
	TornTails []string
}

var (
	quoted = "`((?:[^`]|``)+)`"
	// Data statements after "UNWIND <rows> AS row " (sink.Statements).
	reDeleteNodes   = regexp.MustCompile(`^MATCH \(n:` + quoted + ` \{id: row\.id\}\) DETACH DELETE n$`)
	reDeleteOrphans = regexp.MustCompile(`^MATCH \(n:` + quoted + ` \{id: row\.id\}\) WHERE n\._placeholder = true AND NOT exists\(\(n\)--\(\)\) DETACH DELETE n$`)
	reDeleteEdges   = regexp.MustCompile(`^MATCH \(a:` + quoted + ` \{id: row\.from\}\)-\[e:` + quoted +
		`( \{_key: row\.key\})?\]->\(b:` + quoted + ` \{id: row\.to\}\) DELETE e$`)
	reMergeNodes = regexp.MustCompile(`^MERGE \(n:` + quoted + ` \{id: row\.id\}\) (ON CREATE SET|SET) n \+= row\.props$`)
	reMergeEdges = regexp.MustCompile(`^MATCH \(a:` + quoted + ` \{id: row\.from\}\), \(b:` + quoted +
		` \{id: row\.to\}\) MERGE \(a\)-\[e:` + quoted + `( \{_key: row\.key\})?\]->\(b\) SET e \+= row\.props$`)
	rePrune = regexp.MustCompile(`^MATCH \(a:` + quoted + ` \{id: row\.from\}\)-\[e:` + quoted + `\]->\(b:` + quoted +
		`\) WHERE NOT b\.id IN row\.keep DELETE e$`)
	// DDL (sink.Dialect for Memgraph).
	reDDL = regexp.MustCompile("^(CREATE INDEX ON :" + quoted + `\(` + quoted + `\)|CREATE VECTOR INDEX ` + quoted +
		` ON :` + quoted + `\(` + quoted + `\) WITH CONFIG \{.*\}|DROP VECTOR INDEX ` + quoted + `)$`)
	reRemoveProp = regexp.MustCompile(`^MATCH \(n:` + quoted + `\) WHERE n\.` + quoted + ` IS NOT NULL REMOVE n\.` + quoted + `$`)
)

func unquote(s string) string { return strings.ReplaceAll(s, "``", "`") }

// ReplayDir replays every NNNNNN-*.cypherl file of dir in name order (the
// order sink/cypherl wrote them in) into a new graph. A file's incomplete
// last line — one not ending in ";\n", the tail of a write cut short by a
// crash — is ignored and reported in ReplayStats.TornTails; any other line
// that is not a complete statement of a known shape fails the replay.
func ReplayDir(dir string) (*Graph, ReplayStats, error) {
	var st ReplayStats
	names, err := cypherlFiles(dir)
	if err != nil {
		return nil, st, err
	}
	g := NewGraph()
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
// dir in name order as one stream, as `cat dir/*.cypherl | mgconsole` reads
// them: an incomplete line at the end of one file runs into the next
// file's first line and fails the replay.
func ReplayStream(dir string) (*Graph, ReplayStats, error) {
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
	g := NewGraph()
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
	if reDDL.MatchString(stmt) {
		return true, nil
	}
	if m := reRemoveProp.FindStringSubmatch(stmt); m != nil {
		label, prop := unquote(m[1]), unquote(m[2])
		if prop != unquote(m[3]) {
			return false, fmt.Errorf("remove statement names two properties: %.120s", stmt)
		}
		for k, props := range g.Nodes {
			if k.Label == label {
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
	switch {
	case reDeleteNodes.MatchString(body):
		label := unquote(reDeleteNodes.FindStringSubmatch(body)[1])
		for i, r := range rows {
			id, err := str(r, "id", i)
			if err != nil {
				return err
			}
			g.detachDelete(NodeKey{label, id})
		}
	case reDeleteOrphans.MatchString(body):
		label := unquote(reDeleteOrphans.FindStringSubmatch(body)[1])
		for i, r := range rows {
			id, err := str(r, "id", i)
			if err != nil {
				return err
			}
			n := NodeKey{label, id}
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
		from, typ, keyed, to := unquote(m[1]), unquote(m[2]), m[3] != "", unquote(m[4])
		for i, r := range rows {
			e, err := edgeRow(r, i, typ, from, to, keyed)
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
		label, createOnly := unquote(m[1]), m[2] == "ON CREATE SET"
		for i, r := range rows {
			id, err := str(r, "id", i)
			if err != nil {
				return err
			}
			props, ok := r["props"].(map[string]any)
			if !ok {
				return fmt.Errorf("row %d: props is a %T, want a map", i, r["props"])
			}
			k := NodeKey{label, id}
			node, exists := g.Nodes[k]
			if exists && createOnly {
				continue
			}
			if !exists {
				node = map[string]any{"id": id}
				g.Nodes[k] = node
			}
			setProps(node, props)
		}
	case reMergeEdges.MatchString(body):
		m := reMergeEdges.FindStringSubmatch(body)
		from, to, typ, keyed := unquote(m[1]), unquote(m[2]), unquote(m[3]), m[4] != ""
		for i, r := range rows {
			e, err := edgeRow(r, i, typ, from, to, keyed)
			if err != nil {
				return err
			}
			props, ok := r["props"].(map[string]any)
			if !ok {
				return fmt.Errorf("row %d: props is a %T, want a map", i, r["props"])
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
		from, typ, toLabel := unquote(m[1]), unquote(m[2]), unquote(m[3])
		for i, r := range rows {
			id, err := str(r, "from", i)
			if err != nil {
				return err
			}
			keep, ok := r["keep"].([]any)
			if !ok {
				return fmt.Errorf("row %d: keep is a %T, want a list", i, r["keep"])
			}
			for k := range g.adj[NodeKey{from, id}] {
				if k.Type == typ && k.From == (NodeKey{from, id}) && k.To.Label == toLabel && !slices.Contains(keep, any(k.To.ID)) {
					g.deleteEdge(k)
				}
			}
		}
	default:
		return fmt.Errorf("unknown statement shape: UNWIND … AS row %.160s", body)
	}
	return nil
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

func edgeRow(r map[string]any, row int, typ, fromLabel, toLabel string, keyed bool) (EdgeKey, error) {
	from, err := str(r, "from", row)
	if err != nil {
		return EdgeKey{}, err
	}
	to, err := str(r, "to", row)
	if err != nil {
		return EdgeKey{}, err
	}
	e := EdgeKey{Type: typ, From: NodeKey{fromLabel, from}, To: NodeKey{toLabel, to}}
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
