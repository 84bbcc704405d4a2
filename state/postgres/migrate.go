package postgres

import (
	"context"
	"embed"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/kgsync/kgsync/state"
)

// migrationFS holds the versioned migrations, migration/NNN_name.up.sql.
//
//go:embed migration/*.up.sql
var migrationFS embed.FS

// discardLogger silences River's migrator, which logs each version at info.
var discardLogger = slog.New(slog.DiscardHandler)

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
// not know (a newer kgsync migrated it). Then it applies River's
// migrations (river_migration records them) in the same schema, holding
// the same lock as a session lock: River runs each of its migrations in a
// transaction of its own, since some add enum values a later one uses.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.migrateState(ctx); err != nil {
		return err
	}
	return s.migrateRiver(ctx)
}

func (s *Store) migrateState(ctx context.Context) error {
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
	rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return fmt.Errorf("migrate schema %q: read schema_migrations: %w", schema, err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
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

// migrateRiver applies River's pending migrations (rivermigrate, line
// "main") to the store's schema under the schema's migration lock.
func (s *Store) migrateRiver(ctx context.Context) error {
	schema, err := s.schemaName(ctx)
	if err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate river in schema %q: acquire connection: %w", schema, err)
	}
	defer conn.Release()
	key := AdvisoryKey(schema, "migrate", "")
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		return fmt.Errorf("migrate river in schema %q: lock: %w", schema, err)
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, key); err != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx)) // ends the session and with it the lock
		}
	}()
	m, err := rivermigrate.New(riverpgxv5.New(s.pool), &rivermigrate.Config{Schema: schema, Logger: discardLogger})
	if err != nil {
		return fmt.Errorf("migrate river in schema %q: %w", schema, err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate river in schema %q: %w", schema, err)
	}
	return nil
}
