package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// visionModel is a real HTTP endpoint speaking the OpenAI chat completions
// streaming protocol (chat.completion.chunk events). It records each
// request's last message (text and image_url parts) and answers with
// reply(text, image).
type visionModel struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []modelCall
}

type modelCall struct {
	Text, Image string
	ImageParts  int
}

func newVisionModel(t *testing.T, reply func(text, image string) string) *visionModel {
	m := &visionModel{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"bad path or key"}}`, http.StatusUnauthorized)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || !req.Stream || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"want a streaming request"}}`, http.StatusBadRequest)
			return
		}
		var call modelCall
		last := req.Messages[len(req.Messages)-1].Content
		if json.Unmarshal(last, &call.Text) != nil {
			var parts []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			}
			_ = json.Unmarshal(last, &parts)
			for _, p := range parts {
				call.Text += p.Text
				if p.Type == "image_url" {
					call.Image = p.ImageURL.URL
					call.ImageParts++
				}
			}
		}
		m.mu.Lock()
		m.calls = append(m.calls, call)
		n := len(m.calls)
		m.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		chunk := func(delta, finish string) {
			fr := "null"
			if finish != "" {
				fr = `"` + finish + `"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-%d\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", n, req.Model, delta, fr)
			fl.Flush()
		}
		chunk(`{"role":"assistant"}`, "")
		text := reply(call.Text, call.Image)
		for len(text) > 0 {
			k := min(17, len(text))
			c, _ := json.Marshal(text[:k])
			chunk(`{"content":`+string(c)+`}`, "")
			text = text[k:]
		}
		chunk(`{}`, "stop")
		io.WriteString(w, "data: [DONE]\n\n")
		fl.Flush()
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *visionModel) find(pred func(modelCall) bool) (modelCall, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.calls {
		if pred(c) {
			return c, true
		}
	}
	return modelCall{}, false
}

// canvasdProc is `canvasd serve` run in-process on a free port.
type canvasdProc struct {
	t       *testing.T
	base    string
	admin   string
	dataDir string
	vars    map[string]string // its environment
}

// startCanvasd runs `canvasd serve` with the environment vars and extra
// command-line flags.
func startCanvasd(t *testing.T, vars map[string]string, flags ...string) *canvasdProc {
	t.Helper()
	addr := freeAddr(t)
	const admin = "cvd_inbox_admin"
	if vars["CANVASD_DATA_DIR"] == "" {
		vars["CANVASD_DATA_DIR"] = t.TempDir()
	}
	vars["CANVASD_LOG_LEVEL"] = "warn"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	var mu sync.Mutex
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", addr, "--admin-token", admin}, flags...), env(vars), io.Discard, lockedWriter{&mu, &stderr})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				mu.Lock()
				t.Errorf("canvasd exited %d: %s", code, stderr.String())
				mu.Unlock()
			}
		case <-time.After(20 * time.Second):
			t.Error("canvasd did not stop within 20s")
		}
	})
	waitReady(t, "http://"+addr)
	return &canvasdProc{t: t, base: "http://" + addr, admin: admin, dataDir: vars["CANVASD_DATA_DIR"], vars: vars}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// call sends a JSON request and decodes a JSON object answer.
func (c *canvasdProc) call(method, path, token string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	if m == nil {
		m = map[string]any{"_raw": string(raw)}
	}
	return resp.StatusCode, m
}

func (c *canvasdProc) must(status int, method, path, token string, body any) map[string]any {
	c.t.Helper()
	code, m := c.call(method, path, token, body)
	if code != status {
		c.t.Fatalf("%s %s: %d, want %d: %v", method, path, code, status, m)
	}
	return m
}

// waitFor polls cond every 20 ms for up to 20 s.
func (c *canvasdProc) waitFor(what string, cond func() bool) {
	c.t.Helper()
	for pl := newPoller(20*time.Second, 20*time.Millisecond); !cond(); pl.wait() {
		if pl.expired() {
			c.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (c *canvasdProc) sessionEnded(id, token string) map[string]any {
	c.t.Helper()
	var s map[string]any
	c.waitFor("session "+id+" to end", func() bool {
		s = c.must(200, "GET", "/api/canvas-agent/sessions/"+id, token, nil)
		st := s["state"]
		return st == "done" || st == "error" || st == "canceled"
	})
	return s
}

// node returns the node whose props.text is text, or nil.
func (c *canvasdProc) node(canvasID, text string) map[string]any {
	c.t.Helper()
	snap := c.must(200, "GET", "/canvas_commands/snapshot/"+canvasID, c.admin, nil)
	for _, v := range snap["state"].(map[string]any)["nodes"].([]any) {
		n := v.(map[string]any)
		if p, _ := n["props"].(map[string]any); p != nil && p["text"] == text {
			return n
		}
	}
	return nil
}

// TestImageMessageAndUserActionReachTheModel runs canvasd serve with an
// OpenAI-compatible model and checks, over real listeners, that (1) a PNG
// posted as imageData to /api/sessions/{id}/messages arrives at the model as
// an image_url part equal to the posted data URL and the model's reply is
// committed by the agent, and (2) an A2UI userAction posted to
// /api/host/{session}/actions reaches the agent of the canvas of that name
// and produces a turn whose actions are committed.
func TestImageMessageAndUserActionReachTheModel(t *testing.T) {
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	model := newVisionModel(t, func(text, image string) string {
		// Every turn has an image now (without a browser, the server draws
		// the viewport): the userAction's turn, whose transcript holds the
		// image message, is told apart first.
		switch {
		case strings.Contains(text, `A2UI userAction "submit"`) && strings.Contains(text, `"name":"Ada"`):
			return "```json\n" + `{"actions":[{"name":"create_shape","params":{"type":"note","x":300,"y":20,"props":{"text":"Hello, Ada"}}}]}` + "\n```"
		case image != "" && strings.Contains(text, "What is this drawing?"):
			return `{"actions":[{"name":"think","params":{"text":"A single pixel."}},` +
				`{"name":"create_shape","params":{"type":"note","x":10,"y":20,"props":{"text":"I see a one-pixel PNG"}}}]}`
		case strings.Contains(text, "Task: start"):
			return `{"actions":[{"name":"think","params":{"text":"Ready."}}]}`
		}
		return `{"actions":[]}`
	})
	c := startCanvasd(t, map[string]string{"CANVAS_STEWARD_MODEL": "openai:gpt-vision-test", "OPENAI_API_KEY": "sk-test",
		"OPENAI_BASE_URL": model.srv.URL + "/v1"})
	c.must(201, "POST", "/api/canvases", c.admin, map[string]any{"canvas_id": "board"})
	tok := c.must(201, "POST", "/api/tokens", c.admin, map[string]any{"role": "editor", "actor_type": "human", "canvases": []string{"board"}})
	human := tok["token"].(string)
	other := c.must(201, "POST", "/api/tokens", c.admin, map[string]any{"role": "editor", "actor_type": "human", "canvases": []string{"elsewhere"}})["token"].(string)

	run := c.must(202, "POST", "/api/canvas-agent/run", human, map[string]any{"roomId": "board", "message": "start"})
	id := run["session_id"].(string)
	if s := c.sessionEnded(id, human); s["state"] != "done" {
		t.Fatalf("first run: %v", s)
	}

	// (1) The image message: a new turn of the finished session.
	msg := map[string]any{"prompt": "What is this drawing?", "imageData": dataURL, "source": "applet", "appletSlug": "doodle"}
	if code, m := c.call("POST", "/api/sessions/"+id+"/messages", other, msg); code != 404 { // a session it cannot see is not there
		t.Fatalf("message from an editor of another canvas: %d %v", code, m)
	}
	if code, m := c.call("POST", "/api/sessions/as_unknown/messages", human, msg); code != 404 {
		t.Fatalf("message to an unknown session: %d %v", code, m)
	}
	acc := c.must(202, "POST", "/api/sessions/"+id+"/messages", human, msg)
	if acc["delivered"] != true || acc["session_id"] != id {
		t.Fatalf("message answer %v", acc)
	}
	var note map[string]any
	c.waitFor("the model's note to be committed", func() bool { note = c.node("board", "I see a one-pixel PNG"); return note != nil })
	call, ok := model.find(func(mc modelCall) bool { return strings.Contains(mc.Text, "What is this drawing?") })
	if !ok {
		t.Fatal("the message never reached the model")
	}
	if call.ImageParts != 1 || call.Image != dataURL {
		t.Fatalf("image parts %d, image_url %.60q…: want exactly the posted data URL %.60q…", call.ImageParts, call.Image, dataURL)
	}
	if by, _ := note["created_by"].(string); !strings.HasPrefix(by, "agent-") {
		t.Fatalf("the note was committed by %q, want the agent", by)
	}
	s := c.sessionEnded(id, human)
	tr, _ := json.Marshal(s["transcript"])
	if s["state"] != "done" || !strings.Contains(string(tr), "[applet doodle] What is this drawing? (image attached: image/png") ||
		!strings.Contains(string(tr), "A single pixel.") {
		t.Fatalf("session after the message: %v", s)
	}

	// (2) A userAction from the A2UI shell of host session "board".
	action := map[string]any{"userAction": map[string]any{"name": "submit", "surfaceId": "main", "sourceComponentId": "btn",
		"timestamp": "2026-01-02T03:04:05Z", "context": map[string]any{"name": "Ada"}}}
	c.must(202, "POST", "/api/host/board/actions", human, action)
	c.waitFor("the userAction's turn to be committed", func() bool { return c.node("board", "Hello, Ada") != nil })
	if _, ok := model.find(func(mc modelCall) bool {
		return strings.Contains(mc.Text, `from component \"btn\" on surface \"main\"`) ||
			strings.Contains(mc.Text, `from component "btn" on surface "main"`)
	}); !ok {
		t.Fatal("the model never saw the userAction")
	}
	s = c.sessionEnded(id, human)
	tr, _ = json.Marshal(s["transcript"])
	if !strings.Contains(string(tr), `A2UI userAction`) {
		t.Fatalf("the userAction did not go to the canvas's latest session %s: %s", id, tr)
	}
	// A host session with no canvas of its name talks to the agent of a
	// canvas made for it.
	c.must(202, "POST", "/api/host/no-such-canvas/actions", c.admin, action)
	c.must(200, "GET", "/api/canvases/no-such-canvas", c.admin, nil)
}

// startWorker runs `canvasd agent` in-process against c's server and store
// (the embedded database in c's data dir) until the test ends.
func startWorker(t *testing.T, c *canvasdProc) {
	t.Helper()
	tok := c.must(201, "POST", "/api/tokens", c.admin, map[string]any{"role": "editor", "actor_type": "agent"})["token"].(string)
	vars := map[string]string{"CANVASD_LOG_LEVEL": "warn", "CANVASD_DATA_DIR": c.dataDir}
	for k, v := range c.vars {
		if strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "CANVAS_STEWARD_") {
			vars[k] = v
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var mu sync.Mutex
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"agent", "--server", c.base, "--token", tok}, env(vars), io.Discard, lockedWriter{&mu, &stderr})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				mu.Lock()
				t.Errorf("canvasd agent exited %d: %s", code, stderr.String())
				mu.Unlock()
			}
		case <-time.After(20 * time.Second):
			t.Error("canvasd agent did not stop within 20s")
		}
	})
}

// TestMessagesInWorkersMode: with --agent workers, a page's message (with an
// image), a userAction and a message for a session that has ended all reach
// the model through a `canvasd agent` worker, which commits the answers.
func TestMessagesInWorkersMode(t *testing.T) {
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	model := newVisionModel(t, func(text, image string) string {
		switch {
		case image != "" && strings.Contains(text, "What is on my page?"):
			return `{"actions":[{"name":"create_shape","params":{"type":"note","x":10,"y":20,"props":{"text":"a pixel, seen by a worker"}}}]}`
		case strings.Contains(text, `A2UI userAction "ping"`):
			return `{"actions":[{"name":"create_shape","params":{"type":"note","x":300,"y":20,"props":{"text":"pong from a worker"}}}]}`
		case strings.Contains(text, "Once more"):
			return `{"actions":[{"name":"create_shape","params":{"type":"note","x":600,"y":20,"props":{"text":"again, from a worker"}}}]}`
		}
		return `{"actions":[]}`
	})
	c := startCanvasd(t, map[string]string{"CANVASD_AGENT": "workers", "CANVAS_STEWARD_MODEL": "openai:gpt-vision-test", "OPENAI_API_KEY": "sk-test",
		"OPENAI_BASE_URL": model.srv.URL + "/v1"})
	startWorker(t, c)
	acc := c.must(202, "POST", "/api/host/pages/messages", c.admin, map[string]any{"prompt": "What is on my page?", "imageData": dataURL, "appletSlug": "doodle"})
	if acc["delivered"] != true || acc["canvas_id"] != "pages" {
		t.Fatalf("message answer %v", acc)
	}
	c.waitFor("the worker's note", func() bool { return c.node("pages", "a pixel, seen by a worker") != nil })
	call, ok := model.find(func(mc modelCall) bool { return strings.Contains(mc.Text, "What is on my page?") })
	if !ok || call.ImageParts != 1 || call.Image != dataURL {
		t.Fatalf("the model got the page's message with %d image parts (found %v)", call.ImageParts, ok)
	}
	c.must(202, "POST", "/api/host/pages/actions", c.admin, map[string]any{"userAction": map[string]any{"name": "ping",
		"surfaceId": "main", "sourceComponentId": "btn", "timestamp": "2026-01-02T03:04:05Z", "context": map[string]any{}}})
	c.waitFor("the worker's answer to the userAction", func() bool { return c.node("pages", "pong from a worker") != nil })

	// A message for a session that has ended: queued again for a worker.
	id := c.must(202, "POST", "/api/canvas-agent/run", c.admin, map[string]any{"roomId": "pages", "message": "start"})["session_id"].(string)
	if s := c.sessionEnded(id, c.admin); s["state"] != "done" {
		t.Fatalf("run: %v", s)
	}
	c.must(202, "POST", "/api/sessions/"+id+"/messages", c.admin, map[string]any{"prompt": "Once more"})
	c.waitFor("the worker's answer to the message", func() bool { return c.node("pages", "again, from a worker") != nil })
}
