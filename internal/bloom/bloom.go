// Package bloom is a Bloom filter of strings that grows with what it
// holds: a chain of parts, each twice the capacity of the last, so a
// listing of unknown length pays about BitsPerKey bits a key however long
// it turns out. A key is asked of every part; the false-positive rate is
// the sum of the parts' (about k parts for 2^k × FirstCap keys).
//
// A part's bits live outside the Go heap (internal/offheap), where they
// count once, not toward the collector's heap goal.
package bloom

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"

	"github.com/kgsync/kgsync/internal/offheap"
)

// Params size a Filter: BitsPerKey bits and Hashes probes a key, the first
// part holding FirstCap keys. With k = BitsPerKey × ln 2 probes a part's
// false-positive rate is about 0.6185^BitsPerKey (10 bits: 1 %; 32 bits:
// 2 × 10⁻⁷).
type Params struct {
	BitsPerKey, Hashes, FirstCap int
}

// Filter is a growing Bloom filter of strings. Set Params before the
// first Add; the zero Params are 10 bits, 7 probes and 65,536 keys. Not
// safe for concurrent use.
type Filter struct {
	Params
	parts []*part
}

type part struct {
	bits     []uint64
	m        uint64 // bit count
	n, limit int
}

func (f *Filter) params() Params {
	p := f.Params
	if p.BitsPerKey <= 0 {
		p.BitsPerKey = 10
	}
	if p.Hashes <= 0 {
		p.Hashes = 7
	}
	if p.FirstCap <= 0 {
		p.FirstCap = 1 << 16
	}
	return p
}

// probe returns the i-th bit of hash h in a part of m bits: double hashing
// (h1 + i·h2), mapped onto [0, m) by a multiply-high.
func probe(h uint64, i int, m uint64) uint64 {
	hi, _ := bits.Mul64(h+uint64(i)*(h>>33|h<<31|1), m)
	return hi
}

// Add records key.
func (f *Filter) Add(key string) {
	pr := f.params()
	if len(f.parts) == 0 || f.parts[len(f.parts)-1].n >= f.parts[len(f.parts)-1].limit {
		c := pr.FirstCap
		if len(f.parts) > 0 {
			c = 2 * f.parts[len(f.parts)-1].limit
		}
		words := (c*pr.BitsPerKey + 63) / 64
		p := &part{m: uint64(words) * 64, limit: c}
		p.bits = offheap.Words(p, words)
		f.parts = append(f.parts, p)
	}
	p := f.parts[len(f.parts)-1]
	h := xxhash.Sum64String(key)
	for i := range pr.Hashes {
		b := probe(h, i, p.m)
		p.bits[b/64] |= 1 << (b % 64)
	}
	p.n++
}

// MayContain reports whether key may have been added; false is certain.
func (f *Filter) MayContain(key string) bool {
	pr := f.params()
	h := xxhash.Sum64String(key)
parts:
	for _, p := range f.parts {
		for i := range pr.Hashes {
			if b := probe(h, i, p.m); p.bits[b/64]&(1<<(b%64)) == 0 {
				continue parts
			}
		}
		return true
	}
	return false
}

// Bytes returns the bytes of bits the filter holds.
func (f *Filter) Bytes() int {
	n := 0
	for _, p := range f.parts {
		n += 8 * len(p.bits)
	}
	return n
}

// Parts returns the number of parts.
func (f *Filter) Parts() int { return len(f.parts) }
