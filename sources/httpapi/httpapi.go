// Package httpapi reads a paginated JSON HTTP API endpoint as a
// sources.Source. The design calls this package sources/http; it is named
// httpapi so that it does not shadow net/http.
//
// One Config describes one endpoint: the URL template, auth, the pagination
// style (page number, offset, cursor token or next URL from the body, RFC 8288
// Link header), and jq expressions (github.com/itchyny/gojq) that find the
// records in a body and map each into a key, attributes, links to other
// anchors and optionally a document. Requests are rate limited
// (golang.org/x/time/rate), bounded in concurrency and retried on 429/5xx with
// back-off honouring Retry-After (github.com/hashicorp/go-retryablehttp).
//
// Incremental reads: with Config.Incremental the cursor is the JSON object
// {"since": <high-water mark>, "last_full": <RFC 3339>}. A read from a cursor
// sends the high-water mark (e.g. updated_since=...) and marks its pages
// Partial, since such APIs do not report deletions; every
// Incremental.FullEvery a full listing runs instead (pages not Partial), so
// the pipeline can reconcile deletions. last_full advances only on the last
// page of a complete full listing.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/sync/errgroup"

	"github.com/kgsync/kgsync/sources"
)

// Source reads one HTTP API endpoint; it implements sources.Source and is
// safe for sequential Reads (one listing at a time per pipeline).
type Source struct {
	name     string
	cfg      Config
	logger   *slog.Logger
	client   *retryablehttp.Client
	sem      chan struct{} // requests in flight
	secrets  []string
	endpoint string // "GET https://api.example.com/tickets" (template text), for errors

	// wait maps a computed back-off to the one actually slept; nil = as is.
	// Tests shrink it to keep runs fast while recording what was asked for.
	wait func(time.Duration) time.Duration

	urlT    *template.Template
	bodyT   *template.Template
	queryT  []queryParam
	detailT *template.Template

	records    *jqExpr
	key        *jqExpr
	next       *jqExpr
	total      *jqExpr // nil: detect a total (completeness check only)
	hasMore    *jqExpr // nil: detect has_more (completeness check only)
	cursorExpr *jqExpr
	detailPath *jqExpr
	mapper     mapper
}

// queryParam is one templated query parameter.
type queryParam struct {
	name string
	t    *template.Template
}

var _ sources.Source = (*Source)(nil)

// New validates cfg (templates trial-rendered, jq compiled) and returns the
// source. Every problem is reported in one joined error naming the field.
// logger may be nil (nothing is logged).
func New(name string, cfg Config, logger *slog.Logger) (*Source, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	s := &Source{
		name:     name,
		cfg:      cfg,
		logger:   logger.With(slog.String("source", name)),
		sem:      make(chan struct{}, max(cfg.Concurrency, 1)),
		endpoint: cfg.Method + " " + cfg.URL,
	}
	c := &compiler{}
	if err := cfg.validateStatic(); err != nil {
		c.errs = append(c.errs, err)
	}
	// Compiled in the order the fields are reported.
	s.compileRequest(c)
	s.compileListing(c)
	s.compileMapper(c)
	s.compileDetail(c)
	if err := errors.Join(c.errs...); err != nil {
		return nil, fmt.Errorf("http source %q: %w", name, err)
	}
	s.secrets = secretsOf(cfg.Auth)
	s.client = s.newClient()
	return s, nil
}

// compiler compiles a Config's templates and jq expressions, keeping
// every error.
type compiler struct {
	errs []error
}

// tmpl compiles and trial-renders text against sample (nil for "").
func (c *compiler) tmpl(field, text string, sample map[string]any) *template.Template {
	if text == "" {
		return nil
	}
	t, err := compileTemplate(field, text, sample)
	if err != nil {
		c.errs = append(c.errs, err)
	}
	return t
}

// jq compiles expr (nil for "").
func (c *compiler) jq(field, expr string) *jqExpr {
	if expr == "" {
		return nil
	}
	e, err := compileJQ(field, expr)
	if err != nil {
		c.errs = append(c.errs, err)
	}
	return e
}

// compileRequest compiles the templates of a page's request: URL, body
// and query parameters (by name).
func (s *Source) compileRequest(c *compiler) {
	cfg := s.cfg
	s.urlT = c.tmpl("url", cfg.URL, sampleData)
	s.bodyT = c.tmpl("body", cfg.Body, sampleData)
	for _, n := range slices.Sorted(maps.Keys(cfg.Query)) {
		s.queryT = append(s.queryT, queryParam{name: n, t: c.tmpl(fmt.Sprintf("query[%q]", n), cfg.Query[n], sampleData)})
	}
}

// compileListing compiles the expressions that read a page: its records,
// their key, and the pagination's next page, total and has_more.
func (s *Source) compileListing(c *compiler) {
	cfg := s.cfg
	s.records = c.jq("records", cfg.Records)
	s.key = c.jq("key", cfg.Key)
	s.next = c.jq("pagination.next", cfg.Pagination.Next)
	s.total = c.jq("pagination.total", cfg.Pagination.Total)
	s.hasMore = c.jq("pagination.has_more", cfg.Pagination.HasMore)
}

// compileMapper compiles the mapping of a record: its attributes (by
// name), links (by type) and document.
func (s *Source) compileMapper(c *compiler) {
	cfg := s.cfg
	s.mapper.anchor = cfg.Anchor
	for _, n := range slices.Sorted(maps.Keys(cfg.Attributes)) {
		s.mapper.attrs = append(s.mapper.attrs, attrExpr{name: n, jq: c.jq(fmt.Sprintf("attributes[%q]", n), cfg.Attributes[n])})
	}
	for _, t := range slices.Sorted(maps.Keys(cfg.Links)) {
		l := cfg.Links[t]
		s.mapper.links = append(s.mapper.links, linkExpr{typ: t, anchor: l.Anchor, jq: c.jq(fmt.Sprintf("links[%q].expr", t), l.Expr)})
	}
	if d := cfg.Document; d != nil {
		s.mapper.format = d.Format
		s.mapper.doc = c.jq("document.content", d.Content)
	}
}

// compileDetail compiles the incremental cursor expression and the detail
// fetch's URL template and path.
func (s *Source) compileDetail(c *compiler) {
	cfg := s.cfg
	if inc := cfg.Incremental; inc != nil {
		s.cursorExpr = c.jq("incremental.cursor", inc.Cursor)
	}
	if d := cfg.Detail; d != nil {
		s.detailT = c.tmpl("detail.url", d.URL, map[string]any{"key": "k", "record": map[string]any{}})
		s.detailPath = c.jq("detail.path", d.Path)
	}
}

// secretsOf returns the credentials of a that errors must not show,
// with the base64 form of basic auth, which appears in an Authorization
// header echoed back.
func secretsOf(a Auth) []string {
	var out []string
	for _, sec := range []string{a.Bearer, a.APIKey, a.Password} {
		if sec != "" {
			out = append(out, sec)
		}
	}
	if a.Username != "" || a.Password != "" {
		out = append(out, basicToken(a.Username, a.Password))
	}
	return out
}

// Name returns the source's name within its pipeline.
func (s *Source) Name() string { return s.name }

// cursorState is the stored cursor of an incremental source.
type cursorState struct {
	// Since is the high-water mark (the maximum of Incremental.Cursor).
	Since string `json:"since,omitempty"`
	// LastFull is when the last complete full listing started (RFC 3339).
	LastFull string `json:"last_full,omitempty"`
}

// decodeCursor parses a stored cursor ("" = none).
func decodeCursor(cursor string) (cursorState, time.Time, error) {
	var c cursorState
	if cursor == "" {
		return c, time.Time{}, nil
	}
	if err := json.Unmarshal([]byte(cursor), &c); err != nil {
		return c, time.Time{}, fmt.Errorf("cursor %q: %w", cursor, err)
	}
	var last time.Time
	if c.LastFull != "" {
		t, err := time.Parse(time.RFC3339, c.LastFull)
		if err != nil {
			return c, time.Time{}, fmt.Errorf("cursor %q: last_full: %w", cursor, err)
		}
		last = t
	}
	return c, last, nil
}

// encode returns the cursor's JSON form.
func (c cursorState) encode() string {
	b, _ := json.Marshal(c) // two strings: cannot fail
	return string(b)
}

// listing is the state of one Read.
type listing struct {
	full   bool
	prev   cursorState
	start  time.Time
	hw     string         // running high-water mark
	seen   map[string]int // key → page first seen on
	pageNo int            // 1-based
	// received counts the records of the listing's pages so far; lastLen
	// and maxLen are the record counts of the previous page and of the
	// largest page.
	received        int
	lastLen, maxLen int
	// confirmed: the body stated a total or has_more (complete).
	confirmed bool
	// data is what the url, body and query templates see: page, offset,
	// limit, cursor and since; advance moves page, offset and cursor.
	data map[string]any
	// nextURL is the URL of the next page (next_url and link styles),
	// nil before the second page; origin is scheme://host of page 1,
	// where next URLs must stay.
	nextURL *url.URL
	origin  string
	// followed maps the xxhash64 of every cursor or next URL this
	// listing has requested (page 1's URL included) to the page read
	// with it, so that pages cycling A→B→C→A fail at the first repeat
	// rather than at max_pages. At most max_pages entries of 8-byte keys;
	// a hash collision would fail the listing, never delete.
	followed map[uint64]int
}

// Read yields the endpoint's pages after cursor. A read without cursor, or
// whose last full listing is older than Incremental.FullEvery, is a full
// listing; otherwise pages are Partial. Errors name the page number and URL;
// the sequence stops at the first error (so nothing is deleted).
func (s *Source) Read(ctx context.Context, cursor string) iter.Seq2[*sources.Page, error] {
	return func(yield func(*sources.Page, error) bool) {
		l := &listing{full: true, start: s.cfg.Now(), seen: map[string]int{}, followed: map[uint64]int{}}
		if s.cfg.Incremental != nil {
			prev, last, err := decodeCursor(cursor)
			if err != nil {
				yield(nil, err)
				return
			}
			l.prev, l.hw = prev, prev.Since
			l.full = last.IsZero() || l.start.Sub(last) >= s.cfg.Incremental.FullEvery
		}
		if err := s.list(ctx, l, yield); err != nil {
			yield(nil, s.redact(err))
		}
	}
}

// errStop is returned by list when the consumer stopped ranging.
var errStop = errors.New("stopped")

// list runs the pagination loop; it returns nil after the last page or when
// the consumer stops. Each round's stages: fetch the page (fetchPage),
// find where the next one is (advance), tell whether the listing is
// complete and turn the records into a Page carrying its cursor
// (finishPage), then yield it.
func (s *Source) list(ctx context.Context, l *listing, yield func(*sources.Page, error) bool) error {
	p := s.cfg.Pagination
	l.data = map[string]any{"page": p.Start, "offset": 0, "limit": p.Size, "cursor": "", "since": ""}
	if !l.full {
		l.data["since"] = l.prev.Since
	}
	for l.pageNo = 1; ; l.pageNo++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if l.pageNo > s.cfg.MaxPages {
			return fmt.Errorf("endpoint %s: more than %d pages (max_pages); raise max_pages or check the pagination settings", s.endpoint, s.cfg.MaxPages)
		}
		a, err := s.fetchPage(ctx, l)
		if err != nil {
			return err
		}
		done, err := s.advance(ctx, l, &a)
		if err != nil {
			return err
		}
		page, done, err := s.finishPage(ctx, l, &a, done)
		if err != nil {
			return err
		}
		if !yield(page, nil) {
			return nil
		}
		if done {
			return nil
		}
	}
}

// pageAnswer is the answer to one page's request.
type pageAnswer struct {
	u *url.URL
	// at names the page in errors: "page <n> (<method> <url>)".
	at   string
	resp *response
	// raws are the records the records expression selected.
	raws []any
}

// fetchPage requests page l.pageNo and selects its records. Not modified
// on page 1 is returned as is (sources.ErrNotModified).
func (s *Source) fetchPage(ctx context.Context, l *listing) (pageAnswer, error) {
	u, body, err := s.pageRequest(l.data, l.nextURL)
	if err != nil {
		return pageAnswer{}, fmt.Errorf("page %d: %w", l.pageNo, err)
	}
	if l.origin == "" {
		l.origin = u.Scheme + "://" + u.Host
	}
	a := pageAnswer{u: u, at: fmt.Sprintf("page %d (%s %s)", l.pageNo, s.cfg.Method, u.Redacted())}
	a.resp, err = s.get(ctx, s.cfg.Method, u, body)
	if err != nil {
		if errors.Is(err, sources.ErrNotModified) && l.pageNo == 1 {
			return pageAnswer{}, err
		}
		return pageAnswer{}, fmt.Errorf("%s: %w", a.at, err)
	}
	if a.raws, err = s.records.all(ctx, a.resp.body); err != nil {
		return pageAnswer{}, fmt.Errorf("%s: %w", a.at, err)
	}
	return a, nil
}

// advance moves l to the next page as the pagination style says (page
// number, offset, cursor, next URL) and reports whether a's page is the
// last one.
func (s *Source) advance(ctx context.Context, l *listing, a *pageAnswer) (done bool, err error) {
	switch s.cfg.Pagination.Style {
	case StyleNone:
		return true, nil
	case StylePage:
		l.data["page"] = l.data["page"].(int) + 1
		return len(a.raws) == 0, nil
	case StyleOffset:
		l.data["offset"] = l.data["offset"].(int) + len(a.raws)
		return len(a.raws) == 0, nil
	case StyleCursor:
		v, _, err := s.next.first(ctx, a.resp.body)
		if err != nil {
			return false, fmt.Errorf("%s: %w", a.at, err)
		}
		tok, ok := keyString(v)
		if !ok || v == false {
			return true, nil
		}
		if err := l.follow(tok, fmt.Sprintf("cursor %q", tok)); err != nil {
			return false, fmt.Errorf("%s: pagination.next %q yielded %w", a.at, s.next.expr, err)
		}
		l.data["cursor"] = tok
	case StyleNextURL, StyleLink:
		return s.advanceURL(ctx, l, a)
	}
	return false, nil
}

// advanceURL is advance for the next_url and link styles: the next URL,
// from the body or the Link header, must stay on page 1's origin (it is
// sent the credentials) and differ from the current one.
func (s *Source) advanceURL(ctx context.Context, l *listing, a *pageAnswer) (done bool, err error) {
	var next string
	if s.cfg.Pagination.Style == StyleNextURL {
		v, _, err := s.next.first(ctx, a.resp.body)
		if err != nil {
			return false, fmt.Errorf("%s: %w", a.at, err)
		}
		if str, ok := v.(string); ok {
			next = str
		} else if v != nil && v != false {
			return false, fmt.Errorf("%s: pagination.next %q yielded %s, want a URL string or null", a.at, s.next.expr, typeName(v))
		}
	} else {
		next, err = nextLink(a.u, a.resp.header.Values("Link"))
		if err != nil {
			return false, fmt.Errorf("%s: %w", a.at, err)
		}
	}
	if next == "" {
		return true, nil
	}
	nu, err := a.u.Parse(next)
	if err != nil {
		return false, fmt.Errorf("%s: next URL %q: %w", a.at, next, err)
	}
	if o := nu.Scheme + "://" + nu.Host; o != l.origin {
		return false, fmt.Errorf("%s: next URL points to %s, not %s; refusing to send credentials elsewhere", a.at, o, l.origin)
	}
	if l.pageNo == 1 {
		l.followed[xxhash.Sum64String(a.u.String())] = 1
	}
	if err := l.follow(nu.String(), "next URL "+nu.Redacted()); err != nil {
		return false, fmt.Errorf("%s: %w", a.at, err)
	}
	l.nextURL = nu
	return false, nil
}

// follow records that the next page is read with ref (a cursor or next
// URL). A ref already followed in this listing is an error naming it (as
// what) and the page first read with it: the pages cycle, and following
// them would only repeat records until max_pages.
func (l *listing) follow(ref, what string) error {
	h := xxhash.Sum64String(ref)
	if first, ok := l.followed[h]; ok {
		return fmt.Errorf("%s, which page %d was already read with; the pages cycle, so the listing is incomplete and deletes nothing", what, first)
	}
	l.followed[h] = l.pageNo + 1
	return nil
}

// finishPage checks the listing's completeness after a's page (complete,
// which may end the listing: done) and turns its records into the Page
// to yield. The Page carries the cursor to store once it is committed:
// the new high-water mark only on the last page (or on every page of an
// ordered incremental listing), so a listing that stops early is read
// again from the old one.
func (s *Source) finishPage(ctx context.Context, l *listing, a *pageAnswer, done bool) (*sources.Page, bool, error) {
	n := len(a.raws)
	l.received += n
	done, err := s.complete(ctx, l, a.at, a.resp.body, n, done)
	if err != nil {
		return nil, false, err
	}
	page, err := s.page(ctx, l, a.at, a.raws)
	if err != nil {
		return nil, false, err
	}
	page.Cursor = s.pageCursor(l, done)
	if st := s.cfg.Pagination.Style; done && n == 0 && !l.confirmed && (st == StylePage || st == StyleOffset) &&
		(l.lastLen == 0 || l.lastLen >= l.maxLen) {
		// An empty page right after a full one (or an empty first
		// page), with no total or has_more: the end is not confirmed.
		page.EndUnconfirmed = true
	}
	l.lastLen, l.maxLen = n, max(l.maxLen, n)
	return page, done, nil
}

// pageRequest renders the URL and body of the next page; nextURL, when set,
// is used as is (next_url and link styles).
func (s *Source) pageRequest(data map[string]any, nextURL *url.URL) (*url.URL, string, error) {
	var body string
	if s.bodyT != nil {
		var b strings.Builder
		if err := s.bodyT.Execute(&b, data); err != nil {
			return nil, "", fmt.Errorf("body template: %w", err)
		}
		body = b.String()
	}
	if nextURL != nil {
		return nextURL, body, nil
	}
	var b strings.Builder
	if err := s.urlT.Execute(&b, data); err != nil {
		return nil, "", fmt.Errorf("url template: %w", err)
	}
	u, err := url.Parse(b.String())
	if err != nil {
		return nil, "", fmt.Errorf("url %q: %w", b.String(), err)
	}
	if u.Scheme == "" || u.Host == "" {
		return nil, "", fmt.Errorf("url %q is not absolute", b.String())
	}
	q := u.Query()
	for _, qp := range s.queryT {
		var v strings.Builder
		if err := qp.t.Execute(&v, data); err != nil {
			return nil, "", fmt.Errorf("query[%q] template: %w", qp.name, err)
		}
		if v.Len() > 0 {
			q.Set(qp.name, v.String())
		}
	}
	p := s.cfg.Pagination
	switch {
	case p.Param == "":
	case p.Style == StylePage:
		q.Set(p.Param, strconv.Itoa(data["page"].(int)))
	case p.Style == StyleOffset:
		q.Set(p.Param, strconv.Itoa(data["offset"].(int)))
	case p.Style == StyleCursor && data["cursor"] != "":
		q.Set(p.Param, data["cursor"].(string))
	}
	if p.SizeParam != "" {
		q.Set(p.SizeParam, strconv.Itoa(p.Size))
	}
	if inc := s.cfg.Incremental; inc != nil && inc.Param != "" && data["since"] != "" {
		q.Set(inc.Param, data["since"].(string))
	}
	u.RawQuery = q.Encode()
	return u, body, nil
}

// pageCursor returns the cursor stored after the current page.
func (s *Source) pageCursor(l *listing, final bool) string {
	if s.cfg.Incremental == nil {
		return ""
	}
	c := l.prev
	if final || s.cfg.Incremental.Ordered {
		c.Since = l.hw
	}
	if final && l.full {
		c.LastFull = l.start.UTC().Format(time.RFC3339)
	}
	return c.encode()
}

// item is a list record with its key.
type item struct {
	idx int
	key string // the API's key, as the detail URL template sees it
	id  string // the record key: "<anchor>:<key>"
	obj map[string]any
}

// RecordKey is the key of an API record whose key is key: "<anchor>:<key>",
// the identity every source gives a table row, so that a Ref from a CSV or
// Grist table to the anchor reaches it (docs/config.md, "Node ids").
func RecordKey(anchor, key string) string { return anchor + ":" + key }

// page turns the raw records of one page into a Page: keys, duplicates
// (skipped), high-water mark, detail fetch, mapping (a record that cannot
// be mapped is skipped). A record without a key (not an object, or the key
// expression yields none) is unlisted under the anchor's prefix: the other
// records are read, and no stored record of the anchor is deleted, since
// the keyless one may be any of them.
func (s *Source) page(ctx context.Context, l *listing, at string, raws []any) (*sources.Page, error) {
	page := &sources.Page{Partial: !l.full, Records: make([]sources.Record, 0, len(raws))}
	items := make([]item, 0, len(raws))
	for i, raw := range raws {
		k, obj, err := s.keyOf(ctx, raw)
		if err != nil {
			page.Unlisted = append(page.Unlisted, sources.Unlisted{Prefix: RecordKey(s.cfg.Anchor, ""),
				Err: fmt.Errorf("%s: record index %d: %w", at, i, err)})
			continue
		}
		id := RecordKey(s.cfg.Anchor, k)
		if first, dup := l.seen[id]; dup {
			page.Skipped = append(page.Skipped, sources.Skip{Key: id, Err: fmt.Errorf("duplicate key %q on page %d, first seen on page %d; the first is kept", k, l.pageNo, first)})
			continue
		}
		l.seen[id] = l.pageNo
		if s.cursorExpr != nil {
			cv, _, err := s.cursorExpr.first(ctx, obj)
			if err != nil {
				page.Skipped = append(page.Skipped, sources.Skip{Key: id, Err: fmt.Errorf("%s: record %q: %w", at, k, err)})
				continue
			}
			l.hw = maxMark(l.hw, cv)
		}
		items = append(items, item{idx: i, key: k, id: id, obj: obj})
	}
	objs := make([]map[string]any, len(items))
	errs := make([]error, len(items))
	if s.detailT != nil {
		if err := s.details(ctx, at, items, objs, errs); err != nil {
			return nil, err
		}
	} else {
		for i, it := range items {
			objs[i] = it.obj
		}
	}
	for i, it := range items {
		if errs[i] != nil {
			page.Skipped = append(page.Skipped, sources.Skip{Key: it.id, Err: s.redact(errs[i])})
			continue
		}
		rec, err := s.mapper.record(ctx, it.id, objs[i])
		if err != nil {
			page.Skipped = append(page.Skipped, sources.Skip{Key: it.id, Err: fmt.Errorf("%s: record %q (index %d): %w", at, it.key, it.idx, err)})
			continue
		}
		page.Records = append(page.Records, rec)
	}
	return page, nil
}

// keyOf returns the key of a raw record and the record as an object; an
// error when it is not an object or its key expression yields no key.
func (s *Source) keyOf(ctx context.Context, raw any) (string, map[string]any, error) {
	obj, ok := raw.(map[string]any)
	if !ok {
		return "", nil, fmt.Errorf("records %q yielded %s, want object", s.records.expr, typeName(raw))
	}
	kv, found, err := s.key.first(ctx, obj)
	if err != nil {
		return "", nil, err
	}
	k, ok := keyString(kv)
	if !found || !ok {
		got := "nothing"
		if found {
			got = fmt.Sprintf("%s %s", typeName(kv), compact(kv))
		}
		return "", nil, fmt.Errorf("key %q yielded no key (got %s), want a non-empty string or number", s.key.expr, got)
	}
	return k, obj, nil
}

// details fetches and merges every item's detail document, at most
// Concurrency at a time, into objs (same order as items). A 4xx answer or an
// unusable body skips that record (errs[i]); other failures fail the page.
func (s *Source) details(ctx context.Context, at string, items []item, objs []map[string]any, errs []error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(s.cfg.Concurrency, 1))
	for i, it := range items {
		g.Go(func() error {
			var b strings.Builder
			if err := s.detailT.Execute(&b, map[string]any{"key": it.key, "record": it.obj}); err != nil {
				errs[i] = fmt.Errorf("%s: record %q: detail.url template: %w", at, it.key, err)
				return nil
			}
			u, err := url.Parse(b.String())
			if err != nil || u.Scheme == "" || u.Host == "" {
				errs[i] = fmt.Errorf("%s: record %q: detail url %q is not an absolute URL", at, it.key, b.String())
				return nil
			}
			dat := fmt.Sprintf("%s: record %q: detail GET %s", at, it.key, u.Redacted())
			resp, err := s.get(gctx, "GET", u, "")
			if err != nil {
				if errors.Is(err, errClient4xx) {
					errs[i] = fmt.Errorf("%s: %w", dat, err)
					return nil
				}
				return fmt.Errorf("%s: %w", dat, err)
			}
			v := resp.body
			if s.detailPath != nil {
				if v, _, err = s.detailPath.first(gctx, v); err != nil {
					errs[i] = fmt.Errorf("%s: %w", dat, err)
					return nil
				}
			}
			d, ok := v.(map[string]any)
			if !ok {
				errs[i] = fmt.Errorf("%s: body is %s, want object", dat, typeName(v))
				return nil
			}
			merged := make(map[string]any, len(it.obj)+len(d))
			for k, x := range it.obj {
				merged[k] = x
			}
			for k, x := range d {
				merged[k] = x
			}
			objs[i] = merged
			return nil
		})
	}
	return g.Wait()
}

// maxMark returns the larger of the mark and v (a string or number; null and
// other types are ignored). Two numbers compare numerically, otherwise as
// strings.
func maxMark(mark string, v any) string {
	var s string
	switch x := canonical(v).(type) {
	case string:
		s = x
	case int64, float64:
		s, _ = keyString(x)
	default:
		return mark
	}
	if mark == "" {
		return s
	}
	a, aok := new(big.Float).SetString(mark)
	b, bok := new(big.Float).SetString(s)
	if aok && bok {
		if b.Cmp(a) > 0 {
			return s
		}
		return mark
	}
	if s > mark {
		return s
	}
	return mark
}

// compact renders a small JSON value for an error message.
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// complete decides whether the page just read ends the listing. done is
// what the pagination style says (an empty page, no next cursor or link).
// The source's own word wins where it gives one: has_more false ends the
// listing, a stated total ends it once that many records arrived. An end
// the source contradicts (has_more true, or fewer records than the total)
// is an incomplete read: an error, so that the pipeline deletes nothing.
// A total or has_more found in the body without configuration only guards
// against such an early end.
func (s *Source) complete(ctx context.Context, l *listing, at string, body any, n int, done bool) (bool, error) {
	if s.cfg.Pagination.Style == StyleNone {
		return true, nil
	}
	more, moreKnown, err := s.hasMoreOf(ctx, body)
	if err != nil {
		return false, fmt.Errorf("%s: %w", at, err)
	}
	total, totalKnown, err := s.totalOf(ctx, body)
	if err != nil {
		return false, fmt.Errorf("%s: %w", at, err)
	}
	if moreKnown || totalKnown {
		l.confirmed = true
	}
	if s.hasMore != nil && moreKnown {
		if !more {
			return true, nil
		}
		if n > 0 && done && s.cfg.Pagination.Style != StylePage && s.cfg.Pagination.Style != StyleOffset {
			// no next cursor or link although has_more says so
			return false, fmt.Errorf("%s: has_more is true but the page gives no next page; the listing is incomplete and deletes nothing", at)
		}
		if n > 0 {
			done = false
		}
	}
	if s.total != nil && totalKnown && l.received >= total {
		return true, nil
	}
	if !done {
		return false, nil
	}
	switch {
	case moreKnown && more:
		return false, fmt.Errorf("%s: the listing ended (%d records on this page) while the body says has_more is true; it is incomplete and deletes nothing", at, n)
	case totalKnown && l.received < total:
		return false, fmt.Errorf("%s: the listing ended after %d of the %d records the body announces as its total; it is incomplete and deletes nothing", at, l.received, total)
	}
	return true, nil
}

// totalKeys are the body fields taken for a listing's total when
// pagination.total is not configured.
var totalKeys = [][]string{{"total"}, {"total_count"}, {"totalCount"}, {"total_results"}, {"totalResults"},
	{"meta", "total"}, {"meta", "total_count"}}

// totalOf reads the listing's total from a page body.
func (s *Source) totalOf(ctx context.Context, body any) (int, bool, error) {
	var v any
	if s.total != nil {
		x, ok, err := s.total.first(ctx, body)
		if err != nil || !ok || x == nil {
			return 0, false, err
		}
		v = x
	} else {
		for _, path := range totalKeys {
			if x, ok := lookup(body, path); ok {
				v = x
				break
			}
		}
	}
	switch x := canonical(v).(type) {
	case int64:
		return int(x), x >= 0, nil
	case nil:
		return 0, false, nil
	default:
		if s.total != nil {
			return 0, false, fmt.Errorf("pagination.total %q yielded %s, want a number", s.total.expr, typeName(v))
		}
		return 0, false, nil
	}
}

// hasMoreOf reads whether more pages follow from a page body.
func (s *Source) hasMoreOf(ctx context.Context, body any) (bool, bool, error) {
	if s.hasMore != nil {
		x, ok, err := s.hasMore.first(ctx, body)
		if err != nil || !ok || x == nil {
			return false, false, err
		}
		b, isBool := x.(bool)
		if !isBool {
			return false, false, fmt.Errorf("pagination.has_more %q yielded %s, want a boolean", s.hasMore.expr, typeName(x))
		}
		return b, true, nil
	}
	for _, k := range []string{"has_more", "hasMore"} {
		if x, ok := lookup(body, []string{k}); ok {
			if b, isBool := x.(bool); isBool {
				return b, true, nil
			}
		}
	}
	return false, false, nil
}

// lookup follows object keys from v.
func lookup(v any, path []string) (any, bool) {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
