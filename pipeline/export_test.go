package pipeline

import "testing"

// SetHoldBounds lowers the bounds of a listing's hold (maxHeldRecords,
// maxHeldBytes) for t, and puts them back when t ends. The bounds are
// package variables: a test that sets them must not run in parallel.
func SetHoldBounds(t *testing.T, records, bytes int) {
	r, b := maxHeldRecords, maxHeldBytes
	maxHeldRecords, maxHeldBytes = records, bytes
	t.Cleanup(func() { maxHeldRecords, maxHeldBytes = r, b })
}
