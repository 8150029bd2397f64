package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestModelOnEveryWritePath: props off the model (docs/model.md) are a 422
// naming the field on every way in (a command, a batch, an MCP tool), and
// nothing is written; a client cannot send migrate_model; an arrow is an
// edge whose bound ends follow its shapes, and deleting a shape leaves no
// edge naming it; the snapshot says its model.
func TestModelOnEveryWritePath(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_model")
	refused := func(r response, field, says string) {
		t.Helper()
		p := r.json(t)
		if r.Status != http.StatusUnprocessableEntity || p["field"] != field || !strings.Contains(p["detail"].(string), says) {
			t.Fatalf("got %d %s; want 422 on %s saying %q", r.Status, r.Body, field, says)
		}
	}
	refused(e.do("POST", "/canvas_commands/"+id+"/command", testAdmin,
		env("create_shape", 0, map[string]any{"type": "geo", "x": 0, "y": 0, "props": map[string]any{"size": "xxl"}})), "args.props.size", "s, m, l, xl")
	refused(e.do("POST", "/canvas_commands/"+id+"/command", testAdmin,
		env("create_shape", 0, map[string]any{"type": "arrow", "x": 0, "y": 0})), "args.type", "create_edge")
	refused(e.do("POST", "/canvas_commands/"+id+"/command", testAdmin, env("migrate_model", 0, map[string]any{})), "type", "clients cannot send it")
	refused(e.do("POST", "/canvas_commands/"+id+"/commands", testAdmin, map[string]any{"base_rev": 0, "commands": []any{
		map[string]any{"type": "create_node", "args": map[string]any{"id": "ok"}},
		map[string]any{"type": "create_node", "args": map[string]any{"props": map[string]any{"fill": "tint"}}},
	}}), "commands[1].args.props.fill", "lined-fill")
	cs := mcpSession(t, e, testAdmin)
	_, isErr, text := callTool(t, cs, "canvas_apply", map[string]any{"canvas_id": id, "type": "create_node",
		"args": map[string]any{"type": "note", "props": map[string]any{"geo": "rectangle"}}})
	if !isErr || !strings.Contains(text, "args.props.geo") {
		t.Fatalf("canvas_apply with a prop a note does not take: %v %s", isErr, text)
	}
	if s := e.snapshot(id); s["head_rev"] != 0.0 || s["model"] != 2.0 {
		t.Fatalf("refused writes left head %v; model %v", s["head_rev"], s["model"])
	}

	// An arrow between two shapes follows them and goes with them.
	e.must(200, "POST", "/canvas_commands/"+id+"/commands", testAdmin, map[string]any{"base_rev": 0, "commands": []any{
		map[string]any{"type": "create_shape", "args": map[string]any{"id": "a", "type": "geo", "x": 0, "y": 0, "w": 100, "h": 100}},
		map[string]any{"type": "create_shape", "args": map[string]any{"id": "b", "type": "geo", "x": 300, "y": 0, "w": 100, "h": 100}},
		map[string]any{"type": "create_edge", "args": map[string]any{"id": "ab", "from": "a", "to": "b", "props": map[string]any{"text": "calls"}}},
	}})
	points := func() string {
		for _, x := range e.snapshot(id)["state"].(map[string]any)["edges"].([]any) {
			if ed := x.(map[string]any); ed["id"] == "ab" {
				b, err := json.Marshal(ed["props"].(map[string]any)["points"])
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
		}
		return ""
	}
	if got := points(); got != `[{"x":100,"y":50},{"x":300,"y":50}]` {
		t.Fatalf("computed points %s", got)
	}
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("move", 3, map[string]any{"ids": []string{"b"}, "dx": 50, "dy": 100}))
	if got := points(); got != `[{"x":100,"y":50},{"x":350,"y":150}]` {
		t.Fatalf("after moving b: %s", got)
	}
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("delete_shape", 4, map[string]any{"ids": []string{"b"}}))
	if edges := e.snapshot(id)["state"].(map[string]any)["edges"].([]any); len(edges) != 0 {
		t.Fatalf("an edge of the deleted shape is left: %v", edges)
	}
	if s := e.do("GET", "/canvas_commands/snapshot/"+id+"?at_rev=3", testAdmin, nil).json(t); s["model"] != 2.0 {
		t.Fatalf("at_rev snapshot of a model 2 canvas says model %v", s["model"])
	}
}
