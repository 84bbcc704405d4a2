//go:build !unix

package offheap

// mapWords is unavailable here: Words makes ordinary slices.
func mapWords[T any](*T, int) []uint64 { return nil }
