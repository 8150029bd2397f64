package api

// Checks of openapi.yaml: it loads and validates, it describes exactly the
// chi route table, and checkResponse validates any response against it. API
// end-to-end tests call checkResponse on every response they read.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/go-chi/chi/v5"

	canvasd "github.com/canvasd/canvasd"
	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/reducer"
)

// openAPISpec is the embedded openapi.yaml, validated, with a router over its
// operations. Build it once per test with loadSpec.
type openAPISpec struct {
	doc    *openapi3.T
	router routers.Router
}

// loadSpec loads and validates the embedded spec (the bytes served at
// /openapi.yaml) and fails the test if it does not.
func loadSpec(t testing.TB) *openAPISpec {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(canvasd.Spec)
	if err != nil {
		t.Fatalf("openapi.yaml does not load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not valid OpenAPI 3.0: %v", err)
	}
	// servers names the server serving the document (url "/"): the router
	// matches the paths whatever the test server's address.
	anyHost := *doc
	anyHost.Servers = nil
	router, err := legacy.NewRouter(&anyHost)
	if err != nil {
		t.Fatalf("openapi.yaml: building a router: %v", err)
	}
	return &openAPISpec{doc: doc, router: router}
}

// checkResponse fails t unless resp (whose body the caller already read into
// body) is what openapi.yaml says req's operation answers: a declared status,
// a declared content type, a body matching its schema, problem documents whose
// status member equals the HTTP status, and SSE events that the stream
// operation lists in x-sse-events with data matching their schemas. Responses
// to paths or methods the spec does not describe must be problem documents.
func checkResponse(t testing.TB, spec *openAPISpec, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if err := spec.responseError(req, resp, body); err != nil {
		t.Errorf("%s %s → %d: response does not match openapi.yaml: %v", req.Method, req.URL.RequestURI(), resp.StatusCode, err)
	}
}

// checkSSEEvent fails t unless one event read from the stream at path (e.g.
// "/sse/canvas/c1") is listed in that operation's x-sse-events, carries an id
// when it must (and none when it must not), and has data matching its schema.
// Use it on events read incrementally, where checkResponse cannot see a body.
func checkSSEEvent(t testing.TB, spec *openAPISpec, path, event, id, data string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	route, _, err := spec.findRoute(req)
	if err != nil {
		t.Errorf("GET %s: no stream operation in openapi.yaml: %v", path, err)
		return
	}
	var frame strings.Builder
	if id != "" {
		frame.WriteString("id: " + id + "\n")
	}
	if event != "" {
		frame.WriteString("event: " + event + "\n")
	}
	for _, line := range strings.Split(data, "\n") {
		frame.WriteString("data: " + line + "\n")
	}
	frame.WriteString("\n")
	if err := sseError(spec.doc, route.Operation, []byte(frame.String())); err != nil {
		t.Errorf("GET %s: event does not match openapi.yaml: %v", path, err)
	}
}

// responseError is checkResponse returning the mismatch instead of failing.
func (s *openAPISpec) responseError(req *http.Request, resp *http.Response, body []byte) error {
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mediaType == "application/problem+json" {
		if err := problemError(s.doc, resp.StatusCode, body); err != nil {
			return err
		}
	}
	route, params, err := s.findRoute(req)
	if err != nil {
		// Not an operation of the spec (an unknown path, or a method the path
		// does not have): the answer must still be a problem document.
		if resp.StatusCode < 400 {
			return fmt.Errorf("the spec has no operation for this request (%v), yet it succeeded", err)
		}
		if mediaType != "application/problem+json" {
			return fmt.Errorf("the spec has no operation for this request (%v); its error must be application/problem+json, got %q", err, mediaType)
		}
		return nil
	}
	respRef := route.Operation.Responses.Status(resp.StatusCode)
	if respRef == nil || respRef.Value == nil {
		return fmt.Errorf("status %d is not declared for %s %s", resp.StatusCode, route.Method, route.Path)
	}
	declared := respRef.Value.Content
	if len(declared) == 0 && len(body) > 0 {
		return fmt.Errorf("status %d of %s %s declares no body, got %d bytes", resp.StatusCode, route.Method, route.Path, len(body))
	}
	jsonBody := mediaType == "application/json" || strings.HasSuffix(mediaType, "+json")
	if len(declared) > 0 && !jsonBody {
		// kin-openapi decodes only JSON-like bodies; check the media type here
		// and the SSE events below.
		if declared.Get(resp.Header.Get("Content-Type")) == nil {
			return fmt.Errorf("content type %q is not declared for %d of %s %s", resp.Header.Get("Content-Type"), resp.StatusCode, route.Method, route.Path)
		}
	}
	opts := &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		ExcludeResponseBody:   !jsonBody,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route, Options: opts,
		},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Options: opts,
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		return err
	}
	if mediaType == "text/event-stream" && resp.StatusCode == http.StatusOK {
		return sseError(s.doc, route.Operation, body)
	}
	return nil
}

// findRoute maps a request to its operation with kin-openapi's router. Paths
// whose last parameter has x-rest-of-path (host files) match with that
// parameter taking the rest of the URL, slashes included, as chi's "*" does.
// A parameter holding an escaped '/' (the actor id "a/b" as a%2Fb) is one
// segment, as chi (routing on the raw path then) takes it.
func (s *openAPISpec) findRoute(req *http.Request) (*routers.Route, map[string]string, error) {
	route, params, err := s.router.FindRoute(req)
	if err == nil {
		return route, params, nil
	}
	if req.URL.RawPath != "" {
		raw := req.Clone(req.Context())
		raw.URL.Path, raw.URL.RawPath = req.URL.RawPath, ""
		if route, params, rerr := s.router.FindRoute(raw); rerr == nil {
			return route, params, nil
		}
	}
	for _, path := range s.doc.Paths.InMatchingOrder() {
		item := s.doc.Paths.Value(path)
		rest := restParam(item)
		if rest == "" {
			continue
		}
		params, ok := matchRestPath(path, rest, req.URL.Path)
		if !ok {
			continue
		}
		op := item.GetOperation(req.Method)
		if op == nil {
			return nil, nil, fmt.Errorf("%s is not allowed on %s", req.Method, path)
		}
		return &routers.Route{Spec: s.doc, Path: path, PathItem: item, Method: req.Method, Operation: op}, params, nil
	}
	return nil, nil, err
}

// restParam names the path item's x-rest-of-path parameter, or "".
func restParam(item *openapi3.PathItem) string {
	for _, p := range item.Parameters {
		if p.Value != nil && p.Value.In == openapi3.ParameterInPath && p.Value.Extensions["x-rest-of-path"] == true {
			return p.Value.Name
		}
	}
	return ""
}

// matchRestPath matches urlPath against a template whose last segment is {rest}.
func matchRestPath(template, rest, urlPath string) (map[string]string, bool) {
	prefix, ok := strings.CutSuffix(template, "/{"+rest+"}")
	if !ok {
		return nil, false
	}
	tsegs := strings.Split(prefix, "/")
	usegs := strings.Split(urlPath, "/")
	if len(usegs) <= len(tsegs) {
		return nil, false
	}
	params := map[string]string{}
	for i, ts := range tsegs {
		if strings.HasPrefix(ts, "{") && strings.HasSuffix(ts, "}") {
			if usegs[i] == "" {
				return nil, false
			}
			params[ts[1:len(ts)-1]] = usegs[i]
		} else if ts != usegs[i] {
			return nil, false
		}
	}
	params[rest] = strings.Join(usegs[len(tsegs):], "/")
	return params, true
}

// problemError checks an application/problem+json body: the Problem schema,
// and a status member equal to the HTTP status.
func problemError(doc *openapi3.T, status int, body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("problem document is not JSON: %v (body %q)", err, truncate(body))
	}
	if err := doc.Components.Schemas["Problem"].Value.VisitJSON(v); err != nil {
		return fmt.Errorf("problem document does not match Problem: %v (body %q)", err, truncate(body))
	}
	if got := v.(map[string]any)["status"]; got != float64(status) {
		return fmt.Errorf("problem status member %v differs from the HTTP status %d", got, status)
	}
	return nil
}

// sseEventSpec is one entry of an operation's x-sse-events.
type sseEventSpec struct {
	Schema string `json:"schema"`
	ID     string `json:"id"` // required, forbidden, or "" (either)
}

// sseEvents decodes an operation's x-sse-events.
func sseEvents(op *openapi3.Operation) (map[string]sseEventSpec, error) {
	raw, ok := op.Extensions["x-sse-events"]
	if !ok {
		return nil, fmt.Errorf("operation %s is a text/event-stream without x-sse-events", op.OperationID)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var events map[string]sseEventSpec
	if err := json.Unmarshal(b, &events); err != nil {
		return nil, fmt.Errorf("x-sse-events of %s: %v", op.OperationID, err)
	}
	return events, nil
}

// sseError checks every complete event of an SSE body (a trailing partial
// event is ignored): its name is listed in x-sse-events, its id is present or
// absent as listed, and its data is JSON matching the listed schema.
func sseError(doc *openapi3.T, op *openapi3.Operation, body []byte) error {
	events, err := sseEvents(op)
	if err != nil {
		return err
	}
	var problems []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var name, id string
	var data []string
	hasID, hasData := false, false
	flush := func() {
		defer func() { name, id, data, hasID, hasData = "", "", nil, false, false }()
		if !hasData && name == "" && !hasID {
			return // only comments
		}
		if name == "" {
			name = "message"
		}
		ev, ok := events[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("event %q is not listed in x-sse-events of %s", name, op.OperationID))
			return
		}
		switch {
		case ev.ID == "required" && (!hasID || id == ""):
			problems = append(problems, fmt.Sprintf("event %q has no id", name))
		case ev.ID == "forbidden" && hasID:
			problems = append(problems, fmt.Sprintf("event %q must not carry an id (got %q)", name, id))
		}
		if ev.Schema == "" {
			return
		}
		var v any
		joined := strings.Join(data, "\n")
		if err := json.Unmarshal([]byte(joined), &v); err != nil {
			problems = append(problems, fmt.Sprintf("event %q data is not JSON: %v", name, err))
			return
		}
		if err := doc.Components.Schemas[ev.Schema].Value.VisitJSON(v); err != nil {
			problems = append(problems, fmt.Sprintf("event %q data does not match %s: %v (data %q)", name, ev.Schema, err, truncate([]byte(joined))))
		}
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "id":
			id, hasID = value, true
		case "data":
			data, hasData = append(data, value), true
		case "retry":
		default:
			problems = append(problems, fmt.Sprintf("unknown SSE field %q", field))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

// allMethods are the methods chi registers for Handle/HandleFunc (any method).
var allMethods = []string{"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"}

// normalizePath turns a chi pattern or an OpenAPI path template into a form
// where parameter names do not matter: "{canvas_id}", "{id:[0-9]+}" and a
// trailing "*" all become "{}".
func normalizePath(p string) string {
	var b strings.Builder
	depth := 0
	for _, r := range p {
		switch {
		case r == '{':
			if depth == 0 {
				b.WriteString("{}")
			}
			depth++
		case r == '}':
			depth--
		case depth > 0:
		default:
			b.WriteRune(r)
		}
	}
	out := b.String()
	if strings.HasSuffix(out, "/*") {
		out = strings.TrimSuffix(out, "*") + "{}"
	}
	return out
}

// routeCoverage compares a chi route table with the spec's operations. It
// returns the served routes the spec does not describe and the described
// operations nothing serves, as "METHOD /path" strings, sorted. A chi route
// registered for every method (Handle, Mount) is covered by any operation on
// its path; a mount "/x/*" also matches the spec path "/x".
func routeCoverage(doc *openapi3.T, routes chi.Routes) (undocumented, unserved []string, err error) {
	specOps := map[string]map[string]string{} // normalized path → method → spec path
	for path, item := range doc.Paths.Map() {
		n := normalizePath(path)
		if specOps[n] == nil {
			specOps[n] = map[string]string{}
		}
		for method := range item.Operations() {
			specOps[n][method] = path
		}
	}
	served := map[string]map[string]bool{} // normalized chi path → methods
	patterns := map[string]string{}
	err = chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		n := normalizePath(route)
		if served[n] == nil {
			served[n] = map[string]bool{}
		}
		served[n][method] = true
		patterns[n] = route
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	covered := map[string]map[string]bool{} // spec normalized path → methods served
	for n, methods := range served {
		target := n
		if _, ok := specOps[target]; !ok {
			switch {
			case strings.HasSuffix(n, "/{}") && strings.HasSuffix(patterns[n], "/*"):
				// Mount("/x", handler) serves "/x/*"; Handle("/*", ui) serves "/".
				if mount := strings.TrimSuffix(n, "/{}"); specOps[mount] != nil {
					target = mount
				} else if mount == "" && specOps["/"] != nil {
					target = "/"
				}
			case len(n) > 1 && strings.HasSuffix(n, "/"):
				// Mount("/x", subrouter) with a "/" route serves "/x" and "/x/".
				if specOps[strings.TrimSuffix(n, "/")] != nil {
					target = strings.TrimSuffix(n, "/")
				}
			}
		}
		ops, ok := specOps[target]
		anyMethod := true
		for _, m := range allMethods {
			anyMethod = anyMethod && methods[m]
		}
		if covered[target] == nil {
			covered[target] = map[string]bool{}
		}
		if anyMethod {
			if !ok || len(ops) == 0 {
				undocumented = append(undocumented, "* "+patterns[n])
				continue
			}
			for m := range ops {
				covered[target][m] = true
			}
			continue
		}
		for m := range methods {
			if _, ok := ops[m]; !ok {
				undocumented = append(undocumented, m+" "+patterns[n])
				continue
			}
			covered[target][m] = true
		}
	}
	for n, ops := range specOps {
		for m, path := range ops {
			if !covered[n][m] {
				unserved = append(unserved, m+" "+path)
			}
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unserved)
	return undocumented, unserved, nil
}

// ---------------------------------------------------------------- tests

// TestOpenAPISpecValid: (a) the file loads and validates as OpenAPI 3.0.3,
// and the embedded copy (the one served) is the file.
func TestOpenAPISpecValid(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile("../openapi.yaml")
	if err != nil {
		t.Fatalf("LoadFromFile: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi version %q, want 3.0.3", doc.OpenAPI)
	}
	file, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, canvasd.Spec) {
		t.Errorf("the embedded spec differs from openapi.yaml; rebuild")
	}
	loadSpec(t)
}

// TestOpenAPIContractRules checks the conventions of docs/api.md on every operation.
func TestOpenAPIContractRules(t *testing.T) {
	doc := loadSpec(t).doc
	stable := []string{
		"GET /canvas_commands/snapshot/{canvas_id}",
		"POST /canvas_commands/{canvas_id}/command",
		"GET /sse/canvas/{canvas_id}",
		"POST /api/canvas-agent/run",
		"POST /api/sessions/{id}/messages",
	}
	for _, s := range stable {
		method, path, _ := strings.Cut(s, " ")
		item := doc.Paths.Value(path)
		if item == nil || item.GetOperation(method) == nil {
			t.Errorf("stable route %s is missing", s)
			continue
		}
		if !strings.Contains(item.GetOperation(method).Description, "(stable path)") {
			t.Errorf("stable route %s: description does not mark it (stable path)", s)
		}
	}
	public := map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true, "/openapi.yaml": true, "/": true, "/ui/{path}": true}
	pageOrSSE := func(path string) bool {
		return strings.HasPrefix(path, "/sse/") || strings.HasPrefix(path, "/host/")
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			isPublic := op.Security != nil && len(*op.Security) == 0
			if isPublic != public[path] {
				t.Errorf("%s: public is %v; the contract makes only /healthz, /readyz, /metrics, /openapi.yaml and the web UI shell (/, /ui/...) public", name, isPublic)
			}
			if !isPublic && op.Responses.Status(http.StatusUnauthorized) == nil {
				t.Errorf("%s: authenticated operation without a 401 response", name)
			}
			if !isPublic && op.Responses.Status(http.StatusTooManyRequests) == nil {
				t.Errorf("%s: authenticated operation without a 429 response (the failed-token throttle refuses any of them)", name)
			}
			acceptsQueryToken := op.Security != nil && slices.ContainsFunc(*op.Security, func(r openapi3.SecurityRequirement) bool {
				_, ok := r["accessTokenQuery"]
				return ok
			})
			if acceptsQueryToken != pageOrSSE(path) {
				t.Errorf("%s: ?access_token= accepted is %v; the contract allows it on SSE and page routes only", name, acceptsQueryToken)
			}
			if op.RequestBody != nil {
				for _, code := range []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge} {
					if op.Responses.Status(code) == nil {
						t.Errorf("%s: takes a body but does not declare %d", name, code)
					}
				}
			}
			for code, ref := range op.Responses.Map() {
				if code[0] != '4' && code[0] != '5' {
					continue
				}
				if ref.Value.Content.Get("application/problem+json") == nil {
					t.Errorf("%s: error %s is not application/problem+json", name, code)
				}
			}
			if op.Responses.Status(http.StatusOK) != nil {
				if ct := op.Responses.Status(http.StatusOK).Value.Content; ct["text/event-stream"] != nil {
					events, err := sseEvents(op)
					if err != nil {
						t.Error(err)
						continue
					}
					for ev, spec := range events {
						if spec.Schema != "" && doc.Components.Schemas[spec.Schema] == nil {
							t.Errorf("%s: event %q names schema %q, which is not a component", name, ev, spec.Schema)
						}
					}
				}
			}
		}
	}
}

// TestOpenAPIRouteCoverage: (b) every route of the real chi route table (with
// every optional part wired, as `canvasd serve` does) is in the spec, and
// every spec operation is served.
func TestOpenAPIRouteCoverage(t *testing.T) {
	// The agent endpoints are mounted only with an AgentService: serve them
	// from a real queue, as `canvasd serve` does with separate agent workers.
	e := newTestEnv(t, func(c *Config) { c.Agent = agent.NewQueue(agent.DefaultConfig(), c.Store.Capabilities().Agents, c.Hub) })
	undocumented, unserved, err := routeCoverage(e.spec.doc, e.api.Routes())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range undocumented {
		t.Errorf("route %s is served but not described in openapi.yaml", r)
	}
	for _, r := range unserved {
		t.Errorf("openapi.yaml describes %s, which the route table does not serve", r)
	}
}

// TestRouteCoverageDetectsDrift makes sure routeCoverage can fail: it sees a
// route the spec lacks, an operation nobody serves, and handles params with
// other names, regexps, wildcards, any-method handlers and mounts.
func TestRouteCoverageDetectsDrift(t *testing.T) {
	doc := loadSpec(t).doc
	nop := func(http.ResponseWriter, *http.Request) {}
	r := chi.NewRouter()
	r.Get("/canvas_commands/snapshot/{id:[a-z0-9_-]+}", nop)
	r.Get("/host/{s}/*", nop)
	r.Handle("/mcp", http.HandlerFunc(nop))
	r.Post("/api/not-in-spec", nop)
	r.Delete("/healthz", nop)
	undocumented, unserved, err := routeCoverage(doc, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"DELETE /healthz", "POST /api/not-in-spec"}; !slices.Equal(undocumented, want) {
		t.Errorf("undocumented = %v, want %v", undocumented, want)
	}
	for _, served := range []string{"GET /canvas_commands/snapshot/{canvas_id}", "GET /host/{session}/{path}", "POST /mcp"} {
		if slices.Contains(unserved, served) {
			t.Errorf("%s is served by the test router but reported unserved", served)
		}
	}
	if !slices.Contains(unserved, "GET /healthz") {
		t.Errorf("GET /healthz is not served by the test router but is not reported; unserved = %v", unserved)
	}

	mounted := chi.NewRouter()
	sub := chi.NewRouter()
	sub.Post("/", nop)
	mounted.Mount("/mcp", sub)
	mounted.Handle("/*", http.HandlerFunc(nop))
	undocumented, unserved, err = routeCoverage(doc, mounted)
	if err != nil {
		t.Fatal(err)
	}
	if len(undocumented) != 0 || slices.Contains(unserved, "POST /mcp") || slices.Contains(unserved, "GET /") {
		t.Errorf("mounts: undocumented = %v (want none); unserved = %v (want neither POST /mcp nor GET /)", undocumented, unserved)
	}
}

// TestCheckResponseDetectsDrift makes sure the response validator accepts
// conforming answers and rejects drifting ones, over a real listener.
func TestCheckResponseDetectsDrift(t *testing.T) {
	spec := loadSpec(t)
	commit := `{"canvas_id":"c1","event_id":"1-ab","rev":1,"cmd_id":"cmd","type":"create_node","args":{"name":"x"},"actor_id":"user-1","actor_type":"human","ts":"2026-01-02T03:04:05.123456789Z","changes":[{"op":"put","kind":"node","id":"shape:a-0","value":{"id":"shape:a-0","type":"geo","name":"x","parent_id":"","x":0,"y":0,"w":100,"h":100,"rotation":0,"index":"a0","props":{"geo":"star","meta":{"weight":3}},"created_by":"user-1","updated_by":"user-1","created_rev":1,"updated_rev":1}}]}`
	cases := []struct {
		name, method, path, status, ctype, body string
		ok                                      bool
	}{
		{"snapshot", "GET", "/canvas_commands/snapshot/c1", "200", "application/json",
			`{"canvas_id":"c1","head_rev":0,"head_event_id":"","model":2,"state":{"nodes":[],"edges":[]}}`, true},
		{"snapshot without model", "GET", "/canvas_commands/snapshot/c1", "200", "application/json",
			`{"canvas_id":"c1","head_rev":0,"head_event_id":"","state":{"nodes":[],"edges":[]}}`, false},
		{"a node's props off the model", "GET", "/canvas_commands/snapshot/c1", "200", "application/json",
			`{"canvas_id":"c1","head_rev":0,"head_event_id":"","model":2,"state":{"nodes":[{"id":"a","type":"geo","name":"","parent_id":"","x":0,"y":0,"w":1,"h":1,"rotation":0,"index":"a0","props":{"weight":3},"created_by":"u","updated_by":"u","created_rev":1,"updated_rev":1}],"edges":[]}}`, false},
		{"an edge's props off the model", "GET", "/canvas_commands/snapshot/c1", "200", "application/json",
			`{"canvas_id":"c1","head_rev":0,"head_event_id":"","model":2,"state":{"nodes":[],"edges":[{"id":"e","from":"","to":"","type":"arrow","props":{"points":[{"x":0,"y":0}]},"created_by":"u","created_rev":1,"updated_rev":1}]}}`, false},
		{"snapshot missing head_event_id", "GET", "/canvas_commands/snapshot/c1", "200", "application/json",
			`{"canvas_id":"c1","head_rev":0,"model":2,"state":{"nodes":[],"edges":[]}}`, false},
		{"nodes null", "GET", "/canvas_commands/snapshot/c1", "200", "application/json",
			`{"canvas_id":"c1","head_rev":0,"head_event_id":"","state":{"nodes":null,"edges":[]}}`, false},
		{"undeclared status", "GET", "/canvas_commands/snapshot/c1", "418", "application/json", `{}`, false},
		{"error as plain JSON", "GET", "/api/canvases/c1", "404", "application/json",
			`{"type":"x","title":"t","status":404,"detail":"d"}`, false},
		{"problem", "GET", "/api/canvases/c1", "404", "application/problem+json",
			`{"type":"https://canvasd.dev/problems/not-found","title":"Not found","status":404,"detail":"no canvas c1","extra":1}`, true},
		{"problem status mismatch", "GET", "/api/canvases/c1", "404", "application/problem+json",
			`{"type":"x","title":"t","status":400,"detail":"d"}`, false},
		{"problem without detail", "GET", "/api/canvases/c1", "404", "application/problem+json",
			`{"type":"x","title":"t","status":404}`, false},
		{"applied", "POST", "/canvas_commands/c1/command", "200", "application/json",
			`{"status":"applied","current_rev":1,"cmd_id":"cmd","event_id":"1-ab","created_ids":["shape:a-0"]}`, true},
		{"conflict", "POST", "/canvas_commands/c1/command", "409", "application/json",
			`{"status":"conflict","current_rev":3,"base_rev":1,"conflicting_ids":["shape:a-0"],"recovery_ops":[` + commit + `],"suggestion":"re-read"}`, true},
		{"conflict missing recovery_ops", "POST", "/canvas_commands/c1/command", "409", "application/json",
			`{"status":"conflict","current_rev":3,"base_rev":1,"conflicting_ids":[],"suggestion":"re-read"}`, false},
		{"no content", "DELETE", "/api/tokens/user-1", "204", "", "", true},
		{"no body declared", "POST", "/mcp", "202", "", "", true},
		{"body where none is declared", "POST", "/mcp", "202", "application/json", `{"jsonrpc":"2.0"}`, false},
		{"gesture ack", "POST", "/canvas_commands/c1/gesture", "202", "application/json", `{"ok":true,"delivered":false,"reason":"throttled"}`, true},
		{"unknown path problem", "GET", "/nope", "404", "application/problem+json",
			`{"type":"x","title":"t","status":404,"detail":"d"}`, true},
		{"unknown path success", "GET", "/nope", "200", "application/json", `{}`, false},
		{"host file with slashes", "GET", "/host/s1/a/b/index.html", "200", "text/html; charset=utf-8", "<p>hi</p>", true},
		{"sse", "GET", "/sse/canvas/c1", "200", "text/event-stream",
			": heartbeat\n\nid: 1-ab\nevent: canvas_commit\ndata: " + commit + "\n\nevent: caught_up\ndata: {\"head_rev\":1}\n\nevent: canvas_co", true},
		{"sse commit without id", "GET", "/sse/canvas/c1", "200", "text/event-stream",
			"event: canvas_commit\ndata: " + commit + "\n\n", false},
		{"sse bad caught_up", "GET", "/sse/canvas/c1", "200", "text/event-stream",
			"event: caught_up\ndata: {\"rev\":1}\n\n", false},
		{"sse unknown event", "GET", "/sse/canvas/c1", "200", "text/event-stream",
			"event: surprise\ndata: {}\n\n", false},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/case/{i}", func(w http.ResponseWriter, r *http.Request) {
		var i int
		fmt.Sscan(r.PathValue("i"), &i)
		c := cases[i]
		if c.ctype != "" {
			w.Header().Set("Content-Type", c.ctype)
		}
		var status int
		fmt.Sscan(c.status, &status)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(c.body))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for i, c := range cases {
		resp, err := srv.Client().Get(fmt.Sprintf("%s/case/%d", srv.URL, i))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		// Validate as the answer to the request the case stands for.
		req := httptest.NewRequest(c.method, c.path, nil)
		req.URL = &url.URL{Path: c.path}
		err = spec.responseError(req, resp, body)
		if c.ok && err != nil {
			t.Errorf("%s: rejected a conforming response: %v", c.name, err)
		}
		if !c.ok && err == nil {
			t.Errorf("%s: accepted a drifting response", c.name)
		}
	}
}

// TestOpenAPIResponsesConform drives every core route of a real server
// through its success and error answers; the harness's do runs checkResponse
// on each, and checkSSEEvent checks the stream's events.
func TestOpenAPIResponsesConform(t *testing.T) {
	e := newTestEnv(t)
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/openapi.yaml", "/", "/ui/app.js"} {
		if r := e.do("GET", p, "", nil); r.Status != http.StatusOK {
			t.Errorf("GET %s: status %d", p, r.Status)
		}
	}
	if r := e.do("GET", "/openapi.yaml", "", nil); !bytes.Equal(r.Body, canvasd.Spec) {
		t.Errorf("GET /openapi.yaml does not serve openapi.yaml")
	}
	expect := func(status int, method, path, token string, body any) response {
		t.Helper()
		r := e.do(method, path, token, body)
		if r.Status != status {
			t.Errorf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Body)
		}
		return r
	}
	expect(http.StatusUnauthorized, "GET", "/api/canvases", "", nil)
	expect(http.StatusUnauthorized, "GET", "/api/canvases", "cvd_unknown", nil)
	viewer, _ := e.token(canvas.RoleViewer, canvas.ActorHuman)
	expect(http.StatusForbidden, "POST", "/api/canvases", viewer, map[string]any{"title": "x"})
	expect(http.StatusForbidden, "POST", "/api/tokens", viewer, map[string]any{"role": "admin"})
	expect(http.StatusUnprocessableEntity, "POST", "/api/tokens", testAdmin, map[string]any{"role": "root"})
	expect(http.StatusBadRequest, "POST", "/api/tokens", testAdmin, map[string]any{"role": "viewer", "extra": 1})

	id := e.canvas("c_conform")
	expect(http.StatusConflict, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": id})
	expect(http.StatusCreated, "POST", "/api/canvases", testAdmin, map[string]any{})
	expect(http.StatusNotFound, "GET", "/api/canvases/c_missing", testAdmin, nil)
	expect(http.StatusOK, "GET", "/api/canvases", viewer, nil)
	expect(http.StatusOK, "GET", "/api/canvases/"+id, viewer, nil)

	cmd := "/canvas_commands/" + id + "/command"
	r := e.command(id, testAdmin, env("create_node", 0, map[string]any{"id": "n1", "name": "a", "transform": map[string]any{"x": 1, "y": 2}}))
	if r.Status != http.StatusOK {
		t.Fatalf("create_node: status %d: %s", r.Status, r.Body)
	}
	expect(http.StatusOK, "POST", cmd, testAdmin, env("update_node", 1, map[string]any{"id": "n1", "name": "b"}))
	expect(http.StatusConflict, "POST", cmd, testAdmin, env("update_node", 1, map[string]any{"id": "n1", "name": "c"}))
	expect(http.StatusBadRequest, "POST", cmd, testAdmin, map[string]any{"type": "create_node"})
	expect(http.StatusBadRequest, "POST", cmd, testAdmin, "{not json")
	expect(http.StatusUnprocessableEntity, "POST", cmd, testAdmin, env("update_node", 2, map[string]any{"id": "missing"}))
	expect(http.StatusUnprocessableEntity, "POST", cmd, testAdmin, env("no_such_verb", 2, nil))
	expect(http.StatusForbidden, "POST", cmd, viewer, env("create_node", 2, nil))
	expect(http.StatusNotFound, "POST", "/canvas_commands/c_missing/command", testAdmin, env("create_node", 0, nil))
	expect(http.StatusRequestEntityTooLarge, "POST", cmd, testAdmin, `{"type":"create_node","base_rev":2,"args":{"name":"`+strings.Repeat("x", 1<<20)+`"}}`)
	idem := env("create_node", 2, map[string]any{"name": "idem"})
	idem["idempotency_key"] = "k1"
	expect(http.StatusOK, "POST", cmd, testAdmin, idem)
	if r := expect(http.StatusOK, "POST", cmd, testAdmin, idem); r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay without Idempotent-Replayed: true")
	}
	idem["args"] = map[string]any{"name": "other"}
	expect(http.StatusUnprocessableEntity, "POST", cmd, testAdmin, idem)

	batch := "/canvas_commands/" + id + "/commands"
	expect(http.StatusOK, "POST", batch, testAdmin, map[string]any{"base_rev": 3, "commands": []any{
		map[string]any{"type": "create_node", "args": map[string]any{"name": "b1"}},
		map[string]any{"type": "create_node", "args": map[string]any{"name": "b2"}},
	}})
	expect(http.StatusConflict, "POST", batch, testAdmin, map[string]any{"base_rev": 1, "commands": []any{
		map[string]any{"type": "update_node", "args": map[string]any{"id": "n1", "name": "d"}},
	}})
	expect(http.StatusUnprocessableEntity, "POST", batch, testAdmin, map[string]any{"base_rev": 5, "commands": []any{
		map[string]any{"type": "delete_node", "args": map[string]any{"id": "missing"}},
	}})
	expect(http.StatusBadRequest, "POST", batch, testAdmin, map[string]any{"commands": []any{}})

	expect(http.StatusOK, "GET", "/canvas_commands/"+id+"/events?after_rev=1&limit=2", viewer, nil)
	expect(http.StatusBadRequest, "GET", "/canvas_commands/"+id+"/events?limit=0", viewer, nil)
	expect(http.StatusOK, "GET", "/canvas_commands/snapshot/"+id, viewer, nil)
	expect(http.StatusOK, "GET", "/canvas_commands/snapshot/"+id+"?at_rev=1", viewer, nil)
	expect(http.StatusBadRequest, "GET", "/canvas_commands/snapshot/"+id+"?at_rev=x", viewer, nil)
	expect(http.StatusNotFound, "GET", "/canvas_commands/snapshot/c_missing", testAdmin, nil)
	expect(http.StatusAccepted, "POST", "/canvas_commands/"+id+"/gesture", viewer, map[string]any{"cursor": map[string]any{"x": 1, "y": 2}})
	expect(http.StatusBadRequest, "POST", "/canvas_commands/"+id+"/gesture", viewer, map[string]any{})

	path := "/sse/canvas/" + id
	s := e.stream(path, viewer, map[string]string{"Last-Event-ID": "0"})
	for {
		m := s.next()
		checkSSEEvent(t, e.spec, path, m.Event, m.ID, m.Data)
		if m.Event == "caught_up" {
			break
		}
	}
	expect(http.StatusAccepted, "POST", "/canvas_commands/"+id+"/gesture", testAdmin, map[string]any{"cursor": map[string]any{"x": 3, "y": 4}, "selection": []string{"n1"}})
	m := s.next()
	checkSSEEvent(t, e.spec, path, m.Event, m.ID, m.Data)
	s2 := e.stream(path+"?last_event_id=999", viewer, nil)
	m = s2.next()
	checkSSEEvent(t, e.spec, path, m.Event, m.ID, m.Data)
	if m.Event != "reset" {
		t.Errorf("resume past the head: got %q, want reset", m.Event)
	}

	// MCP over plain HTTP: a JSON-RPC request answered as JSON or as one SSE message event.
	for _, accept := range []string{"application/json, text/event-stream", ""} {
		rpc := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"openapi-test","version":"1"}}}`
		req, err := http.NewRequest("POST", e.srv.URL+"/mcp", strings.NewReader(rpc))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testAdmin)
		req.Header.Set("Content-Type", "application/json")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 200, false: 400}[accept != ""]; resp.StatusCode != want {
			t.Errorf("POST /mcp (Accept %q): status %d, want %d: %s", accept, resp.StatusCode, want, body)
		}
		checkResponse(t, e.spec, req, resp, body)
	}

	expect(http.StatusMethodNotAllowed, "DELETE", "/healthz", "", nil)
	expect(http.StatusMethodNotAllowed, "POST", "/", "", nil)
	expect(http.StatusNotFound, "GET", "/ui/no-such-asset.js", "", nil)
	if r := e.do("GET", "/no/such/route", testAdmin, nil); r.Status < 400 {
		t.Errorf("unknown route: status %d", r.Status)
	}
	_, actor := e.token(canvas.RoleEditor, canvas.ActorAgent)
	expect(http.StatusNoContent, "DELETE", "/api/tokens/"+actor, testAdmin, nil)
	expect(http.StatusNotFound, "DELETE", "/api/tokens/"+actor, testAdmin, nil)
	expect(http.StatusForbidden, "DELETE", "/api/canvases/"+id, viewer, nil)
	expect(http.StatusNoContent, "DELETE", "/api/canvases/"+id, testAdmin, nil)
	expect(http.StatusNotFound, "DELETE", "/api/canvases/"+id, testAdmin, nil)
}

// TestOpenAPIAgentResponsesConform runs an agent session (debug/fake model)
// through the HTTP endpoints and checks every answer and every agent event
// of the canvas stream against openapi.yaml.
func TestOpenAPIAgentResponsesConform(t *testing.T) {
	e := newAgentEnv(t, nil, nil)
	spec := loadSpec(t)
	e.newCanvas("c_agent")
	events := e.watch("c_agent")
	call := func(status int, method, path string, body any) map[string]any {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, e.srv.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testAdmin)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != status {
			t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, status, out)
		}
		checkResponse(t, spec, req, resp, out)
		var m map[string]any
		_ = json.Unmarshal(out, &m)
		return m
	}
	run := call(http.StatusAccepted, "POST", "/api/canvas-agent/run", map[string]any{"roomId": "c_agent",
		"message": "Draft a brutalist poster concept", "viewport": map[string]any{"x": 0, "y": 0, "w": 1600, "h": 900}})
	id, _ := run["session_id"].(string)
	e.wait(id)
	call(http.StatusOK, "GET", "/api/canvas-agent/sessions/"+id, nil)
	call(http.StatusOK, "POST", "/api/canvas-agent/sessions/"+id+"/cancel", nil)
	call(http.StatusNotFound, "GET", "/api/canvas-agent/sessions/no-such-session", nil)
	call(http.StatusOK, "GET", "/api/canvas-agent/catalog", nil)
	call(http.StatusBadRequest, "POST", "/api/canvas-agent/run", map[string]any{"message": "no room"})
	call(http.StatusAccepted, "POST", "/api/canvas-agent/events", map[string]any{"canvas_id": "c_agent", "event": "agent:chat",
		"data": map[string]any{"sessionId": id, "message": map[string]any{"role": "system", "text": "relayed"}}})
	call(http.StatusBadRequest, "POST", "/api/canvas-agent/events", map[string]any{"canvas_id": "c_agent", "event": "canvas_commit", "data": map[string]any{}})

	events.until(t, func(x client.Event) bool {
		return x.Event == "agent:chat" && strings.Contains(string(x.Data), "relayed")
	})
	seen := map[string]bool{}
	for _, x := range events.list() {
		seen[x.Event] = true
		checkSSEEvent(t, spec, "/sse/canvas/c_agent", x.Event, x.ID, string(x.Data))
	}
	for _, want := range []string{"agent:action", "agent:status", "agent:chat"} {
		if !seen[want] {
			t.Errorf("no %s event on the canvas stream (saw %v)", want, seen)
		}
	}
}

// argsSchemaName names the args schema of a command type (canvas.Verbs).
func argsSchemaName(typ string) string {
	v, _ := canvas.VerbByType(typ)
	return v.Schema
}

// TestOpenAPICommandTypes: the CommandType enum and the command schemas of
// CommandEnvelope's oneOf are exactly the reducer's verb table, each with
// its args schema and the discriminator mapping its type to it.
func TestOpenAPICommandTypes(t *testing.T) {
	doc := loadSpec(t).doc
	var enum []string
	for _, v := range doc.Components.Schemas["CommandType"].Value.Enum {
		enum = append(enum, v.(string))
	}
	sort.Strings(enum)
	if got := reducer.CommandTypes(); !slices.Equal(enum, got) {
		t.Errorf("CommandType enum %v, reducer verbs %v", enum, got)
	}
	for _, envelope := range []string{"CommandEnvelope", "BatchCommand"} {
		s := doc.Components.Schemas[envelope].Value
		if s.Discriminator == nil || s.Discriminator.PropertyName != "type" || len(s.OneOf) != len(enum) {
			t.Fatalf("%s: %d oneOf, discriminator %+v", envelope, len(s.OneOf), s.Discriminator)
		}
		for _, typ := range enum {
			v, _ := canvas.VerbByType(typ)
			cmd := doc.Components.Schemas[v.CommandSchemaName()]
			if cmd == nil || s.Discriminator.Mapping[typ].Ref != "#/components/schemas/"+v.CommandSchemaName() {
				t.Errorf("%s: type %s is not mapped to %s", envelope, typ, v.CommandSchemaName())
				continue
			}
			if args := cmd.Value.Properties["args"]; args == nil || args.Ref != "#/components/schemas/"+argsSchemaName(typ) {
				t.Errorf("%s: args are not %s", v.CommandSchemaName(), argsSchemaName(typ))
			}
			if te := cmd.Value.Properties["type"].Value.Enum; len(te) != 1 || te[0] != typ {
				t.Errorf("%s: type enum %v", v.CommandSchemaName(), te)
			}
		}
	}
}

// TestOpenAPICommandArgsMatchReducer sends every command type an unknown
// argument; the 422 names the fields the reducer accepts, which must be the
// properties of the type's args schema in openapi.yaml.
func TestOpenAPICommandArgsMatchReducer(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_args")
	doc := e.spec.doc
	for _, typ := range reducer.CommandTypes() {
		r := e.command(id, testAdmin, env(typ, 0, map[string]any{"zz_probe": 1}))
		if r.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s with an unknown argument: status %d, want 422: %s", typ, r.Status, r.Body)
			continue
		}
		p := r.json(t)
		if p["field"] != "args.zz_probe" {
			t.Errorf("%s: the 422 names %v, want args.zz_probe", typ, p["field"])
			continue
		}
		_, list, ok := strings.Cut(p["detail"].(string), "this command takes: ")
		var accepted []string
		if ok && strings.TrimSpace(list) != "" {
			accepted = strings.Split(strings.TrimSpace(list), ", ")
		}
		name := argsSchemaName(typ)
		schema := doc.Components.Schemas[name].Value
		props := map[string]bool{}
		for k := range schema.Properties {
			props[k] = true
		}
		for _, branch := range schema.OneOf {
			for k := range branch.Value.Properties {
				props[k] = true
			}
		}
		var documented []string
		for k := range props {
			documented = append(documented, k)
		}
		sort.Strings(documented)
		sort.Strings(accepted)
		if !slices.Equal(documented, accepted) {
			t.Errorf("%s: openapi.yaml %s has %v; the reducer accepts %v", typ, name, documented, accepted)
		}
	}
}

var updatePropsSchemas = flag.Bool("update-props-schemas", false, "rewrite the props schemas of openapi.yaml from canvas/props.go")

// TestOpenAPIPropsSchemas: openapi.yaml holds, between its markers, exactly
// the props schemas generated from the one definition the validator uses
// (canvas.PropsSchemasYAML), so the document and the server agree on every
// kind's props. -update-props-schemas writes them.
func TestOpenAPIPropsSchemas(t *testing.T) {
	const path = "../openapi.yaml"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	begin := strings.Index(doc, canvas.PropsSchemasBegin)
	end := strings.Index(doc, canvas.PropsSchemasEnd)
	if begin < 0 || end < begin {
		t.Fatalf("openapi.yaml lacks the markers of the props schemas:\n%s%s", canvas.PropsSchemasBegin, canvas.PropsSchemasEnd)
	}
	got, want := doc[begin:end+len(canvas.PropsSchemasEnd)], canvas.PropsSchemasYAML()
	if *updatePropsSchemas {
		if err := os.WriteFile(path, []byte(doc[:begin]+want+doc[end+len(canvas.PropsSchemasEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want {
		t.Fatalf("the props schemas of openapi.yaml are not those of canvas/props.go: run go test ./api -run TestOpenAPIPropsSchemas -update-props-schemas")
	}
	spec := loadSpec(t).doc
	for _, k := range append(append([]string(nil), canvas.NodeTypes...), canvas.EdgeKind) {
		s := spec.Components.Schemas[canvas.PropsSchemaName(k)]
		if s == nil {
			t.Fatalf("no %s schema", canvas.PropsSchemaName(k))
		}
		var keys []string
		for key := range s.Value.Properties {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		want := canvas.PropKeys(k)
		sort.Strings(want)
		if !slices.Equal(keys, want) {
			t.Errorf("%s lists %v; the validator takes %v", canvas.PropsSchemaName(k), keys, want)
		}
	}
}
