package postgres

import (
	"context"
	"fmt"
)

// RecordOriginsOf returns origin id -> key of a source's records in scope
// whose origin id is one of ids (state.OriginIndex), in one query through
// the records_origin index (= ANY($4)).
func (s *Store) RecordOriginsOf(ctx context.Context, pipeline, source, scope string, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	if scope == "" || len(ids) == 0 {
		return out, nil
	}
	err := collectOrigins(ctx, s, out, `SELECT origin_id, key FROM records
		WHERE pipeline = $1 AND source = $2 AND origin_scope = $3 AND origin_scope <> '' AND origin_id = ANY($4)`,
		pipeline, source, scope, ids)
	if err != nil {
		return nil, fmt.Errorf("origins of %q source %q scope %q: %w", pipeline, source, scope, err)
	}
	return out, nil
}

// collectOrigins runs q (selecting origin id and key) and adds its rows
// to out.
func collectOrigins(ctx context.Context, s *Store, out map[int64]string, q string, args ...any) error {
	rows, err := s.pool.Query(ctx, q, args...)
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
