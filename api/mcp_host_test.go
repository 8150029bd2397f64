package api

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// TestMCPHostToolsInChromium: every host operation is an MCP tool: files,
// show and navigate, eval and each DOM helper in the shown page, a snapshot
// as image content (a PNG of the page's pixels), A2UI push and reset, a
// page's own action, the link key; a viewer's token gets tool errors.
func TestMCPHostToolsInChromium(t *testing.T) {
	e := newHostTestEnv(t, host.Config{})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	viewer, _ := e.token(canvas.RoleViewer, canvas.ActorHuman)
	cs := mcpSession(t, e.testEnv, editor)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		if strings.HasPrefix(tl.Name, "host_") {
			names = append(names, tl.Name)
		}
	}
	sort.Strings(names)
	want := "host_a2ui_push,host_a2ui_reset,host_delete_file,host_dom_all,host_dom_attr,host_dom_click,host_dom_query,host_dom_type,host_dom_wait," +
		"host_eval,host_hide,host_invoke,host_link_key,host_list_files,host_navigate,host_show,host_snapshot,host_write_file"
	if strings.Join(names, ",") != want {
		t.Fatalf("host tools %v", names)
	}
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		out, isErr, text := callTool(t, cs, name, args)
		if isErr {
			t.Fatalf("%s %v: %s", name, args, text)
		}
		return out
	}
	page := strings.Replace(agentPage, "</body>", `<script>canvasd.onInvoke("sum", (p) => p.a + p.b)</script></body>`, 1)
	call("host_write_file", map[string]any{"session": "mcp", "path": "index.html", "content": page})
	call("host_write_file", map[string]any{"session": "mcp", "path": "img/dot.png", "base64": true,
		"content": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="})
	if files := call("host_list_files", map[string]any{"session": "mcp"})["files"].([]any); len(files) != 2 {
		t.Fatalf("files %v", files)
	}
	ctx := newChromium(t, e.srv.URL+"/host/mcp/?access_token="+editor)
	waitViewer(t, ctx)

	if got := call("host_eval", map[string]any{"session": "mcp", "js": "document.title"}); got["result"] != "agent page" {
		t.Fatalf("host_eval %v", got)
	}
	if q := call("host_dom_query", map[string]any{"session": "mcp", "selector": "#out"}); q["text"] != "waiting" {
		t.Fatalf("host_dom_query %v", q)
	}
	if a := call("host_dom_all", map[string]any{"session": "mcp", "selector": "li", "limit": 2}); a["count"] != float64(3) || len(a["elements"].([]any)) != 2 {
		t.Fatalf("host_dom_all %v", a)
	}
	if a := call("host_dom_attr", map[string]any{"session": "mcp", "selector": "#out", "name": "data-kind"}); a["value"] != "result" {
		t.Fatalf("host_dom_attr %v", a)
	}
	call("host_dom_type", map[string]any{"session": "mcp", "selector": "#name", "text": "Grace", "clear": true})
	call("host_dom_click", map[string]any{"session": "mcp", "selector": "#go"})
	if w := call("host_dom_wait", map[string]any{"session": "mcp", "selector": "#later", "wait_ms": 5000}); w["found"] != true {
		t.Fatalf("host_dom_wait %v", w)
	}
	if q := call("host_dom_query", map[string]any{"session": "mcp", "selector": "#out"}); q["text"] != "clicked Grace" {
		t.Fatalf("after typing and clicking: %v", q)
	}
	if r := call("host_invoke", map[string]any{"session": "mcp", "action": "sum", "payload": map[string]any{"a": 2, "b": 40}}); r["result"] != float64(42) {
		t.Fatalf("host_invoke %v", r)
	}
	// The snapshot is image content: a PNG of the page.
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(sctx, &mcp.CallToolParams{Name: "host_snapshot", Arguments: map[string]any{"session": "mcp", "max_w": 640}})
	if err != nil || res.IsError || len(res.Content) != 2 {
		t.Fatalf("host_snapshot: %v %+v", err, res)
	}
	im, ok := res.Content[0].(*mcp.ImageContent)
	if !ok || im.MIMEType != "image/png" {
		t.Fatalf("host_snapshot content %T %+v", res.Content[0], res.Content[0])
	}
	img, err := png.Decode(bytes.NewReader(im.Data))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 640 {
		t.Errorf("snapshot width %d", img.Bounds().Dx())
	}
	wantColor(t, img, 40, 20, color.RGBA{0, 128, 255, 255})

	// present and A2UI.
	if r := call("host_navigate", map[string]any{"session": "mcp", "path": "img/dot.png"}); r["browsers"] != float64(1) {
		t.Fatalf("host_navigate %v", r)
	}
	call("host_show", map[string]any{"session": "mcp", "path": "/"})
	call("host_hide", map[string]any{"session": "mcp"})
	if r := call("host_a2ui_push", map[string]any{"session": "mcp", "jsonl": hostSurface}); r["applied"] != float64(3) {
		t.Fatalf("host_a2ui_push %v", r)
	}
	if _, isErr, text := callTool(t, cs, "host_a2ui_push", map[string]any{"session": "mcp", "jsonl": `{"nope":{}}`}); !isErr || !strings.Contains(text, "line 1") {
		t.Fatalf("a bad push: %v %s", isErr, text)
	}
	call("host_a2ui_reset", map[string]any{"session": "mcp"})
	if k := call("host_link_key", map[string]any{"session": "mcp"}); len(k["key"].(string)) < 20 {
		t.Fatalf("host_link_key %v", k)
	}
	call("host_delete_file", map[string]any{"session": "mcp", "path": "img/dot.png"})
	// Refused: a bad payload before any browser, and a viewer's token.
	if _, isErr, text := callTool(t, cs, "host_eval", map[string]any{"session": "mcp", "js": ""}); !isErr || !strings.Contains(text, "payload.js") {
		t.Fatalf("empty js: %v %s", isErr, text)
	}
	vs := mcpSession(t, e.testEnv, viewer)
	for tool, args := range map[string]map[string]any{
		"host_eval":       {"session": "mcp", "js": "1"},
		"host_list_files": {"session": "mcp"},
		"host_snapshot":   {"session": "mcp"},
		"host_write_file": {"session": "mcp", "path": "x.txt", "content": "x"},
		"host_show":       {"session": "mcp"},
	} {
		if _, isErr, text := callTool(t, vs, tool, args); !isErr || !strings.Contains(text, "403") {
			t.Errorf("%s as a viewer: %v %s", tool, isErr, text)
		}
	}
}
