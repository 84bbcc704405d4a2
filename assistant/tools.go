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
)

// readOnly are the annotations of every tool: none modifies anything, and
// the world it reads is the pipeline's graph, not the open web.
func readOnly(title string) *mcp.ToolAnnotations {
	no := false
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no}
}

// Tool descriptions are written for the model that plans the calls: when
// to use the tool, what it returns, what to cite.
const (
	descSchema = "The data model of the knowledge graph: anchors (node labels) with their attributes, which attributes are embeddable (searchable by meaning) and their vector indexes, links (relationship types) with their ends, properties and counts, text indexes, and the document graph's labels. " +
		"Every node has an id (e.g. hs_code:0101) and a _pipeline property; together they identify it. Call this first, before rows, search or cypher, to learn the names to use."
	descSearch = "Search by meaning and words (hybrid: vectors, BM25, defined terms, addresses) for questions asked in words. Returns the best chunks of documents and table rows with their ids, addresses and document; declines (declined=true with a reason) when nothing relevant is found. " +
		"Restrict to one anchor and attribute (e.g. anchor=faq attribute=question) to cut noise, as vts does. expand=true adds the minimal sufficient context (the rest of the clause, MANDATORY neighbours, referenced sections, term definitions) within a token budget. " +
		"Not for counting or listing everything: use rows for how many / show all."
	descLookup = "Fetch document elements by their address as the document numbers them: \"6.2.2\", \"Table 7.1\", \"Article 7(3)\", \"RFC 7239 5.1\". Returns each matching element's id, document and text. Use when the question names a section, clause, article or table."
	descTerm   = "Definitions of a term the documents define (e.g. \"proxy\", \"obfuscated identifier\"): the term, its definition and the element that defines it, with ids to cite. Exact name first, then names containing the text. With no match, nearest lists the nearest defined term names and hint says what to try (another name, or search)."
	descNeigh  = "The edges of one node (by id, from search, lookup, rows or term): document structure (parent section, children), cross-references (CROSS_REF) and MANDATORY companions of a document element, the chunks covering it (COVERS), a chunk's section (IN_SECTION) and next chunk (NEXT), a term's defining element (DEFINED_IN), and a table row's links with their properties (e.g. REQUIRES_GUIDE with fqcc). Use to follow references or to see what a row links to."
	descRows   = "Exact structured queries over the data model's tables: filter an anchor's rows by attribute values, keep rows linked to given nodes, follow links to related rows, count (how many), group counts by an attribute, and list rows completely with the total stated, a page at a time (limit/offset; complete=true when the page holds every match). " +
		"Use for how many, show all, which X require Y, lists and filters: the answer is exact, not a top-k sample. Examples: chapters of section I: anchor=cn_code filters=[{attribute:level,value:2}] linked_to=[{link:IN_HS_SECTION,filters:[{attribute:id,value:\"hs_section:I\"}]}]; " +
		"guides for heading 0701: anchor=cn_code filters=[{attribute:code,value:\"0701\"}] follow=[{link:REQUIRES_GUIDE}]. Each row carries its id and source record; cite them."
	descCypher = "Run one read-only Cypher query on the Memgraph graph, for what rows cannot express (paths, aggregations across anchors, vector_search.search / text_search.search calls). " +
		"The query runs in a read transaction that is always rolled back; writes, DDL, LOAD CSV, several statements and procedures outside vector_search.*, text_search.*, mg.procedures, mg.functions are refused with the reason. " +
		"Nodes of every pipeline share the graph: filter on n._pipeline. Rows are capped; add LIMIT or count(). Prefer rows and search when they can answer."
)

func (s *Server) addTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "schema", Description: descSchema, Annotations: readOnly("Data model")}, dropOnCancel(s, s.toolSchema))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "search", Description: descSearch, Annotations: readOnly("Search")}, dropOnCancel(s, s.toolSearch))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "lookup", Description: descLookup, Annotations: readOnly("Look up an address")}, dropOnCancel(s, s.toolLookup))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "term", Description: descTerm, Annotations: readOnly("Term definitions")}, dropOnCancel(s, s.toolTerm))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "neighbors", Description: descNeigh, Annotations: readOnly("Neighbours of a node")}, dropOnCancel(s, s.toolNeighbors))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "rows", Description: descRows, Annotations: readOnly("Rows: exact filters, counts, lists")}, dropOnCancel(s, s.toolRows))
	if s.hasGraph() {
		mcp.AddTool(s.mcp, &mcp.Tool{Name: "cypher", Description: descCypher, Annotations: readOnly("Read-only Cypher")}, dropOnCancel(s, s.toolCypher))
	}
}

// dropOnCancel wraps a tool handler: when a call fails because its
// context ended, the views it may have been loading are dropped, so a
// cancelled first load is not kept as the state's answer.
func dropOnCancel[In, Out any](s *Server, h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		res, out, err := h(ctx, req, in)
		if err != nil && ctx.Err() != nil {
			s.dropViews()
		}
		return res, out, err
	}
}

// SchemaInput is the input of tool schema.
type SchemaInput struct {
	Pipeline string `json:"pipeline,omitempty" jsonschema:"the pipeline; empty: every served pipeline"`
}

// SchemaOutput is the result of tool schema.
type SchemaOutput struct {
	Pipelines []PipelineSchema `json:"pipelines"`
}

// PipelineSchema is one pipeline's data model as the graph holds it.
type PipelineSchema struct {
	*pipeline.SchemaDoc
	// Sink is where the graph is: "memgraph" (cypher works) or another
	// sink type (use rows).
	Sink string `json:"sink"`
	// Identity says how nodes are keyed.
	Identity string `json:"identity"`
	// LinkProperties are the property names of each link's edges.
	LinkProperties map[string][]string `json:"link_properties"`
	// TextIndexes are the text (BM25) indexes: name, label, property.
	TextIndexes []TextIndex `json:"text_indexes"`
	// DocumentGraph describes the labels and edges of documents.
	DocumentGraph string `json:"document_graph"`
}

// TextIndex is one text index.
type TextIndex struct {
	Name     string `json:"name"`
	Label    string `json:"label"`
	Property string `json:"property"`
}

const documentGraph = "Documents are (:Document {id, title}) with a tree of (:Section {id, address, title}) and (:Element {id, kind, address, text}) nodes, each -[:PART_OF]-> its parent; " +
	"(:Chunk {id, text, address, embedding}) nodes are the search units: (:Chunk)-[:PART_OF]->(:Document), -[:IN_SECTION]->(:Section), -[:COVERS]->(:Element), -[:NEXT]->(:Chunk); " +
	"(:Term {id, name, definition}) are defined terms; CROSS_REF edges join elements that cite each other and MANDATORY edges join elements always read together. " +
	"Element ids are the document id and the address path joined by \" › \"."

func (s *Server) toolSchema(ctx context.Context, _ *mcp.CallToolRequest, in SchemaInput) (*mcp.CallToolResult, SchemaOutput, error) {
	out := SchemaOutput{Pipelines: []PipelineSchema{}}
	ps := s.opts.Pipelines
	if in.Pipeline != "" {
		p, err := s.pipelineFor(in.Pipeline)
		if err != nil {
			return nil, out, err
		}
		ps = []*pipeline.Pipeline{p}
	}
	for _, p := range ps {
		ps, err := s.schemaOf(ctx, p)
		if err != nil {
			return nil, out, err
		}
		out.Pipelines = append(out.Pipelines, ps)
	}
	return nil, out, nil
}

func (s *Server) schemaOf(ctx context.Context, p *pipeline.Pipeline) (PipelineSchema, error) {
	doc, err := p.Describe(ctx)
	if err != nil {
		return PipelineSchema{}, err
	}
	v, err := s.viewOf(ctx, p)
	if err != nil {
		return PipelineSchema{}, err
	}
	t, err := v.rowsOf(ctx, p)
	if err != nil {
		return PipelineSchema{}, err
	}
	kind := "cypherl"
	if graphOf(p) != nil {
		kind = "memgraph"
	} else if p.Sink != nil {
		kind = strings.TrimPrefix(fmt.Sprintf("%T", p.Sink), "*")
		if i := strings.IndexByte(kind, '.'); i >= 0 {
			kind = kind[:i]
		}
	}
	out := PipelineSchema{SchemaDoc: doc, Sink: kind, LinkProperties: map[string][]string{}, TextIndexes: []TextIndex{},
		Identity:      fmt.Sprintf("a node is identified by its id together with _pipeline = %q", p.Name),
		DocumentGraph: documentGraph}
	for typ, props := range t.linkProps {
		if len(props) > 0 {
			out.LinkProperties[typ] = props
		}
	}
	for _, ti := range p.Schema(nil).TextIndexes {
		out.TextIndexes = append(out.TextIndexes, TextIndex{Name: ti.Name, Label: ti.Label, Property: strings.Join(ti.Properties, ", ")})
	}
	return out, nil
}

// SearchInput is the input of tool search.
type SearchInput struct {
	Pipeline  string `json:"pipeline,omitempty" jsonschema:"the pipeline; required when several are served"`
	Query     string `json:"query" jsonschema:"the question or words to search for"`
	Anchor    string `json:"anchor,omitempty" jsonschema:"search only this anchor's units (e.g. faq)"`
	Attribute string `json:"attribute,omitempty" jsonschema:"with anchor: search only this embeddable attribute (e.g. question)"`
	K         int    `json:"k,omitempty" jsonschema:"number of hits, 1-50 (default 5)"`
	Expand    bool   `json:"expand,omitempty" jsonschema:"add the minimal sufficient context to the hits"`
	Budget    int    `json:"budget,omitempty" jsonschema:"with expand: token budget of the expanded context (default 2500)"`
}

// SearchOutput is the result of tool search.
type SearchOutput struct {
	Pipeline string      `json:"pipeline"`
	Query    string      `json:"query"`
	Hits     []SearchHit `json:"hits"`
	// Declined reports that nothing relevant was found; Reason says why.
	Declined bool   `json:"declined,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Confidence is "high", or "low" when the relevance floor finds the
	// hits weak (Reason then says why, Missing lists the query's content
	// words none of the best hits has); empty when declined.
	Confidence string   `json:"confidence,omitempty"`
	Missing    []string `json:"missing,omitempty"`
	// Terms are defined terms the query names; Addresses the addresses it
	// names, with the nodes they resolve to.
	Terms         []string       `json:"terms,omitempty"`
	Addresses     []AddressFound `json:"addresses,omitempty"`
	ContextTokens int            `json:"context_tokens,omitempty"`
	// Omitted is what expand left out for lack of budget (at most 10),
	// by priority: hits that did not fit, then context a hit needed.
	Omitted  []Omitted `json:"omitted,omitempty"`
	Warnings []string  `json:"warnings,omitempty"`
}

// AddressFound is an address the query names.
type AddressFound struct {
	Text  string   `json:"text"`
	Nodes []string `json:"nodes"`
}

// SearchHit is one hit.
type SearchHit struct {
	// ID is the chunk's or row's node id; cite it.
	ID    string `json:"id"`
	Label string `json:"label"`
	// Node is the document or row the hit belongs to, Anchor its label,
	// Attribute the row attribute that matched ("" for chunks).
	Node      string  `json:"node"`
	Anchor    string  `json:"anchor,omitempty"`
	Attribute string  `json:"attribute,omitempty"`
	Score     float64 `json:"score"`
	// Address is a chunk's element address path; Element the element the
	// query matched best.
	Address    string      `json:"address,omitempty"`
	Element    string      `json:"element,omitempty"`
	Text       string      `json:"text"`
	Expansions []Expansion `json:"expansions,omitempty"`
	// AlsoIn are the element address paths (or chunk ids) of the same
	// text in other documents, folded into this hit: one document synced
	// in several formats or copies (retrieval.Hit.Renditions).
	AlsoIn []string `json:"also_in,omitempty"`
}

// Omitted is a hit or context left out of an expanded answer: the node's
// id, what it was ("hit 4", "defines \"Program\"") and its size in tokens.
type Omitted struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
	Tokens int    `json:"tokens"`
}

// Expansion is context added to a hit, with why.
type Expansion struct {
	ID     string `json:"id"`
	Label  string `json:"label"`
	Reason string `json:"reason"`
	Text   string `json:"text"`
}

func (s *Server) toolSearch(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	out := SearchOutput{Query: in.Query, Hits: []SearchHit{}}
	p, err := s.pipelineFor(in.Pipeline)
	if err != nil {
		return nil, out, err
	}
	out.Pipeline = p.Name
	if strings.TrimSpace(in.Query) == "" {
		return nil, out, fmt.Errorf("query is empty")
	}
	if in.K < 0 || in.K > 50 {
		return nil, out, fmt.Errorf("k %d: want 1-50", in.K)
	}
	if in.Attribute != "" && in.Anchor == "" {
		return nil, out, fmt.Errorf("attribute %q needs its anchor", in.Attribute)
	}
	if in.Budget < 0 {
		return nil, out, fmt.Errorf("budget %d: want a number of tokens > 0", in.Budget)
	}
	if in.Budget > 0 && !in.Expand {
		return nil, out, fmt.Errorf("budget %d bounds the expanded context: set expand true, or leave budget out", in.Budget)
	}
	v, err := s.viewOf(ctx, p)
	if err != nil {
		return nil, out, err
	}
	if in.Anchor != "" {
		units, err := v.searchable(ctx)
		if err != nil {
			return nil, out, err
		}
		attrs, ok := units[in.Anchor]
		if !ok {
			return nil, out, fmt.Errorf("anchor %q has nothing to search; anchors with embedded text: %s", in.Anchor, strings.Join(sortedKeys(units), ", "))
		}
		if in.Attribute != "" && !attrs[in.Attribute] {
			return nil, out, fmt.Errorf("attribute %q of anchor %s is not embeddable; searchable: %s", in.Attribute, in.Anchor, strings.Join(sortedKeys(attrs), ", "))
		}
	}
	opts := retrieval.Options{K: in.K, Anchor: in.Anchor, Attribute: in.Attribute}
	var res *retrieval.Result
	var c *retrieval.Context
	if in.Expand {
		budget := in.Budget
		if budget <= 0 {
			budget = p.Search.Budget
		}
		// SearchExpand, as kgsync search --expand: the definitions of the
		// terms the question names come with the hits, and the hits
		// beyond k while the budget has room.
		res, c, err = v.srch.SearchExpand(ctx, in.Query, opts, budget)
	} else {
		res, err = v.srch.Search(ctx, in.Query, opts)
	}
	if err != nil {
		return nil, out, err
	}
	hits := res.Hits
	if c != nil {
		hits, out.ContextTokens = c.Hits, c.Tokens
		for _, o := range c.Omitted {
			out.Omitted = append(out.Omitted, Omitted{ID: o.ID, Reason: o.Reason, Tokens: o.Tokens})
		}
	}
	out.Declined, out.Reason, out.Terms, out.Warnings = res.Declined, res.Reason, res.Terms, res.Warnings
	out.Confidence, out.Missing = res.Confidence, res.Missing
	for _, a := range res.Addresses {
		out.Addresses = append(out.Addresses, AddressFound{Text: a.Text, Nodes: a.Nodes})
	}
	for _, h := range hits {
		sh := SearchHit{ID: h.ID, Label: h.Label, Node: h.Node, Score: h.Score, Address: h.Address, Text: h.Text}
		if h.Label != retrieval.LabelChunk {
			sh.Anchor, sh.Attribute = h.Label, strings.TrimSuffix(h.Property, "_embedding")
		}
		if h.Match != nil {
			sh.Element = h.Match.ID
		}
		for _, x := range h.Expansions {
			sh.Expansions = append(sh.Expansions, Expansion{ID: x.ID, Label: x.Label, Reason: x.Reason, Text: x.Text})
		}
		for _, r := range h.Renditions {
			sh.AlsoIn = append(sh.AlsoIn, cmp.Or(r.Address, r.ID))
		}
		out.Hits = append(out.Hits, sh)
	}
	return nil, out, nil
}

// LookupInput is the input of tool lookup.
type LookupInput struct {
	Pipeline string `json:"pipeline,omitempty" jsonschema:"the pipeline; required when several are served"`
	Address  string `json:"address" jsonschema:"the address, optionally with the document: \"6.2.2\", \"Table 7.1\", \"Article 7(3)\", \"RFC 7239 5.1\""`
}

// LookupOutput is the result of tool lookup.
type LookupOutput struct {
	Pipeline string                   `json:"pipeline"`
	Address  string                   `json:"address"`
	Nodes    []retrieval.LookupResult `json:"nodes"`
}

func (s *Server) toolLookup(ctx context.Context, _ *mcp.CallToolRequest, in LookupInput) (*mcp.CallToolResult, LookupOutput, error) {
	out := LookupOutput{Address: in.Address, Nodes: []retrieval.LookupResult{}}
	p, err := s.pipelineFor(in.Pipeline)
	if err != nil {
		return nil, out, err
	}
	out.Pipeline = p.Name
	if strings.TrimSpace(in.Address) == "" {
		return nil, out, fmt.Errorf("address is empty")
	}
	v, err := s.viewOf(ctx, p)
	if err != nil {
		return nil, out, err
	}
	res, err := v.srch.Lookup(ctx, in.Address)
	if err != nil {
		return nil, out, err
	}
	out.Nodes = append(out.Nodes, res...)
	return nil, out, nil
}

// TermInput is the input of tool term.
type TermInput struct {
	Pipeline string `json:"pipeline,omitempty" jsonschema:"the pipeline; required when several are served"`
	Term     string `json:"term" jsonschema:"the term to define"`
}

// TermOutput is the result of tool term.
type TermOutput struct {
	Pipeline    string       `json:"pipeline"`
	Term        string       `json:"term"`
	Definitions []Definition `json:"definitions"`
	// Nearest are, when no defined term matches, the names of up to
	// maxNearest defined terms nearest to it (edit distance, shared
	// prefix, a name the term contains), nearest first.
	Nearest []string `json:"nearest,omitempty"`
	// Hint says, when no defined term matches, what to try instead.
	Hint string `json:"hint,omitempty"`
}

// Definition is one definition of a term.
type Definition struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Definition string `json:"definition"`
	// DefinedIn is the defining element's id, Document its document's.
	DefinedIn string `json:"defined_in"`
	Document  string `json:"document"`
	// Exact reports the name equals the term asked for (ignoring case).
	Exact bool `json:"exact"`
}

// maxDefinitions bounds a term's answer.
const maxDefinitions = 20

func (s *Server) toolTerm(ctx context.Context, _ *mcp.CallToolRequest, in TermInput) (*mcp.CallToolResult, TermOutput, error) {
	out := TermOutput{Term: in.Term, Definitions: []Definition{}}
	p, err := s.pipelineFor(in.Pipeline)
	if err != nil {
		return nil, out, err
	}
	out.Pipeline = p.Name
	want := strings.ToLower(strings.TrimSpace(in.Term))
	if want == "" {
		return nil, out, fmt.Errorf("term is empty")
	}
	v, err := s.viewOf(ctx, p)
	if err != nil {
		return nil, out, err
	}
	c, err := v.corpus.Corpus(ctx)
	if err != nil {
		return nil, out, err
	}
	for _, d := range c.Documents {
		for _, t := range d.Terms {
			name := strings.ToLower(t.Name)
			if name == want || strings.Contains(name, want) {
				out.Definitions = append(out.Definitions, Definition{ID: t.ID, Name: t.Name, Definition: t.Definition,
					DefinedIn: t.DefinedIn, Document: d.ID, Exact: name == want})
			}
		}
	}
	slices.SortStableFunc(out.Definitions, func(a, b Definition) int {
		if a.Exact != b.Exact {
			if a.Exact {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	out.Definitions = out.Definitions[:min(len(out.Definitions), maxDefinitions)]
	if len(out.Definitions) == 0 {
		out.Nearest, out.Hint = termHint(c, p.Name, strings.TrimSpace(in.Term))
	}
	return nil, out, nil
}

// Rows answers tool rows; exported for kgsync eval, which scores it.
func (s *Server) Rows(ctx context.Context, in RowsInput) (RowsOutput, error) {
	_, out, err := dropOnCancel(s, s.toolRows)(ctx, nil, in)
	return out, err
}

func (s *Server) toolRows(ctx context.Context, _ *mcp.CallToolRequest, in RowsInput) (*mcp.CallToolResult, RowsOutput, error) {
	out := RowsOutput{Rows: []RowResult{}}
	p, err := s.pipelineFor(in.Pipeline)
	if err != nil {
		return nil, out, err
	}
	v, err := s.viewOf(ctx, p)
	if err != nil {
		return nil, out, err
	}
	t, err := v.rowsOf(ctx, p)
	if err != nil {
		return nil, out, err
	}
	pl, err := planRows(in, t)
	if err != nil {
		return nil, out, err
	}
	g := graphOf(p)
	switch in.From {
	case "", "graph", "state":
	default:
		return nil, out, fmt.Errorf("from %q: want graph or state", in.From)
	}
	if in.From == "graph" && g == nil {
		return nil, out, fmt.Errorf("from graph: pipeline %s's sink is not Memgraph; use from state", p.Name)
	}
	if g != nil && in.From != "state" {
		out, err = pl.runGraph(ctx, p, g)
	} else {
		out = pl.runState(t)
	}
	out.Pipeline = p.Name
	// The query filters on $pipeline: give it, so cypher and params run
	// as they are.
	if out.Params == nil {
		out.Params = map[string]any{}
	}
	out.Params["pipeline"] = p.Name
	return nil, out, err
}
