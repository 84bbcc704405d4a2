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
	"maps"
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
	// Names are the table and column names the pipeline's config uses for
	// this document beyond Tables and KeyColumns (the data model's), with
	// their config paths: a table or column renamed in Grist keeps the name
	// the config uses, with a warning naming the lines to change, and a
	// column the config uses that is gone stops the read (names.go).
	Names []Name
	// Require are the tables the document must have when Tables is empty
	// (every table read): the tables the data model maps that no other
	// source of the pipeline provides. A Read finding one missing (a typo
	// in the config, a table removed in Grist; a renamed one is followed)
	// yields a SchemaError before reading any row: a table that is not
	// there is never read as an empty one, whose records would be deleted.
	Require []string
	// Path is the source's config path, e.g. "pipelines[0].sources[0].grist",
	// used to name Tables and KeyColumns entries in warnings and errors.
	Path string
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
	prefix := c.Path
	if prefix != "" {
		prefix += "."
	}
	own := make([]Name, 0, len(c.Tables)+len(c.KeyColumns))
	for i, t := range c.Tables {
		own = append(own, Name{Table: t, Path: fmt.Sprintf("%stables[%d]", prefix, i)})
	}
	for _, t := range slices.Sorted(maps.Keys(c.KeyColumns)) {
		// The line names the table (its key) and the column (its value).
		own = append(own, Name{Table: t, Path: prefix + "key_columns." + t},
			Name{Table: t, Column: c.KeyColumns[t], Path: prefix + "key_columns." + t})
	}
	c.Names = append(own, c.Names...)
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
	noSQL    bool // /sql refused (403/404): use /records
	pageSize int  // current SQL page size (shrinks on timeout)
}

// New returns a Source for cfg. It does no I/O. Errors name the invalid field.
func New(name string, cfg Config, logger *slog.Logger) (*Source, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Source{name: name, cfg: cfg, logger: logger.With("source", name, "doc", cfg.DocID), pageSize: cfg.PageSize}
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
	// Tables remembers, by tableRef and colRef, the names the tables and
	// columns read were synced under (names.go).
	Tables []memTable `json:"tables,omitempty"`
	// Warnings are the schema's warnings when it was read, repeated while
	// the document is not modified.
	Warnings []string `json:"warn,omitempty"`
}

// notModified is sources.ErrNotModified with the cursor's warnings.
func notModified(c cursorState) error {
	if len(c.Warnings) == 0 {
		return sources.ErrNotModified
	}
	return &sources.NotModifiedError{Warnings: c.Warnings}
}

func (c cursorState) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// table is one table to read, with its visible columns in parentPos order.
type table struct {
	ID   string // current tableId (API paths, SQL)
	Ref  int64  // tableRef, stable across renames
	Name string // the name records use: key prefix and anchor (names.go)
	// Prev is the name the table's records were synced under when it
	// differs from Name (a rename the config followed): their keys move.
	Prev   string
	Cols   []column
	KeyCol string // attribute name of the key column; "" = key by row id
	// KeyColID is the key column's current colId.
	KeyColID string
	HasAtt   bool
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
	return s.ReadIndexed(ctx, cursor, nil)
}

// ReadIndexed is Read with what state remembers of the source's rows
// (sources.IndexedReader): records carry their Grist row as Origin (scope
// the tableRef), and with idx an incremental read takes the keys of
// referenced rows from it instead of reading key columns, notices a row
// whose key changed (its record moves: Page.Renamed) and reads again the
// rows that refer to it, so that their edges follow. idx nil reads key
// columns from Grist as needed.
func (s *Source) ReadIndexed(ctx context.Context, cursor string, idx sources.RowIndex) iter.Seq2[*sources.Page, error] {
	return func(yield func(*sources.Page, error) bool) {
		if err := s.read(ctx, cursor, idx, yield); err != nil && !errors.Is(err, errStopped) {
			yield(nil, err)
		}
	}
}

var errStopped = errors.New("consumer stopped")

type yieldFunc = func(*sources.Page, error) bool

func (s *Source) read(ctx context.Context, cursor string, idx sources.RowIndex, yield yieldFunc) error {
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
		return s.readETag(ctx, cursor, old, idx, yield)
	}
	now := s.cfg.Now()
	cfg := s.configPrint()
	// A changed selection (tables, key columns, names the config uses)
	// lists everything: records change although the document did not.
	fullDue := old.Hash == "" || now.Sub(time.Unix(old.Full, 0)) >= s.cfg.FullEvery || old.Config != "" && old.Config != cfg
	if !fullDue && head != "" && head == old.Hash {
		s.stats.NotModified.Add(1)
		yield(nil, notModified(old))
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
	si, err := s.schema(ctx, old.Tables)
	if err != nil {
		return err
	}
	s.warn(si)
	fp := fingerprint(si.tables)
	next := cursorState{Hash: head, Full: old.Full, Schema: fp, Tables: si.memory, Config: cfg, Warnings: si.warnings}
	if delta != nil && fp == old.Schema && !delta.touchesSchema(si.tables) {
		s.stats.Incremental.Add(1)
		return s.readIncremental(ctx, si, delta, idx, cursor, next, yield)
	}
	if delta != nil {
		s.stats.Fallbacks.Add(1)
	}
	s.stats.FullScans.Add(1)
	next.Full = now.Unix()
	return s.readFull(ctx, si, idx, cursor, next, nil, yield)
}

// warn logs the schema's warnings; the read's first page carries them.
func (s *Source) warn(si *schemaInfo) {
	for _, w := range si.warnings {
		s.logger.Warn(w)
	}
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
	// MayBeIncomplete: a bulk change dropped cell values from
	// ColumnDeltas (grist-core keeps those of 10 rows per action).
	MayBeIncomplete bool `json:"mayBeIncomplete"`
}

// touchesSchema reports a change /compare cannot express row by row: a
// table of ours removed. Every other schema change that reaches records
// (a column added, removed or renamed under a new name, a table renamed
// under a new name, a type change) changes the schema fingerprint, and a
// rename the config keeps the old name of changes no record.
func (d *compareResult) touchesSchema(tables []*table) bool {
	for _, t := range tables {
		if _, ok := d.Deltas["-"+t.ID]; ok {
			return true
		}
	}
	return false
}

// compare asks /compare for the changes since hash. It returns nil when the
// hash is unknown or pruned (500 "Cannot read hash") or the answer lacks
// "left" (the HEAD~N trap, grist-api.md "Observed" §8), meaning: list
// everything.
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
	}
	return res, nil
}

// UserTable reports whether a table of GET /docs/{docId}/tables (its id
// and fields.summarySourceTable) holds user data: not a summary table
// (summarySourceTable != 0, grist-api.md §2 "Tables and columns"), not a metadata table
// (_grist*) and not a hidden helper table (GristHidden_*). A source with no
// tables configured reads exactly these.
func UserTable(id string, summarySourceTable int64) bool {
	return summarySourceTable == 0 && !strings.HasPrefix(id, "_grist") && !strings.HasPrefix(id, "GristHidden_")
}

func (s *Source) columns(ctx context.Context, id string) (*table, error) {
	var cl struct {
		Columns []struct {
			ID     string `json:"id"`
			Fields struct {
				ColRef    int64       `json:"colRef"`
				Type      string      `json:"type"`
				IsFormula bool        `json:"isFormula"`
				Formula   string      `json:"formula"`
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
		// An empty column (isFormula with no formula) is data to us: no
		// formula computes its values, and grist-core makes it a data
		// column when its first value is written
		// (sandbox/grist/useractions.py _ensure_column_accepts_data).
		formula := c.Fields.IsFormula && c.Fields.Formula != ""
		col := newColumn(c.ID, c.Fields.Type, formula, pos, c.Fields.ColRef)
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

// fingerprint hashes the shape of the records the tables yield: the names
// they use, key columns, types, formula or data. A rename the config
// follows under the old name leaves it as it was, and so does an empty
// column becoming data (column.IsFormula).
func fingerprint(tables []*table) string {
	h := sha1.New()
	for _, t := range tables {
		fmt.Fprintf(h, "%s|%s\n", t.Name, t.KeyCol)
		for _, c := range t.Cols {
			fmt.Fprintf(h, " %s:%s:%v:%s\n", c.Name, c.Type, c.IsFormula, c.TargetName)
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
