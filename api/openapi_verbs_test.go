package api

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	canvasd "github.com/canvasd/canvasd"
	"github.com/canvasd/canvasd/canvas"
)

var updateVerbSchemas = flag.Bool("update-verb-schemas", false, "rewrite the command schemas in openapi.yaml from canvas/verbs.go")

// TestOpenAPIVerbSchemas: openapi.yaml holds the command schemas generated
// from the one definition of the verbs' args (canvas/verbs.go): CommandType,
// CommandEnvelope and BatchCommand discriminated by type, a command schema
// and an args schema per verb. With -update-verb-schemas it rewrites them.
func TestOpenAPIVerbSchemas(t *testing.T) {
	file, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(file)
	i, j := strings.Index(s, canvas.VerbSchemasBegin), strings.Index(s, canvas.VerbSchemasEnd)
	if i < 0 || j < i {
		t.Fatalf("openapi.yaml has no block of command schemas between %q and %q", canvas.VerbSchemasBegin, canvas.VerbSchemasEnd)
	}
	// The named schemas the args refer to (NodeProps, EdgeProps), outside the block.
	outside := s[:i] + s[j:]
	has := func(name string) bool { return strings.Contains(outside, "\n    "+name+":\n") }
	want := canvas.VerbSchemasYAML(has)
	got := s[i : j+len(canvas.VerbSchemasEnd)]
	if got == want {
		return
	}
	if *updateVerbSchemas {
		if err := os.WriteFile("../openapi.yaml", []byte(s[:i]+want+s[j+len(canvas.VerbSchemasEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("openapi.yaml: command schemas rewritten; rebuild to embed it")
		return
	}
	t.Errorf("openapi.yaml's command schemas are not what canvas/verbs.go defines: run go test ./api -run TestOpenAPIVerbSchemas -update-verb-schemas")
}

// TestOpenAPICommandEnvelopeValidates: the envelope schema types args per
// verb: a command whose args fit its type validates, one whose args are
// another verb's does not, and a batch's commands need no base_rev.
func TestOpenAPICommandEnvelopeValidates(t *testing.T) {
	if !strings.Contains(string(canvasd.Spec), canvas.VerbSchemasBegin) {
		t.Fatal("the embedded spec has no command schemas")
	}
	doc := loadSpec(t).doc
	check := func(schema, body string, valid bool) {
		t.Helper()
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		err := doc.Components.Schemas[schema].Value.VisitJSON(v)
		if (err == nil) != valid {
			t.Errorf("%s %s: valid %v, want %v (%v)", schema, body, err == nil, valid, err)
		}
	}
	check("CommandEnvelope", `{"type":"move","base_rev":3,"args":{"ids":["a"],"dx":1,"dy":2}}`, true)
	check("CommandEnvelope", `{"type":"move","base_rev":3,"args":{"id":"a","x":1,"y":2}}`, true)
	check("CommandEnvelope", `{"type":"move","base_rev":3,"args":{"ids":["a"],"x":1}}`, false)
	check("CommandEnvelope", `{"type":"align","base_rev":3,"args":{"ids":["a"],"dx":1,"dy":2}}`, false)
	check("CommandEnvelope", `{"type":"create_node","base_rev":0,"idempotency_key":"k","args":{"name":"x","transform":{"x":1}}}`, true)
	check("CommandEnvelope", `{"type":"create_node","args":{}}`, false) // no base_rev
	check("CommandEnvelope", `{"type":"teleport","base_rev":0,"args":{}}`, false)
	check("CommandEnvelope", `{"type":"undo","base_rev":1,"args":{"x":1}}`, false)
	check("BatchCommand", `{"type":"create_edge","args":{"from":"a","to":"b"}}`, true)
	check("BatchCommand", `{"type":"update_edge","args":{"id":"e","from":""}}`, true)
	check("BatchCommand", `{"type":"delete_shape","args":{"ids":[]}}`, false)
}
