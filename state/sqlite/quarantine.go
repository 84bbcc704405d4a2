package sqlite

import (
	"context"
	"fmt"

	"github.com/kgsync/kgsync/state"
)

// QuarantinePut implements state.Store.
func (s *Store) QuarantinePut(ctx context.Context, pipeline string, runID int64, qs []state.Quarantined) error {
	if len(qs) == 0 {
		return nil
	}
	now := micros(s.nowTime())
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("quarantine in %q: %w", pipeline, err)
	}
	defer func() { _ = tx.Rollback() }()
	st, err := tx.PrepareContext(ctx, `INSERT INTO quarantine (pipeline, source, "key", stage, error, first_at, last_at, attempts, run_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)
		ON CONFLICT (pipeline, source, "key") DO UPDATE SET stage = excluded.stage, error = excluded.error,
			last_at = excluded.last_at, attempts = quarantine.attempts + 1, run_id = excluded.run_id`)
	if err != nil {
		return fmt.Errorf("quarantine in %q: %w", pipeline, err)
	}
	defer st.Close()
	for _, q := range qs {
		if _, err := st.ExecContext(ctx, pipeline, q.Source, q.Key, q.Stage, q.Error, now, now, runID); err != nil {
			return fmt.Errorf("quarantine %s/%s in %q: %w", q.Source, q.Key, pipeline, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("quarantine in %q: %w", pipeline, err)
	}
	return nil
}

// QuarantineRelease implements state.Store.
func (s *Store) QuarantineRelease(ctx context.Context, pipeline string, refs []state.RecordRef) error {
	if len(refs) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("release quarantine in %q: %w", pipeline, err)
	}
	defer func() { _ = tx.Rollback() }()
	st, err := tx.PrepareContext(ctx, `DELETE FROM quarantine WHERE pipeline = ? AND source = ? AND "key" = ?`)
	if err != nil {
		return fmt.Errorf("release quarantine in %q: %w", pipeline, err)
	}
	defer st.Close()
	for _, r := range refs {
		if _, err := st.ExecContext(ctx, pipeline, r.Source, r.Key); err != nil {
			return fmt.Errorf("release %s/%s in %q: %w", r.Source, r.Key, pipeline, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("release quarantine in %q: %w", pipeline, err)
	}
	return nil
}

// QuarantineList implements state.Store.
func (s *Store) QuarantineList(ctx context.Context, pipeline string) ([]state.Quarantined, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT pipeline, source, "key", stage, error, first_at, last_at, attempts, run_id
		FROM quarantine WHERE ? = '' OR pipeline = ? ORDER BY pipeline, source, "key"`, pipeline, pipeline)
	if err != nil {
		return nil, fmt.Errorf("list quarantine of %q: %w", pipeline, err)
	}
	defer rows.Close()
	var out []state.Quarantined
	for rows.Next() {
		var q state.Quarantined
		var first, last int64
		if err := rows.Scan(&q.Pipeline, &q.Source, &q.Key, &q.Stage, &q.Error, &first, &last, &q.Attempts, &q.RunID); err != nil {
			return nil, fmt.Errorf("list quarantine of %q: %w", pipeline, err)
		}
		q.FirstAt, q.LastAt = fromMicros(first), fromMicros(last)
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list quarantine of %q: %w", pipeline, err)
	}
	return out, nil
}
