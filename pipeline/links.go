package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/pipeline/review"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/state"
)

// MandatoryLink is a pair of elements that must always be retrieved
// together, written as a MANDATORY edge. Each end is an address such as
// "RFC 7231 6.5.1": a document identifier (chunker.DocumentIDs: "RFC 7231",
// the file name, the title) followed by an element address ("6.5.1",
// "Table 7.1", "Статья 65"); a bare identifier names the whole document.
type MandatoryLink struct {
	From, To string
	// Note says why, written as the edge's "note" property.
	Note string
}

// mandatoryCursor is the state cursor (of a reserved source name) holding
// the MANDATORY edges written, so that removed ones are deleted.
const mandatoryCursor = "_mandatory"

// linksPendingCursor is set (in the same commit) by every batch that writes
// or deletes a document or a mandatory-table row, and cleared by the link
// pass's commit: a run that fails or dies between the two leaves the link
// pass to the next run.
const linksPendingCursor = "_links_pending"

// markLinksPending adds the link-pass mark to a batch's commit when the run
// has changed documents.
func (r *runner) markLinksPending(c *state.Commit) {
	if !r.docsChanged {
		return
	}
	if c.Cursors == nil {
		c.Cursors = map[string]string{}
	}
	c.Cursors[linksPendingCursor] = "1"
}

// linkIndexCursor marks (a state cursor of a reserved source name) that
// the link index (state.Commit.LinkDocs) holds every document: until it
// does, the link pass reads every document and writes the index.
const linkIndexCursor = "_link_index"

// linkDoc is a document's link index entry: what the link pass needs to
// find the documents a change concerns without reading their properties.
type linkDoc struct {
	ID    string   `json:"id"`
	Label string   `json:"label"`
	IDs   []string `json:"ids,omitempty"`  // identifiers, as the document gives them
	Refs  []string `json:"refs,omitempty"` // normalized identifiers its references name
}

// linkEntry encodes a document's link index entry.
func linkEntry(nodeID, label string, docIDs []string, ext []extRef) []byte {
	e := linkDoc{ID: nodeID, Label: label, IDs: docIDs}
	seen := map[string]bool{}
	for _, x := range ext {
		if n := normalizeDocID(x.Doc); n != "" && !seen[n] {
			seen[n] = true
			e.Refs = append(e.Refs, n)
		}
	}
	slices.Sort(e.Refs)
	b, _ := json.Marshal(e) // strings only
	return b
}

// touchDocs records identifiers of documents a run wrote or deleted (key
// and document ids, before and after): the link pass re-resolves the
// references to them.
func (r *runner) touchDocs(key string, ids ...[]string) {
	if r.touched == nil {
		r.touched = map[string]bool{}
	}
	r.touched[normalizeDocID(key)] = true
	for _, l := range ids {
		for _, id := range l {
			r.touched[normalizeDocID(id)] = true
		}
	}
}

// corpusIndex finds documents by identifier and their elements by address.
// Documents come from the link index; their properties (addresses,
// references) are read when a resolution needs them (ensure).
type corpusIndex struct {
	p    *Pipeline
	ctx  context.Context
	docs map[string]*indexedDoc // normalized identifier → document
	all  []*indexedDoc
	err  error // the first failed read of a document
}

type indexedDoc struct {
	source, key, id, label string
	ids, refs              []string
	loaded                 bool
	byAddress              map[string]graphRef // normalized address → node
	props                  recordProps
}

// graphRef is a node by label and id.
type graphRef struct{ Label, ID string }

// addressKey normalizes an element address or reference target for
// look-up: chunker.AddressKey, so that "Section 6.5.1", "6.5.1." and
// "6.5.1" are one key, "Article 7 (3)" and "Art. 7(3)" too.
func addressKey(s string) string { return chunker.AddressKey(s) }

// loadLinkIndex reads the link index: every document's identifiers, not
// its properties.
func (p *Pipeline) loadLinkIndex(ctx context.Context) (*corpusIndex, error) {
	idx := &corpusIndex{p: p, ctx: ctx, docs: map[string]*indexedDoc{}}
	bySource := map[string][]*indexedDoc{}
	err := p.Store.LinkDocs(ctx, p.Name, func(ref state.RecordRef, data []byte) error {
		var e linkDoc
		if err := json.Unmarshal(data, &e); err != nil {
			return fmt.Errorf("link index entry of %q: %w", ref.Key, err)
		}
		bySource[ref.Source] = append(bySource[ref.Source], &indexedDoc{source: ref.Source, key: ref.Key, id: e.ID, label: e.Label, ids: e.IDs, refs: e.Refs})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Sources in the pipeline's order, keys sorted: the first document
	// with an identifier owns it.
	for _, src := range p.Sources {
		docs := bySource[src.Name()]
		slices.SortFunc(docs, func(a, b *indexedDoc) int { return strings.Compare(a.key, b.key) })
		for _, d := range docs {
			idx.add(d)
		}
	}
	return idx, nil
}

func (idx *corpusIndex) add(d *indexedDoc) {
	idx.all = append(idx.all, d)
	for _, id := range append([]string{d.key}, d.ids...) {
		n := normalizeDocID(id)
		if _, dup := idx.docs[n]; !dup {
			idx.docs[n] = d
		}
	}
}

// ensure reads the properties of documents not read yet, 200 a query.
func (idx *corpusIndex) ensure(docs ...*indexedDoc) {
	bySource := map[string][]*indexedDoc{}
	for _, d := range docs {
		if d != nil && !d.loaded {
			bySource[d.source] = append(bySource[d.source], d)
		}
	}
	for src, ds := range bySource {
		for start := 0; start < len(ds) && idx.err == nil; start += 200 {
			part := ds[start:min(start+200, len(ds))]
			keys := make([]string, len(part))
			for i, d := range part {
				keys[i] = d.key
			}
			recs, err := idx.p.Store.RecordGet(idx.ctx, idx.p.Name, src, keys)
			if err != nil {
				idx.err = fmt.Errorf("get records: %w", err)
				return
			}
			for _, d := range part {
				d.loaded = true
				d.byAddress = map[string]graphRef{}
				rec, ok := recs[d.key]
				if !ok {
					continue
				}
				rp, err := decodeRecordProps(rec.Props)
				if err != nil {
					idx.err = fmt.Errorf("record %q: %w", d.key, err)
					return
				}
				d.setProps(lightProps(rp))
			}
		}
	}
}

// setProps keeps a document's properties and its elements by address.
func (d *indexedDoc) setProps(rp recordProps) {
	d.props = rp
	d.byAddress = map[string]graphRef{}
	add := func(addr string, ref graphRef) {
		k := addressKey(addr)
		if _, dup := d.byAddress[k]; !dup && k != "" {
			d.byAddress[k] = ref
		}
	}
	for _, s := range rp.Sections {
		if s.Citation != "" {
			add(s.Citation, graphRef{LabelSection, s.ID})
		}
		add(s.Address, graphRef{LabelSection, s.ID})
		for _, w := range []string{"appendix ", "annex ", "приложение "} {
			if t := strings.ToLower(s.Title); strings.HasPrefix(t, w) {
				if f := strings.Fields(t); len(f) >= 2 {
					add(strings.TrimRight(f[1], ".:"), graphRef{LabelSection, s.ID})
				}
			}
		}
	}
	for _, e := range rp.Elements {
		if e.Citation != "" {
			add(e.Citation, graphRef{LabelElement, e.ID})
		}
		if e.Kind == "clause" || e.Kind == "table" || e.Kind == "caption" {
			add(e.Address, graphRef{LabelElement, e.ID})
		}
	}
}

// loadCorpusIndex reads every document of the pipeline from state, 200
// records at a time (the link pass before the link index holds them all),
// keeping only what resolving references needs (ids, addresses,
// references), not texts, and returns their link index entries.
func (p *Pipeline) loadCorpusIndex(ctx context.Context) (*corpusIndex, map[state.RecordRef][]byte, error) {
	idx := &corpusIndex{p: p, ctx: ctx, docs: map[string]*indexedDoc{}}
	entries := map[state.RecordRef][]byte{}
	for _, src := range p.Sources {
		var keys []string
		if err := p.Store.RecordIndex(ctx, p.Name, src.Name(), func(k string, _ state.RecordSummary) { keys = append(keys, k) }); err != nil {
			return nil, nil, fmt.Errorf("index records: %w", err)
		}
		slices.Sort(keys)
		recs := map[string]state.Record{}
		for i, key := range keys {
			if i%200 == 0 {
				var err error
				if recs, err = p.Store.RecordGet(ctx, p.Name, src.Name(), keys[i:min(i+200, len(keys))]); err != nil {
					return nil, nil, fmt.Errorf("get records: %w", err)
				}
			}
			rec, ok := recs[key]
			if !ok {
				continue
			}
			rp, err := decodeRecordProps(rec.Props)
			if err != nil {
				return nil, nil, fmt.Errorf("record %q: %w", key, err)
			}
			if len(rp.DocIDs) == 0 && len(rp.Sections)+len(rp.Elements) == 0 {
				continue
			}
			id := nodeIDOf(src.Name(), key, rp)
			entries[state.RecordRef{Source: src.Name(), Key: key}] = linkEntry(id, rec.Anchor, rp.DocIDs, rp.Ext)
			d := &indexedDoc{source: src.Name(), key: key, id: id, label: rec.Anchor, ids: rp.DocIDs, loaded: true}
			d.setProps(lightProps(rp))
			idx.add(d)
		}
	}
	return idx, entries, nil
}

// resolve finds the node an external reference or address points to.
func (idx *corpusIndex) resolve(doc, target string) (graphRef, bool) {
	d, ok := idx.docs[normalizeDocID(doc)]
	if !ok {
		return graphRef{}, false
	}
	if strings.TrimSpace(target) == "" {
		return graphRef{d.label, d.id}, true
	}
	idx.ensure(d)
	ref, ok := d.byAddress[addressKey(target)]
	return ref, ok
}

// lookup resolves an address such as "RFC 7231 6.5.1": the longest document
// identifier that prefixes it, then the rest as an element address; failing
// that, the document and address chunker.ParseAddress reads ("Article 7 of
// Regulation (EU) 2017/745", "6.5.1 RFC 7231").
func (idx *corpusIndex) lookup(address string) (graphRef, *indexedDoc, bool) {
	ref, d, ok := idx.lookupPrefix(address)
	if d != nil {
		return ref, d, ok
	}
	if a, parsed := chunker.ParseAddress(address); parsed && a.Doc != "" {
		if d, found := idx.docs[normalizeDocID(a.Doc)]; found {
			if a.Citation == "" {
				return graphRef{d.label, d.id}, d, true
			}
			idx.ensure(d)
			ref, ok := d.byAddress[addressKey(a.Citation)]
			return ref, d, ok
		}
	}
	return graphRef{}, nil, false
}

func (idx *corpusIndex) lookupPrefix(address string) (graphRef, *indexedDoc, bool) {
	norm := strings.Join(strings.Fields(address), " ")
	var best *indexedDoc
	var rest string
	bestLen := -1
	for _, d := range idx.all {
		for _, id := range append([]string{d.key}, d.ids...) {
			id = strings.Join(strings.Fields(id), " ")
			if len(id) > bestLen && len(norm) >= len(id) && strings.EqualFold(norm[:len(id)], id) &&
				(len(norm) == len(id) || norm[len(id)] == ' ') {
				best, bestLen, rest = d, len(id), strings.TrimSpace(norm[len(id):])
			}
		}
	}
	if best == nil {
		return graphRef{}, nil, false
	}
	if rest == "" {
		return graphRef{best.label, best.id}, best, true
	}
	idx.ensure(best)
	ref, ok := best.byAddress[addressKey(strings.TrimPrefix(rest, "›"))]
	return ref, best, ok
}

// mandatoryState is the mandatoryCursor's value: the hash of the MANDATORY
// links asked for (16 hex digits) and the edges written for them.
type mandatoryState struct {
	Hash  string     `json:"hash"`
	Edges []xrefEdge `json:"edges"`
}

// linkPass resolves references between documents by their identifiers and
// writes the configured MANDATORY links, after the run's documents are in
// the graph. It runs when the run wrote or deleted documents (or the
// mandatory links changed), so a no-op run costs nothing; its edges are
// keyed and diffed against state, so a crash before its commit is redone.
//
// Its stages: mandatoryWanted decides whether it runs, linkIndex picks the
// documents to resolve, resolveDocLinks and mandatoryOps build its batch,
// and one write and commit ends it.
func (r *runner) linkPass(ctx context.Context) error {
	// Mandatory-table rows set docsChanged when they change.
	mandatoryHash, stored, mandatoryChanged, err := r.mandatoryWanted(ctx)
	if err != nil {
		return err
	}
	if !r.docsChanged && !mandatoryChanged && !r.mode.RebuildGraph {
		return nil
	}
	b := &sink.Batch{}
	commit := state.Commit{Pipeline: r.p.Name}
	idx, resolve, err := r.linkIndex(ctx, &commit)
	if err != nil {
		return err
	}
	if err := r.resolveDocLinks(ctx, b, &commit, idx, resolve); err != nil {
		return err
	}
	mandatory, err := r.mandatoryOps(ctx, b, idx, stored)
	if err != nil {
		return fmt.Errorf("link pass: %w", err)
	}
	if idx.err != nil {
		return fmt.Errorf("link pass: %w", idx.err)
	}
	cur, err := json.Marshal(mandatoryState{mandatoryHash, mandatory})
	if err != nil {
		return fmt.Errorf("link pass: %w", err)
	}
	// Invariant: the link pass's edges, the mandatory cursor and the
	// cleared pending mark are committed together, after the write.
	commit.Cursors = map[string]string{mandatoryCursor: string(cur), linksPendingCursor: "", linkIndexCursor: "1"}
	return r.writeAndCommit(ctx, b, commit, nil)
}

// mandatoryWanted hashes the MANDATORY links asked for (the config's and
// the expert review's; hash as mandatoryState holds it) and reads the
// ones stored; changed reports that they differ from what the last link
// pass wrote.
func (r *runner) mandatoryWanted(ctx context.Context) (hash string, stored mandatoryState, changed bool, _ error) {
	var expertLinks []review.Link
	if r.p.Review != nil {
		var err error
		if expertLinks, err = r.p.Review.Mandatory(ctx); err != nil {
			return "", stored, false, fmt.Errorf("link pass: expert mandatory links: %w", err)
		}
	}
	mv := mandatoryValue(r.p.Mandatory)
	for _, l := range expertLinks {
		mv = append(mv, []any{"expert", l.From, l.To, l.Note, l.By, l.At})
	}
	hash = hashHex(mustHash(mv))
	storedMandatory, err := r.p.Store.CursorGet(ctx, r.p.Name, mandatoryCursor)
	if err != nil {
		return "", stored, false, fmt.Errorf("link pass: %w", err)
	}
	if storedMandatory != "" {
		if err := json.Unmarshal([]byte(storedMandatory), &stored); err != nil {
			return "", stored, false, fmt.Errorf("link pass: stored mandatory links: %w", err)
		}
	}
	// No mandatory link configured and none written is no change.
	changed = stored.Hash != hash &&
		(storedMandatory != "" || len(r.p.Mandatory) > 0 || r.p.Model.hasMandatoryTables())
	return hash, stored, changed, nil
}

// linkIndex loads the corpus index and the documents whose references are
// resolved again (resolve). Until the link index is complete, every
// document is read and the index joins commit.
func (r *runner) linkIndex(ctx context.Context, commit *state.Commit) (idx *corpusIndex, resolve []*indexedDoc, _ error) {
	built, err := r.p.Store.CursorGet(ctx, r.p.Name, linkIndexCursor)
	if err != nil {
		return nil, nil, fmt.Errorf("link pass: %w", err)
	}
	if built == "" {
		// The link index is not complete yet: every document is read, and
		// the index written with this pass.
		var entries map[state.RecordRef][]byte
		if idx, entries, err = r.p.loadCorpusIndex(ctx); err != nil {
			return nil, nil, fmt.Errorf("link pass: %w", err)
		}
		commit.LinkDocs = entries
		return idx, idx.all, nil
	}
	if idx, err = r.p.loadLinkIndex(ctx); err != nil {
		return nil, nil, fmt.Errorf("link pass: %w", err)
	}
	// After a crashed run or for a rebuild every document; otherwise
	// the documents the run wrote and those whose references name a
	// document it wrote or deleted.
	everything := r.linksAll || r.mode.RebuildGraph
	for _, d := range idx.all {
		hit := everything || r.touched[normalizeDocID(d.key)]
		for _, ref := range d.refs {
			hit = hit || r.touched[ref]
		}
		if hit {
			resolve = append(resolve, d)
		}
	}
	// Read them, and the documents their references name, together.
	var targets []*indexedDoc
	for _, d := range resolve {
		targets = append(targets, d)
		for _, ref := range d.refs {
			targets = append(targets, idx.docs[ref])
		}
	}
	idx.ensure(targets...)
	return idx, resolve, nil
}

// resolveDocLinks resolves each document's references to other documents
// (resolve) and, where the edges differ from the stored ones, adds their
// upserts and deletes to b and the document's record with its new edges
// to commit.
func (r *runner) resolveDocLinks(ctx context.Context, b *sink.Batch, commit *state.Commit, idx *corpusIndex, resolve []*indexedDoc) error {
	for _, d := range resolve {
		var want []xrefEdge
		resolved := 0
		for _, e := range d.props.Ext {
			to, ok := idx.resolve(e.Doc, e.Target)
			if !ok || to.ID == d.id {
				continue
			}
			want = append(want, xrefEdge{From: e.From, FromLabel: e.FromLabel, To: to.ID, ToLabel: to.Label, Text: e.Text})
			resolved++
		}
		want = dedupeEdges(want)
		if prev, _ := d.props.Node["refs_external_resolved"].(int64); slices.Equal(want, d.props.ExtEdges) && prev == int64(resolved) {
			continue
		}
		keys := map[string]bool{}
		for _, e := range want {
			keys[e.ref().Key] = true
			b.EdgeUpserts = append(b.EdgeUpserts, e.upsert())
		}
		for _, e := range d.props.ExtEdges {
			if !keys[e.ref().Key] {
				b.DeleteEdges = append(b.DeleteEdges, e.ref())
			}
		}
		b.NodeUpserts = append(b.NodeUpserts, sink.NodeUpsert{Label: d.label, ID: d.id, Props: map[string]any{
			"refs_external_resolved": int64(resolved),
		}})
		rec, ok, err := r.resolvedRecord(ctx, d, want, resolved)
		if err != nil {
			return err
		}
		if ok {
			commit.Records = append(commit.Records, rec)
		}
	}
	return nil
}

// resolvedRecord is d's whole state record with its resolved edges (want)
// and their count stored; ok is false when state no longer holds it.
func (r *runner) resolvedRecord(ctx context.Context, d *indexedDoc, want []xrefEdge, resolved int) (_ state.Record, ok bool, _ error) {
	got, err := r.p.Store.RecordGet(ctx, r.p.Name, d.source, []string{d.key})
	if err != nil {
		return state.Record{}, false, fmt.Errorf("link pass: get %q: %w", d.key, err)
	}
	rec, ok := got[d.key]
	if !ok {
		return state.Record{}, false, nil
	}
	full, err := decodeRecordProps(rec.Props)
	if err != nil {
		return state.Record{}, false, fmt.Errorf("link pass: record %q: %w", d.key, err)
	}
	full.ExtEdges = want
	if full.Node != nil {
		full.Node["refs_external_resolved"] = int64(resolved)
	}
	if rec.Props, err = json.Marshal(full); err != nil {
		return state.Record{}, false, fmt.Errorf("link pass: encode %q: %w", d.key, err)
	}
	return rec, true, nil
}

// mandatoryOps adds the MANDATORY edges (from the config, mandatory tables
// and the expert review) to b, and deletes the stored ones no longer
// asked for; it returns the edges written (one per pair of ends, the first
// asked for), for the mandatory cursor.
func (r *runner) mandatoryOps(ctx context.Context, b *sink.Batch, idx *corpusIndex, stored mandatoryState) ([]xrefEdge, error) {
	links := append([]MandatoryLink{}, r.p.Mandatory...)
	tableLinks, err := r.p.mandatoryRows(ctx)
	if err != nil {
		return nil, err
	}
	links = append(links, tableLinks...)
	var mandatory []xrefEdge
	for _, m := range links {
		from, _, ok1 := idx.lookup(m.From)
		to, _, ok2 := idx.lookup(m.To)
		if !ok1 || !ok2 {
			r.log.Warn("mandatory link not resolved", "from", m.From, "to", m.To, "from_found", ok1, "to_found", ok2)
			continue
		}
		mandatory = append(mandatory, xrefEdge{From: from.ID, FromLabel: from.Label, To: to.ID, ToLabel: to.Label, Text: m.Note})
	}
	expert, err := r.expertMandatory(ctx, idx)
	if err != nil {
		return nil, err
	}
	mandatory = append(mandatory, expert...)
	was := map[string]xrefEdge{}
	for _, e := range stored.Edges {
		was[mandatoryRef(e).Key] = e
	}
	mkeys := map[string]bool{}
	written := mandatory[:0]
	for _, e := range mandatory {
		k := mandatoryRef(e)
		if mkeys[k.Key] {
			continue // the config and an expert ask for the same link
		}
		mkeys[k.Key] = true
		written = append(written, e)
		props := mandatoryProps(e)
		// An upsert keeps the properties it does not set: those the edge
		// had and no longer has (an expert's link now the config's) go.
		for k := range mandatoryProps(was[k.Key]) {
			if _, ok := props[k]; !ok {
				props[k] = nil
			}
		}
		b.EdgeUpserts = append(b.EdgeUpserts, sink.EdgeUpsert{Type: k.Type, From: k.From, To: k.To, Key: k.Key, Props: props})
	}
	for _, e := range stored.Edges {
		if k := mandatoryRef(e); !mkeys[k.Key] {
			b.DeleteEdges = append(b.DeleteEdges, k)
		}
	}
	return written, nil
}

func mandatoryRef(e xrefEdge) sink.EdgeRef {
	return sink.EdgeRef{Type: RelMandatory, From: sink.NodeRef{Label: e.FromLabel, ID: e.From},
		To: sink.NodeRef{Label: e.ToLabel, ID: e.To}, Key: "mandatory:" + e.From + "->" + e.To}
}

func mandatoryValue(ms []MandatoryLink) []any {
	out := make([]any, 0, len(ms))
	for _, m := range ms {
		out = append(out, []any{m.From, m.To, m.Note})
	}
	return out
}

func dedupeEdges(es []xrefEdge) []xrefEdge {
	seen := map[string]bool{}
	out := es[:0:0]
	for _, e := range es {
		if k := e.ref().Key; !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

// mandatoryRows reads the mandatory links kept in mandatory tables (state
// holds each row's link).
func (p *Pipeline) mandatoryRows(ctx context.Context) ([]MandatoryLink, error) {
	if p.Model == nil || len(p.Model.mandatory) == 0 {
		return nil, nil
	}
	var out []MandatoryLink
	for _, src := range p.Sources {
		// Only the mandatory tables' rows are read, not every record.
		var prefixes []string
		for table := range p.Model.mandatory {
			prefixes = append(prefixes, table+":")
		}
		slices.Sort(prefixes)
		keys, err := p.Store.RecordKeysWithPrefix(ctx, p.Name, src.Name(), prefixes)
		if err != nil {
			return nil, fmt.Errorf("index records: %w", err)
		}
		recs, err := p.Store.RecordGet(ctx, p.Name, src.Name(), keys)
		if err != nil {
			return nil, fmt.Errorf("get records: %w", err)
		}
		for _, k := range keys {
			rp, err := decodeRecordProps(recs[k].Props)
			if err != nil {
				return nil, fmt.Errorf("record %q: %w", k, err)
			}
			if rp.Mandatory != nil {
				out = append(out, *rp.Mandatory)
			}
		}
	}
	return out, nil
}

// lightProps keeps what the link pass needs of a document's props.
func lightProps(rp recordProps) recordProps {
	strip := func(ns []elementNode) []elementNode {
		out := make([]elementNode, len(ns))
		for i, n := range ns {
			out[i] = elementNode{ID: n.ID, Kind: n.Kind, Address: n.Address, Citation: n.Citation, Title: n.Title}
		}
		return out
	}
	return recordProps{ID: rp.ID, Node: map[string]any{"refs_external_resolved": rp.Node["refs_external_resolved"]},
		Sections: strip(rp.Sections), Elements: strip(rp.Elements), Ext: rp.Ext, ExtEdges: rp.ExtEdges, DocIDs: rp.DocIDs}
}
