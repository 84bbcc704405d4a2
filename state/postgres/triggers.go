package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kgsync/kgsync/state"
)

var _ state.TriggerQueue = (*Store)(nil)

const triggerColumns = `id, pipeline, mode, reason, created_at, claimed_at, run_id, done_at`

// scanTrigger reads one row of triggerColumns.
func scanTrigger(row pgx.Row) (state.QueuedTrigger, error) {
	var (
		t               state.QueuedTrigger
		reason          string
		claimed, doneAt *time.Time
	)
	if err := row.Scan(&t.ID, &t.Pipeline, &t.Mode, &reason, &t.CreatedAt, &claimed, &t.RunID, &doneAt); err != nil {
		return state.QueuedTrigger{}, err
	}
	t.Reason = state.Trigger(reason)
	t.CreatedAt = t.CreatedAt.UTC()
	if claimed != nil {
		t.ClaimedAt = claimed.UTC()
	}
	if doneAt != nil {
		t.DoneAt = doneAt.UTC()
	}
	return t, nil
}

// TriggerAdd inserts a pending trigger of pipeline.
func (s *Store) TriggerAdd(ctx context.Context, pipeline, mode string, reason state.Trigger) (state.QueuedTrigger, error) {
	if pipeline == "" {
		return state.QueuedTrigger{}, errors.New("add trigger: empty pipeline name")
	}
	t, err := scanTrigger(s.pool.QueryRow(ctx,
		`INSERT INTO triggers (pipeline, mode, reason, created_at) VALUES ($1, $2, $3, $4) RETURNING `+triggerColumns,
		pipeline, mode, string(reason), s.nowTime()))
	if err != nil {
		return state.QueuedTrigger{}, fmt.Errorf("add trigger of %q: %w", pipeline, err)
	}
	return t, nil
}

// TriggerClaim claims every trigger of pipeline not done, oldest first. It
// is one UPDATE, so two concurrent callers never both get a trigger that
// neither had claimed before; callers hold the pipeline's lock anyway.
func (s *Store) TriggerClaim(ctx context.Context, pipeline string) ([]state.QueuedTrigger, error) {
	rows, err := s.pool.Query(ctx,
		`UPDATE triggers SET claimed_at = $2 WHERE pipeline = $1 AND done_at IS NULL RETURNING `+triggerColumns,
		pipeline, s.nowTime())
	if err != nil {
		return nil, fmt.Errorf("claim triggers of %q: %w", pipeline, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (state.QueuedTrigger, error) { return scanTrigger(row) })
	if err != nil {
		return nil, fmt.Errorf("claim triggers of %q: %w", pipeline, err)
	}
	slices.SortFunc(out, func(a, b state.QueuedTrigger) int { return cmp.Compare(a.ID, b.ID) }) // RETURNING gives no order
	return out, nil
}

// TriggerDone marks ids done by runID; unknown ids are ignored.
func (s *Store) TriggerDone(ctx context.Context, ids []int64, runID int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `UPDATE triggers SET run_id = $2, done_at = $3 WHERE id = ANY($1)`,
		ids, runID, s.nowTime()); err != nil {
		return fmt.Errorf("mark %d triggers done by run %d: %w", len(ids), runID, err)
	}
	return nil
}

// TriggerGet returns the trigger with id or state.ErrNotFound.
func (s *Store) TriggerGet(ctx context.Context, id int64) (state.QueuedTrigger, error) {
	t, err := scanTrigger(s.pool.QueryRow(ctx, `SELECT `+triggerColumns+` FROM triggers WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return state.QueuedTrigger{}, fmt.Errorf("get trigger %d: %w", id, state.ErrNotFound)
	}
	if err != nil {
		return state.QueuedTrigger{}, fmt.Errorf("get trigger %d: %w", id, err)
	}
	return t, nil
}

// TriggerPending lists the pipelines with triggers not done, sorted.
func (s *Store) TriggerPending(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT pipeline FROM triggers WHERE done_at IS NULL ORDER BY pipeline`)
	if err != nil {
		return nil, fmt.Errorf("list pending triggers: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list pending triggers: %w", err)
	}
	return out, nil
}
