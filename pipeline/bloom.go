package pipeline

import (
	"github.com/cespare/xxhash/v2"

	"github.com/kgsync/kgsync/internal/offheap"
)

// keyFilter is a Bloom filter of strings that grows with what it holds (a
// chain of filters, each twice the capacity of the last, about 10 bits a
// key for 1 % false positives): the differ asks it whether a key was
// listed before, which it can then answer "certainly not" for in about
// 1.2 bytes a key instead of a look-up.
type keyFilter struct {
	parts []*bloomPart
}

type bloomPart struct {
	bits     []uint64
	n, limit int
}

const (
	bloomHashes   = 7
	bloomFirstCap = 1 << 16
	bloomBitsKey  = 10
)

// newBloomPart makes a part for capacity keys; its bits live outside the
// Go heap (offheap.Words), where they count once, not toward the garbage
// collector's heap goal.
func newBloomPart(capacity int) *bloomPart {
	words := (capacity*bloomBitsKey + 63) / 64
	p := &bloomPart{limit: capacity}
	p.bits = offheap.Words(p, words)
	return p
}

func (p *bloomPart) positions(h uint64, f func(bit uint64)) {
	h1, h2 := h, h>>33|h<<31
	m := uint64(len(p.bits)) * 64
	for i := range uint64(bloomHashes) {
		f((h1 + i*h2) % m)
	}
}

// add records key.
func (k *keyFilter) add(key string) {
	if len(k.parts) == 0 || k.parts[len(k.parts)-1].n >= k.parts[len(k.parts)-1].limit {
		c := bloomFirstCap
		if len(k.parts) > 0 {
			c = 2 * k.parts[len(k.parts)-1].limit
		}
		k.parts = append(k.parts, newBloomPart(c))
	}
	p := k.parts[len(k.parts)-1]
	p.positions(xxhash.Sum64String(key), func(b uint64) { p.bits[b/64] |= 1 << (b % 64) })
	p.n++
}

// mayContain reports whether key may have been added; false is certain.
func (k *keyFilter) mayContain(key string) bool {
	h := xxhash.Sum64String(key)
	for _, p := range k.parts {
		all := true
		p.positions(h, func(b uint64) {
			if p.bits[b/64]&(1<<(b%64)) == 0 {
				all = false
			}
		})
		if all {
			return true
		}
	}
	return false
}
