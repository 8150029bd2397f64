package agent

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestParserReadsTheKitsReplies: the kit's own example (a JavaScript object
// literal under "events") and a reply in its later format parse, in any
// chunking, into actions named by "_type".
func TestParserReadsTheKitsReplies(t *testing.T) {
	for _, tc := range []struct {
		file  string
		names []string
	}{
		{"snowman.txt", []string{"think", "create", "create", "create", "think", "create", "create", "message", "schedule"}},
		{"unmappable.json", []string{"count", "countryInfo", "create", "create", "create", "update-todo-list"}},
	} {
		b, err := os.ReadFile("testdata/tldraw-kit/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 5, len(b)} {
			p := NewParser(0)
			var chunks []string
			for i := 0; i < len(b); i += size {
				chunks = append(chunks, string(b[i:min(i+size, len(b))]))
			}
			got, _ := collect(t, p, chunks)
			var names []string
			for _, a := range got {
				if !a.Kit || a.Params["_type"] != nil {
					t.Fatalf("%s: %+v is not read as the kit's", tc.file, a)
				}
				names = append(names, a.Name)
			}
			if !reflect.DeepEqual(names, tc.names) || !p.Done() {
				t.Fatalf("%s in chunks of %d: %v done %v", tc.file, size, names, p.Done())
			}
		}
	}
}

func kitAct(name, params string) Action {
	var p map[string]any
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		panic(err)
	}
	return Action{ID: "k", Name: name, Params: p, Kit: true}
}

// TestKitMapping: each kit action becomes the catalog actions it means.
func TestKitMapping(t *testing.T) {
	s := NewSanitizer([]string{"a", "b", "c"}, seqIDs())
	s.ResetEdges([]string{"e1"})
	cases := []struct {
		in   Action
		want string // the mapped actions, JSON
	}{
		{kitAct("create", `{"shape":{"_type":"pill","shapeId":"p","x":1,"y":2,"w":30,"h":40,"color":"pink","fill":"tint","text":"hi","note":"n"}}`),
			`[{"id":"k","name":"create_shape","params":{"h":40,"id":"p","props":{"color":"light-violet","fill":"solid","geo":"oval","meta":{"note":"n"},"text":"hi"},"type":"geo","w":30,"x":1,"y":2}}]`},
		{kitAct("create", `{"shape":{"_type":"line","shapeId":"l","x1":10,"y1":50,"x2":0,"y2":20}}`),
			`[{"id":"k","name":"create_shape","params":{"h":30,"id":"l","props":{"points":[{"x":10,"y":30},{"x":0,"y":0}]},"type":"line","w":10,"x":0,"y":20}}]`},
		{kitAct("create", `{"shape":{"_type":"arrow","shapeId":"ar","fromId":"a","toId":null,"x1":0,"y1":0,"x2":100,"y2":0}}`),
			`[{"id":"k","name":"connect","params":{"from":"a","id":"ar","props":{"points":[{"x":0,"y":0},{"x":100,"y":0}]},"to":""}}]`},
		{kitAct("delete", `{"shapeIds":["a","e1"]}`),
			`[{"id":"k.0","name":"delete_edge","params":{"id":"e1"}},{"id":"k.1","name":"delete_shape","params":{"ids":["a"]}}]`},
		{kitAct("label", `{"shapeId":"e1","text":"x"}`), `[{"id":"k","name":"update_edge","params":{"id":"e1","props":{"text":"x"}}}]`},
		{kitAct("move", `{"shapeId":"a","x":5,"y":6,"anchor":"center"}`), `[{"id":"k","name":"place","params":{"anchor":"center","id":"a","x":5,"y":6}}]`},
		{kitAct("bringToFront", `{"shapeIds":["a"]}`), `[{"id":"k","name":"reorder","params":{"ids":["a"],"op":"bring_to_front"}}]`},
		{kitAct("setMyView", `{"x":1,"y":2,"w":3,"h":4}`), `[{"id":"k","name":"set_viewport","params":{"h":4,"w":3,"x":1,"y":2}}]`},
		{kitAct("update-todo-list", `{"id":1,"status":"in-progress","text":"t"}`), `[{"id":"k","name":"todo","params":{"status":"open","text":"t"}}]`},
		{kitAct("update-todo-list", `{"id":1,"status":"done"}`), `[{"id":"k","name":"todo","params":{"status":"done","text":"t"}}]`},
	}
	for _, c := range cases {
		got, issues := s.fromKit(c.in)
		b, _ := json.Marshal(got)
		if string(b) != c.want || len(issues) != 0 {
			t.Errorf("%s %v:\n got %s %v\nwant %s", c.in.Name, c.in.Params, b, issues, c.want)
		}
	}
	// A field the kit's shape does not have is reported, the rest applied.
	got, issues := s.fromKit(kitAct("create", `{"shape":{"_type":"note","shapeId":"n","x":0,"y":0,"scale":2}}`))
	if len(got) != 1 || len(issues) != 1 || !strings.Contains(issues[0], "ignored scale") {
		t.Errorf("got %v issues %v", got, issues)
	}
}

// TestIsKit: the kit's names are read as the kit's when it wrote them
// (with "_type", or with its fields); canvasd's own actions are not.
func TestIsKit(t *testing.T) {
	for _, c := range []struct {
		a    Action
		want bool
	}{
		{Action{Name: "move", Params: map[string]any{"ids": []any{"a"}, "dx": 1.0, "dy": 0.0}}, false},
		{Action{Name: "move", Params: map[string]any{"shapeId": "a", "x": 1.0, "y": 0.0}}, true},
		{Action{Name: "think", Params: map[string]any{"text": "x"}}, false},
		{Action{Name: "bringToFront", Params: map[string]any{"shapeIds": []any{"a"}}}, true},
		{Action{Name: "label", Params: map[string]any{"shapeId": "a", "text": "x"}}, true},
		{Action{Name: "create_shape", Params: map[string]any{"type": "geo"}}, false},
		{Action{Name: "anything", Kit: true}, true},
	} {
		if got := isKit(c.a); got != c.want {
			t.Errorf("isKit(%s %v) = %v", c.a.Name, c.a.Params, got)
		}
	}
}

// TestArrowShapeToldToConnect: an arrow is an edge in the canvas model, so
// a create_shape of one is refused with what to use instead.
func TestArrowShapeToldToConnect(t *testing.T) {
	s := NewSanitizer(nil, seqIDs())
	ready, drops := s.Push(Action{ID: "1", Name: "create_shape", Params: map[string]any{"type": "connector", "x": 0.0, "y": 0.0}})
	if len(ready) != 0 || len(drops) != 1 || !strings.Contains(drops[0].Reason, "connect {from, to}") {
		t.Fatalf("ready %v drops %v", ready, drops)
	}
}
