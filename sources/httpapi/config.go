package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/template"
	"time"

	"github.com/itchyny/gojq"
)

// Pagination styles accepted in Pagination.Style.
const (
	// StyleNone reads a single page.
	StyleNone = "none"
	// StylePage sends a page number (Pagination.Param, starting at
	// Pagination.Start, default 1) and stops at the first page without records.
	StylePage = "page"
	// StyleOffset sends an offset (Pagination.Param, starting at 0) that grows
	// by the number of records received, and stops at the first page without
	// records.
	StyleOffset = "offset"
	// StyleCursor sends the token that Pagination.Next (jq) extracts from the
	// previous body as Pagination.Param; it stops when Next yields null, "",
	// false or nothing.
	StyleCursor = "cursor"
	// StyleNextURL follows the URL that Pagination.Next (jq) extracts from the
	// body (absolute or relative to the current page); it stops when Next
	// yields null, "", false or nothing.
	StyleNextURL = "next_url"
	// StyleLink follows the RFC 8288 Link header target with rel="next"; it
	// stops when the header has none.
	StyleLink = "link"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultMethod        = http.MethodGet
	DefaultTimeout       = 30 * time.Second
	DefaultMaxPages      = 10000
	DefaultConcurrency   = 4
	DefaultMaxBodyBytes  = 64 << 20
	DefaultFullEvery     = 24 * time.Hour
	DefaultRetryMax      = 4
	DefaultRetryWaitMin  = time.Second
	DefaultRetryWaitMax  = 30 * time.Second
	DefaultRetryAfterMax = 2 * time.Minute
)

// Config configures one HTTP API endpoint read as a source. The YAML layer
// (config package) maps its http section onto it; secrets arrive here already
// expanded from ${ENV} and are never logged or put into errors.
//
// Templates (URL, Query values, Body, Detail.URL) use text/template with
// missingkey=error; their data is a map with "page" (int), "offset" (int),
// "limit" (int, Pagination.Size), "cursor" (string, the next-page token) and
// "since" (string, the incremental high-water mark, "" on full listings). The
// detail template gets "key" (string) and "record" (the list item) instead.
//
// jq expressions use github.com/itchyny/gojq and are compiled once by New.
type Config struct {
	// URL is the endpoint URL template, e.g. "https://api.example.com/v2/tickets".
	URL string
	// Method is GET (default) or POST.
	Method string
	// Headers are sent with every request (values are not templates).
	Headers map[string]string
	// Query are extra query parameters; values are templates and a value that
	// renders to "" is omitted (so "{{.since}}" is left out on full listings).
	Query map[string]string
	// Body is an optional request body template (POST), sent as JSON unless
	// Headers sets Content-Type.
	Body string
	// Auth is the authentication to use.
	Auth Auth
	// Timeout bounds one HTTP attempt including reading the body; default 30s.
	Timeout time.Duration
	// MaxBodyBytes bounds one response body; default 64 MiB.
	MaxBodyBytes int64

	// Pagination says how to get from one page to the next.
	Pagination Pagination
	// MaxPages is the safety limit on pages per listing; default 10000. A
	// listing that needs more fails with an error naming the endpoint.
	MaxPages int

	// Records is the jq expression yielding each record (a JSON object) of a
	// page body, e.g. ".data[]" or ".[]".
	Records string
	// Key is the jq expression yielding the record's key (a string or a
	// number), e.g. ".id | tostring". A record without a key fails the page.
	Key string
	// Anchor is the anchor (node label) of every record, e.g. "ticket".
	Anchor string
	// Attributes maps attribute name → jq expression evaluated on the record
	// (after the detail merge). Empty: every top-level scalar field (string,
	// number, bool, null) under its own name.
	Attributes map[string]string
	// Links maps link (relationship) type → where the target keys are.
	Links map[string]LinkConfig
	// Document, when set, makes each record a document to chunk.
	Document *DocumentConfig

	// Incremental, when set, enables incremental reads from a cursor.
	Incremental *Incremental
	// Detail, when set, fetches one more URL per record and merges its JSON
	// object into the record.
	Detail *Detail

	// RateLimit is the request rate per source in requests/second, applied to
	// every attempt including retries; 0 = unlimited.
	RateLimit float64
	// Burst is the rate limiter's burst; default 1.
	Burst int
	// Concurrency caps requests in flight per source (list pages and detail
	// fetches together); default 4.
	Concurrency int
	// Retry configures retries of 429, 5xx and transport errors.
	Retry Retry

	// Now is the clock used for the full-listing interval; nil = time.Now.
	// Not read from YAML: tests inject it.
	Now func() time.Time
}

// Auth is one authentication scheme; at most one of Bearer, APIKey
// (with APIKeyHeader) and Username/Password is set.
type Auth struct {
	// Bearer is sent as "Authorization: Bearer <token>".
	Bearer string
	// APIKeyHeader names the header carrying APIKey, e.g. "X-API-Key".
	APIKeyHeader string
	// APIKey is the API key value.
	APIKey string
	// Username and Password are sent as HTTP basic authentication.
	Username string
	Password string
}

// Pagination configures the pagination style; see the Style* constants.
type Pagination struct {
	// Style is one of StyleNone (default), StylePage, StyleOffset,
	// StyleCursor, StyleNextURL, StyleLink.
	Style string
	// Param is the query parameter carrying the page number, offset or
	// cursor token ("page", "offset", "cursor"); it may be empty when the URL
	// template uses {{.page}}, {{.offset}} or {{.cursor}} itself.
	Param string
	// Start is the first page number for StylePage; default 1.
	Start int
	// SizeParam and Size, when both set, send the page size ("per_page=100").
	SizeParam string
	Size      int
	// Next is the jq expression yielding the next cursor token (StyleCursor)
	// or next URL (StyleNextURL), e.g. ".meta.next_cursor" or ".links.next".
	Next string
	// Total is a jq expression yielding the number of records the whole
	// listing holds, e.g. ".total" or ".meta.total_count": the listing
	// ends when that many were received, and one that ends before (an
	// empty page, no next link) is an incomplete read that fails and
	// deletes nothing. Without it, a top-level "total", "total_count",
	// "totalCount", "total_results" or "meta.total" / "meta.total_count"
	// number in the body is used for that check only.
	Total string
	// HasMore is a jq expression yielding whether more pages follow, e.g.
	// ".has_more": false ends the listing; true on an empty page is an
	// incomplete read. Without it, a top-level boolean "has_more" or
	// "hasMore" is used for that check only.
	HasMore string
}

// LinkConfig says where in a record the keys of linked records are.
type LinkConfig struct {
	// Anchor is the target records' anchor.
	Anchor string
	// Expr is a jq expression yielding one key, an array of keys or null
	// (no link), e.g. ".requester_id" or "[.tags[].id]".
	Expr string
}

// DocumentConfig makes records documents to chunk.
type DocumentConfig struct {
	// Format is the chunker format, e.g. "md", "html", "txt".
	Format string
	// Content is a jq expression yielding the document text (a string; null
	// means no document), e.g. ".body".
	Content string
}

// Incremental configures reads after a cursor. The stored cursor is the JSON
// object {"since": <high-water mark>, "last_full": <RFC 3339 time>}.
type Incremental struct {
	// Param is the query parameter carrying the high-water mark on
	// incremental reads, e.g. "updated_since" (templates may use {{.since}}
	// instead).
	Param string
	// Cursor is the jq expression evaluated on each list record whose maximum
	// becomes the new high-water mark, e.g. ".updated_at". Strings are
	// compared as strings (RFC 3339 timestamps of one format sort correctly),
	// numbers as numbers.
	Cursor string
	// Ordered says the API returns records in ascending Cursor order, so every
	// page's cursor may carry the running maximum and a failed run resumes
	// after the last committed page. When false only the last page advances
	// the high-water mark.
	Ordered bool
	// FullEvery is how often a full listing (without Param) runs to reconcile
	// deletions, which incremental reads cannot see; default 24h.
	FullEvery time.Duration
}

// Detail configures the per-record detail fetch.
type Detail struct {
	// URL is the detail URL template with {{.key}} and {{.record}}, e.g.
	// "https://api.example.com/v2/tickets/{{.key}}".
	URL string
	// Path is an optional jq expression selecting the object to merge from the
	// detail body, e.g. ".data"; default the whole body.
	Path string
}

// Retry configures retries; go-retryablehttp's DefaultBackoff is used, which
// honours Retry-After on 429 and 503 answers.
type Retry struct {
	// Max is the number of retries after the first attempt; default 4. Use a
	// negative value for none.
	Max int
	// WaitMin and WaitMax bound the exponential back-off; defaults 1s and 30s.
	WaitMin time.Duration
	WaitMax time.Duration
	// RetryAfterMax caps a server's Retry-After; default 2 min.
	RetryAfterMax time.Duration
}

// withDefaults returns cfg with zero fields defaulted.
func (cfg Config) withDefaults() Config {
	if cfg.Method == "" {
		cfg.Method = DefaultMethod
	}
	cfg.Method = strings.ToUpper(cfg.Method)
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Pagination.Style == "" {
		cfg.Pagination.Style = StyleNone
	}
	if cfg.Pagination.Style == StylePage && cfg.Pagination.Start == 0 {
		cfg.Pagination.Start = 1
	}
	if cfg.MaxPages == 0 {
		cfg.MaxPages = DefaultMaxPages
	}
	if cfg.Burst == 0 {
		cfg.Burst = 1
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Retry.Max == 0 {
		cfg.Retry.Max = DefaultRetryMax
	} else if cfg.Retry.Max < 0 {
		cfg.Retry.Max = 0
	}
	if cfg.Retry.WaitMin == 0 {
		cfg.Retry.WaitMin = DefaultRetryWaitMin
	}
	if cfg.Retry.WaitMax == 0 {
		cfg.Retry.WaitMax = DefaultRetryWaitMax
	}
	if cfg.Retry.RetryAfterMax == 0 {
		cfg.Retry.RetryAfterMax = DefaultRetryAfterMax
	}
	if cfg.Incremental != nil {
		inc := *cfg.Incremental
		if inc.FullEvery == 0 {
			inc.FullEvery = DefaultFullEvery
		}
		cfg.Incremental = &inc
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

// sampleData is template data with every key set, used to check templates up front.
var sampleData = map[string]any{"page": 1, "offset": 0, "limit": 100, "cursor": "c", "since": "s"}

// compileTemplate parses and trial-runs a template; field names it in errors.
func compileTemplate(field, text string, sample map[string]any) (*template.Template, error) {
	t, err := template.New(field).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%s: template %q: %w", field, text, err)
	}
	if err := t.Execute(new(strings.Builder), sample); err != nil {
		return nil, fmt.Errorf("%s: template %q: %w", field, text, err)
	}
	return t, nil
}

// compileJQ parses and compiles a jq expression; field names it in errors.
func compileJQ(field, expr string) (*jqExpr, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%s: jq %q: %w", field, expr, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("%s: jq %q: %w", field, expr, err)
	}
	e := &jqExpr{field: field, expr: expr, code: code}
	e.setFast()
	return e, nil
}

// validateStatic checks what needs no compilation; every problem is
// reported, in the order of the checks: request, auth, pagination,
// limits, mapping.
func (cfg Config) validateStatic() error {
	errs := cfg.validateRequest()
	errs = append(errs, cfg.Auth.validate()...)
	errs = append(errs, cfg.validatePagination()...)
	errs = append(errs, cfg.validateLimits()...)
	errs = append(errs, cfg.validateMapping()...)
	return errors.Join(errs...)
}

// validateRequest checks the URL, the method and the required records,
// key and anchor.
func (cfg Config) validateRequest() []error {
	var errs []error
	if cfg.URL == "" {
		errs = append(errs, errors.New("url: required"))
	} else if !strings.Contains(cfg.URL, "{{") {
		if u, err := url.Parse(cfg.URL); err != nil || u.Scheme == "" || u.Host == "" {
			errs = append(errs, fmt.Errorf("url: %q is not an absolute URL", cfg.URL))
		}
	}
	if cfg.Method != http.MethodGet && cfg.Method != http.MethodPost {
		errs = append(errs, fmt.Errorf("method: %q, want GET or POST", cfg.Method))
	}
	if cfg.Records == "" {
		errs = append(errs, errors.New("records: required (a jq expression such as \".data[]\")"))
	}
	if cfg.Key == "" {
		errs = append(errs, errors.New("key: required (a jq expression such as \".id | tostring\")"))
	}
	if cfg.Anchor == "" {
		errs = append(errs, errors.New("anchor: required"))
	}
	return errs
}

// validate checks that at most one kind of auth is set, and an API key
// with its header.
func (a Auth) validate() []error {
	var errs []error
	n := 0
	if a.Bearer != "" {
		n++
	}
	if a.APIKey != "" || a.APIKeyHeader != "" {
		n++
		if a.APIKey == "" || a.APIKeyHeader == "" {
			errs = append(errs, errors.New("auth: api_key and api_key_header must be set together"))
		}
	}
	if a.Username != "" || a.Password != "" {
		n++
	}
	if n > 1 {
		errs = append(errs, fmt.Errorf("auth: at most one of bearer, api key, basic may be set, got %d", n))
	}
	return errs
}

// validatePagination checks the style and what it needs (param, next),
// and the page size.
func (cfg Config) validatePagination() []error {
	var errs []error
	p := cfg.Pagination
	switch p.Style {
	case StyleNone, StyleLink:
	case StylePage, StyleOffset:
		if p.Param == "" && !strings.Contains(cfg.URL, "{{") {
			errs = append(errs, fmt.Errorf("pagination.param: required for style %q (or use {{.%s}} in url)", p.Style, p.Style))
		}
	case StyleCursor:
		if p.Next == "" {
			errs = append(errs, errors.New("pagination.next: required for style \"cursor\""))
		}
		if p.Param == "" && !strings.Contains(cfg.URL, "{{") {
			errs = append(errs, errors.New("pagination.param: required for style \"cursor\" (or use {{.cursor}} in url)"))
		}
	case StyleNextURL:
		if p.Next == "" {
			errs = append(errs, errors.New("pagination.next: required for style \"next_url\""))
		}
	default:
		errs = append(errs, fmt.Errorf("pagination.style: %q, want one of none, page, offset, cursor, next_url, link", p.Style))
	}
	if (p.SizeParam == "") != (p.Size == 0) {
		errs = append(errs, errors.New("pagination: size_param and size must be set together"))
	}
	if p.Size < 0 {
		errs = append(errs, fmt.Errorf("pagination.size: %d, want > 0", p.Size))
	}
	return errs
}

// validateLimits checks that max_pages, max_body_bytes, concurrency,
// rate_limit and timeout are not negative.
func (cfg Config) validateLimits() []error {
	var errs []error
	if cfg.MaxPages < 0 {
		errs = append(errs, fmt.Errorf("max_pages: %d, want > 0", cfg.MaxPages))
	}
	if cfg.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("max_body_bytes: %d, want > 0", cfg.MaxBodyBytes))
	}
	if cfg.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency: %d, want > 0", cfg.Concurrency))
	}
	if cfg.RateLimit < 0 {
		errs = append(errs, fmt.Errorf("rate_limit: %g, want >= 0", cfg.RateLimit))
	}
	if cfg.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: %s, want > 0", cfg.Timeout))
	}
	return errs
}

// validateMapping checks attributes, links, document, incremental and
// detail.
func (cfg Config) validateMapping() []error {
	var errs []error
	for name := range cfg.Attributes {
		if name == "" {
			errs = append(errs, errors.New("attributes: empty attribute name"))
		}
	}
	for typ, l := range cfg.Links {
		if typ == "" {
			errs = append(errs, errors.New("links: empty link type"))
		}
		if l.Anchor == "" {
			errs = append(errs, fmt.Errorf("links[%q].anchor: required", typ))
		}
		if l.Expr == "" {
			errs = append(errs, fmt.Errorf("links[%q].expr: required", typ))
		}
	}
	if d := cfg.Document; d != nil && (d.Format == "" || d.Content == "") {
		errs = append(errs, errors.New("document: format and content are required"))
	}
	if inc := cfg.Incremental; inc != nil {
		if inc.Cursor == "" {
			errs = append(errs, errors.New("incremental.cursor: required (a jq expression such as \".updated_at\")"))
		}
		if inc.FullEvery < 0 {
			errs = append(errs, fmt.Errorf("incremental.full_every: %s, want > 0", inc.FullEvery))
		}
	}
	if d := cfg.Detail; d != nil && d.URL == "" {
		errs = append(errs, errors.New("detail.url: required"))
	}
	return errs
}
