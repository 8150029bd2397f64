package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/internal/testwait"
	"github.com/canvasd/canvasd/store"
)

// TestAppendOutcomeKnownOrUnknown: a failed Append says whether it may have
// committed. With the database cut before the append, nothing was sent:
// canvas.ErrNotWritten, and indeed nothing is stored. When the answer is
// lost after the statements went out (a partition that drops the server's
// replies), the commit may well be stored: canvas.ErrOutcomeUnknown, and
// here it is. A black hole is also unknown. Each fails within the operation
// timeout.
func TestAppendOutcomeKnownOrUnknown(t *testing.T) {
	t.Parallel()
	dbURL := testURL(t)
	schema := newSchema(t, dbURL)
	target, rewrite := proxied(t, dbURL)
	p := startProxy(t, target)
	const op = 500 * time.Millisecond
	s := openIn(t, rewrite(p.Addr()), schema, WithOpTimeout(op), WithMaxConns(2))
	direct := openIn(t, dbURL, schema)
	ctx := context.Background()
	mustCreateCanvas(t, s, "c1")
	head := func() int64 {
		t.Helper()
		c, err := direct.GetCanvas(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		return c.HeadRev
	}
	appendOne := func(phase string) error {
		t.Helper()
		h := head()
		return within(t, phase+" Append", op+400*time.Millisecond, func() error {
			return s.Append(ctx, "c1", h, mkCommits("c1", h, 1, phase), nil)
		})
	}
	// What the proxied store announces reaches a listener of another store.
	var wakes atomic.Int32
	listening := make(chan struct{}, 1)
	lctx, stopListening := context.WithCancel(ctx)
	defer stopListening()
	go func() {
		_ = direct.Listen(lctx, func(canvasID string) {
			switch canvasID {
			case "c1":
				wakes.Add(1)
			case "": // LISTEN is in effect
				select {
				case listening <- struct{}{}:
				default:
				}
			}
		})
	}()
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("LISTEN did not take effect within 10 s")
	}
	if err := appendOne("open"); err != nil {
		t.Fatal(err)
	}
	waitWakes := func(n int32, what string) {
		t.Helper()
		testwait.Until(t, 10*time.Second, what+" announced (wake-ups "+fmt.Sprint(n)+")", func() bool { return wakes.Load() >= n })
	}
	waitWakes(1, "the first append") // before the cut, which would hold it back
	recover := func() {
		t.Helper()
		p.Restore()
		testwait.Until(t, 10*time.Second, "store recovered", func() bool { return s.Ping(ctx) == nil })
	}

	p.Cut()
	// No pooled connection survives the cut: one closed by the proxy but
	// still idle in the pool could take the statements into its socket
	// before the EOF shows, which the store rightly calls unknown. With
	// the pool emptied the Append must dial, and is refused.
	s.pool.Reset()
	before := head()
	err := appendOne("cut")
	if !errors.Is(err, canvas.ErrUnavailable) || !errors.Is(err, canvas.ErrNotWritten) || errors.Is(err, canvas.ErrOutcomeUnknown) {
		t.Errorf("cut: Append = %v, want ErrUnavailable and ErrNotWritten, not ErrOutcomeUnknown", err)
	}
	if h := head(); h != before {
		t.Errorf("cut: head moved %d → %d although the error said nothing was written", before, h)
	}
	recover()

	prepareAppend(t, s)
	before = head()
	p.Deaf()
	err = appendOne("deaf")
	if !errors.Is(err, canvas.ErrUnavailable) || !errors.Is(err, canvas.ErrOutcomeUnknown) || errors.Is(err, canvas.ErrNotWritten) {
		t.Errorf("deaf: Append = %v, want ErrUnavailable and ErrOutcomeUnknown", err)
	}
	if h := head(); h != before+1 {
		t.Errorf("deaf: head %d → %d: the lost answer's commit should have been stored (the case the error must not deny)", before, h)
	}
	recover()
	// The commit whose answer was lost is announced too (once the proxy
	// forwards again); then no NOTIFY holds a connection of the pool.
	waitWakes(2, "the append whose answer was lost")

	p.Stall()
	err = appendOne("stall")
	if !errors.Is(err, canvas.ErrOutcomeUnknown) {
		t.Errorf("stall: Append = %v, want ErrOutcomeUnknown (the statements were sent)", err)
	}
	recover()
	// The held statements reach the server when the proxy forwards again,
	// and may commit then: the head is re-read after a mismatch.
	if _, err := appendNext(ctx, s, "c1", "after"); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
}

// TestEngineWriteBoundedByOpTimeout: in a partition, a command queued behind
// another of the same canvas is answered within the operation timeout of
// its arrival, not after the first one's timeout plus its own. After an
// unknown outcome that did commit, a retry with the same idempotency key
// returns the original answer and writes nothing more.
func TestEngineWriteBoundedByOpTimeout(t *testing.T) {
	t.Parallel()
	dbURL := testURL(t)
	schema := newSchema(t, dbURL)
	target, rewrite := proxied(t, dbURL)
	p := startProxy(t, target)
	const op = 600 * time.Millisecond
	s := openIn(t, rewrite(p.Addr()), schema, WithOpTimeout(op), WithMaxConns(2))
	direct := openIn(t, dbURL, schema)
	ctx := context.Background()
	mustCreateCanvas(t, s, "c1")
	// The engine sees only the Store (no Notifier): a NOTIFY wake-up's
	// catch-up must not take the writer's time at a moment the test does
	// not control (it is bounded by the write timeout as well).
	e := store.NewEngine(withoutNotifier{s}, store.EngineConfig{Logger: quietLogger(), WriteTimeout: op})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	actor := canvas.Actor{ID: "u", Type: canvas.ActorHuman}
	env := func(i int) canvas.Envelope {
		base := int64(0)
		args, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("n%d", i), "name": "x"})
		return canvas.Envelope{Type: "create_node", BaseRev: &base, Args: args, IdempotencyKey: fmt.Sprintf("k%d", i)}
	}
	// Before any fault the machine's speed must not matter: the statements
	// are prepared without the op timeout, and the first command is retried
	// with its key until it is answered (a loaded machine may take longer
	// than the op timeout on a fresh connection).
	prepareAppend(t, s)
	testwait.Until(t, 30*time.Second, "a first command committed", func() bool {
		_, err := e.Execute(ctx, "c1", actor, env(0))
		return err == nil
	})
	drain := func() {
		select {
		case <-p.Held:
		default:
		}
	}

	// A black hole: the first command's store operation hangs; the second
	// queues behind it and must not wait for two timeouts. Each is answered
	// within the timeout of its arrival.
	drain()
	p.Stall()
	first := make(chan error, 1)
	go func() {
		start := time.Now()
		_, err := e.Execute(ctx, "c1", actor, env(1))
		if took := time.Since(start); took > op+300*time.Millisecond {
			t.Errorf("first command answered after %v, want ≤ the op timeout %v (+300 ms)", took, op)
		}
		first <- err
	}()
	select {
	case <-p.Held: // a store operation of the engine is on the wire
	case <-time.After(5 * time.Second):
		t.Fatal("nothing reached the proxy")
	}
	start := time.Now()
	_, err := e.Execute(ctx, "c1", actor, env(2))
	took := time.Since(start)
	if !errors.Is(err, canvas.ErrUnavailable) {
		t.Errorf("queued command: %v, want ErrUnavailable", err)
	}
	t.Logf("black hole: the queued command was answered after %v (op timeout %v)", took, op)
	if took > op+300*time.Millisecond {
		t.Errorf("queued command answered after %v, want ≤ the op timeout %v (+300 ms)", took, op)
	}
	if err := <-first; !errors.Is(err, canvas.ErrUnavailable) {
		t.Errorf("first command: %v, want ErrUnavailable", err)
	}
	p.Restore()

	// The answer is lost, the commit is not.
	waitPing := func() {
		t.Helper()
		testwait.Until(t, 10*time.Second, "store recovered", func() bool { return s.Ping(ctx) == nil })
	}
	waitPing()
	// A command that gets through: the engine has caught up with whatever
	// the black hole let through.
	if _, err := e.Execute(ctx, "c1", actor, env(4)); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	prepareAppend(t, s)
	p.Deaf()
	if _, err := e.Execute(ctx, "c1", actor, env(3)); !errors.Is(err, canvas.ErrOutcomeUnknown) {
		t.Errorf("deaf: %v, want ErrOutcomeUnknown", err)
	}
	p.Restore()
	waitPing()
	c, err := direct.GetCanvas(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	ans, err := e.Execute(ctx, "c1", actor, env(3))
	if err != nil || !ans.Replayed || ans.Outcome != store.OutcomeApplied {
		t.Fatalf("retry with the same key after an unknown outcome: %+v %v, want the replayed original answer", ans, err)
	}
	c2, err := direct.GetCanvas(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if c2.HeadRev != c.HeadRev {
		t.Errorf("the retry wrote again: head %d → %d", c.HeadRev, c2.HeadRev)
	}
	// The engine's state caught up with the commit whose answer was lost.
	if err := e.View(ctx, "c1", -1, func(st *canvas.State, _ string) error {
		if st.Rev != c2.HeadRev {
			return fmt.Errorf("engine state at rev %d, store head %d", st.Rev, c2.HeadRev)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

// prepareAppend prepares the append statements on every connection of s's
// pool, so that an Append sends them at once: with answers lost, a statement
// still to be prepared would wait for the prepare's answer and never run.
func prepareAppend(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	var conns []*pgxpool.Conn
	for range s.pool.Config().MaxConns {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		for _, sql := range []string{appendSQL, batchSQL} {
			if _, err := c.Conn().Prepare(ctx, sql, sql); err != nil {
				t.Fatal(err)
			}
		}
		c.Release()
	}
}

// TestUnknownOutcomeStillNotified: an append whose answer was lost (outcome
// unknown) but which committed still wakes the other processes, so their
// engines, and streams, get the commit without waiting for the canvas's
// next write.
func TestUnknownOutcomeStillNotified(t *testing.T) {
	dbURL := testURL(t)
	schema := newSchema(t, dbURL)
	target, rewrite := proxied(t, dbURL)
	p := startProxy(t, target)
	sa := openIn(t, rewrite(p.Addr()), schema, WithOpTimeout(500*time.Millisecond), WithMaxConns(2))
	sb := openIn(t, dbURL, schema)
	ctx := context.Background()
	mustCreateCanvas(t, sa, "c1")
	if err := sa.Append(ctx, "c1", 0, mkCommits("c1", 0, 1, "first"), nil); err != nil {
		t.Fatal(err)
	}
	eb := store.NewEngine(sb, store.EngineConfig{Logger: quietLogger()}) // another process, following c1
	if err := eb.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eb.Stop)
	headOf := func(want int64, what string) {
		t.Helper()
		testwait.Until(t, 10*time.Second, fmt.Sprintf("%s: the other process's head %d", what, want), func() bool {
			h, _, err := eb.Head(ctx, "c1")
			return err == nil && h == want
		})
	}
	headOf(1, "loaded")
	// B's listener is up once a commit reaches it by NOTIFY.
	if err := sa.Append(ctx, "c1", 1, mkCommits("c1", 1, 1, "second"), nil); err != nil {
		t.Fatal(err)
	}
	headOf(2, "notified of rev 2")
	prepareAppend(t, sa)
	p.Deaf() // the append reaches PostgreSQL; its answer does not come back
	err := sa.Append(ctx, "c1", 2, mkCommits("c1", 2, 1, "deaf"), nil)
	p.Restore()
	if !errors.Is(err, canvas.ErrOutcomeUnknown) {
		t.Fatalf("the append whose answer was lost: %v, want outcome unknown", err)
	}
	if c, err := sb.GetCanvas(ctx, "c1"); err != nil || c.HeadRev != 3 {
		t.Fatalf("the store's head: %+v %v, want 3 (the append committed)", c, err)
	}
	headOf(3, "after the commit whose answer was lost")
}

// withoutNotifier is a store whose Capabilities name no Notifier: its
// engine hears of no other process's commits.
type withoutNotifier struct{ store.Store }

func (w withoutNotifier) Capabilities() store.Capabilities {
	c := w.Store.Capabilities()
	c.Notifier = nil
	return c
}
