package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// sameElements compares the elements and files of two .excalidraw files.
func sameElements(t *testing.T, want, got []byte) {
	t.Helper()
	var a, b struct {
		Elements []map[string]any `json:"elements"`
		Files    map[string]any   `json:"files"`
	}
	if err := json.Unmarshal(want, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &b); err != nil {
		t.Fatalf("the export is not JSON: %v", err)
	}
	if len(a.Elements) != len(b.Elements) {
		t.Errorf("%d elements came back, want %d", len(b.Elements), len(a.Elements))
	}
	for i := range min(len(a.Elements), len(b.Elements)) {
		if !reflect.DeepEqual(a.Elements[i], b.Elements[i]) {
			for k := range a.Elements[i] {
				if !reflect.DeepEqual(a.Elements[i][k], b.Elements[i][k]) {
					t.Errorf("element %d (%v %v): %s = %v, want %v", i, a.Elements[i]["type"], a.Elements[i]["id"], k, b.Elements[i][k], a.Elements[i][k])
				}
			}
			for k := range b.Elements[i] {
				if _, ok := a.Elements[i][k]; !ok {
					t.Errorf("element %d (%v): %s = %v was added", i, a.Elements[i]["id"], k, b.Elements[i][k])
				}
			}
		}
	}
	if !reflect.DeepEqual(a.Files, b.Files) {
		t.Errorf("files came back as %v, want %v", b.Files, a.Files)
	}
}

func TestExcalidrawRoundTrip(t *testing.T) {
	data, err := os.ReadFile("testdata/excalidraw/every-element.excalidraw")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Decode(Excalidraw, data)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Encode(Excalidraw, stateOf(t, sc), nil)
	if err != nil {
		t.Fatal(err)
	}
	sameElements(t, data, out)
}

func TestExcalidrawMapsToTheModel(t *testing.T) {
	data, _ := os.ReadFile("testdata/excalidraw/every-element.excalidraw")
	sc, err := Decode(Excalidraw, data)
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]*canvas.Node{}
	for _, n := range sc.Nodes {
		nodes[n.ID] = n
	}
	edges := map[string]*canvas.Edge{}
	for _, e := range sc.Edges {
		edges[e.ID] = e
	}
	want := func(id, typ string, props map[string]any) *canvas.Node {
		t.Helper()
		n := nodes[id]
		if n == nil || n.Type != typ {
			t.Fatalf("%s became %+v, want a %s", id, n, typ)
		}
		for k, v := range props {
			if !reflect.DeepEqual(n.Props[k], v) {
				t.Errorf("%s: props.%s = %#v, want %#v", id, k, n.Props[k], v)
			}
		}
		return n
	}
	want("rect-1", "geo", map[string]any{"geo": "rectangle", "color": "red", "fillColor": "red", "fill": "solid", "text": "A labelled rectangle", "roundness": "round"})
	want("ellipse-1", "geo", map[string]any{"geo": "ellipse", "fill": "hachure", "dash": "dashed", "link": "https://excalidraw.com", "roundness": "sharp"})
	want("diamond-1", "geo", map[string]any{"geo": "diamond", "fill": "cross-hatch", "dash": "dotted", "opacity": 0.6, "roughness": 2.0, "locked": true, "font": "sans", "labelColor": "green"})
	want("line-1", "line", map[string]any{"color": "yellow", "strokeWidth": 4.0})
	want("polygon-1", "line", map[string]any{"closed": true, "fill": "zigzag", "fillColor": "yellow"})
	d := want("freedraw-1", "draw", map[string]any{"color": "orange"})
	segs := d.Props["segments"].([]any)
	if p := segs[0].(map[string]any)["points"].([]any)[2].(map[string]any); p["x"] != 60.0 || p["z"] != 0.7 {
		t.Errorf("the third pen point is %v, want x 60 with pressure 0.7", p)
	}
	want("text-1", "text", map[string]any{"text": "Free text\non two lines", "fontSize": 28.0, "font": "draw", "align": "middle"})
	if n := want("text-2", "text", map[string]any{"font": "mono", "align": "end"}); n.Rotation != 0.3 {
		t.Errorf("text-2 is turned by %g", n.Rotation)
	}
	img := want("image-1", "image", map[string]any{"flipX": true, "crop": map[string]any{"x": 0.25, "y": 0.0, "w": 0.5, "h": 1.0}})
	if u, _ := img.Props["url"].(string); !strings.HasPrefix(u, "data:image/png;base64,") {
		t.Errorf("the image's url is %q, want its file's data URL", u)
	}
	want("embed-1", "embed", map[string]any{"url": "https://www.youtube.com/watch?v=dQw4w9WgXcQ"})
	want("frame-1", "frame", nil)
	want("magic-1", "frame", nil)
	if nodes["rect-1"].ParentID != "frame-1" || nodes["group-b"].ParentID != "g-outer" || nodes["group-a"].ParentID != "g-inner" ||
		nodes["g-inner"].ParentID != "g-outer" || nodes["g-outer"].Type != "group" {
		t.Errorf("frames and groups: rect-1 in %q, group-a in %q, g-inner in %q, group-b in %q",
			nodes["rect-1"].ParentID, nodes["group-a"].ParentID, nodes["g-inner"].ParentID, nodes["group-b"].ParentID)
	}
	b := edges["arrow-bound"]
	if b == nil || b.From != "rect-1" || b.To != "ellipse-1" || b.Props["arrowheadStart"] != "dot" || b.Props["arrowheadEnd"] != "triangle" || b.Props["text"] != "bound" {
		t.Errorf("arrow-bound became %+v", b)
	}
	if e := edges["arrow-elbow"]; e.Props["routing"] != "elbow" || e.From != "" || len(e.Props["points"].([]any)) != 4 {
		t.Errorf("arrow-elbow became %+v", e)
	}
	if e := edges["arrow-free"]; e.Props["arrowheadStart"] != "diamond-outline" || e.Props["arrowheadEnd"] != "bar" || e.Props["color"] != "violet" {
		t.Errorf("arrow-free became %+v", e)
	}
}

func TestExcalidrawEditedComesBackEdited(t *testing.T) {
	data, _ := os.ReadFile("testdata/excalidraw/every-element.excalidraw")
	sc, _ := Decode(Excalidraw, data)
	s := stateOf(t, sc)
	s.Nodes["rect-1"].Props["color"] = "blue"
	s.Nodes["rect-1"].X = 10
	s.Nodes["rect-1"].Props["text"] = "renamed"
	out, err := Encode(Excalidraw, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Elements []map[string]any }
	json.Unmarshal(out, &f)
	var orig struct{ Elements []map[string]any }
	json.Unmarshal(data, &orig)
	for i, el := range f.Elements {
		if el["id"] == "rect-1" {
			if el["strokeColor"] != "#1971c2" || el["x"] != 10.0 || el["seed"] != orig.Elements[i]["seed"] || el["frameId"] != "frame-1" {
				t.Errorf("the edited rectangle came back as %v", el)
			}
		}
		if el["containerId"] == "rect-1" && el["text"] != "renamed" {
			t.Errorf("its label came back as %v", el["text"])
		}
	}
}

// TestExcalidrawFromTheModel writes every kind of node and edge as
// .excalidraw and reads it back: what Excalidraw can hold comes back.
func TestExcalidrawFromTheModel(t *testing.T) {
	s := canvas.NewState()
	add := func(n *canvas.Node) { n.Index = fmt.Sprintf("a%04d", len(s.Nodes)); s.Nodes[n.ID] = n }
	add(&canvas.Node{ID: "star", Type: "geo", X: 0, Y: 0, W: 100, H: 80, Props: map[string]any{"geo": "star", "color": "red", "fill": "solid", "text": "a star"}})
	add(&canvas.Node{ID: "note", Type: "note", X: 200, Y: 0, W: 200, H: 200, Props: map[string]any{"text": "a note", "color": "yellow"}})
	add(&canvas.Node{ID: "t", Type: "text", X: 0, Y: 300, W: 100, H: 25, Rotation: 0.5, Props: map[string]any{"text": "turned", "color": "#123456"}})
	add(&canvas.Node{ID: "ln", Type: "line", X: 400, Y: 300, W: 100, H: 100, Props: map[string]any{"points": []any{map[string]any{"x": 0.0, "y": 0.0}, map[string]any{"x": 100.0, "y": 100.0}}, "routing": "curved"}})
	add(&canvas.Node{ID: "doc", Type: "doc", Name: "notes.md", X: 600, Y: 0, W: 200, H: 120, Props: map[string]any{"text": "# notes"}})
	s.Edges["e"] = &canvas.Edge{ID: "e", From: "star", To: "note", Type: "arrow", Props: map[string]any{
		"points": []any{map[string]any{"x": 100.0, "y": 40.0}, map[string]any{"x": 200.0, "y": 100.0}}, "arrowheadEnd": "square", "text": "to the note"}}
	out, err := Encode(Excalidraw, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Decode(Excalidraw, out)
	if err != nil {
		t.Fatalf("canvasd's own export does not read back: %v\n%s", err, out)
	}
	got := map[string]*canvas.Node{}
	for _, n := range sc.Nodes {
		got[n.ID] = n
	}
	if n := got["star"]; n == nil || n.Type != "geo" || n.Props["geo"] != "star" || n.Props["text"] != "a star" || n.Props["color"] != "red" {
		t.Errorf("the star came back as %+v", n)
	}
	if n := got["t"]; n == nil || math.Abs(n.X) > 1e-9 || math.Abs(n.Y-300) > 1e-9 || n.Rotation != 0.5 {
		t.Errorf("the turned text came back as %+v", n)
	}
	if n := got["ln"]; n == nil || n.Type != "line" || n.Props["routing"] != "curved" {
		t.Errorf("the line came back as %+v", n)
	}
	if len(sc.Edges) != 1 || sc.Edges[0].From != "star" || sc.Edges[0].To != "note" || sc.Edges[0].Props["arrowheadEnd"] != "bar" || sc.Edges[0].Props["text"] != "to the note" {
		t.Errorf("the edge came back as %+v", sc.Edges)
	}
}

func TestExcalidrawBadFilesNameThePlace(t *testing.T) {
	for _, c := range []struct{ file, field string }{
		{`{"type": "excalidrawlib", "elements": []}`, "body.type"},
		{`{"type": "excalidraw"}`, "body.elements"},
		{`{"type": "excalidraw", "elements": [{"id": "a", "type": "hexagon", "x": 0, "y": 0}]}`, "body.elements[0].type"},
		{`{"type": "excalidraw", "elements": [{"id": "a", "type": "rectangle", "x": "1", "y": 0}]}`, "body.elements[0].x"},
		{`{"type": "excalidraw", "elements": [{"id": "a", "type": "arrow", "x": 0, "y": 0, "points": [[0, 0], [1]]}]}`, "body.elements[0].points[1]"},
		{`{"type": "excalidraw", "elements": [{"id": "a", "type": "rectangle", "x": 0, "y": 0, "opacity": 300}]}`, "body.elements[0].opacity"},
		{`{"type": "excalidraw", "elements": [{"id": "a", "type": "arrow", "x": 0, "y": 0, "points": [[0, 0], [1, 1]], "endArrowhead": "spear"}]}`, "body.elements[0].endArrowhead"},
	} {
		_, err := Decode(Excalidraw, []byte(c.file))
		var fe *canvas.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("Decode(%.70s) = %v, want a 422 naming %s", c.file, err, c.field)
		}
	}
}
