package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/hub"
)

// caughtUp reads a fresh canvas stream up to caught_up.
func caughtUp(t *testing.T, s *sseStream) {
	t.Helper()
	for {
		if m := s.next(); m.Event == "caught_up" {
			return
		}
	}
}

// waitSubscribers waits until a hub counts n streams on canvasID (presence
// of other processes arrives by NOTIFY; a closed stream leaves when the
// server notices).
func waitSubscribers(t *testing.T, e *testEnv, canvasID string, n int) {
	t.Helper()
	waitUntil(t, 10*time.Second, fmt.Sprintf("%s counts %d subscribers on %s", e.srv.URL, n, canvasID),
		func() bool { return e.api.hub.Subscribers(canvasID) == n })
}

// nextEvent requires the stream's next event to be named event (so a
// duplicate of the previous one fails the test).
func nextEvent(t *testing.T, s *sseStream, event string) sseMsg {
	t.Helper()
	m := s.next()
	if m.Event != event {
		t.Fatalf("next event is %s %s, want %s", m.Event, m.Data, event)
	}
	return m
}

// TestRelayAcrossProcessesPG runs two API servers (two stores, engines and
// hubs) on one PostgreSQL schema: gestures, agent events and invokes posted
// to one reach the other's streams exactly once, and an invoke started on A
// is answered by a browser on B.
func TestRelayAcrossProcessesPG(t *testing.T) {
	url, schema := pgTestSchema(t)
	a := newPGTestEnv(t, url, schema)
	b := newPGTestEnv(t, url, schema)
	a.canvas("c1")
	a.canvas("c2")

	sa := a.stream("/sse/canvas/c1", testAdmin, nil)
	sb := b.stream("/sse/canvas/c1", testAdmin, nil)
	caughtUp(t, sa)
	caughtUp(t, sb)
	// Presence: each process counts the other's stream.
	waitSubscribers(t, a, "c1", 2)
	waitSubscribers(t, b, "c1", 2)
	if n := a.api.hub.Subscribers("c2"); n != 0 {
		t.Fatalf("c2 has %d subscribers, want 0", n)
	}

	// A gesture posted to A reaches both streams once.
	viewer, viewerID := a.token(canvas.RoleViewer, canvas.ActorHuman, "c1")
	a.must(202, "POST", "/canvas_commands/c1/gesture", viewer, map[string]any{"cursor": map[string]any{"x": 3, "y": 4}})
	for _, s := range []*sseStream{sa, sb} {
		g := nextEvent(t, s, "gesture").json(t)
		if g["actor_id"] != viewerID || g["cursor"].(map[string]any)["x"] != 3.0 {
			t.Fatalf("gesture = %v", g)
		}
	}
	// An agent event relayed through A reaches both.
	a.must(202, "POST", "/api/canvas-agent/events", testAdmin, map[string]any{"canvas_id": "c1", "event": "agent:chat",
		"data": map[string]any{"sessionId": "s1", "text": "thinking\nhard"}})
	for _, s := range []*sseStream{sa, sb} {
		if c := nextEvent(t, s, "agent:chat").json(t); c["text"] != "thinking\nhard" {
			t.Fatalf("agent:chat = %v", c)
		}
	}

	// An invoke started on A, answered by the browser on B (to B).
	type result struct {
		r   response
		err string
	}
	invoke := func(payload any) chan result {
		ch := make(chan result, 1)
		go func() {
			body, _ := json.Marshal(map[string]any{"canvas_id": "c1", "action": "ping", "payload": payload, "timeout_ms": 8000})
			req, _ := http.NewRequest("POST", a.srv.URL+"/api/invoke", strings.NewReader(string(body)))
			req.Header.Set("Authorization", "Bearer "+testAdmin)
			req.Header.Set("Content-Type", "application/json")
			resp, err := a.srv.Client().Do(req)
			if err != nil {
				ch <- result{err: err.Error()}
				return
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			ch <- result{r: response{Status: resp.StatusCode, Body: out}}
		}()
		return ch
	}
	done := invoke(map[string]any{"n": 1})
	inv := nextEvent(t, sb, "invoke").json(t)
	id, _ := inv["invoke_id"].(string)
	if id == "" || inv["action"] != "ping" {
		t.Fatalf("invoke event on B = %v", inv)
	}
	if inA := nextEvent(t, sa, "invoke").json(t); inA["invoke_id"] != id {
		t.Fatalf("invoke event on A = %v", inA)
	}
	// A viewer scoped to another canvas may not answer, even through B.
	other, _ := a.token(canvas.RoleViewer, canvas.ActorHuman, "c2")
	b.must(403, "POST", "/api/invoke/"+id, other, map[string]any{"ok": true, "result": map[string]any{"pong": 0}})
	got := b.must(200, "POST", "/api/invoke/"+id, viewer, map[string]any{"ok": true, "result": map[string]any{"pong": 1}})
	if got["accepted"] != true {
		t.Fatalf("first answer on B: %v", got)
	}
	select {
	case res := <-done:
		if res.err != "" || res.r.Status != 200 {
			t.Fatalf("POST /api/invoke on A: %v %d %s", res.err, res.r.Status, res.r.Body)
		}
		var ans host.Answer
		if err := json.Unmarshal(res.r.Body, &ans); err != nil || !ans.OK || string(ans.Result) != `{"pong":1}` {
			t.Fatalf("A's caller got %s (%v)", res.r.Body, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("A's invoke did not return after B's browser answered")
	}
	// Later answers, on either process, are acknowledged and ignored.
	if got := b.must(200, "POST", "/api/invoke/"+id, viewer, map[string]any{"ok": true, "result": 2}); got["accepted"] != false {
		t.Fatalf("second answer on B: %v", got)
	}
	if got := a.must(200, "POST", "/api/invoke/"+id, viewer, map[string]any{"ok": true, "result": 3}); got["accepted"] != false {
		t.Fatalf("answer on A after B's: %v", got)
	}
	// An id no process knows is a 404, within the forwarding bound.
	t0 := time.Now()
	b.must(404, "POST", "/api/invoke/inv_00000000000000000000000000000000", viewer, map[string]any{"ok": true})
	if d := time.Since(t0); d < hub.AnswerForwardWait || d > hub.AnswerForwardWait+2*time.Second {
		t.Errorf("unknown id answered 404 after %v, want about %v", d, hub.AnswerForwardWait)
	}

	// No duplicates: one gesture, one agent:chat and one invoke each, all
	// consumed above. Each process now posts a marker; NOTIFY delivers in
	// commit order, so a duplicate relayed to either process would arrive
	// before the other process's marker. The next two events on each stream
	// must be the two markers.
	for _, e := range []*testEnv{a, b} {
		e.must(202, "POST", "/api/canvas-agent/events", testAdmin, map[string]any{"canvas_id": "c1", "event": "agent:chat",
			"data": map[string]any{"sessionId": "s1", "text": "marker " + e.srv.URL}})
	}
	for name, s := range map[string]*sseStream{"A": sa, "B": sb} {
		seen := map[string]bool{}
		for range 2 {
			if m := nextEvent(t, s, "agent:chat").json(t); strings.HasPrefix(m["text"].(string), "marker ") {
				seen[m["text"].(string)] = true
			} else {
				t.Fatalf("stream on %s got an extra agent:chat %v", name, m)
			}
		}
		if !seen["marker "+a.srv.URL] || !seen["marker "+b.srv.URL] {
			t.Fatalf("stream on %s: markers %v", name, seen)
		}
	}

	// The agent's screenshot (minted on A, no browser on A's c3): the in-process
	// runner's AgentScreenshotter asks the host, B's browser, and gets its
	// answer, which is too large for a NOTIFY payload.
	a.canvas("c3")
	sb3 := b.stream(browserPath("c3", "b3", hub.CapScreenshot), testAdmin, nil)
	caughtUp(t, sb3)
	nextEvent(t, sb3, canvas.EventAgentHost)
	waitSubscribers(t, a, "c3", 1)
	waitUntil(t, 5*time.Second, "A knows B's browser is c3's host", func() bool { return a.api.hub.Host("c3") == "b3" })
	if n := a.api.hub.LocalSubscribers("c3"); n != 0 {
		t.Fatalf("A has %d local streams on c3", n)
	}
	br := host.NewBroker(CanvasInvokeDeliverer(a.api.hub))
	shotDone := make(chan error, 1)
	var shot agent.Screenshot
	go func() {
		var err error
		shot, err = AgentScreenshotter{Hub: a.api.hub, Broker: br}.Screenshot(context.Background(), "c3",
			agent.ScreenshotRequest{Type: "screenshot", SessionID: "s1", RequestID: "r1"}, 8*time.Second)
		shotDone <- err
	}()
	req := nextEvent(t, sb3, "invoke").json(t)
	if req["action"] != "agent:screenshot" {
		t.Fatalf("screenshot invoke = %v", req)
	}
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(make([]byte, 60<<10))
	got = b.must(200, "POST", "/api/invoke/"+req["invoke_id"].(string), testAdmin,
		map[string]any{"ok": true, "result": map[string]any{"dataUrl": png, "docVersion": "7"}})
	if got["accepted"] != true {
		t.Fatalf("screenshot answer: %v", got)
	}
	select {
	case err := <-shotDone:
		if err != nil || shot.DataURL != png || shot.DocVersion != "7" {
			t.Fatalf("screenshot: err %v, %d bytes, version %q", err, len(shot.DataURL), shot.DocVersion)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the screenshot did not return")
	}

	// B stopping withdraws its presence at once.
	b.api.hub.Stop()
	waitSubscribers(t, a, "c3", 0)
	waitSubscribers(t, a, "c1", 1)
}
