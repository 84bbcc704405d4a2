// Package csvtable is the CSV table source: each configured CSV file is one
// table, each data row one record, mapped like a Grist table (anchor = table
// id, key = "<table>:<key value>", Ref/RefList columns → links).
//
// Reading: encoding/csv with RFC 4180 quoting, multi-line quoted cells and
// strict quotes (LazyQuotes off). A leading UTF-8 BOM is stripped. CRLF row
// ends are tolerated and removed; a bare LF inside a quoted cell is kept
// as it is (encoding/csv also turns a CRLF inside a quoted cell into LF).
// Files are read streaming, one row at a time, in the order of Config.Tables,
// and yielded as pages of at most DefaultPageSize records plus skips.
//
// Cells: text is kept exactly as in the file (never trimmed, "" when
// empty); typed cells are trimmed and parsed (see the Type constants), nil
// when empty. The key value is trimmed.
//
// Header: the first row. An empty (or blank) header cell at 1-based
// position n is named "column_<n>"; so is a cell beyond the header in a
// ragged row. Empty values of generated columns are left out of
// Attributes. Header names must be unique once generated.
//
// Keys: with Table.Key set, the trimmed cell of that column. A key
// repeated in a file is not detected here (that would hold every key in
// memory): every row is yielded, with its file and line in Record.Where,
// and the pipeline, which compares the listing with state as two streams,
// keeps the first and skips the later ones with a warning naming the line.
// Without Table.Key, the key is the 1-based
// data row number: such keys are NOT stable when rows are inserted or
// removed above (every later row changes key, so is deleted and re-created).
//
// What is skipped (Page.Skipped, naming file, line and column; never
// treated as deleted): a blank row (every cell empty), a typed cell
// that does not parse (never coerced silently), or a cell with invalid
// UTF-8.
//
// What blocks one table's deletions (Page.Unlisted with prefix "<table>:",
// so the pipeline deletes none of its stored rows): a row with cells but an
// empty key (it may be any stored row; the table's other rows are read).
// What blocks one table (the same, and the pipeline reads the other
// tables): a file that cannot be opened, an empty file (no header row), a CSV syntax
// error (bare or missing quote, a file truncated inside a quoted cell), a
// row longer than 64 MiB (maxRowBytes; a row is held whole, so an open
// quote stops there instead of gathering the rest of the file), a
// header without the key column or with a duplicate name, and a configured
// column absent from the header. A done context fails the listing.
//
// Cursor: per table, in table order, the xxhash64 of the file's bytes and
// the digest of what it says (its header and rows as parsed, in blocks of
// 4,096 rows; see contentDigest): "csv2:" then "<hash>/<rows>/<blocks>"
// per table, comma-separated (an empty entry for a file that could not be
// read), on the listing's last page. Read from a cursor whose hashes equal
// the files' now yields sources.ErrNotModified without parsing anything: an
// untouched table costs reading its bytes once. A file whose bytes changed
// but whose rows did not (re-exported with other quoting or line endings)
// is parsed once, without building records, and yields a
// sources.NotModifiedError whose cursor holds its new hash. Any other
// change to any file lists every table in full (a complete listing: the
// pipeline's content hash makes unchanged rows free and finds the deleted
// ones). A "csv1:" cursor (hashes only) is read as one without digests.
package csvtable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"

	"github.com/kgsync/kgsync/sources"
)

// DefaultPageSize is the maximum number of records plus skips per page.
const DefaultPageSize = 500

// Column types accepted in Table.Columns. "ref:<table>" and
// "reflist:<table>" add the target table id after the colon.
const (
	// TypeText keeps the cell as a string exactly as in the file ("" when empty).
	TypeText = "text"
	// TypeInt parses a base-10 int64 (surrounding spaces ignored).
	TypeInt = "int"
	// TypeNumeric parses a finite float64.
	TypeNumeric = "numeric"
	// TypeBool accepts true/false, 1/0 and yes/no, any case.
	TypeBool = "bool"
	// TypeDate accepts an ISO-8601 calendar date YYYY-MM-DD, kept as the string.
	TypeDate = "date"
	// TypeChoiceList splits on ';' (items trimmed, empty items dropped) or
	// parses a JSON array of strings; the value is []any of strings.
	TypeChoiceList = "choicelist"
	// TypeRef ("ref:<table>") is a key of another table: the attribute is the
	// trimmed string and the record gets a sources.Link{Type: upper-cased
	// column name, ToAnchor: <table>, ToKey: "<table>:<value>"} (the Grist
	// source names links the same way); an empty cell gives no link.
	TypeRef = "ref"
	// TypeRefList ("reflist:<table>") is keys separated by ',' or ';' (or a
	// JSON array): the attribute is []any of strings, one link per key.
	TypeRefList = "reflist"
)

// Config is a CSV source's configuration; the pipeline maps its YAML onto it.
type Config struct {
	// Tables are read in this order, each as one table.
	Tables []Table
}

// Table is one CSV file read as a table.
type Table struct {
	// Path is the CSV file, absolute or already resolved by the caller.
	Path string
	// Table is the table id, used as the records' anchor and key prefix,
	// e.g. "hs_code"; it must match [A-Za-z0-9_]+. Default: the file's base
	// name without extension, other characters replaced by '_'.
	Table string
	// Key is the key column; default "" keys rows by 1-based data row
	// number ("<table>:<n>"), which is unstable under inserts.
	Key string
	// Columns maps a column name to its type (see the Type constants):
	// "text" (default), "int", "numeric", "bool", "date", "choicelist",
	// "ref:<table>", "reflist:<table>". Every name must be in the header or
	// be a generated name "column_<n>".
	Columns map[string]string
	// Skip lists columns left out of Attributes (a skipped key column still
	// gives the key; a skipped ref or reflist column gives no links).
	Skip []string
	// Delimiter is the field separator, one character; default ",".
	Delimiter string
}

// Option adjusts a Source.
type Option func(*Source)

// WithPageSize sets the maximum number of records plus skips per page
// (default DefaultPageSize); n <= 0 keeps the default.
func WithPageSize(n int) Option {
	return func(s *Source) {
		if n > 0 {
			s.pageSize = n
		}
	}
}

// Source reads CSV files as tables; it satisfies sources.Source. It keeps no
// state between listings and is safe for concurrent Reads.
type Source struct {
	name     string
	tables   []table
	pageSize int
	logger   *slog.Logger
}

// colType is a parsed Table.Columns value.
type colType struct {
	kind   string // one of the Type constants
	target string // ref and reflist: the target table id
}

// table is a validated Table.
type table struct {
	path    string
	id      string
	key     string
	types   map[string]colType
	skip    map[string]bool
	delim   rune
	display string // the path as shown in messages
	// maxRow bounds one row's bytes; 0 is maxRowBytes.
	maxRow int64
}

var (
	tableIDRe   = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
	notIDChar   = regexp.MustCompile(`[^A-Za-z0-9_]`)
	generatedRe = regexp.MustCompile(`^column_([1-9][0-9]*)$`)
)

// New returns a CSV table source named name (default "csvtable"). Files are
// not opened until Read. New fails on no tables, an empty path, a table id
// that is invalid or repeated, an unknown column type, a ref without a
// target table, and a delimiter that is not one character or is a quote,
// CR or LF. logger may be nil.
func New(name string, cfg Config, logger *slog.Logger, opts ...Option) (*Source, error) {
	if name == "" {
		name = "csvtable"
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Tables) == 0 {
		return nil, fmt.Errorf("csv source %q: no tables", name)
	}
	s := &Source{name: name, pageSize: DefaultPageSize, logger: logger}
	ids := map[string]int{}
	for i, tc := range cfg.Tables {
		at := fmt.Sprintf("csv source %q: tables[%d]", name, i)
		if tc.Path == "" {
			return nil, fmt.Errorf("%s: path is required", at)
		}
		t := table{path: tc.Path, display: tc.Path, key: tc.Key, types: map[string]colType{}, skip: map[string]bool{}, delim: ','}
		t.id = tc.Table
		if t.id == "" {
			base := filepath.Base(tc.Path)
			t.id = notIDChar.ReplaceAllString(strings.TrimSuffix(base, filepath.Ext(base)), "_")
			if t.id == "" {
				return nil, fmt.Errorf("%s (%s): no table id from the file name; set table", at, tc.Path)
			}
		} else if !tableIDRe.MatchString(t.id) {
			return nil, fmt.Errorf("%s (%s): table id %q must match [A-Za-z0-9_]+", at, tc.Path, t.id)
		}
		if j, ok := ids[t.id]; ok {
			return nil, fmt.Errorf("%s (%s): table id %q repeats tables[%d]", at, tc.Path, t.id, j)
		}
		ids[t.id] = i
		for col, typ := range tc.Columns {
			ct, err := parseType(typ)
			if err != nil {
				return nil, fmt.Errorf("%s (%s): column %q: %w", at, tc.Path, col, err)
			}
			t.types[col] = ct
		}
		for _, col := range tc.Skip {
			t.skip[col] = true
		}
		if tc.Delimiter != "" {
			r, n := utf8.DecodeRuneInString(tc.Delimiter)
			if n != len(tc.Delimiter) || r == utf8.RuneError || r == '"' || r == '\r' || r == '\n' {
				return nil, fmt.Errorf("%s (%s): delimiter %q must be one character other than a quote, CR or LF", at, tc.Path, tc.Delimiter)
			}
			t.delim = r
		}
		s.tables = append(s.tables, t)
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// parseType parses a Table.Columns value.
func parseType(typ string) (colType, error) {
	kind, target, hasTarget := strings.Cut(strings.TrimSpace(typ), ":")
	switch kind {
	case "", TypeText, TypeInt, TypeNumeric, TypeBool, TypeDate, TypeChoiceList:
		if hasTarget {
			return colType{}, fmt.Errorf("type %q takes no target table", typ)
		}
		if kind == "" {
			kind = TypeText
		}
		return colType{kind: kind}, nil
	case TypeRef, TypeRefList:
		if !tableIDRe.MatchString(target) {
			return colType{}, fmt.Errorf("type %q needs a target table id matching [A-Za-z0-9_]+ (%s:<table>)", typ, kind)
		}
		return colType{kind: kind, target: target}, nil
	}
	return colType{}, fmt.Errorf("unknown type %q (want text, int, numeric, bool, date, choicelist, ref:<table> or reflist:<table>)", typ)
}

// Name returns the source's name.
func (s *Source) Name() string { return s.name }

// Tables returns the table ids in reading order (defaults applied).
func (s *Source) Tables() []string {
	out := make([]string, len(s.tables))
	for i, t := range s.tables {
		out[i] = t.id
	}
	return out
}

// Read yields every table's rows as pages; cursor is ignored (every
// listing is complete) but for telling an unchanged listing (see the
// package documentation, which also says what is skipped and what fails
// the listing).
func (s *Source) Read(ctx context.Context, cursor string) iter.Seq2[*sources.Page, error] {
	return func(yield func(*sources.Page, error) bool) {
		hashes := s.fileHashes()
		if cursor != "" {
			if c, same := s.unchanged(ctx, cursor, hashes); same {
				if c == cursor {
					yield(nil, sources.ErrNotModified)
				} else {
					yield(nil, &sources.NotModifiedError{Cursor: c})
				}
				return
			}
		}
		p := &pager{yield: yield, size: s.pageSize, page: &sources.Page{}}
		complete := true
		digests := make([]string, len(s.tables))
		for i := range s.tables {
			t := &s.tables[i]
			d := newContentDigest()
			n, err := t.readFile(ctx, p, d)
			if errors.Is(err, errStopped) {
				return
			}
			if err != nil && ctx.Err() != nil {
				yield(nil, err)
				return
			}
			if err != nil {
				// A file that cannot be read whole (an unterminated quote, a
				// bad header, gone) blocks only its table: its stored rows
				// are kept, the other tables are read.
				s.logger.Warn("csv table not read; its stored rows are kept", slog.String("source", s.name),
					slog.String("table", t.id), slog.String("err", err.Error()))
				p.page.Unlisted = append(p.page.Unlisted, sources.Unlisted{Prefix: t.id + ":", Err: err})
				complete = false
				if err := p.add(); err != nil {
					return
				}
				continue
			}
			digests[i] = d.summary().String()
			s.logger.Debug("csv table read", slog.String("source", s.name), slog.String("table", t.id), slog.String("file", t.path), slog.Int("rows", n))
		}
		if complete {
			// The files as they were before parsing: a file that changed
			// while it was read is read again next time.
			p.page.Cursor = makeCursor(hashes, digests)
		}
		if p.n > 0 || p.page.Cursor != "" {
			p.emit()
		}
	}
}

// unchanged tells whether the tables say what cursor says they said: every
// file's hash is the stored one (then c is cursor), or the files whose
// hash changed still digest as stored (then c is the cursor with their new
// hashes).
func (s *Source) unchanged(ctx context.Context, cursor string, hashes []string) (c string, same bool) {
	oldHashes, oldDigests, ok := parseCursor(cursor)
	if !ok || len(oldHashes) != len(s.tables) {
		return "", false
	}
	if slices.Equal(oldHashes, hashes) && !slices.Contains(hashes, "") {
		return cursor, true
	}
	for i := range s.tables {
		if hashes[i] == "" || oldDigests[i] == "" {
			return "", false
		}
		if hashes[i] == oldHashes[i] {
			continue
		}
		want, ok := parseDigestSummary(oldDigests[i])
		if !ok || !s.tables[i].sameContent(ctx, want) {
			return "", false
		}
	}
	return makeCursor(hashes, oldDigests), true
}

// makeCursor is the cursor of tables with these file hashes and content
// digests (empty ones for a table not read).
func makeCursor(hashes, digests []string) string {
	var b strings.Builder
	b.WriteString("csv2:")
	for i, h := range hashes {
		if i > 0 {
			b.WriteByte(',')
		}
		if h != "" && digests[i] != "" {
			b.WriteString(h + "/" + digests[i])
		}
	}
	return b.String()
}

// parseCursor splits a "csv2:" cursor into its file hashes and content
// digests, and a "csv1:" one into its hashes (digests empty).
func parseCursor(cursor string) (hashes, digests []string, ok bool) {
	rest, isV1 := strings.CutPrefix(cursor, "csv1:")
	if !isV1 {
		var isV2 bool
		if rest, isV2 = strings.CutPrefix(cursor, "csv2:"); !isV2 {
			return nil, nil, false
		}
	}
	entries := strings.Split(rest, ",")
	hashes, digests = make([]string, len(entries)), make([]string, len(entries))
	for i, e := range entries {
		if isV1 {
			hashes[i] = e
			continue
		}
		if e == "" {
			continue
		}
		h, d, found := strings.Cut(e, "/")
		if !found {
			return nil, nil, false
		}
		hashes[i], digests[i] = h, d
	}
	return hashes, digests, true
}

// fileHashes are the xxhash64 of the tables' files as they are now, in
// hex; an empty one for a file that cannot be read.
func (s *Source) fileHashes() []string {
	out := make([]string, len(s.tables))
	for i := range s.tables {
		f, err := os.Open(s.tables[i].path)
		if err != nil {
			continue
		}
		h := xxhash.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err == nil {
			out[i] = fmt.Sprintf("%016x", h.Sum64())
		}
	}
	return out
}
