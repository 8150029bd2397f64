package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

func seqIDs() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("ag:%021d", n) }
}

func act(name string, params string) Action {
	v, ok, _ := parseValue([]byte(params), 0, 0) // tolerates NaN like the stream parser
	if !ok {
		panic("bad test params " + params)
	}
	return Action{ID: "a", Name: name, Params: v.(map[string]any)}
}

func pushAll(s *Sanitizer, as ...Action) (ready []Action, drops []Drop) {
	for _, a := range as {
		r, d := s.Push(a)
		ready = append(ready, r...)
		drops = append(drops, d...)
	}
	r, d := s.Flush()
	return append(ready, r...), append(drops, d...)
}

func TestSanitizeCoercion(t *testing.T) {
	s := NewSanitizer([]string{"shape:old"}, seqIDs())
	ready, drops := pushAll(s,
		act("createShape", `{"id":"hero","kind":"headline","x":"100px","y":1e308,"color":"Burnt Orange","props":{"size":"huge","font":"Helvetica","fill":"","dash":"yel"}}`),
		act("create_shape", `{"type":"box","x":0,"y":0,"props":{"color":"charcoal","fill":"filled"}}`),
		act("update_shape", `{"id":"hero","props":{"color":"deep orange"}}`),
	)
	if len(drops) != 0 || len(ready) != 3 {
		t.Fatalf("ready %v drops %v", ready, drops)
	}
	hero := ready[0].Params
	props := hero["props"].(map[string]any)
	if hero["id"] != "ag:000000000000000000001" || hero["type"] != "text" || hero["x"] != 100.0 || hero["y"] != MaxCoord {
		t.Fatalf("hero = %v", hero)
	}
	if props["color"] != "orange" || props["size"] != "xl" || props["font"] != "helvetica" { // a font of model 2
		t.Fatalf("props = %v", props)
	}
	if _, ok := props["fill"]; ok {
		t.Fatal("blank fill kept")
	}
	if _, ok := props["dash"]; ok {
		t.Fatal("invalid dash kept")
	}
	box := ready[1].Params
	if box["type"] != "geo" || box["props"].(map[string]any)["geo"] != "rectangle" || box["props"].(map[string]any)["color"] != "black" || box["props"].(map[string]any)["fill"] != "solid" || box["w"] != 240.0 {
		t.Fatalf("box = %v", box)
	}
	up := ready[2].Params
	if up["id"] != hero["id"] || up["props"].(map[string]any)["color"] != "red" {
		t.Fatalf("renamed update = %v", up)
	}
}

func TestSanitizeRefsOrderingAndDuplicates(t *testing.T) {
	s := NewSanitizer([]string{"shape:a", "shape:b"}, seqIDs())
	ready, drops := pushAll(s,
		// depends on "late", created later in the stream: must come after it
		act("align", `{"ids":["late","shape:a"],"alignment":"left"}`),
		act("delete_shape", `{"ids":["shape:gone"]}`),
		act("move", `{"ids":["shape:a","shape:gone"],"dx":10,"dy":NaN}`),
		act("create_shape", `{"id":"late","type":"note","x":5,"y":5,"text":"hi"}`),
		act("create_shape", `{"id":"late","type":"note","x":50,"y":5}`),             // same id again
		act("create_shape", `{"id":"other","type":"note","x":5,"y":5,"text":"hi"}`), // same content
		act("frobnicate", `{}`),
		act("create_shape", `{"type":"r","x":1,"y":1}`), // half-spelled type
		act("rotate", `{"ids":"shape:b","degrees":720}`),
		act("apply_preset", `{"preset":"headline","targetIds":["shape:b","nope"]}`),
		act("apply_preset", `{"preset":"tag","text":"label me"}`),
	)
	var names []string
	for _, a := range ready {
		names = append(names, a.Name)
		if err := Validate(a); err != nil {
			t.Fatalf("%v: %v", a, err)
		}
	}
	if got := strings.Join(names, ","); got != "move,create_shape,align,rotate,update_shape,create_shape" {
		t.Fatalf("order = %s; drops %v", got, drops)
	}
	if a := ready[2].Params["ids"].([]any); a[0] != ready[1].Params["id"] || a[1] != "shape:a" {
		t.Fatalf("align ids %v", a)
	}
	if mv := ready[0].Params; len(mv["ids"].([]any)) != 1 {
		t.Fatalf("move kept a missing id: %v", mv)
	}
	if rot := ready[3].Params; rot["degrees"] != 720.0 { // the server rotates by any angle (canvas.RotateArgs)
		t.Fatalf("rotate changed: %v", rot)
	}
	if s.Stats.Duplicates != 2 {
		t.Fatalf("duplicates = %d (drops %v)", s.Stats.Duplicates, drops)
	}
	reasons := fmt.Sprint(drops)
	for _, w := range []string{"shape:gone", "frobnicate", "unknown shape type r", "duplicate", "nope"} {
		if !strings.Contains(reasons, w) {
			t.Errorf("no drop mentions %q: %s", w, reasons)
		}
	}
	// move with dy NaN: dy dropped → move invalid? it had ids+dx only, so it must
	// have been rejected or fixed; we accepted it only if valid.
	if mv := ready[0].Params; mv["dy"] != 0.0 {
		t.Fatalf("move without dy accepted: %v", mv)
	}
}

func TestSanitizePreview(t *testing.T) {
	s := NewSanitizer(nil, seqIDs())
	if _, ok := s.SanitizePreview(Action{Name: "crea"}); ok {
		t.Fatal("half-spelled verb previewed")
	}
	if _, ok := s.SanitizePreview(act("create_shape", `{"type":"r"}`)); ok {
		t.Fatal("half-spelled type previewed")
	}
	a, ok := s.SanitizePreview(act("create_shape", `{"type":"sticky","props":{"color":"yel"}}`))
	if !ok || a.Params["type"] != "note" || len(a.Params["props"].(map[string]any)) != 0 {
		t.Fatalf("preview %v %v", a, ok)
	}
}

func TestCatalogSchemas(t *testing.T) {
	var c Catalog
	if err := json.Unmarshal(CatalogJSON(), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Actions) != 27+len(hostVerbs()) {
		t.Fatalf("%d verbs", len(c.Actions))
	}
	for _, e := range c.Actions {
		var sample map[string]any
		if err := json.Unmarshal(e.Sample, &sample); err != nil {
			t.Fatalf("%s sample: %v", e.Name, err)
		}
		// Every sample validates, after sanitizing references against its own ids.
		if err := Validate(Action{Name: e.Name, Params: sample}); err != nil {
			t.Errorf("%s sample does not validate: %v", e.Name, err)
		}
		if e.Params["type"] != "object" {
			t.Errorf("%s schema %v", e.Name, e.Params)
		}
	}
	cs := c.Actions[0].Params["properties"].(map[string]any)
	color := cs["props"].(map[string]any)["properties"].(map[string]any)["color"].(map[string]any)
	if len(color["enum"].([]any)) != len(enumColor) {
		t.Fatalf("color enum %v", color)
	}
	for _, bad := range []Action{
		act("create_shape", `{"type":"geo","x":0}`),
		act("create_shape", `{"type":"blob","x":0,"y":0}`),
		act("create_shape", `{"type":"geo","x":0,"y":0,"props":{"color":"teal"}}`),
		act("create_shape", `{"type":"geo","x":0,"y":0,"w":-1}`),
		act("create_shape", `{"type":"geo","x":0,"y":0,"props":{"fill":"tint"}}`),
		act("connect", `{"from":"a","to":"b","props":{"arrowheadEnd":"spear"}}`),
		act("resize", `{"ids":["a"],"scale_x":0,"scale_y":1}`),
		act("move", `{"ids":["a"],"dx":1,"dy":1,"x":3}`),
		act("create_shape", `{"type":"geo","x":0,"y":0,"bogus":1}`),
		act("move", `{"ids":["a"],"dx":1}`),
		act("align", `{"ids":["a"],"alignment":"left"}`),
		act("delete_shape", `{"ids":[]}`),
		act("delete_shape", `{"ids":[""]}`),
		act("think", `{}`),
		act("replace_lines", `{"node_id":"d","start_line":3,"end_line":2,"new_content":"x"}`),
		act("replace_lines", `{"node_id":"d","start_line":0,"end_line":2,"new_content":"x"}`),
		act("replace_lines", `{"node_id":"d","start_line":1,"end_line":2}`),
		act("insert_lines", `{"node_id":"d","insert_after_line":1.5,"content":"x"}`),
		{Name: "nope"},
	} {
		if Validate(bad) == nil {
			t.Errorf("%v validated", bad)
		}
	}
}

// FuzzSanitize: whatever the model streams, every action the sanitizer
// releases validates, encodes as JSON (no NaN/Inf), references only shapes
// that exist at that point, and creates fresh ag: ids.
func FuzzSanitize(f *testing.F) {
	f.Add(posterJSON)
	f.Add(`{"actions":[{"name":"move","params":{"ids":["x"],"dx":1e400,"dy":"NaN"}},{"name":"create_shape","params":{"id":"x","type":"sticky","x":"1","y":2}}]}`)
	f.Add(`{"actions":[{"name":"apply_preset","params":{"preset":"hero","targetIds":["shape:a"]}},{"name":"group","params":{"ids":["shape:a","shape:b"],"group_id":"g"}},{"name":"ungroup","params":{"id":"g"}}]}`)
	f.Add(`{"actions":[{"name":"create_shape","params":{"type":"draw","x":0,"y":0,"props":{"segments":[{"type":"free","points":[{"x":1,"y":2,"z":9},{"x":"a"}]}]}}},{"name":"resize","params":{"id":"shape:b","w":-5,"h":1e9}}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		s := NewSanitizer([]string{"shape:a", "shape:b"}, nil)
		known := map[string]bool{"shape:a": true, "shape:b": true}
		p := NewParser(0)
		done, _ := p.Feed(text)
		var ready []Action
		for _, pa := range done {
			r, _ := s.Push(Action{ID: fmt.Sprint(pa.Index), Name: pa.Name, Params: pa.Params})
			ready = append(ready, r...)
		}
		r, _ := s.Flush()
		ready = append(ready, r...)
		for _, a := range ready {
			if err := Validate(a); err != nil {
				t.Fatalf("released invalid action %v: %v", a, err)
			}
			b, err := json.Marshal(a.Params)
			if err != nil {
				t.Fatalf("params do not encode: %v", err)
			}
			var back map[string]any
			_ = json.Unmarshal(b, &back)
			if err := Validate(Action{Name: a.Name, Params: back}); err != nil {
				t.Fatalf("round-tripped action invalid: %v", err)
			}
			checkNums(t, back)
			refs := []any{}
			if id, ok := a.Params["id"]; ok && a.Name != "create_shape" {
				refs = append(refs, id)
			}
			if ids, ok := a.Params["ids"].([]any); ok {
				refs = append(refs, ids...)
			}
			if pid, ok := a.Params["parent_id"]; ok {
				refs = append(refs, pid)
			}
			for _, r := range refs {
				if !known[r.(string)] {
					t.Fatalf("%s references %v, which does not exist", a.Name, r)
				}
			}
			switch a.Name {
			case "create_shape":
				id := a.Params["id"].(string)
				if !strings.HasPrefix(id, "ag:") || known[id] {
					t.Fatalf("create id %q", id)
				}
				known[id] = true
			case "group":
				known[a.Params["group_id"].(string)] = true
			case "delete_shape":
				for _, x := range a.Params["ids"].([]any) {
					delete(known, x.(string))
				}
			case "ungroup":
				delete(known, a.Params["id"].(string))
			}
		}
	})
}

func checkNums(t *testing.T, v any) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > MaxCoord {
			t.Fatalf("number %v out of bounds", x)
		}
	case map[string]any:
		for _, y := range x {
			checkNums(t, y)
		}
	case []any:
		for _, y := range x {
			checkNums(t, y)
		}
	}
}

func TestSanitizeDropsEmptyUpdate(t *testing.T) {
	s := NewSanitizer([]string{"shape:a"}, seqIDs())
	ready, drops := pushAll(s, act("update_shape", `{"id":"shape:a","props":{"color":"r"}}`))
	if len(ready) != 0 || len(drops) != 1 || !strings.Contains(drops[0].Reason, "nothing valid") {
		t.Fatalf("ready %v drops %v", ready, drops)
	}
}

// Document verbs keep their text verbatim (indentation, blank lines,
// trailing newline), take whole line numbers, and need an existing node.
func TestSanitizeDocumentVerbs(t *testing.T) {
	s := NewSanitizer([]string{"doc1"}, nil)
	ready, drops := s.Push(act("replace_lines", `{"node_id":"doc1","start_line":"2","end_line":3,"new_content":"  if x:\n\n    pass\n"}`))
	if len(drops) != 0 || len(ready) != 1 {
		t.Fatalf("ready %v drops %v", ready, drops)
	}
	p := ready[0].Params
	if p["new_content"] != "  if x:\n\n    pass\n" || p["start_line"] != 2.0 || p["node_id"] != "doc1" {
		t.Fatalf("params %v", p)
	}
	ready, drops = s.Push(act("search_replace", `{"node_id":"doc1","search_pattern":" foo ","replace_with":"","regex":"false"}`))
	if len(ready) != 1 || ready[0].Params["search_pattern"] != " foo " || ready[0].Params["replace_with"] != "" || ready[0].Params["regex"] != false {
		t.Fatalf("search_replace %v %v", ready, drops)
	}
	for _, bad := range []Action{
		act("insert_lines", `{"node_id":"doc1","insert_after_line":1.5,"content":"x"}`),
		act("delete_lines", `{"node_id":"shape:gone","start_line":1,"end_line":1}`),
		act("replace_lines", `{"node_id":"doc1","start_line":1,"end_line":1,"new_content":7}`),
	} {
		if ready, drops := s.Push(bad); len(ready) != 0 || len(drops) != 1 {
			t.Errorf("%v: ready %v drops %v", bad, ready, drops)
		}
	}
	if ready, _ := s.Push(act("undo", `{}`)); len(ready) != 1 || ready[0].Name != "undo" {
		t.Errorf("undo %v", ready)
	}
}
