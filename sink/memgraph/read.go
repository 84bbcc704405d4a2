package memgraph

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/sink"
)

// Read queries, the graph side of `kgsync verify` (pipeline.GraphReader).
// Labels and property names are validated (sink.ValidName) and quoted
// (sink.QuoteName); ids and values are parameters. Each runs as one
// auto-commit query with Write's retry rules.
const (
	// nodePropsQuery returns id and the requested properties, one column
	// each (p0, p1, …), of nodes of one label by id.
	// Every read sees only the Sink's pipeline's nodes (sink.PropPipeline).
	nodePropsQuery = "MATCH (n:%s) WHERE n.id IN $ids AND n._pipeline = $pipeline RETURN n.id AS id%s"
	// countByQuery counts nodes whose property is one of $values, by label.
	countByQuery = "MATCH (n) WHERE n.%s IN $values AND n._pipeline = $pipeline UNWIND labels(n) AS label RETURN label, count(*) AS n"
	// nodesByQuery lists them, label and id.
	nodesByQuery = "MATCH (n) WHERE n.%s IN $values AND n._pipeline = $pipeline UNWIND labels(n) AS label " +
		"RETURN label, n.id AS id ORDER BY label, id"
)

// NodeProps returns the properties props of the nodes labelled label whose
// id is among ids, by id (MATCH (n:`label`) WHERE n.id IN $ids). Ids
// without a node are absent; null properties are absent from the node's
// map. Errors: an invalid label or property name, a query error, a row
// whose id is not a string.
func (s *Sink) NodeProps(ctx context.Context, label string, ids, props []string) (map[string]map[string]any, error) {
	if err := sink.ValidName(label); err != nil {
		return nil, fmt.Errorf("read nodes: label: %w", err)
	}
	var ret strings.Builder
	for i, p := range props {
		if err := sink.ValidName(p); err != nil {
			return nil, fmt.Errorf("read nodes: property: %w", err)
		}
		fmt.Fprintf(&ret, ", n.%s AS p%d", sink.QuoteName(p), i)
	}
	out := map[string]map[string]any{}
	if len(ids) == 0 {
		return out, nil
	}
	st := sink.Statement{Query: fmt.Sprintf(nodePropsQuery, sink.QuoteName(label), ret.String()),
		Params: map[string]any{"ids": stringsAny(ids), "pipeline": s.cfg.Pipeline}, Kind: "read", Target: label}
	_, rows, _, err := s.runAuto(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("read %s nodes: %w", label, err)
	}
	for i, row := range rows {
		if len(row) != len(props)+1 {
			return nil, fmt.Errorf("read %s nodes: row %d has %d values, want %d", label, i, len(row), len(props)+1)
		}
		id, ok := row[0].(string)
		if !ok {
			return nil, fmt.Errorf("read %s nodes: row %d: id is %T, want string", label, i, row[0])
		}
		m := map[string]any{}
		for j, p := range props {
			if row[j+1] != nil {
				m[p] = row[j+1]
			}
		}
		out[id] = m
	}
	return out, nil
}

// CountBy counts, by label, the nodes whose property prop equals one of
// values (MATCH (n) WHERE n.`prop` IN $values). A node with several labels
// counts once under each.
func (s *Sink) CountBy(ctx context.Context, prop string, values []string) (map[string]int, error) {
	rows, err := s.byProp(ctx, countByQuery, prop, values)
	if err != nil {
		return nil, fmt.Errorf("count nodes by %s: %w", prop, err)
	}
	out := map[string]int{}
	for i, row := range rows {
		label, ok1 := row[0].(string)
		n, ok2 := row[1].(int64)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("count nodes by %s: row %d: got %T, %T, want string, integer", prop, i, row[0], row[1])
		}
		out[label] += int(n)
	}
	return out, nil
}

// NodesBy lists the nodes whose property prop equals one of values, sorted
// by label, then id. Nodes without a string id are skipped.
func (s *Sink) NodesBy(ctx context.Context, prop string, values []string) ([]sink.NodeRef, error) {
	rows, err := s.byProp(ctx, nodesByQuery, prop, values)
	if err != nil {
		return nil, fmt.Errorf("list nodes by %s: %w", prop, err)
	}
	out := make([]sink.NodeRef, 0, len(rows))
	for i, row := range rows {
		label, ok := row[0].(string)
		if !ok {
			return nil, fmt.Errorf("list nodes by %s: row %d: label is %T, want string", prop, i, row[0])
		}
		if id, ok := row[1].(string); ok {
			out = append(out, sink.NodeRef{Label: label, ID: id})
		}
	}
	slices.SortFunc(out, func(a, b sink.NodeRef) int {
		if c := strings.Compare(a.Label, b.Label); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func (s *Sink) byProp(ctx context.Context, query, prop string, values []string) ([][]any, error) {
	if err := sink.ValidName(prop); err != nil {
		return nil, err
	}
	if len(values) == 0 {
		return nil, nil
	}
	st := sink.Statement{Query: fmt.Sprintf(query, sink.QuoteName(prop)),
		Params: map[string]any{"values": stringsAny(values), "pipeline": s.cfg.Pipeline}, Kind: "read", Target: prop}
	_, rows, _, err := s.runAuto(ctx, st)
	if err != nil {
		return nil, err
	}
	for i, row := range rows {
		if len(row) != 2 {
			return nil, fmt.Errorf("row %d has %d values, want 2", i, len(row))
		}
	}
	return rows, nil
}

// VectorIndexes lists the vector indexes (SHOW VECTOR INDEX INFO with the
// Memgraph dialect, SHOW VECTOR INDEXES with Neo4j), as Ensure reads them.
func (s *Sink) VectorIndexes(ctx context.Context) ([]sink.VectorIndex, error) {
	fields, rows, _, err := s.runAuto(ctx, s.d.ShowVectorIndexes())
	if err != nil {
		return nil, fmt.Errorf("list vector indexes: %w", err)
	}
	out, err := s.d.ParseVectorIndexes(fields, rows)
	if err != nil {
		return nil, fmt.Errorf("list vector indexes: %w", err)
	}
	return out, nil
}

func stringsAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
