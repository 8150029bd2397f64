package api

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// viewerCap opens session's viewer as a browser does with token and
// returns the bridge capability in its HTML.
func viewerCap(t *testing.T, e *testEnv, token, session string) string {
	t.Helper()
	c := *e.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ := http.NewRequest("GET", e.srv.URL+"/host/"+session+"/?access_token="+url.QueryEscape(token), nil)
	for k, v := range navigate {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 303 || !strings.HasSuffix(loc, "/__canvas__/") {
		t.Fatalf("open %s: %d %q", session, resp.StatusCode, loc)
	}
	resp, err = c.Get(e.srv.URL + loc)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_, rest, _ := strings.Cut(string(b), `name="canvasd-cap" content="`)
	capability, _, _ := strings.Cut(rest, `"`)
	if !host.IsCap(capability) {
		t.Fatalf("the viewer of %s carries no capability: %.400s", session, b)
	}
	return capability
}

// TestBridgeCapabilityOpensOnlyItsSession: the capability a viewer carries
// is refused (401) on every route of the table except its own session's
// stream, messages, userActions and agent links (and the answers to its
// session's invokes); on another session it is 403; it dies with its token;
// it is never taken from the query.
func TestBridgeCapabilityOpensOnlyItsSession(t *testing.T) {
	z, _ := newAuthzEnv(t)
	editor, editorID := z.token(canvas.RoleEditor, canvas.ActorAgent, authzA, authzD)
	capA := viewerCap(t, z.testEnv, editor, authzA)
	allowed := map[string]int{
		"GET /sse/host/{session}":             200,
		"POST /api/host/{session}/actions":    202,
		"POST /api/host/{session}/messages":   202,
		"POST /api/host/{session}/agent-link": 202,
		"POST /api/invoke/{invoke_id}":        403, // the row's invoke is a canvas's: not the session's
	}
	noToken := authzCaller{name: "no token"}
	checked := 0
	for _, r := range authzRows() {
		checked++
		want, ok := allowed[r.key()]
		if !ok {
			want = http.StatusUnauthorized
			if st := r.expect(noToken); st != http.StatusUnauthorized {
				want = st // a public route answers as it does without a token
			}
		}
		rq := r.req(z)
		status, _, body := z.send(rq, capA)
		if rq.after != nil {
			rq.after()
		}
		if status != want {
			t.Errorf("%s %s with session %s's capability: %d, want %d: %.300s", rq.method, rq.path, authzA, status, want, body)
		}
	}
	if checked < 40 {
		t.Fatalf("only %d routes checked", checked)
	}

	// Another session: 403 (the token could open it, the capability cannot).
	for _, rq := range []authzReq{
		{method: "GET", path: "/sse/host/" + authzD, stream: true},
		{method: "POST", path: "/api/host/" + authzD + "/messages", body: `{"prompt":"hi"}`},
		{method: "POST", path: "/api/host/" + authzD + "/agent-link", body: `{"message":"hi","confirmed":true}`},
	} {
		if status, _, body := z.send(rq, capA); status != http.StatusForbidden {
			t.Errorf("%s %s with session %s's capability: %d %s", rq.method, rq.path, authzA, status, body)
		}
	}
	// The answers to its own session's invokes, not another's.
	host := z.stream("/sse/host/"+authzA, testAdmin, nil)
	hostD := z.stream("/sse/host/"+authzD, testAdmin, nil)
	for _, c := range []struct {
		s    *sseStream
		want int
	}{{host, 200}, {hostD, 403}} {
		session := authzA
		if c.s == hostD {
			session = authzD
		}
		done := make(chan response, 1)
		go func() {
			done <- z.do("POST", "/api/invoke", testAdmin, map[string]any{"host_session": session, "action": "pending", "timeout_ms": 5000})
		}()
		var id string
		for id == "" {
			if m := c.s.next(); m.Event == "invoke" {
				id = m.json(t)["invoke_id"].(string)
			}
		}
		status, _, body := z.send(authzReq{method: "POST", path: "/api/invoke/" + id, body: `{"ok":true,"result":"from the page"}`}, capA)
		if status != c.want {
			t.Errorf("answer to %s's invoke with %s's capability: %d %s", session, authzA, status, body)
		}
		if c.want != 200 {
			z.do("POST", "/api/invoke/"+id, testAdmin, map[string]any{"ok": true})
		}
		if r := <-done; c.want == 200 && (r.Status != 200 || r.json(t)["result"] != "from the page") {
			t.Errorf("the invoke got %d %s", r.Status, r.Body)
		}
	}
	// Never from the query, where URLs are logged.
	if status, _, _ := z.send(authzReq{method: "GET", path: "/sse/host/" + authzA + "?access_token=" + url.QueryEscape(capA), stream: true}, ""); status != 401 {
		t.Errorf("capability in the query: %d", status)
	}
	// A forged or altered capability, and one whose token was revoked.
	if status, _, _ := z.send(authzReq{method: "POST", path: "/api/host/" + authzA + "/messages", body: `{"prompt":"hi"}`}, capA[:len(capA)-2]+"AA"); status != 401 {
		t.Errorf("altered capability: %d", status)
	}
	z.must(204, "DELETE", "/api/tokens/"+editorID, testAdmin, nil)
	if status, _, body := z.send(authzReq{method: "POST", path: "/api/host/" + authzA + "/messages", body: `{"prompt":"hi"}`}, capA); status != 401 ||
		!strings.Contains(string(body), "revoked") {
		t.Errorf("capability of a revoked token: %d %s", status, body)
	}
	// A viewer's capability streams but cannot send.
	viewer, _ := z.token(canvas.RoleViewer, canvas.ActorHuman, authzA)
	capV := viewerCap(t, z.testEnv, viewer, authzA)
	if status, _, _ := z.send(authzReq{method: "GET", path: "/sse/host/" + authzA, stream: true}, capV); status != 200 {
		t.Errorf("viewer's capability on the stream: %d", status)
	}
	if status, _, _ := z.send(authzReq{method: "POST", path: "/api/host/" + authzA + "/messages", body: `{"prompt":"hi"}`}, capV); status != 403 {
		t.Errorf("viewer's capability sending a message: %d", status)
	}
}

// TestAgentLinks: an agent link runs at once with the session's key, asks
// for the person's confirmation without one (428, nothing run), refuses a
// wrong key; the run starts on the canvas of the session's id, created for
// a session that had none.
func TestAgentLinks(t *testing.T) {
	z, _ := newAuthzEnv(t)
	editor, _ := z.token(canvas.RoleEditor, canvas.ActorHuman)
	key := z.must(200, "GET", "/api/host/pagesonly/link-key", editor, nil)
	k, _ := key["key"].(string)
	if len(k) < 20 || !strings.Contains(key["example"].(string), "canvasd://agent?message=") {
		t.Fatalf("link key: %v", key)
	}
	if r := z.do("POST", "/api/host/pagesonly/agent-link", editor, map[string]any{"message": "go"}); r.Status != 428 ||
		!strings.Contains(string(r.Body), "confirm") {
		t.Fatalf("without a key: %d %s", r.Status, r.Body)
	}
	if r := z.do("GET", "/api/canvases/pagesonly", testAdmin, nil); r.Status != 404 {
		t.Fatalf("a refused link created the canvas: %d", r.Status)
	}
	if r := z.do("POST", "/api/host/pagesonly/agent-link", editor, map[string]any{"message": "go", "key": k + "x"}); r.Status != 403 {
		t.Fatalf("wrong key: %d %s", r.Status, r.Body)
	}
	started := z.must(202, "POST", "/api/host/pagesonly/agent-link", editor, map[string]any{"message": "summarize the page", "key": k})
	if started["canvas_id"] != "pagesonly" {
		t.Fatalf("started %v", started)
	}
	sess := z.must(200, "GET", "/api/canvas-agent/sessions/"+started["session_id"].(string), editor, nil)
	if sess["canvas_id"] != "pagesonly" || sess["message"] != "summarize the page" {
		t.Fatalf("session %v", sess)
	}
	z.must(200, "GET", "/api/canvases/pagesonly", testAdmin, nil)
	z.must(202, "POST", "/api/host/pagesonly/agent-link", editor, map[string]any{"message": "again", "confirmed": true})
	for _, bad := range []string{`{}`, `{"message":""}`, `{"message":"  "}`, `{"message":"x","confirmed":"yes"}`, `{"message":"x","extra":1}`,
		`{"message":"` + strings.Repeat("x", 20001) + `"}`} {
		if r := z.do("POST", "/api/host/pagesonly/agent-link", editor, bad); r.Status != 400 {
			t.Errorf("%.60s: %d %s", bad, r.Status, r.Body)
		}
	}
}

// TestHostileBridgeInput: bad host action payloads are refused (422 naming
// the field) before any browser gets them; a page's message with a bad
// image is refused as POST /api/sessions/{id}/messages refuses it, and
// creates no canvas.
func TestHostileBridgeInput(t *testing.T) {
	e := newHostTestEnv(t, host.Config{MaxImageBytes: 1 << 10})
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	live := e.stream("/sse/host/hx", editor, nil)
	for _, c := range []struct {
		action  string
		payload any
		field   string
	}{
		{"eval", map[string]any{}, "payload.js"},
		{"eval", map[string]any{"js": 7}, "payload"},
		{"dom.click", map[string]any{"selector": ""}, "payload.selector"},
		{"dom.type", map[string]any{"selector": "input"}, "payload.text"},
		{"dom.attr", map[string]any{"selector": "a", "name": strings.Repeat("n", 300)}, "payload.name"},
		{"dom.wait", map[string]any{"selector": "a", "timeout_ms": -5}, "payload.timeout_ms"},
		{"snapshot", map[string]any{"max_w": 0}, "payload.max_w"},
		{"snapshot", map[string]any{"unknown": 1}, "payload"},
	} {
		r := e.do("POST", "/api/invoke", editor, map[string]any{"host_session": "hx", "action": c.action, "payload": c.payload, "timeout_ms": 1000})
		if r.Status != 422 || !strings.Contains(string(r.Body), c.field) {
			t.Errorf("%s %v: %d %s", c.action, c.payload, r.Status, r.Body)
		}
	}
	png := "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	for _, c := range []struct {
		body   map[string]any
		status int
	}{
		{map[string]any{}, 400},
		{map[string]any{"prompt": "x", "imageData": "not a data url"}, 400},
		{map[string]any{"prompt": "x", "imageData": "data:image/png;base64,!!!!"}, 400},
		{map[string]any{"prompt": "x", "imageData": "data:image/svg+xml;base64,PHN2Zz48L3N2Zz4="}, 415},
		{map[string]any{"prompt": "x", "imageData": "data:image/png;base64," + strings.Repeat("A", 4000)}, 413},
		{map[string]any{"prompt": "x", "extra": true}, 400},
		{map[string]any{"prompt": strings.Repeat("x", host.MaxPromptBytes+1)}, 400},
	} {
		if r := e.do("POST", "/api/host/hx/messages", editor, c.body); r.Status != c.status {
			t.Errorf("message %.80v: %d %s", c.body, r.Status, r.Body)
		}
	}
	if r := e.do("GET", "/api/canvases/hx", testAdmin, nil); r.Status != 404 {
		t.Errorf("a refused message created the session's canvas: %d", r.Status)
	}
	// A good one reaches the inbox with its image, for the canvas of the session's id.
	got := e.must(202, "POST", "/api/host/hx/messages", editor, map[string]any{"prompt": "what is this?", "imageData": png, "appletSlug": "doodle"})
	m := e.inbox.next(t)
	if got["canvas_id"] != "hx" || m.HostSession != "hx" || m.Image == nil || m.Image.MediaType != "image/png" || m.AppletSlug != "doodle" || m.Source != "applet" {
		t.Fatalf("message %v reached the inbox as %+v", got, m)
	}
	e.must(200, "GET", "/api/canvases/hx", testAdmin, nil)
	if r := e.do("GET", "/api/host/..%2Fx/viewer", editor, nil); r.Status != 400 && r.Status != 404 {
		t.Errorf("viewer of a hostile session: %d", r.Status)
	}
	select {
	case m := <-live.events:
		if m.Event == "invoke" {
			t.Errorf("a refused host action reached the browsers: %+v", m)
		}
	default:
	}
}
