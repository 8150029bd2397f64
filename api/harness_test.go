package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	canvasd "github.com/canvasd/canvasd"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/hub"
	"github.com/canvasd/canvasd/internal/testwait"
	"github.com/canvasd/canvasd/store"
	_ "github.com/canvasd/canvasd/store/pgstore"     // store.Open's postgres:// URLs
	_ "github.com/canvasd/canvasd/store/sqlitestore" // store.Open's sqlite: URLs
	"github.com/canvasd/canvasd/web"
)

const testAdmin = "cvd_test_admin_token"

// testEnv is a real canvasd API on a real listener over a SQLite file.
type testEnv struct {
	t      testing.TB
	srv    *httptest.Server
	api    *Server
	engine *store.Engine
	st     store.Store
	reg    *prometheus.Registry
	spec   *openAPISpec
	logs   *logBuffer
	// diag, when set (browser tests), describes the page's side for a
	// waitNodes that times out.
	diag func() string
}

type envOption func(*Config)

// newTestEnv is a real server over a fresh SQLite file.
func newTestEnv(t testing.TB, opts ...envOption) *testEnv {
	t.Helper()
	return newTestEnvOn(t, openSQLite(t), opts...)
}

// openSQLite opens an embedded store in a temporary directory.
func openSQLite(t testing.TB) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "canvasd.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newPGTestEnv is a real server over PostgreSQL schema (see pgTestSchema),
// wired as cmd/canvasd wires it: the store also relays ephemeral events.
// Several on one schema behave as several canvasd processes.
func newPGTestEnv(t testing.TB, url, schema string, opts ...envOption) *testEnv {
	t.Helper()
	st, err := store.Open(context.Background(), url, store.OpenOptions{Schema: schema})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	return newTestEnvHub(t, st, hub.Config{Broadcaster: st.Capabilities().Broadcaster}, opts...)
}

// pgTestSchema returns CANVASD_TEST_DATABASE_URL (skipping only when it is
// unset; CI sets it) and a fresh schema name, dropped at cleanup.
func pgTestSchema(t testing.TB) (url, schema string) {
	t.Helper()
	url = os.Getenv("CANVASD_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("CANVASD_TEST_DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	schema = "t_api_" + randomHex(6)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return url, schema
}

// newTestEnvOn serves st on a real listener with an engine, hub, metrics and
// canvas host, and closes everything at cleanup. Warnings and errors the
// server logs are printed when the test fails.
func newTestEnvOn(t testing.TB, st store.Store, opts ...envOption) *testEnv {
	t.Helper()
	return newTestEnvHub(t, st, hub.Config{}, opts...)
}

// newTestEnvHub is newTestEnvOn with a hub built from hc (its relay
// through hc.Broadcaster, if set).
func newTestEnvHub(t testing.TB, st store.Store, hc hub.Config, opts ...envOption) *testEnv {
	t.Helper()
	ctx := context.Background()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	hc.OnCount, hc.Logger, hc.Problem = m.SubscriberDelta, log, ProblemOf
	hb := hub.New(hc)
	m.WatchHub(hb)
	eng := store.NewEngine(st, store.EngineConfig{Logger: log, Publisher: hb, Observer: m, SnapshotEvery: 1000,
		InUse: func(canvasID string) bool { return hb.Subscribers(canvasID) > 0 }})
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Logger: log, Engine: eng, Store: st, Hub: hb, Metrics: m, Gatherer: reg, AdminToken: testAdmin,
		OpenAPISpec: canvasd.Spec, Heartbeat: time.Minute}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Host.Host == nil {
		cfg.Host.Host = newHost(t, st, host.Config{})
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wireHub(ctx, cfg)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		cfg.Hub.Stop()
		eng.Stop()
		st.Close()
		if t.Failed() {
			t.Logf("server log (%s):\n%s", ts.URL, logs.String())
		}
	})
	return &testEnv{t: t, srv: ts, api: s, engine: eng, st: st, reg: reg, spec: loadSpec(t), logs: logs}
}

// newHost builds a canvas host on st, closed at cleanup.
func newHost(t testing.TB, st store.Store, cfg host.Config) *host.Host {
	t.Helper()
	cfg.Store, cfg.DataDir = st, t.TempDir()
	if cfg.ShellFS == nil {
		cfg.ShellFS = web.ShellFS() // the built pages (make ui); without them the viewer is a welcome page
	}
	h, err := host.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// logBuffer keeps a server's log for the failure report.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// response is a decoded HTTP answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// do sends a request with the given token and body (a string is sent verbatim,
// anything else as JSON) and checks the answer against openapi.yaml.
func (e *testEnv) do(method, path, token string, body any) response {
	e.t.Helper()
	var rd io.Reader
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			e.t.Fatal(err)
		}
	}
	if raw != nil {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode >= 400 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") && resp.StatusCode != http.StatusConflict {
		e.t.Errorf("%s %s: status %d without a problem document: %s", method, path, resp.StatusCode, out)
	}
	if raw != nil {
		req.Body = io.NopCloser(bytes.NewReader(raw))
	}
	checkResponse(e.t, e.spec, req, resp, out)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: out}
}

// must asserts a status and returns the JSON body.
func (e *testEnv) must(status int, method, path, token string, body any) map[string]any {
	e.t.Helper()
	r := e.do(method, path, token, body)
	if r.Status != status {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Body)
	}
	if len(r.Body) == 0 {
		return nil
	}
	return r.json(e.t)
}

func (e *testEnv) token(role canvas.Role, actorType canvas.ActorType, canvases ...string) (string, string) {
	e.t.Helper()
	m := e.must(201, "POST", "/api/tokens", testAdmin, map[string]any{"role": role, "actor_type": actorType, "canvases": canvases})
	return m["token"].(string), m["actor_id"].(string)
}

func (e *testEnv) canvas(id string) string {
	e.t.Helper()
	m := e.must(201, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": id, "title": "test"})
	return m["canvas_id"].(string)
}

// command sends one envelope and returns the raw answer.
func (e *testEnv) command(canvasID, token string, env map[string]any) response {
	e.t.Helper()
	return e.do("POST", "/canvas_commands/"+canvasID+"/command", token, env)
}

func (e *testEnv) snapshot(canvasID string) map[string]any {
	e.t.Helper()
	return e.must(200, "GET", "/canvas_commands/snapshot/"+canvasID, testAdmin, nil)
}

// waitUntil calls cond every 10 ms until it holds and fails the test when it
// still does not after within. It is for state only a poll can observe (a
// snapshot over HTTP, the hub's count of a closed stream); where the code
// under test gives a signal (an event, a channel), wait on that instead.
func waitUntil(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, within, what, cond)
}

func env(typ string, base int64, args map[string]any) map[string]any {
	return map[string]any{"type": typ, "base_rev": base, "args": args}
}

// sseEvent is one parsed SSE event.
type sseMsg struct {
	Event, ID string
	Data      string
}

// sseStream is an open SSE response read event by event.
type sseStream struct {
	t      testing.TB
	resp   *http.Response
	events chan sseMsg
}

func (e *testEnv) stream(path, token string, header map[string]string) *sseStream {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.t.Fatalf("stream %s: status %d: %s", path, resp.StatusCode, b)
	}
	s := &sseStream{t: e.t, resp: resp, events: make(chan sseMsg, 4096)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var m sseMsg
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if m.Event != "" || m.Data != "" {
					s.events <- m
				}
				m = sseMsg{}
			case strings.HasPrefix(line, ":"):
				s.events <- sseMsg{Event: "comment"}
			case strings.HasPrefix(line, "event: "):
				m.Event = line[7:]
			case strings.HasPrefix(line, "id: "):
				m.ID = line[4:]
			case strings.HasPrefix(line, "data: "):
				if m.Data != "" {
					m.Data += "\n"
				}
				m.Data += line[6:]
			}
		}
	}()
	e.t.Cleanup(s.close)
	return s
}

func (s *sseStream) close() { s.resp.Body.Close() }

// next returns the next event that is not a heartbeat comment.
func (s *sseStream) next() sseMsg {
	s.t.Helper()
	for {
		select {
		case m, ok := <-s.events:
			if !ok {
				s.t.Fatal("stream ended")
			}
			if m.Event == "comment" {
				continue
			}
			return m
		case <-time.After(5 * time.Second):
			s.t.Fatal("no SSE event within 5s")
		}
	}
}

func (m sseMsg) json(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(m.Data), &v); err != nil {
		t.Fatalf("event %s data is not JSON: %v: %q", m.Event, err, m.Data)
	}
	return v
}

// wireHub wires cfg.Hub to the engine, the agent service and the canvas
// host, and starts it, as cmd/canvasd does.
func wireHub(ctx context.Context, cfg Config) {
	w := hub.Wiring{OnDeleted: cfg.Engine.Forget, Messages: RelayedMessages(cfg.Agent)}
	w.Input, _ = cfg.Agent.(hub.BrowserInput)
	cfg.Hub.Wire(w)
	if cfg.Host.Host != nil {
		cfg.Host.Host.SetStreams(cfg.Hub)
	}
	cfg.Engine.OnGone(func(id string) { cfg.Hub.EndLocal(id, hub.CanvasDeletedReason) })
	cfg.Hub.Start(ctx)
}

// randomHex returns n random bytes in hex (schema and client names).
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// poller paces a loop that polls a condition (instead of sleeping): wait
// returns at the next tick, expired reports whether the time allowed has
// passed (testwait.Poller).
//
//	for pl := newPoller(10*time.Second, 50*time.Millisecond); !cond(); pl.wait() {
//		if pl.expired() { t.Fatalf(...) }
//	}
type poller struct{ *testwait.Poller }

func newPoller(within, every time.Duration) poller {
	return poller{testwait.NewPoller(within, every)}
}

func (p poller) wait()         { p.Wait() }
func (p poller) expired() bool { return p.Expired() }
