// Package testwait is for tests: it waits for a condition that only a poll
// can observe (a count another goroutine keeps, a store that comes back,
// state read over HTTP) instead of sleeping for a fixed time. Where the code
// under test gives a signal (an event, a channel), wait on that instead.
package testwait

import (
	"testing"
	"time"
)

// Every is how often Until looks at its condition.
const Every = 10 * time.Millisecond

// Until calls cond every Every until it holds, and fails the test with
// what when it still does not after within.
func Until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for p := NewPoller(within, Every); !cond(); p.Wait() {
		if p.Expired() {
			t.Fatalf("%s: not within %v", what, within)
		}
	}
}

// Poller paces a loop that polls a condition (instead of sleeping): Wait
// returns at the next tick, Expired reports whether the time allowed has
// passed. The loop should end with Stop (or let the poller be collected).
//
//	for p := testwait.NewPoller(10*time.Second, 50*time.Millisecond); !cond(); p.Wait() {
//		if p.Expired() { t.Fatalf(...) }
//	}
type Poller struct {
	deadline time.Time
	tick     *time.Ticker
}

// NewPoller returns a poller that ticks every every and expires after within.
func NewPoller(within, every time.Duration) *Poller {
	return &Poller{deadline: time.Now().Add(within), tick: time.NewTicker(every)}
}

// Wait returns at the poller's next tick.
func (p *Poller) Wait() { <-p.tick.C }

// Expired reports whether the time allowed has passed.
func (p *Poller) Expired() bool { return time.Now().After(p.deadline) }

// Stop releases the poller's ticker.
func (p *Poller) Stop() { p.tick.Stop() }
