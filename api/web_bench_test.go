package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"

	"github.com/canvasd/canvasd/canvas"
)

// BenchmarkWebUI measures the built-in UI in headless Chromium against a
// real server:
//
//   - open-5k-ms: opening a canvas of 5,000 shapes, from navigation start to
//     the first animation frame after the shapes were put on stage
//     (open-5k-app-ms: from the app's open of the canvas); open-20k-ms and
//     open-20k-app-ms the same for 20,000 shapes;
//   - commit-p50-ms, commit-p95-ms: a remote commit on screen, from just
//     before another actor's move of a shape in view is sent over HTTP to the
//     animation frame presenting Excalidraw's first redraw of its canvas that
//     shows the shape at its new place (observed at the canvas: the start of
//     each redraw checks the scene), the agent protocol's apply-jitter SLO;
//     commit-drawn-p95-ms stops at that redraw; commit-20k-p95-ms and
//     commit-20k-drawn-p95-ms on the canvas of 20,000 shapes;
//   - open-5k-busy-ms: open-5k-ms again, three times, each in a fresh
//     browser context (nothing cached), with two CPU-bound processes running
//     beside them (openUnderLoad): the median, with the range as
//     open-5k-busy-ms-min and -max (one such open swings by a few hundred ms).
//
// Targets: open ≤ 1 s at 5,000 shapes, also at a load average of 4, ≤ 2.5 s
// at 20,000; commit p95 ≤ 50 ms at both. The machine's load average is
// logged with the figures: on a loaded machine they measure the load too.
//
// With CANVASD_UI_TRACE=dir each open is traced (Chrome's trace of the
// browser's processes with the page's JavaScript sampled, written to
// dir/open-5k.json and dir/open-20k.json for DevTools' Performance panel or
// Perfetto), and the CPU the page's main thread spent from navigation to
// the open is logged: a figure the machine's load changes far less than
// the wall times (the tracing itself slows the page somewhat).
func BenchmarkWebUI(b *testing.B) {
	if _, err := os.Stat(chromiumPath); err != nil {
		b.Fatalf("no %s (make deps installs it): %v", chromiumPath, err)
	}
	for b.Loop() {
		benchWebUI(b, 5000)
		benchWebUI(b, 20000)
	}
}

func benchWebUI(b *testing.B, shapes int) {
	e := newTestEnv(b)
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	agent, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	k := fmt.Sprintf("%dk", shapes/1000)
	cid := "bench-" + k
	e.must(201, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": cid, "title": fmt.Sprintf("%d shapes", shapes)})
	const perBatch = 500
	sub := "" // the metrics' infix: none for 5,000 shapes (as before), "-20k" for 20,000
	if shapes != 5000 {
		sub = "-" + k
	}
	kinds := []map[string]any{
		{"type": "geo", "props": map[string]any{"geo": "rectangle", "color": "blue", "fill": "semi", "text": "box"}},
		{"type": "geo", "props": map[string]any{"geo": "ellipse", "color": "green"}},
		{"type": "note", "props": map[string]any{"text": "a note", "color": "yellow"}},
		{"type": "text", "props": map[string]any{"text": "some text"}},
	}
	head := int64(0)
	for i := 0; i < shapes; i += perBatch {
		var cmds []map[string]any
		for j := i; j < i+perBatch; j++ {
			k := kinds[j%len(kinds)]
			cmds = append(cmds, map[string]any{"type": "create_shape", "args": map[string]any{"id": fmt.Sprintf("s%d", j), "type": k["type"],
				"x": (j % 100) * 220, "y": (j / 100) * 160, "w": 180, "h": 120, "props": k["props"]}})
		}
		m := e.must(200, "POST", "/canvas_commands/"+cid+"/commands", agent, map[string]any{"base_rev": head, "commands": cmds})
		head = int64(m["current_rev"].(float64))
	}
	open := uiBrowser(b, 5*time.Minute)
	url := e.srv.URL + "/?canvas=" + cid + "#access_token=" + editor
	traceDir := os.Getenv("CANVASD_UI_TRACE")
	var p *uiPage
	var stopTrace func() []byte
	if traceDir == "" {
		p = open(url)
	} else {
		p = open("about:blank")
		stopTrace = p.trace()
		p.do(chromedp.Navigate(url))
	}
	p.poll("opened", `document.body.dataset.loaded === '`+cid+`' && canvasd.view.ex.getSceneElements().length >= `+fmt.Sprint(shapes))
	var open5k struct{ Nav, Own float64 }
	p.eval(`({nav: canvasd.openedAt, own: canvasd.loadedAt})`, &open5k)
	if stopTrace != nil {
		tr := stopTrace()
		file := filepath.Join(traceDir, "open-"+k+".json")
		if err := os.WriteFile(file, tr, 0o644); err != nil {
			b.Fatal(err)
		}
		cpu, err := mainThreadCPU(tr, "canvas="+cid, open5k.Nav)
		if err != nil {
			b.Fatalf("%s: %v", file, err)
		}
		b.ReportMetric(cpu, "open-"+k+"-main-cpu-ms")
		b.Logf("%d shapes: the page's main thread spent %.0f ms of CPU from navigation to the open (%.0f ms); trace in %s", shapes, cpu, open5k.Nav, file)
	}
	p.poll("live", `document.getElementById('conn').textContent === 'live'`)

	var timing, viewTiming map[string]float64
	p.eval(`canvasd.timing`, &timing)
	p.eval(`canvasd.view.timing`, &viewTiming)

	// The page watches its static canvas: each redraw starts with a fill of
	// the background at (0, 0); then the scene is checked for the shapes
	// expected at a new place, and the next animation frame presents it.
	p.eval(`(() => {
		const b = window.__bench = { want: new Map(), drawn: {}, shown: {} };
		const ctx = document.querySelector('canvas.excalidraw__canvas.static').getContext('2d');
		const fill = ctx.fillRect;
		ctx.fillRect = function (x, y, w, h) {
			if (x === 0 && y === 0 && b.want.size) {
				const els = canvasd.view.ex.getSceneElementsIncludingDeleted();
				for (const [k, [id, minX]] of b.want) {
					const el = els.find((e) => e.id === id);
					if (!el || el.x < minX - 0.01) continue;
					b.want.delete(k);
					b.drawn[k] = performance.timeOrigin + performance.now();
					requestAnimationFrame(() => { b.shown[k] = performance.timeOrigin + performance.now(); });
				}
			}
			return fill.call(this, x, y, w, h);
		};
		b.expect = (k, id, minX) => { b.want.set(k, [id, minX]); };
		return true;
	})()`, nil)

	// The shapes in view: remote moves of those are what the user sees.
	var vp struct{ X, Y, W, H float64 }
	p.eval(`canvasd.view.viewport()`, &vp)
	var inView []int
	for j := 0; j < shapes; j++ {
		x, y := float64((j%100)*220), float64((j/100)*160)
		if x >= vp.X && y >= vp.Y && x+400 <= vp.X+vp.W && y+300 <= vp.Y+vp.H { // room for the moves
			inView = append(inView, j)
		}
	}
	if len(inView) < 4 {
		b.Fatalf("only %d shapes in view %+v", len(inView), vp)
	}

	// Remote commits: another actor moves shapes in view, 20 a second.
	stopProfile := profilePage(b, p) // CANVASD_BENCH_PROFILE=1: a CPU profile of the page while they come
	const commits = 200
	sent := map[int]float64{} // k → wall ms just before sending
	xs := map[int]float64{}
	rng := rand.New(rand.NewPCG(1, 2))
	pace := time.NewTicker(50 * time.Millisecond) // the rate of the commits, not a synchronisation
	defer pace.Stop()
	for k := 0; k < commits; k++ {
		j := inView[rng.IntN(len(inView))]
		if _, ok := xs[j]; !ok {
			xs[j] = float64((j % 100) * 220)
		}
		xs[j] += 2
		p.eval(fmt.Sprintf(`__bench.expect(%d, "s%d", %v)`, k, j, xs[j]), nil)
		before := float64(time.Now().UnixNano()) / 1e6
		m := e.must(200, "POST", "/canvas_commands/"+cid+"/command", agent, env("move", head, map[string]any{"ids": []string{fmt.Sprintf("s%d", j)}, "dx": 2, "dy": 1}))
		head = int64(m["current_rev"].(float64))
		sent[k] = before
		<-pace.C
	}
	p.poll("all shown", fmt.Sprintf(`Object.keys(__bench.shown).length === %d`, commits))
	stopProfile()
	var seen struct{ Drawn, Shown map[string]float64 }
	p.eval(`({drawn: __bench.drawn, shown: __bench.shown})`, &seen)
	lat, drawn := make([]float64, 0, commits), make([]float64, 0, commits)
	for k, at := range sent {
		lat = append(lat, seen.Shown[fmt.Sprint(k)]-at)
		drawn = append(drawn, seen.Drawn[fmt.Sprint(k)]-at)
	}
	slices.Sort(lat)
	slices.Sort(drawn)
	pct := func(l []float64, q float64) float64 { return l[int(q*float64(len(l)-1))] }
	load, _ := os.ReadFile("/proc/loadavg")
	p.screenshot("bench-" + k)
	if shapes == 5000 {
		reportSpread(b, openUnderLoad(b, e.srv.URL+"/?canvas="+cid+"#access_token="+editor, cid, shapes), "open-"+k+"-busy-ms")
	}
	b.ReportMetric(open5k.Nav, "open-"+k+"-ms")
	b.ReportMetric(open5k.Own, "open-"+k+"-app-ms")
	b.ReportMetric(pct(lat, 0.5), "commit"+sub+"-p50-ms")
	b.ReportMetric(pct(lat, 0.95), "commit"+sub+"-p95-ms")
	b.ReportMetric(lat[len(lat)-1], "commit"+sub+"-max-ms")
	b.ReportMetric(pct(drawn, 0.95), "commit"+sub+"-drawn-p95-ms")
	target := 1000
	if shapes > 5000 {
		target = 2500
	}
	b.Logf("%d shapes open in %.0f ms from navigation (the app opens it at %.0f ms; from there: snapshot read at +%.0f ms, elements built %.0f ms later, editor ready after %.0f ms, on stage at +%.0f ms, first frame at +%.0f ms); "+
		"remote commit on screen p50 %.1f ms, p95 %.1f ms, max %.1f ms (drawn p50 %.1f ms, p95 %.1f ms; %d commits on shapes in view); "+
		"targets: open ≤ %d ms, p95 ≤ 50 ms; load average %s",
		shapes, open5k.Nav, timing["open"], timing["snapshot"]-timing["open"], viewTiming["built"], viewTiming["ready"], timing["staged"]-timing["open"], open5k.Own,
		pct(lat, 0.5), pct(lat, 0.95), lat[len(lat)-1], pct(drawn, 0.5), pct(drawn, 0.95), commits, target, strings.TrimSpace(string(load)))
}

// openUnderLoad opens the web UI at url, which shows canvas cid of shapes
// shapes, three times, each in a fresh browser context (nothing cached),
// while two CPU-bound processes run beside it, and returns each time from
// navigation to the canvas on screen. On a 2-core machine otherwise idle
// that is a load average of about 4 while the page opens (the load average
// itself trails by a minute, so it is not read here).
func openUnderLoad(b *testing.B, url, cid string, shapes int) []float64 {
	for range 2 {
		busy := exec.Command("sh", "-c", "while :; do :; done")
		if err := busy.Start(); err != nil {
			b.Fatalf("start a busy process: %v", err)
		}
		defer func() {
			_ = busy.Process.Kill()
			_ = busy.Wait()
		}()
	}
	navs := make([]float64, 3)
	for i := range navs {
		p := uiBrowser(b, 5*time.Minute)(url)
		p.poll("opened under load", `document.body.dataset.loaded === '`+cid+`' && canvasd.view.ex.getSceneElements().length >= `+fmt.Sprint(shapes))
		p.eval(`canvasd.openedAt`, &navs[i])
		p.do(chromedp.Navigate("about:blank")) // so that it does not run beside the next
	}
	return navs
}

// trace starts a Chrome trace of the browser (its processes' tasks, the
// pages' JavaScript sampled); the function returned stops it and returns
// the trace in Chrome's JSON format.
func (p *uiPage) trace() func() []byte {
	p.t.Helper()
	var (
		events [][]byte
		done   = make(chan struct{})
	)
	ctx, cancel := context.WithCancel(p.ctx)
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *tracing.EventDataCollected: // delivered in order, before TracingComplete
			for _, v := range ev.Value {
				events = append(events, v)
			}
		case *tracing.EventTracingComplete:
			close(done)
		}
	}); err != nil {
		p.t.Fatal(err)
	}
	if _, err := chromedp.Call(p.ctx, tracing.Start, tracing.StartParams{TraceConfig: &tracing.TraceConfig{EnableSampling: true,
		IncludedCategories: []string{"toplevel", "devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "v8.execute",
			"disabled-by-default-v8.cpu_profiler", "blink.user_timing", "loading", "netlog", "disabled-by-default-devtools.timeline.frame"}}}); err != nil {
		p.t.Fatalf("start tracing: %v", err)
	}
	return func() []byte {
		p.t.Helper()
		defer cancel()
		if _, err := chromedp.Call(p.ctx, tracing.End, struct{}{}); err != nil {
			p.t.Fatalf("end tracing: %v", err)
		}
		select {
		case <-done:
		case <-p.ctx.Done():
			p.t.Fatalf("tracing: %v", p.ctx.Err())
		}
		var b strings.Builder
		b.WriteString(`{"traceEvents":[`)
		for i, v := range events {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(v)
		}
		b.WriteString("]}")
		return []byte(b.String())
	}
}

// mainThreadCPU is the CPU time (ms) the main thread of the page whose
// address contains url spent in the ms after its navigation started, from
// a Chrome trace: the thread time of its top-level tasks.
func mainThreadCPU(trace []byte, url string, ms float64) (float64, error) {
	var tr struct {
		TraceEvents []struct {
			Name, Ph string
			Pid, Tid int64
			Ts, Dur  float64
			Tdur     *float64
			Args     json.RawMessage
		}
	}
	if err := json.Unmarshal(trace, &tr); err != nil {
		return 0, err
	}
	var pid int64
	start := -1.0
	for _, e := range tr.TraceEvents {
		if e.Name == "navigationStart" && strings.Contains(string(e.Args), url) {
			pid, start = e.Pid, e.Ts // the last one: the page's own
		}
	}
	if start < 0 {
		return 0, fmt.Errorf("no navigation to %s", url)
	}
	tid := int64(-1)
	for _, e := range tr.TraceEvents {
		if e.Ph == "M" && e.Name == "thread_name" && e.Pid == pid && strings.Contains(string(e.Args), `"CrRendererMain"`) {
			tid = e.Tid
		}
	}
	type task struct{ ts, dur, cpu float64 }
	var tasks []task
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" && e.Pid == pid && e.Tid == tid && e.Tdur != nil && e.Ts >= start && e.Ts < start+ms*1000 {
			tasks = append(tasks, task{e.Ts, e.Dur, *e.Tdur})
		}
	}
	if len(tasks) == 0 {
		return 0, errors.New("no task of the page's main thread")
	}
	slices.SortFunc(tasks, func(a, b task) int { // outer first at one start
		if a.ts != b.ts {
			return cmp.Compare(a.ts, b.ts)
		}
		return cmp.Compare(b.dur, a.dur)
	})
	cpu, end := 0.0, 0.0
	for _, t := range tasks {
		if t.ts < end {
			continue // inside a task counted
		}
		cpu, end = cpu+t.cpu, t.ts+t.dur
	}
	return cpu / 1000, nil
}
