package pipeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/kgsync/kgsync/embed"
)

// heldVectors are the vectors a local embedder (embed.Local) computed for
// batches handed to the batch writer and not yet stored in the embedding
// cache: the writer stores a batch's vectors (storeHeld) before anything
// else of the batch, so the run goes on preparing the next batch instead
// of waiting for the state's one writing connection, which the writer
// holds while it commits. A batch prepared meanwhile finds here the
// vectors its texts share with the batches ahead of it. A provider's
// vectors are not held: each call's are stored as they come (EmbedAll),
// so that a killed run has paid for at most one call it did not keep.
//
// Stored vectors stay, as recent ones, until recentBytes of them are kept
// (two generations: the older goes when the newer fills half the bound):
// a table repeats texts (a description, a unit) across its rows, and a
// vector in memory costs a batch nothing to find, where the embedding
// cache costs a query. A vector of a model and a text hash never changes,
// so a recent one is as good as the stored one. Safe for concurrent use.
type heldVectors struct {
	mu sync.Mutex
	m  map[string]map[uint64][]float32 // model → text hash → vector
	// recent and older are stored vectors by model and text hash; recent
	// holds recentSize bytes (recentEntryBytes each).
	recent, older map[string]map[uint64][]float32
	recentSize    int
}

// recentBytes bounds the stored vectors heldVectors keeps (both
// generations), counted by recentEntryBytes.
const recentBytes = 32 << 20

// recentEntryBytes is what a kept vector of dims float32 values costs:
// its values, its slice header and its map entry (about).
func recentEntryBytes(dims int) int { return 4*dims + 48 }

// lookup puts into out the vectors of model held or kept for hashes and
// returns the hashes it has none for. The caller holds h.mu.
func (h *heldVectors) lookup(model string, hashes []uint64, out map[uint64][]float32) []uint64 {
	var ask []uint64
	held, recent, older := h.m[model], h.recent[model], h.older[model]
	for _, th := range hashes {
		if v, ok := held[th]; ok {
			out[th] = v
		} else if v, ok := recent[th]; ok {
			out[th] = v
		} else if v, ok := older[th]; ok {
			out[th] = v
		} else {
			ask = append(ask, th)
		}
	}
	return ask
}

// stored moves model's vectors vecs, now in the embedding cache, from
// held to recent, starting a new generation when recent holds half of
// recentBytes. The caller holds h.mu.
func (h *heldVectors) stored(model string, vecs map[uint64][]float32) {
	for th, v := range vecs {
		delete(h.m[model], th)
		n := recentEntryBytes(len(v))
		if h.recentSize+n > recentBytes/2 {
			h.older, h.recent, h.recentSize = h.recent, nil, 0
		}
		if h.recent == nil {
			h.recent = map[string]map[uint64][]float32{}
		}
		if h.recent[model] == nil {
			h.recent[model] = map[uint64][]float32{}
		}
		if _, ok := h.recent[model][th]; !ok {
			h.recent[model][th] = v
			h.recentSize += n
		}
	}
}

// heldPuts are one batch's vectors by model, for the writer to store.
type heldPuts map[string]map[uint64][]float32

// batchCache is the embedding cache of one batch being prepared: it reads
// the vectors held for the batches ahead, then inner; it holds what it is
// given (held and puts) instead of storing it.
type batchCache struct {
	inner embed.Cache
	held  *heldVectors
	puts  heldPuts
}

var _ embed.Cache = (*batchCache)(nil)

// EmbeddingsGet returns the held and recent vectors of textHashes and
// asks inner for the others.
func (c *batchCache) EmbeddingsGet(ctx context.Context, model string, textHashes []uint64) (map[uint64][]float32, error) {
	out := make(map[uint64][]float32, len(textHashes))
	c.held.mu.Lock()
	ask := c.held.lookup(model, textHashes, out)
	c.held.mu.Unlock()
	if len(ask) == 0 {
		return out, nil
	}
	got, err := c.inner.EmbeddingsGet(ctx, model, ask)
	if err != nil {
		return nil, err
	}
	for h, v := range got {
		out[h] = v
	}
	return out, nil
}

// EmbeddingsPut holds vecs: the batch's writer stores them (storeHeld).
func (c *batchCache) EmbeddingsPut(_ context.Context, model string, vecs map[uint64][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	if c.puts == nil {
		c.puts = heldPuts{}
	}
	if c.puts[model] == nil {
		c.puts[model] = make(map[uint64][]float32, len(vecs))
	}
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	if c.held.m == nil {
		c.held.m = map[string]map[uint64][]float32{}
	}
	if c.held.m[model] == nil {
		c.held.m[model] = map[uint64][]float32{}
	}
	for h, v := range vecs {
		c.puts[model][h] = v
		c.held.m[model][h] = v
	}
	return nil
}

// heldPuts returns the vectors c holds for its batch's writer; nil for a
// nil c (a provider's batch, whose vectors are stored as they come).
func (c *batchCache) heldPuts() heldPuts {
	if c == nil {
		return nil
	}
	return c.puts
}

// storeHeld stores a batch's held vectors in the embedding cache (the
// store, or what --reembed makes of it) and moves them from held to
// recent once stored. Errors name the model and the count, as EmbedAll's
// do.
func (r *runner) storeHeld(ctx context.Context, puts heldPuts) error {
	for model, vecs := range puts {
		if err := r.cache().EmbeddingsPut(ctx, model, vecs); err != nil {
			return fmt.Errorf("embeddings put (model %q, %d vectors): %w", model, len(vecs), err)
		}
		r.held.mu.Lock()
		r.held.stored(model, vecs)
		r.held.mu.Unlock()
	}
	return nil
}
