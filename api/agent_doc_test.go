package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

const jsDoc = "async function load(url) {\n  const res = await fetch(url)\n  return res.json()\n}\n"

// newDoc creates a doc node with text on canvas cid.
func (e *agentEnv) newDoc(cid, nodeID, text string) {
	e.t.Helper()
	snap := e.snapshot(cid)
	args, _ := json.Marshal(map[string]any{"id": nodeID, "name": "load.js", "type": "doc", "props": map[string]any{"text": text, "language": "javascript"}})
	if _, err := e.human.Command(context.Background(), cid, canvas.Envelope{Type: "create_node", BaseRev: &snap.HeadRev, Args: args}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *agentEnv) docText(cid, nodeID string) string {
	e.t.Helper()
	for _, n := range e.snapshot(cid).State.Nodes {
		if n.ID == nodeID {
			text, _ := canvas.PropText(n.Props["text"])
			return text
		}
	}
	e.t.Fatalf("no node %s", nodeID)
	return ""
}

// editRequest posts an edit request as the human and decodes the answer.
func (e *agentEnv) editRequest(body map[string]any) (agentEditResult, int, string) {
	e.t.Helper()
	tok, err := e.admin.CreateToken(context.Background(), canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorHuman})
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/canvas-agent/edit-request", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: specTransport{t: e.t, spec: e.spec}}).Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out agentEditResult
	_ = json.Unmarshal(raw, &out)
	return out, resp.StatusCode, string(raw)
}

// A delegated document edit with debug/fake, over HTTP: exactly the named
// line changes, and the answer carries the diff and the revision.
func TestAgentEditRequestDocumentFake(t *testing.T) {
	e := newAgentEnv(t, nil, nil)
	e.newCanvas("de")
	e.newDoc("de", "doc1", jsDoc)
	res, status, raw := e.editRequest(map[string]any{"canvas_id": "de", "node_id": "doc1",
		"instruction": "replace line 2 with:   const res = await fetch(url, { cache: \"no-store\" })", "context": "the user sees stale data"})
	if status != 200 || res.State != client.AgentDone || len(res.Revs) != 1 || res.SessionID == "" {
		t.Fatalf("edit request: %d %s", status, raw)
	}
	want := strings.Replace(jsDoc, "  const res = await fetch(url)\n", "  const res = await fetch(url, { cache: \"no-store\" })\n", 1)
	if got := e.docText("de", "doc1"); got != want {
		t.Fatalf("document after the edit:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(res.Diff, "-  const res = await fetch(url)\n") || !strings.Contains(res.Diff, "+  const res = await fetch(url, { cache: \"no-store\" })\n") ||
		strings.Count(res.Diff, "\n-") != 1 || strings.Count(res.Diff, "\n+") != 2 { // the +++ header and the one added line
		t.Fatalf("diff:\n%s", res.Diff)
	}
	if !strings.Contains(res.Summary, "Editing the document") {
		t.Errorf("summary %q", res.Summary)
	}
	sess, err := e.human.AgentSession(context.Background(), res.SessionID)
	if err != nil || sess.Stats.Turns != 1 || len(sess.Turns) != 1 || sess.Turns[0].Revs[0] != res.Revs[0] {
		t.Fatalf("session %+v %v: one turn (no low-action follow-up on a document)", sess.Stats, err)
	}

	for _, bad := range []map[string]any{
		{"canvas_id": "de", "instruction": " "},
		{"canvas_id": "de", "node_id": "doc1", "instruction": "x", "timeout_ms": 900000},
		{"canvas_id": "de", "instruction": "x", "timeout_ms": 18446744073710}, // overflows a Duration in ns
		{"canvas_id": "de", "instruction": "x", "timeout_ms": math.MaxInt64},
		{"canvas_id": "de", "node_id": "nope", "instruction": "x"},
		{"canvas_id": "nope", "instruction": "x"},
	} {
		if _, status, raw := e.editRequest(bad); status < 400 || status >= 500 || !strings.Contains(raw, `"detail"`) {
			t.Errorf("%v: %d %s", bad, status, raw)
		}
	}
}

// The same over MCP with an OpenAI-compatible streaming model: the model
// gets the document prompt (principles, numbered lines, document verbs), and
// its multi-line, indented edit changes exactly the lines it names.
func TestAgentEditRequestDocumentMCP(t *testing.T) {
	edit := `{"name":"replace_lines","params":{"node_id":"doc1","start_line":2,"end_line":3,"new_content":` +
		`"  try {\n    const res = await fetch(url)\n    return res.json()\n  } catch (err) {\n    console.error(\"load failed\", err)\n    throw err\n  }\n","reason":"handle network errors"}}`
	model := newFakeOpenAI(t, scriptedReply{chunks: chunked(actionsJSON(
		`{"name":"think","params":{"text":"Wrapping the fetch in try/catch."}}`, edit), 13)})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test" })
	e.newCanvas("dm")
	e.newDoc("dm", "doc1", jsDoc)
	e.newDoc("dm", "other", "untouched\n")
	tok, err := e.admin.CreateToken(context.Background(), canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mc := mcp.NewClient(&mcp.Implementation{Name: "primary-agent", Version: "1"}, nil)
	cs, err := mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{tok.Token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "canvas_agent_edit_request", Arguments: map[string]any{
		"canvas_id": "dm", "node_id": "doc1", "instruction": "Add error handling to the fetch call on line 2"}})
	if err != nil || res.IsError {
		t.Fatalf("tool call: %v %+v", err, res)
	}
	var out agentEditResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || out.State != client.AgentDone || len(out.Revs) != 1 || out.Summary != "Wrapping the fetch in try/catch." {
		t.Fatalf("result %s (%v)", b, err)
	}
	want := "async function load(url) {\n  try {\n    const res = await fetch(url)\n    return res.json()\n  } catch (err) {\n" +
		"    console.error(\"load failed\", err)\n    throw err\n  }\n}\n"
	if got := e.docText("dm", "doc1"); got != want {
		t.Fatalf("document:\n%s", got)
	}
	if e.docText("dm", "other") != "untouched\n" {
		t.Fatal("another document changed")
	}
	if !strings.Contains(out.Diff, "+  } catch (err) {\n") || !strings.Contains(out.Diff, "-  const res = await fetch(url)\n") {
		t.Fatalf("diff:\n%s", out.Diff)
	}
	reqs := model.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls", len(reqs))
	}
	var system string
	_ = json.Unmarshal(reqs[0].Messages[0].Content, &system)
	user, _ := reqs[0].last()
	for _, want := range []string{"Editing principles", "Make the smallest change", `"replace_lines"`, `"search_replace"`, `"save_snapshot"`} {
		if !strings.Contains(system, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	if strings.Contains(system, `"create_shape"`) {
		t.Error("the document prompt offers shape verbs")
	}
	for _, want := range []string{"node_id=doc1", "    2 |   const res = await fetch(url)", "Task: Add error handling"} {
		if !strings.Contains(user, want) {
			t.Errorf("user prompt lacks %q:\n%s", want, user)
		}
	}
}

// A 409 on the document re-plans like one on shapes: the re-plan sees the
// fresh numbered lines (with the person's edit) and its edit lands on the
// right line; the person's edit stands.
func TestAgentDocumentConflictReplans(t *testing.T) {
	gate := make(chan struct{})
	first := actionsJSON(`{"name":"replace_lines","params":{"node_id":"doc1","start_line":3,"end_line":3,"new_content":"  return await res.json()\n"}}`)
	second := actionsJSON(`{"name":"replace_lines","params":{"node_id":"doc1","start_line":4,"end_line":4,"new_content":"  return await res.json()\n"}}`)
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{first[:20], first[20:]}, gates: map[int]chan struct{}{1: gate}},
		scriptedReply{chunks: chunked(second, 11)})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test" })
	e.newCanvas("dc")
	e.newDoc("dc", "doc1", jsDoc)
	id := e.start(client.AgentRunRequest{RoomID: "dc", Message: "await the json", Selection: []string{"doc1"}})
	// While the model streams, a person adds a line at the top.
	model.waitRequests(t, 1)
	snap := e.snapshot("dc")
	if _, err := e.human.Command(context.Background(), "dc", canvas.Envelope{Type: "insert_lines", BaseRev: &snap.HeadRev,
		Args: []byte(`{"node_id":"doc1","insert_after_line":0,"content":"// loads JSON\n"}`)}); err != nil {
		t.Fatal(err)
	}
	close(gate)
	sess := e.wait(id)
	if sess.State != client.AgentDone || sess.Stats.Conflicts < 1 || sess.Stats.Replans != 1 {
		t.Fatalf("session %s %+v", sess.State, sess.Stats)
	}
	want := "// loads JSON\nasync function load(url) {\n  const res = await fetch(url)\n  return await res.json()\n}\n"
	if got := e.docText("dc", "doc1"); got != want {
		t.Fatalf("document:\n%s\nwant:\n%s", got, want)
	}
	reqs := model.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	p, _ := reqs[1].last()
	if !strings.Contains(p, "    1 | // loads JSON") || !strings.Contains(p, "someone else changed doc1") {
		t.Fatalf("re-plan prompt:\n%s", p)
	}
}

// A run request's document (the one open in the UI's panel, not in the
// selection) makes the run a document run: the model gets the document
// prompt with the document verbs and the person's selected lines, and its
// replace_lines changes the line; the session keeps what the run was on. A
// document that is not one, a missing one, or a selection without a
// document is refused.
func TestAgentRunOnTheOpenDocument(t *testing.T) {
	edit := `{"name":"replace_lines","params":{"node_id":"doc1","start_line":2,"end_line":2,"new_content":"  const res = await fetch(url, { cache: \"no-store\" })\n"}}`
	model := newFakeOpenAI(t, scriptedReply{chunks: chunked(actionsJSON(`{"name":"think","params":{"text":"Line 2, as asked."}}`, edit), 9)})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test" })
	e.newCanvas("od")
	e.newDoc("od", "doc1", jsDoc)
	snap := e.snapshot("od")
	args, _ := json.Marshal(map[string]any{"id": "box", "type": "geo", "x": 0, "y": 400, "w": 100, "h": 100, "props": map[string]any{"geo": "rectangle"}})
	if _, err := e.human.Command(context.Background(), "od", canvas.Envelope{Type: "create_shape", BaseRev: &snap.HeadRev, Args: args}); err != nil {
		t.Fatal(err)
	}
	sess := e.run(client.AgentRunRequest{RoomID: "od", Message: "replace line 2 with: the fetch without a cache",
		Selection: []string{"box"}, Document: "doc1", DocumentSelection: &canvas.LineSpan{StartLine: 2, EndLine: 2}})
	if sess.State != client.AgentDone || sess.Document != "doc1" || sess.DocumentSelection == nil || *sess.DocumentSelection != (canvas.LineSpan{StartLine: 2, EndLine: 2}) {
		t.Fatalf("session %s document %q %+v", sess.State, sess.Document, sess.DocumentSelection)
	}
	want := strings.Replace(jsDoc, "  const res = await fetch(url)\n", "  const res = await fetch(url, { cache: \"no-store\" })\n", 1)
	if got := e.docText("od", "doc1"); got != want {
		t.Fatalf("document:\n%s\nwant:\n%s", got, want)
	}
	reqs := model.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls", len(reqs))
	}
	var system string
	_ = json.Unmarshal(reqs[0].Messages[0].Content, &system)
	user, _ := reqs[0].last()
	for _, want := range []string{`"replace_lines"`, `"insert_lines"`, `"delete_lines"`, `"search_replace"`} {
		if !strings.Contains(system, want) {
			t.Errorf("system prompt lacks the document verb %s", want)
		}
	}
	if strings.Contains(system, `"create_shape"`) {
		t.Error("the document run was offered shape verbs")
	}
	for _, want := range []string{"node_id=doc1", "    2 |   const res = await fetch(url)", "The person has selected line 2 of it", "Task: replace line 2"} {
		if !strings.Contains(user, want) {
			t.Errorf("user prompt lacks %q:\n%s", want, user)
		}
	}

	for _, bad := range []struct {
		req    client.AgentRunRequest
		status int
	}{
		{client.AgentRunRequest{RoomID: "od", Message: "x", Document: "box"}, 422},
		{client.AgentRunRequest{RoomID: "od", Message: "x", Document: "nope"}, 404},
		{client.AgentRunRequest{RoomID: "od", Message: "x", DocumentSelection: &canvas.LineSpan{StartLine: 1, EndLine: 1}}, 400},
		{client.AgentRunRequest{RoomID: "od", Message: "x", Document: "doc1", DocumentSelection: &canvas.LineSpan{StartLine: 3, EndLine: 2}}, 400},
		{client.AgentRunRequest{RoomID: "od", Message: "x", Document: "doc1", DocumentSelection: &canvas.LineSpan{StartLine: 0, EndLine: 2}}, 400},
	} {
		_, err := e.human.RunAgent(context.Background(), bad.req)
		var pe *client.ProblemError
		if !errors.As(err, &pe) || pe.Status != bad.status {
			t.Errorf("%+v: %v, want %d", bad.req, err, bad.status)
		}
	}
}
