package postgres

import (
	"context"
	"embed"
	"fmt"

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
// schema_migrations(version, applied_at) of the store's schema, each with
// its row, in one transaction that first takes the schema's migration
// advisory lock (AdvisoryKey(schema, "migrate", "")), so concurrent callers
// in any number of processes apply each version once. It is a no-op when
// all are applied, and fails when the schema has a version this binary does
// not know (a newer kgsync migrated it).
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	schema, err := s.schemaName(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate schema %q: begin: %w", schema, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, AdvisoryKey(schema, "migrate", "")); err != nil {
		return fmt.Errorf("migrate schema %q: lock: %w", schema, err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    BIGINT      PRIMARY KEY,
		applied_at TIMESTAMPTZ NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate schema %q: create schema_migrations: %w", schema, err)
	}
	var applied int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&applied); err != nil {
		return fmt.Errorf("migrate schema %q: read schema_migrations: %w", schema, err)
	}
	pending, err := state.Pending(ms, applied)
	if err != nil {
		return fmt.Errorf("migrate: schema %q is %w", schema, err)
	}
	for _, m := range pending {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate schema %q: apply %s: %w", schema, m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`,
			m.Version, s.nowTime()); err != nil {
			return fmt.Errorf("migrate schema %q: record %s: %w", schema, m.Name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate schema %q: commit: %w", schema, err)
	}
	return nil
}
