package api

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// docSetup makes a canvas with a CRLF doc node without a final newline.
func docSetup(t *testing.T) (e *testEnv, cid, tok string) {
	e = newTestEnv(t)
	cid = e.canvas("docs")
	tok, _ = e.token(canvas.RoleEditor, canvas.ActorHuman)
	r := e.command(cid, tok, env("create_node", 0, map[string]any{"id": "doc1", "name": "main.py", "type": "doc",
		"props": map[string]any{"text": "import os\r\nimport sys\r\n\r\ndef main():\r\n    print('hi')", "language": "python"}}))
	if r.Status != 200 {
		t.Fatalf("create doc: %d %s", r.Status, r.Body)
	}
	return e, cid, tok
}

func headRev(t *testing.T, e *testEnv, cid string) int64 {
	return int64(e.snapshot(cid)["head_rev"].(float64))
}

func docText(t *testing.T, e *testEnv, cid, tok string) string {
	t.Helper()
	m := e.must(200, "GET", "/api/canvases/"+cid+"/docs/doc1", tok, nil)
	return m["content"].(string)
}

func TestDocEditsOverHTTP(t *testing.T) {
	e, cid, tok := docSetup(t)
	r := e.command(cid, tok, env("replace_lines", headRev(t, e, cid), map[string]any{"node_id": "doc1", "start_line": 5, "end_line": 5,
		"new_content": "    print('hello')\n    return 0\n", "reason": "greet"}))
	if r.Status != 200 {
		t.Fatalf("replace_lines: %d %s", r.Status, r.Body)
	}
	res := r.json(t)["result"].(map[string]any)
	if res["lines_affected"].(float64) != 1 || res["new_line_count"].(float64) != 6 ||
		res["diff"].(map[string]any)["before"] != "    print('hi')" {
		t.Fatalf("result = %v", res)
	}
	want := "import os\r\nimport sys\r\n\r\ndef main():\r\n    print('hello')\r\n    return 0"
	if got := docText(t, e, cid, tok); got != want {
		t.Fatalf("text = %q, want %q (CRLF and no final newline kept)", got, want)
	}
	m := e.must(200, "GET", "/api/canvases/"+cid+"/docs/doc1?start_line=4&end_line=5", tok, nil)
	nl := m["numbered_lines"].([]any)
	if m["line_count"].(float64) != 6 || len(nl) != 2 || nl[1].(map[string]any)["content"] != "    print('hello')" || m["language"] != "python" {
		t.Fatalf("range = %v", m)
	}
	// Out of range: 422 naming the field and the valid range; nothing written.
	before := headRev(t, e, cid)
	r = e.command(cid, tok, env("delete_lines", before, map[string]any{"node_id": "doc1", "start_line": 2, "end_line": 9}))
	if r.Status != 422 || !strings.Contains(string(r.Body), "args.end_line") || !strings.Contains(string(r.Body), "between start_line (2) and 6") {
		t.Fatalf("out of range: %d %s", r.Status, r.Body)
	}
	r = e.command(cid, tok, env("search_replace", before, map[string]any{"node_id": "doc1", "search_pattern": "(", "replace_with": "x", "regex": true}))
	if r.Status != 422 || !strings.Contains(string(r.Body), "RE2") {
		t.Fatalf("bad regex: %d %s", r.Status, r.Body)
	}
	if headRev(t, e, cid) != before {
		t.Fatal("a rejected command wrote")
	}
	e.must(422, "GET", "/api/canvases/"+cid+"/docs/doc1?start_line=7", tok, nil)
	e.must(404, "GET", "/api/canvases/"+cid+"/docs/nope", tok, nil)
}

func TestDocSnapshotsDiffsUndo(t *testing.T) {
	e, cid, tok := docSetup(t)
	snap := e.must(201, "POST", "/api/canvases/"+cid+"/snapshots", tok, map[string]any{"label": "v1", "description": "first"})
	sid := snap["snapshot_id"].(string)
	if snap["rev"].(float64) != 1 || snap["label"] != "v1" {
		t.Fatalf("snapshot = %v", snap)
	}
	list := e.must(200, "GET", "/api/canvases/"+cid+"/snapshots", tok, nil)["snapshots"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["snapshot_id"] != sid {
		t.Fatalf("snapshots = %v", list)
	}
	r := e.command(cid, tok, env("search_replace", 1, map[string]any{"node_id": "doc1", "search_pattern": `import (\w+)`, "replace_with": "from $1 import *", "regex": true}))
	if r.Status != 200 {
		t.Fatalf("search_replace: %d %s", r.Status, r.Body)
	}
	if res := r.json(t)["result"].(map[string]any); res["replacements_made"].(float64) != 2 || fmt.Sprint(res["affected_lines"]) != "[1 2]" {
		t.Fatalf("search_replace result = %v", res)
	}
	// Diff since the snapshot (by id, by revision, and by default the latest
	// snapshot). The document is CRLF: the unified diff keeps each line's CR
	// (it reproduces the text), changes hold the lines' contents.
	const crlfHunk = "-import os\r\n-import sys\r\n+from os import *\r\n+from sys import *\r\n \r\n"
	for _, since := range []string{sid, "1", ""} {
		d := e.must(200, "GET", "/api/canvases/"+cid+"/docs/doc1/diff?since="+url.QueryEscape(since), tok, nil)
		ch := d["changes"].([]any)
		if d["has_changes"] != true || len(ch) != 2 || ch[0].(map[string]any)["type"] != "modify" ||
			ch[0].(map[string]any)["after"] != "from os import *" || !strings.Contains(d["diff"].(string), crlfHunk) {
			t.Fatalf("diff since %q = %v", since, d)
		}
	}
	if out, isErr, text := callTool(t, mcpSession(t, e, tok), "canvas_get_diff", map[string]any{"canvas_id": cid, "node_id": "doc1", "since": sid}); isErr ||
		!strings.Contains(out["diff"].(string), crlfHunk) {
		t.Fatalf("MCP diff = %v %s", out, text)
	}
	split := e.must(200, "GET", "/api/canvases/"+cid+"/docs/doc1/diff?since="+sid+"&format=split", tok, nil)
	if !strings.Contains(split["diff"].(string), "import os") || !strings.Contains(split["diff"].(string), "~") {
		t.Fatalf("split diff = %v", split["diff"])
	}
	e.must(400, "GET", "/api/canvases/"+cid+"/docs/doc1/diff?format=side", tok, nil)
	e.must(404, "GET", "/api/canvases/"+cid+"/docs/doc1/diff?since=snap_nope", tok, nil)
	// Selection context.
	sel := e.must(200, "GET", "/api/canvases/"+cid+"/docs/doc1/selection?start_line=4&end_line=5", tok, nil)
	if sel["formatted_for_chat"] != "[Selected from lines 4-5]:\n```python\ndef main():\n    print('hi')\n```\n\nUser question: " ||
		sel["context"].(map[string]any)["before"] != "from os import *\nfrom sys import *\n" {
		t.Fatalf("selection = %v", sel)
	}
	e.must(422, "GET", "/api/canvases/"+cid+"/docs/doc1/selection?start_line=9&end_line=9", tok, nil)
	// Undo and redo, as commands of the same actor.
	r = e.command(cid, tok, env("undo", headRev(t, e, cid), map[string]any{}))
	if r.Status != 200 || r.json(t)["result"].(map[string]any)["undone_action"].(map[string]any)["type"] != "search_replace" {
		t.Fatalf("undo: %d %s", r.Status, r.Body)
	}
	if got := docText(t, e, cid, tok); !strings.HasPrefix(got, "import os\r\nimport sys") {
		t.Fatalf("after undo: %q", got)
	}
	r = e.command(cid, tok, env("redo", headRev(t, e, cid), map[string]any{}))
	if r.Status != 200 || !strings.HasPrefix(docText(t, e, cid, tok), "from os import *\r\n") {
		t.Fatalf("redo: %d %s", r.Status, r.Body)
	}
	// Another actor cannot undo alice's edit, and alice's undo over bob's edit conflicts.
	bob, bobID := e.token(canvas.RoleEditor, canvas.ActorHuman)
	r = e.command(cid, bob, env("undo", headRev(t, e, cid), map[string]any{}))
	if r.Status != 422 || !strings.Contains(string(r.Body), "nothing to undo") {
		t.Fatalf("bob's undo: %d %s", r.Status, r.Body)
	}
	r = e.command(cid, bob, env("insert_lines", headRev(t, e, cid), map[string]any{"node_id": "doc1", "insert_after_line": 0, "content": "# bob"}))
	if r.Status != 200 {
		t.Fatalf("bob's insert: %d %s", r.Status, r.Body)
	}
	r = e.command(cid, tok, env("undo", headRev(t, e, cid), map[string]any{}))
	if r.Status != 409 || !strings.Contains(string(r.Body), `"conflicting_ids":["doc1"]`) {
		t.Fatalf("undo over bob's edit: %d %s", r.Status, r.Body)
	}
	ops := r.json(t)["recovery_ops"].([]any)
	if len(ops) == 0 {
		t.Fatal("undo over bob's edit: no recovery_ops")
	}
	if last := ops[len(ops)-1].(map[string]any); last["type"] != "insert_lines" || last["actor_id"] != bobID {
		t.Fatalf("recovery_ops = %v", ops)
	}
	// Revert to the snapshot: an appended command.
	r = e.command(cid, tok, env("revert_to_snapshot", headRev(t, e, cid), map[string]any{"snapshot_id": sid, "node_id": "doc1"}))
	if r.Status != 200 {
		t.Fatalf("revert: %d %s", r.Status, r.Body)
	}
	if got := docText(t, e, cid, tok); got != "import os\r\nimport sys\r\n\r\ndef main():\r\n    print('hi')" {
		t.Fatalf("after revert: %q", got)
	}
	if res := r.json(t)["result"].(map[string]any); res["reverted_to"].(map[string]any)["snapshot_id"] != sid || !strings.Contains(res["diff"].(string), "-# bob") {
		t.Fatalf("revert result = %v", res)
	}
	r = e.command(cid, tok, env("revert_to_snapshot", headRev(t, e, cid), map[string]any{"snapshot_id": "snap_nope"}))
	if r.Status != 422 || !strings.Contains(string(r.Body), "args.snapshot_id") {
		t.Fatalf("revert to an unknown snapshot: %d %s", r.Status, r.Body)
	}
}

// TestDocRouteEdges: the document routes and their MCP tools agree at the
// edges: a selection's end_line defaults to start_line in both, a bad diff
// format is a 400 in both, a new snapshot's timestamp is the one listed, an
// unknown or out-of-range since says so once (404, or 400 for a number no
// revision can be), and an insert of "" after an unterminated last line
// reports no line inserted (it only ends that line).
func TestDocRouteEdges(t *testing.T) {
	e, cid, tok := docSetup(t)
	cs := mcpSession(t, e, tok)
	if _, isErr, text := callTool(t, cs, "canvas_get_selection_context", map[string]any{"canvas_id": cid, "node_id": "doc1", "start_line": 4}); isErr {
		t.Errorf("MCP selection without end_line: %s", text)
	}
	e.must(400, "GET", "/api/canvases/"+cid+"/docs/doc1/diff?format=side", tok, nil)
	if _, isErr, text := callTool(t, cs, "canvas_get_diff", map[string]any{"canvas_id": cid, "node_id": "doc1", "format": "side"}); !isErr || !strings.Contains(text, "(400)") {
		t.Errorf("MCP diff with a bad format: %v %s", isErr, text)
	}
	for range 3 {
		s := e.must(201, "POST", "/api/canvases/"+cid+"/snapshots", tok, map[string]any{"label": "v"})
		list := e.must(200, "GET", "/api/canvases/"+cid+"/snapshots", tok, nil)["snapshots"].([]any)
		if l := list[len(list)-1].(map[string]any); l["snapshot_id"] != s["snapshot_id"] || l["timestamp"] != s["timestamp"] {
			t.Fatalf("created %v at %v, listed %v at %v", s["snapshot_id"], s["timestamp"], l["snapshot_id"], l["timestamp"])
		}
	}
	p := e.must(404, "GET", "/api/canvases/"+cid+"/docs/doc1/diff?since=snap_nope", tok, nil)
	if d := p["detail"].(string); strings.Count(d, "snap_nope") != 1 {
		t.Errorf("the 404 of an unknown since: %q", d)
	}
	e.must(400, "GET", "/api/canvases/"+cid+"/docs/doc1/diff?since=99999999999999999999", tok, nil)
	r := e.command(cid, tok, env("insert_lines", headRev(t, e, cid), map[string]any{"node_id": "doc1", "insert_after_line": 5, "content": ""}))
	if res := r.json(t)["result"].(map[string]any); res["lines_inserted"] != 0.0 || res["new_line_count"] != 5.0 {
		t.Errorf("insert of \"\" after the unterminated last line: %s", r.Body)
	}
	// A document's text stays a string: a write that would make it another type is refused.
	e.must(422, "POST", "/canvas_commands/"+cid+"/command", tok, env("update_node", headRev(t, e, cid), map[string]any{"id": "doc1", "props": map[string]any{"text": 42}}))
	e.must(200, "GET", "/api/canvases/"+cid+"/docs/doc1", tok, nil)
}
