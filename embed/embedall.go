package embed

import (
	"context"
	"fmt"
	"strings"

	"github.com/kgsync/kgsync/diff"
)

// CallSizer is an optional capability of an Embedder: how many texts one
// Embed call should carry. EmbedAll splits its cache misses into calls of at
// most CallSize() texts and stores each call's vectors in the cache before
// making the next, so a failure late in a large page loses at most one
// call's work. For the OpenAI provider it is batch size × max concurrency,
// enough to keep every concurrent request busy. CallSize() <= 0, or an
// Embedder without the method, means one call for all misses.
type CallSizer interface {
	CallSize() int
}

// Stats counts what one EmbedAll call did. Embedded + Reused + Duplicates
// equals the number of texts given.
type Stats struct {
	// Embedded is the number of distinct texts sent to the provider.
	Embedded int
	// Reused is the number of texts served from the cache.
	Reused int
	// Duplicates is the number of texts that repeated an earlier text of the
	// same call that was not cached: embedded once, counted in Embedded once.
	Duplicates int
	// Calls is the number of Embed calls made on the provider (0 when
	// everything came from the cache).
	Calls int
}

// Add returns the sum of two Stats, for totals over a run.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		Embedded:   s.Embedded + o.Embedded,
		Reused:     s.Reused + o.Reused,
		Duplicates: s.Duplicates + o.Duplicates,
		Calls:      s.Calls + o.Calls,
	}
}

// EmbedAll returns one vector per text, aligned with texts, embedding only
// what the cache does not hold: it hashes every text (diff.TextHash, the
// cache key), looks all distinct hashes up with one EmbeddingsGet under
// e.Model(), sends only the distinct misses to e.Embed (in calls of
// CallSize() texts when e is a CallSizer), and stores each call's new
// vectors with EmbeddingsPut before anything is returned, so vectors are
// never used without being cached.
//
// Texts must not be empty or whitespace-only (the pipeline never produces
// them): such a text fails the whole call, naming its index, before the
// cache or provider is asked. A cached vector whose length differs from
// e.Dimensions() (when that is known, > 0) is treated as a miss and
// re-embedded. Errors name the step ("embeddings get", "embed 12 texts",
// "embeddings put"); vectors returned by the provider are checked for
// count and length. Duplicate texts share one slice in the result: treat
// the vectors as read-only.
func EmbedAll(ctx context.Context, e Embedder, c Cache, texts []string) ([][]float32, Stats, error) {
	var st Stats
	if len(texts) == 0 {
		return [][]float32{}, st, nil
	}
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			return nil, st, fmt.Errorf("embed text %d: empty or whitespace-only text", i)
		}
	}
	model := e.Model()
	hashes := make([]uint64, len(texts))
	first := make(map[uint64]int, len(texts)) // hash -> index of its first text
	distinct := make([]uint64, 0, len(texts))
	for i, t := range texts {
		h := diff.TextHash(t)
		hashes[i] = h
		if _, ok := first[h]; !ok {
			first[h] = i
			distinct = append(distinct, h)
		}
	}
	cached, err := c.EmbeddingsGet(ctx, model, distinct)
	if err != nil {
		return nil, st, fmt.Errorf("embeddings get (model %q, %d hashes): %w", model, len(distinct), err)
	}
	dims := e.Dimensions()
	vecs := make(map[uint64][]float32, len(distinct))
	var missing []uint64
	for _, h := range distinct {
		v, ok := cached[h]
		if ok && (dims <= 0 || len(v) == dims) && len(v) > 0 {
			vecs[h] = v
			continue
		}
		missing = append(missing, h)
	}
	step := len(missing)
	if cs, ok := e.(CallSizer); ok && cs.CallSize() > 0 {
		step = cs.CallSize()
	}
	for start := 0; start < len(missing); start += step {
		part := missing[start:min(start+step, len(missing))]
		in := make([]string, len(part))
		for j, h := range part {
			in[j] = texts[first[h]]
		}
		out, err := e.Embed(ctx, in)
		st.Calls++
		if err != nil {
			return nil, st, fmt.Errorf("embed %d texts: %w", len(in), err)
		}
		if len(out) != len(in) {
			return nil, st, fmt.Errorf("embed %d texts: provider returned %d vectors", len(in), len(out))
		}
		put := make(map[uint64][]float32, len(part))
		want := e.Dimensions() // may have been learnt by the first call
		for j, h := range part {
			if len(out[j]) == 0 || (want > 0 && len(out[j]) != want) {
				return nil, st, fmt.Errorf("embed text %d: provider returned a vector of length %d, want %d", first[h], len(out[j]), want)
			}
			put[h] = out[j]
		}
		if err := c.EmbeddingsPut(ctx, model, put); err != nil {
			return nil, st, fmt.Errorf("embeddings put (model %q, %d vectors): %w", model, len(put), err)
		}
		for h, v := range put {
			vecs[h] = v
		}
		st.Embedded += len(part)
	}
	result := make([][]float32, len(texts))
	missed := make(map[uint64]bool, len(missing))
	for _, h := range missing {
		missed[h] = true
	}
	for i, h := range hashes {
		result[i] = vecs[h]
		switch {
		case !missed[h]:
			st.Reused++
		case first[h] != i:
			st.Duplicates++
		}
	}
	return result, st, nil
}
