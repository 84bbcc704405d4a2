package pipeline

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/sink"
)

// SchemaDoc is a pipeline's data model as an assistant's prompt can include
// it: anchors with their attributes and links, link tables, and current
// counts from state (`kgsync schema`).
type SchemaDoc struct {
	Pipeline string `json:"pipeline"`
	// Identity are the properties that name a node together: its id and
	// its pipeline (sink.IdentityProperty, sink.PropPipeline), since
	// pipelines sharing one Memgraph may hold nodes of one label and id.
	Identity []string       `json:"identity"`
	Anchors  []AnchorDoc    `json:"anchors"`
	Links    []LinkDoc      `json:"links"`
	Chunks   int            `json:"chunks"`
	Indexes  []VectorIdxDoc `json:"vector_indexes"`
}

// AnchorDoc describes one anchor (node label).
type AnchorDoc struct {
	Name         string         `json:"name"`
	Table        string         `json:"table,omitempty"`
	Description  string         `json:"description,omitempty"`
	QueryExample string         `json:"query_example,omitempty"`
	Nodes        int            `json:"nodes"`
	Attributes   []AttributeDoc `json:"attributes"`
}

// AttributeDoc describes one attribute (node property).
type AttributeDoc struct {
	Name         string `json:"name"`
	Description  string `json:"description,omitempty"`
	QueryExample string `json:"query_example,omitempty"`
	Embeddable   bool   `json:"embeddable"`
	// VectorIndex is the index to search the attribute's vectors with.
	VectorIndex string `json:"vector_index,omitempty"`
}

// LinkDoc describes one link (relationship type).
type LinkDoc struct {
	Name         string `json:"name"`
	From         string `json:"from"`
	To           string `json:"to"`
	Description  string `json:"description,omitempty"`
	QueryExample string `json:"query_example,omitempty"`
	Edges        int    `json:"edges"`
}

// VectorIdxDoc describes one vector index.
type VectorIdxDoc struct {
	Name      string `json:"name"`
	Label     string `json:"label"`
	Property  string `json:"property"`
	Dimension int    `json:"dimension"`
}

// Describe returns the pipeline's data model with node and edge counts from
// state: the configured anchors, attributes and links with their
// descriptions, plus what the default mapping produced for tables the model
// does not list.
func (p *Pipeline) Describe(ctx context.Context) (*SchemaDoc, error) {
	s := &schemaDescriber{p: p, anchors: map[string]*AnchorDoc{}, attrsSeen: map[string]map[string]bool{}, links: map[[3]string]*LinkDoc{}}
	// The configured model first, with its descriptions.
	if p.Model != nil {
		s.configured()
	}
	// Counts and default-mapped attributes from state.
	for _, src := range p.Sources {
		if err := s.counted(ctx, src.Name()); err != nil {
			return nil, err
		}
	}
	n, err := p.Store.ChunkCount(ctx, p.Name)
	if err != nil {
		return nil, fmt.Errorf("schema: count chunks: %w", err)
	}
	doc := s.doc()
	doc.Chunks = n
	return doc, nil
}

// schemaDescriber is one Describe: the anchors (with the attributes seen
// of each) and links found so far, by name.
type schemaDescriber struct {
	p         *Pipeline
	anchors   map[string]*AnchorDoc
	attrsSeen map[string]map[string]bool
	// links are by name, from anchor and to anchor ("?" for a configured
	// link whose target is not known until one is written).
	links map[[3]string]*LinkDoc
}

// anchor returns the anchor named name, adding it when new.
func (s *schemaDescriber) anchor(name string) *AnchorDoc {
	a, ok := s.anchors[name]
	if !ok {
		a = &AnchorDoc{Name: name}
		s.anchors[name] = a
		s.attrsSeen[name] = map[string]bool{}
	}
	return a
}

// link returns the link named name from one anchor to another, adding it
// when new.
func (s *schemaDescriber) link(name, from, to string) *LinkDoc {
	k := [3]string{name, from, to}
	l, ok := s.links[k]
	if !ok {
		l = &LinkDoc{Name: name, From: from, To: to}
		s.links[k] = l
	}
	return l
}

// configured adds the model's anchors, attributes, links and link tables
// with their descriptions, in the model's order.
func (s *schemaDescriber) configured() {
	m := s.p.Model
	for _, ac := range m.cfg.Anchors {
		a := s.anchor(ac.Name)
		a.Table, a.Description, a.QueryExample = m.tableOf(ac.Name), ac.Description, ac.QueryExample
		for _, at := range ac.Attributes {
			ad := AttributeDoc{Name: at.Name, Description: at.Description, QueryExample: at.QueryExample, Embeddable: at.Embeddable}
			if at.Embeddable {
				ad.VectorIndex = VectorIndexName(ac.Name, at.Name)
			}
			a.Attributes = append(a.Attributes, ad)
			s.attrsSeen[ac.Name][at.Name] = true
		}
		for _, lc := range ac.Links {
			to := lc.To
			if to == "" {
				to = "?"
			}
			l := s.link(lc.Name, ac.Name, to)
			l.Description, l.QueryExample = lc.Description, lc.QueryExample
		}
	}
	for _, lt := range m.cfg.LinkTables {
		l := s.link(lt.Name, lt.From.Anchor, lt.To.Anchor)
		l.Description, l.QueryExample = lt.Description, lt.QueryExample
	}
}

// counted counts the nodes and edges state holds of a source's records,
// and adds the attributes and links the default mapping wrote.
func (s *schemaDescriber) counted(ctx context.Context, source string) error {
	p := s.p
	recs, err := p.Store.RecordList(ctx, p.Name, source)
	if err != nil {
		return fmt.Errorf("schema: list records: %w", err)
	}
	for _, rec := range recs {
		rp, err := decodeRecordProps(rec.Props)
		if err != nil {
			return fmt.Errorf("schema: record %q: %w", rec.Key, err)
		}
		if e := rp.Edge; e != nil {
			s.link(e.Type, e.FromLabel, e.ToLabel).Edges++
			continue
		}
		a := s.anchor(rec.Anchor)
		a.Nodes++
		for name := range rp.Node {
			if strings.HasPrefix(name, "_") || s.attrsSeen[rec.Anchor][name] {
				continue
			}
			s.attrsSeen[rec.Anchor][name] = true
			a.Attributes = append(a.Attributes, AttributeDoc{Name: name})
		}
		for _, l := range rp.Links {
			// A configured link's target "?" is resolved by what was written.
			if q, ok := s.links[[3]string{l.Type, rec.Anchor, "?"}]; ok {
				delete(s.links, [3]string{l.Type, rec.Anchor, "?"})
				q.To = l.ToAnchor
				s.links[[3]string{l.Type, rec.Anchor, l.ToAnchor}] = q
			}
			s.link(l.Type, rec.Anchor, l.ToAnchor).Edges++
		}
	}
	return nil
}

// doc is the schema found: anchors and links sorted by name, each
// anchor's configured attributes in the model's order and the discovered
// ones after them, sorted; and the vector indexes.
func (s *schemaDescriber) doc() *SchemaDoc {
	p := s.p
	doc := &SchemaDoc{Pipeline: p.Name, Identity: []string{"id", sink.PropPipeline}, Anchors: []AnchorDoc{}, Links: []LinkDoc{},
		Indexes: []VectorIdxDoc{}}
	for _, name := range slices.Sorted(maps.Keys(s.anchors)) {
		a := s.anchors[name]
		// Configured attributes keep their order; discovered ones follow, sorted.
		configured := 0
		if p.Model != nil && p.Model.byName[name] != nil {
			configured = len(p.Model.byName[name].cfg.Attributes)
		}
		rest := a.Attributes[configured:]
		slices.SortFunc(rest, func(x, y AttributeDoc) int { return strings.Compare(x.Name, y.Name) })
		doc.Anchors = append(doc.Anchors, *a)
	}
	for _, k := range slices.SortedFunc(maps.Keys(s.links), func(a, b [3]string) int {
		return strings.Compare(a[0]+"\x00"+a[1]+"\x00"+a[2], b[0]+"\x00"+b[1]+"\x00"+b[2])
	}) {
		doc.Links = append(doc.Links, *s.links[k])
	}
	for _, vi := range p.Schema(nil).VectorIndexes {
		doc.Indexes = append(doc.Indexes, VectorIdxDoc{Name: vi.Name, Label: vi.Label, Property: vi.Property, Dimension: vi.Dimension})
	}
	return doc
}

// Markdown renders the schema as tables for an assistant's prompt.
func (d *SchemaDoc) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Data model of pipeline %s\n\n", d.Pipeline)
	b.WriteString("## Anchors (node labels)\n\n| anchor | nodes | description | query example |\n| --- | --- | --- | --- |\n")
	for _, a := range d.Anchors {
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s |\n", a.Name, a.Nodes, cell(a.Description), code(a.QueryExample))
	}
	b.WriteString("\n## Attributes (node properties)\n\n| anchor | attribute | embeddable | vector index | description | query example |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, a := range d.Anchors {
		for _, at := range a.Attributes {
			emb := "no"
			if at.Embeddable {
				emb = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s | %s |\n", a.Name, at.Name, emb, code(at.VectorIndex), cell(at.Description), code(at.QueryExample))
		}
	}
	b.WriteString("\n## Links (relationship types)\n\n| link | from | to | edges | description | query example |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, l := range d.Links {
		fmt.Fprintf(&b, "| `%s` | `%s` | `%s` | %d | %s | %s |\n", l.Name, l.From, l.To, l.Edges, cell(l.Description), code(l.QueryExample))
	}
	b.WriteString("\n## Vector indexes\n\n| index | label | property | dimension |\n| --- | --- | --- | --- |\n")
	for _, v := range d.Indexes {
		fmt.Fprintf(&b, "| `%s` | `%s` | `%s` | %d |\n", v.Name, v.Label, v.Property, v.Dimension)
	}
	fmt.Fprintf(&b, "\nDocuments are `(:Document)` nodes with `(:Section)` trees and %d `(:Chunk)` nodes "+
		"(`(:Chunk)-[:PART_OF]->(:Document)`, `-[:IN_SECTION]->(:Section)`, `-[:NEXT]->(:Chunk)`).\n", d.Chunks)
	fmt.Fprintf(&b, "\nA node is identified by `id` and `_pipeline` together: several pipelines can write one Memgraph, "+
		"with nodes of the same label and id. Match this pipeline's nodes with `{id: '…', _pipeline: '%s'}`, "+
		"and keep its results of `vector_search.search` and `text_search.search` (which search every pipeline's nodes) "+
		"with `WHERE node._pipeline = '%s'`.\n", d.Pipeline, d.Pipeline)
	return b.String()
}

func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(cell(s), "`", "'") + "`"
}
