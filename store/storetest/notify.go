package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// Cases of the optional interfaces store.Notifier and store.Broadcaster,
// skipped for a store that does not implement them. They open a second
// Store over the same data (a peer, as another process would) with Reopen
// while the first one is still open.

// waitWithin bounds every wait for a notification or message.
const waitWithin = 10 * time.Second

// peer opens a second Store over h's data, closed at cleanup.
func (h *harness) peer(t *testing.T) store.Store {
	t.Helper()
	p := h.reopenFn(t)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// runListener runs listen until cleanup, then checks it returned nil
// within waitWithin of its context ending.
func runListener(t *testing.T, what string, listen func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- listen(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s returned %v after its context ended, want nil", what, err)
			}
		case <-time.After(waitWithin):
			t.Errorf("%s did not return within %v of its context ending", what, waitWithin)
		}
	})
}

func testNotifier(t *testing.T, h *harness) {
	n := h.s.Capabilities().Notifier
	if n == nil {
		t.Skip("the store is not a store.Notifier")
	}
	peer := h.peer(t)
	mustCreate(t, h.s, "c1")
	mustCreate(t, h.s, "c2")
	wakes := make(chan string, 64)
	runListener(t, "Listen", func(ctx context.Context) error {
		return n.Listen(ctx, func(id string) { wakes <- id })
	})
	next := func(what string) string {
		t.Helper()
		select {
		case id := <-wakes:
			return id
		case <-time.After(waitWithin):
			t.Fatalf("no wake-up within %v: %s", waitWithin, what)
			return ""
		}
	}
	// wake("") comes first, once the listener is in effect.
	if id := next(`wake("") when the listener is in effect`); id != "" {
		t.Fatalf(`first wake-up = %q, want "" (listening)`, id)
	}
	// Each append of the peer wakes the listener for its canvas (other
	// wake-ups in between are allowed: waking is always safe).
	for i, id := range []string{"c1", "c2", "c1"} {
		head := headOf(t, peer, id)
		mustAppend(t, peer, id, head, commitsFrom(id, head+1, 1))
		for next(fmt.Sprintf("append %d of the peer, to %s", i, id)) != id {
		}
	}
}

// received collects one ListenBroadcast's deliveries.
type received struct {
	mu       sync.Mutex
	msgs     []bmsg
	connects int
	arrived  chan struct{} // signalled after each delivery (buffer of one)
}

type bmsg struct {
	topic   string
	payload []byte
}

func (r *received) deliver(topic string, payload []byte) {
	r.mu.Lock()
	if topic == "" {
		r.connects++
	} else {
		r.msgs = append(r.msgs, bmsg{topic, bytes.Clone(payload)})
	}
	r.mu.Unlock()
	select {
	case r.arrived <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds on what was delivered.
func (r *received) waitFor(t *testing.T, what string, cond func(msgs []bmsg, connects int) bool) []bmsg {
	t.Helper()
	deadline := time.After(waitWithin)
	for {
		r.mu.Lock()
		msgs, connects := append([]bmsg(nil), r.msgs...), r.connects
		r.mu.Unlock()
		if cond(msgs, connects) {
			return msgs
		}
		select {
		case <-r.arrived:
		case <-deadline:
			t.Fatalf("not within %v: %s (%d messages, %d connects)", waitWithin, what, len(msgs), connects)
		}
	}
}

func testBroadcaster(t *testing.T, h *harness) {
	b := h.s.Capabilities().Broadcaster
	if b == nil {
		t.Skip("the store is not a store.Broadcaster")
	}
	peer := h.peer(t).Capabilities().Broadcaster
	if peer == nil {
		t.Fatal("the peer store is not a store.Broadcaster")
	}
	ctx := ctxT(t)
	r := &received{arrived: make(chan struct{}, 1)}
	runListener(t, "ListenBroadcast", func(ctx context.Context) error { return b.ListenBroadcast(ctx, r.deliver) })
	r.waitFor(t, `deliver("", nil) when the listener is in effect`, func(_ []bmsg, c int) bool { return c >= 1 })

	// One sender's messages arrive in order, exactly as sent: small JSON,
	// binary with NUL and invalid UTF-8, 1 MiB, empty.
	binary := []byte("a\x00b\xffc\r\nd")
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20/16)
	want := []bmsg{{"t.small", []byte(`{"actor_id":"u1","cursor":{"x":1,"y":2}}`)}}
	for i := range 20 {
		want = append(want, bmsg{"t.seq", fmt.Appendf(nil, `{"i":%d}`, i)})
	}
	want = append(want, bmsg{"t.binary", binary}, bmsg{"t.big", big}, bmsg{strings.Repeat("x", 64), []byte{}})
	for _, m := range want {
		if err := peer.Broadcast(ctx, m.topic, m.payload); err != nil {
			t.Fatalf("Broadcast(%q, %d bytes): %v", m.topic, len(m.payload), err)
		}
	}
	got := r.waitFor(t, "the peer's messages", func(m []bmsg, _ int) bool { return len(m) >= len(want) })
	if len(got) != len(want) {
		t.Fatalf("received %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].topic != want[i].topic || !bytes.Equal(got[i].payload, want[i].payload) {
			t.Fatalf("message %d = %q (%d bytes), want %q (%d bytes)", i, got[i].topic, len(got[i].payload), want[i].topic, len(want[i].payload))
		}
	}

	// Topics: 1 to 64 bytes of UTF-8 without NUL or line breaks.
	for _, topic := range []string{"", strings.Repeat("x", 65), "a\nb", "a\rb", "nul\x00", "bad\xff"} {
		if err := b.Broadcast(ctx, topic, []byte("x")); !errors.Is(err, canvas.ErrInvalid) {
			t.Errorf("Broadcast(topic %q) = %v, want an error wrapping canvas.ErrInvalid", topic, err)
		}
	}
}
