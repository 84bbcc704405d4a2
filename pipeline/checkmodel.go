package pipeline

import (
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
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	anyTable := false
	known := map[string]map[string]string{}
	has := map[string]bool{}
	for _, st := range have {
		anyTable = anyTable || st.Any
		for t, cols := range st.Tables {
			has[t] = true
			if cols != nil {
				known[t] = cols
			}
		}
	}
	tableNames := slices.Sorted(maps.Keys(has))
	table := func(at, t string) (map[string]string, bool) {
		if !has[t] {
			if !anyTable {
				add("%s: no source of the pipeline has a table %q (tables: %s)", at, t, strings.Join(tableNames, ", "))
			}
			return nil, false
		}
		cols, ok := known[t]
		return cols, ok
	}
	column := func(at, t string, cols map[string]string, c string) (string, bool) {
		kind, ok := cols[c]
		if !ok {
			add("%s: table %q has no column %q (columns: %s)", at, t, c, strings.Join(slices.Sorted(maps.Keys(cols)), ", "))
		}
		return kind, ok
	}
	m := pc.Model
	tableOf := func(anchor string) string {
		if m != nil {
			for _, a := range m.Anchors {
				if a.Name == anchor && a.Table != "" {
					return a.Table
				}
			}
		}
		return anchor
	}
	refTarget := func(kind string) (string, bool) {
		for _, p := range []string{"ref:", "reflist:"} {
			if t, ok := strings.CutPrefix(kind, p); ok {
				return t, true
			}
		}
		return "", false
	}
	if m != nil {
		for i, a := range m.Anchors {
			at := fmt.Sprintf("%s.model.anchors[%d]", path, i)
			t := tableOf(a.Name)
			cols, ok := table(at, t)
			if !ok {
				continue
			}
			for j, attr := range a.Attributes {
				c := cmpOr(attr.Column, attr.Name)
				kind, ok := column(fmt.Sprintf("%s.attributes[%d]", at, j), t, cols, c)
				if ok && attr.Embeddable && kind != "text" && kind != "any" {
					add("%s.attributes[%d]: embeddable, but column %q of table %q is %s: only text is embedded", at, j, c, t, kind)
				}
			}
			for j, l := range a.Links {
				c := cmpOr(l.Column, l.Name)
				lat := fmt.Sprintf("%s.links[%d]", at, j)
				kind, ok := cols[c]
				if !ok {
					// Links match their column ignoring case.
					for name, k := range cols {
						if strings.EqualFold(name, c) {
							kind, ok = k, true
						}
					}
				}
				if !ok {
					column(lat, t, cols, c)
					continue
				}
				target, isRef := refTarget(kind)
				switch {
				case !isRef:
					add("%s: column %q of table %q is %s, not a Ref or RefList: no edge is made", lat, c, t, kind)
				case l.To != "" && target != tableOf(l.To):
					add("%s: links to anchor %q (table %q), but column %q refers to table %q", lat, l.To, tableOf(l.To), c, target)
				}
			}
		}
		for i, lt := range m.LinkTables {
			at := fmt.Sprintf("%s.model.link_tables[%d]", path, i)
			cols, ok := table(at, lt.Table)
			if !ok {
				continue
			}
			for _, end := range []struct {
				name string
				e    config.LinkEnd
			}{{"from", lt.From}, {"to", lt.To}} {
				kind, ok := column(at+"."+end.name, lt.Table, cols, end.e.Column)
				if target, isRef := refTarget(kind); ok && isRef && target != tableOf(end.e.Anchor) {
					add("%s.%s: anchor %q is table %q, but column %q refers to table %q", at, end.name, end.e.Anchor, tableOf(end.e.Anchor), end.e.Column, target)
				}
			}
			for j, p := range lt.Properties {
				column(fmt.Sprintf("%s.properties[%d]", at, j), lt.Table, cols, p)
			}
		}
		for i, mt := range m.MandatoryTables {
			at := fmt.Sprintf("%s.model.mandatory_tables[%d]", path, i)
			cols, ok := table(at, mt.Table)
			if !ok {
				continue
			}
			for _, f := range []struct{ name, col string }{{"from", mt.From}, {"to", mt.To}, {"note", mt.Note}} {
				if f.col != "" {
					column(at+"."+f.name, mt.Table, cols, f.col)
				}
			}
		}
	}
	for _, st := range have {
		for _, t := range slices.Sorted(maps.Keys(st.Keys)) {
			k := st.Keys[t]
			cols, ok := st.Tables[t]
			if !ok {
				if !st.Any && st.Tables != nil && len(st.Tables) > 0 {
					add("%s: key column for table %q, which the source does not read", k.Path, t)
				}
				continue
			}
			if cols == nil {
				continue
			}
			kind, ok := column(k.Path, t, cols, k.Column)
			if ok && kind != "text" && kind != "number" && kind != "bool" && kind != "date" && kind != "any" {
				add("%s: key column %q of table %q is %s: a key must be a single value", k.Path, k.Column, t, kind)
			}
		}
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
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
