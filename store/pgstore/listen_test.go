package pgstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// wakeRecorder runs Listen in the background and records its wake-ups.
type wakeRecorder struct {
	ch     chan string
	cancel context.CancelFunc
	done   chan error
}

func startListen(t *testing.T, s *Store) *wakeRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &wakeRecorder{ch: make(chan string, 1024), cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- s.Listen(ctx, func(id string) { w.ch <- id }) }()
	t.Cleanup(w.stop(t))
	return w
}

func (w *wakeRecorder) stop(t *testing.T) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			w.cancel()
			select {
			case err := <-w.done:
				if err != nil {
					t.Errorf("Listen returned %v after its context ended, want nil", err)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("Listen did not return within 5 s of its context ending")
			}
		})
	}
}

// waitFor waits for the wake-up want, returning the others seen before it.
func (w *wakeRecorder) waitFor(t *testing.T, want string, within time.Duration) []string {
	t.Helper()
	var seen []string
	deadline := time.After(within)
	for {
		select {
		case id := <-w.ch:
			if id == want {
				return seen
			}
			seen = append(seen, id)
		case <-deadline:
			t.Fatalf("no wake(%q) within %v; saw %q", want, within, seen)
		}
	}
}

func TestListenWakesForOtherStores(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := newSchema(t, url)
	a := openIn(t, url, schema)
	b := openIn(t, url, schema)
	ctx := context.Background()
	for _, id := range []string{"c1", "c2", "c3"} {
		mustCreateCanvas(t, a, id)
	}
	w := startListen(t, a)
	w.waitFor(t, "", 5*time.Second) // LISTEN is in effect

	if err := b.Append(ctx, "c1", 0, mkCommits("c1", 0, 1, "b"), nil); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "c1", 5*time.Second)

	// a's own append is not echoed back to a; b's next one is.
	if err := a.Append(ctx, "c2", 0, mkCommits("c2", 0, 1, "a"), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ctx, "c3", 0, mkCommits("c3", 0, 1, "b"), nil); err != nil {
		t.Fatal(err)
	}
	// PostgreSQL delivers notifications in commit order: a wake-up for c2
	// would come before the one for c3.
	seen := w.waitFor(t, "c3", 5*time.Second)
	for _, id := range seen {
		if id == "c2" {
			t.Fatalf("Listen woke for the store's own append to c2 (saw %q)", seen)
		}
	}

	// A store in another schema uses another channel: no cross-talk.
	other := openTest(t)
	mustCreateCanvas(t, other, "c9")
	if err := other.Append(ctx, "c9", 0, mkCommits("c9", 0, 1, "x"), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ctx, "c1", 1, mkCommits("c1", 1, 1, "b"), nil); err != nil {
		t.Fatal(err)
	}
	if seen := w.waitFor(t, "c1", 5*time.Second); len(seen) != 0 {
		t.Fatalf("unexpected wake-ups %q (another schema's appends?)", seen)
	}
}

func TestListenSurvivesTerminatedConnection(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := newSchema(t, url)
	a := openIn(t, url, schema)
	b := openIn(t, url, schema)
	ctx := context.Background()
	mustCreateCanvas(t, a, "c1")
	w := startListen(t, a)
	w.waitFor(t, "", 5*time.Second)

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var killed int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'canvasd-listener' AND strpos(query, $1) > 0`,
		"LISTEN "+pgx.Identifier{a.Channel()}.Sanitize()+";").Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminated %d listener backends (%v), want 1", killed, err)
	}
	// The listener reconnects and says it may have missed notifications...
	w.waitFor(t, "", 5*time.Second)
	// ...and relays wake-ups again.
	if err := b.Append(ctx, "c1", 0, mkCommits("c1", 0, 1, "b"), nil); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "c1", 5*time.Second)
}

func TestListenStopsOnClose(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	done := make(chan error, 1)
	woke := make(chan struct{}, 8)
	go func() {
		done <- s.Listen(context.Background(), func(string) { woke <- struct{}{} })
	}()
	select {
	case <-woke:
	case <-time.After(5 * time.Second):
		t.Fatal("Listen never took effect")
	}
	_ = s.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Listen after Close = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Listen kept running after Close")
	}
}

func TestParsePayload(t *testing.T) {
	t.Parallel()
	s := &Store{instance: "0123456789abcdef"}
	cases := []struct {
		in  string
		id  string
		own bool
	}{
		{s.payload("c1"), "c1", true},
		{"fedcba9876543210:c1", "c1", false},
		{"fedcba9876543210:a:b", "a:b", false},
		{"c1", "c1", false},
		{"not-hex-prefix-x:c1", "not-hex-prefix-x:c1", false},
	}
	for _, tc := range cases {
		id, own := s.parsePayload(tc.in)
		if id != tc.id || own != tc.own {
			t.Errorf("parsePayload(%q) = %q, %v; want %q, %v", tc.in, id, own, tc.id, tc.own)
		}
	}
}

// TestOneListenConnection runs Listen and ListenBroadcast on one store and
// checks that they share one LISTEN connection, which serves both: another
// store's append wakes Listen and its broadcast reaches ListenBroadcast,
// also for a Listen started while the connection already listens.
func TestOneListenConnection(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := newSchema(t, url)
	a, b := openIn(t, url, schema), openIn(t, url, schema)
	ctx := context.Background()
	mustCreateCanvas(t, a, "c1")
	w := startListen(t, a)
	w.waitFor(t, "", 5*time.Second)
	rb := listenB(t, a) // waits for its deliver("", nil) on the running connection
	late := startListen(t, a)
	late.waitFor(t, "", 5*time.Second)

	bc, err := a.BroadcastChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listeners int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = 'canvasd-listener' AND (strpos(query, $1) > 0 OR strpos(query, $2) > 0)`,
		pgx.Identifier{a.Channel()}.Sanitize(), pgx.Identifier{bc}.Sanitize()).Scan(&listeners); err != nil {
		t.Fatal(err)
	}
	if listeners != 1 {
		t.Fatalf("%d LISTEN connections for one store, want 1", listeners)
	}
	if err := b.Append(ctx, "c1", 0, mkCommits("c1", 0, 1, "b"), nil); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "c1", 5*time.Second)
	late.waitFor(t, "c1", 5*time.Second)
	if err := b.Broadcast(ctx, "t", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	rb.waitFor(t, "the broadcast", lastIs("t"))
}
