package api

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/internal/testchrome"
	"github.com/canvasd/canvasd/web"
)

// benchPage is a page of some substance for the snapshot: text, a list, a
// form, a table, colours, a canvas drawn by its script.
const benchPage = `<!doctype html><html><head><title>bench page</title><style>
body { margin: 0; font: 15px/1.5 sans-serif; background: #f7f7f2; color: #222 }
header { background: rgb(30, 90, 160); color: #fff; padding: 16px 24px; font-size: 22px }
main { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; padding: 16px 24px }
section { background: #fff; border: 1px solid #ddd; border-radius: 8px; padding: 12px }
td, th { border-bottom: 1px solid #eee; padding: 4px 8px; text-align: left }
</style></head><body><header>Quarterly plan</header><main>
<section><h2>Tasks</h2><ul id="tasks"></ul></section>
<section><h2>Numbers</h2><table id="nums"></table></section>
<section><h2>Form</h2><label>Name <input id="name" value="Ada"></label> <button id="go">Save</button><p id="out">idle</p></section>
<section><h2>Chart</h2><canvas id="c" width="500" height="220"></canvas></section>
</main><script>
const ul = document.getElementById("tasks");
for (let i = 1; i <= 12; i++) { const li = document.createElement("li"); li.textContent = "Task " + i + ": do something useful"; ul.append(li) }
const t = document.getElementById("nums");
for (let i = 0; i < 10; i++) { const tr = t.insertRow(); for (let j = 0; j < 4; j++) tr.insertCell().textContent = String((i + 1) * (j + 3)) }
const g = document.getElementById("c").getContext("2d");
for (let i = 0; i < 20; i++) { g.fillStyle = "hsl(" + i * 18 + ", 60%, 50%)"; g.fillRect(10 + i * 24, 210 - i * 9, 18, i * 9) }
</script></body></html>`

// BenchmarkHostPage measures the host actions with an agent's page shown in
// its viewer in headless Chromium (1280×800 of page), over a real server:
//
//   - eval-p50-ms, eval-p95-ms: POST /api/invoke eval {js: "document.title"}
//     to its answer: the server, the host stream to the viewer, the page's
//     runtime, the viewer's answer back;
//   - snapshot-p50-ms, snapshot-p95-ms: POST /api/invoke snapshot of the
//     page at 1280×800 (a PNG of its pixels drawn in the page) to its
//     answer; snapshot-kb is the PNG's size.
//
// and a2ui-gallery-ms: the A2UI gallery's 30 samples pushed at once to a
// session whose viewer shows the A2UI page, until all are on screen.
//
// Targets: eval p95 ≤ 50 ms, snapshot p95 ≤ 300 ms. The machine's load
// average is reported with the figures.
func BenchmarkHostPage(b *testing.B) {
	if _, err := os.Stat(chromiumPath); err != nil {
		b.Fatalf("no %s (make deps installs it): %v", chromiumPath, err)
	}
	if _, err := web.ShellFS().Open("page.js"); err != nil {
		b.Fatal("the host's pages are not built (make ui)")
	}
	for b.Loop() {
		benchHostPage(b)
	}
}

// newChromiumTab opens url in another tab of browser and waits for its viewer.
func newChromiumTab(b *testing.B, browser context.Context, url string) context.Context {
	tab, cancel := chromedp.NewContext(browser)
	b.Cleanup(cancel)
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		b.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`window.canvasdViewer && window.canvasdViewer.ready && document.getElementById("status").dataset.state === "open"`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		b.Fatal(err)
	}
	return tab
}

func benchHostPage(b *testing.B) {
	e := newHostTestEnv(b, host.Config{})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	e.must(201, "PUT", "/api/host/bench/files/index.html", editor, benchPage)

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), testchrome.Options(b.TempDir(), 1280, 1000)...)
	defer cancelAlloc()
	browser, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Do(browser, chromedp.Navigate(e.srv.URL+"/host/bench/?access_token="+editor)); err != nil {
		b.Fatal(err)
	}
	ctx, cancelT := context.WithTimeout(browser, 5*time.Minute)
	defer cancelT()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.canvasdViewer && window.canvasdViewer.ready && document.getElementById("status").dataset.state === "open"`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		b.Fatal(err)
	}
	// The page gets exactly 1280×800: the viewer's bar above it takes the rest.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const s = document.getElementById("stage"); s.style.flex = "none"; s.style.height = "800px"; return true })()`)); err != nil {
		b.Fatal(err)
	}
	invoke := func(action string, payload any) (time.Duration, map[string]any) {
		t0 := time.Now()
		r := e.do("POST", "/api/invoke", editor, map[string]any{"host_session": "bench", "action": action, "payload": payload, "timeout_ms": 20000})
		d := time.Since(t0)
		if r.Status != 200 || r.json(b)["ok"] != true {
			b.Fatalf("%s: %d %s", action, r.Status, r.Body)
		}
		return d, r.json(b)
	}
	for i := 0; i < 20; i++ { // warm up (the JIT, the connections)
		invoke("eval", map[string]any{"js": "document.title"})
	}
	invoke("snapshot", map[string]any{})
	var evals, snaps []time.Duration
	for i := 0; i < 300; i++ {
		d, _ := invoke("eval", map[string]any{"js": "document.title"})
		evals = append(evals, d)
	}
	var w, h, kb float64
	for i := 0; i < 30; i++ {
		d, a := invoke("snapshot", map[string]any{})
		snaps = append(snaps, d)
		res := a["result"].(map[string]any)
		w, h = res["width"].(float64), res["height"].(float64)
		kb = res["image"].(map[string]any)["bytes"].(float64) / 1024
	}
	if w != 1280 || h != 800 {
		b.Fatalf("the snapshot is %v×%v, want 1280×800", w, h)
	}
	// The A2UI page (the A2UI project's Lit renderer): the gallery's 30
	// samples pushed at once, until all are on screen.
	gallery := newChromiumTab(b, browser, e.srv.URL+"/host/gallery/?access_token="+editor)
	var body []byte
	n := 0
	for _, jsonl := range a2uiSamples(b, "gallery") {
		body = append(body, jsonl...)
		n++
	}
	t0 := time.Now()
	if code, res := e.post("/api/host/gallery/a2ui", editor, "application/jsonl", body); code != 200 {
		b.Fatalf("gallery push: %d %v", code, res)
	}
	r := e.do("POST", "/api/invoke", editor, map[string]any{"host_session": "gallery", "action": "eval", "timeout_ms": 20000,
		"payload": map[string]any{"js": pageWait(`document.body.dataset.surfaces === "` + strconv.Itoa(n) + `" && document.body.dataset.rendered === document.body.dataset.messages`)}})
	galleryMS := float64(time.Since(t0).Microseconds()) / 1000
	if r.Status != 200 || r.json(b)["result"] != true {
		b.Fatalf("the gallery did not render: %d %s", r.Status, r.Body)
	}
	_ = gallery
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(evals, 0.5)), "eval-p50-ms")
	b.ReportMetric(ms(percentile(evals, 0.95)), "eval-p95-ms")
	b.ReportMetric(ms(percentile(snaps, 0.5)), "snapshot-p50-ms")
	b.ReportMetric(ms(percentile(snaps, 0.95)), "snapshot-p95-ms")
	b.ReportMetric(kb, "snapshot-kb")
	b.ReportMetric(galleryMS, "a2ui-gallery-ms")
	b.ReportMetric(loadAvg(), "loadavg")
}
