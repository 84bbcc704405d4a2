package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kgsync/kgsync/state"
)

var _ state.JobGenerations = (*Store)(nil)

// Pool returns the store's connection pool; its Config gives the
// connection string and search_path of the store's schema, which the
// daemon uses to open River's own pool (daemon/jobs.go).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the schema the store works in, current_schema().
func (s *Store) Schema(ctx context.Context) (string, error) { return s.schemaName(ctx) }

// Generation returns pipeline's job generation from sync_generations, 0
// when it has no row yet.
func (s *Store) Generation(ctx context.Context, pipeline string) (int64, error) {
	var g int64
	err := s.pool.QueryRow(ctx, `SELECT generation FROM sync_generations WHERE pipeline = $1`, pipeline).Scan(&g)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read job generation of %q: %w", pipeline, err)
	}
	return g, nil
}

// AdvanceGeneration moves pipeline's generation from from to from+1 in one
// statement (a missing row counts as generation 0), so of two concurrent
// callers with the same from exactly one succeeds.
func (s *Store) AdvanceGeneration(ctx context.Context, pipeline string, from int64) (bool, error) {
	if pipeline == "" {
		return false, errors.New("advance job generation: empty pipeline name")
	}
	var tag interface{ RowsAffected() int64 }
	var err error
	if from == 0 {
		tag, err = s.pool.Exec(ctx, `INSERT INTO sync_generations (pipeline, generation) VALUES ($1, 1)
			ON CONFLICT (pipeline) DO UPDATE SET generation = 1 WHERE sync_generations.generation = 0`, pipeline)
	} else {
		tag, err = s.pool.Exec(ctx, `UPDATE sync_generations SET generation = $2 + 1 WHERE pipeline = $1 AND generation = $2`, pipeline, from)
	}
	if err != nil {
		return false, fmt.Errorf("advance job generation of %q from %d: %w", pipeline, from, err)
	}
	return tag.RowsAffected() == 1, nil
}
