package pgstore

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
)

// received collects what one ListenBroadcast delivered.
type received struct {
	mu       sync.Mutex
	msgs     []bmsg
	connects int
	ch       chan struct{}
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
		r.msgs = append(r.msgs, bmsg{topic, payload})
	}
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
}

func (r *received) snapshot() ([]bmsg, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bmsg(nil), r.msgs...), r.connects
}

// waitFor waits until cond holds on the received messages (deliver signals
// r.ch after each delivery; its buffer of one keeps a signal that arrives
// between the check and the wait).
func (r *received) waitFor(tb testing.TB, what string, cond func(msgs []bmsg, connects int) bool) {
	tb.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if cond(r.snapshot()) {
			return
		}
		select {
		case <-r.ch:
		case <-deadline:
			msgs, c := r.snapshot()
			tb.Fatalf("timed out waiting for %s: %d messages, %d connects", what, len(msgs), c)
		}
	}
}

// lastIs reports whether the last message received has topic.
func lastIs(topic string) func([]bmsg, int) bool {
	return func(m []bmsg, _ int) bool { return len(m) > 0 && m[len(m)-1].topic == topic }
}

// listenB starts ListenBroadcast on s until cleanup and waits until it listens.
func listenB(tb testing.TB, s *Store) *received {
	tb.Helper()
	r := &received{ch: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ListenBroadcast(ctx, r.deliver) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("ListenBroadcast: %v", err)
		}
	})
	r.waitFor(tb, "LISTEN", func(_ []bmsg, c int) bool { return c >= 1 })
	return r
}

func TestBroadcastCrossesStoresOnceAndSkipsOwn(t *testing.T) {
	url := testURL(t)
	schema := newSchema(t, url)
	a, b := openIn(t, url, schema), openIn(t, url, schema)
	ra, rb := listenB(t, a), listenB(t, b)
	ctx := context.Background()

	small := []byte(`{"actor_id":"u1","cursor":{"x":1,"y":2}}`)
	large := bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16) // 64 KiB: through the table
	large[100] = 0                                               // NUL: never inline
	const n = 50
	for i := 0; i < n; i++ {
		if err := a.Broadcast(ctx, "t.small", fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
			t.Fatalf("Broadcast %d: %v", i, err)
		}
	}
	if err := a.Broadcast(ctx, "t.small", small); err != nil {
		t.Fatal(err)
	}
	if err := a.Broadcast(ctx, "t.large", large); err != nil {
		t.Fatal(err)
	}
	if err := b.Broadcast(ctx, "t.fromb", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	// PostgreSQL delivers notifications in commit order, so a duplicate or an
	// echo of anything above would arrive before these last messages.
	for _, s := range []*Store{a, b} {
		if err := s.Broadcast(ctx, "t.end", nil); err != nil {
			t.Fatal(err)
		}
	}
	rb.waitFor(t, "a's last message on b", lastIs("t.end"))
	ra.waitFor(t, "b's last message on a", lastIs("t.end"))

	mb, _ := rb.snapshot()
	if len(mb) != n+3 {
		t.Fatalf("b got %d messages, want %d (exactly once each)", len(mb), n+3)
	}
	for i := 0; i < n; i++ { // one sender's messages arrive in order
		if want := fmt.Sprintf(`{"i":%d}`, i); mb[i].topic != "t.small" || string(mb[i].payload) != want {
			t.Fatalf("b's message %d = %s %q, want t.small %q", i, mb[i].topic, mb[i].payload, want)
		}
	}
	if string(mb[n].payload) != string(small) {
		t.Errorf("small payload = %q", mb[n].payload)
	}
	if mb[n+1].topic != "t.large" || !bytes.Equal(mb[n+1].payload, large) {
		t.Errorf("large payload: topic %q, %d bytes, equal %v", mb[n+1].topic, len(mb[n+1].payload), bytes.Equal(mb[n+1].payload, large))
	}
	ma, _ := ra.snapshot()
	if len(ma) != 2 || ma[0].topic != "t.fromb" || string(ma[0].payload) != "hi" {
		t.Errorf("a got %+v, want only b's messages (never its own)", ma)
	}
}

func TestBroadcastStaysInItsSchema(t *testing.T) {
	url := testURL(t)
	a := openIn(t, url, newSchema(t, url))
	other := openIn(t, url, newSchema(t, url))
	otherPeer := openIn(t, url, other.cfg.schema)
	peer := openIn(t, url, a.cfg.schema)
	ro, rp := listenB(t, other), listenB(t, peer)
	if err := a.Broadcast(context.Background(), "t", []byte("x")); err != nil {
		t.Fatal(err)
	}
	rp.waitFor(t, "same-schema peer", func(m []bmsg, _ int) bool { return len(m) == 1 })
	// Notifications arrive in commit order: a message leaking from a's schema
	// would reach other before this one from its own schema.
	if err := otherPeer.Broadcast(context.Background(), "t.end", nil); err != nil {
		t.Fatal(err)
	}
	ro.waitFor(t, "the other schema's own message", lastIs("t.end"))
	if m, _ := ro.snapshot(); len(m) != 1 {
		t.Fatalf("a store in another schema received %d messages from a", len(m)-1)
	}
	ca, _ := a.BroadcastChannel(context.Background())
	co, _ := other.BroadcastChannel(context.Background())
	if ca == co || !strings.HasPrefix(ca, "canvasd_events:") {
		t.Fatalf("channels %q and %q", ca, co)
	}
}

func TestBroadcastLimits(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for _, topic := range []string{"", "a\nb", strings.Repeat("x", maxBroadcastTopic+1), "nul\x00"} {
		if err := s.Broadcast(ctx, topic, []byte("x")); !errors.Is(err, canvas.ErrInvalid) {
			t.Errorf("topic %q: err = %v, want ErrInvalid", topic, err)
		}
	}
	err := s.Broadcast(ctx, "t", make([]byte, MaxBroadcastBytes+1))
	if !errors.Is(err, canvas.ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprint(MaxBroadcastBytes)) {
		t.Errorf("oversized payload: err = %v, want ErrTooLarge naming the limit", err)
	}
	// The inline/stored boundary: exactly MaxInlineBroadcast bytes travel in
	// the NOTIFY (PostgreSQL refuses payloads of 8000 bytes or more, so this
	// also proves the header fits), one more byte goes through the table.
	r := listenB(t, openIn(t, testURL(t), s.cfg.schema))
	for _, n := range []int{MaxInlineBroadcast, MaxInlineBroadcast + 1} {
		p := bytes.Repeat([]byte("é"), n/2)
		if n%2 == 1 {
			p = append(p, 'x')
		}
		if err := s.Broadcast(ctx, strings.Repeat("t", maxBroadcastTopic), p); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
	}
	r.waitFor(t, "both boundary messages", func(m []bmsg, _ int) bool { return len(m) == 2 })
	var rows int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM canvasd_broadcasts`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Errorf("%d rows stored, want 1 (only the payload over MaxInlineBroadcast)", rows)
	}
	m, _ := r.snapshot()
	if len(m[0].payload) != MaxInlineBroadcast || len(m[1].payload) != MaxInlineBroadcast+1 {
		t.Errorf("payload sizes %d, %d", len(m[0].payload), len(m[1].payload))
	}
}

func TestBroadcastExpiredRowIsSkipped(t *testing.T) {
	url := testURL(t)
	schema := newSchema(t, url)
	a, b := openIn(t, url, schema), openIn(t, url, schema)
	rb := listenB(t, b)
	ctx := context.Background()
	if err := a.Broadcast(ctx, "t", make([]byte, 10000)); err != nil {
		t.Fatal(err)
	}
	rb.waitFor(t, "the stored message", func(m []bmsg, _ int) bool { return len(m) == 1 })
	// A row that is gone (pruned after BroadcastTTL) is skipped, not delivered.
	if _, _, ok := b.decodeBroadcast(ctx, a.instance+":r:987654321"); ok {
		t.Fatal("a missing row was delivered")
	}
	if _, _, ok := b.decodeBroadcast(ctx, b.instance+":i:t\nx"); ok {
		t.Fatal("the store's own broadcast was delivered")
	}
	// Pruning deletes rows older than BroadcastTTL and keeps newer ones.
	if _, err := a.pool.Exec(ctx, `UPDATE canvasd_broadcasts SET created_at = now() - interval '2 minutes'`); err != nil {
		t.Fatal(err)
	}
	if err := a.Broadcast(ctx, "t", make([]byte, 10000)); err != nil {
		t.Fatal(err)
	}
	a.pruneBroadcasts(ctx, true)
	var rows int
	if err := a.pool.QueryRow(ctx, `SELECT count(*) FROM canvasd_broadcasts`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Fatalf("%d rows after pruning, want 1", rows)
	}
}

func TestBroadcastListenerReconnects(t *testing.T) {
	url := testURL(t)
	schema := newSchema(t, url)
	a, b := openIn(t, url, schema), openIn(t, url, schema)
	rb := listenB(t, b)
	ctx := context.Background()
	// Kill b's listening connection; it must reconnect, say so with
	// deliver("", nil), and receive again.
	ch, err := b.BroadcastChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'canvasd-listener' AND strpos(query, $1) > 0`, `LISTEN "`+ch+`"`); err != nil {
		t.Fatal(err)
	}
	rb.waitFor(t, "the reconnection", func(_ []bmsg, c int) bool { return c >= 2 })
	if err := a.Broadcast(ctx, "t", []byte("after")); err != nil {
		t.Fatal(err)
	}
	rb.waitFor(t, "a message after reconnecting", func(m []bmsg, _ int) bool {
		return len(m) == 1 && string(m[0].payload) == "after"
	})
}
