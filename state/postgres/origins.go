package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RecordOriginsOf returns origin id -> key of a source's records in scope
// whose origin id is one of ids (state.OriginIndex), in one query through
// the records_origin index (= ANY($4)).
func (s *Store) RecordOriginsOf(ctx context.Context, pipeline, source, scope string, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	if scope == "" || len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT origin_id, key FROM records
		WHERE pipeline = $1 AND source = $2 AND origin_scope = $3 AND origin_scope <> '' AND origin_id = ANY($4)`,
		pipeline, source, scope, ids)
	if err == nil {
		var id int64
		var key string
		_, err = pgx.ForEachRow(rows, []any{&id, &key}, func() error { out[id] = key; return nil })
	}
	if err != nil {
		return nil, fmt.Errorf("origins of %q source %q scope %q: %w", pipeline, source, scope, err)
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
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(origin_id), 0) FROM records
		WHERE pipeline = $1 AND source = $2 AND origin_scope = $3 AND origin_scope <> ''`, pipeline, source, scope).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("largest origin of %q source %q scope %q: %w", pipeline, source, scope, err)
	}
	return id, nil
}
