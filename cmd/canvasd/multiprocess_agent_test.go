package main

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMultiProcessAgentMessages runs two canvasd processes on one
// PostgreSQL schema with an OpenAI-compatible model, starts an agent session
// through B and holds its first model call open (the session runs in B's
// runner), then posts an image message for the session and an A2UI
// userAction for its canvas through A: both are accepted (202, not 409 "running
// on another server") and become turns of the session in B's runner: the
// model sees the message's image and the action, and the notes it answers
// with are committed by B's runner (the session's actor).
func TestMultiProcessAgentMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	gate := make(chan struct{})
	var release sync.Once
	open := func() { release.Do(func() { close(gate) }) }
	held := make(chan struct{}, 1)
	model := newVisionModel(t, func(text, image string) string {
		switch {
		case strings.Contains(text, "Task: hold"):
			select {
			case held <- struct{}{}:
			default:
			}
			<-gate
			return `{"actions":[{"name":"think","params":{"text":"Holding done."}}]}`
		case strings.Contains(text, `A2UI userAction "ping"`): // before the image case: every vision turn has an image (the server draws one without a browser), and this turn's prompt also recalls the message before it
			return `{"actions":[{"name":"create_shape","params":{"type":"note","x":300,"y":20,"props":{"text":"pong across processes"}}}]}`
		case image != "" && strings.Contains(text, "What is across?"):
			return `{"actions":[{"name":"create_shape","params":{"type":"note","x":10,"y":20,"props":{"text":"image seen across processes"}}}]}`
		}
		return `{"actions":[]}`
	})
	t.Cleanup(open) // before the model's server closes (cleanups run last first)
	dbURL := pgSchemaURL(t)
	bin := buildCanvasd(t)
	a, b := newProc(t, "A", bin, dbURL), newProc(t, "B", bin, dbURL)
	a.env = []string{"CANVAS_STEWARD_MODEL=openai:gpt-vision-test", "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.srv.URL + "/v1"}
	b.env = a.env
	a.start()
	b.start()
	waitReady(t, a.base())
	waitReady(t, b.base())
	c := mpClient()
	waitRelays(t, c, a, b)

	mustCall(t, c, 201, "POST", b.base()+"/api/canvases", map[string]any{"canvas_id": "held"})
	id := mustCall(t, c, 202, "POST", b.base()+"/api/canvas-agent/run", map[string]any{"roomId": "held", "message": "hold"}).decoded["session_id"].(string)
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the session's first model call never came")
	}
	actor, _ := mustCall(t, c, 200, "GET", b.base()+"/api/canvas-agent/sessions/"+id, nil).decoded["actor_id"].(string) // B's runner

	// Through A, which does not run the session.
	acc := mustCall(t, c, 202, "POST", a.base()+"/api/sessions/"+id+"/messages", map[string]any{"prompt": "What is across?", "imageData": dataURL})
	if acc.decoded["delivered"] != true {
		t.Fatalf("message answer %s", acc.body)
	}
	mustCall(t, c, 202, "POST", a.base()+"/api/host/held/actions", map[string]any{"userAction": map[string]any{"name": "ping",
		"surfaceId": "main", "sourceComponentId": "btn", "timestamp": "2026-01-02T03:04:05Z", "context": map[string]any{}}})
	open()

	var sess map[string]any
	waitFor(t, 30*time.Second, "the session ends after both turns", func() bool {
		sess = mustCall(t, c, 200, "GET", b.base()+"/api/canvas-agent/sessions/"+id, nil).decoded
		st := sess["state"]
		return st == "done" || st == "error" || st == "canceled"
	})
	tr, _ := json.Marshal(sess["transcript"])
	if sess["state"] != "done" || !strings.Contains(string(tr), "What is across? (image attached: image/png") ||
		!strings.Contains(string(tr), `A2UI userAction \"ping\"`) {
		t.Fatalf("session after the messages: %s %s", sess["state"], tr)
	}
	if sess["actor_id"] != actor {
		t.Fatalf("the session moved from B's runner %q to %v", actor, sess["actor_id"])
	}
	snap := mustCall(t, c, 200, "GET", a.base()+"/canvas_commands/snapshot/held", nil).decoded
	by := map[string]string{}
	for _, v := range snap["state"].(map[string]any)["nodes"].([]any) {
		n := v.(map[string]any)
		if p, _ := n["props"].(map[string]any); p != nil {
			text, _ := p["text"].(string)
			by[text], _ = n["created_by"].(string)
		}
	}
	for _, note := range []string{"image seen across processes", "pong across processes"} {
		if by[note] == "" || by[note] != actor {
			t.Fatalf("note %q committed by %q, want the session's runner %q (notes: %v)", note, by[note], actor, by)
		}
	}
	call, ok := model.find(func(mc modelCall) bool { return strings.Contains(mc.Text, "What is across?") })
	if !ok || call.ImageParts != 1 || call.Image != dataURL {
		t.Fatalf("the model got the message with %d image parts (found %v), want the posted image", call.ImageParts, ok)
	}
}
