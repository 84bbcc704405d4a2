package config

import "time"

// GristSource reads the tables of one Grist document (see
// docs/grist-api.md). The API key comes from ${ENV}.
type GristSource struct {
	// Server is the Grist server or team site URL, e.g.
	// "https://docs.getgrist.com" or "https://myteam.getgrist.com".
	Server string `yaml:"server"`
	// DocID is the document id from the document's URL.
	DocID string `yaml:"doc_id"`
	// APIKey is the user's API key (Profile Settings → API); use ${ENV}.
	APIKey string `yaml:"api_key"`
	// Tables are the table ids to read (default: every user table).
	Tables []string `yaml:"tables,omitempty"`
	// KeyColumns names, per table id, the column whose value is the node key
	// (default: the row id).
	KeyColumns map[string]string `yaml:"key_columns,omitempty"`
	// PageSize is the number of rows per request (default 1000).
	PageSize int `yaml:"page_size,omitempty"`
	// MaxInFlight bounds concurrent requests to the document (default 4,
	// at most 10: Grist's per-document limit).
	MaxInFlight int `yaml:"max_in_flight,omitempty"`
	// FullEvery is the interval of full reconciliations (default 24h);
	// between them only what /compare reports is read.
	FullEvery time.Duration `yaml:"full_every,omitempty"`
}

// CSVSource reads CSV files as tables mapped through the data model like
// Grist tables.
type CSVSource struct {
	// Tables are the CSV files, one table each.
	Tables []CSVTable `yaml:"tables"`
}

// CSVTable is one CSV file read as a table: header row = columns.
type CSVTable struct {
	// Path is the file, relative to the config file's directory.
	Path string `yaml:"path"`
	// Table is the table id (default: the file's base name).
	Table string `yaml:"table,omitempty"`
	// Key is the key column (default: the data row number).
	Key string `yaml:"key,omitempty"`
	// Columns maps a column to its type: text (default), int, numeric, bool,
	// date, choicelist, ref:<table>, reflist:<table>.
	Columns map[string]string `yaml:"columns,omitempty"`
	// Skip lists columns to drop.
	Skip []string `yaml:"skip,omitempty"`
	// Delimiter is the field separator (default ",").
	Delimiter string `yaml:"delimiter,omitempty"`
}

// HTTPSource reads a paginated JSON API (see sources/httpapi for every
// field's semantics; templates use {{.page}}, {{.offset}}, {{.limit}},
// {{.cursor}}, {{.since}}).
type HTTPSource struct {
	URL          string            `yaml:"url"`
	Method       string            `yaml:"method,omitempty"`
	Headers      map[string]string `yaml:"headers,omitempty"`
	Query        map[string]string `yaml:"query,omitempty"`
	Body         string            `yaml:"body,omitempty"`
	Auth         *HTTPAuth         `yaml:"auth,omitempty"`
	Timeout      time.Duration     `yaml:"timeout,omitempty"`
	MaxBodyBytes int64             `yaml:"max_body_bytes,omitempty"`
	Pagination   *HTTPPagination   `yaml:"pagination,omitempty"`
	MaxPages     int               `yaml:"max_pages,omitempty"`
	// Records is the jq expression yielding the records of a page, e.g. ".data[]".
	Records string `yaml:"records"`
	// Key is the jq expression of a record's key, e.g. ".id | tostring".
	Key string `yaml:"key"`
	// Anchor is the table id records map to (then through the data model).
	Anchor string `yaml:"anchor"`
	// Attributes maps attribute names to jq expressions (default: every
	// top-level scalar field).
	Attributes map[string]string `yaml:"attributes,omitempty"`
	// Links maps a link name to the anchor and the jq expression of the
	// target key(s).
	Links       map[string]HTTPLink `yaml:"links,omitempty"`
	Incremental *HTTPIncremental    `yaml:"incremental,omitempty"`
	Detail      *HTTPDetail         `yaml:"detail,omitempty"`
	// RateLimit is requests per second (0 = unlimited); Burst its burst.
	RateLimit   float64 `yaml:"rate_limit,omitempty"`
	Burst       int     `yaml:"burst,omitempty"`
	Concurrency int     `yaml:"concurrency,omitempty"`
	MaxRetries  int     `yaml:"max_retries,omitempty"`
}

// HTTPAuth is one of: a bearer token, an API key header, basic auth.
type HTTPAuth struct {
	Bearer       string `yaml:"bearer,omitempty"`
	APIKeyHeader string `yaml:"api_key_header,omitempty"`
	APIKey       string `yaml:"api_key,omitempty"`
	Username     string `yaml:"username,omitempty"`
	Password     string `yaml:"password,omitempty"`
}

// HTTPPagination selects the pagination style: none, page, offset, cursor,
// next_url or link.
type HTTPPagination struct {
	Style     string `yaml:"style"`
	Param     string `yaml:"param,omitempty"`
	Start     int    `yaml:"start,omitempty"`
	SizeParam string `yaml:"size_param,omitempty"`
	Size      int    `yaml:"size,omitempty"`
	// Next is the jq expression of the next cursor or URL.
	Next string `yaml:"next,omitempty"`
	// Total is the jq expression of the listing's record count (".total").
	Total string `yaml:"total,omitempty"`
	// HasMore is the jq expression of the more-pages flag (".has_more").
	HasMore string `yaml:"has_more,omitempty"`
}

// HTTPLink is one link of an API record.
type HTTPLink struct {
	Anchor string `yaml:"anchor"`
	Expr   string `yaml:"expr"`
}

// HTTPIncremental configures incremental reads with a high-water mark.
type HTTPIncremental struct {
	// Param is the query parameter carrying the mark, e.g. "updated_since".
	Param string `yaml:"param"`
	// Cursor is the jq expression of a record's mark, e.g. ".updated_at".
	Cursor string `yaml:"cursor"`
	// Ordered says pages come in mark order, so a failed run resumes.
	Ordered bool `yaml:"ordered,omitempty"`
	// FullEvery is the interval of full key listings that reconcile deletions (default 24h).
	FullEvery time.Duration `yaml:"full_every,omitempty"`
}

// HTTPDetail fetches a detail document per record and merges it in.
type HTTPDetail struct {
	URL  string `yaml:"url"`
	Path string `yaml:"path,omitempty"`
}
