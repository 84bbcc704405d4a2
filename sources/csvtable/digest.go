package csvtable

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// digestRows is how many data rows one block of a content digest covers.
const digestRows = 4096

// contentDigest hashes what a CSV file says: its header and rows as the
// CSV reader returns them (each field length-prefixed, each row
// prefixed with its field count), not how they are written. A file
// re-exported with other quoting, line endings or a byte order mark keeps
// its digest; any change to a cell, a row or the order of rows changes
// it. The digest is kept in blocks of digestRows rows (the header goes with
// the first), so that a comparison stops at the first block that differs:
// a file with an edit near its top costs little more than its reading.
type contentDigest struct {
	h      *xxhash.Digest
	buf    []byte
	rows   int      // data rows added
	blocks []uint64 // digests of the complete blocks
}

func newContentDigest() *contentDigest { return &contentDigest{h: xxhash.New()} }

// add hashes one row (the header first).
func (d *contentDigest) add(rec []string, header bool) {
	d.buf = binary.AppendUvarint(d.buf[:0], uint64(len(rec)))
	for _, f := range rec {
		d.buf = binary.AppendUvarint(d.buf, uint64(len(f)))
		d.buf = append(d.buf, f...)
	}
	_, _ = d.h.Write(d.buf)
	if header {
		return
	}
	d.rows++
	if d.rows%digestRows == 0 {
		d.blocks = append(d.blocks, d.h.Sum64())
		d.h.Reset()
	}
}

// summary is the digest of the whole file: its rows and its blocks, the
// last (partial, possibly empty) block included.
func (d *contentDigest) summary() digestSummary {
	return digestSummary{rows: d.rows, blocks: append(append([]uint64(nil), d.blocks...), d.h.Sum64())}
}

// digestSummary is a file's content digest as a cursor keeps it.
type digestSummary struct {
	rows   int
	blocks []uint64
}

// String is "<rows>/<block digests, 16 hex digits each>".
func (s digestSummary) String() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(s.rows))
	b.WriteByte('/')
	for _, h := range s.blocks {
		fmt.Fprintf(&b, "%016x", h)
	}
	return b.String()
}

// parseDigestSummary parses String's form; ok is false for anything else.
func parseDigestSummary(s string) (digestSummary, bool) {
	rows, hexes, found := strings.Cut(s, "/")
	n, err := strconv.Atoi(rows)
	if !found || err != nil || n < 0 || len(hexes)%16 != 0 || len(hexes)/16 != n/digestRows+1 {
		return digestSummary{}, false
	}
	out := digestSummary{rows: n, blocks: make([]uint64, 0, len(hexes)/16)}
	for i := 0; i < len(hexes); i += 16 {
		h, err := strconv.ParseUint(hexes[i:i+16], 16, 64)
		if err != nil {
			return digestSummary{}, false
		}
		out.blocks = append(out.blocks, h)
	}
	return out, true
}

// errDiffers ends a comparison at the first block that differs.
var errDiffers = errors.New("csvtable: content differs")

// sameContent tells whether the table's file says what want digests,
// reading it only up to the first block that differs. A file that cannot
// be read or parsed is not the same (the listing then reports why).
func (t *table) sameContent(ctx context.Context, want digestSummary) bool {
	f, err := os.Open(t.path)
	if err != nil {
		return false
	}
	defer f.Close()
	cr := t.csvReader(f)
	d := newContentDigest()
	header, err := cr.Read()
	if err != nil {
		return false
	}
	d.add(header, true)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return false
		}
		d.add(rec, false)
		if n := len(d.blocks); d.rows%digestRows == 0 && (n > len(want.blocks) || d.blocks[n-1] != want.blocks[n-1]) {
			return false
		}
		if d.rows%1024 == 0 && ctx.Err() != nil {
			return false
		}
	}
	got := d.summary()
	return got.rows == want.rows && len(got.blocks) == len(want.blocks) && got.blocks[len(got.blocks)-1] == want.blocks[len(want.blocks)-1]
}

// maxRowBytes bounds the bytes of one row of a table's file (its cells
// and separators, and the line breaks of quoted cells): encoding/csv holds
// a row whole, so a quote left open would otherwise gather the rest of
// the file in memory.
const maxRowBytes = 64 << 20

// errRowTooLong is what the bounded file reader answers once a row has
// passed the bound.
var errRowTooLong = errors.New("row too long")

// rowReader is the CSV reader of a table's file, each Read bounded to
// t.maxRow bytes.
type rowReader struct {
	*csv.Reader
	lim *boundedReader
	// bom is the length of the byte order mark skipped, so that offsets
	// are the file's.
	bom int64
	max int64
}

// boundedReader fails a read at or past max bytes from the start.
type boundedReader struct {
	r        io.Reader
	n, limit int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.n >= b.limit {
		return 0, errRowTooLong
	}
	p = p[:min(int64(len(p)), b.limit-b.n)]
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}

// Read reads the next row; a row longer than the bound is an error
// naming its byte offset in the file. The bound counts from the bytes
// read so far, which the row starts before: a row within it is never
// refused, and at most the bound plus the read buffer is held.
func (r *rowReader) Read() ([]string, error) {
	start := r.InputOffset() + r.bom
	r.lim.limit = r.lim.n + r.max
	rec, err := r.Reader.Read()
	if errors.Is(err, errRowTooLong) {
		return nil, fmt.Errorf("the row at byte %d is longer than %d bytes; a quoted cell may be left open", start, r.max)
	}
	return rec, err
}

// csvReader is the CSV reader of a table's file: a leading byte order
// mark skipped, the table's delimiter, ragged rows allowed, rows bounded
// to t.maxRow bytes (maxRowBytes unless set).
func (t *table) csvReader(r io.Reader) *rowReader {
	rr := &rowReader{max: cmp.Or(t.maxRow, maxRowBytes)}
	rr.lim = &boundedReader{r: r, limit: rr.max}
	br := bufio.NewReaderSize(rr.lim, 64<<10)
	if b, err := br.Peek(len(utf8BOM)); err == nil && bytes.Equal(b, utf8BOM) {
		_, _ = br.Discard(len(utf8BOM))
		rr.bom = int64(len(utf8BOM))
	}
	cr := csv.NewReader(br)
	cr.Comma = t.delim
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	rr.Reader = cr
	return rr
}
