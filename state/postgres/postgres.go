// Package postgres is the production state.Store: the tables of
// migration/*.up.sql in one Postgres schema, reached through a pgx/v5 pool
// whose connections have search_path set to that schema.
//
// Pipeline locks are session-level advisory locks held on a connection
// taken from the pool for the length of the run (see Store.Lock), so the
// pool must allow at least one connection per concurrently locked pipeline
// plus one for queries, and must be a direct or session-pooled connection
// (not PgBouncer transaction pooling). Commits of one pipeline are
// serialized with a transaction-level advisory lock, so a record's chunk
// list is always one commit's list. Hash encoding and column types are
// described in migration/001_init.up.sql.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kgsync/kgsync/state"
)

// Store is the Postgres state.Store. Create it with Open, or New for a pool
// configured elsewhere; it is safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	ownPool bool // Close closes the pool (Open); New's caller owns it
	now     func() time.Time

	mu     sync.Mutex
	schema string                     // current_schema(), read once; see schemaName
	locks  map[*pgxpool.Conn]struct{} // connections holding a pipeline lock
	// fences are the fencing tokens of the pipeline locks this store
	// holds, by pipeline (see Lock).
	fences map[string]*fence
	closed bool
}

// fence is a held pipeline lock's session and fencing token. mu
// serializes the session's use (CheckLock, unlock).
type fence struct {
	mu    sync.Mutex
	conn  *pgxpool.Conn
	token int64
}

var _ state.Store = (*Store)(nil)

// Open connects to dsn (a pgx connection string or URL), creates schema
// when it does not exist, points the pool's search_path at it and applies
// the migrations. Errors name the schema, never the DSN (it may hold a
// password).
func Open(ctx context.Context, dsn, schema string) (*Store, error) {
	if schema == "" {
		return nil, errors.New("open postgres state: empty schema name")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres state: parse connection string: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres state schema %q: %w", schema, err)
	}
	s := New(pool)
	s.ownPool = true
	if err := s.createSchema(ctx, schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres state schema %q: %w", schema, err)
	}
	if err := s.Migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres state schema %q: %w", schema, err)
	}
	return s, nil
}

// New returns a Store on pool, whose connections' search_path must name an
// existing schema (the tables are created there by Migrate). Close does not
// close pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, now: time.Now, locks: map[*pgxpool.Conn]struct{}{}}
}

// createSchema creates schema if missing, under the migration lock, so two
// processes opening a new schema at once do not collide.
func (s *Store) createSchema(ctx context.Context, schema string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("create schema %q: %w", schema, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, AdvisoryKey(schema, "migrate", "")); err != nil {
		return fmt.Errorf("create schema %q: lock: %w", schema, err)
	}
	// Look first: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on
	// the database even when the schema exists.
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		return fmt.Errorf("create schema %q: %w", schema, err)
	}
	if exists {
		return nil
	}
	if _, err := tx.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("create schema %q: %w", schema, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("create schema %q: %w", schema, err)
	}
	return nil
}

// AdvisoryKey is the 64-bit Postgres advisory lock key kgsync uses for one
// purpose ("lock" for a pipeline's run lock, "commit" for serializing its
// commits, "migrate" with name "" for migrations) in one schema: the
// FNV-1a 64-bit hash of "kgsync\x00" + schema + "\x00" + purpose + "\x00" +
// name, as a bigint with the same bits. Operators find a held pipeline
// lock in pg_locks (locktype 'advisory', objsubid 1) with classid = the
// key's high 32 bits and objid = its low 32 bits.
func AdvisoryKey(schema, purpose, name string) int64 {
	h := fnv.New64a()
	for _, part := range []string{"kgsync", schema, purpose, name} {
		_, _ = h.Write([]byte(part))
		_, _ = h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

// LockKey is the advisory lock key of pipeline's run lock in schema,
// AdvisoryKey(schema, "lock", pipeline).
func LockKey(schema, pipeline string) int64 { return AdvisoryKey(schema, "lock", pipeline) }

// schemaName returns the schema the pool's connections work in,
// current_schema(), read once.
func (s *Store) schemaName(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.schema != "" {
		return s.schema, nil
	}
	var name *string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&name); err != nil {
		return "", fmt.Errorf("read current schema: %w", err)
	}
	if name == nil {
		return "", errors.New("read current schema: no schema of the search_path exists")
	}
	s.schema = *name
	return s.schema, nil
}

// Lock takes pipeline's run lock, pg_try_advisory_lock(LockKey(schema,
// pipeline)), on a connection acquired from the pool and kept until unlock
// (which unlocks and returns it) or Close. Postgres releases the lock
// itself when that session ends, for example when the process dies. It
// returns state.ErrLocked at once when another session holds the lock, and
// waits for a free pool connection otherwise.
func (s *Store) Lock(ctx context.Context, pipeline string) (func() error, error) {
	if pipeline == "" {
		return nil, errors.New("lock: empty pipeline name")
	}
	schema, err := s.schemaName(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock pipeline %q: %w", pipeline, err)
	}
	key := LockKey(schema, pipeline)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock pipeline %q: acquire connection: %w", pipeline, err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil {
		conn.Release()
		return nil, fmt.Errorf("lock pipeline %q: %w", pipeline, err)
	}
	if !ok {
		conn.Release()
		return nil, fmt.Errorf("lock pipeline %q in schema %q: %w", pipeline, schema, state.ErrLocked)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = conn.Conn().Close(ctx) // ends the session and with it the lock
		conn.Release()
		return nil, fmt.Errorf("lock pipeline %q: store is closed", pipeline)
	}
	s.mu.Unlock()
	token, err := takeFence(ctx, conn, schema, pipeline)
	if err != nil {
		_ = conn.Conn().Close(context.WithoutCancel(ctx)) // ends the session and with it the lock
		conn.Release()
		return nil, fmt.Errorf("lock pipeline %q: %w", pipeline, err)
	}
	s.mu.Lock()
	s.locks[conn] = struct{}{}
	if s.fences == nil {
		s.fences = map[string]*fence{}
	}
	f := &fence{conn: conn, token: token}
	s.fences[pipeline] = f
	s.mu.Unlock()

	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			err = s.unlock(conn, key, pipeline)
		})
		return err
	}, nil
}

// takeFence advances pipeline's fencing token on the session that just
// took its lock, in a transaction holding the pipeline's commit lock (so
// that it orders with every commit), and returns the new token.
func takeFence(ctx context.Context, conn *pgxpool.Conn, schema, pipeline string) (int64, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("take fencing token: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, AdvisoryKey(schema, "commit", pipeline)); err != nil {
		return 0, fmt.Errorf("take fencing token: %w", err)
	}
	var token int64
	if err := tx.QueryRow(ctx, `INSERT INTO fences (pipeline, token) VALUES ($1, 1)
		ON CONFLICT (pipeline) DO UPDATE SET token = fences.token + 1 RETURNING token`, pipeline).Scan(&token); err != nil {
		return 0, fmt.Errorf("take fencing token: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("take fencing token: %w", err)
	}
	return token, nil
}

// fenceOf returns the fence of pipeline's lock held by this store, nil
// when it holds none.
func (s *Store) fenceOf(pipeline string) *fence {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fences[pipeline]
}

// CheckLock implements state.LockChecker: when this store holds
// pipeline's lock, it asks the lock's session for the pipeline's fencing
// token. A session that ended (its lock is gone with it) or a token that
// moved on (a newer holder) is an error wrapping state.ErrFenced.
func (s *Store) CheckLock(ctx context.Context, pipeline string) error {
	f := s.fenceOf(pipeline)
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.fenceOf(pipeline) != f {
		return fmt.Errorf("pipeline %q: %w (unlocked)", pipeline, state.ErrFenced)
	}
	var token int64
	if err := f.conn.QueryRow(ctx, `SELECT token FROM fences WHERE pipeline = $1`, pipeline).Scan(&token); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("pipeline %q: %w: its session: %v", pipeline, state.ErrFenced, err)
	}
	if token != f.token {
		return fmt.Errorf("pipeline %q: %w: fencing token %d, the lock's newest is %d", pipeline, state.ErrFenced, f.token, token)
	}
	return nil
}

// unlock releases pipeline's lock held on conn and returns conn to the
// pool. When the unlock cannot be confirmed the connection is closed
// instead, which ends the session and so the lock.
func (s *Store) unlock(conn *pgxpool.Conn, key int64, pipeline string) error {
	s.mu.Lock()
	_, held := s.locks[conn]
	delete(s.locks, conn)
	if f := s.fences[pipeline]; f != nil && f.conn == conn {
		delete(s.fences, pipeline)
	}
	s.mu.Unlock()
	if !held { // Close already ended the session
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var released bool
	err := conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1)`, key).Scan(&released)
	if err == nil && !released {
		err = errors.New("lock was not held by this session")
	}
	if err != nil {
		_ = conn.Conn().Close(ctx)
		conn.Release()
		return fmt.Errorf("unlock pipeline %q: %w", pipeline, err)
	}
	conn.Release()
	return nil
}

// Close releases the pipeline locks still held and closes their
// connections and, for a Store made by Open, closes the pool. Calling it again
// returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	held := s.locks
	s.locks = map[*pgxpool.Conn]struct{}{}
	s.fences = nil
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for conn := range held {
		// Unlock first so the lock is free when Close returns; closing the
		// connection alone frees it only once the server notices.
		_, _ = conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
		_ = conn.Conn().Close(ctx)
		conn.Release()
	}
	if s.ownPool {
		s.pool.Close()
	}
	return nil
}

// nowTime is the store's clock truncated to Postgres' microseconds, in UTC.
func (s *Store) nowTime() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// SchemaExists reports whether schema exists in the database at dsn,
// creating nothing: commands that only read state use it to answer "never
// run" without creating a schema. Errors name the schema, never the DSN.
func SchemaExists(ctx context.Context, dsn, schema string) (bool, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return false, fmt.Errorf("parse connection string: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, fmt.Errorf("schema %q: %w", schema, err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		return false, fmt.Errorf("schema %q: %w", schema, err)
	}
	return exists, nil
}
