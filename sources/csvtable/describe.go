package csvtable

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
)

// Describe reads each table's header row (not its rows) and returns, by
// table id, its columns (skipped ones left out) with their kind: text,
// number (int and numeric), bool, date, list (choicelist), ref:<table> or
// reflist:<table>. It is what `kgsync validate` checks the data model
// against offline. Errors name the file.
func (s *Source) Describe() (map[string]map[string]string, error) {
	out := make(map[string]map[string]string, len(s.tables))
	for i := range s.tables {
		t := &s.tables[i]
		cols, err := t.describe()
		if err != nil {
			return nil, err
		}
		out[t.id] = cols
	}
	return out, nil
}

func (t *table) describe() (map[string]string, error) {
	f, err := os.Open(t.path)
	if err != nil {
		return nil, fmt.Errorf("csv table %s: open: %w", t.id, err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if b, err := br.Peek(len(utf8BOM)); err == nil && bytes.Equal(b, utf8BOM) {
		_, _ = br.Discard(len(utf8BOM))
	}
	cr := csv.NewReader(br)
	cr.Comma = t.delim
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("csv table %s: %s: empty file, no header row", t.id, t.display)
	}
	if err != nil {
		return nil, fmt.Errorf("csv table %s: %s: %w", t.id, t.display, err)
	}
	names, _, err := t.headerNames(header)
	if err != nil {
		return nil, err
	}
	cols := make(map[string]string, len(names))
	for _, n := range names {
		if t.skip[n] {
			continue
		}
		ct := t.typeOf(n)
		switch ct.kind {
		case TypeInt, TypeNumeric:
			cols[n] = "number"
		case TypeChoiceList:
			cols[n] = "list"
		case TypeRef, TypeRefList:
			cols[n] = ct.kind + ":" + ct.target
		default:
			cols[n] = ct.kind
		}
	}
	return cols, nil
}
