package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/canvasd/canvasd/internal/testchrome"
	"github.com/canvasd/canvasd/web"
)

const chromiumPath = testchrome.Path

// browserFor starts headless Chromium on url (skipping when Chromium or the
// built host pages are missing) and returns a context for later actions.
func browserFor(t *testing.T, url string) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no %s (apt-get install chromium): %v", chromiumPath, err)
	}
	if _, err := web.ShellFS().Open("page.js"); err != nil {
		t.Skip("the host's pages are not built (make ui)")
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), testchrome.Options(t.TempDir(), 1280, 860)...)
	t.Cleanup(cancelAlloc)
	browser, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(browser, chromedp.Navigate(url)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	ctx, cancelT := context.WithTimeout(browser, 120*time.Second)
	t.Cleanup(cancelT)
	poll(t, ctx, `window.canvasdViewer && window.canvasdViewer.ready && document.getElementById("status").dataset.state === "open"`)
	return ctx
}

// poll waits until a JavaScript expression in the viewer is true.
func poll(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		t.Fatalf("waited for %s: %v", js, err)
	}
}

// hostAction sends a host action to session and returns the page's answer.
func (c *canvasdProc) hostAction(token, session, action string, payload any) map[string]any {
	c.t.Helper()
	return c.must(200, "POST", "/api/invoke", token, map[string]any{"host_session": session, "action": action, "payload": payload, "timeout_ms": 15000})
}

// inPage evaluates js in the shown page and returns its value (the page's
// answer must be ok).
func (c *canvasdProc) inPage(token, session, js string) any {
	c.t.Helper()
	a := c.hostAction(token, session, "eval", map[string]any{"js": js})
	if a["ok"] != true {
		c.t.Fatalf("eval %s: %v", js, a)
	}
	return a["result"]
}

// waitInPage is JavaScript that waits inside the page until cond is true.
func waitInPage(cond string) string {
	return `new Promise((resolve) => { const t0 = Date.now(); (function f() { let v; try { v = (` + cond + `) } catch (e) { v = false }
		if (v || Date.now() - t0 > 15000) resolve(v); else setTimeout(f, 20) })() })`
}

const doodlePage = `<!doctype html>
<html><head><title>doodle</title></head><body>
<canvas id="c" width="64" height="48"></canvas>
<p id="out">idle</p>
<button id="send">Send to the agent</button>
<button id="huge">Send a huge image</button>
<a id="plan" href="canvasd://agent?message=Make%20a%20plan">plan</a>
<a id="ext" href="https://example.com/elsewhere">elsewhere</a>
<button id="keyed" onclick="location.href = 'canvasd://agent?message=' + encodeURIComponent('Keyed run') + '&key=' + KEY">keyed</button>
<script>
const c = document.getElementById("c"), g = c.getContext("2d");
g.fillStyle = "rgb(255, 0, 0)"; g.fillRect(0, 0, 64, 48);
const out = document.getElementById("out");
document.getElementById("send").onclick = () => canvasd.sendAgentMessage("What did I draw?", { imageData: c.toDataURL("image/png"), appletSlug: "doodle" })
  .then((r) => { out.textContent = "sent " + JSON.stringify(r) }, (e) => { out.textContent = "error " + e.message });
document.getElementById("huge").onclick = () => {
  const big = document.createElement("canvas"); big.width = 1200; big.height = 1200;
  const b = big.getContext("2d"), d = b.createImageData(1200, 1200);
  for (let i = 0; i < d.data.length; i++) d.data[i] = (i * 2654435761 >>> 13) & 255;
  b.putImageData(d, 0, 0);
  canvasd.sendAgentMessage("too big", { imageData: big.toDataURL("image/png") }).then(() => { out.textContent = "sent the huge one" }, (e) => { out.textContent = "error " + e.message });
};
canvasd.onInvoke("double", (p) => p.n * 2);
canvasd.onInvoke("later", (p, ctx) => { setTimeout(() => canvasd.respondToInvoke(ctx.invokeId, { late: p.tag }), 30) });
canvasd.onInvoke("fail", () => Promise.reject(new Error("no such luck")));
</script></body></html>`

// TestPageTalksToTheAgentInChromium: an agent's page, shown in its viewer,
// talks to the agent of its session's canvas through the canvasd bridge:
// sendAgentMessage with an image drawn on a canvas reaches the model as an
// image part (a too-large image is refused with a clear error); its
// onInvoke handlers answer POST /api/invoke (at once, later through
// respondToInvoke, or failing); a canvasd://agent link starts a run once
// the person confirms it, and at once with the session's link key; an
// external link opens in a new browsing context while the frame stays on
// the page; the page cannot navigate its frame out of the session.
func TestPageTalksToTheAgentInChromium(t *testing.T) {
	model := newVisionModel(t, func(text, image string) string {
		switch {
		case image != "" && strings.Contains(text, "What did I draw?"):
			return `{"actions":[{"name":"create_shape","params":{"type":"note","x":10,"y":20,"props":{"text":"a red rectangle"}}}]}`
		case strings.Contains(text, "Make a plan"):
			return `{"actions":[{"name":"create_shape","params":{"type":"note","x":300,"y":20,"props":{"text":"the plan"}}}]}`
		case strings.Contains(text, "Keyed run"):
			return `{"actions":[{"name":"create_shape","params":{"type":"note","x":600,"y":20,"props":{"text":"keyed"}}}]}`
		}
		return `{"actions":[]}`
	})
	c := startCanvasd(t, map[string]string{"CANVAS_STEWARD_MODEL": "openai:gpt-vision-test", "OPENAI_API_KEY": "sk-test",
		"OPENAI_BASE_URL": model.srv.URL + "/v1", "CANVASD_MAX_IMAGE_BYTES": "200000"})
	editor := c.must(201, "POST", "/api/tokens", c.admin, map[string]any{"role": "editor", "actor_type": "human"})["token"].(string)
	key := c.must(200, "GET", "/api/host/doodle/link-key", editor, nil)["key"].(string)
	putFile(t, c, editor, "doodle", "index.html", strings.Replace(doodlePage, "<script>", `<script>const KEY = "`+key+`";`, 1))

	ctx := browserFor(t, c.base+"/host/doodle/?access_token="+editor)

	// sendAgentMessage with an image.
	c.hostAction(editor, "doodle", "dom.click", map[string]any{"selector": "#send"})
	sent, _ := c.inPage(editor, "doodle", waitInPage(`document.getElementById("out").textContent !== "idle" && document.getElementById("out").textContent`)).(string)
	if !strings.HasPrefix(sent, "sent ") || !strings.Contains(sent, `"delivered":true`) || !strings.Contains(sent, `"canvas_id":"doodle"`) {
		t.Fatalf("sendAgentMessage answered %q", sent)
	}
	c.waitFor("the model's note about the drawing", func() bool { return c.node("doodle", "a red rectangle") != nil })
	call, ok := model.find(func(mc modelCall) bool { return strings.Contains(mc.Text, "What did I draw?") })
	if !ok || call.ImageParts != 1 || !strings.HasPrefix(call.Image, "data:image/png;base64,") || len(call.Image) < 100 {
		t.Fatalf("the model got the page's message with %d image parts (%.60q)", call.ImageParts, call.Image)
	}
	// A too-large image: a clear error in the page, nothing sent.
	c.hostAction(editor, "doodle", "dom.click", map[string]any{"selector": "#huge"})
	huge, _ := c.inPage(editor, "doodle", waitInPage(`document.getElementById("out").textContent.startsWith("error") && document.getElementById("out").textContent`)).(string)
	if !strings.Contains(huge, "over the limit of 200000 bytes") {
		t.Fatalf("a too-large image: %q", huge)
	}

	// onInvoke and respondToInvoke answer POST /api/invoke.
	if a := c.hostAction(editor, "doodle", "double", map[string]any{"n": 21}); a["ok"] != true || a["result"] != float64(42) {
		t.Fatalf("double: %v", a)
	}
	if a := c.hostAction(editor, "doodle", "later", map[string]any{"tag": "x1"}); a["ok"] != true || a["result"].(map[string]any)["late"] != "x1" {
		t.Fatalf("later: %v", a)
	}
	if a := c.hostAction(editor, "doodle", "fail", nil); a["ok"] != false || !strings.Contains(a["error"].(string), "no such luck") {
		t.Fatalf("fail: %v", a)
	}
	if a := c.hostAction(editor, "doodle", "nobody", nil); a["ok"] != false || !strings.Contains(a["error"].(string), "no handler") {
		t.Fatalf("an action without a handler: %v", a)
	}

	// A canvasd://agent link without a key: the person confirms, then it runs.
	c.hostAction(editor, "doodle", "dom.click", map[string]any{"selector": "#plan"})
	poll(t, ctx, `document.getElementById("confirm").open && document.getElementById("confirm-message").textContent === "Make a plan"`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#confirm-run"))); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the confirmed run's note", func() bool { return c.node("doodle", "the plan") != nil })
	// With the session's link key, set as location.href by the page's
	// script: no question.
	c.hostAction(editor, "doodle", "dom.click", map[string]any{"selector": "#keyed"})
	c.waitFor("the keyed run's note", func() bool { return c.node("doodle", "keyed") != nil })
	poll(t, ctx, `window.canvasdViewer.ready && window.canvasdViewer.page === ""`)
	if open, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("confirm").open`)); err != nil || open {
		t.Fatalf("the keyed link asked the person (dialog open %v, %v)", open, err)
	}

	// An external link, clicked by the person, opens outside; the frame
	// stays on the page.
	clickInFrame(t, c, ctx, editor, "doodle", "#ext")
	var opened []string
	c.waitFor("a new tab for the external link", func() bool {
		ts, err := chromedp.Targets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		opened = opened[:0]
		for _, ti := range ts {
			opened = append(opened, string(ti.Type)+" "+ti.URL)
			if ti.Type == "page" && strings.HasPrefix(ti.URL, "https://example.com/elsewhere") {
				return true
			}
		}
		return false
	})
	// The page cannot take its frame away from the session's files: the
	// viewer refuses the navigation and shows the page again.
	for i, target := range []string{"https://example.com/", "/api/canvases", "/host/other/"} {
		c.inPage(editor, "doodle", `setTimeout(() => { location.href = "`+target+`" }, 20); true`)
		poll(t, ctx, fmt.Sprintf(`window.canvasdViewer.refused > %d && window.canvasdViewer.ready`, i))
		if got := c.inPage(editor, "doodle", `document.title + "|" + location.pathname`); !strings.HasPrefix(got.(string), "doodle|/host/doodle/~") {
			t.Fatalf("after location.href = %s the frame shows %v", target, got)
		}
	}
	if page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.canvasdViewer.page`)); err != nil || page != "" {
		t.Fatalf("the viewer shows %q (%v)", page, err)
	}
	b, _ := json.Marshal(opened)
	t.Logf("targets: %s", b)
}

// clickInFrame clicks the element of the shown page that selector finds as
// a person does (a mouse event at its place in the viewer), so the page gets
// a real user activation.
func clickInFrame(t *testing.T, c *canvasdProc, ctx context.Context, token, session, selector string) {
	t.Helper()
	a := c.hostAction(token, session, "dom.query", map[string]any{"selector": selector})
	q, _ := a["result"].(map[string]any)
	r, _ := q["rect"].(map[string]any)
	if q["found"] != true || r == nil {
		t.Fatalf("%s is not in the page: %v", selector, a)
	}
	f, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](`(() => { const b = document.getElementById("page").getBoundingClientRect(); return { x: b.x, y: b.y } })()`))
	if err != nil {
		t.Fatal(err)
	}
	x := f["x"] + r["x"].(float64) + r["w"].(float64)/2
	y := f["y"] + r["y"].(float64) + r["h"].(float64)/2
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(x, y)); err != nil {
		t.Fatal(err)
	}
}

// putFile writes a session file with the editor token.
func putFile(t *testing.T, c *canvasdProc, token, session, path, body string) {
	t.Helper()
	req, _ := http.NewRequest("PUT", c.base+"/api/host/"+session+"/files/"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 && resp.StatusCode != 201 {
		t.Fatalf("PUT %s: %d", path, resp.StatusCode)
	}
}

// hostCLI runs `canvasd host args...` against c with token and returns its
// standard output (the command must succeed).
func hostCLI(t *testing.T, c *canvasdProc, token string, args ...string) string {
	t.Helper()
	var out, errb strings.Builder
	vars := map[string]string{"CANVASD_URL": c.base, "CANVASD_TOKEN": token}
	if code := run(context.Background(), append([]string{"host"}, args...), env(vars), &out, &errb); code != 0 {
		t.Fatalf("canvasd host %v: exit %d: %s", args, code, errb.String())
	}
	return out.String()
}

// TestHostCommandsInChromium drives a session from the command line: files,
// show, eval and the DOM helpers in the shown page, a snapshot written as a
// PNG file, a page's own action, the link key, A2UI push and reset.
func TestHostCommandsInChromium(t *testing.T) {
	c := startCanvasd(t, map[string]string{})
	editor := c.must(201, "POST", "/api/tokens", c.admin, map[string]any{"role": "editor", "actor_type": "agent"})["token"].(string)
	dir := t.TempDir()
	page := filepath.Join(dir, "index.html")
	if err := os.WriteFile(page, []byte(`<!doctype html><title>cli page</title><body style="margin:0;background:rgb(250,200,0)">
		<input id="q" value="x"><button id="b" onclick="this.textContent='pressed'">press</button>
		<script>canvasd.onInvoke("echo", (p) => ({ echo: p }))</script></body>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := hostCLI(t, c, editor, "files", "put", "--session", "cli", "--path", "index.html", "--file", page); !strings.Contains(out, `"path":"index.html"`) {
		t.Fatalf("files put: %s", out)
	}
	if out := hostCLI(t, c, editor, "files", "list", "--session", "cli"); !strings.Contains(out, "index.html") {
		t.Fatalf("files list: %s", out)
	}
	browserFor(t, c.base+"/host/cli/?access_token="+editor)
	if out := hostCLI(t, c, editor, "show", "--session", "cli"); !strings.Contains(out, `"browsers":1`) {
		t.Fatalf("show: %s", out)
	}
	if out := hostCLI(t, c, editor, "eval", "--session", "cli", "--js", "document.title"); strings.TrimSpace(out) != `"cli page"` {
		t.Fatalf("eval: %q", out)
	}
	hostCLI(t, c, editor, "dom", "type", "--session", "cli", "--selector", "#q", "--text", "yz")
	if out := hostCLI(t, c, editor, "dom", "attr", "--session", "cli", "--selector", "#q", "--name", "id"); !strings.Contains(out, `"value":"q"`) {
		t.Fatalf("dom attr: %s", out)
	}
	if out := hostCLI(t, c, editor, "dom", "query", "--session", "cli", "--selector", "#q"); !strings.Contains(out, `"value":"xyz"`) {
		t.Fatalf("dom query after typing: %s", out)
	}
	hostCLI(t, c, editor, "dom", "click", "--session", "cli", "--selector", "#b")
	if out := hostCLI(t, c, editor, "dom", "wait", "--session", "cli", "--selector", "#b", "--wait-ms", "1000"); !strings.Contains(out, `"text":"pressed"`) {
		t.Fatalf("dom wait: %s", out)
	}
	if out := hostCLI(t, c, editor, "dom", "all", "--session", "cli", "--selector", "input, button"); !strings.Contains(out, `"count":2`) {
		t.Fatalf("dom all: %s", out)
	}
	if out := hostCLI(t, c, editor, "invoke", "--session", "cli", "--action", "echo", "--payload", `{"n":1}`); strings.TrimSpace(out) != `{"echo":{"n":1}}` {
		t.Fatalf("invoke: %s", out)
	}
	shot := filepath.Join(dir, "shot.png")
	if out := hostCLI(t, c, editor, "snapshot", "--session", "cli", "--out", shot, "--max-w", "400"); !strings.Contains(out, `"width":400`) {
		t.Fatalf("snapshot: %s", out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if r, g, b, _ := img.At(390, 200).RGBA(); r>>8 < 240 || g>>8 < 190 || g>>8 > 210 || b>>8 > 10 {
		t.Fatalf("the snapshot's background is %d,%d,%d, want the page's 250,200,0", r>>8, g>>8, b>>8)
	}
	if out := hostCLI(t, c, editor, "link-key", "--session", "cli"); !strings.Contains(out, `"key":"`) {
		t.Fatalf("link-key: %s", out)
	}
	jsonl := filepath.Join(dir, "ui.jsonl")
	_ = os.WriteFile(jsonl, []byte(`{"surfaceUpdate":{"surfaceId":"s","components":[{"id":"r","component":{"Text":{"text":{"literalString":"hi"}}}}]}}`+"\n"+
		`{"beginRendering":{"surfaceId":"s","root":"r"}}`+"\n"), 0o644)
	if out := hostCLI(t, c, editor, "a2ui", "push", "--session", "cli", "--jsonl", jsonl); !strings.Contains(out, `"applied":2`) {
		t.Fatalf("a2ui push: %s", out)
	}
	hostCLI(t, c, editor, "a2ui", "reset", "--session", "cli")
	hostCLI(t, c, editor, "navigate", "--session", "cli", "--path", "/")
	hostCLI(t, c, editor, "hide", "--session", "cli")
	hostCLI(t, c, editor, "files", "delete", "--session", "cli", "--path", "index.html")
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"host", "eval", "--session", "cli"}, env(map[string]string{"CANVASD_URL": c.base, "CANVASD_TOKEN": editor}), &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "--js") {
		t.Fatalf("eval without --js: exit %d %s", code, errb.String())
	}
}

// TestAgentWorksItsPagesInChromium: canvasd's own agent writes a page for
// its canvas's host session and shows it (host_write_file, host_show), then
// works it in the viewer (host_eval, host_dom_query, host_snapshot, and
// applet_invoke answered by the page's canvasd.onInvoke); what the page
// answered reaches the model in the next turn, the snapshot as its image.
func TestAgentWorksItsPagesInChromium(t *testing.T) {
	shown := make(chan struct{})
	page := `<!doctype html><title>Agent page</title><body style="margin:0;background:rgb(0,160,80)"><p id="out">ready</p>` +
		`<script>canvasd.onInvoke("render", (p) => "rendered " + p.n * 2)</script></body>`
	pageJSON, _ := json.Marshal(page)
	model := newVisionModel(t, func(text, image string) string {
		switch {
		case strings.Contains(text, "Your page actions answered"):
			if strings.Contains(text, `"Agent page"`) && strings.Contains(text, `"rendered 42"`) && strings.Contains(text, `"text":"ready"`) && image != "" {
				return `{"actions":[{"name":"create_shape","params":{"type":"note","x":10,"y":20,"props":{"text":"the page works"}}}]}`
			}
			return `{"actions":[{"name":"think","params":{"text":"the answers were not as expected"}}]}`
		case strings.Contains(text, "Add detail: check the page"):
			<-shown
			return `{"actions":[{"name":"host_eval","params":{"js":"document.title"}},{"name":"host_dom_query","params":{"selector":"#out"}},` +
				`{"name":"host_snapshot","params":{"max_w":200}},{"name":"applet_invoke","params":{"action":"render","payload":{"n":21}}}]}`
		case strings.Contains(text, "Task: Build a page"):
			return `{"actions":[{"name":"host_write_file","params":{"path":"index.html","content":` + string(pageJSON) + `}},` +
				`{"name":"host_show","params":{}},{"name":"add_detail","params":{"hint":"check the page"}}]}`
		}
		return `{"actions":[]}`
	})
	c := startCanvasd(t, map[string]string{"CANVAS_STEWARD_MODEL": "openai:gpt-vision-test", "OPENAI_API_KEY": "sk-test",
		"OPENAI_BASE_URL": model.srv.URL + "/v1"})
	c.must(201, "POST", "/api/canvases", c.admin, map[string]any{"canvas_id": "board"})
	ctx := browserFor(t, c.base+"/host/board/?access_token="+c.admin)
	id := c.must(202, "POST", "/api/canvas-agent/run", c.admin, map[string]any{"roomId": "board", "message": "Build a page"})["session_id"].(string)
	poll(t, ctx, `window.canvasdViewer.ready && document.body.dataset.page === "file"`)
	close(shown)
	defer func() {
		if t.Failed() {
			s := c.must(200, "GET", "/api/canvas-agent/sessions/"+id, c.admin, nil)
			b, _ := json.MarshalIndent(s["transcript"], "", " ")
			t.Logf("transcript: %s", b)
		}
	}()
	c.waitFor("the agent's note after working its page", func() bool { return c.node("board", "the page works") != nil })
	call, ok := model.find(func(mc modelCall) bool { return strings.Contains(mc.Text, "Your page actions answered") })
	if !ok || call.ImageParts != 1 || !strings.HasPrefix(call.Image, "data:image/png;base64,") {
		t.Fatalf("the results turn: found %v, %d image parts", ok, call.ImageParts)
	}
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(call.Image, "data:image/png;base64,"))
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if r, g, b, _ := img.At(150, 100).RGBA(); r>>8 > 10 || g>>8 < 150 || b>>8 < 70 || b>>8 > 90 {
		t.Fatalf("the snapshot the model got is %d,%d,%d at (150, 100), want the page's 0,160,80", r>>8, g>>8, b>>8)
	}
	if s := c.sessionEnded(id, c.admin); s["state"] != "done" {
		t.Fatalf("session %v", s["state"])
	}
}
