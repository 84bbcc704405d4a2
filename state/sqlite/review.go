package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/kgsync/kgsync/state"
)

var _ state.ReviewStore = (*Store)(nil)

// inChunks runs fn over args in groups of at most rowsPerStatement (SQLite
// limits bound parameters), with "?, ?, …" for the group.
func inChunks[T any](args []T, fn func(marks string, group []any) error) error {
	for start := 0; start < len(args); start += rowsPerStatement {
		end := min(len(args), start+rowsPerStatement)
		group := make([]any, 0, end-start)
		for _, a := range args[start:end] {
			group = append(group, a)
		}
		if err := fn(strings.TrimSuffix(strings.Repeat("?, ", len(group)), ", "), group); err != nil {
			return err
		}
	}
	return nil
}

const reviewElementCols = `doc, element, row_id, expert, flagged, data`

func scanReviewElement(rows *sql.Rows) (state.ReviewElement, error) {
	var e state.ReviewElement
	var expert, flagged int
	err := rows.Scan(&e.Doc, &e.Element, &e.RowID, &expert, &flagged, &e.Data)
	e.Expert, e.Flagged = expert != 0, flagged != 0
	return e, err
}

func (s *Store) queryReviewElements(ctx context.Context, query string, args []any, fn func(state.ReviewElement)) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanReviewElement(rows)
		if err != nil {
			return err
		}
		fn(e)
	}
	return rows.Err()
}

// ReviewElements returns the stored elements of docs (state.ReviewStore).
func (s *Store) ReviewElements(ctx context.Context, pipeline string, docs []string) (map[string][]state.ReviewElement, error) {
	out := map[string][]state.ReviewElement{}
	err := inChunks(docs, func(marks string, group []any) error {
		return s.queryReviewElements(ctx, `SELECT `+reviewElementCols+` FROM review_elements WHERE pipeline = ? AND doc IN (`+marks+`) ORDER BY doc, element`,
			append([]any{pipeline}, group...), func(e state.ReviewElement) { out[e.Doc] = append(out[e.Doc], e) })
	})
	if err != nil {
		return nil, fmt.Errorf("review elements of %q: %w", pipeline, err)
	}
	return out, nil
}

// ReviewRows returns the stored elements with the given row ids.
func (s *Store) ReviewRows(ctx context.Context, pipeline string, ids []int64) (map[int64]state.ReviewElement, error) {
	out := map[int64]state.ReviewElement{}
	err := inChunks(ids, func(marks string, group []any) error {
		return s.queryReviewElements(ctx, `SELECT `+reviewElementCols+` FROM review_elements WHERE pipeline = ? AND row_id <> 0 AND row_id IN (`+marks+`)`,
			append([]any{pipeline}, group...), func(e state.ReviewElement) { out[e.RowID] = e })
	})
	if err != nil {
		return nil, fmt.Errorf("review rows of %q: %w", pipeline, err)
	}
	return out, nil
}

// ReviewExpert returns the elements with expert input or a flag.
func (s *Store) ReviewExpert(ctx context.Context, pipeline string) ([]state.ReviewElement, error) {
	var out []state.ReviewElement
	err := s.queryReviewElements(ctx, `SELECT `+reviewElementCols+` FROM review_elements WHERE pipeline = ? AND (expert <> 0 OR flagged <> 0) ORDER BY doc, element`,
		[]any{pipeline}, func(e state.ReviewElement) { out = append(out, e) })
	if err != nil {
		return nil, fmt.Errorf("review expert elements of %q: %w", pipeline, err)
	}
	return out, nil
}

// ReviewDocuments returns the named documents' rows, every one for nil.
func (s *Store) ReviewDocuments(ctx context.Context, pipeline string, docs []string) (map[string]state.ReviewDocument, error) {
	out := map[string]state.ReviewDocument{}
	scan := func(query string, args []any) error {
		rows, err := s.db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d state.ReviewDocument
			var pending int
			if err := rows.Scan(&d.Doc, &d.RowID, &pending, &d.Data); err != nil {
				return err
			}
			d.Pending = pending != 0
			out[d.Doc] = d
		}
		return rows.Err()
	}
	const q = `SELECT doc, row_id, pending, data FROM review_documents WHERE pipeline = ?`
	var err error
	if docs == nil {
		err = scan(q, []any{pipeline})
	} else {
		err = inChunks(docs, func(marks string, group []any) error {
			return scan(q+` AND doc IN (`+marks+`)`, append([]any{pipeline}, group...))
		})
	}
	if err != nil {
		return nil, fmt.Errorf("review documents of %q: %w", pipeline, err)
	}
	return out, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ReviewCommit applies c in one transaction.
func (s *Store) ReviewCommit(ctx context.Context, c state.ReviewCommit) error {
	if err := c.Check(); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("review commit %q: begin: %w", c.Pipeline, err)
	}
	defer func() { _ = tx.Rollback() }()
	p := c.Pipeline
	for _, d := range c.DeleteDocuments {
		if _, err := tx.ExecContext(ctx, `DELETE FROM review_elements WHERE pipeline = ? AND doc = ?`, p, d); err != nil {
			return fmt.Errorf("review commit %q: delete elements of %q: %w", p, d, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM review_documents WHERE pipeline = ? AND doc = ?`, p, d); err != nil {
			return fmt.Errorf("review commit %q: delete document %q: %w", p, d, err)
		}
	}
	for _, r := range c.DeleteElements {
		if _, err := tx.ExecContext(ctx, `DELETE FROM review_elements WHERE pipeline = ? AND doc = ? AND element = ?`, p, r.Doc, r.Element); err != nil {
			return fmt.Errorf("review commit %q: delete element %q: %w", p, r.Element, err)
		}
	}
	if len(c.Documents) > 0 {
		rows := make([][]any, len(c.Documents))
		for i, d := range c.Documents {
			rows[i] = []any{p, d.Doc, d.RowID, boolInt(d.Pending), emptyBytes(d.Data)}
		}
		if err := execRows(ctx, writeTx{Tx: tx}, `INSERT INTO review_documents (pipeline, doc, row_id, pending, data) VALUES `,
			`ON CONFLICT (pipeline, doc) DO UPDATE SET row_id = excluded.row_id, pending = excluded.pending, data = excluded.data`, rows); err != nil {
			return fmt.Errorf("review commit %q: upsert documents: %w", p, err)
		}
	}
	if len(c.Elements) > 0 {
		rows := make([][]any, len(c.Elements))
		for i, e := range c.Elements {
			rows[i] = []any{p, e.Doc, e.Element, e.RowID, boolInt(e.Expert), boolInt(e.Flagged), emptyBytes(e.Data)}
		}
		if err := execRows(ctx, writeTx{Tx: tx}, `INSERT INTO review_elements (pipeline, doc, element, row_id, expert, flagged, data) VALUES `,
			`ON CONFLICT (pipeline, doc, element) DO UPDATE SET row_id = excluded.row_id, expert = excluded.expert,
				flagged = excluded.flagged, data = excluded.data`, rows); err != nil {
			return fmt.Errorf("review commit %q: upsert elements: %w", p, err)
		}
	}
	if err := tx.Commit(); err != nil {
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
	err := s.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(pending), 0) FROM review_documents WHERE pipeline = ?`, pipeline).Scan(&c.Documents, &c.Pending)
	if err == nil {
		err = s.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(expert <> 0), 0), coalesce(sum(flagged <> 0), 0) FROM review_elements WHERE pipeline = ?`,
			pipeline).Scan(&c.Elements, &c.Expert, &c.Flagged)
	}
	if err != nil {
		return c, fmt.Errorf("review counts of %q: %w", pipeline, err)
	}
	return c, nil
}
