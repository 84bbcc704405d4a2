package csvtable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
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
// the header and every row to d when d is not nil. Its stages: the header
// gives the columns (header), then each row widens them to its cells
// (widen), gets its key (rowKey) and becomes a record or a skip (record);
// each record or skip counts towards the page (pager.add).
func (t *table) read(ctx context.Context, r io.Reader, p *pager, d *contentDigest) (int, error) {
	cr := t.csvReader(r)
	cols, err := t.header(cr, p, d)
	if err != nil {
		return 0, err
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
		cols.widen(t, len(rec))
		key, err := t.rowKey(cols, rec, row, line)
		switch {
		case err != nil && blankRow(rec):
			// No record at all (",,,"): nothing stored can be its.
			p.page.Skipped = append(p.page.Skipped, sources.Skip{Key: t.id + ":", Err: err})
		case err != nil:
			// A row whose key was cleared may be any stored row: the
			// table's other rows are read, none of its stored rows is
			// deleted.
			p.page.Unlisted = append(p.page.Unlisted, sources.Unlisted{Prefix: t.id + ":", Err: err})
		default:
			if out, bad := t.record(cr, cols, rec, key, line); bad != nil {
				p.page.Skipped = append(p.page.Skipped, sources.Skip{Key: key, Err: bad})
			} else {
				p.page.Records = append(p.page.Records, out)
			}
		}
		if err := p.add(); err != nil {
			return row, err
		}
	}
}

// columns are a table's columns as the header and the rows so far give
// them, each slice indexed by column.
type columns struct {
	names []string
	// generated tells a name made for an empty header cell or a cell
	// beyond the header ("column_<n>").
	generated []bool
	types     []colType
	// drop tells a column left out of every record (Table.Skip, or a
	// name no property can have).
	drop []bool
	// keyIdx is the key column, -1 when rows are keyed by their number.
	keyIdx int
}

// header reads the header row (adding it to d when d is not nil) and
// returns the columns it names. A header name no property can be named
// after leaves its column out, named in quarantine on p's page; the rows
// sync.
func (t *table) header(cr *rowReader, p *pager, d *contentDigest) (*columns, error) {
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("csv table %s: %s: empty file, no header row", t.id, t.display)
	}
	if err != nil {
		return nil, fmt.Errorf("csv table %s: %s: %w", t.id, t.display, err)
	}
	if d != nil {
		d.add(header, true)
	}
	names, generated, err := t.headerNames(header)
	if err != nil {
		return nil, err
	}
	c := &columns{names: names, generated: generated, keyIdx: -1}
	if t.key != "" {
		c.keyIdx = slices.Index(names, t.key)
		if c.keyIdx < 0 {
			return nil, fmt.Errorf("csv table %s: %s: key column %q is not in the header", t.id, t.display, t.key)
		}
	}
	c.types = make([]colType, len(names))
	c.drop = make([]bool, len(names))
	for i, n := range names {
		c.types[i] = t.typeOf(n)
		c.drop[i] = t.skip[n]
		if !c.drop[i] && i != c.keyIdx && !generated[i] {
			if err := sink.ValidName(n); err != nil {
				c.drop[i] = true
				p.page.Unlisted = append(p.page.Unlisted, sources.Unlisted{Prefix: ColumnPrefix(t.id, i+1),
					Err: fmt.Errorf("csv table %s: %s: header column %d %q: %w; the column is left out", t.id, t.display, i+1, n, err)})
			}
		}
	}
	return c, nil
}

// widen adds a generated column ("column_<n>") for each of a row's n
// cells beyond the columns known.
func (c *columns) widen(t *table, n int) {
	for len(c.names) < n {
		name := "column_" + strconv.Itoa(len(c.names)+1)
		c.names = append(c.names, name)
		c.generated = append(c.generated, true)
		c.types = append(c.types, t.typeOf(name))
		c.drop = append(c.drop, t.skip[name])
	}
}

// blankRow reports whether every cell of rec is empty or spaces: a row
// with no record in it (",,," from a spreadsheet's trailing rows).
func blankRow(rec []string) bool {
	for _, c := range rec {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

// rowKey returns the key of the record of rec, the row-th data row at
// line: "<table>:<row>" without a key column, else "<table>:<key cell>"
// trimmed. An empty key cell is an error: the row is skipped when it is
// blank, else it holds its table's deletions (read).
func (t *table) rowKey(c *columns, rec []string, row, line int) (string, error) {
	if c.keyIdx < 0 {
		return t.id + ":" + strconv.Itoa(row), nil
	}
	v := ""
	if c.keyIdx < len(rec) {
		v = strings.TrimSpace(rec[c.keyIdx])
	}
	if v == "" {
		return "", fmt.Errorf("csv table %s: %s line %d: key column %q is empty", t.id, t.display, line, t.key)
	}
	return t.id + ":" + v, nil
}

// record converts the cells of rec, at line, into the record key names.
// Dropped columns and empty generated cells are left out. bad is the
// first cell that is not valid UTF-8 or not a value of its column's type,
// named by line and column (the row is skipped).
func (t *table) record(cr *rowReader, c *columns, rec []string, key string, line int) (out sources.Record, bad error) {
	out = sources.Record{Key: key, Anchor: t.id, Attributes: make(map[string]any, len(rec)),
		Where: t.display + " line " + strconv.Itoa(line)}
	// cellLine is the line cell i starts on (a quoted cell may span
	// lines); a cell the row lacks is on the row's line.
	cellLine := func(i int) int {
		if i < len(rec) {
			l, _ := cr.FieldPos(i)
			return l
		}
		return line
	}
	for i, name := range c.names {
		if c.drop[i] {
			continue
		}
		cell := ""
		if i < len(rec) {
			cell = rec[i]
		}
		if c.generated[i] && cell == "" {
			continue
		}
		if !utf8.ValidString(cell) {
			return out, fmt.Errorf("csv table %s: %s line %d column %q: invalid UTF-8", t.id, t.display, cellLine(i), name)
		}
		v, links, err := convert(c.types[i], name, cell)
		if err != nil {
			return out, fmt.Errorf("csv table %s: %s line %d column %q: value %q: %w", t.id, t.display, cellLine(i), name, cell, err)
		}
		out.Links = append(out.Links, links...)
		out.Attributes[name] = v
	}
	return out, nil
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
