package hub

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// bus is an in-memory store.Broadcaster shared by the hubs of one test, one
// end per "process": like PostgreSQL's NOTIFY it delivers a message to every
// other end's listener, in the order each sender sent them, never to the
// sender, and says "(re)connected" (topic "") when a listener starts.
type bus struct {
	mu   sync.Mutex
	ends []*busEnd
}

type busMsg struct {
	topic   string
	payload []byte
}

type busEnd struct {
	bus  *bus
	in   chan busMsg
	gate chan struct{} // not nil: Broadcast waits until it is closed
	cut  atomic.Bool   // the process is gone: what it sends is lost
}

func (b *bus) end() *busEnd {
	e := &busEnd{bus: b, in: make(chan busMsg, 1<<16)}
	b.mu.Lock()
	b.ends = append(b.ends, e)
	b.mu.Unlock()
	return e
}

func (e *busEnd) Broadcast(ctx context.Context, topic string, payload []byte) error {
	if e.gate != nil {
		select {
		case <-e.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if e.cut.Load() {
		return nil
	}
	e.bus.mu.Lock()
	defer e.bus.mu.Unlock()
	for _, o := range e.bus.ends {
		if o != e {
			o.in <- busMsg{topic, bytes.Clone(payload)}
		}
	}
	return nil
}

func (e *busEnd) ListenBroadcast(ctx context.Context, deliver func(topic string, payload []byte)) error {
	deliver("", nil)
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-e.in:
			deliver(m.topic, m.payload)
		}
	}
}

// logBuffer collects what a hub logs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// drain returns the frames queued for s.
func drain(s *Subscription) []*frame {
	var out []*frame
	for {
		select {
		case f := <-s.ch:
			out = append(out, f)
		default:
			return out
		}
	}
}

// countEvents counts the frames of event name among fs.
func countEvents(fs []*frame, name string) int {
	n := 0
	for _, f := range fs {
		if bytes.Contains(f.data, []byte("event: "+name+"\n")) {
			n++
		}
	}
	return n
}

// TestRelayAcrossHubs: two hubs on one bus behave as two processes. Each
// counts the other's subscribers (presence), elects the other's host
// candidate, an ephemeral event published on one reaches the other's
// subscribers once, and a hub that stops withdraws its counts at once.
func TestRelayAcrossHubs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b bus
		a, bh := New(Config{Broadcaster: b.end()}), New(Config{Broadcaster: b.end()})
		a.Start(t.Context())
		bh.Start(t.Context())
		defer a.Stop()
		defer bh.Stop()

		sa, _ := a.Subscribe("c1", nil)
		defer a.Unsubscribe("c1", sa)
		sb, err := bh.Subscribe("c1", &Browser{id: "b1", owner: "u", candidate: true, since: time.Now().UnixNano()})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := a.Subscribers("c1"); n != 2 {
			t.Fatalf("A counts %d subscribers of c1, want 2 (its own and B's)", n)
		}
		if h := a.Host("c1"); h != "b1" {
			t.Fatalf("A elected %q, want B's candidate b1", h)
		}
		// Another token may not declare b1 on A while B's stream holds it.
		if _, err := a.Subscribe("c1", &Browser{id: "b1", owner: "someone else", since: time.Now().UnixNano()}); err == nil {
			t.Fatal("A let another token declare the browser B's stream declares")
		}
		if err := a.SpeaksFor("c1", "b1", "u"); err != nil {
			t.Fatalf("A refuses input for b1 from its owner: %v", err)
		}
		drain(sa)
		drain(sb)

		a.PublishEvent("c1", "gesture", map[string]int{"x": 1})
		synctest.Wait()
		if n := countEvents(drain(sb), "gesture"); n != 1 {
			t.Fatalf("B's subscriber got the gesture %d times, want once", n)
		}
		if n := countEvents(drain(sa), "gesture"); n != 1 {
			t.Fatalf("A's subscriber got the gesture %d times, want once", n)
		}

		bh.Unsubscribe("c1", sb)
		synctest.Wait()
		if h := a.Host("c1"); h != "" {
			t.Fatalf("A still elects %q after B's candidate left", h)
		}
		sb2, _ := bh.Subscribe("c1", nil)
		defer bh.Unsubscribe("c1", sb2)
		synctest.Wait()
		if n := a.Subscribers("c1"); n != 2 {
			t.Fatalf("A counts %d subscribers of c1, want 2", n)
		}
		bh.Stop()
		synctest.Wait()
		if n := a.Subscribers("c1"); n != 1 {
			t.Fatalf("A counts %d subscribers of c1 after B stopped, want its own 1", n)
		}
	})
}

// TestRelayPresenceExpires: a process that dies without a word (no "bye")
// keeps its counts and host candidates in the others' view until
// presenceTTL has passed without a refresh, then they are gone and the host
// is elected anew.
func TestRelayPresenceExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b bus
		endB := b.end()
		a, bh := New(Config{Broadcaster: b.end()}), New(Config{Broadcaster: endB})
		a.Start(t.Context())
		bh.Start(t.Context())
		defer a.Stop()
		defer bh.Stop()
		sb, _ := bh.Subscribe("c1", &Browser{id: "b1", owner: "u", candidate: true, since: time.Now().UnixNano()})
		defer bh.Unsubscribe("c1", sb)
		synctest.Wait()
		if n, h := a.Subscribers("c1"), a.Host("c1"); n != 1 || h != "b1" {
			t.Fatalf("A sees %d subscribers and host %q, want 1 and b1", n, h)
		}
		endB.cut.Store(true) // B is gone: its refreshes are lost
		advance(presenceTTL - presenceEvery)
		if n := a.Subscribers("c1"); n != 1 {
			t.Fatalf("A forgot B's subscriber before presenceTTL: %d", n)
		}
		advance(2 * presenceEvery)
		if n, h := a.Subscribers("c1"), a.Host("c1"); n != 0 || h != "" {
			t.Fatalf("after presenceTTL A still sees %d subscribers and host %q", n, h)
		}
	})
}

// TestRelayOverflowDropsWithoutBlocking floods the relay while the bus
// does not take messages: publishers never wait (the queue overflows, the
// excess is dropped for the other processes and logged once per interval),
// and once the bus takes messages again the backlog goes out and events
// cross again.
func TestRelayOverflowDropsWithoutBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b bus
		endA := b.end()
		endA.gate = make(chan struct{})
		logs := &logBuffer{}
		a := New(Config{Broadcaster: endA, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		bh := New(Config{Broadcaster: b.end()})
		a.Start(t.Context())
		bh.Start(t.Context())
		defer a.Stop()
		defer bh.Stop()
		sb, _ := bh.Subscribe("c1", nil)
		defer bh.Unsubscribe("c1", sb)
		synctest.Wait()

		const total = 4 * relayQueue
		for i := range total {
			a.PublishEvent("c_flood", "gesture", map[string]int{"i": i})
		}
		if a.relay.dropped.Load() == 0 {
			t.Fatalf("no event dropped after %d publishes into a %d-event queue", total, relayQueue)
		}
		if n := strings.Count(logs.String(), "relay: queue full"); n != 1 {
			t.Errorf("%d queue-full warnings, want 1 (rate limited):\n%s", n, logs.String())
		}
		close(endA.gate)
		synctest.Wait()
		if n := len(a.relay.out); n != 0 {
			t.Fatalf("%d events still queued once the bus took messages again", n)
		}
		drain(sb)
		a.PublishEvent("c1", "agent:status", map[string]string{"state": "done"})
		synctest.Wait()
		if n := countEvents(drain(sb), "agent:status"); n != 1 {
			t.Fatalf("B got the event after the flood %d times, want once", n)
		}
	})
}
