package reducer

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// histStep is one command of a history scenario; typ "snapshot" keeps the
// state for the scenario's revert_to_snapshot commands.
type histStep struct {
	actor, typ string
	args       map[string]any
}

// TestHistoryKeepsStructure: undo, redo, revert_commits and
// revert_to_snapshot over what others did since keep every invariant of the
// other verbs: deleted nodes take their children and edges along, restored
// index keys stay unique, group bounds follow their children, and a restore
// under a missing parent or into a parent cycle is a conflict.
func TestHistoryKeepsStructure(t *testing.T) {
	frame := map[string]any{"id": "F", "type": "frame", "x": 0, "y": 0, "w": 500, "h": 500}
	geo := func(id string, x, y float64, parent string) map[string]any {
		m := map[string]any{"id": id, "type": "geo", "x": x, "y": y, "w": 10, "h": 10}
		if parent != "" {
			m["parent_id"] = parent
		}
		return m
	}
	ids := func(ids ...string) map[string]any { return map[string]any{"ids": ids} }
	reorder := func(op string, ids ...string) map[string]any { return map[string]any{"ids": ids, "op": op} }
	none := map[string]any{}
	tests := []struct {
		name     string
		steps    []histStep
		last     histStep
		conflict []string // the conflicting ids of a refused last step
		gone     []string // nodes and edges absent after the last step
		parents  map[string]string
		order    string // z-order after the last step
		group    string // a group whose bounds are checked against its children
	}{
		{
			name: "undo of a frame's create takes the children others put in it",
			steps: []histStep{
				{"alice", "create_shape", frame},
				{"bob", "create_shape", geo("c", 10, 10, "F")},
				{"bob", "create_shape", geo("x", 900, 0, "")},
				{"bob", "create_edge", map[string]any{"id": "e", "from": "x", "to": "c"}},
			},
			last: histStep{"alice", "undo", none},
			gone: []string{"F", "c", "e"},
		},
		{
			name: "undo of a frame's create takes nested frames and their children",
			steps: []histStep{
				{"alice", "create_shape", frame},
				{"bob", "create_shape", map[string]any{"id": "F2", "type": "frame", "x": 10, "y": 10, "w": 100, "h": 100, "parent_id": "F"}},
				{"bob", "create_shape", geo("c", 20, 20, "F2")},
				{"bob", "create_shape", geo("d", 30, 20, "F2")},
				{"bob", "group", map[string]any{"ids": []string{"c", "d"}, "group_id": "G"}},
			},
			last: histStep{"alice", "undo", none},
			gone: []string{"F", "F2", "G", "c", "d"},
		},
		{
			name: "redo of that undo brings the children back",
			steps: []histStep{
				{"alice", "create_shape", frame},
				{"bob", "create_shape", geo("c", 10, 10, "F")},
				{"alice", "undo", none},
			},
			last:    histStep{"alice", "redo", none},
			parents: map[string]string{"c": "F"},
		},
		{
			name: "revert_commits of a frame's create takes the children others put in it",
			steps: []histStep{
				{"agent", "create_shape", frame},
				{"bob", "create_shape", geo("c", 10, 10, "F")},
				{"bob", "create_shape", geo("x", 900, 0, "")},
				{"bob", "create_edge", map[string]any{"id": "e", "from": "c", "to": "x"}},
			},
			last: histStep{"carol", CmdRevertCommits, map[string]any{"revs": []int{1}}},
			gone: []string{"F", "c", "e"},
		},
		{
			name: "undo of a group keeps the shapes others put in it since, ungrouped",
			steps: []histStep{
				{"alice", "create_shape", frame},
				{"alice", "create_shape", geo("a", 0, 0, "F")},
				{"alice", "create_shape", geo("b", 20, 0, "F")},
				{"alice", "group", map[string]any{"ids": []string{"a", "b"}, "group_id": "G"}},
				{"bob", "create_shape", geo("c", 10, 0, "G")}, // within the bounds: G does not change
			},
			last:    histStep{"alice", "undo", none},
			gone:    []string{"G"},
			parents: map[string]string{"a": "F", "b": "F", "c": "F"},
		},
		{
			name: "undo of a delete whose index key was handed out again",
			steps: []histStep{
				{"alice", "create_shape", geo("a", 0, 0, "")},
				{"alice", "create_shape", geo("b", 0, 0, "")},
				{"alice", "create_shape", geo("d", 0, 0, "")},
				{"alice", "reorder", reorder("send_backward", "d")}, // between a and b
				{"alice", "delete_node", map[string]any{"id": "d"}},
				{"bob", "create_shape", geo("e", 0, 0, "")},
				{"bob", "reorder", reorder("send_backward", "e")}, // d's old key
			},
			last:  histStep{"alice", "undo", none},
			order: "a e d b",
		},
		{
			name: "undo of a reorder whose old key was handed out again",
			steps: []histStep{
				{"alice", "create_shape", geo("a", 0, 0, "")},
				{"alice", "create_shape", geo("b", 0, 0, "")},
				{"alice", "create_shape", geo("d", 0, 0, "")},
				{"alice", "reorder", reorder("send_backward", "d")},
				{"alice", "reorder", reorder("bring_to_front", "d")},
				{"bob", "create_shape", geo("e", 0, 0, "")},
				{"bob", "reorder", reorder("send_to_back", "e")},
				{"bob", "reorder", reorder("bring_forward", "e")}, // between a and b: d's key before alice's bring_to_front
			},
			last:  histStep{"alice", "undo", none},
			order: "a e d b",
		},
		{
			name: "undo of a create in a group recomputes the group's bounds",
			steps: []histStep{
				{"alice", "create_shape", geo("a", 0, 0, "")},
				{"alice", "create_shape", geo("b", 20, 0, "")},
				{"alice", "group", map[string]any{"ids": []string{"a", "b"}, "group_id": "G"}},
				{"alice", "create_shape", geo("c", 500, 500, "G")},
				{"bob", "create_shape", geo("d", 400, 400, "G")}, // inside the bounds: the group does not change
			},
			last:  histStep{"alice", "undo", none},
			gone:  []string{"c"},
			group: "G",
		},
		{
			name: "undo of a create that leaves a group without children deletes the group",
			steps: []histStep{
				{"alice", "create_shape", geo("a", 0, 0, "")},
				{"alice", "create_shape", geo("b", 20, 0, "")},
				{"alice", "group", map[string]any{"ids": []string{"a", "b"}, "group_id": "G"}},
				{"alice", "create_shape", map[string]any{"id": "c", "type": "geo", "x": 0, "y": 0, "w": 100, "h": 100, "parent_id": "G"}},
				{"bob", "delete_shape", ids("a", "b")}, // c covers them: the group does not change
			},
			last: histStep{"alice", "undo", none},
			gone: []string{"c", "G"},
		},
		{
			name: "revert_to_snapshot of a node whose parent was deleted since",
			steps: []histStep{
				{"alice", "create_shape", frame},
				{"alice", "create_shape", map[string]any{"id": "d", "type": "doc", "x": 10, "y": 10, "parent_id": "F", "props": map[string]any{"text": "hi\n"}}},
				{"", "snapshot", nil},
				{"alice", "delete_node", map[string]any{"id": "F"}},
			},
			last:     histStep{"alice", CmdRevertToSnapshot, map[string]any{"snapshot_id": "s1", "node_id": "d"}},
			conflict: []string{"F"},
		},
		{
			name: "revert_to_snapshot of a node under what is now its own descendant",
			steps: []histStep{
				{"a", "create_shape", frame},
				{"a", "create_shape", geo("B", 600, 0, "")},
				{"a", "group", map[string]any{"ids": []string{"F", "B"}, "group_id": "G"}},
				{"", "snapshot", nil},
				{"a", "ungroup", map[string]any{"id": "G"}},
				{"a", "create_shape", geo("c", 10, 10, "F")},
				{"a", "create_shape", geo("d", 200, 10, "F")},
				{"a", "group", map[string]any{"ids": []string{"c", "d"}, "group_id": "G"}},
			},
			last:     histStep{"a", CmdRevertToSnapshot, map[string]any{"snapshot_id": "s1", "node_id": "F"}},
			conflict: []string{"G"},
		},
		{
			name: "revert_to_snapshot of a node in a group recomputes the group's bounds",
			steps: []histStep{
				{"a", "create_shape", map[string]any{"id": "d", "type": "doc", "x": 0, "y": 0, "props": map[string]any{"text": "x\n"}}},
				{"a", "create_shape", geo("B", 600, 0, "")},
				{"a", "group", map[string]any{"ids": []string{"d", "B"}, "group_id": "G"}},
				{"", "snapshot", nil},
				{"a", "move", map[string]any{"ids": []string{"d"}, "dx": -1000, "dy": 0}},
				{"a", "replace_lines", map[string]any{"node_id": "d", "start_line": 1, "end_line": 1, "new_content": "y"}},
			},
			last:    histStep{"a", CmdRevertToSnapshot, map[string]any{"snapshot_id": "s1", "node_id": "d"}},
			parents: map[string]string{"d": "G"},
			group:   "G",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := canvas.NewState()
			var snap *canvas.State
			run := func(st histStep) (Decision, error) {
				if st.typ != CmdRevertToSnapshot {
					return histExec(t, s, st.actor, st.typ, st.args)
				}
				b, _ := json.Marshal(st.args)
				return histExecCmd(t, s, canvas.Command{CanvasID: "c", ID: fmt.Sprintf("cmd%d", s.Rev+1), Type: st.typ, Args: b,
					Rev: s.Rev + 1, Actor: canvas.Actor{ID: st.actor, Type: canvas.ActorHuman}, Seed: "z", Snapshot: snap})
			}
			for _, st := range tc.steps {
				if st.typ == "snapshot" {
					snap = s.Clone()
					continue
				}
				if _, err := run(st); err != nil {
					t.Fatalf("%s %s %v: %v", st.actor, st.typ, st.args, err)
				}
				checkInvariants(t, s)
			}
			before := s.Clone()
			dec, err := run(tc.last)
			if tc.conflict != nil {
				var ce *canvas.ConflictError
				if !errors.As(err, &ce) || !reflect.DeepEqual(ce.Result.ConflictingIDs, tc.conflict) {
					t.Fatalf("%s: %v, want a conflict on %v", tc.last.typ, err, tc.conflict)
				}
				if !reflect.DeepEqual(s, before) {
					t.Fatal("a refused command changed the state")
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.last.typ, err)
			}
			checkInvariants(t, s)
			for _, id := range tc.gone {
				if _, ok := s.Nodes[id]; ok {
					t.Errorf("node %s survived", id)
				}
				if _, ok := s.Edges[id]; ok {
					t.Errorf("edge %s survived", id)
				}
			}
			for id, p := range tc.parents {
				if n, ok := s.Nodes[id]; !ok || n.ParentID != p {
					t.Errorf("node %s: %+v, want parent %s", id, n, p)
				}
			}
			if tc.order != "" && zOrder(s) != tc.order {
				t.Errorf("z-order %s, want %s", zOrder(s), tc.order)
			}
			if tc.group != "" {
				if _, ok := s.Nodes[tc.group]; !ok {
					t.Fatalf("group %s is gone", tc.group)
				}
			}
			// One change per entity, every written entity touched.
			seen := map[canvas.Ref]bool{}
			touched := map[canvas.Ref]bool{}
			for _, r := range dec.Touched {
				touched[r] = true
			}
			for _, ch := range dec.Changes {
				r := canvas.Ref{Kind: ch.Kind, ID: ch.ID}
				if seen[r] || !touched[r] {
					t.Errorf("change of %s %s repeated or not touched: %s", ch.Kind, ch.ID, changeSummary(dec.Changes))
				}
				seen[r] = true
			}
			// Every node can still be reordered (keys are unique and valid).
			for _, n := range s.SortedNodes() {
				if _, err := Decide(s, rhCommand(s, "reorder", fmt.Sprintf(`{"ids":[%q],"op":"bring_forward"}`, n.ID))); err != nil {
					t.Errorf("reorder %s: %v", n.ID, err)
				}
			}
		})
	}
}

// The harness catches what settle refuses to make.
func TestCheckInvariantsCatchesParentCycles(t *testing.T) {
	s := canvas.NewState()
	mustExec(t, s, "a", "create_shape", map[string]any{"id": "F", "type": "frame", "x": 0, "y": 0})
	mustExec(t, s, "a", "create_shape", map[string]any{"id": "H", "type": "frame", "x": 0, "y": 0, "parent_id": "F"})
	if msg := invariantError(t, s); msg != "" {
		t.Fatal(msg)
	}
	f := *s.Nodes["F"]
	f.ParentID = "H"
	s.Nodes["F"] = &f
	if msg := invariantError(t, s); !strings.Contains(msg, "its own ancestor") {
		t.Fatalf("a parent cycle passes checkInvariants: %q", msg)
	}
}
