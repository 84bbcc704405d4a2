package retrieval_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sink"
	"github.com/kgsync/kgsync/sink/memgraph"
	"github.com/kgsync/kgsync/state"
)

// TestLiveMemgraphSearch syncs the test documents into a real Memgraph
// (3.6 or later, for text search) when KGSYNC_TEST_MEMGRAPH_URI is set, and
// runs the same searches over Memgraph's vector and text indexes and over
// state: the first hit is the same, and most of the top five (Memgraph's
// vector index is approximate, its BM25 Tantivy's). The pipeline's nodes
// are deleted at the end; the shared indexes stay.
func TestLiveMemgraphSearch(t *testing.T) {
	uri := os.Getenv("KGSYNC_TEST_MEMGRAPH_URI")
	if uri == "" {
		t.Skip("set KGSYNC_TEST_MEMGRAPH_URI=bolt://host:7687 to run the live Memgraph suite")
	}
	ctx := t.Context()
	name := fmt.Sprintf("live_retrieval_%d", time.Now().UnixNano())
	f, err := newFixture(t, t.TempDir(), testDocs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.store.Close() })
	mg, err := memgraph.New(ctx, memgraph.Config{URI: uri, Pipeline: name, Username: os.Getenv("KGSYNC_TEST_MEMGRAPH_USER"),
		Password: os.Getenv("KGSYNC_TEST_MEMGRAPH_PASSWORD"), Timeout: time.Minute}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mg.Close(context.Background()) })
	p := *f.p
	p.Name, p.Sink = name, mg
	_, err = p.Run(ctx, state.TriggerManual, pipeline.Mode{})
	require.NoError(t, err)
	t.Cleanup(func() { // everything this pipeline wrote goes
		ctx := context.Background()
		refs, err := mg.NodesBy(ctx, "_pipeline", []string{name})
		if err == nil && len(refs) > 0 {
			_, _ = mg.Write(ctx, &sink.Batch{DeleteNodes: refs})
		}
	})
	embedded := p.Searcher()
	embedded.Graph = nil
	graph := p.Searcher()
	require.NotNil(t, graph.Graph)
	for _, q := range []string{"which proxies may add the Forwarded header", "На какой срок избирается Президент?", "Статья 81 часть 3", "Table 13"} {
		var want, got *retrieval.Result
		require.Eventually(t, func() bool { // text indexes see commits shortly after
			want, got = search(t, embedded, q, retrieval.Options{K: 5}), search(t, graph, q, retrieval.Options{K: 5})
			return len(got.Hits) > 0 && got.Hits[0].ID == want.Hits[0].ID
		}, 20*time.Second, 200*time.Millisecond, q)
		same := 0
		for _, w := range want.Hits {
			for _, g := range got.Hits {
				if g.ID == w.ID {
					same++
				}
			}
		}
		require.GreaterOrEqual(t, same, 3, "%s: top five mostly the same", q)
	}
}
