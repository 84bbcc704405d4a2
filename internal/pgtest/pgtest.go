// Package pgtest gives tests an isolated Postgres schema each. Postgres
// always runs where kgsync's tests run, so nothing here skips: an
// unreachable server fails the test with the address it tried.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDatabaseURL names the environment variable holding the test server's
// URL; DefaultDatabaseURL is used when it is unset.
const (
	EnvDatabaseURL     = "KGSYNC_TEST_DATABASE_URL"
	DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
)

// schemaPrefix starts every test schema's name; sweep drops old ones.
const schemaPrefix = "kgsync_test_"

// staleAfter is the age after which a test schema counts as left behind by
// a killed run: older than any test run, so schemas in use by parallel test
// binaries are never dropped.
const staleAfter = time.Hour

var (
	runStart  = time.Now() // the first part of schema names
	seq       atomic.Int64 // the last part, unique in this process
	sweepOnce sync.Once    // sweep runs once per test binary
	sweepErr  error        // sweep's outcome, reported by every Schema call
)

// DSN returns the test server's URL: $KGSYNC_TEST_DATABASE_URL, or
// DefaultDatabaseURL.
func DSN(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvDatabaseURL); u != "" {
		return u
	}
	return DefaultDatabaseURL
}

// Connect opens an administrative connection to the test server, closed
// when the test ends. It fails the test with the URL when Postgres is
// unreachable.
func Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	dsn := DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("pgtest: Postgres at %s (set %s to change) is unreachable: %v", dsn, EnvDatabaseURL, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// Schema creates an empty schema named kgsync_test_<unix start>_<pid>_<n>
// for this test and drops it (CASCADE) when the test ends, after cleanups
// registered later (such as closing a pool) have run. The first call in a
// process drops kgsync_test_* schemas whose start time is over an hour
// old. It returns the server URL and the schema name.
func Schema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = DSN(t)
	conn := Connect(t)
	ctx := context.Background()
	sweepOnce.Do(func() { sweepErr = sweep(ctx, conn, time.Now()) })
	if sweepErr != nil {
		t.Fatalf("pgtest: %v", sweepErr)
	}
	schema = fmt.Sprintf("%s%d_%d_%d", schemaPrefix, runStart.Unix(), os.Getpid(), seq.Add(1))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		// A fresh connection: the test may have broken or closed others.
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
			return
		}
		defer func() { _ = c.Close(ctx) }()
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	return dsn, schema
}

// sweep drops test schemas whose name says they were created more than
// staleAfter before now, left behind by test runs that were killed.
func sweep(ctx context.Context, conn *pgx.Conn, now time.Time) error {
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, schemaPrefix)
	if err != nil {
		return fmt.Errorf("list test schemas: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list test schemas: %w", err)
	}
	for _, name := range names {
		started, ok := schemaStart(name)
		if !ok || now.Sub(started) <= staleAfter {
			continue
		}
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			return fmt.Errorf("drop stale schema %s: %w", name, err)
		}
	}
	return nil
}

// schemaStart parses the start time out of a schema name made by Schema.
func schemaStart(name string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(name, schemaPrefix)
	if !ok {
		return time.Time{}, false
	}
	unix, _, ok := strings.Cut(rest, "_")
	if !ok {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(unix, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, 0), true
}
