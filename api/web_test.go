package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/canvasd/canvasd/canvas"
)

// TestWebUIRoutes: the UI shell and its assets are public, served with the
// UI's CSP, and nothing else leaks through the /ui/ prefix.
func TestWebUIRoutes(t *testing.T) {
	e := newTestEnv(t)
	r := e.do("GET", "/", "", nil) // checked against openapi.yaml
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(r.Body), `src="/ui/app.js"`) || !strings.Contains(r.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("GET /: %d %v %.200s", r.Status, r.Header, r.Body)
	}
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := e.srv.Client().Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for path, ctype := range map[string]string{"/ui/app.js": "text/javascript", "/ui/model.js": "text/javascript", "/ui/app.css": "text/css"} {
		resp, body := get(path)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) || len(body) < 100 ||
			resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: %d %q %d bytes", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
	}
	for _, path := range []string{"/ui/", "/ui/nope.js", "/ui/../api/canvases", "/ui/%2e%2e/go.mod", "/ui/web.go"} {
		if resp, body := get(path); resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("GET %s: %d %s, want a 404 problem", path, resp.StatusCode, body)
		}
	}
	// The API behind it still wants a token.
	if resp, _ := get("/api/canvases"); resp.StatusCode != 401 {
		t.Errorf("GET /api/canvases without a token: %d", resp.StatusCode)
	}
}

// TestWebUIInChromium drives the UI in headless Chromium: it signs in with
// ?access_token=, opens a canvas from the list, renders the snapshot, shows a
// node created through the API live (SSE), another actor's cursor and agent
// events, creates a note by double-click and edits its text, drags a node and
// deletes one, each checked on the server.
func TestWebUIInChromium(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %s is missing: %v", chromiumPath, err)
		}
		t.Skipf("no %s (apt-get install chromium): %v", chromiumPath, err)
	}
	e := newTestEnv(t)
	editor, editorID := e.token(canvas.RoleEditor, canvas.ActorHuman)
	agent, agentID := e.token(canvas.RoleEditor, canvas.ActorAgent)
	const cid = "ui-test"
	e.must(201, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": cid, "title": "UI test <board>"})

	head := int64(0)
	apply := func(typ string, args map[string]any) map[string]any {
		t.Helper()
		m := e.must(200, "POST", "/canvas_commands/"+cid+"/command", agent, env(typ, head, args))
		head = int64(m["current_rev"].(float64))
		return m
	}
	apply("create_shape", map[string]any{"id": "shape:box", "type": "geo", "x": 100, "y": 100, "w": 160, "h": 100,
		"props": map[string]any{"geo": "rectangle", "color": "blue", "fill": "semi", "text": "Box"}})
	apply("create_shape", map[string]any{"id": "shape:ell", "type": "geo", "x": 100, "y": 300, "w": 160, "h": 90,
		"props": map[string]any{"geo": "ellipse", "color": "green", "text": "Ellipse"}})
	apply("create_shape", map[string]any{"id": "shape:doc", "type": "doc", "name": "main.go", "x": 560, "y": 300, "w": 300, "h": 150,
		"props": map[string]any{"language": "go", "text": "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"}})
	apply("create_shape", map[string]any{"id": "shape:pen", "type": "draw", "x": 330, "y": 330, "w": 150, "h": 60,
		"props": map[string]any{"color": "red", "segments": []any{map[string]any{"type": "free", "points": []any{
			map[string]any{"x": 0, "y": 30}, map[string]any{"x": 40, "y": 0}, map[string]any{"x": 80, "y": 60}, map[string]any{"x": 150, "y": 20}}}}}})
	apply("create_edge", map[string]any{"id": "edge:2", "from": "shape:ell", "to": "shape:doc", "props": map[string]any{"label": "reads"}})
	apply("create_shape", map[string]any{"id": "shape:xss", "type": "note", "x": 920, "y": 80, "w": 200, "h": 200,
		"props": map[string]any{"text": `<img src=x onerror="document.title='pwned'">`, "color": "light-red"}})

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.WindowSize(1400, 860),
		chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	browser, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// The first action starts the browser and must not run under a timeout.
	// Test instrumentation (not the app): window.__holdSSE holds back stream
	// events, as a slow network would, so the test can make the page's
	// base_rev stale on purpose.
	holdSSE := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: holdSSEScript})
		return err
	})
	if err := chromedp.Do(browser, holdSSE); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// Script exceptions, console.error and CSP violations fail the test
	// (HTTP error statuses, such as the expected 409, are network entries).
	var errMu sync.Mutex
	var pageErrs []string
	addErr := func(s string) { errMu.Lock(); pageErrs = append(pageErrs, s); errMu.Unlock() }
	if err := chromedp.Listen(browser, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg := ev.ExceptionDetails.Text
			if ex := ev.ExceptionDetails.Exception; ex != nil {
				msg += " " + ex.Description
			}
			addErr("exception: " + msg)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				addErr("console.error")
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError && ev.Entry.Source != cdplog.EntrySourceNetwork {
				addErr(string(ev.Entry.Source) + ": " + ev.Entry.Text)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	enableLog := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cdplog.Enable, cdp.Empty{})
		return err
	})
	if err := chromedp.Do(browser, enableLog, chromedp.Navigate(e.srv.URL+"/?access_token="+editor)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	ctx, cancelT := context.WithTimeout(browser, 45*time.Second)
	defer cancelT()

	poll, eval := pageHelpers(t, ctx, 8*time.Second)
	// waitServer polls the server's snapshot until ok accepts a node.
	waitServer := func(what string, ok func(nodes map[string]map[string]any) bool) map[string]map[string]any {
		t.Helper()
		deadline := time.Now().Add(8 * time.Second)
		for {
			snap := e.snapshot(cid)
			nodes := map[string]map[string]any{}
			for _, n := range snap["state"].(map[string]any)["nodes"].([]any) {
				nm := n.(map[string]any)
				nodes[nm["id"].(string)] = nm
			}
			if ok(nodes) {
				return nodes
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not on the server; nodes: %v", what, nodes)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// The token left the address bar; the canvas list shows the canvas (title as text).
	poll("canvas list", `!!document.querySelector('#canvas-list li[data-canvas-id="ui-test"]')`)
	var loc string
	eval(`location.href`, &loc)
	if strings.Contains(loc, "access_token") {
		t.Errorf("the token stayed in the URL: %s", loc)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#canvas-list li[data-canvas-id="ui-test"]`))); err != nil {
		t.Fatalf("open canvas: %v", err)
	}
	poll("stream live", `document.getElementById('conn').textContent === 'live'`)
	poll("snapshot rendered", `document.querySelectorAll('#layer-nodes g.node').length === 5 && document.getElementById('rev').textContent === '6' && !!document.querySelector('[data-edge-id="edge:2"]')`)
	var title string
	eval(`document.getElementById('canvas-title').textContent`, &title)
	if title != "UI test <board>" {
		t.Errorf("title %q", title)
	}
	// User text is text: the note shows the markup literally and runs nothing.
	var xss struct {
		Text  string `json:"text"`
		Imgs  int    `json:"imgs"`
		Title string `json:"title"`
	}
	eval(`({text: document.querySelector('[data-id="shape:xss"]').textContent, imgs: document.querySelectorAll('#stage img, #stage image').length, title: document.title})`, &xss)
	if !strings.Contains(xss.Text, "<img src=x") || xss.Imgs != 0 || xss.Title != "canvasd" {
		t.Errorf("user text was not escaped: %+v", xss)
	}

	// Live: a node and an edge created through the API appear without a reload.
	apply("create_shape", map[string]any{"id": "shape:live", "type": "note", "x": 400, "y": 60, "w": 200, "h": 200,
		"props": map[string]any{"text": "hello from the API", "color": "yellow"}})
	apply("create_edge", map[string]any{"id": "edge:1", "from": "shape:box", "to": "shape:live", "props": map[string]any{"label": "flows"}})
	poll("live node", `(document.querySelector('[data-id="shape:live"]') || {}).textContent === 'hello from the API'`)
	poll("live edge", `!!document.querySelector('[data-edge-id="edge:1"] line') && document.getElementById('rev').textContent === '`+fmt.Sprint(head)+`'`)
	// A patch with a props merge-patch applies incrementally.
	apply("update_shape", map[string]any{"id": "shape:live", "props": map[string]any{"text": "patched live"}})
	poll("live patch", `(document.querySelector('[data-id="shape:live"]') || {}).textContent === 'patched live'`)

	// Another actor's cursor (gesture) and agent events.
	e.must(202, "POST", "/canvas_commands/"+cid+"/gesture", agent, map[string]any{"cursor": map[string]any{"x": 300, "y": 250}, "selection": []string{"shape:live"}})
	poll("remote cursor", `!!document.querySelector('#layer-cursors g.cursor[data-actor="`+agentID+`"]')`)
	e.api.hub.PublishEvent(cid, "agent:status", map[string]any{"type": "agent:status", "sessionId": "sess-1234abcd", "state": "streaming", "detail": "calling the model"})
	e.api.hub.PublishEvent(cid, "agent:chat", map[string]any{"type": "agent:chat", "sessionId": "sess-1234abcd", "message": map[string]any{"role": "assistant", "text": "Grouping the <b>ideas</b> now"}})
	poll("agent panel", `document.getElementById('agent-log').textContent.includes('Grouping the <b>ideas</b> now') && document.getElementById('agent-log').textContent.includes('streaming') && !document.querySelector('#agent-log b')`)

	// Double-click on empty space creates a note; type its text.
	var pt struct{ X, Y float64 }
	eval(`(() => { const r = document.getElementById('stage').getBoundingClientRect(); return {x: r.left + 120, y: r.bottom - 90}; })()`, &pt)
	var empty bool
	eval(fmt.Sprintf(`!document.elementFromPoint(%v, %v).closest('g.node')`, pt.X, pt.Y), &empty)
	if !empty {
		t.Fatal("the double-click point is not empty space")
	}
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(pt.X, pt.Y), chromedp.MouseClickXY(pt.X, pt.Y, chromedp.ClickCount(2))); err != nil {
		t.Fatal(err)
	}
	var created string
	waitServer("double-click note", func(nodes map[string]map[string]any) bool {
		for id, n := range nodes {
			if n["type"] == "note" && n["created_by"] == editorID {
				created = id
				return true
			}
		}
		return false
	})
	poll("note editor", `!!document.getElementById('note-editor')`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#note-editor`), "Hi from Chromium")); err != nil {
		t.Fatal(err)
	}
	// Clicking the canvas ends the edit and sends update_shape.
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(pt.X+300, pt.Y)); err != nil {
		t.Fatal(err)
	}
	waitServer("note text", func(nodes map[string]map[string]any) bool {
		p, _ := nodes[created]["props"].(map[string]any)
		return p != nil && p["text"] == "Hi from Chromium"
	})
	poll("note text rendered", `(document.querySelector('[data-id="`+created+`"]') || {}).textContent === 'Hi from Chromium'`)

	// Drag shape:box by (150, 120) screen pixels: one move {id, x, y}.
	var box struct{ X, Y, Z float64 }
	eval(`(() => { const r = document.querySelector('[data-id="shape:box"] rect.hit').getBoundingClientRect();
		return {x: r.left + r.width / 2, y: r.top + r.height / 2, z: +document.getElementById('stage').dataset.zoom}; })()`, &box)
	steps := []chromedp.Action[chromedp.Void]{chromedp.MouseEvent(chromedp.MousePressed, box.X, box.Y, chromedp.ButtonLeft, chromedp.ClickCount(1))}
	for i := 1; i <= 6; i++ {
		steps = append(steps, chromedp.MouseEvent(chromedp.MouseMoved, box.X+25*float64(i), box.Y+20*float64(i), chromedp.ButtonLeft))
	}
	steps = append(steps, chromedp.MouseEvent(chromedp.MouseReleased, box.X+150, box.Y+120, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
	wantX, wantY := 100+150/box.Z, 100+120/box.Z
	nodes := waitServer("drag", func(nodes map[string]map[string]any) bool { return nodes["shape:box"]["x"] != float64(100) })
	if x, y := nodes["shape:box"]["x"].(float64), nodes["shape:box"]["y"].(float64); math.Abs(x-wantX) > 1 || math.Abs(y-wantY) > 1 {
		t.Errorf("dragged to (%v, %v) on the server, want about (%v, %v)", x, y, wantX, wantY)
	}
	head = int64(e.snapshot(cid)["head_rev"].(float64))
	poll("drag committed", fmt.Sprintf(`document.getElementById('rev').textContent === '%d' && document.querySelector('[data-id="shape:box"]').getAttribute('transform').startsWith('translate(%v ')`,
		head, nodes["shape:box"]["x"]))

	// A stale base_rev: the page has not seen a change to shape:ell when it
	// moves it, so the server answers 409; the page says so and re-reads.
	eval(`window.__holdSSE = true`, new(bool))
	apply("update_shape", map[string]any{"id": "shape:ell", "x": 130})
	var ell struct{ X, Y float64 }
	eval(`(() => { const r = document.querySelector('[data-id="shape:ell"] rect.hit').getBoundingClientRect(); return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()`, &ell)
	if err := chromedp.Do(ctx,
		chromedp.MouseEvent(chromedp.MousePressed, ell.X, ell.Y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, ell.X+30, ell.Y+5, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseMoved, ell.X+60, ell.Y+10, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, ell.X+60, ell.Y+10, chromedp.ButtonLeft, chromedp.ClickCount(1))); err != nil {
		t.Fatal(err)
	}
	poll("conflict toast", `[...document.querySelectorAll('#toasts .toast')].some(t => t.textContent === 'conflict — reloaded')`)
	poll("reloaded after the conflict", fmt.Sprintf(`document.getElementById('rev').textContent === '%d' && document.querySelector('[data-id="shape:ell"]').getAttribute('transform').startsWith('translate(130 300)')`, head))
	eval(`(() => { window.__holdSSE = false; (window.__held || []).splice(0).forEach(f => f()); return true; })()`, new(bool))
	if n := waitServer("conflict", func(map[string]map[string]any) bool { return true })["shape:ell"]; n["x"] != float64(130) || n["y"] != float64(300) {
		t.Errorf("the conflicting move was applied: %v", n)
	}

	// A reset (this subscriber fell behind): the page re-reads the snapshot,
	// reconnects from its head and misses nothing.
	e.api.hub.mu.RLock()
	kicked := len(e.api.hub.subs[cid])
	for sub := range e.api.hub.subs[cid] {
		sub.kick()
	}
	e.api.hub.mu.RUnlock()
	if kicked == 0 {
		t.Fatal("the page has no stream open")
	}
	apply("create_shape", map[string]any{"id": "shape:after-reset", "type": "text", "x": 560, "y": 480, "w": 300, "h": 40,
		"props": map[string]any{"text": "written during the reset"}})
	poll("after reset", fmt.Sprintf(`document.getElementById('activity').textContent.includes('snapshot re-read') && !!document.querySelector('[data-id="shape:after-reset"]') && document.getElementById('conn').textContent === 'live' && document.getElementById('rev').textContent === '%d'`, head))

	// Select shape:live and press Delete.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-id="shape:live"] rect.hit`)), chromedp.KeyEvent(kb.Delete)); err != nil {
		t.Fatal(err)
	}
	waitServer("delete", func(nodes map[string]map[string]any) bool { _, ok := nodes["shape:live"]; return !ok })
	poll("deleted in the UI", `!document.querySelector('[data-id="shape:live"]') && !document.querySelector('[data-edge-id="edge:1"]')`)

	// Show another cursor for the picture, then take it.
	e.must(202, "POST", "/canvas_commands/"+cid+"/gesture", agent, map[string]any{"cursor": map[string]any{"x": 700, "y": 200}, "selection": []string{"shape:doc"}})
	poll("cursor moved", `(document.querySelector('#layer-cursors g.cursor') || {getAttribute: () => ''}).getAttribute('transform').startsWith('translate(700 200)')`)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("/tmp/canvasd-ui.png", png, 0o644); err != nil {
		t.Log(err)
	}
	// Create a canvas from the sidebar: the page opens it.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#new-canvas-title`), "Second board"),
		chromedp.Click(chromedp.CSS(`#new-canvas button[type=submit]`))); err != nil {
		t.Fatal(err)
	}
	poll("new canvas opened", `document.getElementById('canvas-title').textContent === 'Second board' && location.hash.startsWith('#/c/c_') && document.getElementById('conn').textContent === 'live' && document.getElementById('rev').textContent === '0'`)
	var newID string
	eval(`decodeURIComponent(location.hash.slice(4))`, &newID)
	if c := e.must(200, "GET", "/api/canvases/"+newID, editor, nil); c["title"] != "Second board" {
		t.Errorf("created canvas: %v", c)
	}

	errMu.Lock()
	defer errMu.Unlock()
	for _, msg := range pageErrs {
		t.Errorf("page error: %s", msg)
	}
}

// holdSSEScript wraps EventSource so that, while window.__holdSSE is true,
// events are queued in window.__held instead of being dispatched.
const holdSSEScript = `(() => {
  const ES = window.EventSource;
  window.EventSource = class extends ES {
    addEventListener(type, fn, opts) {
      return super.addEventListener(type, (ev) => {
        if (window.__holdSSE) { (window.__held = window.__held || []).push(() => fn(ev)); return; }
        fn(ev);
      }, opts);
    }
  };
})();`

// pageHelpers returns poll (wait until a JS expression is true, or fail) and
// eval (evaluate a JS expression into out, or fail) for a Chromium page.
func pageHelpers(t *testing.T, ctx context.Context, pollTimeout time.Duration) (poll func(what, expr string), eval func(expr string, out any)) {
	poll = func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(pollTimeout))); err != nil {
			t.Fatalf("%s: %v (waited for %s)", what, err, expr)
		}
	}
	eval = func(expr string, out any) {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		if err := json.Unmarshal(v, out); err != nil {
			t.Fatalf("evaluate %s: %v: %s", expr, err, v)
		}
	}
	return poll, eval
}
