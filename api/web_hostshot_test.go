package api

import (
	"encoding/json"
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
