package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kgsync/kgsync/state"
)

var _ state.ReviewStore = (*Store)(nil)

const reviewElementCols = `doc, element, row_id, expert, flagged, data`

func (s *Store) queryReviewElements(ctx context.Context, query string, args []any, fn func(state.ReviewElement)) error {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var e state.ReviewElement
		if err := rows.Scan(&e.Doc, &e.Element, &e.RowID, &e.Expert, &e.Flagged, &e.Data); err != nil {
			return err
		}
		fn(e)
	}
	return rows.Err()
}

// ReviewElements returns the stored elements of docs (state.ReviewStore).
func (s *Store) ReviewElements(ctx context.Context, pipeline string, docs []string) (map[string][]state.ReviewElement, error) {
	out := map[string][]state.ReviewElement{}
	if len(docs) == 0 {
		return out, nil
	}
	err := s.queryReviewElements(ctx, `SELECT `+reviewElementCols+` FROM review_elements WHERE pipeline = $1 AND doc = ANY($2) ORDER BY doc, element`,
		[]any{pipeline, docs}, func(e state.ReviewElement) { out[e.Doc] = append(out[e.Doc], e) })
	if err != nil {
		return nil, fmt.Errorf("review elements of %q: %w", pipeline, err)
	}
	return out, nil
}

// ReviewRows returns the stored elements with the given row ids.
func (s *Store) ReviewRows(ctx context.Context, pipeline string, ids []int64) (map[int64]state.ReviewElement, error) {
	out := map[int64]state.ReviewElement{}
	if len(ids) == 0 {
		return out, nil
	}
	err := s.queryReviewElements(ctx, `SELECT `+reviewElementCols+` FROM review_elements WHERE pipeline = $1 AND row_id <> 0 AND row_id = ANY($2)`,
		[]any{pipeline, ids}, func(e state.ReviewElement) { out[e.RowID] = e })
	if err != nil {
		return nil, fmt.Errorf("review rows of %q: %w", pipeline, err)
	}
	return out, nil
}

// ReviewExpert returns the elements with expert input or a flag.
func (s *Store) ReviewExpert(ctx context.Context, pipeline string) ([]state.ReviewElement, error) {
	var out []state.ReviewElement
	err := s.queryReviewElements(ctx, `SELECT `+reviewElementCols+` FROM review_elements WHERE pipeline = $1 AND (expert OR flagged) ORDER BY doc, element`,
		[]any{pipeline}, func(e state.ReviewElement) { out = append(out, e) })
	if err != nil {
		return nil, fmt.Errorf("review expert elements of %q: %w", pipeline, err)
	}
	return out, nil
}

// ReviewDocuments returns the named documents' rows, every one for nil.
func (s *Store) ReviewDocuments(ctx context.Context, pipeline string, docs []string) (map[string]state.ReviewDocument, error) {
	out := map[string]state.ReviewDocument{}
	q, args := `SELECT doc, row_id, pending, data FROM review_documents WHERE pipeline = $1`, []any{pipeline}
	if docs != nil {
		q, args = q+` AND doc = ANY($2)`, append(args, docs)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err == nil {
		defer rows.Close()
		for rows.Next() {
			var d state.ReviewDocument
			if err = rows.Scan(&d.Doc, &d.RowID, &d.Pending, &d.Data); err != nil {
				break
			}
			out[d.Doc] = d
		}
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("review documents of %q: %w", pipeline, err)
	}
	return out, nil
}

// ReviewCommit applies c in one transaction.
func (s *Store) ReviewCommit(ctx context.Context, c state.ReviewCommit) error {
	if err := c.Check(); err != nil {
		return err
	}
	p := c.Pipeline
	b := &pgx.Batch{}
	if len(c.DeleteDocuments) > 0 {
		b.Queue(`DELETE FROM review_elements WHERE pipeline = $1 AND doc = ANY($2)`, p, c.DeleteDocuments)
		b.Queue(`DELETE FROM review_documents WHERE pipeline = $1 AND doc = ANY($2)`, p, c.DeleteDocuments)
	}
	if len(c.DeleteElements) > 0 {
		docs, els := make([]string, len(c.DeleteElements)), make([]string, len(c.DeleteElements))
		for i, r := range c.DeleteElements {
			docs[i], els[i] = r.Doc, r.Element
		}
		b.Queue(`DELETE FROM review_elements e USING unnest($2::text[], $3::text[]) AS u(doc, element)
			WHERE e.pipeline = $1 AND e.doc = u.doc AND e.element = u.element`, p, docs, els)
	}
	if len(c.Documents) > 0 {
		n := len(c.Documents)
		docs, ids, pend, data := make([]string, n), make([]int64, n), make([]bool, n), make([][]byte, n)
		for i, d := range c.Documents {
			docs[i], ids[i], pend[i], data[i] = d.Doc, d.RowID, d.Pending, emptyBytes(d.Data)
		}
		b.Queue(`INSERT INTO review_documents (pipeline, doc, row_id, pending, data)
			SELECT $1, u.doc, u.row_id, u.pending, u.data FROM unnest($2::text[], $3::bigint[], $4::boolean[], $5::bytea[]) AS u(doc, row_id, pending, data)
			ON CONFLICT (pipeline, doc) DO UPDATE SET row_id = EXCLUDED.row_id, pending = EXCLUDED.pending, data = EXCLUDED.data`,
			p, docs, ids, pend, data)
	}
	if len(c.Elements) > 0 {
		n := len(c.Elements)
		docs, els, ids := make([]string, n), make([]string, n), make([]int64, n)
		exp, flag, data := make([]bool, n), make([]bool, n), make([][]byte, n)
		for i, e := range c.Elements {
			docs[i], els[i], ids[i], exp[i], flag[i], data[i] = e.Doc, e.Element, e.RowID, e.Expert, e.Flagged, emptyBytes(e.Data)
		}
		b.Queue(`INSERT INTO review_elements (pipeline, doc, element, row_id, expert, flagged, data)
			SELECT $1, u.doc, u.element, u.row_id, u.expert, u.flagged, u.data
			FROM unnest($2::text[], $3::text[], $4::bigint[], $5::boolean[], $6::boolean[], $7::bytea[]) AS u(doc, element, row_id, expert, flagged, data)
			ON CONFLICT (pipeline, doc, element) DO UPDATE SET row_id = EXCLUDED.row_id, expert = EXCLUDED.expert,
				flagged = EXCLUDED.flagged, data = EXCLUDED.data`,
			p, docs, els, ids, exp, flag, data)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("review commit %q: begin: %w", p, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("review commit %q: %w", p, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("review commit %q: %w", p, err)
	}
	return nil
}

func emptyBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// ReviewCounts counts the pipeline's review rows.
func (s *Store) ReviewCounts(ctx context.Context, pipeline string) (state.ReviewCounts, error) {
	var c state.ReviewCounts
	err := s.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE pending) FROM review_documents WHERE pipeline = $1`, pipeline).Scan(&c.Documents, &c.Pending)
	if err == nil {
		err = s.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE expert), count(*) FILTER (WHERE flagged) FROM review_elements WHERE pipeline = $1`,
			pipeline).Scan(&c.Elements, &c.Expert, &c.Flagged)
	}
	if err != nil {
		return c, fmt.Errorf("review counts of %q: %w", pipeline, err)
	}
	return c, nil
}
