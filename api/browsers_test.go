package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/hub"
)

// browserPath is a canvas stream declaring a browser.
func browserPath(canvasID, clientID, caps string) string {
	q := url.Values{"client_id": {clientID}}
	if caps != "" {
		q.Set("capabilities", caps)
	}
	return "/sse/canvas/" + canvasID + "?" + q.Encode()
}

// untilEvent reads s until an event named name, skipping others.
func untilEvent(t testing.TB, s *sseStream, name string) sseMsg {
	t.Helper()
	for {
		if m := s.next(); m.Event == name {
			return m
		}
	}
}

// hostOf reads s until an agent:host event and returns its host.
func hostOf(t testing.TB, s *sseStream) string {
	t.Helper()
	return untilEvent(t, s, canvas.EventAgentHost).json(t)["host_client_id"].(string)
}

func TestHostElection(t *testing.T) {
	e := newTestEnv(t)
	e.canvas("h")
	a := e.stream(browserPath("h", "a", "screenshot,viewport"), testAdmin, nil)
	if got := hostOf(t, a); got != "a" {
		t.Fatalf("first candidate: host %q, want a", got)
	}
	b := e.stream(browserPath("h", "b", "screenshot"), testAdmin, nil)
	untilEvent(t, b, canvas.EventCaughtUp)
	if got := hostOf(t, b); got != "a" {
		t.Fatalf("second candidate is told host %q, want a", got)
	}
	plain := e.stream("/sse/canvas/h", testAdmin, nil) // curl: declares nothing
	untilEvent(t, plain, canvas.EventCaughtUp)
	v := e.stream(browserPath("h", "v", "viewport"), testAdmin, nil) // no screenshot: never host
	if got := hostOf(t, v); got != "a" {
		t.Fatalf("viewer is told host %q, want a", got)
	}
	if got := e.api.hub.Host("h"); got != "a" {
		t.Fatalf("hub host %q", got)
	}
	// The host leaves: the next candidate is elected and announced to every subscriber.
	start := time.Now()
	a.close()
	if got := hostOf(t, b); got != "b" {
		t.Fatalf("after a left: host %q, want b", got)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("re-election took %v, want < 1 s", took)
	}
	if got := hostOf(t, plain); got != "b" {
		t.Fatalf("plain subscriber told %q", got)
	}
	b.close()
	for got := hostOf(t, v); got != ""; got = hostOf(t, v) { // v saw b elected first
		if got != "b" {
			t.Fatalf("no candidate left, host %q", got)
		}
	}
	// Declarations are validated.
	for _, path := range []string{"/sse/canvas/h?client_id=bad%20id", "/sse/canvas/h?capabilities=screenshot",
		"/sse/canvas/h?client_id=" + strings.Repeat("x", 65)} {
		if r := e.do("GET", path, testAdmin, nil); r.Status != 400 {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
	}
}

func TestScreenshotInvokeGoesToTheHostOnly(t *testing.T) {
	e := newTestEnv(t)
	e.canvas("s")
	h := e.stream(browserPath("s", "h", "screenshot"), testAdmin, nil)
	hostOf(t, h)
	other := e.stream(browserPath("s", "o", "screenshot"), testAdmin, nil)
	hostOf(t, other)
	plain := e.stream("/sse/canvas/s", testAdmin, nil)
	untilEvent(t, plain, canvas.EventCaughtUp)

	type result struct {
		r    response
		took time.Duration
	}
	invoke := func(canvasID string, timeoutMS int) chan result {
		ch := make(chan result, 1)
		go func() {
			start := time.Now()
			r := e.do("POST", "/api/invoke", testAdmin, map[string]any{"canvas_id": canvasID, "action": canvas.InvokeAgentScreenshot,
				"payload": map[string]any{"sessionId": "as_x", "requestId": "r1"}, "timeout_ms": timeoutMS})
			ch <- result{r, time.Since(start)}
		}()
		return ch
	}
	done := invoke("s", 10000)
	inv := untilEvent(t, h, host.EventInvoke).json(t)
	e.must(200, "POST", "/api/invoke/"+inv["invoke_id"].(string), testAdmin,
		map[string]any{"ok": true, "result": map[string]any{"dataUrl": "data:image/png;base64,iVBORw0KGgo="}})
	if res := <-done; res.r.Status != 200 || !strings.Contains(string(res.r.Body), "iVBORw0KGgo") {
		t.Fatalf("invoke: %d %s", res.r.Status, res.r.Body)
	}
	// The others never saw it: they reach a marker published after it without an invoke.
	e.api.hub.PublishEvent("s", canvas.EventGesture, map[string]string{"marker": "after"})
	for name, s := range map[string]*sseStream{"other browser": other, "plain subscriber": plain} {
		for m := s.next(); m.Event != canvas.EventGesture; m = s.next() {
			if m.Event == host.EventInvoke {
				t.Fatalf("the %s got the host's screenshot invoke", name)
			}
		}
	}

	// The host leaves while an invoke waits: 503 at once, not the timeout.
	done = invoke("s", 10000)
	untilEvent(t, h, host.EventInvoke)
	h.close()
	res := <-done
	if res.r.Status != 503 || !strings.Contains(string(res.r.Body), "host browser left") || res.took > 3*time.Second {
		t.Fatalf("host lost: %d %s after %v", res.r.Status, res.r.Body, res.took)
	}
	// No host at all: 503 at once.
	e.canvas("empty")
	e.stream("/sse/canvas/empty", testAdmin, nil)
	res = <-invoke("empty", 10000)
	if res.r.Status != 503 || !strings.Contains(string(res.r.Body), `"type":"`+problemBase+`no-host"`) || res.took > 2*time.Second {
		t.Fatalf("no host: %d %s after %v", res.r.Status, res.r.Body, res.took)
	}
}

// ackingBrowser follows a canvas as a declared browser and acks the
// complete agent:action envelopes it receives when ack returns true.
type ackingBrowser struct {
	mu        sync.Mutex
	envelopes []agent.ActionEnvelope
	cancel    context.CancelFunc
	done      chan struct{}
}

func newAckingBrowser(t testing.TB, e *agentEnv, canvasID, clientID string, caps []string, ack func(agent.ActionEnvelope) bool) *ackingBrowser {
	return newAckingBrowserAs(t, e, e.human, canvasID, clientID, caps, ack)
}

// newAckingBrowserAs is newAckingBrowser with the token of c (its stream and acks).
func newAckingBrowserAs(t testing.TB, e *agentEnv, c *client.Client, canvasID, clientID string, caps []string, ack func(agent.ActionEnvelope) bool) *ackingBrowser {
	ctx, cancel := context.WithCancel(context.Background())
	b := &ackingBrowser{cancel: cancel, done: make(chan struct{})}
	st := c.Stream(ctx, canvasID, client.StreamOptions{ClientID: clientID, Capabilities: caps})
	ready := make(chan struct{})
	go func() {
		defer close(b.done)
		for {
			ev, err := st.Recv()
			if err != nil {
				return
			}
			switch ev.Event {
			case client.EventCaughtUp:
				close(ready)
			case client.EventAgentAction:
				var env agent.ActionEnvelope
				if json.Unmarshal(ev.Data, &env) != nil || env.Partial {
					continue
				}
				b.mu.Lock()
				b.envelopes = append(b.envelopes, env)
				b.mu.Unlock()
				if ack(env) {
					body := canvas.AgentAck{SessionID: env.SessionID, Seq: env.Seq, ClientID: clientID, AppliedAt: time.Now().UnixMilli()}
					// A browser closing (its stream gone) may be refused its last ack.
					if err := c.AckEnvelope(context.Background(), body); err != nil && ctx.Err() == nil {
						t.Errorf("ack: %v", err)
					}
				}
			}
		}
	}()
	<-ready
	t.Cleanup(func() { cancel(); st.Close(); <-b.done })
	return b
}

func (b *ackingBrowser) got() []agent.ActionEnvelope {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]agent.ActionEnvelope(nil), b.envelopes...)
}

func TestAgentEnvelopesAckedByTheHostResentOtherwise(t *testing.T) {
	reply := actionsJSON(`{"name":"create_shape","params":{"type":"note","x":0,"y":0,"props":{"text":"one"}}}`,
		`{"name":"set_viewport","params":{"x":10,"y":20,"w":300,"h":200}}`,
		`{"name":"create_shape","params":{"type":"note","x":400,"y":0,"props":{"text":"two"}}}`)
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{reply}}, scriptedReply{chunks: []string{reply}})
	e := newAgentEnv(t, model, func(c *agent.Config) {
		c.Model, c.LowActionThreshold = "openai:gpt-test", 0
		c.AckTimeout, c.AckRetries = 300*time.Millisecond, 2
	})
	e.newCanvas("k")
	ev := e.watch("k")

	// The host never acks; a second browser (not a candidate) acks everything.
	host := newAckingBrowser(t, e, "k", "host", []string{hub.CapScreenshot, hub.CapViewport}, func(agent.ActionEnvelope) bool { return false })
	peer := newAckingBrowser(t, e, "k", "peer", []string{hub.CapViewport}, func(agent.ActionEnvelope) bool { return true })
	sess := e.run(client.AgentRunRequest{RoomID: "k", Message: "two notes"})
	st := sess.Stats
	// Envelopes: the notes (to everyone) and set_viewport (to the host only).
	for _, env := range peer.got() {
		for _, a := range env.Actions {
			if a.Name == "set_viewport" {
				t.Fatalf("a browser that is not the host got set_viewport: %+v", env)
			}
		}
	}
	var seqs = map[int64]int{}
	sawViewport := false
	for _, env := range host.got() {
		seqs[env.Seq]++
		for _, a := range env.Actions {
			sawViewport = sawViewport || a.Name == "set_viewport"
		}
	}
	tracked := len(seqs)
	if !sawViewport || tracked < 2 {
		t.Fatalf("host envelopes %+v", host.got())
	}
	for seq, n := range seqs {
		if n != 3 { // sent once, resent AckRetries times
			t.Fatalf("host got seq %d %d times, want 3", seq, n)
		}
	}
	if st.Acks != len(peer.got()) || st.Resends != 2*tracked || st.AcksMissed != tracked {
		t.Fatalf("stats %+v: peer acked %d, tracked %d", st, len(peer.got()), tracked)
	}
	ev.until(t, func(x client.Event) bool {
		return x.Event == client.EventAgentStatus && strings.Contains(string(x.Data), `"ack_missed"`)
	})

	// A host that acks: nothing resent or missed, and its apply jitter is measured.
	host.cancel()
	<-host.done
	newAckingBrowser(t, e, "k", "host2", []string{hub.CapScreenshot}, func(agent.ActionEnvelope) bool { return true })
	waitUntil(t, 5*time.Second, "host2 elected", func() bool { return e.hub.Host("k") == "host2" })
	sess = e.run(client.AgentRunRequest{RoomID: "k", Message: "again"})
	if st := sess.Stats; st.Resends != 0 || st.AcksMissed != 0 || st.Acks < 2 {
		t.Fatalf("acking host: stats %+v", st)
	}
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range families {
		seen[f.GetName()] = true
	}
	for _, name := range []string{"canvas_agent_apply_jitter_seconds", "canvas_agent_ack_seconds", "canvas_agent_envelope_resends_total", "canvas_agent_acks_missed_total"} {
		if !seen[name] {
			t.Fatalf("metric %s missing", name)
		}
	}
}

// A message posted while a session's end awaits the host's acks is the
// session's next turn: the session neither ends nor makes the message wait
// for its end.
func TestMessageDuringAckWaitIsTheNextTurn(t *testing.T) {
	reply := actionsJSON(`{"name":"create_shape","params":{"type":"note","x":0,"y":0,"props":{"text":"one"}}}`)
	again := actionsJSON(`{"name":"create_shape","params":{"type":"note","x":400,"y":0,"props":{"text":"two"}}}`)
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{reply}}, scriptedReply{chunks: []string{again}})
	e := newAgentEnv(t, model, func(c *agent.Config) {
		c.Model, c.LowActionThreshold = "openai:gpt-test", 0
		c.AckTimeout, c.AckRetries = 3*time.Second, 1
	})
	e.newCanvas("q")
	var acking atomic.Bool // the host acks only once the message is posted
	newAckingBrowser(t, e, "q", "host", []string{hub.CapScreenshot}, func(agent.ActionEnvelope) bool { return acking.Load() })
	id := e.start(client.AgentRunRequest{RoomID: "q", Message: "one note"})
	done := e.runner.Done(id)
	waitUntil(t, 10*time.Second, "the first note", func() bool { return nodeByName(e.snapshot("q"), "one") != nil })
	time.Sleep(200 * time.Millisecond) // the turn has ended; its envelope awaits an ack for 3 s more
	principal := canvas.Principal{Actor: canvas.Actor{ID: e.humanActor, Type: canvas.ActorHuman}, Role: canvas.RoleEditor}
	posted := time.Now()
	if err := e.runner.PostMessage(context.Background(), id, agent.UserMessage{Principal: principal, Prompt: "another"}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(posted); took > time.Second {
		t.Fatalf("posting took %v: it waited for the session to end", took)
	}
	acking.Store(true)
	if e.runner.Done(id) != done {
		t.Fatal("the session ended and was reopened instead of taking the message")
	}
	sess := e.wait(id)
	if sess.State != client.AgentDone || sess.Stats.Turns != 2 || sess.Stats.AcksMissed != 0 {
		t.Fatalf("session %s %s, stats %+v", sess.State, sess.Detail, sess.Stats)
	}
	if n := nodeByName(e.snapshot("q"), "two"); n == nil {
		t.Fatal("the message's turn made no note")
	}
}

func TestAgentTurnUsesTheLatestView(t *testing.T) {
	gate := make(chan struct{})
	first := actionsJSON(`{"name":"add_detail","params":{"hint":"more"}}`)
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{first[:10], first[10:]}, gates: map[int]chan struct{}{1: gate}},
		scriptedReply{chunks: []string{actionsJSON(`{"name":"think","params":{"text":"ok"}}`)}})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model, c.LowActionThreshold = "openai:gpt-test", 0 })
	e.newCanvas("w")
	newAckingBrowser(t, e, "w", "b1", []string{hub.CapViewport}, func(agent.ActionEnvelope) bool { return false }) // the views' browser
	id := e.start(client.AgentRunRequest{RoomID: "w", Message: "look around", Viewport: &client.Box{X: 0, Y: 0, W: 100, H: 100}})
	waitUntil(t, 5*time.Second, "the first model call", func() bool { return len(model.requests()) == 1 })
	for i, vp := range []client.Box{{X: 1, Y: 1, W: 50, H: 50}, {X: 777, Y: 888, W: 640, H: 480}} {
		if err := e.human.PublishView(context.Background(), canvas.AgentView{SessionID: id, ClientID: "b1", Viewport: &vp, Selection: []string{fmt.Sprint("s", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	close(gate)
	sess := e.wait(id)
	reqs := model.requests()
	if sess.State != client.AgentDone || len(reqs) != 2 {
		t.Fatalf("state %s, %d model calls", sess.State, len(reqs))
	}
	if text, _ := reqs[1].last(); !strings.Contains(text, `"viewport":{"x":777,"y":888,"w":640,"h":480}`) {
		t.Fatalf("the follow-up turn did not use the latest view: %s", text)
	}
	// A view for a session that ended is accepted and changes nothing; a bad one is a 400.
	if err := e.human.PublishView(context.Background(), canvas.AgentView{SessionID: id, ClientID: "b1"}); err != nil {
		t.Fatal(err)
	}
	if err := e.human.PublishView(context.Background(), canvas.AgentView{SessionID: id, ClientID: "no spaces"}); err == nil {
		t.Fatal("a bad client id was accepted")
	}
}

func TestHostElectionAcrossProcessesPG(t *testing.T) {
	url, schema := pgTestSchema(t)
	a := newPGTestEnv(t, url, schema)
	b := newPGTestEnv(t, url, schema)
	a.canvas("c")
	sa := a.stream(browserPath("c", "a1", "screenshot"), testAdmin, nil)
	if got := hostOf(t, sa); got != "a1" {
		t.Fatalf("host %q", got)
	}
	// The other process learns the candidate from the relay's presence.
	waitUntil(t, 5*time.Second, "process b sees a1 as host", func() bool { return b.api.hub.Host("c") == "a1" })
	sb := b.stream(browserPath("c", "b1", "screenshot"), testAdmin, nil)
	if got := hostOf(t, sb); got != "a1" {
		t.Fatalf("b1 is told host %q, want a1 (on the other process)", got)
	}
	waitSubscribers(t, a, "c", 2) // a counts b1 (the presence that carries it)
	if got := a.api.hub.Host("c"); got != "a1" {
		t.Fatalf("process a: host %q", got)
	}
	// A screenshot invoke posted to process b reaches a1 on process a only.
	done := make(chan response, 1)
	go func() {
		done <- b.do("POST", "/api/invoke", testAdmin, map[string]any{"canvas_id": "c", "action": canvas.InvokeAgentScreenshot, "timeout_ms": 10000})
	}()
	inv := untilEvent(t, sa, host.EventInvoke).json(t)
	a.must(200, "POST", "/api/invoke/"+inv["invoke_id"].(string), testAdmin, map[string]any{"ok": true, "result": map[string]any{"dataUrl": "data:image/png;base64,AA=="}})
	if r := <-done; r.Status != 200 {
		t.Fatalf("invoke through process b: %d %s", r.Status, r.Body)
	}
	// The host leaves: both processes elect b1 within a second.
	start := time.Now()
	sa.close()
	if got := hostOf(t, sb); got != "b1" {
		t.Fatalf("after a1 left: %q", got)
	}
	waitUntil(t, 5*time.Second, "process a elects b1", func() bool { return a.api.hub.Host("c") == "b1" })
	if took := time.Since(start); took > time.Second {
		t.Fatalf("re-election across processes took %v", took)
	}
}

func TestAgentScreenshotRetriedWhenTheHostLeaves(t *testing.T) {
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{actionsJSON(`{"name":"think","params":{"text":"seen"}}`)}})
	e := newAgentEnv(t, model, nil)
	e.runner.Stop()
	broker := host.NewBroker(CanvasInvokeDeliverer(e.hub))
	tok, _ := e.admin.CreateToken(context.Background(), canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent})
	ac, _ := client.New(e.srv.URL, tok.Token)
	cfg := agent.DefaultConfig()
	cfg.Model, cfg.OpenAIAPIKey, cfg.OpenAIBaseURL, cfg.LowActionThreshold = "openai:gpt-vision", "sk-test", model.srv.URL+"/v1", 0
	cfg.ScreenshotRetries, cfg.ScreenshotRetryDelay = 1, 20*time.Millisecond
	cfg.AckTimeout, cfg.AckRetries = 50*time.Millisecond, 0 // these browsers do not ack: do not wait for them
	r, err := agent.NewRunner(agent.Deps{Config: cfg, Client: ac, Events: e.hub, Store: e.sessions,
		Screenshots: AgentScreenshotter{Hub: e.hub, Broker: broker}})
	if err != nil {
		t.Fatal(err)
	}
	r.Start(context.Background())
	defer r.Stop()
	e.newCanvas("l")
	// h1 is elected, gets the request and leaves without answering; h2 answers.
	browser := func(id string, onInvoke func(inv host.InvokeRequest, st *client.Stream)) {
		ctx, cancel := context.WithCancel(context.Background())
		st := e.human.Stream(ctx, "l", client.StreamOptions{ClientID: id, Capabilities: []string{hub.CapScreenshot}})
		t.Cleanup(func() { cancel(); st.Close() })
		go func() {
			for {
				ev, err := st.Recv()
				if err != nil {
					return
				}
				if ev.Event == host.EventInvoke {
					var inv host.InvokeRequest
					_ = ev.Decode(&inv)
					onInvoke(inv, st)
				}
			}
		}()
	}
	browser("h1", func(_ host.InvokeRequest, st *client.Stream) { st.Close() })
	waitUntil(t, 5*time.Second, "h1 elected", func() bool { return e.hub.Host("l") == "h1" })
	browser("h2", func(inv host.InvokeRequest, _ *client.Stream) {
		res, _ := json.Marshal(agent.Screenshot{DataURL: "data:image/png;base64,aDI=", DocVersion: "0"})
		_, _ = broker.Answer(inv.InvokeID, host.Answer{OK: true, Result: res})
	})
	waitUntil(t, 5*time.Second, "h2 connected", func() bool { return e.hub.Subscribers("l") == 2 })
	start := time.Now()
	id, err := r.Run(context.Background(), client.AgentRunRequest{RoomID: "l", Message: "look"})
	if err != nil {
		t.Fatal(err)
	}
	waitRunner(t, r, id)
	sess, _ := r.Session(context.Background(), id)
	if _, img := model.requests()[0].last(); img != "data:image/png;base64,aDI=" || sess.Stats.ScreenshotMissed != 0 || sess.Stats.Screenshots != 1 {
		t.Fatalf("image %q, stats %+v", img, sess.Stats)
	}
	if took := time.Since(start); took > cfg.ScreenshotTimeout {
		t.Fatalf("the turn waited %v: the lost host was not noticed at once", took)
	}
}

// TestHostKeptWhenAViewerTabBecomesCandidate: a tab that joined first
// without the screenshot capability, then opens a stream with it (its first
// still open), does not take its first stream's place in the election: the
// host stays the candidate that joined before it, and its pending invoke is
// answered by it.
func TestHostKeptWhenAViewerTabBecomesCandidate(t *testing.T) {
	e := newTestEnv(t)
	e.canvas("x")
	v := e.stream(browserPath("x", "tab-x", "viewport"), testAdmin, nil) // joins first, not a candidate
	hostOf(t, v)
	time.Sleep(5 * time.Millisecond)
	a := e.stream(browserPath("x", "tab-a", "screenshot"), testAdmin, nil)
	if got := hostOf(t, a); got != "tab-a" {
		t.Fatalf("host %q, want tab-a", got)
	}
	done := make(chan response, 1)
	go func() {
		done <- e.do("POST", "/api/invoke", testAdmin, map[string]any{"canvas_id": "x", "action": canvas.InvokeAgentScreenshot, "timeout_ms": 10000})
	}()
	inv := untilEvent(t, a, host.EventInvoke).json(t)
	x2 := e.stream(browserPath("x", "tab-x", "screenshot"), testAdmin, nil) // tab-x's first stream still open
	hostOf(t, x2)
	if h := e.api.hub.Host("x"); h != "tab-a" {
		t.Fatalf("the host changed from tab-a to %q while tab-a's stream is open", h)
	}
	e.must(200, "POST", "/api/invoke/"+inv["invoke_id"].(string), testAdmin, map[string]any{"ok": true, "result": map[string]any{"dataUrl": "data:image/png;base64,AA=="}})
	if r := <-done; r.Status != 200 {
		t.Fatalf("the invoke on the host: %d %s", r.Status, r.Body)
	}
}

// streamStatus opens a stream and returns its status and, when it was
// refused, its body (an accepted stream is closed at once).
func streamStatus(t testing.TB, baseURL, path, token string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", baseURL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("stream %s refused with %d and content type %q", path, resp.StatusCode, ct)
	}
	return resp.StatusCode, string(b)
}

// wantProblem checks that err is a problem document of that status and type slug.
func wantProblem(t testing.TB, what string, err error, status int, slug string) {
	t.Helper()
	var pe *client.ProblemError
	if !errors.As(err, &pe) || pe.Status != status || pe.Type != problemBase+slug {
		t.Errorf("%s: %v, want a %d %s problem", what, err, status, slug)
	}
}

// TestBrowserInputSpeaksOnlyForItsOwnBrowser: an ack or a view speaks for a
// browser that the caller's token declared on the session's canvas stream.
// Another token's ack for the host, or an ack for a client id nobody
// declared, is a 403 problem and changes nothing (the host's envelope stays
// un-acked and counts as missed, the session's view stays); a stream
// declaring a client id that another token's open stream holds is refused
// with a 409 (it would take that browser's place in the election and its
// host-only events).
func TestBrowserInputSpeaksOnlyForItsOwnBrowser(t *testing.T) {
	reply := actionsJSON(`{"name":"create_shape","params":{"type":"note","x":0,"y":0,"props":{"text":"one"}}}`)
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{reply}})
	e := newAgentEnv(t, model, func(c *agent.Config) {
		c.Model, c.LowActionThreshold = "openai:gpt-test", 0
		c.AckTimeout, c.AckRetries = 2*time.Second, 0
	})
	e.newCanvas("o")
	ctx := context.Background()
	tok, err := e.admin.CreateToken(ctx, canvas.TokenRequest{Role: canvas.RoleViewer, ActorType: canvas.ActorHuman})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := client.New(e.srv.URL, tok.Token, client.WithHTTPClient(&http.Client{Transport: specTransport{t: t, spec: e.spec}}))

	// The host (the human's token) never acks; the other token's own browser acks what it gets.
	host := newAckingBrowser(t, e, "o", "h", []string{hub.CapScreenshot, hub.CapViewport}, func(agent.ActionEnvelope) bool { return false })
	mine := newAckingBrowserAs(t, e, other, "o", "m", []string{hub.CapViewport}, func(agent.ActionEnvelope) bool { return true })
	waitUntil(t, 5*time.Second, "h elected", func() bool { return e.hub.Host("o") == "h" })

	// The other token cannot declare the host's client id.
	if st, body := streamStatus(t, e.srv.URL, browserPath("o", "h", "screenshot"), tok.Token); st != http.StatusConflict {
		t.Errorf("another token declared the host's client id: %d %s", st, body)
	}
	if e.hub.Host("o") != "h" {
		t.Fatalf("host %q after the refused declaration", e.hub.Host("o"))
	}

	id := e.start(client.AgentRunRequest{RoomID: "o", Message: "a note", Viewport: &client.Box{X: 0, Y: 0, W: 100, H: 100}})
	waitUntil(t, 10*time.Second, "the host got the envelope", func() bool { return len(host.got()) == 1 })
	seq := host.got()[0].Seq
	waitUntil(t, 10*time.Second, "the other browser got it", func() bool { return len(mine.got()) == 1 })

	legit, forged := client.Box{X: 5, Y: 5, W: 50, H: 50}, client.Box{X: 666, Y: 666, W: 66, H: 66}
	if err := e.human.PublishView(ctx, canvas.AgentView{SessionID: id, ClientID: "h", Viewport: &legit}); err != nil {
		t.Fatalf("the host's own view: %v", err)
	}
	wantProblem(t, "a view for the host from another token", other.PublishView(ctx, canvas.AgentView{SessionID: id, ClientID: "h", Viewport: &forged}), 403, "forbidden")
	wantProblem(t, "a view for a client nobody declared", e.human.PublishView(ctx, canvas.AgentView{SessionID: id, ClientID: "ghost", Viewport: &forged}), 403, "forbidden")
	wantProblem(t, "an ack for a client nobody declared", e.human.AckEnvelope(ctx, canvas.AgentAck{SessionID: id, Seq: seq, ClientID: "ghost"}), 403, "forbidden")
	wantProblem(t, "an ack for the host from another token", other.AckEnvelope(ctx, canvas.AgentAck{SessionID: id, Seq: seq, ClientID: "h"}), 403, "forbidden")

	sess := e.wait(id)
	if st := sess.Stats; st.Acks != 1 || st.AcksMissed != 1 {
		t.Fatalf("stats %+v: want the other browser's own ack only, and the host's envelope missed", st)
	}
	if sess.Viewport == nil || *sess.Viewport != legit {
		t.Fatalf("session viewport %+v, want the host's %+v", sess.Viewport, legit)
	}
}

// TestBrowserInputOwnerAcrossProcessesPG: a browser declared on one process
// is known with its token on the others: an ack posted to another process
// by its token is taken, one by another token is a 403, and another token
// cannot declare its client id there (409).
func TestBrowserInputOwnerAcrossProcessesPG(t *testing.T) {
	url, schema := pgTestSchema(t)
	queue := func(c *Config) { c.Agent = agent.NewQueue(agent.DefaultConfig(), c.Store.(agent.SessionStore), c.Hub) }
	a := newPGTestEnv(t, url, schema, queue)
	b := newPGTestEnv(t, url, schema, queue)
	a.canvas("c")
	tokT, _ := a.token(canvas.RoleViewer, canvas.ActorHuman)
	tokU, _ := a.token(canvas.RoleViewer, canvas.ActorHuman)
	sid := a.must(202, "POST", "/api/canvas-agent/run", testAdmin, map[string]any{"roomId": "c", "message": "queued"})["session_id"].(string)
	s := a.stream(browserPath("c", "t1", "screenshot"), tokT, nil)
	hostOf(t, s)
	waitUntil(t, 5*time.Second, "process b sees t1", func() bool { return b.api.hub.Host("c") == "t1" })
	ack := map[string]any{"sessionId": sid, "seq": 1, "clientId": "t1"}
	if r := b.do("POST", "/api/canvas-agent/ack", tokU, ack); r.Status != 403 {
		t.Errorf("another token's ack for t1 on process b: %d %s", r.Status, r.Body)
	}
	if st, body := streamStatus(t, b.srv.URL, browserPath("c", "t1", "viewport"), tokU); st != http.StatusConflict {
		t.Fatalf("another token declared t1 on process b: %d %s", st, body)
	}
	b.must(202, "POST", "/api/canvas-agent/ack", tokT, ack)
	b.must(202, "POST", "/api/canvas-agent/view", tokT, map[string]any{"sessionId": sid, "clientId": "t1"})
}

// hostLeavesWithTheEnvelope runs a session whose one note envelope goes to
// the host h1, which never acks it and leaves as soon as it has it (no
// other candidate: the canvas has no host then). It returns the session id
// once h1's stream is gone.
func hostLeavesWithTheEnvelope(t *testing.T, e *agentEnv, canvasID string) string {
	t.Helper()
	h1 := newAckingBrowser(t, e, canvasID, "h1", []string{hub.CapScreenshot, hub.CapViewport}, func(agent.ActionEnvelope) bool { return false })
	waitUntil(t, 5*time.Second, "h1 elected", func() bool { return e.hub.Host(canvasID) == "h1" })
	id := e.start(client.AgentRunRequest{RoomID: canvasID, Message: "a note"})
	waitUntil(t, 10*time.Second, "h1 got the envelope", func() bool { return len(h1.got()) == 1 })
	h1.cancel()
	<-h1.done
	waitUntil(t, 5*time.Second, "no host", func() bool { return e.hub.Host(canvasID) == "" })
	return id
}

// TestAckResendWaitsForAHost: an envelope whose host left before acking it
// is not resent into the void: with no host its attempts are not spent, an
// agent:status says it waits for one, and a host elected later (here after
// twice the time all its attempts would have taken) gets it, acks it, and
// nothing counts as missed.
func TestAckResendWaitsForAHost(t *testing.T) {
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{actionsJSON(`{"name":"create_shape","params":{"type":"note","x":0,"y":0,"props":{"text":"one"}}}`)}})
	e := newAgentEnv(t, model, func(c *agent.Config) {
		c.Model, c.LowActionThreshold = "openai:gpt-test", 0
		c.AckTimeout, c.AckRetries = time.Second, 1 // h1 must leave within AckTimeout, also on a loaded machine
	})
	e.newCanvas("wh")
	ev := e.watch("wh")
	id := hostLeavesWithTheEnvelope(t, e, "wh")
	time.Sleep(4 * time.Second) // (AckRetries+1)·AckTimeout twice over: the old code gave the envelope up by now
	h2 := newAckingBrowser(t, e, "wh", "h2", []string{hub.CapScreenshot}, func(agent.ActionEnvelope) bool { return true })
	sess := e.wait(id)
	if st := sess.Stats; st.Resends != 1 || st.AcksMissed != 0 || st.Acks != 1 || st.HostWaits != 1 {
		t.Fatalf("stats %+v: want one resend (to the new host), its ack, nothing missed, one wait for a host", st)
	}
	if got := h2.got(); len(got) != 1 {
		t.Fatalf("the new host got %d envelopes, want the one resent to it", len(got))
	}
	ev.until(t, func(x client.Event) bool {
		return x.Event == client.EventAgentStatus && strings.Contains(string(x.Data), `"ack_waiting_host"`)
	})
}

// TestAckGivenUpWithoutAHost: an envelope waits for a host at most
// AckHostWait; then it counts as missed, with reason no_host, and no
// resend counted (nothing was sent).
func TestAckGivenUpWithoutAHost(t *testing.T) {
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{actionsJSON(`{"name":"create_shape","params":{"type":"note","x":0,"y":0,"props":{"text":"one"}}}`)}})
	e := newAgentEnv(t, model, func(c *agent.Config) {
		c.Model, c.LowActionThreshold = "openai:gpt-test", 0
		c.AckTimeout, c.AckRetries, c.AckHostWait = time.Second, 1, time.Second
	})
	e.newCanvas("nh")
	ev := e.watch("nh")
	start := time.Now()
	sess := e.wait(hostLeavesWithTheEnvelope(t, e, "nh"))
	if st := sess.Stats; st.Resends != 0 || st.AcksMissed != 1 || st.HostWaits != 1 {
		t.Fatalf("stats %+v: want no resend, the envelope missed after waiting for a host", st)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the session took %v to give the envelope up", took)
	}
	ev.until(t, func(x client.Event) bool {
		return x.Event == client.EventAgentStatus && strings.Contains(string(x.Data), `"ack_missed"`) && strings.Contains(string(x.Data), `"reason":"no_host"`)
	})
}

// TestAckCountedOncePerSentEnvelope: stats.acks counts each browser's ack of
// an envelope the session sent once: an ack again (a browser acks a resend
// it had applied) or for a seq the session never sent counts for nothing.
func TestAckCountedOncePerSentEnvelope(t *testing.T) {
	gate := make(chan struct{})
	reply := actionsJSON(`{"name":"create_shape","params":{"type":"note","x":0,"y":0,"props":{"text":"one"}}}`)
	cut := strings.LastIndex(reply, "]")
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{reply[:cut], reply[cut:]}, gates: map[int]chan struct{}{1: gate}})
	e := newAgentEnv(t, model, func(c *agent.Config) { c.Model, c.LowActionThreshold = "openai:gpt-test", 0 })
	e.newCanvas("once")
	host := newAckingBrowser(t, e, "once", "h", []string{hub.CapScreenshot}, func(agent.ActionEnvelope) bool { return true })
	id := e.start(client.AgentRunRequest{RoomID: "once", Message: "a note"})
	waitUntil(t, 10*time.Second, "the host got the envelope", func() bool { return len(host.got()) == 1 })
	ctx := context.Background()
	seq := host.got()[0].Seq
	for _, s := range []int64{seq, seq, seq + 1000} {
		if err := e.human.AckEnvelope(ctx, canvas.AgentAck{SessionID: id, Seq: s, ClientID: "h"}); err != nil {
			t.Fatal(err)
		}
	}
	close(gate)
	sess := e.wait(id)
	if st := sess.Stats; st.Acks != 1 || st.AcksMissed != 0 {
		t.Fatalf("stats %+v: want the host's one ack of the one envelope", st)
	}
}

// TestAckResendsReachANewHostInSeqOrder: envelopes whose host left before
// acking them are resent to the next host in seq order. A browser ignores a
// seq below one it has seen (the JS client's rule: a resend it never
// applied, overtaken by a later seq, stays unapplied and unacked), so a
// resend out of order left the lower seqs unacked until counted missed.
func TestAckResendsReachANewHostInSeqOrder(t *testing.T) {
	var notes []string
	for i := range 6 {
		notes = append(notes, fmt.Sprintf(`{"name":"create_shape","params":{"type":"note","x":%d,"y":0,"props":{"text":"n%d"}}}`, i*300, i))
	}
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{actionsJSON(notes...)}})
	e := newAgentEnv(t, model, func(c *agent.Config) {
		c.Model, c.LowActionThreshold = "openai:gpt-test", 0
		c.AckTimeout, c.AckRetries = time.Second, 1 // h1 must leave within AckTimeout, also on a loaded machine
	})
	e.newCanvas("ord")
	ev := e.watch("ord")
	h1 := newAckingBrowser(t, e, "ord", "h1", []string{hub.CapScreenshot}, func(agent.ActionEnvelope) bool { return false })
	waitUntil(t, 5*time.Second, "h1 elected", func() bool { return e.hub.Host("ord") == "h1" })
	id := e.start(client.AgentRunRequest{RoomID: "ord", Message: "notes"})
	waitUntil(t, 10*time.Second, "h1 got the envelopes", func() bool { return len(h1.got()) == 6 })
	h1.cancel()
	<-h1.done
	waitUntil(t, 5*time.Second, "no host", func() bool { return e.hub.Host("ord") == "" })
	// The envelopes are due and wait for a host: the session says so of all 6.
	waiting := map[int64]bool{}
	ev.until(t, func(x client.Event) bool {
		var st struct {
			Detail struct {
				Wait *struct {
					Seqs []int64 `json:"seqs"`
				} `json:"ack_waiting_host"`
			} `json:"detail"`
		}
		if x.Event == client.EventAgentStatus && json.Unmarshal(x.Data, &st) == nil && st.Detail.Wait != nil {
			for _, s := range st.Detail.Wait.Seqs {
				waiting[s] = true
			}
		}
		return len(waiting) == 6
	})
	var last int64
	applied := map[int64]bool{}
	h2 := newAckingBrowser(t, e, "ord", "h2", []string{hub.CapScreenshot}, func(env agent.ActionEnvelope) bool {
		if env.Seq <= last {
			return applied[env.Seq] // seen a later seq: acked again only if it was applied
		}
		last, applied[env.Seq] = env.Seq, true
		return true
	})
	sess := e.wait(id)
	var seqs []int64
	for _, env := range h2.got() {
		seqs = append(seqs, env.Seq)
	}
	if !slices.IsSorted(seqs[:min(len(seqs), 6)]) || sess.Stats.AcksMissed != 0 {
		t.Fatalf("the new host got seqs %v; stats %+v: want the 6 envelopes resent in seq order, none missed", seqs, sess.Stats)
	}
}
