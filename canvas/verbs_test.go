package canvas

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestVerbDefinitions: every verb has a struct of args whose fields all
// have schemas, its forms name its fields, and the schema names are those
// openapi.yaml refers to.
func TestVerbDefinitions(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Verbs() {
		if seen[v.Type] || v.Args.Kind() != reflect.Struct || v.Schema == "" || v.Summary == "" {
			t.Errorf("%s: %+v", v.Type, v)
		}
		seen[v.Type] = true
		fields := map[string]bool{}
		for i := 0; i < v.Args.NumField(); i++ {
			name, _ := jsonTag(v.Args.Field(i))
			fields[name] = true
		}
		for _, f := range v.Forms {
			for _, n := range append(append([]string(nil), f.Required...), f.Optional...) {
				if !fields[n] {
					t.Errorf("%s: form names %q, not an arg", v.Type, n)
				}
			}
		}
		if _, ok := ArgsJSONSchema(v.Type, JSONSchemaOptions{}); !ok {
			t.Errorf("%s: no JSON Schema", v.Type)
		}
	}
	if _, ok := VerbByType("teleport"); ok {
		t.Error("an unknown verb was found")
	}
}

// TestArgsJSONSchema: the standalone schema of a verb's args is draft
// 2020-12 (an exclusive minimum is the bound), writes named schemas in
// place, and props as the caller says.
func TestArgsJSONSchema(t *testing.T) {
	s, _ := ArgsJSONSchema("resize", JSONSchemaOptions{})
	b, _ := json.Marshal(s)
	if !strings.Contains(string(b), `"scale_x":{"exclusiveMinimum":0,"type":"number"}`) || !strings.Contains(string(b), `"ids":{"items":{"type":"string"},"minItems":1,"type":"array"}`) {
		t.Errorf("resize: %s", b)
	}
	s, _ = ArgsJSONSchema("create_edge", JSONSchemaOptions{Ref: func(name string) map[string]any {
		return map[string]any{"title": name}
	}})
	if p := s["properties"].(map[string]any)["props"].(map[string]any); p["title"] != "EdgeProps" {
		t.Errorf("create_edge props: %v", p)
	}
	s, _ = ArgsJSONSchema("create_node", JSONSchemaOptions{})
	if tr := s["properties"].(map[string]any)["transform"].(map[string]any); tr["type"] != "object" || tr["properties"].(map[string]any)["w"].(map[string]any)["minimum"] != 0.0 {
		t.Errorf("create_node transform: %v", tr)
	}
}

// TestVerbSchemasYAML: the args refer to the props schemas openapi.yaml has,
// and are open objects while it has none.
func TestVerbSchemasYAML(t *testing.T) {
	with := VerbSchemasYAML(func(string) bool { return true })
	without := VerbSchemasYAML(func(string) bool { return false })
	if !strings.Contains(with, `"$ref": "#/components/schemas/NodeProps"`) || strings.Contains(without, "schemas/NodeProps") {
		t.Errorf("props references: with %v, without %v", strings.Contains(with, "schemas/NodeProps"), strings.Contains(without, "schemas/NodeProps"))
	}
	if !strings.HasPrefix(with, VerbSchemasBegin) || !strings.HasSuffix(with, VerbSchemasEnd) {
		t.Error("markers missing")
	}
}
