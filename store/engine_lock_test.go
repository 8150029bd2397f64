package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// The canvas's writer does no I/O and no waiting while it holds the
// canvas's lock (but for the Append that commits): a read of the canvas
// completes while the writer is held in a store read or a back-off. Each
// test holds the writer (or the command) at that point until the read has
// completed; were the point under the lock, the read would wait for a
// release that comes only after it, and the test would never end (go
// test's -timeout fails it).

// gatedStore holds a store method (by name) once armed, until released.
type gatedStore struct {
	store.Store
	armed   atomic.Pointer[string] // the method to hold; nil: none
	held    chan struct{}          // closed when a call is held
	release chan struct{}
	once    sync.Once
	// mismatches makes that many Appends fail as if another process had
	// appended first (canvas.ErrHeadMismatch), writing nothing.
	mismatches atomic.Int32
}

func newGatedStore(t *testing.T) *gatedStore {
	t.Helper()
	sq, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	return &gatedStore{Store: sq, held: make(chan struct{}), release: make(chan struct{})}
}

func (g *gatedStore) arm(method string) { g.armed.Store(&method) }

func (g *gatedStore) gate(method string) {
	if m := g.armed.Load(); m != nil && *m == method {
		g.once.Do(func() { close(g.held); <-g.release })
	}
}

func (g *gatedStore) GetNamedSnapshot(ctx context.Context, canvasID, id string) (store.NamedSnapshot, error) {
	g.gate("GetNamedSnapshot")
	return g.Store.GetNamedSnapshot(ctx, canvasID, id)
}

func (g *gatedStore) ReadCommits(ctx context.Context, canvasID string, afterRev int64, limit int) ([]canvas.Commit, error) {
	g.gate("ReadCommits")
	return g.Store.ReadCommits(ctx, canvasID, afterRev, limit)
}

func (g *gatedStore) GetIdempotency(ctx context.Context, canvasID, key string) (store.IdempotencyRecord, error) {
	g.gate("GetIdempotency")
	return g.Store.GetIdempotency(ctx, canvasID, key)
}

func (g *gatedStore) Append(ctx context.Context, canvasID string, head int64, commits []canvas.Commit, idem []store.IdempotencyRecord) error {
	if g.mismatches.Add(-1) >= 0 {
		return fmt.Errorf("canvas %s: %w", canvasID, canvas.ErrHeadMismatch)
	}
	return g.Store.Append(ctx, canvasID, head, commits, idem)
}

// startGated starts an engine on g with canvas "c" holding shape X at rev 1.
func startGated(t *testing.T, g *gatedStore, cfg store.EngineConfig) *store.Engine {
	t.Helper()
	ctx := context.Background()
	if err := g.CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e := store.NewEngine(g, cfg)
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	if a, err := e.Execute(ctx, "c", human, envelope("create_shape", 0, map[string]any{"id": "X", "type": "geo", "x": 0, "y": 0})); err != nil || a.Outcome != store.OutcomeApplied {
		t.Fatalf("create X: %v %v", err, a.Outcome)
	}
	return e
}

// readHead reads the head through the engine (a View at the head, under the
// canvas's read lock).
func readHead(t *testing.T, e *store.Engine) int64 {
	t.Helper()
	var head int64
	if err := e.View(context.Background(), "c", -1, func(s *canvas.State, _ string) error { head = s.Rev; return nil }); err != nil {
		t.Fatal(err)
	}
	return head
}

type execResult struct {
	ans store.Answer
	err error
}

func execAsync(e *store.Engine, env canvas.Envelope) chan execResult {
	ch := make(chan execResult, 1)
	go func() {
		a, err := e.Execute(context.Background(), "c", human, env)
		ch <- execResult{a, err}
	}()
	return ch
}

// TestReaderNotBlockedByBackoff: while the writer backs off after other
// processes appended first (here: Appends answered ErrHeadMismatch), a
// reader of the canvas completes; the writer then decides again and
// commits.
func TestReaderNotBlockedByBackoff(t *testing.T) {
	g := newGatedStore(t)
	inBackoff, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e := startGated(t, g, store.EngineConfig{Sleep: func(ctx context.Context, d time.Duration) error {
		once.Do(func() { close(inBackoff); <-release })
		return nil
	}})
	g.mismatches.Store(5) // back-off starts after the fourth attempt
	done := execAsync(e, envelope("move", 1, map[string]any{"ids": []string{"X"}, "dx": 1, "dy": 0}))
	<-inBackoff
	if head := readHead(t, e); head != 1 {
		t.Fatalf("head read during the back-off = %d, want 1 (nothing committed yet)", head)
	}
	close(release)
	if r := <-done; r.err != nil || r.ans.Outcome != store.OutcomeApplied {
		t.Fatalf("move after the back-off: %v %v", r.err, r.ans.Outcome)
	}
	if head := readHead(t, e); head != 2 {
		t.Fatalf("head = %d, want 2", head)
	}
}

// TestReaderNotBlockedBySnapshotRead: revert_to_snapshot's state at the
// named snapshot is read (preloaded, as the verb declares) without the
// canvas's lock.
func TestReaderNotBlockedBySnapshotRead(t *testing.T) {
	g := newGatedStore(t)
	e := startGated(t, g, store.EngineConfig{})
	ctx := context.Background()
	if err := g.CreateNamedSnapshot(ctx, store.NamedSnapshot{CanvasID: "c", ID: "s1", Label: "one", Rev: 1, CreatedBy: human.ID, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if a, err := e.Execute(ctx, "c", human, envelope("move", 1, map[string]any{"ids": []string{"X"}, "dx": 7, "dy": 0})); err != nil || a.Outcome != store.OutcomeApplied {
		t.Fatalf("move: %v %v", err, a.Outcome)
	}
	g.arm("GetNamedSnapshot")
	done := execAsync(e, envelope("revert_to_snapshot", 2, map[string]any{"snapshot_id": "s1"}))
	select {
	case <-g.held:
	case r := <-done:
		t.Fatalf("answered without reading the snapshot: %v %v", r.err, r.ans.Outcome)
	}
	if head := readHead(t, e); head != 2 {
		t.Fatalf("head read during the snapshot read = %d, want 2", head)
	}
	close(g.release)
	if r := <-done; r.err != nil || r.ans.Outcome != store.OutcomeApplied {
		t.Fatalf("revert_to_snapshot: %v %v %.200s", r.err, r.ans.Outcome, r.ans.Result)
	}
	var x float64
	if err := e.View(ctx, "c", -1, func(s *canvas.State, _ string) error { x = s.Nodes["X"].X; return nil }); err != nil {
		t.Fatal(err)
	}
	if x != 0 {
		t.Fatalf("X.x after the revert = %v, want 0 (as at the snapshot)", x)
	}
	// An unknown canvas is still a 404, not a 422 about its snapshot.
	if _, err := e.Execute(ctx, "nope", human, envelope("revert_to_snapshot", 0, map[string]any{"snapshot_id": "s1"})); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("revert_to_snapshot on an unknown canvas: %v, want not found", err)
	}
}

// TestReaderNotBlockedByRecoveryRead: a conflict whose recovery_ops are
// older than the commits kept in memory reads them from the log without
// the canvas's lock, and so does the look-up of its idempotency key; the
// answer lists them all the same.
func TestReaderNotBlockedByRecoveryRead(t *testing.T) {
	for _, method := range []string{"ReadCommits", "GetIdempotency"} {
		t.Run(method, func(t *testing.T) {
			g := newGatedStore(t)
			e := startGated(t, g, store.EngineConfig{RecentCommits: 4})
			ctx := context.Background()
			for i, env := range []canvas.Envelope{ // revs 2..8; X changes at 2 and 4; memory keeps the last 4 at most
				envelope("move", 1, map[string]any{"ids": []string{"X"}, "dx": 1, "dy": 0}),
				envelope("create_shape", 2, map[string]any{"id": "Y", "type": "geo", "x": 0, "y": 0}),
				envelope("move", 3, map[string]any{"ids": []string{"X"}, "dx": 1, "dy": 0}),
				envelope("move", 4, map[string]any{"ids": []string{"Y"}, "dx": 1, "dy": 0}),
				envelope("move", 5, map[string]any{"ids": []string{"Y"}, "dx": 1, "dy": 0}),
				envelope("move", 6, map[string]any{"ids": []string{"Y"}, "dx": 1, "dy": 0}),
				envelope("move", 7, map[string]any{"ids": []string{"Y"}, "dx": 1, "dy": 0}),
			} {
				if a, err := e.Execute(ctx, "c", human, env); err != nil || a.Outcome != store.OutcomeApplied {
					t.Fatalf("command %d: %v %v", i, err, a.Outcome)
				}
			}
			g.arm(method)
			stale := envelope("move", 1, map[string]any{"ids": []string{"X"}, "dx": 5, "dy": 0})
			stale.IdempotencyKey = "k"
			done := execAsync(e, stale)
			select {
			case <-g.held:
			case r := <-done:
				t.Fatalf("answered without calling %s: %v %v", method, r.err, r.ans.Outcome)
			}
			if head := readHead(t, e); head != 8 {
				t.Fatalf("head read during the %s = %d, want 8", method, head)
			}
			close(g.release)
			r := <-done
			if r.err != nil || r.ans.Outcome != store.OutcomeConflict {
				t.Fatalf("stale move: %v %v", r.err, r.ans.Outcome)
			}
			var res canvas.ConflictResult
			if err := json.Unmarshal(r.ans.Result, &res); err != nil {
				t.Fatal(err)
			}
			var revs []int64
			for _, c := range res.RecoveryOps {
				revs = append(revs, c.Rev)
			}
			if fmt.Sprint(revs) != "[2 4]" || res.RecoveryOpsIncomplete || res.CurrentRev != 8 {
				t.Fatalf("recovery_ops revs %v (incomplete %v, current_rev %d), want [2 4] complete at 8", revs, res.RecoveryOpsIncomplete, res.CurrentRev)
			}
		})
	}
}
