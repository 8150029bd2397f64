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
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

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

func (l *lateAgent) Cancel(ctx context.Context, id string) error {
	r, err := l.runner()
	if err != nil {
		return err
	}
	return r.Cancel(ctx, id)
}

func (l *lateAgent) Catalog() []byte { return agent.CatalogJSON() }

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

// darkPixels counts pixels of img in rect darker than a grey of 110.
func darkPixels(img image.Image, rect image.Rectangle) int {
	n := 0
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		for x := rect.Min.X; x < rect.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if (r>>8+g>>8+b>>8)/3 < 110 {
				n++
			}
		}
	}
	return n
}

// TestWebUIAgentScreenshotAndPrompt drives the UI in headless Chromium
// against a server with a real agent runner whose screenshots go through
// the invoke broker to the page: the page answers invokes (viewport,
// selection, agent:screenshot; anything else is refused), a vision run
// gets the page's PNG as the model's image part (checked pixel by pixel),
// and the agent prompt box starts a debug/fake run with the page's viewport
// and selection that draws the brutalist poster.
func TestWebUIAgentScreenshotAndPrompt(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %s is missing: %v", chromiumPath, err)
		}
		t.Skipf("no %s (apt-get install chromium): %v", chromiumPath, err)
	}
	started := time.Now()
	model := newFakeOpenAI(t, scriptedReply{chunks: chunked(actionsJSON(`{"name":"think","params":{"text":"I see a blue box and a note."}}`), 16)})
	var broker *host.Broker
	svc := &lateAgent{}
	// The server's store is a SQLite file that the agent's sessions share
	// (as with canvasd serve), so the option swaps in a store at a known path.
	dbPath := filepath.Join(t.TempDir(), "canvasd.db")
	e := newTestEnv(t, func(c *Config) {
		st, err := sqlitestore.Open(context.Background(), dbPath)
		if err != nil {
			t.Fatal(err)
		}
		eng := store.NewEngine(st, store.EngineConfig{Publisher: c.Hub, Observer: c.Metrics, SnapshotEvery: 1000})
		if err := eng.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Stop(); st.Close() })
		c.Store, c.Engine = st, eng
		h, err := host.New(host.Config{DataDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		broker = host.NewBroker(h.HostDeliverer(CanvasInvokeDeliverer(c.Hub)))
		c.Host = HostOptions{Host: h, Broker: broker}
		c.Agent = svc
	})
	ctx := context.Background()
	agentTok, agentID := e.token(canvas.RoleEditor, canvas.ActorAgent)
	ac, err := client.New(e.srv.URL, agentTok)
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := agent.OpenSQLSessionStore(ctx, "", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sessions.Close() })
	cfg := agent.DefaultConfig() // model debug/fake unless a run names another
	cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "sk-test", model.srv.URL+"/v1"
	cfg.LowActionThreshold = 0 // no follow-up turns: one model call per run
	cfg.Watchdog = 20 * time.Second
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
	head := int64(0)
	apply := func(typ string, args map[string]any) {
		t.Helper()
		m := e.must(200, "POST", "/canvas_commands/"+cid+"/command", editor, env(typ, head, args))
		head = int64(m["current_rev"].(float64))
	}
	apply("create_shape", map[string]any{"id": "shape:blue", "type": "geo", "x": 100, "y": 100, "w": 160, "h": 100,
		"props": map[string]any{"geo": "rectangle", "color": "blue", "fill": "fill"}})
	apply("create_shape", map[string]any{"id": "shape:red", "type": "geo", "x": 100, "y": 260, "w": 160, "h": 100,
		"props": map[string]any{"geo": "ellipse", "color": "red", "fill": "fill"}})
	apply("create_shape", map[string]any{"id": "shape:note", "type": "note", "x": 320, "y": 100, "w": 200, "h": 200,
		"props": map[string]any{"text": "HELLO PICTURE WITH SOME WORDS", "color": "yellow", "size": "l"}})

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.WindowSize(1400, 860),
		chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	browser, cancel := chromedp.NewContext(alloc)
	defer cancel()
	var errMu sync.Mutex
	var pageErrs []string
	addErr := func(s string) { errMu.Lock(); pageErrs = append(pageErrs, s); errMu.Unlock() }
	if err := chromedp.Do(browser); err != nil { // starts the browser, not under a timeout
		t.Fatalf("start chromium: %v", err)
	}
	if err := chromedp.Listen(browser, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg := ev.ExceptionDetails.Text
			if ex := ev.ExceptionDetails.Exception; ex != nil {
				msg += " " + ex.Description
			}
			addErr("exception: " + msg)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				addErr("console." + string(ev.Type))
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
	if err := chromedp.Do(browser, enableLog, chromedp.Navigate(e.srv.URL+"/?access_token="+editor+"#/c/"+cid)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	bctx, cancelT := context.WithTimeout(browser, 40*time.Second)
	defer cancelT()
	poll, eval := pageHelpers(t, bctx, 10*time.Second)
	poll("canvas open and live", `document.getElementById('conn').textContent === 'live' && document.querySelectorAll('#layer-nodes g.node').length === 3`)
	// Select the blue box.
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`[data-id="shape:blue"] rect.hit`))); err != nil {
		t.Fatal(err)
	}
	poll("selected", `document.querySelectorAll('#layer-selection rect').length === 1`)
	// The page's view as it draws it: world = translate(x y) scale(z).
	var pageVP client.Box
	eval(`(() => { const st = document.getElementById('stage'), r = st.getBoundingClientRect(), d = st.dataset, z = +d.zoom;
		return {x: -d.viewX / z, y: -d.viewY / z, w: r.width / z, h: r.height / z}; })()`, &pageVP)
	sameBox := func(a, b client.Box) bool {
		return math.Abs(a.X-b.X) < 0.02 && math.Abs(a.Y-b.Y) < 0.02 && math.Abs(a.W-b.W) < 0.02 && math.Abs(a.H-b.H) < 0.02
	}

	// invoke: the page answers the fixed actions and refuses the rest.
	invoke := func(action string, payload any) (ok bool, result json.RawMessage, errText string) {
		t.Helper()
		r := e.do("POST", "/api/invoke", editor, map[string]any{"canvas_id": cid, "action": action, "payload": payload, "timeout_ms": 5000})
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
		Viewport   client.Box `json:"viewport"`
		Zoom       float64    `json:"zoom"`
		DocVersion string     `json:"docVersion"`
	}
	if ok, res, _ := invoke("viewport", map[string]any{}); !ok || json.Unmarshal(res, &vpAns) != nil || !sameBox(vpAns.Viewport, pageVP) || vpAns.DocVersion != fmt.Sprint(head) {
		t.Fatalf("viewport answer %v %s; page view %+v", ok, res, pageVP)
	}
	var selAns struct{ Selection []string }
	if ok, res, _ := invoke("selection", nil); !ok || json.Unmarshal(res, &selAns) != nil || len(selAns.Selection) != 1 || selAns.Selection[0] != "shape:blue" {
		t.Fatalf("selection answer %v %s", ok, res)
	}
	if ok, res, msg := invoke("eval", map[string]any{"code": "document.title = 'pwned'"}); ok || msg != "unsupported action eval" {
		t.Fatalf("eval was not refused: %v %s %q", ok, res, msg)
	}
	var title string
	eval(`document.title`, &title)
	if title != "canvasd" {
		t.Fatalf("the page ran code: title %q", title)
	}
	// A screenshot of given bounds at a given size: the blue box fills it.
	var shot agent.Screenshot
	ok, res, msg := invoke("agent:screenshot", agent.ScreenshotRequest{Type: "agent:screenshot_request", RequestID: "r1",
		Bounds: &client.Box{X: 100, Y: 100, W: 160, H: 100}, MaxSize: &agent.Size{W: 80, H: 80}})
	if !ok || json.Unmarshal(res, &shot) != nil {
		t.Fatalf("screenshot: %v %q %.300s", ok, msg, res)
	}
	img := decodePNGDataURL(t, shot.DataURL)
	if b := img.Bounds(); b.Dx() != 80 || b.Dy() != 50 || !near(img.At(40, 25), 0x4465e9, 24) || !near(img.At(10, 40), 0x4465e9, 24) {
		t.Fatalf("bounded screenshot %v, centre %v", img.Bounds(), img.At(40, 25))
	}
	if shot.Bounds != (client.Box{X: 100, Y: 100, W: 160, H: 100}) || !sameBox(shot.Viewport, pageVP) || shot.DocVersion != fmt.Sprint(head) ||
		len(shot.Selection) != 1 || shot.Selection[0] != "shape:blue" {
		t.Fatalf("screenshot fields %+v", struct {
			B, V client.Box
			S    []string
			D    string
		}{shot.Bounds, shot.Viewport, shot.Selection, shot.DocVersion})
	}
	// No bounds: the page's viewport, long side 800 at most.
	if ok, res, msg = invoke("agent:screenshot", map[string]any{}); !ok || json.Unmarshal(res, &shot) != nil {
		t.Fatalf("screenshot without bounds: %v %q", ok, msg)
	}
	img = decodePNGDataURL(t, shot.DataURL)
	if b := img.Bounds(); max(b.Dx(), b.Dy()) != 800 || math.Abs(float64(b.Dx())/float64(b.Dy())-pageVP.W/pageVP.H) > 0.01 || !sameBox(shot.Bounds, pageVP) {
		t.Fatalf("viewport screenshot %v for view %+v (bounds %+v)", b, pageVP, shot.Bounds)
	}

	// A vision run while the page is open: the runner asks the page for a
	// screenshot of the run's viewport and the model gets it as an image part.
	r := e.do("POST", "/api/canvas-agent/run", editor, map[string]any{"roomId": cid, "message": "What do you see?",
		"model": "openai:gpt-vision", "viewport": map[string]any{"x": 0, "y": 0, "w": 800, "h": 500}})
	if r.Status != 202 {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
	sid := r.json(t)["session_id"].(string)
	waitSession := func(id string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			s := e.must(200, "GET", "/api/canvas-agent/sessions/"+id, editor, nil)
			if st := s["state"].(string); client.AgentTerminal(st) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("session %s still %v", id, s["state"])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	sess := waitSession(sid)
	stats, _ := sess["stats"].(map[string]any)
	if sess["state"] != client.AgentDone || stats["screenshots_missed"] != nil {
		t.Fatalf("vision session %v", sess)
	}
	reqs := model.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls", len(reqs))
	}
	_, url := reqs[0].last()
	img = decodePNGDataURL(t, url)
	if err := os.WriteFile("/tmp/canvasd-ui2-agent-shot.png", mustBase64(t, url), 0o644); err != nil {
		t.Log(err)
	}
	// 800×500 canvas units at scale 1: pixels are canvas coordinates.
	if b := img.Bounds(); b.Dx() != 800 || b.Dy() != 500 {
		t.Fatalf("model image %v, want 800×500", b)
	}
	checks := []struct {
		what string
		x, y int
		rgb  uint32
	}{
		{"blue box", 180, 150, 0x4465e9}, {"red ellipse", 180, 310, 0xe03131}, {"note corner", 505, 285, 0xfde9a8},
		{"background", 700, 450, 0xfafaf8}, {"between shapes", 290, 200, 0xfafaf8},
	}
	for _, c := range checks {
		if !near(img.At(c.x, c.y), c.rgb, 24) {
			t.Errorf("model image: %s at (%d, %d) is %v, want #%06x", c.what, c.x, c.y, img.At(c.x, c.y), c.rgb)
		}
	}
	// The note's text (HTML in a foreignObject, styled inline) is drawn.
	if n := darkPixels(img, image.Rect(320, 100, 520, 300)); n < 150 {
		t.Errorf("the note's text is missing from the picture (%d dark pixels)", n)
	}
	if n := darkPixels(img, image.Rect(100, 100, 260, 200)); n != 0 {
		t.Errorf("%d dark pixels in the blue box", n)
	}
	if n := selectionPixels(img, image.Rect(80, 80, 280, 97)); n != 0 { // above the box and its stroke
		t.Errorf("the selection outline (%d pixels) is in the picture", n)
	}
	poll("screenshot request in the agent panel", `document.getElementById('agent-log').textContent.includes('requested a picture of the view')`)

	// The prompt box: a debug/fake run with the page's viewport and selection.
	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS(`#agent-prompt`), "Draft a brutalist poster concept"),
		chromedp.Click(chromedp.CSS(`#agent-run`))); err != nil {
		t.Fatal(err)
	}
	poll("session started", `!!document.getElementById('agent-form').dataset.sessionId && document.getElementById('agent-prompt').value === ''`)
	var psid string
	eval(`document.getElementById('agent-form').dataset.sessionId`, &psid)
	sess = waitSession(psid)
	var ps client.AgentSession
	if b, _ := json.Marshal(sess); json.Unmarshal(b, &ps) != nil || ps.State != client.AgentDone || ps.Model != "debug/fake" ||
		ps.Message != "Draft a brutalist poster concept" || ps.Viewport == nil || !sameBox(*ps.Viewport, pageVP) ||
		len(ps.Selection) != 1 || ps.Selection[0] != "shape:blue" || ps.Stats.ActionsApplied != 6 {
		t.Fatalf("prompt-box session %+v", sess)
	}
	snap := e.snapshot(cid)
	types := map[string]int{}
	for _, n := range snap["state"].(map[string]any)["nodes"].([]any) {
		nm := n.(map[string]any)
		if nm["created_by"] == agentID {
			types[nm["type"].(string)]++
		}
	}
	if types["text"] != 1 || types["geo"] != 2 || types["note"] != 3 {
		t.Fatalf("agent shapes on the server: %v", types)
	}
	poll("poster shown live", fmt.Sprintf(`document.querySelectorAll('#layer-nodes g.node').length === 9 && document.getElementById('rev').textContent === '%v'`, snap["head_rev"]))
	poll("run finished in the panel", `!document.getElementById('agent-run').disabled && document.getElementById('agent-stop').hidden && [...document.querySelectorAll('#agent-log .badge')].some(b => b.textContent === 'done') && [...document.querySelectorAll('#agent-log li')].some(li => li.textContent === 'you: Draft a brutalist poster concept')`)

	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#zoom-fit`))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	pic, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("/tmp/canvasd-ui2.png", pic, 0o644); err != nil {
		t.Log(err)
	}
	errMu.Lock()
	defer errMu.Unlock()
	for _, msg := range pageErrs {
		t.Errorf("page error: %s", msg)
	}
	if d := time.Since(started); d > 25*time.Second {
		t.Errorf("took %v", d)
	}
}

// selectionPixels counts the selection outline's colour (#4465e9, the
// page draws it at least 4 px outside the selected shape) in rect.
func selectionPixels(img image.Image, rect image.Rectangle) int {
	n := 0
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		for x := rect.Min.X; x < rect.Max.X; x++ {
			if near(img.At(x, y), 0x4465e9, 60) {
				n++
			}
		}
	}
	return n
}

func mustBase64(t *testing.T, url string) []byte {
	_, b64, _ := strings.Cut(url, ",")
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(errors.New("data URL: " + err.Error()))
	}
	return b
}
