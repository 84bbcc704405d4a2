package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/config"
	"github.com/kgsync/kgsync/sources/csvtable"
	"github.com/kgsync/kgsync/sources/grist"
)

// SourceTables is what one source of a pipeline provides, as validate sees
// it: tables with their columns and each column's kind (text, number,
// bool, date, list, ref:<table>, reflist:<table>, attachments, any; see
// grist.Kind).
type SourceTables struct {
	// Path is the source's config path, e.g. "pipelines[0].sources[1]".
	Path string
	// Tables maps a table id to its columns; a nil column map means the
	// columns are not known (an HTTP source, Grist offline).
	Tables map[string]map[string]string
	// Any is set when the source may provide tables not listed (a Grist
	// source reading every table, described offline).
	Any bool
	// Keys maps a table to its key column, with the config path naming it.
	Keys map[string]KeyColumn
	// Warnings are what the source says of the config besides (a Grist
	// table or column renamed upstream, with its remedy).
	Warnings []string
}

// KeyColumn is a table's configured key column.
type KeyColumn struct {
	Column, Path string
}

// DescribeSources returns what pc's sources provide (pc at config path
// path, "pipelines[i]"): CSV tables from their header rows, the anchors of
// files and HTTP sources (columns unknown), and Grist tables — with their
// columns read from the live document when online, else the configured
// tables with columns unknown. A source that cannot be read is an error
// naming it.
func DescribeSources(ctx context.Context, pc *config.Pipeline, path string, online bool) ([]SourceTables, error) {
	return DescribeSourcesAt(ctx, pc, path, online, nil)
}

// DescribeSourcesAt is DescribeSources that, online, describes a Grist
// source as a sync from its stored cursor reads it (cursor returns a
// source's stored cursor, "" for none; nil: none): tables and columns
// renamed in Grist and followed by sync are described under the names the
// config uses, with the rename warnings.
func DescribeSourcesAt(ctx context.Context, pc *config.Pipeline, path string, online bool, cursor func(source string) string) ([]SourceTables, error) {
	var out []SourceTables
	for i, sc := range pc.Sources {
		st := SourceTables{Path: fmt.Sprintf("%s.sources[%d]", path, i), Tables: map[string]map[string]string{}, Keys: map[string]KeyColumn{}}
		switch {
		case sc.CSV != nil:
			src, err := csvtable.New(sc.Name, csvConfig(sc.CSV), nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", st.Path, err)
			}
			tables, err := src.Describe()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", st.Path, err)
			}
			st.Tables = tables
			ids := src.Tables()
			for j, t := range sc.CSV.Tables {
				if t.Key != "" {
					st.Keys[ids[j]] = KeyColumn{Column: t.Key, Path: fmt.Sprintf("%s.csv.tables[%d].key", st.Path, j)}
				}
			}
		case sc.Grist != nil:
			for t, c := range sc.Grist.KeyColumns {
				st.Keys[t] = KeyColumn{Column: c, Path: st.Path + ".grist.key_columns." + t}
			}
			if online && cursor != nil {
				if c := cursor(sc.Name); c != "" {
					src, err := grist.New(sc.Name, GristConfig(sc.Grist, pc.Model, st.Path+".grist"), nil)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", st.Path, err)
					}
					// A config the document does not match is left to
					// the checks below, which name every problem.
					if tables, warnings, err := src.Describe(ctx, c); err == nil {
						st.Tables, st.Warnings = tables, warnings
						break
					}
				}
			}
			if online {
				a, err := grist.NewAdmin(gristConfig(sc.Grist))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", st.Path, err)
				}
				tables, err := a.Describe(ctx)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", st.Path, err)
				}
				if len(sc.Grist.Tables) == 0 {
					st.Tables = tables
					break
				}
				for _, t := range sc.Grist.Tables {
					if cols, ok := tables[t]; ok {
						st.Tables[t] = cols
					}
				}
				break
			}
			st.Any = len(sc.Grist.Tables) == 0
			for _, t := range sc.Grist.Tables {
				st.Tables[t] = nil
			}
		case sc.HTTP != nil:
			st.Tables[sc.HTTP.Anchor] = nil
		case sc.Files != nil:
			anchor := sc.Files.Anchor
			if anchor == "" {
				anchor = "Document"
			}
			st.Tables[anchor] = nil
		}
		out = append(out, st)
	}
	return out, nil
}

// CheckModel checks pc's data model (at config path path, "pipelines[i]")
// and its sources' key columns against what the sources provide: every
// table the model maps exists in a source, every column it names exists in
// its table, an embeddable attribute maps a text column, a link's column is
// a Ref or RefList whose target is the table of the link's `to` anchor (and
// a link table's Ref ends those of their anchors), and a key column holds
// single values. Each problem names the config path. Columns a source
// cannot describe are not checked.
func CheckModel(pc *config.Pipeline, path string, have []SourceTables) []string {
	c := &modelCheck{m: pc.Model, known: map[string]map[string]string{}, has: map[string]bool{}}
	for _, st := range have {
		c.anyTable = c.anyTable || st.Any
		for t, cols := range st.Tables {
			c.has[t] = true
			if cols != nil {
				c.known[t] = cols
			}
		}
	}
	c.tableNames = slices.Sorted(maps.Keys(c.has))
	if c.m != nil {
		c.anchors(path)
		for i, lt := range c.m.LinkTables {
			c.linkTable(fmt.Sprintf("%s.model.link_tables[%d]", path, i), lt)
		}
		for i, mt := range c.m.MandatoryTables {
			c.mandatoryTable(fmt.Sprintf("%s.model.mandatory_tables[%d]", path, i), mt)
		}
	}
	c.keys(have)
	return c.out
}

// modelCheck is one CheckModel: the tables and columns the sources
// provide, and the problems found so far (out), in the order checked.
type modelCheck struct {
	m   *config.Model
	out []string
	// anyTable is set when a source may provide tables not listed.
	anyTable bool
	// known are the columns (and kinds) of the tables a source describes,
	// has every table a source provides, tableNames has's, sorted.
	known      map[string]map[string]string
	has        map[string]bool
	tableNames []string
}

func (c *modelCheck) add(format string, args ...any) {
	c.out = append(c.out, fmt.Sprintf(format, args...))
}

// table returns table t's columns (at is the config path naming it); ok
// is false when no source describes its columns. A table no source has
// is a problem, unless a source may provide tables not listed.
func (c *modelCheck) table(at, t string) (map[string]string, bool) {
	if !c.has[t] {
		if !c.anyTable {
			c.add("%s: no source of the pipeline has a table %q (tables: %s)", at, t, strings.Join(c.tableNames, ", "))
		}
		return nil, false
	}
	cols, ok := c.known[t]
	return cols, ok
}

// column returns the kind of column col of table t (cols its columns);
// a column the table does not have is a problem.
func (c *modelCheck) column(at, t string, cols map[string]string, col string) (string, bool) {
	kind, ok := cols[col]
	if !ok {
		c.add("%s: table %q has no column %q (columns: %s)", at, t, col, strings.Join(slices.Sorted(maps.Keys(cols)), ", "))
	}
	return kind, ok
}

// tableOf is the table an anchor maps (its name when the model names none).
func (c *modelCheck) tableOf(anchor string) string {
	if c.m != nil {
		for _, a := range c.m.Anchors {
			if a.Name == anchor && a.Table != "" {
				return a.Table
			}
		}
	}
	return anchor
}

// refTarget is the table a Ref or RefList column's kind refers to.
func refTarget(kind string) (string, bool) {
	for _, p := range []string{"ref:", "reflist:"} {
		if t, ok := strings.CutPrefix(kind, p); ok {
			return t, true
		}
	}
	return "", false
}

// anchors checks each anchor's table, attributes and links.
func (c *modelCheck) anchors(path string) {
	for i, a := range c.m.Anchors {
		at := fmt.Sprintf("%s.model.anchors[%d]", path, i)
		t := c.tableOf(a.Name)
		cols, ok := c.table(at, t)
		if !ok {
			continue
		}
		for j, attr := range a.Attributes {
			col := cmp.Or(attr.Column, attr.Name)
			kind, ok := c.column(fmt.Sprintf("%s.attributes[%d]", at, j), t, cols, col)
			if ok && attr.Embeddable && kind != "text" && kind != "any" {
				c.add("%s.attributes[%d]: embeddable, but column %q of table %q is %s: only text is embedded", at, j, col, t, kind)
			}
		}
		for j, l := range a.Links {
			c.link(fmt.Sprintf("%s.links[%d]", at, j), t, cols, l)
		}
	}
}

// link checks an anchor's link l (at lat) against its table t's columns:
// its column is a Ref or RefList to the table of the anchor it links to.
func (c *modelCheck) link(lat, t string, cols map[string]string, l config.Link) {
	col := cmp.Or(l.Column, l.Name)
	kind, ok := cols[col]
	if !ok {
		// Links match their column ignoring case.
		for name, k := range cols {
			if strings.EqualFold(name, col) {
				kind, ok = k, true
			}
		}
	}
	if !ok {
		c.column(lat, t, cols, col)
		return
	}
	target, isRef := refTarget(kind)
	switch {
	case !isRef:
		c.add("%s: column %q of table %q is %s, not a Ref or RefList: no edge is made", lat, col, t, kind)
	case l.To != "" && target != c.tableOf(l.To):
		c.add("%s: links to anchor %q (table %q), but column %q refers to table %q", lat, l.To, c.tableOf(l.To), col, target)
	}
}

// linkTable checks a link table (at config path at): its ends' columns
// are Refs to their anchors' tables, its properties are columns.
func (c *modelCheck) linkTable(at string, lt config.LinkTable) {
	cols, ok := c.table(at, lt.Table)
	if !ok {
		return
	}
	for _, end := range []struct {
		name string
		e    config.LinkEnd
	}{{"from", lt.From}, {"to", lt.To}} {
		kind, ok := c.column(at+"."+end.name, lt.Table, cols, end.e.Column)
		if target, isRef := refTarget(kind); ok && isRef && target != c.tableOf(end.e.Anchor) {
			c.add("%s.%s: anchor %q is table %q, but column %q refers to table %q", at, end.name, end.e.Anchor, c.tableOf(end.e.Anchor), end.e.Column, target)
		}
	}
	for j, p := range lt.Properties {
		c.column(fmt.Sprintf("%s.properties[%d]", at, j), lt.Table, cols, p)
	}
}

// mandatoryTable checks that a mandatory table (at config path at) has
// the columns it names.
func (c *modelCheck) mandatoryTable(at string, mt config.MandatoryTable) {
	if cols, ok := c.table(at, mt.Table); ok {
		for _, f := range []struct{ name, col string }{{"from", mt.From}, {"to", mt.To}, {"note", mt.Note}} {
			if f.col != "" {
				c.column(at+"."+f.name, mt.Table, cols, f.col)
			}
		}
	}
}

// keys checks each source's key columns: the table is read, and the
// column holds single values.
func (c *modelCheck) keys(have []SourceTables) {
	for _, st := range have {
		for _, t := range slices.Sorted(maps.Keys(st.Keys)) {
			k := st.Keys[t]
			cols, ok := st.Tables[t]
			if !ok {
				if !st.Any && st.Tables != nil && len(st.Tables) > 0 {
					c.add("%s: key column for table %q, which the source does not read", k.Path, t)
				}
				continue
			}
			if cols == nil {
				continue
			}
			kind, ok := c.column(k.Path, t, cols, k.Column)
			if ok && kind != "text" && kind != "number" && kind != "bool" && kind != "date" && kind != "any" {
				c.add("%s: key column %q of table %q is %s: a key must be a single value", k.Path, k.Column, t, kind)
			}
		}
	}
}

// CheckConfig runs, for every command that reads or writes a graph or
// state (sync, plan, resync, daemon, grist …), the checks `kgsync
// validate` runs offline besides the paths: pipelines sharing a graph
// agree on their indexes (CheckShared), and each data model matches what
// its sources provide (CheckModel, CheckRefs: a table no source has, a
// CSV column that is not in the header). A config that validate rejects
// is an error here, before anything is read or written: a model whose
// anchor names a table no source provides would otherwise read that
// anchor as empty and delete its nodes. A source that cannot be described
// (a CSV file missing) is left to the run, which reports it. Each problem
// starts with the config file's line.
func CheckConfig(ctx context.Context, cfg *config.Config) error {
	if err := CheckShared(cfg); err != nil {
		return err
	}
	var errs []error
	for i := range cfg.Pipelines {
		pc := &cfg.Pipelines[i]
		path := fmt.Sprintf("pipelines[%d]", i)
		have, err := DescribeSources(ctx, pc, path, false)
		if err != nil {
			continue
		}
		for _, pr := range append(CheckModel(pc, path, have), CheckRefs(pc, path, have)...) {
			if at, _, ok := strings.Cut(pr, ": "); ok {
				pr = cfg.Position(at) + pr
			}
			errs = append(errs, fmt.Errorf("pipeline %q: %s", pc.Name, pr))
		}
	}
	if len(errs) > 0 {
		errs = append(errs, errors.New("`kgsync validate` lists every problem; nothing was read or written"))
	}
	return errors.Join(errs...)
}
