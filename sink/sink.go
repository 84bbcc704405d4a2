// Package sink defines the graph operations kgsync writes and the Sink
// contract that sink/memgraph (Bolt) and sink/cypherl (file) implement.
//
// Labels, relationship types and property names are identifiers that cannot
// be Cypher parameters portably: they are validated (ValidName) and
// backtick-quoted (QuoteName); values are always parameters (or, in CYPHERL
// files, safely inlined literals).
package sink

import (
	"context"
	"fmt"
)

// Sink applies graph operations. Write must be idempotent (UNWIND … MERGE):
// state is committed only after Write returns, so after a crash the same
// batch may be written again.
type Sink interface {
	// Ensure creates the label-property indexes and vector indexes of schema
	// if missing, before the first write. A vector index whose dimension
	// differs from the requested one is dropped, the old vectors removed
	// from the nodes, and the index created anew.
	Ensure(ctx context.Context, schema Schema) (Stats, error)
	// Write applies one batch atomically where the sink allows it, in this
	// order: DeleteNodes, DeleteEdges, NodeUpserts, EdgeUpserts, EdgePrunes,
	// DeleteOrphans.
	Write(ctx context.Context, b *Batch) (Stats, error)
	// Close flushes and releases resources.
	Close(ctx context.Context) error
}

// Stats counts what a sink call sent.
type Stats struct {
	// Statements is the number of Cypher statements executed or written.
	Statements int
	// Batches is the number of transactions (or files) written.
	Batches int
	// Retries is the number of transient-error retries.
	Retries int
}

// Add returns the sum of two Stats, for totals over several calls.
func (s Stats) Add(o Stats) Stats {
	return Stats{Statements: s.Statements + o.Statements, Batches: s.Batches + o.Batches, Retries: s.Retries + o.Retries}
}

// Schema is the indexes a pipeline needs.
type Schema struct {
	// Indexes are label-property indexes, e.g. {Label: "Chunk", Property: "id"}.
	Indexes []Index
	// VectorIndexes are node vector indexes.
	VectorIndexes []VectorIndex
	// Edges are the relationship types the pipeline writes with what they
	// need of the server (a sink checks them before the first write); a
	// type missing here is checked when a batch writes it.
	Edges []EdgeType
	// TextIndexes are node full-text indexes (Memgraph text indexes,
	// Neo4j full-text indexes) for lexical search.
	TextIndexes []TextIndex
}

// TextIndex is a node full-text index called Name on Label's Properties.
// Memgraph tokenizes indexed text (Tantivy's default tokenizer: split on
// non-alphanumerics, lower-cased, no stemming; docs/memgraph.md §8), so the
// indexed properties hold text already normalized by kgsync.
type TextIndex struct {
	Name       string
	Label      string
	Properties []string
}

// EdgeType is a relationship type a pipeline writes, with what its edges
// carry: Memgraph stores edge properties (and so the `_key` of keyed edges)
// only when started with --storage-properties-on-edges=true
// (docs/memgraph.md §12).
type EdgeType struct {
	Type string
	// Keyed edges are merged by their `_key` property (EdgeUpsert.Key).
	Keyed bool
	// Properties are the edge properties written, e.g. ["text"].
	Properties []string
}

// NeedsProperties reports whether the edges need edge properties.
func (e EdgeType) NeedsProperties() bool { return e.Keyed || len(e.Properties) > 0 }

// Index is a label-property index.
type Index struct {
	Label    string
	Property string
}

// VectorIndex is a node vector index on (Label, Property).
type VectorIndex struct {
	// Name is the index name, e.g. "chunk_embedding".
	Name      string
	Label     string
	Property  string
	Dimension int
	// Metric is "cos" (default), "l2sq" or "ip" (Memgraph names; docs/memgraph.md §4).
	Metric string
	// Capacity is the initial capacity (Memgraph requires one).
	Capacity int
}

// WithDefaults is vi as a sink's Ensure records and creates it: a zero
// Capacity becomes capacity, an empty Metric "cos".
func (vi VectorIndex) WithDefaults(capacity int) VectorIndex {
	if vi.Capacity == 0 {
		vi.Capacity = capacity
	}
	if vi.Metric == "" {
		vi.Metric = "cos"
	}
	return vi
}

// Displaces reports whether vi takes old's place in a graph: the same
// name, or the same label and property (Memgraph keeps one vector index
// per name and per label and property; docs/memgraph.md §4).
func (vi VectorIndex) Displaces(old VectorIndex) bool {
	return old.Name == vi.Name || old.Label == vi.Label && old.Property == vi.Property
}

// Batch is one group of graph operations written in one transaction.
type Batch struct {
	// DeleteNodes are DETACH DELETEd.
	DeleteNodes []NodeRef
	// DeleteEdges are deleted (the nodes stay).
	DeleteEdges []EdgeRef
	// NodeUpserts are MERGEd by (Label, id) and their properties SET with +=
	// (a property set to nil is removed).
	NodeUpserts []NodeUpsert
	// EdgeUpserts are MERGEd between existing nodes.
	EdgeUpserts []EdgeUpsert
	// EdgePrunes delete a node's outgoing edges of one type whose target is
	// not among Keep: the edges a record no longer has.
	EdgePrunes []EdgePrune
	// DeleteOrphans are deleted when they are placeholders (property
	// `_placeholder` true) that no edge touches any more: the end of a
	// reference whose row is gone and that no other record links.
	DeleteOrphans []NodeRef
}

// Len is the number of operations in the batch.
func (b *Batch) Len() int {
	return len(b.DeleteNodes) + len(b.DeleteEdges) + len(b.NodeUpserts) + len(b.EdgeUpserts) + len(b.EdgePrunes) + len(b.DeleteOrphans)
}

// NodeRef names a node by label and id property.
type NodeRef struct {
	Label string
	ID    string
}

// NodeUpsert merges a node and sets its properties.
type NodeUpsert struct {
	Label string
	ID    string
	// Props are set with SET n += props. Values: string, int64, float64,
	// bool, nil, []float32 (vectors), []any, []string. A nil removes the
	// property, so Props must not set the properties every statement
	// matches a node by, `id` and PropPipeline, to nil (CheckNodeProps).
	Props map[string]any
	// CreateOnly sets Props only when the MERGE creates the node (ON CREATE
	// SET): a placeholder for an edge's end whose own record comes later
	// must not overwrite that record's node.
	CreateOnly bool
}

// EdgeUpsert merges (from)-[:Type]->(to) and sets its properties.
type EdgeUpsert struct {
	Type string
	From NodeRef
	To   NodeRef
	// Key, when set, is merged as the edge's `_key` property, so that two
	// records linking the same pair of nodes (rows of a many-to-many link
	// table) own one edge each and can be deleted one by one.
	Key   string
	Props map[string]any
}

// EdgeRef names one edge: by its Key when it has one, else by its type and
// endpoints.
type EdgeRef struct {
	Type string
	From NodeRef
	To   NodeRef
	Key  string
}

// EdgePrune removes From's outgoing Type edges to ToLabel nodes whose id is
// not in Keep.
type EdgePrune struct {
	Type    string
	From    NodeRef
	ToLabel string
	Keep    []string
}

// CheckNodeProps reports an error when the props of the node with the
// given id change an IdentityProperty: `id` set to anything but id, or
// PropPipeline set to nil. `SET n += {k: v}` overwrites k and `SET n +=
// {k: null}` removes it (docs/memgraph.md §5), so the node would stay in
// the graph with its edges while every later MATCH and MERGE of
// {id: …, _pipeline: …} misses it (a MERGE makes a second node).
func CheckNodeProps(id string, props map[string]any) error {
	if v, ok := props["id"]; ok && v != id {
		return fmt.Errorf("property id set to %v: the node could not be matched by its id %q again", v, id)
	}
	if v, ok := props[PropPipeline]; ok && v == nil {
		return fmt.Errorf("property %s set to null: the node could not be matched again", PropPipeline)
	}
	return nil
}
