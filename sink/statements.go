package sink

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// PropPipeline is the node property that names the pipeline owning a node.
// It is part of every node's MERGE key, so two pipelines writing to one
// Memgraph never share a node (not even one with the same label and id),
// and every statement that matches a node matches it in the owning
// pipeline only: a pipeline can change or delete nothing of another's.
const PropPipeline = "_pipeline"

// IdentityProperty reports whether name is a property every statement
// matches a node by: `id` or PropPipeline. Nothing may remove or change
// them (CheckNodeProps).
func IdentityProperty(name string) bool { return name == "id" || name == PropPipeline }

// ReservedProperty reports whether kgsync writes the property name
// itself: `id` and names starting with "_" (PropPipeline, `_key`,
// `_hash`, …). A model attribute may not take such a name (config
// validation); a source's field with one is written under another.
func ReservedProperty(name string) bool { return name == "id" || strings.HasPrefix(name, "_") }

// Options are what Statements needs besides the batch.
type Options struct {
	// Pipeline owns the batch's nodes (PropPipeline); required, and it must
	// pass ValidName.
	Pipeline string
	// RowsPerStatement splits each group into statements of at most this
	// many rows (<= 0: one statement per group).
	RowsPerStatement int
	// Inline says the statements are written out as literals (the CYPHERL
	// sink inlines every parameter) rather than sent to a driver: values
	// are checked as for a driver, with the same errors, but property maps
	// and keep lists are the batch's own, not copied or normalised (a
	// []float32 stays a []float32, which a literal writes at float32
	// precision; an int stays an int, written as an int64 is). The batch
	// must not change while the statements are in use.
	Inline bool
}

// Statements turns b into batched UNWIND statements, in the order Write
// applies them: DeleteNodes, DeleteEdges, NodeUpserts, EdgeUpserts,
// EdgePrunes, DeleteOrphans. Within a kind there is one group per label
// (nodes) or per (from label, type, to label, keyed, with properties)
// (edges), groups sorted by those names, rows kept in batch order, and each
// group split into statements of at most o.RowsPerStatement rows. The
// texts, with `L` standing for a quoted name and P for
// {id: row.id, _pipeline: $pipeline} (docs/memgraph.md §5):
//
//	UNWIND $rows AS row MATCH (n:`L` P) DETACH DELETE n
//	UNWIND $rows AS row MATCH (a:`A` Pfrom)-[e:`T`]->(b:`B` Pto) DELETE e
//	UNWIND $rows AS row MATCH (a:`A` Pfrom)-[e:`T` {_key: row.key}]->(b:`B` Pto) DELETE e
//	UNWIND $rows AS row MERGE (n:`L` P) ON CREATE SET n += row.props
//	UNWIND $rows AS row MERGE (n:`L` P) SET n += row.props
//	UNWIND $rows AS row MATCH (a:`A` Pfrom), (b:`B` Pto) MERGE (a)-[e:`T`]->(b)
//	UNWIND $rows AS row MATCH (a:`A` Pfrom), (b:`B` Pto) MERGE (a)-[e:`T`]->(b) SET e += row.props
//	UNWIND $rows AS row MATCH (a:`A` Pfrom), (b:`B` Pto) MERGE (a)-[e:`T` {_key: row.key}]->(b) SET e += row.props
//	UNWIND $rows AS row MATCH (a:`A` Pfrom)-[e:`T`]->(b:`B`) WHERE NOT b.id IN row.keep DELETE e
//	UNWIND $rows AS row MATCH (n:`L` P) WHERE n._placeholder = true AND NOT exists((n)--()) DETACH DELETE n
//
// An edge group without any property writes none (no SET e +=): Memgraph
// refuses every edge property write, even of an empty map, when started
// without --storage-properties-on-edges (docs/memgraph.md §12). Keyed
// edges and edges with properties need that flag.
//
// Params are $pipeline (o.Pipeline) and $rows, a []any of map[string]any
// rows with keys id; id, props; from, to, [key], [props]; and from, keep.
// A node's props is never nil (an empty map) and keep never nil (an empty
// list prunes every edge), since a null would make SET fail or the WHERE
// drop every row. Values are normalised for the driver: []float32 becomes
// []float64 (the driver's fast path, docs/memgraph.md §1), int and int32
// become int64, float32 becomes float64.
//
// Errors name the statement kind, the label and the row: a missing or
// invalid pipeline, an invalid name (ValidName; property names included,
// since CYPHERL files inline them), an empty id, NaN or ±Inf, a map value
// for a dialect without map properties, or a value of another type.
func Statements(d Dialect, b *Batch, o Options) ([]Statement, error) {
	if b == nil || b.Len() == 0 {
		return nil, nil
	}
	if err := ValidName(o.Pipeline); err != nil {
		return nil, fmt.Errorf("statements: pipeline: %w", err)
	}
	// One stage per kind, in the order Write applies them; each checks
	// its rows, groups them and appends the groups' statements to s.out.
	s := statements{d: d, o: o}
	err := s.deleteNodes(b)
	if err == nil {
		err = s.deleteEdges(b)
	}
	if err == nil {
		err = s.upsertNodes(b)
	}
	if err == nil {
		err = s.upsertEdges(b)
	}
	if err == nil {
		err = s.pruneEdges(b)
	}
	if err == nil {
		err = s.deleteOrphans(b)
	}
	if err != nil {
		return nil, err
	}
	return s.out, nil
}

// statements collects the statements of one Statements call.
type statements struct {
	d   Dialect
	o   Options
	out []Statement
}

// emit appends the statements of one group: its rows in batch order, at
// most o.RowsPerStatement in each.
func (s *statements) emit(kind, target, query string, rows []any) {
	n := s.o.RowsPerStatement
	if n <= 0 {
		n = len(rows)
	}
	for start := 0; start < len(rows); start += n {
		end := min(start+n, len(rows))
		s.out = append(s.out, Statement{
			Query:  query,
			Params: map[string]any{"rows": rows[start:end:end], "pipeline": s.o.Pipeline},
			Kind:   kind,
			Target: target,
		})
	}
}

// nodePattern is the node v of label matched by the row's id field and
// $pipeline: (v:`L` {id: row.<id>, _pipeline: $pipeline}).
func nodePattern(v, label, id string) string {
	return "(" + v + ":" + QuoteName(label) + " {id: row." + id + ", " + PropPipeline + ": $pipeline})"
}

// deleteNodes emits DeleteNodes, a group per label.
func (s *statements) deleteNodes(b *Batch) error {
	deletes := map[string][]any{}
	for i, n := range b.DeleteNodes {
		if err := checkRef(n); err != nil {
			return fmt.Errorf("%s: row %d: %w", KindDeleteNodes, i, err)
		}
		deletes[n.Label] = append(deletes[n.Label], map[string]any{"id": n.ID})
	}
	for _, l := range sortedKeys(deletes) {
		s.emit(KindDeleteNodes, l, "UNWIND $rows AS row MATCH "+nodePattern("n", l, "id")+" DETACH DELETE n", deletes[l])
	}
	return nil
}

// deleteEdges emits DeleteEdges, a group per pattern (keyed apart).
func (s *statements) deleteEdges(b *Batch) error {
	edgeDeletes := map[edgeGroup][]any{}
	for i, e := range b.DeleteEdges {
		g := edgeGroup{from: e.From.Label, typ: e.Type, to: e.To.Label, keyed: e.Key != ""}
		if err := checkEdge(g, e.From.ID, e.To.ID); err != nil {
			return fmt.Errorf("%s: row %d: %w", KindDeleteEdges, i, err)
		}
		row := map[string]any{"from": e.From.ID, "to": e.To.ID}
		if g.keyed {
			row["key"] = e.Key
		}
		edgeDeletes[g] = append(edgeDeletes[g], row)
	}
	for _, g := range sortedEdgeGroups(edgeDeletes) {
		s.emit(KindDeleteEdges, g.String(), "UNWIND $rows AS row MATCH "+nodePattern("a", g.from, "from")+"-[e:"+
			QuoteName(g.typ)+g.keyPattern()+"]->"+nodePattern("b", g.to, "to")+" DELETE e", edgeDeletes[g])
	}
	return nil
}

// upsertNodes emits NodeUpserts; create-only placeholders first, so that
// a record's own upsert in the same batch wins. A placeholder of a node
// the batch upserts in full, or of one an earlier placeholder creates, is
// left out: it would create nothing (every node upsert runs before the
// edges that need the node).
func (s *statements) upsertNodes(b *Batch) error {
	nodes, placeholders := map[string][]any{}, map[string][]any{}
	needed := neededPlaceholders(b.NodeUpserts)
	for i, n := range b.NodeUpserts {
		if err := checkRef(NodeRef{Label: n.Label, ID: n.ID}); err != nil {
			return fmt.Errorf("%s: row %d: %w", KindUpsertNodes, i, err)
		}
		if n.CreateOnly && needed != nil && !needed[i] {
			continue
		}
		if err := CheckNodeProps(n.ID, n.Props); err != nil {
			return fmt.Errorf("%s %q: row %d (id %q): %w", KindUpsertNodes, n.Label, i, n.ID, err)
		}
		props, err := s.o.props(s.d, n.Props)
		if err != nil {
			return fmt.Errorf("%s %q: row %d (id %q): %w", KindUpsertNodes, n.Label, i, n.ID, err)
		}
		row := map[string]any{"id": n.ID, "props": props}
		if n.CreateOnly {
			placeholders[n.Label] = append(placeholders[n.Label], row)
		} else {
			nodes[n.Label] = append(nodes[n.Label], row)
		}
	}
	for _, l := range sortedKeys(placeholders) {
		s.emit(KindUpsertNodes, l, "UNWIND $rows AS row MERGE "+nodePattern("n", l, "id")+" ON CREATE SET n += row.props", placeholders[l])
	}
	for _, l := range sortedKeys(nodes) {
		s.emit(KindUpsertNodes, l, "UNWIND $rows AS row MERGE "+nodePattern("n", l, "id")+" SET n += row.props", nodes[l])
	}
	return nil
}

// upsertEdges emits EdgeUpserts: a group per pattern, and apart the edges
// with properties (only those SET e +=; see Statements).
func (s *statements) upsertEdges(b *Batch) error {
	edges := map[edgeGroup][]any{}
	for i, e := range b.EdgeUpserts {
		g := edgeGroup{from: e.From.Label, typ: e.Type, to: e.To.Label, keyed: e.Key != ""}
		if err := checkEdge(g, e.From.ID, e.To.ID); err != nil {
			return fmt.Errorf("%s: row %d: %w", KindUpsertEdges, i, err)
		}
		props, err := s.o.props(s.d, e.Props)
		if err != nil {
			return fmt.Errorf("%s %s: row %d (%q->%q): %w", KindUpsertEdges, g, i, e.From.ID, e.To.ID, err)
		}
		row := map[string]any{"from": e.From.ID, "to": e.To.ID}
		if len(props) > 0 {
			g.props = true
			row["props"] = props
		}
		if g.keyed {
			row["key"] = e.Key
		}
		edges[g] = append(edges[g], row)
	}
	for _, g := range sortedEdgeGroups(edges) {
		q := "UNWIND $rows AS row MATCH " + nodePattern("a", g.from, "from") + ", " + nodePattern("b", g.to, "to") +
			" MERGE (a)-[e:" + QuoteName(g.typ) + g.keyPattern() + "]->(b)"
		if g.props {
			q += " SET e += row.props"
		}
		s.emit(KindUpsertEdges, g.String(), q, edges[g])
	}
	return nil
}

// pruneEdges emits EdgePrunes, a group per (from label, type, to label).
// keep is never nil (see Statements); without o.Inline it is a copy.
func (s *statements) pruneEdges(b *Batch) error {
	groups := map[edgeGroup][]any{}
	for i, p := range b.EdgePrunes {
		g := edgeGroup{from: p.From.Label, typ: p.Type, to: p.ToLabel}
		if err := checkEdge(g, p.From.ID, "-"); err != nil {
			return fmt.Errorf("%s: row %d: %w", KindPruneEdges, i, err)
		}
		keep := p.Keep
		if !s.o.Inline || keep == nil {
			keep = make([]string, len(p.Keep))
			copy(keep, p.Keep)
		}
		groups[g] = append(groups[g], map[string]any{"from": p.From.ID, "keep": keep})
	}
	for _, g := range sortedEdgeGroups(groups) {
		s.emit(KindPruneEdges, g.String(), "UNWIND $rows AS row MATCH "+nodePattern("a", g.from, "from")+"-[e:"+
			QuoteName(g.typ)+"]->(b:"+QuoteName(g.to)+") WHERE NOT b.id IN row.keep DELETE e", groups[g])
	}
	return nil
}

// deleteOrphans emits DeleteOrphans: placeholders no edge points to, a
// group per label.
func (s *statements) deleteOrphans(b *Batch) error {
	orphans := map[string][]any{}
	for i, n := range b.DeleteOrphans {
		if err := checkRef(n); err != nil {
			return fmt.Errorf("%s: row %d: %w", KindDeleteOrphans, i, err)
		}
		orphans[n.Label] = append(orphans[n.Label], map[string]any{"id": n.ID})
	}
	// Memgraph filters on a pattern with exists() (its WHERE clause docs;
	// bare pattern predicates came later); Neo4j 5 removed exists() on
	// patterns and takes the bare predicate.
	noEdges := "NOT exists((n)--())"
	if s.d.Name() == "neo4j" {
		noEdges = "NOT (n)--()"
	}
	for _, l := range sortedKeys(orphans) {
		s.emit(KindDeleteOrphans, l, "UNWIND $rows AS row MATCH "+nodePattern("n", l, "id")+" WHERE n._placeholder = true AND "+noEdges+" DETACH DELETE n", orphans[l])
	}
	return nil
}

type edgeGroup struct {
	from, typ, to string
	keyed         bool
	// props: the group's rows carry properties (edge upserts only).
	props bool
}

// String is the group as an edge pattern, e.g. "Doc-[HAS]->Chunk".
func (g edgeGroup) String() string { return g.from + "-[" + g.typ + g.keyPattern() + "]->" + g.to }

// keyPattern is the edge's property pattern when edges are keyed.
func (g edgeGroup) keyPattern() string {
	if g.keyed {
		return " {_key: row.key}"
	}
	return ""
}

func checkRef(n NodeRef) error {
	if err := ValidName(n.Label); err != nil {
		return fmt.Errorf("label: %w", err)
	}
	if n.ID == "" {
		return fmt.Errorf("label %q: empty id", n.Label)
	}
	return nil
}

func checkEdge(g edgeGroup, from, to string) error {
	if err := validNames(g.from, g.typ, g.to); err != nil {
		return fmt.Errorf("edge %s: %w", g, err)
	}
	if from == "" || to == "" {
		return fmt.Errorf("edge %s: empty id (from %q, to %q)", g, from, to)
	}
	return nil
}

func sortedKeys(m map[string][]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedEdgeGroups(m map[edgeGroup][]any) []edgeGroup {
	keys := make([]edgeGroup, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b edgeGroup) int {
		return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.typ, b.typ), cmp.Compare(a.to, b.to),
			boolCmp(a.keyed, b.keyed), boolCmp(a.props, b.props))
	})
	return keys
}

// props are the properties a row carries: normalizeProps, or with
// o.Inline props themselves once normalizeProps would take them.
func (o Options) props(d Dialect, props map[string]any) (map[string]any, error) {
	if !o.Inline {
		return normalizeProps(d, props)
	}
	if props == nil {
		return map[string]any{}, nil
	}
	for k, v := range props {
		if ValidName(k) != nil || !normalizable(d, v) {
			_, err := normalizeProps(d, props) // the error, as a driver's statements get it
			if err != nil {
				return nil, err
			}
			break
		}
	}
	return props, nil
}

// normalizable reports whether normalizeValue takes v; it allocates nothing.
func normalizable(d Dialect, v any) bool {
	switch v := v.(type) {
	case nil, bool, string, int64, int, int32, []int64, []string:
		return true
	case float64:
		return checkFloat(v) == nil
	case float32:
		return checkFloat(float64(v)) == nil
	case []float32:
		for _, f := range v {
			if checkFloat(float64(f)) != nil {
				return false
			}
		}
		return true
	case []float64:
		for _, f := range v {
			if checkFloat(f) != nil {
				return false
			}
		}
		return true
	case []any:
		for _, e := range v {
			if !normalizable(d, e) {
				return false
			}
		}
		return true
	case map[string]any:
		if !d.MapProperties() {
			return false
		}
		for k, e := range v {
			if ValidName(k) != nil || !normalizable(d, e) {
				return false
			}
		}
		return true
	}
	return false
}

// normalizeProps copies props with every value normalised (see Statements);
// nil props become an empty map. Of several bad properties, the error
// names the first in key order.
func normalizeProps(d Dialect, props map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(props))
	for k, v := range props {
		if ValidName(k) != nil {
			return nil, firstPropError(d, props)
		}
		n, err := normalizeValue(d, v)
		if err != nil {
			return nil, firstPropError(d, props)
		}
		out[k] = n
	}
	return out, nil
}

// firstPropError is the error of the first bad property of props in key
// order.
func firstPropError(d Dialect, props map[string]any) error {
	for _, k := range sortedPropKeys(props) {
		if err := ValidName(k); err != nil {
			return fmt.Errorf("property: %w", err)
		}
		if _, err := normalizeValue(d, props[k]); err != nil {
			return fmt.Errorf("property %q: %w", k, err)
		}
	}
	return nil
}

func sortedPropKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// normalizeValue returns v as the Statements parameters carry it: nil,
// bool, int64, float64, string, []float64, []int64, []string, []any or
// map[string]any (recursively normalised; map keys checked with ValidName).
func normalizeValue(d Dialect, v any) (any, error) {
	switch v := v.(type) {
	case nil, bool, string, int64:
		return v, nil
	case int:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case float64:
		return v, checkFloat(v)
	case float32:
		return float64(v), checkFloat(float64(v))
	case []float32:
		out := float64s(v)
		for _, f := range out {
			if err := checkFloat(f); err != nil {
				return nil, err
			}
		}
		return out, nil
	case []float64:
		for _, f := range v {
			if err := checkFloat(f); err != nil {
				return nil, err
			}
		}
		return slices.Clone(v), nil
	case []int64:
		return slices.Clone(v), nil
	case []string:
		return slices.Clone(v), nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			n, err := normalizeValue(d, e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = n
		}
		return out, nil
	case map[string]any:
		if !d.MapProperties() {
			return nil, fmt.Errorf("map value not storable in %s (serialise it, e.g. as JSON)", d.Name())
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			n, err := normalizeValue(d, e)
			if ValidName(k) != nil || err != nil {
				return nil, firstMapError(d, v)
			}
			out[k] = n
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported value type %T", v)
}

// firstMapError is the error of the first bad entry of a map value in key
// order.
func firstMapError(d Dialect, m map[string]any) error {
	for _, k := range sortedPropKeys(m) {
		if err := ValidName(k); err != nil {
			return fmt.Errorf("map key: %w", err)
		}
		if _, err := normalizeValue(d, m[k]); err != nil {
			return fmt.Errorf("%q: %w", k, err)
		}
	}
	return nil
}

func checkFloat(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("float %v has no Cypher representation", f)
	}
	return nil
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// neededPlaceholders marks the create-only upserts of ns that may create a
// node: the first of each node that no full upsert of ns names. It is nil
// when ns has no create-only upsert (every row is needed).
func neededPlaceholders(ns []NodeUpsert) []bool {
	if !slices.ContainsFunc(ns, func(n NodeUpsert) bool { return n.CreateOnly }) {
		return nil
	}
	seen := make(map[NodeRef]struct{}, len(ns))
	for _, n := range ns {
		if !n.CreateOnly {
			seen[NodeRef{Label: n.Label, ID: n.ID}] = struct{}{}
		}
	}
	needed := make([]bool, len(ns))
	for i, n := range ns {
		if !n.CreateOnly {
			continue
		}
		ref := NodeRef{Label: n.Label, ID: n.ID}
		if _, ok := seen[ref]; !ok {
			seen[ref] = struct{}{}
			needed[i] = true
		}
	}
	return needed
}
