package api

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// chromiumPath is Debian's chromium (CI installs the package).
const chromiumPath = "/usr/bin/chromium"

// TestHostShellInChromium loads the built-in A2UI shell in headless
// Chromium: a pushed surface renders with its data bindings, a data-model
// update re-renders it live, a button's userAction (with its bound context)
// reaches the agent inbox, and invokes (eval in the sandboxed helper,
// snapshot) are answered by the page.
func TestHostShellInChromium(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no %s (apt-get install chromium): %v", chromiumPath, err)
	}
	e := newHostTestEnv(t, host.Config{})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	if code, res := e.post("/api/host/ui/a2ui", editor, "application/jsonl", []byte(hostSurface)); code != 200 {
		t.Fatalf("push: %d %v", code, res)
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	browser, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// The first action starts the browser and must not run under a timeout
	// (it would stop the browser); later ones do.
	if err := chromedp.Do(browser, chromedp.Navigate(e.srv.URL+"/host/ui/?access_token="+editor)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	ctx, cancelT := context.WithTimeout(browser, 60*time.Second)
	defer cancelT()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-component-id="title"]`))); err != nil {
		t.Fatalf("render: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-component-id="title"]`)))
	if err != nil {
		t.Fatal(err)
	}
	status, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#status`)))
	if err != nil {
		t.Fatal(err)
	}
	if title != "Hello from A2UI" || status != "connected" {
		t.Fatalf("title %q, status %q", title, status)
	}

	// Live data-model update.
	upd := `{"dataModelUpdate":{"surfaceId":"main","path":"/greeting","contents":[]}}` + "\n" +
		`{"dataModelUpdate":{"surfaceId":"main","contents":[{"key":"greeting","valueString":"Updated live"},{"key":"form","valueMap":[{"key":"name","valueString":"Ada"}]}]}}`
	if code, res := e.post("/api/host/ui/a2ui", editor, "application/jsonl", []byte(upd)); code != 200 {
		t.Fatalf("update: %d %v", code, res)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('[data-component-id="title"]').textContent === "Updated live"`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("live update not rendered: %v", err)
	}

	// Type into the bound text field, then click the button.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`[data-component-id="name"] input`), " Lovelace"),
		chromedp.Click(chromedp.CSS(`[data-component-id="btn"]`)),
	)
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	m := e.inbox.next(t)
	if m.Action == nil || m.Action.Name != "submit" || m.Action.SurfaceID != "main" || m.Action.SourceComponentID != "btn" ||
		m.Action.Context["name"] != "Ada Lovelace" || m.Action.Context["kind"] != "demo" || m.HostSession != "ui" {
		t.Fatalf("userAction reached the inbox as %+v (action %+v)", m, m.Action)
	}

	// Invokes answered by the page.
	r := e.do("POST", "/api/invoke", editor, map[string]any{"host_session": "ui", "action": "eval", "payload": map[string]any{"js": "6*7"}, "timeout_ms": 10000})
	if r.Status != 200 || r.json(t)["result"] != float64(42) {
		t.Fatalf("eval invoke: %d %s", r.Status, r.Body)
	}
	// The eval helper runs in an opaque origin: no access to the shell's token or cookies.
	r = e.do("POST", "/api/invoke", editor, map[string]any{"host_session": "ui", "action": "eval", "payload": map[string]any{"js": "String(location.search) + '|' + (function(){try{return document.cookie}catch(e){return 'blocked'}})()"}, "timeout_ms": 10000})
	if res, _ := r.json(t)["result"].(string); r.Status != 200 || strings.Contains(res, editor) || !strings.HasSuffix(res, "|blocked") {
		t.Fatalf("eval sandbox: %d %s", r.Status, r.Body)
	}
	r = e.do("POST", "/api/invoke", editor, map[string]any{"host_session": "ui", "action": "snapshot", "timeout_ms": 10000})
	if res, _ := r.json(t)["result"].(map[string]any); r.Status != 200 || !strings.Contains(res["text"].(string), "Updated live") {
		t.Fatalf("snapshot invoke: %d %s", r.Status, r.Body)
	}
	r = e.do("POST", "/api/invoke", editor, map[string]any{"host_session": "ui", "action": "teleport", "timeout_ms": 10000})
	if r.Status != 200 || r.json(t)["ok"] != false {
		t.Fatalf("unsupported invoke: %d %s", r.Status, r.Body)
	}

	// A template list over a data-model map, with relative bindings.
	list := `{"surfaceUpdate":{"surfaceId":"todo","components":[{"id":"todos","component":{"List":{"children":{"template":{"componentId":"todo_item","dataBinding":"/items"}}}}},{"id":"todo_item","component":{"Text":{"text":{"path":"title"}}}}]}}` + "\n" +
		`{"dataModelUpdate":{"surfaceId":"todo","contents":[{"key":"items","valueMap":[{"key":"a","valueMap":[{"key":"title","valueString":"first"}]},{"key":"b","valueMap":[{"key":"title","valueString":"second"}]}]}]}}` + "\n" +
		`{"beginRendering":{"surfaceId":"todo","root":"todos"}}`
	if code, res := e.post("/api/host/ui/a2ui", editor, "application/jsonl", []byte(list)); code != 200 {
		t.Fatalf("list push: %d %v", code, res)
	}
	items, err := chromedp.Run(ctx, chromedp.Poll[string](
		`(() => { const t = [...document.querySelectorAll('[data-surface-id="todo"] [data-component-id="todo_item"]')].map(e => e.textContent).join(","); return t === "first,second" && t; })()`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || items != "first,second" {
		t.Fatalf("template list: %q %v", items, err)
	}

	// Reset removes the surface from the page.
	e.must(204, "POST", "/api/host/ui/a2ui/reset", editor, nil)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('[data-component-id="title"]') === null`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("reset not rendered: %v", err)
	}

	// An agent-written page runs its scripts in an opaque origin: no cookies,
	// no storage; served with the sandbox policy.
	page := `<!doctype html><title>agent</title><body><p id="out">waiting</p><script>
var r = [];
try { document.cookie; r.push("cookie-ok"); } catch (e) { r.push("cookie-blocked"); }
try { localStorage.length; r.push("storage-ok"); } catch (e) { r.push("storage-blocked"); }
r.push(String(self.origin));
document.getElementById("out").textContent = r.join(" ");
</script></body>`
	e.must(201, "PUT", "/api/host/agentpage/files/index.html", editor, page)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/host/agentpage/?access_token="+editor)); err != nil {
		t.Fatal(err)
	}
	out, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const t = document.getElementById("out").textContent; return t !== "waiting" && t; })()`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || out != "cookie-blocked storage-blocked null" {
		t.Fatalf("agent page ran as %q (%v); want an opaque origin", out, err)
	}
}

// TestHostPageTicketsInChromium opens a session with ?access_token= in
// headless Chromium: the browser lands on the page-ticket URL; the built-in
// shell gets its token from the URL fragment and connects; when the agent
// writes index.html with an external stylesheet and script, the shell opens
// it under the ticket, where it renders styled and its script runs without
// the token anywhere in its location; a presented page in the shell's frame
// loads through the ticket too.
func TestHostPageTicketsInChromium(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no %s (apt-get install chromium): %v", chromiumPath, err)
	}
	e := newHostTestEnv(t, host.Config{})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	viewer, _ := e.token(canvas.RoleViewer, canvas.ActorHuman, "styled")

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	browser, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Do(browser, chromedp.Navigate(e.srv.URL+"/host/styled/?access_token="+viewer)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	ctx, cancelT := context.WithTimeout(browser, 60*time.Second)
	defer cancelT()
	// No index.html yet: the shell, under the ticket, token in the fragment only.
	where, err := chromedp.Run(ctx, chromedp.Poll[string](
		`document.getElementById("status") && document.getElementById("status").textContent === "connected" && location.pathname + "|" + location.search + "|" + location.hash`,
		chromedp.WithPollingTimeout(15*time.Second)))
	if err != nil {
		t.Fatalf("shell did not connect: %v", err)
	}
	parts := strings.Split(where, "|")
	if !strings.HasPrefix(parts[0], "/host/styled/~") || !strings.HasSuffix(parts[0], "/__canvas__/") || parts[1] != "" ||
		parts[2] != "#access_token="+viewer+"&root=1" {
		t.Fatalf("shell opened at %q", where)
	}
	ticketBase := strings.TrimSuffix(parts[0], "__canvas__/")

	// The agent writes a page with an external stylesheet and script; the shell opens it.
	e.must(201, "PUT", "/api/host/styled/files/style.css", editor, "body { background-color: rgb(10, 20, 30) } #out { color: rgb(200, 100, 50) }")
	e.must(201, "PUT", "/api/host/styled/files/app.js", editor,
		`document.getElementById("out").textContent = "ran|" + location.href + "|" + String(self.origin);`)
	e.must(201, "PUT", "/api/host/styled/files/index.html", editor,
		`<!doctype html><html><head><link rel="stylesheet" href="style.css"><script src="app.js" defer></script></head><body><p id="out">waiting</p></body></html>`)
	// The shell navigates to the page: poll again when the navigation ends a poll
	// ("navigated or closed", "cannot find context").
	var got string
	for deadline := time.Now().Add(15 * time.Second); ; {
		got, err = chromedp.Run(ctx, chromedp.Poll[string](
			`(() => { const o = document.getElementById("out"); if (!o || !o.textContent.startsWith("ran")) return false;
			  return o.textContent + "|" + getComputedStyle(document.body).backgroundColor + "|" + getComputedStyle(o).color; })()`,
			chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("agent page did not run its script: %v", err)
	}
	t.Logf("agent page reported %q", got)
	f := strings.Split(got, "|")
	if len(f) != 5 || f[1] != e.srv.URL+ticketBase || f[2] != "null" || f[3] != "rgb(10, 20, 30)" || f[4] != "rgb(200, 100, 50)" {
		t.Fatalf("agent page: %q (want script run at %s in an opaque origin, styled)", got, ticketBase)
	}
	if strings.Contains(got, viewer) || strings.Contains(got, "access_token") {
		t.Fatalf("the agent page's script can see the token: %q", got)
	}

	// The explicit shell: a presented page loads in its frame through the ticket.
	e.must(201, "PUT", "/api/host/styled/files/docs/index.html", editor, `<p>docs</p>`)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/host/styled/__canvas__/?access_token="+viewer)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("status").textContent === "connected"`,
		chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("explicit shell did not connect: %v", err)
	}
	if code, res := e.post("/api/host/styled/present", editor, "application/json", []byte(`{"action":"navigate","path":"docs/"}`)); code != 200 {
		t.Fatalf("present: %d %v", code, res)
	}
	src, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const f = document.getElementById("page"); return !f.hidden && f.src; })()`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || !strings.Contains(src, "/host/styled/~") || !strings.HasSuffix(src, "/docs/") || strings.Contains(src, "access_token") {
		t.Fatalf("presented frame src %q (%v)", src, err)
	}
}
