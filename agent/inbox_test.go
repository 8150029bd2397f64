package agent_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	canvasd "github.com/canvasd/canvasd"
	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/api"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/hub"
	"github.com/canvasd/canvasd/internal/testwait"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

const inboxAdmin = "cvd_inbox_admin"

// tinyPNG is a valid 1×1 PNG.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

func pngDataURL() string {
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(tinyPNG)
}

// inboxEnv is a real canvasd (SQLite file, real listener) and an in-process
// runner with the debug/fake model that reaches it over HTTP.
type inboxEnv struct {
	t        *testing.T
	runner   *agent.Runner
	sessions *sqlitestore.Store
	admin    *client.Client
}

func newInboxEnv(t *testing.T, fake *agent.FakeProvider) *inboxEnv {
	t.Helper()
	return newInboxEnvWith(t, fake, agent.DefaultConfig(), nil)
}

// newInboxEnvWith runs the runner with cfg and log (nil: discarded).
func newInboxEnvWith(t *testing.T, fake *agent.FakeProvider, cfg agent.Config, log *slog.Logger) *inboxEnv {
	t.Helper()
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "canvasd.db")
	st, err := sqlitestore.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := api.NewMetrics(reg)
	events := hub.New(hub.Config{OnCount: m.SubscriberDelta})
	eng := store.NewEngine(st, store.EngineConfig{Publisher: events, Observer: m, SnapshotEvery: 100})
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{Engine: eng, Store: st, Hub: events, Metrics: m, AdminToken: inboxAdmin,
		OpenAPISpec: canvasd.Spec, Heartbeat: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	e := &inboxEnv{t: t}
	e.admin, _ = client.New(ts.URL, inboxAdmin)
	tok, err := e.admin.CreateToken(ctx, canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent})
	if err != nil {
		t.Fatal(err)
	}
	ac, _ := client.New(ts.URL, tok.Token)
	e.sessions = st
	cfg.Watchdog = 20 * time.Second
	prov := agent.NewProviders(cfg, nil)
	if fake != nil {
		prov.SetFake(fake)
	}
	e.runner, err = agent.NewRunner(agent.Deps{Config: cfg, Client: ac, ActorID: tok.ActorID, Events: events, Store: e.sessions, Providers: prov, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	e.runner.Start(rctx)
	t.Cleanup(func() {
		cancel()
		e.runner.Stop()
		ts.CloseClientConnections()
		ts.Close()
		events.Stop()
		eng.Stop()
		st.Close()
	})
	return e
}

func editor(canvases ...string) canvas.Principal {
	return canvas.Principal{Actor: canvas.Actor{ID: "human-1", Type: canvas.ActorHuman}, Role: canvas.RoleEditor, Canvases: canvases}
}

func (e *inboxEnv) canvas(id string) {
	e.t.Helper()
	if _, err := e.admin.CreateCanvas(context.Background(), id, "inbox test"); err != nil {
		e.t.Fatal(err)
	}
}

// wait waits until the session is not running in the runner and its stored
// state is terminal.
func (e *inboxEnv) wait(id string) client.AgentSession {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	pl := testwait.NewPoller(time.Until(deadline), 10*time.Millisecond)
	defer pl.Stop()
	for {
		if ch := e.runner.Done(id); ch != nil {
			select {
			case <-ch:
			case <-time.After(time.Until(deadline)):
				e.t.Fatalf("session %s did not end", id)
			}
			continue // a hand-off may have relaunched it
		}
		s, err := e.runner.Session(context.Background(), id)
		if err != nil {
			e.t.Fatal(err)
		}
		if client.AgentTerminal(s.State) && e.runner.Done(id) == nil {
			return s
		}
		if pl.Expired() {
			e.t.Fatalf("session %s still %q", id, s.State)
		}
		pl.Wait()
	}
}

// stickies returns the sticky notes' texts in creation order.
func (e *inboxEnv) stickies(canvasID string) []string {
	e.t.Helper()
	snap, err := e.admin.Snapshot(context.Background(), canvasID)
	if err != nil {
		e.t.Fatal(err)
	}
	type note struct {
		rev  int64
		text string
	}
	var notes []note
	for _, n := range snap.State.Nodes {
		if n.Type == "note" {
			text, _ := canvas.PropText(n.Props["text"])
			notes = append(notes, note{n.CreatedRev, text})
		}
	}
	for i := 1; i < len(notes); i++ {
		for j := i; j > 0 && notes[j].rev < notes[j-1].rev; j-- {
			notes[j], notes[j-1] = notes[j-1], notes[j]
		}
	}
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = n.text
	}
	return out
}

func transcriptHas(s client.AgentSession, role, text string) bool {
	for _, e := range s.Transcript {
		if e.Role == role && strings.Contains(e.Text, text) {
			return true
		}
	}
	return false
}

// A message to a finished session reopens it: a new turn on the same canvas
// whose image reaches the model (the fake model says so), recorded in the
// transcript, with action ids that do not collide with the first run's (the
// second sticky is really created, not an idempotent replay).
func TestPostMessageReopensFinishedSession(t *testing.T) {
	e := newInboxEnv(t, nil)
	e.canvas("c1")
	ctx := context.Background()
	id, err := e.runner.Run(ctx, client.AgentRunRequest{RoomID: "c1", Message: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	first := e.wait(id)
	if first.State != client.AgentDone {
		t.Fatalf("first run %s: %s", first.State, first.Detail)
	}
	err = e.runner.PostMessage(ctx, id, agent.UserMessage{Principal: editor("c1"), Prompt: "What is this drawing?",
		ImageDataURL: pngDataURL(), Source: "applet", AppletSlug: "doodle"})
	if err != nil {
		t.Fatal(err)
	}
	s := e.wait(id)
	if s.State != client.AgentDone || s.CanvasID != "c1" || s.ID != id {
		t.Fatalf("after the message: %+v", s)
	}
	if s.Stats.Turns != first.Stats.Turns+1 {
		t.Fatalf("turns %d, want %d", s.Stats.Turns, first.Stats.Turns+1)
	}
	want := fmt.Sprintf("[applet doodle] What is this drawing? (image attached: image/png, %d bytes)", len(tinyPNG))
	if !transcriptHas(s, "user", want) {
		t.Fatalf("transcript lacks %q: %+v", want, s.Transcript)
	}
	if note := fmt.Sprintf("I received an image/png image of %d bytes.", len(tinyPNG)); !transcriptHas(s, "assistant", note) {
		t.Fatalf("the fake model did not see the image (%q): %+v", note, s.Transcript)
	}
	// A second reopen whose reply has the same shape as the first run's
	// (think, sticky): its action ids must not repeat the first run's, or its
	// commands would be idempotent replays (or 422s) instead of commits.
	if err := e.runner.PostMessage(ctx, id, agent.UserMessage{Principal: editor(), Prompt: "and another"}); err != nil {
		t.Fatal(err)
	}
	e.wait(id)
	if got := e.stickies("c1"); strings.Join(got, "|") != "hello|What is this drawing?|and another" {
		t.Fatalf("stickies %q", got)
	}
	if stored, err := e.sessions.GetAgentSession(ctx, id); err != nil || stored.State != client.AgentDone || !transcriptHas(stored, "user", want) {
		t.Fatalf("stored session %+v %v", stored, err)
	}
}

// Messages posted while a session runs are queued FIFO after its current turn.
func TestPostMessageQueuesOnLiveSession(t *testing.T) {
	e := newInboxEnv(t, &agent.FakeProvider{ChunkSize: 16, ChunkDelay: 15 * time.Millisecond})
	e.canvas("c1")
	ctx := context.Background()
	id, err := e.runner.Run(ctx, client.AgentRunRequest{RoomID: "c1", Message: "initial"})
	if err != nil {
		t.Fatal(err)
	}
	done := e.runner.Done(id)
	for _, p := range []string{"first", "second", "third"} {
		if err := e.runner.PostMessage(ctx, id, agent.UserMessage{Principal: editor(), Prompt: p}); err != nil {
			t.Fatal(err)
		}
	}
	if e.runner.Done(id) != done {
		t.Fatal("the session was relaunched instead of queuing the messages")
	}
	s := e.wait(id)
	if s.State != client.AgentDone {
		t.Fatalf("%s: %s", s.State, s.Detail)
	}
	if got := e.stickies("c1"); strings.Join(got, ",") != "initial,first,second,third" {
		t.Fatalf("stickies %q, want initial,first,second,third", got)
	}
	var users []string
	for _, en := range s.Transcript {
		if en.Role == "user" {
			users = append(users, en.Text)
		}
	}
	if strings.Join(users, ",") != "initial,first,second,third" {
		t.Fatalf("user transcript %q", users)
	}
}

func TestPostMessageErrors(t *testing.T) {
	e := newInboxEnv(t, nil)
	e.canvas("c1")
	ctx := context.Background()
	id, err := e.runner.Run(ctx, client.AgentRunRequest{RoomID: "c1", Message: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	e.wait(id)
	viewer := canvas.Principal{Actor: canvas.Actor{ID: "human-2", Type: canvas.ActorHuman}, Role: canvas.RoleViewer}
	for name, c := range map[string]struct {
		id   string
		m    agent.UserMessage
		want error
	}{
		"unknown session": {"as_nope", agent.UserMessage{Principal: editor(), Prompt: "x"}, canvas.ErrNotFound},
		"viewer":          {id, agent.UserMessage{Principal: viewer, Prompt: "x"}, canvas.ErrForbidden},
		"other canvas":    {id, agent.UserMessage{Principal: editor("c2"), Prompt: "x"}, canvas.ErrNotFound}, // as every read of a session it cannot see
		"empty":           {id, agent.UserMessage{Principal: editor()}, canvas.ErrInvalid},
		"not a data URL":  {id, agent.UserMessage{Principal: editor(), Prompt: "x", ImageDataURL: "http://x/y.png"}, canvas.ErrInvalid},
		"too long":        {id, agent.UserMessage{Principal: editor(), Prompt: strings.Repeat("x", agent.MaxMessagePromptBytes+1)}, canvas.ErrInvalid},
	} {
		if err := e.runner.PostMessage(ctx, c.id, c.m); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if s := e.wait(id); s.Stats.Turns != 2 { // the run and its low-action follow-up; no message turn
		t.Fatalf("a refused message ran a turn: %+v", s.Stats)
	}
}

// A userAction goes to the canvas's most recent session, or starts one.
func TestPostToCanvas(t *testing.T) {
	e := newInboxEnv(t, nil)
	e.canvas("board")
	ctx := context.Background()
	act := agent.UserMessage{Principal: editor("board"), Prompt: `userAction "submit"`, Source: "a2ui",
		Action: &agent.UserAction{Name: "submit", SurfaceID: "main", SourceComponentID: "btn", Context: map[string]any{"name": "Ada"}}}
	id, err := e.runner.PostToCanvas(ctx, "board", act)
	if err != nil {
		t.Fatal(err)
	}
	s := e.wait(id)
	if s.CanvasID != "board" || s.State != client.AgentDone || !strings.Contains(s.Message, `A2UI userAction "submit"`) {
		t.Fatalf("new session %+v", s)
	}
	if !transcriptHas(s, "user", `[a2ui] A2UI userAction "submit" from component "btn" on surface "main", context {"name":"Ada"}`) {
		t.Fatalf("transcript %+v", s.Transcript)
	}
	// A newer session on the canvas gets the next action.
	newer, err := e.runner.Run(ctx, client.AgentRunRequest{RoomID: "board", Message: "newer"})
	if err != nil {
		t.Fatal(err)
	}
	e.wait(newer)
	id2, err := e.runner.PostToCanvas(ctx, "board", act)
	if err != nil || id2 != newer {
		t.Fatalf("second action went to %q (%v), want the newest session %q", id2, err, newer)
	}
	if s := e.wait(newer); !transcriptHas(s, "user", `A2UI userAction "submit"`) {
		t.Fatalf("newest session transcript %+v", s.Transcript)
	}
	if got := e.stickies("board"); len(got) != 3 {
		t.Fatalf("stickies %q: want the first action's, newer's and the second action's", got)
	}
	if _, err := e.runner.PostToCanvas(ctx, "nope", agent.UserMessage{Principal: editor(), Prompt: "x"}); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("unknown canvas: %v", err)
	}
	if _, err := e.runner.PostToCanvas(ctx, "board", agent.UserMessage{Principal: editor("other"), Prompt: "x"}); !errors.Is(err, canvas.ErrForbidden) {
		t.Fatalf("other canvas: %v", err)
	}
}

// TestQueueQueuesMessages: on a server whose agents run as workers, a
// message for a canvas queues a new session whose first turn is the message
// (its image kept in the store for the worker), and a message for a session
// that has ended queues it again with the message; a worker claims both and
// runs the messages as turns: the image reaches the model. A session still
// queued or running cannot take a message (409).
func TestQueueQueuesMessages(t *testing.T) {
	e := newInboxEnv(t, nil)
	e.canvas("c1")
	ctx := context.Background()
	q := agent.NewQueue(agent.DefaultConfig(), e.sessions, nil)
	id, err := q.Run(ctx, client.AgentRunRequest{RoomID: "c1", Message: "queued"})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.PostMessage(ctx, id, agent.UserMessage{Principal: editor(), Prompt: "x"}); !errors.Is(err, canvas.ErrConflict) ||
		!strings.Contains(err.Error(), "once the session has ended") {
		t.Fatalf("a message for a session still queued: %v", err)
	}
	if err := q.PostMessage(ctx, "as_nope", agent.UserMessage{Principal: editor(), Prompt: "x"}); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	if err := q.PostMessage(ctx, id, agent.UserMessage{Principal: editor("c2"), Prompt: "x"}); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("a session on a canvas the sender cannot see: %v", err)
	}
	viewer := canvas.Principal{Actor: canvas.Actor{ID: "human-2", Type: canvas.ActorHuman}, Role: canvas.RoleViewer}
	if err := q.PostMessage(ctx, id, agent.UserMessage{Principal: viewer, Prompt: "x"}); !errors.Is(err, canvas.ErrForbidden) {
		t.Fatalf("viewer: %v", err)
	}
	if _, err := q.PostToCanvas(ctx, "c1", agent.UserMessage{Principal: editor("c2"), Prompt: "x"}); !errors.Is(err, canvas.ErrForbidden) {
		t.Fatalf("to a canvas the sender may not edit: %v", err)
	}
	if _, err := q.PostToCanvas(ctx, "nope", agent.UserMessage{Principal: editor(), Prompt: "x"}); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("to a canvas that does not exist: %v", err)
	}
	img, err := q.PostToCanvas(ctx, "c1", agent.UserMessage{Principal: editor(), Prompt: "What is this?", ImageDataURL: pngDataURL(), Source: "applet", AppletSlug: "doodle"})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := e.sessions.GetAgentSession(ctx, img)
	if err != nil || stored.State != canvas.AgentQueued || len(stored.Pending) != 1 || stored.Pending[0].Image != pngDataURL() ||
		stored.Pending[0].Text != "What is this?" {
		t.Fatalf("the queued message session: %+v %v", stored, err)
	}

	// A worker claims the sessions and runs the message turns.
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.runner.Work(wctx, agent.WorkerOptions{Poll: 20 * time.Millisecond}) }()
	defer func() { stop(); <-done }()
	s := e.wait(img)
	tr, _ := json.Marshal(s.Transcript)
	want := fmt.Sprintf("I received an image/png image of %d bytes.", len(tinyPNG))
	if s.State != client.AgentDone || !strings.Contains(string(tr), "[applet doodle] What is this? (image attached: image/png") || !strings.Contains(string(tr), want) {
		t.Fatalf("the message session ran as %s: %s", s.State, tr)
	}
	if again, _ := e.sessions.GetAgentSession(ctx, img); len(again.Pending) != 0 {
		t.Fatalf("the pending turn is still stored: %+v", again.Pending)
	}
	// A message for the session that has ended queues it again.
	e.wait(id)
	if err := q.PostMessage(ctx, img, agent.UserMessage{Principal: editor(), Prompt: "And now?"}); err != nil {
		t.Fatal(err)
	}
	s = e.wait(img)
	tr, _ = json.Marshal(s.Transcript)
	if s.State != client.AgentDone || !strings.Contains(string(tr), "And now?") || s.Stats.Turns < 2 {
		t.Fatalf("the session after the second message: %s turns %d: %s", s.State, s.Stats.Turns, tr)
	}
}

func TestFakeReplyNotesImage(t *testing.T) {
	for _, kind := range []agent.TurnKind{agent.TurnInitial, agent.TurnMessage, agent.TurnFollowup, agent.TurnReplan} {
		req := agent.ModelRequest{Kind: kind, Task: "brutalist poster", Messages: []agent.Message{{Role: "user", Text: "x", ImageDataURL: pngDataURL()}}}
		want := fmt.Sprintf(`{"name":"think","params":{"text":"I received an image/png image of %d bytes."}}`, len(tinyPNG))
		if got := agent.FakeReply(req); !strings.Contains(got, want) {
			t.Errorf("%s: %s", kind, got)
		}
		p := agent.NewParser(0)
		done, _ := p.Feed(agent.FakeReply(req))
		if len(done) == 0 || done[0].Name != "think" {
			t.Errorf("%s: reply does not parse with the think first: %+v", kind, done)
		}
		req.Messages[0].ImageDataURL = ""
		if got := agent.FakeReply(req); strings.Contains(got, "I received an") {
			t.Errorf("%s without an image: %s", kind, got)
		}
	}
}

// CANVAS_STEWARD_DEBUG alone (the log at its default INFO level) shows each
// turn's prompt, the model's reply and the dropped actions with their params;
// without it none of that text is logged.
func TestStewardDebugLogs(t *testing.T) {
	reply := `{"actions":[{"name":"create_shape","params":{"type":"note","x":0,"y":0,"props":{"text":"secret plan"}}},{"name":"explode","params":{"how":"loudly"}}]}`
	for _, debug := range []bool{true, false} {
		buf := &syncWriter{w: &bytes.Buffer{}}
		cfg := agent.DefaultConfig()
		cfg.Debug, cfg.LowActionThreshold = debug, 0
		e := newInboxEnvWith(t, &agent.FakeProvider{Reply: func(agent.ModelRequest) string { return reply }}, cfg,
			slog.New(slog.NewTextHandler(buf, nil)))
		e.canvas("c1")
		id, err := e.runner.Run(context.Background(), client.AgentRunRequest{RoomID: "c1", Message: "make a plan"})
		if err != nil {
			t.Fatal(err)
		}
		e.wait(id)
		log := buf.String()
		for _, want := range []string{`msg="agent: prompt"`, "make a plan", `msg="agent: model reply"`, "secret plan", `msg="agent: dropped action"`, "loudly"} {
			if strings.Contains(log, want) != debug {
				t.Errorf("debug %v: %q logged: %v", debug, want, !debug)
			}
		}
	}
}

// syncWriter serializes writes (the runner logs from several goroutines).
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// A session stored as running and fresh but not live in this runner runs in
// another process: a message for it (or a userAction for its canvas) is a
// RunningElsewhereError carrying the session and the message, for the server
// to relay; PostIfRunning leaves it alone. A live session takes it.
func TestMessageForSessionRunningElsewhere(t *testing.T) {
	e := newInboxEnv(t, nil)
	e.canvas("c1")
	ctx := context.Background()
	now := time.Now().UTC()
	other := canvas.AgentSession{ID: "as_elsewhere", CanvasID: "c1", ActorID: "agent-other", State: client.AgentStreaming, Model: "debug/fake",
		Message: "draw", Transcript: []client.TranscriptEntry{}, CreatedAt: now, UpdatedAt: now}
	if err := e.sessions.CreateAgentSession(ctx, other); err != nil {
		t.Fatal(err)
	}
	m := agent.UserMessage{Principal: editor("c1"), Prompt: "over there?"}
	var re *agent.RunningElsewhereError
	if err := e.runner.PostMessage(ctx, other.ID, m); !errors.As(err, &re) || !errors.Is(err, canvas.ErrConflict) ||
		re.SessionID != other.ID || re.Message.Prompt != m.Prompt {
		t.Fatalf("message for a session of another process: %v (%+v)", err, re)
	}
	re = nil
	if id, err := e.runner.PostToCanvas(ctx, "c1", m); id != other.ID || !errors.As(err, &re) || re.SessionID != other.ID {
		t.Fatalf("userAction for the canvas of a session of another process: %q %v", id, err)
	}
	if running, err := e.runner.PostIfRunning(ctx, other.ID, m); running || err != nil {
		t.Fatalf("PostIfRunning of a session not running here: %v %v", running, err)
	}
	if s, _ := e.sessions.GetAgentSession(ctx, other.ID); s.ActorID != "agent-other" || s.State != client.AgentStreaming {
		t.Fatalf("the other process's session was taken over: %+v", s)
	}
}

// A userAction goes to the canvas's newest session even when that session
// runs in another process and an older one runs here.
func TestPostToCanvasPrefersTheNewestSessionOfAnyProcess(t *testing.T) {
	gate, called := make(chan struct{}), make(chan struct{}, 1)
	fake := &agent.FakeProvider{Reply: func(req agent.ModelRequest) string {
		select {
		case called <- struct{}{}:
		default:
		}
		<-gate
		return `{"actions":[]}`
	}}
	e := newInboxEnv(t, fake)
	e.canvas("c1")
	ctx := context.Background()
	local, err := e.runner.Run(ctx, client.AgentRunRequest{RoomID: "c1", Message: "older, here"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { close(gate); e.wait(local) }()
	select {
	case <-called: // the local session is live, in its model call
	case <-time.After(20 * time.Second):
		t.Fatal("the local session never called the model")
	}
	now := time.Now().UTC().Add(time.Second) // created after the local one
	other := canvas.AgentSession{ID: "as_newer_elsewhere", CanvasID: "c1", ActorID: "agent-other", State: client.AgentStreaming, Model: "debug/fake",
		Message: "newer, elsewhere", Transcript: []client.TranscriptEntry{}, CreatedAt: now, UpdatedAt: time.Now().UTC()}
	if err := e.sessions.CreateAgentSession(ctx, other); err != nil {
		t.Fatal(err)
	}
	var re *agent.RunningElsewhereError
	id, err := e.runner.PostToCanvas(ctx, "c1", agent.UserMessage{Principal: editor("c1"), Prompt: "for the newest"})
	if id != other.ID || !errors.As(err, &re) || re.SessionID != other.ID {
		t.Fatalf("userAction went to %q (%v), want the newest session %q, running elsewhere", id, err, other.ID)
	}
}

// TestCancelOrphanedRun: canceling a session stored as running that no
// process runs any more (its last update older than the watchdog: its
// process stopped mid-run) marks it canceled; one updated recently (running
// in another process) and one that ended are left as they are.
func TestCancelOrphanedRun(t *testing.T) {
	e := newInboxEnv(t, nil)
	e.canvas("c1")
	ctx := context.Background()
	session := func(id, state string, updated time.Time) {
		t.Helper()
		s := canvas.AgentSession{ID: id, CanvasID: "c1", ActorID: "agent-gone", State: state, Model: "debug/fake",
			Message: "draw", Transcript: []client.TranscriptEntry{}, CreatedAt: updated, UpdatedAt: updated}
		if err := e.sessions.CreateAgentSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	old, recent := time.Now().UTC().Add(-time.Hour), time.Now().UTC()
	session("as_orphan", client.AgentStreaming, old)
	session("as_elsewhere", client.AgentStreaming, recent)
	session("as_done", client.AgentDone, old)
	for id, want := range map[string]string{"as_orphan": client.AgentCanceled, "as_elsewhere": client.AgentStreaming, "as_done": client.AgentDone} {
		if err := e.runner.Cancel(ctx, id); err != nil {
			t.Fatalf("cancel %s: %v", id, err)
		}
		if s, err := e.sessions.GetAgentSession(ctx, id); err != nil || s.State != want {
			t.Errorf("%s after cancel: %q %v, want %q", id, s.State, err, want)
		}
	}
}
