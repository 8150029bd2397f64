package hub

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHostCandidateOrder(t *testing.T) {
	none := hostCandidate{}
	early, late := hostCandidate{ID: "z", Since: 1}, hostCandidate{ID: "a", Since: 2}
	tie := hostCandidate{ID: "b", Since: 1}
	for _, c := range []struct {
		x, y hostCandidate
		want bool
	}{
		{early, late, true}, {late, early, false}, {early, none, true}, {none, early, false}, {none, none, false},
		{tie, early, true}, {early, tie, false},
	} {
		if got := c.x.before(c.y); got != c.want {
			t.Errorf("%+v before %+v = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}

// TestHostAnnouncedBeforeItsHostOnlyEvents: a browser elected host gets
// the agent:host event naming it before any event sent to the host only
// (set_viewport, resent envelopes): a browser told to act as host before it
// knows it is (the TS client's set_viewport hook runs for the host only)
// drops the event, and ignores its resends.
func TestHostAnnouncedBeforeItsHostOnlyEvents(t *testing.T) {
	h := New(Config{QueueSize: 4096})
	const cid = "c1"
	bad := 0
	for i := 0; i < 500 && bad == 0; i++ {
		now := time.Now()
		a, _ := h.Subscribe(cid, &Browser{id: "a", owner: "u", candidate: true, since: now.UnixNano()})
		b, _ := h.Subscribe(cid, &Browser{id: "b", owner: "u", candidate: true, since: now.UnixNano() + 1})
		var stop atomic.Bool
		var published atomic.Int64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				h.PublishToHost(cid, "x:hostonly", map[string]int{"n": 1})
				published.Add(1)
				runtime.Gosched() // not a flood: the shards' queues never fill
			}
		}()
		// The publisher runs before, during and after the election.
		publishes := func(n int64) {
			for until := published.Load() + n; published.Load() < until; {
				runtime.Gosched()
			}
		}
		publishes(20)
		h.Unsubscribe(cid, a) // b is elected
		publishes(20)
		stop.Store(true)
		wg.Wait()
		h.mu.RLock()
		fo := h.fans[cid]
		h.mu.RUnlock()
		h.Unsubscribe(cid, b)
		fo.shardsDone.Wait() // the shards delivered what they held
		hostB := false
		for len(b.ch) > 0 {
			f := <-b.ch
			switch {
			case bytes.Contains(f.data, []byte(`"host_client_id":"b"`)):
				hostB = true
			case bytes.Contains(f.data, []byte("x:hostonly")) && f.to == "b" && !hostB:
				bad++
			}
		}
	}
	if bad > 0 {
		t.Fatalf("a host-only event reached b before the agent:host event naming it host")
	}
}
