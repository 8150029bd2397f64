package main

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when the tests leave goroutines behind: run
// returns only once everything serve started (the engine, the hub and its
// relay, the streams, the agent, the token keeper, the HTTP server) has
// stopped. The tests' own HTTP clients keep idle connections to the
// servers they talked to; they are closed first (they are not serve's).
func TestMain(m *testing.M) {
	code := m.Run()
	http.DefaultClient.CloseIdleConnections()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left behind after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
