// Package review is the expert review of a files pipeline's documents in
// Grist, the human in the loop of the Semantic RAG flow (docs/review.md).
//
// kgsync publishes what it parsed to a table pair in a Grist document: one
// Documents row per document and one Elements row per element (section,
// paragraph, clause, table…: the stable unit; chunks regroup when the
// chunk size changes, elements do not). Experts correct the text, exclude
// an element or link it to others that must come with it; kgsync reads
// those columns back through the Grist source's own change tracking
// (/states, /compare) at the start of each run and applies them to the
// parsed tree before chunking, so that only the chunks holding a corrected
// element are embedded again.
//
// The run calls, in order: Begin (read back the experts' columns), Mark and
// Pending (what makes a document's record change), Apply (the overlay on
// one parsed tree), Publish (after a batch is committed: write the changed
// documents' rows), Deleted (documents gone), Mandatory (the experts'
// MANDATORY links, for the link pass).
//
// A correction never silently vanishes: when the parsed text under it
// changes, the correction is kept and the row flagged needs_review with
// both texts; an element that leaves its document while carrying expert
// input keeps its row, marked missing; only the expert deleting the row
// drops the input.
package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/state"
)

// CursorName is the state cursor (of a reserved source name) holding the
// read-back position in the Elements table.
const CursorName = "_review"

// Config configures a Review.
type Config struct {
	// Pipeline is the pipeline's name in state.
	Pipeline string
	// Grist is the review document (Server, DocID, APIKey, HTTPClient,
	// MaxInFlight, FullEvery and retry settings are used); Path is its
	// config path ("pipelines[0].review.grist"), for messages.
	Grist grist.Config
	// DocumentsTable and ElementsTable are the tables' ids.
	DocumentsTable, ElementsTable string
	// Sources are the reviewed files sources; empty = every document
	// source.
	Sources []string
	// Store keeps the review state and the read-back cursor.
	Store  Store
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Store is what a Review needs of state.
type Store interface {
	state.ReviewStore
	CursorGet(ctx context.Context, pipeline, source string) (string, error)
	Commit(ctx context.Context, c state.Commit) error
	RecordGet(ctx context.Context, pipeline, source string, keys []string) (map[string]state.Record, error)
}

// Stats count one run's review work.
type Stats struct {
	// RowsRead are Elements rows the read-back read; ExpertChanges those
	// whose expert columns changed.
	RowsRead, ExpertChanges int
	// RowsAdded, RowsUpdated, RowsDeleted are Elements rows written.
	RowsAdded, RowsUpdated, RowsDeleted int
	// Requests are the HTTP requests sent to Grist (writes and reads).
	Requests int64
	// Conflicts are corrections newly flagged because their parsed text
	// changed, Missing elements with expert input newly marked gone.
	Conflicts, Missing int
}

// Review is one pipeline's review; safe for one run at a time.
type Review struct {
	cfg    Config
	w      *grist.Writer
	src    *grist.Source
	log    *slog.Logger
	srcSet map[string]bool

	mu        sync.Mutex
	installed bool
	marks     map[string]uint64
	pending   map[string]bool
	targeted  map[int64]bool
	stats     Stats
	warnings  []string
}

// New returns a Review for cfg. It does no I/O.
func New(cfg Config) (*Review, error) {
	if cfg.Store == nil {
		return nil, errors.New("review: no store")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	w, err := grist.NewWriter(cfg.Grist, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("review: %w", err)
	}
	rc := cfg.Grist
	rc.Tables = []string{cfg.ElementsTable}
	rc.KeyColumns = nil
	path := rc.Path
	if path == "" {
		path = "review.grist"
	}
	rc.Path = path
	// Every Elements column kgsync needs: the read-back's schema check
	// finds one removed or renamed before anything is written (readBack
	// adds it back).
	for _, d := range elementsCols(cfg.DocumentsTable, cfg.ElementsTable) {
		rc.Names = append(rc.Names, grist.Name{Table: cfg.ElementsTable, Column: d.id, Path: path + ".elements_table"})
	}
	src, err := grist.New("review", rc, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("review: %w", err)
	}
	r := &Review{cfg: cfg, w: w, src: src, log: cfg.Logger.With("review", cfg.ElementsTable), srcSet: map[string]bool{}}
	for _, s := range cfg.Sources {
		r.srcSet[s] = true
	}
	return r, nil
}

// Reviews reports whether documents of source are reviewed.
func (r *Review) Reviews(source string) bool {
	return len(r.srcSet) == 0 || r.srcSet[source]
}

// Writer is the review document's writer (for install and tests).
func (r *Review) Writer() *grist.Writer { return r.w }

// Install creates the review tables and columns that are missing (see
// Install); once it succeeded the Review does not check again.
func (r *Review) Install(ctx context.Context) ([]Change, error) {
	ch, err := Install(ctx, r.w, r.cfg.DocumentsTable, r.cfg.ElementsTable)
	if err == nil {
		r.mu.Lock()
		r.installed = true
		r.mu.Unlock()
	}
	return ch, err
}

// invalidColumn returns the table and column a write failed on when Grist
// refused it for naming a column the table does not have: 400 `Invalid
// column "x"` (grist-core app/plugin/TableOperationsImpl.ts:247-253).
func invalidColumn(err error) (table, col string, ok bool) {
	var ae *grist.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		return "", "", false
	}
	m := invalidColumnRE.FindStringSubmatch(ae.Message)
	if m == nil {
		return "", "", false
	}
	return ae.Table, m[1], true
}

var invalidColumnRE = regexp.MustCompile(`^Invalid column "([^"]+)"`)

// reinstall adds back the review columns an expert removed (or renamed) in
// Grist, as `kgsync grist review install` does, and warns naming them:
// table and column as the read-back or the refused write found them
// (found), then what Install added.
func (r *Review) reinstall(ctx context.Context, table, col, found string) error {
	r.mu.Lock()
	r.installed = false
	r.mu.Unlock()
	ch, err := r.Install(ctx)
	var added []string
	for _, c := range ch {
		if c.Action == "added column" || c.Action == "created table" {
			added = append(added, strings.TrimSpace(c.Table+" "+c.Column))
		}
	}
	msg := fmt.Sprintf("review: table %q column %q, which kgsync writes, %s; kgsync adds the review columns that are missing, as `kgsync grist review install` does", table, col, found)
	if err != nil {
		r.warn("%s: %v", msg, err)
		return err
	}
	if len(added) > 0 {
		msg += " (added: " + strings.Join(added, ", ") + ")"
	}
	r.warn("%s; the values it held are not restored (Grist's document history has them)", msg)
	return nil
}

func (r *Review) ensure(ctx context.Context) error {
	r.mu.Lock()
	done := r.installed
	r.mu.Unlock()
	if done {
		return nil
	}
	_, err := r.Install(ctx)
	return err
}

// Stats returns the counters of the run since Begin.
func (r *Review) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Requests = r.w.Requests() + r.src.Stats().Requests
	return s
}

// Warnings returns what the run's review asks the user to act on.
func (r *Review) Warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.warnings)
}

func (r *Review) warn(msg string, args ...any) {
	m := fmt.Sprintf(msg, args...)
	r.log.Warn(m)
	r.mu.Lock()
	r.warnings = append(r.warnings, m)
	r.mu.Unlock()
}

// Begin starts a run: it reads back what experts changed in the Elements
// table since the last run (readBack) and loads what Mark, Pending and
// Mandatory answer from. A read-back that fails (Grist down) is a warning,
// not an error: the corrections already in state still apply, and the
// changes are read on a later run.
func (r *Review) Begin(ctx context.Context) error {
	r.mu.Lock()
	r.stats = Stats{}
	r.warnings = nil
	r.mu.Unlock()
	if err := r.readBack(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.warn("review: reading the experts' changes from Grist failed; the corrections kgsync has apply, the rest is read next run: %v", err)
	}
	if err := r.retryDeleted(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.warn("%v", err)
	}
	return r.load(ctx)
}

// Load reads what Mark and Pending answer from state alone, without
// reading Grist (Begin does both).
func (r *Review) Load(ctx context.Context) error { return r.load(ctx) }

// load reads the expert elements and pending documents from state.
func (r *Review) load(ctx context.Context) error {
	exp, err := r.cfg.Store.ReviewExpert(ctx, r.cfg.Pipeline)
	if err != nil {
		return err
	}
	byDoc := map[string][]string{}
	targeted := map[int64]bool{}
	for _, se := range exp {
		e, err := decodeElem(se)
		if err != nil {
			return err
		}
		for _, t := range e.d.With {
			targeted[t] = true
		}
		b, _ := json.Marshal([]any{e.d.Corrected, e.d.Exclude, e.d.With, e.d.Note, e.d.By, e.d.At, e.d.Base})
		byDoc[e.Doc] = append(byDoc[e.Doc], string(b))
	}
	marks := map[string]uint64{}
	for doc, parts := range byDoc {
		sort.Strings(parts)
		h, err := diff.Hash(strings.Join(parts, "\n"))
		if err != nil {
			return err
		}
		marks[doc] = h
	}
	docs, err := r.cfg.Store.ReviewDocuments(ctx, r.cfg.Pipeline, nil)
	if err != nil {
		return err
	}
	pending := map[string]bool{}
	for id, d := range docs {
		if d.Pending {
			pending[id] = true
		}
	}
	r.mu.Lock()
	r.marks, r.pending, r.targeted = marks, pending, targeted
	r.mu.Unlock()
	return nil
}

// Mark is a hash of the expert input on document docID (0 when none): the
// pipeline folds it into the document record's hash, so that a change of
// the experts' columns reprocesses the document although its file did not
// change, and only then. Rows kept missing count too: an element that
// leaves the document or comes back does not change it (the file did).
func (r *Review) Mark(docID string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.marks[docID]
}

// Pending reports whether document docID's rows must be written to Grist
// again (a publish failed or was cut short): the pipeline then processes
// the document although nothing changed.
func (r *Review) Pending(docID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending[docID]
}

// sticky reports whether a stored element must not be lost: it carries
// expert input or another element's mandatory link points at it.
func (r *Review) sticky(e *elem) bool {
	if e.d.expert() {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return e.RowID != 0 && r.targeted[e.RowID]
}

// Link is one MANDATORY edge an expert asked for (mandatory_with).
type Link struct {
	// From and To are element node ids; FromDoc and ToDoc their documents.
	FromDoc, From, ToDoc, To string
	Note, By, At             string
}

// Mandatory returns the experts' mandatory links between elements that are
// in their documents and not excluded, sorted.
func (r *Review) Mandatory(ctx context.Context) ([]Link, error) {
	exp, err := r.cfg.Store.ReviewExpert(ctx, r.cfg.Pipeline)
	if err != nil {
		return nil, err
	}
	var rows []int64
	var from []elem
	for _, se := range exp {
		e, err := decodeElem(se)
		if err != nil {
			return nil, err
		}
		if len(e.d.With) == 0 || e.d.Status != "" || e.d.Exclude {
			continue
		}
		from = append(from, e)
		rows = append(rows, e.d.With...)
	}
	if len(from) == 0 {
		return nil, nil
	}
	targets, err := r.cfg.Store.ReviewRows(ctx, r.cfg.Pipeline, rows)
	if err != nil {
		return nil, err
	}
	var out []Link
	for _, e := range from {
		for _, id := range e.d.With {
			t, ok := targets[id]
			if !ok {
				continue
			}
			te, err := decodeElem(t)
			if err != nil {
				return nil, err
			}
			if te.d.Status != "" || te.d.Exclude || te.Element == e.Element {
				continue
			}
			out = append(out, Link{FromDoc: e.Doc, From: e.Element, ToDoc: te.Doc, To: te.Element, Note: e.d.Note, By: e.d.By, At: e.d.At})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].From != out[j].From {
			return out[i].From < out[j].From
		}
		return out[i].To < out[j].To
	})
	return out, nil
}

// Summary is a pipeline's review at a glance, from state alone (`kgsync
// status`).
type Summary struct {
	Documents int `json:"documents"`
	Elements  int `json:"elements"`
	// Corrected, Excluded and Linked count elements with a corrected text,
	// an exclusion and mandatory links; Pending documents whose rows wait
	// to be written to Grist again.
	Corrected int `json:"corrected"`
	Excluded  int `json:"excluded"`
	Linked    int `json:"linked"`
	Pending   int `json:"pending"`
	// NeedsReview are the elements flagged: corrections whose parsed text
	// changed, elements gone with their expert input, and those an expert
	// flagged.
	NeedsReview []Flagged `json:"needs_review"`
}

// Flagged is one element that needs review.
type Flagged struct {
	Document string `json:"document"`
	Element  string `json:"element"`
	Row      int64  `json:"row"`
	// Status is "current", "missing" or "document deleted"; Reason what
	// kgsync wrote in review_reason ("" when an expert flagged it).
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Corrected is the expert's text; Then the parsed text it was made
	// against.
	Corrected string `json:"corrected,omitempty"`
	Then      string `json:"then,omitempty"`
}

// Summarize reads a pipeline's review summary from state.
func Summarize(ctx context.Context, st state.ReviewStore, pipeline string) (Summary, error) {
	var s Summary
	c, err := st.ReviewCounts(ctx, pipeline)
	if err != nil {
		return s, err
	}
	s.Documents, s.Elements, s.Pending = c.Documents, c.Elements, c.Pending
	exp, err := st.ReviewExpert(ctx, pipeline)
	if err != nil {
		return s, err
	}
	for _, se := range exp {
		e, err := decodeElem(se)
		if err != nil {
			return s, err
		}
		if e.d.Corrected != "" {
			s.Corrected++
		}
		if e.d.Exclude {
			s.Excluded++
		}
		if len(e.d.With) > 0 {
			s.Linked++
		}
		if se.Flagged {
			status := e.d.Status
			if status == "" {
				status = StatusCurrent
			}
			s.NeedsReview = append(s.NeedsReview, Flagged{Document: e.Doc, Element: e.id(), Row: e.RowID, Status: status,
				Reason: e.d.Reason, Corrected: e.d.Corrected, Then: e.d.BaseText})
		}
	}
	return s, nil
}
