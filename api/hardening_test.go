package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/canvasd/canvasd/canvas"
)

// TestHostileCommandInput sends input a careless server would choke on and
// checks each gets a problem document and changes nothing.
func TestHostileCommandInput(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_hostile")
	deep := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	cases := map[string]string{
		"deeply nested args":  `{"type":"create_node","base_rev":0,"args":{"props":` + deep + `}}`,
		"invalid utf-8":       "{\"type\":\"create_node\",\"base_rev\":0,\"args\":{\"name\":\"\xff\xfe\"},\"x\":1}",
		"huge base_rev":       `{"type":"create_node","base_rev":99999999999999999999}`,
		"float base_rev":      `{"type":"create_node","base_rev":1.5}`,
		"null body":           `null`,
		"long type":           `{"type":"` + strings.Repeat("x", 1000) + `","base_rev":0}`,
		"long key":            `{"type":"create_node","base_rev":0,"idempotency_key":"` + strings.Repeat("k", 1000) + `"}`,
		"bad client id":       `{"type":"create_node","base_rev":0,"args":{"id":"../../etc"}}`,
		"too many batch cmds": `{"base_rev":0,"commands":[` + strings.TrimSuffix(strings.Repeat(`{"type":"create_node"},`, 1001), ",") + `]}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			path := "/canvas_commands/" + id + "/command"
			if strings.HasPrefix(body, `{"base_rev"`) {
				path = "/canvas_commands/" + id + "/commands"
			}
			r := e.do("POST", path, testAdmin, body)
			if r.Status != 400 && r.Status != 422 && r.Status != 413 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
		})
	}
	if s := e.snapshot(id); s["head_rev"] != 0.0 {
		t.Fatalf("hostile input changed the canvas: head %v", s["head_rev"])
	}
}

// TestNoSSEInjection stores names full of line breaks and SSE field syntax and
// checks the stream still carries exactly one well-formed event per commit.
func TestNoSSEInjection(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_inject")
	s := e.stream("/sse/canvas/"+id, testAdmin, nil)
	s.next()
	evil := "x\n\nevent: reset\ndata: {}\r\nid: 999\x01\u2028"
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", 0, map[string]any{"name": evil, "props": map[string]any{"meta": map[string]any{evil: evil}}}))
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", 1, map[string]any{"name": "after"}))
	for rev := 1; rev <= 2; rev++ {
		m := s.next()
		if m.Event != "canvas_commit" || !strings.HasPrefix(m.ID, string(rune('0'+rev))+"-") {
			t.Fatalf("event %d: %+v", rev, m)
		}
		if rev == 1 {
			c := m.json(t)
			val := c["changes"].([]any)[0].(map[string]any)["value"].(map[string]any)
			if val["name"] != evil {
				t.Fatalf("name did not survive the stream: %q", val["name"])
			}
		}
	}
	// Last-Event-ID itself cannot inject either.
	r := e.stream("/sse/canvas/"+id, testAdmin, map[string]string{"Last-Event-ID": "zz\tevent: x"})
	if m := r.next(); m.Event != "reset" {
		t.Fatalf("want reset, got %+v", m)
	}
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	e := newTestEnv(t)
	if r := e.do("GET", "/nope", testAdmin, nil); r.Status != 404 {
		t.Fatalf("unknown route: %d", r.Status)
	}
	if r := e.do("PUT", "/healthz", "", nil); r.Status != 405 {
		t.Fatalf("wrong method: %d", r.Status)
	}
	if r := e.do("GET", "/canvas_commands/snapshot/c_missing", testAdmin, nil); r.Status != 404 {
		t.Fatalf("missing canvas: %d", r.Status)
	}
	if r := e.do("GET", "/canvas_commands/snapshot/c_missing?at_rev=-3", testAdmin, nil); r.Status != 400 {
		t.Fatalf("bad at_rev: %d", r.Status)
	}
}

// TestNotFoundDetails: a 404's detail names what the client asked for and
// nothing of the server's insides (it said `sqlitestore: canvas "ghost": not
// found`), on both stores.
func TestNotFoundDetails(t *testing.T) {
	run := func(t *testing.T, e *testEnv) {
		id := e.canvas("c_real")
		for _, rq := range []struct{ method, path, ghost string }{
			{"GET", "/canvas_commands/snapshot/ghost", `"ghost"`},
			{"GET", "/canvas_commands/snapshot/ghost?at_rev=3", `"ghost"`},
			{"GET", "/canvas_commands/ghost/events", `"ghost"`},
			{"POST", "/canvas_commands/ghost/command", `"ghost"`},
			{"GET", "/api/canvases/ghost", `"ghost"`},
			{"DELETE", "/api/canvases/ghost", `"ghost"`},
			{"GET", "/api/canvases/ghost/snapshots", `"ghost"`},
			{"POST", "/api/canvases/ghost/snapshots", `"ghost"`},
			{"GET", "/api/canvases/ghost/docs/n1", `"ghost"`},
			{"GET", "/api/canvases/" + id + "/docs/ghost_node", `"ghost_node"`},
			{"GET", "/api/canvases/" + id + "/docs/ghost_node/diff?since=ghost_snap", `ghost`},
			{"DELETE", "/api/tokens/ghost-actor", `"ghost-actor"`},
		} {
			var body any
			if rq.method == "POST" {
				body = map[string]any{"type": "create_node", "base_rev": 0}
				if strings.HasSuffix(rq.path, "/snapshots") {
					body = map[string]any{"label": "x"}
				}
			}
			r := e.do(rq.method, rq.path, testAdmin, body)
			detail, _ := r.json(t)["detail"].(string)
			if r.Status != 404 || !strings.Contains(detail, rq.ghost) || strings.Contains(detail, "store") || strings.Contains(detail, "sql") {
				t.Errorf("%s %s: %d %q; want 404 naming %s and no internals", rq.method, rq.path, r.Status, detail, rq.ghost)
			}
		}
	}
	onBothStores(t, run)
}

// onBothStores runs f on a server over the embedded store and on one over
// PostgreSQL.
func onBothStores(t *testing.T, f func(t *testing.T, e *testEnv)) {
	t.Run("sqlite", func(t *testing.T) { f(t, newTestEnv(t)) })
	t.Run("postgres", func(t *testing.T) {
		url, schema := pgTestSchema(t)
		f(t, newPGTestEnv(t, url, schema))
	})
}

// TestNestingDepthLimit: props nested 5,000 levels deep made a canvas
// unreadable for Python's json. Bodies nest at most canvas.MaxJSONDepth
// levels; deeper is a 422 naming the field and the limit, nothing written.
func TestNestingDepthLimit(t *testing.T) {
	onBothStores(t, func(t *testing.T, e *testEnv) {
		id := e.canvas("c_deep")
		// The body, args, props and props.meta are 4 levels: meta may nest 60 more.
		nest := func(levels int) string {
			return strings.Repeat(`{"k":`, levels-1) + `{}` + strings.Repeat("}", levels-1)
		}
		body := func(levels int) string {
			return `{"type":"create_node","base_rev":0,"args":{"name":"deep","props":{"meta":{"data":` + nest(levels) + `}}}}`
		}
		for _, levels := range []int{5000, canvas.MaxJSONDepth - 3} {
			r := e.do("POST", "/canvas_commands/"+id+"/command", testAdmin, body(levels))
			p := r.json(t)
			field, _ := p["field"].(string)
			if r.Status != 422 || !strings.HasPrefix(field, "args.props.meta.data.k.k") || !strings.Contains(p["detail"].(string), strconv.Itoa(canvas.MaxJSONDepth)) {
				t.Fatalf("%d levels: %d %s", levels, r.Status, r.Body)
			}
		}
		if s := e.snapshot(id); s["head_rev"] != 0.0 {
			t.Fatalf("a refused body was written: head %v", s["head_rev"])
		}
		e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, body(canvas.MaxJSONDepth-4))
		if s := e.snapshot(id); s["head_rev"] != 1.0 {
			t.Fatalf("head %v after an accepted command", s["head_rev"])
		}
	})
}

// TestTextStoredAlikeOnBothStores: invalid UTF-8 was accepted by the
// embedded store (and /events and SSE then sent it on) while PostgreSQL
// refused it. Both refuse it alike, and NUL and lone surrogates with it: 400,
// nothing written.
func TestTextStoredAlikeOnBothStores(t *testing.T) {
	onBothStores(t, func(t *testing.T, e *testEnv) {
		id := e.canvas("c_text")
		for name, args := range map[string]string{
			"invalid UTF-8 in a name": "{\"name\":\"bad \xff\xfe\"}",
			"invalid UTF-8 in a key":  "{\"name\":\"x\",\"props\":{\"\xc3\x28\":1}}",
			"UTF-8 encoded surrogate": "{\"name\":\"\xed\xa0\x80\"}",
			"escaped NUL":             `{"name":"a\u0000b"}`,
			"lone surrogate escape":   `{"name":"\udc00"}`,
			"unpaired high surrogate": `{"name":"\ud83d x"}`,
		} {
			r := e.do("POST", "/canvas_commands/"+id+"/command", testAdmin, `{"type":"create_node","base_rev":0,"args":`+args+`}`)
			if r.Status != 400 {
				t.Errorf("%s: %d %s", name, r.Status, r.Body)
			}
		}
		// A well-formed surrogate pair and other control characters are text.
		e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, `{"type":"create_node","base_rev":0,"args":{"name":"\ud83d\ude00 \u0001 \u2028"}}`)
		r := e.do("GET", "/canvas_commands/"+id+"/events?after_rev=0", testAdmin, nil)
		if ev := r.json(t); ev["head_rev"] != 1.0 || !utf8.Valid(r.Body) {
			t.Fatalf("events: %s", r.Body)
		}
	})
}

// hostileLimits is the body limit of each route that takes a body (a route
// that takes one without an entry here fails TestHostileInputOnEveryRoute).
func hostileLimits(z *authzEnv) map[string]int64 {
	cmd := z.api.cfg.MaxCommandBytes
	hc := z.api.cfg.Host.Host.Config()
	return map[string]int64{
		"POST /api/tokens":                           64 << 10,
		"POST /api/canvases":                         64 << 10,
		"POST /canvas_commands/{canvas_id}/command":  cmd,
		"POST /canvas_commands/{canvas_id}/commands": cmd,
		"POST /canvas_commands/{canvas_id}/gesture":  16 << 10,
		"POST /api/canvases/{canvas_id}/snapshots":   64 << 10,
		"POST /mcp":                                           cmd,
		"POST /api/canvas-agent/events":                       256 << 10,
		"POST /api/canvas-agent/run":                          64 << 10,
		"POST /api/canvas-agent/sessions/{session_id}/cancel": 4 << 10,
		"POST /api/canvas-agent/sessions/{session_id}/revert": 4 << 10,
		"POST /api/canvas-agent/edit-request":                 64 << 10,
		"POST /api/canvas-agent/ack":                          4 << 10,
		"POST /api/canvas-agent/view":                         64 << 10,
		"PUT /api/host/{session}/files/*":                     hc.MaxFileBytes,
		"POST /api/host/{session}/a2ui":                       hc.MaxA2UIBytes,
		"POST /api/host/{session}/a2ui/reset":                 4 << 10,
		"POST /api/host/{session}/actions":                    256 << 10,
		"POST /api/host/{session}/present":                    16 << 10,
		"POST /api/host/{session}/messages":                   messageBodyLimit(hc.MaxImageBytes),
		"POST /api/host/{session}/agent-link":                 64 << 10,
		"POST /api/sessions/{id}/messages":                    messageBodyLimit(hc.MaxImageBytes),
		"POST /api/invoke":                                    maxInvokeBody,
		"POST /api/invoke/{invoke_id}":                        maxInvokeBody,
		"POST /api/canvases/{canvas_id}/import":               maxImportBody,
	}
}

// bodyRoute is a route of the table that takes a body (POST or PUT) with
// its first authorization row.
type bodyRoute struct {
	route string
	row   authzRow
}

// bodyRoutes lists the routes that take a body, but those without an
// authorization row (TestAuthorizationMatrix reports them) and the web
// UI's 405 (row method "*").
func bodyRoutes(t *testing.T, z *authzEnv) []bodyRoute {
	var out []bodyRoute
	for _, route := range walkRoutes(t, z.api.Routes()) {
		method, _, _ := strings.Cut(route, " ")
		rows := rowsFor(authzRows(), route)
		if (method == "POST" || method == "PUT") && len(rows) > 0 && rows[0].method != "*" {
			out = append(out, bodyRoute{route, rows[0]})
		}
	}
	return out
}

// TestHostileInputOnEveryRoute sends every route of the table that takes a
// body what an attacker or a careless client would: malformed JSON, invalid
// UTF-8, JSON nested too deep, a body over the limit, a wrong token. Each
// gets a problem document and changes nothing (canvases and their heads,
// tokens, host files, named snapshots).
func TestHostileInputOnEveryRoute(t *testing.T) {
	z, _ := newAuthzEnv(t)
	limits := hostileLimits(z)
	deep := strings.Repeat(`{"a":`, canvas.MaxJSONDepth+5) + "1" + strings.Repeat("}", canvas.MaxJSONDepth+5)
	for _, br := range bodyRoutes(t, z) {
		route := br.route
		limit, ok := limits[route]
		if !ok {
			t.Errorf("%s takes a body but has no entry in hostileLimits", route)
			continue
		}
		// Any bytes: a file (the import's own hostile cases are in files_test.go).
		raw := route == "PUT /api/host/{session}/files/*" || route == "POST /api/canvases/{canvas_id}/import"
		cases := []struct {
			name, body, token string
			status            []int
			detail            string
		}{
			{"too large", `{"a":"` + strings.Repeat("x", int(limit)) + `"}`, testAdmin, []int{413}, strconv.FormatInt(limit, 10)},
			{"wrong token", "{}", TokenPrefix + "wrong", []int{401}, "token"},
		}
		if !raw {
			cases = append(cases,
				struct {
					name, body, token string
					status            []int
					detail            string
				}{"malformed JSON", `{"a":`, testAdmin, []int{400, 422}, ""},
				struct {
					name, body, token string
					status            []int
					detail            string
				}{"invalid UTF-8", "{\"name\":\"\xff\xfe\"}", testAdmin, []int{400}, "UTF-8"},
				struct {
					name, body, token string
					status            []int
					detail            string
				}{"too deep", deep, testAdmin, []int{422}, strconv.Itoa(canvas.MaxJSONDepth)},
				struct {
					name, body, token string
					status            []int
					detail            string
				}{"NUL character", `{"name":"a\u0000b"}`, testAdmin, []int{400}, "NUL"},
			)
		}
		for _, c := range cases {
			rq := br.row.req(z)
			before := z.fingerprint()
			rq.body = c.body
			status, hdr, body := z.send(rq, c.token)
			if rq.after != nil {
				rq.after()
			}
			var p map[string]any
			_ = json.Unmarshal(body, &p)
			detail, _ := p["detail"].(string)
			if !slices.Contains(c.status, status) || !strings.HasPrefix(hdr.Get("Content-Type"), "application/problem+json") || !strings.Contains(detail, c.detail) {
				t.Errorf("%s, %s: %d %s %q; want %v, a problem naming %q", route, c.name, status, hdr.Get("Content-Type"), detail, c.status, c.detail)
			}
			if after := z.fingerprint(); after != before {
				t.Errorf("%s, %s changed the server:\nbefore %s\nafter  %s", route, c.name, before, after)
			}
		}
	}
}

// fingerprint summarizes what a write could change: every canvas with its
// head, every token, canvas A's host files and named snapshots.
func (z *authzEnv) fingerprint() string {
	var b strings.Builder
	for _, path := range []string{"/api/canvases", "/api/tokens", "/api/host/" + authzA + "/files", "/api/canvases/" + authzA + "/snapshots"} {
		status, _, body := z.send(authzReq{method: "GET", path: path}, testAdmin)
		fmt.Fprintf(&b, "%s %d %s\n", path, status, body)
	}
	for _, id := range []string{authzA, authzB, authzD} {
		_, _, body := z.send(authzReq{method: "GET", path: "/canvas_commands/" + id + "/events?after_rev=0&limit=1000"}, testAdmin)
		var ev struct {
			HeadRev int64 `json:"head_rev"`
		}
		_ = json.Unmarshal(body, &ev)
		fmt.Fprintf(&b, "%s head %d\n", id, ev.HeadRev)
	}
	return b.String()
}

// TestHostilePathsAndQueries sends every route of the table (GET and DELETE
// included) hostile path parameters (invalid UTF-8, NUL, traversal, CR LF,
// a 5,000-byte id) and every GET route junk query parameters (negative,
// overflowing, non-numeric, invalid UTF-8), with the admin token. No answer
// is a 5xx, every 4xx is a problem document, and nothing changes.
func TestHostilePathsAndQueries(t *testing.T) {
	z, _ := newAuthzEnv(t)
	hostile := []string{"%ff%fe", "%00", "..", "%2e%2e", "..%2f..%2fetc", "a%0d%0aSet-Cookie:%20x=1", strings.Repeat("a", 5000),
		"%e2%80%ae", "%ed%a0%80", "~", "%25"}
	junk := "after_rev=-1&limit=99999999999999999999999&at_rev=%ff&since=x&start_line=-5&end_line=1e9" +
		"&since_rev=18446744073709551616&access_token=%00&after=%2e%2e"
	check := func(route, what string, rq authzReq) {
		t.Helper()
		rq.stream = strings.HasPrefix(rq.path, "/sse/")
		status, hdr, body := z.send(rq, testAdmin)
		if rq.after != nil {
			rq.after()
		}
		switch {
		case status >= 500:
			t.Errorf("%s, %s: %s %.120s: %d %.300s", route, what, rq.method, rq.path, status, body)
		case status >= 400 && rq.method != "HEAD" && !strings.HasPrefix(hdr.Get("Content-Type"), "application/problem+json"):
			t.Errorf("%s, %s: %d without a problem document: %.200s", route, what, status, body)
		case status >= 400 && rq.method != "HEAD" && !utf8.Valid(body):
			t.Errorf("%s, %s: the problem echoes invalid UTF-8: %q", route, what, body)
		}
	}
	for _, route := range walkRoutes(t, z.api.Routes()) {
		method, pattern, _ := strings.Cut(route, " ")
		rows := rowsFor(authzRows(), route)
		if len(rows) == 0 || rows[0].method == "*" {
			continue
		}
		// The row's request (its fixtures, such as a file to delete, are
		// made now, before the fingerprint), sent with hostile paths.
		base := rows[0].req(z)
		send := base
		send.after = nil
		before := z.fingerprint()
		if strings.ContainsAny(pattern, "{*") {
			for _, h := range hostile {
				path := pattern
				for strings.Contains(path, "{") {
					i, j := strings.Index(path, "{"), strings.Index(path, "}")
					path = path[:i] + h + path[j+1:]
				}
				rq := send
				rq.path = strings.ReplaceAll(path, "*", h)
				check(route, "path "+h[:min(len(h), 20)], rq)
			}
		}
		if method == "GET" {
			rq := send
			sep := "?"
			if strings.Contains(rq.path, "?") {
				sep = "&"
			}
			rq.path += sep + junk
			check(route, "junk query", rq)
		}
		if base.after != nil {
			base.after()
		}
		if after := z.fingerprint(); after != before {
			t.Errorf("%s with hostile paths or queries changed the server:\nbefore %s\nafter  %s", route, before, after)
		}
	}
}

// TestRefusedLargeBodyIsAnswered sends each route that takes a body, an
// unknown route and two wrong methods a 12 MiB body (more than the sockets
// buffer) with a wrong token the way most HTTP clients do: the whole body
// first, then the answer is read. Each answer is a problem document, not a
// connection reset (net/http alone discards 256 KiB of a body the handler
// left unread, then closes).
func TestRefusedLargeBodyIsAnswered(t *testing.T) {
	z, _ := newAuthzEnv(t)
	type probe struct {
		method, path string
		status       int
	}
	probes := []probe{{"POST", "/nope", 404}, {"POST", "/healthz", 405}, {"POST", "/", 405}}
	for _, br := range bodyRoutes(t, z) {
		rq := br.row.req(z)
		probes = append(probes, probe{rq.method, rq.path, 401})
		if rq.after != nil {
			rq.after()
		}
	}
	body := `{"a":"` + strings.Repeat("x", 12<<20) + `"}`
	for _, p := range probes {
		status, ctype, err := sendRaw(z.srv.URL, fmt.Sprintf("%s %s HTTP/1.1\r\nHost: canvasd\r\nAuthorization: Bearer %swrong\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", p.method, p.path, TokenPrefix, len(body), body))
		if err != nil || status != p.status || !strings.HasPrefix(ctype, "application/problem+json") {
			t.Errorf("%s %s with a 12 MiB body: %d %q %v; want %d and a problem document", p.method, p.path, status, ctype, err, p.status)
		}
	}
}

// TestRefusedExpectContinueIsAnsweredAtOnce: a client that asks
// "Expect: 100-continue" (curl does for large bodies) and is refused gets
// the problem document without being asked for its body first.
func TestRefusedExpectContinueIsAnsweredAtOnce(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_expect")
	status, ctype, err := sendRaw(e.srv.URL, fmt.Sprintf("POST /canvas_commands/%s/command HTTP/1.1\r\nHost: canvasd\r\n"+
		"Authorization: Bearer %swrong\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\nExpect: 100-continue\r\n\r\n", id, TokenPrefix))
	if err != nil || status != http.StatusUnauthorized || !strings.HasPrefix(ctype, "application/problem+json") {
		t.Fatalf("first answer %d %q %v; want the 401 problem document, not a request for the body", status, ctype, err)
	}
}

// sendRaw writes request as it is on a new connection, then reads the
// first answer and returns its status and Content-Type.
func sendRaw(baseURL, request string) (int, string, error) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(baseURL, "http://"))
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		return 0, "", fmt.Errorf("sending: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", fmt.Errorf("reading the answer: %w", err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Content-Type"), nil
}

// TestBodyRoutesRefuseOtherMediaTypes: every route of the table that takes
// JSON answers 415 (a problem naming Content-Type) to a body sent as
// text/plain, a form, an image, with no Content-Type or in another
// charset, and changes nothing; the A2UI push, which takes JSON lines,
// refuses the types it does not take. (All of them were 200.)
//
// A route whose body is not JSON (it does not go through jsonBody) is listed
// in notJSONBodies with the reason; it checks its own media types.
func TestBodyRoutesRefuseOtherMediaTypes(t *testing.T) {
	notJSONBodies := map[string]string{
		"PUT /api/host/{session}/files/*": "a file: any bytes of any type",
	}
	z, _ := newAuthzEnv(t)
	for _, br := range bodyRoutes(t, z) {
		if _, ok := notJSONBodies[br.route]; ok {
			continue
		}
		types := []string{"text/plain", "application/x-www-form-urlencoded", "image/png", "", "application/json; charset=iso-8859-1"}
		switch br.route {
		case "POST /api/host/{session}/a2ui":
			types = []string{"application/x-www-form-urlencoded", "image/png", "text/html", "application/jsonl; charset=utf-16"}
		case "POST /api/canvases/{canvas_id}/import": // a file: JSON, Mermaid text or octet-stream
			types = []string{"application/x-www-form-urlencoded", "image/png", "text/html", "application/json; charset=iso-8859-1"}
		}
		for _, ct := range types {
			rq := br.row.req(z)
			if rq.body == "" {
				rq.body = "{}"
			}
			rq.header = map[string]string{"Content-Type": ct, "Accept": "application/json, text/event-stream"}
			before := z.fingerprint()
			status, hdr, body := z.send(rq, testAdmin)
			if rq.after != nil {
				rq.after()
			}
			var p map[string]any
			_ = json.Unmarshal(body, &p)
			if status != http.StatusUnsupportedMediaType || !strings.HasPrefix(hdr.Get("Content-Type"), "application/problem+json") || p["field"] != "Content-Type" {
				t.Errorf("%s with Content-Type %q: %d %.300s; want a 415 problem naming Content-Type", br.route, ct, status, body)
			}
			if after := z.fingerprint(); after != before {
				t.Errorf("%s with Content-Type %q changed the server:\nbefore %s\nafter  %s", br.route, ct, before, after)
			}
		}
	}
}
