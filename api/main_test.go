package api

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the tests, stops the Chromium they shared (see uiBrowser),
// then fails the package when a test left goroutines behind (streams, the
// hub and its relay, invoke waiters, agent runs, test servers), as
// goleak.VerifyTestMain does.
func TestMain(m *testing.M) {
	code := m.Run()
	stopSharedChromium()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
