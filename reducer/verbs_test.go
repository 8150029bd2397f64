package reducer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

func wantFieldError(t *testing.T, err error, field, reasonPart string) {
	t.Helper()
	var fe *canvas.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v is not a FieldError (want field %s)", err, field)
	}
	if fe.Field != field || !strings.Contains(fe.Reason, reasonPart) || !errors.Is(err, canvas.ErrUnprocessable) {
		t.Fatalf("error = %q on %q; want field %q with %q", fe.Reason, fe.Field, field, reasonPart)
	}
}

func TestCreateNode(t *testing.T) {
	h := newRH(t)
	dec := h.do("create_node", `{"name":"New Idea","transform":{"x":100,"y":100}}`)
	if !reflect.DeepEqual(dec.CreatedIDs, []string{"shape:s1-0"}) {
		t.Fatalf("created = %v", dec.CreatedIDs)
	}
	n := h.node("shape:s1-0")
	want := canvas.Node{ID: "shape:s1-0", Type: "geo", Name: "New Idea", X: 100, Y: 100, W: 100, H: 100, Index: "a1",
		Props: map[string]any{}, CreatedBy: "user-1", UpdatedBy: "user-1", CreatedRev: 1, UpdatedRev: 1}
	if !reflect.DeepEqual(*n, want) {
		t.Fatalf("node = %+v\nwant %+v", *n, want)
	}
	if len(dec.Changes) != 1 || dec.Changes[0].Op != canvas.OpPut {
		t.Fatalf("changes = %s", changeSummary(dec.Changes))
	}
	h.do("create_node", `{"id":"note1","type":"note","name":"n","props":{"color":"yellow","gone":null,"deep":{"a":null,"b":[null,1]}}}`)
	n = h.node("note1")
	if geoOf(n) != (geo{0, 0, 200, 200, 0}) || n.Index != "a2" {
		t.Fatalf("note = %+v index %q", geoOf(n), n.Index)
	}
	if jsonOf(n.Props) != `{"color":"yellow","deep":{"b":[null,1]}}` {
		t.Fatalf("props = %s", jsonOf(n.Props))
	}
	h.do("create_node", `{"id":"d1","type":"doc","props":{"text":"x\n"}}`)
	if g := h.geo("d1"); g != (geo{0, 0, 600, 400, 0}) {
		t.Fatalf("doc = %+v, want 600×400 by default", g)
	}
	h.do("create_node", `{"id":"f","type":"frame","transform":{"x":1,"y":2,"w":300,"h":200,"rotation":-1.5707963267948966}}`)
	if g := h.geo("f"); g != (geo{1, 2, 300, 200, 3 * math.Pi / 2}) {
		t.Fatalf("frame = %+v", g)
	}
	h.do("create_node", `{"id":"inf","parent_id":"f"}`)
	if h.node("inf").ParentID != "f" {
		t.Fatal("parent not set")
	}
	if zOrder(h.s) != "shape:s1-0 note1 d1 f inf" {
		t.Fatalf("z-order = %s", zOrder(h.s))
	}
	checkInvariants(t, h.s)
}

func TestCreateErrors(t *testing.T) {
	h := newRH(t)
	h.box("a", 0, 0, 10, 10)
	h.do("create_edge", `{"id":"e1","from":"a","to":"a"}`)
	h.do("create_node", `{"id":"d","type":"doc","props":{"text":"x\n"}}`)
	long := strings.Repeat("x", 129)
	cases := []struct{ typ, args, field, reason string }{
		{"create_nodes", `{}`, "type", "known types: align, create_edge"},
		{"create_node", `{"id":"a"}`, "args.id", "already exists"},
		{"create_node", `{"id":"bad id"}`, "args.id", "may only hold"},
		{"create_node", `{"id":"` + long + `"}`, "args.id", "1 to 128"},
		{"create_node", `{"id":"."}`, "args.id", "dots only"}, // a URL path cannot carry it
		{"create_shape", `{"id":"..","type":"geo","x":1,"y":2}`, "args.id", "dots only"},
		{"create_edge", `{"id":"...","from":"a","to":"a"}`, "args.id", "dots only"},
		{"group", `{"ids":["a"],"group_id":".."}`, "args.group_id", "dots only"},
		{"create_node", `{"type":"blob"}`, "args.type", "must be one of geo, note"},
		{"create_node", `{"type":"group"}`, "args.type", "group command"},
		{"create_node", `{"transform":{"w":-1}}`, "args.transform.w", "≥ 0"},
		{"create_node", `{"transform":{"x":"1"}}`, "args.transform.x", "must be a number"},
		{"create_node", `{"colour":"red"}`, "args.colour", "unknown field; this command takes: id, name, type"},
		{"create_node", `{"transform":{"z":1}}`, "args", `unknown field "z" inside a nested object`},
		{"create_node", `{"parent_id":"a"}`, "args.parent_id", "only group and frame"},
		{"create_node", `{"parent_id":"zz"}`, "args.parent_id", `no node "zz"`},
		{"create_node", `{"props":[1]}`, "args.props", ""},
		{"create_shape", `{"x":1,"y":2}`, "args.type", "is required"},
		{"create_shape", `{"type":"geo","y":2}`, "args.x", "is required"},
		{"create_shape", `{"type":"geo","x":1,"y":2,"h":-3}`, "args.h", "≥ 0"},
		{"create_edge", `{"from":"a","to":"nope"}`, "args.to", `no node "nope"`},
		{"create_edge", `{"from":"a"}`, "args.to", "is required"},
		{"create_edge", `{"id":"e1","from":"a","to":"a"}`, "args.id", "already exists"},
		{"update_node", `{"id":"nope"}`, "args.id", `no node "nope"`},
		{"update_node", `{"id":"a","transform":{"h":-1}}`, "args.transform.h", "≥ 0"},
		{"update_shape", `{"id":"a","w":-1}`, "args.w", "≥ 0"},
		{"update_shape", `{"id":"a","parent_id":"a"}`, "args.parent_id", "only group and frame"},
		{"update_node", `{"id":"a","parent_id":"zz"}`, "args.parent_id", `no node "zz"`},
		{"create_node", `{"type":"doc","props":{"text":[1]}}`, "args.props.text", "must be a string"},
		{"create_shape", `{"type":"doc","x":0,"y":0,"props":{"language":7}}`, "args.props.language", "must be a string"},
		{"update_node", `{"id":"d","props":{"text":42}}`, "args.props.text", "must be a string"},
		{"update_edge", `{"id":"nope","props":{}}`, "args.id", `no edge "nope"`},
		{"delete_shape", `{"ids":[]}`, "args.ids", "at least one"},
		{"delete_shape", `{"ids":["a","a"]}`, "args.ids[1]", "duplicate"},
		{"delete_edge", `{"id":""}`, "args.id", "is required"},
	}
	for _, c := range cases {
		before := h.s.Clone()
		_, err := h.try(c.typ, c.args)
		if err == nil {
			t.Fatalf("%s %s: no error", c.typ, c.args)
		}
		wantFieldError(t, err, c.field, c.reason)
		if !reflect.DeepEqual(before, h.s) {
			t.Fatalf("%s: state changed", c.typ)
		}
	}
	// Touched lists the missing entity, so the engine can report a conflict.
	h.do("delete_node", `{"id":"a"}`)
	dec, err := h.try("update_shape", `{"id":"a","x":5}`)
	wantFieldError(t, err, "args.id", "deleted at rev 4")
	if !reflect.DeepEqual(dec.Touched, []canvas.Ref{nodeRef("a")}) {
		t.Fatalf("touched = %v", dec.Touched)
	}
}

func TestUpdateNodeEffectiveDiff(t *testing.T) {
	h := newRH(t)
	h.do("create_node", `{"id":"a","name":"A","transform":{"x":1,"y":2},"props":{"color":"red","size":"m","nested":{"k":1,"j":2}}}`)
	dec := h.do("update_node", `{"id":"a","name":"A","transform":{"x":1,"y":5},"props":{"color":"red","size":null,"nested":{"k":3},"new":true}}`)
	if len(dec.Changes) != 1 {
		t.Fatalf("changes = %s", changeSummary(dec.Changes))
	}
	ch := dec.Changes[0]
	if ch.Op != canvas.OpPatch || jsonOf(ch.Patch) != `{"props":{"nested":{"k":3},"new":true,"size":null},"y":5}` {
		t.Fatalf("patch = %s", jsonOf(ch.Patch))
	}
	n := h.node("a")
	if jsonOf(n.Props) != `{"color":"red","nested":{"j":2,"k":3},"new":true}` || n.UpdatedRev != 2 || n.CreatedRev != 1 {
		t.Fatalf("node = %+v", n)
	}
	// A command that changes nothing yields no change.
	dec = h.do("update_shape", `{"id":"a","x":1,"y":5,"name":"A","props":{"color":"red"}}`)
	if len(dec.Changes) != 0 || !reflect.DeepEqual(dec.Touched, []canvas.Ref{nodeRef("a")}) {
		t.Fatalf("no-op: changes %s touched %v", changeSummary(dec.Changes), dec.Touched)
	}
	if h.node("a").UpdatedRev != 2 || h.s.Rev != 3 {
		t.Fatalf("no-op changed updated_rev or rev: %d %d", h.node("a").UpdatedRev, h.s.Rev)
	}
	dec = h.do("update_shape", `{"id":"a","w":50,"rotation":3.141592653589793}`)
	if jsonOf(dec.Changes[0].Patch) != `{"rotation":3.141592653589793,"w":50}` {
		t.Fatalf("patch = %s", jsonOf(dec.Changes[0].Patch))
	}
}

// TestReparent: parent_id on update_shape and update_node moves a node into a
// frame or group, or out to the top level, where it is on the canvas; the
// frame's moves then carry it, a group's bounds follow, a group left empty
// goes, and a node cannot go inside itself.
func TestReparent(t *testing.T) {
	h := newRH(t)
	h.do("create_shape", `{"id":"f","type":"frame","x":0,"y":0,"w":500,"h":500}`)
	h.do("create_shape", `{"id":"f2","type":"frame","x":600,"y":0,"w":100,"h":100,"parent_id":"f"}`)
	h.box("a", 10, 10, 10, 10)
	h.box("b", 40, 40, 10, 10)
	dec := h.do("update_shape", `{"id":"a","parent_id":"f"}`)
	if len(dec.Changes) != 1 || jsonOf(dec.Changes[0].Patch) != `{"parent_id":"f"}` {
		t.Fatalf("into the frame: %s %s", changeSummary(dec.Changes), jsonOf(dec.Changes[0].Patch))
	}
	h.do("move", `{"id":"f","x":100,"y":0}`)
	if n := h.node("a"); n.X != 110 || n.Y != 10 {
		t.Fatalf("the frame's move did not carry its new child: %+v", n)
	}
	// Into a group: its bounds grow to hold it.
	h.box("c", 300, 300, 10, 10)
	h.do("group", `{"ids":["b","c"],"group_id":"g"}`)
	h.do("update_node", `{"id":"a","parent_id":"g"}`)
	if g := h.node("g"); g.X != 40 || g.W != 270 || h.node("a").ParentID != "g" {
		t.Fatalf("group after reparent: %+v", g)
	}
	for _, bad := range []string{`{"id":"g","parent_id":"g"}`, `{"id":"f","parent_id":"f2"}`} {
		before := h.s.Clone()
		_, err := h.try("update_shape", bad)
		wantFieldError(t, err, "args.parent_id", "a node cannot hold itself")
		if !reflect.DeepEqual(before, h.s) {
			t.Fatalf("%s changed the state", bad)
		}
	}
	// Out to the top level, one by one: the group left empty goes.
	for _, id := range []string{"a", "b", "c"} {
		h.do("update_shape", `{"id":"`+id+`","parent_id":""}`)
	}
	if _, ok := h.s.Nodes["g"]; ok {
		t.Fatalf("the emptied group is still there: %+v", h.node("g"))
	}
	if n := h.node("a"); n.ParentID != "" || n.X != 110 || n.Y != 10 {
		t.Fatalf("out of the group, a moved or kept its parent: %+v", n)
	}
	checkInvariants(t, h.s)
}

// TestReparentUndo: undoing the reparent that emptied a group brings the
// group back with its child in it.
func TestReparentUndo(t *testing.T) {
	s := canvas.NewState()
	mustExec(t, s, "alice", "create_shape", map[string]any{"id": "a", "type": "geo", "x": 0, "y": 0, "w": 10, "h": 10})
	mustExec(t, s, "alice", "create_shape", map[string]any{"id": "b", "type": "geo", "x": 50, "y": 0, "w": 10, "h": 10})
	mustExec(t, s, "alice", "group", map[string]any{"ids": []string{"a", "b"}, "group_id": "g"})
	mustExec(t, s, "alice", "update_shape", map[string]any{"id": "a", "parent_id": ""})
	mustExec(t, s, "alice", "update_shape", map[string]any{"id": "b", "parent_id": ""})
	if _, ok := s.Nodes["g"]; ok {
		t.Fatal("the emptied group is still there")
	}
	mustExec(t, s, "alice", "undo", map[string]any{})
	if g, ok := s.Nodes["g"]; !ok || s.Nodes["b"].ParentID != "g" || s.Nodes["a"].ParentID != "" || g.X != 50 || g.W != 10 {
		t.Fatalf("after undo: g %+v, a in %q, b in %q", s.Nodes["g"], s.Nodes["a"].ParentID, s.Nodes["b"].ParentID)
	}
	checkInvariants(t, s)
}

func TestDeleteCascades(t *testing.T) {
	h := newRH(t)
	h.do("create_shape", `{"id":"f","type":"frame","x":0,"y":0,"w":500,"h":500}`)
	h.do("create_shape", `{"id":"a","type":"geo","x":10,"y":10,"parent_id":"f"}`)
	h.do("create_shape", `{"id":"b","type":"geo","x":200,"y":10,"parent_id":"f"}`)
	h.box("c", 600, 0, 10, 10)
	h.do("create_edge", `{"id":"e1","from":"a","to":"c"}`)
	h.do("create_edge", `{"id":"e2","from":"c","to":"c"}`)
	h.do("group", `{"ids":["a","b"],"group_id":"g"}`)
	dec := h.do("delete_node", `{"id":"f"}`)
	if got := changeSummary(dec.Changes); got != "delete node f; delete node g; delete node a; delete node b; delete edge e1" {
		t.Fatalf("changes = %s", got)
	}
	rev := h.s.Rev
	for _, r := range []canvas.Ref{nodeRef("f"), nodeRef("g"), nodeRef("a"), nodeRef("b"), edgeRef("e1")} {
		if h.s.Tombstones[r] != rev || h.s.ChangedAt(r) != rev {
			t.Fatalf("tombstone of %v = %d, want %d", r, h.s.Tombstones[r], rev)
		}
	}
	if len(h.s.Nodes) != 1 || len(h.s.Edges) != 1 {
		t.Fatalf("left: %v %v", h.s.Nodes, h.s.Edges)
	}
	// Re-creating a deleted id is allowed and clears its tombstone.
	h.box("a", 0, 0, 1, 1)
	if _, ok := h.s.Tombstones[nodeRef("a")]; ok {
		t.Fatal("tombstone survived a re-create")
	}
	checkInvariants(t, h.s)
}

func TestMove(t *testing.T) {
	cases := []struct {
		name, args string
		want       map[string]geo
	}{
		{"relative", `{"ids":["a","b"],"dx":5,"dy":-2.5}`, map[string]geo{"a": {5, -2.5, 10, 10, 0}, "b": {25, 17.5, 10, 20, 0}}},
		{"dx only", `{"ids":["b"],"dx":1}`, map[string]geo{"a": {0, 0, 10, 10, 0}, "b": {21, 20, 10, 20, 0}}},
		{"absolute", `{"id":"b","x":100,"y":200}`, map[string]geo{"b": {100, 200, 10, 20, 0}}},
		{"absolute x only", `{"id":"b","x":-7}`, map[string]geo{"b": {-7, 20, 10, 20, 0}}},
		{"group moves children", `{"ids":["g"],"dx":10,"dy":10}`, map[string]geo{"g": {50, 50, 30, 30, 0}, "c1": {50, 50, 10, 10, 0}, "c2": {70, 70, 10, 10, 0}}},
		{"group and child move once", `{"ids":["c1","g"],"dx":10,"dy":0}`, map[string]geo{"c1": {50, 40, 10, 10, 0}, "c2": {70, 60, 10, 10, 0}}},
		{"child moves group bounds", `{"ids":["c2"],"dx":10,"dy":10}`, map[string]geo{"g": {40, 40, 40, 40, 0}, "c1": {40, 40, 10, 10, 0}}},
		{"absolute group", `{"id":"g","x":0,"y":0}`, map[string]geo{"g": {0, 0, 30, 30, 0}, "c2": {20, 20, 10, 10, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newRH(t)
			h.box("a", 0, 0, 10, 10)
			h.box("b", 20, 20, 10, 20)
			h.box("c1", 40, 40, 10, 10)
			h.box("c2", 60, 60, 10, 10)
			h.do("group", `{"ids":["c1","c2"],"group_id":"g"}`)
			h.do("move", c.args)
			for id, g := range c.want {
				if got := h.geo(id); got != g {
					t.Errorf("%s = %+v, want %+v", id, got, g)
				}
			}
			checkInvariants(t, h.s)
		})
	}
	h := newRH(t)
	h.box("a", 0, 0, 10, 10)
	for _, c := range []struct{ args, field string }{
		{`{"ids":["a"]}`, "args.dx"},
		{`{"id":"a"}`, "args.x"},
		{`{"id":"a","dx":1}`, "args.dx"},
		{`{"ids":["a"],"x":1}`, "args.x"},
		{`{"ids":["a"],"id":"a","x":1}`, "args.ids"},
		{`{"ids":["a","zz"],"dx":1}`, "args.ids[1]"},
	} {
		_, err := h.try("move", c.args)
		wantFieldError(t, err, c.field, "")
	}
	dec := h.do("move", `{"ids":["a"],"dx":0,"dy":0}`)
	if len(dec.Changes) != 0 {
		t.Fatalf("zero move changed %s", changeSummary(dec.Changes))
	}
}

func TestResize(t *testing.T) {
	cases := []struct {
		name, args string
		want       map[string]geo
	}{
		{"scale about selection corner", `{"ids":["a","b"],"scale_x":2,"scale_y":0.5}`,
			map[string]geo{"a": {10, 10, 20, 5, 0}, "b": {50, 20, 20, 10, 0}}},
		{"scale about origin", `{"ids":["a"],"scale_x":2,"scale_y":2,"origin_x":0,"origin_y":0}`,
			map[string]geo{"a": {20, 20, 20, 20, 0}}},
		{"scale_x only", `{"ids":["b"],"scale_x":3}`, map[string]geo{"b": {30, 30, 30, 20, 0}}},
		{"set size", `{"id":"a","w":40,"h":8}`, map[string]geo{"a": {10, 10, 40, 8, 0}}},
		{"set group size scales children", `{"id":"g","w":60,"h":15}`,
			map[string]geo{"g": {100, 100, 60, 15, 0}, "c1": {100, 100, 20, 5, 0}, "c2": {140, 110, 20, 5, 0}}},
		{"scale group", `{"ids":["g"],"scale_x":0.5,"scale_y":0.5}`,
			map[string]geo{"g": {100, 100, 15, 15, 0}, "c1": {100, 100, 5, 5, 0}, "c2": {110, 110, 5, 5, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newRH(t)
			h.box("a", 10, 10, 10, 10)
			h.box("b", 30, 30, 10, 20)
			h.box("c1", 100, 100, 10, 10)
			h.box("c2", 120, 120, 10, 10)
			h.do("group", `{"ids":["c1","c2"],"group_id":"g"}`)
			h.do("resize", c.args)
			for id, g := range c.want {
				if got := h.geo(id); got != g {
					t.Errorf("%s = %+v, want %+v", id, got, g)
				}
			}
			checkInvariants(t, h.s)
		})
	}
	h := newRH(t)
	h.box("a", 0, 0, 10, 10)
	for _, c := range []struct{ args, field string }{
		{`{"ids":["a"],"scale_x":0}`, "args.scale_x"},
		{`{"ids":["a"],"scale_y":-1}`, "args.scale_y"},
		{`{"ids":["a"]}`, "args.scale_x"},
		{`{"id":"a","w":-1}`, "args.w"},
		{`{"id":"a"}`, "args.w"},
		{`{"id":"a","scale_x":2}`, "args.scale_x"},
	} {
		_, err := h.try("resize", c.args)
		wantFieldError(t, err, c.field, "")
	}
}

func TestRotate(t *testing.T) {
	h := newRH(t)
	h.box("a", 0, 0, 100, 50)
	h.do("rotate", `{"ids":["a"],"degrees":90}`)
	if g := h.geo("a"); g != (geo{75, -25, 100, 50, math.Pi / 2}) {
		t.Fatalf("a = %+v", g)
	}
	if b := bounds(h.node("a")); b != (rect{25, -25, 75, 75}) {
		t.Fatalf("rotated bounds = %+v (centre must stay at 50,25)", b)
	}
	for i := 0; i < 3; i++ {
		h.do("rotate", `{"ids":["a"],"degrees":90}`)
	}
	if g := h.geo("a"); g != (geo{0, 0, 100, 50, 0}) {
		t.Fatalf("after four quarter turns a = %+v", g)
	}
	h.do("rotate", `{"ids":["a"],"degrees":-90,"origin_x":0,"origin_y":0}`)
	if g := h.geo("a"); g != (geo{0, 0, 100, 50, 3 * math.Pi / 2}) {
		t.Fatalf("a = %+v", g)
	}
	// Two shapes turn about their common centre; a group follows its children.
	h = newRH(t)
	h.box("a", 0, 0, 10, 10)
	h.box("b", 30, 0, 10, 10)
	h.do("group", `{"ids":["a","b"],"group_id":"g"}`)
	h.do("rotate", `{"ids":["g"],"degrees":180}`)
	if ga, gb := h.geo("a"), h.geo("b"); ga != (geo{40, 10, 10, 10, math.Pi}) || gb != (geo{10, 10, 10, 10, math.Pi}) {
		t.Fatalf("a = %+v b = %+v", ga, gb)
	}
	if g := h.geo("g"); g != (geo{0, 0, 40, 10, 0}) {
		t.Fatalf("group = %+v", g)
	}
	checkInvariants(t, h.s)
	h.do("rotate", `{"ids":["a"],"degrees":45,"origin_x":0,"origin_y":0}`)
	n := h.node("a")
	if math.Abs(n.Rotation-5*math.Pi/4) > 1e-12 || math.Abs(n.X-(40-10)*math.Sqrt2/2) > 1e-9 || math.Abs(n.Y-(40+10)*math.Sqrt2/2) > 1e-9 {
		t.Fatalf("a after 45° = %+v", geoOf(n))
	}
	checkInvariants(t, h.s)
	_, err := h.try("rotate", `{"ids":["a"]}`)
	wantFieldError(t, err, "args.degrees", "required")
}

func layoutState(t *testing.T) *rh {
	h := newRH(t)
	h.box("a", 0, 0, 10, 10)
	h.box("b", 20, 5, 10, 20)
	h.box("c", 50, -5, 30, 10)
	return h
}

func TestAlign(t *testing.T) {
	cases := []struct {
		alignment string
		want      [3]geo
	}{
		{"left", [3]geo{{0, 0, 10, 10, 0}, {0, 5, 10, 20, 0}, {0, -5, 30, 10, 0}}},
		{"right", [3]geo{{70, 0, 10, 10, 0}, {70, 5, 10, 20, 0}, {50, -5, 30, 10, 0}}},
		{"top", [3]geo{{0, -5, 10, 10, 0}, {20, -5, 10, 20, 0}, {50, -5, 30, 10, 0}}},
		{"bottom", [3]geo{{0, 15, 10, 10, 0}, {20, 5, 10, 20, 0}, {50, 15, 30, 10, 0}}},
		{"center-horizontal", [3]geo{{35, 0, 10, 10, 0}, {35, 5, 10, 20, 0}, {25, -5, 30, 10, 0}}},
		{"center-vertical", [3]geo{{0, 5, 10, 10, 0}, {20, 0, 10, 20, 0}, {50, 5, 30, 10, 0}}},
	}
	for _, c := range cases {
		t.Run(c.alignment, func(t *testing.T) {
			h := layoutState(t)
			dec := h.do("align", `{"ids":["a","b","c"],"alignment":"`+c.alignment+`"}`)
			for i, id := range []string{"a", "b", "c"} {
				if got := h.geo(id); got != c.want[i] {
					t.Errorf("%s = %+v, want %+v", id, got, c.want[i])
				}
			}
			if len(dec.Touched) != 3 {
				t.Errorf("touched = %v", dec.Touched)
			}
		})
	}
	h := layoutState(t)
	_, err := h.try("align", `{"ids":["a","b"],"alignment":"middle"}`)
	wantFieldError(t, err, "args.alignment", "must be one of left, right, top, bottom, center-horizontal, center-vertical")
}

func TestDistributeAndStack(t *testing.T) {
	h := newRH(t)
	h.box("a", 0, 0, 10, 10)
	h.box("b", 15, 3, 20, 10)
	h.box("c", 100, 0, 10, 10)
	h.box("d", 60, 0, 4, 10)
	h.do("distribute", `{"ids":["c","b","a","d"],"direction":"horizontal"}`)
	// Order by centre: a, b, d, c. Span 10..100 minus widths 24 = 66 → gap 22.
	for id, want := range map[string]geo{"a": {0, 0, 10, 10, 0}, "b": {32, 3, 20, 10, 0}, "d": {74, 0, 4, 10, 0}, "c": {100, 0, 10, 10, 0}} {
		if got := h.geo(id); got != want {
			t.Errorf("distribute: %s = %+v, want %+v", id, got, want)
		}
	}
	dec := h.do("distribute", `{"ids":["a","b"],"direction":"vertical"}`)
	if len(dec.Changes) != 0 {
		t.Fatal("distribute of two shapes changed something")
	}

	h = newRH(t)
	h.box("a", 0, 0, 10, 10)
	h.box("b", 100, 0, 20, 10)
	h.box("c", 40, 7, 10, 10)
	h.do("stack", `{"ids":["b","c","a"],"direction":"horizontal","gap":5}`)
	for id, want := range map[string]geo{"a": {0, 0, 10, 10, 0}, "c": {15, 7, 10, 10, 0}, "b": {30, 0, 20, 10, 0}} {
		if got := h.geo(id); got != want {
			t.Errorf("stack: %s = %+v, want %+v", id, got, want)
		}
	}
	h.do("stack", `{"ids":["a","b"],"direction":"vertical","gap":0}`)
	if got := h.geo("b"); got != (geo{30, 10, 20, 10, 0}) {
		t.Errorf("vertical stack: b = %+v", got)
	}
	_, err := h.try("stack", `{"ids":["a","b"],"direction":"horizontal"}`)
	wantFieldError(t, err, "args.gap", "required")
	_, err = h.try("distribute", `{"ids":["a","b"],"direction":"diagonal"}`)
	wantFieldError(t, err, "args.direction", "horizontal, vertical")
}

func TestReorder(t *testing.T) {
	setup := func(t *testing.T) *rh {
		h := newRH(t)
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			h.box(id, 0, 0, 1, 1)
		}
		return h
	}
	cases := []struct {
		args, order, changed string
	}{
		{`{"ids":["a"],"op":"bring_to_front"}`, "b c d e a", "a"},
		{`{"ids":["c","a"],"op":"bring_to_front"}`, "b d e a c", "a c"},
		{`{"ids":["e"],"op":"bring_to_front"}`, "a b c d e", ""},
		{`{"ids":["d","e"],"op":"bring_to_front"}`, "a b c d e", ""},
		{`{"ids":["e"],"op":"send_to_back"}`, "e a b c d", "e"},
		{`{"ids":["b","a"],"op":"send_to_back"}`, "a b c d e", ""},
		{`{"ids":["b","d"],"op":"send_to_back"}`, "b d a c e", "b d"},
		{`{"ids":["b"],"op":"bring_forward"}`, "a c b d e", "b"},
		{`{"ids":["a","c"],"op":"bring_forward"}`, "b a d c e", "a c"},
		{`{"ids":["a","b"],"op":"bring_forward"}`, "c a b d e", "a b"},
		{`{"ids":["e"],"op":"bring_forward"}`, "a b c d e", ""},
		{`{"ids":["d","e"],"op":"bring_forward"}`, "a b c d e", ""},
		{`{"ids":["d"],"op":"bring_forward"}`, "a b c e d", "d"},
		{`{"ids":["c","d"],"op":"bring_forward"}`, "a b e c d", "c d"},
		{`{"ids":["a","b","d"],"op":"bring_forward"}`, "c a b e d", "a b d"},
		{`{"ids":["c"],"op":"send_backward"}`, "a c b d e", "c"},
		{`{"ids":["b","e"],"op":"send_backward"}`, "b a c e d", "b e"},
		{`{"ids":["a"],"op":"send_backward"}`, "a b c d e", ""},
	}
	for _, c := range cases {
		t.Run(c.args, func(t *testing.T) {
			h := setup(t)
			dec := h.do("reorder", c.args)
			if got := zOrder(h.s); got != c.order {
				t.Fatalf("order = %s, want %s", got, c.order)
			}
			var changed []string
			for _, ch := range dec.Changes {
				if ch.Op != canvas.OpPatch || len(ch.Patch) != 1 || ch.Patch["index"] == nil {
					t.Fatalf("change %+v", ch)
				}
				changed = append(changed, ch.ID)
			}
			if strings.Join(changed, " ") != c.changed {
				t.Fatalf("changed %v, want %s", changed, c.changed)
			}
			checkInvariants(t, h.s)
			// A create still goes in front of everything, with a key of its own.
			h.box("new", 0, 0, 1, 1)
			if got := zOrder(h.s); got != c.order+" new" {
				t.Fatalf("order after a create = %s, want %s new", got, c.order)
			}
			checkInvariants(t, h.s)
		})
	}
	// Many reorders at the same spot keep keys valid and never renumber others.
	h := setup(t)
	for i := 0; i < 300; i++ {
		h.do("reorder", `{"ids":["a"],"op":"bring_forward"}`)
		h.do("reorder", `{"ids":["a"],"op":"send_backward"}`)
		h.do("reorder", `{"ids":["e"],"op":"send_to_back"}`)
		h.do("reorder", `{"ids":["e"],"op":"bring_to_front"}`)
	}
	if got := zOrder(h.s); got != "a b c d e" {
		t.Fatalf("order = %s", got)
	}
	for _, id := range []string{"b", "c", "d"} {
		if h.node(id).UpdatedRev != 2+int64(strings.Index("bcd", id)) {
			t.Fatalf("%s was rewritten", id)
		}
	}
	checkInvariants(t, h.s)
	_, err := h.try("reorder", `{"ids":["a"],"op":"to_top"}`)
	wantFieldError(t, err, "args.op", "bring_to_front, send_to_back, bring_forward, send_backward")
}

func TestGroupUngroup(t *testing.T) {
	h := newRH(t)
	h.box("a", 0, 0, 10, 10)
	h.box("b", 20, 20, 10, 10)
	h.box("c", 100, 0, 10, 10)
	dec := h.do("group", `{"ids":["a","b"]}`)
	gid := "shape:s4-0"
	if !reflect.DeepEqual(dec.CreatedIDs, []string{gid}) {
		t.Fatalf("created = %v", dec.CreatedIDs)
	}
	g := h.node(gid)
	if g.Type != "group" || geoOf(g) != (geo{0, 0, 30, 30, 0}) || h.node("a").ParentID != gid || h.node("b").ParentID != gid {
		t.Fatalf("group = %+v", g)
	}
	if zOrder(h.s) != "a b "+gid+" c" {
		t.Fatalf("z-order = %s", zOrder(h.s))
	}
	// Nested group inside the first: its parent is the common ancestor.
	h.box("d", 50, 50, 10, 10)
	_, err := h.try("group", `{"ids":["a",`+jsonOf(gid)+`]}`)
	wantFieldError(t, err, "args.ids[0]", "is inside")
	h.do("create_shape", `{"id":"x","type":"geo","x":5,"y":5,"w":1,"h":1}`)
	h.do("update_shape", `{"id":"x","x":-5}`)
	h.do("group", `{"ids":["a","b"],"group_id":"inner"}`)
	if h.node("inner").ParentID != gid {
		t.Fatalf("inner parent = %q", h.node("inner").ParentID)
	}
	checkInvariants(t, h.s)
	// Moving a leaf updates both group levels.
	h.do("move", `{"ids":["b"],"dx":10,"dy":0}`)
	if h.geo(gid) != (geo{0, 0, 40, 30, 0}) || h.geo("inner") != (geo{0, 0, 40, 30, 0}) {
		t.Fatalf("groups = %+v %+v", h.geo(gid), h.geo("inner"))
	}
	// Ungroup the outer: inner goes to the top level.
	dec = h.do("ungroup", `{"id":`+jsonOf(gid)+`}`)
	if h.node("inner").ParentID != "" {
		t.Fatal("inner still has a parent")
	}
	if _, ok := h.s.Nodes[gid]; ok {
		t.Fatal("group survived ungroup")
	}
	checkInvariants(t, h.s)
	// Deleting every child deletes the group, and edges to it.
	h.do("create_edge", `{"id":"ge","from":"inner","to":"c"}`)
	dec = h.do("delete_shape", `{"ids":["a","b"]}`)
	if got := changeSummary(dec.Changes); got != "delete node a; delete node b; delete node inner; delete edge ge" {
		t.Fatalf("changes = %s", got)
	}
	checkInvariants(t, h.s)
	_, err = h.try("ungroup", `{"id":"c"}`)
	wantFieldError(t, err, "args.id", "not a group")
	_, err = h.try("group", `{"ids":["c"],"group_id":"d"}`)
	wantFieldError(t, err, "args.group_id", "already exists")
	_, err = h.try("update_shape", `{"id":"c","rotation":1}`)
	if err != nil {
		t.Fatal(err)
	}
}

func TestGroupGeometryViaUpdate(t *testing.T) {
	h := newRH(t)
	h.box("a", 0, 0, 10, 10)
	h.box("b", 30, 10, 10, 10)
	h.do("group", `{"ids":["a","b"],"group_id":"g"}`)
	h.do("update_shape", `{"id":"g","x":100,"w":80}`)
	if h.geo("a") != (geo{100, 0, 20, 10, 0}) || h.geo("b") != (geo{160, 10, 20, 10, 0}) || h.geo("g") != (geo{100, 0, 80, 20, 0}) {
		t.Fatalf("a %+v b %+v g %+v", h.geo("a"), h.geo("b"), h.geo("g"))
	}
	_, err := h.try("update_shape", `{"id":"g","rotation":1}`)
	wantFieldError(t, err, "args.rotation", "rotate command")
	// A frame carries its children when it moves or turns.
	h.do("create_shape", `{"id":"f","type":"frame","x":0,"y":100,"w":100,"h":100}`)
	h.do("create_shape", `{"id":"k","type":"geo","x":10,"y":110,"w":10,"h":10,"parent_id":"f"}`)
	h.do("update_shape", `{"id":"f","x":10,"y":90,"rotation":3.141592653589793}`)
	if h.geo("f") != (geo{10, 90, 100, 100, math.Pi}) || h.geo("k") != (geo{0, 80, 10, 10, math.Pi}) {
		t.Fatalf("f %+v k %+v", h.geo("f"), h.geo("k"))
	}
	checkInvariants(t, h.s)
}

func TestEdges(t *testing.T) {
	h := newRH(t)
	h.box("a", 0, 0, 1, 1)
	h.box("b", 0, 0, 1, 1)
	dec := h.do("create_edge", `{"from":"a","to":"b","props":{"label":"x"}}`)
	id := "edge:s3-0"
	if !reflect.DeepEqual(dec.CreatedIDs, []string{id}) {
		t.Fatalf("created %v", dec.CreatedIDs)
	}
	if !reflect.DeepEqual(dec.Touched, []canvas.Ref{nodeRef("a"), nodeRef("b"), edgeRef(id)}) {
		t.Fatalf("touched %v", dec.Touched)
	}
	e := h.s.Edges[id]
	want := canvas.Edge{ID: id, From: "a", To: "b", Type: "arrow", Props: map[string]any{"label": "x"}, CreatedBy: "user-1", CreatedRev: 3, UpdatedRev: 3}
	if !reflect.DeepEqual(*e, want) {
		t.Fatalf("edge %+v", *e)
	}
	dec = h.do("update_edge", `{"id":"`+id+`","props":{"label":null,"w":2}}`)
	if jsonOf(dec.Changes[0].Patch) != `{"props":{"label":null,"w":2}}` || jsonOf(h.s.Edges[id].Props) != `{"w":2}` {
		t.Fatalf("patch %s props %s", jsonOf(dec.Changes[0].Patch), jsonOf(h.s.Edges[id].Props))
	}
	h.do("delete_edge", `{"id":"`+id+`"}`)
	if h.s.Tombstones[edgeRef(id)] != 5 {
		t.Fatal("no tombstone")
	}
}

func TestApplyIsAtomic(t *testing.T) {
	h := newRH(t)
	h.box("a", 0, 0, 1, 1)
	before := h.s.Clone()
	c := canvas.Commit{Rev: 2, ActorID: "u", Changes: []canvas.Change{
		{Op: canvas.OpPatch, Kind: canvas.KindNode, ID: "a", Patch: map[string]any{"x": 5.0}},
		{Op: canvas.OpDelete, Kind: canvas.KindNode, ID: "a"},
		{Op: canvas.OpPatch, Kind: canvas.KindNode, ID: "a", Patch: map[string]any{"x": 6.0}},
	}}
	if err := Apply(h.s, &c); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	if !reflect.DeepEqual(before, h.s) {
		t.Fatal("failed Apply changed the state")
	}
	for _, bad := range []canvas.Change{
		{Op: canvas.OpPatch, Kind: canvas.KindNode, ID: "a", Patch: map[string]any{"x": "1"}},
		{Op: canvas.OpPatch, Kind: canvas.KindNode, ID: "a", Patch: map[string]any{"created_rev": 1.0}},
		{Op: canvas.OpPut, Kind: canvas.KindNode, ID: "z", Value: []byte(`{"id":"y"}`)},
		{Op: "bogus", Kind: canvas.KindNode, ID: "a"},
		{Op: canvas.OpDelete, Kind: "blob", ID: "a"},
	} {
		c := canvas.Commit{Rev: 2, Changes: []canvas.Change{bad}}
		if err := Apply(h.s, &c); err == nil {
			t.Fatalf("Apply(%+v) succeeded", bad)
		}
	}
	if err := Apply(h.s, &canvas.Commit{Rev: 1}); err == nil {
		t.Fatal("Apply of an old revision succeeded")
	}
}

func TestStateRoundTrip(t *testing.T) {
	h := newRH(t)
	h.box("a", 0.1, math.Copysign(0, -1), 1e-300, 1e300)
	h.box("b", 1, 2, 3, 4)
	h.do("create_edge", `{"id":"e","from":"a","to":"b","props":{"n":[1,null,{"x":"y"}]}}`)
	h.do("delete_node", `{"id":"b"}`)
	b, err := EncodeState(h.s)
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, h.s) || len(s.Tombstones) != 2 {
		t.Fatalf("round trip differs:\n%+v\n%+v", s, h.s)
	}
	b2, _ := EncodeState(s)
	if string(b) != string(b2) {
		t.Fatal("encoding is not stable")
	}
	for _, bad := range badSnapshots(b) {
		if _, err := DecodeState(bad); !errors.Is(err, canvas.ErrInvalid) {
			t.Fatalf("DecodeState(%q) = %v", bad, err)
		}
	}
}

// A state not built by this reducer (or a command not at head+1) takes the
// scanning path for the front key, so creates still go to the front.
func TestCreateFrontKeyFallback(t *testing.T) {
	s := &canvas.State{Rev: 0, Nodes: map[string]*canvas.Node{
		"x": {ID: "x", Type: "geo", Index: "b05"},
		"y": {ID: "y", Type: "geo", Index: "not a key!"},
	}}
	for _, rev := range []int64{0, 1, 7} {
		cmd := rhCommand(s, "create_shape", `{"type":"geo","x":0,"y":0}`)
		cmd.Rev = rev
		dec, err := Decide(s, cmd)
		if err != nil {
			t.Fatal(err)
		}
		var n canvas.Node
		if err := json.Unmarshal(dec.Changes[0].Value, &n); err != nil {
			t.Fatal(err)
		}
		if rev == 1 && n.Index != "a1" {
			t.Fatalf("rev 1 (head+1) on a foreign state: index %q, want the scan-free a1", n.Index)
		}
		if rev != 1 && !(n.Index > "b05" && ValidIndexKey(n.Index)) {
			t.Fatalf("rev %d: index %q not in front of b05", rev, n.Index)
		}
	}
	// bring_to_front always scans, so it fixes the order on such a state.
	cmd := rhCommand(s, "reorder", `{"ids":["x"],"op":"bring_to_front"}`)
	dec, err := Decide(s, cmd)
	if err != nil || len(dec.Changes) != 1 {
		t.Fatalf("reorder on a foreign state: %v %v", dec, err)
	}
	if k, _ := dec.Changes[0].Patch["index"].(string); !(k > "b05") || !ValidIndexKey(k) {
		t.Fatalf("bring_to_front gave %q", k)
	}
}

// TestReorderKeysStayShort: bring_forward / send_backward that swap the same
// nodes again and again used to place the moved node between ever closer
// neighbours, and its key grew a digit about every six swaps, without bound.
// Over 10,000 such reorders every key stays short (placeKeys re-keys a few
// neighbours instead), the z-order is the one asked for, a command changes
// few nodes, and replaying the log twice gives the live state.
func TestReorderKeysStayShort(t *testing.T) {
	const reorders = 10000
	const maxKeyLen = 8 // "c" and 3 integer digits past revision 3,906, and 3 fraction digits
	fwd := func(ids ...string) string { return `{"ids":` + jsonOf(ids) + `,"op":"bring_forward"}` }
	bwd := func(ids ...string) string { return `{"ids":` + jsonOf(ids) + `,"op":"send_backward"}` }
	cases := []struct {
		name string
		cmds []string // repeated in turn
	}{
		{"two swap upwards", []string{fwd("a"), fwd("b")}},
		{"two swap downwards", []string{bwd("b"), bwd("a")}},
		{"one forward and back", []string{fwd("a"), bwd("a")}},
		{"a run of two and one", []string{fwd("a", "b"), fwd("c"), fwd("c")}},
		{"at the top", []string{fwd("y"), fwd("q")}},
		{"at the bottom", []string{bwd("x"), bwd("p")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newRH(t)
			for _, id := range []string{"p", "x", "a", "b", "c", "y", "q"} {
				h.box(id, 0, 0, 1, 1)
			}
			start := zOrder(h.s)
			most := 0
			for i := 0; i < reorders; i++ {
				dec := h.do("reorder", c.cmds[i%len(c.cmds)])
				most = max(most, len(dec.Changes))
				for _, n := range h.s.Nodes {
					if len(n.Index) > maxKeyLen {
						t.Fatalf("after %d reorders node %q has the key %q (%d long)", i+1, n.ID, n.Index, len(n.Index))
					}
				}
				if (i+1)%len(c.cmds) == 0 && zOrder(h.s) != start {
					t.Fatalf("after %d reorders the order is %s, want %s", i+1, zOrder(h.s), start)
				}
			}
			if most > 7 {
				t.Errorf("a reorder changed %d nodes", most)
			}
			checkInvariants(t, h.s)
			r1, err := Replay(h.log)
			if err != nil {
				t.Fatal(err)
			}
			r2, err := Replay(h.log)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r1, h.s) || !reflect.DeepEqual(r2, r1) {
				t.Fatal("replaying the log does not give the live state")
			}
		})
	}
}

// TestReorderRandomKeepsOrder: random bring_forward / send_backward of
// random selections among a few nodes give the order a plain model gives
// (each run of selected nodes swaps with the unselected node past it), with
// short keys throughout.
func TestReorderRandomKeepsOrder(t *testing.T) {
	h := newRH(t)
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, id := range ids {
		h.box(id, 0, 0, 1, 1)
	}
	model := append([]string(nil), ids...)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 5000; i++ {
		sel := map[string]bool{}
		var pick []string
		for len(pick) < 1+rng.Intn(3) {
			if id := ids[rng.Intn(len(ids))]; !sel[id] {
				sel[id] = true
				pick = append(pick, id)
			}
		}
		op := "bring_forward"
		if rng.Intn(2) == 0 {
			op = "send_backward"
		}
		h.do("reorder", `{"ids":`+jsonOf(pick)+`,"op":"`+op+`"}`)
		// The model: bubble each unselected node past a run down (forward)
		// or up (backward) through it.
		n := len(model)
		if op == "bring_forward" {
			for k := n - 2; k >= 0; k-- {
				if sel[model[k]] && !sel[model[k+1]] {
					model[k], model[k+1] = model[k+1], model[k]
				}
			}
		} else {
			for k := 1; k < n; k++ {
				if sel[model[k]] && !sel[model[k-1]] {
					model[k], model[k-1] = model[k-1], model[k]
				}
			}
		}
		if got, want := zOrder(h.s), strings.Join(model, " "); got != want {
			t.Fatalf("after %s %v (reorder %d): order %s, want %s", op, pick, i+1, got, want)
		}
		for _, nd := range h.s.Nodes {
			if len(nd.Index) > 8 {
				t.Fatalf("reorder %d: node %q has the key %q", i+1, nd.ID, nd.Index)
			}
		}
	}
	checkInvariants(t, h.s)
}

// TestEmptiedGroupsGo: a group left without children by a command is deleted
// in that command's commit, recursively (a group whose only child was that
// group goes too), whatever emptied it; a frame is never deleted for being
// empty. Undo puts back everything the command deleted, redo deletes it again.
func TestEmptiedGroupsGo(t *testing.T) {
	setup := func(t *testing.T) *rh {
		h := newRH(t)
		h.do("create_shape", `{"id":"f","type":"frame","x":0,"y":0,"w":500,"h":500}`)
		h.do("create_shape", `{"id":"a","type":"geo","x":10,"y":10,"w":10,"h":10,"parent_id":"f"}`)
		h.do("create_shape", `{"id":"b","type":"geo","x":40,"y":10,"w":10,"h":10,"parent_id":"f"}`)
		h.do("group", `{"ids":["a","b"],"group_id":"g"}`) // in the frame
		h.do("create_shape", `{"id":"k","type":"geo","x":100,"y":100,"w":10,"h":10,"parent_id":"f"}`)
		h.box("c", 600, 0, 10, 10)
		h.box("d", 620, 0, 10, 10)
		h.box("e", 640, 0, 10, 10)
		h.do("group", `{"ids":["c","d"],"group_id":"in"}`)
		h.do("group", `{"ids":["in","e"],"group_id":"out"}`)
		h.box("x", 800, 0, 10, 10)
		h.do("create_edge", `{"id":"ge","from":"g","to":"x"}`)
		h.do("create_edge", `{"id":"ie","from":"in","to":"x"}`)
		checkInvariants(t, h.s)
		return h
	}
	cases := []struct {
		name    string
		cmds    []string // the last one is checked, undone and redone
		changes string
	}{
		{"delete the members", []string{`delete_shape {"ids":["a","b"]}`},
			"delete node a; delete node b; delete node g; delete edge ge"},
		{"delete them one by one", []string{`delete_node {"id":"a"}`, `delete_node {"id":"b"}`},
			"delete node b; delete node g; delete edge ge"},
		{"an inner group goes, its parent group stays", []string{`delete_shape {"ids":["c","d"]}`},
			"delete node c; delete node d; delete node in; patch node out w,x; delete edge ie"},
		{"nested groups go together", []string{`delete_shape {"ids":["e","d","c"]}`},
			"delete node e; delete node d; delete node c; delete node in; delete node out; delete edge ie"},
		{"moved out of the group", []string{`update_shape {"id":"a","parent_id":""}`, `update_shape {"id":"b","parent_id":""}`},
			"patch node b parent_id; delete node g; delete edge ge"},
		{"grouped elsewhere", []string{`group {"ids":["a","b","x"],"group_id":"n"}`},
			"put node n; patch node a parent_id; patch node b parent_id; patch node x parent_id; delete node g; delete edge ge"},
		{"an emptied frame stays", []string{`delete_shape {"ids":["g","k"]}`},
			"delete node g; delete node a; delete node b; delete node k; delete edge ge"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := setup(t)
			var dec Decision
			var before *canvas.State
			for _, l := range c.cmds {
				before = h.s.Clone()
				typ, args := splitLine(l)
				dec = mustExec(t, h.s, "user-1", typ, json.RawMessage(args))
			}
			if got := changeSummary(dec.Changes); got != c.changes {
				t.Fatalf("changes = %s\nwant      %s", got, c.changes)
			}
			checkInvariants(t, h.s)
			if _, ok := h.s.Nodes["f"]; !ok {
				t.Fatal("the frame was deleted")
			}
			mustExec(t, h.s, "user-1", "undo", map[string]any{})
			checkInvariants(t, h.s)
			if d := layoutDiff(before, h.s); d != "" {
				t.Fatalf("after undo: %s", d)
			}
			redo := mustExec(t, h.s, "user-1", "redo", map[string]any{})
			if got := changeSummary(redo.Changes); !sameChangeSet(got, c.changes) {
				t.Fatalf("redo changes = %s\nwant           %s", got, c.changes)
			}
			checkInvariants(t, h.s)
		})
	}
}

// layoutDiff describes how the nodes and edges of b differ from a's, but for
// the revisions that made and changed them and who changed them last ("" when
// they do not).
func layoutDiff(a, b *canvas.State) string {
	if len(a.Nodes) != len(b.Nodes) || len(a.Edges) != len(b.Edges) {
		return fmt.Sprintf("%d nodes and %d edges, want %d and %d", len(b.Nodes), len(b.Edges), len(a.Nodes), len(a.Edges))
	}
	for id, n := range a.Nodes {
		m, ok := b.Nodes[id]
		if !ok {
			return "node " + id + " is missing"
		}
		x, y := *n, *m // (a node put back counts as created again)
		x.CreatedRev, x.UpdatedRev, x.UpdatedBy, y.CreatedRev, y.UpdatedRev, y.UpdatedBy = 0, 0, "", 0, 0, ""
		if !reflect.DeepEqual(x, y) {
			return fmt.Sprintf("node %s is %+v, want %+v", id, y, x)
		}
	}
	for id, e := range a.Edges {
		f, ok := b.Edges[id]
		if !ok {
			return "edge " + id + " is missing"
		}
		x, y := *e, *f
		x.CreatedRev, x.UpdatedRev, y.CreatedRev, y.UpdatedRev = 0, 0, 0, 0
		if !reflect.DeepEqual(x, y) {
			return fmt.Sprintf("edge %s is %+v, want %+v", id, y, x)
		}
	}
	return ""
}

// sameChangeSet reports whether two change summaries list the same changes.
func sameChangeSet(a, b string) bool {
	x, y := strings.Split(a, "; "), strings.Split(b, "; ")
	sort.Strings(x)
	sort.Strings(y)
	return reflect.DeepEqual(x, y)
}
