package embed

import (
	"context"
	"sync"
)

// Counter wraps an Embedder and counts what reaches it: the number of Embed
// calls and of texts in them. Pipeline tests use it to assert outcomes such
// as "a second run over unchanged input embeds 0 texts". It is safe for
// concurrent use and forwards CallSize when the wrapped Embedder has one.
type Counter struct {
	inner Embedder

	mu    sync.Mutex
	calls int
	texts int
}

// NewCounter wraps e.
func NewCounter(e Embedder) *Counter { return &Counter{inner: e} }

// Embed counts the call and its texts (also when the wrapped Embed fails),
// then delegates.
func (c *Counter) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.calls++
	c.texts += len(texts)
	c.mu.Unlock()
	return c.inner.Embed(ctx, texts)
}

// Model returns the wrapped Embedder's model.
func (c *Counter) Model() string { return c.inner.Model() }

// Dimensions returns the wrapped Embedder's dimensions.
func (c *Counter) Dimensions() int { return c.inner.Dimensions() }

// CallSize returns the wrapped Embedder's CallSize, or 0 (one call for all
// misses) when it has none.
func (c *Counter) CallSize() int {
	if cs, ok := c.inner.(CallSizer); ok {
		return cs.CallSize()
	}
	return 0
}

// Calls returns the number of Embed calls so far.
func (c *Counter) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// Texts returns the total number of texts passed to Embed so far.
func (c *Counter) Texts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.texts
}

// Reset sets both counts to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.texts = 0, 0
}
