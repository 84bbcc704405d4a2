package gristtest

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// LoadCSV creates table from a CSV file (header row, RFC 4180 quoting,
// LazyQuotes off, optional UTF-8 BOM, ragged rows padded) and records one
// action. Headers become colIds as Grist normalises them: invalid
// characters -> "_", a leading digit gets a "c" prefix, "id" becomes "id2",
// empty headers become "A", "B", ... by position, repeats get "_2".
// types maps colId -> Grist type (default "Text"): "Int" and "Numeric"
// parse numbers (unparsable text is kept, as Grist keeps mismatched
// values), "Bool" parses true/false/1/0, "Date" parses YYYY-MM-DD into
// epoch seconds, and "Ref:T/col" stores the id of the row of T whose col
// equals the text (T may be this table), keeping unmatched text as a
// string; the column's type is then "Ref:T". It fails the test on error.
func (s *Server) LoadCSV(table, path string, types map[string]string) {
	s.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatalf("gristtest: load %s: %v", path, err)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	rd := csv.NewReader(bytes.NewReader(data))
	rd.FieldsPerRecord = -1
	rows, err := rd.ReadAll()
	if err != nil {
		s.t.Fatalf("gristtest: load %s: %v", path, err)
	}
	if len(rows) == 0 {
		s.t.Fatalf("gristtest: load %s: no header row", path)
	}
	header := colIDs(rows[0])
	type refSpec struct{ table, col string }
	refs := map[string]refSpec{}
	cols := make([]Column, len(header))
	for i, h := range header {
		typ := types[h]
		if typ == "" {
			typ = "Text"
		}
		if base, arg, ok := strings.Cut(typ, ":"); ok && base == "Ref" {
			tgt, col, _ := strings.Cut(arg, "/")
			refs[h] = refSpec{tgt, col}
			typ = "Ref:" + tgt
		}
		cols[i] = Column{ID: h, Type: typ}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.addTableLocked(table, cols)
	in := make([]map[string]any, 0, len(rows)-1)
	for ln, rec := range rows[1:] {
		m := make(map[string]any, len(header))
		for i, h := range header {
			cell := ""
			if i < len(rec) {
				cell = rec[i]
			}
			v, err := convert(t.col(h).Type, cell)
			if err != nil {
				s.t.Fatalf("gristtest: load %s line %d column %s: %v", path, ln+2, h, err)
			}
			m[h] = v
		}
		in = append(in, m)
	}
	ids := s.addRowsLocked(t, in)
	for col, spec := range refs {
		tgt := s.tables[spec.table]
		if tgt == nil {
			s.t.Fatalf("gristtest: load %s: Ref column %s: table %s not loaded", path, col, spec.table)
		}
		index := map[string]int64{}
		for id, r := range tgt.rows {
			k := fmt.Sprint(r[spec.col])
			if old, dup := index[k]; !dup || id < old {
				index[k] = id
			}
		}
		for _, id := range ids {
			txt, _ := t.rows[id][col].(string)
			switch {
			case txt == "":
				t.rows[id][col] = int64(0)
			case index[txt] != 0:
				t.rows[id][col] = index[txt]
			}
		}
	}
	delta := map[int64]*rowChange{}
	for _, id := range ids {
		delta[id] = &rowChange{after: maps.Clone(t.rows[id])}
	}
	s.record(&action{deltas: map[string]map[int64]*rowChange{t.id: delta}})
}

func colIDs(header []string) []string {
	out := make([]string, len(header))
	seen := map[string]bool{}
	for i, h := range header {
		var b strings.Builder
		for _, r := range strings.TrimSpace(h) {
			if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '_' {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
		id := strings.Trim(b.String(), "_")
		switch {
		case id == "":
			id = columnLetter(i)
		case id[0] >= '0' && id[0] <= '9':
			id = "c" + id
		case id == "id":
			id = "id2"
		}
		base := id
		for n := 2; seen[id]; n++ {
			id = fmt.Sprintf("%s_%d", base, n)
		}
		seen[id] = true
		out[i] = id
	}
	return out
}

func columnLetter(i int) string {
	s := ""
	for i++; i > 0; i = (i - 1) / 26 {
		s = string(rune('A'+(i-1)%26)) + s
	}
	return s
}

func convert(typ, cell string) (any, error) {
	base, _, _ := strings.Cut(typ, ":")
	switch base {
	case "Int":
		if cell == "" {
			return int64(0), nil
		}
		if n, err := strconv.ParseInt(cell, 10, 64); err == nil {
			return n, nil
		}
		return cell, nil
	case "Numeric":
		if cell == "" {
			return float64(0), nil
		}
		if f, err := strconv.ParseFloat(cell, 64); err == nil {
			return f, nil
		}
		return cell, nil
	case "Bool":
		switch strings.ToLower(cell) {
		case "true", "1", "yes":
			return true, nil
		case "false", "0", "no", "":
			return false, nil
		}
		return cell, nil
	case "Date":
		if cell == "" {
			return nil, nil
		}
		d, err := time.Parse("2006-01-02", cell)
		if err != nil {
			return cell, nil
		}
		return d.Unix(), nil
	}
	return cell, nil
}
