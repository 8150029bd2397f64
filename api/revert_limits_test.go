package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
)

// revert_commits of more commands than an actor's undo history keeps works
// over MCP's canvas_apply as over POST .../command; past its documented
// bounds, it and the session revert are 422 problems naming the bound.
func TestRevertCommitsLimits(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testRevertCommitsLimits(t, newTestEnv(t, withAgentQueue)) })
	t.Run("postgres", func(t *testing.T) {
		url, schema := pgTestSchema(t)
		testRevertCommitsLimits(t, newPGTestEnv(t, url, schema, withAgentQueue))
	})
}

func testRevertCommitsLimits(t *testing.T, e *testEnv) {
	ctx := context.Background()
	cid := e.canvas("rl")
	var revs []int64
	for i := 0; i < 120; i++ {
		m := e.must(200, "POST", "/canvas_commands/"+cid+"/command", testAdmin, env("create_node", int64(i), map[string]any{"name": fmt.Sprint(i)}))
		revs = append(revs, int64(m["current_rev"].(float64)))
	}
	cs := mcpSession(t, e, testAdmin)
	out, isErr, text := callTool(t, cs, "canvas_apply", map[string]any{"canvas_id": cid, "type": "revert_commits", "args": map[string]any{"revs": revs}})
	if isErr || out["status"] != "applied" {
		t.Fatalf("canvas_apply revert_commits of %d commits: %v %s", len(revs), out, text)
	}
	if n := len(e.snapshot(cid)["state"].(map[string]any)["nodes"].([]any)); n != 0 {
		t.Fatalf("after the revert: %d nodes", n)
	}

	problem := func(what string, r response, field, about string) {
		t.Helper()
		var p map[string]any
		_ = json.Unmarshal(r.Body, &p)
		if r.Status != http.StatusUnprocessableEntity || r.Header.Get("Content-Type") != "application/problem+json" ||
			p["field"] != field || !strings.Contains(fmt.Sprint(p["detail"]), about) {
			t.Fatalf("%s: %d %s, want a 422 problem on %s saying %q", what, r.Status, r.Body, field, about)
		}
	}
	head := int64(121)
	many := make([]int64, reducer.MaxRevertRevs+1)
	for i := range many {
		many[i] = int64(i + 1)
	}
	problem("too many revisions", e.command(cid, testAdmin, env("revert_commits", head, map[string]any{"revs": many})),
		"args.revs", fmt.Sprintf("at most %d", reducer.MaxRevertRevs))
	problem("too wide a span", e.command(cid, testAdmin, env("revert_commits", head, map[string]any{"revs": []int64{1, reducer.MaxRevertSpan + 1}})),
		"args.revs", fmt.Sprintf("at most %d", reducer.MaxRevertSpan))
	half := map[string]any{"type": "revert_commits", "args": map[string]any{"revs": []int64{1, reducer.MaxRevertSpan / 2}}}
	problem("a batch whose reverts span too much together",
		e.do("POST", "/canvas_commands/"+cid+"/commands", testAdmin, map[string]any{"base_rev": head, "commands": []any{half, half, half}}),
		"commands[2].args.revs", fmt.Sprintf("at most %d", reducer.MaxRevertSpan))

	as := e.st.(agent.SessionStore)
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := as.CreateAgentSession(ctx, canvas.AgentSession{ID: "as_rl", CanvasID: cid, ActorID: "agent", State: canvas.AgentDone,
		Model: "debug/fake", Message: "much", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for n, turnRevs := range [][]int64{many, {1, reducer.MaxRevertSpan + 1}} {
		if err := as.SaveAgentTurn(ctx, "as_rl", canvas.AgentTurn{Turn: n + 1, Kind: "initial", Revs: turnRevs, StartedAt: now, EndedAt: &now}); err != nil {
			t.Fatal(err)
		}
	}
	path := "/api/canvas-agent/sessions/as_rl/revert"
	problem("a turn of too many commands", e.do("POST", path, testAdmin, map[string]any{"turn": 1}), "turn", fmt.Sprintf("at most %d", reducer.MaxRevertRevs))
	problem("a turn over too wide a span", e.do("POST", path, testAdmin, map[string]any{"turn": 2}), "turn", fmt.Sprintf("at most %d", reducer.MaxRevertSpan))
	if h := e.snapshot(cid)["head_rev"]; h != float64(head) {
		t.Fatalf("refused reverts moved the head to %v", h)
	}
}
