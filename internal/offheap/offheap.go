// Package offheap allocates large arrays of plain bits outside the Go heap.
//
// A Bloom filter of a million listed keys holds megabytes of bits for a
// whole listing. On the Go heap such an array counts toward the garbage
// collector's heap goal, which lets the heap grow to about twice what is
// live (GOGC=100), so it costs up to twice its size in resident memory,
// and it grows with the table. Mapped outside the heap, it costs its own
// size. Only arrays without Go pointers may live there.
//
// The collector does not see the mapped memory, so it does not run any
// sooner for it: a mapping is released at the first collection after its
// owner became unreachable, and the runtime collects at least every two
// minutes (forcegcperiod in runtime/proc.go), so a daemon's finished listings hold
// their mappings for at most that long.
package offheap

import (
	"sync/atomic"
)

// MinBytes is the smallest array Words maps outside the heap; smaller
// ones are ordinary slices (a mapping takes whole 4 KiB pages).
const MinBytes = 64 << 10

// released counts the mappings released by their owners' cleanups (for
// tests).
var released atomic.Int64

// Words returns a zeroed slice of n words. When n words take at least
// MinBytes and the system can map anonymous memory (mmap(2) with
// MAP_ANONYMOUS|MAP_PRIVATE), the slice is backed by such a mapping,
// outside the Go heap, and the mapping is released (munmap(2)) once owner
// is unreachable (runtime.AddCleanup): owner must hold the slice, and
// nothing may use the slice after owner is gone. Otherwise, or when the
// mapping fails, it is an ordinary slice.
func Words[T any](owner *T, n int) []uint64 {
	if n <= 0 {
		return nil
	}
	if n*8 >= MinBytes {
		if w := mapWords(owner, n); w != nil {
			return w
		}
	}
	return make([]uint64, n)
}
