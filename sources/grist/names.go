package grist

// Following renames.
//
// Grist identifies tables and columns by stable numbers, tableRef and colRef
// (rows of _grist_Tables and _grist_Tables_column, grist-api.md §1 and
// "Observed in December 2026"), while the API and the config use tableIds
// and colIds, which change when a user renames a table or a column
// (RenameTable, RenameColumn; renaming a column's label renames its colId
// unless untieColIdFromLabel is set; setting a table's title renames its
// tableId, grist-samples/real/probes/rename-*). The cursor remembers, by
// tableRef and colRef, the name each table and column was synced under
// (memTable). A table or column renamed upstream whose old name the config
// uses and whose new name it does not keeps its old name in records (keys,
// anchor, attribute names), so that the graph keeps its node ids, labels,
// properties and vectors, and the read yields a warning naming the new name
// and every config line to change. Once the config uses the new name, the
// records take it: their keys change, and each page says which key each
// record had before (sources.Page.Renamed), so that the pipeline moves
// them rather than deleting and adding them.

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Name is one table or column name the pipeline's config uses for this
// document, with the config path that says it. Build fills Config.Names
// from the source's tables and key_columns and the data model's anchors,
// link tables and mandatory tables.
type Name struct {
	// Table is the tableId the config uses.
	Table string
	// Column is the colId the config uses; "" names the table itself.
	Column string
	// Path is where the config says it, e.g.
	// "pipelines[0].model.anchors[1].attributes[0].column".
	Path string
}

// memTable is what the cursor remembers of one table: the name its records
// were synced under and, by colRef, the name of each column's attribute.
type memTable struct {
	Ref  int64             `json:"ref"`
	Name string            `json:"name"`
	Cols map[string]string `json:"cols,omitempty"`
}

// SchemaError says that the config and the document disagree on a table or
// column the config uses: it was removed or renamed upstream, or never
// existed. A Read that finds one yields it before reading any row, so
// nothing is written for the source.
type SchemaError struct {
	Doc, Table, Column string
	// Paths are the config lines that use the name.
	Paths []string
	// Problem says what is wrong and what to do.
	Problem string
}

func (e *SchemaError) Error() string {
	what := fmt.Sprintf("table %q", e.Table)
	if e.Column != "" {
		what = fmt.Sprintf("table %q column %q", e.Table, e.Column)
	}
	return fmt.Sprintf("grist document %s: %s (used by %s): %s", e.Doc, what, strings.Join(e.Paths, ", "), e.Problem)
}

// names indexes Config.Names.
type names struct {
	tables map[string][]string            // table → paths naming it
	cols   map[string]map[string][]string // table → column → paths
}

func indexNames(ns []Name) names {
	out := names{tables: map[string][]string{}, cols: map[string]map[string][]string{}}
	for _, n := range ns {
		if n.Column == "" {
			out.tables[n.Table] = append(out.tables[n.Table], n.Path)
			continue
		}
		if out.cols[n.Table] == nil {
			out.cols[n.Table] = map[string][]string{}
		}
		out.cols[n.Table][n.Column] = append(out.cols[n.Table][n.Column], n.Path)
	}
	return out
}

// tablePaths are the config paths naming any of the table's names.
func (n names) tablePaths(ids ...string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, n.tables[id]...)
		for _, ps := range n.cols[id] {
			out = append(out, ps...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// tableOnlyPaths are the config paths naming the table itself (a table
// key, an anchor's table or name), not its columns.
func (n names) tableOnlyPaths(ids ...string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, n.tables[id]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// colPaths are the config paths naming column col of the table known by
// any of ids.
func (n names) colPaths(col string, ids ...string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, n.cols[id][col]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// tableList is the answer of GET /docs/{docId}/tables (grist-api.md §2).
type tableList struct {
	Tables []struct {
		ID     string `json:"id"`
		Fields struct {
			TableRef           int64 `json:"tableRef"`
			SummarySourceTable int64 `json:"summarySourceTable"`
		} `json:"fields"`
	} `json:"tables"`
}

// docTable is one table of GET /tables.
type docTable struct {
	id      string
	ref     int64
	summary int64
}

// schemaInfo is the outcome of reading the document's schema against the
// config and the remembered names.
type schemaInfo struct {
	// tables are the tables to read.
	tables []*table
	// names maps every current tableId to the name records use for it
	// (the remembered name of an aliased table, else the tableId).
	names map[string]string
	// warnings are renames the config should follow.
	warnings []string
	// memory is what the next cursor remembers.
	memory []memTable
}

// nameOf is the name records use for the table whose tableId is now id.
func (si *schemaInfo) nameOf(id string) string {
	if n, ok := si.names[id]; ok {
		return n
	}
	return id
}

// schema reads /tables and the columns of every selected table, and
// resolves each against the config's names and mem (the cursor's memory).
// Its stages: select the tables to read (configured or userTables), name
// them (nameTables), read each one's columns (readTable), then name each
// Ref column's target.
func (s *Source) schema(ctx context.Context, mem []memTable) (*schemaInfo, error) {
	var tl tableList
	if err := s.c.getJSON(ctx, http.MethodGet, "/tables", nil, nil, "", "list tables", &tl); err != nil {
		return nil, err
	}
	sr := newSchemaRead(s, tl, mem)
	var selected []docTable
	var err error
	if len(s.cfg.Tables) > 0 {
		selected, err = sr.configured()
	} else {
		selected, err = sr.userTables()
	}
	if err != nil {
		return nil, err
	}
	sr.nameTables(selected)
	si := sr.si
	for _, d := range selected {
		t, err := sr.readTable(ctx, d)
		if err != nil {
			return nil, err
		}
		si.tables = append(si.tables, t)
	}
	for _, t := range si.tables {
		for i := range t.Cols {
			if c := &t.Cols[i]; c.Target != "" {
				c.TargetName = si.nameOf(c.Target)
			}
		}
	}
	return si, nil
}

// schemaRead is one reading of the document's schema: its tables (GET
// /tables) beside the cursor's memory of them and the config's names,
// and the schemaInfo being built.
type schemaRead struct {
	s         *Source
	tl        tableList
	byID      map[string]docTable
	byRef     map[int64]docTable // tables with a tableRef
	mem       []memTable
	memByRef  map[int64]memTable
	memByName map[string]memTable
	nm        names
	si        *schemaInfo
}

func newSchemaRead(s *Source, tl tableList, mem []memTable) *schemaRead {
	sr := &schemaRead{s: s, tl: tl, byID: map[string]docTable{}, byRef: map[int64]docTable{}, mem: mem,
		memByRef: map[int64]memTable{}, memByName: map[string]memTable{}}
	for _, t := range tl.Tables {
		d := docTable{id: t.ID, ref: t.Fields.TableRef, summary: t.Fields.SummarySourceTable}
		sr.byID[d.id] = d
		if d.ref != 0 {
			sr.byRef[d.ref] = d
		}
	}
	for _, m := range mem {
		sr.memByRef[m.Ref] = m
		sr.memByName[m.Name] = m
	}
	sr.nm = indexNames(s.cfg.Names)
	sr.si = &schemaInfo{names: map[string]string{}}
	return sr
}

// removedProblem is the SchemaError problem of a table the cursor
// remembers (tableRef ref) that the document no longer has.
func removedProblem(ref int64) string {
	return fmt.Sprintf("the table (tableRef %d) was removed from the Grist document; nothing was read or deleted; remove it from the config, or restore it in Grist (document history)", ref)
}

// configured returns the tables Config.Tables names, in its order and
// once each: by tableId, or by the remembered name of a table renamed
// since (followed by its tableRef). A remembered table that is gone is a
// SchemaError, an unknown one a 404 APIError.
func (sr *schemaRead) configured() ([]docTable, error) {
	s := sr.s
	var selected []docTable
	for i, want := range s.cfg.Tables {
		d, ok := sr.byID[want]
		if !ok {
			m, known := sr.memByName[want]
			if cur, still := sr.byRef[m.Ref]; known && m.Ref != 0 && still {
				d, ok = cur, true
			} else if known {
				return nil, &SchemaError{Doc: s.cfg.DocID, Table: want, Paths: pathsOr(sr.nm.tablePaths(want), fmt.Sprintf("tables[%d]", i)),
					Problem: removedProblem(m.Ref)}
			}
		}
		if !ok {
			return nil, &APIError{Status: http.StatusNotFound, Doc: s.cfg.DocID, Table: want, Op: "list tables", Message: fmt.Sprintf("Table not found %q", want)}
		}
		if !slices.ContainsFunc(selected, func(x docTable) bool { return x.ref == d.ref && x.id == d.id }) {
			selected = append(selected, d)
		}
	}
	return selected, nil
}

// userTables returns every user table of the document, by tableId, after
// checking that each table Config.Require names is there (or renamed,
// followed by its tableRef). A remembered table that is gone and still
// named by the config gets a warning.
func (sr *schemaRead) userTables() ([]docTable, error) {
	s := sr.s
	var selected []docTable
	for _, t := range sr.tl.Tables {
		if UserTable(t.ID, t.Fields.SummarySourceTable) {
			selected = append(selected, sr.byID[t.ID])
		}
	}
	sort.Slice(selected, func(i, j int) bool { return selected[i].id < selected[j].id })
	for _, want := range s.cfg.Require {
		if _, ok := sr.byID[want]; ok {
			continue
		}
		m, known := sr.memByName[want]
		if _, still := sr.byRef[m.Ref]; known && m.Ref != 0 && still {
			continue // renamed: followed by its tableRef below
		}
		paths := pathsOr(sr.nm.tablePaths(want), s.cfg.Path)
		if known {
			return nil, &SchemaError{Doc: s.cfg.DocID, Table: want, Paths: paths, Problem: removedProblem(m.Ref)}
		}
		var have []string
		for _, d := range selected {
			have = append(have, d.id)
		}
		return nil, &SchemaError{Doc: s.cfg.DocID, Table: want, Paths: paths,
			Problem: fmt.Sprintf("the Grist document has no such table (tables: %s); nothing was read or deleted; correct the name in the config", strings.Join(have, ", "))}
	}
	// A remembered table no longer in the document was removed: its
	// records go with the full listing that follows (within the
	// mass-delete guard); the config may still name it.
	for _, m := range sr.mem {
		if _, ok := sr.byRef[m.Ref]; !ok {
			if ps := sr.nm.tablePaths(m.Name); len(ps) > 0 {
				sr.si.warnings = append(sr.si.warnings, fmt.Sprintf("grist document %s: table %q (tableRef %d) was removed from the document; remove it from %s",
					s.cfg.DocID, m.Name, m.Ref, strings.Join(ps, ", ")))
			}
		}
	}
	return selected, nil
}

// nameTables sets the name records use for every table of the document
// (schemaInfo.names): for a selected table renamed upstream, the
// remembered name while the config uses it and not the new one (and no
// other table took it), with a warning when the config names the old one;
// else the tableId.
func (sr *schemaRead) nameTables(selected []docTable) {
	s, si, nm := sr.s, sr.si, sr.nm
	for _, d := range selected {
		name := d.id
		if m, ok := sr.memByRef[d.ref]; ok && m.Name != d.id {
			_, taken := sr.byID[m.Name]
			old, cur := nm.tablePaths(m.Name), nm.tablePaths(d.id)
			if len(old) > 0 && len(cur) == 0 && !taken {
				name = m.Name
			}
			if len(old) > 0 {
				// Only the lines naming the table change: its columns'
				// lines name columns.
				si.warnings = append(si.warnings, renameWarning(s.cfg.DocID, fmt.Sprintf("table %q", m.Name), d.id,
					fmt.Sprintf("tableRef %d", d.ref), name == m.Name, pathsOr(nm.tableOnlyPaths(m.Name), old[0])))
			} else {
				s.logger.Info("table renamed upstream; its records take the new name", "from", m.Name, "to", d.id, "tableRef", d.ref)
			}
		}
		si.names[d.id] = name
	}
	for _, d := range sr.byID {
		if _, ok := si.names[d.id]; !ok {
			si.names[d.id] = d.id
		}
	}
}

// readTable reads the columns of the selected table d and resolves them:
// its name and former name, its columns' names (nameColumns), its key
// column, and what the next cursor remembers of it (schemaInfo.memory).
func (sr *schemaRead) readTable(ctx context.Context, d docTable) (*table, error) {
	s, si := sr.s, sr.si
	t, err := s.columns(ctx, d.id)
	if err != nil {
		return nil, err
	}
	t.Ref = d.ref
	t.Name = si.names[d.id]
	m := sr.memByRef[d.ref]
	if m.Name != "" && m.Name != t.Name {
		t.Prev = m.Name
	}
	ids := []string{t.Name, d.id}
	if m.Name != "" {
		ids = append(ids, m.Name)
	}
	if err := s.nameColumns(t, m, sr.nm, ids, si); err != nil {
		return nil, err
	}
	kc := ""
	for _, id := range ids {
		if k, ok := s.cfg.KeyColumns[id]; ok {
			kc = k
			break
		}
	}
	if kc != "" {
		i := slices.IndexFunc(t.Cols, func(c column) bool { return c.Name == kc })
		if i < 0 {
			return nil, fmt.Errorf("grist document %s table %s: key column %q not found", s.cfg.DocID, d.id, kc)
		}
		t.KeyCol, t.KeyColID = kc, t.Cols[i].ID
	}
	mt := memTable{Ref: d.ref, Name: t.Name, Cols: map[string]string{}}
	for _, c := range t.Cols {
		mt.Cols[strconv.FormatInt(c.ColRef, 10)] = c.Name
	}
	si.memory = append(si.memory, mt)
	return t, nil
}

// nameColumns gives each column of t the name its attribute has (the
// remembered one while the config uses it and not the new colId) and checks
// that every column the config uses for the table exists.
func (s *Source) nameColumns(t *table, m memTable, nm names, ids []string, si *schemaInfo) error {
	present := map[string]bool{}
	for _, c := range t.Cols {
		present[c.ID] = true
	}
	for i := range t.Cols {
		c := &t.Cols[i]
		c.Name = c.ID
		old, ok := m.Cols[strconv.FormatInt(c.ColRef, 10)]
		if !ok || old == c.ID {
			continue
		}
		oldPaths, curPaths := nm.colPaths(old, ids...), nm.colPaths(c.ID, ids...)
		if len(oldPaths) > 0 && len(curPaths) == 0 && !present[old] {
			c.Name = old
		}
		if len(oldPaths) > 0 {
			si.warnings = append(si.warnings, renameWarning(s.cfg.DocID, fmt.Sprintf("table %q column %q", t.Name, old), c.ID,
				fmt.Sprintf("colRef %d", c.ColRef), c.Name == old, oldPaths))
		}
	}
	// Every column the config uses must be there under its name (links
	// match their column ignoring case, as the model does).
	have := map[string]bool{}
	for _, c := range t.Cols {
		have[c.Name] = true
		have[strings.ToLower(c.Name)] = true
	}
	wanted := map[string]bool{}
	for _, id := range ids {
		for col := range nm.cols[id] {
			wanted[col] = true
		}
	}
	for _, col := range slices.Sorted(maps.Keys(wanted)) {
		if have[col] || have[strings.ToLower(col)] {
			continue
		}
		e := &SchemaError{Doc: s.cfg.DocID, Table: t.Name, Column: col, Paths: nm.colPaths(col, ids...)}
		renamedTo, removed := "", false
		for ref, name := range m.Cols {
			if name != col {
				continue
			}
			removed = true
			for _, c := range t.Cols {
				if strconv.FormatInt(c.ColRef, 10) == ref {
					renamedTo, removed = c.ID, false
				}
			}
		}
		switch {
		case renamedTo != "":
			e.Problem = fmt.Sprintf("the column was renamed to %q in Grist; nothing was written for the source; %s", renamedTo, remedy(e.Paths, renamedTo))
		case removed:
			e.Problem = "the column was removed from the Grist document; nothing was written for the source; remove it from the config (and the attribute's property and vector go from the nodes on the next run), or restore the column in Grist (document history)"
		default:
			e.Problem = fmt.Sprintf("the table has no such column (it has %s); nothing was written for the source; fix the config", strings.Join(columnIDs(t), ", "))
		}
		return e
	}
	return nil
}

func renameWarning(doc, what, to, ref string, kept bool, paths []string) string {
	if kept {
		return fmt.Sprintf("grist document %s: %s was renamed to %q in Grist (%s); kgsync follows it by its id and keeps the old name in the graph until the config says %q: %s",
			doc, what, to, ref, to, remedy(paths, to))
	}
	return fmt.Sprintf("grist document %s: %s was renamed to %q in Grist (%s); %s", doc, what, to, ref, remedy(paths, to))
}

// remedy says how the config lines paths follow a rename to to. A line
// that names the table or column through an anchor's, attribute's or
// link's name (no table or column key) gets the key added, so that the
// graph keeps its label, property, edge type and vector index: `add
// column: "to" to …attributes[1]`. Other lines change: `change … to "to"`.
func remedy(paths []string, to string) string {
	var change, add []string
	for _, p := range paths {
		base, ok := strings.CutSuffix(p, ".name")
		seg := base[strings.LastIndex(base, ".")+1:]
		switch {
		case ok && strings.HasPrefix(seg, "anchors["):
			add = append(add, fmt.Sprintf("add table: %q to %s", to, base))
		case ok && (strings.HasPrefix(seg, "attributes[") || strings.HasPrefix(seg, "links[")):
			add = append(add, fmt.Sprintf("add column: %q to %s", to, base))
		default:
			change = append(change, p)
		}
	}
	var out []string
	if len(change) > 0 {
		out = append(out, fmt.Sprintf("change %s to %q", strings.Join(change, ", "), to))
	}
	return strings.Join(append(out, add...), "; ")
}

func pathsOr(ps []string, def string) []string {
	if len(ps) == 0 {
		return []string{def}
	}
	return ps
}

func columnIDs(t *table) []string {
	out := make([]string, 0, len(t.Cols))
	for _, c := range t.Cols {
		out = append(out, c.ID)
	}
	return out
}
