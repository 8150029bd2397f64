package hub

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestFanoutOverflowKeepsOrder: events published faster than a shard
// delivers them (its queue overflows, up to its spill's bound) still reach
// a subscriber in the order they were published.
func TestFanoutOverflowKeepsOrder(t *testing.T) {
	const n = fanQueue + maxSpill // all of them fit even if the shard delivers none meanwhile
	h := New(Config{QueueSize: 2 * n})
	sub, err := h.Subscribe("c1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unsubscribe("c1", sub)
	for i := range n {
		h.PublishEvent("c1", "x:seq", map[string]int{"i": i})
	}
	next := 0
	deadline := time.After(10 * time.Second)
	for next < n {
		select {
		case f := <-sub.ch:
			var ev struct{ I int }
			body := f.data[bytes.Index(f.data, []byte("data: "))+6:]
			if err := json.Unmarshal(bytes.TrimSpace(body), &ev); err != nil {
				t.Fatalf("frame %q: %v", f.data, err)
			}
			if ev.I != next {
				t.Fatalf("event %d arrived when %d was next: the order was lost", ev.I, next)
			}
			next++
		case <-deadline:
			t.Fatalf("%d of %d events arrived", next, n)
		}
	}
}
