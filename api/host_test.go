package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// recordingInbox implements host.Inbox for tests: the agent engineer's real
// inbox is not in this package.
type recordingInbox struct {
	msgs chan host.Message
}

func (i *recordingInbox) Deliver(_ context.Context, m host.Message) error {
	i.msgs <- m
	return nil
}

func (i *recordingInbox) next(t testing.TB) host.Message {
	t.Helper()
	select {
	case m := <-i.msgs:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message reached the inbox within 10s")
	}
	return host.Message{}
}

type hostTestEnv struct {
	*testEnv
	host  *host.Host
	inbox *recordingInbox
}

// newHostTestEnv is the lead's test server with the host routes mounted as
// routes.go mounts them, on a real listener.
func newHostTestEnv(t testing.TB, cfg host.Config) *hostTestEnv {
	t.Helper()
	inbox := &recordingInbox{msgs: make(chan host.Message, 64)}
	var h *host.Host
	e := newTestEnv(t, func(c *Config) {
		h = newHost(t, c.Store, cfg)
		c.Host = HostOptions{Host: h, Inbox: inbox}
	})
	return &hostTestEnv{testEnv: e, host: h, inbox: inbox}
}

// raw sends a request target byte for byte and returns status, headers, body.
func (e *hostTestEnv) raw(method, target string, header map[string]string) (int, http.Header, string) {
	e.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	var b strings.Builder
	b.WriteString(method + " " + target + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n")
	for k, v := range header {
		b.WriteString(k + ": " + v + "\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// post sends a body with a content type, outside the OpenAPI check (for
// routes or media types the harness's do does not cover).
func (e *hostTestEnv) post(path, token, contentType string, body []byte) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	checkResponse(e.t, e.spec, req, resp, out)
	var m map[string]any
	_ = json.Unmarshal(out, &m)
	return resp.StatusCode, m
}

const hostSurface = `{"surfaceUpdate":{"surfaceId":"main","components":[{"id":"root","component":{"Column":{"children":{"explicitList":["title","name","btn"]}}}},{"id":"title","component":{"Text":{"text":{"path":"/greeting"},"usageHint":"h1"}}},{"id":"name","component":{"TextField":{"label":{"literalString":"Name"},"text":{"path":"/form/name"}}}},{"id":"btn_label","component":{"Text":{"text":{"literalString":"Send"}}}},{"id":"btn","component":{"Button":{"child":"btn_label","primary":true,"action":{"name":"submit","context":[{"key":"name","value":{"path":"/form/name"}},{"key":"kind","value":{"literalString":"demo"}}]}}}}]}}
{"dataModelUpdate":{"surfaceId":"main","contents":[{"key":"greeting","valueString":"Hello from A2UI"},{"key":"form","valueMap":[{"key":"name","valueString":"Ada"}]}]}}
{"beginRendering":{"surfaceId":"main","root":"root"}}
`

func TestHostPagesAndFilesE2E(t *testing.T) {
	e := newHostTestEnv(t, host.Config{MaxFileBytes: 1 << 10})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	viewer, _ := e.token(canvas.RoleViewer, canvas.ActorHuman, "sess")
	other, _ := e.token(canvas.RoleEditor, canvas.ActorHuman, "elsewhere")
	reload := e.stream("/sse/host/sess?access_token="+viewer, "", nil)

	e.must(201, "PUT", "/api/host/sess/files/index.html", editor, "<h1>agent page</h1>")
	ev := reload.next()
	if ev.Event != "reload" || ev.json(t)["path"] != "index.html" {
		t.Fatalf("reload event %+v", ev)
	}
	checkSSEEvent(t, e.spec, "/sse/host/sess", ev.Event, ev.ID, ev.Data)
	e.must(200, "PUT", "/api/host/sess/files/index.html", editor, "<h1>agent page v2</h1>")
	e.must(201, "PUT", "/api/host/sess/files/css/app%20main.css", editor, "body{}")
	if r := e.do("PUT", "/api/host/sess/files/big.bin", editor, strings.Repeat("x", 2000)); r.Status != 413 {
		t.Fatalf("big file: %d %s", r.Status, r.Body)
	}
	for _, p := range []string{"..%2Fx", "%2e%2e/x", "a/../../x", ".env", "__canvas__/page.js"} {
		if r := e.do("PUT", "/api/host/sess/files/"+p, editor, "x"); r.Status != 400 && r.Status != 404 && r.Status != 422 {
			t.Errorf("PUT %s: %d", p, r.Status)
		}
	}
	e.must(403, "PUT", "/api/host/sess/files/x.txt", other, "x")
	e.must(403, "PUT", "/api/host/sess/files/x.txt", viewer, "x")
	list := e.must(200, "GET", "/api/host/sess/files", editor, nil)
	if files := list["files"].([]any); len(files) != 2 || files[0].(map[string]any)["path"] != "css/app main.css" {
		t.Fatalf("files %v", list)
	}

	// Pages: token in the query, CSP sandbox, nosniff; without a token 401; wrong scope 403.
	status, hdr, body := e.raw("GET", "/host/sess/?access_token="+viewer, nil)
	if status != 200 || body != "<h1>agent page v2</h1>" || !strings.HasPrefix(hdr.Get("Content-Security-Policy"), "sandbox allow-scripts") ||
		hdr.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("page: %d %v %q", status, hdr, body)
	}
	if status, _, _ := e.raw("GET", "/host/sess/", nil); status != 401 {
		t.Fatalf("page without token: %d", status)
	}
	if status, _, _ := e.raw("GET", "/host/sess/?access_token="+other, nil); status != 403 {
		t.Fatalf("page with another scope: %d", status)
	}
	// Built-in assets are public; the viewer needs a token (and carries a
	// capability only under a page ticket).
	if status, hdr, body := e.raw("GET", "/host/sess/__canvas__/page.js", nil); status != 200 || !strings.Contains(body, "canvasd") ||
		!strings.Contains(hdr.Get("Content-Type"), "javascript") {
		t.Fatalf("asset: %d %q", status, hdr.Get("Content-Type"))
	}
	if status, _, _ := e.raw("GET", "/host/sess/__canvas__/", nil); status != 401 {
		t.Fatalf("viewer without token: %d", status)
	}
	if status, _, body := e.raw("GET", "/host/fresh/?access_token="+editor, nil); status != 200 || !strings.Contains(body, `content="fresh"`) ||
		!strings.Contains(body, `name="canvasd-cap" content=""`) {
		t.Fatalf("viewer of a session without index, for an API client: %d %q", status, body)
	}
	// Hostile paths over the real route table, with a valid token.
	for _, p := range []string{"/host/sess/../../etc/passwd", "/host/sess/..%2f..%2fetc%2fpasswd", "/host/sess/%2e%2e/%2e%2e/etc/passwd",
		"/host/sess/%252e%252e%252f", "/host/sess/..%5c..%5cetc", "/host/..%2fsess/index.html", "/host/sess/.a2ui-state.json",
		"/host/sess/css/", "/host/sess/__canvas__/%2e%2e/index.html", "/host/%73ess/index.html"} {
		status, hdr, body := e.raw("GET", p+"?access_token="+editor, nil)
		if status != 400 && status != 404 {
			t.Errorf("%s: %d %q", p, status, body)
		}
		if !strings.HasPrefix(hdr.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s: not a problem document: %q", p, hdr.Get("Content-Type"))
		}
	}
	e.must(204, "DELETE", "/api/host/sess/files/css/app%20main.css", editor, nil)
	e.must(404, "DELETE", "/api/host/sess/files/css/app%20main.css", editor, nil)
	if ev := reload.next(); ev.Event != "reload" {
		t.Fatalf("event %+v", ev)
	}
}

func TestHostA2UIE2E(t *testing.T) {
	e := newHostTestEnv(t, host.Config{MaxA2UIBytes: 64 << 10})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	viewer, _ := e.token(canvas.RoleViewer, canvas.ActorHuman)
	live := e.stream("/sse/host/s1", viewer, nil)

	code, res := e.post("/api/host/s1/a2ui", editor, "application/jsonl", []byte(hostSurface))
	if code != 200 || res["applied"] != float64(3) || res["browsers"] != float64(1) {
		t.Fatalf("push: %d %v", code, res)
	}
	for _, kind := range []string{"surfaceUpdate", "dataModelUpdate", "beginRendering"} {
		ev := live.next()
		if ev.Event != "a2ui" || ev.json(t)[kind] == nil {
			t.Fatalf("want %s, got %+v", kind, ev)
		}
		checkSSEEvent(t, e.spec, "/sse/host/s1", ev.Event, ev.ID, ev.Data)
	}
	// A bad push: 422 naming every bad line, nothing applied or sent.
	bad := hostSurface + `{"surfaceUpdate":{"surfaceId":"main","components":[{"id":"x","component":{"Carousel":{}}}]}}` + "\nnot json\n"
	code, prob := e.post("/api/host/s1/a2ui", editor, "application/jsonl", []byte(bad))
	if code != 422 {
		t.Fatalf("bad push: %d %v", code, prob)
	}
	errs, _ := prob["errors"].([]any)
	if len(errs) != 2 || errs[0].(map[string]any)["line"] != float64(4) || errs[1].(map[string]any)["line"] != float64(5) ||
		!strings.Contains(prob["detail"].(string), "line 4") {
		t.Fatalf("problem %v", prob)
	}
	if code, _ := e.post("/api/host/s1/a2ui", editor, "text/html", []byte(hostSurface)); code != 415 {
		t.Fatalf("text/html push: %d", code)
	}
	if code, _ := e.post("/api/host/s1/a2ui", editor, "application/jsonl", bytes.Repeat([]byte(" "), 70<<10)); code != 413 {
		t.Fatalf("oversize push: %d", code)
	}
	if code, _ := e.post("/api/host/s1/a2ui", viewer, "application/jsonl", []byte(hostSurface)); code != 403 {
		t.Fatalf("viewer push: %d", code)
	}
	// A new subscriber gets the surfaces again, first.
	again := e.stream("/sse/host/s1?access_token="+viewer, "", nil)
	got := []string{}
	for i := 0; i < 3; i++ {
		ev := again.next()
		for k := range ev.json(t) {
			got = append(got, k)
		}
	}
	if strings.Join(got, ",") != "surfaceUpdate,dataModelUpdate,beginRendering" {
		t.Fatalf("replay %v", got)
	}
	// userAction → the agent's inbox.
	ua := `{"userAction":{"name":"submit","surfaceId":"main","sourceComponentId":"btn","timestamp":"2026-01-02T03:04:05Z","context":{"name":"Ada"}}}`
	if code, res := e.post("/api/host/s1/actions", editor, "application/json", []byte(ua)); code != 202 {
		t.Fatalf("action: %d %v", code, res)
	}
	m := e.inbox.next(t)
	if m.HostSession != "s1" || m.Action == nil || m.Action.Name != "submit" || m.Action.Context["name"] != "Ada" {
		t.Fatalf("inbox got %+v", m)
	}
	if code, _ := e.post("/api/host/s1/actions", editor, "application/json", []byte(`{"userAction":{"name":"x"}}`)); code != 400 {
		t.Fatalf("bad action: %d", code)
	}
	if code, res := e.post("/api/host/s1/present", editor, "application/json",
		[]byte(`{"action":"navigate","path":"docs/","placement":{"x":10,"y":20,"width":400,"height":300}}`)); code != 200 || res["browsers"] != float64(2) {
		t.Fatalf("present: %d %v", code, res)
	}
	if code, _ := e.post("/api/host/s1/present", editor, "application/json", []byte(`{"action":"explode"}`)); code != 422 {
		t.Fatalf("bad present: %d", code)
	}
	ev := live.next()
	if ev.Event != "present" || ev.json(t)["path"] != "docs/" || ev.json(t)["placement"].(map[string]any)["width"] != float64(400) {
		t.Fatalf("present event %+v", ev)
	}
	checkSSEEvent(t, e.spec, "/sse/host/s1", ev.Event, ev.ID, ev.Data)
	e.must(204, "POST", "/api/host/s1/a2ui/reset", editor, nil)
	if ev := live.next(); ev.Event != "a2ui" || ev.json(t)["deleteSurface"] == nil {
		t.Fatalf("reset event %+v", ev)
	}
}

func TestHostMessagesE2E(t *testing.T) {
	e := newHostTestEnv(t, host.Config{MaxImageBytes: 1024})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	viewer, _ := e.token(canvas.RoleViewer, canvas.ActorHuman)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 100)...)
	url := func(mt string, b []byte) string {
		return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b)
	}

	out := e.must(202, "POST", "/api/sessions/sess-1/messages", editor, map[string]any{
		"prompt": "What is this drawing?", "imageData": url("image/png", png), "source": "applet", "appletSlug": "doodle"})
	img := out["image"].(map[string]any)
	if out["ok"] != true || out["delivered"] != true || len(img["sha256"].(string)) != 64 || img["media_type"] != "image/png" {
		t.Fatalf("accepted %v", out)
	}
	m := e.inbox.next(t)
	if m.SessionID != "sess-1" || m.Image == nil || m.AppletSlug != "doodle" || m.Principal.Role != canvas.RoleEditor {
		t.Fatalf("inbox %+v", m)
	}
	if u, err := m.Image.DataURL(); err != nil || u != url("image/png", png) {
		t.Fatalf("stored image: %v", err)
	}
	cases := []struct {
		body   any
		status int
		detail string
	}{
		{map[string]any{"prompt": "x", "imageData": "data:image/png;base64,%%%"}, 400, "base64"},
		{map[string]any{"prompt": "x", "imageData": url("image/jpeg", png)}, 400, "bytes are image/png"},
		{map[string]any{"prompt": "x", "imageData": url("image/png", append(png, make([]byte, 2000)...))}, 413, "1024 bytes"},
		{map[string]any{"prompt": "x", "imageData": url("image/svg+xml", []byte("<svg/>"))}, 415, "image/png, image/jpeg"},
		{map[string]any{"prompt": "x", "imageData": url("image/png", []byte("GIF89a......"))}, 400, "bytes are image/gif"},
		{map[string]any{"prompt": "x", "imageData": url("image/png", []byte("not an image"))}, 415, "not a PNG"},
		{map[string]any{"prompt": "x", "imageData": "data:image/png;base64," + strings.Repeat("A", 8<<10)}, 413, "limit"},
		{map[string]any{"nope": 1}, 400, "unknown field"},
	}
	for _, c := range cases {
		r := e.do("POST", "/api/sessions/sess-1/messages", editor, c.body)
		if r.Status != c.status || !strings.Contains(string(r.json(t)["detail"].(string)), c.detail) {
			t.Errorf("%v: %d %s, want %d with %q", c.body, r.Status, r.Body, c.status, c.detail)
		}
	}
	e.must(403, "POST", "/api/sessions/sess-1/messages", viewer, map[string]any{"prompt": "hi"})
	select {
	case m := <-e.inbox.msgs:
		t.Fatalf("a rejected message reached the inbox: %+v", m)
	default:
	}
}

func TestInvokeE2E(t *testing.T) {
	e := newHostTestEnv(t, host.Config{})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	browser, _ := e.token(canvas.RoleViewer, canvas.ActorHuman)

	// Nobody connected: 504, unconfirmed false.
	r := e.do("POST", "/api/invoke", editor, map[string]any{"host_session": "inv", "action": "snapshot", "timeout_ms": 50})
	if r.Status != 504 || r.json(t)["unconfirmed"] != false {
		t.Fatalf("no browser: %d %s", r.Status, r.Body)
	}
	// A browser that never answers: 504, unconfirmed true.
	silent := e.stream("/sse/host/inv", browser, nil)
	r = e.do("POST", "/api/invoke", editor, map[string]any{"host_session": "inv", "action": "snapshot", "timeout_ms": 50})
	if p := r.json(t); r.Status != 504 || p["unconfirmed"] != true || p["invoke_id"] == "" {
		t.Fatalf("silent browser: %d %s", r.Status, r.Body)
	}
	ev := silent.next()
	if ev.Event != "invoke" {
		t.Fatalf("event %+v", ev)
	}
	checkSSEEvent(t, e.spec, "/sse/host/inv", ev.Event, ev.ID, ev.Data)
	late := ev.json(t)["invoke_id"].(string)
	if a := e.must(200, "POST", "/api/invoke/"+late, browser, map[string]any{"ok": true}); a["accepted"] != false {
		t.Fatalf("late answer %v", a)
	}
	e.must(404, "POST", "/api/invoke/inv_unknown", browser, map[string]any{"ok": true})

	// A browser that answers: the first answer wins, on a host session and on a canvas stream.
	cid := e.canvas("c-invoke")
	elsewhere, _ := e.token(canvas.RoleEditor, canvas.ActorHuman, e.canvas("c-invoke-other"))
	canvasStream := e.stream("/sse/canvas/"+cid, browser, nil)
	if ev := canvasStream.next(); ev.Event != "caught_up" {
		t.Fatalf("canvas stream %+v", ev)
	}
	for _, target := range []struct {
		body   map[string]any
		stream *sseStream
	}{
		{map[string]any{"host_session": "inv", "action": "eval", "payload": map[string]any{"js": "6*7"}, "timeout_ms": 5000}, silent},
		{map[string]any{"canvas_id": cid, "action": "screenshot", "timeout_ms": 5000}, canvasStream},
	} {
		done := make(chan response, 1)
		go func() { done <- e.do("POST", "/api/invoke", editor, target.body) }()
		ev := target.stream.next()
		if ev.Event != "invoke" {
			t.Fatalf("event %+v", ev)
		}
		id := ev.json(t)["invoke_id"].(string)
		if a := e.must(200, "POST", "/api/invoke/"+id, browser, map[string]any{"ok": true, "result": 42}); a["accepted"] != true {
			t.Fatalf("first answer %v", a)
		}
		if a := e.must(200, "POST", "/api/invoke/"+id, browser, map[string]any{"ok": true, "result": 1}); a["accepted"] != false {
			t.Fatalf("second answer %v", a)
		}
		// A late answer is still checked: a token for another canvas gets 403, not an acknowledgement.
		e.must(403, "POST", "/api/invoke/"+id, elsewhere, map[string]any{"ok": true, "result": 2})
		res := <-done
		if res.Status != 200 || res.json(t)["result"] != float64(42) {
			t.Fatalf("invoke result: %d %s", res.Status, res.Body)
		}
	}
	// Bad requests and authorization.
	e.must(400, "POST", "/api/invoke", editor, map[string]any{"action": "x"})
	e.must(400, "POST", "/api/invoke", editor, map[string]any{"canvas_id": cid, "host_session": "inv", "action": "x"})
	e.must(403, "POST", "/api/invoke", browser, map[string]any{"host_session": "inv", "action": "x", "timeout_ms": 10})
}
