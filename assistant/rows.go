package assistant

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/memgraph"
)

// Filter is one condition on an attribute of a row.
type Filter struct {
	Attribute string `json:"attribute" jsonschema:"the attribute (node property) to test; id is the node's id, e.g. hs_code:0101"`
	Op        string `json:"op,omitempty" jsonschema:"eq (default), ne, in, contains, starts_with, lt, le, gt, ge, exists, missing; contains and starts_with ignore case"`
	Value     any    `json:"value,omitempty" jsonschema:"the value to compare with: a string compares with the attribute's text, a number numerically, a boolean exactly"`
	Values    []any  `json:"values,omitempty" jsonschema:"the values of op in"`
}

// Hop is one step along a link.
type Hop struct {
	Link      string   `json:"link" jsonschema:"the link (relationship type), e.g. REQUIRES_GUIDE"`
	Direction string   `json:"direction,omitempty" jsonschema:"out (default: from the link's from-anchor to its to-anchor, as schema lists it) or in (against it)"`
	Filters   []Filter `json:"filters,omitempty" jsonschema:"conditions on the node reached (all must hold)"`
}

// RowsInput is the input of tool rows.
type RowsInput struct {
	Pipeline string   `json:"pipeline,omitempty" jsonschema:"the pipeline; required when several are served"`
	Anchor   string   `json:"anchor" jsonschema:"the anchor (node label) whose rows to start from, e.g. cn_code"`
	Filters  []Filter `json:"filters,omitempty" jsonschema:"conditions on the anchor's rows (all must hold)"`
	LinkedTo []Hop    `json:"linked_to,omitempty" jsonschema:"keep only rows with each of these links to a node meeting the hop's filters"`
	Follow   []Hop    `json:"follow,omitempty" jsonschema:"then follow these links in order; the rows returned are the distinct nodes reached by the last hop, each with the edges (via) that reached it"`
	Count    bool     `json:"count_only,omitempty" jsonschema:"return only the total (how many)"`
	GroupBy  string   `json:"group_by,omitempty" jsonschema:"also count the matching rows per value of this attribute"`
	Fields   []string `json:"fields,omitempty" jsonschema:"attributes to return (default: all)"`
	OrderBy  string   `json:"order_by,omitempty" jsonschema:"attribute to sort by (default id); ties by id"`
	Desc     bool     `json:"desc,omitempty" jsonschema:"sort descending"`
	Limit    int      `json:"limit,omitempty" jsonschema:"rows per page, 1-500 (default 50)"`
	Offset   int      `json:"offset,omitempty" jsonschema:"rows to skip (paging: pass the previous page's next_offset)"`
	From     string   `json:"from,omitempty" jsonschema:"where to read: graph (the Memgraph sink) or state; default graph when the sink is Memgraph, else state"`
}

// RowsOutput is the result of tool rows.
type RowsOutput struct {
	Pipeline string `json:"pipeline"`
	// Anchor is the anchor of the rows returned (the last hop's with follow).
	Anchor string `json:"anchor"`
	// Total is how many rows match, all pages together.
	Total  int `json:"total"`
	Offset int `json:"offset"`
	// Returned is len(Rows); Complete reports Rows holds every match.
	Returned   int         `json:"returned"`
	Complete   bool        `json:"complete"`
	NextOffset int         `json:"next_offset,omitempty"`
	Groups     []Group     `json:"groups,omitempty"`
	Rows       []RowResult `json:"rows"`
	// From is where the rows were read: "state" or "graph".
	From string `json:"from"`
	// Cypher is the query that answers the call on the graph (with
	// $parameters), also when it was answered from state.
	Cypher string         `json:"cypher"`
	Params map[string]any `json:"params,omitempty"`
}

// Group is the count of rows with one value of the group_by attribute.
type Group struct {
	Value any `json:"value"`
	Count int `json:"count"`
}

// RowResult is one row.
type RowResult struct {
	ID     string         `json:"id"`
	Anchor string         `json:"anchor"`
	Props  map[string]any `json:"props"`
	// Source is the record in state: source and key.
	Source string `json:"source,omitempty"`
	// Via are the edges of the last followed link that reached the row
	// (at most maxVia), with their properties.
	Via []ViaEdge `json:"via,omitempty"`
}

// ViaEdge is an edge a followed link reached a row by.
type ViaEdge struct {
	From  string         `json:"from"`
	Link  string         `json:"link"`
	Props map[string]any `json:"props,omitempty"`
}

// maxVia bounds a row's Via.
const maxVia = 20

var filterOps = []string{"eq", "ne", "in", "contains", "starts_with", "lt", "le", "gt", "ge", "exists", "missing"}

// check validates f; where names it in errors.
func (f *Filter) check(where string) error {
	if f.Attribute == "" {
		return fmt.Errorf("%s: attribute is empty", where)
	}
	if err := sink.ValidName(f.Attribute); err != nil {
		return fmt.Errorf("%s: attribute: %w", where, err)
	}
	if f.Op == "" {
		f.Op = "eq"
	}
	if !slices.Contains(filterOps, f.Op) {
		return fmt.Errorf("%s: op %q, want one of %s", where, f.Op, strings.Join(filterOps, ", "))
	}
	scalar := func(v any) error {
		switch v.(type) {
		case string, float64, bool, int, int64:
			return nil
		}
		return fmt.Errorf("%s: value %v (%T): want a string, number or boolean", where, v, v)
	}
	switch f.Op {
	case "exists", "missing":
	case "in":
		if len(f.Values) == 0 {
			return fmt.Errorf("%s: op in needs values", where)
		}
		for _, v := range f.Values {
			if err := scalar(v); err != nil {
				return err
			}
		}
	case "contains", "starts_with":
		if _, ok := f.Value.(string); !ok {
			return fmt.Errorf("%s: op %s needs a string value", where, f.Op)
		}
	default:
		if f.Value == nil {
			return fmt.Errorf("%s: op %s needs a value", where, f.Op)
		}
		if err := scalar(f.Value); err != nil {
			return err
		}
	}
	return nil
}

// text is v as Memgraph's toString gives it.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatFloat(x, 'f', 1, 64)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// eq is Cypher's comparison of an attribute with want as Filter documents.
func eq(v, want any) bool {
	switch w := want.(type) {
	case string:
		return text(v) == w
	case bool:
		b, ok := v.(bool)
		return ok && b == w
	}
	a, ok1 := number(v)
	b, ok2 := number(want)
	return ok1 && ok2 && a == b
}

// order compares v with want for lt/le/gt/ge: ok=false when Cypher's
// comparison is null (different types).
func order(v, want any) (int, bool) {
	if a, ok := number(v); ok {
		if b, ok := number(want); ok {
			return cmp.Compare(a, b), true
		}
		return 0, false
	}
	if a, ok := v.(string); ok {
		if b, ok := want.(string); ok {
			return strings.Compare(a, b), true
		}
	}
	return 0, false
}

// match evaluates f on a row.
func (f Filter) match(r *srow) bool {
	v, ok := r.value(f.Attribute)
	switch f.Op {
	case "exists":
		return ok
	case "missing":
		return !ok
	}
	if !ok {
		return false
	}
	switch f.Op {
	case "eq":
		return eq(v, f.Value)
	case "ne":
		return !eq(v, f.Value)
	case "in":
		return slices.ContainsFunc(f.Values, func(w any) bool { return eq(v, w) })
	case "contains":
		return strings.Contains(strings.ToLower(text(v)), strings.ToLower(f.Value.(string)))
	case "starts_with":
		return strings.HasPrefix(strings.ToLower(text(v)), strings.ToLower(f.Value.(string)))
	}
	c, ok := order(v, f.Value)
	if !ok {
		return false
	}
	switch f.Op {
	case "lt":
		return c < 0
	case "le":
		return c <= 0
	case "gt":
		return c > 0
	}
	return c >= 0
}

// cypherParam turns a filter value into a Cypher parameter: integral
// numbers become integers.
func cypherParam(v any) any {
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return v
}

// cypher is f as a Cypher condition on variable x, its parameters added
// to params.
func (f Filter) cypher(x string, params map[string]any) string {
	prop := x + "." + sink.QuoteName(f.Attribute)
	if f.Attribute == "id" {
		prop = x + ".id"
	}
	param := func(v any) string {
		name := fmt.Sprintf("p%d", len(params))
		params[name] = cypherParam(v)
		return "$" + name
	}
	eqc := func(v any) string {
		// ids are strings: comparing them directly keeps the id index usable.
		if _, ok := v.(string); ok && f.Attribute != "id" {
			return fmt.Sprintf("toString(%s) = %s", prop, param(v))
		}
		return fmt.Sprintf("%s = %s", prop, param(v))
	}
	switch f.Op {
	case "exists":
		return prop + " IS NOT NULL"
	case "missing":
		return prop + " IS NULL"
	case "eq":
		return eqc(f.Value)
	case "ne":
		return fmt.Sprintf("(%s IS NOT NULL AND NOT %s)", prop, eqc(f.Value))
	case "in":
		var alts []string
		for _, v := range f.Values {
			alts = append(alts, eqc(v))
		}
		return "(" + strings.Join(alts, " OR ") + ")"
	case "contains":
		return fmt.Sprintf("toLower(toString(%s)) CONTAINS %s", prop, param(strings.ToLower(f.Value.(string))))
	case "starts_with":
		return fmt.Sprintf("toLower(toString(%s)) STARTS WITH %s", prop, param(strings.ToLower(f.Value.(string))))
	}
	op := map[string]string{"lt": "<", "le": "<=", "gt": ">", "ge": ">="}[f.Op]
	return fmt.Sprintf("%s %s %s", prop, op, param(f.Value))
}

// plan is a checked rows call: the anchors along the path.
type plan struct {
	in      RowsInput
	anchors []string // start anchor, then one per follow hop
	linked  []string // the anchor each linked_to hop reaches
	fields  []string
}

// planRows checks in against the data model t holds.
func planRows(in RowsInput, t *table) (*plan, error) {
	if in.Anchor == "" {
		return nil, errors.New("anchor is required: call schema for the anchors")
	}
	if _, ok := t.byAnchor[in.Anchor]; !ok {
		return nil, fmt.Errorf("anchor %q has no rows; anchors: %s", in.Anchor, strings.Join(sortedKeys(t.byAnchor), ", "))
	}
	if in.Limit == 0 {
		in.Limit = DefaultRowsLimit
	}
	if in.Limit < 1 || in.Limit > MaxRowsLimit {
		return nil, fmt.Errorf("limit %d: want 1-%d (page with offset)", in.Limit, MaxRowsLimit)
	}
	if in.Offset < 0 {
		return nil, fmt.Errorf("offset %d: want >= 0", in.Offset)
	}
	for i := range in.Filters {
		if err := in.Filters[i].check(fmt.Sprintf("filters[%d]", i)); err != nil {
			return nil, err
		}
	}
	// has refuses an attribute no row of anchor holds: a misspelt name
	// would otherwise match nothing and read as "no such rows".
	has := func(anchor, attr, where string) error {
		if attr == "id" || slices.Contains(t.attrs[anchor], attr) {
			return nil
		}
		return fmt.Errorf("%s: anchor %s has no attribute %q; its attributes: id, %s", where, anchor, attr, strings.Join(t.attrs[anchor], ", "))
	}
	for i, f := range in.Filters {
		if err := has(in.Anchor, f.Attribute, fmt.Sprintf("filters[%d]", i)); err != nil {
			return nil, err
		}
	}
	pl := &plan{in: in, anchors: []string{in.Anchor}}
	hop := func(from string, h *Hop, where string) (string, error) {
		if h.Direction == "" {
			h.Direction = "out"
		}
		if h.Direction != "out" && h.Direction != "in" {
			return "", fmt.Errorf("%s: direction %q, want out or in", where, h.Direction)
		}
		for i := range h.Filters {
			if err := h.Filters[i].check(fmt.Sprintf("%s.filters[%d]", where, i)); err != nil {
				return "", err
			}
		}
		var to []string
		var have []string
		for _, e := range t.linkEnds[h.Link] {
			if h.Direction == "out" && e[0] == from {
				to = append(to, e[1])
			}
			if h.Direction == "in" && e[1] == from {
				to = append(to, e[0])
			}
		}
		for typ, ends := range t.linkEnds {
			for _, e := range ends {
				if e[0] == from {
					have = append(have, typ+" (out, to "+e[1]+")")
				}
				if e[1] == from {
					have = append(have, typ+" (in, from "+e[0]+")")
				}
			}
		}
		slices.Sort(have)
		if len(to) != 1 {
			return "", fmt.Errorf("%s: anchor %s has no link %q direction %s; its links: %s", where, from, h.Link, h.Direction, strings.Join(have, ", "))
		}
		for i, f := range h.Filters {
			if err := has(to[0], f.Attribute, fmt.Sprintf("%s.filters[%d]", where, i)); err != nil {
				return "", err
			}
		}
		return to[0], nil
	}
	for i := range pl.in.LinkedTo {
		a, err := hop(in.Anchor, &pl.in.LinkedTo[i], fmt.Sprintf("linked_to[%d]", i))
		if err != nil {
			return nil, err
		}
		pl.linked = append(pl.linked, a)
	}
	for i := range pl.in.Follow {
		a, err := hop(pl.anchors[len(pl.anchors)-1], &pl.in.Follow[i], fmt.Sprintf("follow[%d]", i))
		if err != nil {
			return nil, err
		}
		pl.anchors = append(pl.anchors, a)
	}
	end := pl.anchors[len(pl.anchors)-1]
	pl.fields = in.Fields
	if len(pl.fields) == 0 {
		pl.fields = t.attrs[end]
	}
	for _, f := range pl.fields {
		if err := sink.ValidName(f); err != nil {
			return nil, fmt.Errorf("fields: %w", err)
		}
		if err := has(end, f, "fields"); err != nil {
			return nil, err
		}
	}
	for _, a := range []struct{ name, where string }{{in.OrderBy, "order_by"}, {in.GroupBy, "group_by"}} {
		if a.name != "" {
			if err := sink.ValidName(a.name); err != nil {
				return nil, fmt.Errorf("%s: %w", a.where, err)
			}
			if err := has(end, a.name, a.where); err != nil {
				return nil, err
			}
		}
	}
	return pl, nil
}

// runState answers a planned call from state.
func (pl *plan) runState(t *table) RowsOutput {
	in := pl.in
	var cur []*srow
	for _, r := range t.byAnchor[in.Anchor] {
		if !all(in.Filters, r) {
			continue
		}
		keep := true
		for _, h := range in.LinkedTo {
			if len(step(r, h)) == 0 {
				keep = false
				break
			}
		}
		if keep {
			cur = append(cur, r)
		}
	}
	via := map[*srow][]ViaEdge{}
	for i, h := range in.Follow {
		last := i == len(in.Follow)-1
		seen := map[*srow]bool{}
		var next []*srow
		for _, r := range cur {
			for _, e := range stepEdges(r, h) {
				n := e.to
				if h.Direction == "in" {
					n = e.from
				}
				if last {
					via[n] = append(via[n], ViaEdge{From: r.id, Link: h.Link, Props: e.props})
				}
				if !seen[n] {
					seen[n] = true
					next = append(next, n)
				}
			}
		}
		cur = next
	}
	sortRows(cur, in.OrderBy, in.Desc)
	out := pl.output()
	out.From = "state"
	out.Total = len(cur)
	if in.GroupBy != "" {
		counts := map[string]*Group{}
		for _, r := range cur {
			v, _ := r.value(in.GroupBy)
			k := "\x00null"
			if v != nil {
				k = text(v)
			}
			if counts[k] == nil {
				counts[k] = &Group{Value: v}
			}
			counts[k].Count++
		}
		for _, g := range counts {
			out.Groups = append(out.Groups, *g)
		}
		sortGroups(out.Groups)
	}
	if !in.Count {
		for _, r := range cur[min(in.Offset, len(cur)):min(in.Offset+in.Limit, len(cur))] {
			rr := RowResult{ID: r.id, Anchor: r.anchor, Source: r.source + "/" + r.key, Props: map[string]any{}}
			for _, f := range pl.fields {
				if v, ok := r.value(f); ok {
					rr.Props[f] = v
				}
			}
			vs := via[r]
			slices.SortFunc(vs, func(a, b ViaEdge) int { return strings.Compare(a.From, b.From) })
			rr.Via = vs[:min(len(vs), maxVia)]
			out.Rows = append(out.Rows, rr)
		}
	}
	pl.page(&out)
	return out
}

func all(fs []Filter, r *srow) bool {
	for _, f := range fs {
		if !f.match(r) {
			return false
		}
	}
	return true
}

// stepEdges are r's edges along h whose other end meets h's filters.
func stepEdges(r *srow, h Hop) []*sedge {
	var out []*sedge
	edges, other := r.out, func(e *sedge) *srow { return e.to }
	if h.Direction == "in" {
		edges, other = r.in, func(e *sedge) *srow { return e.from }
	}
	for _, e := range edges {
		if e.typ == h.Link && all(h.Filters, other(e)) {
			out = append(out, e)
		}
	}
	return out
}

func step(r *srow, h Hop) []*sedge { return stepEdges(r, h) }

// sortRows orders rows by attr (nulls last; numbers before strings), then
// id.
func sortRows(rows []*srow, attr string, desc bool) {
	slices.SortStableFunc(rows, func(a, b *srow) int {
		c := 0
		if attr != "" && attr != "id" {
			va, _ := a.value(attr)
			vb, _ := b.value(attr)
			c = compareValues(va, vb)
		}
		if c == 0 {
			c = strings.Compare(a.id, b.id)
		}
		if desc {
			c = -c
		}
		return c
	})
}

func compareValues(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	na, okA := number(a)
	nb, okB := number(b)
	switch {
	case okA && okB:
		return cmp.Compare(na, nb)
	case okA:
		return -1
	case okB:
		return 1
	}
	return strings.Compare(text(a), text(b))
}

func sortGroups(gs []Group) {
	slices.SortFunc(gs, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), compareValues(a.Value, b.Value))
	})
}

// output is the output's frame: anchor and the equivalent Cypher.
func (pl *plan) output() RowsOutput {
	kind := "list"
	if pl.in.Count {
		kind = "count"
	}
	q, params := pl.cypher(kind)
	return RowsOutput{Anchor: pl.anchors[len(pl.anchors)-1], Offset: pl.in.Offset, Rows: []RowResult{}, Cypher: q, Params: params}
}

// page sets Returned, Complete and NextOffset.
func (pl *plan) page(out *RowsOutput) {
	out.Returned = len(out.Rows)
	if pl.in.Count {
		out.Complete = false
		return
	}
	out.Complete = pl.in.Offset == 0 && out.Returned == out.Total
	if next := pl.in.Offset + out.Returned; next < out.Total && out.Returned > 0 {
		out.NextOffset = next
	}
}

// cypher is the call as one Cypher query: kind "count", "groups" or
// "list". Every node is the pipeline's and not a placeholder.
func (pl *plan) cypher(kind string) (string, map[string]any) {
	in := pl.in
	params := map[string]any{}
	own := func(x string) string { return x + "._pipeline = $pipeline AND " + x + "._placeholder IS NULL" }
	where := func(x string, fs []Filter) string {
		parts := []string{own(x)}
		for _, f := range fs {
			parts = append(parts, f.cypher(x, params))
		}
		return strings.Join(parts, " AND ")
	}
	rel := func(from, r, to, link, dir, toLabel string) string {
		e := fmt.Sprintf("[%s:%s]", r, sink.QuoteName(link))
		if dir == "in" {
			return fmt.Sprintf("(%s)<-%s-(%s:%s)", from, e, to, sink.QuoteName(toLabel))
		}
		return fmt.Sprintf("(%s)-%s->(%s:%s)", from, e, to, sink.QuoteName(toLabel))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "MATCH (n0:%s) WHERE %s", sink.QuoteName(in.Anchor), where("n0", in.Filters))
	for i, h := range in.LinkedTo {
		m := fmt.Sprintf("l%d", i)
		fmt.Fprintf(&b, " MATCH %s WHERE %s WITH DISTINCT n0", rel("n0", "", m, h.Link, h.Direction, pl.linked[i]), where(m, h.Filters))
	}
	x := "n0"
	for i, h := range in.Follow {
		prev, next := fmt.Sprintf("n%d", i), fmt.Sprintf("n%d", i+1)
		fmt.Fprintf(&b, " MATCH %s WHERE %s", rel(prev, fmt.Sprintf("r%d", i+1), next, h.Link, h.Direction, pl.anchors[i+1]), where(next, h.Filters))
		if i < len(in.Follow)-1 {
			fmt.Fprintf(&b, " WITH DISTINCT %s", next)
		} else {
			fmt.Fprintf(&b, " WITH %s AS x, collect({from: %s.id, props: properties(r%d)}) AS via", next, prev, i+1)
		}
		x = next
	}
	if len(in.Follow) == 0 {
		b.WriteString(" WITH n0 AS x, [] AS via")
	}
	_ = x
	switch kind {
	case "count":
		b.WriteString(" RETURN count(x) AS total")
	case "groups":
		fmt.Fprintf(&b, " RETURN x.%s AS value, count(x) AS count", sink.QuoteName(in.GroupBy))
	default:
		var proj []string
		for _, f := range pl.fields {
			proj = append(proj, "."+sink.QuoteName(f))
		}
		dir := ""
		if in.Desc {
			dir = " DESC"
		}
		order := "x.id" + dir
		if in.OrderBy != "" && in.OrderBy != "id" {
			order = "x." + sink.QuoteName(in.OrderBy) + dir + ", x.id" + dir
		}
		fmt.Fprintf(&b, " RETURN x.id AS id, x {%s} AS props, via[..%d] AS via ORDER BY %s SKIP $offset LIMIT $limit",
			strings.Join(proj, ", "), maxVia, order)
		params["offset"], params["limit"] = int64(in.Offset), int64(in.Limit)
	}
	return b.String(), params
}

// runGraph answers a planned call from Memgraph: a count query, a groups
// query with group_by, and a list query unless count_only.
func (pl *plan) runGraph(ctx context.Context, p *pipeline.Pipeline, g *memgraph.Sink) (RowsOutput, error) {
	out := pl.output()
	out.From = "graph"
	read := func(kind string) (*memgraph.ReadResult, error) {
		q, params := pl.cypher(kind)
		params["pipeline"] = p.Name
		res, err := g.Read(ctx, q, params, memgraph.ReadOptions{MaxRows: MaxRowsLimit + 1})
		if err != nil {
			return nil, fmt.Errorf("rows on the graph: %w", err)
		}
		return res, nil
	}
	res, err := read("count")
	if err != nil {
		return out, err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		return out, fmt.Errorf("rows on the graph: count query returned %d rows", len(res.Rows))
	}
	n, ok := res.Rows[0][0].(int64)
	if !ok {
		return out, fmt.Errorf("rows on the graph: count is %T", res.Rows[0][0])
	}
	out.Total = int(n)
	if pl.in.GroupBy != "" {
		res, err := read("groups")
		if err != nil {
			return out, err
		}
		for _, r := range res.Rows {
			if len(r) != 2 {
				return out, fmt.Errorf("rows on the graph: group row has %d values", len(r))
			}
			c, _ := r[1].(int64)
			out.Groups = append(out.Groups, Group{Value: r[0], Count: int(c)})
		}
		sortGroups(out.Groups)
	}
	if !pl.in.Count {
		res, err := read("list")
		if err != nil {
			return out, err
		}
		for _, r := range res.Rows {
			if len(r) != 3 {
				return out, fmt.Errorf("rows on the graph: row has %d values", len(r))
			}
			id, _ := r[0].(string)
			props, _ := r[1].(map[string]any)
			rr := RowResult{ID: id, Anchor: out.Anchor, Props: map[string]any{}}
			for k, v := range props {
				if v != nil {
					rr.Props[k] = v
				}
			}
			vias, _ := r[2].([]any)
			for _, v := range vias {
				m, _ := v.(map[string]any)
				from, _ := m["from"].(string)
				ep, _ := m["props"].(map[string]any)
				rr.Via = append(rr.Via, ViaEdge{From: from, Link: pl.in.Follow[len(pl.in.Follow)-1].Link, Props: publicOnly(ep)})
			}
			slices.SortFunc(rr.Via, func(a, b ViaEdge) int { return strings.Compare(a.From, b.From) })
			out.Rows = append(out.Rows, rr)
		}
	}
	pl.page(&out)
	return out, nil
}

// publicOnly is props without reserved properties (a leading "_").
func publicOnly(props map[string]any) map[string]any {
	if len(props) == 0 {
		return nil
	}
	out := map[string]any{}
	for k, v := range props {
		if !strings.HasPrefix(k, "_") {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
