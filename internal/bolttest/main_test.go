package bolttest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that Close (and the driver's Close) leave no goroutines.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
