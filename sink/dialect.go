package sink

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Statement kinds, used in Statement.Kind and in error messages.
const (
	KindDeleteNodes       = "delete nodes"
	KindDeleteEdges       = "delete edges"
	KindDeleteOrphans     = "delete orphans"
	KindUpsertNodes       = "upsert nodes"
	KindUpsertEdges       = "upsert edges"
	KindPruneEdges        = "prune edges"
	KindCreateIndex       = "create index"
	KindCreateVectorIndex = "create vector index"
	KindDropVectorIndex   = "drop vector index"
	KindRemoveProperty    = "remove property"
	KindShowIndexes       = "show indexes"
	KindVectorSearch      = "vector search"
	KindCreateTextIndex   = "create text index"
	KindTextSearch        = "text search"
	KindShowVersion       = "show version"
	KindProbe             = "probe"
	KindCountVectors      = "count vectors"
)

// DefaultVectorCapacity is the vector index capacity used when
// VectorIndex.Capacity is 0. Memgraph requires a capacity and grows the index
// by its resize coefficient when it is full (docs/memgraph.md §4).
const DefaultVectorCapacity = 1000

// MaxVectorDimension is the largest vector index dimension Memgraph stores
// (a 16-bit unsigned field, docs/memgraph.md §4).
const MaxVectorDimension = 65535

// Statement is one Cypher statement with its parameters.
type Statement struct {
	// Query is the Cypher text, one line, without a trailing ';'. Every
	// identifier in it went through ValidName and QuoteName.
	Query string
	// Params are the values, referenced in Query as $name; nil when none.
	Params map[string]any
	// Kind is what the statement does, one of the Kind* constants.
	Kind string
	// Target is what it works on, for error messages: a label, an edge
	// pattern "From-[TYPE]->To", or an index name.
	Target string
}

// Dialect produces the Cypher that differs between graph databases. The
// batched UNWIND statements of a Batch are the same in every dialect
// (Statements); indexes, their listing and vector search are not
// (docs/memgraph.md §3, §4, §10). Implementations: Memgraph and Neo4j.
//
// Every DDL statement must be run as an auto-commit (implicit) transaction:
// Memgraph refuses index DDL and SHOW … INFO inside explicit transactions
// (docs/memgraph.md §2).
type Dialect interface {
	// Name is "memgraph" or "neo4j".
	Name() string
	// CreateIndex is the label-property index statement for ix.
	CreateIndex(ix Index) (Statement, error)
	// CreateVectorIndex is the node vector index statement for vi. A zero
	// Capacity becomes DefaultVectorCapacity, an empty Metric "cos".
	CreateVectorIndex(vi VectorIndex) (Statement, error)
	// DropVectorIndex drops the vector index called name.
	DropVectorIndex(name string) (Statement, error)
	// RemoveVectorProperty removes property from every label node of
	// pipeline (PropPipeline) that has it — with keep > 0, only where it is
	// not a list of keep values (the vectors a new index of dimension keep
	// would refuse); other pipelines' nodes keep theirs. With limit > 0 it touches at most limit nodes, takes $limit
	// and returns one row with column "removed" (the number of nodes
	// changed), so a caller repeats it until removed is 0; with limit <= 0
	// it is one statement for all nodes (for files).
	RemoveVectorProperty(label, property, pipeline string, keep, limit int) (Statement, error)
	// CountVectors counts the label nodes of other pipelines than pipeline
	// (or of none) that have property, by owner and vector length: rows
	// with columns "pipeline" (a string, or null), "dimension" (integer)
	// and "nodes" (integer). It tells whether a vector index is shared.
	CountVectors(label, property, pipeline string) (Statement, error)
	// ShowVersion asks the server for its version; ParseVersion reads the
	// answer.
	ShowVersion() Statement
	// ParseVersion returns the version string of ShowVersion's result,
	// e.g. "3.8.1".
	ParseVersion(fields []string, rows [][]any) (string, error)
	// ShowIndexes lists the label-property indexes; ParseIndexes reads its
	// result.
	ShowIndexes() Statement
	// ShowVectorIndexes lists the vector indexes; ParseVectorIndexes reads
	// its result.
	ShowVectorIndexes() Statement
	// ParseIndexes returns the single-property label-property indexes among
	// the rows of ShowIndexes (fields are the column names). Other index
	// kinds are skipped.
	ParseIndexes(fields []string, rows [][]any) ([]Index, error)
	// ParseVectorIndexes returns the node vector indexes among the rows of
	// ShowVectorIndexes (Name, Label, Property, Dimension, Metric and, where
	// reported, Capacity).
	ParseVectorIndexes(fields []string, rows [][]any) ([]VectorIndex, error)
	// VectorSearch asks the vector index called index for the fetch nodes
	// nearest to vec (fetch < k means k) and keeps those owned by pipeline
	// (PropPipeline): a vector index holds every pipeline's nodes of its
	// label. The answer is one row with columns "fetched" (how many nodes
	// the index returned, an integer) and "hits" (a list of [id,
	// similarity] pairs of the pipeline's nodes, similarity a float,
	// larger is nearer; in no promised order).
	VectorSearch(index, pipeline string, k, fetch int, vec []float32) (Statement, error)
	// CreateTextIndex is the full-text index statement for ti.
	CreateTextIndex(ti TextIndex) (Statement, error)
	// ParseTextIndexes returns the node full-text indexes among the rows
	// of ShowIndexes.
	ParseTextIndexes(fields []string, rows [][]any) ([]TextIndex, error)
	// TextSearch asks the full-text index called index for the limit
	// best nodes whose property matches any of terms (words of letters and
	// digits only, as the lexical analyzer makes them) and keeps those of
	// pipeline (PropPipeline): a text index holds every pipeline's nodes
	// of its label. The answer is one row with columns "fetched" (how many
	// nodes the index returned, an integer; fewer than limit means the
	// index had no more) and "hits" (a list of [id, score] pairs of the
	// pipeline's nodes, score BM25, larger is better; in no promised
	// order).
	TextSearch(index, property, pipeline string, terms []string, limit int) (Statement, error)
	// MapProperties reports whether property values may be maps: yes in
	// Memgraph, no in Neo4j (docs/memgraph.md §10). Statements rejects map
	// values for a dialect that answers false.
	MapProperties() bool
}

// MemgraphDialect is the Dialect of Memgraph 3.1 and later (native index
// syntax; CREATE VECTOR INDEX came in 3.0, SHOW VECTOR INDEX INFO in 3.1;
// docs/memgraph.md §0, §4). docs/memgraph-support.md lists what kgsync
// needs of each version and of the server's flags.
type MemgraphDialect struct{}

// Neo4jDialect is the Dialect of Neo4j 5 (CREATE … IF NOT EXISTS FOR … ON …,
// SHOW INDEXES, db.index.vector.queryNodes; vector indexes need 5.15).
type Neo4jDialect struct{}

// Memgraph and Neo4j are the two dialects.
var (
	Memgraph Dialect = MemgraphDialect{}
	Neo4j    Dialect = Neo4jDialect{}
)

// DialectByName returns the dialect called name ("memgraph" or "neo4j").
func DialectByName(name string) (Dialect, error) {
	switch name {
	case "memgraph":
		return Memgraph, nil
	case "neo4j":
		return Neo4j, nil
	}
	return nil, fmt.Errorf("unknown dialect %q: want memgraph or neo4j", name)
}

// Validate checks every name of the schema with ValidName and every vector
// index's dimension (1..MaxVectorDimension), capacity (>= 0) and metric
// ("", "cos", "l2sq", "ip"). Errors name the index.
func (s Schema) Validate() error {
	var errs []error
	for i, ix := range s.Indexes {
		if err := validNames(ix.Label, ix.Property); err != nil {
			errs = append(errs, fmt.Errorf("indexes[%d]: %w", i, err))
		}
	}
	for i, ti := range s.TextIndexes {
		if err := validTextIndex(ti); err != nil {
			errs = append(errs, fmt.Errorf("text_indexes[%d]: %w", i, err))
		}
	}
	names := map[string]bool{}
	for i, vi := range s.VectorIndexes {
		if err := validVectorIndex(vi); err != nil {
			errs = append(errs, fmt.Errorf("vector_indexes[%d]: %w", i, err))
		}
		if names[vi.Name] {
			errs = append(errs, fmt.Errorf("vector_indexes[%d]: duplicate name %q", i, vi.Name))
		}
		names[vi.Name] = true
	}
	return errors.Join(errs...)
}

func validNames(names ...string) error {
	for _, n := range names {
		if err := ValidName(n); err != nil {
			return err
		}
	}
	return nil
}

func validVectorIndex(vi VectorIndex) error {
	if err := validNames(vi.Name, vi.Label, vi.Property); err != nil {
		return fmt.Errorf("vector index %q: %w", vi.Name, err)
	}
	if vi.Dimension < 1 || vi.Dimension > MaxVectorDimension {
		return fmt.Errorf("vector index %q: dimension %d out of range 1..%d", vi.Name, vi.Dimension, MaxVectorDimension)
	}
	if vi.Capacity < 0 {
		return fmt.Errorf("vector index %q: negative capacity %d", vi.Name, vi.Capacity)
	}
	switch vi.Metric {
	case "", "cos", "l2sq", "ip":
	default:
		return fmt.Errorf("vector index %q: unknown metric %q: want cos, l2sq or ip", vi.Name, vi.Metric)
	}
	return nil
}

func validTextIndex(ti TextIndex) error {
	if err := validNames(append([]string{ti.Name, ti.Label}, ti.Properties...)...); err != nil {
		return fmt.Errorf("text index %q: %w", ti.Name, err)
	}
	if len(ti.Properties) == 0 {
		return fmt.Errorf("text index %q: no properties", ti.Name)
	}
	return nil
}

// textSearch checks a text search's arguments and builds its statement
// from the dialect's query text and term syntax (term → query clause,
// clauses joined by " OR ").
func textSearch(call, index, property, pipeline string, terms []string, limit int, clause func(string) string) (Statement, error) {
	if err := validNames(index, property, pipeline); err != nil {
		return Statement{}, fmt.Errorf("text search: %w", err)
	}
	if limit < 1 {
		return Statement{}, fmt.Errorf("text search %q: limit = %d, want >= 1", index, limit)
	}
	if len(terms) == 0 {
		return Statement{}, fmt.Errorf("text search %q: no terms", index)
	}
	parts := make([]string, len(terms))
	for i, t := range terms {
		if t == "" || strings.IndexFunc(t, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0 {
			return Statement{}, fmt.Errorf("text search %q: term %q is not a word of letters and digits", index, t)
		}
		parts[i] = clause(t)
	}
	return Statement{
		Query: call + " YIELD node, score " +
			"WITH count(node) AS fetched, collect(CASE WHEN node." + PropPipeline + " = $pipeline THEN [node.id, score] END) AS hits " +
			"RETURN fetched, hits",
		Params: map[string]any{"index": index, "query": strings.Join(parts, " OR "), "limit": int64(limit), "pipeline": pipeline},
		Kind:   KindTextSearch,
		Target: index,
	}, nil
}

func removeProperty(label, property, pipeline string, keep, limit int) (Statement, error) {
	if err := validNames(label, property, pipeline); err != nil {
		return Statement{}, fmt.Errorf("remove property: %w", err)
	}
	l, p := QuoteName(label), QuoteName(property)
	st := Statement{Kind: KindRemoveProperty, Target: label, Params: map[string]any{"pipeline": pipeline}}
	match := "MATCH (n:" + l + ") WHERE n." + PropPipeline + " = $pipeline AND n." + p + " IS NOT NULL "
	if keep > 0 {
		match += "AND size(n." + p + ") <> $dimension "
		st.Params["dimension"] = int64(keep)
	}
	if limit <= 0 {
		st.Query = match + "REMOVE n." + p
		return st, nil
	}
	st.Query = match + "WITH n LIMIT $limit REMOVE n." + p + " RETURN count(n) AS removed"
	st.Params["limit"] = int64(limit)
	return st, nil
}

func countVectors(label, property, pipeline string) (Statement, error) {
	if err := validNames(label, property, pipeline); err != nil {
		return Statement{}, fmt.Errorf("count vectors: %w", err)
	}
	p := QuoteName(property)
	return Statement{
		Query: "MATCH (n:" + QuoteName(label) + ") WHERE n." + p + " IS NOT NULL AND (n." + PropPipeline + " IS NULL OR n." +
			PropPipeline + " <> $pipeline) RETURN n." + PropPipeline + " AS pipeline, size(n." + p + ") AS dimension, count(*) AS nodes",
		Params: map[string]any{"pipeline": pipeline},
		Kind:   KindCountVectors,
		Target: label,
	}, nil
}

func vectorSearch(call, sim, index, pipeline string, k, fetch int, vec []float32) (Statement, error) {
	if err := validNames(index, pipeline); err != nil {
		return Statement{}, fmt.Errorf("vector search: %w", err)
	}
	if k < 1 {
		return Statement{}, fmt.Errorf("vector search %q: k = %d, want >= 1", index, k)
	}
	if len(vec) == 0 {
		return Statement{}, fmt.Errorf("vector search %q: empty query vector", index)
	}
	return Statement{
		Query: call + " WITH count(node) AS fetched, collect(CASE WHEN node." + PropPipeline + " = $pipeline THEN [node.id, " + sim + "] END) AS hits " +
			"RETURN fetched, hits",
		Params: map[string]any{"index": index, "pipeline": pipeline, "fetch": int64(max(k, fetch)), "vec": float64s(vec)},
		Kind:   KindVectorSearch,
		Target: index,
	}, nil
}

// Name implements Dialect.
func (MemgraphDialect) Name() string { return "memgraph" }

// MapProperties implements Dialect: Memgraph stores map values.
func (MemgraphDialect) MapProperties() bool { return true }

// CreateIndex implements Dialect: CREATE INDEX ON :`L`(`p`), a no-op with a
// notification when the index exists (docs/memgraph.md §3).
func (MemgraphDialect) CreateIndex(ix Index) (Statement, error) {
	if err := validNames(ix.Label, ix.Property); err != nil {
		return Statement{}, fmt.Errorf("create index: %w", err)
	}
	return Statement{
		Query:  "CREATE INDEX ON :" + QuoteName(ix.Label) + "(" + QuoteName(ix.Property) + ")",
		Kind:   KindCreateIndex,
		Target: ix.Label,
	}, nil
}

// CreateVectorIndex implements Dialect: CREATE VECTOR INDEX `name` ON
// :`L`(`p`) WITH CONFIG {"dimension": D, "capacity": C, "metric": "m"}
// (docs/memgraph.md §4). The config is written literally, not as a
// parameter, since parameters there need Memgraph 3.10.
func (MemgraphDialect) CreateVectorIndex(vi VectorIndex) (Statement, error) {
	if err := validVectorIndex(vi); err != nil {
		return Statement{}, fmt.Errorf("create vector index: %w", err)
	}
	capacity, metric := vi.Capacity, vi.Metric
	if capacity == 0 {
		capacity = DefaultVectorCapacity
	}
	if metric == "" {
		metric = "cos"
	}
	return Statement{
		Query: "CREATE VECTOR INDEX " + QuoteName(vi.Name) + " ON :" + QuoteName(vi.Label) + "(" + QuoteName(vi.Property) +
			`) WITH CONFIG {"dimension": ` + strconv.Itoa(vi.Dimension) + `, "capacity": ` + strconv.Itoa(capacity) +
			`, "metric": "` + metric + `"}`,
		Kind:   KindCreateVectorIndex,
		Target: vi.Name,
	}, nil
}

// DropVectorIndex implements Dialect: DROP VECTOR INDEX `name`.
func (MemgraphDialect) DropVectorIndex(name string) (Statement, error) {
	if err := ValidName(name); err != nil {
		return Statement{}, fmt.Errorf("drop vector index: %w", err)
	}
	return Statement{Query: "DROP VECTOR INDEX " + QuoteName(name), Kind: KindDropVectorIndex, Target: name}, nil
}

// RemoveVectorProperty implements Dialect.
func (MemgraphDialect) RemoveVectorProperty(label, property, pipeline string, keep, limit int) (Statement, error) {
	return removeProperty(label, property, pipeline, keep, limit)
}

// CountVectors implements Dialect.
func (MemgraphDialect) CountVectors(label, property, pipeline string) (Statement, error) {
	return countVectors(label, property, pipeline)
}

// ShowVersion implements Dialect: SHOW VERSION (every 3.x; one column
// "version", auto-commit only; Memgraph src/query/interpreter.cpp
// PrepareVersionQuery).
func (MemgraphDialect) ShowVersion() Statement {
	return Statement{Query: "SHOW VERSION", Kind: KindShowVersion, Target: "server"}
}

// ParseVersion implements Dialect for SHOW VERSION.
func (MemgraphDialect) ParseVersion(fields []string, rows [][]any) (string, error) {
	return parseVersion("SHOW VERSION", fields, rows)
}

func parseVersion(what string, fields []string, rows [][]any) (string, error) {
	cols, err := columns(fields, "version")
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", what, err)
	}
	if len(rows) == 0 || len(rows[0]) <= cols[0] {
		return "", fmt.Errorf("parse %s: no row", what)
	}
	v, ok := rows[0][cols[0]].(string)
	if !ok {
		return "", fmt.Errorf("parse %s: version is %T, want string", what, rows[0][cols[0]])
	}
	return v, nil
}

// ShowIndexes implements Dialect: SHOW INDEX INFO.
func (MemgraphDialect) ShowIndexes() Statement {
	return Statement{Query: "SHOW INDEX INFO", Kind: KindShowIndexes, Target: "indexes"}
}

// ShowVectorIndexes implements Dialect: SHOW VECTOR INDEX INFO (Memgraph
// 3.1 and later).
func (MemgraphDialect) ShowVectorIndexes() Statement {
	return Statement{Query: "SHOW VECTOR INDEX INFO", Kind: KindShowIndexes, Target: "vector indexes"}
}

// ParseIndexes implements Dialect for SHOW INDEX INFO: columns "index type",
// "label", "property". Rows of type "label+property" are kept; "property"
// is a list of strings from Memgraph 3.2 and a string before
// (docs/memgraph.md §3); composite indexes are skipped.
func (MemgraphDialect) ParseIndexes(fields []string, rows [][]any) ([]Index, error) {
	cols, err := columns(fields, "index type", "label", "property")
	if err != nil {
		return nil, fmt.Errorf("parse SHOW INDEX INFO: %w", err)
	}
	var out []Index
	for i, row := range rows {
		if len(row) != len(fields) {
			return nil, fmt.Errorf("parse SHOW INDEX INFO: row %d has %d values, want %d", i, len(row), len(fields))
		}
		typ, _ := row[cols[0]].(string)
		if typ != "label+property" {
			continue
		}
		label, ok := row[cols[1]].(string)
		if !ok {
			return nil, fmt.Errorf("parse SHOW INDEX INFO: row %d: label is %T, want string", i, row[cols[1]])
		}
		prop, ok := singleString(row[cols[2]])
		if !ok {
			continue // composite index
		}
		out = append(out, Index{Label: label, Property: prop})
	}
	return out, nil
}

// ParseVectorIndexes implements Dialect for SHOW VECTOR INDEX INFO: columns
// index_name, label, property, capacity, dimension, metric (docs/memgraph.md
// §4). A label shown as ":L" (3.11 and later) is returned as "L"; rows whose
// index_type names an edge index are skipped.
func (MemgraphDialect) ParseVectorIndexes(fields []string, rows [][]any) ([]VectorIndex, error) {
	cols, err := columns(fields, "index_name", "label", "property", "dimension")
	if err != nil {
		return nil, fmt.Errorf("parse SHOW VECTOR INDEX INFO: %w", err)
	}
	optional := optionalColumns(fields, "capacity", "metric", "index_type")
	var out []VectorIndex
	for i, row := range rows {
		if len(row) != len(fields) {
			return nil, fmt.Errorf("parse SHOW VECTOR INDEX INFO: row %d has %d values, want %d", i, len(row), len(fields))
		}
		if c := optional["index_type"]; c >= 0 {
			if t, _ := row[c].(string); strings.Contains(t, "edge") {
				continue
			}
		}
		name, ok1 := row[cols[0]].(string)
		label, ok2 := row[cols[1]].(string)
		prop, ok3 := singleString(row[cols[2]])
		dim, ok4 := toInt(row[cols[3]])
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, fmt.Errorf("parse SHOW VECTOR INDEX INFO: row %d: unexpected value types %T, %T, %T, %T",
				i, row[cols[0]], row[cols[1]], row[cols[2]], row[cols[3]])
		}
		vi := VectorIndex{Name: name, Label: strings.TrimPrefix(label, ":"), Property: prop, Dimension: dim}
		if c := optional["capacity"]; c >= 0 {
			vi.Capacity, _ = toInt(row[c])
		}
		if c := optional["metric"]; c >= 0 {
			m, _ := row[c].(string)
			vi.Metric = memgraphMetric(m)
		}
		out = append(out, vi)
	}
	return out, nil
}

// memgraphMetric maps Memgraph's metric aliases to the names VectorIndex
// uses (docs/memgraph.md §4, MetricFromName).
func memgraphMetric(m string) string {
	switch strings.ToLower(m) {
	case "cos", "angular", "cosine":
		return "cos"
	case "l2sq", "euclidean_sq":
		return "l2sq"
	case "ip", "inner", "dot", "inner_product":
		return "ip"
	}
	return strings.ToLower(m)
}

// VectorSearch implements Dialect with vector_search.search, which yields
// node, distance and similarity (docs/memgraph.md §4).
func (MemgraphDialect) VectorSearch(index, pipeline string, k, fetch int, vec []float32) (Statement, error) {
	return vectorSearch("CALL vector_search.search($index, $fetch, $vec) YIELD node, similarity", "similarity", index, pipeline, k, fetch, vec)
}

// CreateTextIndex implements Dialect: CREATE TEXT INDEX `name` ON
// :`L`(`p`, …), auto-commit only, with no IF NOT EXISTS (a duplicate name
// is a notification from 3.6; refused in analytical mode;
// docs/memgraph-text-search.md).
func (MemgraphDialect) CreateTextIndex(ti TextIndex) (Statement, error) {
	if err := validTextIndex(ti); err != nil {
		return Statement{}, fmt.Errorf("create text index: %w", err)
	}
	props := make([]string, len(ti.Properties))
	for i, p := range ti.Properties {
		props[i] = QuoteName(p)
	}
	return Statement{
		Query:  "CREATE TEXT INDEX " + QuoteName(ti.Name) + " ON :" + QuoteName(ti.Label) + "(" + strings.Join(props, ", ") + ")",
		Kind:   KindCreateTextIndex,
		Target: ti.Name,
	}, nil
}

// ParseTextIndexes implements Dialect for SHOW INDEX INFO: text index rows
// have index type "label_text (name: N)" (3.6 and later), the label and
// the property list.
func (MemgraphDialect) ParseTextIndexes(fields []string, rows [][]any) ([]TextIndex, error) {
	cols, err := columns(fields, "index type", "label", "property")
	if err != nil {
		return nil, fmt.Errorf("parse SHOW INDEX INFO: %w", err)
	}
	var out []TextIndex
	for _, row := range rows {
		if len(row) != len(fields) {
			continue
		}
		typ, _ := row[cols[0]].(string)
		rest, ok := strings.CutPrefix(typ, "label_text (name: ")
		if !ok || !strings.HasSuffix(rest, ")") {
			continue
		}
		ti := TextIndex{Name: strings.TrimSuffix(rest, ")")}
		ti.Label, _ = row[cols[1]].(string)
		switch p := row[cols[2]].(type) {
		case string:
			ti.Properties = []string{p}
		case []any:
			for _, v := range p {
				if s, ok := v.(string); ok {
					ti.Properties = append(ti.Properties, s)
				}
			}
		}
		out = append(out, ti)
	}
	return out, nil
}

// TextSearch implements Dialect with text_search.search, whose query is
// Tantivy's query syntax with property names prefixed by "data." and whose
// config map takes the limit (3.11 and later; 3.6–3.10 took it as a third
// positional argument); it yields node and a BM25 score (docs/memgraph.md
// §8). The pipeline is kept by a Cypher filter after the call: the text
// indexes hold one property, so a Tantivy clause on data._pipeline would
// match nothing, and Tantivy's tokenizer would split a pipeline name at
// its punctuation anyway (docs/memgraph-text-search.md).
func (MemgraphDialect) TextSearch(index, property, pipeline string, terms []string, limit int) (Statement, error) {
	return textSearch("CALL text_search.search($index, $query, {limit: $limit})",
		index, property, pipeline, terms, limit, func(t string) string { return "data." + property + ":" + t })
}

// Name implements Dialect.
func (Neo4jDialect) Name() string { return "neo4j" }

// CreateTextIndex implements Dialect: CREATE FULLTEXT INDEX `name` IF NOT
// EXISTS FOR (n:`L`) ON EACH [n.`p`, …] (docs/memgraph.md §10).
func (Neo4jDialect) CreateTextIndex(ti TextIndex) (Statement, error) {
	if err := validTextIndex(ti); err != nil {
		return Statement{}, fmt.Errorf("create text index: %w", err)
	}
	props := make([]string, len(ti.Properties))
	for i, p := range ti.Properties {
		props[i] = "n." + QuoteName(p)
	}
	return Statement{
		Query: "CREATE FULLTEXT INDEX " + QuoteName(ti.Name) + " IF NOT EXISTS FOR (n:" + QuoteName(ti.Label) + ") ON EACH [" +
			strings.Join(props, ", ") + "]",
		Kind:   KindCreateTextIndex,
		Target: ti.Name,
	}, nil
}

// ParseTextIndexes implements Dialect: rows of SHOW INDEXES with type
// FULLTEXT and entityType NODE with one label.
func (Neo4jDialect) ParseTextIndexes(fields []string, rows [][]any) ([]TextIndex, error) {
	cols, err := columns(fields, "name", "type", "entityType", "labelsOrTypes", "properties")
	if err != nil {
		return nil, fmt.Errorf("parse SHOW INDEXES: %w", err)
	}
	var out []TextIndex
	for _, row := range rows {
		if len(row) != len(fields) || row[cols[1]] != "FULLTEXT" || row[cols[2]] != "NODE" {
			continue
		}
		name, _ := row[cols[0]].(string)
		label, ok := singleString(row[cols[3]])
		if !ok {
			continue
		}
		ti := TextIndex{Name: name, Label: label}
		if ps, ok := row[cols[4]].([]any); ok {
			for _, v := range ps {
				if s, ok := v.(string); ok {
					ti.Properties = append(ti.Properties, s)
				}
			}
		}
		out = append(out, ti)
	}
	return out, nil
}

// TextSearch implements Dialect with db.index.fulltext.queryNodes and a
// Lucene query of the terms (the index has one property, so no field
// names); score is Lucene's BM25.
func (Neo4jDialect) TextSearch(index, property, pipeline string, terms []string, limit int) (Statement, error) {
	return textSearch("CALL db.index.fulltext.queryNodes($index, $query, {limit: $limit})",
		index, property, pipeline, terms, limit, func(t string) string { return t })
}

// MapProperties implements Dialect: Neo4j stores only primitives and lists of
// them (docs/memgraph.md §10).
func (Neo4jDialect) MapProperties() bool { return false }

// CreateIndex implements Dialect: CREATE INDEX IF NOT EXISTS FOR (n:`L`) ON
// (n.`p`) (docs/memgraph.md §10; Memgraph 3.10 also accepts it).
func (Neo4jDialect) CreateIndex(ix Index) (Statement, error) {
	if err := validNames(ix.Label, ix.Property); err != nil {
		return Statement{}, fmt.Errorf("create index: %w", err)
	}
	return Statement{
		Query:  "CREATE INDEX IF NOT EXISTS FOR (n:" + QuoteName(ix.Label) + ") ON (n." + QuoteName(ix.Property) + ")",
		Kind:   KindCreateIndex,
		Target: ix.Label,
	}, nil
}

// CreateVectorIndex implements Dialect with the OPTIONS form; metric "cos"
// is similarity 'cosine' and "l2sq" 'euclidean' (whose score 1/(1+d²)
// equals Memgraph's l2sq similarity); Neo4j has no inner product index, so
// "ip" is an error (docs/memgraph.md §10). Capacity does not apply.
func (Neo4jDialect) CreateVectorIndex(vi VectorIndex) (Statement, error) {
	if err := validVectorIndex(vi); err != nil {
		return Statement{}, fmt.Errorf("create vector index: %w", err)
	}
	var sim string
	switch vi.Metric {
	case "", "cos":
		sim = "cosine"
	case "l2sq":
		sim = "euclidean"
	default:
		return Statement{}, fmt.Errorf("create vector index %q: metric %q has no Neo4j similarity function", vi.Name, vi.Metric)
	}
	return Statement{
		Query: "CREATE VECTOR INDEX " + QuoteName(vi.Name) + " IF NOT EXISTS FOR (n:" + QuoteName(vi.Label) + ") ON n." +
			QuoteName(vi.Property) + " OPTIONS {indexConfig: {`vector.dimensions`: " + strconv.Itoa(vi.Dimension) +
			", `vector.similarity_function`: '" + sim + "'}}",
		Kind:   KindCreateVectorIndex,
		Target: vi.Name,
	}, nil
}

// DropVectorIndex implements Dialect: DROP INDEX `name` IF EXISTS.
func (Neo4jDialect) DropVectorIndex(name string) (Statement, error) {
	if err := ValidName(name); err != nil {
		return Statement{}, fmt.Errorf("drop vector index: %w", err)
	}
	return Statement{Query: "DROP INDEX " + QuoteName(name) + " IF EXISTS", Kind: KindDropVectorIndex, Target: name}, nil
}

// RemoveVectorProperty implements Dialect.
func (Neo4jDialect) RemoveVectorProperty(label, property, pipeline string, keep, limit int) (Statement, error) {
	return removeProperty(label, property, pipeline, keep, limit)
}

// CountVectors implements Dialect.
func (Neo4jDialect) CountVectors(label, property, pipeline string) (Statement, error) {
	return countVectors(label, property, pipeline)
}

// ShowVersion implements Dialect with dbms.components().
func (Neo4jDialect) ShowVersion() Statement {
	return Statement{Query: "CALL dbms.components() YIELD versions RETURN versions[0] AS version",
		Kind: KindShowVersion, Target: "server"}
}

// ParseVersion implements Dialect.
func (Neo4jDialect) ParseVersion(fields []string, rows [][]any) (string, error) {
	return parseVersion("dbms.components()", fields, rows)
}

const neo4jShowIndexes = "SHOW INDEXES YIELD name, type, entityType, labelsOrTypes, properties, options"

// ShowIndexes implements Dialect: SHOW INDEXES with the columns
// ParseIndexes reads.
func (Neo4jDialect) ShowIndexes() Statement {
	return Statement{Query: neo4jShowIndexes, Kind: KindShowIndexes, Target: "indexes"}
}

// ShowVectorIndexes implements Dialect: the same SHOW INDEXES, filtered by
// ParseVectorIndexes.
func (Neo4jDialect) ShowVectorIndexes() Statement {
	return Statement{Query: neo4jShowIndexes, Kind: KindShowIndexes, Target: "vector indexes"}
}

// ParseIndexes implements Dialect: rows with type RANGE, entityType NODE
// and one label and one property.
func (Neo4jDialect) ParseIndexes(fields []string, rows [][]any) ([]Index, error) {
	cols, err := columns(fields, "type", "entityType", "labelsOrTypes", "properties")
	if err != nil {
		return nil, fmt.Errorf("parse SHOW INDEXES: %w", err)
	}
	var out []Index
	for i, row := range rows {
		if len(row) != len(fields) {
			return nil, fmt.Errorf("parse SHOW INDEXES: row %d has %d values, want %d", i, len(row), len(fields))
		}
		if row[cols[0]] != "RANGE" || row[cols[1]] != "NODE" {
			continue
		}
		label, ok1 := singleString(row[cols[2]])
		prop, ok2 := singleString(row[cols[3]])
		if ok1 && ok2 {
			out = append(out, Index{Label: label, Property: prop})
		}
	}
	return out, nil
}

// ParseVectorIndexes implements Dialect: rows with type VECTOR and
// entityType NODE; dimension and similarity come from
// options.indexConfig."vector.dimensions" and
// ."vector.similarity_function" (cosine → "cos", euclidean → "l2sq").
func (Neo4jDialect) ParseVectorIndexes(fields []string, rows [][]any) ([]VectorIndex, error) {
	cols, err := columns(fields, "name", "type", "entityType", "labelsOrTypes", "properties", "options")
	if err != nil {
		return nil, fmt.Errorf("parse SHOW INDEXES: %w", err)
	}
	var out []VectorIndex
	for i, row := range rows {
		if len(row) != len(fields) {
			return nil, fmt.Errorf("parse SHOW INDEXES: row %d has %d values, want %d", i, len(row), len(fields))
		}
		if row[cols[1]] != "VECTOR" || row[cols[2]] != "NODE" {
			continue
		}
		name, _ := row[cols[0]].(string)
		label, ok1 := singleString(row[cols[3]])
		prop, ok2 := singleString(row[cols[4]])
		if !ok1 || !ok2 {
			continue
		}
		vi := VectorIndex{Name: name, Label: label, Property: prop}
		opts, _ := row[cols[5]].(map[string]any)
		cfg, _ := opts["indexConfig"].(map[string]any)
		dim, ok := toInt(cfg["vector.dimensions"])
		if !ok {
			return nil, fmt.Errorf("parse SHOW INDEXES: row %d (%q): no vector.dimensions in options", i, name)
		}
		vi.Dimension = dim
		switch sim, _ := cfg["vector.similarity_function"].(string); strings.ToLower(sim) {
		case "cosine":
			vi.Metric = "cos"
		case "euclidean":
			vi.Metric = "l2sq"
		default:
			vi.Metric = strings.ToLower(sim)
		}
		out = append(out, vi)
	}
	return out, nil
}

// VectorSearch implements Dialect with db.index.vector.queryNodes, whose
// score is returned as similarity (docs/memgraph.md §10).
func (Neo4jDialect) VectorSearch(index, pipeline string, k, fetch int, vec []float32) (Statement, error) {
	return vectorSearch("CALL db.index.vector.queryNodes($index, $fetch, $vec) YIELD node, score", "score", index, pipeline, k, fetch, vec)
}

// columns returns the positions of the named columns in fields.
func columns(fields []string, names ...string) ([]int, error) {
	out := make([]int, len(names))
	for i, n := range names {
		out[i] = -1
		for j, f := range fields {
			if f == n {
				out[i] = j
				break
			}
		}
		if out[i] < 0 {
			return nil, fmt.Errorf("no column %q among %q", n, fields)
		}
	}
	return out, nil
}

// optionalColumns returns the position of each named column, -1 if absent.
func optionalColumns(fields []string, names ...string) map[string]int {
	out := make(map[string]int, len(names))
	for _, n := range names {
		out[n] = -1
		for j, f := range fields {
			if f == n {
				out[n] = j
				break
			}
		}
	}
	return out
}

// singleString reads a string, or a list holding exactly one string.
func singleString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []any:
		if len(v) == 1 {
			s, ok := v[0].(string)
			return s, ok
		}
	case []string:
		if len(v) == 1 {
			return v[0], true
		}
	}
	return "", false
}

func toInt(v any) (int, bool) {
	switch v := v.(type) {
	case int64:
		return int(v), true
	case int:
		return v, true
	case int32:
		return int(v), true
	case float64:
		if v == float64(int(v)) {
			return int(v), true
		}
	}
	return 0, false
}

func float64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out
}
