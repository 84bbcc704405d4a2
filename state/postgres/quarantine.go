package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kgsync/kgsync/state"
)

// QuarantinePut implements state.Store.
func (s *Store) QuarantinePut(ctx context.Context, pipeline string, runID int64, qs []state.Quarantined) error {
	if len(qs) == 0 {
		return nil
	}
	now := s.nowTime()
	b := &pgx.Batch{}
	for _, q := range qs {
		b.Queue(`INSERT INTO quarantine (pipeline, source, key, stage, error, first_at, last_at, attempts, run_id)
			VALUES ($1, $2, $3, $4, $5, $6, $6, 1, $7)
			ON CONFLICT (pipeline, source, key) DO UPDATE SET stage = excluded.stage, error = excluded.error,
				last_at = excluded.last_at, attempts = quarantine.attempts + 1, run_id = excluded.run_id`,
			pipeline, q.Source, q.Key, q.Stage, q.Error, now, runID)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("quarantine in %q: %w", pipeline, err)
	}
	return nil
}

// QuarantineRelease implements state.Store.
func (s *Store) QuarantineRelease(ctx context.Context, pipeline string, refs []state.RecordRef) error {
	if len(refs) == 0 {
		return nil
	}
	sources, keys := make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		sources[i], keys[i] = r.Source, r.Key
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM quarantine q USING unnest($2::text[], $3::text[]) AS r(source, key)
		WHERE q.pipeline = $1 AND q.source = r.source AND q.key = r.key`, pipeline, sources, keys); err != nil {
		return fmt.Errorf("release quarantine in %q: %w", pipeline, err)
	}
	return nil
}

// QuarantineList implements state.Store.
func (s *Store) QuarantineList(ctx context.Context, pipeline string) ([]state.Quarantined, error) {
	rows, err := s.pool.Query(ctx, `SELECT pipeline, source, key, stage, error, first_at, last_at, attempts, run_id
		FROM quarantine WHERE $1 = '' OR pipeline = $1 ORDER BY pipeline, source, key`, pipeline)
	if err != nil {
		return nil, fmt.Errorf("list quarantine of %q: %w", pipeline, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (state.Quarantined, error) {
		var q state.Quarantined
		err := row.Scan(&q.Pipeline, &q.Source, &q.Key, &q.Stage, &q.Error, &q.FirstAt, &q.LastAt, &q.Attempts, &q.RunID)
		q.FirstAt, q.LastAt = q.FirstAt.UTC(), q.LastAt.UTC()
		return q, err
	})
	if err != nil {
		return nil, fmt.Errorf("list quarantine of %q: %w", pipeline, err)
	}
	return out, nil
}
