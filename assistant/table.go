package assistant

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/pipeline"
)

// table is a pipeline's table rows as state holds them, with their edges,
// for rows on the embedded default. Only rows whose record exists count:
// an edge to a node no record wrote (a placeholder in the graph) is left
// out, as rows on Memgraph leaves placeholders out.
type table struct {
	byAnchor map[string][]*srow // sorted by id
	byID     map[string]*srow   // anchor + "\x00" + id
	attrs    map[string][]string
	// linkEnds are the anchors each link type joins, linkProps its
	// property names, both sorted.
	linkEnds  map[string][][2]string
	linkProps map[string][]string
}

type srow struct {
	anchor, id, source, key string
	props                   map[string]any
	out, in                 []*sedge
}

type sedge struct {
	typ      string
	from, to *srow
	props    map[string]any
}

func rowKey(anchor, id string) string { return anchor + "\x00" + id }

// loadTable reads the pipeline's table rows from state.
func loadTable(ctx context.Context, p *pipeline.Pipeline) (*table, error) {
	t := &table{byAnchor: map[string][]*srow{}, byID: map[string]*srow{}, attrs: map[string][]string{},
		linkEnds: map[string][][2]string{}, linkProps: map[string][]string{}}
	var links []pipeline.StoredLink
	attrSeen := map[string]map[string]bool{}
	err := p.Rows(ctx, func(r pipeline.StoredRow) error {
		if r.Edge != nil {
			links = append(links, *r.Edge)
			return nil
		}
		if r.Document {
			return nil
		}
		row := &srow{anchor: r.Anchor, id: r.ID, source: r.Source, key: r.Key, props: r.Props}
		t.byAnchor[r.Anchor] = append(t.byAnchor[r.Anchor], row)
		t.byID[rowKey(r.Anchor, r.ID)] = row
		if attrSeen[r.Anchor] == nil {
			attrSeen[r.Anchor] = map[string]bool{}
		}
		for k := range r.Props {
			attrSeen[r.Anchor][k] = true
		}
		links = append(links, r.Links...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	propSeen := map[string]map[string]bool{}
	endSeen := map[string]map[[2]string]bool{}
	for _, l := range links {
		if endSeen[l.Type] == nil {
			endSeen[l.Type], propSeen[l.Type] = map[[2]string]bool{}, map[string]bool{}
		}
		endSeen[l.Type][[2]string{l.FromAnchor, l.ToAnchor}] = true
		for k := range l.Props {
			propSeen[l.Type][k] = true
		}
		from, to := t.byID[rowKey(l.FromAnchor, l.FromID)], t.byID[rowKey(l.ToAnchor, l.ToID)]
		if from == nil || to == nil {
			continue
		}
		e := &sedge{typ: l.Type, from: from, to: to, props: l.Props}
		from.out = append(from.out, e)
		to.in = append(to.in, e)
	}
	for a, rows := range t.byAnchor {
		slices.SortFunc(rows, func(x, y *srow) int { return strings.Compare(x.id, y.id) })
		t.attrs[a] = sortedKeys(attrSeen[a])
	}
	for typ, ends := range endSeen {
		for e := range ends {
			t.linkEnds[typ] = append(t.linkEnds[typ], e)
		}
		slices.SortFunc(t.linkEnds[typ], func(x, y [2]string) int { return cmp.Or(strings.Compare(x[0], y[0]), strings.Compare(x[1], y[1])) })
		t.linkProps[typ] = sortedKeys(propSeen[typ])
	}
	return t, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// value is row's attribute attr ("id" is the node's id).
func (r *srow) value(attr string) (any, bool) {
	if attr == "id" {
		return r.id, true
	}
	v, ok := r.props[attr]
	return v, ok && v != nil
}
