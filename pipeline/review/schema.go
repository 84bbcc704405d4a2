package review

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/sources/grist"
)

// Columns of the Documents table (kgsync writes them all).
const (
	ColDocument    = "document" // the document's node id: the key
	ColSource      = "source"
	ColPath        = "path"
	ColTitle       = "title"
	ColFormat      = "format"
	ColSize        = "size"
	ColContentHash = "content_hash"
	ColLastSynced  = "last_synced"
	ColElements    = "elements"
	ColChunks      = "chunks"
	ColCorrections = "corrections"
	ColExcluded    = "excluded"
	ColConflicts   = "conflicts"
	ColWarnings    = "warnings"
	ColStatus      = "status"
)

// Columns of the Elements table. kgsync writes the parsed ones; the
// expert's are corrected_text, exclude, mandatory_with and note (and
// needs_review, which both sides set); corrected_by and corrected_at are
// trigger formula columns Grist fills when the expert's columns change.
const (
	ColElement       = "element" // the element's node id: the key
	ColDoc           = "document"
	ColKind          = "kind"
	ColAddress       = "address"
	ColHeadingPath   = "heading_path"
	ColOrder         = "order" // ordinal path, sorts in document order
	ColParsedText    = "parsed_text"
	ColChunk         = "chunk"
	ColCorrectedText = "corrected_text"
	ColExclude       = "exclude"
	ColMandatoryWith = "mandatory_with"
	ColNote          = "note"
	ColNeedsReview   = "needs_review"
	ColReviewReason  = "review_reason"
	ColCorrectedFrom = "corrected_from"
	ColElementStatus = "status"
	ColCorrectedBy   = "corrected_by"
	ColCorrectedAt   = "corrected_at"
)

// colDef is one column kgsync needs.
type colDef struct {
	id, typ, label string
	// trigger: a data column with a trigger formula recalculated when one
	// of deps changes (and on new records): RecalcWhen DEFAULT (0) in
	// grist-core sandbox/grist/schema.py.
	formula string
	deps    []string
}

// expertCols are the columns whose change stamps corrected_by/at.
var expertCols = []string{ColCorrectedText, ColExclude, ColMandatoryWith, ColNote}

// WatchedColumns are the Elements columns whose updates a webhook should
// report: the experts' ones (needs_review included).
func WatchedColumns() []string { return append(slices.Clone(expertCols), ColNeedsReview) }

// expertSet is the condition the trigger formulas share: the row carries
// expert input ("" and None otherwise, so that rows kgsync adds stay
// unstamped).
var expertSet = "($" + strings.Join(expertCols, " or $") + ")"

func documentsCols() []colDef {
	return []colDef{
		{id: ColDocument, typ: "Text", label: "Document"},
		{id: ColSource, typ: "Text", label: "Source"},
		{id: ColPath, typ: "Text", label: "Path"},
		{id: ColTitle, typ: "Text", label: "Title"},
		{id: ColFormat, typ: "Text", label: "Format"},
		{id: ColSize, typ: "Int", label: "Size (bytes)"},
		{id: ColContentHash, typ: "Text", label: "Content hash"},
		{id: ColLastSynced, typ: "DateTime:UTC", label: "Last synced"},
		{id: ColElements, typ: "Int", label: "Elements"},
		{id: ColChunks, typ: "Int", label: "Chunks"},
		{id: ColCorrections, typ: "Int", label: "Corrections"},
		{id: ColExcluded, typ: "Int", label: "Excluded"},
		{id: ColConflicts, typ: "Int", label: "Needing review"},
		{id: ColWarnings, typ: "Text", label: "Parse warnings"},
		{id: ColStatus, typ: "Text", label: "Status"},
	}
}

func elementsCols(documents, elements string) []colDef {
	return []colDef{
		{id: ColElement, typ: "Text", label: "Element"},
		{id: ColDoc, typ: "Ref:" + documents, label: "Document"},
		{id: ColKind, typ: "Text", label: "Kind"},
		{id: ColAddress, typ: "Text", label: "Address"},
		{id: ColHeadingPath, typ: "Text", label: "Heading path"},
		{id: ColOrder, typ: "Text", label: "Order"},
		{id: ColParsedText, typ: "Text", label: "Parsed text (read-only)"},
		{id: ColChunk, typ: "Text", label: "Chunk"},
		{id: ColCorrectedText, typ: "Text", label: "Corrected text"},
		{id: ColExclude, typ: "Bool", label: "Exclude"},
		{id: ColMandatoryWith, typ: "RefList:" + elements, label: "Mandatory with"},
		{id: ColNote, typ: "Text", label: "Note"},
		{id: ColNeedsReview, typ: "Bool", label: "Needs review"},
		{id: ColReviewReason, typ: "Text", label: "Review reason"},
		{id: ColCorrectedFrom, typ: "Text", label: "Corrected from (parsed text then)"},
		{id: ColElementStatus, typ: "Text", label: "Status"},
		{id: ColCorrectedBy, typ: "Text", label: "Corrected by",
			formula: "user.Email if " + expertSet + " else \"\"", deps: expertCols},
		{id: ColCorrectedAt, typ: "DateTime:UTC", label: "Corrected at",
			formula: "NOW() if " + expertSet + " else None", deps: expertCols},
	}
}

// Change is one thing Install did.
type Change struct {
	Table  string `json:"table"`
	Action string `json:"action"` // "created table", "added column", "set trigger", "present"
	Column string `json:"column,omitempty"`
}

// Install creates the Documents and Elements tables and every column they
// lack, and leaves everything else as it is: running it again changes
// nothing. Columns are created with POST /tables and POST
// /tables/{t}/columns, the trigger formula columns (corrected_by,
// corrected_at) among them as data columns with their formula; then one
// POST /apply sets their recalcWhen and recalcDeps (colRefs of the
// expert's columns) with UpdateRecord on _grist_Tables_column, as the
// Grist UI does (grist-core app/client/ui/TriggerFormulas.ts): grist-core
// refuses recalcDeps given to a column being added, and its document
// stays broken until it reloads (docs/grist-notes.md). A column that
// exists with another type is an error naming it: kgsync does not convert
// an expert's data.
func Install(ctx context.Context, w *grist.Writer, documents, elements string) ([]Change, error) {
	tables, err := w.Tables(ctx)
	if err != nil {
		return nil, err
	}
	var out []Change
	for _, t := range []struct {
		id   string
		cols []colDef
	}{{documents, documentsCols()}, {elements, elementsCols(documents, elements)}} {
		ch, err := installTable(ctx, w, tables, t.id, t.cols)
		out = append(out, ch...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// installTable creates table id with the columns defs, or the columns it
// lacks, and sets the trigger columns' dependencies (see Install). The
// stages: create (a missing table, with every column), addMissing (the
// columns an existing table lacks), setTriggers.
func installTable(ctx context.Context, w *grist.Writer, tables []grist.TableInfo, id string, defs []colDef) ([]Change, error) {
	exists, err := tableExists(tables, id)
	if err != nil {
		return nil, err
	}
	t := &tableInstall{w: w, id: id, defs: defs, exists: exists, added: map[string]bool{}}
	if !exists {
		if err := t.create(ctx); err != nil {
			return nil, err
		}
	}
	if err := t.addMissing(ctx); err != nil {
		return t.out, err
	}
	if err := t.setTriggers(ctx); err != nil {
		return t.out, err
	}
	if exists && !slices.ContainsFunc(t.out, func(c Change) bool { return c.Table == id }) {
		t.out = append(t.out, Change{Table: id, Action: "present"})
	}
	return t.out, nil
}

// tableExists reports whether tables has id; a table whose id differs
// from id only in case is an error (Grist ids ignore case).
func tableExists(tables []grist.TableInfo, id string) (bool, error) {
	exists := false
	for _, t := range tables {
		if t.ID == id {
			exists = true
		} else if strings.EqualFold(t.ID, id) {
			return false, fmt.Errorf("review table %q: the document has %q, which Grist takes for the same table id (ids ignore case); configure that name", id, t.ID)
		}
	}
	return exists, nil
}

// tableInstall is one installTable: what it changed (out; a table created
// now reports that alone, not its columns), the columns it added, and the
// table's columns as Grist last listed them (byID).
type tableInstall struct {
	w      *grist.Writer
	id     string
	defs   []colDef
	exists bool // the table was there before
	byID   map[string]grist.ColumnInfo
	added  map[string]bool
	out    []Change
}

// newColumn is d as created: every column as data, isFormula false given
// (a trigger column with its formula); recalcDeps is set afterwards
// (setTriggers, see Install). POST /tables/{t}/columns takes a column
// without isFormula for an empty formula column (grist-core
// sandbox/grist/useractions.py:130-142 _make_clean_col_info, at f98cda9),
// which the first value written turns into data (:1043-1075
// _ensure_column_accepts_data): its isFormula would change after Install,
// and with it the schema the read-back's cursor holds, so the read-back
// would list the whole Elements table again.
func newColumn(d colDef) grist.NewColumn {
	f := map[string]any{"type": d.typ, "label": d.label, "isFormula": false}
	if d.formula != "" {
		f["formula"] = d.formula
	}
	return grist.NewColumn{ID: d.id, Fields: f}
}

// create adds the table with every column of defs.
func (t *tableInstall) create(ctx context.Context) error {
	var cols []grist.NewColumn
	for _, d := range t.defs {
		cols = append(cols, newColumn(d))
	}
	got, err := t.w.AddTable(ctx, t.id, cols)
	if err != nil {
		return fmt.Errorf("review table %q: %w", t.id, err)
	}
	if got != t.id {
		return fmt.Errorf("review table %q: Grist created it as %q", t.id, got)
	}
	t.out = append(t.out, Change{Table: t.id, Action: "created table"})
	return nil
}

// addMissing reads the table's columns, adds those of defs it lacks and
// reads them again. A column of another type is an error naming it (an
// empty formula column of type Any, as Grist makes one, counts as none).
func (t *tableInstall) addMissing(ctx context.Context) error {
	have, err := t.w.Columns(ctx, t.id)
	if err != nil {
		return fmt.Errorf("review table %q: %w", t.id, err)
	}
	t.byID = map[string]grist.ColumnInfo{}
	for _, c := range have {
		t.byID[c.ID] = c
	}
	var missing []grist.NewColumn
	for _, d := range t.defs {
		c, ok := t.byID[d.id]
		switch {
		case !ok:
			missing = append(missing, newColumn(d))
		case c.Type != d.typ && !(c.Type == "Any" && c.IsFormula && c.Formula == ""):
			return fmt.Errorf("review table %q column %q: type %s, kgsync needs %s; rename or convert that column", t.id, d.id, c.Type, d.typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	ids, err := t.w.AddColumns(ctx, t.id, missing)
	if err != nil {
		return fmt.Errorf("review table %q: %w", t.id, err)
	}
	for i, got := range ids {
		if got != missing[i].ID {
			return fmt.Errorf("review table %q: column %q was created as %q", t.id, missing[i].ID, got)
		}
		t.added[got] = true
		if t.exists {
			t.out = append(t.out, Change{Table: t.id, Action: "added column", Column: got})
		}
	}
	if have, err = t.w.Columns(ctx, t.id); err != nil {
		return fmt.Errorf("review table %q: %w", t.id, err)
	}
	for _, c := range have {
		t.byID[c.ID] = c
	}
	return nil
}

// setTriggers sets the trigger columns' recalcWhen and recalcDeps in one
// POST /apply, on the columns just created, and on one created with
// kgsync's formula and no dependencies (an install cut short between the
// two steps) or with a dependency just added (an expert's column removed,
// which Grist also drops from recalcDeps, and added back): an expert's
// own trigger settings are left as they are.
func (t *tableInstall) setTriggers(ctx context.Context) error {
	var actions [][]any
	var set []string
	for _, d := range t.defs {
		if d.formula == "" {
			continue
		}
		c, ok := t.byID[d.id]
		if !ok {
			return fmt.Errorf("review table %q: column %q is missing", t.id, d.id)
		}
		depAdded := slices.ContainsFunc(d.deps, func(dep string) bool { return t.added[dep] })
		if !t.added[d.id] && !((len(c.RecalcDeps) == 0 || depAdded) && c.Formula == d.formula && !c.IsFormula) {
			continue
		}
		deps := []any{"L"}
		for _, dep := range d.deps {
			dc, ok := t.byID[dep]
			if !ok {
				return fmt.Errorf("review table %q: column %q is missing", t.id, dep)
			}
			deps = append(deps, dc.Ref)
		}
		actions = append(actions, []any{"UpdateRecord", "_grist_Tables_column", c.Ref, map[string]any{"recalcWhen": 0, "recalcDeps": deps}})
		set = append(set, d.id)
	}
	if len(actions) == 0 {
		return nil
	}
	if _, err := t.w.Apply(ctx, actions); err != nil {
		return fmt.Errorf("review table %q: set the trigger columns' dependencies: %w", t.id, err)
	}
	if t.exists {
		for _, c := range set {
			if !t.added[c] {
				t.out = append(t.out, Change{Table: t.id, Action: "set trigger", Column: c})
			}
		}
	}
	return nil
}
