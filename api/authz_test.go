package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// The authorization matrix: every route of the real route table (walked, so
// a new route without a row fails TestAuthorizationMatrix) is called by every
// kind of caller, and each answer must be exactly the status its row
// expects. Canvases A and D are the "own" canvases of the scoped tokens on
// side A (D is the one DELETE may remove); B is another canvas.
const (
	authzA = "c_authz_a"
	authzB = "c_authz_b"
	authzD = "c_authz_d"
	// authzDoc is a doc node on canvas A.
	authzDoc = "doc_authz"
)

// authzCaller is one kind of caller. valid is false for "no token" and "bad token".
type authzCaller struct {
	name  string
	token string
	valid bool
	p     canvas.Principal
}

// authzReq is one request a row sends.
type authzReq struct {
	method, path string
	body         string            // sent verbatim (JSON unless header says otherwise)
	header       map[string]string // extra headers
	stream       bool              // an SSE stream: only the status is read
	after        func()            // cleanup once the answer is in (may be nil)
}

// authzRow is the authorization rule of one route (several rows may cover
// one route with different requests). expect says which status each caller
// gets.
type authzRow struct {
	method, pattern string // as the route table walks it; method "*" = every method of the pattern not listed otherwise
	name            string
	req             func(z *authzEnv) authzReq
	expect          func(c authzCaller) int
	// toolRefused says, for /mcp, which valid callers get a tool error
	// (a 200 with "isError":true) rather than the tool's answer.
	toolRefused func(c authzCaller) bool
}

func (r authzRow) key() string { return r.method + " " + r.pattern }

// authzEnv is the server under test with the fixtures the rows use.
type authzEnv struct {
	*testEnv
	t            *testing.T
	agentSession string // an agent session on canvas A
	browser      *sseStream
	seq          int
}

func (z *authzEnv) next() int { z.seq++; return z.seq }

func static(method, path, body string) func(*authzEnv) authzReq {
	return func(*authzEnv) authzReq { return authzReq{method: method, path: path, body: body} }
}

func public(ok int) func(authzCaller) int { return func(authzCaller) int { return ok } }

// authed: 401 without a valid token, ok when allowed(principal), else 403.
func authed(ok int, allowed func(p canvas.Principal) bool) func(authzCaller) int {
	return func(c authzCaller) int {
		switch {
		case !c.valid:
			return http.StatusUnauthorized
		case allowed(c.p):
			return ok
		}
		return http.StatusForbidden
	}
}

func anyToken(ok int) func(authzCaller) int {
	return authed(ok, func(canvas.Principal) bool { return true })
}

// onA: the role on canvas A.
func onA(need canvas.Role, ok int) func(authzCaller) int {
	return authed(ok, func(p canvas.Principal) bool { return p.CanAccess(authzA, need) })
}

// unscoped: the role on every canvas (a token without canvases).
func unscoped(need canvas.Role, ok int) func(authzCaller) int {
	return authed(ok, func(p canvas.Principal) bool { return p.Role.Allows(need) && !p.Scoped() })
}

// tokenAdminOver: an admin whose scope covers scope.
func tokenAdminOver(ok int, scope ...string) func(authzCaller) int {
	return authed(ok, func(p canvas.Principal) bool { return p.Role.Allows(canvas.RoleAdmin) && p.Covers(scope) })
}

// seenOnA: like onA, but a caller who cannot even view canvas A is told the
// resource does not exist (404), as agent sessions are.
func seenOnA(need canvas.Role, ok int) func(authzCaller) int {
	return func(c authzCaller) int {
		switch {
		case !c.valid:
			return http.StatusUnauthorized
		case !c.p.CanAccess(authzA, canvas.RoleViewer):
			return http.StatusNotFound
		case !c.p.CanAccess(authzA, need):
			return http.StatusForbidden
		}
		return ok
	}
}

// declarerOnA: like seenOnA(viewer), but only the admin, whose stream
// declares the browser b1 on canvas A, may speak for it (403 for the others).
func declarerOnA(ok int) func(authzCaller) int {
	return func(c authzCaller) int {
		if st := seenOnA(canvas.RoleViewer, ok)(c); st != ok {
			return st
		}
		if c.p.Actor.ID != AdminActorID {
			return http.StatusForbidden
		}
		return ok
	}
}

func authzRows() []authzRow {
	mcpCall := func(canvasID string) func(*authzEnv) authzReq {
		return func(*authzEnv) authzReq {
			return authzReq{method: "POST", path: "/mcp",
				body:   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"canvas_get_state","arguments":{"canvas_id":"` + canvasID + `"}}}`,
				header: map[string]string{"Accept": "application/json, text/event-stream"}}
		}
	}
	const ua = `{"userAction":{"name":"submit","surfaceId":"main","sourceComponentId":"btn","timestamp":"2026-01-02T03:04:05Z","context":{}}}`
	return []authzRow{
		// Public.
		{method: "GET", pattern: "/healthz", req: static("GET", "/healthz", ""), expect: public(200)},
		{method: "GET", pattern: "/readyz", req: static("GET", "/readyz", ""), expect: public(200)},
		{method: "GET", pattern: "/metrics", req: static("GET", "/metrics", ""), expect: public(200)},
		{method: "GET", pattern: "/openapi.yaml", req: static("GET", "/openapi.yaml", ""), expect: public(200)},
		{method: "GET", pattern: "/", req: static("GET", "/", ""), expect: public(200)},
		{method: "HEAD", pattern: "/", req: static("HEAD", "/", ""), expect: public(200)},
		{method: "*", pattern: "/", req: static("POST", "/", "{}"), expect: public(405)},
		{method: "GET", pattern: "/ui/*", req: static("GET", "/ui/app.js", ""), expect: public(200)},
		{method: "HEAD", pattern: "/ui/*", req: static("HEAD", "/ui/app.js", ""), expect: public(200)},
		{method: "*", pattern: "/ui/*", req: static("DELETE", "/ui/app.js", ""), expect: public(405)},
		{method: "GET", pattern: "/host/{session}/*", req: static("GET", "/host/"+authzA+"/index.html", ""), expect: onA(canvas.RoleViewer, 200)},

		// Tokens: never beyond the caller's own scope.
		{method: "POST", pattern: "/api/tokens", name: "scoped to A",
			req:    static("POST", "/api/tokens", `{"role":"viewer","canvases":["`+authzA+`"]}`),
			expect: tokenAdminOver(201, authzA)},
		{method: "POST", pattern: "/api/tokens", name: "admin scoped to A and B",
			req:    static("POST", "/api/tokens", `{"role":"admin","canvases":["`+authzA+`","`+authzB+`"]}`),
			expect: tokenAdminOver(201, authzA, authzB)},
		{method: "POST", pattern: "/api/tokens", name: "unscoped admin",
			req: static("POST", "/api/tokens", `{"role":"admin"}`), expect: tokenAdminOver(201)},
		// Every admin may list; each sees only the tokens within its scope (TestTokenScope).
		{method: "GET", pattern: "/api/tokens", req: static("GET", "/api/tokens", ""), expect: authed(200, func(p canvas.Principal) bool { return p.Role.Allows(canvas.RoleAdmin) })},
		{method: "DELETE", pattern: "/api/tokens/{actor_id}", name: "victim scoped to A",
			req: revokeVictim(authzA), expect: tokenAdminOver(204, authzA)},
		{method: "DELETE", pattern: "/api/tokens/{actor_id}", name: "victim scoped to A and B",
			req: revokeVictim(authzA, authzB), expect: tokenAdminOver(204, authzA, authzB)},
		{method: "DELETE", pattern: "/api/tokens/{actor_id}", name: "unscoped victim",
			req: revokeVictim(), expect: tokenAdminOver(204)},

		// Canvases and commands.
		{method: "POST", pattern: "/api/canvases", req: static("POST", "/api/canvases", `{}`), expect: unscoped(canvas.RoleEditor, 201)},
		{method: "GET", pattern: "/api/canvases", req: static("GET", "/api/canvases", ""), expect: anyToken(200)},
		{method: "GET", pattern: "/api/canvases/{canvas_id}", req: static("GET", "/api/canvases/"+authzA, ""), expect: onA(canvas.RoleViewer, 200)},
		{method: "DELETE", pattern: "/api/canvases/{canvas_id}", req: func(z *authzEnv) authzReq {
			z.ensureCanvas(authzD)
			return authzReq{method: "DELETE", path: "/api/canvases/" + authzD}
		}, expect: onA(canvas.RoleAdmin, 204)},
		{method: "GET", pattern: "/canvas_commands/snapshot/{canvas_id}", req: static("GET", "/canvas_commands/snapshot/"+authzA, ""), expect: onA(canvas.RoleViewer, 200)},
		{method: "POST", pattern: "/canvas_commands/{canvas_id}/command",
			req:    static("POST", "/canvas_commands/"+authzA+"/command", `{"type":"create_node","base_rev":0,"args":{"name":"n"}}`),
			expect: onA(canvas.RoleEditor, 200)},
		{method: "POST", pattern: "/canvas_commands/{canvas_id}/commands",
			req:    static("POST", "/canvas_commands/"+authzA+"/commands", `{"base_rev":0,"commands":[{"type":"create_node","base_rev":0,"args":{"name":"n"}}]}`),
			expect: onA(canvas.RoleEditor, 200)},
		{method: "GET", pattern: "/canvas_commands/{canvas_id}/events", req: static("GET", "/canvas_commands/"+authzA+"/events", ""), expect: onA(canvas.RoleViewer, 200)},
		{method: "POST", pattern: "/canvas_commands/{canvas_id}/gesture",
			req: static("POST", "/canvas_commands/"+authzA+"/gesture", `{"cursor":{"x":1,"y":2}}`), expect: onA(canvas.RoleViewer, 202)},
		{method: "GET", pattern: "/sse/canvas/{canvas_id}", req: func(*authzEnv) authzReq {
			return authzReq{method: "GET", path: "/sse/canvas/" + authzA, stream: true}
		}, expect: onA(canvas.RoleViewer, 200)},

		// Documents and named snapshots.
		{method: "GET", pattern: "/api/canvases/{canvas_id}/docs/{node_id}", req: static("GET", "/api/canvases/"+authzA+"/docs/"+authzDoc, ""), expect: onA(canvas.RoleViewer, 200)},
		{method: "GET", pattern: "/api/canvases/{canvas_id}/docs/{node_id}/diff", req: static("GET", "/api/canvases/"+authzA+"/docs/"+authzDoc+"/diff?since=0", ""), expect: onA(canvas.RoleViewer, 200)},
		{method: "GET", pattern: "/api/canvases/{canvas_id}/docs/{node_id}/selection", req: static("GET", "/api/canvases/"+authzA+"/docs/"+authzDoc+"/selection?start_line=1", ""), expect: onA(canvas.RoleViewer, 200)},
		{method: "POST", pattern: "/api/canvases/{canvas_id}/snapshots", req: static("POST", "/api/canvases/"+authzA+"/snapshots", `{"label":"l"}`), expect: onA(canvas.RoleEditor, 201)},
		{method: "GET", pattern: "/api/canvases/{canvas_id}/snapshots", req: static("GET", "/api/canvases/"+authzA+"/snapshots", ""), expect: onA(canvas.RoleViewer, 200)},
		{method: "GET", pattern: "/api/canvases/{canvas_id}/agent-sessions", req: static("GET", "/api/canvases/"+authzA+"/agent-sessions", ""), expect: onA(canvas.RoleViewer, 200)},

		// Files (files.go).
		{method: "GET", pattern: "/api/canvases/{canvas_id}/export", req: static("GET", "/api/canvases/"+authzA+"/export?format=svg", ""), expect: onA(canvas.RoleViewer, 200)},
		{method: "POST", pattern: "/api/canvases/{canvas_id}/import", req: func(*authzEnv) authzReq {
			return authzReq{method: "POST", path: "/api/canvases/" + authzA + "/import?format=mermaid", body: "flowchart LR\n  imp_a --> imp_b",
				header: map[string]string{"Content-Type": "text/plain"}}
		}, expect: onA(canvas.RoleEditor, 200)},

		// MCP: any token reaches the transport; each tool checks the canvas.
		{method: "POST", pattern: "/mcp", req: mcpCall(authzA), expect: anyToken(200),
			toolRefused: func(c authzCaller) bool { return !c.p.CanAccess(authzA, canvas.RoleViewer) }},

		// Agent.
		{method: "GET", pattern: "/api/canvas-agent/catalog", req: static("GET", "/api/canvas-agent/catalog", ""), expect: anyToken(200)},
		{method: "POST", pattern: "/api/canvas-agent/events",
			req: static("POST", "/api/canvas-agent/events", `{"canvas_id":"`+authzA+`","event":"agent:chat","data":{"text":"hi"}}`),
			expect: authed(202, func(p canvas.Principal) bool {
				return p.CanAccess(authzA, canvas.RoleEditor) && (p.Type == canvas.ActorAgent || p.Type == canvas.ActorService)
			})},
		{method: "POST", pattern: "/api/canvas-agent/run", req: static("POST", "/api/canvas-agent/run", `{"roomId":"`+authzA+`","message":"hi"}`), expect: onA(canvas.RoleEditor, 202)},
		{method: "GET", pattern: "/api/canvas-agent/sessions/{session_id}", req: func(z *authzEnv) authzReq {
			return authzReq{method: "GET", path: "/api/canvas-agent/sessions/" + z.agentSession}
		}, expect: seenOnA(canvas.RoleViewer, 200)},
		{method: "POST", pattern: "/api/canvas-agent/sessions/{session_id}/cancel", req: func(z *authzEnv) authzReq {
			return authzReq{method: "POST", path: "/api/canvas-agent/sessions/" + z.newAgentSession() + "/cancel"}
		}, expect: seenOnA(canvas.RoleEditor, 200)},
		// No worker takes the queued run here: the edit request answers when its wait times out.
		{method: "POST", pattern: "/api/canvas-agent/edit-request",
			req:    static("POST", "/api/canvas-agent/edit-request", `{"canvas_id":"`+authzA+`","instruction":"hi","timeout_ms":1}`),
			expect: onA(canvas.RoleEditor, 200)},
		// A queued session has no turns yet: an allowed caller learns there is nothing to revert.
		{method: "POST", pattern: "/api/canvas-agent/sessions/{session_id}/revert", req: func(z *authzEnv) authzReq {
			return authzReq{method: "POST", path: "/api/canvas-agent/sessions/" + z.agentSession + "/revert", body: `{}`}
		}, expect: seenOnA(canvas.RoleEditor, 422)},
		// Acks and views speak for a browser the caller's token declared on
		// the canvas stream: the admin's stream declares b1 (z.browser), so
		// the admin's are taken and every other viewer's are refused (403).
		{method: "POST", pattern: "/api/canvas-agent/ack", req: func(z *authzEnv) authzReq {
			return authzReq{method: "POST", path: "/api/canvas-agent/ack", body: `{"sessionId":"` + z.agentSession + `","seq":1,"clientId":"b1"}`}
		}, expect: declarerOnA(202)},
		{method: "POST", pattern: "/api/canvas-agent/view", req: func(z *authzEnv) authzReq {
			return authzReq{method: "POST", path: "/api/canvas-agent/view", body: `{"sessionId":"` + z.agentSession + `","clientId":"b1","viewport":{"x":0,"y":0,"w":10,"h":10}}`}
		}, expect: declarerOnA(202)},

		// Canvas host (a host session is authorized like the canvas of the same id).
		{method: "GET", pattern: "/api/host/{session}/files", req: static("GET", "/api/host/"+authzA+"/files", ""), expect: onA(canvas.RoleEditor, 200)},
		{method: "PUT", pattern: "/api/host/{session}/files/*", req: func(z *authzEnv) authzReq {
			return authzReq{method: "PUT", path: fmt.Sprintf("/api/host/%s/files/new%d.html", authzA, z.next()), body: "<p>hi</p>",
				header: map[string]string{"Content-Type": "text/html"}}
		}, expect: onA(canvas.RoleEditor, 201)},
		{method: "DELETE", pattern: "/api/host/{session}/files/*", req: func(z *authzEnv) authzReq {
			name := fmt.Sprintf("gone%d.html", z.next())
			z.must(201, "PUT", "/api/host/"+authzA+"/files/"+name, testAdmin, "<p>x</p>")
			return authzReq{method: "DELETE", path: "/api/host/" + authzA + "/files/" + name}
		}, expect: onA(canvas.RoleEditor, 204)},
		{method: "GET", pattern: "/sse/host/{session}", req: func(*authzEnv) authzReq {
			return authzReq{method: "GET", path: "/sse/host/" + authzA, stream: true}
		}, expect: onA(canvas.RoleViewer, 200)},
		{method: "POST", pattern: "/api/host/{session}/a2ui", req: func(*authzEnv) authzReq {
			return authzReq{method: "POST", path: "/api/host/" + authzA + "/a2ui", body: hostSurface,
				header: map[string]string{"Content-Type": "application/jsonl"}}
		}, expect: onA(canvas.RoleEditor, 200)},
		{method: "POST", pattern: "/api/host/{session}/a2ui/reset", req: static("POST", "/api/host/"+authzA+"/a2ui/reset", ""), expect: onA(canvas.RoleEditor, 204)},
		{method: "POST", pattern: "/api/host/{session}/actions", req: static("POST", "/api/host/"+authzA+"/actions", ua), expect: onA(canvas.RoleEditor, 202)},
		{method: "POST", pattern: "/api/host/{session}/present", req: static("POST", "/api/host/"+authzA+"/present", `{"action":"show"}`), expect: onA(canvas.RoleEditor, 200)},
		// The pages' bridge (a host session talks to the agent of the canvas
		// of its id; agent links need a key or the person's confirmation).
		{method: "POST", pattern: "/api/host/{session}/messages", req: static("POST", "/api/host/"+authzA+"/messages", `{"prompt":"hi"}`), expect: onA(canvas.RoleEditor, 202)},
		{method: "POST", pattern: "/api/host/{session}/agent-link", req: static("POST", "/api/host/"+authzA+"/agent-link", `{"message":"hi","confirmed":true}`),
			expect: onA(canvas.RoleEditor, 202)},
		{method: "GET", pattern: "/api/host/{session}/link-key", req: static("GET", "/api/host/"+authzA+"/link-key", ""), expect: onA(canvas.RoleEditor, 200)},
		{method: "GET", pattern: "/api/host/{session}/viewer", req: static("GET", "/api/host/"+authzA+"/viewer", ""), expect: onA(canvas.RoleViewer, 200)},
		// A message goes to an agent session; the agent's inbox checks the
		// sender may talk to it (none is wired here), so any editor may post.
		{method: "POST", pattern: "/api/sessions/{id}/messages", req: static("POST", "/api/sessions/s1/messages", `{"prompt":"hi"}`),
			expect: authed(202, func(p canvas.Principal) bool { return p.Role.Allows(canvas.RoleEditor) })},
		// Invoke: nobody answers within 50 ms, so an allowed caller gets 504.
		{method: "POST", pattern: "/api/invoke", req: static("POST", "/api/invoke", `{"canvas_id":"`+authzA+`","action":"ping","timeout_ms":50}`), expect: onA(canvas.RoleEditor, 504)},
		{method: "POST", pattern: "/api/invoke/{invoke_id}", req: func(z *authzEnv) authzReq { return z.pendingInvoke() }, expect: onA(canvas.RoleViewer, 200)},
	}
}

// revokeVictim mints a fresh token scoped to scope (none: unscoped) for a
// caller to revoke.
func revokeVictim(scope ...string) func(*authzEnv) authzReq {
	return func(z *authzEnv) authzReq {
		m := z.must(201, "POST", "/api/tokens", testAdmin, map[string]any{"role": "viewer", "canvases": scope})
		return authzReq{method: "DELETE", path: "/api/tokens/" + m["actor_id"].(string)}
	}
}

// ensureCanvas creates id unless it exists.
func (z *authzEnv) ensureCanvas(id string) {
	if r := z.do("POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": id}); r.Status != 201 && r.Status != 409 {
		z.t.Fatalf("create %s: %d %s", id, r.Status, r.Body)
	}
}

// newAgentSession queues an agent run on canvas A and returns its session id.
func (z *authzEnv) newAgentSession() string {
	m := z.must(202, "POST", "/api/canvas-agent/run", testAdmin, map[string]any{"roomId": authzA, "message": "fixture"})
	return m["session_id"].(string)
}

// pendingInvoke starts an invoke on canvas A in the background (the admin's
// SSE stream plays the browser) and returns the request answering it; after
// the caller's answer, the admin answers too, so the invoke ends.
func (z *authzEnv) pendingInvoke() authzReq {
	action := fmt.Sprintf("pending-%d", z.next())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest("POST", z.srv.URL+"/api/invoke",
			strings.NewReader(`{"canvas_id":"`+authzA+`","action":"`+action+`","timeout_ms":10000}`))
		req.Header.Set("Authorization", "Bearer "+testAdmin)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := z.srv.Client().Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	var id string
	for id == "" {
		if m := z.browser.next(); m.Event == "invoke" && m.json(z.t)["action"] == action {
			id = m.json(z.t)["invoke_id"].(string)
		}
	}
	path := "/api/invoke/" + id
	return authzReq{method: "POST", path: path, body: `{"ok":true,"result":1}`, after: func() {
		z.do("POST", path, testAdmin, map[string]any{"ok": true})
		<-done
	}}
}

func newAuthzEnv(t *testing.T, opts ...envOption) (*authzEnv, []authzCaller) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "canvasd.db")
	st, err := sqlitestore.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	// Every optional part is wired, as `canvasd serve` does (the agent
	// endpoints are served by a queue, as with separate agent workers).
	opts = append([]envOption{func(c *Config) { c.Agent = agent.NewQueue(agent.DefaultConfig(), st, c.Hub) }}, opts...)
	z := &authzEnv{testEnv: newTestEnvOn(t, st, opts...), t: t}
	for _, id := range []string{authzA, authzB, authzD} {
		z.canvas(id)
	}
	z.must(200, "POST", "/canvas_commands/"+authzA+"/command", testAdmin,
		env("create_node", 0, map[string]any{"id": authzDoc, "type": "doc", "name": "d", "props": map[string]any{"text": "one\ntwo\n"}}))
	z.must(201, "PUT", "/api/host/"+authzA+"/files/index.html", testAdmin, "<p>page</p>")
	z.agentSession = z.newAgentSession()
	z.browser = z.stream(browserPath(authzA, "b1", ""), testAdmin, nil) // plays the browser of invokes, acks and views

	mk := func(name string, role canvas.Role, typ canvas.ActorType, scope ...string) authzCaller {
		tok, actor := z.token(role, typ, scope...)
		return authzCaller{name: name, token: tok, valid: true,
			p: canvas.Principal{Actor: canvas.Actor{ID: actor, Type: typ}, Role: role, Canvases: scope}}
	}
	callers := []authzCaller{
		{name: "no token"},
		{name: "bad token", token: TokenPrefix + "not-a-token"},
		mk("viewer on A", canvas.RoleViewer, canvas.ActorHuman, authzA, authzD),
		mk("editor on A (agent)", canvas.RoleEditor, canvas.ActorAgent, authzA, authzD),
		mk("admin on A", canvas.RoleAdmin, canvas.ActorHuman, authzA, authzD),
		mk("editor on B (agent)", canvas.RoleEditor, canvas.ActorAgent, authzB),
		mk("admin on B", canvas.RoleAdmin, canvas.ActorHuman, authzB),
		mk("viewer everywhere", canvas.RoleViewer, canvas.ActorHuman),
		mk("editor everywhere", canvas.RoleEditor, canvas.ActorHuman),
		{name: "admin everywhere", token: testAdmin, valid: true,
			p: canvas.Principal{Actor: canvas.Actor{ID: AdminActorID, Type: canvas.ActorService}, Role: canvas.RoleAdmin}},
	}
	return z, callers
}

// send makes one request as caller and returns status and body (an SSE
// stream is closed once its status is in).
func (z *authzEnv) send(rq authzReq, token string) (int, http.Header, []byte) {
	z.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, rq.method, z.srv.URL+rq.path, strings.NewReader(rq.body))
	if err != nil {
		z.t.Fatal(err)
	}
	if rq.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := z.srv.Client().Do(req)
	if err != nil {
		z.t.Fatalf("%s %s: %v", rq.method, rq.path, err)
	}
	defer resp.Body.Close()
	if rq.stream && resp.StatusCode == http.StatusOK {
		return resp.StatusCode, resp.Header, nil
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		z.t.Fatalf("%s %s: reading the body: %v", rq.method, rq.path, err)
	}
	if rq.method != "HEAD" { // the spec describes GET only
		req.Body = io.NopCloser(strings.NewReader(rq.body))
		checkResponse(z.t, z.spec, req, resp, body)
	}
	return resp.StatusCode, resp.Header, body
}

// walkRoutes lists "METHOD pattern" for every route of the table.
func walkRoutes(t *testing.T, routes chi.Routes) []string {
	var out []string
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rowsFor returns the rows covering a walked route: those naming its method,
// else those of the pattern with method "*".
func rowsFor(rows []authzRow, route string) []authzRow {
	var exact, wild []authzRow
	for _, r := range rows {
		switch {
		case r.key() == route:
			exact = append(exact, r)
		case r.method == "*" && strings.HasSuffix(route, " "+r.pattern):
			wild = append(wild, r)
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return wild
}

// TestAuthorizationMatrix: who may call each route, on which canvas.
func TestAuthorizationMatrix(t *testing.T) {
	z, callers := newAuthzEnv(t)
	rows := authzRows()
	walked := walkRoutes(t, z.api.Routes())
	for _, route := range walked {
		if len(rowsFor(rows, route)) == 0 {
			t.Errorf("route %s has no row in authzRows: decide who may call it, on which canvas", route)
		}
	}
	for _, r := range rows {
		served := false
		for _, route := range walked {
			served = served || route == r.key() || r.method == "*" && strings.HasSuffix(route, " "+r.pattern)
		}
		if !served {
			t.Errorf("row %s (%s) names no route of the table", r.key(), r.name)
		}
	}
	for _, r := range rows {
		for _, c := range callers {
			rq := r.req(z)
			status, hdr, body := z.send(rq, c.token)
			if rq.after != nil {
				rq.after()
			}
			want := r.expect(c)
			if r.toolRefused != nil && status == http.StatusOK {
				if got, refused := bytes.Contains(body, []byte(`"isError":true`)), r.toolRefused(c); got != refused {
					t.Errorf("%s %s as %s: tool refused=%v, want %v: %.300s", rq.method, rq.path, c.name, got, refused, body)
				}
			}
			if status != want {
				t.Errorf("%s %s [%s] as %s: status %d, want %d: %.300s", rq.method, rq.path, r.name, c.name, status, want, body)
				continue
			}
			if status >= 400 && !strings.HasPrefix(hdr.Get("Content-Type"), "application/problem+json") {
				t.Errorf("%s %s as %s: %d without a problem document", rq.method, rq.path, c.name, status)
			}
			if status >= 400 && rq.method != "HEAD" {
				var p map[string]any
				if json.Unmarshal(body, &p) != nil || p["detail"] == "" {
					t.Errorf("%s %s as %s: %d without a detail: %s", rq.method, rq.path, c.name, status, body)
				}
			}
		}
	}
}

// TestAuthorizationMatrixThrottled: from a client address the failed-token
// throttle refuses, every route that checks a token answers 429 to every
// caller that sends one, valid or not, and public routes answer as always.
// (The fixtures are made over loopback, which is never throttled.)
func TestAuthorizationMatrixThrottled(t *testing.T) {
	z, callers := newAuthzEnv(t, func(c *Config) { c.MaxAuthFailures = 1 })
	addr := throttleClient{z.testEnv, "203.0.113.5:5555"}
	addr.want(401, "GET", "/api/canvases", TokenPrefix+"not-a-token")
	noToken := callers[0]
	for _, r := range authzRows() {
		for _, c := range callers {
			if c.token == "" {
				continue
			}
			rq := r.req(z)
			// A stream that is wrongly let through ends with its context.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req := httptest.NewRequestWithContext(ctx, rq.method, rq.path, strings.NewReader(rq.body))
			req.RemoteAddr = addr.addr
			for k, v := range rq.header {
				req.Header.Set(k, v)
			}
			req.Header.Set("Authorization", "Bearer "+c.token)
			rec := httptest.NewRecorder()
			z.api.Handler().ServeHTTP(rec, req)
			cancel()
			if rq.after != nil {
				rq.after()
			}
			want := r.expect(c)
			if r.expect(noToken) == http.StatusUnauthorized {
				want = http.StatusTooManyRequests
			}
			if rec.Code != want {
				t.Errorf("%s %s [%s] as %s from a throttled address: %d, want %d: %.300s", rq.method, rq.path, r.name, c.name, rec.Code, want, rec.Body)
				continue
			}
			if want == http.StatusTooManyRequests {
				resp := rec.Result()
				req.Body = io.NopCloser(strings.NewReader(rq.body))
				checkResponse(t, z.spec, req, resp, rec.Body.Bytes())
				if resp.Header.Get("Retry-After") == "" {
					t.Errorf("%s %s as %s: 429 without Retry-After", rq.method, rq.path, c.name)
				}
			}
		}
	}
}

// TestTokenScope: a token scoped to canvases never mints, lists or revokes
// beyond its scope (the escalation: an admin scoped to A minted an unscoped
// admin token that read every canvas).
func TestTokenScope(t *testing.T) {
	e := newTestEnv(t)
	a, b := e.canvas("c_scope_a"), e.canvas("c_scope_b")
	adminA, adminAID := e.token(canvas.RoleAdmin, canvas.ActorHuman, a)
	_, editorAID := e.token(canvas.RoleEditor, canvas.ActorHuman, a)
	_, editorBID := e.token(canvas.RoleEditor, canvas.ActorHuman, b)
	_, everyID := e.token(canvas.RoleViewer, canvas.ActorHuman)

	for _, req := range []map[string]any{
		{"role": "admin"},                          // unscoped
		{"role": "viewer", "canvases": []string{}}, // empty means unscoped too
		{"role": "viewer", "canvases": []string{b}},
		{"role": "viewer", "canvases": []string{a, b}},
	} {
		p := e.must(403, "POST", "/api/tokens", adminA, req)
		if !strings.Contains(p["detail"].(string), "1 canvas") {
			t.Errorf("mint %v: the detail does not say the minter's scope: %v", req, p["detail"])
		}
	}
	grant := e.must(201, "POST", "/api/tokens", adminA, map[string]any{"role": "editor", "canvases": []string{a}})
	e.must(403, "GET", "/canvas_commands/snapshot/"+b, grant["token"].(string), nil)

	list := e.must(200, "GET", "/api/tokens", adminA, nil)
	var seen []string
	for _, tok := range list["tokens"].([]any) {
		m := tok.(map[string]any)
		seen = append(seen, m["actor_id"].(string))
		for _, secret := range []string{"token", "hash"} {
			if _, ok := m[secret]; ok {
				t.Errorf("GET /api/tokens shows %q: %v", secret, m)
			}
		}
	}
	want := []string{adminAID, editorAID, grant["actor_id"].(string)}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("admin on A lists %v, want %v", seen, want)
	}
	all := e.must(200, "GET", "/api/tokens", testAdmin, nil)["tokens"].([]any)
	if len(all) != 5 {
		t.Errorf("the unscoped admin lists %d tokens, want 5: %v", len(all), all)
	}

	e.must(403, "DELETE", "/api/tokens/"+editorBID, adminA, nil)
	e.must(403, "DELETE", "/api/tokens/"+everyID, adminA, nil)
	e.must(404, "DELETE", "/api/tokens/user-nobody", adminA, nil)
	e.must(204, "DELETE", "/api/tokens/"+editorAID, adminA, nil)
	e.must(204, "DELETE", "/api/tokens/"+editorBID, testAdmin, nil)
}

// TestQueryTokenOnlyOnStreamsAndPages: ?access_token= authenticates only the
// GET /sse/... streams and the page routes (browsers' EventSource and
// navigations cannot send a header). On every other route of the table it is
// a 401 saying to use the Authorization header, whatever the token may do,
// also beside a valid header: an admin token leaked in a URL mints no token
// and deletes no canvas.
func TestQueryTokenOnlyOnStreamsAndPages(t *testing.T) {
	z, callers := newAuthzEnv(t)
	noToken, admin := callers[0], callers[len(callers)-1]
	takesQuery := func(r authzRow) bool {
		return r.method == "GET" && strings.HasPrefix(r.pattern, "/sse/") || r.pattern == "/host/{session}/*"
	}
	countTokens := func() int { return len(z.must(200, "GET", "/api/tokens", testAdmin, nil)["tokens"].([]any)) }
	tokens := countTokens()
	for _, r := range authzRows() {
		if r.expect(noToken) != http.StatusUnauthorized {
			continue // public
		}
		if r.pattern == "/api/tokens/{actor_id}" {
			tokens++ // its request mints the victim
		}
		rq := r.req(z)
		sep := "?"
		if strings.Contains(rq.path, "?") {
			sep = "&"
		}
		rq.path += sep + "access_token=" + url.QueryEscape(admin.token)
		for _, header := range []string{"", admin.token} {
			if header != "" && takesQuery(r) {
				continue
			}
			status, _, body := z.send(rq, header)
			switch {
			case takesQuery(r):
				if want := r.expect(admin); status != want {
					t.Errorf("%s %s with ?access_token=: %d, want %d (a stream or page route takes it): %.300s", rq.method, rq.path, status, want, body)
				}
			case status != http.StatusUnauthorized:
				t.Errorf("%s %s with ?access_token= (header %v): %d, want 401: %.300s", rq.method, rq.path, header != "", status, body)
			case !bytes.Contains(body, []byte("Authorization header")):
				t.Errorf("%s %s with ?access_token=: the 401 does not say to use the Authorization header: %s", rq.method, rq.path, body)
			}
		}
		if rq.after != nil {
			rq.after()
		}
	}
	// Nothing was done: no token minted, no canvas deleted.
	if n := countTokens(); n != tokens {
		t.Errorf("%d tokens after the refused requests, want %d", n, tokens)
	}
	z.must(200, "GET", "/api/canvases/"+authzD, testAdmin, nil)
}
