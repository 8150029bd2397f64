package api

import (
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// TestInvokeUnknownCanvas: POST /api/invoke for a canvas that does not exist
// is a 404 at once (not a 504 after its timeout, nor a 503 no-host for a
// screenshot), and only after authorization: a token without the editor
// role there still gets 403.
func TestInvokeUnknownCanvas(t *testing.T) {
	e := newHostTestEnv(t, host.Config{})
	mine := e.canvas("c_mine")
	elsewhere, _ := e.token(canvas.RoleEditor, canvas.ActorAgent, mine)
	viewer, _ := e.token(canvas.RoleViewer, canvas.ActorHuman)
	for _, action := range []string{"ping", canvas.InvokeAgentScreenshot} {
		body := map[string]any{"canvas_id": "c_missing", "action": action, "timeout_ms": 5000}
		start := time.Now()
		p := e.must(404, "POST", "/api/invoke", testAdmin, body)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s on a missing canvas took %v (its timeout is 5 s)", action, took)
		}
		if !strings.Contains(p["detail"].(string), "c_missing") {
			t.Errorf("%s: the 404 does not name the canvas: %v", action, p["detail"])
		}
		e.must(403, "POST", "/api/invoke", elsewhere, body)
		e.must(403, "POST", "/api/invoke", viewer, body)
	}
	// A canvas deleted meanwhile is missing too.
	gone := e.canvas("c_gone")
	e.must(204, "DELETE", "/api/canvases/"+gone, testAdmin, nil)
	e.must(404, "POST", "/api/invoke", testAdmin, map[string]any{"canvas_id": gone, "action": "ping", "timeout_ms": 5000})
}
