package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// lateAgent is the AgentService of a runner that can only be built once the
// server listens (the runner is a client of the server).
type lateAgent struct{ r atomic.Pointer[agent.Runner] }

func (l *lateAgent) runner() (*agent.Runner, error) {
	if r := l.r.Load(); r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("the test runner is not ready: %w", canvas.ErrUnavailable)
}

func (l *lateAgent) Run(ctx context.Context, req client.AgentRunRequest) (string, error) {
	r, err := l.runner()
	if err != nil {
		return "", err
	}
	return r.Run(ctx, req)
}

func (l *lateAgent) Session(ctx context.Context, id string) (client.AgentSession, error) {
	r, err := l.runner()
	if err != nil {
		return client.AgentSession{}, err
	}
	return r.Session(ctx, id)
}

func (l *lateAgent) Sessions(ctx context.Context, canvasID string, limit int) ([]client.AgentSession, error) {
	r, err := l.runner()
	if err != nil {
		return nil, err
	}
	return r.Sessions(ctx, canvasID, limit)
}

func (l *lateAgent) Cancel(ctx context.Context, id string) error {
	r, err := l.runner()
	if err != nil {
		return err
	}
	return r.Cancel(ctx, id)
}

func (l *lateAgent) Wait(ctx context.Context, id string) (client.AgentSession, error) {
	r, err := l.runner()
	if err != nil {
		return client.AgentSession{}, err
	}
	return r.Wait(ctx, id)
}

func (l *lateAgent) Catalog() []byte { return agent.CatalogJSON() }

// Ack and View hand the browsers' input to the runner (api.BrowserInput),
// as canvasd serve's runner takes it.
func (l *lateAgent) Ack(sessionID string, a canvas.AgentAck) error {
	r, err := l.runner()
	if err != nil {
		return fmt.Errorf("%v: %w", err, canvas.ErrNotFound)
	}
	return r.Ack(sessionID, a)
}

func (l *lateAgent) View(sessionID string, v canvas.AgentView) error {
	r, err := l.runner()
	if err != nil {
		return fmt.Errorf("%v: %w", err, canvas.ErrNotFound)
	}
	return r.View(sessionID, v)
}

// messageInbox delivers POST /api/sessions/{id}/messages to the test
// runner's session, image included (canvasd serve wires its own inbox).
type messageInbox struct{ l *lateAgent }

func (m messageInbox) Deliver(ctx context.Context, msg host.Message) error {
	r, err := m.l.runner()
	if err != nil {
		return err
	}
	um := agent.UserMessage{Principal: msg.Principal, Prompt: msg.Prompt, Source: msg.Source}
	if msg.Image != nil {
		if um.ImageDataURL, err = msg.Image.DataURL(); err != nil {
			return err
		}
	}
	return r.PostMessage(ctx, msg.SessionID, um)
}

// decodePNGDataURL decodes a data:image/png;base64 URL.
func decodePNGDataURL(t *testing.T, url string) image.Image {
	t.Helper()
	b64, ok := strings.CutPrefix(url, "data:image/png;base64,")
	if !ok {
		t.Fatalf("not a PNG data URL: %.60q", url)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("data URL base64: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("data URL is not a PNG: %v", err)
	}
	return img
}

// near reports whether c is within tol of #rrggbb on every channel.
func near(c color.Color, rgb uint32, tol int) bool {
	r, g, b, _ := c.RGBA()
	want := [3]int{int(rgb >> 16 & 0xff), int(rgb >> 8 & 0xff), int(rgb & 0xff)}
	got := [3]int{int(r >> 8), int(g >> 8), int(b >> 8)}
	for i := range want {
		if d := got[i] - want[i]; d > tol || d < -tol {
			return false
		}
	}
	return true
}

// TestWebUIAgent drives the agent panel in Chromium against a server with
// a real agent runner whose screenshots go through the invoke broker to the
// page: the page is elected host, answers the fixed invoke actions
// (screenshots drawn by Excalidraw's exporter, checked pixel by pixel;
// anything else is refused), a vision run gets its picture, "Send
// selection" gives the model a picture of the selected shapes, the prompt
// box runs the debug/fake model's poster (accepted: the session leaves the
// address), "Send canvas" posts the canvas as an image message (a second
// turn), and the review reverts one turn, shows it reverted after a reload
// (the server records it), then reverts the rest; the chat's status lines
// are sentences, a missed ack a warning.
func TestWebUIAgent(t *testing.T) {
	open := uiBrowser(t, 90*time.Second)
	model := newFakeOpenAI(t, scriptedReply{chunks: chunked(actionsJSON(`{"name":"think","params":{"text":"I see a blue box and a note."}}`,
		`{"name":"todo","params":{"text":"Compare the colours"}}`, `{"name":"todo","params":{"text":"Read the note"}}`,
		`{"name":"todo","params":{"text":"Read the note","status":"done"}}`), 16)})
	svc := &lateAgent{}
	e, broker, sessions := newHostedAgentEnv(t, svc, messageInbox{svc})
	ctx := context.Background()
	agentTok, agentID := e.token(canvas.RoleEditor, canvas.ActorAgent)
	ac, err := client.New(e.srv.URL, agentTok)
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.DefaultConfig() // model debug/fake unless a run names another
	cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "sk-test", model.srv.URL+"/v1"
	cfg.LowActionThreshold = 0 // no follow-up turns: one model call per run
	cfg.Watchdog = 20 * time.Second
	// The page exports the picture in Chromium: on a loaded machine (make test
	// runs packages in parallel under the race detector) that takes seconds.
	cfg.ScreenshotTimeout = 30 * time.Second
	// The page, the canvas's host, acks every envelope (ackedByThePage); on a
	// loaded machine an ack may take a while.
	cfg.AckTimeout = 5 * time.Second
	runner, err := agent.NewRunner(agent.Deps{Config: cfg, Client: ac, ActorID: agentID, Events: e.api.hub, Store: sessions,
		Screenshots: AgentScreenshotter{Hub: e.api.hub, Broker: broker}})
	if err != nil {
		t.Fatal(err)
	}
	runner.Start(ctx)
	t.Cleanup(runner.Stop)
	svc.r.Store(runner)

	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	const cid = "ui-agent"
	e.must(201, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": cid, "title": "Agent board"})
	apply := func(typ string, args map[string]any) {
		t.Helper()
		head := int64(e.snapshot(cid)["head_rev"].(float64))
		e.must(200, "POST", "/canvas_commands/"+cid+"/command", editor, env(typ, head, args))
	}
	apply("create_shape", map[string]any{"id": "shape:blue", "type": "geo", "x": 100, "y": 100, "w": 160, "h": 100,
		"props": map[string]any{"geo": "rectangle", "color": "blue", "fill": "fill"}})
	apply("create_shape", map[string]any{"id": "shape:red", "type": "geo", "x": 100, "y": 260, "w": 160, "h": 100,
		"props": map[string]any{"geo": "ellipse", "color": "red", "fill": "fill"}})
	apply("create_shape", map[string]any{"id": "shape:note", "type": "note", "x": 320, "y": 100, "w": 200, "h": 200,
		"props": map[string]any{"text": "HELLO PICTURE", "color": "yellow", "size": "l"}})

	p := open(e.srv.URL + "/?canvas=" + cid + "#access_token=" + editor)
	p.poll("live and drawn", `document.getElementById("conn").textContent === "live" && document.body.dataset.loaded === "`+cid+`"`)
	p.click(180, 150)
	p.poll("selected", `canvasd.view.selection().join() === 'shape:blue'`)
	var pageVP client.Box
	p.eval(`canvasd.view.viewport()`, &pageVP)
	sameBox := func(a, b client.Box) bool {
		return math.Abs(a.X-b.X) < 0.02 && math.Abs(a.Y-b.Y) < 0.02 && math.Abs(a.W-b.W) < 0.02 && math.Abs(a.H-b.H) < 0.02
	}

	// invoke: the page answers the fixed actions and refuses the rest. The
	// timeout is generous: an answer only has to come, and a loaded machine
	// delays it by seconds.
	invoke := func(action string, payload any) (ok bool, result json.RawMessage, errText string) {
		t.Helper()
		r := e.do("POST", "/api/invoke", editor, map[string]any{"canvas_id": cid, "action": action, "payload": payload, "timeout_ms": 30000})
		var a struct {
			OK     bool            `json:"ok"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &a) != nil {
			t.Fatalf("invoke %s: %d %s", action, r.Status, r.Body)
		}
		_ = json.Unmarshal(a.Error, &errText)
		return a.OK, a.Result, errText
	}
	var vpAns struct {
		Viewport client.Box `json:"viewport"`
	}
	if ok, res, _ := invoke("viewport", map[string]any{}); !ok || json.Unmarshal(res, &vpAns) != nil || !sameBox(vpAns.Viewport, pageVP) {
		t.Fatalf("viewport answer %v %s; page view %+v", ok, res, pageVP)
	}
	var selAns struct{ Selection []string }
	if ok, res, _ := invoke("selection", nil); !ok || json.Unmarshal(res, &selAns) != nil || len(selAns.Selection) != 1 || selAns.Selection[0] != "shape:blue" {
		t.Fatalf("selection answer %v %s", ok, res)
	}
	// eval is no action of the page: no answer (the invoke times out) and no
	// effect. The invoke that follows reaches the page after it on the same
	// stream: once it is answered, the page has seen the eval.
	r := e.do("POST", "/api/invoke", editor, map[string]any{"canvas_id": cid, "action": "eval", "payload": map[string]any{"code": "document.title = 'pwned'"}, "timeout_ms": 1500})
	if r.Status == 200 && strings.Contains(string(r.Body), `"ok":true`) {
		t.Fatalf("eval was answered: %s", r.Body)
	}
	if ok, _, msg := invoke("viewport", nil); !ok {
		t.Fatalf("viewport after eval: %s", msg)
	}
	var title string
	p.eval(`document.title`, &title)
	if title != "canvasd" {
		t.Fatalf("the page ran code: title %q", title)
	}
	// A screenshot of given bounds at a given size, by Excalidraw's exporter: the blue box fills it.
	var shot agent.Screenshot
	ok, res, msg := invoke("agent:screenshot", agent.ScreenshotRequest{Type: "agent:screenshot_request", RequestID: "r1",
		Bounds: &client.Box{X: 100, Y: 100, W: 160, H: 100}, MaxSize: &agent.Size{W: 80, H: 80}})
	if !ok || json.Unmarshal(res, &shot) != nil {
		t.Fatalf("screenshot: %v %q %.300s", ok, msg, res)
	}
	img := decodePNGDataURL(t, shot.DataURL)
	if b := img.Bounds(); b.Dx() != 80 || b.Dy() != 50 || !near(img.At(40, 25), 0x1971c2, 30) {
		t.Fatalf("bounded screenshot %v, centre %v", img.Bounds(), img.At(40, 25))
	}
	if shot.Bounds != (client.Box{X: 100, Y: 100, W: 160, H: 100}) || !sameBox(shot.Viewport, pageVP) || len(shot.Selection) != 1 {
		t.Fatalf("screenshot fields %+v %+v %v", shot.Bounds, shot.Viewport, shot.Selection)
	}

	// The Pages tab shows the host session named after the canvas in a
	// frame: an A2UI surface pushed to it renders there, and follows updates.
	pushA2UI := func(jsonl string) {
		t.Helper()
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/host/"+cid+"/a2ui", strings.NewReader(jsonl))
		req.Header.Set("Content-Type", "application/jsonl")
		req.Header.Set("Authorization", "Bearer "+editor)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		checkResponse(t, e.spec, req, resp, out)
		if resp.StatusCode != 200 {
			t.Fatalf("push A2UI: %d %s", resp.StatusCode, out)
		}
	}
	pushA2UI(hostSurface)
	p.clickCSS(`#tab-pages`)
	// The tab shows the session's viewer; the A2UI page in its frame is
	// asked with a host action (it runs in an opaque origin).
	p.poll("the viewer in the Pages tab", `(() => { const f = document.getElementById('host-frame');
		const v = f && f.contentWindow && f.contentWindow.canvasdViewer; return !!v && v.ready; })()`)
	frameText := func(want string) {
		t.Helper()
		r := e.do("POST", "/api/invoke", editor, map[string]any{"host_session": cid, "action": "eval", "timeout_ms": 15000,
			"payload": map[string]any{"js": pageWait(deepQuery("#title") + `.shadowRoot.textContent.includes("` + want + `")`)}})
		if r.Status != 200 || r.json(t)["result"] != true {
			t.Fatalf("the A2UI page in the Pages tab does not show %q: %d %s", want, r.Status, r.Body)
		}
	}
	frameText("Hello from A2UI")
	pushA2UI(`{"dataModelUpdate":{"surfaceId":"main","contents":[{"key":"greeting","valueString":"Updated live"}]}}` + "\n")
	frameText("Updated live")
	p.screenshot("agent-pages")
	p.clickCSS(`[data-tab="chat"]`)

	// A vision run while the page is open: the runner asks the host for a
	// screenshot of the run's viewport and the model gets it as an image part.
	r = e.do("POST", "/api/canvas-agent/run", editor, map[string]any{"roomId": cid, "message": "What do you see?",
		"model": "openai:gpt-vision", "viewport": map[string]any{"x": 0, "y": 0, "w": 800, "h": 500}})
	if r.Status != 202 {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
	waitSession := func(id string) map[string]any {
		t.Helper()
		pl := newPoller(40*time.Second, 50*time.Millisecond)
		for {
			s := e.must(200, "GET", "/api/canvas-agent/sessions/"+id, editor, nil)
			if st := s["state"].(string); client.AgentTerminal(st) {
				return s
			}
			if pl.expired() {
				t.Fatalf("session %s still %v", id, s["state"])
			}
			pl.wait()
		}
	}
	// ackedByThePage: the page, the canvas's host, acked the run's envelopes, none missed.
	ackedByThePage := func(s map[string]any) {
		t.Helper()
		if stats, _ := s["stats"].(map[string]any); stats["acks"] == nil || stats["acks_missed"] != nil {
			t.Fatalf("session %v: the page did not ack every envelope: stats %v", s["session_id"], stats)
		}
	}
	visionID := r.json(t)["session_id"].(string)
	vision := waitSession(visionID)
	if vision["state"] != client.AgentDone {
		t.Fatalf("vision session %v", vision)
	}
	ackedByThePage(vision)
	// The panel, with no run of its own, followed that run: its todos with their status.
	p.poll("the run's todos", `(() => { const li = [...document.querySelectorAll('#agent-todos li')];
		return document.getElementById('agent-panel').dataset.sessionId === '`+visionID+`' && li.length === 2 &&
			li[0].dataset.status === 'open' && li[0].textContent.includes('Compare the colours') &&
			li[1].dataset.status === 'done' && li[1].textContent.includes('✓ Read the note'); })()`)
	reqs := model.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls", len(reqs))
	}
	_, url := reqs[0].last()
	img = decodePNGDataURL(t, url)
	if err := os.WriteFile(filepath.Join(artifactDir(t), "agent-vision-image.png"), mustBase64(t, url), 0o644); err != nil {
		t.Fatal(err)
	}
	// 800×500 canvas units at scale 1: pixels are canvas coordinates.
	if b := img.Bounds(); b.Dx() != 800 || b.Dy() != 500 {
		t.Fatalf("model image %v, want 800×500", b)
	}
	for _, c := range []struct {
		what string
		x, y int
		rgb  uint32
	}{{"blue box", 180, 150, 0x1971c2}, {"red ellipse", 180, 310, 0xe03131}, {"note", 500, 280, 0xffec99}, {"background", 700, 450, 0xfafaf8}} {
		if !near(img.At(c.x, c.y), c.rgb, 30) {
			t.Errorf("model image: %s at (%d, %d) is %v, want #%06x", c.what, c.x, c.y, img.At(c.x, c.y), c.rgb)
		}
	}

	// "Send selection": the blue box and the note, selected, go as one image
	// into the session the panel follows (the vision run's, which reopens):
	// the model gets an image part of those shapes only (the red ellipse,
	// inside their bounds, is not drawn).
	p.poll("panel idle on the vision run", `document.getElementById('agent-panel').dataset.sessionId === '`+visionID+`' && !document.getElementById('agent-run').disabled`)
	// Set-up, not the user's path: the selection is cleared through
	// Excalidraw's API, and with it the style panel that a selection opens
	// over the canvas's left edge, where the blue box is. (Escape reaches
	// Excalidraw only while the keyboard focus is inside it, and which empty
	// point a click can reach depends on the viewport the vision run set.)
	p.eval(`canvasd.view.ex.updateScene({ appState: { selectedElementIds: {} } })`, nil)
	p.pollSelection("selection cleared")
	p.click(180, 150)
	p.pollSelection("the blue box clicked", "shape:blue")
	p.click(420, 200, chromedp.ModifierShift)
	p.pollSelection("the note shift-clicked", "shape:blue", "shape:note")
	p.clickCSS(`#send-selection`)
	pl := newPoller(40*time.Second, 50*time.Millisecond)
	for len(model.requests()) < 2 && !pl.expired() {
		pl.wait()
	}
	if reqs = model.requests(); len(reqs) != 2 {
		t.Fatalf("%d model calls after Send selection, want 2", len(reqs))
	}
	text, url := reqs[1].last()
	if !strings.Contains(text, "What do you see in these shapes?") || url == "" {
		t.Fatalf("Send selection reached the model as %q with image %.40q", text, url)
	}
	img = decodePNGDataURL(t, url)
	if err := os.WriteFile(filepath.Join(artifactDir(t), "agent-selection-image.png"), mustBase64(t, url), 0o644); err != nil {
		t.Fatal(err)
	}
	// The picture spans the two shapes' bounds, 10 units around: x 90–530, y 90–310.
	b := img.Bounds()
	if math.Abs(float64(b.Dx())/float64(b.Dy())-2) > 0.05 {
		t.Fatalf("selection image %v, want 2:1 (440×220 canvas units)", b)
	}
	at := func(x, y float64) color.Color {
		return img.At(int((x-90)*float64(b.Dx())/440), int((y-90)*float64(b.Dy())/220))
	}
	for _, c := range []struct {
		what string
		x, y float64
		rgb  uint32
	}{{"blue box", 180, 150, 0x1971c2}, {"note", 500, 280, 0xffec99}, {"no red ellipse (not selected)", 180, 295, 0xfafaf8}, {"background", 290, 250, 0xfafaf8}} {
		if !near(at(c.x, c.y), c.rgb, 30) {
			t.Errorf("selection image: %s at (%v, %v) is %v, want #%06x", c.what, c.x, c.y, at(c.x, c.y), c.rgb)
		}
	}
	vision = waitSession(visionID)
	if vision["state"] != client.AgentDone {
		t.Fatalf("vision session after Send selection %v", vision)
	}
	ackedByThePage(vision)
	p.poll("panel idle after Send selection", `!document.getElementById('agent-run').disabled`)

	// The prompt box: a debug/fake run with the page's viewport and selection.
	p.do(chromedp.SendKeys(chromedp.CSS(`#agent-prompt`), "Draft a brutalist poster concept"))
	p.clickCSS(`#agent-run`)
	p.poll("session started", `(document.getElementById('agent-panel').dataset.sessionId || '`+visionID+`') !== '`+visionID+`'`)
	var sid string
	p.eval(`document.getElementById('agent-panel').dataset.sessionId`, &sid)
	sess := waitSession(sid)
	if stats, _ := sess["stats"].(map[string]any); sess["state"] != client.AgentDone || stats["actions_applied"] != float64(6) || sess["model"] != "debug/fake" {
		t.Fatalf("prompt-box session %v", sess)
	}
	ackedByThePage(sess)
	agentNodes := func() int {
		n := 0
		for _, node := range e.nodes(cid) {
			if node["created_by"] == agentID {
				n++
			}
		}
		return n
	}
	if n := agentNodes(); n != 6 {
		t.Fatalf("%d agent shapes on the server", n)
	}
	p.poll("poster on screen, run reviewed", `canvasd.model.nodes.size === 9 && canvasd.view.ex.getSceneElements().filter(e => canvasd.model.nodes.get(e.id)).length === 9 &&
		!!document.getElementById('agent-revert') && document.getElementById('agent-status').textContent === 'done' &&
		[...document.querySelectorAll('#agent-log li')].some(li => li.textContent.includes('Drafting a brutalist poster'))`)
	// "Show" brings the run's shapes into view from wherever the view is.
	p.eval(`canvasd.view.ex.updateScene({appState: {scrollX: 20000, scrollY: -15000, zoom: {value: 1}}}), true`, nil)
	p.clickCSS(`#agent-show`)
	p.poll("the run's shapes in view", `(() => { const v = canvasd.view.viewport(), mine = [...canvasd.model.nodes.values()].filter(n => n.created_by === '`+agentID+`');
		return mine.length === 6 && mine.every(n => n.x >= v.x && n.y >= v.y && n.x + n.w <= v.x + v.w && n.y + n.h <= v.y + v.h); })()`)
	// The run's status lines are short sentences, never raw status data.
	statusLinesReadable := func() {
		t.Helper()
		var raw []string
		p.eval(`[...document.querySelectorAll('#agent-log li.status')].map(li => li.textContent).filter(t => /[{}"]/.test(t))`, &raw)
		if len(raw) > 0 {
			t.Fatalf("status lines with raw data: %q", raw)
		}
	}
	// The page's own run is its person's agent ("your agent"), never a raw session id.
	p.poll("a turn's start as a sentence", `[...document.querySelectorAll('#agent-log li.status')].some(li => li.textContent === 'your agent: Turn 1 started.') &&
		[...document.querySelectorAll('#agent-log li.status')].some(li => li.textContent === 'your agent: Done.')`)
	statusLinesReadable()
	// Accept ends the review and takes the session out of the address, so a
	// reload does not review the run again; the next turn puts it back (the
	// reload below finds it there).
	p.clickCSS(`#agent-accept`)
	p.poll("run accepted", `document.getElementById('agent-review').textContent === 'Accepted.' && !new URLSearchParams(location.search).has('agent')`)
	p.do(chromedp.KeyEvent(kb.Escape))
	p.eval(`canvasd.view.fit(true)`, nil)
	p.painted()
	p.screenshot("agent-poster")

	// "Send canvas": the canvas as an image message into the session.
	p.do(chromedp.SendKeys(chromedp.CSS(`#agent-prompt`), "What is on the canvas?"))
	p.clickCSS(`#send-canvas`)
	p.pollFor(45*time.Second, "image reached the agent", `[...document.querySelectorAll('#agent-log li')].some(li => /I received an image\/png image of \d+ bytes/.test(li.textContent))`)

	// Review: the run has two turns that changed the canvas, the poster
	// (turn 1) and the image message's note. Revert turn 1 alone: the poster
	// goes, the note stays; then "Revert the rest" takes back the note.
	p.poll("review of two turns", `document.querySelectorAll('#agent-review li[data-turn] button.revert-turn').length === 2`)
	if n := agentNodes(); n != 7 {
		t.Fatalf("%d agent shapes before the revert, want 7", n)
	}
	var firstTurn, search string
	p.eval(`document.querySelector('#agent-review li[data-turn]').dataset.turn`, &firstTurn)
	p.clickCSS(`#agent-review li[data-turn="` + firstTurn + `"] button.revert-turn`)
	posterGone := func(nodes map[string]map[string]any) bool {
		left := 0
		for _, n := range nodes {
			if n["created_by"] == agentID {
				left++
				if n["type"] != "note" || !strings.Contains(fmt.Sprint(n["props"].(map[string]any)["text"]), "What is on the canvas?") {
					return false
				}
			}
		}
		return left == 1 && len(nodes) == 4
	}
	e.waitNodesFor(30*time.Second, cid, "turn "+firstTurn+" reverted, the other turn kept", posterGone)
	p.poll("turn reverted on screen", `canvasd.model.nodes.size === 4 && canvasd.view.ex.getSceneElements().filter(e => canvasd.model.nodes.get(e.id)).length === 4 &&
		document.querySelector('#agent-review li[data-turn="`+firstTurn+`"]').classList.contains('reverted') &&
		document.querySelector('#agent-review li[data-turn="`+firstTurn+`"] button.revert-turn').textContent === 'Revert again' &&
		document.querySelectorAll('#agent-review li:not(.reverted) button.revert-turn').length === 1 && document.getElementById('agent-revert').textContent === 'Revert the rest'`)
	// The count says what was reverted and what is left (not "made 7 changes" after 6 were reverted).
	p.poll("the review counts the reverted changes apart", `document.getElementById('agent-review').textContent.includes('the agent made 7 changes: 6 reverted, 1 left.')`)
	p.screenshot("agent-turn-reverted")
	// The server records the reverted turn: after a reload (the session is
	// in the address) the review shows it reverted, and the rest left.
	p.eval(`location.search`, &search)
	if !strings.Contains(search, "agent="+sid) {
		t.Fatalf("the address %q does not keep the session %s", search, sid)
	}
	p.do(chromedp.Reload())
	p.poll("turn still reverted after a reload", `!!window.canvasd && canvasd.model && canvasd.model.nodes.size === 4 &&
		document.getElementById('agent-panel').dataset.sessionId === '`+sid+`' &&
		!!document.querySelector('#agent-review li[data-turn="`+firstTurn+`"].reverted') &&
		document.querySelectorAll('#agent-review li:not(.reverted) button.revert-turn').length === 1 && document.getElementById('agent-revert').textContent === 'Revert the rest'`)
	p.clickCSS(`#agent-revert`)
	e.waitNodesFor(30*time.Second, cid, "the rest reverted", func(nodes map[string]map[string]any) bool {
		for _, n := range nodes {
			if n["created_by"] == agentID {
				return false
			}
		}
		return len(nodes) == 3
	})
	p.poll("reverted on screen", `canvasd.model.nodes.size === 3 && document.getElementById('agent-review').textContent.includes('Reverted.') &&
		document.querySelectorAll('#agent-review li.reverted button.revert-turn').length === 2`)
	// Undo (the person's own history) takes that revert back: the note
	// returns, and "Revert again" on its turn reverts it again.
	var lastTurn string
	p.eval(`document.querySelectorAll('#agent-review li[data-turn]')[1].dataset.turn`, &lastTurn)
	p.clickCSS(`#undo`)
	p.poll("the revert undone", `canvasd.model.nodes.size === 4`)
	p.clickCSS(`#agent-review li[data-turn="` + lastTurn + `"] button.revert-turn`)
	e.waitNodesFor(30*time.Second, cid, "turn "+lastTurn+" reverted again", func(nodes map[string]map[string]any) bool { return len(nodes) == 3 })
	p.poll("reverted again on screen", `canvasd.model.nodes.size === 3 && document.getElementById('agent-review').textContent.includes('Reverted.') &&
		document.querySelector('#agent-review li[data-turn="`+lastTurn+`"]').textContent.includes('reverted (rev '+canvasd.model.rev+')')`)

	// Status lines are sentences, not raw data: a missed ack is a warning.
	e.must(202, "POST", "/api/canvas-agent/events", agentTok, map[string]any{"canvas_id": cid, "event": "agent:status",
		"data": map[string]any{"type": "agent:status", "sessionId": sid, "state": "streaming",
			"detail": map[string]any{"ack_missed": map[string]any{"seq": 7, "client_id": "c1", "resends": 1}}}})
	p.poll("missed ack as a sentence", `[...document.querySelectorAll('#agent-log li.status.warn')].some(li =>
		li.textContent === "your agent: The host browser never confirmed one of the agent's actions (sent again 1 time): the canvas may be missing it.")`)
	statusLinesReadable()
}

func mustBase64(t *testing.T, url string) []byte {
	_, b64, _ := strings.Cut(url, ",")
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(errors.New("data URL: " + err.Error()))
	}
	return b
}

// TestWebUIAgentFollowsTheCanvasRuns: a page with no run of its own follows
// the run going on on its canvas, and the next one once that one ended; its
// badge shows the state of the run it follows, not another run's.
func TestWebUIAgentFollowsTheCanvasRuns(t *testing.T) {
	c := openCanvasUI(t, "ui-agent-follow", nil)
	p := c.p
	status := func(sid, state string) {
		c.e.api.hub.PublishEvent(c.cid, "agent:status", map[string]any{"type": "agent:status", "sessionId": sid, "state": state})
	}
	following := func(what, sid, badge string) {
		t.Helper()
		p.poll(what, `document.getElementById('agent-panel').dataset.sessionId === '`+sid+`' && document.getElementById('agent-status').textContent === '`+badge+`' && new URLSearchParams(location.search).get('agent') === '`+sid+`'`)
	}
	status("sess-one", "calling_model")
	following("the run going on", "sess-one", "calling_model")
	status("sess-two", "error")
	p.poll("another run's failure in the chat, in its place", `!!document.querySelector('#agent-log li.run[data-session="sess-two"]')?.textContent.includes('agent: Failed.')`)
	following("still the first run, with its own state", "sess-one", "calling_model")
	status("sess-one", "done")
	following("the first run ended", "sess-one", "done")
	status("sess-three", "calling_model")
	following("the next run going on", "sess-three", "calling_model")
}

// TestWebUIAgentResumeKeepsUnreadSession: a page reloaded with ?agent= whose
// session cannot be read at that moment (the request fails: the server away)
// keeps following it, in the address too, and says so; a session that is
// gone (404) is forgotten.
func TestWebUIAgentResumeKeepsUnreadSession(t *testing.T) {
	c := openCanvasUI(t, "ui-agent-resume", nil)
	tok, _ := c.e.token(canvas.RoleEditor, canvas.ActorHuman)
	failSessions := `(() => { const f = window.fetch; window.fetch = (...args) => {
		const url = String(args[0] && args[0].url || args[0]);
		return url.includes('/api/canvas-agent/sessions/') ? Promise.reject(new TypeError('network error (the test)')) : f(...args); }; })();`
	p := c.open(c.e.srv.URL+"/?canvas="+c.cid+"&agent=as_unreadable#access_token="+tok, failSessions)
	c.live(p)
	p.poll("a warning", `[...document.querySelectorAll('.toast')].some(t => t.textContent.includes('could not read agent session'))`)
	var agent string
	p.eval(`new URLSearchParams(location.search).get('agent') || ''`, &agent)
	if agent != "as_unreadable" {
		t.Errorf("the session that could not be read left the address: agent=%q", agent)
	}
	gone := c.open(c.e.srv.URL + "/?canvas=" + c.cid + "&agent=as_gone#access_token=" + tok)
	c.live(gone)
	gone.poll("a session that is gone forgotten", `!new URLSearchParams(location.search).get('agent')`)
}

// TestWebUIAgentHostWaitStatusLines: an envelope waiting for a host
// browser, and one given up for want of a host, are warnings in sentences.
func TestWebUIAgentHostWaitStatusLines(t *testing.T) {
	c := openCanvasUI(t, "ui-agent-hostwait", nil)
	p := c.p
	status := func(detail map[string]any) {
		c.e.api.hub.PublishEvent(c.cid, "agent:status", map[string]any{"type": "agent:status", "sessionId": "sess-w", "state": "streaming", "detail": detail})
	}
	status(map[string]any{"ack_waiting_host": map[string]any{"seqs": []int{3, 4}, "wait_ms": 10000}})
	p.poll("waiting for a host as a warning", `[...document.querySelectorAll('#agent-log li.status.warn')].some(li =>
		li.textContent === "agent: The host browser left before confirming 2 of the agent's actions: waiting up to 10 s for a browser to show them.")`)
	status(map[string]any{"ack_missed": map[string]any{"seq": 3, "client_id": "h1", "resends": 0, "reason": "no_host"}})
	p.poll("given up without a host as a warning", `[...document.querySelectorAll('#agent-log li.status.warn')].some(li =>
		li.textContent === "agent: No host browser was there to confirm one of the agent's actions (its host left and none came back in time): the canvas may be missing it.")`)
}

// newHostedAgentEnv is a server for an agent runner started by the test:
// the agent's sessions live in the server's SQLite store (as with canvasd
// serve), a canvas host and its invoke broker are on, and svc is the
// server's agent service (its runner set later; inbox may be nil).
func newHostedAgentEnv(tb testing.TB, svc AgentService, inbox host.Inbox) (*testEnv, *host.Broker, *sqlitestore.Store) {
	tb.Helper()
	var broker *host.Broker
	var sessions *sqlitestore.Store
	dbPath := filepath.Join(tb.TempDir(), "canvasd.db")
	e := newTestEnv(tb, func(c *Config) {
		st, err := sqlitestore.Open(context.Background(), dbPath)
		if err != nil {
			tb.Fatal(err)
		}
		eng := store.NewEngine(st, store.EngineConfig{Publisher: c.Hub, Observer: c.Metrics, SnapshotEvery: 1000})
		if err := eng.Start(context.Background()); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { eng.Stop(); st.Close() })
		c.Store, c.Engine, sessions = st, eng, st
		h := newHost(tb, st, host.Config{})
		broker = host.NewBroker(h.HostDeliverer(CanvasInvokeDeliverer(c.Hub)))
		c.Host = HostOptions{Host: h, Broker: broker, Inbox: inbox}
		c.Agent = svc
	})
	return e, broker, sessions
}
