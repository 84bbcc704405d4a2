package pipeline_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kgsync/kgsync/embed/hashing"
	"github.com/kgsync/kgsync/embed/openai"
	"github.com/kgsync/kgsync/pipeline"
	"github.com/kgsync/kgsync/state"
)

// embedFault answers one embeddings request badly; it returns false to let
// the healthy handler answer.
type embedFault func(w http.ResponseWriter, inputs []string) bool

// TestEmbeddingProviderFaults runs a two-document sync (batch size 1)
// against an OpenAI-compatible server that turns faulty from its second
// request on. Each fault must fail the run with an error naming the
// provider's problem, after the first document's batch committed and with
// nothing of the second batch in the graph or state; the next run, with
// the server healthy again, converges to the graph of an uninterrupted run.
// A 429 that clears after one retry is retried and the run succeeds.
func TestEmbeddingProviderFaults(t *testing.T) {
	t.Parallel()
	hash := hashing.New("hashing-v1", 16)
	answer := func(w http.ResponseWriter, inputs []string, dims, drop int) {
		vecs, _ := hash.Embed(t.Context(), inputs)
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i, v := range vecs[:len(vecs)-drop] {
			if dims != len(v) {
				v = append(v, make([]float32, dims-len(v))...)
			}
			data = append(data, item{Index: i, Embedding: v})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	}
	for _, tc := range []struct {
		name  string
		fault embedFault
		// times is how many faulty answers the server gives (0 = until healed).
		times int
		// want is a substring of the run's error; "" means the run succeeds.
		want string
	}{
		{"429 with Retry-After", func(w http.ResponseWriter, _ []string) bool {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":{"message":"rate limit reached"}}`, http.StatusTooManyRequests)
			return true
		}, 0, "status 429"},
		{"429 once then healthy", func(w http.ResponseWriter, _ []string) bool {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":{"message":"rate limit reached"}}`, http.StatusTooManyRequests)
			return true
		}, 1, ""},
		{"500s", func(w http.ResponseWriter, _ []string) bool {
			http.Error(w, "upstream exploded", http.StatusInternalServerError)
			return true
		}, 0, "status 500"},
		{"malformed JSON", func(w http.ResponseWriter, _ []string) bool {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data": [{"index": 0, "embedding": [0.1, 0.2,`))
			return true
		}, 0, "malformed response JSON"},
		{"wrong dimension", func(w http.ResponseWriter, in []string) bool {
			answer(w, in, 24, 0)
			return true
		}, 0, "has 24 dimensions, want 16"},
		{"fewer vectors than inputs", func(w http.ResponseWriter, in []string) bool {
			answer(w, in, 16, 1)
			return true
		}, 0, "vectors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var requests, faults atomic.Int64
			var healed atomic.Bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req struct {
					Input []string `json:"input"`
				}
				if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				n := requests.Add(1)
				if n >= 2 && !healed.Load() && (tc.times == 0 || faults.Load() < int64(tc.times)) {
					faults.Add(1)
					if tc.fault(w, req.Input) {
						return
					}
				}
				answer(w, req.Input, 16, 0)
			}))
			t.Cleanup(srv.Close)
			emb, err := openai.New(openai.Config{
				BaseURL: srv.URL, Model: "m", Dimensions: 16, BatchSize: 512, MaxConcurrency: 1,
				MaxRetries: 1, RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond,
				MaxRetryAfter: 5 * time.Millisecond, Timeout: 10 * time.Second,
			}, nil)
			require.NoError(t, err)

			root := copyCorpus(t, "openchain-security-specification-1.1.md", "rfc7239.txt")
			b := setup(t, root, 256, 32)
			b.p.BatchSize = 1
			b.p.Embedder = emb
			res, err := b.p.Run(t.Context(), state.TriggerManual, pipeline.Mode{})
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, 2, b.graph.Count("Document"))
				require.Positive(t, faults.Load(), "the fault was served")
			} else {
				require.ErrorContains(t, err, tc.want)
				require.Equal(t, state.StatusFailed, res.Run.Status)
				// The first document (batch 1) committed; nothing of the second.
				require.Equal(t, 1, b.graph.Count("Document"))
				_, ok := b.graph.Node("Document", "docs:openchain-security-specification-1.1.md")
				require.True(t, ok, "documents are listed in key order: openchain… first")
				recs, err := b.store.RecordList(t.Context(), "docs", "docs")
				require.NoError(t, err)
				require.Len(t, recs, 1)
				_, ok = recs["rfc7239.txt"]
				require.False(t, ok)
				for _, id := range b.graph.Nodes(pipeline.LabelChunk) {
					n, _ := b.graph.Node(pipeline.LabelChunk, id)
					require.Equal(t, "docs:openchain-security-specification-1.1.md", n["document"])
				}
				healed.Store(true)
				c := b.sync(t, pipeline.Mode{})
				require.Equal(t, 1, c.RecordsNew)
			}
			// Equal to an uninterrupted run with a healthy provider.
			ref := setup(t, root, 256, 32)
			ref.p.Embedder = hash
			ref.sync(t, pipeline.Mode{})
			require.Equal(t, snapshot(ref.graph), snapshot(b.graph))
		})
	}
}
