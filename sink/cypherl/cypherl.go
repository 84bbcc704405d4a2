// Package cypherl is the file sink: it writes a pipeline's graph operations
// as CYPHERL files that Memgraph loads with mgconsole or Memgraph Lab
// (docs/memgraph.md §7).
//
// Layout of <dir>/<pipeline>/, in the lexical order a shell glob gives:
//
//	000000-schema.cypherl   label-property and text indexes, vector index drops (IndexFile)
//	NNNNNN-<tag>.cypherl    the writes, NNNNNN a sequence number from 000001
//	vector-indexes.cypherl  vector indexes (VectorIndexFile)
//	schema.json             what the two schema files create (SchemaFile)
//
// so that replaying every file in that order, `cat
// <dir>/<pipeline>/*.cypherl | mgconsole`, rebuilds the pipeline's graph:
// indexes for the MERGE keys first, then the data, then each vector index
// over vectors of its dimension. The files replay on the Memgraph version
// they are written for (WithMemgraphVersion; docs/memgraph-support.md),
// from scratch and again onto the loaded graph, after any sequence of
// runs (Ensure says why); for several pipelines sharing a
// Memgraph, replay all their numbered files before the vector index files:
// `cat <dir>/*/0*.cypherl <dir>/*/vector-indexes.cypherl | mgconsole`.
// <tag> is "run<id>" after Begin, else the UTC time the file was opened.
// One statement per line, ending in ';', values inlined as literals
// (Inline); every node statement names the owning pipeline
// (sink.PropPipeline). A numbered file is opened only when there is
// something to write, so a run that changes nothing leaves no file.
//
// A Sink is safe for concurrent use, but one directory must have one writer.
package cypherl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kgsync/kgsync/sink"
)

// DefaultRowsPerStatement is the UNWIND list size when WithRowsPerStatement
// is not given.
const DefaultRowsPerStatement = 1000

// maxSeq is the largest file sequence number: six digits keep lexical order
// equal to numeric order.
const maxSeq = 999999

// File names in a pipeline's directory besides the numbered files.
const (
	// SchemaFile is the sidecar recording the indexes the schema files
	// create.
	SchemaFile = "schema.json"
	// IndexFile creates the label-property indexes; it sorts before every
	// numbered file.
	IndexFile = "000000-schema.cypherl"
	// VectorIndexFile creates the vector indexes; it sorts after every
	// numbered file.
	VectorIndexFile = "vector-indexes.cypherl"
)

// Option configures a Sink.
type Option func(*Sink)

// WithRowsPerStatement sets how many rows one UNWIND statement carries
// (default DefaultRowsPerStatement; n <= 0 means one statement per group).
func WithRowsPerStatement(n int) Option {
	return func(s *Sink) { s.rows = n }
}

// WithMemgraphVersion sets the Memgraph version the files are written
// for (default sink.DefaultCypherlMemgraphVersion): it decides what the
// schema files hold (sink.MemgraphRange; docs/memgraph-support.md). New
// refuses an unsupported or unparseable version.
func WithMemgraphVersion(v string) Option {
	return func(s *Sink) { s.version = v }
}

// WithClock sets the clock used for file names when Begin was not called
// (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(s *Sink) { s.now = now }
}

// Sink writes CYPHERL files; it implements sink.Sink.
type Sink struct {
	dir      string
	pipeline string
	d        sink.Dialect
	rows     int
	now      func() time.Time
	version  string             // Memgraph version the files are for
	features sink.MemgraphRange // its row of the version table

	mu     sync.Mutex
	seq    int    // sequence number of the last file created
	last   string // path of the file numbered seq, "" when none
	tag    string // file name tag set by Begin; "" means a timestamp
	f      *os.File
	w      *bufio.Writer
	files  []string
	schema schemaRecord
	// standalone: the next Ensure repeats the label-property index
	// statements in the current file (ForgetSchema).
	standalone bool
	closed     bool
	buf        []byte // rendering buffer, reused by write
	// sizeHint is the length of the last text Render produced, the
	// capacity a rendering buffer starts with.
	sizeHint atomic.Int64
	// dirSynced is set once the directory entry of the open file is synced.
	dirSynced bool
}

var _ sink.Sink = (*Sink)(nil)

// schemaRecord is the content of SchemaFile.
type schemaRecord struct {
	Dialect string `json:"dialect"`
	// Layout is the schema files' layout (schemaLayout); an older one is
	// rewritten by the next Ensure.
	Layout int `json:"layout,omitempty"`
	// MemgraphVersion is the version the schema files were written for;
	// another one rewrites them.
	MemgraphVersion string             `json:"memgraph_version,omitempty"`
	Indexes         []sink.Index       `json:"indexes"`
	VectorIndexes   []sink.VectorIndex `json:"vector_indexes"`
	TextIndexes     []sink.TextIndex   `json:"text_indexes,omitempty"`
}

// schemaLayout is the current layout of the schema files: 2 since
// IndexFile drops the vector indexes and text indexes follow the target
// version.
const schemaLayout = 2

var fileName = regexp.MustCompile(`^(\d{6})-.*\.cypherl$`)

// New opens the file sink for pipeline under dir, creating
// <dir>/<pipeline> if needed and reading its schema.json and existing file
// numbers. pipeline must pass sink.ValidName and be usable as one path
// element (no '/', '\\', not "." or ".."). Nothing is written until Ensure or
// Write has something to write.
func New(dir, pipeline string, d sink.Dialect, opts ...Option) (*Sink, error) {
	if err := sink.ValidName(pipeline); err != nil {
		return nil, fmt.Errorf("cypherl sink: pipeline: %w", err)
	}
	if strings.ContainsAny(pipeline, `/\`) || pipeline == "." || pipeline == ".." {
		return nil, fmt.Errorf("cypherl sink: pipeline %q is not a single path element", pipeline)
	}
	if d == nil {
		return nil, errors.New("cypherl sink: nil dialect")
	}
	s := &Sink{dir: filepath.Join(dir, pipeline), pipeline: pipeline, d: d, rows: DefaultRowsPerStatement, now: time.Now,
		version: sink.DefaultCypherlMemgraphVersion}
	for _, o := range opts {
		o(s)
	}
	features, err := sink.MemgraphFeatures(s.version)
	if err != nil {
		return nil, fmt.Errorf("cypherl sink: %w", err)
	}
	if !features.Supported {
		return nil, fmt.Errorf("cypherl sink: memgraph version %q: kgsync supports 3.1 or later (docs/memgraph-support.md)", s.version)
	}
	s.features = features
	// The directory is created by the first write, so that commands
	// that only read (plan, schema) leave nothing behind.
	entries, err := os.ReadDir(s.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cypherl sink: %w", err)
	}
	for _, e := range entries {
		if m := fileName.FindStringSubmatch(e.Name()); m != nil {
			if n, _ := strconv.Atoi(m[1]); n > s.seq {
				s.seq, s.last = n, filepath.Join(s.dir, e.Name())
			}
		}
	}
	path := filepath.Join(s.dir, SchemaFile)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("cypherl sink: %w", err)
	default:
		if err := json.Unmarshal(data, &s.schema); err != nil {
			return nil, fmt.Errorf("cypherl sink: read %s: %w", path, err)
		}
	}
	return s, nil
}

// Dir is <dir>/<pipeline>, where the files go.
func (s *Sink) Dir() string { return s.dir }

// Files returns the paths of the files this Sink created, in write order.
func (s *Sink) Files() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.files)
}

// Begin starts a run: the current file, if any, is synced and closed, and
// the next statement goes to a new file tagged "run<runID>". Without Begin
// all writes of a Sink go to one file tagged with the time it was opened.
//
// Begin also repairs the tail of the newest file: a process killed during
// a write can leave an incomplete last line, which would run into the next
// file's first statement when the files are concatenated for mgconsole. The
// incomplete line is cut off; it belonged to a batch whose state was not
// committed, so the run redoes it. Begin runs under the pipeline's lock,
// so no other process is writing the file.
func (s *Sink) Begin(runID int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("cypherl sink: begin after close")
	}
	if err := s.closeFile(); err != nil {
		return err
	}
	if err := repairTail(s.last); err != nil {
		return fmt.Errorf("cypherl sink: %w", err)
	}
	s.tag = "run" + strconv.FormatInt(runID, 10)
	return nil
}

// ForgetSchema makes the next Ensure write IndexFile's statements again at
// the top of the current file (label-property and text indexes, the drops
// of the vector indexes), so that the file of a `resync --rebuild-graph`
// run loads into an emptied Memgraph on its own with every index but the
// vector indexes, which VectorIndexFile, loaded after it, creates: `cat
// <rebuild file> vector-indexes.cypherl` (CREATE INDEX ON is a no-op
// notification when the index exists, on every version; docs/memgraph.md
// §3).
func (s *Sink) ForgetSchema() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.standalone = true
}

// Ensure makes the pipeline's files create the indexes of schema:
//
//   - IndexFile (000000-schema.cypherl, sorting first) holds what
//     indexFile says: CREATE INDEX ON :`L`(`p`) for every label-property
//     index the pipeline ever needed, CREATE TEXT INDEX for every text
//     index when the target version has them (3.6 or later), and DROP
//     VECTOR INDEX for every vector index; it is rewritten (atomically)
//     when one of them changes. The CREATEs are no-ops with a
//     notification when the index exists (docs/memgraph.md §3, §12).
//   - VectorIndexFile (vector-indexes.cypherl, sorting after every
//     numbered file) holds CREATE VECTOR INDEX for each current vector
//     index, each after its DROP for targets before 3.8 (vectorIndexFile);
//     it is rewritten when a vector index is added or changes. Replayed
//     last, it builds each index over vectors that all have its dimension.
//   - A recorded vector index that schema does not have any more (an
//     attribute removed from the model or renamed) is dropped in the
//     current numbered file and leaves both records.
//   - When a recorded vector index changes (dimension, label, property or
//     metric) or another index took its label and property, the current
//     numbered file gets DROP VECTOR INDEX and, unless only the metric
//     changed, the removal of the old vectors from this pipeline's nodes
//     (MATCH (n:`L`) WHERE n._pipeline = "p" AND … REMOVE), so that a
//     replay — from scratch or of the new files onto a loaded graph — never
//     meets vectors of two dimensions under one index, and never touches
//     another pipeline's vectors.
//
// The numbered file is synced before the schema files and SchemaFile are
// replaced, so no record claims what is not on disk. Stats counts the
// statements written to the numbered file and the schema files (Batches:
// the files written).
func (s *Sink) Ensure(ctx context.Context, schema sink.Schema) (sink.Stats, error) {
	if err := schema.Validate(); err != nil {
		return sink.Stats{}, fmt.Errorf("cypherl ensure: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sink.Stats{}, errors.New("cypherl ensure: sink closed")
	}
	c := &schemaChange{next: schemaRecord{
		Dialect:       s.d.Name(),
		Indexes:       slices.Clone(s.schema.Indexes),
		VectorIndexes: slices.Clone(s.schema.VectorIndexes),
		TextIndexes:   slices.Clone(s.schema.TextIndexes),
	}}
	// The stages: label-property indexes, vector indexes (replaced, then
	// the removed ones dropped), text indexes, all in c; then the files.
	c.ensureIndexes(schema.Indexes)
	if err := s.ensureVectors(c, schema.VectorIndexes); err != nil {
		return sink.Stats{}, fmt.Errorf("cypherl ensure: %w", err)
	}
	if err := s.dropRemovedVectorIndexes(c, schema.VectorIndexes); err != nil {
		return sink.Stats{}, fmt.Errorf("cypherl ensure: %w", err)
	}
	c.ensureText(schema.TextIndexes)
	return s.writeSchema(c)
}

// schemaChange is what one Ensure changes: the schema record it leaves
// (next, starting as a copy of the recorded one), the statements for the
// current numbered file (stream), and which schema files change.
type schemaChange struct {
	next           schemaRecord
	stream         []sink.Statement
	indexesChanged bool // IndexFile
	vectorsChanged bool // VectorIndexFile (and IndexFile, which drops every vector index)
}

// ensureIndexes records the label-property indexes of want that are not
// recorded yet; recorded ones are never dropped (IndexFile keeps every
// index the pipeline ever needed).
func (c *schemaChange) ensureIndexes(want []sink.Index) {
	for _, ix := range want {
		if !slices.Contains(c.next.Indexes, ix) {
			c.next.Indexes = append(c.next.Indexes, ix)
			c.indexesChanged = true
		}
	}
}

// ensureText records the text indexes of want whose names are not
// recorded yet.
func (c *schemaChange) ensureText(want []sink.TextIndex) {
	for _, ti := range want {
		if !slices.ContainsFunc(c.next.TextIndexes, func(r sink.TextIndex) bool { return r.Name == ti.Name }) {
			c.next.TextIndexes = append(c.next.TextIndexes, ti)
			c.indexesChanged = true
		}
	}
}

// ensureVectors records each vector index of want that is not recorded as
// it is: the recorded index of that name, and any other on the same label
// and property (the indexes it displaces), go with DROP VECTOR INDEX in the
// stream, and their vectors too (of this pipeline's nodes) unless only
// the metric changed, so that a replay never meets vectors of two
// dimensions under one index.
func (s *Sink) ensureVectors(c *schemaChange, want []sink.VectorIndex) error {
	for _, vi := range want {
		vi = vi.WithDefaults(sink.DefaultVectorCapacity)
		i := slices.IndexFunc(c.next.VectorIndexes, func(r sink.VectorIndex) bool { return r.Name == vi.Name })
		if i >= 0 && c.next.VectorIndexes[i] == vi {
			continue
		}
		c.vectorsChanged = true
		var stale []sink.VectorIndex
		c.next.VectorIndexes = slices.DeleteFunc(c.next.VectorIndexes, func(r sink.VectorIndex) bool {
			if vi.Displaces(r) {
				stale = append(stale, r)
				return true
			}
			return false
		})
		for _, old := range stale {
			drop, err := s.d.DropVectorIndex(old.Name)
			if err != nil {
				return err
			}
			c.stream = append(c.stream, drop)
			if old.Label != vi.Label || old.Property != vi.Property || old.Dimension != vi.Dimension {
				rm, err := s.d.RemoveVectorProperty(old.Label, old.Property, s.pipeline, 0, 0)
				if err != nil {
					return err
				}
				c.stream = append(c.stream, rm)
			}
		}
		c.next.VectorIndexes = append(c.next.VectorIndexes, vi)
	}
	return nil
}

// dropRemovedVectorIndexes drops (in the stream) each recorded vector
// index that want no longer has: its attribute was removed from the model
// or renamed, and the pipeline removes the attribute's vectors from its
// nodes.
func (s *Sink) dropRemovedVectorIndexes(c *schemaChange, want []sink.VectorIndex) error {
	kept := c.next.VectorIndexes[:0]
	for _, r := range c.next.VectorIndexes {
		if slices.ContainsFunc(want, func(v sink.VectorIndex) bool { return v.Name == r.Name }) {
			kept = append(kept, r)
			continue
		}
		drop, err := s.d.DropVectorIndex(r.Name)
		if err != nil {
			return err
		}
		c.stream = append(c.stream, drop)
		c.vectorsChanged = true
	}
	c.next.VectorIndexes = kept
	return nil
}

// writeSchema writes c: the stream to the current numbered file (after
// IndexFile's statements when ForgetSchema asked for them), synced first,
// then IndexFile and VectorIndexFile when they change, then SchemaFile;
// the invariant is that no record claims what is not on disk. Schema
// files missing, of an older layout or written for another version are
// rewritten whatever changed.
func (s *Sink) writeSchema(c *schemaChange) (sink.Stats, error) {
	next, stream := c.next, c.stream
	if s.standalone {
		head, err := s.indexFile(next)
		if err != nil {
			return sink.Stats{}, fmt.Errorf("cypherl ensure: %w", err)
		}
		stream = append(head, stream...)
	}
	indexesChanged, vectorsChanged := c.indexesChanged, c.vectorsChanged
	if len(next.Indexes)+len(next.VectorIndexes)+len(next.TextIndexes) > 0 &&
		(!s.schemaFilesExist() || s.schema.Layout != schemaLayout || s.schema.MemgraphVersion != s.version) {
		indexesChanged, vectorsChanged = true, true
	}
	// IndexFile drops every vector index, so it changes with them.
	indexesChanged = indexesChanged || vectorsChanged
	next.Layout, next.MemgraphVersion = schemaLayout, s.version
	var stats sink.Stats
	if len(stream) > 0 {
		if err := s.write(stream); err != nil {
			return sink.Stats{}, fmt.Errorf("cypherl ensure: %w", err)
		}
		if err := s.syncFile(); err != nil {
			return sink.Stats{}, fmt.Errorf("cypherl ensure: %w", err)
		}
		stats.Statements += len(stream)
		stats.Batches++
	}
	if indexesChanged {
		sts, err := s.indexFile(next)
		if err != nil {
			return stats, fmt.Errorf("cypherl ensure: %w", err)
		}
		if err := s.replaceFile(IndexFile, sts); err != nil {
			return stats, fmt.Errorf("cypherl ensure: %w", err)
		}
		stats.Statements += len(sts)
		stats.Batches++
	}
	if vectorsChanged {
		sts, err := s.vectorIndexFile(next)
		if err != nil {
			return stats, fmt.Errorf("cypherl ensure: %w", err)
		}
		if err := s.replaceFile(VectorIndexFile, sts); err != nil {
			return stats, fmt.Errorf("cypherl ensure: %w", err)
		}
		stats.Statements += len(sts)
		stats.Batches++
	}
	if indexesChanged || vectorsChanged || !slices.Equal(next.Indexes, s.schema.Indexes) {
		if err := s.saveSchema(next); err != nil {
			return stats, fmt.Errorf("cypherl ensure: %w", err)
		}
	}
	s.schema = next
	s.standalone = false
	return stats, nil
}

// indexFile is the content of IndexFile for the schema record r, in the
// order a replay needs: CREATE INDEX ON for every label-property index
// (the MERGE keys), CREATE TEXT INDEX for every text index when the target
// version has text indexes (sink.MemgraphRange.TextIndexes: the
// property-list form is a syntax error before 3.5 and needs a flag on
// 3.5), then DROP VECTOR INDEX for every vector index. The drops make a
// replay of the directory start without vector indexes whether the graph
// is empty or loaded (a repeated replay): the numbered files of earlier
// runs may write vectors of an earlier dimension, which a vector index of
// the current dimension refuses; the later file of the dimension change
// removes them, and VectorIndexFile, replayed last, builds each index
// over vectors of its dimension. Dropping a missing vector index is a
// notification on every version (docs/memgraph.md §12).
func (s *Sink) indexFile(r schemaRecord) ([]sink.Statement, error) {
	var sts []sink.Statement
	for _, ix := range r.Indexes {
		st, err := s.d.CreateIndex(ix)
		if err != nil {
			return nil, err
		}
		sts = append(sts, st)
	}
	if s.features.TextIndexes {
		for _, ti := range r.TextIndexes {
			st, err := s.d.CreateTextIndex(ti)
			if err != nil {
				return nil, err
			}
			sts = append(sts, st)
		}
	}
	for _, vi := range r.VectorIndexes {
		st, err := s.d.DropVectorIndex(vi.Name)
		if err != nil {
			return nil, err
		}
		sts = append(sts, st)
	}
	return sts, nil
}

// vectorIndexFile is the content of VectorIndexFile for the schema record
// r: CREATE VECTOR INDEX for each vector index. On versions where a
// duplicate CREATE VECTOR INDEX fails (3.0–3.7,
// sink.MemgraphRange.DuplicateVectorIndexFails) each is preceded by its
// DROP, so that the file loads twice and after another pipeline's file
// created the same shared index; from 3.8 a duplicate is a notification
// that keeps the index, so loading the file onto a loaded graph rebuilds
// nothing.
func (s *Sink) vectorIndexFile(r schemaRecord) ([]sink.Statement, error) {
	var sts []sink.Statement
	for _, vi := range r.VectorIndexes {
		if s.features.DuplicateVectorIndexFails {
			drop, err := s.d.DropVectorIndex(vi.Name)
			if err != nil {
				return nil, err
			}
			sts = append(sts, drop)
		}
		create, err := s.d.CreateVectorIndex(vi)
		if err != nil {
			return nil, err
		}
		sts = append(sts, create)
	}
	return sts, nil
}

// schemaFilesExist reports whether both schema files are on disk (a
// directory written before they existed has neither).
func (s *Sink) schemaFilesExist() bool {
	for _, name := range []string{IndexFile, VectorIndexFile} {
		if _, err := os.Stat(filepath.Join(s.dir, name)); err != nil {
			return false
		}
	}
	return true
}

// replaceFile replaces the file name in the pipeline's directory with sts,
// one per line, atomically (temporary file, sync, rename).
func (s *Sink) replaceFile(name string, sts []sink.Statement) error {
	text, err := render(nil, sts)
	if err != nil {
		return err
	}
	return s.replace(name, text)
}

// Write appends b's statements (sink.Statements, values inlined) to the
// current file, opening one if needed, and flushes them to the operating
// system; Close syncs them to disk. An empty batch writes nothing and
// returns zero Stats; otherwise Stats{Statements: n, Batches: 1}. Errors
// from sink.Statements and Inline are returned before anything is written.
func (s *Sink) Write(ctx context.Context, b *sink.Batch) (sink.Stats, error) {
	r, err := s.Render(b)
	if err != nil {
		return sink.Stats{}, err
	}
	return s.WriteRendered(ctx, r)
}

// Rendered is a batch's statements as the lines of a file (Render), to be
// written by WriteRendered.
type Rendered struct {
	text       []byte
	statements int
}

// Render turns a batch into its file lines without touching the file
// (safe to call while another batch is written): a run renders the next
// batch while the previous one is written. Errors are Write's.
func (s *Sink) Render(b *sink.Batch) (*Rendered, error) {
	sts, err := sink.Statements(s.d, b, sink.Options{Pipeline: s.pipeline, RowsPerStatement: s.rows, Inline: true})
	if err != nil {
		return nil, fmt.Errorf("cypherl write: %w", err)
	}
	text, err := render(s.takeBuffer(), sts)
	if err != nil {
		return nil, fmt.Errorf("cypherl write: %w", err)
	}
	s.sizeHint.Store(int64(len(text)))
	return &Rendered{text: text, statements: len(sts)}, nil
}

// buffers are rendering buffers, reused across batches (a buffer a
// garbage collection drops is not kept alive for an idle Sink).
var buffers sync.Pool

// takeBuffer returns an empty rendering buffer of at least the last
// rendered text's size and an eighth, a reused one or a new one, so that a
// batch like the last is rendered without growing its buffer.
func (s *Sink) takeBuffer() []byte {
	hint := int(min(s.sizeHint.Load()*9/8, maxKeptBuffer))
	var buf []byte
	if p, _ := buffers.Get().(*[]byte); p != nil {
		buf = *p
	}
	return slices.Grow(buf[:0], hint)
}

// recycle gives text's buffer back for the next Render unless it is
// larger than maxKeptBuffer.
func (s *Sink) recycle(text []byte) {
	if text == nil || cap(text) > maxKeptBuffer {
		return
	}
	text = text[:0]
	buffers.Put(&text)
}

// WriteRendered appends a rendered batch to the current file, opening one
// if needed, flushes and syncs it (durable before state commits the batch:
// a power loss must not lose a batch that state records as written). A
// batch of no statement writes nothing and returns zero Stats; otherwise
// Stats{Statements: n, Batches: 1}.
func (s *Sink) WriteRendered(ctx context.Context, r *Rendered) (sink.Stats, error) {
	defer func() {
		s.recycle(r.text)
		r.text = nil
	}()
	if r.statements == 0 {
		return sink.Stats{}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sink.Stats{}, errors.New("cypherl write: sink closed")
	}
	if err := s.writeText(r.text); err != nil {
		return sink.Stats{}, fmt.Errorf("cypherl write: %w", err)
	}
	if err := s.syncFile(); err != nil {
		return sink.Stats{}, fmt.Errorf("cypherl write: %w", err)
	}
	return sink.Stats{Statements: r.statements, Batches: 1}, nil
}

// Close flushes and syncs the current file and closes it. Further calls do
// nothing.
func (s *Sink) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.closeFile()
}

// write renders every statement first, so a statement that cannot be
// written leaves the file untouched, then appends them and flushes.
func (s *Sink) write(sts []sink.Statement) error {
	text, err := render(s.buf[:0], sts)
	if err != nil {
		return err
	}
	if cap(text) <= maxKeptBuffer {
		s.buf = text
	}
	return s.writeText(text)
}

// writeText appends rendered lines to the current file and flushes them.
func (s *Sink) writeText(text []byte) error {
	if err := s.open(); err != nil {
		return err
	}
	if _, err := s.w.Write(text); err != nil {
		return fmt.Errorf("write %s: %w", s.f.Name(), err)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", s.f.Name(), err)
	}
	return nil
}

// render appends every statement inlined to dst, one per line ending in
// ";\n". The statement's text around its parameters must load as one line
// (splitsCleanly); the literals put in it (Literal) escape line breaks and
// quotes, so the rendered line is only checked for a stray line break.
func render(dst []byte, sts []sink.Statement) ([]byte, error) {
	var w literalWriter
	for _, st := range sts {
		if !splitsCleanly(st.Query + ";") {
			// Cannot happen for names that pass sink.ValidName; kept as the
			// last guard of the file format.
			return nil, fmt.Errorf("%s %q: statement would not load as one line", st.Kind, st.Target)
		}
		start := len(dst)
		var err error
		if dst, err = w.appendInline(dst, st); err != nil {
			return nil, err
		}
		if bytes.IndexByte(dst[start:], '\n') >= 0 || bytes.IndexByte(dst[start:], '\r') >= 0 {
			return nil, fmt.Errorf("%s %q: statement would not load as one line", st.Kind, st.Target)
		}
		dst = append(dst, ';', '\n')
	}
	return dst, nil
}

// maxKeptBuffer is the largest rendering buffer a Sink keeps for the next
// write (a larger batch's is left to the garbage collector).
const maxKeptBuffer = 16 << 20

// open creates the next file unless one is open.
func (s *Sink) open() error {
	if s.f != nil {
		return nil
	}
	if s.seq >= maxSeq {
		return fmt.Errorf("%s: %d files, no sequence number left; compact the directory", s.dir, s.seq)
	}
	tag := s.tag
	if tag == "" {
		tag = s.now().UTC().Format("20060102T150405Z")
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	// The number follows the newest file on disk, not only this Sink's:
	// another process may have written since New.
	if n, _, err := newestFile(s.dir); err != nil {
		return err
	} else if n > s.seq {
		s.seq = n
	}
	name := fmt.Sprintf("%06d-%s.cypherl", s.seq+1, tag)
	path := filepath.Join(s.dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("create file: %w", err)
	}
	if err := claimNumber(s.dir, s.seq+1, name); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return err
	}
	s.seq++
	s.last = path
	s.f, s.w, s.dirSynced = f, bufio.NewWriterSize(f, 1<<20), false
	s.files = append(s.files, path)
	return nil
}

// ErrNumberTaken is returned by a write that found its new file's number
// taken by a file of a newer run: two processes wrote the pipeline at once
// (a lost pipeline lock), and the older one stops. Its file is removed.
var ErrNumberTaken = errors.New("cypherl sink: file number taken by a newer run")

// newestFile returns the highest file number in dir and that file's path.
func newestFile(dir string) (int, string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, "", fmt.Errorf("cypherl sink: %w", err)
	}
	seq, last := 0, ""
	for _, e := range entries {
		if m := fileName.FindStringSubmatch(e.Name()); m != nil {
			if n, _ := strconv.Atoi(m[1]); n > seq {
				seq, last = n, filepath.Join(dir, e.Name())
			}
		}
	}
	return seq, last, nil
}

// runTag reads the run id of a file tagged "run<id>" (-1 otherwise).
var runTag = regexp.MustCompile(`^\d{6}-run(\d+)\.cypherl$`)

func runOf(name string) int64 {
	m := runTag.FindStringSubmatch(name)
	if m == nil {
		return -1
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// claimNumber checks, after name was created with number n, that no other
// file has n: two files with one number would replay in an order of their
// tags. Of two runs the newer (higher run id, as state numbers runs) keeps
// the number and the other gets ErrNumberTaken; files without a run tag
// both give way.
func claimNumber(dir string, n int, name string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cypherl sink: %w", err)
	}
	mine := runOf(name)
	for _, e := range entries {
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil || e.Name() == name {
			continue
		}
		if k, _ := strconv.Atoi(m[1]); k != n {
			continue
		}
		if other := runOf(e.Name()); mine < 0 || other >= mine {
			return fmt.Errorf("%w: %s beside %s", ErrNumberTaken, name, e.Name())
		}
	}
	return nil
}

func (s *Sink) syncFile() error {
	if s.f == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("flush %s: %w", s.f.Name(), err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", s.f.Name(), err)
	}
	if s.dirSynced {
		return nil
	}
	// The new file's directory entry, once.
	if err := syncDir(s.dir); err != nil {
		return err
	}
	s.dirSynced = true
	return nil
}

func (s *Sink) closeFile() error {
	if s.f == nil {
		return nil
	}
	err := s.syncFile()
	if cerr := s.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", s.f.Name(), cerr)
	}
	s.f, s.w = nil, nil
	return err
}

// saveSchema replaces schema.json atomically.
func (s *Sink) saveSchema(r schemaRecord) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", SchemaFile, err)
	}
	return s.replace(SchemaFile, append(data, '\n'))
}

// replace replaces the file name in the pipeline's directory with data
// atomically (temporary file, sync, rename, directory sync). The temporary
// name starts with '.' and does not end in .cypherl, so no glob of the
// files picks it up.
func (s *Sink) replace(name string, data []byte) error {
	path := filepath.Join(s.dir, name)
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := createTemp(s.dir, name)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return syncDir(s.dir)
}

// createTemp creates a new temporary file for name in dir, named
// ".<name>.<pid>.<n>.tmp", with the mode the run files get (0o644 less
// the umask): os.CreateTemp's 0o600 would leave the schema files
// unreadable to a loader running as another user while the run files are
// readable.
func createTemp(dir, name string) (*os.File, error) {
	for n := 0; ; n++ {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf(".%s.%d.%d.tmp", name, os.Getpid(), n)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}

// repairTail cuts an incomplete last line (one not ending in '\n') off the
// file at path and syncs it; a missing path or an intact file is left
// alone.
func repairTail(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("repair %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("repair %s: %w", path, err)
	}
	end := fi.Size()
	buf := make([]byte, 64<<10)
	// Find the last '\n', reading backwards.
	for pos := end; pos > 0; {
		n := min(int64(len(buf)), pos)
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return fmt.Errorf("repair %s: %w", path, err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep := pos + int64(i) + 1
			if keep == end {
				return nil
			}
			return truncate(f, keep)
		}
	}
	if end == 0 {
		return nil
	}
	return truncate(f, 0)
}

func truncate(f *os.File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("repair %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("repair %s: %w", f.Name(), err)
	}
	return nil
}

// syncDir makes the directory entries (new files, renames) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
