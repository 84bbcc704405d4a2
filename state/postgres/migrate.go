package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// migrationFS holds the versioned migrations, migration/NNN_name.up.sql.
//
//go:embed migration/*.up.sql
var migrationFS embed.FS

// migration is one embedded migration file.
type migration struct {
	Version int64
	Name    string // file name, for errors
	SQL     string
}

// migrations returns the embedded migrations ordered by version. Versions
// must be unique.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migration/*.up.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	var out []migration
	seen := map[int64]string{}
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNN_name.up.sql with NNN > 0", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migration %s: version %d already used by %s", name, v, prev)
		}
		seen[v] = name
		b, err := migrationFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		out = append(out, migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
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
	if last := ms[len(ms)-1].Version; applied > last {
		return fmt.Errorf("migrate: schema %q is at version %d, newer than this build's %d", schema, applied, last)
	}
	for _, m := range ms {
		if m.Version <= applied {
			continue
		}
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
