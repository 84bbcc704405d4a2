package graphtest

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/sink"
)

// NodeProps returns the named properties of the label's nodes whose id is
// among ids, by id; it implements pipeline.GraphReader like the Memgraph
// sink's read (MATCH (n:`label`) WHERE n.id IN $ids).
func (g *Graph) NodeProps(_ context.Context, label string, ids, props []string) (map[string]map[string]any, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]map[string]any{}
	for _, id := range ids {
		n, ok := g.nodes[sink.NodeRef{Label: label, ID: id}]
		if !ok {
			continue
		}
		m := map[string]any{}
		for _, p := range props {
			if v, ok := n[p]; ok {
				m[p] = v
			}
		}
		out[id] = m
	}
	return out, nil
}

// CountBy counts, by label, the nodes whose property prop equals one of
// values (string values only, as the pipeline writes them).
func (g *Graph) CountBy(_ context.Context, prop string, values []string) (map[string]int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	want := map[string]bool{}
	for _, v := range values {
		want[v] = true
	}
	out := map[string]int{}
	for ref, n := range g.nodes {
		if s, ok := n[prop].(string); ok && want[s] {
			out[ref.Label]++
		}
	}
	return out, nil
}

// NodesBy lists the nodes whose property prop equals one of values, sorted
// by label, then id.
func (g *Graph) NodesBy(_ context.Context, prop string, values []string) ([]sink.NodeRef, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	want := map[string]bool{}
	for _, v := range values {
		want[v] = true
	}
	var out []sink.NodeRef
	for ref, n := range g.nodes {
		if s, ok := n[prop].(string); ok && want[s] {
			out = append(out, ref)
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

// VectorIndexes returns the vector indexes of the last ensured schema
// (none after New or Wipe).
func (g *Graph) VectorIndexes(context.Context) ([]sink.VectorIndex, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.schema.VectorIndexes), nil
}

// Wipe empties the graph and forgets its schema, as a Memgraph restarted
// without a snapshot.
func (g *Graph) Wipe() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nodes = map[sink.NodeRef]map[string]any{}
	g.edges = map[Edge]map[string]any{}
	g.adj = map[sink.NodeRef]map[Edge]bool{}
	g.schema = sink.Schema{}
}

// SetProp sets (or, with nil, removes) one property of an existing node,
// as a hand edit would; it reports whether the node exists.
func (g *Graph) SetProp(label, id, prop string, value any) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodes[sink.NodeRef{Label: label, ID: id}]
	if !ok {
		return false
	}
	if value == nil {
		delete(n, prop)
	} else {
		n[prop] = value
	}
	return true
}

// SetVectorDimension changes the dimension of the ensured vector index
// called name, as an index created by another configuration would have.
func (g *Graph) SetVectorDimension(name string, dim int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.schema.VectorIndexes = slices.Clone(g.schema.VectorIndexes)
	for i := range g.schema.VectorIndexes {
		if g.schema.VectorIndexes[i].Name == name {
			g.schema.VectorIndexes[i].Dimension = dim
		}
	}
}

// Props returns a copy of every node's properties, by node.
func (g *Graph) Props() map[sink.NodeRef]map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[sink.NodeRef]map[string]any, len(g.nodes))
	for ref, n := range g.nodes {
		out[ref] = maps.Clone(n)
	}
	return out
}

// EdgeProps returns a copy of an edge's properties (nil when absent).
func (g *Graph) EdgeProps(e Edge) map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	p, ok := g.edges[e]
	if !ok {
		return nil
	}
	return maps.Clone(p)
}
