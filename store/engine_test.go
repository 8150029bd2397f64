package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/internal/testwait"
	"github.com/canvasd/canvasd/reducer"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// collector is a Publisher that records what it is given.
type collector struct {
	mu        sync.Mutex
	commits   []*canvas.Commit
	published chan struct{} // signalled after each Publish (buffer of one)
}

func newCollector() *collector { return &collector{published: make(chan struct{}, 1)} }

func (c *collector) Publish(cm *canvas.Commit) {
	c.mu.Lock()
	c.commits = append(c.commits, cm)
	c.mu.Unlock()
	select {
	case c.published <- struct{}{}:
	default:
	}
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.commits)
}

// waitCount waits until n commits were published or the deadline passes.
func (c *collector) waitCount(n int, deadline <-chan time.Time) {
	for c.count() < n {
		select {
		case <-c.published:
		case <-deadline:
			return
		}
	}
}

func newEngine(t *testing.T, path string, pub store.Publisher) (*store.Engine, store.Store) {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	e := store.NewEngine(st, store.EngineConfig{Publisher: pub, SnapshotEvery: 10})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop(); st.Close() })
	return e, st
}

func envelope(typ string, base int64, args any) canvas.Envelope {
	b, _ := json.Marshal(args)
	return canvas.Envelope{Type: typ, BaseRev: &base, Args: b}
}

var human = canvas.Actor{ID: "user-1", Type: canvas.ActorHuman}

// TestTwoEnginesOneLog runs two engines over two store handles on one file,
// as two processes would share one database: revisions stay gap-free, each
// engine catches up when the other appended first, and both end equal.
func TestTwoEnginesOneLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	pubA, pubB := newCollector(), newCollector()
	a, st := newEngine(t, path, pubA)
	b, _ := newEngine(t, path, pubB)
	if err := st.CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// Load the canvas in both engines first: an engine publishes the commits
	// after the state it loaded, and the check below wants every one.
	for _, e := range []*store.Engine{a, b} {
		if _, _, err := e.Head(ctx, "c"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			e := a
			if w%2 == 1 {
				e = b
			}
			for i := 0; i < 25; i++ {
				resp, err := e.Execute(ctx, "c", human, envelope("create_node", 0, map[string]any{"id": fmt.Sprintf("n%d-%d", w, i)}))
				if err != nil || resp.Outcome != store.OutcomeApplied {
					t.Errorf("execute: %v %s %s", err, resp.Outcome, resp.Result)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	commits, err := st.ReadCommits(ctx, "c", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(commits) != 200 {
		t.Fatalf("%d commits, want 200", len(commits))
	}
	for i, c := range commits {
		if c.Rev != int64(i+1) {
			t.Fatalf("gap at %d: rev %d", i+1, c.Rev)
		}
	}
	// Catch up both (one may not have seen the other's last commits): each
	// publishes all 200 commits, then both states are equal.
	a.Wake("c")
	b.Wake("c")
	deadline := time.After(10 * time.Second)
	for _, pub := range []*collector{pubA, pubB} {
		pub.waitCount(200, deadline)
		if n := pub.count(); n != 200 {
			t.Fatalf("an engine published %d commits, want 200", n)
		}
	}
	var sa, sb []byte
	_ = a.View(ctx, "c", -1, func(s *canvas.State, _ string) error { sa, _ = json.Marshal(s.Scene()); return nil })
	_ = b.View(ctx, "c", -1, func(s *canvas.State, _ string) error { sb, _ = json.Marshal(s.Scene()); return nil })
	if string(sa) != string(sb) {
		t.Fatal("engines disagree after catching up")
	}
	for _, pub := range []*collector{pubA, pubB} {
		pub.mu.Lock()
		for i, c := range pub.commits {
			if c.Rev != int64(i+1) {
				t.Fatalf("published out of order: position %d has rev %d", i, c.Rev)
			}
		}
		pub.mu.Unlock()
	}
}

// TestColdLoadUsesSnapshotAndTail restarts an engine and checks the state it
// loads (snapshot + tail) equals a replay of the whole log, also when the
// stored snapshot has another schema.
func TestColdLoadUsesSnapshotAndTail(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	e, st := newEngine(t, path, nil)
	if err := st.CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 37; i++ {
		if _, err := e.Execute(ctx, "c", human, envelope("create_node", int64(i), map[string]any{"name": fmt.Sprint(i)})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Execute(ctx, "c", human, envelope("move", 37, map[string]any{"ids": []string{}, "dx": 1, "dy": 1})); err == nil {
		t.Fatal("move with no ids should be rejected")
	}
	e.Stop()
	snap, err := st.LoadStateSnapshot(ctx, "c", 1000)
	if err != nil || snap.Rev < 10 {
		t.Fatalf("no stored snapshot: %v %d", err, snap.Rev)
	}
	commits, _ := st.ReadCommits(ctx, "c", 0, 1000)
	want, _ := reducer.Replay(commits)

	for _, schema := range []int{reducer.Schema, reducer.Schema + 100} {
		if schema != reducer.Schema {
			snap.Schema = schema
			snap.Data = []byte("not even json")
			if err := st.SaveStateSnapshot(ctx, "c", snap); err != nil {
				t.Fatal(err)
			}
		}
		e2 := store.NewEngine(st, store.EngineConfig{})
		if err := e2.Start(ctx); err != nil {
			t.Fatal(err)
		}
		var got *canvas.State
		_ = e2.View(ctx, "c", -1, func(s *canvas.State, _ string) error { got = s.Clone(); return nil })
		e2.Stop()
		if !reflect.DeepEqual(got.Scene(), want.Scene()) || got.Rev != 37 {
			t.Fatalf("schema %d: cold load differs from a full replay", schema)
		}
	}
}

// TestExecuteUnknownCanvas checks the not-found path.
func TestExecuteUnknownCanvas(t *testing.T) {
	e, _ := newEngine(t, filepath.Join(t.TempDir(), "u.db"), nil)
	_, err := e.Execute(context.Background(), "nope", human, envelope("create_node", 0, map[string]any{}))
	if !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
}

// TestIdleCanvasesUnload checks that an idle canvas leaves memory and comes
// back intact, that InUse keeps one loaded, and that commands racing with
// unloading are never lost or refused.
func TestIdleCanvasesUnload(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "idle.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var pinned sync.Map
	e := store.NewEngine(st, store.EngineConfig{IdleAfter: time.Millisecond,
		InUse: func(id string) bool { _, ok := pinned.Load(id); return ok }})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	for _, id := range []string{"a", "pinned"} {
		if err := st.CreateCanvas(ctx, canvas.Canvas{ID: id, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	pinned.Store("pinned", true)
	if _, _, err := e.Head(ctx, "pinned"); err != nil {
		t.Fatal(err)
	}
	// Commands at the pace of unloading: each may find the canvas retired.
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				resp, err := e.Execute(ctx, "a", human, envelope("create_node", 0, map[string]any{"id": fmt.Sprintf("n%d-%d", w, i)}))
				if err != nil || resp.Outcome != store.OutcomeApplied {
					t.Errorf("execute: %v %s %s", err, resp.Outcome, resp.Result)
					return
				}
				if i%10 == 0 {
					time.Sleep(3 * time.Millisecond)
				}
			}
		}(w)
	}
	wg.Wait()
	testwait.Until(t, 5*time.Second, "only the pinned canvas loaded", func() bool { return e.LiveCanvases() == 1 })
	head, _, err := e.Head(ctx, "a")
	if err != nil || head != 200 {
		t.Fatalf("after reloading: head %d, %v; want 200", head, err)
	}
	var nodes int
	_ = e.View(ctx, "a", -1, func(s *canvas.State, _ string) error { nodes = len(s.Nodes); return nil })
	if nodes != 200 {
		t.Fatalf("%d nodes after reloading, want 200", nodes)
	}
}

// TestIdempotencyRecordsArePruned checks the engine prunes records older than
// IdempotencyTTL when it starts (and hourly after).
func TestIdempotencyRecordsArePruned(t *testing.T) {
	ctx := context.Background()
	e, st := newEngine(t, filepath.Join(t.TempDir(), "prune.db"), nil)
	if err := st.CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	env := envelope("create_node", 0, map[string]any{})
	env.IdempotencyKey = "k"
	if _, err := e.Execute(ctx, "c", human, env); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetIdempotency(ctx, "c", "k"); err != nil {
		t.Fatalf("record not stored: %v", err)
	}
	pruned := &pruneSignal{Store: st, done: make(chan error, 1)}
	later := store.NewEngine(pruned, store.EngineConfig{IdempotencyTTL: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	if err := later.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer later.Stop()
	select {
	case err := <-pruned.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the engine did not prune at start")
	}
	if _, err := st.GetIdempotency(ctx, "c", "k"); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("record not pruned: %v", err)
	}
}

// pruneSignal reports each PruneIdempotency of the store it wraps.
type pruneSignal struct {
	store.Store
	done chan error
}

func (p *pruneSignal) PruneIdempotency(ctx context.Context, cutoff time.Time) (int64, error) {
	n, err := p.Store.PruneIdempotency(ctx, cutoff)
	select {
	case p.done <- err:
	default:
	}
	return n, err
}

// TestConflictRecoveryOpsReachFar: a 409's recovery_ops hold the commit that
// changed the conflicting shape also when thousands of other commits came
// first; a base_rev further behind than recovery_ops reach gets a 409 that
// says its recovery_ops are incomplete (and how to recover) instead of an
// empty list that looks complete.
func TestConflictRecoveryOpsReachFar(t *testing.T) {
	ctx := context.Background()
	e, st := newEngine(t, filepath.Join(t.TempDir(), "c.db"), nil)
	if err := st.CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	head := int64(0)
	apply := func(envs ...canvas.Envelope) {
		t.Helper()
		ans, err := e.ExecuteBatch(ctx, "c", human, head, "", envs)
		if err != nil || ans.Outcome != store.OutcomeApplied {
			t.Fatalf("%v %v %.200s", err, ans.Outcome, ans.Result)
		}
		head += int64(len(envs))
	}
	moveY := func(n int) {
		for ; n > 0; n -= 1000 {
			envs := make([]canvas.Envelope, min(n, 1000))
			for i := range envs {
				envs[i] = envelope("move", head, map[string]any{"ids": []string{"Y"}, "dx": 1, "dy": 0})
			}
			apply(envs...)
		}
	}
	apply(envelope("create_shape", 0, map[string]any{"id": "X", "type": "geo", "x": 0, "y": 0}),
		envelope("create_shape", 0, map[string]any{"id": "Y", "type": "geo", "x": 0, "y": 0}))
	moveY(2100)
	apply(envelope("move", head, map[string]any{"ids": []string{"X"}, "dx": 5, "dy": 0}))
	changedX := head
	conflict := func() canvas.ConflictResult {
		t.Helper()
		ans, err := e.Execute(ctx, "c", canvas.Actor{ID: "agent-z", Type: canvas.ActorAgent},
			envelope("move", 1, map[string]any{"ids": []string{"X"}, "dx": 1, "dy": 0}))
		var res canvas.ConflictResult
		if err != nil || ans.Outcome != store.OutcomeConflict || json.Unmarshal(ans.Result, &res) != nil {
			t.Fatalf("stale move of X: %v %v %.200s", err, ans.Outcome, ans.Result)
		}
		return res
	}
	res := conflict()
	if len(res.RecoveryOps) != 1 || res.RecoveryOps[0].Rev != changedX || res.RecoveryOpsIncomplete {
		t.Fatalf("recovery_ops of a conflict %d commits back: %d ops (incomplete %v), want the move of X at rev %d",
			head-1, len(res.RecoveryOps), res.RecoveryOpsIncomplete, changedX)
	}
	moveY(8000) // base_rev 1 is now more than 10,000 commits behind
	res = conflict()
	if !res.RecoveryOpsIncomplete || len(res.RecoveryOps) != 0 || !strings.Contains(res.Suggestion, "re-read the canvas (GET /canvas_commands/snapshot/c)") {
		t.Fatalf("a conflict %d commits back: incomplete %v, %d ops, suggestion %q", head-1, res.RecoveryOpsIncomplete, len(res.RecoveryOps), res.Suggestion)
	}
}

// gatedAppends holds the first Append until release is closed, so that the
// commands sent meanwhile are decided together, in one group.
type gatedAppends struct {
	store.Store
	once    sync.Once
	held    chan struct{}
	release chan struct{}
}

func (g *gatedAppends) Append(ctx context.Context, canvasID string, head int64, commits []canvas.Commit, idem []store.IdempotencyRecord) error {
	g.once.Do(func() { close(g.held); <-g.release })
	return g.Store.Append(ctx, canvasID, head, commits, idem)
}

// TestIdempotencyKeyFreedByConflict: in one group, a command whose key an
// earlier command of the group used but did not store (it conflicted) is
// decided on its own, not refused as a reuse of the key.
func TestIdempotencyKeyFreedByConflict(t *testing.T) {
	ctx := context.Background()
	sq, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	if err := sq.CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := sq.Append(ctx, "c", 0, []canvas.Commit{{CanvasID: "c", Rev: 1, EventID: "1-01", Type: "create_shape", ActorID: human.ID, ActorType: human.Type, TS: time.Now(),
		Changes: []canvas.Change{{Op: canvas.OpPut, Kind: canvas.KindNode, ID: "X", Value: json.RawMessage(`{"id":"X","type":"geo","x":0,"y":0,"w":10,"h":10,"index":"a1","props":{}}`)}}}}, nil); err != nil {
		t.Fatal(err)
	}
	g := &gatedAppends{Store: sq, held: make(chan struct{}), release: make(chan struct{})}
	e := store.NewEngine(g, store.EngineConfig{})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	type result struct {
		ans store.Answer
		err error
	}
	send := func(env canvas.Envelope) chan result {
		ch := make(chan result, 1)
		go func() { a, err := e.Execute(ctx, "c", human, env); ch <- result{a, err} }()
		return ch
	}
	first := send(envelope("move", 1, map[string]any{"ids": []string{"X"}, "dx": 1, "dy": 0})) // rev 2, held in Append
	<-g.held
	stale := envelope("move", 1, map[string]any{"ids": []string{"X"}, "dx": 5, "dy": 0}) // X changes at rev 2: 409
	stale.IdempotencyKey = "k"
	conflicted := send(stale)
	time.Sleep(200 * time.Millisecond) // queued in this order
	fresh := envelope("create_shape", 2, map[string]any{"id": "Y", "type": "geo", "x": 0, "y": 0})
	fresh.IdempotencyKey = "k"
	applied := send(fresh)
	time.Sleep(200 * time.Millisecond)
	close(g.release)
	if r := <-first; r.err != nil || r.ans.Outcome != store.OutcomeApplied {
		t.Fatalf("first: %v %v", r.err, r.ans.Outcome)
	}
	if r := <-conflicted; r.err != nil || r.ans.Outcome != store.OutcomeConflict {
		t.Fatalf("stale move: %v %v %.200s", r.err, r.ans.Outcome, r.ans.Result)
	}
	if r := <-applied; r.err != nil || r.ans.Outcome != store.OutcomeApplied {
		t.Fatalf("the next command with the key the conflict did not store: %v %v %.200s", r.err, r.ans.Outcome, r.ans.Result)
	}
}

// TestCanvasCreatedAfterAFailedLoad: a canvas asked for before it exists
// (not found) and created right after is found: the failed load is not
// reused by a later call (under -race, before the fix, one run in five
// of this loop failed).
func TestCanvasCreatedAfterAFailedLoad(t *testing.T) {
	ctx := context.Background()
	e, st := newEngine(t, filepath.Join(t.TempDir(), "m.db"), nil)
	for i := range 300 {
		id := fmt.Sprintf("m%d", i)
		if _, _, err := e.Head(ctx, id); !errors.Is(err, canvas.ErrNotFound) {
			t.Fatalf("head of %s before it exists: %v, want not found", id, err)
		}
		if err := st.CreateCanvas(ctx, canvas.Canvas{ID: id, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.Head(ctx, id); err != nil {
			t.Fatalf("head of %s once created (attempt %d): %v", id, i, err)
		}
	}
}
