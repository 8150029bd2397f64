package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/internal/testchrome"
	"github.com/canvasd/canvasd/web"
)

// newChromium starts headless Chromium for a test (skipping when it is not
// installed, or when the host's pages were not built) and returns a context
// whose first action has started the browser, with a timeout for the rest.
func newChromium(t *testing.T, startURL string) context.Context {
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
	// The first action starts the browser and must not run under a timeout
	// (it would stop the browser); later ones do.
	if err := chromedp.Do(browser, chromedp.Navigate(startURL)); err != nil {
		t.Fatalf("navigate %s: %v", startURL, err)
	}
	ctx, cancelT := context.WithTimeout(browser, 120*time.Second)
	t.Cleanup(cancelT)
	return ctx
}

// waitViewer waits until the viewer in ctx is connected and its page's
// runtime said ready, and returns the page it shows.
func waitViewer(t *testing.T, ctx context.Context) string {
	t.Helper()
	got, err := pollString(ctx, `(() => { const v = window.canvasdViewer; const s = document.getElementById("status");
		return v && v.ready && s && s.dataset.state === "open" ? "page:" + v.page : false; })()`, 20*time.Second)
	if err != nil {
		t.Fatalf("the viewer did not connect and show its page: %v", err)
	}
	return strings.TrimPrefix(got, "page:")
}

// pollString polls a JavaScript expression in the top document until it is
// truthy and returns it as a string.
func pollString(ctx context.Context, js string, d time.Duration) (string, error) {
	out, err := chromedp.Run(ctx, chromedp.Poll[any](js, chromedp.WithPollingTimeout(d)))
	if s, ok := out.(string); ok {
		return s, err
	}
	return "", err
}

// hostAction sends a host action to session through POST /api/invoke and
// returns the page's answer (ok, result, error).
func (e *hostTestEnv) hostAction(token, session, action string, payload any) map[string]any {
	e.t.Helper()
	r := e.do("POST", "/api/invoke", token, map[string]any{"host_session": session, "action": action, "payload": payload, "timeout_ms": 15000})
	if r.Status != 200 {
		e.t.Fatalf("%s: %d %s", action, r.Status, r.Body)
	}
	return r.json(e.t)
}

func (e *hostTestEnv) hostResult(token, session, action string, payload any) any {
	e.t.Helper()
	a := e.hostAction(token, session, action, payload)
	if a["ok"] != true {
		e.t.Fatalf("%s %v: the page answered %v", action, payload, a)
	}
	return a["result"]
}

const agentPage = `<!doctype html>
<html><head><title>agent page</title>
<style>body { margin: 0; background: rgb(255, 255, 255); font: 16px sans-serif }
#swatch { position: absolute; left: 0; top: 0; width: 200px; height: 100px; background: rgb(0, 128, 255) }
#main { position: absolute; top: 120px; left: 10px }</style></head>
<body><div id="swatch"></div><div id="main">
<p id="out" data-kind="result">waiting</p>
<input id="name" value="Ada">
<button id="go" onclick="document.getElementById('out').textContent = 'clicked ' + document.getElementById('name').value;
  setTimeout(() => { const d = document.createElement('div'); d.id = 'later'; d.textContent = 'arrived'; document.body.append(d); }, 300)">Go</button>
<ul><li>one</li><li>two</li><li>three</li></ul>
<a id="second" href="second.html">second</a>
</div></body></html>`

// TestAgentPageHostActionsInChromium: an agent's own index.html, opened as
// a person opens it (/host/{session}/?access_token=...), is shown in the
// viewer's frame, and every host action runs in it: eval (document.title is
// the page's), each DOM helper, and a snapshot whose pixels are the page's;
// present shows, hides and navigates it.
func TestAgentPageHostActionsInChromium(t *testing.T) {
	e := newHostTestEnv(t, host.Config{})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	e.must(201, "PUT", "/api/host/site/files/index.html", editor, agentPage)
	e.must(201, "PUT", "/api/host/site/files/second.html", editor, `<!doctype html><title>second page</title><p id="p">the second page</p>`)

	ctx := newChromium(t, e.srv.URL+"/host/site/?access_token="+editor)
	if page := waitViewer(t, ctx); page != "" {
		t.Fatalf("the viewer shows %q, want the session root", page)
	}

	// eval runs in the shown page.
	if got := e.hostResult(editor, "site", "eval", map[string]any{"js": "document.title"}); got != "agent page" {
		t.Fatalf("eval document.title = %v, want the agent page's title", got)
	}
	if got := e.hostResult(editor, "site", "eval", map[string]any{"js": "Promise.resolve(6 * 7)"}); got != float64(42) {
		t.Fatalf("eval of a Promise = %v", got)
	}
	if a := e.hostAction(editor, "site", "eval", map[string]any{"js": "nope("}); a["ok"] != false || !strings.Contains(a["error"].(string), "SyntaxError") && !strings.Contains(a["error"].(string), "Unexpected") {
		t.Fatalf("eval of bad JS: %v", a)
	}

	// The DOM helpers.
	q := e.hostResult(editor, "site", "dom.query", map[string]any{"selector": "#out"}).(map[string]any)
	if q["found"] != true || q["text"] != "waiting" || q["attributes"].(map[string]any)["data-kind"] != "result" || q["tag"] != "p" {
		t.Fatalf("dom.query #out = %v", q)
	}
	if q := e.hostResult(editor, "site", "dom.query", map[string]any{"selector": "#missing"}).(map[string]any); q["found"] != false {
		t.Fatalf("dom.query of nothing = %v", q)
	}
	all := e.hostResult(editor, "site", "dom.all", map[string]any{"selector": "li"}).(map[string]any)
	if all["count"] != float64(3) || all["elements"].([]any)[2].(map[string]any)["text"] != "three" {
		t.Fatalf("dom.all li = %v", all)
	}
	if a := e.hostResult(editor, "site", "dom.attr", map[string]any{"selector": "#second", "name": "href"}).(map[string]any); a["value"] != "second.html" {
		t.Fatalf("dom.attr = %v", a)
	}
	if ty := e.hostResult(editor, "site", "dom.type", map[string]any{"selector": "#name", "text": " Lovelace"}).(map[string]any); ty["value"] != "Ada Lovelace" {
		t.Fatalf("dom.type = %v", ty)
	}
	if c := e.hostResult(editor, "site", "dom.click", map[string]any{"selector": "#go"}).(map[string]any); c["clicked"] != true {
		t.Fatalf("dom.click = %v", c)
	}
	if q := e.hostResult(editor, "site", "dom.query", map[string]any{"selector": "#out"}).(map[string]any); q["text"] != "clicked Ada Lovelace" {
		t.Fatalf("after dom.click #out reads %v", q["text"])
	}
	w := e.hostResult(editor, "site", "dom.wait", map[string]any{"selector": "#later", "timeout_ms": 5000}).(map[string]any)
	if w["found"] != true || w["text"] != "arrived" {
		t.Fatalf("dom.wait = %v", w)
	}
	if w := e.hostResult(editor, "site", "dom.wait", map[string]any{"selector": "#never", "timeout_ms": 100}).(map[string]any); w["found"] != false {
		t.Fatalf("dom.wait of nothing = %v", w)
	}
	if a := e.hostAction(editor, "site", "dom.click", map[string]any{"selector": "#never"}); a["ok"] != false {
		t.Fatalf("dom.click of nothing: %v", a)
	}

	// A snapshot of real pixels: the swatch's colour where it is, white beside it.
	snap := e.hostResult(editor, "site", "snapshot", map[string]any{}).(map[string]any)
	img := decodeSnapshot(t, snap)
	b := img.Bounds()
	if b.Dx() != int(snap["width"].(float64)) || b.Dx() < 600 || b.Dy() < 300 {
		t.Fatalf("snapshot %dx%d (answer says %v×%v)", b.Dx(), b.Dy(), snap["width"], snap["height"])
	}
	wantColor(t, img, 100, 50, color.RGBA{0, 128, 255, 255})
	wantColor(t, img, 400, 50, color.RGBA{255, 255, 255, 255})
	small := decodeSnapshot(t, e.hostResult(editor, "site", "snapshot", map[string]any{"max_w": 320}).(map[string]any))
	if small.Bounds().Dx() > 320 || small.Bounds().Dx() < 300 {
		t.Fatalf("snapshot with max_w 320 is %d wide", small.Bounds().Dx())
	}
	wantColor(t, small, 25, 12, color.RGBA{0, 128, 255, 255})

	// present: navigate within the session, hide, show.
	if r := e.must(200, "POST", "/api/host/site/present", editor, map[string]any{"action": "navigate", "path": "second.html"}); r["browsers"] != float64(1) {
		t.Fatalf("present reached %v browsers", r["browsers"])
	}
	if _, err := pollString(ctx, `window.canvasdViewer.ready && window.canvasdViewer.page === "second.html" && "ok"`, 10*time.Second); err != nil {
		t.Fatalf("navigate did not show second.html: %v", err)
	}
	if got := e.hostResult(editor, "site", "eval", map[string]any{"js": "document.title"}); got != "second page" {
		t.Fatalf("after navigate, eval document.title = %v", got)
	}
	e.must(200, "POST", "/api/host/site/present", editor, map[string]any{"action": "hide"})
	if _, err := pollString(ctx, `document.body.classList.contains("hidden-by-agent") && "ok"`, 10*time.Second); err != nil {
		t.Fatalf("hide: %v", err)
	}
	e.must(200, "POST", "/api/host/site/present", editor, map[string]any{"action": "show", "path": "/"})
	if _, err := pollString(ctx, `!document.body.classList.contains("hidden-by-agent") && window.canvasdViewer.ready && window.canvasdViewer.page === "" && "ok"`, 10*time.Second); err != nil {
		t.Fatalf("show: %v", err)
	}
	if got := e.hostResult(editor, "site", "eval", map[string]any{"js": "document.title"}); got != "agent page" {
		t.Fatalf("after show /, eval document.title = %v", got)
	}
	// A path outside the session is refused before it reaches a browser.
	if r := e.do("POST", "/api/host/site/present", editor, map[string]any{"action": "navigate", "path": "../other/index.html"}); r.Status != 422 {
		t.Fatalf("navigate outside the session: %d %s", r.Status, r.Body)
	}
}

// TestViewerKeepsTokensOutOfURLs opens the session as the README says
// (/host/{session}/?access_token=...): after the first redirect no URL holds
// the token: not the address bar (nor its fragment), not the viewer's
// stream or any request it or its page made, and the page in the frame
// cannot read it. The shell used to end on .../__canvas__/#access_token=...
// and follow its stream with ?access_token=.
func TestViewerKeepsTokensOutOfURLs(t *testing.T) {
	e := newHostTestEnv(t, host.Config{})
	admin := testAdmin
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	e.must(201, "PUT", "/api/host/demo/files/probe.html", editor,
		`<!doctype html><title>probe</title><script>
		let seen = [location.href, document.referrer];
		try { seen.push(document.cookie) } catch (e) { seen.push("cookie blocked") }
		try { seen.push(String(localStorage.length)) } catch (e) { seen.push("storage blocked") }
		try { seen.push(parent.document.documentElement.outerHTML) } catch (e) { seen.push("parent blocked") }
		document.title = seen.join(" | ");</script>`)

	// The listener runs on chromedp's goroutines until the test ends, so the
	// URLs it saw are read under the lock, never by closing a channel it
	// may still send on.
	var (
		urlsMu sync.Mutex
		urls   []string
	)
	ctx := newChromium(t, "about:blank")
	if err := chromedp.Listen(ctx, func(ev any) {
		if r, ok := ev.(*network.EventRequestWillBeSent); ok {
			urlsMu.Lock()
			urls = append(urls, r.Request.URL+r.Request.URLFragment)
			urlsMu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{})
		return err
	}), chromedp.Navigate(e.srv.URL+"/host/demo/?access_token="+admin)); err != nil {
		t.Fatal(err)
	}
	waitViewer(t, ctx)
	loc, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(loc, admin) || strings.Contains(loc, "access_token") || !strings.Contains(loc, "/host/demo/~") || !strings.Contains(loc, "/__canvas__/") {
		t.Fatalf("the viewer ended at %q", loc)
	}
	// The page in the frame sees neither the token nor the viewer.
	e.must(200, "POST", "/api/host/demo/present", editor, map[string]any{"action": "navigate", "path": "probe.html"})
	if _, err := pollString(ctx, `window.canvasdViewer.page === "probe.html" && window.canvasdViewer.ready && "ok"`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	seen := e.hostResult(editor, "demo", "eval", map[string]any{"js": "document.title"}).(string)
	t.Logf("the page saw %q", seen)
	if strings.Contains(seen, admin) || strings.Contains(seen, host.CapPrefix) || !strings.HasSuffix(seen, "parent blocked") {
		t.Fatalf("the page saw %q", seen)
	}
	urlsMu.Lock()
	seenURLs := append([]string(nil), urls...)
	urlsMu.Unlock()
	n := 0
	for _, u := range seenURLs {
		n++
		if u == e.srv.URL+"/host/demo/?access_token="+admin {
			continue // the first request, the one the person opened
		}
		if strings.Contains(u, admin) || strings.Contains(u, "access_token") || strings.Contains(u, host.CapPrefix) {
			t.Errorf("a request after the first redirect carries a credential: %s", u)
		}
	}
	if n < 4 {
		t.Fatalf("saw only %d requests", n)
	}
}

func decodeSnapshot(t *testing.T, snap map[string]any) image.Image {
	t.Helper()
	im, _ := snap["image"].(map[string]any)
	dataURL, _ := im["dataUrl"].(string)
	b64, ok := strings.CutPrefix(dataURL, "data:image/png;base64,")
	if !ok || im["mime"] != "image/png" {
		t.Fatalf("snapshot image is not a PNG data URL: %.80s (mime %v)", dataURL, im["mime"])
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	if im["bytes"] != float64(len(raw)) {
		t.Errorf("snapshot says %v bytes, the data URL holds %d", im["bytes"], len(raw))
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("snapshot PNG: %v", err)
	}
	return img
}

// wantColor checks the pixel at (x, y) within a small tolerance.
func wantColor(t *testing.T, img image.Image, x, y int, want color.RGBA) {
	t.Helper()
	r, g, b, _ := img.At(x, y).RGBA()
	got := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}
	near := func(a, b uint8) bool { d := int(a) - int(b); return d > -8 && d < 8 }
	if !near(got.R, want.R) || !near(got.G, want.G) || !near(got.B, want.B) {
		t.Errorf("pixel (%d, %d) is %v, want %v", x, y, got, want)
	}
}

// TestWebUIPagesPanelInChromium: in the web UI, the agent's present show
// opens the agent panel's Pages tab on the open canvas's host session (the
// viewer, under a ticket of the UI's token), host actions reach the page it
// shows, navigate moves it, hide closes it, and the tab opens it again.
func TestWebUIPagesPanelInChromium(t *testing.T) {
	open := uiBrowser(t, 90*time.Second)
	e := newHostTestEnv(t, host.Config{})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	agent, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	const cid = "panelboard"
	e.must(201, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": cid, "title": "Panel"})
	e.must(201, "PUT", "/api/host/"+cid+"/files/index.html", agent, agentPage)
	e.must(201, "PUT", "/api/host/"+cid+"/files/second.html", agent, `<!doctype html><title>second page</title><p>second</p>`)
	p := open(e.srv.URL + "/?canvas=" + cid + "#access_token=" + editor)
	p.poll("the canvas is live", `document.getElementById('conn').textContent === 'live' && document.body.dataset.loaded === '`+cid+`'`)
	viewer := `document.getElementById('host-frame') && document.getElementById('host-frame').contentWindow.canvasdViewer`
	tab := `!document.querySelector('[data-pane="pages"]').hidden`
	if r := e.must(200, "POST", "/api/host/"+cid+"/present", agent, map[string]any{"action": "show"}); r["panels"] != float64(1) {
		t.Fatalf("present show reached %v panels", r["panels"])
	}
	p.poll("show opens the Pages tab with the viewer", tab+` && `+viewer+` && `+viewer+`.ready && `+viewer+`.page === ""`)
	var src string
	p.eval(`document.getElementById('host-frame').src`, &src)
	if strings.Contains(src, editor) || !strings.Contains(src, "/host/"+cid+"/~") {
		t.Fatalf("the tab's viewer is at %q", src)
	}
	if got := e.hostResult(agent, cid, "eval", map[string]any{"js": "document.title"}); got != "agent page" {
		t.Fatalf("eval in the tab's page: %v", got)
	}
	e.must(200, "POST", "/api/host/"+cid+"/present", agent, map[string]any{"action": "navigate", "path": "second.html"})
	p.poll("the tab's viewer navigated", viewer+`.ready && `+viewer+`.page === "second.html"`)
	e.must(200, "POST", "/api/host/"+cid+"/present", agent, map[string]any{"action": "hide"})
	p.poll("hide closes the tab's viewer", `!(`+tab+`) && !document.getElementById('host-frame')`)
	p.clickCSS("#tab-pages")
	p.poll("the tab opens it again", tab+` && `+viewer+` && `+viewer+`.ready`)
}
