package offheap

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type holder struct{ bits []uint64 }

// TestWordsAreZeroedWritableAndReleased: a large array is zeroed and
// holds what is written to every word; small ones are ordinary slices;
// the mapping is released once its owner is unreachable.
func TestWordsAreZeroedWritableAndReleased(t *testing.T) {
	before := released.Load()
	func() {
		h := &holder{}
		h.bits = Words(h, MinBytes/8*3)
		require.Len(t, h.bits, MinBytes/8*3)
		for i := range h.bits {
			require.Zero(t, h.bits[i])
			h.bits[i] = uint64(i) * 0x9e3779b97f4a7c15
		}
		for i := range h.bits {
			require.Equal(t, uint64(i)*0x9e3779b97f4a7c15, h.bits[i])
		}
		runtime.KeepAlive(h)
	}()
	if runtime.GOOS == "linux" || runtime.GOOS == "darwin" || runtime.GOOS == "freebsd" {
		deadline := time.Now().Add(10 * time.Second)
		for released.Load() == before && time.Now().Before(deadline) {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		require.Greater(t, released.Load(), before, "the mapping is released after its owner")
	}

	small := &holder{}
	small.bits = Words(small, 100)
	require.Len(t, small.bits, 100)
	require.Nil(t, Words(small, 0))
}
