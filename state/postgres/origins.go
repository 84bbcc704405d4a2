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
