package assistant

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sink/memgraph"
)

// NeighborsInput is the input of tool neighbors.
type NeighborsInput struct {
	Pipeline string `json:"pipeline,omitempty" jsonschema:"the pipeline; required when several are served"`
	ID       string `json:"id" jsonschema:"the node's id, as search, lookup, rows or term returned it"`
	Limit    int    `json:"limit,omitempty" jsonschema:"edges to return, 1-200 (default 50)"`
}

// NeighborsOutput is the result of tool neighbors.
type NeighborsOutput struct {
	Pipeline string     `json:"pipeline"`
	ID       string     `json:"id"`
	Label    string     `json:"label"`
	Edges    []Neighbor `json:"edges"`
	// Total is how many edges the node has; Edges holds the first Limit.
	Total int    `json:"total"`
	From  string `json:"from"`
}

// Neighbor is one edge of the node.
type Neighbor struct {
	// Type is the edge type as the graph has it: PART_OF from an element
	// or section to its parent and from a chunk to its document or row,
	// IN_SECTION from a chunk to its section, NEXT from a chunk to the one
	// after it, COVERS from a chunk to its elements, DEFINED_IN from a term
	// to its defining node, CROSS_REF, MANDATORY, or the link's name;
	// Direction "out" from the node or "in" to it.
	Type      string         `json:"type"`
	Direction string         `json:"direction"`
	ID        string         `json:"id"`
	Label     string         `json:"label"`
	Props     map[string]any `json:"props,omitempty"`
	// Text is a short preview of the other node (element text, title).
	Text string `json:"text,omitempty"`
}

const (
	defaultNeighbors = 50
	maxNeighbors     = 200
	previewRunes     = 200
)

func preview(s string) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) > previewRunes {
		return string(r[:previewRunes]) + "…"
	}
	return string(r)
}

func (s *Server) toolNeighbors(ctx context.Context, _ *mcp.CallToolRequest, in NeighborsInput) (*mcp.CallToolResult, NeighborsOutput, error) {
	out := NeighborsOutput{ID: in.ID, Edges: []Neighbor{}}
	p, err := s.pipelineFor(in.Pipeline)
	if err != nil {
		return nil, out, err
	}
	out.Pipeline = p.Name
	if in.ID == "" {
		return nil, out, fmt.Errorf("id is empty")
	}
	if in.Limit == 0 {
		in.Limit = defaultNeighbors
	}
	if in.Limit < 1 || in.Limit > maxNeighbors {
		return nil, out, fmt.Errorf("limit %d: want 1-%d", in.Limit, maxNeighbors)
	}
	if g := graphOf(p); g != nil {
		err = s.neighborsGraph(ctx, p, g, &out)
	} else {
		err = s.neighborsState(ctx, p, &out)
	}
	if err != nil {
		return nil, out, err
	}
	slices.SortStableFunc(out.Edges, func(a, b Neighbor) int {
		return cmp.Or(strings.Compare(a.Type, b.Type), strings.Compare(a.Direction, b.Direction), strings.Compare(a.ID, b.ID))
	})
	out.Total = len(out.Edges)
	out.Edges = out.Edges[:min(len(out.Edges), in.Limit)]
	return nil, out, nil
}

// neighborsState reads the node's edges from state: a table row's links,
// or a document node's structure, references and chunks.
func (s *Server) neighborsState(ctx context.Context, p *pipeline.Pipeline, out *NeighborsOutput) error {
	out.From = "state"
	v, err := s.viewOf(ctx, p)
	if err != nil {
		return err
	}
	t, err := v.rowsOf(ctx, p)
	if err != nil {
		return err
	}
	c, err := v.corpus.Corpus(ctx)
	if err != nil {
		return err
	}
	if r := t.row(out.ID); r != nil {
		out.Label = r.anchor
		for _, e := range r.out {
			out.Edges = append(out.Edges, Neighbor{Type: e.typ, Direction: "out", ID: e.to.id, Label: e.to.anchor, Props: e.props, Text: rowPreview(e.to)})
		}
		for _, e := range r.in {
			out.Edges = append(out.Edges, Neighbor{Type: e.typ, Direction: "in", ID: e.from.id, Label: e.from.anchor, Props: e.props, Text: rowPreview(e.from)})
		}
		// The chunks of a long attribute are (:Chunk)-[:PART_OF]->(row).
		for _, u := range c.Units {
			if u.Label == retrieval.LabelChunk && u.Node == r.id {
				out.Edges = append(out.Edges, Neighbor{Type: pipeline.RelPartOf, Direction: "in", ID: u.ID, Label: u.Label, Text: preview(u.Text)})
			}
		}
		return nil
	}
	label := map[string]string{}
	textOf := map[string]string{}
	for _, d := range c.Documents {
		label[d.ID], textOf[d.ID] = d.Label, d.Title
		for _, n := range d.Nodes {
			label[n.ID] = n.Label
			textOf[n.ID] = cmp.Or(n.Title, n.Text)
		}
		for _, tm := range d.Terms {
			label[tm.ID] = pipeline.LabelTerm
			textOf[tm.ID] = tm.Name + ": " + tm.Definition
		}
	}
	for _, u := range c.Units {
		if u.Label == retrieval.LabelChunk {
			label[u.ID], textOf[u.ID] = u.Label, u.Text
		}
	}
	add := func(typ, dir, id string, props map[string]any) {
		out.Edges = append(out.Edges, Neighbor{Type: typ, Direction: dir, ID: id, Label: label[id], Props: props, Text: preview(textOf[id])})
	}
	// edge adds the edge from→to of type typ when the node is one of its
	// ends, in the direction the graph holds it.
	edge := func(typ, from, to string, props map[string]any) {
		if from == out.ID {
			add(typ, "out", to, props)
		}
		if to == out.ID {
			add(typ, "in", from, props)
		}
	}
	// The edges below are those pipeline.docGraphOps, coversOps and the
	// chunk writer write: (child)-[:PART_OF]->(parent) between sections,
	// elements and their document, (:Term)-[:DEFINED_IN]->(defining node),
	// CROSS_REF and MANDATORY between nodes, and from each chunk PART_OF
	// its document or row, IN_SECTION its section, COVERS its elements and
	// NEXT the chunk after it.
	for _, d := range c.Documents {
		if d.ID == out.ID {
			out.Label = d.Label
		}
		for _, n := range d.Nodes {
			if n.ID == out.ID {
				out.Label = n.Label
			}
			edge(pipeline.RelPartOf, n.ID, n.Parent, nil)
		}
		for _, tm := range d.Terms {
			if tm.ID == out.ID {
				out.Label = pipeline.LabelTerm
			}
			edge(pipeline.RelDefinedIn, tm.ID, tm.DefinedIn, nil)
		}
		for _, e := range d.Refs {
			edge(pipeline.RelCrossRef, e.From, e.To, map[string]any{"text": e.Text})
		}
	}
	for _, e := range c.Mandatory {
		edge(pipeline.RelMandatory, e.From, e.To, pipeline.MandatoryProps(e))
	}
	for _, u := range c.Units {
		if u.Label != retrieval.LabelChunk {
			continue
		}
		if u.ID == out.ID {
			out.Label = u.Label
			if r := t.row(u.Node); r != nil {
				// A row's chunk: its other end is the row.
				out.Edges = append(out.Edges, Neighbor{Type: pipeline.RelPartOf, Direction: "out", ID: r.id, Label: r.anchor, Text: rowPreview(r)})
			} else {
				add(pipeline.RelPartOf, "out", u.Node, nil)
			}
		} else if u.Node == out.ID {
			add(pipeline.RelPartOf, "in", u.ID, nil)
		}
		if label[u.Parent] == pipeline.LabelSection {
			edge(pipeline.RelInSection, u.ID, u.Parent, nil)
		}
		if u.Next != "" {
			edge(pipeline.RelNext, u.ID, u.Next, nil)
		}
		// Chunks cover elements only: the elements of a row's attribute
		// are not written to the graph, and a section is not covered.
		for _, el := range u.Elements {
			if label[el] == pipeline.LabelElement {
				edge(pipeline.RelCovers, u.ID, el, nil)
			}
		}
	}
	if out.Label == "" {
		return fmt.Errorf("no node with id %q in pipeline %s: use an id that search, lookup, rows or term returned", out.ID, p.Name)
	}
	return nil
}

// row is the row with node id id, whatever its anchor; nil when none.
func (t *table) row(id string) *srow {
	for _, rows := range t.byAnchor {
		if i, ok := slices.BinarySearchFunc(rows, id, func(r *srow, id string) int { return strings.Compare(r.id, id) }); ok {
			return rows[i]
		}
	}
	return nil
}

func rowPreview(r *srow) string {
	for _, k := range []string{"title", "name", "description", "question"} {
		if v, ok := r.props[k].(string); ok {
			return preview(v)
		}
	}
	return ""
}

// neighborsQuery lists a node's edges on the graph, both directions.
const neighborsQuery = "MATCH (n {id: $id}) WHERE n._pipeline = $pipeline MATCH (n)-[r]-(m) " +
	"RETURN type(r) AS type, startNode(r) = n AS out, m.id AS id, labels(m) AS labels, properties(r) AS props, " +
	"coalesce(m.title, m.name, m.text, m.description, m.question) AS text, labels(n) AS self LIMIT $limit"

func (s *Server) neighborsGraph(ctx context.Context, p *pipeline.Pipeline, g *memgraph.Sink, out *NeighborsOutput) error {
	out.From = "graph"
	res, err := g.Read(ctx, neighborsQuery, map[string]any{"id": out.ID, "pipeline": p.Name, "limit": int64(maxNeighbors * 10)},
		memgraph.ReadOptions{Timeout: s.opts.CypherTimeout})
	if err != nil {
		return fmt.Errorf("neighbors on the graph: %w", err)
	}
	for _, r := range res.Rows {
		if len(r) != 7 {
			return fmt.Errorf("neighbors on the graph: row has %d values", len(r))
		}
		n := Neighbor{Direction: "in"}
		n.Type, _ = r[0].(string)
		if o, _ := r[1].(bool); o {
			n.Direction = "out"
		}
		n.ID, _ = r[2].(string)
		if ls, _ := r[3].([]any); len(ls) > 0 {
			n.Label, _ = ls[0].(string)
		}
		pr, _ := r[4].(map[string]any)
		n.Props = publicOnly(pr)
		t, _ := r[5].(string)
		n.Text = preview(t)
		if ls, _ := r[6].([]any); len(ls) > 0 && out.Label == "" {
			out.Label, _ = ls[0].(string)
		}
		out.Edges = append(out.Edges, n)
	}
	if len(res.Rows) == 0 {
		return fmt.Errorf("no node with id %q and edges in pipeline %s on the graph", out.ID, p.Name)
	}
	return nil
}
