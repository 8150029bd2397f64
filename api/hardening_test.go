package api

import (
	"strings"
	"testing"
)

// TestHostileCommandInput sends input a careless server would choke on and
// checks each gets a problem document and changes nothing.
func TestHostileCommandInput(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_hostile")
	deep := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	cases := map[string]string{
		"deeply nested args":  `{"type":"create_node","base_rev":0,"args":{"props":` + deep + `}}`,
		"invalid utf-8":       "{\"type\":\"create_node\",\"base_rev\":0,\"args\":{\"name\":\"\xff\xfe\"},\"x\":1}",
		"huge base_rev":       `{"type":"create_node","base_rev":99999999999999999999}`,
		"float base_rev":      `{"type":"create_node","base_rev":1.5}`,
		"null body":           `null`,
		"long type":           `{"type":"` + strings.Repeat("x", 1000) + `","base_rev":0}`,
		"long key":            `{"type":"create_node","base_rev":0,"idempotency_key":"` + strings.Repeat("k", 1000) + `"}`,
		"bad client id":       `{"type":"create_node","base_rev":0,"args":{"id":"../../etc"}}`,
		"too many batch cmds": `{"base_rev":0,"commands":[` + strings.TrimSuffix(strings.Repeat(`{"type":"create_node"},`, 1001), ",") + `]}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			path := "/canvas_commands/" + id + "/command"
			if strings.HasPrefix(body, `{"base_rev"`) {
				path = "/canvas_commands/" + id + "/commands"
			}
			r := e.do("POST", path, testAdmin, body)
			if r.Status != 400 && r.Status != 422 && r.Status != 413 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
		})
	}
	if s := e.snapshot(id); s["head_rev"] != 0.0 {
		t.Fatalf("hostile input changed the canvas: head %v", s["head_rev"])
	}
}

// TestNoSSEInjection stores names full of line breaks and SSE field syntax and
// checks the stream still carries exactly one well-formed event per commit.
func TestNoSSEInjection(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_inject")
	s := e.stream("/sse/canvas/"+id, testAdmin, nil)
	s.next()
	evil := "x\n\nevent: reset\ndata: {}\r\nid: 999\x00"
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", 0, map[string]any{"name": evil, "props": map[string]any{evil: evil}}))
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", 1, map[string]any{"name": "after"}))
	for rev := 1; rev <= 2; rev++ {
		m := s.next()
		if m.Event != "canvas_commit" || !strings.HasPrefix(m.ID, string(rune('0'+rev))+"-") {
			t.Fatalf("event %d: %+v", rev, m)
		}
		if rev == 1 {
			c := m.json(t)
			val := c["changes"].([]any)[0].(map[string]any)["value"].(map[string]any)
			if val["name"] != evil {
				t.Fatalf("name did not survive the stream: %q", val["name"])
			}
		}
	}
	// Last-Event-ID itself cannot inject either.
	r := e.stream("/sse/canvas/"+id, testAdmin, map[string]string{"Last-Event-ID": "zz\tevent: x"})
	if m := r.next(); m.Event != "reset" {
		t.Fatalf("want reset, got %+v", m)
	}
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	e := newTestEnv(t)
	if r := e.do("GET", "/nope", testAdmin, nil); r.Status != 404 {
		t.Fatalf("unknown route: %d", r.Status)
	}
	if r := e.do("PUT", "/healthz", "", nil); r.Status != 405 {
		t.Fatalf("wrong method: %d", r.Status)
	}
	if r := e.do("GET", "/canvas_commands/snapshot/c_missing", testAdmin, nil); r.Status != 404 {
		t.Fatalf("missing canvas: %d", r.Status)
	}
	if r := e.do("GET", "/canvas_commands/snapshot/c_missing?at_rev=-3", testAdmin, nil); r.Status != 400 {
		t.Fatalf("bad at_rev: %d", r.Status)
	}
}
