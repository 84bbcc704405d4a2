package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/sqlite"
	"github.com/kgsync/kgsync/state/statetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens a store at path and closes it when the test ends.
func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T) state.Store {
		return open(t, filepath.Join(t.TempDir(), "state.db"))
	})
}

func TestOpenCreatesDirectoriesAndWAL(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a", "b?c#d", "state.db")
	s := open(t, path)
	require.FileExists(t, path)
	// WAL mode keeps a -wal file next to the database while it is open.
	_, err := s.RunOpen(t.Context(), "p", state.TriggerManual)
	require.NoError(t, err)
	require.FileExists(t, path+"-wal")
}

func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := sqlite.Open(t.Context(), path)
	require.NoError(t, err)
	require.NoError(t, s.Commit(t.Context(), state.Commit{Pipeline: "p",
		Records: []state.Record{{Source: "s", Key: "k", Hash: 1<<63 + 9}}}))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "close twice is harmless")

	s2 := open(t, path)
	recs, err := s2.RecordList(t.Context(), "p", "s")
	require.NoError(t, err)
	require.Equal(t, uint64(1<<63+9), recs["k"].Hash)
}

func TestLockAcrossHandles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	a, b := open(t, path), open(t, path)
	unlock, err := a.Lock(t.Context(), "faq")
	require.NoError(t, err)
	require.FileExists(t, path+".faq.lock")
	_, err = b.Lock(t.Context(), "faq")
	require.ErrorIs(t, err, state.ErrLocked)
	require.NoError(t, unlock())
	unlockB, err := b.Lock(t.Context(), "faq")
	require.NoError(t, err)

	// Closing a store releases what it holds.
	require.NoError(t, b.Close())
	_, err = a.Lock(t.Context(), "faq")
	require.NoError(t, err)
	require.NoError(t, unlockB(), "unlock after close is harmless")
}

func TestLockFileNameEscaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, filepath.Join(dir, "state.db"))
	unlock, err := s.Lock(t.Context(), "../x y")
	require.NoError(t, err)
	defer func() { require.NoError(t, unlock()) }()
	// '/' is %2F and ' ' is %20, so the file stays in dir.
	require.FileExists(t, filepath.Join(dir, "state.db...%2Fx%20y.lock"))
	entries, err := os.ReadDir(filepath.Dir(dir))
	require.NoError(t, err)
	for _, e := range entries {
		require.NotContains(t, e.Name(), "x y")
	}
}

// TestMigrateConcurrentHandles: two handles (two connections, as two
// processes would have) opening and migrating a fresh file at once both
// succeed. The first connection switches a fresh file to WAL, which
// answered SQLITE_BUSY at once, without waiting, to a handle opening
// meanwhile (a few opens in a hundred); 30 rounds make that show.
func TestMigrateConcurrentHandles(t *testing.T) {
	t.Parallel()
	for round := range 30 {
		path := filepath.Join(t.TempDir(), "state.db")
		errs := make(chan error, 2)
		stores := make(chan *sqlite.Store, 2)
		for range 2 {
			go func() {
				s, err := sqlite.Open(context.Background(), path)
				errs <- err
				stores <- s
			}()
		}
		for range 2 {
			require.NoError(t, <-errs, "round %d", round)
			s := <-stores
			require.NoError(t, s.Close())
		}
	}
}

// tables returns the names of the tables in the database at path.
func tables(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		out = append(out, n)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestOpenLeavesRiverToTheJobQueue: Open creates kgsync's tables and not
// River's; MigrateJobs adds River's (twice is harmless, and from two
// handles at once), and so does Migrate on a fresh file.
func TestOpenLeavesRiverToTheJobQueue(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	opened := tables(t, path)
	require.Contains(t, opened, "records")
	require.Contains(t, opened, "sync_generations")
	require.NotContains(t, opened, "river_migration")
	require.NotContains(t, opened, "river_job")

	s2 := open(t, path)
	errs := make(chan error, 2)
	for _, st := range []*sqlite.Store{s, s2} {
		go func() { errs <- st.MigrateJobs(ctx) }()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	require.NoError(t, s.MigrateJobs(ctx))
	jobs := tables(t, path)
	require.Contains(t, jobs, "river_migration")
	require.Contains(t, jobs, "river_job")
	require.Subset(t, jobs, opened)

	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	var versions int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM river_migration WHERE line = 'main'`).Scan(&versions))
	require.Positive(t, versions)

	fresh := filepath.Join(t.TempDir(), "state.db")
	f := open(t, fresh)
	require.NoError(t, f.Migrate(ctx))
	require.Equal(t, jobs, tables(t, fresh))
}

// TestMigrateRefusesNewerDatabase: a database a newer build migrated is not
// touched; the error names the file and both versions.
func TestMigrateRefusesNewerDatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := sqlite.Open(context.Background(), path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	_, err = sqlite.Open(context.Background(), path)
	require.ErrorContains(t, err, "migrate: database "+path+" is at version 999, which this build (last version ")
}

// TestMigrateAppliesAVersionBelowTheHighest: a database that records
// versions above a migration it lacks (a build whose migrations landed in
// another order migrated it) gets that migration on the next open.
func TestMigrateAppliesAVersionBelowTheHighest(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := sqlite.Open(context.Background(), path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec(`DROP TABLE link_docs; DELETE FROM schema_migrations WHERE version = 52`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s, err = sqlite.Open(context.Background(), path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	db, err = sql.Open("sqlite", path)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'link_docs'`).Scan(&n))
	require.Equal(t, 1, n, "052_link_docs applied again")
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM schema_migrations WHERE version = 52`).Scan(&n))
	require.Equal(t, 1, n)
}

// BenchmarkCommitTableRows1000: a first sync's batch of 1,000 new table
// rows with their lexical rows (statetest.BenchCommitTableRows1000).
func BenchmarkCommitTableRows1000(b *testing.B) {
	statetest.BenchCommitTableRows1000(b, open(b, filepath.Join(b.TempDir(), "state.db")))
}

// BenchmarkRecordKeysWithPrefix: the stored children of 1,000 listed
// records among 20,000 (statetest.BenchRecordKeysWithPrefix).
func BenchmarkRecordKeysWithPrefix(b *testing.B) {
	statetest.BenchRecordKeysWithPrefix(b, open(b, filepath.Join(b.TempDir(), "state.db")))
}

func BenchmarkCommit1000(b *testing.B) {
	statetest.BenchCommit1000(b, open(b, filepath.Join(b.TempDir(), "state.db")))
}

func BenchmarkEmbeddingsGet1000(b *testing.B) {
	statetest.BenchEmbeddingsGet1000(b, open(b, filepath.Join(b.TempDir(), "state.db")))
}

// BenchmarkLexicalReplace4000: 4,000 stored lexical rows replaced by one
// commit (statetest.BenchLexicalReplace4000).
func BenchmarkLexicalReplace4000(b *testing.B) {
	statetest.BenchLexicalReplace4000(b, open(b, filepath.Join(b.TempDir(), "state.db")))
}

// BenchmarkLexicalEdit: the lexical index update of one edited paragraph
// (statetest.BenchLexicalEdit).
func BenchmarkLexicalEdit(b *testing.B) {
	statetest.BenchLexicalEdit(b, open(b, filepath.Join(b.TempDir(), "state.db")))
}

// TestMigrateKeepsRecordsOfVersion2: a database written before records
// became a rowid table (migrations 001 and 002 only) keeps every record,
// with Ord 0, and takes new ones.
func TestMigrateKeepsRecordsOfVersion2(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	for _, f := range []string{"001_init.up.sql", "002_triggers.up.sql"} {
		b, err := os.ReadFile(filepath.Join("migration", f))
		require.NoError(t, err)
		_, err = db.Exec(string(b))
		require.NoError(t, err)
	}
	_, err = db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL);
		INSERT INTO schema_migrations VALUES (1, 0), (2, 0);
		INSERT INTO records (pipeline, source, "key", hash, fingerprint, anchor, props, updated_at)
		VALUES ('p', 's', 'b', -2, 7, 'x', CAST('{"b":1}' AS BLOB), 1), ('p', 's', 'a', 1, 7, 'x', NULL, 1);
		INSERT INTO chunks VALUES ('p', 's', 'a', 'c1', 5, 6, 0, NULL);`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s := open(t, path)
	got, err := s.RecordList(t.Context(), "p", "s")
	require.NoError(t, err)
	require.Equal(t, map[string]state.Record{
		"a": {Pipeline: "p", Source: "s", Key: "a", Hash: 1, Fingerprint: 7, Anchor: "x"},
		"b": {Pipeline: "p", Source: "s", Key: "b", Hash: uint64(1<<64 - 2), Fingerprint: 7, Anchor: "x", Props: []byte(`{"b":1}`)},
	}, got)
	n, err := s.ChunkCount(t.Context(), "p")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	// The key stays unique: an upsert of "a" replaces it.
	require.NoError(t, s.Commit(t.Context(), state.Commit{Pipeline: "p", Records: []state.Record{{Source: "s", Key: "a", Hash: 9, Fingerprint: 7, Ord: 3}}}))
	got, err = s.RecordList(t.Context(), "p", "s")
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, uint64(9), got["a"].Hash)
	require.Equal(t, int64(3), got["a"].Ord)
}

// TestMigrateFindsLexicalRowsByRecordID: lexical rows written before
// 080_lexical_record_id are found through their record afterwards (search,
// an edit's delete, a record delete); a row of a record state does not
// hold is dropped with its FTS5 entry, and 100_lexical_stats counts the
// rows left.
func TestMigrateFindsLexicalRowsByRecordID(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join("migration", "*.up.sql"))
	require.NoError(t, err)
	for _, f := range files {
		if filepath.Base(f) >= "080" {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		_, err = db.Exec(string(b))
		require.NoError(t, err, f)
		v, err := strconv.Atoi(filepath.Base(f)[:3])
		require.NoError(t, err)
		_, err = db.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL);
			INSERT INTO schema_migrations VALUES (?, 0)`, v)
		require.NoError(t, err)
	}
	_, err = db.Exec(`INSERT INTO records (pipeline, source, "key", hash, fingerprint, anchor, props, updated_at)
		VALUES ('p', 'docs', 'b.txt', 2, 7, '', NULL, 1), ('p', 'docs', 'a.txt', 1, 7, '', NULL, 1);
		INSERT INTO lexical VALUES (1, 'p', 'docs', 'a.txt', 'a#0', 'chunk', 2), (2, 'p', 'docs', 'a.txt', 'a#1', 'chunk', 1),
			(3, 'p', 'docs', 'b.txt', 'b#0', 'chunk', 2), (4, 'p', 'docs', 'gone.txt', 'g#0', 'chunk', 1);
		INSERT INTO lexical_fts (rowid, text) VALUES (1, 'proxi header'), (2, 'proxi'), (3, 'header field'), (4, 'proxi');`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s := open(t, path)
	search := func() []string {
		_, ms, err := s.LexicalSearch(t.Context(), "p", state.LexicalChunk, []string{"proxi", "header"})
		require.NoError(t, err)
		var out []string
		for _, m := range ms {
			out = append(out, m.RecordKey+"/"+m.ID)
		}
		slices.Sort(out)
		return out
	}
	require.Equal(t, []string{"a.txt/a#0", "a.txt/a#1", "b.txt/b#0"}, search(), "the row of gone.txt is dropped")
	// 100_lexical_stats counts the rows left.
	st, _, err := s.LexicalSearch(t.Context(), "p", state.LexicalChunk, nil)
	require.NoError(t, err)
	require.Equal(t, 3, st.Rows)
	require.Equal(t, int64(2+1+2), st.TotalLen)
	n, err := s.LexicalCount(t.Context(), "p", "")
	require.NoError(t, err)
	require.Equal(t, 3, n)

	require.NoError(t, s.Commit(t.Context(), state.Commit{Pipeline: "p",
		LexicalDeletes: []state.LexicalRef{{Source: "docs", RecordKey: "a.txt", ID: "a#1"}},
		LexicalUpserts: []state.LexicalRow{{LexicalRef: state.LexicalRef{Source: "docs", RecordKey: "b.txt", ID: "b#0"}, Kind: state.LexicalChunk, Text: "field"}}}))
	require.Equal(t, []string{"a.txt/a#0"}, search())
	require.NoError(t, s.Commit(t.Context(), state.Commit{Pipeline: "p", DeleteRecords: []state.RecordRef{{Source: "docs", Key: "a.txt"}}}))
	require.Empty(t, search())
	n, err = s.LexicalCount(t.Context(), "p", "")
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// BenchmarkEmbeddingsPut1000: 1,000 new 32-dimension vectors
// (statetest.BenchEmbeddingsPut1000).
func BenchmarkEmbeddingsPut1000(b *testing.B) {
	statetest.BenchEmbeddingsPut1000(b, open(b, filepath.Join(b.TempDir(), "state.db")))
}

// BenchmarkEmbeddingsGetMiss1000: 1,000 hashes none of which is cached
// (statetest.BenchEmbeddingsGetMiss1000).
func BenchmarkEmbeddingsGetMiss1000(b *testing.B) {
	statetest.BenchEmbeddingsGetMiss1000(b, open(b, filepath.Join(b.TempDir(), "state.db")))
}

// TestLexicalIndexMergesSixteenSegments: a new state's FTS5 index merges
// 16 segments of a level at a time (090_lexical_automerge), a setting
// FTS5 keeps in its config table, so every connection uses it.
func TestLexicalIndexMergesSixteenSegments(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	var v int
	require.NoError(t, db.QueryRow(`SELECT v FROM lexical_fts_config WHERE k = 'automerge'`).Scan(&v))
	require.Equal(t, 16, v)
}
