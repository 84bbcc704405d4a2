package review

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/sources"
	"github.com/kgsync/kgsync/sources/grist"
	"github.com/kgsync/kgsync/state"
)

// input is the expert's side of one Elements row.
type input struct {
	Corrected string
	Exclude   bool
	With      []int64
	Note      string
	By, At    string
	Flag      bool
	Parsed    string // parsed_text as the row has it
	Element   string // the row's element cell
	DocRow    int64  // the row's document cell
}

// readInput reads a row's cells, in the encoding of the Grist source's
// records (RefList as []any of ids, DateTime as ISO text) or of GET
// /records (RefList as ["L", ids…], DateTime as seconds).
func readInput(f map[string]any) input {
	in := input{
		Corrected: strings.TrimSpace(str(f[ColCorrectedText])),
		Exclude:   f[ColExclude] == true,
		With:      rowList(f[ColMandatoryWith]),
		Note:      strings.TrimSpace(str(f[ColNote])),
		By:        str(f[ColCorrectedBy]),
		At:        timeCell(f[ColCorrectedAt]),
		Flag:      f[ColNeedsReview] == true,
		Parsed:    str(f[ColParsedText]),
		Element:   str(f[ColElement]),
	}
	switch x := f[ColDoc].(type) {
	case int64:
		in.DocRow = x
	case float64:
		in.DocRow = int64(x)
	}
	return in
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func rowList(v any) []int64 {
	l, _ := v.([]any)
	var out []int64
	for i, e := range l {
		if i == 0 && e == "L" {
			continue
		}
		switch x := e.(type) {
		case int64:
			out = append(out, x)
		case float64:
			out = append(out, int64(x))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func timeCell(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return time.Unix(x, 0).UTC().Format(time.RFC3339)
	case float64:
		sec, frac := math.Modf(x)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC().Format(time.RFC3339Nano)
	}
	return ""
}

// take updates e from a row read back; it reports whether the expert's
// input or flag changed. Input given now is given against the parsed text
// the row shows (Base). An expert who typed into parsed_text (read-only by
// convention) made a correction: it moves to corrected_text and the parsed
// text is written back (Push). Clearing needs_review accepts the
// correction against the parsed text shown now.
func take(e *elem, in input) bool {
	d := &e.d
	if d.Parsed != 0 && in.Parsed != "" && diff.TextHash(in.Parsed) != d.Parsed && in.Corrected == "" && d.Corrected == "" {
		in.Corrected = strings.TrimSpace(in.Parsed)
		in.Parsed = ""
		d.Push, d.Pub = true, 0
	}
	base := func() {
		if in.Parsed != "" {
			d.Base, d.BaseText = diff.TextHash(in.Parsed), in.Parsed
		} else {
			d.Base, d.BaseText = d.Parsed, "" // filled in at the next publish
		}
	}
	changed := false
	wasExpert := d.expert()
	corrected := in.Corrected != d.Corrected
	if corrected || in.Exclude != d.Exclude || !slices.Equal(in.With, d.With) || in.Note != d.Note {
		d.Corrected, d.Exclude, d.With, d.Note = in.Corrected, in.Exclude, in.With, in.Note
		changed = true
		if d.expert() && (!wasExpert || corrected && d.Corrected != "") {
			base()
		}
	}
	if !d.expert() {
		d.Base, d.BaseText = 0, ""
	}
	if d.Flag && !in.Flag {
		if d.Status == "" && d.expert() {
			base()
		}
		changed = true
	}
	if in.Flag != d.Flag || in.By != d.By || in.At != d.At {
		d.Flag, d.By, d.At = in.Flag, in.By, in.At
		changed = true
	}
	return changed
}

// readBack reads the Elements rows changed since the last run through the
// Grist source (its /states and /compare change tracking; a full listing
// the first time and every FullEvery) and takes the experts' columns into
// state. Rows deleted by an expert drop their input; a full listing that
// misses more than a third of the rows with expert input drops none of it
// (a table emptied or replaced by mistake) and publishes them again.
func (r *Review) readBack(ctx context.Context) error {
	err := r.readBackOnce(ctx)
	var se *grist.SchemaError
	if !errors.As(err, &se) || se.Column == "" || se.Table != r.cfg.ElementsTable {
		return err
	}
	// A column kgsync needs was removed or renamed in Grist: it is added
	// back (Install) and the read runs again, so the experts' changes in
	// the other columns are read now and the run's writes succeed.
	found := "is gone from the Grist document (removed)"
	if what, _, _ := strings.Cut(se.Problem, ";"); strings.Contains(what, "renamed") {
		found = "is gone from the Grist document (" + what + "; the renamed column is left as it is)"
	}
	if err := r.reinstall(ctx, se.Table, se.Column, found); err != nil {
		return err
	}
	return r.readBackOnce(ctx)
}

// readBackOnce is one read of readBack.
func (r *Review) readBackOnce(ctx context.Context) error {
	cursor, err := r.cfg.Store.CursorGet(ctx, r.cfg.Pipeline, CursorName)
	if err != nil {
		return err
	}
	next := ""
	full := true
	seen := map[int64]bool{}
	for page, err := range r.src.Read(ctx, cursor) {
		if errors.Is(err, sources.ErrNotModified) {
			return nil
		}
		if err != nil {
			var se *grist.SchemaError
			var ae *grist.APIError
			if cursor == "" && (errors.As(err, &se) || errors.As(err, &ae) && ae.Status == http.StatusNotFound && strings.Contains(ae.Message, "Table not found")) {
				// Never read before: the tables are created by the first
				// publish.
				r.log.Info("review tables not there yet: nothing to read back", "err", err)
				return nil
			}
			if errors.As(err, &se) {
				// A review table or column removed or renamed: the
				// next publish adds what is missing (Install); a
				// column is added back now (readBack).
				r.mu.Lock()
				r.installed = false
				r.mu.Unlock()
			}
			return err
		}
		for _, w := range page.Warnings {
			r.warn("review: %s", w)
		}
		if page.Partial {
			full = false
		}
		if err := r.takePage(ctx, page, seen); err != nil {
			return err
		}
		next = page.Cursor
	}
	if full {
		if err := r.fullDeletes(ctx, seen); err != nil {
			return err
		}
	}
	if next != "" && next != cursor {
		return r.cfg.Store.Commit(ctx, state.Commit{Pipeline: r.cfg.Pipeline, Cursors: map[string]string{CursorName: next}})
	}
	return nil
}

// rowOf is the row id of a record key ("Elements:17", whatever the table
// is called now).
func rowOf(key string) int64 {
	i := strings.LastIndexByte(key, ':')
	n, _ := strconv.ParseInt(key[i+1:], 10, 64)
	return n
}

// takePage takes one page of the Elements listing into state, in one
// commit: the rows listed (takeListed) and deleted (takeDeleted), and the
// documents to publish again marked pending, those of rows state does not
// know among them (pendUnknown). seen gets the row ids listed.
func (r *Review) takePage(ctx context.Context, page *sources.Page, seen map[int64]bool) error {
	ids, inputs, deleted := pageRows(page)
	for _, id := range ids {
		seen[id] = true
	}
	r.mu.Lock()
	r.stats.RowsRead += len(ids)
	r.mu.Unlock()
	stored, err := r.cfg.Store.ReviewRows(ctx, r.cfg.Pipeline, append(slices.Clone(ids), deleted...))
	if err != nil {
		return err
	}
	c := state.ReviewCommit{Pipeline: r.cfg.Pipeline}
	pendingDocs := map[string]bool{}
	unknownDocRows, err := r.takeListed(ids, inputs, stored, &c, pendingDocs)
	if err != nil {
		return err
	}
	if err := takeDeleted(deleted, stored, &c, pendingDocs); err != nil {
		return err
	}
	if err := r.pendUnknown(ctx, unknownDocRows, pendingDocs); err != nil {
		return err
	}
	if err := r.setPending(ctx, &c, pendingDocs); err != nil {
		return err
	}
	if len(c.Elements)+len(c.DeleteElements)+len(c.Documents) == 0 {
		return nil
	}
	return r.cfg.Store.ReviewCommit(ctx, c)
}

// pageRows are a page's row ids in listing order with their inputs, and
// the ids of the rows it reports deleted.
func pageRows(page *sources.Page) (ids []int64, inputs map[int64]input, deleted []int64) {
	inputs = map[int64]input{}
	for _, rec := range page.Records {
		id := rec.Origin.ID
		if id == 0 {
			id = rowOf(rec.Key)
		}
		ids = append(ids, id)
		inputs[id] = readInput(rec.Attributes)
	}
	for _, k := range page.Deleted {
		deleted = append(deleted, rowOf(k))
	}
	return ids, inputs, deleted
}

// takeListed takes the inputs of the listed rows state knows (stored)
// into c; a row whose kgsync cells the expert changed (take's Push) marks
// its document pending. It returns the Documents rows of the rows state
// does not know: written by a publish whose answer was lost, or by hand;
// their documents reconcile on their next publish.
func (r *Review) takeListed(ids []int64, inputs map[int64]input, stored map[int64]state.ReviewElement,
	c *state.ReviewCommit, pendingDocs map[string]bool,
) (map[int64]bool, error) {
	unknownDocRows := map[int64]bool{}
	for _, id := range ids {
		se, ok := stored[id]
		if !ok {
			if in := inputs[id]; in.DocRow != 0 {
				unknownDocRows[in.DocRow] = true
			}
			continue
		}
		e, err := decodeElem(se)
		if err != nil {
			return nil, err
		}
		if take(&e, inputs[id]) {
			r.mu.Lock()
			r.stats.ExpertChanges++
			r.mu.Unlock()
			c.Elements = append(c.Elements, e.encode())
			if e.d.Push {
				pendingDocs[e.Doc] = true
			}
		}
	}
	return unknownDocRows, nil
}

// takeDeleted applies the expert's deletion of the rows deleted that state
// knows (dropRow) to c and marks their documents pending.
func takeDeleted(deleted []int64, stored map[int64]state.ReviewElement, c *state.ReviewCommit, pendingDocs map[string]bool) error {
	for _, id := range deleted {
		se, ok := stored[id]
		if !ok {
			continue
		}
		e, err := decodeElem(se)
		if err != nil {
			return err
		}
		ch, del := dropRow(&e)
		if del {
			c.DeleteElements = append(c.DeleteElements, state.ReviewRef{Doc: e.Doc, Element: e.Element})
		} else if ch {
			c.Elements = append(c.Elements, e.encode())
		}
		pendingDocs[e.Doc] = true
	}
	return nil
}

// pendUnknown marks pending the documents whose Documents rows are
// unknownDocRows.
func (r *Review) pendUnknown(ctx context.Context, unknownDocRows map[int64]bool, pendingDocs map[string]bool) error {
	if len(unknownDocRows) == 0 {
		return nil
	}
	docs, err := r.cfg.Store.ReviewDocuments(ctx, r.cfg.Pipeline, nil)
	if err != nil {
		return err
	}
	for id, d := range docs {
		if unknownDocRows[d.RowID] {
			pendingDocs[id] = true
		}
	}
	return nil
}

// dropRow applies an expert's deletion of e's row: its input goes; an
// element still in its document gets a new row at the next publish, one
// that was only kept for its input leaves state (del).
func dropRow(e *elem) (changed, del bool) {
	if e.d.Status != "" {
		return false, true
	}
	e.RowID = 0
	e.d = data{Kind: e.d.Kind, Pos: e.d.Pos, Parent: e.d.Parent, Address: e.d.Address, Parsed: e.d.Parsed}
	return true, false
}

// setPending adds to c the documents docs marked pending.
func (r *Review) setPending(ctx context.Context, c *state.ReviewCommit, docs map[string]bool) error {
	if len(docs) == 0 {
		return nil
	}
	ids := make([]string, 0, len(docs))
	for d := range docs {
		ids = append(ids, d)
	}
	slices.Sort(ids)
	got, err := r.cfg.Store.ReviewDocuments(ctx, r.cfg.Pipeline, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		d, ok := got[id]
		if !ok {
			d = state.ReviewDocument{Doc: id}
		}
		d.Pending = true
		c.Documents = append(c.Documents, d)
	}
	return nil
}

// fullDeletes treats the stored rows a full listing did not list as
// deleted by an expert, within the guard described at readBack.
func (r *Review) fullDeletes(ctx context.Context, seen map[int64]bool) error {
	docs, err := r.cfg.Store.ReviewDocuments(ctx, r.cfg.Pipeline, nil)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(docs))
	for d := range docs {
		ids = append(ids, d)
	}
	slices.Sort(ids)
	var gone []elem
	expert, expertGone := 0, 0
	for start := 0; start < len(ids); start += 500 {
		els, err := r.cfg.Store.ReviewElements(ctx, r.cfg.Pipeline, ids[start:min(len(ids), start+500)])
		if err != nil {
			return err
		}
		for _, list := range els {
			for _, se := range list {
				if se.Expert {
					expert++
				}
				if se.RowID == 0 || seen[se.RowID] {
					continue
				}
				e, err := decodeElem(se)
				if err != nil {
					return err
				}
				if se.Expert {
					expertGone++
				}
				gone = append(gone, e)
			}
		}
	}
	if len(gone) == 0 {
		return nil
	}
	keep := expertGone > 1 && float64(expertGone) > float64(expert)/3
	if keep {
		r.warn("review: %d of the %d Elements rows with expert input are gone from Grist; kgsync keeps their input and writes the rows again (delete fewer rows at a time to drop input)", expertGone, expert)
	}
	c := state.ReviewCommit{Pipeline: r.cfg.Pipeline}
	pending := map[string]bool{}
	for i := range gone {
		e := &gone[i]
		pending[e.Doc] = true
		if keep && e.d.expert() {
			e.RowID, e.d.Pub, e.d.Push = 0, 0, true
			c.Elements = append(c.Elements, e.encode())
			continue
		}
		if _, del := dropRow(e); del {
			c.DeleteElements = append(c.DeleteElements, state.ReviewRef{Doc: e.Doc, Element: e.Element})
		} else {
			c.Elements = append(c.Elements, e.encode())
		}
	}
	if err := r.setPending(ctx, &c, pending); err != nil {
		return err
	}
	return r.cfg.Store.ReviewCommit(ctx, c)
}
