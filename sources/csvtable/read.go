package csvtable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sources"
)

// errStopped means the consumer stopped ranging; nothing more is yielded.
var errStopped = errors.New("csvtable: consumer stopped")

// utf8BOM is the byte order mark stripped from the start of a file.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// pager fills pages and yields them when full.
type pager struct {
	yield func(*sources.Page, error) bool
	size  int
	page  *sources.Page
	n     int // records plus skips in page
}

// emit yields the current page and starts a new one; false when the
// consumer stopped.
func (p *pager) emit() bool {
	pg := p.page
	p.page, p.n = &sources.Page{}, 0
	return p.yield(pg, nil)
}

// add counts one record or skip already appended, emitting a full page.
func (p *pager) add() error {
	p.n++
	if p.n >= p.size && !p.emit() {
		return errStopped
	}
	return nil
}

// readFile opens the table's file and reads it into p, returning the
// number of data rows.
func (t *table) readFile(ctx context.Context, p *pager, d *contentDigest) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("csv table %s: %w", t.id, err)
	}
	f, err := os.Open(t.path)
	if err != nil {
		return 0, fmt.Errorf("csv table %s: open: %w", t.id, err)
	}
	defer f.Close()
	return t.read(ctx, f, p, d)
}

// read reads CSV from r into p (see the package documentation), adding
// the header and every row to d when d is not nil.
func (t *table) read(ctx context.Context, r io.Reader, p *pager, d *contentDigest) (int, error) {
	cr := t.csvReader(r)

	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("csv table %s: %s: empty file, no header row", t.id, t.display)
	}
	if err != nil {
		return 0, fmt.Errorf("csv table %s: %s: %w", t.id, t.display, err)
	}
	if d != nil {
		d.add(header, true)
	}
	names, generated, err := t.headerNames(header)
	if err != nil {
		return 0, err
	}
	keyIdx := -1
	if t.key != "" {
		for i, n := range names {
			if n == t.key {
				keyIdx = i
				break
			}
		}
		if keyIdx < 0 {
			return 0, fmt.Errorf("csv table %s: %s: key column %q is not in the header", t.id, t.display, t.key)
		}
	}
	// Per column: its type and whether it is dropped; extended for cells
	// beyond the header as rows need them.
	types := make([]colType, len(names))
	drop := make([]bool, len(names))
	for i, n := range names {
		types[i] = t.typeOf(n)
		drop[i] = t.skip[n]
		if !drop[i] && i != keyIdx && !generated[i] {
			if err := sink.ValidName(n); err != nil {
				// A column no property can be named after is left out of
				// every row, and named in quarantine; the rows sync.
				drop[i] = true
				p.page.Unlisted = append(p.page.Unlisted, sources.Unlisted{Prefix: ColumnPrefix(t.id, i+1),
					Err: fmt.Errorf("csv table %s: %s: header column %d %q: %w; the column is left out", t.id, t.display, i+1, n, err)})
			}
		}
	}

	row := 0
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return row, nil
		}
		if err != nil {
			return row, fmt.Errorf("csv table %s: %s: %w", t.id, t.display, err)
		}
		if d != nil {
			d.add(rec, false)
		}
		row++
		if row%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return row, fmt.Errorf("csv table %s: %s: %w", t.id, t.display, err)
			}
		}
		line, _ := cr.FieldPos(0)
		for len(names) < len(rec) {
			n := "column_" + strconv.Itoa(len(names)+1)
			names = append(names, n)
			generated = append(generated, true)
			types = append(types, t.typeOf(n))
			drop = append(drop, t.skip[n])
		}

		var key string
		if keyIdx < 0 {
			key = t.id + ":" + strconv.Itoa(row)
		} else {
			v := ""
			if keyIdx < len(rec) {
				v = strings.TrimSpace(rec[keyIdx])
			}
			if v == "" {
				p.page.Skipped = append(p.page.Skipped, sources.Skip{Key: t.id + ":", Err: fmt.Errorf("csv table %s: %s line %d: key column %q is empty", t.id, t.display, line, t.key)})
				if err := p.add(); err != nil {
					return row, err
				}
				continue
			}
			key = t.id + ":" + v
		}

		out := sources.Record{Key: key, Anchor: t.id, Attributes: make(map[string]any, len(rec)),
			Where: t.display + " line " + strconv.Itoa(line)}
		var bad error
		for i, name := range names {
			if drop[i] {
				continue
			}
			cell := ""
			if i < len(rec) {
				cell = rec[i]
			}
			if generated[i] && cell == "" {
				continue
			}
			if !utf8.ValidString(cell) {
				l := line
				if i < len(rec) {
					l, _ = cr.FieldPos(i)
				}
				bad = fmt.Errorf("csv table %s: %s line %d column %q: invalid UTF-8", t.id, t.display, l, name)
				break
			}
			v, links, err := convert(types[i], name, cell)
			if err != nil {
				l := line
				if i < len(rec) {
					l, _ = cr.FieldPos(i)
				}
				bad = fmt.Errorf("csv table %s: %s line %d column %q: value %q: %w", t.id, t.display, l, name, cell, err)
				break
			}
			out.Links = append(out.Links, links...)
			out.Attributes[name] = v
		}
		if bad != nil {
			p.page.Skipped = append(p.page.Skipped, sources.Skip{Key: key, Err: bad})
		} else {
			p.page.Records = append(p.page.Records, out)
		}
		if err := p.add(); err != nil {
			return row, err
		}
	}
}

// ColumnPrefix is the quarantine entry of a table's column that was left
// out (a header name no property can have): "<table>:#column:<n>", n the
// 1-based column, a prefix no row key of the table has in practice.
func ColumnPrefix(table string, n int) string {
	return table + ":#column:" + strconv.Itoa(n)
}

// headerNames returns the header's column names: empty cells become
// "column_<n>". Names must be unique, and a literal "column_<n>" with n
// beyond the header would collide with generated names of ragged rows.
// generated[i] tells whether names[i] was generated.
func (t *table) headerNames(header []string) (names []string, generated []bool, err error) {
	names = make([]string, len(header))
	generated = make([]bool, len(header))
	pos := make(map[string]int, len(header))
	for i, h := range header {
		n := h
		if strings.TrimSpace(h) == "" {
			n = "column_" + strconv.Itoa(i+1)
			generated[i] = true
		} else if m := generatedRe.FindStringSubmatch(h); m != nil {
			if k, err := strconv.Atoi(m[1]); err != nil || k > len(header) {
				return nil, nil, fmt.Errorf("csv table %s: %s: header column %d %q would collide with the generated names of cells beyond the header", t.id, t.display, i+1, h)
			}
		}
		if j, ok := pos[n]; ok {
			return nil, nil, fmt.Errorf("csv table %s: %s: duplicate header column %q (columns %d and %d)", t.id, t.display, n, j+1, i+1)
		}
		pos[n] = i
		names[i] = n
	}
	for col := range t.types {
		if _, ok := pos[col]; !ok && !generatedRe.MatchString(col) {
			return nil, nil, fmt.Errorf("csv table %s: %s: typed column %q is not in the header", t.id, t.display, col)
		}
	}
	for col := range t.skip {
		if _, ok := pos[col]; !ok && !generatedRe.MatchString(col) {
			return nil, nil, fmt.Errorf("csv table %s: %s: skipped column %q is not in the header", t.id, t.display, col)
		}
	}
	return names, generated, nil
}

// typeOf is the configured type of a column (text by default).
func (t *table) typeOf(name string) colType {
	if ct, ok := t.types[name]; ok {
		return ct
	}
	return colType{kind: TypeText}
}

// convert turns one cell into its attribute value and links.
func convert(ct colType, column, cell string) (any, []sources.Link, error) {
	if ct.kind == TypeText {
		return cell, nil, nil
	}
	v := strings.TrimSpace(cell)
	if v == "" {
		return nil, nil, nil
	}
	switch ct.kind {
	case TypeInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, nil, errors.New("not an int")
		}
		return n, nil, nil
	case TypeNumeric:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, nil, errors.New("not a finite number")
		}
		return f, nil, nil
	case TypeBool:
		switch strings.ToLower(v) {
		case "true", "1", "yes":
			return true, nil, nil
		case "false", "0", "no":
			return false, nil, nil
		}
		return nil, nil, errors.New("not a bool (true/false, 1/0, yes/no)")
	case TypeDate:
		if len(v) != len("2006-01-02") {
			return nil, nil, errors.New("not a date YYYY-MM-DD")
		}
		if _, err := time.Parse(time.DateOnly, v); err != nil {
			return nil, nil, errors.New("not a date YYYY-MM-DD")
		}
		return v, nil, nil
	case TypeChoiceList:
		items, err := splitList(v, ";")
		if err != nil || items == nil {
			return nil, nil, err
		}
		return items, nil, nil
	case TypeRef:
		return v, []sources.Link{refLink(ct.target, column, v)}, nil
	case TypeRefList:
		items, err := splitList(v, ",;")
		if err != nil || items == nil {
			return nil, nil, err
		}
		links := make([]sources.Link, 0, len(items))
		for _, it := range items {
			links = append(links, refLink(ct.target, column, it.(string)))
		}
		return items, links, nil
	}
	return nil, nil, fmt.Errorf("unknown type %q", ct.kind)
}

// refLink is the link of a Ref cell. Its type is the upper-cased column
// name, as the Grist source names links (sources/grist).
func refLink(target, column, value string) sources.Link {
	return sources.Link{Type: strings.ToUpper(column), ToAnchor: target, ToKey: target + ":" + value}
}

// splitList parses a JSON array of strings (when v starts with '[') or
// splits v on any of seps, trimming items and dropping empty ones. The
// result is []any of strings, nil when no item is left.
func splitList(v, seps string) ([]any, error) {
	var items []any
	if strings.HasPrefix(v, "[") {
		var raw []any
		if err := json.Unmarshal([]byte(v), &raw); err != nil {
			return nil, fmt.Errorf("not a JSON array: %w", err)
		}
		for _, e := range raw {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("JSON array item %v is not a string", e)
			}
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, s)
			}
		}
		if len(items) == 0 {
			return nil, nil
		}
		return items, nil
	}
	for _, s := range strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
		if s = strings.TrimSpace(s); s != "" {
			items = append(items, s)
		}
	}
	if len(items) == 0 {
		return nil, nil
	}
	return items, nil
}
