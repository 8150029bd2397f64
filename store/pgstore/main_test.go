package pgstore

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind (Listen,
// the NOTIFY sender, pool workers, proxies).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
