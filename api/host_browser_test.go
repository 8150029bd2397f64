package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/internal/testchrome"
)

// chromiumPath is Debian's chromium (CI installs the package).
const chromiumPath = testchrome.Path

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

// a2uiSamples returns the A2UI v0.8 gallery's samples as JSONL bodies (the
// spec's files in host/testdata, see its README for their licence), by
// surface id.
func a2uiSamples(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "host", "testdata", "a2ui", "v0_8", dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in %s: %v", dir, err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []map[string]json.RawMessage
		if err := json.Unmarshal(b, &msgs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var body bytes.Buffer
		surface := ""
		for _, m := range msgs {
			for _, v := range m {
				var s struct{ SurfaceID string }
				_ = json.Unmarshal(v, &s)
				surface = s.SurfaceID
			}
			line, _ := json.Marshal(m)
			body.Write(line)
			body.WriteByte('\n')
		}
		out[surface] = body.Bytes()
	}
	return out
}

// TestA2UIGalleryInChromium: the A2UI v0.8 gallery's 30 samples all render
// in the A2UI page (every surface shows its text, no renderer placeholder,
// icons as SVG whether named by the catalog or bound by their Material name),
// and the music player's 0-1 slider keeps 0.45.
func TestA2UIGalleryInChromium(t *testing.T) {
	e := newHostTestEnv(t, host.Config{})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	samples := a2uiSamples(t, "gallery")
	for id, body := range samples {
		if code, res := e.post("/api/host/gallery/a2ui", editor, "application/jsonl", body); code != 200 {
			t.Fatalf("push %s: %d %v", id, code, res)
		}
	}
	newChromium(t, e.srv.URL+"/host/gallery/?access_token="+editor)
	if got := e.hostResult(editor, "gallery", "eval", map[string]any{"js": pageWait(`document.body.dataset.surfaces === "` + fmt.Sprint(len(samples)) + `" && document.body.dataset.rendered === document.body.dataset.messages`)}); got != true {
		t.Fatalf("the gallery did not render: %v", got)
	}
	for id := range samples {
		q := e.hostResult(editor, "gallery", "dom.query", map[string]any{"selector": `a2ui-surface[data-surface-id="` + id + `"]`}).(map[string]any)
		text, _ := q["text"].(string)
		if q["found"] != true || len(strings.TrimSpace(text)) < 5 {
			t.Errorf("%s rendered %q", id, text)
		}
		for _, bad := range []string{"(empty)", "(no model)", "Invalid", "no processor", "undefined"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s shows %q: %q", id, bad, text)
			}
		}
	}
	icons := e.hostResult(editor, "gallery", "dom.all", map[string]any{"selector": "canvasd-a2ui-icon"}).(map[string]any)
	svgs := e.hostResult(editor, "gallery", "dom.all", map[string]any{"selector": ".canvasd-icon svg"}).(map[string]any)
	if icons["count"].(float64) < 20 || svgs["count"] != icons["count"] {
		t.Errorf("%v icons, %v of them drawn as SVG", icons["count"], svgs["count"])
	}
	slider := e.hostResult(editor, "gallery", "dom.query", map[string]any{"selector": `input[type="range"]`}).(map[string]any)
	if slider["value"] != "0.45" || slider["attributes"].(map[string]any)["step"] != "any" {
		t.Errorf("the music player's slider: %v", slider)
	}
}

// TestA2UICatalogTourInChromium renders canvasd's tour of every component
// and property of the standard catalog: Video and AudioPlayer play in
// <video> and <audio> players, Text renders Markdown (and no script), the
// slider keeps its fraction with its label, the image its alt text, the
// tabs and the template list their items, and a button's userAction
// carries its context resolved against the data model.
func TestA2UICatalogTourInChromium(t *testing.T) {
	e := newHostTestEnv(t, host.Config{})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	tour, err := os.ReadFile(filepath.Join("..", "host", "testdata", "a2ui", "catalog-tour.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if code, res := e.post("/api/host/tour/a2ui", editor, "application/jsonl", tour); code != 200 {
		t.Fatalf("push: %d %v", code, res)
	}
	newChromium(t, e.srv.URL+"/host/tour/?access_token="+editor)
	q := func(sel string) map[string]any {
		t.Helper()
		return e.hostResult(editor, "tour", "dom.wait", map[string]any{"selector": sel, "timeout_ms": 10000}).(map[string]any)
	}
	attr := func(m map[string]any, name string) string {
		s, _ := m["attributes"].(map[string]any)[name].(string)
		return s
	}
	if v := q("video"); v["found"] != true || attr(v, "src") != "https://example.com/media/clip.mp4" || attr(v, "controls") != "" {
		t.Errorf("video player: %v", v)
	}
	if a := q("audio"); a["found"] != true || attr(a, "src") != "https://example.com/media/song.mp3" {
		t.Errorf("audio player: %v", a)
	}
	if s := q("strong"); s["text"] != "Bold" {
		t.Errorf("markdown bold: %v", s)
	}
	if s := q("em"); s["text"] != "italic" {
		t.Errorf("markdown italic: %v", s)
	}
	if li := e.hostResult(editor, "tour", "dom.all", map[string]any{"selector": "li"}).(map[string]any); li["count"] != float64(2) {
		t.Errorf("markdown list: %v", li)
	}
	if got := e.hostResult(editor, "tour", "eval", map[string]any{"js": `window.hacked === undefined`}); got != true {
		t.Error("the Markdown's script ran")
	}
	if s := e.hostResult(editor, "tour", "dom.all", map[string]any{"selector": "script"}).(map[string]any); s["count"].(float64) > 3 {
		t.Errorf("scripts in the page: %v", s["count"])
	}
	if img := q(`img[alt="a red dot"]`); img["found"] != true {
		t.Errorf("image alt text: %v", img)
	}
	if sl := q(`input[type="range"]`); sl["value"] != "0.45" || attr(sl, "max") != "1" {
		t.Errorf("slider: %v", sl)
	}
	if lbl := q(`canvasd-a2ui-slider`); !strings.Contains(lbl["text"].(string), "Level") || !strings.Contains(lbl["text"].(string), "0.45") {
		t.Errorf("slider label and value: %q", lbl["text"])
	}
	if items := q(`#list`); !strings.Contains(items["text"].(string), "first item") || !strings.Contains(items["text"].(string), "second item") {
		t.Errorf("template list: %q", items["text"])
	}
	if tabs := q(`#tabs`); !strings.Contains(tabs["text"].(string), "First") || !strings.Contains(tabs["text"].(string), "Second") {
		t.Errorf("tabs: %q", tabs["text"])
	}
	if icons := e.hostResult(editor, "tour", "dom.all", map[string]any{"selector": ".canvasd-icon svg"}).(map[string]any); icons["count"] != float64(3) {
		t.Errorf("icons: %v", icons["count"])
	}
	for _, sel := range []string{"#cb", "#dt", "#mc", "#tf", "#tfnum", "#tflong", "#modal", "#vdiv"} {
		if c := q(sel); c["found"] != true {
			t.Errorf("%s not rendered", sel)
		}
	}
	e.hostResult(editor, "tour", "dom.click", map[string]any{"selector": "#submit >>> button"})
	m := e.inbox.next(t)
	ctx := m.Action.Context
	if m.Action.Name != "submit" || ctx["name"] != "Ada" || ctx["level"] != 0.45 || ctx["kind"] != "tour" || ctx["n"] != float64(3) || ctx["ok"] != true {
		t.Fatalf("userAction %+v", m.Action)
	}
	snap := decodeSnapshot(t, e.hostResult(editor, "tour", "snapshot", map[string]any{"max_w": 640}).(map[string]any))
	colors := map[color.RGBA]bool{}
	for y := 0; y < snap.Bounds().Dy(); y += 7 {
		for x := 0; x < snap.Bounds().Dx(); x += 7 {
			r, g, b, _ := snap.At(x, y).RGBA()
			colors[color.RGBA{uint8(r >> 12), uint8(g >> 12), uint8(b >> 12), 255}] = true
		}
	}
	if len(colors) < 4 {
		t.Errorf("the tour's snapshot has %d colours: a blank page?", len(colors))
	}
}
