package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/canvasd/canvasd/canvas"
)

// argsShape is what a schema of args says: its properties and the required
// ones, per form (one form unless it is a oneOf), as "a,b? c" lines.
func argsShape(props []string, required []string) string {
	sort.Strings(props)
	var out []string
	for _, p := range props {
		if slices.Contains(required, p) {
			out = append(out, p)
		} else {
			out = append(out, p+"?")
		}
	}
	return strings.Join(out, ",")
}

func openAPIArgsShape(s *openapi3.Schema) []string {
	forms := []*openapi3.Schema{s}
	if len(s.OneOf) > 0 {
		forms = nil
		for _, f := range s.OneOf {
			forms = append(forms, f.Value)
		}
	}
	var out []string
	for _, f := range forms {
		var props []string
		for k := range f.Properties {
			props = append(props, k)
		}
		out = append(out, argsShape(props, f.Required))
	}
	return out
}

func jsonArgsShape(t *testing.T, s map[string]any, drop ...string) []string {
	t.Helper()
	forms := []map[string]any{s}
	if oneOf, ok := s["oneOf"].([]any); ok {
		forms = nil
		for _, f := range oneOf {
			forms = append(forms, f.(map[string]any))
		}
	}
	var out []string
	for _, f := range forms {
		var props, required []string
		for k := range f["properties"].(map[string]any) {
			if !slices.Contains(drop, k) {
				props = append(props, k)
			}
		}
		if r, ok := f["required"].([]any); ok {
			for _, x := range r {
				required = append(required, x.(string))
			}
		}
		out = append(out, argsShape(props, required))
	}
	return out
}

// TestVerbArgsAgree: a verb's args are defined once (canvas.Verbs): the
// args schemas of openapi.yaml, the agent's catalog as GET
// /api/canvas-agent/catalog serves it and the input schemas of the MCP tools
// (each command tool, and canvas_apply per type) take the same args,
// required alike. TestOpenAPICommandArgsMatchReducer checks the reducer
// accepts exactly those.
func TestVerbArgsAgree(t *testing.T) {
	e := newTestEnv(t)
	doc := e.spec.doc
	want := map[string][]string{}
	for _, v := range canvas.Verbs() {
		s := doc.Components.Schemas[v.Schema]
		if s == nil {
			t.Fatalf("openapi.yaml has no %s", v.Schema)
		}
		want[v.Type] = openAPIArgsShape(s.Value)
		gen, _ := canvas.ArgsJSONSchema(v.Type, canvas.JSONSchemaOptions{})
		b, _ := json.Marshal(gen)
		var got map[string]any
		_ = json.Unmarshal(b, &got)
		if !slices.Equal(jsonArgsShape(t, got), want[v.Type]) {
			t.Errorf("%s: canvas.ArgsJSONSchema %v, openapi.yaml %v", v.Type, jsonArgsShape(t, got), want[v.Type])
		}
	}

	// The agent's catalog: every canvas action names its command and takes its args.
	r := e.do(http.MethodGet, "/api/canvas-agent/catalog", testAdmin, nil)
	var cat struct {
		Actions []struct {
			Name, Kind, Command string
			Params              map[string]any
		}
	}
	if err := json.Unmarshal(r.Body, &cat); err != nil || r.Status != 200 {
		t.Fatalf("catalog %d: %v", r.Status, err)
	}
	commands := 0
	for _, a := range cat.Actions {
		if a.Kind == "canvas" && a.Command == "" {
			t.Errorf("catalog action %s is a canvas action without a command", a.Name)
		}
		if a.Command == "" {
			continue
		}
		commands++
		if got := jsonArgsShape(t, a.Params); !slices.Equal(got, want[a.Command]) {
			t.Errorf("catalog %s (%s): %v, openapi.yaml %v", a.Name, a.Command, got, want[a.Command])
		}
	}
	if commands < 15 {
		t.Errorf("only %d catalog actions are commands", commands)
	}

	// MCP: each command tool takes its command's args beside canvas_id,
	// base_rev and idempotency_key; canvas_apply takes each type's args.
	tools, err := mcpSession(t, e, testAdmin).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	verbTools := map[string]string{"canvas_replace_lines": "replace_lines", "canvas_insert_lines": "insert_lines", "canvas_delete_lines": "delete_lines",
		"canvas_search_replace": "search_replace", "canvas_revert_to_snapshot": "revert_to_snapshot", "canvas_undo": "undo", "canvas_redo": "redo"}
	seen := 0
	for _, tl := range tools.Tools {
		b, _ := json.Marshal(tl.InputSchema)
		var s map[string]any
		_ = json.Unmarshal(b, &s)
		if verb, ok := verbTools[tl.Name]; ok {
			seen++
			got := jsonArgsShape(t, s, "canvas_id", "base_rev", "idempotency_key")
			req, _ := s["required"].([]any)
			if !slices.Equal(got, want[verb]) || len(req) == 0 || req[0] != "canvas_id" {
				t.Errorf("MCP %s: %v (required %v), openapi.yaml %s %v", tl.Name, got, req, verb, want[verb])
			}
		}
		if tl.Name == "canvas_apply" {
			seen++
			var types []string
			for _, x := range s["properties"].(map[string]any)["type"].(map[string]any)["enum"].([]any) {
				types = append(types, x.(string))
			}
			if len(types) != len(want) {
				t.Errorf("canvas_apply types %v", types)
			}
			for _, br := range s["allOf"].([]any) {
				b := br.(map[string]any)
				typ := b["if"].(map[string]any)["properties"].(map[string]any)["type"].(map[string]any)["const"].(string)
				args := b["then"].(map[string]any)["properties"].(map[string]any)["args"].(map[string]any)
				if got := jsonArgsShape(t, args); !slices.Equal(got, want[typ]) {
					t.Errorf("canvas_apply %s: %v, openapi.yaml %v", typ, got, want[typ])
				}
			}
		}
	}
	if seen != len(verbTools)+1 {
		t.Errorf("%d of the MCP command tools found", seen)
	}
}
