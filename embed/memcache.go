package embed

import (
	"context"
	"slices"
	"sync"
)

// MemCache is an in-memory Cache for tests and one-off runs: vectors by
// (model, text hash), lost when the process ends. It copies vectors on the
// way in and out, so callers cannot alter what it holds. The zero value is
// not usable; call NewMemCache. Safe for concurrent use.
type MemCache struct {
	mu   sync.Mutex
	vecs map[string]map[uint64][]float32
}

// NewMemCache returns an empty cache.
func NewMemCache() *MemCache {
	return &MemCache{vecs: make(map[string]map[uint64][]float32)}
}

// EmbeddingsGet returns the vectors held for the given hashes under model;
// missing hashes are absent from the map. It never fails.
func (m *MemCache) EmbeddingsGet(_ context.Context, model string, textHashes []uint64) (map[uint64][]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[uint64][]float32)
	byHash := m.vecs[model]
	for _, h := range textHashes {
		if v, ok := byHash[h]; ok {
			out[h] = slices.Clone(v)
		}
	}
	return out, nil
}

// EmbeddingsPut stores the vectors under model, replacing any held for the
// same hashes. It never fails.
func (m *MemCache) EmbeddingsPut(_ context.Context, model string, vecs map[uint64][]float32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	byHash := m.vecs[model]
	if byHash == nil {
		byHash = make(map[uint64][]float32, len(vecs))
		m.vecs[model] = byHash
	}
	for h, v := range vecs {
		byHash[h] = slices.Clone(v)
	}
	return nil
}

// Len returns how many vectors are held under model.
func (m *MemCache) Len(model string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.vecs[model])
}
