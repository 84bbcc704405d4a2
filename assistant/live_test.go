package assistant_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/assistant"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/memgraph"
	"github.com/kgsync/kgsync/state"
)

// TestLiveMemgraphTools syncs the quick start's tables into a real
// Memgraph when KGSYNC_TEST_MEMGRAPH_URI is set, then: every structured
// golden question's rows call gives the same total and ids from the graph
// as from state, and every write form sent through cypher leaves the
// graph as it was. The pipeline's nodes are deleted at the end.
func TestLiveMemgraphTools(t *testing.T) {
	uri := os.Getenv("KGSYNC_TEST_MEMGRAPH_URI")
	if uri == "" {
		t.Skip("set KGSYNC_TEST_MEMGRAPH_URI=bolt://host:7687 to run the live Memgraph suite")
	}
	ctx := t.Context()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("..", "examples", "quickstart"))))
	_ = os.RemoveAll(filepath.Join(dir, ".kgsync"))
	_, store, ps, err := build(ctx, filepath.Join(dir, "kgsync.yaml"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	var p *pipeline.Pipeline
	for _, q := range ps {
		if q.Name == "tables" {
			p = q
		}
	}
	name := fmt.Sprintf("live_assistant_%d", time.Now().UnixNano())
	mg, err := memgraph.New(ctx, memgraph.Config{URI: uri, Pipeline: name, Username: os.Getenv("KGSYNC_TEST_MEMGRAPH_USER"),
		Password: os.Getenv("KGSYNC_TEST_MEMGRAPH_PASSWORD"), Timeout: time.Minute}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mg.Close(context.Background()) })
	p.Name, p.Sink = name, mg
	_, err = p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		refs, err := mg.NodesBy(ctx, "_pipeline", []string{name})
		if err == nil && len(refs) > 0 {
			_, _ = mg.Write(ctx, &sink.Batch{DeleteNodes: refs})
		}
	})
	srv, err := assistant.New(assistant.Options{Pipelines: []*pipeline.Pipeline{p}})
	require.NoError(t, err)

	f, err := os.Open(filepath.Join(dir, "golden-tables.jsonl"))
	require.NoError(t, err)
	qs, err := assistant.ReadQuestions(f, "golden-tables.jsonl")
	_ = f.Close()
	require.NoError(t, err)
	all := func(in assistant.RowsInput, from string) ([]string, int) {
		in.From, in.Limit, in.Offset = from, assistant.MaxRowsLimit, 0
		var ids []string
		for {
			out, err := srv.Rows(ctx, in)
			require.NoError(t, err, "%+v", in)
			for _, r := range out.Rows {
				ids = append(ids, r.ID)
			}
			if out.NextOffset == 0 {
				return ids, out.Total
			}
			in.Offset = out.NextOffset
		}
	}
	for _, q := range qs {
		if q.Rows == nil {
			continue
		}
		wantIDs, want := all(*q.Rows, "state")
		gotIDs, got := all(*q.Rows, "graph")
		require.Equal(t, want, got, q.ID)
		slices.Sort(wantIDs)
		slices.Sort(gotIDs)
		require.Equal(t, wantIDs, gotIDs, q.ID)
	}

	count := func() int64 {
		res, err := mg.Read(ctx, "MATCH (n) RETURN count(n) AS n", nil, memgraph.ReadOptions{})
		require.NoError(t, err)
		return res.Rows[0][0].(int64)
	}
	before := count()
	cs := connect(t, srv)
	for _, q := range writeForms {
		require.NotEmpty(t, callErr(t, cs, "cypher", map[string]any{"query": q}), q)
	}
	require.Equal(t, before, count())
}
