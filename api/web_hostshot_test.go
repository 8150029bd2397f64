package api

import (
	"encoding/json"
	"image"
	"image/color"
	"slices"
	"testing"
	"time"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// TestWebUIFirstScreenshotAfterElection asks the page for a screenshot the
// moment it is elected host (its stream declared the screenshot capability,
// while Excalidraw may still be starting and the canvas not on stage yet):
// the page answers once the scene of the version it reports is drawn, so
// the picture shows the blue box, never the empty background.
func TestWebUIFirstScreenshotAfterElection(t *testing.T) {
	open := uiBrowser(t, 60*time.Second)
	e := newTestEnv(t)
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	const cid = "first-shot"
	e.must(201, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": cid, "title": "First shot"})
	e.must(200, "POST", "/canvas_commands/"+cid+"/command", editor, env("create_shape", 0, map[string]any{"id": "shape:blue", "type": "geo",
		"x": 100, "y": 100, "w": 160, "h": 100, "props": map[string]any{"geo": "rectangle", "color": "blue", "fill": "fill"}}))

	// A plain subscriber hears the page's election; the screenshot is asked for at once.
	watch := e.stream("/sse/canvas/"+cid, testAdmin, nil)
	untilEvent(t, watch, canvas.EventCaughtUp)
	p := open(e.srv.URL + "/?canvas=" + cid + "#access_token=" + editor)
	if host := hostOf(t, watch); host == "" {
		t.Fatal("no host elected")
	}
	r := e.do("POST", "/api/invoke", editor, map[string]any{"canvas_id": cid, "action": canvas.InvokeAgentScreenshot, "timeout_ms": 30000,
		"payload": agent.ScreenshotRequest{Type: "agent:screenshot_request", RequestID: "r1", Bounds: &client.Box{X: 100, Y: 100, W: 160, H: 100},
			MaxSize: &agent.Size{W: 80, H: 80}}})
	var a struct {
		OK     bool             `json:"ok"`
		Result agent.Screenshot `json:"result"`
		Error  json.RawMessage  `json:"error"`
	}
	if r.Status != 200 || json.Unmarshal(r.Body, &a) != nil || !a.OK {
		t.Fatalf("first screenshot: %d %.300s", r.Status, r.Body)
	}
	img := decodePNGDataURL(t, a.Result.DataURL)
	if b := img.Bounds(); b.Dx() != 80 || b.Dy() != 50 || !near(img.At(40, 25), 0x1971c2, 30) {
		t.Fatalf("first screenshot after election %v: centre %v, want the blue box drawn (doc version %q)", img.Bounds(), img.At(40, 25), a.Result.DocVersion)
	}
	if a.Result.DocVersion != "1" {
		t.Fatalf("first screenshot's doc version %q, want 1", a.Result.DocVersion)
	}
	p.poll("live and drawn", `document.body.dataset.loaded === "`+cid+`"`)
}

// blueBoxPage makes canvas cid holding a filled blue box at (100, 100),
// 300×200, and opens it in Chromium for an editor, whose token it returns.
func blueBoxPage(t *testing.T, cid string) (*testEnv, string, *uiPage) {
	t.Helper()
	open := uiBrowser(t, 60*time.Second)
	e := newTestEnv(t)
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	e.must(201, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": cid, "title": cid})
	e.must(200, "POST", "/canvas_commands/"+cid+"/command", editor, env("create_shape", 0, map[string]any{"id": "shape:blue", "type": "geo",
		"x": 100, "y": 100, "w": 300, "h": 200, "props": map[string]any{"geo": "rectangle", "color": "blue", "fill": "fill"}}))
	return e, editor, open(e.srv.URL + "/?canvas=" + cid + "#access_token=" + editor)
}

// TestWebUIScreenshotOfTheView: a screenshot of the page's view is the view
// as drawn on screen, scaled to fit 800 px: the blue box is where the view
// shows it; asked again with nothing changed, the page answers with the
// picture it kept ready; and a shape added by another actor is in the next
// one once its commit is on screen (the version the answer reports).
func TestWebUIScreenshotOfTheView(t *testing.T) {
	const cid = "view-shot"
	e, editor, p := blueBoxPage(t, cid)
	p.poll("live, drawn and host", `document.getElementById("conn").textContent === "live" && document.body.dataset.loaded === "`+cid+
		`" && !document.getElementById("host").hidden`)
	var vp client.Box
	p.eval(`canvasd.view.viewport()`, &vp)
	shoot := func(want ...string) (agent.Screenshot, float64) {
		t.Helper()
		r := e.do("POST", "/api/invoke", editor, map[string]any{"canvas_id": cid, "action": canvas.InvokeAgentScreenshot, "timeout_ms": 30000,
			"payload": agent.ScreenshotRequest{Type: "agent:screenshot_request", RequestID: "r", Bounds: &vp, MaxSize: &agent.Size{W: 800, H: 800}}})
		var a struct {
			OK     bool             `json:"ok"`
			Result agent.Screenshot `json:"result"`
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &a) != nil || !a.OK {
			t.Fatalf("screenshot: %d %.300s", r.Status, r.Body)
		}
		var from string
		p.eval(`canvasd.shotTimes[canvasd.shotTimes.length - 1].from`, &from)
		if !slices.Contains(want, from) {
			t.Fatalf("screenshot of the view from %q, want one of %q", from, want)
		}
		return a.Result, min(800/vp.W, 800/vp.H)
	}
	at := func(img image.Image, scale, x, y float64) color.Color {
		return img.At(int((x-vp.X)*scale), int((y-vp.Y)*scale))
	}
	shot, scale := shoot("screen")
	img := decodePNGDataURL(t, shot.DataURL)
	if b := img.Bounds(); max(b.Dx(), b.Dy()) != 800 || !near(at(img, scale, 250, 200), 0x1971c2, 30) {
		t.Fatalf("screenshot of the view %v: the blue box's centre is %v", img.Bounds(), at(img, scale, 250, 200))
	}
	// Asked again, the view unchanged: the picture kept ready is the answer.
	p.poll("a picture kept ready", `canvasd.readyShot !== null && canvasd.readyShot.key === canvasd.view.screenKey()`)
	shot, scale = shoot("ready")
	img = decodePNGDataURL(t, shot.DataURL)
	if shot.DocVersion != "1" || !near(at(img, scale, 250, 200), 0x1971c2, 30) {
		t.Fatalf("the ready screenshot: version %q, the blue box's centre is %v", shot.DocVersion, at(img, scale, 250, 200))
	}
	// Another actor's red ellipse, in view: in the next screenshot.
	e.must(200, "POST", "/canvas_commands/"+cid+"/command", editor, env("create_shape", 1, map[string]any{"id": "shape:red", "type": "geo",
		"x": 100, "y": 350, "w": 300, "h": 200, "props": map[string]any{"geo": "ellipse", "color": "red", "fill": "fill"}}))
	shot, scale = shoot("screen", "ready") // (ready again if drawn before the request came)
	img = decodePNGDataURL(t, shot.DataURL)
	if shot.DocVersion != "2" || !near(at(img, scale, 250, 450), 0xe03131, 30) {
		t.Fatalf("screenshot after the commit: version %q, the red ellipse's centre is %v", shot.DocVersion, at(img, scale, 250, 450))
	}
}

// TestWebUIScreenshotRightAfterACommit: a screenshot asked for while the
// page has just taken another actor's commit (not yet shown, let alone
// drawn by Excalidraw) shows it at once: drawn() resolves within the same
// task (the commit shown and drawn on the spot, not in the tasks queued for
// it), and the picture, copied from the screen, has the new shape.
func TestWebUIScreenshotRightAfterACommit(t *testing.T) {
	const cid = "shot-after-commit"
	e, editor, p := blueBoxPage(t, cid)
	p.poll("live and drawn", `document.getElementById("conn").textContent === "live" && document.body.dataset.loaded === "`+cid+`"`)
	var vp client.Box
	p.eval(`canvasd.view.viewport()`, &vp)
	// At the commit of rev 2, as the page takes it: drawn() and the picture.
	p.eval(`(() => {
		window.__shot = new Promise((resolve, reject) => {
			canvasd.live.on("state", (m, c) => {
				if (!c || c.rev !== 2) return;
				let now = false;
				const drawn = canvasd.view.drawn().then((rev) => { now = true; return rev; });
				// A few microtask turns: no other task can run meanwhile.
				Promise.resolve().then(() => 0).then(() => 0).then(() => 0).then(() => 0).then(async () => {
					const inTask = now, rev = await drawn;
					const shot = await canvasd.view.picture(null, { w: 800, h: 800 });
					resolve({ inTask, rev, from: shot.from, dataUrl: shot.dataUrl });
				}).catch(reject);
			});
		});
		return true;
	})()`, nil)
	e.must(200, "POST", "/canvas_commands/"+cid+"/command", editor, env("create_shape", 1, map[string]any{"id": "shape:red", "type": "geo",
		"x": 150, "y": 130, "w": 200, "h": 140, "props": map[string]any{"geo": "ellipse", "color": "red", "fill": "fill"}}))
	var shot struct {
		InTask  bool
		Rev     int
		From    string
		DataURL string
	}
	p.eval(`window.__shot`, &shot)
	if !shot.InTask || shot.Rev != 2 || shot.From != "screen" {
		t.Fatalf("the screenshot right after the commit: drawn within its task %v, at rev %d, from %q; want true, 2, screen", shot.InTask, shot.Rev, shot.From)
	}
	img := decodePNGDataURL(t, shot.DataURL)
	scale := min(800/vp.W, 800/vp.H)
	if c := img.At(int((250-vp.X)*scale), int((200-vp.Y)*scale)); !near(c, 0xe03131, 30) {
		t.Fatalf("the screenshot right after the commit: the red ellipse's centre is %v", c)
	}
}
