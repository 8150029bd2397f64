package store_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind (canvas
// writers, the pruner, the commit listener).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
