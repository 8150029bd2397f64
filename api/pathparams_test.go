package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// TestPathParamsArePercentDecoded: a canvas id, node id or actor id reached
// with escapes Go would not write itself (%3A for ':', %2F for '/', %40 for
// '@') names the same thing as its plain form, and one Go does escape
// (%20, %25, UTF-8) is decoded exactly once.
func TestPathParamsArePercentDecoded(t *testing.T) {
	e := newTestEnv(t)
	cid := e.canvas("team:alpha")
	const esc = "team%3Aalpha"

	if m := e.must(200, "GET", "/api/canvases/"+esc, testAdmin, nil); m["canvas_id"] != cid {
		t.Fatalf("GET canvas: %v", m)
	}
	if m := e.must(200, "GET", "/api/canvases/team%3aalpha", testAdmin, nil); m["canvas_id"] != cid {
		t.Fatalf("GET canvas (lower-case escape): %v", m)
	}
	r := e.command(esc, testAdmin, env("create_node", 0, map[string]any{"id": "doc:1", "name": "a.txt", "type": "doc",
		"props": map[string]any{"text": "one\ntwo", "language": "text"}}))
	if r.Status != 200 {
		t.Fatalf("command: %d %s", r.Status, r.Body)
	}
	if m := e.must(200, "GET", "/canvas_commands/snapshot/"+esc, testAdmin, nil); m["canvas_id"] != cid || m["head_rev"] != 1.0 {
		t.Fatalf("snapshot: %v", m)
	}
	if m := e.must(200, "GET", "/canvas_commands/"+esc+"/events", testAdmin, nil); len(m["commits"].([]any)) != 1 {
		t.Fatalf("events: %v", m)
	}
	if m := e.must(200, "GET", "/api/canvases/"+esc+"/docs/doc%3A1", testAdmin, nil); m["content"] != "one\ntwo" {
		t.Fatalf("doc: %v", m)
	}
	e.must(201, "POST", "/api/canvases/"+esc+"/snapshots", testAdmin, map[string]any{"label": "v1"})
	if ev := e.stream("/sse/canvas/"+esc, testAdmin, nil).next(); ev.Event != canvas.EventCaughtUp || ev.json(t)["head_rev"] != 1.0 {
		t.Fatalf("stream: %+v", ev)
	}

	// Authorization sees the decoded id too: a token scoped to the canvas reaches it.
	scoped, _ := e.token(canvas.RoleViewer, canvas.ActorHuman, cid)
	e.must(200, "GET", "/api/canvases/"+esc, scoped, nil)
	e.must(200, "GET", "/canvas_commands/snapshot/"+esc, scoped, nil)

	// Actor ids hold any character; DELETE /api/tokens/{actor_id} finds them escaped.
	for actor, path := range map[string]string{
		"a/b":               "a%2Fb",
		"alice@example.com": "alice%40example.com",
		"carol smith":       "carol%20smith",
		"50%off":            "50%25off", // decoded once: not "50" + "%of" + "f"
		"a%41":              "a%2541",   // decoded once: not "aA"
		"héctor":            "h%C3%A9ctor",
	} {
		m := e.must(201, "POST", "/api/tokens", testAdmin, map[string]any{"role": "editor", "actor_type": "human", "actor_id": actor})
		e.must(200, "GET", "/api/canvases", m["token"].(string), nil)
		e.must(204, "DELETE", "/api/tokens/"+path, testAdmin, nil)
		if r := e.do("GET", "/api/canvases", m["token"].(string), nil); r.Status != 401 {
			t.Errorf("actor %q: token still accepted after DELETE /api/tokens/%s: %d", actor, path, r.Status)
		}
		e.must(404, "DELETE", "/api/tokens/"+path, testAdmin, nil)
	}

	e.must(204, "DELETE", "/api/canvases/"+esc, testAdmin, nil)
	e.must(404, "GET", "/api/canvases/"+cid, testAdmin, nil)
}

// TestPathParamInvalidEscape: an escape pathParam cannot decode is a 400
// naming the parameter. net/http refuses such a request line before routing,
// so this builds the request chi would hand over.
func TestPathParamInvalidEscape(t *testing.T) {
	r := httptest.NewRequest("GET", "/api/canvases/x%3Ay", nil)
	rctx := chi.NewRouteContext()
	rctx.URLParams.Add("canvas_id", "x%3Ay%zz")
	r = r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, rctx))
	_, err := pathParam(r, "canvas_id")
	var fe *canvas.FieldError
	if p := problemFor(err); p.Status != 400 || !errors.As(err, &fe) || fe.Field != "canvas_id" {
		t.Fatalf("invalid escape: %v → %+v", err, p)
	}
}

// TestClientEscapesPathsOnce: the Go client's ids reach the server as they
// are, whatever they hold: tokens of such actors are revoked by the client's
// RevokeToken, and StreamURL opens the canvas's stream.
func TestClientEscapesPathsOnce(t *testing.T) {
	e := newTestEnv(t)
	cid := e.canvas("team:alpha")
	c, err := client.New(e.srv.URL, testAdmin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, actor := range []string{"carol smith", "50%off", "a/b", "héctor", "alice@example.com"} {
		g, err := c.CreateToken(ctx, canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorHuman, ActorID: actor})
		if err != nil || g.ActorID != actor {
			t.Fatalf("create token of %q: %+v, %v", actor, g, err)
		}
		if err := c.RevokeToken(ctx, actor); err != nil {
			t.Fatalf("revoke token of %q: %v", actor, err)
		}
		if _, err := c.WithToken(g.Token).ListCanvases(ctx); !errors.Is(err, canvas.ErrUnauthorized) {
			t.Fatalf("token of %q after revoke: %v", actor, err)
		}
		if err := c.RevokeToken(ctx, actor); !errors.Is(err, canvas.ErrNotFound) {
			t.Fatalf("second revoke of %q: %v", actor, err)
		}
	}

	req, _ := http.NewRequestWithContext(ctx, "GET", c.StreamURL(cid), nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s: %d %s", c.StreamURL(cid), res.StatusCode, res.Header.Get("Content-Type"))
	}
}

// TestClientBatchResendSameKey: a batch whose answer was lost, sent again
// with the same key (FillBatch, then SendBatch twice), applies once.
func TestClientBatchResendSameKey(t *testing.T) {
	e := newTestEnv(t)
	cid := e.canvas("batch")
	upstream, _ := url.Parse(e.srv.URL)
	rp := httputil.NewSingleHostReverseProxy(upstream)
	var mu sync.Mutex
	sent := 0
	// The first batch reaches the server, which applies it, but its answer
	// never reaches the client: the connection is cut instead.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent++
		first := sent == 1
		mu.Unlock()
		if !first {
			rp.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, e.srv.URL+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		panic(http.ErrAbortHandler)
	}))
	defer proxy.Close()
	c, err := client.New(proxy.URL, testAdmin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := client.BatchRequest{BaseRev: 0, Commands: []canvas.Envelope{
		{Type: "create_node", Args: []byte(`{"name": "a"}`)},
		{Type: "create_node", Args: []byte(`{"name": "b"}`)},
	}}
	client.FillBatch(&b)
	if b.IdempotencyKey == "" || b.Commands[0].ID == "" || b.Commands[0].IdempotencyKey != "" {
		t.Fatalf("filled batch %+v", b)
	}
	if _, err := c.SendBatch(ctx, cid, b); err == nil || !strings.Contains(err.Error(), "EOF") {
		t.Fatalf("first send: %v, want the connection cut", err)
	}
	res, err := c.SendBatch(ctx, cid, b)
	if err != nil || res.CurrentRev != 2 || len(res.Results) != 2 {
		t.Fatalf("resend: %+v, %v", res, err)
	}
	if head := e.snapshot(cid)["head_rev"]; head != 2.0 {
		t.Fatalf("head_rev %v after a batch of two sent twice with one key, want 2", head)
	}
	mu.Lock()
	defer mu.Unlock()
	if sent != 2 {
		t.Fatalf("the proxy saw %d requests, want 2", sent)
	}
}
