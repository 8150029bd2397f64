package api

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind (streams,
// the hub and its relay, invoke waiters, agent runs, test servers).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
