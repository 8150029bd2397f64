package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
	"github.com/canvasd/canvasd/store"
)

// TestRevertCommitsReadsTheLog: revert_commits of more commits than an
// actor's undo history keeps, from before the stored snapshots, is one
// commit; the commits it names must be in the log when it arrives.
func TestRevertCommitsReadsTheLog(t *testing.T) {
	ctx := context.Background()
	e, st := newEngine(t, filepath.Join(t.TempDir(), "r.db"), nil)
	if err := st.CreateCanvas(ctx, canvas.Canvas{ID: "r", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	agent := canvas.Actor{ID: "agent-1", Type: canvas.ActorAgent}
	do := func(actor canvas.Actor, typ string, args map[string]any) int64 {
		t.Helper()
		head, _, _ := e.Head(ctx, "r")
		a, err := e.Execute(ctx, "r", actor, envelope(typ, head, args))
		if err != nil || a.Outcome != store.OutcomeApplied {
			t.Fatalf("%s: %v %s", typ, err, a.Result)
		}
		return head + 1
	}
	do(human, "create_shape", map[string]any{"id": "mine", "type": "geo", "x": 0, "y": 0})
	for i := 0; i < 25; i++ { // past a stored snapshot or two (every 10 commits here)
		do(human, "update_shape", map[string]any{"id": "mine", "y": i})
	}
	var turn []int64
	for i := 0; i < reducer.MaxUndoEntries+20; i++ {
		turn = append(turn, do(agent, "create_shape", map[string]any{"type": "geo", "x": i * 20, "y": 100}))
	}
	for i := 0; i < 5; i++ {
		do(human, "move", map[string]any{"ids": []string{"mine"}, "dx": 1, "dy": 0})
	}
	if snap, err := st.LoadStateSnapshot(ctx, "r", turn[0]-1); err != nil || snap.Rev < 10 {
		t.Fatalf("no stored snapshot before the turn for the revert to start from: %v", err)
	}
	head, _, _ := e.Head(ctx, "r")
	a, err := e.Execute(ctx, "r", human, envelope(reducer.CmdRevertCommits, head, map[string]any{"revs": turn}))
	if err != nil || a.Outcome != store.OutcomeApplied {
		t.Fatalf("revert of %d commits: %v %s", len(turn), err, a.Result)
	}
	_ = e.View(ctx, "r", -1, func(s *canvas.State, _ string) error {
		if len(s.Nodes) != 1 || s.Nodes["mine"].X != 5 || s.Nodes["mine"].Y != 24 || s.Rev != head+1 {
			t.Errorf("after the revert: %d nodes, rev %d", len(s.Nodes), s.Rev)
		}
		return nil
	})

	// A commit of the same batch is not in the log yet.
	head++
	_, err = e.ExecuteBatch(ctx, "r", human, head, "", []canvas.Envelope{
		envelope("create_shape", head, map[string]any{"id": "x", "type": "geo", "x": 0, "y": 0}),
		envelope(reducer.CmdRevertCommits, head, map[string]any{"revs": []int64{head + 1}}),
	})
	var fe *canvas.FieldError
	if !errors.As(err, &fe) || fe.Field != "commands[1].args.revs" || !strings.Contains(err.Error(), "not a commit of this canvas") {
		t.Fatalf("revert of a commit of the same batch: %v", err)
	}
	if _, err := e.Execute(ctx, "nope", human, envelope(reducer.CmdRevertCommits, 0, map[string]any{"revs": []int64{1}})); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("revert on an unknown canvas: %v", err)
	}
}
