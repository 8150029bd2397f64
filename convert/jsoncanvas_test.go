package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// stateOf holds a scene as a canvas would after importing it: nodes in
// z-order, props as plain JSON.
func stateOf(t *testing.T, sc *Scene) *canvas.State {
	t.Helper()
	s := canvas.NewState()
	for i, n := range sc.Nodes {
		c := *n
		c.Index = fmt.Sprintf("a%06d", i)
		c.Props = roundTripJSON(t, n.Props)
		s.Nodes[c.ID] = &c
	}
	for _, e := range sc.Edges {
		c := *e
		c.Props = roundTripJSON(t, e.Props)
		s.Edges[c.ID] = &c
	}
	return s
}

// roundTripJSON is props as a store gives them back.
func roundTripJSON(t *testing.T, p map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameFile compares two JSON documents as values.
func sameFile(t *testing.T, want, got []byte) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(want, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &b); err != nil {
		t.Fatalf("the export is not JSON: %v\n%s", err, got)
	}
	if !reflect.DeepEqual(a, b) {
		wa, _ := json.MarshalIndent(a, "", " ")
		gb, _ := json.MarshalIndent(b, "", " ")
		t.Errorf("the file did not come back as it was:\nwant %s\ngot  %s", wa, gb)
	}
}

func TestJSONCanvasRoundTrip(t *testing.T) {
	for _, name := range []string{"sample.canvas", "every-field.canvas"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile("testdata/jsoncanvas/" + name)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := Decode(JSONCanvas, data)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Encode(JSONCanvas, stateOf(t, sc), nil)
			if err != nil {
				t.Fatal(err)
			}
			sameFile(t, data, out)
		})
	}
}

func TestJSONCanvasMapsToTheModel(t *testing.T) {
	data, _ := os.ReadFile("testdata/jsoncanvas/every-field.canvas")
	sc, err := Decode(JSONCanvas, data)
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]*canvas.Node{}
	for _, n := range sc.Nodes {
		nodes[n.ID] = n
	}
	check := func(id, typ string, props map[string]any) {
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
	}
	check("text-red", "geo", map[string]any{"geo": "rectangle", "color": "red", "text": "# Heading\n\nSome **Markdown** with a [link](https://jsoncanvas.org)."})
	check("text-cyan", "geo", map[string]any{"color": "light-blue"})
	check("text-purple", "geo", map[string]any{"color": "violet"})
	check("file-2", "doc", map[string]any{"color": "#ff00aa"})
	check("link-1", "embed", map[string]any{"url": "https://jsoncanvas.org/spec/1.0/"})
	check("link-2", "geo", map[string]any{"text": "obsidian://open?vault=notes"})
	check("group-1", "frame", map[string]any{"color": "#2F9E44"})
	if n := nodes["file-1"]; n.Name != "notes/Project plan.md" {
		t.Errorf("a file node's document is named %q", n.Name)
	}
	if nodes["group-1"].Name != "Everything" {
		t.Errorf("a group's label became the name %q", nodes["group-1"].Name)
	}
	// Groups hold what lies inside them; the smallest one wins.
	if p := nodes["text-inner"].ParentID; p != "group-2" {
		t.Errorf("text-inner's parent is %q, want group-2", p)
	}
	if p := nodes["text-red"].ParentID; p != "group-1" {
		t.Errorf("text-red's parent is %q, want group-1", p)
	}
	edges := map[string]*canvas.Edge{}
	for _, e := range sc.Edges {
		edges[e.ID] = e
	}
	e2 := edges["edge-2"]
	if e2.From != "text-orange" || e2.To != "text-cyan" || e2.Props["fromSide"] != "bottom" || e2.Props["toSide"] != "top" ||
		e2.Props["arrowheadStart"] != "arrow" || e2.Props["arrowheadEnd"] != "none" || e2.Props["text"] != "both ways" || e2.Props["color"] != "yellow" {
		t.Errorf("edge-2 became %+v", e2)
	}
}

func TestJSONCanvasEditedComesBackEdited(t *testing.T) {
	data, _ := os.ReadFile("testdata/jsoncanvas/every-field.canvas")
	sc, _ := Decode(JSONCanvas, data)
	s := stateOf(t, sc)
	s.Nodes["text-orange"].X = 1000
	s.Nodes["text-orange"].Props["text"] = "changed"
	s.Nodes["link-2"].Props["text"] = "https://example.com/" // a rectangle now, no longer the link it was
	out, err := Encode(JSONCanvas, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Nodes []map[string]any }
	json.Unmarshal(out, &f)
	for _, n := range f.Nodes {
		switch n["id"] {
		case "text-orange":
			if n["x"] != 1000.0 || n["text"] != "changed" || n["color"] != "2" {
				t.Errorf("the edited node came back as %v", n)
			}
		case "link-2":
			if n["type"] != "text" || n["text"] != "https://example.com/" || n["styleAttributes"] == nil {
				t.Errorf("the edited link came back as %v; want a text node, the app's member carried along", n)
			}
		}
	}
}

func TestJSONCanvasBadFilesNameThePlace(t *testing.T) {
	for _, c := range []struct{ file, field string }{
		{`[]`, "body"},
		{`{"nodes": {}}`, "body.nodes"},
		{`{"nodes": [{"id": "a", "type": "text", "x": 0, "y": 0, "width": 10, "height": 10}]}`, "body.nodes[0].text"},
		{`{"nodes": [{"id": "a", "type": "text", "text": "", "x": "0", "y": 0, "width": 10, "height": 10}]}`, "body.nodes[0].x"},
		{`{"nodes": [{"id": "a", "type": "shape", "x": 0, "y": 0, "width": 10, "height": 10}]}`, "body.nodes[0].type"},
		{`{"nodes": [{"id": "a", "type": "text", "text": "", "x": 0, "y": 0, "width": 10, "height": 10, "color": "7"}]}`, "body.nodes[0].color"},
		{`{"nodes": [{"id": "a", "type": "text", "text": "", "x": 0, "y": 0, "width": 10, "height": 10}], "edges": [{"id": "e", "fromNode": "a", "toNode": "b"}]}`, "body.edges[0].toNode"},
		{`{"nodes": [{"id": "a", "type": "text", "text": "", "x": 0, "y": 0, "width": 10, "height": 10}], "edges": [{"id": "e", "fromNode": "a", "toNode": "a", "toSide": "middle"}]}`, "body.edges[0].toSide"},
		{`{"nodes": [{"id": "a", "type": "text", "text": "", "x": 0, "y": 0, "width": 10, "height": 10}, {"id": "a", "type": "text", "text": "", "x": 0, "y": 0, "width": 10, "height": 10}]}`, "body.nodes[1].id"},
		{strings.Repeat("[", 100) + strings.Repeat("]", 100), "body"},
	} {
		_, err := Decode(JSONCanvas, []byte(c.file))
		var fe *canvas.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, canvas.ErrUnprocessable) {
			t.Errorf("Decode(%.60s) = %v, want a 422 naming %s", c.file, err, c.field)
		}
	}
}

func TestJSONCanvasIDsTheModelCannotTake(t *testing.T) {
	file := `{"nodes": [{"id": "a b/c", "type": "text", "text": "x", "x": 0, "y": 0, "width": 10, "height": 10}],
	          "edges": [{"id": "é", "fromNode": "a b/c", "toNode": "a b/c"}]}`
	sc, err := Decode(JSONCanvas, []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if id := sc.Nodes[0].ID; canvas.ValidateID("id", id) != nil || sc.Edges[0].From != id {
		t.Fatalf("the node's id became %q (the edge names %q)", id, sc.Edges[0].From)
	}
	out, _ := Encode(JSONCanvas, stateOf(t, sc), nil)
	sameFile(t, []byte(file), out)
}
