package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kgsync/kgsync/state"
)

var _ state.TriggerQueue = (*Store)(nil)

const triggerColumns = `id, pipeline, mode, reason, created_at, claimed_at, run_id, done_at`

// scanTrigger reads one row of triggerColumns.
func scanTrigger(row interface{ Scan(...any) error }) (state.QueuedTrigger, error) {
	var (
		t               state.QueuedTrigger
		reason          string
		created         int64
		claimed, doneAt sql.NullInt64
	)
	if err := row.Scan(&t.ID, &t.Pipeline, &t.Mode, &reason, &created, &claimed, &t.RunID, &doneAt); err != nil {
		return state.QueuedTrigger{}, err
	}
	t.Reason, t.CreatedAt = state.Trigger(reason), fromMicros(created)
	if claimed.Valid {
		t.ClaimedAt = fromMicros(claimed.Int64)
	}
	if doneAt.Valid {
		t.DoneAt = fromMicros(doneAt.Int64)
	}
	return t, nil
}

// TriggerAdd inserts a pending trigger of pipeline.
func (s *Store) TriggerAdd(ctx context.Context, pipeline, mode string, reason state.Trigger) (state.QueuedTrigger, error) {
	if pipeline == "" {
		return state.QueuedTrigger{}, errors.New("add trigger: empty pipeline name")
	}
	t, err := scanTrigger(s.db.QueryRowContext(ctx,
		`INSERT INTO triggers (pipeline, mode, reason, created_at) VALUES (?, ?, ?, ?) RETURNING `+triggerColumns,
		pipeline, mode, string(reason), micros(s.nowTime())))
	if err != nil {
		return state.QueuedTrigger{}, fmt.Errorf("add trigger of %q: %w", pipeline, err)
	}
	return t, nil
}

// TriggerClaim claims every trigger of pipeline not done, oldest first, in
// one UPDATE.
func (s *Store) TriggerClaim(ctx context.Context, pipeline string) ([]state.QueuedTrigger, error) {
	rows, err := s.db.QueryContext(ctx,
		`UPDATE triggers SET claimed_at = ? WHERE pipeline = ? AND done_at IS NULL RETURNING `+triggerColumns,
		micros(s.nowTime()), pipeline)
	if err != nil {
		return nil, fmt.Errorf("claim triggers of %q: %w", pipeline, err)
	}
	defer rows.Close()
	var out []state.QueuedTrigger
	for rows.Next() {
		t, err := scanTrigger(rows)
		if err != nil {
			return nil, fmt.Errorf("claim triggers of %q: %w", pipeline, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
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
	args := []any{runID, micros(s.nowTime())}
	for _, id := range ids {
		args = append(args, id)
	}
	q := `UPDATE triggers SET run_id = ?, done_at = ? WHERE id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
	if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("mark %d triggers done by run %d: %w", len(ids), runID, err)
	}
	return nil
}

// TriggerGet returns the trigger with id or state.ErrNotFound.
func (s *Store) TriggerGet(ctx context.Context, id int64) (state.QueuedTrigger, error) {
	t, err := scanTrigger(s.db.QueryRowContext(ctx, `SELECT `+triggerColumns+` FROM triggers WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return state.QueuedTrigger{}, fmt.Errorf("get trigger %d: %w", id, state.ErrNotFound)
	}
	if err != nil {
		return state.QueuedTrigger{}, fmt.Errorf("get trigger %d: %w", id, err)
	}
	return t, nil
}

// TriggerPending lists the pipelines with triggers not done, sorted.
func (s *Store) TriggerPending(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT pipeline FROM triggers WHERE done_at IS NULL ORDER BY pipeline`)
	if err != nil {
		return nil, fmt.Errorf("list pending triggers: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("list pending triggers: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list pending triggers: %w", err)
	}
	return out, nil
}
