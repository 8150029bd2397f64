package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	canvasd "github.com/canvasd/canvasd"
	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/agent/providertest"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/hub"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// fakeOpenAI is a real HTTP endpoint speaking the OpenAI chat completions
// streaming protocol (chat.completion.chunk events), replaying scripted replies.
type fakeOpenAI struct {
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []openAIRequest
	replies []scriptedReply
	aborted int           // streams whose client went away before the end
	changed chan struct{} // signalled on each request and abort (buffer of one)
}

type openAIRequest struct {
	Model       string   `json:"model"`
	Stream      bool     `json:"stream"`
	Temperature *float32 `json:"temperature"` // nil: not on the wire
	Messages    []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"` // a string, or parts [{type, text | image_url}]
	} `json:"messages"`
}

// last returns the text and image URL of the last message.
func (r openAIRequest) last() (text, image string) {
	c := r.Messages[len(r.Messages)-1].Content
	if json.Unmarshal(c, &text) == nil {
		return text, ""
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	_ = json.Unmarshal(c, &parts)
	for _, p := range parts {
		text += p.Text
		if p.Type == "image_url" {
			image = p.ImageURL.URL
		}
	}
	return text, image
}

// scriptedReply streams chunks; before chunk i it waits on gates[i] when set.
type scriptedReply struct {
	chunks []string
	gates  map[int]chan struct{}
	delay  time.Duration
}

func chunked(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		k := min(n, len(s))
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func newFakeOpenAI(t testing.TB, replies ...scriptedReply) *fakeOpenAI {
	f := &fakeOpenAI{replies: replies, changed: make(chan struct{}, 1)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"bad path or key"}}`, http.StatusUnauthorized)
			return
		}
		var req openAIRequest
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || !req.Stream {
			http.Error(w, `{"error":{"message":"want a streaming request"}}`, 400)
			return
		}
		f.mu.Lock()
		i := len(f.reqs)
		f.reqs = append(f.reqs, req)
		select {
		case f.changed <- struct{}{}:
		default:
		}
		var rep scriptedReply
		if i < len(f.replies) {
			rep = f.replies[i]
		} else {
			rep = scriptedReply{chunks: []string{`{"actions":[]}`}}
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fl := w.(http.Flusher)
		send := func(content, finish string) {
			fr := "null"
			if finish != "" {
				fr = `"` + finish + `"`
			}
			c, _ := json.Marshal(content)
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-%d\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":%s}]}\n\n", i, req.Model, c, fr)
			fl.Flush()
		}
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-%d\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\n\n", i, req.Model)
		fl.Flush()
		for k, c := range rep.chunks {
			if g := rep.gates[k]; g != nil {
				select {
				case <-g:
				case <-r.Context().Done():
				}
			}
			if rep.delay > 0 {
				select {
				case <-time.After(rep.delay):
				case <-r.Context().Done():
				}
			}
			if r.Context().Err() != nil {
				f.mu.Lock()
				f.aborted++
				f.mu.Unlock()
				select {
				case f.changed <- struct{}{}:
				default:
				}
				return
			}
			send(c, "")
		}
		send("", "stop")
		io.WriteString(w, "data: [DONE]\n\n")
		fl.Flush()
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// waitAborted waits until n streams were cut off by their client.
func (f *fakeOpenAI) waitAborted(t testing.TB, n int) {
	t.Helper()
	f.waitFor(t, fmt.Sprintf("%d model streams cut off by their client", n), func() bool { return f.aborted >= n })
}

// waitRequests waits until the model was called n times.
func (f *fakeOpenAI) waitRequests(t testing.TB, n int) {
	t.Helper()
	f.waitFor(t, fmt.Sprintf("%d model calls", n), func() bool { return len(f.reqs) >= n })
}

// waitFor waits until cond (called with f.mu held) holds.
func (f *fakeOpenAI) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		ok := cond()
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-f.changed:
		case <-deadline:
			t.Fatalf("not within 10 s: %s", what)
		}
	}
}

func (f *fakeOpenAI) requests() []openAIRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]openAIRequest(nil), f.reqs...)
}

// agentEnv is a real canvasd (SQLite file, real listener) with the agent
// endpoints mounted and a runner that reaches canvasd over HTTP with its own
// agent token.
type agentEnv struct {
	t          testing.TB
	srv        *httptest.Server
	api        *Server
	dbPath     string
	sessions   *sqlitestore.Store
	runner     *agent.Runner
	admin      *client.Client
	human      *client.Client
	humanActor string
	agentActor string
	commitLat  *latencies
	hub        *hub.Hub
	spec       *openAPISpec
	reg        *prometheus.Registry
}

// specTransport checks every non-streaming answer against openapi.yaml.
type specTransport struct {
	t    testing.TB
	spec *openAPISpec
}

func (s specTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	checkResponse(s.t, s.spec, req, resp, body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) { l.mu.Lock(); l.d = append(l.d, d); l.mu.Unlock() }

func newAgentEnv(t testing.TB, model *fakeOpenAI, tune func(*agent.Config)) *agentEnv {
	t.Helper()
	return newAgentEnvMode(t, model, tune, false)
}

// newAgentEnvMode with worker=true serves the agent endpoints from an
// agent.Queue and runs the runner as a separate worker: it claims sessions
// from the shared database and publishes events through the HTTP relay.
func newAgentEnvMode(t testing.TB, model *fakeOpenAI, tune func(*agent.Config), worker bool) *agentEnv {
	return newAgentEnvFull(t, model, tune, worker, worker)
}

// newAgentEnvFull: queue serves the endpoints from an agent.Queue; worker
// also runs the test's runner as a worker claiming from it.
func newAgentEnvFull(t testing.TB, model *fakeOpenAI, tune func(*agent.Config), queue, worker bool) *agentEnv {
	t.Helper()
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "canvasd.db")
	st, err := sqlitestore.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	hb := hub.New(hub.Config{OnCount: m.SubscriberDelta, Problem: ProblemOf})
	eng := store.NewEngine(st, store.EngineConfig{Publisher: hb, Observer: m, SnapshotEvery: 50})
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The runner is a client of the server, and the server serves the
	// runner: listen first, build the server once the runner exists.
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	serverFor := func(svc AgentService) *Server {
		cfg := Config{Engine: eng, Store: st, Hub: hb, Metrics: m, Gatherer: reg, AdminToken: testAdmin,
			OpenAPISpec: canvasd.Spec, Heartbeat: time.Minute, Agent: svc}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		wireHub(ctx, cfg)
		handler = s.Handler()
		return s
	}
	s := serverFor(nil)
	e := &agentEnv{t: t, srv: ts, api: s, dbPath: dbPath, commitLat: &latencies{}, hub: hb}
	spec := loadSpec(t)
	checked := client.WithHTTPClient(&http.Client{Transport: specTransport{t: t, spec: spec}})
	e.admin, _ = client.New(ts.URL, testAdmin, checked)
	e.spec = spec
	e.reg = reg

	tok, err := e.admin.CreateToken(ctx, canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent})
	if err != nil {
		t.Fatal(err)
	}
	e.agentActor = tok.ActorID
	agentClient, _ := client.New(ts.URL, tok.Token)
	htok, err := e.admin.CreateToken(ctx, canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorHuman})
	if err != nil {
		t.Fatal(err)
	}
	e.human, _ = client.New(ts.URL, htok.Token, checked)
	e.humanActor = htok.ActorID

	e.sessions = st
	cfg := agent.DefaultConfig()
	cfg.OpenAIAPIKey = "sk-test"
	if model != nil {
		cfg.OpenAIBaseURL = model.srv.URL + "/v1"
	}
	cfg.Watchdog = 20 * time.Second
	if tune != nil {
		tune(&cfg)
	}
	var events agent.Events = hb
	if worker {
		events = agent.HTTPEvents{Client: agentClient}
	}
	e.runner, err = agent.NewRunner(agent.Deps{Config: cfg, Client: agentClient, ActorID: tok.ActorID, Events: events,
		Store: e.sessions, Logger: slog.New(slog.DiscardHandler), Metrics: agent.NewMetrics(reg), OnActionCommit: e.commitLat.add})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan struct{})
	e.runner.Start(wctx)
	var svc AgentService = e.runner
	if queue {
		svc = agent.NewQueue(cfg, e.sessions, hb)
	}
	if worker {
		go func() { defer close(workerDone); e.runner.Work(wctx, agent.WorkerOptions{Poll: 20 * time.Millisecond}) }()
	} else {
		close(workerDone)
	}
	e.api = serverFor(svc)
	t.Cleanup(func() {
		stopWorker()
		<-workerDone
		e.runner.Stop()
		ts.CloseClientConnections()
		ts.Close()
		hb.Stop()
		eng.Stop()
		st.Close()
	})
	return e
}

func (e *agentEnv) newCanvas(id string) {
	e.t.Helper()
	if _, err := e.admin.CreateCanvas(context.Background(), id, "agent test"); err != nil {
		e.t.Fatal(err)
	}
}

// humanCommand applies a command as the human at baseRev, failing the test
// when it is not applied.
func (e *agentEnv) humanCommand(canvasID, typ string, baseRev int64, args string) canvas.RevisionResult {
	e.t.Helper()
	res, err := e.human.Command(context.Background(), canvasID, canvas.Envelope{Type: typ, BaseRev: &baseRev, Args: []byte(args)})
	if err != nil {
		e.t.Fatalf("%s on %s: %v", typ, canvasID, err)
	}
	return res
}

// run starts a session through the HTTP endpoint and waits for its end.
func (e *agentEnv) run(req client.AgentRunRequest) client.AgentSession {
	e.t.Helper()
	id := e.start(req)
	return e.wait(id)
}

func (e *agentEnv) start(req client.AgentRunRequest) string {
	e.t.Helper()
	res, err := e.human.RunAgent(context.Background(), req)
	if err != nil || !res.OK || res.SessionID == "" {
		e.t.Fatalf("run: %+v %v", res, err)
	}
	return res.SessionID
}

// waitRunner waits until r has finished session id's work. Done is nil
// when the session already ended (or runs elsewhere).
func waitRunner(tb testing.TB, r *agent.Runner, id string) {
	tb.Helper()
	if ch := r.Done(id); ch != nil {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			tb.Fatalf("session %s did not end", id)
		}
	}
}

// wait waits until session id ended and returns it as the API shows it.
func (e *agentEnv) wait(id string) client.AgentSession {
	e.t.Helper()
	waitRunner(e.t, e.runner, id)
	var s client.AgentSession
	waitUntil(e.t, 30*time.Second, "session "+id+" in a final state", func() bool {
		var err error
		if s, err = e.human.AgentSession(context.Background(), id); err != nil {
			e.t.Fatal(err)
		}
		return client.AgentTerminal(s.State)
	})
	return s
}

func (e *agentEnv) snapshot(id string) client.Snapshot {
	e.t.Helper()
	s, err := e.admin.Snapshot(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func actionsJSON(actions ...string) string { return `{"actions":[` + strings.Join(actions, ",") + `]}` }

// agentEvents collects agent:* events of a canvas from its SSE stream.
type agentEvents struct {
	mu      sync.Mutex
	events  []client.Event
	arrived chan struct{} // signalled after each event (buffer of one)
	cancel  context.CancelFunc
	done    chan struct{}
}

func (e *agentEnv) watch(canvasID string) *agentEvents {
	ctx, cancel := context.WithCancel(context.Background())
	ae := &agentEvents{arrived: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	st := e.human.Stream(ctx, canvasID, client.StreamOptions{LastEventID: "0"})
	ready := make(chan struct{})
	go func() {
		defer close(ae.done)
		for {
			ev, err := st.Recv()
			if err != nil {
				return
			}
			if ev.Event == client.EventCaughtUp {
				close(ready)
				continue
			}
			if strings.HasPrefix(ev.Event, "agent:") {
				checkSSEEvent(e.t, e.spec, "/sse/canvas/"+canvasID, ev.Event, ev.ID, string(ev.Data))
				ae.mu.Lock()
				ae.events = append(ae.events, ev)
				ae.mu.Unlock()
				select {
				case ae.arrived <- struct{}{}:
				default:
				}
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		e.t.Fatal("stream did not catch up")
	}
	e.t.Cleanup(func() { cancel(); st.Close(); <-ae.done })
	return ae
}

// until waits for an event matching f.
func (ae *agentEvents) until(t testing.TB, f func(client.Event) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		for _, ev := range ae.list() {
			if f(ev) {
				return
			}
		}
		select {
		case <-ae.arrived:
		case <-deadline:
			t.Fatal("event never arrived")
		}
	}
}

func (ae *agentEvents) list() []client.Event {
	ae.mu.Lock()
	defer ae.mu.Unlock()
	return append([]client.Event(nil), ae.events...)
}

func nodeByName(s client.Snapshot, text string) *canvas.Node {
	for _, n := range s.State.Nodes {
		if t, _ := canvas.PropText(n.Props["text"]); t == text {
			return n
		}
	}
	return nil
}

func TestAgentBrutalistPosterWithFakeModel(t *testing.T) {
	e := newAgentEnv(t, nil, nil)
	e.newCanvas("poster")
	ev := e.watch("poster")
	sess := e.run(client.AgentRunRequest{RoomID: "poster", Message: "Draft a brutalist poster concept", Viewport: &client.Box{X: 0, Y: 0, W: 1600, H: 900}})
	if sess.State != client.AgentDone || sess.ActorID != e.agentActor {
		t.Fatalf("session %+v", sess)
	}
	snap := e.snapshot("poster")
	types := map[string]int{}
	for _, n := range snap.State.Nodes {
		types[n.Type]++
		if n.CreatedBy != e.agentActor || !strings.HasPrefix(n.ID, "ag:") {
			t.Errorf("node %s created by %q", n.ID, n.CreatedBy)
		}
	}
	// hero headline (text), supporting block + vertical divider (geo), three sticky notes.
	if types["text"] != 1 || types["geo"] != 2 || types["note"] != 3 || len(snap.State.Nodes) != 6 || snap.HeadRev != 6 {
		t.Fatalf("types %v, head %d", types, snap.HeadRev)
	}
	hero := nodeByName(snap, "RAW / HONEST / LOUD")
	if hero == nil || hero.Props["color"] != "black" || hero.Props["size"] != "xl" {
		t.Fatalf("hero %+v", hero)
	}
	if n := nodeByName(snap, "Raw materials"); n == nil || n.Props["color"] != "orange" {
		t.Fatalf("brand alias not coerced: %+v", n)
	}
	if sess.Stats.ActionsApplied != 6 || sess.Stats.Turns != 1 || sess.Stats.FollowUps != 0 || sess.Stats.TimeToFirstAction <= 0 {
		t.Fatalf("stats %+v", sess.Stats)
	}
	if len(sess.Transcript) < 2 || sess.Transcript[0].Role != "user" || !strings.Contains(sess.Transcript[1].Text, "brutalist") {
		t.Fatalf("transcript %+v", sess.Transcript)
	}
	ev.until(t, func(x client.Event) bool {
		return x.Event == client.EventAgentStatus && strings.Contains(string(x.Data), `"state":"done"`)
	})
	var states []string
	var lastSeq int64
	complete := 0
	partialIDs, completeIDs := map[string]bool{}, map[string]bool{}
	chat := false
	for _, x := range ev.list() {
		switch x.Event {
		case client.EventAgentChat:
			var c agent.ChatEvent
			x.Decode(&c)
			chat = chat || (c.SessionID == sess.ID && c.Message.Role == "assistant" && strings.Contains(c.Message.Text, "brutalist poster"))
		case client.EventAgentStatus:
			var st agent.StatusEvent
			x.Decode(&st)
			if len(states) == 0 || states[len(states)-1] != st.State {
				states = append(states, st.State)
			}
		case client.EventAgentAction:
			var env agent.ActionEnvelope
			if err := x.Decode(&env); err != nil {
				t.Fatal(err)
			}
			if env.V != "tldraw-actions/1" || env.SessionID != sess.ID || env.Seq <= lastSeq {
				t.Fatalf("envelope %+v after seq %d", env, lastSeq)
			}
			lastSeq = env.Seq
			for _, a := range env.Actions {
				if env.Partial {
					partialIDs[a.ID] = true
				} else {
					completeIDs[a.ID] = true
				}
			}
			if !env.Partial {
				complete += len(env.Actions)
			}
		}
	}
	if got := strings.Join(states, ","); got != "waiting_context,calling_model,streaming,done" {
		t.Fatalf("states %s", got)
	}
	if complete != 7 { // think + 6 creates
		t.Fatalf("%d complete actions in envelopes", complete)
	}
	if len(partialIDs) == 0 || !chat {
		t.Fatalf("no partial previews (%d) or no agent:chat for think (%v)", len(partialIDs), chat)
	}
	for id := range partialIDs {
		if !completeIDs[id] {
			t.Fatalf("partial action id %q never completed: ids are not stable", id)
		}
	}
	if v := counterValue(t, e.reg, "canvas_agent_actions_total", "outcome", "applied"); v != 6 {
		t.Fatalf("canvas_agent_actions_total{outcome=applied} = %v", v)
	}
	// The catalog endpoint serves the prompt's catalog.
	cat, err := e.human.AgentCatalog(context.Background())
	if err != nil || !strings.Contains(string(cat), `"create_shape"`) || string(cat) != string(agent.CatalogJSON()) {
		t.Fatalf("catalog %.80s %v", cat, err)
	}
}

func TestAgentConflictingHumanEditWhileStreaming(t *testing.T) {
	gate := make(chan struct{})
	reply1 := actionsJSON(
		`{"name":"create_shape","params":{"id":"hero","type":"text","x":10,"y":10,"props":{"text":"HERO","color":"black"}}}`,
		`{"name":"update_shape","params":{"id":"hero","props":{"color":"orange"}}}`,
		`{"name":"create_shape","params":{"id":"late","type":"note","x":500,"y":10,"props":{"text":"never"}}}`)
	split := strings.Index(reply1, `{"name":"update_shape"`)
	reply2 := actionsJSON(
		`{"name":"create_shape","params":{"type":"note","x":300,"y":300,"props":{"text":"after replan"}}}`,
		`{"name":"update_shape","params":{"id":"hero","props":{"color":"red"}}}`)
	model := newFakeOpenAI(t,
		scriptedReply{chunks: []string{reply1[:split], reply1[split:]}, gates: map[int]chan struct{}{1: gate}},
		scriptedReply{chunks: chunked(reply2, 9)},
		scriptedReply{chunks: []string{actionsJSON(`{"name":"think","params":{"text":"leaving the human's edits"}}`)}},
	)
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test"; c.LowActionThreshold = 0 })
	e.newCanvas("c")
	id := e.start(client.AgentRunRequest{RoomID: "c", Message: "make a hero"})

	// Wait for the hero, then edit it as a human while the model is still streaming.
	var hero *canvas.Node
	waitUntil(t, 10*time.Second, "the hero on the canvas", func() bool { hero = nodeByName(e.snapshot("c"), "HERO"); return hero != nil })
	snap := e.snapshot("c")
	base := snap.HeadRev
	if _, err := e.human.Command(context.Background(), "c", canvas.Envelope{Type: "update_shape", BaseRev: &base,
		Args: json.RawMessage(`{"id":"` + hero.ID + `","props":{"color":"green"}}`)}); err != nil {
		t.Fatal(err)
	}
	close(gate)
	sess := e.wait(id)

	final := e.snapshot("c")
	hero = nodeByName(final, "HERO")
	if hero.Props["color"] != "green" || hero.UpdatedBy != e.humanActor {
		t.Fatalf("the human edit was overwritten: %+v", hero)
	}
	if nodeByName(final, "never") != nil {
		t.Fatal("an action after the conflict was applied from the stale plan")
	}
	if nodeByName(final, "after replan") == nil {
		t.Fatal("the re-plan did not apply")
	}
	if sess.State != client.AgentDone || sess.Stats.Conflicts != 2 || sess.Stats.Replans != 2 || sess.Stats.Turns != 3 {
		t.Fatalf("session %s stats %+v", sess.State, sess.Stats)
	}
	reqs := model.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls", len(reqs))
	}
	second, _ := reqs[1].last()
	if !strings.Contains(second, "someone else changed") || !strings.Contains(second, hero.ID) || !strings.Contains(second, `"color":"green"`) {
		t.Fatalf("re-plan prompt lacks the conflict or the fresh state: %.300s", second)
	}
	if reqs[0].Model != "gpt-test" || reqs[0].Temperature != nil || reqs[1].Temperature == nil || *reqs[1].Temperature != 0 {
		t.Fatalf("model %q, temperatures %v %v: want none on the first call, 0 on the re-plan", reqs[0].Model, reqs[0].Temperature, reqs[1].Temperature)
	}
}

func TestAgentGarbageReplyChangesNothing(t *testing.T) {
	model := newFakeOpenAI(t, scriptedReply{chunks: chunked("I'm sorry, I can't draw. {not json at all ```", 5)})
	e := newAgentEnv(t, model, nil) // the default model is debug/fake; the request overrides it
	e.newCanvas("g")
	before := e.snapshot("g")
	sess := e.run(client.AgentRunRequest{RoomID: "g", Message: "draw a cat", Model: "openai:gpt-test"})
	if sess.Model != "openai:gpt-test" || len(model.requests()) != 1 {
		t.Fatalf("model override ignored: %s", sess.Model)
	}
	after := e.snapshot("g")
	if after.HeadRev != before.HeadRev || len(after.State.Nodes) != 0 {
		t.Fatalf("garbage changed the canvas: head %d → %d", before.HeadRev, after.HeadRev)
	}
	if sess.State != client.AgentDone || sess.Stats.ActionsApplied != 0 || sess.Stats.Turns != 1 {
		t.Fatalf("session %+v", sess)
	}
	if !strings.Contains(sess.Transcript[len(sess.Transcript)-1].Text, "no valid actions") {
		t.Fatalf("transcript %+v", sess.Transcript)
	}
	// Well-formed but invalid actions are dropped, also nothing applied.
	model2 := newFakeOpenAI(t, scriptedReply{chunks: []string{actionsJSON(
		`{"name":"explode","params":{}}`, `{"name":"create_shape","params":{"type":"r","x":1,"y":1}}`,
		`{"name":"update_shape","params":{"id":"shape:nope","props":{"color":"red"}}}`)}})
	e2 := newAgentEnv(t, model2, func(c *agent.Config) { c.Model = "openai:gpt-test" })
	e2.newCanvas("g")
	sess = e2.run(client.AgentRunRequest{RoomID: "g", Message: "x"})
	if e2.snapshot("g").HeadRev != 0 || sess.Stats.ActionsDropped != 3 || sess.Stats.ActionsParsed != 3 {
		t.Fatalf("invalid actions: %+v", sess.Stats)
	}
}

func TestAgentCancelStopsApplying(t *testing.T) {
	var acts []string
	for i := 0; i < 200; i++ {
		acts = append(acts, fmt.Sprintf(`{"name":"create_shape","params":{"type":"note","x":%d,"y":0,"props":{"text":"n%d"}}}`, i*10, i))
	}
	// The model streams the first notes, then holds the rest until the gate
	// opens (after the cancel): a runner that kept reading would get them.
	gate := make(chan struct{})
	model := newFakeOpenAI(t, scriptedReply{chunks: chunked(actionsJSON(acts...), 40), gates: map[int]chan struct{}{60: gate}})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test" })
	e.newCanvas("k")
	id := e.start(client.AgentRunRequest{RoomID: "k", Message: "many notes"})
	waitUntil(t, 10*time.Second, "the first notes applied", func() bool { return e.snapshot("k").HeadRev >= 3 })
	if err := e.human.CancelAgent(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	head := e.snapshot("k").HeadRev
	close(gate)
	model.waitAborted(t, 1) // the cancel cut the model stream off
	sess := e.wait(id)      // and the session's work ended
	if after := e.snapshot("k").HeadRev; after != head {
		t.Fatalf("applied after cancel: head %d → %d", head, after)
	}
	if sess.State != client.AgentCanceled {
		t.Fatalf("session %s", sess.State)
	}
	// Canceling again is harmless; an unknown session is 404.
	if err := e.human.CancelAgent(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := e.human.CancelAgent(context.Background(), "as_nope"); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
}

func TestAgentFollowUpChainTodosAndRestart(t *testing.T) {
	step := func(i int) scriptedReply {
		return scriptedReply{chunks: chunked(actionsJSON(
			fmt.Sprintf(`{"name":"create_shape","params":{"type":"note","x":%d,"y":0,"props":{"text":"step %d"}}}`, i*220, i),
			fmt.Sprintf(`{"name":"todo","params":{"text":"todo %d"}}`, i),
			fmt.Sprintf(`{"name":"add_detail","params":{"hint":"detail %d"}}`, i)), 17)}
	}
	model := newFakeOpenAI(t, step(0), step(1), step(2), step(3), step(4))
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test"; c.MaxFollowups = 3; c.LowActionThreshold = 0 })
	e.newCanvas("f")
	sess := e.run(client.AgentRunRequest{RoomID: "f", Message: "plan a launch"})
	reqs := model.requests()
	if len(reqs) != 4 || sess.Stats.Turns != 4 || sess.Stats.FollowUps != 3 {
		t.Fatalf("%d model calls, stats %+v", len(reqs), sess.Stats)
	}
	for i := 1; i < 4; i++ {
		p, _ := reqs[i].last()
		if !strings.Contains(p, fmt.Sprintf("detail %d", i-1)) || !strings.Contains(p, "step 0") {
			t.Fatalf("follow-up %d prompt: %.200s", i, p)
		}
		// Stricter sampling: temperature 0 is on the wire (go-openai alone would drop it).
		if tp := reqs[i].Temperature; tp == nil || *tp != 0 {
			t.Fatalf("follow-up %d temperature %v, want 0", i, tp)
		}
	}
	if reqs[0].Temperature != nil {
		t.Fatalf("first turn temperature %v, want none (the provider's default)", *reqs[0].Temperature)
	}
	if n := len(e.snapshot("f").State.Nodes); n != 4 {
		t.Fatalf("%d nodes", n)
	}
	if len(sess.Todos) != 4 || sess.Todos[3].Text != "todo 3" || sess.Todos[3].Position != 3 || sess.Todos[0].Status != "open" {
		t.Fatalf("todos %+v", sess.Todos)
	}

	// A new runner over the same database (a restart) still serves the session.
	store2, err := sqlitestore.Open(context.Background(), e.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer store2.Close()
	got, err := store2.GetAgentSession(context.Background(), sess.ID)
	if err != nil || got.State != client.AgentDone || len(got.Todos) != 4 || len(got.Transcript) != len(sess.Transcript) || got.Stats != sess.Stats {
		t.Fatalf("after restart: %+v %v", got, err)
	}
}

func TestAgentEndpointsAuthAndValidation(t *testing.T) {
	e := newAgentEnv(t, nil, nil)
	e.newCanvas("a")
	e.newCanvas("b")
	ctx := context.Background()
	viewerTok, err := e.admin.CreateToken(ctx, canvas.TokenRequest{Role: canvas.RoleViewer, ActorType: canvas.ActorHuman, Canvases: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	viewer := e.human.WithToken(viewerTok.Token)
	if _, err := viewer.RunAgent(ctx, client.AgentRunRequest{RoomID: "a", Message: "x"}); !errors.Is(err, canvas.ErrForbidden) {
		t.Fatalf("viewer run: %v", err)
	}
	for _, bad := range []client.AgentRunRequest{{RoomID: "a"}, {Message: "x"}, {RoomID: "a", Message: "x", Model: "gpt-5"}} {
		if _, err := e.human.RunAgent(ctx, bad); !errors.Is(err, canvas.ErrInvalid) {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
	if _, err := e.human.RunAgent(ctx, client.AgentRunRequest{RoomID: "missing", Message: "x"}); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("missing canvas: %v", err)
	}
	sess := e.run(client.AgentRunRequest{RoomID: "b", Message: "hello there"})
	// A viewer scoped to canvas a cannot see a session of canvas b.
	if _, err := viewer.AgentSession(ctx, sess.ID); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("cross-canvas session read: %v", err)
	}
	// The generic fake reply is one note plus a low-action follow-up turn.
	if sess.Stats.Turns != 2 || sess.Stats.FollowUps != 1 || nodeByName(e.snapshot("b"), "hello there") == nil {
		t.Fatalf("stats %+v", sess.Stats)
	}
	// The event relay of standalone workers: humans may not publish, agents may.
	if err := e.human.PublishAgentEvent(ctx, client.AgentEvent{CanvasID: "a", Event: "agent:chat", Data: json.RawMessage(`{"x":1}`)}); !errors.Is(err, canvas.ErrForbidden) {
		t.Fatalf("human publish: %v", err)
	}
	agentTok, _ := e.admin.CreateToken(ctx, canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent})
	ac := e.human.WithToken(agentTok.Token)
	ev := e.watch("a")
	hev := agent.HTTPEvents{Client: ac}
	hev.PublishEvent("a", "agent:chat", agent.ChatEvent{Type: "agent:chat", SessionID: "s1", Message: agent.ChatMessage{Role: "assistant", Text: "hi\nthere"}})
	ev.until(t, func(x client.Event) bool {
		return x.Event == "agent:chat" && strings.Contains(string(x.Data), `hi\nthere`)
	})
	if err := ac.PublishAgentEvent(ctx, client.AgentEvent{CanvasID: "a", Event: "canvas_commit", Data: json.RawMessage(`{}`)}); !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("non-agent topic: %v", err)
	}
}

// BenchmarkAgentActionToCommit measures, with the fake model, the time from a
// complete action in the model stream to its commit (target p99 ≤ 20 ms).
func BenchmarkAgentActionToCommit(b *testing.B) {
	e := newAgentEnv(b, nil, func(c *agent.Config) { c.LowActionThreshold = 0 })
	var acts []string
	for i := 0; i < 50; i++ {
		acts = append(acts, fmt.Sprintf(`{"name":"create_shape","params":{"type":"geo","x":%d,"y":%d,"props":{"text":"b%d","color":"charcoal"}}}`, i%10*250, i/10*160, i))
	}
	reply := actionsJSON(acts...)
	p := agent.NewProviders(agent.DefaultConfig(), nil)
	p.SetFake(&agent.FakeProvider{ChunkSize: 64, Reply: func(agent.ModelRequest) string { return reply }})
	// Swap the runner for one whose fake model streams the benchmark reply.
	e.runner.Stop()
	tok, _ := e.admin.CreateToken(context.Background(), canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent})
	ac, _ := client.New(e.srv.URL, tok.Token)
	cfg := agent.DefaultConfig()
	cfg.LowActionThreshold = 0
	r, err := agent.NewRunner(agent.Deps{Config: cfg, Client: ac, Events: e.api.hub, Store: e.sessions, Providers: p, OnActionCommit: e.commitLat.add})
	if err != nil {
		b.Fatal(err)
	}
	r.Start(context.Background())
	defer r.Stop()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cid := fmt.Sprintf("bench-%d", i)
		e.newCanvas(cid)
		id, err := r.Run(context.Background(), client.AgentRunRequest{RoomID: cid, Message: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		waitRunner(b, r, id)
	}
	b.StopTimer()
	e.commitLat.mu.Lock()
	d := append([]time.Duration(nil), e.commitLat.d...)
	e.commitLat.mu.Unlock()
	if len(d) == 0 {
		b.Fatal("no commits measured")
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	q := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(len(d))/float64(b.N), "actions/op")
}

func TestAgentWatchdogAndModelFailure(t *testing.T) {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{`{"actions":[`, `]}`}, gates: map[int]chan struct{}{1: never}})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test"; c.Watchdog = 300 * time.Millisecond })
	e.newCanvas("w")
	start := time.Now()
	sess := e.run(client.AgentRunRequest{RoomID: "w", Message: "hang"})
	if sess.State != client.AgentError || !strings.Contains(sess.Detail, "watchdog") || time.Since(start) > 5*time.Second {
		t.Fatalf("session %s %q after %v", sess.State, sess.Detail, time.Since(start))
	}
	// A model endpoint that refuses (wrong key) ends the session in error, with the reason.
	e2 := newAgentEnv(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test"; c.OpenAIAPIKey = "sk-wrong" })
	e2.newCanvas("w")
	sess = e2.run(client.AgentRunRequest{RoomID: "w", Message: "x"})
	if sess.State != client.AgentError || !strings.Contains(sess.Detail, "401") {
		t.Fatalf("session %s %q", sess.State, sess.Detail)
	}
}

// TestAgentOpenAICutStream: an OpenAI-compatible stream that breaks off
// mid-reply (no finish_reason, no [DONE]; go-openai reports io.EOF as after
// [DONE]) ends the session in error with the reason in detail, as a cut
// Anthropic or Gemini stream does, instead of "done" with the rest of the
// reply silently lost.
func TestAgentOpenAICutStream(t *testing.T) {
	first := `{"actions":[{"name":"create_shape","params":{"type":"note","x":0,"y":0,"props":{"text":"one"}}},`
	full := first + `{"name":"create_shape","params":{"type":"note","x":400,"y":0,"props":{"text":"two"}}}]}`
	oai := providertest.NewOpenAI(t, "sk-test", func(providertest.OpenAIRequest) providertest.Reply {
		return providertest.Reply{Text: full, ChunkSize: len(first), Cut: true}
	})
	e := newAgentEnv(t, nil, func(c *agent.Config) {
		c.Model, c.OpenAIBaseURL, c.LowActionThreshold = "openai:gpt-test", oai.URL+"/v1", 0
	})
	e.newCanvas("cut")
	sess := e.run(client.AgentRunRequest{RoomID: "cut", Message: "two notes"})
	if sess.State != client.AgentError || !strings.Contains(sess.Detail, "openai") || !strings.Contains(sess.Detail, "finish_reason") {
		t.Fatalf("a cut OpenAI stream ended the session %s (%q), want error naming openai and the missing finish_reason", sess.State, sess.Detail)
	}
	if n := len(oai.Requests()); n != 1 {
		t.Fatalf("%d model calls, want 1 (no follow-up after the failure)", n)
	}
	if nodeByName(e.snapshot("cut"), "two") != nil {
		t.Fatal("the action after the cut was applied")
	}
}

// TestAgentPlacementOffsetWithinOneReply: the shift placement gives a reply's
// creates (the first would cover a human's shape) is not applied again to a
// later turn's creates, which the model placed from the canvas as it is: a
// caption asked for left of the shifted hero, in free space, lands there.
func TestAgentPlacementOffsetWithinOneReply(t *testing.T) {
	var e *agentEnv
	var calls atomic.Int32
	oai := providertest.NewOpenAI(t, "sk-test", func(providertest.OpenAIRequest) providertest.Reply {
		switch calls.Add(1) {
		case 1:
			return providertest.Reply{Text: actionsJSON(
				`{"name":"create_shape","params":{"type":"note","x":100,"y":100,"w":200,"h":200,"props":{"text":"HERO"}}}`,
				`{"name":"add_detail","params":{"hint":"a caption beside the hero"}}`)}
		case 2:
			hero := nodeByName(e.snapshot("pl"), "HERO")
			return providertest.Reply{Text: actionsJSON(fmt.Sprintf(
				`{"name":"create_shape","params":{"type":"note","x":%g,"y":%g,"w":200,"h":200,"props":{"text":"CAPTION"}}}`, hero.X-260, hero.Y))}
		}
		return providertest.Reply{Text: actionsJSON()}
	})
	e = newAgentEnv(t, nil, func(c *agent.Config) {
		c.Model, c.OpenAIBaseURL, c.LowActionThreshold = "openai:gpt-test", oai.URL+"/v1", 0
	})
	e.newCanvas("pl")
	base := int64(0)
	if _, err := e.human.Command(context.Background(), "pl", canvas.Envelope{Type: "create_shape", BaseRev: &base,
		Args: json.RawMessage(`{"id":"shape:wall","type":"geo","x":0,"y":-5000,"w":1000,"h":10000,"props":{"geo":"rectangle"}}`)}); err != nil {
		t.Fatal(err)
	}
	sess := e.run(client.AgentRunRequest{RoomID: "pl", Message: "a hero with a caption", Viewport: &client.Box{X: 0, Y: 0, W: 1000, H: 1000}})
	snap := e.snapshot("pl")
	hero, capt := nodeByName(snap, "HERO"), nodeByName(snap, "CAPTION")
	if sess.State != client.AgentDone || hero == nil || capt == nil {
		t.Fatalf("session %s %q: hero %v, caption %v", sess.State, sess.Detail, hero, capt)
	}
	if hero.X+hero.W > 0 && hero.X < 1000 {
		t.Fatalf("the hero at (%g,%g) covers the wall", hero.X, hero.Y)
	}
	if capt.X != hero.X-260 || capt.Y != hero.Y {
		t.Fatalf("the caption, asked for in free space at (%g,%g), was placed at (%g,%g)", hero.X-260, hero.Y, capt.X, capt.Y)
	}
}

func TestAgentStandaloneWorker(t *testing.T) {
	e := newAgentEnvMode(t, nil, nil, true)
	e.newCanvas("p")
	ev := e.watch("p")
	sess := e.run(client.AgentRunRequest{RoomID: "p", Message: "Draft a brutalist poster concept"})
	if sess.State != client.AgentDone || sess.ActorID != e.agentActor || sess.Stats.ActionsApplied != 6 {
		t.Fatalf("session %s actor %s stats %+v", sess.State, sess.ActorID, sess.Stats)
	}
	if n := len(e.snapshot("p").State.Nodes); n != 6 {
		t.Fatalf("%d nodes", n)
	}
	// The worker's events reached the canvas stream through the relay.
	ev.until(t, func(x client.Event) bool {
		return x.Event == client.EventAgentAction && strings.Contains(string(x.Data), sess.ID)
	})
	ev.until(t, func(x client.Event) bool {
		return x.Event == client.EventAgentStatus && strings.Contains(string(x.Data), `"state":"done"`)
	})

	// Cancel through the server: the worker stops applying.
	var acts []string
	for i := 0; i < 300; i++ {
		acts = append(acts, fmt.Sprintf(`{"name":"create_shape","params":{"type":"note","x":%d,"y":900,"props":{"text":"m%d"}}}`, i*10, i))
	}
	gate := make(chan struct{}) // holds the rest of the model stream until after the cancel
	model := newFakeOpenAI(t, scriptedReply{chunks: chunked(actionsJSON(acts...), 40), gates: map[int]chan struct{}{60: gate}})
	e2 := newAgentEnvMode(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test" }, true)
	e2.newCanvas("q")
	id := e2.start(client.AgentRunRequest{RoomID: "q", Message: "many"})
	if s, _ := e2.human.AgentSession(context.Background(), id); s.State != client.AgentScheduled && s.State != client.AgentWaitingContext &&
		s.State != client.AgentCallingModel && s.State != client.AgentStreaming {
		t.Fatalf("fresh session state %q", s.State)
	}
	waitUntil(t, 10*time.Second, "the worker's first notes applied", func() bool { return e2.snapshot("q").HeadRev >= 3 })
	if err := e2.human.CancelAgent(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	// Once the worker has noticed, the rest of the stream may come: the worker
	// has cut it off (before, the rest could arrive whole while the worker
	// had not yet polled the cancel).
	if s := e2.wait(id); s.State != client.AgentCanceled {
		t.Fatalf("state %q", s.State)
	}
	head := e2.snapshot("q").HeadRev
	close(gate)
	model.waitAborted(t, 1)
	if after := e2.snapshot("q").HeadRev; after != head {
		t.Fatalf("worker applied after cancel: head %d → %d", head, after)
	}
}

// TestAgentQueueCancelWaitsForTheWorker: with agents in workers, Cancel
// answers only once the worker running the session has stopped and saved
// it, so nothing is committed after the answer: here the worker's second
// command is in flight (held by its transport) when the cancel arrives, and
// the worker polls for cancels only every 1.5 s while the model keeps
// sending actions.
func TestAgentQueueCancelWaitsForTheWorker(t *testing.T) {
	var acts []string
	for i := 0; i < 400; i++ {
		acts = append(acts, fmt.Sprintf(`{"name":"create_shape","params":{"type":"note","x":%d,"y":0,"props":{"text":"n%d"}}}`, i*10, i))
	}
	model := newFakeOpenAI(t, scriptedReply{chunks: chunked(actionsJSON(acts...), 40), delay: 10 * time.Millisecond})
	e := newAgentEnvFull(t, model, func(c *agent.Config) { c.Model = "openai:gpt-test" }, true, false) // the server queues
	e.newCanvas("wc")
	id := e.start(client.AgentRunRequest{RoomID: "wc", Message: "many notes"})

	// The worker: a runner working the queue with its own client.
	hold := &holdSecondCommand{held: make(chan struct{}), release: make(chan struct{}), lateSend: make(chan struct{}), sentLate: make(chan struct{})}
	tok, _ := e.admin.CreateToken(context.Background(), canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent})
	ac, _ := client.New(e.srv.URL, tok.Token, client.WithHTTPClient(&http.Client{Transport: hold}))
	cfg := agent.DefaultConfig()
	cfg.Model, cfg.OpenAIAPIKey, cfg.OpenAIBaseURL, cfg.LowActionThreshold = "openai:gpt-test", "sk-test", model.srv.URL+"/v1", 0
	r, err := agent.NewRunner(agent.Deps{Config: cfg, Client: ac, ActorID: tok.ActorID, Events: agent.HTTPEvents{Client: ac}, Store: e.sessions})
	if err != nil {
		t.Fatal(err)
	}
	const poll = 1500 * time.Millisecond
	ctx, stop := context.WithCancel(context.Background())
	r.Start(ctx)
	worked := make(chan struct{})
	go func() { defer close(worked); r.Work(ctx, agent.WorkerOptions{Poll: poll}) }()
	defer func() {
		stop()
		<-worked
		r.Stop()
	}()
	select {
	case <-hold.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker's second command was never sent")
	}

	type answer struct {
		err  error
		head int64
	}
	canceled := make(chan answer, 1)
	go func() {
		err := e.human.CancelAgent(context.Background(), id)
		canceled <- answer{err, e.snapshot("wc").HeadRev}
	}()
	var got answer
	select {
	case got = <-canceled: // answered while the command is still in flight: it lands after
		close(hold.release)
	case <-time.After(300 * time.Millisecond):
		close(hold.release)
		got = <-canceled
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	time.Sleep(2 * poll)
	snap := e.snapshot("wc")
	if snap.HeadRev != got.head {
		t.Fatalf("the worker committed after Cancel returned: head %d → %d", got.head, snap.HeadRev)
	}
	s, err := e.human.AgentSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	// The worker's final save landed over the cancel, with its stats.
	if s.State != client.AgentCanceled || s.Stats.ActionsApplied != len(snap.State.Nodes) || len(snap.State.Nodes) >= len(acts) {
		t.Fatalf("session %s %q, %d actions applied, %d nodes", s.State, s.Detail, s.Stats.ActionsApplied, len(snap.State.Nodes))
	}
}

// holdSecondCommand passes commands through, except that it holds the second
// one until release. When the request's context ends while it is held, the
// command still reaches the server, but only once lateSend is closed (as a
// request already on the wire would), and sentLate is closed after.
type holdSecondCommand struct {
	n                  atomic.Int32
	held, release      chan struct{}
	lateSend, sentLate chan struct{}
	late               atomic.Bool
}

func (h *holdSecondCommand) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/command") || h.n.Add(1) != 2 {
		return http.DefaultTransport.RoundTrip(req)
	}
	close(h.held)
	select {
	case <-h.release:
	case <-req.Context().Done():
	}
	if err := req.Context().Err(); err != nil {
		h.late.Store(true)
		go func() {
			defer close(h.sentLate)
			<-h.lateSend
			if resp, err := http.DefaultTransport.RoundTrip(req.Clone(context.Background())); err == nil {
				resp.Body.Close()
			}
		}()
		return nil, err
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestAgentCancelWaitsForTheCommandInFlight: Cancel returns only once the
// command the session had in flight got its answer, so nothing is applied
// after Cancel returns (a command abandoned at the client could still commit
// on the server afterwards).
func TestAgentCancelWaitsForTheCommandInFlight(t *testing.T) {
	gate := make(chan struct{}) // never opened: the model stream stays open
	reply := actionsJSON(`{"name":"create_shape","params":{"type":"note","x":0,"y":0,"props":{"text":"one"}}}`,
		`{"name":"create_shape","params":{"type":"note","x":300,"y":0,"props":{"text":"two"}}}`,
		`{"name":"create_shape","params":{"type":"note","x":600,"y":0,"props":{"text":"three"}}}`)
	split := strings.Index(reply, `{"name":"create_shape","params":{"type":"note","x":600`)
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{reply[:split], reply[split:]}, gates: map[int]chan struct{}{1: gate}})
	e := newAgentEnv(t, model, nil)
	e.runner.Stop()
	hold := &holdSecondCommand{held: make(chan struct{}), release: make(chan struct{}), lateSend: make(chan struct{}), sentLate: make(chan struct{})}
	tok, _ := e.admin.CreateToken(context.Background(), canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent})
	ac, _ := client.New(e.srv.URL, tok.Token, client.WithHTTPClient(&http.Client{Transport: hold}))
	cfg := agent.DefaultConfig()
	cfg.Model, cfg.OpenAIAPIKey, cfg.OpenAIBaseURL, cfg.LowActionThreshold = "openai:gpt-test", "sk-test", model.srv.URL+"/v1", 0
	r, err := agent.NewRunner(agent.Deps{Config: cfg, Client: ac, Events: e.hub, Store: e.sessions})
	if err != nil {
		t.Fatal(err)
	}
	r.Start(context.Background())
	defer r.Stop()
	e.newCanvas("h")
	id, err := r.Run(context.Background(), client.AgentRunRequest{RoomID: "h", Message: "notes"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-hold.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the second command was never sent")
	}
	canceled := make(chan error, 1)
	go func() { canceled <- r.Cancel(context.Background(), id) }()
	model.waitAborted(t, 1) // the session's context has ended
	close(hold.release)
	if err := <-canceled; err != nil {
		t.Fatal(err)
	}
	head := e.snapshot("h").HeadRev
	close(hold.lateSend)
	if hold.late.Load() {
		<-hold.sentLate
	}
	if after := e.snapshot("h").HeadRev; after != head || head != 2 {
		t.Fatalf("head %d when Cancel returned, %d after the command in flight landed; want 2 both times", head, after)
	}
}

func TestAgentScreenshotReachesVisionModel(t *testing.T) {
	model := newFakeOpenAI(t,
		scriptedReply{chunks: []string{actionsJSON(`{"name":"think","params":{"text":"seen"}}`)}},
		scriptedReply{chunks: []string{actionsJSON(`{"name":"think","params":{"text":"blind"}}`)}})
	e := newAgentEnv(t, model, nil)
	broker := host.NewBroker(CanvasInvokeDeliverer(e.hub))
	r := visionRunner(t, e, model, http.DefaultTransport, AgentScreenshotter{Hub: e.hub, Broker: broker}, nil)
	e.newCanvas("v")

	// A browser on the canvas stream, elected host, answers screenshot invokes.
	answered := make(chan agent.ScreenshotRequest, 4)
	stopHost := hostAnswersScreenshots(t, e, broker, "v", func(req agent.ScreenshotRequest) { answered <- req })
	id, err := r.Run(context.Background(), client.AgentRunRequest{RoomID: "v", Message: "look", Viewport: &client.Box{X: 1, Y: 2, W: 300, H: 200}})
	if err != nil {
		t.Fatal(err)
	}
	waitRunner(t, r, id)
	var req agent.ScreenshotRequest
	select {
	case req = <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("no screenshot request answered")
	}
	if req.Type != "agent:screenshot_request" || req.SessionID != id || req.Bounds.W != 300 {
		t.Fatalf("screenshot request %+v", req)
	}
	if _, img := model.requests()[0].last(); img != "data:image/png;base64,iVBORw0KGgo=" {
		t.Fatalf("the model got no image part: %q", img)
	}
	if sess, _ := r.Session(context.Background(), id); sess.Stats.ScreenshotSource != agent.ShotFromBrowser {
		t.Errorf("the browser's screenshot is recorded as from %q", sess.Stats.ScreenshotSource)
	}
	// Without a browser the server draws the viewport: the model gets a PNG
	// of what the canvas holds there (a red shape fills its middle).
	stopHost()
	waitUntil(t, 10*time.Second, "the closed stream left the hub", func() bool { return e.hub.Subscribers("v") == 0 })
	e.humanCommand("v", "create_shape", e.snapshot("v").HeadRev, `{"id":"red","type":"geo","x":1000,"y":1000,"w":400,"h":300,"props":{"fill":"solid","fillColor":"#ff0000","color":"#ff0000"}}`)
	start := time.Now()
	id, _ = r.Run(context.Background(), client.AgentRunRequest{RoomID: "v", Message: "look again", Viewport: &client.Box{X: 900, Y: 900, W: 600, H: 500}})
	waitRunner(t, r, id)
	sess, _ := r.Session(context.Background(), id)
	_, img := model.requests()[1].last()
	if sess.Stats.ScreenshotsDrawn != 1 || sess.Stats.ScreenshotSource != agent.ShotFromServer || sess.Stats.ScreenshotMissed != 0 || sess.State != client.AgentDone || time.Since(start) > 5*time.Second {
		t.Fatalf("a run without a browser: stats %+v in %v", sess.Stats, time.Since(start))
	}
	b64, ok := strings.CutPrefix(img, "data:image/png;base64,")
	if !ok {
		t.Fatalf("the model got no PNG without a browser: %.60q", img)
	}
	raw, _ := base64.StdEncoding.DecodeString(b64)
	pic, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the image is no PNG: %v", err)
	}
	bb := pic.Bounds()
	if bb.Dx() != 600 || bb.Dy() != 500 {
		t.Errorf("the drawn viewport is %v, want 600×500 (the viewport at 1×)", bb)
	}
	if c := color.NRGBAModel.Convert(pic.At(bb.Dx()/2, bb.Dy()/2)).(color.NRGBA); c != (color.NRGBA{255, 0, 0, 255}) {
		t.Errorf("the middle of the drawn viewport is %v, want the red shape", c)
	}
}

func TestAgentRunWorkerProcess(t *testing.T) {
	e := newAgentEnvFull(t, nil, nil, true, false) // the server queues; RunWorker is the worker
	e.newCanvas("rw")
	tok, err := e.admin.CreateToken(context.Background(), canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- agent.RunWorker(ctx, agent.WorkerSettings{ServerURL: e.srv.URL, Token: tok.Token, ActorID: tok.ActorID,
			Store: e.sessions, Config: agent.DefaultConfig(), Options: agent.WorkerOptions{Poll: 20 * time.Millisecond}})
	}()
	sess := e.run(client.AgentRunRequest{RoomID: "rw", Message: "Draft a brutalist poster concept"})
	if sess.State != client.AgentDone || sess.ActorID != tok.ActorID || len(e.snapshot("rw").State.Nodes) != 6 {
		t.Fatalf("session %s by %s", sess.State, sess.ActorID)
	}
	for _, n := range e.snapshot("rw").State.Nodes {
		if n.CreatedBy != tok.ActorID {
			t.Fatalf("node by %s", n.CreatedBy)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := agent.RunWorker(context.Background(), agent.WorkerSettings{ServerURL: e.srv.URL}); !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("no token: %v", err)
	}
}

// counterValue reads one labelled counter from a registry.
func counterValue(t testing.TB, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" { // an unlabelled counter
				return m.GetCounter().GetValue()
			}
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
