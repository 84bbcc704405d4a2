package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sink/memgraph"
	"github.com/kgsync/kgsync/state"
	"golang.org/x/sync/errgroup"
)

// Searcher returns a search over the pipeline: over its state, and over
// Memgraph's indexes when the sink is Memgraph.
func (p *Pipeline) Searcher() *retrieval.Searcher {
	s := &retrieval.Searcher{Pipeline: p.Name, Store: p.Store, Embedder: p.Embedder, Corpus: p}
	if p.Search.RRFK > 0 {
		cfg := p.Search
		s.Config = &cfg
	}
	if mg, ok := p.Sink.(*memgraph.Sink); ok {
		s.Graph = mg
	}
	return s
}

// Corpus reads what retrieval searches from state: every document with its
// element tree, terms and references, every chunk and short embeddable
// attribute, and the MANDATORY edges. It implements retrieval.CorpusLoader.
//
// It reads a source's records in key order, corpusPageSize at a time
// (their keys first, then each page's props and chunks, the next page
// read while the last is decoded), so what it holds beyond the corpus is
// a page or two of stored records, not all of them (a search of 1,000,000
// table rows: 0.9–1.1 GB peak RSS against 2.3–2.4 GB when every record
// was read at once; BenchmarkScaleGrist's search phase, in the git history
// of docs/performance.md).
func (p *Pipeline) Corpus(ctx context.Context) (*retrieval.Corpus, error) {
	c := &retrieval.Corpus{}
	// names interns the strings every unit of an anchor repeats (its
	// label, an attribute's vector property).
	names := map[string]string{}
	intern := func(s string) string {
		if n, ok := names[s]; ok {
			return n
		}
		names[s] = s
		return s
	}
	for _, src := range p.Sources {
		var keys []string
		err := p.Store.RecordIndex(ctx, p.Name, src.Name(), func(key string, _ state.RecordSummary) {
			keys = append(keys, key)
		})
		if err != nil {
			return nil, fmt.Errorf("list records: %w", err)
		}
		slices.Sort(keys)
		// A table row has a unit per embeddable attribute, most often one:
		// room for one a record spares a million-row table the copies of
		// a growing slice (a document's chunks grow it further).
		c.Units = slices.Grow(c.Units, len(keys))
		// One goroutine reads the pages from state while this one decodes
		// the page before: the two take about the same time.
		pages := make(chan storedPage, 1)
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error {
			defer close(pages)
			for start := 0; start < len(keys); start += corpusPageSize {
				sp, err := p.readCorpusPage(gctx, src.Name(), keys[start:min(start+corpusPageSize, len(keys))])
				if err != nil {
					return err
				}
				select {
				case pages <- sp:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return nil
		})
		g.Go(func() error {
			for sp := range pages {
				if err := addCorpusPage(c, src.Name(), sp, intern); err != nil {
					return err
				}
			}
			return nil
		})
		if err := g.Wait(); err != nil {
			return nil, err
		}
	}
	cur, err := p.Store.CursorGet(ctx, p.Name, mandatoryCursor)
	if err != nil {
		return nil, err
	}
	if cur != "" {
		var m mandatoryState
		if err := json.Unmarshal([]byte(cur), &m); err != nil {
			return nil, fmt.Errorf("stored mandatory links: %w", err)
		}
		// The edges as the graph has them: one per pair of ends, the
		// first asked for (mandatoryOps), with the properties written
		// (MandatoryProps). A cursor written before mandatoryOps kept
		// only the first may list a pair twice.
		seen := map[[2]string]bool{}
		for _, e := range m.Edges {
			if k := [2]string{e.From, e.To}; !seen[k] {
				seen[k] = true
				c.Mandatory = append(c.Mandatory, e.edge())
			}
		}
	}
	return c, nil
}

// corpusPageSize is how many records Corpus reads a page.
const corpusPageSize = 2000

// storedPage is a page of a source's stored records and their chunks,
// by key; keys are the page's keys in key order.
type storedPage struct {
	keys     []string
	recs     map[string]state.Record
	chunksOf map[string][]state.Chunk
}

// readCorpusPage reads the records of source named by keys and their
// chunks.
func (p *Pipeline) readCorpusPage(ctx context.Context, source string, keys []string) (storedPage, error) {
	recs, err := p.Store.RecordGet(ctx, p.Name, source, keys)
	if err != nil {
		return storedPage{}, fmt.Errorf("read records: %w", err)
	}
	chunksOf, err := p.Store.ChunkGet(ctx, p.Name, source, keys)
	if err != nil {
		return storedPage{}, err
	}
	return storedPage{keys: keys, recs: recs, chunksOf: chunksOf}, nil
}

// addCorpusPage adds the documents and units of a page's records to c, in
// key order. A record that is gone since its key was listed (a sync
// deleted it meanwhile) is skipped.
func addCorpusPage(c *retrieval.Corpus, source string, sp storedPage, intern func(string) string) error {
	for _, key := range sp.keys {
		rec, ok := sp.recs[key]
		if !ok {
			continue
		}
		rp, err := decodeRecordProps(rec.Props)
		if err != nil {
			return fmt.Errorf("record %q: %w", key, err)
		}
		if rp.Edge != nil || rp.Mandatory != nil {
			continue
		}
		anchor := intern(rec.Anchor)
		nodeID := nodeIDOf(source, key, rp)
		if len(rp.DocIDs) > 0 || len(rp.Sections)+len(rp.Elements) > 0 {
			c.Documents = append(c.Documents, corpusDocument(source, key, nodeID, anchor, rp))
		}
		for _, attr := range rp.Vectors {
			text, _ := rp.Node[attr].(string)
			c.Units = append(c.Units, retrieval.Unit{ID: nodeID, Label: anchor, Property: intern(VectorProperty(attr)),
				Node: nodeID, NodeLabel: anchor, Text: text, TextHash: diff.TextHash(text)})
		}
		for _, ch := range sp.chunksOf[key] {
			props, err := decodeProps(ch.Props)
			if err != nil {
				return fmt.Errorf("chunk %q: %w", ch.ID, err)
			}
			u := retrieval.Unit{ID: ch.ID, Label: LabelChunk, Property: PropEmbedding, Node: nodeID, NodeLabel: anchor,
				TextHash: ch.TextHash}
			u.Lang, _ = rp.Node[PropLang].(string)
			if n, ok := props["tokens"].(int64); ok {
				u.Tokens = int(n)
			}
			u.Address, _ = props["address"].(string)
			u.Parent, _ = props["parent"].(string)
			u.Next, _ = props["next"].(string)
			if list, ok := props["elements"].([]any); ok {
				for _, e := range list {
					if s, ok := e.(string); ok {
						u.Elements = append(u.Elements, s)
					}
				}
			}
			text, _ := props["text"].(string)
			if cctx, _ := props["context"].(string); cctx != "" {
				text = cctx + "\n\n" + text
				u.Context = cctx
			}
			u.Text = text
			c.Units = append(c.Units, u)
		}
	}
	return nil
}

func corpusDocument(source, key, nodeID, label string, rp recordProps) *retrieval.Document {
	d := &retrieval.Document{ID: nodeID, Label: label, Source: source, Key: key, Names: rp.DocIDs}
	d.Title, _ = rp.Node["title"].(string)
	d.Lang, _ = rp.Node[PropLang].(string)
	node := func(n elementNode, label string) retrieval.Node {
		return retrieval.Node{ID: n.ID, Label: label, Kind: n.Kind, Address: n.Address, Citation: n.Citation, Title: n.Title, Text: n.Text,
			Parent: n.Parent, Level: n.Level}
	}
	d.Nodes = documentOrder(rp.Sections, rp.Elements, node)
	for _, t := range rp.Terms {
		d.Terms = append(d.Terms, retrieval.Term{ID: t.ID, Name: t.Name, Definition: t.Definition,
			DefinedIn: t.DefinedIn, DefinedInLabel: t.DefinedInLabel})
	}
	for _, e := range append(append([]xrefEdge{}, rp.XRefs...), rp.ExtEdges...) {
		d.Refs = append(d.Refs, e.edge())
	}
	return d
}

// documentOrder merges a document's sections and elements, each stored in
// document order (buildDocGraph's walk), into one list in document order:
// a section comes right before its first element, outer sections first.
func documentOrder(sections, elements []elementNode, node func(elementNode, string) retrieval.Node) []retrieval.Node {
	parent := map[string]string{}
	for _, n := range append(append([]elementNode{}, sections...), elements...) {
		parent[n.ID] = n.Parent
	}
	first := map[string]int{} // section id → index of its first element
	for i := len(elements) - 1; i >= 0; i-- {
		for p := elements[i].Parent; p != ""; p = parent[p] {
			first[p] = i
			if _, ok := parent[p]; !ok {
				break
			}
		}
	}
	type keyed struct {
		n          retrieval.Node
		at, leaf   int
		level, pos int
	}
	var all []keyed
	for i, s := range sections {
		at, ok := first[s.ID]
		if !ok {
			at = len(elements) // an empty section: at the end, in walk order
		}
		all = append(all, keyed{n: node(s, LabelSection), at: at, level: s.Level, pos: i})
	}
	for i, e := range elements {
		all = append(all, keyed{n: node(e, LabelElement), at: i, leaf: 1, pos: i})
	}
	slices.SortStableFunc(all, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.leaf, b.leaf), cmp.Compare(a.level, b.level), cmp.Compare(a.pos, b.pos))
	})
	out := make([]retrieval.Node, len(all))
	for i, k := range all {
		out[i] = k.n
	}
	return out
}

func (e xrefEdge) edge() retrieval.Edge {
	return retrieval.Edge{From: e.From, FromLabel: e.FromLabel, To: e.To, ToLabel: e.ToLabel, Text: e.Text,
		Source: e.Source, By: e.By, At: e.At}
}
