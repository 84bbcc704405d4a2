package retrieval_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/internal/bolttest"
	"github.com/kgsync/kgsync/retrieval"
	"github.com/kgsync/kgsync/sink/memgraph"
	"github.com/kgsync/kgsync/state"
)

// fakeMemgraph answers vector_search.search and text_search.search over
// the Bolt test server as Memgraph would for the fixture's graph: vector
// hits by |cosine| (Memgraph's similarity for the cos metric,
// docs/memgraph.md §4), text hits by a BM25 of the lexical text the
// graph's lex properties hold (docs/memgraph-text-search.md), each at most
// k or limit rows, best first; the text indexes also hold another
// pipeline's nodes, ranked above the fixture's.
type fakeMemgraph struct {
	t       *testing.T
	f       *fixture
	units   []retrieval.Unit
	vectors map[uint64][]float32
}

func newFakeMemgraph(t *testing.T, f *fixture) *fakeMemgraph {
	c, err := f.p.Corpus(t.Context())
	require.NoError(t, err)
	var hashes []uint64
	for _, u := range c.Units {
		hashes = append(hashes, u.TextHash)
	}
	vecs, err := f.store.EmbeddingsGet(t.Context(), f.p.Embedder.Model(), hashes)
	require.NoError(t, err)
	return &fakeMemgraph{t: t, f: f, units: c.Units, vectors: vecs}
}

func (m *fakeMemgraph) respond(q bolttest.Query) ([]string, [][]any, bool) {
	switch {
	case strings.HasPrefix(q.Text, "CALL vector_search.search"):
		index, _ := q.Params["index"].(string)
		k, _ := q.Params["fetch"].(int64)
		var vec []float32
		for _, v := range q.Params["vec"].([]any) {
			vec = append(vec, float32(v.(float64)))
		}
		type hit struct {
			id  string
			sim float64
		}
		var hits []hit
		for _, u := range m.units {
			if (index == retrieval.ChunkVectorIndex) != (u.Label == retrieval.LabelChunk) {
				continue
			}
			if v, ok := m.vectors[u.TextHash]; ok {
				hits = append(hits, hit{u.ID, math.Abs(cos(vec, v))})
			}
		}
		slices.SortStableFunc(hits, func(a, b hit) int {
			if a.sim > b.sim {
				return -1
			}
			if a.sim < b.sim {
				return 1
			}
			return strings.Compare(a.id, b.id)
		})
		// Another pipeline's nodes (here with strangers' ids) are nearer
		// than any of ours; Memgraph yields the $fetch nearest of all.
		var all []any
		for i := range 150 {
			all = append(all, []any{fmt.Sprintf("other-%d", i), "other", 2.0})
		}
		for _, h := range hits {
			all = append(all, []any{h.id, m.f.p.Name, h.sim})
		}
		yielded := all[:min(int(k), len(all))]
		own := []any{}
		for _, n := range yielded {
			if n := n.([]any); n[1] == q.Params["pipeline"] {
				own = append(own, []any{n[0], n[2]})
			}
		}
		return []string{"fetched", "hits"}, [][]any{{int64(len(yielded)), own}}, true
	case strings.HasPrefix(q.Text, "CALL text_search.search"):
		index, _ := q.Params["index"].(string)
		query, _ := q.Params["query"].(string)
		limit, _ := q.Params["limit"].(int64)
		kind := map[string]string{"chunk_lex": state.LexicalChunk, "element_lex": state.LexicalElement}[index]
		var terms []string
		for _, part := range strings.Split(query, " OR ") {
			terms = append(terms, strings.TrimPrefix(part, "data.lex:"))
		}
		st, ms, err := m.f.store.LexicalSearch(context.Background(), m.f.p.Name, kind, terms)
		if err != nil {
			return nil, nil, false
		}
		avg := float64(st.TotalLen) / float64(max(st.Rows, 1))
		scores := make([]float64, len(ms))
		for i, mt := range ms {
			for _, term := range slices.Sorted(maps.Keys(mt.TF)) { // in one order: float sums must not vary
				tf := mt.TF[term]
				idf := math.Log(1 + (float64(st.Rows)-float64(st.DF[term])+0.5)/(float64(st.DF[term])+0.5))
				scores[i] += idf * float64(tf) * 2.2 / (float64(tf) + 1.2*(0.25+0.75*float64(mt.Len)/avg))
			}
		}
		idx := make([]int, len(ms))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			if scores[a] > scores[b] {
				return -1
			}
			if scores[a] < scores[b] {
				return 1
			}
			return strings.Compare(ms[a].ID, ms[b].ID)
		})
		// The index is shared with another pipeline that synced the same
		// documents and more: its nodes (some with our ids) score above
		// ours, and Memgraph yields the limit best of all of them.
		type node struct {
			id, pipeline string
			score        float64
		}
		var all []node
		if len(idx) > 0 {
			for i := range 2*len(idx) + 100 {
				// in the reverse of our order, and strangers' ids
				id := fmt.Sprintf("other-%d", i)
				if i%2 == 0 {
					id = ms[idx[len(idx)-1-(i/2)%len(idx)]].ID
				}
				all = append(all, node{id, "other", 1000 - float64(i)})
			}
		}
		for _, i := range idx {
			all = append(all, node{ms[i].ID, m.f.p.Name, scores[i]})
		}
		yielded := all[:min(int(limit), len(all))]
		if !strings.Contains(q.Text, "collect(CASE WHEN node._pipeline = $pipeline THEN [node.id, score] END) AS hits RETURN fetched, hits") {
			var rows [][]any // an unfiltered statement: every node yielded
			for _, n := range yielded {
				rows = append(rows, []any{n.id, n.score})
			}
			return []string{"id", "score"}, rows, true
		}
		hits := []any{}
		for _, n := range yielded {
			if n.pipeline == q.Params["pipeline"] {
				hits = append(hits, []any{n.id, n.score})
			}
		}
		return []string{"fetched", "hits"}, [][]any{{int64(len(yielded)), hits}}, true
	}
	return nil, nil, false
}

func cos(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// TestMemgraphModeMatchesEmbedded runs the same searches over state and
// over Memgraph's indexes (through the Bolt test server): the hits, their
// fused scores and ranks are the same, since fusion reads ranks only and
// the vector candidates are re-scored with the signed cosine.
func TestMemgraphModeMatchesEmbedded(t *testing.T) {
	t.Parallel()
	f := synced(t)
	srv := bolttest.Start(t)
	fake := newFakeMemgraph(t, f)
	srv.Respond(fake.respond)
	mg, err := memgraph.New(t.Context(), memgraph.Config{URI: srv.URI(), Pipeline: f.p.Name, Timeout: 5 * time.Second}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mg.Close(context.Background()) })

	embedded := f.p.Searcher()
	graph := &retrieval.Searcher{Pipeline: f.p.Name, Store: f.store, Embedder: f.p.Embedder, Corpus: f.p, Graph: mg}
	for _, q := range []string{
		"which proxies may add the Forwarded header",
		"На какой срок избирается Президент?",
		"Статья 81 часть 3",
		"What is the cardinality of the package name field?",
		"What does the 418 I'm a teapot status code mean?",
		// A packed chunk's hit named by the element matched.
		"section 6.3 of RFC 7239",
		"What does an obfuscated identifier start with?",
	} {
		srv.Reset()
		want := search(t, embedded, q, retrieval.Options{K: 5})
		got := search(t, graph, q, retrieval.Options{K: 5})
		require.Equal(t, want.Declined, got.Declined, q)
		require.Equal(t, len(want.Hits), len(got.Hits), q)
		for i := range want.Hits {
			require.Equal(t, want.Hits[i].ID, got.Hits[i].ID, "%s: hit %d", q, i+1)
			require.InDelta(t, want.Hits[i].Score, got.Hits[i].Score, 1e-9, q)
			require.InDelta(t, want.Hits[i].Cosine, got.Hits[i].Cosine, 1e-6, q)
			require.Equal(t, want.Hits[i].Match, got.Hits[i].Match, "%s: hit %d names the same element", q, i+1)
		}
		if strings.Contains(q, "6.3") || strings.Contains(q, "obfuscated") {
			require.True(t, slices.ContainsFunc(got.Hits, func(h retrieval.Hit) bool {
				return h.Match != nil && strings.HasPrefix(h.Match.ID, "docs:rfc7239.txt › 6 › 6.3") && h.Address != h.Match.ID
			}), "%s: a hit of a chunk starting elsewhere is named by 6.3", q)
		}
		// Memgraph was asked: the chunk vector index with over-fetch, the
		// chunk and element text indexes with the analyzer's terms.
		var texts []string
		for _, rq := range srv.Queries() {
			texts = append(texts, rq.Text)
			require.Zero(t, rq.Tx, "procedure calls are auto-commit")
			if strings.HasPrefix(rq.Text, "CALL vector_search.search") {
				require.Equal(t, retrieval.ChunkVectorIndex, rq.Params["index"])
				require.Contains(t, []any{int64(400), int64(1600)}, rq.Params["fetch"], "K 5 × over-fetch 10, twice for |cos|, 4 × that, then again while the pipeline's share is short")
			}
			if strings.HasPrefix(rq.Text, "CALL text_search.search") {
				require.Contains(t, []any{"chunk_lex", "element_lex"}, rq.Params["index"])
				require.True(t, strings.HasPrefix(rq.Params["query"].(string), "data.lex:"), rq.Params["query"])
			}
		}
		require.Contains(t, strings.Join(texts, "\n"), "CALL vector_search.search", q)
		require.Contains(t, strings.Join(texts, "\n"), "CALL text_search.search($index, $query, {limit: $limit})", q)
	}

	// A Memgraph without text indexes (analytical mode): state's lexical
	// index answers, the result says so, the hits are the same.
	srv.FailNext(2, func(text string) bool { return strings.HasPrefix(text, "CALL text_search") },
		bolttest.Failure{Code: bolttest.CodeClient, Message: "Text index is not supported in analytical storage mode."})
	want := search(t, embedded, "which proxies may add the Forwarded header", retrieval.Options{K: 5})
	got := search(t, graph, "which proxies may add the Forwarded header", retrieval.Options{K: 5})
	require.Len(t, got.Warnings, 2)
	require.Contains(t, got.Warnings[0], "analytical")
	for i := range want.Hits {
		require.Equal(t, want.Hits[i].ID, got.Hits[i].ID)
	}

	// A hit Memgraph returns that state does not know (a node written by
	// another tool) is dropped, never shown without its text.
	srv.Respond(func(q bolttest.Query) ([]string, [][]any, bool) {
		if strings.HasPrefix(q.Text, "CALL vector_search.search") {
			return []string{"fetched", "hits"}, [][]any{{int64(1), []any{[]any{"stranger", 0.99}}}}, true
		}
		return fake.respond(q)
	})
	res := search(t, graph, "which proxies may add the Forwarded header", retrieval.Options{K: 5, Signals: []string{retrieval.SignalVector}})
	require.Empty(t, res.Hits)
}
