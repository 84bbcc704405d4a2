package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/kgsync/kgsync/chunker"
	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/pipeline/review"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/state"
)

// The expert review of a files pipeline's documents in Grist
// (pipeline/review, docs/review.md), as the run uses it: Begin before the
// sources are read, the review's mark folded into each reviewed document's
// record hash, the overlay applied between parsing and chunking, the rows
// published after each committed batch, deletions after each committed
// delete, the experts' MANDATORY links in the link pass. Review failures
// (Grist unreachable) are run warnings: the graph is written with the
// corrections state holds, and Grist catches up on a later run.

// textProv is where an element node's text came from (node properties
// text_source, corrected_by, corrected_at, parsed_text, review,
// expert_note).
type textProv struct {
	Source string `json:"source"`
	By     string `json:"by,omitempty"`
	At     string `json:"at,omitempty"`
	Parsed string `json:"parsed,omitempty"`
	Review string `json:"review,omitempty"`
	Note   string `json:"note,omitempty"`
}

// ReviewNeeded is the review property of a node whose correction was made
// against a parsed text that has changed since.
const ReviewNeeded = "needs review"

func (p *textProv) props(m map[string]any) {
	if p == nil {
		return
	}
	m["text_source"] = p.Source
	// Every key, nil when empty: element nodes are merged with SET +=,
	// so a property the node no longer has must be written as null.
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		} else {
			m[k] = nil
		}
	}
	set("corrected_by", p.By)
	set("corrected_at", p.At)
	set("parsed_text", p.Parsed)
	set("review", p.Review)
	set("expert_note", p.Note)
}

func (r *runner) reviewing(source string) bool {
	return r.p.Review != nil && r.p.Review.Reviews(source)
}

// reviewBegin reads the experts' changes back before the sources.
func (r *runner) reviewBegin(ctx context.Context) error {
	if r.p.Review == nil {
		return nil
	}
	err := r.p.Review.Begin(ctx)
	r.warn(r.p.Review.Warnings())
	return err
}

// reviewEnd adds the review's counts and warnings to the run.
func (r *runner) reviewEnd() {
	if r.p.Review == nil {
		return
	}
	r.warn(r.p.Review.Warnings())
	st := r.p.Review.Stats()
	c := r.counts()
	c.ReviewRowsRead, c.ReviewExpertChanges = st.RowsRead, st.ExpertChanges
	c.ReviewRowsWritten = st.RowsAdded + st.RowsUpdated + st.RowsDeleted
	c.ReviewConflicts, c.ReviewRequests = st.Conflicts+st.Missing, int(st.Requests)
	if rs, ok := r.p.Store.(state.ReviewStore); ok {
		if n, err := rs.ReviewCounts(context.Background(), r.p.Name); err == nil {
			c.ReviewNeedsReview = n.Flagged
		}
	}
}

// reviewMark is the review mark of a document record and whether its
// rows must be published again.
func (r *runner) reviewMark(source string, rec sources.Record) (uint64, bool) {
	if rec.Document == nil || !r.reviewing(source) {
		return 0, false
	}
	id := NodeID(source, rec.Key)
	return r.p.Review.Mark(id), r.p.Review.Pending(id)
}

// applyReview overlays the expert input on a parsed document.
func (r *runner) applyReview(ctx context.Context, out *recordOutput, root *chunker.Element) error {
	if !r.reviewing(out.it.source) || out.it.rec.Document == nil {
		return nil
	}
	a, err := r.p.Review.Apply(ctx, out.it.source, out.it.rec.Key, out.nodeID, root)
	if err != nil {
		return fmt.Errorf("review of %s: %w", out.it.rec.Key, err)
	}
	out.review = a
	return nil
}

// reviewProvenance sets the element nodes' provenance and the document
// node's review counts, and gives the overlay its chunks.
func (r *runner) reviewProvenance(out *recordOutput, root *chunker.Element) {
	a := out.review
	if a == nil {
		return
	}
	set := func(ns []elementNode) {
		for i := range ns {
			p, ok := a.Prov[ns[i].ID]
			if !ok {
				p = review.Provenance{Source: review.SourceParsed}
			}
			tp := &textProv{Source: p.Source, By: p.By, At: p.At, Parsed: p.Parsed, Note: p.Note}
			if p.Conflict {
				tp.Review = ReviewNeeded
			}
			ns[i].Prov = tp
		}
	}
	set(out.sections)
	set(out.elements)
	a.SetChunks(out.chunks)
	var unresolved []string
	for _, ns := range [][]elementNode{out.sections, out.elements} {
		for _, n := range ns {
			unresolved = append(unresolved, n.Unresolved...)
		}
	}
	title, _ := out.node["title"].(string)
	content := out.it.rec.Document.Content
	a.SetInfo(review.DocInfo{Path: out.it.rec.Key, Title: title, Format: out.it.rec.Document.Format, Size: int64(len(content)),
		ContentHash: fmt.Sprintf("%016x", diff.TextHash(string(content))), Chunks: len(out.chunks), Unresolved: unresolved})
	out.node["review_corrections"] = int64(a.Corrections)
	out.node["review_excluded"] = int64(len(a.Excluded))
	out.node["review_conflicts"] = int64(a.Conflicts)
}

// reviewChunk adds a chunk's provenance to its properties.
func (o *recordOutput) reviewChunk(c chunker.Chunk, props map[string]any) {
	if o.review == nil {
		return
	}
	src, corrected, by, at := o.review.ChunkSource(c.Elements, c.Parent)
	props["text_source"] = src
	props["expert_elements"], props["corrected_by"], props["corrected_at"] = nil, nil, nil
	if len(corrected) > 0 {
		l := make([]any, len(corrected))
		for i, e := range corrected {
			l[i] = e
		}
		props["expert_elements"] = l
		if by != "" {
			props["corrected_by"] = by
		}
		if at != "" {
			props["corrected_at"] = at
		}
	}
}

func reviewBatch(outs []*recordOutput) []*review.Applied {
	var batch []*review.Applied
	for _, o := range outs {
		if o.review != nil {
			batch = append(batch, o.review)
		}
	}
	return batch
}

// prepareReview marks a batch's reviewed documents pending before its
// write (review.Prepare): a process that dies before their publish leaves
// them to the next run.
func (r *runner) prepareReview(ctx context.Context, outs []*recordOutput) error {
	if r.p.Review == nil {
		return nil
	}
	if err := r.p.Review.Prepare(ctx, reviewBatch(outs)); err != nil {
		return fmt.Errorf("review: %w", err)
	}
	return nil
}

// publishReview publishes a committed batch's reviewed documents.
func (r *runner) publishReview(ctx context.Context, outs []*recordOutput) {
	if r.p.Review == nil {
		return
	}
	if err := r.p.Review.Publish(ctx, reviewBatch(outs)); err != nil {
		r.log.Warn("review publish failed; retried next run", slog.String("err", err.Error()))
		r.warn([]string{err.Error()})
	}
}

// prepareReviewDeleted marks the reviewed documents among records about to
// be deleted pending deletion (review.PrepareDeleted) and returns their
// node ids.
func (r *runner) prepareReviewDeleted(ctx context.Context, source string, gone []state.Record) ([]string, error) {
	if !r.reviewing(source) {
		return nil, nil
	}
	var ids, keys []string
	for _, rec := range gone {
		sp, err := decodeRecordProps(rec.Props)
		if err != nil || (len(sp.Sections) == 0 && len(sp.Elements) == 0) {
			continue
		}
		ids = append(ids, nodeIDOf(source, rec.Key, sp))
		keys = append(keys, rec.Key)
	}
	if err := r.p.Review.PrepareDeleted(ctx, source, keys, ids); err != nil {
		return nil, fmt.Errorf("review: %w", err)
	}
	return ids, nil
}

// reviewDeleted tells the review about deleted documents.
func (r *runner) reviewDeleted(ctx context.Context, ids []string) {
	if r.p.Review == nil || len(ids) == 0 {
		return
	}
	if err := r.p.Review.Deleted(ctx, ids); err != nil {
		r.log.Warn("review deletion failed; retried next run", slog.String("err", err.Error()))
		r.warn([]string{err.Error()})
	}
}

// expertMandatory are the experts' mandatory links between elements the
// graph has (source "expert").
func (r *runner) expertMandatory(ctx context.Context, idx *corpusIndex) ([]xrefEdge, error) {
	if r.p.Review == nil {
		return nil, nil
	}
	links, err := r.p.Review.Mandatory(ctx)
	if err != nil || len(links) == 0 {
		return nil, err
	}
	labels := map[string]string{}
	// The documents holding the links' elements (an element's id starts
	// with its document's), read once each.
	labeled := map[*indexedDoc]bool{}
	for _, l := range links {
		for _, id := range []string{l.From, l.To} {
			for _, d := range idx.all {
				if labeled[d] || !strings.HasPrefix(id, d.id+PathSep) {
					continue
				}
				labeled[d] = true
				idx.ensure(d)
				for _, s := range d.props.Sections {
					labels[s.ID] = LabelSection
				}
				for _, e := range d.props.Elements {
					labels[e.ID] = LabelElement
				}
			}
		}
	}
	if idx.err != nil {
		return nil, idx.err
	}
	var out []xrefEdge
	for _, l := range links {
		fl, tl := labels[l.From], labels[l.To]
		if fl == "" || tl == "" {
			r.log.Warn("expert mandatory link to an element not in the graph", "from", l.From, "to", l.To)
			continue
		}
		out = append(out, xrefEdge{From: l.From, FromLabel: fl, To: l.To, ToLabel: tl, Text: l.Note, Source: review.SourceExpert, By: l.By, At: l.At})
	}
	return out, nil
}

// mandatoryProps are a MANDATORY edge's properties.
func mandatoryProps(e xrefEdge) map[string]any { return MandatoryProps(e.edge()) }

// MandatoryProps are the properties the pipeline writes on a MANDATORY
// edge: its note and, for an expert's link, source "expert",
// corrected_by and corrected_at.
func MandatoryProps(e retrieval.Edge) map[string]any {
	p := map[string]any{"note": e.Text}
	if e.Source != "" {
		p["source"] = e.Source
		if e.By != "" {
			p["corrected_by"] = e.By
		}
		if e.At != "" {
			p["corrected_at"] = e.At
		}
	}
	return p
}
