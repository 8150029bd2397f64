package agent

import (
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

func TestLint(t *testing.T) {
	node := func(id, typ string, x, y, w, h float64, props map[string]any) *canvas.Node {
		return &canvas.Node{ID: id, Type: typ, X: x, Y: y, W: w, H: h, Props: props}
	}
	frame := node("frame", "frame", 0, 0, 1000, 1000, nil)
	child := node("child", "geo", 10, 10, 100, 100, nil)
	child.ParentID = "frame"
	nodes := []*canvas.Node{
		frame, child,
		node("a", "geo", 0, 2000, 200, 100, nil),
		node("b", "geo", 150, 2050, 200, 100, nil),                                                         // overlaps a
		node("wide", "geo", 0, 3000, 100, 60, map[string]any{"text": "Supercalifragilistic"}),              // a word wider than the box
		node("tall", "note", 0, 4000, 200, 100, map[string]any{"text": strings.Repeat("many words ", 30)}), // too much text
		node("fits", "geo", 0, 5000, 420, 260, map[string]any{"text": "Concrete, exposed, unapologetic."}),
		node("far", "geo", 90000, 0, 10, 10, nil),
		node("placed", "geo", 90000, 500, 10, 10, nil),
	}
	edges := []*canvas.Edge{
		{ID: "loose", From: "a", To: ""},
		{ID: "bound", From: "a", To: "b"},
		{ID: "untouched", From: "", To: ""},
	}
	touched := map[string]bool{"loose": true, "bound": true}
	for _, n := range nodes {
		touched[n.ID] = true
	}
	got := lint(lintInput{nodes: nodes, edges: edges, touched: touched, moved: map[string]bool{"placed": true},
		visible: rect{-100, -100, 10000, 10000}, names: map[string]string{"b": "box b"}})
	want := []string{
		`off viewport: far `,
		`overlap: a overlaps b (your "box b") by 50×50`,
		`text overflow: the text of tall needs about`,
		`text overflow: the text of wide has a word wider`,
		`unbound arrow: loose is not bound`,
	}
	if len(got) != len(want) {
		t.Fatalf("lints:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("lint %d = %q, want it to start with %q", i, got[i], want[i])
		}
	}
	// Untouched shapes are not checked.
	if got := lint(lintInput{nodes: nodes, touched: map[string]bool{"fits": true}, visible: rect{-100, -100, 10000, 10000}}); len(got) != 0 {
		t.Errorf("lints of a shape without problems: %v", got)
	}
}

func TestPlacerNearestFree(t *testing.T) {
	p := newPlacer()
	p.reset([]*canvas.Node{
		{ID: "x", Type: "geo", X: 0, Y: 0, W: 400, H: 200},
		{ID: "line", Type: "line", X: 0, Y: 300, W: 1000, H: 1000}, // lines are no obstacles
	})
	a := Action{Name: "create_shape", Params: map[string]any{"id": "n1", "type": "geo", "x": 100.0, "y": 50.0, "w": 100.0, "h": 100.0}}
	p.place(a)
	if a.Params["x"] != 100.0 || a.Params["y"] != 224.0 || !p.moved["n1"] {
		t.Fatalf("moved to %v,%v; want just below the obstacle (100,224)", a.Params["x"], a.Params["y"])
	}
	b := Action{Name: "create_shape", Params: map[string]any{"id": "n2", "type": "geo", "x": 300.0, "y": 50.0, "w": 50.0, "h": 50.0}}
	p.place(b) // takes the offset (+174 in y) and is then free
	if b.Params["x"] != 300.0 || b.Params["y"] != 224.0 || p.moved["n2"] {
		t.Fatalf("second create at %v,%v", b.Params["x"], b.Params["y"])
	}
	c := Action{Name: "create_shape", Params: map[string]any{"id": "n3", "type": "geo", "x": 1000.0, "y": 1000.0, "w": 50.0, "h": 50.0, "parent_id": "f"}}
	p.place(c) // inside a parent: left alone
	if c.Params["x"] != 1000.0 || c.Params["y"] != 1000.0 {
		t.Fatalf("child placed at %v,%v", c.Params["x"], c.Params["y"])
	}
}
