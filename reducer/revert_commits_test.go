package reducer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
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
	trial := cloneLogged(s)
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
	trial = cloneLogged(s)
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
	// A commit whose change was undone since leaves nothing to revert: it
	// commits no change.
	if dec := mustExec(t, cloneLogged(s), "human", CmdRevertCommits, map[string]any{"revs": []int64{r3}}); len(dec.Changes) != 0 {
		t.Errorf("revert of an undone create: %+v, want no change", dec.Changes)
	}
	mustExec(t, s, "human", "update_node", map[string]any{"id": "a", "props": map[string]any{}}) // changes nothing
	nothing := s.Rev

	for _, tc := range []struct {
		args         map[string]any
		field, about string
	}{
		{map[string]any{"revs": []int64{}}, "args.revs", "at least one"},
		{map[string]any{"revs": []int64{r1, 99}}, "args.revs", "revision 99 is not a commit of this canvas (its log ends at revision 6)"},
		{map[string]any{"revs": []int64{r1, 0}}, "args.revs[1]", "0 is not a revision"},
		{map[string]any{"revs": []int64{nothing}}, "args.revs", "nothing to revert"},
		{map[string]any{"revs": []int64{r1}, "extra": 1}, "args.extra", ""},
		{map[string]any{"revs": make([]int64, MaxRevertRevs+1)}, "args.revs", fmt.Sprintf("at most %d", MaxRevertRevs)},
		{map[string]any{"revs": []int64{1, MaxRevertSpan + 1}}, "args.revs", fmt.Sprintf("at most %d", MaxRevertSpan)},
	} {
		_, err := histExec(t, s, "human", CmdRevertCommits, tc.args)
		var fe *canvas.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, canvas.ErrUnprocessable) || !strings.Contains(err.Error(), tc.about) {
			t.Errorf("%.80v: %v, want a 422 on %s saying %q", tc.args, err, tc.field, tc.about)
		}
	}
}

// TestRevertCommitsWithUndoAndRedo: commits that include an undo or a redo,
// and commits whose changes were undone or redone since, revert to what
// their entities were before them.
func TestRevertCommitsWithUndoAndRedo(t *testing.T) {
	geo := func(id string, x float64) map[string]any {
		return map[string]any{"id": id, "type": "geo", "x": x, "y": 0, "w": 10, "h": 10}
	}
	none := map[string]any{}
	revert := func(s *canvas.State, revs ...int64) Decision {
		t.Helper()
		return mustExec(t, s, "human", CmdRevertCommits, map[string]any{"revs": revs})
	}
	xOf := func(s *canvas.State, id string) any {
		if n, ok := s.Nodes[id]; ok {
			return n.X
		}
		return "gone"
	}

	t.Run("a turn with an undo in it", func(t *testing.T) {
		s := canvas.NewState()
		mustExec(t, s, "agent", "create_shape", geo("a", 0))                        // 1
		mustExec(t, s, "agent", "move", map[string]any{"id": "a", "x": 50, "y": 0}) // 2
		mustExec(t, s, "agent", CmdUndo, none)                                      // 3: a back at 0
		mustExec(t, s, "agent", "create_shape", geo("b", 100))                      // 4
		dec := revert(s, 1, 2, 3, 4)
		if len(s.Nodes) != 0 {
			t.Fatalf("after the revert: %d nodes", len(s.Nodes))
		}
		if res := dec.Result.(RevertCommitsResult); !reflect.DeepEqual(res.Reverted, []int64{1, 2, 3, 4}) || len(res.NodesChanged) != 2 {
			t.Errorf("result %+v", res)
		}
	})

	t.Run("a turn undone by a later one", func(t *testing.T) {
		s := canvas.NewState()
		mustExec(t, s, "agent", "create_shape", geo("a", 0))  // 1: turn 1
		mustExec(t, s, "agent", "create_shape", geo("b", 20)) // 2: turn 1
		mustExec(t, s, "agent", CmdUndo, none)                // 3: turn 2 undoes b
		// Turn 1: a goes; b is already as before it.
		trial := cloneLogged(s)
		if dec := revert(trial, 1, 2); changeSummary(dec.Changes) != "delete node a" || len(trial.Nodes) != 0 {
			t.Errorf("revert of turn 1: %s, %d nodes", changeSummary(dec.Changes), len(trial.Nodes))
		}
		// Turn 2: b comes back, then turn 1 takes both.
		revert(s, 3)
		if xOf(s, "b") != 20.0 {
			t.Fatalf("revert of the undo: b %v", xOf(s, "b"))
		}
		revert(s, 1, 2)
		if len(s.Nodes) != 0 {
			t.Errorf("turn 1 after turn 2: %d nodes", len(s.Nodes))
		}
		// Every turn at once: nothing left to change.
		if dec := revert(cloneLogged(s), 1, 2, 3); len(dec.Changes) != 0 {
			t.Errorf("reverting again: %s", changeSummary(dec.Changes))
		}
	})

	t.Run("a turn undone and redone since", func(t *testing.T) {
		s := canvas.NewState()
		mustExec(t, s, "agent", "create_shape", geo("a", 0))                        // 1
		mustExec(t, s, "agent", "update_shape", map[string]any{"id": "a", "x": 10}) // 2
		mustExec(t, s, "agent", CmdUndo, none)                                      // 3: a at 0
		mustExec(t, s, "agent", CmdRedo, none)                                      // 4: a at 10
		if trial := cloneLogged(s); len(revert(trial, 3, 4).Changes) != 0 || xOf(trial, "a") != 10.0 {
			t.Errorf("revert of the undo and the redo: a %v, want unchanged", xOf(trial, "a"))
		}
		if trial := cloneLogged(s); len(revert(trial, 2).Changes) != 1 || xOf(trial, "a") != 0.0 {
			t.Errorf("revert of the update that was undone and redone: a %v, want 0", xOf(trial, "a"))
		}
		trial := cloneLogged(s)
		revert(trial, 4)
		if xOf(trial, "a") != 0.0 {
			t.Errorf("revert of the redo: a %v, want 0", xOf(trial, "a"))
		}
		revert(s, 1, 2)
		if len(s.Nodes) != 0 {
			t.Errorf("revert of the turn: %d nodes", len(s.Nodes))
		}
	})

	t.Run("someone's change in the middle of the turn", func(t *testing.T) {
		s := canvas.NewState()
		mustExec(t, s, "agent", "create_shape", geo("a", 0))                        // 1
		mustExec(t, s, "bob", "update_shape", map[string]any{"id": "a", "y": 99})   // 2
		mustExec(t, s, "agent", "update_shape", map[string]any{"id": "a", "x": 10}) // 3
		mustExec(t, s, "agent", "create_shape", geo("b", 20))                       // 4
		_, err := histExec(t, s, "human", CmdRevertCommits, map[string]any{"revs": []int64{1, 3, 4}})
		var ce *canvas.ConflictError
		if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Result.ConflictingIDs, []string{"a"}) || ce.Result.BaseRev != 1 {
			t.Fatalf("revert over bob's change: %v (%+v)", err, ce)
		}
		if len(s.Nodes) != 2 || s.Nodes["a"].Y != 99 {
			t.Fatal("a refused revert changed the state")
		}
		// Once bob deleted a, it is as before the turn: the revert takes b alone.
		mustExec(t, s, "bob", "delete_node", map[string]any{"id": "a"})
		if dec := revert(s, 1, 3, 4); changeSummary(dec.Changes) != "delete node b" {
			t.Errorf("revert after bob deleted a: %s", changeSummary(dec.Changes))
		}
	})
}

// TestRevertCommitsLongTurn: a turn of more commands than an actor's undo
// history keeps reverts as one commit, which one undo takes back.
func TestRevertCommitsLongTurn(t *testing.T) {
	s := canvas.NewState()
	mustExec(t, s, "human", "create_shape", map[string]any{"id": "keep", "type": "geo", "x": 0, "y": 0})
	before := s.Clone()
	var turn []int64
	for i := 0; i < 2*MaxUndoEntries+50; i++ {
		switch id := fmt.Sprintf("s%d", i%100); {
		case i < 100:
			mustExec(t, s, "agent", "create_shape", map[string]any{"id": id, "type": "geo", "x": i * 20, "y": 100})
		case i%3 == 0:
			mustExec(t, s, "agent", CmdUndo, map[string]any{})
		default:
			mustExec(t, s, "agent", "move", map[string]any{"ids": []string{id, "keep"}, "dx": 1, "dy": 2})
		}
		turn = append(turn, s.Rev)
	}
	after := s.Clone()
	dec := mustExec(t, s, "human", CmdRevertCommits, map[string]any{"revs": turn})
	if len(s.Nodes) != 1 || s.Nodes["keep"].X != 0 || s.Nodes["keep"].Y != 0 || s.Nodes["keep"].Index != before.Nodes["keep"].Index {
		t.Fatalf("after the revert: %d nodes, keep %+v", len(s.Nodes), s.Nodes["keep"])
	}
	if res := dec.Result.(RevertCommitsResult); len(res.Reverted) != len(turn) || len(res.NodesChanged) != 101 {
		t.Errorf("result: %d reverted, %d nodes changed", len(res.Reverted), len(res.NodesChanged))
	}
	mustExec(t, s, "human", CmdUndo, map[string]any{})
	if len(s.Nodes) != len(after.Nodes) {
		t.Fatalf("undo of the revert: %d nodes, want %d", len(s.Nodes), len(after.Nodes))
	}
	for id, n := range after.Nodes {
		if !sameNode(withoutStamps(s.Nodes[id]), withoutStamps(n)) {
			t.Errorf("undo of the revert: %s %+v, want %+v", id, s.Nodes[id], n)
		}
	}
}

// TestRevertCommitsOfARevert: reverting a revert brings back what it reverted.
func TestRevertCommitsOfARevert(t *testing.T) {
	s := canvas.NewState()
	mustExec(t, s, "agent", "create_shape", map[string]any{"id": "a", "type": "geo", "x": 0, "y": 0})
	mustExec(t, s, "agent", "update_shape", map[string]any{"id": "a", "x": 10})
	mustExec(t, s, "human", CmdRevertCommits, map[string]any{"revs": []int64{1, 2}})
	if len(s.Nodes) != 0 {
		t.Fatal("the revert left a")
	}
	mustExec(t, s, "bob", CmdRevertCommits, map[string]any{"revs": []int64{3}})
	if a, ok := s.Nodes["a"]; !ok || a.X != 10 {
		t.Fatalf("the revert of the revert: a %+v", a)
	}
}

// withoutStamps returns n without who changed it when (nil stays nil).
func withoutStamps(n *canvas.Node) *canvas.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.CreatedBy, c.UpdatedBy, c.CreatedRev, c.UpdatedRev = "", "", 0, 0
	return &c
}

// TestRevertCommitsRenamesOthersUndo: the values a revert brings back are
// current again under its revision for every actor's undo and redo, exactly
// as far as the history entries of the reverted commits tell them: bob can
// undo his change of a shape that a revert of the agent's turn put back as
// he left it, but not one that carol changed after him.
func TestRevertCommitsRenamesOthersUndo(t *testing.T) {
	geo := map[string]any{"id": "x", "type": "geo", "x": 0, "y": 0, "w": 10, "h": 10}
	move := func(x float64) map[string]any { return map[string]any{"id": "x", "x": x} }
	xOf := func(s *canvas.State) float64 { return s.Nodes["x"].X }
	revert := func(s *canvas.State, revs ...int64) Decision {
		t.Helper()
		return mustExec(t, s, "human", CmdRevertCommits, map[string]any{"revs": revs})
	}
	// twoShapesTurn: shapes x and y, bob moves x to 10, and the agent's turn
	// moves x to 50 (rev 4) and y to 5 (rev 5).
	twoShapesTurn := func() *canvas.State {
		s := canvas.NewState()
		mustExec(t, s, "human", "create_shape", geo)                                                                        // 1
		mustExec(t, s, "human", "create_shape", map[string]any{"id": "y", "type": "geo", "x": 0, "y": 0, "w": 10, "h": 10}) // 2
		mustExec(t, s, "bob", "update_shape", move(10))                                                                     // 3
		mustExec(t, s, "agent", "update_shape", move(50))                                                                   // 4
		mustExec(t, s, "agent", "update_shape", map[string]any{"id": "y", "x": 5})                                          // 5
		return s
	}
	conflict := func(s *canvas.State, actor string) {
		t.Helper()
		var ce *canvas.ConflictError
		if _, err := histExec(t, s, actor, CmdUndo, map[string]any{}); !errors.As(err, &ce) || !reflect.DeepEqual(ce.Result.ConflictingIDs, []string{"x"}) {
			t.Fatalf("%s's undo: %v, want a 409 on x", actor, err)
		}
	}

	t.Run("the reverted turn put back bob's value", func(t *testing.T) {
		s := canvas.NewState()
		mustExec(t, s, "human", "create_shape", geo)    // 1
		mustExec(t, s, "bob", "update_shape", move(10)) // 2
		mustExec(t, s, "agent", "update_shape", move(50))
		r3 := s.Rev
		mustExec(t, s, "agent", "update_shape", move(60))
		revert(s, r3, s.Rev)
		if xOf(s) != 10 {
			t.Fatalf("after the revert: x %v, want bob's 10", xOf(s))
		}
		mustExec(t, s, "bob", CmdUndo, map[string]any{})
		if xOf(s) != 0 {
			t.Fatalf("after bob's undo: x %v, want 0", xOf(s))
		}
		mustExec(t, s, "bob", CmdRedo, map[string]any{})
		if xOf(s) != 10 {
			t.Fatalf("after bob's redo: x %v, want 10", xOf(s))
		}
	})

	t.Run("carol changed it after bob", func(t *testing.T) {
		s := canvas.NewState()
		mustExec(t, s, "human", "create_shape", geo)      // 1
		mustExec(t, s, "bob", "update_shape", move(10))   // 2
		mustExec(t, s, "carol", "update_shape", move(20)) // 3
		mustExec(t, s, "agent", "update_shape", move(50)) // 4
		revert(s, 4)
		if xOf(s) != 20 {
			t.Fatalf("after the revert: x %v, want carol's 20", xOf(s))
		}
		// Bob's undo would overwrite carol's change.
		conflict(s, "bob")
		mustExec(t, s, "carol", CmdUndo, map[string]any{})
		if xOf(s) != 10 {
			t.Fatalf("after carol's undo: x %v, want bob's 10", xOf(s))
		}
		// Carol's undo put back bob's value: now his undo is his own.
		mustExec(t, s, "bob", CmdUndo, map[string]any{})
		if xOf(s) != 0 {
			t.Fatalf("after bob's undo: x %v, want 0", xOf(s))
		}
	})

	t.Run("an entity already at its value before is not renamed", func(t *testing.T) {
		s := twoShapesTurn()                            // 1 to 5
		mustExec(t, s, "bob", "update_shape", move(10)) // 6: x as before the turn
		stamps := xStamps(s)
		revert(s, 4, 5)
		if xOf(s) != 10 || s.Nodes["y"].X != 0 || s.Nodes["x"].UpdatedRev != 6 {
			t.Fatalf("after the revert: x %+v y %+v", s.Nodes["x"], s.Nodes["y"])
		}
		if got := xStamps(s); !reflect.DeepEqual(got, stamps) {
			t.Errorf("stamps of x after a revert that left it alone:\n got %v\nwant %v", got, stamps)
		}
	})

	t.Run("a turn with an undo in it", func(t *testing.T) {
		s := canvas.NewState()
		mustExec(t, s, "human", "create_shape", geo)       // 1
		mustExec(t, s, "bob", "update_shape", move(10))    // 2
		mustExec(t, s, "agent", "update_shape", move(50))  // 3
		mustExec(t, s, "agent", "update_shape", move(60))  // 4
		mustExec(t, s, "agent", CmdUndo, map[string]any{}) // 5: x back to 50
		revert(s, 3, 4, 5)
		if xOf(s) != 10 {
			t.Fatalf("after the revert: x %v, want bob's 10", xOf(s))
		}
		mustExec(t, s, "bob", CmdUndo, map[string]any{})
		if xOf(s) != 0 {
			t.Fatalf("after bob's undo: x %v, want 0", xOf(s))
		}
	})

	t.Run("a reverted commit whose history is gone", func(t *testing.T) {
		// The agent's first change of x left its undo stack (undone, then
		// its redo dropped by a new command): which value of x the revert
		// brings back cannot be told from the history, so bob's undo stays
		// a conflict (the safe side).
		s := twoShapesTurn()                                                       // 1 to 5
		mustExec(t, s, "agent", CmdUndo, map[string]any{})                         // 6: y back
		mustExec(t, s, "agent", "update_shape", map[string]any{"id": "y", "x": 7}) // 7: clears the redo of 6
		mustExec(t, s, "agent", CmdUndo, map[string]any{})                         // 8: y back
		mustExec(t, s, "agent", CmdUndo, map[string]any{})                         // 9: x back to 10
		mustExec(t, s, "agent", "update_shape", map[string]any{"id": "y", "x": 9}) // 10: clears the redos
		mustExec(t, s, "agent", "update_shape", move(70))                          // 11
		revert(s, 4, 5, 6, 7, 8, 9, 10, 11)
		if xOf(s) != 10 || s.Nodes["y"].X != 0 {
			t.Fatalf("after the revert: x %+v y %+v", s.Nodes["x"], s.Nodes["y"])
		}
		conflict(s, "bob")
	})
}

// xStamps lists the stamps of node x in every actor's history entries.
func xStamps(s *canvas.State) map[string][]int64 {
	out := map[string][]int64{}
	for actor, h := range s.History {
		for _, stack := range [][]canvas.HistoryEntry{h.Undo, h.Redo} {
			for _, e := range stack {
				for _, rs := range [][]canvas.RefRev{e.Expect, e.Restore} {
					for _, r := range rs {
						if r.Kind == canvas.KindNode && r.ID == "x" {
							out[actor] = append(out[actor], r.Rev)
						}
					}
				}
			}
		}
	}
	return out
}
