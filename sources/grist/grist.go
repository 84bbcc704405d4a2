// Package grist reads one Grist document as a sources.Source: every row of
// the selected tables becomes a record whose Attributes are its decoded cells
// and whose Links are its Ref/RefList cells.
//
// Facts about the API come from /work/shared/docs/grist-api.md (cited as
// "grist-api.md §N") and the captures of a real grist-core 1.7.17 server in
// grist-samples/real. Rows are read in pages with keyset pagination over the
// SQL endpoint (POST /sql, "WHERE id > ? ORDER BY id LIMIT n") and, when SQL
// is refused, by streaming the /records answer, so memory stays bounded by
// the page size. Change detection uses /states and /compare (grist-api.md §8)
// and, where /states is refused, conditional GETs with ETags (etag.go).
package grist

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgsync/kgsync/sources"
)

// Config configures one Grist document source.
type Config struct {
	// Server is the site URL: "https://docs.getgrist.com", a team site
	// "https://team.getgrist.com", or a self-hosted URL, optionally with
	// "/o/{org}" (grist-api.md §1). "/api" is appended when missing.
	Server string
	// DocID is the 22-character document id (a urlId prefix also works).
	DocID string
	// APIKey is the bearer token. It is never logged or put in errors.
	APIKey string
	// Tables are the tableIds to read; empty = every user table (summary
	// tables, _grist_* and GristHidden_* tables are skipped).
	Tables []string
	// KeyColumns maps a tableId to the column whose value is the record key
	// ("<table>:<value>"); tables not listed are keyed by row id
	// ("<table>:<id>").
	KeyColumns map[string]string
	// PageSize is rows per page; default 1000.
	PageSize int
	// MaxInFlight caps concurrent requests to the document; default 4, at
	// most 10 (Grist answers the 11th with 429, grist-api.md §7).
	MaxInFlight int
	// FullEvery is the interval between full listings even when /compare
	// could answer; default 24h.
	FullEvery time.Duration
	// HTTPClient is the client to use; default a client with a 5 min timeout.
	HTTPClient *http.Client
	// RetryMax is the number of retries after 429/5xx/network errors;
	// default 8. RetryWaitMin/RetryWaitMax bound the exponential backoff with
	// jitter; defaults 500ms and 30s.
	RetryMax                   int
	RetryWaitMin, RetryWaitMax time.Duration
	// AttachmentFormats maps a lower-case file extension (".pdf") to a
	// document format ("pdf"). When set, each attachment of an Attachments
	// cell whose extension it knows is downloaded and yielded as a document
	// record of its own: key "<row key>#attachment:<id>", anchor
	// "Document", linked to the row's node by ATTACHED_TO. The record's
	// attributes carry fileIdent (the content's SHA-1), so a changed file
	// changes the record.
	AttachmentFormats map[string]string
	// Now returns the current time; default time.Now (tests inject a clock).
	Now func() time.Time
}

func (c *Config) withDefaults() error {
	if c.Server == "" {
		return errors.New("grist config: server is empty")
	}
	if c.DocID == "" {
		return errors.New("grist config: doc id is empty")
	}
	if c.PageSize <= 0 {
		c.PageSize = 1000
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 4
	}
	if c.MaxInFlight > 10 {
		return fmt.Errorf("grist config: document %s: max in flight %d exceeds Grist's limit of 10 per document", c.DocID, c.MaxInFlight)
	}
	if c.FullEvery <= 0 {
		c.FullEvery = 24 * time.Hour
	}
	if c.RetryMax == 0 {
		c.RetryMax = 8
	}
	if c.RetryWaitMin <= 0 {
		c.RetryWaitMin = 500 * time.Millisecond
	}
	if c.RetryWaitMax <= 0 {
		c.RetryWaitMax = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Stats are cumulative counters since New.
type Stats struct {
	Requests      int64 // HTTP requests issued (not counting retries)
	Retries429    int64 // retries after 429 Too Many Requests
	Retries5xx    int64 // retries after a 5xx
	Rows          int64 // records yielded
	Links         int64 // links yielded
	RefUnmatched  int64 // Ref/RefList cells holding text instead of a row id (kept as a property, no link)
	RefDangling   int64 // Ref ids whose target row has no key (target keyed by a column)
	FullScans     int64 // full listings
	Incremental   int64 // incremental reads through /compare
	NotModified   int64 // reads answered with sources.ErrNotModified
	PageShrinks   int64 // SQL pages halved after the statement timeout
	Fallbacks     int64 // incremental reads that fell back to a full listing
	RecordsReads  int64 // pages read through /records instead of /sql
	DuplicateKeys int64 // rows skipped because their key column value repeated
	ETagProbes    int64 // conditional GETs sent for ETag polling (when /states is refused)
	ETag304       int64 // ETag probes answered 304 Not Modified
}

type counters struct {
	Requests, Retries429, Retries5xx, Rows, Links, RefUnmatched, RefDangling,
	FullScans, Incremental, NotModified, PageShrinks, Fallbacks, RecordsReads, DuplicateKeys,
	ETagProbes, ETag304 atomic.Int64
}

// Source reads one Grist document. It is safe for concurrent use; all its
// requests share one MaxInFlight limit.
type Source struct {
	name   string
	cfg    Config
	c      *client
	logger *slog.Logger
	stats  counters

	mu       sync.Mutex
	noSQL    bool              // /sql refused (403/404): use /records
	renames  map[string]string // configured tableId -> current tableId
	pageSize int               // current SQL page size (shrinks on timeout)
}

// New returns a Source for cfg. It does no I/O. Errors name the invalid field.
func New(name string, cfg Config, logger *slog.Logger) (*Source, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Source{name: name, cfg: cfg, logger: logger.With("source", name, "doc", cfg.DocID), renames: map[string]string{}, pageSize: cfg.PageSize}
	c, err := newClient(cfg, &s.stats, s.logger)
	if err != nil {
		return nil, err
	}
	s.c = c
	return s, nil
}

// Name returns the source name given to New.
func (s *Source) Name() string { return s.name }

// Stats returns a snapshot of the counters.
func (s *Source) Stats() Stats {
	c := &s.stats
	return Stats{
		Requests: c.Requests.Load(), Retries429: c.Retries429.Load(), Retries5xx: c.Retries5xx.Load(),
		Rows: c.Rows.Load(), Links: c.Links.Load(), RefUnmatched: c.RefUnmatched.Load(), RefDangling: c.RefDangling.Load(),
		FullScans: c.FullScans.Load(), Incremental: c.Incremental.Load(), NotModified: c.NotModified.Load(),
		PageShrinks: c.PageShrinks.Load(), Fallbacks: c.Fallbacks.Load(), RecordsReads: c.RecordsReads.Load(),
		DuplicateKeys: c.DuplicateKeys.Load(), ETagProbes: c.ETagProbes.Load(), ETag304: c.ETag304.Load(),
	}
}

// cursorState is the JSON cursor: the document's action hash when the
// listing started (from /states), when the last full listing finished
// (Unix seconds), and a fingerprint of the schema read. When /states is
// refused, ETags and Config hold what ETag polling needs (etag.go); both are
// omitted otherwise, so cursors written before they existed still parse.
type cursorState struct {
	Hash   string `json:"h"`
	Full   int64  `json:"full"`
	Schema string `json:"schema"`
	// ETags maps each probe (a GET path below the document, with its
	// query) to the ETag it answered when the listing started.
	ETags map[string]string `json:"etags,omitempty"`
	// Config fingerprints the configured selection the probes were
	// chosen for (configPrint).
	Config string `json:"cfg,omitempty"`
}

func (c cursorState) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// table is one table to read, with its visible columns in parentPos order.
type table struct {
	ID     string // current tableId
	Cols   []column
	KeyCol string // "" = key by row id
	HasAtt bool
}

// Read yields pages of records (sources.Source). With cursor "" or when a
// full listing is due it lists every row (Page.Partial false). Otherwise it
// asks /states; an unchanged action hash yields sources.ErrNotModified after
// that one request, and a moved one yields only the rows /compare reports,
// with Page.Partial true and removed rows in Page.Deleted. A pruned or
// unknown hash falls back to a full listing. When /states is refused (403,
// or a 404 other than "document not found") it polls with ETags instead
// (readETag): every probe answering 304 yields sources.ErrNotModified,
// anything else a full listing. Only the last page carries the new cursor,
// so a listing that fails midway is read again next time.
func (s *Source) Read(ctx context.Context, cursor string) iter.Seq2[*sources.Page, error] {
	return func(yield func(*sources.Page, error) bool) {
		if err := s.read(ctx, cursor, yield); err != nil && !errors.Is(err, errStopped) {
			yield(nil, err)
		}
	}
}

var errStopped = errors.New("consumer stopped")

type yieldFunc = func(*sources.Page, error) bool

func (s *Source) read(ctx context.Context, cursor string, yield yieldFunc) error {
	var old cursorState
	if cursor != "" {
		if err := json.Unmarshal([]byte(cursor), &old); err != nil {
			s.logger.Warn("unreadable cursor, listing everything", "err", err)
			old = cursorState{}
		}
	}
	head, err := s.headHash(ctx)
	if err != nil {
		return err
	}
	if head == "" {
		return s.readETag(ctx, cursor, old, yield)
	}
	now := s.cfg.Now()
	fullDue := old.Hash == "" || now.Sub(time.Unix(old.Full, 0)) >= s.cfg.FullEvery
	if !fullDue && head != "" && head == old.Hash {
		s.stats.NotModified.Add(1)
		yield(nil, sources.ErrNotModified)
		return errStopped
	}
	var delta *compareResult
	if !fullDue && head != "" {
		delta, err = s.compare(ctx, old.Hash)
		if err != nil {
			return err
		}
		if delta == nil {
			s.stats.Fallbacks.Add(1)
		}
	}
	tables, err := s.schema(ctx)
	if err != nil {
		return err
	}
	fp := fingerprint(tables)
	next := cursorState{Hash: head, Full: old.Full, Schema: fp}
	if delta != nil && fp == old.Schema && !delta.touchesSchema(tables) {
		s.stats.Incremental.Add(1)
		return s.readIncremental(ctx, tables, delta, cursor, next, yield)
	}
	if delta != nil {
		s.stats.Fallbacks.Add(1)
	}
	s.stats.FullScans.Add(1)
	next.Full = now.Unix()
	return s.readFull(ctx, tables, cursor, next, nil, yield)
}

// headHash returns the newest action hash from GET /states, or "" when the
// document does not allow it (403/404) or has no history, which switches
// Read to ETag polling.
func (s *Source) headHash(ctx context.Context) (string, error) {
	var st struct {
		States []struct {
			N int64  `json:"n"`
			H string `json:"h"`
		} `json:"states"`
	}
	err := s.c.getJSON(ctx, http.MethodGet, "/states", nil, nil, "", "read action states", &st)
	if err != nil {
		if code := statusOf(err); code == http.StatusForbidden || code == http.StatusNotFound && !isDocNotFound(err) {
			s.logger.Info("action states refused, polling with ETags", "err", err)
			return "", nil
		}
		return "", err
	}
	if len(st.States) == 0 {
		return "", nil
	}
	return st.States[0].H, nil
}

func isDocNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && strings.Contains(ae.Message, "document not found")
}

// compareResult is the part of /compare the source uses (grist-api.md §8).
type compareResult struct {
	Renames [][2]string
	Deltas  map[string]*tableDelta
}

type tableDelta struct {
	AddRows       []int64                     `json:"addRows"`
	UpdateRows    []int64                     `json:"updateRows"`
	RemoveRows    []int64                     `json:"removeRows"`
	ColumnDeltas  map[string]map[string][]any `json:"columnDeltas"`
	ColumnRenames [][]any                     `json:"columnRenames"`
}

// touchesSchema reports a change /compare cannot express row by row: a
// renamed or removed table or a renamed column among the tables read.
func (d *compareResult) touchesSchema(tables []*table) bool {
	ours := map[string]bool{}
	for _, t := range tables {
		ours[t.ID] = true
	}
	if len(d.Renames) > 0 {
		return true
	}
	for name, td := range d.Deltas {
		if strings.HasPrefix(name, "-") && ours[name[1:]] {
			return true
		}
		if ours[name] && len(td.ColumnRenames) > 0 {
			return true
		}
	}
	return false
}

// compare asks /compare for the changes since hash. It returns nil when the
// hash is unknown or pruned (500 "Cannot read hash") or the answer lacks
// "left" (the HEAD~N trap, grist-api.md "Observed" §8), meaning: list
// everything. Table renames are recorded so configured names follow them.
func (s *Source) compare(ctx context.Context, hash string) (*compareResult, error) {
	var raw struct {
		Left    *struct{ H string } `json:"left"`
		Details struct {
			RightChanges struct {
				TableRenames [][]any                `json:"tableRenames"`
				TableDeltas  map[string]*tableDelta `json:"tableDeltas"`
			} `json:"rightChanges"`
		} `json:"details"`
	}
	q := url.Values{"left": {hash}, "right": {"HEAD"}}
	if err := s.c.getJSON(ctx, http.MethodGet, "/compare", q, nil, "", "compare with previous state", &raw); err != nil {
		code := statusOf(err)
		if code == http.StatusInternalServerError || code == http.StatusBadRequest || code == http.StatusForbidden {
			s.logger.Info("compare failed, listing everything", "err", err)
			return nil, nil
		}
		return nil, err
	}
	if raw.Left == nil || raw.Left.H != hash {
		return nil, nil
	}
	res := &compareResult{Deltas: raw.Details.RightChanges.TableDeltas}
	for _, r := range raw.Details.RightChanges.TableRenames {
		if len(r) != 2 {
			continue
		}
		from, _ := r[0].(string)
		to, _ := r[1].(string)
		res.Renames = append(res.Renames, [2]string{from, to})
		s.followRename(from, to)
	}
	return res, nil
}

func (s *Source) followRename(from, to string) {
	if from == "" || to == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.renames {
		if v == from {
			s.renames[k] = to
		}
	}
	if slices.Contains(s.cfg.Tables, from) {
		s.renames[from] = to
	}
	s.logger.Info("table renamed upstream", "from", from, "to", to)
}

func (s *Source) current(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if to, ok := s.renames[id]; ok {
		return to
	}
	return id
}

// tableList is the answer of GET /docs/{docId}/tables (grist-api.md §2).
type tableList struct {
	Tables []struct {
		ID     string `json:"id"`
		Fields struct {
			SummarySourceTable int64 `json:"summarySourceTable"`
		} `json:"fields"`
	} `json:"tables"`
}

// UserTable reports whether a table of GET /docs/{docId}/tables (its id
// and fields.summarySourceTable) holds user data: not a summary table
// (summarySourceTable != 0, grist-api.md §2 "Tables and columns"), not a metadata table
// (_grist*) and not a hidden helper table (GristHidden_*). A source with no
// tables configured reads exactly these.
func UserTable(id string, summarySourceTable int64) bool {
	return summarySourceTable == 0 && !strings.HasPrefix(id, "_grist") && !strings.HasPrefix(id, "GristHidden_")
}

// schema reads /tables and the columns of every selected table.
func (s *Source) schema(ctx context.Context) ([]*table, error) {
	var tl tableList
	if err := s.c.getJSON(ctx, http.MethodGet, "/tables", nil, nil, "", "list tables", &tl); err != nil {
		return nil, err
	}
	exists := map[string]bool{}
	var ids []string
	for _, t := range tl.Tables {
		exists[t.ID] = true
		if len(s.cfg.Tables) == 0 && UserTable(t.ID, t.Fields.SummarySourceTable) {
			ids = append(ids, t.ID)
		}
	}
	keyCols := map[string]string{}
	if len(s.cfg.Tables) > 0 {
		for _, want := range s.cfg.Tables {
			cur := s.current(want)
			if !exists[cur] {
				return nil, &APIError{Status: http.StatusNotFound, Doc: s.cfg.DocID, Table: want, Op: "list tables", Message: fmt.Sprintf("Table not found %q", cur)}
			}
			ids = append(ids, cur)
			if kc, ok := s.cfg.KeyColumns[want]; ok {
				keyCols[cur] = kc
			}
		}
	} else {
		sort.Strings(ids)
	}
	for k, v := range s.cfg.KeyColumns {
		if _, ok := keyCols[s.current(k)]; !ok {
			keyCols[s.current(k)] = v
		}
	}
	out := make([]*table, 0, len(ids))
	for _, id := range ids {
		t, err := s.columns(ctx, id)
		if err != nil {
			return nil, err
		}
		t.KeyCol = keyCols[id]
		if t.KeyCol != "" && !slices.ContainsFunc(t.Cols, func(c column) bool { return c.ID == t.KeyCol }) {
			return nil, fmt.Errorf("grist document %s table %s: key column %q not found", s.cfg.DocID, id, t.KeyCol)
		}
		out = append(out, t)
	}
	return out, nil
}

func (s *Source) columns(ctx context.Context, id string) (*table, error) {
	var cl struct {
		Columns []struct {
			ID     string `json:"id"`
			Fields struct {
				ColRef    int64       `json:"colRef"`
				Type      string      `json:"type"`
				IsFormula bool        `json:"isFormula"`
				ParentPos json.Number `json:"parentPos"`
			} `json:"fields"`
		} `json:"columns"`
	}
	if err := s.c.getJSON(ctx, http.MethodGet, "/tables/"+url.PathEscape(id)+"/columns", nil, nil, id, "list columns", &cl); err != nil {
		return nil, err
	}
	t := &table{ID: id}
	for _, c := range cl.Columns {
		if hiddenColumn(c.ID, c.Fields.Type) {
			continue
		}
		pos, _ := c.Fields.ParentPos.Float64()
		col := newColumn(c.ID, c.Fields.Type, c.Fields.IsFormula, pos, c.Fields.ColRef)
		if col.Base == "Attachments" {
			t.HasAtt = true
		}
		t.Cols = append(t.Cols, col)
	}
	// The array order is not reliable (grist-api.md "Observed" §2).
	sort.SliceStable(t.Cols, func(i, j int) bool {
		if t.Cols[i].ParentPos != t.Cols[j].ParentPos {
			return t.Cols[i].ParentPos < t.Cols[j].ParentPos
		}
		return t.Cols[i].ColRef < t.Cols[j].ColRef
	})
	return t, nil
}

func fingerprint(tables []*table) string {
	h := sha1.New()
	for _, t := range tables {
		fmt.Fprintf(h, "%s|%s\n", t.ID, t.KeyCol)
		for _, c := range t.Cols {
			fmt.Fprintf(h, " %s:%s:%v\n", c.ID, c.Type, c.IsFormula)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// keyString formats a key column value.
func keyString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, x != ""
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// ResetCursor returns cursor without its change position (the action hash,
// the last full listing's time, the ETags): a Read from it lists every row
// (sources.CursorResetter) but still knows the schema it read before.
func (s *Source) ResetCursor(cursor string) string {
	var c cursorState
	if err := json.Unmarshal([]byte(cursor), &c); err != nil {
		return ""
	}
	c.Hash, c.Full, c.ETags, c.Config = "", 0, nil, ""
	return c.String()
}
