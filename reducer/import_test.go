package reducer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

const importArgs = `{"mode": %q, "nodes": [
	{"id": "f", "type": "frame", "name": "Frame", "x": 0, "y": 0, "w": 400, "h": 300},
	{"id": "a", "type": "geo", "parent_id": "f", "x": 20, "y": 20, "w": 100, "h": 60, "props": {"geo": "ellipse", "color": "red", "text": "a"}},
	{"id": "g", "type": "group"},
	{"id": "b", "type": "note", "parent_id": "g", "x": 500, "y": 0, "w": 200, "h": 200, "props": {"text": "b"}},
	{"id": "c", "type": "text", "parent_id": "g", "x": 500, "y": 250, "w": 100, "h": 30, "props": {"text": "c", "meta": {"kept": [1, "two"]}}}
], "edges": [
	{"id": "ab", "from": "a", "to": "b", "props": {"text": "a to b", "arrowheadEnd": "triangle"}},
	{"id": "free", "from": "", "to": "c", "props": {"points": [{"x": 800, "y": 400}, {"x": 550, "y": 280}]}}
]}`

func TestImportSceneMerge(t *testing.T) {
	h := newRH(t)
	h.box("old", -500, -500, 50, 50)
	h.box("a", 900, 900, 10, 10) // replaced by the import's a
	dec := h.do(CmdImportScene, fmt.Sprintf(importArgs, "merge"))
	checkInvariants(t, h.s)
	if want := []string{"f", "a", "g", "b", "c", "ab", "free"}; !slices.Equal(dec.CreatedIDs, want) {
		t.Errorf("created ids %q, want %q", dec.CreatedIDs, want)
	}
	if _, ok := h.s.Nodes["old"]; !ok {
		t.Errorf("a merge deleted a node the file does not hold")
	}
	a := h.node("a")
	if a.ParentID != "f" || a.Props["geo"] != "ellipse" || a.X != 20 {
		t.Errorf("a is %+v, want the file's a in frame f", a)
	}
	if g := h.geo("g"); g != (geo{500, 0, 200, 280, 0}) {
		t.Errorf("the group's box is %+v, want its members' union", g)
	}
	// In front of what was there, in the file's order.
	if got := zOrder(h.s); !strings.HasPrefix(got, "old f a g b c") {
		t.Errorf("z-order %s", got)
	}
	if pts, ok := pointsOf(h.s.Edges["ab"].Props); !ok || len(pts) != 2 {
		t.Errorf("the bound edge got no points: %v", h.s.Edges["ab"].Props)
	}
	if m, _ := h.node("c").Props["meta"].(map[string]any); m == nil {
		t.Errorf("meta was not kept: %v", h.node("c").Props)
	}
	// The log replays to the same state.
	replayed, err := Replay(h.log)
	if err != nil {
		t.Fatal(err)
	}
	if jsonOf(replayed.Scene()) != jsonOf(h.s.Scene()) {
		t.Errorf("replaying the log gives another state")
	}
}

func TestImportSceneReplace(t *testing.T) {
	h := newRH(t)
	h.box("old", -500, -500, 50, 50)
	h.box("other", 0, 0, 50, 50)
	h.do("create_edge", `{"id": "e-old", "from": "old", "to": "other"}`)
	dec := h.do(CmdImportScene, fmt.Sprintf(importArgs, "replace"))
	checkInvariants(t, h.s)
	if _, ok := h.s.Nodes["old"]; ok {
		t.Errorf("a replace kept a node the file does not hold")
	}
	if _, ok := h.s.Edges["e-old"]; ok {
		t.Errorf("a replace kept an edge the file does not hold")
	}
	if len(h.s.Nodes) != 5 || len(h.s.Edges) != 2 || len(dec.CreatedIDs) != 7 {
		t.Errorf("after the replace: %d nodes, %d edges", len(h.s.Nodes), len(h.s.Edges))
	}
	// A replace touches everything: it conflicts with any change since its base.
	for _, id := range []string{"old", "other"} {
		if !slices.Contains(dec.Touched, nodeRef(id)) {
			t.Errorf("the replace does not touch %s", id)
		}
	}
}

func TestImportSceneIsAllOrNothing(t *testing.T) {
	for _, c := range []struct{ args, field string }{
		{`{"nodes": [{"id": "a", "type": "geo"}, {"id": "b", "type": "geo", "props": {"fill": "plaid"}}]}`, "args.nodes[1].props.fill"},
		{`{"nodes": [{"id": "a", "type": "geo"}, {"id": "a", "type": "note"}]}`, "args.nodes[1].id"},
		{`{"nodes": [{"id": "a b", "type": "geo"}]}`, "args.nodes[0].id"},
		{`{"nodes": [{"id": "a", "type": "arrow"}]}`, "args.nodes[0].type"},
		{`{"nodes": [{"id": "a", "type": "geo", "parent_id": "nowhere"}]}`, "args.nodes[0].parent_id"},
		{`{"nodes": [{"id": "a", "type": "geo"}, {"id": "b", "type": "geo", "parent_id": "a"}]}`, "args.nodes[1].parent_id"},
		{`{"nodes": [{"id": "g", "type": "group"}]}`, "args.nodes[0]"},
		{`{"nodes": [{"id": "a", "type": "geo", "w": -1}]}`, "args.nodes[0].w"},
		{`{"nodes": [{"id": "a", "type": "geo"}], "edges": [{"id": "e", "from": "a", "to": "z"}]}`, "args.edges[0].to"},
		{`{"nodes": [{"id": "a", "type": "geo"}], "edges": [{"id": "e", "from": "a", "to": ""}]}`, "args.edges[0].props.points"},
		{`{"nodes": [{"id": "a", "type": "geo"}], "edges": [{"id": "e", "from": "a", "to": "a", "props": {"arrowheadEnd": "spear"}}]}`, "args.edges[0].props.arrowheadEnd"},
		{`{"mode": "overwrite"}`, "args.mode"},
	} {
		h := newRH(t)
		h.box("kept", 0, 0, 10, 10)
		before := jsonOf(h.s.Scene())
		_, err := h.try(CmdImportScene, c.args)
		var fe *canvas.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("import %s = %v, want a field error naming %s", c.args, err, c.field)
		}
		if jsonOf(h.s.Scene()) != before {
			t.Errorf("a refused import changed the canvas")
		}
	}
}

// TestImportSceneArgsReadBothWays: args the fast decoder reads and args
// only encoding/json reads (other spacing and spelling) import the same
// nodes; args that are not one JSON object are refused as for any command.
func TestImportSceneArgsReadBothWays(t *testing.T) {
	fast, slow := newRH(t), newRH(t)
	if _, ok := canvas.DecodeImportSceneArgsFast([]byte(fmt.Sprintf(importArgs, "merge"))); !ok {
		t.Fatal("the fast decoder refused the import's args")
	}
	fast.do(CmdImportScene, fmt.Sprintf(importArgs, "merge"))
	other := strings.Replace(fmt.Sprintf(importArgs, "merge"), `"mode"`, `"Mode"`, 1) // encoding/json matches names case-insensitively
	if _, ok := canvas.DecodeImportSceneArgsFast([]byte(other)); ok {
		t.Fatal("the fast decoder read a name spelled otherwise")
	}
	slow.do(CmdImportScene, other)
	if jsonOf(fast.s.Scene()) != jsonOf(slow.s.Scene()) {
		t.Errorf("the two decoders imported different scenes")
	}
	for _, bad := range []string{`{"nodes":[]}}`, `{"nodes":[]}]`, `{"nodes":[}`, `{"nodes":[]} {}`} {
		_, err := newRH(t).try(CmdImportScene, bad)
		var fe *canvas.FieldError
		if !errors.As(err, &fe) || fe.Field != "args" || !strings.Contains(fe.Reason, "not a single valid JSON object") {
			t.Errorf("%s: %v, want args refused as not one JSON object", bad, err)
		}
	}
}
