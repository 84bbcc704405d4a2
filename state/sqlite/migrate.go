package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"log/slog"

	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/kgsync/kgsync/state"
)

// migrationFS holds the versioned migrations, migration/NNN_name.up.sql.
//
//go:embed migration/*.up.sql
var migrationFS embed.FS

// migrations returns the embedded migrations ordered by version.
func migrations() ([]state.Migration, error) {
	return state.ReadMigrations(migrationFS, "migration/*.up.sql")
}

// Migrate applies the embedded migrations not yet recorded in
// schema_migrations(version, applied_at), each with its row, and then
// River's (river_migration records them; see MigrateJobs), all in one
// IMMEDIATE transaction, so concurrent callers (other processes included)
// apply each version once. It is a no-op when all are applied, and fails
// when the database has a version this binary does not know (a newer
// kgsync migrated it).
func (s *Store) Migrate(ctx context.Context) error { return s.migrate(ctx, true, true) }

// MigrateJobs applies River's pending migrations (the job queue's tables,
// river_*) in one IMMEDIATE transaction. Open leaves them out: a sync or
// a plan never touches the job queue, and River's migrations are most of
// the cost of creating a state file (about 60 % of Open's CPU on a fresh
// file, measured); the daemon's job queue calls MigrateJobs before it
// starts River. A no-op when they are applied.
func (s *Store) MigrateJobs(ctx context.Context) error { return s.migrate(ctx, false, true) }

// migrate applies, in one IMMEDIATE transaction, kgsync's pending
// migrations (own) and River's (jobs).
func (s *Store) migrate(ctx context.Context, own, jobs bool) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if own {
		if err := s.migrateOwn(ctx, tx); err != nil {
			return err
		}
	}
	if jobs {
		rm, err := rivermigrate.New(riversqlite.New(s.db), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return fmt.Errorf("migrate river: %w", err)
		}
		if _, err := rm.MigrateTx(ctx, tx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("migrate river: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

// migrateOwn applies kgsync's pending migrations in tx.
func (s *Store) migrateOwn(ctx context.Context, tx *sql.Tx) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	pending, err := state.Pending(ms, applied)
	if err != nil {
		return fmt.Errorf("migrate: database %s is %w", s.path, err)
	}
	for _, m := range pending {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate: apply %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
			m.Version, micros(s.nowTime())); err != nil {
			return fmt.Errorf("migrate: record %s: %w", m.Name, err)
		}
	}
	return nil
}

// appliedVersions reads the versions schema_migrations records.
func appliedVersions(ctx context.Context, tx *sql.Tx) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
