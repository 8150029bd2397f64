package sqlitestore_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/storetest"
)

// TestOpensAModel1DataDirectory opens a copy of the store a canvasd of
// model 1 left in its data directory (store/testdata/model1/canvasd.db,
// written with --snapshot-every 7, so it holds state snapshots of the old
// schema too): the canvas loads migrated to model 2 with nothing lost, the
// old snapshots ignored; once the server stored snapshots of its own, it
// loads from them, migrated.
func TestOpensAModel1DataDirectory(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(storetest.Model1Dir(t), "canvasd.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "canvasd.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	load := func() (canvas.SceneState, int64) {
		s := openAt(t, path)
		defer s.Close()
		e := store.NewEngine(s, store.EngineConfig{SnapshotEvery: 2})
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer e.Stop()
		var scene canvas.SceneState
		var rev int64
		if err := e.View(ctx, "v1model", -1, func(st *canvas.State, _ string) error {
			b, err := json.Marshal(st.Scene())
			if err == nil {
				err = canvas.UnmarshalExact(b, &scene)
			}
			rev = st.Rev
			return err
		}); err != nil {
			t.Fatalf("loading the canvas: %v", err)
		}
		// Two commands: the engine stores a snapshot (of its schema) at the new head.
		for _, typ := range []string{"move", "move"} {
			env := canvas.Envelope{Type: typ, BaseRev: &rev, Args: json.RawMessage(`{"ids":["b"],"dx":1}`)}
			if a, err := e.Execute(ctx, "v1model", canvas.Actor{ID: "human-1", Type: canvas.ActorHuman}, env); err != nil || a.Outcome != store.OutcomeApplied {
				t.Fatalf("move: %v %s", err, a.Result)
			}
			rev++
		}
		return scene, rev
	}
	scene, rev := load()
	if rev != 24 {
		t.Fatalf("after loading and two moves: rev %d, want 24 (21, the migration, two moves)", rev)
	}
	storetest.CheckModel1Migrated(t, scene, storetest.Model1State(t))
	again, rev := load() // from the snapshot it stored, and the log after it
	if rev != 26 || len(again.Edges) != len(scene.Edges) {
		t.Fatalf("loaded again: rev %d (want 26), %d edges (want %d)", rev, len(again.Edges), len(scene.Edges))
	}
	s := openAt(t, path)
	defer s.Close()
	commits, err := s.ReadCommits(ctx, "v1model", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	migrations := 0
	for _, c := range commits {
		if c.Type == "migrate_model" {
			migrations++
		}
	}
	if migrations != 1 || commits[21].Type != "migrate_model" {
		t.Fatalf("%d migrate_model commits; the 22nd commit is %s", migrations, commits[21].Type)
	}
	snap, err := s.LoadStateSnapshot(ctx, "v1model", 100)
	if err != nil || snap.Schema != reducer.Schema {
		t.Fatalf("no snapshot of the new schema was stored: %v %+v", err, snap.Rev)
	}
}
