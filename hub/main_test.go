package hub

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind (fan-out
// shards, the relay's listener and sender, host watchers).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
