//go:build unix

package offheap

import (
	"runtime"
	"syscall"
	"unsafe"
)

// mapWords maps n zeroed words and releases them when owner is
// unreachable; nil when the mapping fails.
func mapWords[T any](owner *T, n int) []uint64 {
	b, err := syscall.Mmap(-1, 0, n*8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	runtime.AddCleanup(owner, func(b []byte) {
		if syscall.Munmap(b) == nil {
			released.Add(1)
		}
	}, b)
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n)
}
