package memgraph

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/kgsync/kgsync/sink"
)

// dropRemovedVectorIndexes drops the vector indexes of existing (the
// server's, as SHOW VECTOR INDEX INFO listed them before Ensure) that are
// on one of schema's labels and that schema no longer has: an attribute
// removed from the model or renamed leaves its index behind otherwise
// (the pipeline removes the attribute's vectors from its nodes). An index
// under which another pipeline's nodes hold vectors (sink.Dialect
// CountVectors) is that pipeline's too and is kept, as is one on a label
// and property schema indexes under another name (Ensure replaced it).
func (s *Sink) dropRemovedVectorIndexes(ctx context.Context, schema sink.Schema, existing []sink.VectorIndex,
	run func(sink.Statement) ([]string, [][]any, error),
) error {
	labels := map[string]bool{}
	for _, ix := range schema.Indexes {
		labels[ix.Label] = true
	}
	for _, vi := range schema.VectorIndexes {
		labels[vi.Label] = true
	}
	for _, old := range existing {
		if !labels[old.Label] || slices.ContainsFunc(schema.VectorIndexes, func(vi sink.VectorIndex) bool { return vi.Displaces(old) }) {
			continue
		}
		st, err := s.d.CountVectors(old.Label, old.Property, s.cfg.Pipeline)
		if err != nil {
			return fmt.Errorf("memgraph ensure: %w", err)
		}
		_, rows, err := run(st)
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			continue
		}
		drop, err := s.d.DropVectorIndex(old.Name)
		if err != nil {
			return fmt.Errorf("memgraph ensure: %w", err)
		}
		if _, _, err := run(drop); err != nil {
			return err
		}
		s.logger.InfoContext(ctx, "dropped vector index the model no longer has", slog.String("index", old.Name),
			slog.String("label", old.Label), slog.String("property", old.Property))
	}
	return nil
}
