package api

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/chromedp"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// ackTap is the benchmark's agent service: the test runner's, with every
// browser ack recorded on its way to the runner.
type ackTap struct {
	*lateAgent
	mu   sync.Mutex
	acks []canvas.AgentAck
}

func (a *ackTap) Ack(sessionID string, ack canvas.AgentAck) error {
	a.mu.Lock()
	a.acks = append(a.acks, ack)
	a.mu.Unlock()
	return a.lateAgent.Ack(sessionID, ack)
}

// BenchmarkAgentHostPage runs the agent loop against the real web UI as its
// host: the page, in headless Chromium, shows a canvas of 300 shapes, is
// elected host, answers the agent's screenshots (Excalidraw's export of the
// viewport, at most 800 px on the long side) and acks the action envelopes
// it applies. Each of 12 turns is a run of an OpenAI-compatible vision
// stub model (a local streaming server that answers at once: 12
// create_shape actions, one chunk each, 20 ms apart). Reported, with the
// load average beside them: time to first action from the run's start
// (SLO ≤ 200 ms), the screenshot's round trip (≤ 150 ms) and the host's
// apply jitter over every envelope of every turn (p95 ≤ 50 ms), p50 and
// p95 each.
func BenchmarkAgentHostPage(b *testing.B) {
	if _, err := os.Stat(chromiumPath); err != nil {
		b.Fatalf("no %s (make deps installs it): %v", chromiumPath, err)
	}
	for b.Loop() {
		benchAgentHostPage(b, 12, 300)
	}
}

func benchAgentHostPage(b *testing.B, turns, shapes int) {
	const actions = 12
	var replies []scriptedReply
	const paced = 5 // more turns, each once the page's picture of its view is ready (a person reading between turns)
	for t := 0; t < turns+paced; t++ {
		var chunks []string
		for i := 0; i < actions; i++ {
			sep := ","
			if i == 0 {
				sep = `{"actions":[`
			}
			chunks = append(chunks, sep+fmt.Sprintf(`{"name":"create_shape","params":{"type":"note","x":%d,"y":%d,"props":{"text":"t%d n%d"}}}`, i*220, 4000+t*240, t, i))
		}
		replies = append(replies, scriptedReply{chunks: append(chunks, "]}"), delay: 20 * time.Millisecond})
	}
	model := newFakeOpenAI(b, replies...)
	svc := &ackTap{lateAgent: &lateAgent{}}
	shots := &timedShots{Screenshotter: AgentScreenshotter{}}
	e, broker, sessions := newHostedAgentEnv(b, svc, nil)
	shots.Screenshotter = AgentScreenshotter{Hub: e.api.hub, Broker: broker}
	ctx := context.Background()
	agentTok, agentID := e.token(canvas.RoleEditor, canvas.ActorAgent)
	ac, err := client.New(e.srv.URL, agentTok)
	if err != nil {
		b.Fatal(err)
	}
	cfg := agent.DefaultConfig()
	cfg.Model, cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "openai:gpt-bench", "sk-test", model.srv.URL+"/v1"
	cfg.LowActionThreshold = 0 // one model call per run
	cfg.Watchdog, cfg.ScreenshotTimeout, cfg.AckTimeout = 30*time.Second, 10*time.Second, 5*time.Second
	runner, err := agent.NewRunner(agent.Deps{Config: cfg, Client: ac, ActorID: agentID, Events: e.api.hub, Store: sessions,
		Screenshots: shots})
	if err != nil {
		b.Fatal(err)
	}
	runner.Start(ctx)
	b.Cleanup(runner.Stop)
	svc.r.Store(runner)

	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	const cid = "agent-host-bench"
	e.must(201, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": cid, "title": "Agent loop"})
	kinds := []map[string]any{
		{"type": "geo", "props": map[string]any{"geo": "rectangle", "color": "blue", "fill": "semi", "text": "box"}},
		{"type": "geo", "props": map[string]any{"geo": "ellipse", "color": "green"}},
		{"type": "note", "props": map[string]any{"text": "a note", "color": "yellow"}},
		{"type": "text", "props": map[string]any{"text": "some text"}},
	}
	var cmds []map[string]any
	for j := 0; j < shapes; j++ {
		k := kinds[j%len(kinds)]
		cmds = append(cmds, map[string]any{"type": "create_shape", "args": map[string]any{"id": fmt.Sprintf("s%d", j), "type": k["type"],
			"x": (j % 20) * 220, "y": (j / 20) * 160, "w": 180, "h": 120, "props": k["props"]}})
	}
	e.must(200, "POST", "/canvas_commands/"+cid+"/commands", agentTok, map[string]any{"base_rev": 0, "commands": cmds})

	// The envelopes' send times, as every subscriber gets them.
	hc, _ := client.New(e.srv.URL, editor)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var envMu sync.Mutex
	sentTS := map[string]map[int64]int64{} // session → seq → ts
	watching := make(chan struct{})
	go func() {
		st := hc.Stream(sctx, cid, client.StreamOptions{})
		defer st.Close()
		for {
			ev, err := st.Recv()
			if err != nil {
				return
			}
			switch ev.Event {
			case client.EventCaughtUp:
				select {
				case <-watching:
				default:
					close(watching)
				}
			case client.EventAgentAction:
				var env agent.ActionEnvelope
				if ev.Decode(&env) == nil && !env.Partial {
					envMu.Lock()
					if sentTS[env.SessionID] == nil {
						sentTS[env.SessionID] = map[int64]int64{}
					}
					sentTS[env.SessionID][env.Seq] = env.TS
					envMu.Unlock()
				}
			}
		}
	}()
	<-watching

	open := uiBrowser(b, 5*time.Minute)
	p := open(e.srv.URL + "/?canvas=" + cid + "#access_token=" + editor)
	p.poll("live, drawn and host", `document.getElementById("conn").textContent === "live" && document.body.dataset.loaded === "`+cid+
		`" && !document.getElementById("host").hidden`)
	var vp client.Box
	p.eval(`canvasd.view.viewport()`, &vp)

	// What keeps the page's main thread busy during the turns: its long
	// tasks, and the time showing the commits takes (CanvasView.flush).
	p.eval(`(() => {
		const d = window.__agentBench = { long: [], flush: [], invokes: [] };
		// Each screenshot invoke's times (ms since the epoch, as the server's clock):
		// the page takes it from the stream, its answer is ready, its answer is posted.
		const live = canvasd.live, epoch = () => performance.timeOrigin + performance.now();
		const onInvoke = live.onInvoke.bind(live), shot = canvasd.screenshot.bind(canvasd), answer = live.client.answerInvoke.bind(live.client);
		let cur = null;
		live.onInvoke = (inv) => { if (inv.action === "agent:screenshot") d.invokes.push(cur = { in: epoch() }); return onInvoke(inv); };
		canvasd.screenshot = async (req) => { const c = cur; try { return await shot(req); } finally { if (c) c.ready = epoch(); } };
		live.client.answerInvoke = (id, a) => { if (cur && !cur.sent) cur.sent = epoch(); return answer(id, a); };
		new PerformanceObserver((l) => { for (const e of l.getEntries()) d.long.push(e.duration); }).observe({ type: "longtask" });
		const v = canvasd.view, f = v.flush.bind(v);
		v.flush = () => { const t = performance.now(); f(); d.flush.push(performance.now() - t); };
		return true;
	})()`, nil)
	stopProfile := profilePage(b, p) // CANVASD_BENCH_PROFILE=1: a CPU profile of the page during the turns
	// CANVASD_BENCH_TRACE=file: a Chrome trace of the page during the turns
	// (the main thread's tasks, the stream's data, the user timing marks),
	// written to file as JSON for chrome://tracing or Perfetto.
	endTrace := func() {}
	if file := os.Getenv("CANVASD_BENCH_TRACE"); file != "" {
		endTrace = tracePage(b, p, file)
	}
	var ttfa, shot, ttfb, pacedTTFA, pacedShot []float64
	var ids []string
	for t := 0; t < turns+paced; t++ {
		if t >= turns {
			p.poll("a picture of the view kept ready", `canvasd.readyShot !== null && canvasd.readyShot.key === canvasd.view.screenKey()`)
		}
		id, err := runner.Run(ctx, client.AgentRunRequest{RoomID: cid, Message: fmt.Sprintf("turn %d: add notes", t), Viewport: &vp})
		if err != nil {
			b.Fatal(err)
		}
		waitRunner(b, runner, id)
		s, _ := runner.Session(ctx, id)
		st := s.Stats
		if s.State != client.AgentDone || st.ScreenshotSource != agent.ShotFromBrowser || st.AcksMissed != 0 || st.Acks != actions {
			b.Fatalf("turn %d: session %s, stats %+v", t, s.State, st)
		}
		ids = append(ids, id)
		if t >= turns {
			pacedTTFA, pacedShot = append(pacedTTFA, st.TimeToFirstAction), append(pacedShot, st.ScreenshotMS)
			continue
		}
		ttfa = append(ttfa, st.TimeToFirstAction)
		shot = append(shot, st.ScreenshotMS)
		ttfb = append(ttfb, st.TTFBMS)
	}
	stop()
	endTrace()
	stopProfile()

	// The apply jitter of every envelope, as the server measures it (agent/browser.go):
	// each ack against the ack of the nearest seq below it in its session.
	var jitter []float64
	svc.mu.Lock()
	bySession := map[string][]canvas.AgentAck{}
	for _, a := range svc.acks {
		bySession[a.SessionID] = append(bySession[a.SessionID], a)
	}
	svc.mu.Unlock()
	envMu.Lock()
	for _, id := range ids {
		acks := bySession[id]
		slices.SortFunc(acks, func(x, y canvas.AgentAck) int { return int(x.Seq - y.Seq) })
		acks = slices.CompactFunc(acks, func(x, y canvas.AgentAck) bool { return x.Seq == y.Seq })
		for i := 1; i < len(acks); i++ {
			ts0, ok0 := sentTS[id][acks[i-1].Seq]
			ts1, ok1 := sentTS[id][acks[i].Seq]
			if !ok0 || !ok1 {
				b.Fatalf("session %s: acks of seqs %d, %d never seen on the stream", id, acks[i-1].Seq, acks[i].Seq)
			}
			d := float64((acks[i].AppliedAt - acks[i-1].AppliedAt) - (ts1 - ts0))
			jitter = append(jitter, max(d, -d))
		}
	}
	envMu.Unlock()
	if len(jitter) < (turns+paced)*(actions-1) {
		b.Fatalf("%d apply jitter samples of %d turns", len(jitter), turns)
	}
	pct := func(xs []float64, q float64) float64 {
		c := slices.Clone(xs)
		slices.Sort(c)
		return c[int(q*float64(len(c)-1)+0.5)]
	}
	// Where a screenshot's time goes in the page.
	var times []struct {
		Wait, Draw, Encode, Total float64
		From                      string
	}
	p.eval(`canvasd.shotTimes`, &times)
	var wait, draw, encode, total []float64
	screen := 0
	for _, t := range times {
		wait, draw, encode, total = append(wait, t.Wait), append(draw, t.Draw), append(encode, t.Encode), append(total, t.Total)
		if t.From == "screen" {
			screen++
		}
	}
	if len(times) > 0 {
		b.Logf("in the page, a screenshot's median (p95): %.0f (%.0f) ms waiting for the scene, %.0f (%.0f) ms drawn, %.0f (%.0f) ms encoded, %.0f (%.0f) ms in all (%d of %d copied from the screen); the session's first model byte at p50 %.0f ms",
			pct(wait, 0.5), pct(wait, 0.95), pct(draw, 0.5), pct(draw, 0.95), pct(encode, 0.5), pct(encode, 0.95), pct(total, 0.5), pct(total, 0.95), screen, len(times), pct(ttfb, 0.5))
	}
	// The same run's comparison: the page's picture of its view copied from
	// the screen against Excalidraw's export of the same bounds (what the
	// page did before), alternately, 10 of each.
	var cmpTimes struct{ Screen, Export []float64 }
	p.eval(`(async () => {
		const v = canvasd.view, vp = v.viewport(), out = { screen: [], export: [] };
		const nudged = { x: vp.x + 0.75, y: vp.y, w: vp.w, h: vp.h }; // not the view: exported
		for (let i = 0; i < 10; i++) {
			for (const [k, b] of [["screen", vp], ["export", nudged]]) {
				const t = performance.now();
				const shot = await v.picture(b, { w: 800, h: 800 });
				if (shot.from !== k) throw new Error("picture from " + shot.from + ", want " + k);
				out[k].push(performance.now() - t);
			}
		}
		return out;
	})()`, &cmpTimes)
	b.ReportMetric(pct(cmpTimes.Screen, 0.5)/pct(cmpTimes.Export, 0.5), "shot-screen/export")
	b.Logf("the page's picture of its view (800 px): copied from the screen p50 %.0f ms, exported p50 %.0f ms (%.2f×), the same run",
		pct(cmpTimes.Screen, 0.5), pct(cmpTimes.Export, 0.5), pct(cmpTimes.Screen, 0.5)/pct(cmpTimes.Export, 0.5))
	// Where the screenshots' round trips went, the server's times and the page's side by side.
	var inv []struct{ In, Ready, Sent float64 }
	p.eval(`__agentBench.invokes`, &inv)
	shots.mu.Lock()
	if len(inv) == len(shots.times) {
		var deliver, page, post []float64
		for i, t := range shots.times {
			deliver, page, post = append(deliver, inv[i].In-t[0]), append(page, inv[i].Sent-inv[i].In), append(post, t[1]-inv[i].Sent)
		}
		b.Logf("a screenshot's round trip, p50 (p95) ms: %.0f (%.0f) from the server's invoke to the page taking it from the stream, %.0f (%.0f) in the page until its answer is posted, %.0f (%.0f) until the server has the answer",
			pct(deliver, 0.5), pct(deliver, 0.95), pct(page, 0.5), pct(page, 0.95), pct(post, 0.5), pct(post, 0.95))
	} else {
		b.Logf("%d screenshots asked for, %d taken by the page: the round trips are not accounted for", len(shots.times), len(inv))
	}
	shots.mu.Unlock()
	var busy struct{ Long, Flush []float64 }
	p.eval(`({long: __agentBench.long, flush: __agentBench.flush})`, &busy)
	if len(busy.Flush) > 0 {
		sum := 0.0
		for _, l := range busy.Long {
			sum += l
		}
		b.Logf("the page's main thread: %d long tasks (%.0f ms in all, the longest %.0f ms); %d commit flushes, p50 %.1f ms, p95 %.1f ms",
			len(busy.Long), sum, slices.Max(append(busy.Long, 0)), len(busy.Flush), pct(busy.Flush, 0.5), pct(busy.Flush, 0.95))
	}
	load, _ := os.ReadFile("/proc/loadavg")
	b.ReportMetric(float64(turns), "turns")
	b.ReportMetric(pct(ttfa, 0.5), "ttfa-p50-ms")
	b.ReportMetric(pct(ttfa, 0.95), "ttfa-p95-ms")
	b.ReportMetric(pct(shot, 0.5), "screenshot-p50-ms")
	b.ReportMetric(pct(shot, 0.95), "screenshot-p95-ms")
	b.ReportMetric(pct(jitter, 0.5), "jitter-p50-ms")
	b.ReportMetric(pct(jitter, 0.95), "jitter-p95-ms")
	b.ReportMetric(pct(pacedShot, 0.5), "ready-screenshot-p50-ms")
	b.ReportMetric(pct(pacedTTFA, 0.5), "ready-ttfa-p50-ms")
	b.ReportMetric(loadAvg(), "loadavg")
	b.Logf("agent loop, the web UI as host (%d shapes, %d turns of %d actions): first action p50 %.0f ms, p95 %.0f ms (SLO ≤ 200); screenshot p50 %.0f ms, p95 %.0f ms (SLO ≤ 150); "+
		"apply jitter p50 %.0f ms, p95 %.0f ms over %d envelopes (SLO ≤ 50); load average %s; "+
		"%d more turns, each once the page had its picture of the view ready: screenshot p50 %.0f ms, max %.0f ms, first action p50 %.0f ms, max %.0f ms",
		shapes, turns, actions, pct(ttfa, 0.5), pct(ttfa, 0.95), pct(shot, 0.5), pct(shot, 0.95), pct(jitter, 0.5), pct(jitter, 0.95), len(jitter), strings.TrimSpace(string(load)),
		paced, pct(pacedShot, 0.5), slices.Max(pacedShot), pct(pacedTTFA, 0.5), slices.Max(pacedTTFA))
}

// profilePage starts a CPU profile of p's page when CANVASD_BENCH_PROFILE is
// set; the function it returns stops it and logs the functions with the most
// time of their own (logProfile). Without the variable, neither does anything.
func profilePage(b *testing.B, p *uiPage) (stop func()) {
	if os.Getenv("CANVASD_BENCH_PROFILE") == "" {
		return func() {}
	}
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, profiler.Enable, cdp.Empty{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, profiler.Start, cdp.Empty{})
		return err
	}))
	return func() {
		p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			res, err := cdp.Call(ctx, tg, profiler.Stop, cdp.Empty{})
			if err == nil {
				logProfile(b, res.Profile)
			}
			return err
		}))
	}
}

// timedShots is a Screenshotter that records each screenshot's start and
// end (ms since the epoch).
type timedShots struct {
	agent.Screenshotter
	mu    sync.Mutex
	times [][2]float64
}

func (t *timedShots) Screenshot(ctx context.Context, canvasID string, req agent.ScreenshotRequest, timeout time.Duration) (agent.Screenshot, error) {
	ms := func() float64 { return float64(time.Now().UnixMicro()) / 1000 }
	start := ms()
	s, err := t.Screenshotter.Screenshot(ctx, canvasID, req, timeout)
	t.mu.Lock()
	t.times = append(t.times, [2]float64{start, ms()})
	t.mu.Unlock()
	return s, err
}

// tracePage starts a Chrome trace of page p (uiPage.trace) with user timing
// marks of the agent loop's steps in it: the stream's events as the page
// takes them, the invokes' spans (event to answer posted), flushes, scene
// pushes and draws. The function it returns ends the trace and writes it to
// file (Chrome's JSON trace format).
func tracePage(b *testing.B, p *uiPage, file string) func() {
	p.eval(`(() => {
		const live = canvasd.live, v = canvasd.view, span = (o, k, name) => {
			const f = o[k].bind(o);
			o[k] = (...a) => { const t = performance.now(); const r = f(...a);
				if (r && r.then) return r.finally(() => performance.measure(name, { start: t }));
				performance.measure(name, { start: t }); return r; };
		};
		const emit = live.emit.bind(live);
		live.emit = (ev, ...a) => { performance.mark("emit " + ev + (ev === "agent:status" ? " " + a[0].state : "")); return emit(ev, ...a); };
		span(live, "onInvoke", "invoke");
		span(canvasd, "screenshot", "screenshot handler");
		span(v, "flush", "flush");
		span(v, "push", "push");
		span(v, "drawn", "drawn");
		return true;
	})()`, nil)
	end := p.trace()
	return func() {
		tr := end()
		if err := os.WriteFile(file, tr, 0o644); err != nil {
			b.Fatal(err)
		}
		b.Logf("the page's trace: %d bytes in %s", len(tr), file)
	}
}

// logProfile logs the 25 functions of a page's CPU profile with the most
// time of their own (and the profile's whole time), each with its file, line and column.
func logProfile(b *testing.B, prof *profiler.Profile) {
	if prof == nil {
		return
	}
	self := map[int64]float64{} // node → µs
	for i, id := range prof.Samples {
		if i+1 < len(prof.TimeDeltas) {
			self[id] += float64(prof.TimeDeltas[i+1])
		}
	}
	byFn := map[string]float64{}
	for _, n := range prof.Nodes {
		f := n.CallFrame
		name := f.FunctionName
		if name == "" {
			name = "(anonymous)"
		}
		byFn[fmt.Sprintf("%s %s:%d:%d", name, filepath.Base(f.URL), f.LineNumber+1, f.ColumnNumber+1)] += self[n.ID]
	}
	type fn struct {
		name string
		us   float64
	}
	var fns []fn
	for k, v := range byFn {
		fns = append(fns, fn{k, v})
	}
	slices.SortFunc(fns, func(x, y fn) int { return cmp.Compare(y.us, x.us) })
	var out strings.Builder
	fmt.Fprintf(&out, "the page's CPU profile (%.0f ms):", (prof.EndTime-prof.StartTime)/1000)
	for _, f := range fns[:min(25, len(fns))] {
		fmt.Fprintf(&out, " %.0f ms %s;", f.us/1000, f.name)
	}
	b.Log(out.String())
}
