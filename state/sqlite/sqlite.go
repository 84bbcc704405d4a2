// Package sqlite is the embedded state.Store: one SQLite file (pure Go driver
// modernc.org/sqlite, no cgo) in WAL mode, used by default on a fresh machine.
//
// The store keeps a single writing connection (database/sql MaxOpenConns
// 1), so the goroutines of one process queue for it instead of failing with
// SQLITE_BUSY; transactions begin IMMEDIATE and wait up to busyTimeout for
// another process's writer. Reads outside a transaction go to a second
// pool of readConns read-only connections with a small page cache: in WAL
// mode they see the last committed state and neither wait for nor block
// the writer, so a run reads the next batch's stored records while the
// previous batch commits, and reading a large table (a no-op over a million
// rows) does not grow the writer's cache. Pipeline locks are file locks next to the
// database (see Store.Lock). Hash encoding and time units are described in
// migration/001_init.up.sql.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
	sqlitedriver "modernc.org/sqlite" // registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/kgsync/kgsync/state"
)

// busyTimeout is how long a statement waits for another process's lock on
// the database file before failing with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// Store is the SQLite state.Store. Create it with Open; it is safe for
// concurrent use.
type Store struct {
	db   *sql.DB // the writer: transactions, migrations, writes
	rdb  *sql.DB // readers: queries outside a transaction
	path string
	now  func() time.Time

	mu     sync.Mutex
	locks  map[*flock.Flock]struct{} // pipeline locks held by this Store
	full   map[string]*sql.Stmt      // writer statements by rowStatement.key (fullStatements)
	closed bool
	// written counts the records written or deleted through this Store; cacheKiB
	// is the writer's page cache now (idleCacheKiB, then writerCacheKiB,
	// then bigCacheKiB; see raiseCache).
	written  int
	cacheKiB int
}

var _ state.Store = (*Store)(nil)

// Open opens (creating it and its parent directories when missing) the
// SQLite database at path, a file system path, and applies the migrations.
// Errors name the path.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("open sqlite state: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite state %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("open sqlite state %s: create directory: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn(abs, false))
	if err != nil {
		return nil, fmt.Errorf("open sqlite state %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &Store{db: db, path: abs, now: time.Now, locks: map[*flock.Flock]struct{}{}, cacheKiB: idleCacheKiB}
	if err := pingWaiting(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open sqlite state %s: %w", path, err)
	}
	// River's migrations wait for the job queue (MigrateJobs).
	if err := s.migrate(ctx, true, false); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open sqlite state %s: %w", path, err)
	}
	// Readers open after the migrations, so they find the file in WAL mode.
	rdb, err := sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open sqlite state %s: %w", path, err)
	}
	rdb.SetMaxOpenConns(readConns)
	rdb.SetMaxIdleConns(readConns)
	rdb.SetConnMaxLifetime(0)
	rdb.SetConnMaxIdleTime(0)
	s.rdb = rdb
	return s, nil
}

// pingWaiting opens db's first connection, waiting up to busyTimeout while
// another connection holds the file: the pragmas a connection starts with
// (the switch of a fresh file to WAL) answer SQLITE_BUSY at once, without
// the busy timeout, when another process opens the same fresh file.
func pingWaiting(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := db.PingContext(ctx)
		var se *sqlitedriver.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// readConns is the size of the read pool: the run's reader of stored
// records and the embedding cache's look-ups, each beside the writer.
const readConns = 2

// Page caches, in KiB (SQLite's default is 2 MiB). The pure Go SQLite is
// built with SQLITE_ENABLE_MEMORY_MANAGEMENT, under which every connection
// of the process keeps its pages in one pool (pcache1 without separate
// caches) bounded by the sum of the connections' cache sizes: a reader
// scanning a large table fills whatever the writer does not hold, and each
// page (4 KiB and about 300 bytes of header) takes an 8 KiB slot of the
// driver's allocator (modernc.org/memory rounds to powers of two). A no-op
// full listing of 1,000,000 Grist rows held 25 MB of pages in the readers
// (the writer's 16 MiB and the readers' 2 × 4 MiB), 56 MB of allocator
// memory, against 10 MB at 10,000 rows.
//
// So the writer starts with idleCacheKiB, which a run that writes no
// records (a no-op, however many rows it compares) keeps. Once a Store has
// written or deleted a record, its writer gets writerCacheKiB: enough for the pages
// a batch of changes touches (the first batch of a run starts with a cold
// cache either way). Once it has written bigCacheAfter records (a first
// sync of a large table, a resync), it gets bigCacheKiB, enough to keep
// the key index of a million records while they are written at random
// places (5–8 % less CPU for a first sync of 1M rows than with 16 MiB,
// measured). A reader has readerCacheKiB: it reads each page of a long
// scan once, and the interior pages of an index fit.
const (
	idleCacheKiB   = 1 << 10
	writerCacheKiB = 16 << 10
	bigCacheKiB    = 64 << 10
	bigCacheAfter  = 50_000
	readerCacheKiB = 1 << 10
)

// dsn is the driver's name for the database file at abs: a file: URI (so
// '?' and '#' in the path are escaped) with the connection's pragmas. The
// writer's page cache is idleCacheKiB (raised by raiseCache), and it keeps
// statement journals in memory; a reader (readOnly) has readerCacheKiB.
func dsn(abs string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	if readOnly {
		q.Add("_pragma", "query_only(1)")
		q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", readerCacheKiB))
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", idleCacheKiB))
		q.Add("_pragma", "temp_store(MEMORY)")
		// Checkpoint every 256 MiB of WAL, not every 4 MiB: a page a first
		// sync writes again and again (the key index of a large table, at
		// random places) is copied into the database once per checkpoint
		// (a first sync of 1M rows: 7.8 → 6.7 GB written, 7–14 % less wall
		// time than every 64 MiB, measured); the WAL is cut back to 64 MiB
		// afterwards.
		q.Add("_pragma", "wal_autocheckpoint(65536)")
		q.Add("_pragma", "journal_size_limit(67108864)")
		q.Set("_txlock", "immediate")
	}
	q.Add("_pragma", "foreign_keys(ON)")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Lock takes the pipeline's lock: an exclusive flock(2) on the file
// "<database path>.<pipeline>.lock" (bytes of the pipeline name other than
// ASCII letters, digits, '-', '_' and '.' are written as %XX). The lock is
// per open file, so it excludes other processes and other Lock calls in
// this process alike; the operating system drops it when the process dies.
// It returns state.ErrLocked at once when the lock is held. The lock file
// is left in place after unlock.
func (s *Store) Lock(ctx context.Context, pipeline string) (func() error, error) {
	if pipeline == "" {
		return nil, errors.New("lock: empty pipeline name")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lock pipeline %q: %w", pipeline, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("lock pipeline %q: store is closed", pipeline)
	}
	name := s.path + "." + escapeFileName(pipeline) + ".lock"
	fl := flock.New(name)
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock pipeline %q: %s: %w", pipeline, name, err)
	}
	if !ok {
		_ = fl.Close()
		return nil, fmt.Errorf("lock pipeline %q: %s: %w", pipeline, name, state.ErrLocked)
	}
	s.locks[fl] = struct{}{}
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if _, held := s.locks[fl]; !held { // released by Close
				return
			}
			delete(s.locks, fl)
			if uerr := fl.Unlock(); uerr != nil {
				err = fmt.Errorf("unlock pipeline %q: %s: %w", pipeline, name, uerr)
			}
		})
		return err
	}, nil
}

// escapeFileName keeps ASCII letters, digits, '-', '_' and '.' and writes
// every other byte as %XX, so any pipeline name gives one file name.
func escapeFileName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Close releases the pipeline locks still held and closes the database.
// Calling it again returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var errs []error
	for fl := range s.locks {
		if err := fl.Unlock(); err != nil {
			errs = append(errs, fmt.Errorf("unlock %s: %w", fl.Path(), err))
		}
		delete(s.locks, fl)
	}
	for q, st := range s.full {
		if err := st.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close sqlite state %s: %w", s.path, err))
		}
		delete(s.full, q)
	}
	s.mu.Unlock()
	if err := s.rdb.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close sqlite state %s: %w", s.path, err))
	}
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close sqlite state %s: %w", s.path, err))
	}
	return errors.Join(errs...)
}

// micros converts t to the stored unit, unix microseconds.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros converts a stored unix-microsecond time to a UTC time.Time.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// nowTime is the store's clock truncated to the stored precision, in UTC.
func (s *Store) nowTime() time.Time { return s.now().UTC().Truncate(time.Microsecond) }
