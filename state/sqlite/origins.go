package sqlite

import (
	"context"
	"fmt"
	"strings"
)

// originIDsPerStatement is how many origin ids RecordOriginsOf lists in one
// IN (...).
const originIDsPerStatement = 500

// RecordOriginsOf returns origin id -> key of a source's records in scope
// whose origin id is one of ids (state.OriginIndex), through the
// records_origin index, originIDsPerStatement ids a query.
func (s *Store) RecordOriginsOf(ctx context.Context, pipeline, source, scope string, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	if scope == "" {
		return out, nil
	}
	for start := 0; start < len(ids); start += originIDsPerStatement {
		part := ids[start:min(start+originIDsPerStatement, len(ids))]
		args := make([]any, 0, len(part)+3)
		args = append(args, pipeline, source, scope)
		for _, id := range part {
			args = append(args, id)
		}
		q := `SELECT origin_id, "key" FROM records INDEXED BY records_origin
			WHERE pipeline = ? AND source = ? AND origin_scope = ? AND origin_scope <> '' AND origin_id IN (?` +
			strings.Repeat(",?", len(part)-1) + `)`
		if err := s.readOrigins(ctx, q, args, out); err != nil {
			return nil, fmt.Errorf("origins of %q source %q scope %q: %w", pipeline, source, scope, err)
		}
	}
	return out, nil
}

// MaxRecordOrigin returns the largest origin id of a source's records in
// scope, 0 when none (state.OriginIndex), from the end of the
// records_origin index.
func (s *Store) MaxRecordOrigin(ctx context.Context, pipeline, source, scope string) (int64, error) {
	if scope == "" {
		return 0, nil
	}
	var id int64
	err := s.rdb.QueryRowContext(ctx, `SELECT coalesce(max(origin_id), 0) FROM records INDEXED BY records_origin
		WHERE pipeline = ? AND source = ? AND origin_scope = ? AND origin_scope <> ''`, pipeline, source, scope).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("largest origin of %q source %q scope %q: %w", pipeline, source, scope, err)
	}
	return id, nil
}

func (s *Store) readOrigins(ctx context.Context, q string, args []any, out map[int64]string) error {
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var key string
		if err := rows.Scan(&id, &key); err != nil {
			return err
		}
		out[id] = key
	}
	return rows.Err()
}
