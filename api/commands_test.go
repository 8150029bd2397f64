package api

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

func TestQuickStartFlow(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_quick")
	tok, actor := e.token(canvas.RoleEditor, canvas.ActorAgent)

	r := e.command(id, tok, map[string]any{"id": "cmd_1", "type": "create_node", "base_rev": 0, "idempotency_key": "k1",
		"args": map[string]any{"name": "New Idea", "transform": map[string]any{"x": 100, "y": 100}}})
	if r.Status != 200 {
		t.Fatalf("create_node: %d %s", r.Status, r.Body)
	}
	res := r.json(t)
	if res["status"] != "applied" || res["current_rev"] != 1.0 || res["cmd_id"] != "cmd_1" {
		t.Fatalf("unexpected result %v", res)
	}
	nodeID := res["created_ids"].([]any)[0].(string)

	snap := e.snapshot(id)
	if snap["head_rev"] != 1.0 || snap["head_event_id"] != res["event_id"] {
		t.Fatalf("snapshot head %v / %v, want 1 / %v", snap["head_rev"], snap["head_event_id"], res["event_id"])
	}
	nodes := snap["state"].(map[string]any)["nodes"].([]any)
	n := nodes[0].(map[string]any)
	if len(nodes) != 1 || n["id"] != nodeID || n["name"] != "New Idea" || n["x"] != 100.0 || n["created_by"] != actor || n["created_rev"] != 1.0 {
		t.Fatalf("unexpected nodes %v", nodes)
	}

	ev := e.must(200, "GET", "/canvas_commands/"+id+"/events?after_rev=0", tok, nil)
	commits := ev["commits"].([]any)
	c := commits[0].(map[string]any)
	if len(commits) != 1 || c["actor_id"] != actor || c["actor_type"] != "agent" || c["type"] != "create_node" {
		t.Fatalf("unexpected commits %v", commits)
	}
	if ch := c["changes"].([]any)[0].(map[string]any); ch["op"] != "put" || ch["kind"] != "node" || ch["id"] != nodeID {
		t.Fatalf("unexpected change %v", ch)
	}
}

func TestConflictsAndRebase(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_conflict")
	mk := func(nid string, base int64) {
		if r := e.command(id, testAdmin, env("create_node", base, map[string]any{"id": nid, "name": nid})); r.Status != 200 {
			t.Fatalf("create %s: %d %s", nid, r.Status, r.Body)
		}
	}
	mk("a", 0)
	mk("b", 1)
	// rev 3 moves a
	if r := e.command(id, testAdmin, env("update_node", 2, map[string]any{"id": "a", "transform": map[string]any{"x": 5}})); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// A stale command on b (untouched since rev 2) rebases.
	r := e.command(id, testAdmin, env("update_node", 2, map[string]any{"id": "b", "name": "B"}))
	if r.Status != 200 || r.json(t)["rebased"] != true {
		t.Fatalf("disjoint stale command should rebase: %d %s", r.Status, r.Body)
	}
	// A stale command on a conflicts, with the commit that moved it.
	r = e.command(id, testAdmin, env("update_node", 2, map[string]any{"id": "a", "name": "A"}))
	if r.Status != 409 {
		t.Fatalf("want 409, got %d %s", r.Status, r.Body)
	}
	c := r.json(t)
	ops := c["recovery_ops"].([]any)
	if c["status"] != "conflict" || c["current_rev"] != 4.0 || c["base_rev"] != 2.0 ||
		fmt.Sprint(c["conflicting_ids"]) != "[a]" || len(ops) != 1 || ops[0].(map[string]any)["rev"] != 3.0 || c["suggestion"] == "" {
		t.Fatalf("unexpected conflict body %s", r.Body)
	}
	// strict makes any stale base a conflict.
	strict := env("update_node", 3, map[string]any{"id": "b", "name": "BB"})
	strict["strict"] = true
	if r := e.command(id, testAdmin, strict); r.Status != 409 {
		t.Fatalf("strict stale: want 409, got %d %s", r.Status, r.Body)
	}
	// base_rev ahead of head.
	if r := e.command(id, testAdmin, env("update_node", 99, map[string]any{"id": "b", "name": "x"})); r.Status != 409 {
		t.Fatalf("ahead: want 409, got %d %s", r.Status, r.Body)
	}
	// Deleting a node after base_rev makes a stale update on it a conflict, not a 422.
	if r := e.command(id, testAdmin, env("delete_node", 4, map[string]any{"id": "b"})); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := e.command(id, testAdmin, env("update_node", 4, map[string]any{"id": "b", "name": "gone"})); r.Status != 409 {
		t.Fatalf("update of a node deleted after base_rev: want 409, got %d %s", r.Status, r.Body)
	}
	// Rejected commands wrote nothing.
	if snap := e.snapshot(id); snap["head_rev"] != 5.0 {
		t.Fatalf("head moved by rejected commands: %v", snap["head_rev"])
	}
}

func TestRejectedCommandsWriteNothing(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_reject")
	cases := []struct {
		name   string
		body   any
		status int
		field  string
	}{
		{"not json", "{", 400, "body"},
		{"missing base_rev", map[string]any{"type": "create_node", "args": map[string]any{}}, 400, "base_rev"},
		{"missing type", map[string]any{"base_rev": 0}, 400, "type"},
		{"unknown envelope field", map[string]any{"type": "create_node", "base_rev": 0, "bogus": 1}, 400, "body"},
		{"args not object", map[string]any{"type": "create_node", "base_rev": 0, "args": []int{1}}, 400, "args"},
		{"unknown type", env("explode", 0, nil), 422, "type"},
		{"unknown node", env("update_node", 0, map[string]any{"id": "nope", "name": "x"}), 422, "args.id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", "/canvas_commands/"+id+"/command", testAdmin, tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			p := r.json(t)
			if p["detail"] == "" || p["status"] != float64(tc.status) || p["type"] == "" {
				t.Fatalf("not a useful problem document: %s", r.Body)
			}
			if f, _ := p["field"].(string); f != tc.field {
				t.Fatalf("field %q, want %q (%s)", f, tc.field, r.Body)
			}
		})
	}
	if snap := e.snapshot(id); snap["head_rev"] != 0.0 {
		t.Fatalf("rejected commands moved the head to %v", snap["head_rev"])
	}
	if r := e.command("c_missing", testAdmin, env("create_node", 0, nil)); r.Status != 404 {
		t.Fatalf("unknown canvas: %d %s", r.Status, r.Body)
	}
}

func TestIdempotency(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_idem")
	cmd := map[string]any{"type": "create_node", "base_rev": 0, "idempotency_key": "same", "args": map[string]any{"name": "once"}}
	first := e.command(id, testAdmin, cmd)
	again := e.command(id, testAdmin, cmd)
	if first.Status != 200 || again.Status != 200 || string(first.Body) != string(again.Body) {
		t.Fatalf("replay differs: %d %s / %d %s", first.Status, first.Body, again.Status, again.Body)
	}
	if again.Header.Get("Idempotent-Replayed") != "true" || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("Idempotent-Replayed header wrong: first %q again %q", first.Header.Get("Idempotent-Replayed"), again.Header.Get("Idempotent-Replayed"))
	}
	other := map[string]any{"type": "create_node", "base_rev": 0, "idempotency_key": "same", "args": map[string]any{"name": "different"}}
	if r := e.command(id, testAdmin, other); r.Status != 422 {
		t.Fatalf("same key, other envelope: want 422, got %d %s", r.Status, r.Body)
	}

	// Concurrent duplicates produce exactly one commit.
	var wg sync.WaitGroup
	bodies := make([]string, 16)
	for i := range bodies {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := e.command(id, testAdmin, map[string]any{"type": "create_node", "base_rev": 1, "idempotency_key": "race", "args": map[string]any{"name": "r"}})
			if r.Status != 200 {
				t.Errorf("concurrent duplicate: %d %s", r.Status, r.Body)
			}
			bodies[i] = string(r.Body)
		}(i)
	}
	wg.Wait()
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Fatalf("concurrent duplicates got different answers: %s vs %s", b, bodies[0])
		}
	}
	if snap := e.snapshot(id); snap["head_rev"] != 2.0 {
		t.Fatalf("head %v, want 2 (one commit per key)", snap["head_rev"])
	}
}

func TestBatchAllOrNothing(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_batch")
	ok := e.must(200, "POST", "/canvas_commands/"+id+"/commands", testAdmin, map[string]any{"base_rev": 0, "commands": []any{
		map[string]any{"type": "create_node", "args": map[string]any{"id": "x", "name": "x"}},
		map[string]any{"type": "create_node", "args": map[string]any{"id": "y", "name": "y"}},
		map[string]any{"type": "create_edge", "args": map[string]any{"id": "xy", "from": "x", "to": "y"}},
	}})
	if ok["current_rev"] != 3.0 || len(ok["results"].([]any)) != 3 {
		t.Fatalf("batch result %v", ok)
	}
	r := e.do("POST", "/canvas_commands/"+id+"/commands", testAdmin, map[string]any{"base_rev": 3, "commands": []any{
		map[string]any{"type": "create_node", "args": map[string]any{"id": "z", "name": "z"}},
		map[string]any{"type": "update_node", "args": map[string]any{"id": "missing", "name": "m"}},
	}})
	if r.Status != 422 || r.json(t)["field"] != "commands[1].args.id" {
		t.Fatalf("failing batch: %d %s", r.Status, r.Body)
	}
	snap := e.snapshot(id)
	if snap["head_rev"] != 3.0 || len(snap["state"].(map[string]any)["nodes"].([]any)) != 2 {
		t.Fatalf("failed batch left traces: %v", snap)
	}
	// Deleting a node deletes its edges in the same commit.
	res := e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("delete_node", 3, map[string]any{"id": "x"}))
	ev := e.must(200, "GET", fmt.Sprintf("/canvas_commands/%s/events?after_rev=%v", id, 3), testAdmin, nil)
	changes := ev["commits"].([]any)[0].(map[string]any)["changes"].([]any)
	if res["current_rev"] != 4.0 || len(changes) != 2 {
		t.Fatalf("delete_node should delete node and edge in one commit: %v", changes)
	}
	if edges := e.snapshot(id)["state"].(map[string]any)["edges"].([]any); len(edges) != 0 {
		t.Fatalf("edge survived its node: %v", edges)
	}
}

func TestAuthAndRoles(t *testing.T) {
	e := newTestEnv(t)
	a := e.canvas("c_a")
	b := e.canvas("c_b")
	viewer, _ := e.token(canvas.RoleViewer, canvas.ActorHuman)
	scoped, _ := e.token(canvas.RoleEditor, canvas.ActorHuman, a)

	if r := e.do("GET", "/canvas_commands/snapshot/"+a, "", nil); r.Status != 401 || r.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no token: %d", r.Status)
	}
	if r := e.do("GET", "/canvas_commands/snapshot/"+a, "cvd_wrong", nil); r.Status != 401 {
		t.Fatalf("bad token: %d", r.Status)
	}
	if r := e.do("GET", "/canvas_commands/snapshot/"+a+"?access_token="+viewer, "", nil); r.Status != 401 {
		t.Fatalf("access_token query on a route that is not a stream: %d %s", r.Status, r.Body)
	}
	e.stream("/sse/canvas/"+a+"?access_token="+viewer, "", nil).next() // caught_up
	if r := e.command(a, viewer, env("create_node", 0, nil)); r.Status != 403 {
		t.Fatalf("viewer writing: %d %s", r.Status, r.Body)
	}
	if r := e.command(a, scoped, env("create_node", 0, nil)); r.Status != 200 {
		t.Fatalf("scoped editor on its canvas: %d %s", r.Status, r.Body)
	}
	if r := e.command(b, scoped, env("create_node", 0, nil)); r.Status != 403 {
		t.Fatalf("scoped editor elsewhere: %d %s", r.Status, r.Body)
	}
	list := e.must(200, "GET", "/api/canvases", scoped, nil)["canvases"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["canvas_id"] != a {
		t.Fatalf("scoped list: %v", list)
	}
	if r := e.do("POST", "/api/tokens", scoped, map[string]any{"role": "admin"}); r.Status != 403 {
		t.Fatalf("editor minting tokens: %d", r.Status)
	}
	// Revoking a token makes it useless at once.
	m := e.must(201, "POST", "/api/tokens", testAdmin, map[string]any{"role": "editor", "actor_type": "service", "actor_id": "svc-x"})
	e.must(204, "DELETE", "/api/tokens/svc-x", testAdmin, nil)
	if r := e.do("GET", "/api/canvases", m["token"].(string), nil); r.Status != 401 {
		t.Fatalf("revoked token: %d", r.Status)
	}
	if r := e.do("POST", "/api/tokens", testAdmin, map[string]any{"role": "editor", "actor_type": "agent", "actor_id": "bob"}); r.Status != 422 {
		t.Fatalf("agent id not agent-{uuid}: %d %s", r.Status, r.Body)
	}
	if r := e.do("POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": a}); r.Status != 409 {
		t.Fatalf("duplicate canvas: %d", r.Status)
	}
	if r := e.do("GET", "/healthz", "", nil); r.Status != http.StatusOK {
		t.Fatalf("healthz: %d", r.Status)
	}
}

func TestBodyLimit(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxCommandBytes = 1024 })
	id := e.canvas("c_limit")
	big := env("create_node", 0, map[string]any{"name": string(make([]byte, 4096))})
	r := e.command(id, testAdmin, big)
	if r.Status != 413 {
		t.Fatalf("want 413, got %d %s", r.Status, r.Body)
	}
	if p := r.json(t); !strings.Contains(p["detail"].(string), "1024") {
		t.Fatalf("413 detail should name the limit: %s", r.Body)
	}
}
