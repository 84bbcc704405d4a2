package embed_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kgsync/kgsync/diff"
	"github.com/kgsync/kgsync/embed"
	"github.com/kgsync/kgsync/embed/hashing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeEmbedder is a small programmable Embedder.
type fakeEmbedder struct {
	dims     int
	callSize int
	embed    func(ctx context.Context, texts []string) ([][]float32, error)
}

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return f.embed(ctx, texts)
}
func (f *fakeEmbedder) Model() string   { return "fake/test/" + fmt.Sprint(f.dims) }
func (f *fakeEmbedder) Dimensions() int { return f.dims }
func (f *fakeEmbedder) CallSize() int   { return f.callSize }

// lenVector embeds a text as (len(text), 1).
func lenVector(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}

// failingCache fails Get or Put and counts Gets.
type failingCache struct {
	*embed.MemCache
	getErr, putErr error
	gets           int
}

func (c *failingCache) EmbeddingsGet(ctx context.Context, model string, hs []uint64) (map[uint64][]float32, error) {
	c.gets++
	if c.getErr != nil {
		return nil, c.getErr
	}
	return c.MemCache.EmbeddingsGet(ctx, model, hs)
}

func (c *failingCache) EmbeddingsPut(ctx context.Context, model string, v map[uint64][]float32) error {
	if c.putErr != nil {
		return c.putErr
	}
	return c.MemCache.EmbeddingsPut(ctx, model, v)
}

type testBundle struct {
	hash    *hashing.Embedder
	counter *embed.Counter
	cache   *embed.MemCache
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	h := hashing.New("hashing-v1", 32)
	return &testBundle{hash: h, counter: embed.NewCounter(h), cache: embed.NewMemCache()}
}

func TestEmbedAllSecondCallServedFromCache(t *testing.T) {
	t.Parallel()
	b := setup(t)
	texts := []string{"alpha beta", "gamma delta", "epsilon"}

	first, st, err := embed.EmbedAll(t.Context(), b.counter, b.cache, texts)
	require.NoError(t, err)
	require.Equal(t, embed.Stats{Embedded: 3, Calls: 1}, st)
	require.Equal(t, 3, b.counter.Texts())
	require.Equal(t, 3, b.cache.Len(b.hash.Model()))
	for i, text := range texts { // aligned with the input, and the provider's own vectors
		require.Equal(t, b.hash.Vector(text), first[i])
	}

	b.counter.Reset()
	second, st, err := embed.EmbedAll(t.Context(), b.counter, b.cache, texts)
	require.NoError(t, err)
	require.Equal(t, embed.Stats{Reused: 3}, st)
	require.Zero(t, b.counter.Calls())
	require.Zero(t, b.counter.Texts())
	require.Equal(t, first, second)
}

func TestEmbedAllDuplicatesEmbeddedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	texts := []string{"same text", "other", "same text", "same text"}
	vecs, st, err := embed.EmbedAll(t.Context(), b.counter, b.cache, texts)
	require.NoError(t, err)
	require.Equal(t, embed.Stats{Embedded: 2, Duplicates: 2, Calls: 1}, st)
	require.Equal(t, 2, b.counter.Texts())
	require.Len(t, vecs, 4)
	require.Equal(t, vecs[0], vecs[2])
	require.Equal(t, vecs[0], vecs[3])
	require.NotEqual(t, vecs[0], vecs[1])
}

func TestEmbedAllPartialHits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, _, err := embed.EmbedAll(t.Context(), b.counter, b.cache, []string{"known one", "known two"})
	require.NoError(t, err)
	b.counter.Reset()

	texts := []string{"new one", "known two", "known one", "new two", "known one"}
	vecs, st, err := embed.EmbedAll(t.Context(), b.counter, b.cache, texts)
	require.NoError(t, err)
	require.Equal(t, embed.Stats{Embedded: 2, Reused: 3, Calls: 1}, st)
	require.Equal(t, 1, b.counter.Calls())
	require.Equal(t, 2, b.counter.Texts())
	for i, text := range texts {
		require.Equal(t, b.hash.Vector(text), vecs[i], "text %d", i)
	}
	require.Equal(t, 4, b.cache.Len(b.hash.Model()))
}

func TestEmbedAllCacheIsPerModel(t *testing.T) {
	t.Parallel()
	cache := embed.NewMemCache()
	small := embed.NewCounter(hashing.New("hashing-v1", 16))
	big := embed.NewCounter(hashing.New("hashing-v1", 64))
	_, _, err := embed.EmbedAll(t.Context(), small, cache, []string{"text"})
	require.NoError(t, err)
	vecs, st, err := embed.EmbedAll(t.Context(), big, cache, []string{"text"})
	require.NoError(t, err)
	require.Equal(t, 1, st.Embedded, "another model must not reuse the vector")
	require.Len(t, vecs[0], 64)
}

func TestEmbedAllRejectsBlankTexts(t *testing.T) {
	t.Parallel()
	for _, blank := range []string{"", "  \n\t "} {
		cache := &failingCache{MemCache: embed.NewMemCache()}
		counter := embed.NewCounter(hashing.New("", 8))
		_, _, err := embed.EmbedAll(t.Context(), counter, cache, []string{"fine", blank})
		require.ErrorContains(t, err, "embed text 1: empty or whitespace-only text")
		require.Zero(t, counter.Calls())
		require.Zero(t, cache.gets, "the cache must not be asked either")
	}
}

func TestEmbedAllEmptyInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	vecs, st, err := embed.EmbedAll(t.Context(), b.counter, b.cache, nil)
	require.NoError(t, err)
	require.Empty(t, vecs)
	require.Equal(t, embed.Stats{}, st)
	require.Zero(t, b.counter.Calls())
}

func TestEmbedAllSplitsByCallSizeAndCachesEachCall(t *testing.T) {
	t.Parallel()
	calls := 0
	fe := &fakeEmbedder{dims: 2, callSize: 2, embed: func(ctx context.Context, texts []string) ([][]float32, error) {
		calls++
		if calls == 3 {
			return nil, errors.New("provider down")
		}
		return lenVector(ctx, texts)
	}}
	cache := embed.NewMemCache()
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	_, st, err := embed.EmbedAll(t.Context(), fe, cache, texts)
	require.ErrorContains(t, err, "embed 1 texts: provider down")
	require.Equal(t, 3, st.Calls)
	// The first two calls (4 texts) were cached before the third failed.
	require.Equal(t, 4, cache.Len(fe.Model()))

	// A retry embeds only the one text still missing.
	var sent []string
	fe.embed = func(ctx context.Context, texts []string) ([][]float32, error) {
		sent = append(sent, texts...)
		return lenVector(ctx, texts)
	}
	vecs, st, err := embed.EmbedAll(t.Context(), fe, cache, texts)
	require.NoError(t, err)
	require.Equal(t, []string{"eeeee"}, sent)
	require.Equal(t, embed.Stats{Embedded: 1, Reused: 4, Calls: 1}, st)
	for i, text := range texts {
		require.Equal(t, []float32{float32(len(text)), 1}, vecs[i])
	}
}

func TestEmbedAllErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		embed   func(ctx context.Context, texts []string) ([][]float32, error)
		getErr  error
		putErr  error
		wantErr string
	}{
		{
			name:    "cache get fails",
			embed:   lenVector,
			getErr:  errors.New("db gone"),
			wantErr: `embeddings get (model "fake/test/2", 2 hashes): db gone`,
		},
		{
			name:    "cache put fails",
			embed:   lenVector,
			putErr:  errors.New("disk full"),
			wantErr: `embeddings put (model "fake/test/2", 2 vectors): disk full`,
		},
		{
			name: "too few vectors",
			embed: func(context.Context, []string) ([][]float32, error) {
				return [][]float32{{1, 2}}, nil
			},
			wantErr: "embed 2 texts: provider returned 1 vectors",
		},
		{
			name: "wrong length",
			embed: func(context.Context, []string) ([][]float32, error) {
				return [][]float32{{1, 2}, {1, 2, 3}}, nil
			},
			wantErr: "embed text 1: provider returned a vector of length 3, want 2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cache := &failingCache{MemCache: embed.NewMemCache(), getErr: tt.getErr, putErr: tt.putErr}
			fe := &fakeEmbedder{dims: 2, embed: tt.embed}
			vecs, _, err := embed.EmbedAll(t.Context(), fe, cache, []string{"one", "two"})
			require.EqualError(t, err, tt.wantErr)
			require.Nil(t, vecs)
		})
	}
}

func TestEmbedAllReembedsCachedVectorOfWrongLength(t *testing.T) {
	t.Parallel()
	fe := &fakeEmbedder{dims: 2, embed: lenVector}
	cache := embed.NewMemCache()
	require.NoError(t, cache.EmbeddingsPut(t.Context(), fe.Model(), map[uint64][]float32{
		diff.TextHash("abc"): {9, 9, 9}, // corrupt: 3 components for a 2-dimensional model
	}))
	vecs, st, err := embed.EmbedAll(t.Context(), fe, cache, []string{"abc"})
	require.NoError(t, err)
	require.Equal(t, 1, st.Embedded)
	require.Equal(t, [][]float32{{3, 1}}, vecs)
}

func TestMemCacheCopies(t *testing.T) {
	t.Parallel()
	c := embed.NewMemCache()
	v := []float32{1, 2}
	require.NoError(t, c.EmbeddingsPut(t.Context(), "m", map[uint64][]float32{7: v}))
	v[0] = 100
	got, err := c.EmbeddingsGet(t.Context(), "m", []uint64{7, 8})
	require.NoError(t, err)
	require.Equal(t, map[uint64][]float32{7: {1, 2}}, got)
	got[7][1] = 100
	again, err := c.EmbeddingsGet(t.Context(), "m", []uint64{7})
	require.NoError(t, err)
	require.Equal(t, []float32{1, 2}, again[7])
	none, err := c.EmbeddingsGet(t.Context(), "other", []uint64{7})
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestCounterForwardsCallSize(t *testing.T) {
	t.Parallel()
	require.Equal(t, 5, embed.NewCounter(&fakeEmbedder{callSize: 5}).CallSize())
	require.Zero(t, embed.NewCounter(hashing.New("", 8)).CallSize())
}
