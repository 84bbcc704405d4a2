//go:build linux

package offheap

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestWordsLiveOutsideTheHeap: a large array's memory is not counted in
// the Go heap.
func TestWordsLiveOutsideTheHeap(t *testing.T) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	h := &holder{}
	h.bits = Words(h, 8<<20/8) // 8 MiB
	for i := range h.bits {
		h.bits[i] = 1
	}
	runtime.ReadMemStats(&m1)
	require.Less(t, int64(m1.HeapAlloc)-int64(m0.HeapAlloc), int64(1<<20), "8 MiB of words add less than 1 MiB to the heap")
	require.NotZero(t, uintptr(unsafe.Pointer(&h.bits[0])))
	runtime.KeepAlive(h)
}
