// Package embed turns texts into vectors: the Embedder contract, its
// providers (an OpenAI-compatible HTTP client and a local hashing embedder),
// and the cache lookup that runs before any provider call.
package embed

import "context"

// Embedder turns texts into vectors of a fixed dimension.
type Embedder interface {
	// Embed returns one vector per text, in order, each of length
	// Dimensions(). It fails rather than return fewer vectors or vectors
	// of another length.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model identifies provider, model and dimensions, e.g.
	// "hashing/hashing-v1/384"; it keys the embedding cache and the
	// config fingerprint, so vectors of two models never mix.
	Model() string
	// Dimensions is the vector length.
	Dimensions() int
}

// Local is implemented by an embedder that computes vectors in this
// process, with no provider to pay or to wait for (the hashing embedder):
// a vector of it lost before it is cached costs a recomputation, not a
// provider request, so a run may cache its vectors later than it gets
// them (the batch writer does, pipeline/heldvectors.go). Local reports
// whether that holds.
type Local interface {
	Local() bool
}

// IsLocal reports whether e computes its vectors in this process (Local).
func IsLocal(e Embedder) bool {
	l, ok := e.(Local)
	return ok && l.Local()
}

// Cache is the part of state that embed uses; every state.Store satisfies it.
// Text hashes are xxhash64 of the exact embedded text (diff.TextHash).
type Cache interface {
	// EmbeddingsGet returns the cached vectors for the given text hashes;
	// missing hashes are absent from the map.
	EmbeddingsGet(ctx context.Context, model string, textHashes []uint64) (map[uint64][]float32, error)
	// EmbeddingsPut stores vectors by text hash (idempotent).
	EmbeddingsPut(ctx context.Context, model string, vecs map[uint64][]float32) error
}
