package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// deafListener is a Store whose Listen never delivers a notice: a process
// whose listener is partitioned away, or slow. Its engine is still one of
// several sharing the database (it is a store.Notifier).
type deafListener struct{ *Store }

func (d deafListener) Listen(ctx context.Context, _ func(string)) error {
	<-ctx.Done()
	return ctx.Err()
}

// Capabilities names d, not the store inside it, as the engine's Notifier
// (else the engine would listen through the store and hear everything).
func (d deafListener) Capabilities() store.Capabilities {
	c := d.Store.Capabilities()
	c.Notifier = d
	return c
}

func startEngine(t *testing.T, st store.Store, cfg store.EngineConfig) *store.Engine {
	t.Helper()
	cfg.Logger = quietLogger()
	e := store.NewEngine(st, cfg)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

func createNode(id string, base int64, strict bool) canvas.Envelope {
	args, _ := json.Marshal(map[string]any{"id": id, "name": id})
	return canvas.Envelope{Type: "create_node", BaseRev: &base, Strict: strict, Args: args}
}

// TestReadsAreLinearizableAcrossEngines: engine B never hears of A's
// commits (its listener is deaf), yet every read on B after A acknowledged
// a commit shows it: View, Head, CommitsAfter, ResolveEventID, a 409's
// current_rev, and a command naming a node A created. With LocalReads B
// answers from its own copy, which trails. (B answered rev 22 after A
// acknowledged rev 23 before: reads were served from the copy alone.)
func TestReadsAreLinearizableAcrossEngines(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := newSchema(t, url)
	ctx := context.Background()
	a := startEngine(t, openIn(t, url, schema), store.EngineConfig{})
	b := startEngine(t, deafListener{openIn(t, url, schema)}, store.EngineConfig{})
	mustCreateCanvas(t, a.Store().(*Store), "c")
	actor := canvas.Actor{ID: "u", Type: canvas.ActorHuman}
	if _, _, err := b.Head(ctx, "c"); err != nil { // B holds the canvas from here on
		t.Fatal(err)
	}

	var acked int64
	var ackedEvent string
	write := func(id string) {
		t.Helper()
		ans, err := a.Execute(ctx, "c", actor, createNode(id, 0, false))
		if err != nil || ans.Outcome != store.OutcomeApplied {
			t.Fatalf("write %s via A: %v %s", id, err, ans.Result)
		}
		var res canvas.RevisionResult
		_ = json.Unmarshal(ans.Result, &res)
		acked, ackedEvent = res.CurrentRev, res.EventID
	}
	for i := range 3 {
		write(fmt.Sprint("n", i))

		if err := b.View(ctx, "c", -1, func(s *canvas.State, ev string) error {
			if s.Rev != acked || ev != ackedEvent || s.Nodes[fmt.Sprint("n", i)] == nil {
				return fmt.Errorf("View on B: rev %d (%s), want %d (%s) with n%d", s.Rev, ev, acked, ackedEvent, i)
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
		write(fmt.Sprint("m", i))
		if h, ev, err := b.Head(ctx, "c"); err != nil || h != acked || ev != ackedEvent {
			t.Errorf("Head on B: %d %s %v, want %d %s", h, ev, err, acked, ackedEvent)
		}
		write(fmt.Sprint("k", i))
		if cs, h, err := b.CommitsAfter(ctx, "c", acked-1, 10); err != nil || h != acked || len(cs) != 1 || cs[0].EventID != ackedEvent {
			t.Errorf("CommitsAfter on B: %d commits, head %d, %v; want the commit %s at head %d", len(cs), h, err, ackedEvent, acked)
		}
		write(fmt.Sprint("r", i))
		if rev, ok, err := b.ResolveEventID(ctx, "c", ackedEvent); err != nil || !ok || rev != acked {
			t.Errorf("ResolveEventID(%s) on B: %d %v %v", ackedEvent, rev, ok, err)
		}
		// A strict command at a stale base: its 409 names the true head.
		write(fmt.Sprint("s", i))
		ans, err := b.Execute(ctx, "c", actor, createNode(fmt.Sprint("x", i), acked-1, true))
		var res canvas.ConflictResult
		if err == nil {
			_ = json.Unmarshal(ans.Result, &res)
		}
		if err != nil || ans.Outcome != store.OutcomeConflict || res.CurrentRev != acked {
			t.Errorf("strict stale command on B: %v %s %s; want a 409 with current_rev %d", err, ans.Outcome, ans.Result, acked)
		}
		// An update, from a base B's copy holds, of a node A made since: a
		// 409 naming the node at the true head (B's copy alone would call
		// the node unknown: a 422).
		write(fmt.Sprint("u", i))
		args, _ := json.Marshal(map[string]any{"id": fmt.Sprint("u", i), "name": "renamed"})
		base := int64(0)
		ans, err = b.Execute(ctx, "c", actor, canvas.Envelope{Type: "update_node", BaseRev: &base, Args: args})
		res = canvas.ConflictResult{}
		if err == nil {
			_ = json.Unmarshal(ans.Result, &res)
		}
		if err != nil || ans.Outcome != store.OutcomeConflict || res.CurrentRev != acked || fmt.Sprint(res.ConflictingIDs) != fmt.Sprintf("[u%d]", i) {
			t.Errorf("update of a node A made, via B: %v %s %s; want a 409 on u%d with current_rev %d", err, ans.Outcome, ans.Result, i, acked)
		}
	}

	// LocalReads: B's copy, behind A.
	if _, _, err := b.Head(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	write("local")
	if h, _, err := b.Head(store.LocalReads(ctx), "c"); err != nil || h != acked-1 {
		t.Errorf("a local Head on B: %d %v, want its copy's %d (behind A's %d)", h, err, acked-1, acked)
	}
}

// TestReadsUnavailableWhenTheStoreIsCut: a process cut off from the
// database answers a linearizable read with canvas.ErrUnavailable within
// the operation timeout, never with its copy; a local read answers from
// the copy.
func TestReadsUnavailableWhenTheStoreIsCut(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := newSchema(t, url)
	target, rewrite := proxied(t, url)
	p := startProxy(t, target)
	const op = 500 * time.Millisecond
	ctx := context.Background()
	b := startEngine(t, openIn(t, rewrite(p.Addr()), schema, WithOpTimeout(op)), store.EngineConfig{})
	mustCreateCanvas(t, openIn(t, url, schema), "c")
	if _, _, err := b.Head(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []func(){p.Cut, p.Stall} {
		mode()
		for name, read := range map[string]func() error{
			"View": func() error { return b.View(ctx, "c", -1, func(*canvas.State, string) error { return nil }) },
			"Head": func() error { _, _, err := b.Head(ctx, "c"); return err },
			"CommitsAfter": func() error {
				_, _, err := b.CommitsAfter(ctx, "c", 0, 10)
				return err
			},
		} {
			start := time.Now()
			err := read()
			if !errors.Is(err, canvas.ErrUnavailable) {
				t.Errorf("%s on a process cut off: %v, want ErrUnavailable", name, err)
			}
			if d := time.Since(start); d > op+500*time.Millisecond {
				t.Errorf("%s on a process cut off answered after %v, want ≤ %v", name, d, op)
			}
		}
		if _, _, err := b.Head(store.LocalReads(ctx), "c"); err != nil {
			t.Errorf("a local Head on a process cut off: %v", err)
		}
		p.Restore()
	}
}

// TestWritesAnsweredWithinTheWriteTimeout: while the database is a black
// hole, every command is answered within the write timeout of its arrival,
// however busy the canvas's writer is with catch-ups (after an unknown
// outcome, after the listener reconnects). Two writes were answered after
// 2× the timeout: they waited in the queue behind a catch-up, and their
// deadline was checked only when the writer took them.
func TestWritesAnsweredWithinTheWriteTimeout(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := newSchema(t, url)
	target, rewrite := proxied(t, url)
	p := startProxy(t, target)
	const op = 600 * time.Millisecond
	ctx := context.Background()
	st := openIn(t, rewrite(p.Addr()), schema, WithOpTimeout(op))
	e := startEngine(t, st, store.EngineConfig{})
	mustCreateCanvas(t, openIn(t, url, schema), "c")
	actor := canvas.Actor{ID: "u", Type: canvas.ActorHuman}
	if _, err := e.Execute(ctx, "c", actor, createNode("first", 0, false)); err != nil {
		t.Fatal(err)
	}
	prepareAppend(t, st)
	p.Deaf() // the next append's answer is lost: its outcome is unknown
	if _, err := e.Execute(ctx, "c", actor, createNode("lost", 0, false)); !errors.Is(err, canvas.ErrOutcomeUnknown) {
		t.Fatalf("deaf: %v, want ErrOutcomeUnknown", err)
	}
	p.Stall()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // the listener reconnecting: catch-ups of every canvas
		tick := time.NewTicker(op / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				e.Wake("")
			}
		}
	})
	var mu sync.Mutex
	var worst time.Duration
	var answered int
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				_, err := e.Execute(ctx, "c", actor, createNode(fmt.Sprintf("w%d-%d", w, i), 0, false))
				took := time.Since(start)
				if !errors.Is(err, canvas.ErrUnavailable) {
					t.Errorf("a command in the black hole: %v, want ErrUnavailable", err)
				}
				mu.Lock()
				worst, answered = max(worst, took), answered+1
				mu.Unlock()
			}
		})
	}
	time.AfterFunc(5*op, func() { close(stop) })
	wg.Wait()
	p.Restore()
	t.Logf("%d commands answered in the black hole, the slowest after %v (write timeout %v)", answered, worst, op)
	if worst > op+300*time.Millisecond {
		t.Errorf("a command was answered after %v, want ≤ the write timeout %v (+300 ms)", worst, op)
	}
}
