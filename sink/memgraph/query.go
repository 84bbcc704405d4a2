package memgraph

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
)

// ReadOptions bound one Read.
type ReadOptions struct {
	// Timeout is the transaction's timeout, sent as the Bolt tx_timeout
	// (Memgraph clamps it to --query-execution-timeout-sec;
	// docs/memgraph.md §1). 0 means the Sink's Timeout.
	Timeout time.Duration
	// MaxRows is how many rows are kept; the rest are discarded and
	// ReadResult.Truncated is set. 0 means no cap.
	MaxRows int
}

// ReadResult is what Read returns.
type ReadResult struct {
	// Fields are the column names; Rows the kept rows, values as the
	// driver gives them (nil, bool, int64, float64, string, []any,
	// map[string]any, dbtype.Node, dbtype.Relationship, …).
	Fields []string
	Rows   [][]any
	// Truncated reports that the query returned more than MaxRows rows.
	Truncated bool
	// Type is the query type the server put in the summary: "r", "w",
	// "rw", "s" or "" when it gave none. Memgraph computes it from the
	// query plan: "r" for a plan that only reads, "rw" for one with a
	// write or with no read at all (RETURN 1), "w" for writes only
	// (src/query/plan/read_write_type_checker.cpp TypeToString).
	Type string
}

// Read runs query with params in an explicit read transaction (Bolt BEGIN
// with mode "r") and always rolls it back, whatever the query did: a
// Memgraph from 3.2 on refuses a write in a read transaction ("Accessor
// type … misaligned"), and the rollback undoes one on an older server or
// Neo4j. Index and constraint DDL are refused by Memgraph inside explicit
// transactions (docs/memgraph.md §2). The query is not retried. Errors:
// the server's, or ctx's.
func (s *Sink) Read(ctx context.Context, query string, params map[string]any, o ReadOptions) (*ReadResult, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = s.cfg.Timeout
	}
	session := s.driver.NewSession(ctx, neo4j.SessionConfig{AccessMode: neo4j.AccessModeRead})
	defer func() { _ = session.Close(context.WithoutCancel(ctx)) }()
	tx, err := session.BeginTransaction(ctx, neo4j.WithTxTimeout(timeout))
	if err != nil {
		return nil, fmt.Errorf("read: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	res, err := tx.Run(ctx, query, params)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	keys, err := res.Keys()
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	out := &ReadResult{Fields: keys, Rows: [][]any{}}
	for res.Next(ctx) {
		if o.MaxRows > 0 && len(out.Rows) >= o.MaxRows {
			out.Truncated = true
			break
		}
		out.Rows = append(out.Rows, res.Record().Values)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	sum, err := res.Consume(ctx)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if sum == nil {
		return nil, errors.New("read: no summary")
	}
	switch sum.StatementType() {
	case neo4j.StatementTypeReadOnly:
		out.Type = "r"
	case neo4j.StatementTypeReadWrite:
		out.Type = "rw"
	case neo4j.StatementTypeWriteOnly:
		out.Type = "w"
	case neo4j.StatementTypeSchemaWrite:
		out.Type = "s"
	}
	return out, nil
}
