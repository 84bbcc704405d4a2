package pipeline_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/bolttest"
	"github.com/kgsync/kgsync/internal/pgtest"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/memgraph"
	"github.com/kgsync/kgsync/state"
	"github.com/kgsync/kgsync/state/postgres"
)

// TestMemgraphRefusingConnections: a sink pointed at a closed port fails at
// New with an error naming the address, before any run starts.
func TestMemgraphRefusingConnections(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = memgraph.New(t.Context(), memgraph.Config{URI: "bolt://" + addr, Pipeline: "docs", MaxRetries: 1}, nil)
	require.Error(t, err)
	require.ErrorContains(t, err, addr)
	t.Logf("closed port: %v", err)
}

// TestMemgraphTransientFailures runs three documents (batch size 1) into the
// Bolt test server while it drops the connection on a write, or answers a
// write-write conflict twice: the sink retries, the run succeeds, and the
// graph state matches a clean run's (state has every record).
func TestMemgraphTransientFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		f    bolttest.Failure
		n    int
	}{
		{"connection dropped", bolttest.Failure{Drop: true}, 1},
		{"conflict", bolttest.Conflict(), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			srv := bolttest.Start(t)
			srv.EmulateSchema()
			mg, err := memgraph.New(ctx, memgraph.Config{URI: srv.URI(), Pipeline: "docs", BatchSize: 100, MaxRetries: 3}, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = mg.Close(context.WithoutCancel(ctx)) })
			b := setup(t, copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md", "spdx-2.3-package-information.md"), 256, 32)
			b.p.Sink = mg
			b.p.BatchSize = 1
			writes := 0
			srv.FailNext(tc.n, func(q string) bool {
				if strings.Contains(q, "MERGE (n:`Document`") {
					writes++
					return writes >= 2 // the second document's batch
				}
				return false
			}, tc.f)
			res, err := b.p.Run(ctx, state.TriggerManual, pipeline.Mode{})
			require.NoError(t, err)
			require.Equal(t, 3, res.Run.Counts.RecordsNew)
			failed := 0
			for _, q := range srv.Queries() {
				if q.Failed {
					failed++
				}
			}
			require.Equal(t, tc.n, failed, "the injected failures were served")
			recs, err := b.store.RecordList(ctx, "docs", "docs")
			require.NoError(t, err)
			require.Len(t, recs, 3)
		})
	}
}

// failAfter is a sink wrapper that runs hook after the n-th successful
// Write, to inject a fault between batches.
type failAfter struct {
	sink.Sink
	n, writes int
	hook      func()
}

func (f *failAfter) Write(ctx context.Context, b *sink.Batch) (sink.Stats, error) {
	st, err := f.Sink.Write(ctx, b)
	if err == nil {
		f.writes++
		if f.writes == f.n {
			f.hook()
		}
	}
	return st, err
}

// TestPostgresRestartMidRun terminates every backend of the state store
// (as a Postgres restart does) right after the sink acknowledged the
// second batch, before its state commit. The run must fail with an error
// (never succeed with batches missing from state), and the next run, on a
// fresh store, converges to the graph of an uninterrupted run, and state
// matches it.
func TestPostgresRestartMidRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn, schema := pgtest.Schema(t)
	app := "kgsync_fault_" + schema
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	appDSN := dsn + sep + "application_name=" + app
	store, err := postgres.Open(ctx, appDSN, schema)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	admin := pgtest.Connect(t)

	root := copyCorpus(t, "rfc7239.txt", "openchain-security-specification-1.1.md", "spdx-2.3-package-information.md", "go_spec.html")
	b := setup(t, root, 256, 32)
	b.p.Store = store
	b.p.BatchSize = 1
	terminated := 0
	b.p.Sink = &failAfter{Sink: b.graph, n: 2, hook: func() {
		rows, err := admin.Query(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app)
		require.NoError(t, err)
		n, err := pgx.CollectRows(rows, pgx.RowTo[bool])
		require.NoError(t, err)
		terminated = len(n)
	}}
	res, err := b.p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.Positive(t, terminated, "the store's backends were found")
	t.Logf("run after %d backends terminated: status %s, err %v", terminated, res.Run.Status, err)
	require.Error(t, err, "a run whose state commits were cut must not report success")

	// The next run (a new process in production: a fresh store) converges.
	store2, err := postgres.Open(ctx, appDSN, schema)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store2.Close() })
	b.p.Store, b.store = store2, store2
	b.p.Sink = b.graph
	b.sync(t, pipeline.Mode{})
	recs, err := store2.RecordList(ctx, "docs", "docs")
	require.NoError(t, err)
	require.Len(t, recs, 4)
	ref := setup(t, root, 256, 32)
	ref.sync(t, pipeline.Mode{})
	require.Equal(t, snapshot(ref.graph), snapshot(b.graph))
	n, err := store2.ChunkCount(ctx, "docs")
	require.NoError(t, err)
	require.Equal(t, b.graph.Count(pipeline.LabelChunk), n, "state matches the graph")
}
