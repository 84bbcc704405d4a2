package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/kgsync/kgsync/state"
)

var _ state.JobGenerations = (*Store)(nil)

// DB returns the store's database handle (one open connection). The
// daemon runs River on it through riversqlite (daemon/jobs.go), so River's
// queries queue for the same connection as the store's.
func (s *Store) DB() *sql.DB { return s.db }

// Generation returns pipeline's job generation from sync_generations, 0
// when it has no row yet.
func (s *Store) Generation(ctx context.Context, pipeline string) (int64, error) {
	var g int64
	err := s.db.QueryRowContext(ctx, `SELECT generation FROM sync_generations WHERE pipeline = ?`, pipeline).Scan(&g)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read job generation of %q: %w", pipeline, err)
	}
	return g, nil
}

// AdvanceGeneration moves pipeline's generation from from to from+1 in one
// statement (a missing row counts as generation 0).
func (s *Store) AdvanceGeneration(ctx context.Context, pipeline string, from int64) (bool, error) {
	if pipeline == "" {
		return false, errors.New("advance job generation: empty pipeline name")
	}
	var res sql.Result
	var err error
	if from == 0 {
		res, err = s.db.ExecContext(ctx, `INSERT INTO sync_generations (pipeline, generation) VALUES (?, 1)
			ON CONFLICT (pipeline) DO UPDATE SET generation = 1 WHERE sync_generations.generation = 0`, pipeline)
	} else {
		res, err = s.db.ExecContext(ctx, `UPDATE sync_generations SET generation = ? + 1 WHERE pipeline = ? AND generation = ?`, from, pipeline, from)
	}
	if err != nil {
		return false, fmt.Errorf("advance job generation of %q from %d: %w", pipeline, from, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("advance job generation of %q from %d: %w", pipeline, from, err)
	}
	return n == 1, nil
}
