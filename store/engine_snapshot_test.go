package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// flakySnapshots is a store whose SaveStateSnapshot fails for the revisions
// in fail, and which records every snapshot it stored.
type flakySnapshots struct {
	store.Store
	mu     sync.Mutex
	fail   map[int64]bool
	stored []store.StateSnapshot
}

func (f *flakySnapshots) SaveStateSnapshot(ctx context.Context, canvasID string, snap store.StateSnapshot) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail[snap.Rev] {
		return fmt.Errorf("test: refusing snapshot %d: %w", snap.Rev, canvas.ErrUnavailable)
	}
	f.stored = append(f.stored, snap)
	return f.Store.SaveStateSnapshot(ctx, canvasID, snap)
}

// snapshottingEngine starts an engine that stores a snapshot every `every`
// commits on a fresh SQLite store, which refuses the snapshots of the
// revisions in fail and records the others, and creates canvas "c" on it.
// The engine is stopped and the store closed at cleanup.
func snapshottingEngine(t *testing.T, every int64, fail map[int64]bool) (*flakySnapshots, *store.Engine) {
	t.Helper()
	ctx := context.Background()
	sq, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	st := &flakySnapshots{Store: sq, fail: fail}
	e := store.NewEngine(st, store.EngineConfig{SnapshotEvery: every})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	if err := st.CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return st, e
}

// TestSnapshotDeltasAndMerges runs a canvas through creates, moves,
// deletes and undos with a snapshot every 10 commits, one of whose stores
// fails, and checks: deltas are stored (base ≠ 0), chains are merged into
// whole snapshots, the capture after the failed one is whole, every stored
// snapshot chain decodes to the log replayed to its revision, and a cold
// load equals a full replay.
func TestSnapshotDeltasAndMerges(t *testing.T) {
	ctx := context.Background()
	st, e := snapshottingEngine(t, 10, map[int64]bool{150: true})
	rev := int64(0)
	exec := func(typ string, args map[string]any) {
		t.Helper()
		a, err := e.Execute(ctx, "c", human, envelope(typ, rev, args))
		if err != nil || a.Outcome != store.OutcomeApplied {
			t.Fatalf("%s %v: %v %s", typ, args, err, a.Result)
		}
		rev++
	}
	for i := 0; i < 400; i++ {
		id := fmt.Sprintf("n%d", i%40)
		switch {
		case i < 40:
			exec("create_node", map[string]any{"id": id, "name": id, "props": map[string]any{"meta": map[string]any{"i": i}}})
			if i > 0 { // edges: their bound ends follow the moves, and go with the deletes
				exec("create_edge", map[string]any{"from": fmt.Sprintf("n%d", i-1), "to": id})
			}
		case i%7 == 0:
			exec("delete_node", map[string]any{"id": id})
			exec("undo", map[string]any{})
		default:
			exec("move", map[string]any{"ids": []string{id}, "dx": 1, "dy": -1})
		}
	}
	e.Stop()

	commits, err := st.ReadCommits(ctx, "c", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var deltas, wholes int
	afterFailure := false
	for _, snap := range st.stored {
		r, base, _, err := reducer.SnapshotHeader(snap.Data)
		if err != nil || r != snap.Rev {
			t.Fatalf("snapshot %d: header rev %d, %v", snap.Rev, r, err)
		}
		if base == 0 {
			wholes++
		} else {
			deltas++
		}
		if snap.Rev > 150 && !afterFailure {
			afterFailure = true
			if base != 0 {
				t.Fatalf("the first snapshot after a failed store (rev %d) is a delta from %d", snap.Rev, base)
			}
		}
	}
	if deltas == 0 || wholes < 3 {
		t.Fatalf("%d deltas and %d whole snapshots stored: want deltas, and merges into whole ones", deltas, wholes)
	}
	for _, snap := range st.stored {
		fresh := store.NewEngine(st, store.EngineConfig{})
		if err := fresh.Start(ctx); err != nil {
			t.Fatal(err)
		}
		want, err := reducer.Replay(commits[:snap.Rev])
		if err != nil {
			t.Fatal(err)
		}
		var got *canvas.State
		err = fresh.View(ctx, "c", snap.Rev, func(s *canvas.State, _ string) error { got = s.Clone(); return nil })
		fresh.Stop()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("state at snapshot rev %d differs from the replayed log (%v)", snap.Rev, err)
		}
	}
	coldLoadIsReplay(t, st, "c", commits)
}

// coldLoadIsReplay checks that a fresh engine on st loads canvasID into the
// state that replaying its whole log (commits) gives.
func coldLoadIsReplay(t *testing.T, st store.Store, canvasID string, commits []canvas.Commit) {
	t.Helper()
	ctx := context.Background()
	fresh := store.NewEngine(st, store.EngineConfig{})
	if err := fresh.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer fresh.Stop()
	want, err := reducer.Replay(commits)
	if err != nil {
		t.Fatal(err)
	}
	var got *canvas.State
	if err := fresh.View(ctx, canvasID, -1, func(s *canvas.State, _ string) error { got = s.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("cold load differs from a full replay")
	}
}

// TestSnapshotGrowthNotRewritten: a canvas that only grows (creates, no
// shape written twice) keeps one whole snapshot and its deltas, as nothing
// in them is superseded; merging at every doubling rewrote the whole canvas
// log(n) times. A cold load still equals a full replay.
func TestSnapshotGrowthNotRewritten(t *testing.T) {
	ctx := context.Background()
	st, e := snapshottingEngine(t, 10, nil)
	for rev := range int64(150) {
		a, err := e.Execute(ctx, "c", human, envelope("create_node", rev, map[string]any{"name": "n"}))
		if err != nil || a.Outcome != store.OutcomeApplied {
			t.Fatalf("create %d: %v %s", rev, err, a.Result)
		}
	}
	e.Stop()
	var wholes []int64
	for _, snap := range st.stored {
		if _, base, _, err := reducer.SnapshotHeader(snap.Data); err != nil {
			t.Fatal(err)
		} else if base == 0 {
			wholes = append(wholes, snap.Rev)
		}
	}
	if len(st.stored) != 15 || !reflect.DeepEqual(wholes, []int64{10}) {
		t.Fatalf("%d snapshots stored, whole ones at %v: want 15, the first one whole and no merge", len(st.stored), wholes)
	}
	commits, err := st.ReadCommits(ctx, "c", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	coldLoadIsReplay(t, st, "c", commits)
}

// TestBrokenSnapshotChainIsIgnored deletes the base of the latest stored
// delta behind the engine's back and checks that a cold load still gives the
// replayed log (it ignores the broken chain).
func TestBrokenSnapshotChainIsIgnored(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	e, st := newEngine(t, path, nil)
	if err := st.CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 25; i++ {
		env := envelope("create_node", int64(i), map[string]any{"id": fmt.Sprint("n", i)})
		if i >= 10 {
			env = envelope("move", int64(i), map[string]any{"ids": []string{"n0"}, "dx": 1, "dy": 1})
		}
		if _, err := e.Execute(ctx, "c", human, env); err != nil {
			t.Fatal(err)
		}
	}
	e.Stop()
	snap, err := st.LoadStateSnapshot(ctx, "c", 1000)
	if err != nil {
		t.Fatal(err)
	}
	_, base, _, _ := reducer.SnapshotHeader(snap.Data)
	if base == 0 {
		t.Fatalf("the latest snapshot (rev %d) is whole; the test needs a delta", snap.Rev)
	}
	// Replace the delta's base by a snapshot of another schema: the chain breaks.
	if err := st.SaveStateSnapshot(ctx, "c", store.StateSnapshot{Rev: base, Schema: reducer.Schema + 1, Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	fresh := store.NewEngine(st, store.EngineConfig{})
	if err := fresh.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer fresh.Stop()
	commits, _ := st.ReadCommits(ctx, "c", 0, 0)
	want, _ := reducer.Replay(commits)
	var got *canvas.State
	if err := fresh.View(ctx, "c", -1, func(s *canvas.State, _ string) error { got = s.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("cold load over a broken chain differs from a full replay")
	}
	if _, err := st.LoadStateSnapshot(ctx, "nope", 1); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("snapshot of a missing canvas: %v", err)
	}
}

// heldSnapshots holds the first SaveStateSnapshot until release is closed
// (as encoding and storing a big canvas takes a while), then closes saved.
type heldSnapshots struct {
	store.Store
	once    sync.Once
	release chan struct{}
	saved   chan error
}

func (h *heldSnapshots) SaveStateSnapshot(ctx context.Context, canvasID string, snap store.StateSnapshot) error {
	first := false
	h.once.Do(func() { first = true })
	if !first {
		return h.Store.SaveStateSnapshot(ctx, canvasID, snap)
	}
	<-h.release
	err := h.Store.SaveStateSnapshot(ctx, canvasID, snap)
	h.saved <- err
	return err
}

// TestSnapshotOfDeletedCanvasDropped: a snapshot still being stored when
// its canvas is deleted and created again under the same id does not land
// in the new canvas (whose cold load would otherwise start from the old
// canvas's shapes).
func TestSnapshotOfDeletedCanvasDropped(t *testing.T) {
	ctx := context.Background()
	sq, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	st := &heldSnapshots{Store: sq, release: make(chan struct{}), saved: make(chan error, 1)}
	e := store.NewEngine(st, store.EngineConfig{SnapshotEvery: 5})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	create := func(e *store.Engine, n int, prefix string) {
		for i := range int64(n) {
			if _, err := e.Execute(ctx, "c", human, envelope("create_shape", i, map[string]any{"id": fmt.Sprintf("%s%d", prefix, i), "type": "geo", "x": 0, "y": 0})); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sq.CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	create(e, 5, "old") // the snapshot of rev 5 is on its way
	if err := sq.DeleteCanvas(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	e.Forget("c")
	if err := sq.CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	other := store.NewEngine(sq, store.EngineConfig{SnapshotEvery: 1000})
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	create(other, 6, "new")
	other.Stop()
	close(st.release)
	if err := <-st.saved; !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("the deleted canvas's snapshot: %v, want ErrNotFound", err)
	}
	cold := store.NewEngine(sq, store.EngineConfig{})
	if err := cold.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer cold.Stop()
	var got *canvas.State
	if err := cold.View(ctx, "c", -1, func(s *canvas.State, _ string) error { got = s.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	commits, err := sq.ReadCommits(ctx, "c", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	want, err := reducer.Replay(commits)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Scene(), want.Scene()) {
		t.Fatalf("the re-created canvas loads %d nodes, its log has %d", len(got.Nodes), len(want.Nodes))
	}
}

// TestColdLoadAtASnapshotNamesTheHeadCommit: a canvas whose head is a
// snapshot's revision (no tail to replay) loads with the head commit's
// event id, as before the restart, not a bare revision.
func TestColdLoadAtASnapshotNamesTheHeadCommit(t *testing.T) {
	ctx := context.Background()
	st, e := snapshottingEngine(t, 5, nil)
	for rev := range int64(5) {
		if a, err := e.Execute(ctx, "c", human, envelope("create_node", rev, map[string]any{"name": "n"})); err != nil || a.Outcome != store.OutcomeApplied {
			t.Fatalf("create_node at %d: %v %s", rev, err, a.Result)
		}
	}
	_, before, err := e.Head(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	e.Stop() // stores the queued snapshot
	if len(st.stored) != 1 || st.stored[0].Rev != 5 {
		t.Fatalf("stored snapshots %+v; want one at rev 5", st.stored)
	}
	fresh := store.NewEngine(st, store.EngineConfig{SnapshotEvery: 5})
	if err := fresh.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer fresh.Stop()
	head, after, err := fresh.Head(ctx, "c")
	if err != nil || head != 5 || after != before || !strings.HasPrefix(after, "5-") {
		t.Fatalf("after a cold load: head %d, event id %q, %v; before it: %q", head, after, err, before)
	}
}
