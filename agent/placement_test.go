package agent

import (
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// TestPlacerOffsetWithinOneReply: the shift placement gives a reply's creates
// (when one would cover a shape the session did not make) applies to that
// reply's later creates only. The next turn's model sees the canvas as it is,
// the shifted shapes included, so a create it aims at free space lands there.
func TestPlacerOffsetWithinOneReply(t *testing.T) {
	wall := &canvas.Node{ID: "wall", Type: "geo", X: 0, Y: 0, W: 400, H: 200}
	p := newPlacer()
	p.reset([]*canvas.Node{wall})
	a := Action{Name: "create_shape", Params: map[string]any{"id": "a", "type": "geo", "x": 100.0, "y": 50.0, "w": 100.0, "h": 100.0}}
	p.place(a) // covers the wall: moved below it (+174 in y)
	b := Action{Name: "create_shape", Params: map[string]any{"id": "b", "type": "geo", "x": 600.0, "y": 50.0, "w": 100.0, "h": 100.0}}
	p.place(b) // same reply: follows by the same offset
	if a.Params["y"] != 224.0 || b.Params["x"] != 600.0 || b.Params["y"] != 224.0 {
		t.Fatalf("first reply placed a at y %v, b at %v,%v; want both at y 224", a.Params["y"], b.Params["x"], b.Params["y"])
	}

	// The next turn: the canvas has the wall and the session's shapes where
	// they landed; the model puts a caption in free space beside them.
	p.reset([]*canvas.Node{wall,
		{ID: "a", Type: "geo", X: 100, Y: 224, W: 100, H: 100},
		{ID: "b", Type: "geo", X: 600, Y: 224, W: 100, H: 100}})
	c := Action{Name: "create_shape", Params: map[string]any{"id": "c", "type": "geo", "x": 800.0, "y": 224.0, "w": 100.0, "h": 100.0}}
	p.place(c)
	if c.Params["x"] != 800.0 || c.Params["y"] != 224.0 || p.moved["c"] {
		t.Fatalf("a later turn's create aimed at free space (800,224) was placed at %v,%v", c.Params["x"], c.Params["y"])
	}
	// Within that reply a create covering the wall is still moved, and the
	// reply's later creates follow.
	d := Action{Name: "create_shape", Params: map[string]any{"id": "d", "type": "geo", "x": 250.0, "y": 150.0, "w": 100.0, "h": 100.0}}
	p.place(d)
	e := Action{Name: "create_shape", Params: map[string]any{"id": "e", "type": "geo", "x": 250.0, "y": 600.0, "w": 100.0, "h": 100.0}}
	p.place(e)
	if d.Params["y"] != 224.0 || !p.moved["d"] || e.Params["y"] != 674.0 {
		t.Fatalf("second reply placed d at %v,%v, e at %v,%v; want d moved below the wall (y 224) and e 74 lower (y 674)",
			d.Params["x"], d.Params["y"], e.Params["x"], e.Params["y"])
	}
}

// TestPlacerChildrenFollowTheirFrame: a frame that placement moved takes
// the children created in it in the same reply along (their coordinates are
// the canvas's, not the frame's); children of a frame that stayed, and of
// an existing frame, stay where the model put them.
func TestPlacerChildrenFollowTheirFrame(t *testing.T) {
	wall := &canvas.Node{ID: "wall", Type: "geo", X: 0, Y: 0, W: 400, H: 200}
	old := &canvas.Node{ID: "old", Type: "frame", X: 1000, Y: 0, W: 300, H: 300}
	p := newPlacer()
	p.reset([]*canvas.Node{wall, old})
	create := func(id, typ, parent string, x, y float64) Action {
		a := Action{Name: "create_shape", Params: map[string]any{"id": id, "type": typ, "x": x, "y": y, "w": 100.0, "h": 100.0}}
		if parent != "" {
			a.Params["parent_id"] = parent
		}
		p.place(a)
		return a
	}
	f := create("f", "frame", "", 100, 50) // covers the wall: moved below it (+174 in y)
	kid := create("kid", "frame", "f", 110, 60)
	grandkid := create("grandkid", "text", "kid", 120, 70)
	inOld := create("in-old", "geo", "old", 1010, 10)
	if f.Params["y"] != 224.0 || kid.Params["x"] != 110.0 || kid.Params["y"] != 234.0 || grandkid.Params["y"] != 244.0 {
		t.Fatalf("frame at y %v, its child at %v,%v, grandchild at y %v; want the children 10 and 20 below the frame's top (224)",
			f.Params["y"], kid.Params["x"], kid.Params["y"], grandkid.Params["y"])
	}
	if inOld.Params["x"] != 1010.0 || inOld.Params["y"] != 10.0 {
		t.Fatalf("a child of a frame that did not move was moved to %v,%v", inOld.Params["x"], inOld.Params["y"])
	}
}
