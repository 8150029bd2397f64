package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/canvasd/canvasd/canvas"
)

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpSession connects the SDK's own client to /mcp over HTTP with token.
func mcpSession(t *testing.T, e *testEnv, token string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "canvasd-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token, e.srv.Client().Transport}}}
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool and returns its structured output and whether it was a tool error.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
	}
	return out, res.IsError, text.String()
}

func TestMCPTools(t *testing.T) {
	e, cid, tok := docSetup(t)
	cs := mcpSession(t, e, tok)
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		if strings.HasPrefix(tl.Name, "canvas_") { // the host's are TestMCPHostToolsInChromium's
			names = append(names, tl.Name)
		}
		if tl.InputSchema == nil {
			t.Errorf("%s has no input schema", tl.Name)
		}
		if tl.Name == "canvas_get_content" && (tl.Annotations == nil || !tl.Annotations.ReadOnlyHint) {
			t.Errorf("canvas_get_content is not read-only: %+v", tl.Annotations)
		}
		if tl.Name == "canvas_delete_lines" && (tl.Annotations == nil || tl.Annotations.DestructiveHint == nil || !*tl.Annotations.DestructiveHint) {
			t.Errorf("canvas_delete_lines is not destructive: %+v", tl.Annotations)
		}
	}
	sort.Strings(names)
	want := []string{"canvas_agent_edit_request", "canvas_apply", "canvas_delete_lines", "canvas_export", "canvas_get_content", "canvas_get_diff",
		"canvas_get_selection_context", "canvas_get_state", "canvas_import", "canvas_insert_lines", "canvas_redo", "canvas_replace_lines",
		"canvas_revert_to_snapshot", "canvas_save_snapshot", "canvas_search_replace", "canvas_undo"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("tools = %v", names)
	}

	out, isErr, text := callTool(t, cs, "canvas_get_content", map[string]any{"canvas_id": cid, "node_id": "doc1", "start_line": 1, "end_line": 2})
	if isErr || out["line_count"].(float64) != 5 || len(out["numbered_lines"].([]any)) != 2 {
		t.Fatalf("get_content: %v %s", out, text)
	}
	snap, isErr, text := callTool(t, cs, "canvas_save_snapshot", map[string]any{"canvas_id": cid, "node_id": "doc1", "label": "before"})
	if isErr || snap["snapshot_id"] == "" || snap["line_count"].(float64) != 5 {
		t.Fatalf("save_snapshot: %v %s", snap, text)
	}
	out, isErr, text = callTool(t, cs, "canvas_replace_lines", map[string]any{"canvas_id": cid, "node_id": "doc1", "start_line": 1, "end_line": 2, "new_content": "import re", "reason": "tidy"})
	if isErr || out["lines_affected"].(float64) != 2 || out["new_line_count"].(float64) != 4 || out["success"] != true {
		t.Fatalf("replace_lines: %v %s", out, text)
	}
	out, isErr, text = callTool(t, cs, "canvas_insert_lines", map[string]any{"canvas_id": cid, "node_id": "doc1", "insert_after_line": 0, "content": "#!/usr/bin/env python"})
	if isErr || out["lines_inserted"].(float64) != 1 {
		t.Fatalf("insert_lines: %v %s", out, text)
	}
	out, isErr, text = callTool(t, cs, "canvas_search_replace", map[string]any{"canvas_id": cid, "node_id": "doc1", "search_pattern": "HI", "replace_with": "bye", "case_sensitive": false})
	if isErr || out["replacements_made"].(float64) != 1 {
		t.Fatalf("search_replace: %v %s", out, text)
	}
	out, isErr, text = callTool(t, cs, "canvas_get_diff", map[string]any{"canvas_id": cid, "node_id": "doc1", "since": snap["snapshot_id"]})
	if isErr || out["has_changes"] != true || !strings.Contains(out["diff"].(string), "+import re") {
		t.Fatalf("get_diff: %v %s", out, text)
	}
	out, isErr, text = callTool(t, cs, "canvas_undo", map[string]any{"canvas_id": cid})
	if isErr || out["undone_action"].(map[string]any)["type"] != "search_replace" || out["can_redo"] != true {
		t.Fatalf("undo: %v %s", out, text)
	}
	out, isErr, text = callTool(t, cs, "canvas_redo", map[string]any{"canvas_id": cid})
	if isErr || out["redone_action"].(map[string]any)["type"] != "search_replace" {
		t.Fatalf("redo: %v %s", out, text)
	}
	out, isErr, text = callTool(t, cs, "canvas_get_selection_context", map[string]any{"canvas_id": cid, "node_id": "doc1", "start_line": 3, "end_line": 3})
	if isErr || !strings.HasPrefix(out["formatted_for_chat"].(string), "[Selected from lines 3-3]:\n```python\n") {
		t.Fatalf("selection: %v %s", out, text)
	}
	out, isErr, text = callTool(t, cs, "canvas_get_state", map[string]any{"canvas_id": cid})
	if isErr || len(out["state"].(map[string]any)["nodes"].([]any)) != 1 {
		t.Fatalf("get_state: %v %s", out, text)
	}
	out, isErr, text = callTool(t, cs, "canvas_apply", map[string]any{"canvas_id": cid, "type": "create_node", "args": map[string]any{"id": "n1", "name": "idea",
		"props": map[string]any{"meta": map[string]any{"big": json.Number("1795461385736852721"), "f": json.Number("0.1000000000000000055511151231257827")}}}})
	if isErr || out["status"] != "applied" || out["created_ids"].([]any)[0] != "n1" {
		t.Fatalf("apply: %v %s", out, text)
	}
	// Numbers in props come back as they were sent, as over POST .../command.
	if st := e.do("GET", "/canvas_commands/snapshot/"+cid, tok, nil); !strings.Contains(string(st.Body), `"big":1795461385736852721`) ||
		!strings.Contains(string(st.Body), `"f":0.1000000000000000055511151231257827`) {
		t.Errorf("canvas_apply changed the numbers in props: %s", st.Body)
	}
	// Failures are tool errors carrying the problem detail.
	_, isErr, text = callTool(t, cs, "canvas_delete_lines", map[string]any{"canvas_id": cid, "node_id": "doc1", "start_line": 3, "end_line": 99})
	if !isErr || !strings.Contains(text, "args.end_line") || !strings.Contains(text, "the document has 5 lines") {
		t.Fatalf("out of range: %v %s", isErr, text)
	}
	_, isErr, text = callTool(t, cs, "canvas_get_content", map[string]any{"canvas_id": cid, "node_id": "missing"})
	if !isErr || !strings.Contains(text, "404") {
		t.Fatalf("missing node: %v %s", isErr, text)
	}
	_, isErr, text = callTool(t, cs, "canvas_agent_edit_request", map[string]any{"canvas_id": cid, "instruction": "add a docstring"})
	if !isErr || !strings.Contains(text, "no agent runner is configured") {
		t.Fatalf("agent edit request: %v %s", isErr, text)
	}
	// A viewer may read but not write, and a token scoped to another canvas may do neither.
	viewer, _ := e.token(canvas.RoleViewer, canvas.ActorAgent)
	vs := mcpSession(t, e, viewer)
	if _, isErr, text = callTool(t, vs, "canvas_get_content", map[string]any{"canvas_id": cid, "node_id": "doc1"}); isErr {
		t.Fatalf("viewer read: %s", text)
	}
	if _, isErr, text = callTool(t, vs, "canvas_undo", map[string]any{"canvas_id": cid}); !isErr || !strings.Contains(text, "editor") {
		t.Fatalf("viewer undo: %v %s", isErr, text)
	}
	other, _ := e.token(canvas.RoleEditor, canvas.ActorHuman, "elsewhere")
	scoped := mcpSession(t, e, other)
	if _, isErr, text = callTool(t, scoped, "canvas_get_content", map[string]any{"canvas_id": cid, "node_id": "doc1"}); !isErr || !strings.Contains(text, "Forbidden") {
		t.Fatalf("scoped token read: %v %s", isErr, text)
	}
}

// TestMCPRequestLogsNothingAtInfo: the SDK reports a session connecting and
// ending on every stateless request; at the default level that is noise.
func TestMCPRequestLogsNothingAtInfo(t *testing.T) {
	logs := &logBuffer{}
	e := newTestEnv(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	e.canvas("c")
	if _, isErr, text := callTool(t, mcpSession(t, e, testAdmin), "canvas_get_state", map[string]any{"canvas_id": "c"}); isErr {
		t.Fatalf("canvas_get_state: %s", text)
	}
	if strings.Contains(logs.String(), "session") {
		t.Fatalf("an MCP request logged at info:\n%s", logs.String())
	}
}

func TestMCPRequiresAuth(t *testing.T) {
	e := newTestEnv(t)
	req, _ := http.NewRequest("POST", e.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d without a token", resp.StatusCode)
	}
}

// TestMCPSaveSnapshotUnknownNode: canvas_save_snapshot with a node_id that
// names no document is a tool error and creates no snapshot (it used to
// create one and answer success, dropping the node_id).
func TestMCPSaveSnapshotUnknownNode(t *testing.T) {
	e, cid, tok := docSetup(t)
	cs := mcpSession(t, e, tok)
	_, isErr, text := callTool(t, cs, "canvas_save_snapshot", map[string]any{"canvas_id": cid, "node_id": "nope", "label": "ghost"})
	if !isErr || !strings.Contains(text, "404") || !strings.Contains(text, `"nope"`) {
		t.Fatalf("save_snapshot of an unknown node: isError %v, %s", isErr, text)
	}
	if list := e.must(200, "GET", "/api/canvases/"+cid+"/snapshots", tok, nil)["snapshots"].([]any); len(list) != 0 {
		t.Fatalf("the refused save_snapshot created %d snapshots: %v", len(list), list)
	}
	// With a document's id it is saved, with the document's line count.
	snap, isErr, text := callTool(t, cs, "canvas_save_snapshot", map[string]any{"canvas_id": cid, "node_id": "doc1", "label": "ok"})
	if isErr || snap["line_count"].(float64) != 5 {
		t.Fatalf("save_snapshot: %v %s", snap, text)
	}
	if list := e.must(200, "GET", "/api/canvases/"+cid+"/snapshots", tok, nil)["snapshots"].([]any); len(list) != 1 {
		t.Fatalf("%d snapshots, want 1", len(list))
	}
}

// TestMCPGetStateNegativeRev: canvas_get_state refuses a negative at_rev as
// GET /canvas_commands/snapshot does (400, field at_rev) instead of
// answering with the head state.
func TestMCPGetStateNegativeRev(t *testing.T) {
	e, cid, tok := docSetup(t)
	cs := mcpSession(t, e, tok)
	for _, rev := range []int{-1, -5} {
		out, isErr, text := callTool(t, cs, "canvas_get_state", map[string]any{"canvas_id": cid, "at_rev": rev})
		if !isErr || !strings.Contains(text, "400") || !strings.Contains(text, "at_rev") || !strings.Contains(text, "≥ 0") {
			t.Fatalf("at_rev %d: isError %v, %v %s", rev, isErr, out, text)
		}
	}
	out, isErr, text := callTool(t, cs, "canvas_get_state", map[string]any{"canvas_id": cid, "at_rev": 0})
	if isErr || out["head_rev"].(float64) != 0 || len(out["state"].(map[string]any)["nodes"].([]any)) != 0 {
		t.Fatalf("at_rev 0: %v %s", out, text)
	}
}

// TestMCPIdempotentRetry: a write tool called again with the same
// idempotency_key and no base_rev, after the head moved (its own commit),
// returns the first answer and writes nothing; the same key with other
// arguments is refused.
func TestMCPIdempotentRetry(t *testing.T) {
	e, cid, tok := docSetup(t)
	cs := mcpSession(t, e, tok)
	args := map[string]any{"canvas_id": cid, "node_id": "doc1", "insert_after_line": 0, "content": "# x", "idempotency_key": "k1"}
	first, isErr, text := callTool(t, cs, "canvas_insert_lines", args)
	if isErr || first["cmd_id"] == nil {
		t.Fatalf("first call: %s", text)
	}
	head := headRev(t, e, cid)
	again, isErr, text := callTool(t, cs, "canvas_insert_lines", args)
	if isErr || again["cmd_id"] != first["cmd_id"] || headRev(t, e, cid) != head {
		t.Fatalf("the retry: %v %s (cmd %v, first %v), head %d → %d", isErr, text, again["cmd_id"], first["cmd_id"], head, headRev(t, e, cid))
	}
	args["content"] = "# other"
	if _, isErr, text := callTool(t, cs, "canvas_insert_lines", args); !isErr || !strings.Contains(text, "already used") {
		t.Fatalf("the same key for another command: %v %s", isErr, text)
	}
}
