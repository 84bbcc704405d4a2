package config

// Model is a pipeline's data model (Minimal Modeling, as in the Semantic RAG
// article): anchors (entity types → node labels), their attributes
// (properties, possibly embeddable) and links (relations → edge types). It is
// both what kgsync writes and what an assistant reads (`kgsync schema`).
//
// Without a model (or for tables it does not list) the default mapping
// applies: each table is an anchor named after it, each column an attribute,
// each Ref/RefList column a link named after it.
type Model struct {
	// LongTextTokens is the size above which an embeddable attribute's text
	// is chunked into (:Chunk) nodes linked to the row's node instead of
	// getting a vector property on the node (default 256).
	LongTextTokens int `yaml:"long_text_tokens,omitempty"`
	// Anchors configure tables as anchors.
	Anchors []Anchor `yaml:"anchors,omitempty"`
	// LinkTables are tables whose rows connect two anchors: each row becomes
	// an edge whose properties are the row's other columns.
	LinkTables []LinkTable `yaml:"link_tables,omitempty"`
	// MandatoryTables are tables (Grist, CSV) whose rows are mandatory
	// links between document elements, kept by experts beside the
	// documents; they add to the pipeline's `mandatory` list.
	MandatoryTables []MandatoryTable `yaml:"mandatory_tables,omitempty"`
}

// MandatoryTable reads mandatory links from a table: each row names two
// element addresses (as in Mandatory) and an optional note.
type MandatoryTable struct {
	// Table is the source table id.
	Table string `yaml:"table"`
	// From and To are the columns holding the two addresses.
	From string `yaml:"from"`
	To   string `yaml:"to"`
	// Note is the column holding why (optional).
	Note string `yaml:"note,omitempty"`
}

// Anchor maps a source table to a node label.
type Anchor struct {
	// Name is the anchor, used as the node label, e.g. "cn_code".
	Name string `yaml:"name"`
	// Table is the source table id it maps (default: Name).
	Table string `yaml:"table,omitempty"`
	// Description says what one node is, for the assistant's prompt.
	Description string `yaml:"description,omitempty"`
	// QueryExample is a Cypher query an assistant can adapt.
	QueryExample string `yaml:"query_example,omitempty"`
	// Attributes configure columns; with OnlyListed, columns not listed are dropped.
	Attributes []Attribute `yaml:"attributes,omitempty"`
	// OnlyListed keeps only the listed attributes (default false: every column).
	OnlyListed bool `yaml:"only_listed,omitempty"`
	// Links configure Ref/RefList columns as edges.
	Links []Link `yaml:"links,omitempty"`
}

// Attribute is one property of an anchor.
type Attribute struct {
	// Name is the property name on the node.
	Name string `yaml:"name"`
	// Column is the source column (default: Name).
	Column       string `yaml:"column,omitempty"`
	Description  string `yaml:"description,omitempty"`
	QueryExample string `yaml:"query_example,omitempty"`
	// Embeddable texts are embedded: short ones into the node property
	// "<name>_embedding" (one vector index per label and attribute), long
	// ones into chunk nodes.
	Embeddable bool `yaml:"embeddable,omitempty"`
}

// Link is a relation from an anchor's Ref/RefList column.
type Link struct {
	// Name is the relationship type, e.g. "PARENT".
	Name string `yaml:"name"`
	// Column is the Ref/RefList column (default: Name).
	Column string `yaml:"column,omitempty"`
	// To is the target anchor (default: the column's referenced table).
	To           string `yaml:"to,omitempty"`
	Description  string `yaml:"description,omitempty"`
	QueryExample string `yaml:"query_example,omitempty"`
}

// LinkTable maps a table whose rows connect two anchors to edges.
type LinkTable struct {
	// Name is the relationship type, e.g. "REQUIRES_GUIDE".
	Name string `yaml:"name"`
	// Table is the source table id.
	Table string `yaml:"table"`
	// From and To name the anchor and the column holding its key.
	From LinkEnd `yaml:"from"`
	To   LinkEnd `yaml:"to"`
	// Properties are the columns kept as edge properties (default: all other columns).
	Properties   []string `yaml:"properties,omitempty"`
	Description  string   `yaml:"description,omitempty"`
	QueryExample string   `yaml:"query_example,omitempty"`
}

// LinkEnd is one end of a link table's edge.
type LinkEnd struct {
	Anchor string `yaml:"anchor"`
	Column string `yaml:"column"`
}

// Mandatory is a pair of elements always retrieved together. Each end is a
// document identifier followed by an element address, e.g. "RFC 7231 6.5.1",
// "constitutionrf.txt Статья 71" (identifiers: "RFC nnnn", the file name,
// the document's title); a bare identifier names the whole document.
type Mandatory struct {
	From string `yaml:"from"`
	To   string `yaml:"to"`
	// Note says why; it becomes the edge's note property.
	Note string `yaml:"note,omitempty"`
}
