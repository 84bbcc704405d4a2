package postgres_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kgsync/kgsync/internal/pgtest"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/postgres"
	"github.com/kgsync/kgsync/state/statetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens a store on dsn/schema and closes it when the test ends.
func open(t testing.TB, dsn, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, schema)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// newStore opens a store on a fresh schema of its own.
func newStore(t testing.TB) *postgres.Store {
	t.Helper()
	dsn, schema := pgtest.Schema(t)
	return open(t, dsn, schema)
}

func TestConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T) state.Store { return newStore(t) })
}

// migrationVersions lists schema's applied versions.
func migrationVersions(t *testing.T, schema string) []int64 {
	t.Helper()
	rows, err := pgtest.Connect(t).Query(context.Background(),
		`SELECT version FROM `+schema+`.schema_migrations ORDER BY version`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return out
}

// embeddedVersions are the versions of the migration files beside the
// store (migration/NNN_name.up.sql), ascending.
func embeddedVersions(t *testing.T) []int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("migration", "*.up.sql"))
	require.NoError(t, err)
	var out []int64
	for _, f := range files {
		n, err := strconv.ParseInt(strings.SplitN(filepath.Base(f), "_", 2)[0], 10, 64)
		require.NoError(t, err, f)
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// riverVersions returns the River migrations recorded in schema.
func riverVersions(t *testing.T, schema string) []int64 {
	t.Helper()
	rows, err := pgtest.Connect(t).Query(context.Background(),
		`SELECT version FROM `+schema+`.river_migration WHERE line = 'main' ORDER BY version`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return out
}

func TestOpenCreatesSchemaAndMigratesOnce(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	// pgtest created the schema; drop it so Open has to create it.
	_, err := pgtest.Connect(t).Exec(context.Background(), "DROP SCHEMA "+schema)
	require.NoError(t, err)
	s := open(t, dsn, schema)
	require.Equal(t, embeddedVersions(t), migrationVersions(t, schema))
	require.NoError(t, s.Migrate(t.Context()))
	require.Equal(t, embeddedVersions(t), migrationVersions(t, schema), "a second Migrate records nothing")
	river := riverVersions(t, schema)
	require.NotEmpty(t, river, "River's migrations run with kgsync's")
	require.Equal(t, int64(1), river[0])
	open(t, dsn, schema) // reopening an existing schema is fine
}

// TestMigrateAppliesAVersionBelowTheHighest: a schema that records
// versions above a migration it lacks (migrated by a build whose
// migrations landed in another order) gets that migration on Migrate.
func TestMigrateAppliesAVersionBelowTheHighest(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	s := open(t, dsn, schema)
	_, err := pgtest.Connect(t).Exec(context.Background(),
		"DROP TABLE "+schema+".link_docs; DELETE FROM "+schema+".schema_migrations WHERE version = 52")
	require.NoError(t, err)
	require.NoError(t, s.Migrate(t.Context()))
	require.Equal(t, embeddedVersions(t), migrationVersions(t, schema))
	var n int
	require.NoError(t, pgtest.Connect(t).QueryRow(context.Background(),
		"SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = 'link_docs'", schema).Scan(&n))
	require.Equal(t, 1, n, "052_link_docs applied again")
}

func TestMigrateInParallel(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	// Several processes' worth of pools racing to migrate one new schema.
	const n = 4
	errs := make(chan error, n)
	stores := make(chan *postgres.Store, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			s, err := postgres.Open(context.Background(), dsn, schema)
			stores <- s
			errs <- err
		}()
	}
	close(start)
	for range n {
		s := <-stores
		require.NoError(t, <-errs)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
	}
	require.Equal(t, embeddedVersions(t), migrationVersions(t, schema))
}

func TestNewUsesPoolSearchPath(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := postgres.New(pool)
	require.NoError(t, s.Migrate(t.Context()))
	require.Equal(t, embeddedVersions(t), migrationVersions(t, schema))
	require.NoError(t, s.Close())
	require.NoError(t, pool.Ping(t.Context()), "Close leaves a pool it did not open")
}

func TestLockAcrossStores(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	a, b := open(t, dsn, schema), open(t, dsn, schema)
	unlock, err := a.Lock(t.Context(), "faq")
	require.NoError(t, err)
	_, err = b.Lock(t.Context(), "faq")
	require.ErrorIs(t, err, state.ErrLocked)
	require.NoError(t, unlock())
	unlockB, err := b.Lock(t.Context(), "faq")
	require.NoError(t, err)
	require.NoError(t, unlockB())

	// The same pipeline in another schema is another lock.
	dsn2, schema2 := pgtest.Schema(t)
	other := open(t, dsn2, schema2)
	unlock, err = a.Lock(t.Context(), "faq")
	require.NoError(t, err)
	unlockOther, err := other.Lock(t.Context(), "faq")
	require.NoError(t, err)
	require.NoError(t, unlockOther())
	require.NoError(t, unlock())
}

// lockHolders returns the backend pids holding schema's lock of pipeline,
// found in pg_locks by the key's two halves as LockKey documents.
func lockHolders(t *testing.T, schema, pipeline string) []int32 {
	t.Helper()
	key := uint64(postgres.LockKey(schema, pipeline))
	rows, err := pgtest.Connect(t).Query(context.Background(),
		`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
		 AND classid::bigint = $1 AND objid::bigint = $2`, int64(key>>32), int64(key&0xffffffff))
	require.NoError(t, err)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(t, err)
	return pids
}

func TestLockReleasedWhenSessionDies(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	a, b := open(t, dsn, schema), open(t, dsn, schema)
	unlock, err := a.Lock(t.Context(), "faq")
	require.NoError(t, err)
	pids := lockHolders(t, schema, "faq")
	require.Len(t, pids, 1, "the lock is visible in pg_locks under LockKey")

	// The holder's session ends without unlock, as when its process is killed.
	var ok bool
	require.NoError(t, pgtest.Connect(t).QueryRow(context.Background(),
		`SELECT pg_terminate_backend($1, 5000)`, pids[0]).Scan(&ok)) // waits up to 5 s for the backend to exit
	require.True(t, ok)
	unlockB, err := b.Lock(t.Context(), "faq")
	require.NoError(t, err, "Postgres released the dead session's lock")
	require.Error(t, unlock(), "unlocking on a dead session reports it")
	require.NoError(t, unlockB())

	// Queries still work: the pool replaced the dead connection.
	_, err = a.RunOpen(t.Context(), "faq", state.TriggerManual)
	require.NoError(t, err)
}

func TestCloseWithoutUnlockReleasesLock(t *testing.T) {
	t.Parallel()
	dsn, schema := pgtest.Schema(t)
	a, b := open(t, dsn, schema), open(t, dsn, schema)
	unlock, err := a.Lock(t.Context(), "faq")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close blocked on the connection holding the lock")
	}
	unlockB, err := b.Lock(t.Context(), "faq")
	require.NoError(t, err)
	require.NoError(t, unlock(), "unlock after Close is harmless")
	require.NoError(t, unlockB())
	_, err = a.Lock(t.Context(), "other")
	require.Error(t, err, "a closed store takes no locks")
}

func TestAdvisoryKeyStable(t *testing.T) {
	// FNV-1a 64 of "kgsync\x00s\x00lock\x00p\x00", computed independently with
	// Python: h=0xcbf29ce484222325; for b in data: h=((h^b)*0x100000001b3)%2**64.
	require.Equal(t, uint64(0xb523910fccc133ec), uint64(postgres.LockKey("s", "p")))
	require.NotEqual(t, postgres.LockKey("s", "p"), postgres.LockKey("s2", "p"))
	require.NotEqual(t, postgres.LockKey("s", "p"), postgres.AdvisoryKey("s", "commit", "p"))
}

// BenchmarkCommitTableRows1000: a first sync's batch of 1,000 new table
// rows with their lexical rows (statetest.BenchCommitTableRows1000).
func BenchmarkCommitTableRows1000(b *testing.B) {
	statetest.BenchCommitTableRows1000(b, newStore(b))
}

// BenchmarkRecordKeysWithPrefix: the stored children of 1,000 listed
// records among 20,000 (statetest.BenchRecordKeysWithPrefix).
func BenchmarkRecordKeysWithPrefix(b *testing.B) {
	statetest.BenchRecordKeysWithPrefix(b, newStore(b))
}

func BenchmarkCommit1000(b *testing.B) {
	statetest.BenchCommit1000(b, newStore(b))
}

func BenchmarkEmbeddingsGet1000(b *testing.B) {
	statetest.BenchEmbeddingsGet1000(b, newStore(b))
}

func TestSchemaNameQuoted(t *testing.T) {
	t.Parallel()
	dsn, base := pgtest.Schema(t)
	schema := base + ` Mixed-Case "q"` // needs quoting in SQL and in search_path
	admin := pgtest.Connect(t)
	t.Cleanup(func() {
		_, err := admin.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		require.NoError(t, err)
	})
	s := open(t, dsn, schema)
	require.NoError(t, s.Commit(t.Context(), state.Commit{Pipeline: "p", Records: []state.Record{{Source: "s", Key: "k", Hash: 3}}}))
	var n int
	require.NoError(t, admin.QueryRow(context.Background(),
		`SELECT count(*) FROM `+pgx.Identifier{schema, "records"}.Sanitize()).Scan(&n))
	require.Equal(t, 1, n, "the tables live in the named schema")
}

// BenchmarkLexicalEdit: the lexical index update of one edited paragraph
// (statetest.BenchLexicalEdit).
func BenchmarkLexicalEdit(b *testing.B) {
	statetest.BenchLexicalEdit(b, newStore(b))
}
