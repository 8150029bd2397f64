package reducer

import (
	"errors"
	"reflect"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// TestRevertCommits: an agent's turn (several commits, some on the same
// shape and document) is reverted as one commit by someone else; a later
// change by another actor makes the revert a conflict.
func TestRevertCommits(t *testing.T) {
	s := canvas.NewState()
	mustExec(t, s, "human", "create_shape", map[string]any{"id": "keep", "type": "geo", "x": 0, "y": 0})
	mustExec(t, s, "human", "create_node", map[string]any{"id": "doc", "type": "doc", "name": "d", "props": map[string]any{"text": "a\nb\nc\n"}})
	before := s.Clone()
	var turn []int64
	step := func(typ string, args map[string]any) {
		mustExec(t, s, "agent-1", typ, args)
		turn = append(turn, s.Rev)
	}
	step("create_shape", map[string]any{"id": "new", "type": "note", "x": 500, "y": 0})
	step("update_shape", map[string]any{"id": "keep", "x": 40, "props": map[string]any{"color": "red"}})
	step("move", map[string]any{"ids": []string{"keep", "new"}, "dx": 10, "dy": 5})
	step("replace_lines", map[string]any{"node_id": "doc", "start_line": 2, "end_line": 2, "new_content": "B\n"})
	step("insert_lines", map[string]any{"node_id": "doc", "insert_after_line": 0, "content": "top\n"})
	if got := docOf(t, s, "doc"); got != "top\na\nB\nc\n" {
		t.Fatalf("doc %q", got)
	}

	// Reverting only the two document commits leaves the shapes alone.
	trial := s.Clone()
	dec := mustExec(t, trial, "human", CmdRevertCommits, map[string]any{"revs": turn[3:]})
	if got := docOf(t, trial, "doc"); got != "a\nb\nc\n" {
		t.Fatalf("doc after reverting the document commits: %q", got)
	}
	if len(dec.Changes) != 1 || dec.Changes[0].Op != canvas.OpEdit {
		t.Errorf("document revert: %+v; want one line splice", dec.Changes)
	}
	if trial.Nodes["keep"].X != 50 {
		t.Errorf("shape changed by a document revert: x %v", trial.Nodes["keep"].X)
	}
	// The values a revert brought back count as current: older commits of
	// the same shapes revert after it (newest turn first).
	trial = s.Clone()
	mustExec(t, trial, "human", CmdRevertCommits, map[string]any{"revs": turn[2:]})
	if trial.Nodes["keep"].X != 40 || trial.Nodes["new"].X != 500 {
		t.Fatalf("after reverting the move: keep %+v new %+v", trial.Nodes["keep"], trial.Nodes["new"])
	}
	mustExec(t, trial, "human", CmdRevertCommits, map[string]any{"revs": turn[:2]})
	if _, ok := trial.Nodes["new"]; ok || trial.Nodes["keep"].X != 0 || trial.Nodes["keep"].Props["color"] != nil {
		t.Errorf("reverting the older commits after the newer ones: keep %+v", trial.Nodes["keep"])
	}

	// The whole turn: one commit, the state as before the turn.
	dec = mustExec(t, s, "human", CmdRevertCommits, map[string]any{"revs": turn})
	if _, ok := s.Nodes["new"]; ok {
		t.Error("the created note survived the revert")
	}
	for _, id := range []string{"keep", "doc"} {
		a, b := *before.Nodes[id], *s.Nodes[id]
		a.UpdatedRev, a.UpdatedBy, b.UpdatedRev, b.UpdatedBy = 0, "", 0, ""
		if !nodesEqual(&a, &b) {
			t.Errorf("%s after the revert: %+v, want %+v", id, b, a)
		}
	}
	res := dec.Result.(RevertCommitsResult)
	if !reflect.DeepEqual(res.Reverted, turn) || len(res.NodesChanged) != 3 || res.Diff == "" {
		t.Errorf("result %+v", res)
	}
	// The revert is the reverting actor's to undo.
	mustExec(t, s, "human", CmdUndo, map[string]any{})
	if got := docOf(t, s, "doc"); got != "top\na\nB\nc\n" {
		t.Errorf("undo of the revert: doc %q", got)
	}
}

func TestRevertCommitsConflictsAndErrors(t *testing.T) {
	s := canvas.NewState()
	mustExec(t, s, "agent-1", "create_shape", map[string]any{"id": "a", "type": "geo", "x": 0, "y": 0})
	r1 := s.Rev
	mustExec(t, s, "agent-1", "update_shape", map[string]any{"id": "a", "x": 10})
	r2 := s.Rev
	mustExec(t, s, "human", "update_shape", map[string]any{"id": "a", "y": 99})
	mustExec(t, s, "human", "create_shape", map[string]any{"id": "b", "type": "geo", "x": 0, "y": 0})
	r3 := s.Rev
	mustExec(t, s, "human", CmdUndo, map[string]any{})

	_, err := histExec(t, s, "human", CmdRevertCommits, map[string]any{"revs": []int64{r1, r2}})
	var ce *canvas.ConflictError
	if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Result.ConflictingIDs, []string{"a"}) || ce.Result.BaseRev != r2 {
		t.Fatalf("revert after someone else's change: %v (%+v)", err, ce)
	}
	if s.Nodes["a"].Y != 99 || s.Nodes["a"].X != 10 {
		t.Fatal("a refused revert changed the state")
	}
	// Reverting only the older commit, with the newer one of the same actor still standing, conflicts too.
	s2 := canvas.NewState()
	mustExec(t, s2, "agent-1", "create_shape", map[string]any{"id": "a", "type": "geo", "x": 0, "y": 0})
	mustExec(t, s2, "agent-1", "update_shape", map[string]any{"id": "a", "x": 10})
	if _, err := histExec(t, s2, "human", CmdRevertCommits, map[string]any{"revs": []int64{1}}); !errors.As(err, &ce) {
		t.Fatalf("revert of an older commit under a newer one: %v", err)
	}

	for _, tc := range []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"revs": []int64{}}, "args.revs"},
		{map[string]any{"revs": []int64{99}}, "args.revs[0]"},
		{map[string]any{"revs": []int64{r3}}, "args.revs"}, // undone already
		{map[string]any{"revs": []int64{r1}, "extra": 1}, "args.extra"},
	} {
		_, err := histExec(t, s, "human", CmdRevertCommits, tc.args)
		var fe *canvas.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, canvas.ErrUnprocessable) {
			t.Errorf("%v: %v, want a 422 on %s", tc.args, err, tc.field)
		}
	}
}
