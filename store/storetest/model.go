package storetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// The canvas of store/testdata/model1 was written by canvasd before model 2
// (commit 50335a4; write.py says how): commits.jsonl is its log as the
// server wrote it, snapshot.json its state, canvasd.db the embedded store of
// its data directory.

// Model1Dir returns the directory of the model 1 fixture.
func Model1Dir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("storetest: cannot locate the model 1 fixture")
	}
	return filepath.Join(filepath.Dir(file), "..", "testdata", "model1")
}

// Model1Log returns the fixture's log (its 21 commits), as a store reads it back.
func Model1Log(t testing.TB) []canvas.Commit {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Model1Dir(t), "commits.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var log []canvas.Commit
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c canvas.Commit
		if err := canvas.UnmarshalExact(sc.Bytes(), &c); err != nil {
			t.Fatalf("commits.jsonl: %v", err)
		}
		canvas.NormalizePatchNumbers(c.Changes)
		log = append(log, c)
	}
	return log
}

// Model1State returns the fixture's state as model 1 left it (snapshot.json).
func Model1State(t testing.TB) canvas.SceneState {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Model1Dir(t), "snapshot.json"))
	if err != nil {
		t.Fatal(err)
	}
	var snap canvas.Snapshot
	if err := canvas.UnmarshalExact(b, &snap); err != nil {
		t.Fatalf("snapshot.json: %v", err)
	}
	return snap.State
}

// testMigrateModel1 appends the model 1 log to the store and loads it
// through the Engine: one migrate_model commit (actor canvasd, a service)
// brings it to model 2 with nothing lost (CheckModel1Migrated); a restart
// migrates nothing more; two engines (two processes) loading another copy
// at once append one migrate_model commit between them.
func testMigrateModel1(t *testing.T, h *harness) {
	ctx := ctxT(t)
	log := Model1Log(t)
	for _, id := range []string{"v1model", "v1race"} {
		mustCreate(t, h.s, id)
		commits := make([]canvas.Commit, len(log))
		for i, c := range log {
			c.CanvasID = id
			commits[i] = c
		}
		mustAppend(t, h.s, id, 0, commits)
	}
	head := int64(len(log))

	e := startEngine(t, h.s)
	var scene canvas.SceneState
	var rev int64
	if err := e.View(ctx, "v1model", -1, func(s *canvas.State, _ string) error {
		scene, rev = cloneScene(t, s), s.Rev
		return nil
	}); err != nil {
		t.Fatalf("loading the model 1 canvas: %v", err)
	}
	e.Stop()
	if rev != head+1 {
		t.Fatalf("loaded at rev %d, want %d (the log and one migrate_model commit)", rev, head+1)
	}
	c := readCommits(t, h.s, "v1model", head)
	if len(c) != 1 || c[0].Type != "migrate_model" || c[0].ActorID != "canvasd" || c[0].ActorType != canvas.ActorService || len(c[0].Changes) == 0 {
		t.Fatalf("the commit after the log: %+v", c)
	}
	CheckModel1Migrated(t, scene, Model1State(t))

	// Loaded again (another server start), it is migrated already.
	h.reopen(t)
	e = startEngine(t, h.s)
	if err := e.View(ctx, "v1model", -1, func(s *canvas.State, _ string) error {
		rev = s.Rev
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.Stop()
	if rev != head+1 {
		t.Fatalf("loaded again at rev %d, want %d", rev, head+1)
	}

	// Two processes load the same model 1 canvas at once.
	// Each holds back its migrate_model append until both have decided
	// theirs: both read the log before either appends, so one loses.
	other := h.reopenFn(t)
	defer other.Close()
	var decided sync.WaitGroup
	decided.Add(2)
	e1, e2 := startEngine(t, &heldAppend{Store: h.s, decided: &decided}), startEngine(t, &heldAppend{Store: other, decided: &decided})
	var wg sync.WaitGroup
	errs := make([]error, 2)
	scenes := make([]canvas.SceneState, 2)
	revs := make([]int64, 2)
	for i, en := range []*store.Engine{e1, e2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = en.View(ctx, "v1race", -1, func(s *canvas.State, _ string) error {
				scenes[i], revs[i] = cloneScene(t, s), s.Rev
				return nil
			})
		}()
	}
	wg.Wait()
	e1.Stop()
	e2.Stop()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("loading at once: %v", err)
		}
		if revs[i] != head+1 {
			t.Fatalf("a process loading at once holds rev %d, want %d", revs[i], head+1)
		}
	}
	if a, b := mustJSON(t, scenes[0]), mustJSON(t, scenes[1]); !bytes.Equal(a, b) {
		t.Fatalf("two processes loading at once hold different states:\n%s\n%s", a, b)
	}
	if c := readCommits(t, h.s, "v1race", head); len(c) != 1 || c[0].Type != "migrate_model" {
		t.Fatalf("two processes loading at once left %d commits after the log: %+v", len(c), c)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func startEngine(t *testing.T, s store.Store) *store.Engine {
	t.Helper()
	e := store.NewEngine(s, store.EngineConfig{})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

func readCommits(t *testing.T, s store.Store, id string, after int64) []canvas.Commit {
	t.Helper()
	c, err := s.ReadCommits(ctxT(t), id, after, 100)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cloneScene returns s's wire form as a client reads it (JSON and back).
func cloneScene(t testing.TB, s *canvas.State) canvas.SceneState {
	t.Helper()
	b, err := json.Marshal(s.Scene())
	if err != nil {
		t.Fatal(err)
	}
	var out canvas.SceneState
	if err := canvas.UnmarshalExact(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// CheckModel1Migrated fails t unless migrated (a state as JSON gives it) is
// model 2 (every node of a model 2 kind, all props valid, every edge's
// ends existing nodes or free, with its points) and holds everything old
// (a model 1 state) held: every node and edge by its id (an arrow node as
// an edge), with its fields, and every props value in its model 2 place or
// under props.meta.v1 (docs/model.md, "Canvases stored before").
//
// It stays over 100 lines because it is one checklist, a few lines per
// field of the model 1 node and edge, over the two states it indexes once.
func CheckModel1Migrated(t testing.TB, migrated, old canvas.SceneState) {
	t.Helper()
	nodes := map[string]*canvas.Node{}
	for _, n := range migrated.Nodes {
		nodes[n.ID] = n
		if !canvas.ValidNodeType(n.Type) {
			t.Errorf("node %s is of type %q, not a model 2 kind", n.ID, n.Type)
		}
		if err := canvas.ValidateProps(n.Type, n.Props, "props"); err != nil {
			t.Errorf("node %s: %v", n.ID, err)
		}
	}
	edges := map[string]*canvas.Edge{}
	for _, e := range migrated.Edges {
		edges[e.ID] = e
		if err := canvas.ValidateProps(canvas.EdgeKind, e.Props, "props"); err != nil {
			t.Errorf("edge %s: %v", e.ID, err)
		}
		if _, ok := e.Props["points"]; !ok {
			t.Errorf("edge %s has no points", e.ID)
		}
		for _, end := range []string{e.From, e.To} {
			if _, ok := nodes[end]; end != "" && !ok {
				t.Errorf("edge %s names the missing node %q", e.ID, end)
			}
		}
	}
	same := func(a, b any) bool {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		return bytes.Equal(ja, jb)
	}
	v1 := func(props map[string]any) map[string]any {
		m, _ := props["meta"].(map[string]any)
		v, _ := m["v1"].(map[string]any)
		return v
	}
	for _, n := range old.Nodes {
		if n.Type == "arrow" {
			e, ok := edges[n.ID]
			if !ok {
				t.Errorf("arrow node %s is no edge", n.ID)
				continue
			}
			kept := v1(e.Props)
			for k, v := range map[string]any{"name": n.Name, "parent_id": n.ParentID, "index": n.Index, "x": n.X, "y": n.Y, "w": n.W, "h": n.H, "rotation": n.Rotation} {
				if v != "" && !same(kept[k], v) {
					t.Errorf("arrow %s: its %s %v is not in props.meta.v1 (%v)", n.ID, k, v, kept[k])
				}
			}
			for k, v := range n.Props {
				switch {
				case same(e.Props[k], v) || same(kept[k], v):
				case k == "start_binding" && same(e.From, v), k == "end_binding" && same(e.To, v):
				case k == "start" || k == "end":
					end, pts := e.From, e.Props["points"].([]any)
					p := pts[0].(map[string]any)
					if k == "end" {
						end, p = e.To, pts[len(pts)-1].(map[string]any)
					}
					m, _ := v.(map[string]any)
					if b, ok := m["boundShapeId"]; ok && !same(b, end) {
						t.Errorf("arrow %s: %s.boundShapeId %v is not its %s end (%q)", n.ID, k, b, k, end)
					}
					if x, ok := m["x"]; ok {
						xf, _ := canvas.NumberValue(x)
						yf, _ := canvas.NumberValue(m["y"])
						px, _ := canvas.NumberValue(p["x"])
						py, _ := canvas.NumberValue(p["y"])
						if n.Rotation == 0 && (px != n.X+xf || py != n.Y+yf) {
							t.Errorf("arrow %s: %s %v is not its end's point %v", n.ID, k, v, p)
						}
					}
				default:
					t.Errorf("arrow %s: props.%s %v is lost", n.ID, k, v)
				}
			}
			continue
		}
		m, ok := nodes[n.ID]
		if !ok {
			t.Errorf("node %s is lost", n.ID)
			continue
		}
		if m.Type != n.Type || m.Name != n.Name || m.ParentID != n.ParentID || m.Index != n.Index || m.X != n.X || m.Y != n.Y || m.W != n.W || m.H != n.H || m.Rotation != n.Rotation {
			t.Errorf("node %s changed: %+v, was %+v", n.ID, *m, *n)
		}
		kept := v1(m.Props)
		for k, v := range n.Props {
			switch {
			case same(m.Props[k], v) || same(kept[k], v):
			case k == "src" && same(m.Props["url"], v):
			default:
				t.Errorf("node %s: props.%s %v is lost: %v", n.ID, k, v, m.Props)
			}
		}
	}
	for _, e := range old.Edges {
		m, ok := edges[e.ID]
		if !ok {
			t.Errorf("edge %s is lost", e.ID)
			continue
		}
		if m.From != e.From || m.To != e.To || m.Type != e.Type {
			t.Errorf("edge %s changed: %+v, was %+v", e.ID, *m, *e)
		}
		kept := v1(m.Props)
		for k, v := range e.Props {
			if !same(m.Props[k], v) && !same(kept[k], v) {
				t.Errorf("edge %s: props.%s %v is lost: %v", e.ID, k, v, m.Props)
			}
		}
	}
}

// heldAppend is a Store whose first migrate_model append waits until every
// holder of decided has reached its own.
type heldAppend struct {
	store.Store
	decided *sync.WaitGroup
	once    sync.Once
}

func (s *heldAppend) Append(ctx context.Context, canvasID string, head int64, commits []canvas.Commit, idem []store.IdempotencyRecord) error {
	if len(commits) == 1 && commits[0].Type == "migrate_model" {
		s.once.Do(func() {
			s.decided.Done()
			s.decided.Wait()
		})
	}
	return s.Store.Append(ctx, canvasID, head, commits, idem)
}
