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
	doc := &SchemaDoc{Pipeline: p.Name, Identity: []string{"id", sink.PropPipeline}, Anchors: []AnchorDoc{}, Links: []LinkDoc{},
		Indexes: []VectorIdxDoc{}}
	anchors := map[string]*AnchorDoc{}
	attrsSeen := map[string]map[string]bool{}
	links := map[[3]string]*LinkDoc{}
	anchor := func(name string) *AnchorDoc {
		a, ok := anchors[name]
		if !ok {
			a = &AnchorDoc{Name: name}
			anchors[name] = a
			attrsSeen[name] = map[string]bool{}
		}
		return a
	}
	link := func(name, from, to string) *LinkDoc {
		k := [3]string{name, from, to}
		l, ok := links[k]
		if !ok {
			l = &LinkDoc{Name: name, From: from, To: to}
			links[k] = l
		}
		return l
	}
	// The configured model first, with its descriptions.
	if p.Model != nil {
		for _, ac := range p.Model.cfg.Anchors {
			a := anchor(ac.Name)
			a.Table, a.Description, a.QueryExample = p.Model.tableOf(ac.Name), ac.Description, ac.QueryExample
			for _, at := range ac.Attributes {
				ad := AttributeDoc{Name: at.Name, Description: at.Description, QueryExample: at.QueryExample, Embeddable: at.Embeddable}
				if at.Embeddable {
					ad.VectorIndex = VectorIndexName(ac.Name, at.Name)
				}
				a.Attributes = append(a.Attributes, ad)
				attrsSeen[ac.Name][at.Name] = true
			}
			for _, lc := range ac.Links {
				to := lc.To
				if to == "" {
					to = "?"
				}
				l := link(lc.Name, ac.Name, to)
				l.Description, l.QueryExample = lc.Description, lc.QueryExample
			}
		}
		for _, lt := range p.Model.cfg.LinkTables {
			l := link(lt.Name, lt.From.Anchor, lt.To.Anchor)
			l.Description, l.QueryExample = lt.Description, lt.QueryExample
		}
	}
	// Counts and default-mapped attributes from state.
	for _, src := range p.Sources {
		recs, err := p.Store.RecordList(ctx, p.Name, src.Name())
		if err != nil {
			return nil, fmt.Errorf("schema: list records: %w", err)
		}
		for _, rec := range recs {
			rp, err := decodeRecordProps(rec.Props)
			if err != nil {
				return nil, fmt.Errorf("schema: record %q: %w", rec.Key, err)
			}
			if e := rp.Edge; e != nil {
				link(e.Type, e.FromLabel, e.ToLabel).Edges++
				continue
			}
			a := anchor(rec.Anchor)
			a.Nodes++
			for name := range rp.Node {
				if strings.HasPrefix(name, "_") || attrsSeen[rec.Anchor][name] {
					continue
				}
				attrsSeen[rec.Anchor][name] = true
				a.Attributes = append(a.Attributes, AttributeDoc{Name: name})
			}
			for _, l := range rp.Links {
				// A configured link's target "?" is resolved by what was written.
				if q, ok := links[[3]string{l.Type, rec.Anchor, "?"}]; ok {
					delete(links, [3]string{l.Type, rec.Anchor, "?"})
					q.To = l.ToAnchor
					links[[3]string{l.Type, rec.Anchor, l.ToAnchor}] = q
				}
				link(l.Type, rec.Anchor, l.ToAnchor).Edges++
			}
		}
	}
	n, err := p.Store.ChunkCount(ctx, p.Name)
	if err != nil {
		return nil, fmt.Errorf("schema: count chunks: %w", err)
	}
	doc.Chunks = n
	for _, name := range slices.Sorted(maps.Keys(anchors)) {
		a := anchors[name]
		// Configured attributes keep their order; discovered ones follow, sorted.
		configured := 0
		if p.Model != nil && p.Model.byName[name] != nil {
			configured = len(p.Model.byName[name].cfg.Attributes)
		}
		rest := a.Attributes[configured:]
		slices.SortFunc(rest, func(x, y AttributeDoc) int { return strings.Compare(x.Name, y.Name) })
		doc.Anchors = append(doc.Anchors, *a)
	}
	for _, k := range slices.SortedFunc(maps.Keys(links), func(a, b [3]string) int {
		return strings.Compare(a[0]+"\x00"+a[1]+"\x00"+a[2], b[0]+"\x00"+b[1]+"\x00"+b[2])
	}) {
		doc.Links = append(doc.Links, *links[k])
	}
	for _, vi := range p.Schema(nil).VectorIndexes {
		doc.Indexes = append(doc.Indexes, VectorIdxDoc{Name: vi.Name, Label: vi.Label, Property: vi.Property, Dimension: vi.Dimension})
	}
	return doc, nil
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
