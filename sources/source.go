// Package sources defines the Source contract and the records it yields.
// Implementations live in sources/files (and later sources/grist,
// sources/http). A Source keeps no sync state: the pipeline compares what it
// yields with state.
package sources

import (
	"context"
	"errors"
	"iter"
)

// ErrNotModified is yielded by Read when upstream reports no change since the
// cursor (for example HTTP 304). It ends the listing without deleting anything.
var ErrNotModified = errors.New("sources: not modified")

// NotModifiedError is ErrNotModified with the warnings the source still
// has for the user (errors.Is(err, ErrNotModified) holds): an unchanged
// upstream whose renamed table the config still names keeps saying so.
type NotModifiedError struct {
	Warnings []string
	// Cursor, when not empty, replaces the stored cursor: the upstream
	// says what it said, in another form (a re-exported file whose bytes
	// changed and rows did not), and the next read compares with this.
	Cursor string
}

func (e *NotModifiedError) Error() string { return ErrNotModified.Error() }

// Is makes errors.Is(e, ErrNotModified) true.
func (e *NotModifiedError) Is(target error) bool { return target == ErrNotModified }

// NotModifiedCursor returns the cursor a not-modified answer carries ("" for
// none: the stored one stays).
func NotModifiedCursor(err error) string {
	var nm *NotModifiedError
	if errors.As(err, &nm) {
		return nm.Cursor
	}
	return ""
}

// NotModifiedWarnings returns the warnings a not-modified answer carries.
func NotModifiedWarnings(err error) []string {
	var nm *NotModifiedError
	if errors.As(err, &nm) {
		return nm.Warnings
	}
	return nil
}

// Source reads one upstream dataset as pages of records in a stable order.
type Source interface {
	// Name is the source's name within its pipeline.
	Name() string
	// Read yields pages after cursor ("" = from the start). The sequence ends
	// early if ctx is done or the caller stops ranging. Only a sequence that
	// ends without yielding an error counts as a complete listing, which
	// deletes rely on: a listing that fails midway deletes nothing.
	Read(ctx context.Context, cursor string) iter.Seq2[*Page, error]
}

// Page is a bounded group of records read together.
type Page struct {
	// Records are the records of this page, each with a key unique in the source.
	Records []Record
	// Skipped are records that exist upstream but could not be read (an
	// unreadable file, invalid UTF-8, too large). They are reported and kept
	// as they are in state and graph: never treated as deleted.
	Skipped []Skip
	// Unlisted are parts of the listing that could not be read (a folder
	// of a files source, one CSV file of a csv source): the stored records
	// whose keys start with the part's Prefix are kept as they are, never
	// treated as deleted, and the part is reported and retried next run,
	// while the rest of the listing counts as complete.
	Unlisted []Unlisted
	// Cursor is the position after this page, stored once the page's batch
	// is committed ("" when the source has no cursor).
	Cursor string
	// Partial marks a page of an incremental listing (for example Grist
	// /compare): keys absent from such a listing are NOT deletions. A
	// listing counts as partial if any of its pages is.
	Partial bool
	// EndUnconfirmed marks the last page of a complete listing whose end
	// the source cannot vouch for: an HTTP listing that ended at an empty
	// page right after a full one (or at an empty first page) with no
	// stated total or has_more, which an upstream failure answering an
	// empty page looks exactly like. The pipeline deletes nothing on such a
	// listing without the operator's confirmation (--allow-mass-delete).
	EndUnconfirmed bool
	// Deleted are keys the source knows were removed upstream since the
	// cursor (incremental listings only); the pipeline deletes them when the
	// page's batch is committed, even though the listing is partial.
	Deleted []string
	// Renamed maps the key of a record of this page to the key the same
	// upstream record had before (its table was renamed, or its key
	// column's value changed): the pipeline moves the stored record and its
	// node to the new key instead of deleting one and adding the other, so
	// nothing is counted as deleted and no text is embedded again.
	Renamed map[string]string
	// Warnings are upstream changes the user should act on (a renamed table
	// or column whose old name the config still uses), each naming the
	// config lines to change. The pipeline logs them and keeps them with
	// the run.
	Warnings []string
}

// ChildMarker separates a parent record's key from a child's suffix: a
// record keyed "<parent>" + ChildMarker + "…" (an attachment of a Grist row)
// belongs to the record keyed "<parent>". The pipeline deletes a parent's
// children with it, and, in a partial listing that lists the parent, the
// children the listing does not list.
const ChildMarker = "#child:"

// Unlisted is a part of a listing that could not be read.
type Unlisted struct {
	// Prefix is the key prefix of the part's records: "guides/" for a
	// folder, "<table>:" for a CSV table.
	Prefix string
	// Err says why, naming the folder or file (and line).
	Err error
}

// Skip is a record that could not be read.
type Skip struct {
	// Key is the record key (for files: the slash path relative to the root).
	Key string
	// Err says why, naming the file, row or field.
	Err error
}

// Record is one unit from a source with a stable key: a file, a Grist row, an API item.
type Record struct {
	// Key is stable and unique within the source (for files: the slash
	// path relative to the root, e.g. "rfc/rfc7231.txt").
	Key string
	// Anchor is the node label the record maps to (e.g. "Document").
	Anchor string
	// Attributes are the record's properties as canonical Go values
	// (string, int64, float64, bool, nil, []any, map[string]any).
	Attributes map[string]any
	// Links are edges from this record's node to other records' nodes
	// (a Grist Ref/RefList cell, a foreign key in API data).
	Links []Link
	// Document is set when the record is a document to chunk.
	Document *Document
	// Origin is the record's upstream row, when the source has stable row
	// ids (a Grist row).
	Origin Origin
	// Where says where the record sits upstream, for messages (a CSV file
	// and line); "" when the key says enough. It is not part of the
	// record's content.
	Where string
}

// Link is an edge from a record's node to another record's node.
type Link struct {
	// Type is the relationship type, e.g. "PARENT".
	Type string
	// ToAnchor and ToKey name the target record (its anchor and key).
	ToAnchor string
	ToKey    string
	// Props are the edge's properties (link-table columns).
	Props map[string]any
}

// Document is a record's document content.
type Document struct {
	// Format is the registered chunker format: "txt", "md", "html", ...
	Format string
	// Content is the raw bytes (already checked to be valid UTF-8 for text formats).
	Content []byte
}

// CursorResetter is a Source whose cursor holds, besides its position in
// upstream's changes, what it remembers of upstream's shape (the Grist
// source: the stable ids of tables and columns, which let it follow
// renames). ResetCursor returns cursor without the change position: a Read
// from it lists everything, as a Read from "" does, but keeps that memory.
type CursorResetter interface {
	ResetCursor(cursor string) string
}

// FullCursor returns the cursor to Read src from when every record must be
// listed whatever the cursor says (resync --full and --reembed, plan
// --full): cursor reset by a CursorResetter, "" for any other source.
func FullCursor(src Source, cursor string) string {
	if cr, ok := src.(CursorResetter); ok && cursor != "" {
		return cr.ResetCursor(cursor)
	}
	return ""
}

// Origin names a record's upstream row where the source has ids that
// outlive renames and key changes: a Grist row is (tableRef, row id).
// State keeps it with the record (sources that have none leave it zero).
type Origin struct {
	// Scope is the row's table as the source identifies it for good (a
	// Grist tableRef), "" for none.
	Scope string
	// ID is the row's id within Scope.
	ID int64
}

// RowIndex is what state remembers of a source's records by origin.
type RowIndex interface {
	// RowKeysOf returns row id -> record key of the stored records whose
	// Origin.Scope is scope and whose Origin.ID is one of ids (ids not
	// stored are absent): a source asks for the rows at hand (a page),
	// never a whole table, so what it holds does not grow with the table.
	RowKeysOf(ctx context.Context, scope string, ids []int64) (map[int64]string, error)
}

// RowIDBound is a RowIndex that also knows the largest row id it holds a
// record of in a scope (0: none). A source asks it before a scan of a
// table: a row of the scan with a larger id is not stored (only a row's
// own record has its id, and the scan lists it once), so it needs no
// RowKeysOf; a first sync asks none.
type RowIDBound interface {
	MaxRowID(ctx context.Context, scope string) (int64, error)
}

// IndexedReader is a Source that reads better knowing what state
// remembers of its rows: it resolves references and notices changed keys
// from idx. The pipeline calls ReadIndexed instead of Read when the state
// store can answer (idx is never nil then).
type IndexedReader interface {
	ReadIndexed(ctx context.Context, cursor string, idx RowIndex) iter.Seq2[*Page, error]
}
