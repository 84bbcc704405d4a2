package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kgsync/kgsync/state"
)

// RunOpen inserts a run of pipeline with StatusRunning and StartedAt now
// (microsecond precision, UTC).
func (s *Store) RunOpen(ctx context.Context, pipeline string, trigger state.Trigger) (state.Run, error) {
	if pipeline == "" {
		return state.Run{}, errors.New("open run: empty pipeline name")
	}
	run := state.Run{Pipeline: pipeline, Trigger: trigger, Status: state.StatusRunning, StartedAt: s.nowTime()}
	counts, err := json.Marshal(run.Counts)
	if err != nil {
		return state.Run{}, fmt.Errorf("open run of %q: encode counts: %w", pipeline, err)
	}
	err = s.db.QueryRowContext(ctx,
		`INSERT INTO runs (pipeline, "trigger", status, started_at, counts) VALUES (?, ?, ?, ?, ?) RETURNING id`,
		pipeline, string(trigger), string(run.Status), micros(run.StartedAt), string(counts)).Scan(&run.ID)
	if err != nil {
		return state.Run{}, fmt.Errorf("open run of %q: %w", pipeline, err)
	}
	return run, nil
}

// RunClose stores run's Status, Counts, Error and FinishedAt (now when
// zero) for run.ID; other fields are not changed. It returns
// state.ErrNotFound when no run has that id.
func (s *Store) RunClose(ctx context.Context, run state.Run) error {
	finished := run.FinishedAt
	if finished.IsZero() {
		finished = s.nowTime()
	}
	counts, err := json.Marshal(run.Counts)
	if err != nil {
		return fmt.Errorf("close run %d: encode counts: %w", run.ID, err)
	}
	warnings, err := json.Marshal(nonNil(run.Warnings))
	if err != nil {
		return fmt.Errorf("close run %d: encode warnings: %w", run.ID, err)
	}
	res, err := s.db.ExecContext(ctx,
		`UPDATE runs SET status = ?, finished_at = ?, counts = ?, error = ?, warnings = ? WHERE id = ?`,
		string(run.Status), micros(finished), string(counts), run.Error, string(warnings), run.ID)
	if err != nil {
		return fmt.Errorf("close run %d: %w", run.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("close run %d: %w", run.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("close run %d: %w", run.ID, state.ErrNotFound)
	}
	return nil
}

const runColumns = `id, pipeline, "trigger", status, started_at, finished_at, counts, error, warnings`

// nonNil is s, or an empty list for nil (stored as [] rather than null).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// scanRun reads one row of runColumns.
func scanRun(row interface{ Scan(...any) error }) (state.Run, error) {
	var (
		r               state.Run
		trigger, status string
		started         int64
		finished        sql.NullInt64
		counts          string
		warnings        string
	)
	if err := row.Scan(&r.ID, &r.Pipeline, &trigger, &status, &started, &finished, &counts, &r.Error, &warnings); err != nil {
		return state.Run{}, err
	}
	r.Trigger, r.Status, r.StartedAt = state.Trigger(trigger), state.Status(status), fromMicros(started)
	if finished.Valid {
		r.FinishedAt = fromMicros(finished.Int64)
	}
	if err := json.Unmarshal([]byte(counts), &r.Counts); err != nil {
		return state.Run{}, fmt.Errorf("run %d: decode counts: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(warnings), &r.Warnings); err != nil {
		return state.Run{}, fmt.Errorf("run %d: decode warnings: %w", r.ID, err)
	}
	if len(r.Warnings) == 0 {
		r.Warnings = nil
	}
	return r, nil
}

// RunGet returns the run with id or state.ErrNotFound.
func (s *Store) RunGet(ctx context.Context, id int64) (state.Run, error) {
	r, err := scanRun(s.rdb.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return state.Run{}, fmt.Errorf("get run %d: %w", id, state.ErrNotFound)
	}
	if err != nil {
		return state.Run{}, fmt.Errorf("get run %d: %w", id, err)
	}
	return r, nil
}

// RunList returns up to limit runs of pipeline ("" = all pipelines), newest
// (highest id) first; limit <= 0 means no limit.
func (s *Store) RunList(ctx context.Context, pipeline string, limit int) ([]state.Run, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.rdb.QueryContext(ctx,
		`SELECT `+runColumns+` FROM runs WHERE ? = '' OR pipeline = ? ORDER BY id DESC LIMIT ?`,
		pipeline, pipeline, limit)
	if err != nil {
		return nil, fmt.Errorf("list runs of %q: %w", pipeline, err)
	}
	defer rows.Close()
	var out []state.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs of %q: %w", pipeline, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs of %q: %w", pipeline, err)
	}
	return out, nil
}

// RecordList returns the records of pipeline's source by key (an empty map
// when there are none).
func (s *Store) RecordList(ctx context.Context, pipeline, source string) (map[string]state.Record, error) {
	out := map[string]state.Record{}
	rows, err := s.rdb.QueryContext(ctx,
		`SELECT `+recordColumns+` FROM records WHERE pipeline = ? AND source = ?`, pipeline, source)
	if err == nil {
		err = readRecords(rows, pipeline, source, out)
	}
	if err != nil {
		return nil, fmt.Errorf("list records of %q source %q: %w", pipeline, source, err)
	}
	return out, nil
}

// recordColumns are the columns readRecords scans, in its order.
const recordColumns = `"key", hash, fingerprint, anchor, props, origin_scope, origin_id, ord`

// readRecords adds the rows of a records query selecting recordColumns to
// out by key, and closes rows.
func readRecords(rows *sql.Rows, pipeline, source string, out map[string]state.Record) error {
	defer rows.Close()
	for rows.Next() {
		r := state.Record{Pipeline: pipeline, Source: source}
		var hash, fp int64
		if err := rows.Scan(&r.Key, &hash, &fp, &r.Anchor, &r.Props, &r.Origin.Scope, &r.Origin.ID, &r.Ord); err != nil {
			return err
		}
		r.Hash, r.Fingerprint = uint64(hash), uint64(fp)
		out[r.Key] = r
	}
	return rows.Err()
}

// RecordIndex calls fn with the key, hash and fingerprint of every stored
// record of a source.
func (s *Store) RecordIndex(ctx context.Context, pipeline, source string, fn func(key string, sum state.RecordSummary)) error {
	rows, err := s.rdb.QueryContext(ctx,
		`SELECT "key", hash, fingerprint, origin_scope, origin_id FROM records WHERE pipeline = ? AND source = ?`, pipeline, source)
	if err != nil {
		return fmt.Errorf("index records of %q source %q: %w", pipeline, source, err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var hash, fp int64
		var o state.Origin
		if err := rows.Scan(&key, &hash, &fp, &o.Scope, &o.ID); err != nil {
			return fmt.Errorf("index records of %q source %q: %w", pipeline, source, err)
		}
		fn(key, state.RecordSummary{Hash: uint64(hash), Fingerprint: uint64(fp), Origin: o})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("index records of %q source %q: %w", pipeline, source, err)
	}
	return nil
}

// RecordGet returns the named records of a source, 500 keys a query.
func (s *Store) RecordGet(ctx context.Context, pipeline, source string, keys []string) (map[string]state.Record, error) {
	out := map[string]state.Record{}
	err := s.byKeys(ctx, recordsByKey(recordColumns), pipeline, source, keys, func(rows *sql.Rows) error {
		return readRecords(rows, pipeline, source, out)
	})
	if err != nil {
		return nil, fmt.Errorf("get records of %q source %q: %w", pipeline, source, err)
	}
	return out, nil
}

// byKeys runs query (a SELECT whose arguments are the pipeline, the source
// and the keys, written %s where its IN list goes) on the read pool for
// keysPerStatement keys at a time; see selectByKeys.
func (s *Store) byKeys(ctx context.Context, query, pipeline, source string, keys []string, read func(*sql.Rows) error) error {
	return selectByKeys(ctx, s.rdb, query, pipeline, source, keys, read)
}

// queryer is what selectByKeys queries: the read pool or a transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// selectByKeys runs query (a SELECT whose arguments are the pipeline, the
// source and the keys, written %s where its IN list goes) on db for
// keysPerStatement keys at a time, and hands each query's rows to read
// (which closes them).
func selectByKeys(ctx context.Context, db queryer, query, pipeline, source string, keys []string, read func(*sql.Rows) error) error {
	for start := 0; start < len(keys); start += keysPerStatement {
		part := keys[start:min(start+keysPerStatement, len(keys))]
		args := make([]any, 0, len(part)+2)
		args = append(args, pipeline, source)
		for _, k := range part {
			args = append(args, k)
		}
		rows, err := db.QueryContext(ctx, fmt.Sprintf(query, "?"+strings.Repeat(",?", len(part)-1)), args...)
		if err == nil {
			err = read(rows)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// recordsByKey selects columns of the named records of a source through
// the key index; see byKeys.
func recordsByKey(columns string) string {
	return `SELECT ` + columns + ` FROM records INDEXED BY records_key WHERE pipeline = ? AND source = ? AND "key" IN (%s)`
}

// RecordScan returns up to limit records of a source in listing order
// (ord, then key), after the position after (nil: from the first), from
// the covering index records_ord.
func (s *Store) RecordScan(ctx context.Context, pipeline, source string, after *state.RecordPos, limit int) ([]state.RecordEntry, error) {
	q := `SELECT ` + entryColumns + ` FROM records INDEXED BY records_ord WHERE pipeline = ? AND source = ?`
	args := []any{pipeline, source}
	if after != nil {
		q += ` AND (ord, "key") > (?, ?)`
		args = append(args, after.Ord, after.Key)
	}
	q += ` ORDER BY ord, "key" LIMIT ?`
	args = append(args, limit)
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("scan records of %q source %q: %w", pipeline, source, err)
	}
	out := make([]state.RecordEntry, 0, limit)
	if err := readEntries(rows, func(e state.RecordEntry) { out = append(out, e) }); err != nil {
		return nil, fmt.Errorf("scan records of %q source %q: %w", pipeline, source, err)
	}
	return out, nil
}

// entryColumns are the columns readEntries scans, in its order.
const entryColumns = `"key", ord, hash, fingerprint, origin_scope, origin_id`

// readEntries calls fn for each row of a query selecting entryColumns and
// closes rows.
func readEntries(rows *sql.Rows, fn func(state.RecordEntry)) error {
	defer rows.Close()
	for rows.Next() {
		var e state.RecordEntry
		var hash, fp int64
		if err := rows.Scan(&e.Key, &e.Ord, &hash, &fp, &e.Origin.Scope, &e.Origin.ID); err != nil {
			return err
		}
		e.Hash, e.Fingerprint = uint64(hash), uint64(fp)
		fn(e)
	}
	return rows.Err()
}

// RecordSummaries returns the named records of a source without props,
// 500 keys a query.
func (s *Store) RecordSummaries(ctx context.Context, pipeline, source string, keys []string) (map[string]state.RecordEntry, error) {
	out := make(map[string]state.RecordEntry, len(keys))
	err := s.byKeys(ctx, recordsByKey(entryColumns), pipeline, source, keys, func(rows *sql.Rows) error {
		return readEntries(rows, func(e state.RecordEntry) { out[e.Key] = e })
	})
	if err != nil {
		return nil, fmt.Errorf("get records of %q source %q: %w", pipeline, source, err)
	}
	return out, nil
}

// RecordStats counts a source's records and gives their largest ord.
func (s *Store) RecordStats(ctx context.Context, pipeline, source string) (state.RecordStats, error) {
	var st state.RecordStats
	err := s.rdb.QueryRowContext(ctx, `SELECT count(*), coalesce(max(ord), 0) FROM records WHERE pipeline = ? AND source = ?`,
		pipeline, source).Scan(&st.Count, &st.MaxOrd)
	if err != nil {
		return st, fmt.Errorf("count records of %q source %q: %w", pipeline, source, err)
	}
	return st, nil
}

// RecordKeysWithPrefix returns a source's keys starting with one of
// prefixes, sorted: one range of the key index per prefix.
func (s *Store) RecordKeysWithPrefix(ctx context.Context, pipeline, source string, prefixes []string) ([]string, error) {
	if len(prefixes) == 0 {
		return nil, nil
	}
	// One range of the key index per prefix, through two prepared
	// statements: a query OR-ing hundreds of ranges read every key of the
	// source and tested each against every range (1.4 s for 1,000
	// prefixes among 20,000 records).
	const q = `SELECT "key" FROM records INDEXED BY records_key WHERE pipeline = ? AND source = ? AND "key" >= ?`
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("list keys of %q source %q: %w", pipeline, source, err)
	}
	defer conn.Close()
	bounded, err := conn.PrepareContext(ctx, q+` AND "key" < ?`)
	if err != nil {
		return nil, fmt.Errorf("list keys of %q source %q: %w", pipeline, source, err)
	}
	defer bounded.Close()
	var out []string
	for _, p := range prefixes {
		var rows *sql.Rows
		if end, ok := state.PrefixEnd(p); ok {
			rows, err = bounded.QueryContext(ctx, pipeline, source, p, end)
		} else {
			rows, err = conn.QueryContext(ctx, q, pipeline, source, p)
		}
		if err != nil {
			return nil, fmt.Errorf("list keys of %q source %q: %w", pipeline, source, err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return nil, fmt.Errorf("list keys of %q source %q: %w", pipeline, source, err)
			}
			out = append(out, k)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("list keys of %q source %q: %w", pipeline, source, err)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ChunkGet returns the chunks of the named records of a source, 500 keys a
// query, by record key, each ordered by Position, then ID.
func (s *Store) ChunkGet(ctx context.Context, pipeline, source string, keys []string) (map[string][]state.Chunk, error) {
	out := map[string][]state.Chunk{}
	q := `SELECT ` + chunkColumns + ` FROM chunks WHERE pipeline = ? AND source = ? AND record_key IN (%s) ORDER BY record_key, position, id`
	err := s.byKeys(ctx, q, pipeline, source, keys, func(rows *sql.Rows) error {
		return readChunks(rows, pipeline, source, out)
	})
	if err != nil {
		return nil, fmt.Errorf("get chunks of %q source %q: %w", pipeline, source, err)
	}
	return out, nil
}

// chunkColumns are the columns readChunks scans, in its order.
const chunkColumns = `record_key, id, hash, text_hash, position, props`

// readChunks appends the rows of a chunks query selecting chunkColumns to
// out by record key, in row order, and closes rows.
func readChunks(rows *sql.Rows, pipeline, source string, out map[string][]state.Chunk) error {
	defer rows.Close()
	for rows.Next() {
		c := state.Chunk{Pipeline: pipeline, Source: source}
		var hash, textHash int64
		if err := rows.Scan(&c.RecordKey, &c.ID, &hash, &textHash, &c.Position, &c.Props); err != nil {
			return err
		}
		c.Hash, c.TextHash = uint64(hash), uint64(textHash)
		out[c.RecordKey] = append(out[c.RecordKey], c)
	}
	return rows.Err()
}

// ChunkCount counts the chunks of pipeline.
func (s *Store) ChunkCount(ctx context.Context, pipeline string) (int, error) {
	var n int
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM chunks WHERE pipeline = ?`, pipeline).Scan(&n); err != nil {
		return 0, fmt.Errorf("count chunks of %q: %w", pipeline, err)
	}
	return n, nil
}

// CursorGet returns the cursor of pipeline's source, "" when none is stored.
func (s *Store) CursorGet(ctx context.Context, pipeline, source string) (string, error) {
	var c string
	err := s.rdb.QueryRowContext(ctx, `SELECT cursor FROM cursors WHERE pipeline = ? AND source = ?`, pipeline, source).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("get cursor of %q source %q: %w", pipeline, source, err)
	}
	return c, nil
}

// The multi-row statements of a commit, as queryRows takes them: the
// prefix before the tuples, the suffix after them, and the columns per row.
const (
	recordsUpsertPrefix = `INSERT INTO records (pipeline, source, "key", hash, fingerprint, anchor, props, updated_at, origin_scope, origin_id, ord) VALUES `
	recordsUpsertSuffix = `ON CONFLICT (pipeline, source, "key") DO UPDATE SET hash = excluded.hash, fingerprint = excluded.fingerprint,
				anchor = excluded.anchor, props = excluded.props, updated_at = excluded.updated_at,
				origin_scope = excluded.origin_scope, origin_id = excluded.origin_id, ord = excluded.ord
			RETURNING source, "key", id`
	recordsUpsertCols  = 9 // own values per row: the pipeline and the time are shared
	lexicalInsertCols  = 7
	ftsInsertPrefix    = `INSERT INTO lexical_fts (rowid, text) VALUES `
	ftsInsertCols      = 2
	chunksInsertPrefix = `INSERT INTO chunks (pipeline, source, record_key, id, hash, text_hash, position, props) VALUES `
	chunksInsertCols   = 7 // own values per row: the pipeline is shared
)

// recordsUpsert and chunksInsert are the record and chunk statements of a
// commit: the pipeline (?1) and, for records, the time (?2) are shared by
// all rows.
var (
	recordsUpsert = rowStatement{recordsUpsertPrefix, `(?1, #, #, #, #, #, #, ?2, #, #, #)`, recordsUpsertSuffix}
	chunksInsert  = rowStatement{chunksInsertPrefix, `(?1, #, #, #, #, #, #, #)`, ""}
)

// lexicalInsert inserts lexical rows that cannot exist yet (see
// commitLexical); the pipeline is shared by all rows.
var lexicalInsert = rowStatement{
	prefix: `INSERT INTO lexical (doc, pipeline, source, record_key, record_id, node, kind, len) VALUES `,
	tuple:  `(#, ?1, #, #, #, #, #, #)`,
}

// Commit applies c in one transaction, in this order: record upserts,
// chunk replacements, lexical deletes and upserts, record deletes (with
// their chunks and lexical rows, so a delete wins over an upsert of the
// same record), cursor upserts, the intent, the intents done. c is checked first
// with state-independent rules (see checkCommit); nothing is written when
// it fails.
func (s *Store) Commit(ctx context.Context, c state.Commit) error {
	if err := c.Check(); err != nil {
		return err
	}
	full, err := s.fullStatements(ctx, c)
	if err != nil {
		return fmt.Errorf("commit %q: %w", c.Pipeline, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("commit %q: begin: %w", c.Pipeline, err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := commitTx(ctx, writeTx{tx, full}, c, micros(s.nowTime())); err != nil {
		return fmt.Errorf("commit %q: %w", c.Pipeline, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit %q: %w", c.Pipeline, err)
	}
	s.raiseCache(ctx, len(c.Records)+len(c.DeleteRecords))
	return nil
}

// raiseCache counts n records written or deleted and raises the writer's
// page cache to writerCacheKiB after the first, to bigCacheKiB after
// bigCacheAfter (see idleCacheKiB). A failure leaves the cache as
// it was: it costs time, not correctness.
func (s *Store) raiseCache(ctx context.Context, n int) {
	s.mu.Lock()
	s.written += n
	want := s.cacheKiB
	switch {
	case s.written >= bigCacheAfter:
		want = bigCacheKiB
	case s.written > 0:
		want = max(want, writerCacheKiB)
	}
	raise := want > s.cacheKiB
	if raise {
		s.cacheKiB = want
	}
	s.mu.Unlock()
	if raise {
		_, _ = s.db.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size(-%d)", want))
	}
}

// writeTx is a write transaction with the store's prepared statements of
// full multi-row groups (by rowStatement.key; see fullStatements),
// which queryRows uses through Tx.StmtContext.
type writeTx struct {
	*sql.Tx
	full map[string]*sql.Stmt
}

// fullStatements returns the prepared statements of the full multi-row
// groups (rowsPerStatement rows) c's commit runs, preparing on the writer
// those not prepared yet. They are prepared outside the transaction (the
// writer has one connection) and kept until Close: a run of many batches
// parses each statement of thousands of parameters once, not once a batch.
func (s *Store) fullStatements(ctx context.Context, c state.Commit) (map[string]*sql.Stmt, error) {
	var want []fullStatement
	if len(c.Records) >= rowsPerStatement {
		want = append(want, fullStatement{recordsUpsert, 2, recordsUpsertCols})
	}
	if len(c.LexicalUpserts) >= rowsPerStatement {
		want = append(want, fullStatement{lexicalInsert, 1, lexicalInsertCols},
			fullStatement{rowStatement{ftsInsertPrefix, "", ""}, 0, ftsInsertCols})
	}
	n := 0
	for _, chs := range c.ReplaceChunks {
		n += len(chs)
	}
	if n >= rowsPerStatement {
		want = append(want, fullStatement{chunksInsert, 1, chunksInsertCols})
	}
	return s.prepareFull(ctx, want)
}

// fullStatement is a statement of rowsPerStatement rows of cols own
// values and shared shared ones (see rowStatement).
type fullStatement struct {
	stmt         rowStatement
	shared, cols int
}

// prepareFull returns the prepared statements of want by key,
// preparing on the writer those not prepared yet (kept in s.full until
// Close); see fullStatements.
func (s *Store) prepareFull(ctx context.Context, want []fullStatement) (map[string]*sql.Stmt, error) {
	if len(want) == 0 {
		return nil, nil
	}
	// The caller gets a map of its own: commits of other goroutines may
	// add to s.full while it runs. Statements are prepared outside s.mu
	// (preparing waits for the writer's connection).
	out := make(map[string]*sql.Stmt, len(want))
	for _, w := range want {
		q := w.stmt.key()
		s.mu.Lock()
		st := s.full[q]
		s.mu.Unlock()
		if st == nil {
			var err error
			if st, err = s.db.PrepareContext(ctx, w.stmt.sql(w.shared, w.cols, rowsPerStatement)); err != nil {
				return nil, fmt.Errorf("prepare: %w", err)
			}
			s.mu.Lock()
			if s.full == nil {
				s.full = map[string]*sql.Stmt{}
			}
			if prev := s.full[q]; prev != nil {
				_ = st.Close()
				st = prev
			} else {
				s.full[q] = st
			}
			s.mu.Unlock()
		}
		out[q] = st
	}
	return out, nil
}

// commitTx runs c's statements in tx: multi-row statements (execRows,
// execKeys), so a batch of a thousand records costs a few statements, not
// a thousand.
func commitTx(ctx context.Context, tx writeTx, c state.Commit, now int64) error {
	p := c.Pipeline
	// ids are the record ids of c.Records, which their lexical rows are
	// stored under (lexical.record_id).
	ids := make(map[state.RecordRef]int64, len(c.Records))
	if len(c.Records) > 0 {
		rows := make([][]any, len(c.Records))
		for i, r := range c.Records {
			rows[i] = []any{r.Source, r.Key, int64(r.Hash), int64(r.Fingerprint), r.Anchor, nullBytes(r.Props), r.Origin.Scope, r.Origin.ID, r.Ord}
		}
		err := queryShared(ctx, tx, recordsUpsert, []any{p, now}, rows, func(rs *sql.Rows) error {
			var ref state.RecordRef
			var id int64
			if err := rs.Scan(&ref.Source, &ref.Key, &id); err != nil {
				return err
			}
			ids[ref] = id
			return nil
		})
		if err != nil {
			return fmt.Errorf("upsert records: %w", err)
		}
	}
	if len(c.LinkDocs) > 0 {
		var rows [][]any
		var gone []state.RecordRef
		for _, ref := range state.SortedRefs(c.LinkDocs) {
			if d := c.LinkDocs[ref]; len(d) > 0 {
				rows = append(rows, []any{p, ref.Source, ref.Key, d})
			} else {
				gone = append(gone, ref)
			}
		}
		if err := execRows(ctx, tx, `INSERT INTO link_docs (pipeline, source, "key", data) VALUES `,
			`ON CONFLICT (pipeline, source, "key") DO UPDATE SET data = excluded.data`, rows); err != nil {
			return fmt.Errorf("upsert link index entries: %w", err)
		}
		if err := execKeys(ctx, tx, `DELETE FROM link_docs WHERE pipeline = ? AND source = ? AND "key" IN `, p, gone); err != nil {
			return fmt.Errorf("delete link index entries: %w", err)
		}
	}
	if len(c.Ords) > 0 {
		set, err := tx.PrepareContext(ctx, `UPDATE records INDEXED BY records_key SET ord = ? WHERE pipeline = ? AND source = ? AND "key" = ?`)
		if err != nil {
			return fmt.Errorf("prepare ord update: %w", err)
		}
		defer set.Close()
		for _, ref := range state.SortedRefs(c.Ords) {
			if _, err := set.ExecContext(ctx, c.Ords[ref], p, ref.Source, ref.Key); err != nil {
				return fmt.Errorf("set ord of %s/%s: %w", ref.Source, ref.Key, err)
			}
		}
	}
	if len(c.SetOrigins) > 0 {
		set, err := tx.PrepareContext(ctx, `UPDATE records INDEXED BY records_key SET origin_scope = ?, origin_id = ? WHERE pipeline = ? AND source = ? AND "key" = ?`)
		if err != nil {
			return fmt.Errorf("prepare origin update: %w", err)
		}
		defer set.Close()
		for _, ref := range state.SortedRefs(c.SetOrigins) {
			o := c.SetOrigins[ref]
			if _, err := set.ExecContext(ctx, o.Scope, o.ID, p, ref.Source, ref.Key); err != nil {
				return fmt.Errorf("set origin of %s/%s: %w", ref.Source, ref.Key, err)
			}
		}
	}
	if len(c.ReplaceChunks) > 0 {
		refs := state.SortedRefs(c.ReplaceChunks)
		if err := execKeys(ctx, tx, `DELETE FROM chunks WHERE pipeline = ? AND source = ? AND record_key IN `, p, refs); err != nil {
			return fmt.Errorf("replace chunks: %w", err)
		}
		var rows [][]any
		for _, ref := range refs {
			for _, ch := range c.ReplaceChunks[ref] {
				rows = append(rows, []any{ref.Source, ref.Key, ch.ID, int64(ch.Hash), int64(ch.TextHash), ch.Position, nullBytes(ch.Props)})
			}
		}
		if err := queryShared(ctx, tx, chunksInsert, []any{p}, rows, nil); err != nil {
			return fmt.Errorf("insert chunks: %w", err)
		}
	}
	delta := lexicalDelta{}
	if err := commitLexical(ctx, tx, c, ids, delta); err != nil {
		return err
	}
	if len(c.DeleteRecords) > 0 {
		refs := slices.Clone(c.DeleteRecords)
		slices.SortFunc(refs, func(a, b state.RecordRef) int {
			return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Key, b.Key))
		})
		// The lexical rows first: they are found through their record.
		if err := execKeys(ctx, tx, `DELETE FROM lexical_fts WHERE rowid IN (SELECT l.doc FROM records r INDEXED BY records_key
			JOIN lexical l ON l.record_id = r.id WHERE r.pipeline = ? AND r.source = ? AND r."key" IN `, p, refs, ")"); err != nil {
			return fmt.Errorf("delete lexical rows: %w", err)
		}
		if err := execKeysWith(ctx, tx, `DELETE FROM lexical WHERE record_id IN (SELECT id FROM records INDEXED BY records_key
			WHERE pipeline = ? AND source = ? AND "key" IN `, p, refs, ")", func(q string, args []any) error {
			return delta.deleted(ctx, tx, q, args...)
		}); err != nil {
			return fmt.Errorf("delete lexical rows: %w", err)
		}
		if err := execKeys(ctx, tx, `DELETE FROM chunks WHERE pipeline = ? AND source = ? AND record_key IN `, p, refs); err != nil {
			return fmt.Errorf("delete chunks: %w", err)
		}
		if err := execKeys(ctx, tx, `DELETE FROM records INDEXED BY records_key WHERE pipeline = ? AND source = ? AND "key" IN `, p, refs); err != nil {
			return fmt.Errorf("delete records: %w", err)
		}
		if err := execKeys(ctx, tx, `DELETE FROM link_docs WHERE pipeline = ? AND source = ? AND "key" IN `, p, refs); err != nil {
			return fmt.Errorf("delete link index entries: %w", err)
		}
	}
	if err := delta.write(ctx, tx, p); err != nil {
		return err
	}
	for _, src := range slices.Sorted(maps.Keys(c.Cursors)) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO cursors (pipeline, source, cursor, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (pipeline, source) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at`,
			p, src, c.Cursors[src], now); err != nil {
			return fmt.Errorf("upsert cursor of source %q: %w", src, err)
		}
	}
	if c.Intent != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO intents (pipeline, id, data, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (pipeline, id) DO UPDATE SET data = excluded.data, created_at = excluded.created_at`,
			p, c.Intent.ID, c.Intent.Data, now); err != nil {
			return fmt.Errorf("store intent %d: %w", c.Intent.ID, err)
		}
	}
	for _, id := range c.IntentsDone {
		if _, err := tx.ExecContext(ctx, `DELETE FROM intents WHERE pipeline = ? AND id = ?`, p, id); err != nil {
			return fmt.Errorf("remove intent %d: %w", id, err)
		}
	}
	return nil
}

// keysPerStatement is how many keys execKeys lists in one IN (...).
const keysPerStatement = 500

// execKeys runs prefix + "(?, ...)" + suffix with the pipeline, a source
// and up to keysPerStatement keys of refs (sorted by source) at a time.
func execKeys(ctx context.Context, tx writeTx, prefix, pipeline string, refs []state.RecordRef, suffix ...string) error {
	return execKeysWith(ctx, tx, prefix, pipeline, refs, strings.Join(suffix, ""), func(q string, args []any) error {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	})
}

// execKeysWith is execKeys with exec running each statement.
func execKeysWith(ctx context.Context, tx writeTx, prefix, pipeline string, refs []state.RecordRef, suffix string, exec func(q string, args []any) error) error {
	for start := 0; start < len(refs); {
		src := refs[start].Source
		end := start
		for end < len(refs) && end-start < keysPerStatement && refs[end].Source == src {
			end++
		}
		args := make([]any, 0, end-start+2)
		args = append(args, pipeline, src)
		for _, r := range refs[start:end] {
			args = append(args, r.Key)
		}
		if err := exec(prefix+"(?"+strings.Repeat(", ?", end-start-1)+")"+suffix, args); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// LinkDocs calls fn with every link index entry of a pipeline.
func (s *Store) LinkDocs(ctx context.Context, pipeline string, fn func(ref state.RecordRef, data []byte) error) error {
	rows, err := s.rdb.QueryContext(ctx, `SELECT source, "key", data FROM link_docs WHERE pipeline = ? ORDER BY source, "key"`, pipeline)
	if err != nil {
		return fmt.Errorf("list link index of %q: %w", pipeline, err)
	}
	defer rows.Close()
	for rows.Next() {
		var ref state.RecordRef
		var data []byte
		if err := rows.Scan(&ref.Source, &ref.Key, &data); err != nil {
			return fmt.Errorf("list link index of %q: %w", pipeline, err)
		}
		if err := fn(ref, data); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list link index of %q: %w", pipeline, err)
	}
	return nil
}

// IntentList returns the pipeline's stored intents by ascending ID.
func (s *Store) IntentList(ctx context.Context, pipeline string) ([]state.Intent, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, data FROM intents WHERE pipeline = ? ORDER BY id`, pipeline)
	if err != nil {
		return nil, fmt.Errorf("list intents of %q: %w", pipeline, err)
	}
	defer rows.Close()
	var out []state.Intent
	for rows.Next() {
		var in state.Intent
		if err := rows.Scan(&in.ID, &in.Data); err != nil {
			return nil, fmt.Errorf("list intents of %q: %w", pipeline, err)
		}
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list intents of %q: %w", pipeline, err)
	}
	return out, nil
}

// commitLexical applies c's lexical deletes, then its upserts: a row that
// exists keeps its doc id and gets its FTS5 entry replaced. Rows are stored
// under their record's id (lexical.record_id; ids maps c.Records to theirs,
// other records are looked up), so a first sync appends to the lexical
// index instead of inserting at random places of a key index; a row of a
// record that state does not hold is an error, unless c deletes that
// record (then it goes with it). Deletions find their rows with one query
// per 500 records. New rows take doc ids above the largest one (the
// transaction holds the write lock), in the order of c.LexicalUpserts.
// The rows of records whose id is above every stored row's record id
// cannot exist yet (all rows of a first sync); the other rows are looked
// up first by (record id, node), 500 a query, to tell new rows from rows
// that exist. New rows are multi-row INSERTs, FTS5 entries included; a
// row that exists is updated by its doc id. Every row counted
// in or out goes into delta (see lexicalDelta).
func commitLexical(ctx context.Context, tx writeTx, c state.Commit, ids map[state.RecordRef]int64, delta lexicalDelta) error {
	if len(c.LexicalDeletes)+len(c.LexicalUpserts) == 0 {
		return nil
	}
	if len(c.LexicalDeletes) > 0 {
		docs, err := lexicalDocs(ctx, tx, c.Pipeline, c.LexicalDeletes)
		if err != nil {
			return err
		}
		var gone []any
		for _, ref := range c.LexicalDeletes {
			if doc, ok := docs[ref]; ok {
				gone = append(gone, doc)
				delete(docs, ref)
			}
		}
		for start := 0; start < len(gone); start += keysPerStatement {
			part := gone[start:min(start+keysPerStatement, len(gone))]
			in := "(?" + strings.Repeat(", ?", len(part)-1) + ")"
			if _, err := tx.ExecContext(ctx, `DELETE FROM lexical_fts WHERE rowid IN `+in, part...); err != nil {
				return fmt.Errorf("delete lexical rows: %w", err)
			}
			if err := delta.deleted(ctx, tx, `DELETE FROM lexical WHERE doc IN `+in, part...); err != nil {
				return fmt.Errorf("delete lexical rows: %w", err)
			}
		}
	}
	if len(c.LexicalUpserts) == 0 {
		return nil
	}
	if err := lexicalRecordIDs(ctx, tx, c, ids); err != nil {
		return err
	}
	deleted := make(map[state.RecordRef]bool, len(c.DeleteRecords))
	for _, ref := range c.DeleteRecords {
		deleted[ref] = true
	}
	// first is the doc id of the first new row; no stored row belongs to
	// a record id above last (the largest record_id, found through
	// lexical_record), so the rows of those records are new.
	var first, last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce((SELECT max(doc) FROM lexical), 0) + 1,
		coalesce((SELECT max(record_id) FROM lexical), 0)`).Scan(&first, &last); err != nil {
		return fmt.Errorf("upsert lexical rows: %w", err)
	}
	// rowIDs[i] is the record id of c.LexicalUpserts[i], 0 for a record
	// state does not hold (records.id, a rowid, starts at 1), looked up
	// once here.
	rowIDs := make([]int64, len(c.LexicalUpserts))
	for i, r := range c.LexicalUpserts {
		rowIDs[i] = ids[state.RecordRef{Source: r.Source, Key: r.RecordKey}]
	}
	stored, err := storedLexicalRows(ctx, tx, c.LexicalUpserts, rowIDs, last)
	if err != nil {
		return err
	}
	// added and fresh are the new rows and their FTS5 entries; setRows
	// and setTexts the kinds and lengths, and the texts, of rows that exist.
	var added, fresh, setRows, setTexts [][]any
	doc := first
	for i, r := range c.LexicalUpserts {
		id := rowIDs[i]
		if id == 0 {
			if ref := (state.RecordRef{Source: r.Source, Key: r.RecordKey}); deleted[ref] {
				continue
			}
			return fmt.Errorf("upsert lexical row %s/%s/%s: record not in state", r.Source, r.RecordKey, r.ID)
		}
		n := state.LexicalLen(r.Text)
		delta.add(r.Kind, 1, int64(n))
		if old, ok := stored[lexicalRowKey{id, r.ID}]; ok {
			// Commit.Check refuses a row listed twice.
			delta.add(old.kind, -1, -old.len)
			if old.kind != r.Kind || old.len != int64(n) {
				setRows = append(setRows, []any{r.Kind, n, old.doc})
			}
			setTexts = append(setTexts, []any{r.Text, old.doc})
			continue
		}
		added = append(added, []any{doc, r.Source, r.RecordKey, id, r.ID, r.Kind, n})
		fresh = append(fresh, []any{doc, r.Text})
		doc++
	}
	if err := queryShared(ctx, tx, lexicalInsert, []any{c.Pipeline}, added, nil); err != nil {
		return fmt.Errorf("insert lexical rows: %w", err)
	}
	if err := execRows(ctx, tx, ftsInsertPrefix, "", fresh); err != nil {
		return fmt.Errorf("insert lexical rows: %w", err)
	}
	if err := execEach(ctx, tx, `UPDATE lexical SET kind = ?, len = ? WHERE doc = ?`, setRows); err != nil {
		return fmt.Errorf("update lexical rows: %w", err)
	}
	if err := execEach(ctx, tx, `UPDATE lexical_fts SET text = ? WHERE rowid = ?`, setTexts); err != nil {
		return fmt.Errorf("update lexical rows: %w", err)
	}
	return nil
}

// execEach runs q once per row of args, prepared once (nothing when there
// are no rows).
func execEach(ctx context.Context, tx writeTx, q string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, q)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, args := range rows {
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// lexicalRowKey names a lexical row by its record's id and its node.
type lexicalRowKey struct {
	record int64
	node   string
}

// storedLexicalRow is a stored lexical row's doc id, kind and length.
type storedLexicalRow struct {
	doc  int64
	kind string
	len  int64
}

// storedLexicalRows returns the stored rows among upserts (of records
// ids, 0 for none) whose record id is at most last, looked up by (record
// id, node) through lexical_record, 500 rows a query: an edit of one row
// of a document reads that row, not the document's thousands.
func storedLexicalRows(ctx context.Context, tx writeTx, upserts []state.LexicalRow, ids []int64, last int64) (map[lexicalRowKey]storedLexicalRow, error) {
	var pairs []any
	for i, r := range upserts {
		if id := ids[i]; id != 0 && id <= last {
			pairs = append(pairs, id, r.ID)
		}
	}
	out := map[lexicalRowKey]storedLexicalRow{}
	for start := 0; start < len(pairs); start += 2 * keysPerStatement {
		part := pairs[start:min(start+2*keysPerStatement, len(pairs))]
		// CROSS JOIN keeps the VALUES list outermost, so each pair is one
		// search of lexical_record ((record_id, node) IN (VALUES …) scans
		// the table).
		rows, err := tx.QueryContext(ctx, `SELECT l.record_id, l.node, l.doc, l.kind, l.len FROM (VALUES (?, ?)`+
			strings.Repeat(", (?, ?)", len(part)/2-1)+`) v CROSS JOIN lexical l ON l.record_id = v.column1 AND l.node = v.column2`, part...)
		if err != nil {
			return nil, fmt.Errorf("find lexical rows: %w", err)
		}
		for rows.Next() {
			var k lexicalRowKey
			var r storedLexicalRow
			if err := rows.Scan(&k.record, &k.node, &r.doc, &r.kind, &r.len); err != nil {
				rows.Close()
				return nil, fmt.Errorf("find lexical rows: %w", err)
			}
			out[k] = r
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("find lexical rows: %w", err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("find lexical rows: %w", err)
		}
	}
	return out, nil
}

// lexicalDelta is what a commit adds to a pipeline's lexical_stats (see
// migration 100_lexical_stats), by kind: the rows and their length in
// terms it stores (positive) and removes (negative).
type lexicalDelta map[string]lexicalCount

// lexicalCount is a number of lexical rows and their total length.
type lexicalCount struct{ rows, len int64 }

// add counts rows rows of total length n of kind.
func (d lexicalDelta) add(kind string, rows, n int64) {
	v := d[kind]
	d[kind] = lexicalCount{v.rows + rows, v.len + n}
}

// deleted runs q, a DELETE FROM lexical, and counts out the rows it
// deleted (q gets RETURNING kind, len).
func (d lexicalDelta) deleted(ctx context.Context, tx writeTx, q string, args ...any) error {
	rows, err := tx.QueryContext(ctx, q+` RETURNING kind, len`, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var kind string
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			rows.Close()
			return err
		}
		d.add(kind, -1, -n)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}

// write adds d to pipeline's lexical_stats, one statement per kind, and
// drops the kinds left without rows.
func (d lexicalDelta) write(ctx context.Context, tx writeTx, pipeline string) error {
	fell := false
	for _, kind := range slices.Sorted(maps.Keys(d)) {
		v := d[kind]
		if v == (lexicalCount{}) {
			continue
		}
		fell = fell || v.rows < 0
		if _, err := tx.ExecContext(ctx, `INSERT INTO lexical_stats (pipeline, kind, row_count, total_len) VALUES (?, ?, ?, ?)
			ON CONFLICT (pipeline, kind) DO UPDATE SET row_count = row_count + excluded.row_count, total_len = total_len + excluded.total_len`,
			pipeline, kind, v.rows, v.len); err != nil {
			return fmt.Errorf("count lexical rows: %w", err)
		}
	}
	if fell {
		if _, err := tx.ExecContext(ctx, `DELETE FROM lexical_stats WHERE pipeline = ? AND row_count <= 0`, pipeline); err != nil {
			return fmt.Errorf("count lexical rows: %w", err)
		}
	}
	return nil
}

// lexicalRecordIDs adds to ids the stored records of c's lexical upserts
// that c.Records does not hold, 500 keys a query.
func lexicalRecordIDs(ctx context.Context, tx writeTx, c state.Commit, ids map[state.RecordRef]int64) error {
	bySource := keysBySource(c.LexicalUpserts, func(r state.LexicalRow) state.LexicalRef { return r.LexicalRef },
		func(ref state.RecordRef) bool { _, ok := ids[ref]; return ok })
	for _, src := range slices.Sorted(maps.Keys(bySource)) {
		err := selectByKeys(ctx, tx, recordsByKey(`"key", id`), c.Pipeline, src, bySource[src], func(rows *sql.Rows) error {
			defer rows.Close()
			for rows.Next() {
				ref := state.RecordRef{Source: src}
				var id int64
				if err := rows.Scan(&ref.Key, &id); err != nil {
					return err
				}
				ids[ref] = id
			}
			return rows.Err()
		})
		if err != nil {
			return fmt.Errorf("find records of lexical rows: %w", err)
		}
	}
	return nil
}

// keysBySource groups the record keys of items' lexical refs by source,
// each key once, leaving out the records skip tells (skip may be nil).
func keysBySource[T any](items []T, ref func(T) state.LexicalRef, skip func(state.RecordRef) bool) map[string][]string {
	out := map[string][]string{}
	seen := map[state.RecordRef]bool{}
	for _, it := range items {
		r := ref(it)
		rec := state.RecordRef{Source: r.Source, Key: r.RecordKey}
		if seen[rec] || skip != nil && skip(rec) {
			continue
		}
		seen[rec] = true
		out[r.Source] = append(out[r.Source], r.RecordKey)
	}
	return out
}

// lexicalDocs returns the doc ids of the stored rows among refs, reading
// the rows of their records through the records' ids, 500 records a query.
func lexicalDocs(ctx context.Context, tx writeTx, pipeline string, refs []state.LexicalRef) (map[state.LexicalRef]int64, error) {
	want := make(map[state.LexicalRef]bool, len(refs))
	for _, r := range refs {
		want[r] = true
	}
	bySource := keysBySource(refs, func(r state.LexicalRef) state.LexicalRef { return r }, nil)
	out := map[state.LexicalRef]int64{}
	for _, src := range slices.Sorted(maps.Keys(bySource)) {
		err := selectByKeys(ctx, tx, `SELECT r."key", l.node, l.doc FROM records r INDEXED BY records_key JOIN lexical l ON l.record_id = r.id
			WHERE r.pipeline = ? AND r.source = ? AND r."key" IN (%s)`, pipeline, src, bySource[src], func(rows *sql.Rows) error {
			defer rows.Close()
			for rows.Next() {
				ref := state.LexicalRef{Source: src}
				var doc int64
				if err := rows.Scan(&ref.RecordKey, &ref.ID, &doc); err != nil {
					return err
				}
				if want[ref] {
					out[ref] = doc
				}
			}
			return rows.Err()
		})
		if err != nil {
			return nil, fmt.Errorf("find lexical rows: %w", err)
		}
	}
	return out, nil
}

// LexicalSearch implements state.Store: the row count and total length
// from lexical_stats, and for each term the rows of lexical_vocab (one per
// occurrence, read through FTS5's index for that term) joined to their row.
func (s *Store) LexicalSearch(ctx context.Context, pipeline, kind string, terms []string) (state.LexicalStats, []state.LexicalMatch, error) {
	st := state.LexicalStats{DF: map[string]int{}}
	if err := s.rdb.QueryRowContext(ctx, `SELECT coalesce(sum(row_count), 0), coalesce(sum(total_len), 0) FROM lexical_stats
		WHERE pipeline = ? AND kind = ?`, pipeline, kind).Scan(&st.Rows, &st.TotalLen); err != nil {
		return st, nil, fmt.Errorf("lexical search %q: %w", pipeline, err)
	}
	byDoc := map[int64]*state.LexicalMatch{}
	var order []int64
	for _, term := range terms {
		if term == "" || st.DF[term] > 0 {
			continue
		}
		// CROSS JOIN keeps lexical_vocab outermost: FTS5 walks the term's
		// postings, and each occurrence finds its row by primary key.
		rows, err := s.rdb.QueryContext(ctx, `SELECT v.doc, l.source, l.record_key, l.node, l.len, count(*)
			FROM lexical_vocab v CROSS JOIN lexical l ON l.doc = v.doc
			WHERE v.term = ? AND l.pipeline = ? AND l.kind = ? GROUP BY v.doc`, term, pipeline, kind)
		if err != nil {
			return st, nil, fmt.Errorf("lexical search %q: term %q: %w", pipeline, term, err)
		}
		for rows.Next() {
			var doc int64
			var ref state.LexicalRef
			var n, tf int
			if err := rows.Scan(&doc, &ref.Source, &ref.RecordKey, &ref.ID, &n, &tf); err != nil {
				rows.Close()
				return st, nil, fmt.Errorf("lexical search %q: %w", pipeline, err)
			}
			m, ok := byDoc[doc]
			if !ok {
				m = &state.LexicalMatch{LexicalRef: ref, Len: n, TF: map[string]int{}}
				byDoc[doc] = m
				order = append(order, doc)
			}
			m.TF[term] = tf
			st.DF[term]++
		}
		if err := rows.Close(); err != nil {
			return st, nil, fmt.Errorf("lexical search %q: %w", pipeline, err)
		}
		if err := rows.Err(); err != nil {
			return st, nil, fmt.Errorf("lexical search %q: %w", pipeline, err)
		}
	}
	out := make([]state.LexicalMatch, len(order))
	for i, doc := range order {
		out[i] = *byDoc[doc]
	}
	return st, out, nil
}

// LexicalCount implements state.Store, from lexical_stats.
func (s *Store) LexicalCount(ctx context.Context, pipeline, kind string) (int, error) {
	var n int
	q, args := `SELECT coalesce(sum(row_count), 0) FROM lexical_stats WHERE pipeline = ?`, []any{pipeline}
	if kind != "" {
		q, args = q+` AND kind = ?`, append(args, kind)
	}
	if err := s.rdb.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count lexical rows of %q: %w", pipeline, err)
	}
	return n, nil
}

// rowsPerStatement is how many rows execRows writes with one statement;
// times the widest row (11 columns) it stays below SQLite's default limit of
// 32766 bound parameters.
const rowsPerStatement = 500

// execRows runs prefix + "(?, ...), (?, ...) ..." + suffix for rows, up to
// rowsPerStatement rows at a time; see queryRows.
func execRows(ctx context.Context, tx writeTx, prefix, suffix string, rows [][]any) error {
	return queryRows(ctx, tx, prefix, suffix, rows, nil)
}

// multiRow is prefix + n tuples of cols placeholders + " " + suffix.
func multiRow(prefix, suffix string, cols, n int) string {
	tuple := "(?" + strings.Repeat(", ?", cols-1) + ")"
	return prefix + tuple + strings.Repeat(", "+tuple, n-1) + " " + suffix
}

// rowStatement is a multi-row statement: prefix, n tuples, " ", suffix.
// With tuple empty each tuple is cols plain placeholders (multiRow).
// Otherwise tuple writes the values all rows share (given once, as the
// statement's first arguments) as ?1 … ?k and each of a row's own values
// as '#', so a value every row repeats (a pipeline name, a time) is
// converted and bound once per statement, not once per row. The '#'s of
// the first tuple become ?(k+1) …, those of the others plain '?', which
// SQLite numbers one above the largest number used before: the statement
// names only its first tuple's parameters, as the driver looks each
// parameter's name up in a list of the named ones (numbering them all
// made binding quadratic: 45 % of a put of 1,000 vectors).
type rowStatement struct {
	prefix, tuple, suffix string
}

// key names st among the statements of Store.full and writeTx.full.
func (st rowStatement) key() string { return st.prefix + "\x00" + st.tuple + "\x00" + st.suffix }

// sql is the text of st for n rows of cols own values and shared values.
func (st rowStatement) sql(shared, cols, n int) string {
	if st.tuple == "" {
		return multiRow(st.prefix, st.suffix, cols, n)
	}
	var b strings.Builder
	b.WriteString(st.prefix)
	k := shared
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		for j := 0; j < len(st.tuple); j++ {
			if c := st.tuple[j]; c != '#' {
				b.WriteByte(c)
				continue
			}
			if i > 0 {
				b.WriteByte('?')
				continue
			}
			k++
			fmt.Fprintf(&b, "?%d", k)
		}
	}
	b.WriteString(" ")
	b.WriteString(st.suffix)
	return b.String()
}

// queryRows runs multiRow(prefix, suffix, …) for rows, up to
// rowsPerStatement rows at a time; see queryShared.
func queryRows(ctx context.Context, tx writeTx, prefix, suffix string, rows [][]any, scan func(*sql.Rows) error) error {
	return queryShared(ctx, tx, rowStatement{prefix: prefix, suffix: suffix}, nil, rows, scan)
}

// queryShared runs stmt with shared for rows, up to rowsPerStatement rows
// at a time: full groups through one prepared statement (tx's by
// stmt.key, or prepared here for the call), the rest unprepared. When
// scan is not nil the statement returns rows (suffix ends in RETURNING …)
// and scan is called for each. All rows have the same number of columns.
func queryShared(ctx context.Context, tx writeTx, stmt rowStatement, shared []any, rows [][]any, scan func(*sql.Rows) error) error {
	if len(rows) == 0 {
		return nil
	}
	cols := len(rows[0])
	run := func(st *sql.Stmt, args []any) error {
		n := (len(args) - len(shared)) / cols
		if scan == nil {
			var err error
			if st != nil {
				_, err = st.ExecContext(ctx, args...)
			} else {
				_, err = tx.ExecContext(ctx, stmt.sql(len(shared), cols, n), args...)
			}
			return err
		}
		var rs *sql.Rows
		var err error
		if st != nil {
			rs, err = st.QueryContext(ctx, args...)
		} else {
			rs, err = tx.QueryContext(ctx, stmt.sql(len(shared), cols, n), args...)
		}
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			if err := scan(rs); err != nil {
				return err
			}
		}
		return rs.Err()
	}
	var full *sql.Stmt
	args := make([]any, 0, len(shared)+rowsPerStatement*cols)
	for start := 0; start < len(rows); start += rowsPerStatement {
		group := rows[start:min(start+rowsPerStatement, len(rows))]
		args = append(args[:0], shared...)
		for _, r := range group {
			args = append(args, r...)
		}
		if len(group) < rowsPerStatement {
			if err := run(nil, args); err != nil {
				return err
			}
			continue
		}
		if full == nil {
			if st := tx.full[stmt.key()]; st != nil {
				full = tx.StmtContext(ctx, st)
			} else {
				st, err := tx.PrepareContext(ctx, stmt.sql(len(shared), cols, rowsPerStatement))
				if err != nil {
					return err
				}
				full = st
			}
			defer full.Close()
		}
		if err := run(full, args); err != nil {
			return err
		}
	}
	return nil
}

// nullBytes stores empty byte slices as NULL, so they read back as nil.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// embeddingsGetBatch is how many text hashes one EmbeddingsGet query asks
// for, below SQLite's default limit of 32766 bound parameters.
const embeddingsGetBatch = 1000

// EmbeddingsGet returns the cached vectors of model for textHashes, one
// query per 1,000 hashes. Hashes without a vector are absent from the map.
// A query takes its hashes as one JSON array, walked by json_each with one
// look-up of the primary key per hash: an IN list of 1,000 bound values
// was parsed anew and copied into a temporary index by every query.
func (s *Store) EmbeddingsGet(ctx context.Context, model string, textHashes []uint64) (map[uint64][]float32, error) {
	out := make(map[uint64][]float32, len(textHashes))
	hashes := state.DedupeHashes(textHashes)
	var list []byte
	for start := 0; start < len(hashes); start += embeddingsGetBatch {
		part := hashes[start:min(start+embeddingsGetBatch, len(hashes))]
		list = append(list[:0], '[')
		for i, h := range part {
			if i > 0 {
				list = append(list, ',')
			}
			list = strconv.AppendInt(list, int64(h), 10)
		}
		list = append(list, ']')
		const q = `SELECT e.text_hash, e.vector FROM json_each(?2) j CROSS JOIN embeddings e
			WHERE e.model = ?1 AND e.text_hash = j.value`
		if err := s.scanEmbeddings(ctx, model, q, []any{model, string(list)}, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scanEmbeddings runs one EmbeddingsGet query and adds its rows to out.
func (s *Store) scanEmbeddings(ctx context.Context, model, q string, args []any, out map[uint64][]float32) error {
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("get embeddings of model %q: %w", model, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			h   int64
			raw []byte
		)
		if err := rows.Scan(&h, &raw); err != nil {
			return fmt.Errorf("get embeddings of model %q: %w", model, err)
		}
		v, err := state.DecodeVector(raw)
		if err != nil {
			return fmt.Errorf("get embeddings of model %q: text hash %d: %w", model, uint64(h), err)
		}
		out[uint64(h)] = v
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("get embeddings of model %q: %w", model, err)
	}
	return nil
}

// embeddingsPut is EmbeddingsPut's statement: the model and the time
// are shared by all rows, each row is a text hash and its vector.
var embeddingsPut = rowStatement{
	prefix: `INSERT INTO embeddings (model, text_hash, vector, created_at) VALUES `,
	tuple:  `(?1, #, #, ?2)`,
	suffix: `ON CONFLICT (model, text_hash) DO UPDATE SET vector = excluded.vector, created_at = excluded.created_at
		WHERE vector <> excluded.vector`,
}

// EmbeddingsPut stores vecs for model in one transaction, by ascending
// text hash, in multi-row statements of rowsPerStatement vectors; a vector
// already cached under the same (model, text hash) is replaced when it
// differs (and keeps its created_at when equal).
func (s *Store) EmbeddingsPut(ctx context.Context, model string, vecs map[uint64][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	var want []fullStatement
	if len(vecs) >= rowsPerStatement {
		want = append(want, fullStatement{embeddingsPut, 2, 2})
	}
	full, err := s.prepareFull(ctx, want)
	if err != nil {
		return fmt.Errorf("put embeddings of model %q: %w", model, err)
	}
	rows := make([][]any, 0, len(vecs))
	for _, h := range slices.Sorted(maps.Keys(vecs)) {
		rows = append(rows, []any{int64(h), state.EncodeVector(vecs[h])})
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put embeddings of model %q: begin: %w", model, err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := queryShared(ctx, writeTx{tx, full}, embeddingsPut, []any{model, micros(s.nowTime())}, rows, nil); err != nil {
		return fmt.Errorf("put embeddings of model %q: %w", model, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("put embeddings of model %q: commit: %w", model, err)
	}
	return nil
}
