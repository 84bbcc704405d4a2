// Package graphtest is an in-memory property graph that applies sink.Batch
// operations with the semantics the Cypher sinks give them (MERGE by label
// and id, SET +=, DETACH DELETE, edge pruning). Pipeline tests use it as a
// fake sink and assert on the resulting graph.
package graphtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/kgsync/kgsync/sink"
)

// Edge is one relationship.
type Edge struct {
	Type     string
	From, To sink.NodeRef
	// Key is the edge's `_key` (edges of link-table rows), "" otherwise.
	Key string
}

// Graph is an in-memory graph implementing sink.Sink.
type Graph struct {
	mu    sync.Mutex
	nodes map[sink.NodeRef]map[string]any
	edges map[Edge]map[string]any
	// adj indexes edges by both endpoints.
	adj    map[sink.NodeRef]map[Edge]bool
	schema sink.Schema
	// Writes counts Write calls with a non-empty batch; Ops counts operations.
	Writes, Ops int
	// FailWrite, when set, is called before each Write; an error fails it
	// before anything is applied.
	FailWrite func(b *sink.Batch) error
}

// New returns an empty graph.
func New() *Graph {
	return &Graph{nodes: map[sink.NodeRef]map[string]any{}, edges: map[Edge]map[string]any{}, adj: map[sink.NodeRef]map[Edge]bool{}}
}

// Ensure records the schema.
func (g *Graph) Ensure(_ context.Context, s sink.Schema) (sink.Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.schema = s
	return sink.Stats{}, nil
}

// Schema returns the last ensured schema.
func (g *Graph) Schema() sink.Schema {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.schema
}

// Write applies the batch atomically: DeleteNodes, DeleteEdges, NodeUpserts,
// EdgeUpserts, EdgePrunes. An edge whose endpoint is missing is not created (MATCH finds
// nothing), as in Cypher.
func (g *Graph) Write(_ context.Context, b *sink.Batch) (sink.Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.FailWrite != nil {
		if err := g.FailWrite(b); err != nil {
			return sink.Stats{}, err
		}
	}
	if b.Len() == 0 {
		return sink.Stats{}, nil
	}
	// A batch that would remove a node's identity fails whole, as the
	// Cypher sinks' statements do (sink.CheckNodeProps).
	for i, n := range b.NodeUpserts {
		if err := sink.CheckNodeProps(n.ID, n.Props); err != nil {
			return sink.Stats{}, fmt.Errorf("graphtest: node upsert %d (%s %q): %w", i, n.Label, n.ID, err)
		}
		// Names a Cypher statement could not carry fail the batch, as
		// sink.Statements refuses them.
		for k := range n.Props {
			if err := sink.ValidName(k); err != nil {
				return sink.Stats{}, fmt.Errorf("graphtest: node upsert %d (%s %q): property: %w", i, n.Label, n.ID, err)
			}
		}
	}
	g.Writes++
	g.Ops += b.Len()
	for _, n := range b.DeleteNodes {
		delete(g.nodes, n)
		for e := range g.adj[n] {
			g.deleteEdge(e)
		}
	}
	for _, e := range b.DeleteEdges {
		g.deleteEdge(Edge{Type: e.Type, From: e.From, To: e.To, Key: e.Key})
	}
	for _, n := range b.NodeUpserts {
		ref := sink.NodeRef{Label: n.Label, ID: n.ID}
		props, ok := g.nodes[ref]
		if ok && n.CreateOnly {
			continue
		}
		if !ok {
			props = map[string]any{"id": n.ID}
			g.nodes[ref] = props
		}
		for k, v := range n.Props {
			if v == nil {
				delete(props, k)
			} else {
				props[k] = v
			}
		}
	}
	for _, e := range b.EdgeUpserts {
		if _, ok := g.nodes[e.From]; !ok {
			continue
		}
		if _, ok := g.nodes[e.To]; !ok {
			continue
		}
		key := Edge{Type: e.Type, From: e.From, To: e.To, Key: e.Key}
		props, ok := g.edges[key]
		if !ok {
			props = map[string]any{}
			g.edges[key] = props
			for _, end := range []sink.NodeRef{e.From, e.To} {
				if g.adj[end] == nil {
					g.adj[end] = map[Edge]bool{}
				}
				g.adj[end][key] = true
			}
		}
		for k, v := range e.Props {
			if v == nil {
				delete(props, k) // SET e += {k: null} removes k
			} else {
				props[k] = v
			}
		}
	}
	for _, p := range b.EdgePrunes {
		for e := range g.adj[p.From] {
			if e.Type == p.Type && e.From == p.From && e.To.Label == p.ToLabel && !slices.Contains(p.Keep, e.To.ID) {
				g.deleteEdge(e)
			}
		}
	}
	for _, n := range b.DeleteOrphans {
		props, ok := g.nodes[n]
		if !ok || props["_placeholder"] != true {
			continue
		}
		if len(g.adj[n]) == 0 {
			delete(g.nodes, n)
			for e := range g.adj[n] {
				g.deleteEdge(e)
			}
		}
	}
	return sink.Stats{Statements: b.Len(), Batches: 1}, nil
}

func (g *Graph) deleteEdge(e Edge) {
	delete(g.edges, e)
	delete(g.adj[e.From], e)
	delete(g.adj[e.To], e)
}

// Close does nothing.
func (g *Graph) Close(context.Context) error { return nil }

// Count returns the number of nodes with the label ("" = all).
func (g *Graph) Count(label string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for ref := range g.nodes {
		if label == "" || ref.Label == label {
			n++
		}
	}
	return n
}

// EdgeCount returns the number of edges of the type ("" = all).
func (g *Graph) EdgeCount(typ string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for e := range g.edges {
		if typ == "" || e.Type == typ {
			n++
		}
	}
	return n
}

// Node returns a copy of a node's properties.
func (g *Graph) Node(label, id string) (map[string]any, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p, ok := g.nodes[sink.NodeRef{Label: label, ID: id}]
	return maps.Clone(p), ok
}

// Nodes returns the ids of the nodes with the label, sorted.
func (g *Graph) Nodes(label string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var ids []string
	for ref := range g.nodes {
		if ref.Label == label {
			ids = append(ids, ref.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// Edges returns all edges.
func (g *Graph) Edges() []Edge {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Collect(maps.Keys(g.edges))
}

// Dangling returns edges whose endpoints are missing (must be none).
func (g *Graph) Dangling() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for e := range g.edges {
		if _, ok := g.nodes[e.From]; !ok {
			out = append(out, fmt.Sprintf("%s from missing %v", e.Type, e.From))
		}
		if _, ok := g.nodes[e.To]; !ok {
			out = append(out, fmt.Sprintf("%s to missing %v", e.Type, e.To))
		}
	}
	return out
}

// Snapshot is a comparable picture of the whole graph: "node|label|id" →
// the node's properties and "edge|type|from-label:from-id|to-label:to-id|key"
// → the edge's properties, without the named properties (for example
// "_synced_at", which differs between two runs of the same content).
func (g *Graph) Snapshot(ignore ...string) map[string]map[string]any {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]map[string]any, len(g.nodes)+len(g.edges))
	for ref, p := range g.nodes {
		m := maps.Clone(p)
		for _, k := range ignore {
			delete(m, k)
		}
		out["node|"+ref.Label+"|"+ref.ID] = m
	}
	for e, p := range g.edges {
		m := maps.Clone(p)
		for _, k := range ignore {
			delete(m, k)
		}
		out["edge|"+e.Type+"|"+e.From.Label+":"+e.From.ID+"|"+e.To.Label+":"+e.To.ID+"|"+e.Key] = m
	}
	return out
}
