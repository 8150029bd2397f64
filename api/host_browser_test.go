package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// chromiumPath is Debian's chromium (CI installs the package).
const chromiumPath = "/usr/bin/chromium"

// deepQuery is JavaScript for the first element matching a selector in the
// document or in any open shadow root (the A2UI page's components live in
// shadow roots), as the DOM helpers find elements.
func deepQuery(selector string) string {
	return `(function deep(root) { const f = root.querySelector(` + strconvQuote(selector) + `); if (f) return f;
		for (const el of root.querySelectorAll("*")) if (el.shadowRoot) { const g = deep(el.shadowRoot); if (g) return g } return null })(document)`
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// pageWait is JavaScript for eval that waits, inside the page, until cond
// (an expression) is true, and answers cond's last value (false after 10 s).
func pageWait(cond string) string {
	return `new Promise((resolve) => { const t0 = Date.now(); (function f() { let v; try { v = (` + cond + `) } catch (e) { v = false }
		if (v || Date.now() - t0 > 10000) resolve(v); else requestAnimationFrame(f) })() })`
}

// TestA2UIPageInChromium: a session without index.html shows the built-in
// A2UI page (the A2UI project's Lit renderer) in the viewer's frame: a
// pushed surface renders with its data bindings, a data-model update
// re-renders it live, a button's userAction (with its bound context)
// reaches the agent inbox through the viewer's bridge, templates repeat over
// the data model, a reset clears the page, and host actions run in it.
func TestA2UIPageInChromium(t *testing.T) {
	e := newHostTestEnv(t, host.Config{})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	if code, res := e.post("/api/host/ui/a2ui", editor, "application/jsonl", []byte(hostSurface)); code != 200 {
		t.Fatalf("push: %d %v", code, res)
	}
	ctx := newChromium(t, e.srv.URL+"/host/ui/?access_token="+editor)
	waitViewer(t, ctx)
	if got := e.hostResult(editor, "ui", "eval", map[string]any{"js": pageWait(`document.body.dataset.page !== undefined || document.querySelector("canvasd-a2ui") && document.querySelector("meta[name=canvasd-a2ui]") && "a2ui"`)}); got != "a2ui" {
		t.Fatalf("the frame does not show the A2UI page: %v", got)
	}
	title := e.hostResult(editor, "ui", "dom.wait", map[string]any{"selector": "#title", "timeout_ms": 10000}).(map[string]any)
	if title["found"] != true || !strings.Contains(title["text"].(string), "Hello from A2UI") {
		t.Fatalf("title: %v", title)
	}

	// Live data-model update.
	upd := `{"dataModelUpdate":{"surfaceId":"main","path":"/greeting","contents":[]}}` + "\n" +
		`{"dataModelUpdate":{"surfaceId":"main","contents":[{"key":"greeting","valueString":"Updated live"},{"key":"form","valueMap":[{"key":"name","valueString":"Ada"}]}]}}`
	if code, res := e.post("/api/host/ui/a2ui", editor, "application/jsonl", []byte(upd)); code != 200 {
		t.Fatalf("update: %d %v", code, res)
	}
	if got := e.hostResult(editor, "ui", "eval", map[string]any{"js": pageWait(deepQuery("#title") + `.shadowRoot.textContent.includes("Updated live")`)}); got != true {
		t.Fatalf("live update not rendered: %v", got)
	}

	// Type into the bound text field, then click the button: the userAction
	// reaches the inbox with its context resolved against the data model.
	e.hostResult(editor, "ui", "dom.type", map[string]any{"selector": "input", "text": " Lovelace"})
	e.hostResult(editor, "ui", "dom.click", map[string]any{"selector": "button"})
	m := e.inbox.next(t)
	if m.Action == nil || m.Action.Name != "submit" || m.Action.SurfaceID != "main" || m.Action.SourceComponentID != "btn" ||
		m.Action.Context["name"] != "Ada Lovelace" || m.Action.Context["kind"] != "demo" || m.HostSession != "ui" {
		t.Fatalf("userAction reached the inbox as %+v (action %+v)", m, m.Action)
	}

	// The page runs in an opaque origin: no cookies, no storage, no parent.
	got := e.hostResult(editor, "ui", "eval", map[string]any{"js": `[String(self.origin), (() => { try { return document.cookie } catch (e) { return "blocked" } })(),
		(() => { try { return parent.document.title } catch (e) { return "blocked" } })()].join("|")`})
	if got != "null|blocked|blocked" {
		t.Fatalf("the A2UI page runs as %v", got)
	}
	if a := e.hostAction(editor, "ui", "teleport", nil); a["ok"] != false {
		t.Fatalf("an action nobody handles: %v", a)
	}
	state := e.hostResult(editor, "ui", "a2ui.state", nil).([]any)
	if len(state) != 1 || state[0].(map[string]any)["surfaceId"] != "main" {
		t.Fatalf("a2ui.state: %v", state)
	}

	// A template list over a data-model map, with relative bindings.
	list := `{"surfaceUpdate":{"surfaceId":"todo","components":[{"id":"todos","component":{"List":{"children":{"template":{"componentId":"todo_item","dataBinding":"/items"}}}}},{"id":"todo_item","component":{"Text":{"text":{"path":"title"}}}}]}}` + "\n" +
		`{"dataModelUpdate":{"surfaceId":"todo","contents":[{"key":"items","valueMap":[{"key":"a","valueMap":[{"key":"title","valueString":"first"}]},{"key":"b","valueMap":[{"key":"title","valueString":"second"}]}]}]}}` + "\n" +
		`{"beginRendering":{"surfaceId":"todo","root":"todos"}}`
	if code, res := e.post("/api/host/ui/a2ui", editor, "application/jsonl", []byte(list)); code != 200 {
		t.Fatalf("list push: %d %v", code, res)
	}
	items := e.hostResult(editor, "ui", "dom.wait", map[string]any{"selector": `[data-surface-id="todo"]`, "timeout_ms": 10000}).(map[string]any)
	if txt, _ := items["text"].(string); !strings.Contains(txt, "first") || !strings.Contains(txt, "second") || strings.Index(txt, "first") > strings.Index(txt, "second") {
		t.Fatalf("template list: %q", items["text"])
	}

	// Reset removes every surface from the page.
	e.must(204, "POST", "/api/host/ui/a2ui/reset", editor, nil)
	if got := e.hostResult(editor, "ui", "eval", map[string]any{"js": pageWait(`document.body.dataset.surfaces === "0"`)}); got != true {
		t.Fatalf("reset not rendered: %v", got)
	}
}

// TestViewerFollowsTheSessionInChromium: the viewer opened on a session
// without index.html shows the A2UI page; when the agent writes index.html
// (with an external stylesheet and script) the viewer shows it at once,
// under the page ticket, styled, its script run in an opaque origin with no
// token in its location; a page the agent presents opens in the frame.
func TestViewerFollowsTheSessionInChromium(t *testing.T) {
	e := newHostTestEnv(t, host.Config{})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	viewer, _ := e.token(canvas.RoleViewer, canvas.ActorHuman, "styled")
	ctx := newChromium(t, e.srv.URL+"/host/styled/?access_token="+viewer)
	waitViewer(t, ctx)
	if got := e.hostResult(editor, "styled", "eval", map[string]any{"js": `document.querySelector("meta[name=canvasd-a2ui]") !== null`}); got != true {
		t.Fatal("a session without index.html does not show the A2UI page")
	}

	e.must(201, "PUT", "/api/host/styled/files/style.css", editor, "body { background-color: rgb(10, 20, 30) } #out { color: rgb(200, 100, 50) }")
	e.must(201, "PUT", "/api/host/styled/files/app.js", editor,
		`document.getElementById("out").textContent = "ran|" + location.href + "|" + String(self.origin);`)
	e.must(201, "PUT", "/api/host/styled/files/index.html", editor,
		`<!doctype html><html><head><link rel="stylesheet" href="style.css"><script src="app.js" defer></script></head><body><p id="out">waiting</p></body></html>`)
	if _, err := pollString(ctx, `window.canvasdViewer.ready && document.body.dataset.page === "file" && "ok"`, 15*time.Second); err != nil {
		t.Fatalf("the viewer did not show index.html: %v", err)
	}
	got, _ := e.hostResult(editor, "styled", "eval", map[string]any{"js": pageWait(`document.getElementById("out").textContent.startsWith("ran") &&
		[document.getElementById("out").textContent, getComputedStyle(document.body).backgroundColor, getComputedStyle(document.getElementById("out")).color].join("|")`)}).(string)
	f := strings.Split(got, "|")
	if len(f) != 5 || !strings.HasPrefix(f[1], e.srv.URL+"/host/styled/~") || f[2] != "null" || f[3] != "rgb(10, 20, 30)" || f[4] != "rgb(200, 100, 50)" {
		t.Fatalf("agent page: %q (want its script run under the ticket in an opaque origin, styled)", got)
	}
	if strings.Contains(got, viewer) || strings.Contains(got, "access_token") {
		t.Fatalf("the agent page's script can see the token: %q", got)
	}

	e.must(201, "PUT", "/api/host/styled/files/docs/index.html", editor, `<!doctype html><title>docs</title><p>docs</p>`)
	e.must(200, "POST", "/api/host/styled/present", editor, map[string]any{"action": "navigate", "path": "docs/"})
	if _, err := pollString(ctx, `window.canvasdViewer.ready && window.canvasdViewer.page === "docs/" && "ok"`, 10*time.Second); err != nil {
		t.Fatalf("presented page: %v", err)
	}
	if got := e.hostResult(editor, "styled", "eval", map[string]any{"js": "document.title"}); got != "docs" {
		t.Fatalf("presented page's title %v", got)
	}
}
