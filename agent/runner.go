package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// Events publishes agent-topic events (agent:action, agent:chat,
// agent:status, agent:screenshot_request) on a canvas's SSE stream. It must
// not block on slow subscribers. *api.Hub implements it in-process;
// HTTPEvents implements it for the standalone worker.
type Events interface {
	PublishEvent(canvasID, event string, v any)
}

// HTTPEvents publishes through POST /api/canvas-agent/events of a canvasd
// server (the standalone `canvasd agent` worker). Failures are logged.
type HTTPEvents struct {
	Client *client.Client
	Log    *slog.Logger
}

// PublishEvent implements Events.
func (h HTTPEvents) PublishEvent(canvasID, event string, v any) {
	b, err := json.Marshal(v)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = h.Client.PublishAgentEvent(ctx, client.AgentEvent{CanvasID: canvasID, Event: event, Data: b})
		cancel()
	}
	if err != nil && h.Log != nil {
		h.Log.Warn("agent: publishing event failed", "canvas_id", canvasID, "event", event, "err", err)
	}
}

// ActionEnvelope is the data of an agent:action event.
type ActionEnvelope struct {
	V         string   `json:"v"`
	SessionID string   `json:"sessionId"`
	Seq       int64    `json:"seq"`
	Partial   bool     `json:"partial"`
	Actions   []Action `json:"actions"`
	TS        int64    `json:"ts"` // Unix milliseconds
}

// ChatEvent is the data of an agent:chat event.
type ChatEvent struct {
	Type      string      `json:"type"`
	SessionID string      `json:"sessionId"`
	Message   ChatMessage `json:"message"`
}

// ChatMessage is one chat line.
type ChatMessage struct {
	Role string `json:"role"` // assistant | system
	Text string `json:"text"`
}

// StatusEvent is the data of an agent:status event.
type StatusEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	State     string `json:"state"`
	Detail    any    `json:"detail,omitempty"`
}

// Deps wires a Runner.
type Deps struct {
	Config Config
	// Client talks to canvasd with the agent's own token: an agent-{uuid}
	// actor with the editor role on the canvases it works on.
	Client *client.Client
	// ActorID is that token's actor id (stored with sessions).
	ActorID   string
	Events    Events
	Store     SessionStore
	Providers *Providers // nil: NewProviders(Config, nil)
	// Screenshots, when set, is asked for a screenshot of the viewport before
	// each model call (vision-capable models only).
	Screenshots Screenshotter
	Logger      *slog.Logger
	Metrics     *Metrics
	Now         func() time.Time
	// OnActionCommit, when set, is called with the time from a complete
	// action in the model stream to its commit (benchmarks, tracing).
	OnActionCommit func(time.Duration)
}

// Runner runs agent sessions: a FIFO of turns per session (the request,
// then follow-ups and re-plans), each turn: waiting_context → calling_model
// → streaming → (scheduled → next turn | done), or canceled / error.
// Start it before Run; Stop cancels every session and waits for them.
type Runner struct {
	d      Deps
	log    *slog.Logger
	system string

	mu       sync.Mutex
	base     context.Context
	stop     context.CancelFunc
	sessions map[string]*session
	wg       sync.WaitGroup
	poll     time.Duration // worker mode: how often to check for remote cancels

	cacheMu sync.Mutex
	cache   map[string]cachedContext

	inboxMu sync.Mutex // serializes posting a message with reopening its session (inbox.go)
}

type cachedContext struct {
	pc      PromptContext
	expires time.Time
}

// NewRunner checks deps and returns a runner (not started).
func NewRunner(d Deps) (*Runner, error) {
	if d.Client == nil || d.Events == nil || d.Store == nil {
		return nil, errors.New("agent: Client, Events and Store are required")
	}
	if err := d.Config.Validate(); err != nil {
		return nil, fmt.Errorf("agent: %v: %w", err, canvas.ErrInvalid)
	}
	if d.Providers == nil {
		d.Providers = NewProviders(d.Config, nil)
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Runner{d: d, log: d.Logger, system: SystemPrompt(), sessions: map[string]*session{}, cache: map[string]cachedContext{}}, nil
}

// Start makes the runner accept runs; sessions live until ctx ends or Stop.
func (r *Runner) Start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.base, r.stop = context.WithCancel(ctx)
}

// Stop cancels every running session (state canceled) and waits for them.
func (r *Runner) Stop() {
	r.mu.Lock()
	if r.stop != nil {
		r.stop()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// Catalog returns the action catalog JSON (GET /api/canvas-agent/catalog).
func (r *Runner) Catalog() []byte { return CatalogJSON() }

// task is one queued turn.
type task struct {
	kind     string // initial | followup | low_action | replan
	text     string // the instruction of this turn
	conflict string // for replans: what conflicted
	image    string // a data: URL sent with the turn (user messages, inbox.go)
	from     string // for user messages: where the message came from (inbox.go)
}

type session struct {
	r      *Runner
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	rec      client.AgentSession
	queue    []task
	canceled bool
	ended    bool // the worker took its last task: a message must relaunch the session (inbox.go)

	// worker-goroutine state
	spec      string
	san       *Sanitizer
	seq       int64
	knownRev  int64
	protected map[string]bool
	remote    bool // claimed from the shared queue: cancels arrive through the store
	followups int
	replans   int
	lowUsed   bool
	turn      int
	started   time.Time
	firstAct  bool
	cmdN      int
}

// ErrNotRunning: the runner was not started or is stopping.
var ErrNotRunning = errors.New("agent runner is not running")

// Run validates a run request, stores the session and starts it. It returns
// the session id; the run continues in the background. The canvas must
// exist (canvas.ErrNotFound otherwise) and the message must be non-empty.
func (r *Runner) Run(ctx context.Context, req client.AgentRunRequest) (string, error) {
	rec, err := newSessionRecord(r.d.Config, req, r.d.Now(), client.AgentWaitingContext)
	if err != nil {
		return "", err
	}
	rec.ActorID = r.d.ActorID
	if !r.running() {
		return "", fmt.Errorf("agent: %w: %w", ErrNotRunning, canvas.ErrUnavailable)
	}
	if _, err := r.d.Client.GetCanvas(ctx, req.RoomID); err != nil {
		return "", fmt.Errorf("agent run on canvas %q: %w", req.RoomID, err)
	}
	if err := r.d.Store.CreateSession(ctx, rec); err != nil {
		return "", err
	}
	if err := r.launch(rec, false); err != nil {
		return "", err
	}
	return rec.ID, nil
}

// newSessionRecord validates a run request and returns the session to store.
func newSessionRecord(cfg Config, req client.AgentRunRequest, now time.Time, state string) (client.AgentSession, error) {
	if strings.TrimSpace(req.RoomID) == "" {
		return client.AgentSession{}, canvas.Invalid("roomId", "is required: the canvas id")
	}
	if strings.TrimSpace(req.Message) == "" {
		return client.AgentSession{}, canvas.Invalid("message", "is required: what the agent should do")
	}
	if len(req.Message) > 20000 {
		return client.AgentSession{}, canvas.Invalid("message", "is longer than 20000 bytes")
	}
	spec := req.Model
	if spec == "" {
		spec = cfg.Model
	}
	if _, _, err := ParseModel(spec); err != nil {
		return client.AgentSession{}, canvas.Invalid("model", "%v", err)
	}
	if req.Viewport != nil && (req.Viewport.W <= 0 || req.Viewport.H <= 0) {
		return client.AgentSession{}, canvas.Invalid("viewport", "w and h must be > 0")
	}
	if len(req.Selection) > MaxIDs {
		return client.AgentSession{}, canvas.Invalid("selection", "more than %d ids", MaxIDs)
	}
	now = now.UTC()
	return client.AgentSession{ID: "as_" + uuid4(), CanvasID: req.RoomID, State: state, Model: spec,
		Message: req.Message, Viewport: req.Viewport, Selection: req.Selection,
		Transcript: []client.TranscriptEntry{{Role: "user", Text: req.Message, TS: now}}, Todos: []client.AgentTodo{},
		CreatedAt: now, UpdatedAt: now}, nil
}

func (r *Runner) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.base != nil && r.base.Err() == nil
}

// launch starts the worker goroutine of a stored session. remote: the
// session was claimed from the shared queue, so a cancel may arrive through
// the store (polled).
func (r *Runner) launch(rec client.AgentSession, remote bool) error {
	return r.launchTasks(rec, remote, []task{{kind: "initial", text: rec.Message}})
}

// launchTasks starts the worker goroutine of a stored session with the given
// queue. A session that already ran turns (reopened by a message) continues
// its turn count (action ids and idempotency keys stay unique) and its
// agent:action seq.
func (r *Runner) launchTasks(rec client.AgentSession, remote bool, tasks []task) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.base == nil || r.base.Err() != nil {
		return fmt.Errorf("agent: %w: %w", ErrNotRunning, canvas.ErrUnavailable)
	}
	sctx, cancel := context.WithTimeout(r.base, r.d.Config.Watchdog)
	s := &session{r: r, ctx: sctx, cancel: cancel, done: make(chan struct{}), rec: rec, spec: rec.Model,
		protected: map[string]bool{}, started: r.d.Now(), queue: tasks, remote: remote,
		turn: rec.Stats.Turns, seq: seqBase(rec, r.d.Now())}
	r.sessions[rec.ID] = s
	r.wg.Add(1)
	go s.work()
	if remote {
		r.wg.Add(1)
		go s.watchRemoteCancel()
	}
	return nil
}

// Session returns a session with its transcript, todos and stats: the live
// view while it runs, the stored one afterwards (also after a restart).
func (r *Runner) Session(ctx context.Context, id string) (client.AgentSession, error) {
	r.mu.Lock()
	s := r.sessions[id]
	r.mu.Unlock()
	stored, err := r.d.Store.GetSession(ctx, id)
	if err != nil {
		return stored, err
	}
	if s != nil {
		s.mu.Lock()
		live := s.rec
		live.Transcript = append([]client.TranscriptEntry(nil), s.rec.Transcript...)
		s.mu.Unlock()
		live.Todos = stored.Todos
		return live, nil
	}
	return stored, nil
}

// Cancel stops a session: its model stream is closed and no further action
// is applied once Cancel returns (it waits up to 10 s for an in-flight
// command to finish). Canceling a finished session changes nothing.
func (r *Runner) Cancel(ctx context.Context, id string) error {
	r.mu.Lock()
	s := r.sessions[id]
	r.mu.Unlock()
	if s == nil {
		_, err := r.d.Store.GetSession(ctx, id)
		return err
	}
	s.mu.Lock()
	s.canceled = true
	s.mu.Unlock()
	s.cancel()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return fmt.Errorf("agent session %q: cancel is taking longer than 10 s: %w", id, canvas.ErrUnavailable)
	}
}

// Done returns a channel closed when the session's run has ended, or nil
// when the session is not running in this runner.
func (r *Runner) Done(id string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.sessions[id]; s != nil {
		return s.done
	}
	return nil
}

// work is the session's worker: it runs queued turns in FIFO order.
func (s *session) work() {
	r := s.r
	defer r.wg.Done()
	defer close(s.done)
	defer func() {
		r.mu.Lock()
		if r.sessions[s.rec.ID] == s { // a message may have relaunched it already
			delete(r.sessions, s.rec.ID)
		}
		r.mu.Unlock()
	}()
	defer s.cancel()
	final, detail := client.AgentDone, ""
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.ended = true
			s.mu.Unlock()
			break
		}
		t := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		if err := s.runTurn(t); err != nil {
			final, detail = client.AgentError, err.Error()
			if s.ctx.Err() != nil {
				final, detail = s.endReason()
			}
			break
		}
		if s.ctx.Err() != nil {
			final, detail = s.endReason()
			break
		}
		s.mu.Lock()
		more := len(s.queue) > 0
		s.mu.Unlock()
		if more {
			s.status(client.AgentScheduled, map[string]any{"queue": len(s.queue)})
		}
	}
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	s.finish(final, detail)
	s.handOff(final)
}

func (s *session) endReason() (string, string) {
	s.mu.Lock()
	canceled := s.canceled
	s.mu.Unlock()
	if canceled {
		return client.AgentCanceled, "canceled"
	}
	if errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
		return client.AgentError, fmt.Sprintf("watchdog: the run exceeded %s", s.r.d.Config.Watchdog)
	}
	return client.AgentCanceled, "runner stopped"
}

func (s *session) finish(state, detail string) {
	s.mu.Lock()
	s.rec.State, s.rec.Detail = state, detail
	s.rec.UpdatedAt = s.r.d.Now().UTC()
	rec := s.rec
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.r.d.Store.SaveSession(ctx, rec); err != nil && !errors.Is(err, canvas.ErrConflict) {
		s.r.log.Error("agent: saving session failed", "session_id", rec.ID, "err", err)
	}
	s.r.publish(rec.CanvasID, client.EventAgentStatus, StatusEvent{Type: "agent:status", SessionID: rec.ID, State: state, Detail: detailOrNil(detail)})
	s.r.d.Metrics.session(state)
	s.r.log.Info("agent: session ended", "session_id", rec.ID, "canvas_id", rec.CanvasID, "state", state, "detail", detail,
		"turns", rec.Stats.Turns, "applied", rec.Stats.ActionsApplied, "dropped", rec.Stats.ActionsDropped,
		"conflicts", rec.Stats.Conflicts, "followups", rec.Stats.FollowUps)
}

func detailOrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (r *Runner) publish(canvasID, event string, v any) { r.d.Events.PublishEvent(canvasID, event, v) }

// status publishes agent:status and stores the state.
func (s *session) status(state string, detail any) {
	s.mu.Lock()
	if s.canceled && state != client.AgentCanceled {
		s.mu.Unlock()
		return
	}
	s.rec.State = state
	s.rec.UpdatedAt = s.r.d.Now().UTC()
	rec := s.rec
	s.mu.Unlock()
	s.r.publish(rec.CanvasID, client.EventAgentStatus, StatusEvent{Type: "agent:status", SessionID: rec.ID, State: state, Detail: detail})
	if err := s.r.d.Store.SaveSession(s.ctx, rec); err != nil && s.ctx.Err() == nil {
		if errors.Is(err, canvas.ErrConflict) {
			s.markCanceled() // ended elsewhere (a cancel through another server)
			return
		}
		s.r.log.Warn("agent: saving session state failed", "session_id", rec.ID, "err", err)
	}
}

func (s *session) note(role, text string) {
	s.mu.Lock()
	s.rec.Transcript = append(s.rec.Transcript, client.TranscriptEntry{Role: role, Text: text, TS: s.r.d.Now().UTC()})
	if n := len(s.rec.Transcript); n > 500 {
		s.rec.Transcript = s.rec.Transcript[n-500:]
	}
	s.mu.Unlock()
}

func (s *session) chat(role, text string) {
	s.note(role, text)
	s.r.publish(s.rec.CanvasID, client.EventAgentChat, ChatEvent{Type: "agent:chat", SessionID: s.rec.ID, Message: ChatMessage{Role: role, Text: text}})
}

func (s *session) stats(f func(st *client.AgentStats)) {
	s.mu.Lock()
	f(&s.rec.Stats)
	s.mu.Unlock()
}

func (s *session) envelope(partial bool, actions []Action) {
	s.seq++
	s.r.publish(s.rec.CanvasID, client.EventAgentAction, ActionEnvelope{V: ActionsVersion, SessionID: s.rec.ID, Seq: s.seq,
		Partial: partial, Actions: actions, TS: s.r.d.Now().UnixMilli()})
}

// enqueue adds a follow-up turn if the session's bounds allow it.
func (s *session) enqueue(t task) bool {
	cfg := s.r.d.Config
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.canceled || len(s.queue) >= cfg.QueueDepth {
		return false
	}
	switch t.kind {
	case "replan":
		if s.replans >= cfg.MaxReplans {
			return false
		}
		s.replans++
		s.rec.Stats.Replans++
		s.queue = append([]task{t}, s.queue...) // a re-plan goes first
	default:
		if s.followups >= cfg.MaxFollowups {
			return false
		}
		s.followups++
		s.rec.Stats.FollowUps++
		s.queue = append(s.queue, t)
	}
	s.r.d.Metrics.followup(t.kind)
	return true
}

// errConflict aborts a turn whose plan met a concurrent edit.
type errConflict struct{ what string }

// Error names what conflicted.
func (e *errConflict) Error() string { return "conflict: " + e.what }

// turnState is one turn's bookkeeping.
type turnState struct {
	applied   int // canvas actions applied
	conflict  *errConflict
	lastPrev  string
	completeN int
}

// runTurn runs one model turn. It returns an error only for failures that
// end the session (the model or canvasd unreachable); conflicts re-plan.
func (s *session) runTurn(t task) error {
	r := s.r
	cfg := r.d.Config
	s.turn++
	s.stats(func(st *client.AgentStats) { st.Turns++ })
	s.status(client.AgentWaitingContext, map[string]any{"turn": s.turn, "kind": t.kind})

	snap, err := r.d.Client.Snapshot(s.ctx, s.rec.CanvasID)
	if err != nil {
		return fmt.Errorf("reading the canvas: %w", err)
	}
	ids := make([]string, len(snap.State.Nodes))
	for i, n := range snap.State.Nodes {
		ids[i] = n.ID
	}
	if s.san == nil {
		s.san = NewSanitizer(ids, nil)
	} else {
		s.san.Reset(ids)
	}
	s.knownRev = snap.HeadRev
	s.mu.Lock()
	transcript := append([]client.TranscriptEntry(nil), s.rec.Transcript...)
	vp, sel := s.rec.Viewport, s.rec.Selection
	s.mu.Unlock()
	pc := r.promptContext(s.rec.CanvasID, snap, vp, sel, transcript)
	s.san.SetOrigin(pc.Viewport.X+pc.Viewport.W/4, pc.Viewport.Y+pc.Viewport.H/4)

	provider, model, err := r.d.Providers.Get(s.spec)
	if err != nil {
		return err
	}
	user := Message{Role: "user", Text: "Canvas context (JSON):\n" + pc.JSON + "\n\n" + s.instruction(t)}
	var shotMsg []Message
	if r.d.Screenshots != nil && provider.Vision() {
		shot, err := r.screenshot(s, pc)
		if err != nil {
			s.stats(func(st *client.AgentStats) { st.ScreenshotMissed++ })
			r.log.Warn("agent: no screenshot, continuing text-only (degraded run)", "session_id", s.rec.ID, "err", err)
		} else {
			user.ImageDataURL = shot.DataURL
		}
	}
	if t.image != "" { // the user's image is the turn's subject; a screenshot goes before it
		if user.ImageDataURL != "" {
			shotMsg = []Message{{Role: "user", Text: "Screenshot of the current viewport.", ImageDataURL: user.ImageDataURL}}
		}
		user.ImageDataURL = t.image
	}
	req := ModelRequest{Model: model, Task: t.text, Kind: t.kind, Viewport: pc.Viewport,
		Messages: append(append([]Message{{Role: "system", Text: r.system}}, shotMsg...), user)}
	if t.kind != "initial" && t.kind != turnMessage {
		zero := float32(0)
		req.Temperature = &zero // stricter sampling for follow-ups
	}
	if cfg.Debug {
		r.log.Debug("agent: prompt", "session_id", s.rec.ID, "system_bytes", len(r.system), "user", user.Text)
	}
	r.log.Info("agent: calling model", "session_id", s.rec.ID, "turn", s.turn, "kind", t.kind, "model", s.spec,
		"shapes", pc.Stats.Count, "shape_state_bytes", pc.Stats.Bytes, "shape_state_truncated", pc.Stats.Truncated,
		"prompt_bytes", len(r.system)+len(user.Text), "image_bytes", len(user.ImageDataURL), "doc_version", pc.DocVersion)

	s.status(client.AgentCallingModel, map[string]any{"model": s.spec})
	tctx, tcancel := context.WithCancel(s.ctx)
	defer tcancel()
	callStart := r.d.Now()
	stream, err := provider.Stream(tctx, req)
	if err != nil {
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		return fmt.Errorf("model %s: %w", s.spec, err)
	}
	defer stream.Close()

	p := NewParser(cfg.MaxOutputBytes)
	ts := &turnState{}
	first := true
	var text strings.Builder
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			if s.ctx.Err() != nil {
				return s.ctx.Err()
			}
			return fmt.Errorf("model %s stream: %w", s.spec, err)
		}
		if first {
			first = false
			if s.turn == 1 {
				d := r.d.Now().Sub(s.started)
				s.stats(func(st *client.AgentStats) { st.TTFBMS = ms(d) })
			}
			s.status(client.AgentStreaming, nil)
		}
		if cfg.Debug {
			text.WriteString(chunk)
		}
		done, part := p.Feed(chunk)
		for _, pa := range done {
			if err := s.handleComplete(ts, pa); err != nil {
				return err
			}
			if ts.conflict != nil {
				break
			}
		}
		if ts.conflict != nil {
			tcancel() // the plan is stale: stop the stream
			break
		}
		if part != nil {
			s.preview(ts, *part)
		}
	}
	r.d.Metrics.observeModel(r.d.Now().Sub(callStart))
	s.stats(func(st *client.AgentStats) { st.ModelLatencyMS += ms(r.d.Now().Sub(callStart)) })
	if cfg.Debug {
		r.log.Debug("agent: model reply", "session_id", s.rec.ID, "text", text.String())
	}
	if s.ctx.Err() != nil {
		return s.ctx.Err()
	}
	if ts.conflict == nil {
		ready, drops := s.san.Flush()
		s.dropped(drops)
		if err := s.applyReady(ts, ready, r.d.Now()); err != nil {
			return err
		}
	}
	if ts.completeN == 0 {
		r.log.Warn("agent: the model reply held no actions", "session_id", s.rec.ID, "turn", s.turn, "overflow", p.Overflowed())
		s.note("system", "The model's reply contained no valid actions.")
	}
	if ts.conflict != nil {
		rt := task{kind: "replan", text: s.rec.Message, conflict: ts.conflict.what}
		if t.kind == turnMessage {
			rt.text, rt.image, rt.from = t.text, t.image, t.from // re-plan the message, not the session's first request
		}
		if s.enqueue(rt) {
			s.chat("system", "Someone else changed "+ts.conflict.what+"; re-planning with the fresh canvas.")
		} else {
			s.chat("system", "Someone else changed "+ts.conflict.what+"; not re-planning again (limit reached).")
		}
		return nil
	}
	// Low-action follow-up: once, after the first turn.
	if t.kind == "initial" && !s.lowUsed && ts.applied < cfg.LowActionThreshold && ts.completeN > 0 {
		s.lowUsed = true
		s.enqueue(task{kind: "low_action", text: s.rec.Message})
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *session) instruction(t task) string {
	switch t.kind {
	case "followup":
		return "Follow-up pass for the task: " + s.rec.Message + "\nAdd detail: " + t.text +
			"\nThe shapes you already made are in the context: update or extend them, do not create them again."
	case "low_action":
		return "Your previous reply applied few actions. Complete the task now with concrete create_shape / update_shape actions: " + t.text +
			"\nThe shapes you already made are in the context; do not create them again."
	case turnMessage:
		return messageInstruction(t)
	case "replan":
		return "While you worked, someone else changed " + t.conflict + ". Their edits stand: do not change those shapes back. " +
			"Continue the task with the fresh canvas above: " + t.text
	}
	return "Task: " + t.text
}

// preview publishes a partial envelope when the sanitized preview changed.
func (s *session) preview(ts *turnState, pa ParsedAction) {
	a, ok := s.san.SanitizePreview(Action{ID: s.actionID(pa.Index), Name: pa.Name, Params: pa.Params})
	if !ok {
		return
	}
	b, _ := json.Marshal(a)
	if string(b) == ts.lastPrev {
		return
	}
	ts.lastPrev = string(b)
	s.envelope(true, []Action{a})
}

func (s *session) actionID(idx int) string {
	return fmt.Sprintf("%s.%d.%d", s.rec.ID, s.turn, idx)
}

// handleComplete sanitizes and applies one complete parsed action.
func (s *session) handleComplete(ts *turnState, pa ParsedAction) error {
	at := s.r.d.Now()
	ts.completeN++
	ts.lastPrev = ""
	s.stats(func(st *client.AgentStats) { st.ActionsParsed++ })
	ready, drops := s.san.Push(Action{ID: s.actionID(pa.Index), Name: pa.Name, Params: pa.Params})
	s.dropped(drops)
	return s.applyReady(ts, ready, at)
}

func (s *session) dropped(drops []Drop) {
	for _, d := range drops {
		outcome := "dropped"
		if strings.HasPrefix(d.Reason, "duplicate") {
			outcome = "duplicate"
			s.stats(func(st *client.AgentStats) { st.DuplicatesDropped++ })
			s.r.log.Info("[CanvasAgent:Dedupe] duplicate create dropped", "session_id", s.rec.ID, "action", d.Action.Name, "reason", d.Reason)
		} else {
			s.r.log.Info("[CanvasAgent:SchemaGuard] action dropped", "session_id", s.rec.ID, "action", d.Action.Name, "reason", d.Reason)
		}
		s.stats(func(st *client.AgentStats) { st.ActionsDropped++ })
		s.r.d.Metrics.action(outcome)
	}
}

// applyReady publishes the sanitized actions as one envelope and applies them in order.
func (s *session) applyReady(ts *turnState, ready []Action, at time.Time) error {
	if len(ready) == 0 {
		return nil
	}
	if !s.firstAct {
		s.firstAct = true
		d := s.r.d.Now().Sub(s.started)
		s.stats(func(st *client.AgentStats) { st.TimeToFirstAction = ms(d) })
		s.r.d.Metrics.observeTTFA(d)
		if d > s.r.d.Config.TTFBSLO {
			s.r.log.Warn("agent: time to first action over the SLO", "session_id", s.rec.ID, "ms", ms(d), "slo_ms", s.r.d.Config.TTFBSLO.Milliseconds())
		}
	}
	s.envelope(false, ready)
	for _, a := range ready {
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		if ts.conflict != nil {
			return nil
		}
		if err := s.apply(ts, a, at); err != nil {
			return err
		}
	}
	return nil
}

// apply carries out one sanitized action.
func (s *session) apply(ts *turnState, a Action, at time.Time) error {
	r := s.r
	switch a.Name {
	case "think":
		s.chat("assistant", a.Params["text"].(string))
		r.d.Metrics.action("meta")
		return nil
	case "todo":
		status, _ := a.Params["status"].(string)
		todo, err := r.d.Store.AddTodo(s.ctx, client.AgentTodo{SessionID: s.rec.ID, Text: a.Params["text"].(string), Status: status})
		if err != nil {
			r.log.Warn("agent: storing todo failed", "session_id", s.rec.ID, "err", err)
			return nil
		}
		s.chat("system", fmt.Sprintf("todo #%d: %s", todo.Position+1, todo.Text))
		r.d.Metrics.action("meta")
		return nil
	case "add_detail":
		hint, _ := a.Params["hint"].(string)
		if hint == "" {
			hint = "add detail to what you drew"
		}
		if s.enqueue(task{kind: "followup", text: hint}) {
			s.note("system", "follow-up scheduled: "+hint)
		} else {
			s.note("system", "follow-up not scheduled (limit reached): "+hint)
		}
		r.d.Metrics.action("meta")
		return nil
	case "set_viewport":
		r.d.Metrics.action("meta") // ephemeral: the envelope is the whole effect
		return nil
	}
	// Never overwrite what someone else changed during this session.
	for _, id := range refsOf(a) {
		if s.protected[id] {
			ts.conflict = &errConflict{what: "shape " + id}
			s.stats(func(st *client.AgentStats) { st.Conflicts++ })
			r.d.Metrics.conflict()
			r.d.Metrics.action("skipped")
			return nil
		}
	}
	if s.remote && s.remoteCanceled() {
		s.markCanceled()
		return s.ctx.Err()
	}
	args, err := json.Marshal(a.Params)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", a.Name, err)
	}
	s.cmdN++
	for attempt := 0; ; attempt++ {
		base := s.knownRev
		env := canvas.Envelope{ID: fmt.Sprintf("cmd_%s_%d", s.rec.ID, s.cmdN), Type: a.Name, BaseRev: &base,
			IdempotencyKey: "idem_" + a.ID, Args: args}
		rr, err := r.d.Client.Command(s.ctx, s.rec.CanvasID, env)
		var ce *client.ConflictError
		var pe *client.ProblemError
		switch {
		case err == nil:
			lat := r.d.Now().Sub(at)
			r.d.Metrics.observeCommit(lat)
			if r.d.OnActionCommit != nil {
				r.d.OnActionCommit(lat)
			}
			r.d.Metrics.action("applied")
			s.stats(func(st *client.AgentStats) { st.ActionsApplied++ })
			ts.applied++
			return s.advance(rr.CurrentRev)
		case errors.As(err, &ce):
			ours := s.syncTo(ce.Result.CurrentRev, ce.Result.RecoveryOps)
			if ours && attempt == 0 {
				continue // only our own commits moved: retry at the new head
			}
			s.stats(func(st *client.AgentStats) { st.Conflicts++ })
			r.d.Metrics.conflict()
			r.d.Metrics.action("conflict")
			ids := append([]string(nil), ce.Result.ConflictingIDs...)
			sort.Strings(ids)
			for _, id := range ids {
				s.protected[id] = true
			}
			ts.conflict = &errConflict{what: strings.Join(ids, ", ")}
			return nil
		case errors.As(err, &pe) && (pe.Status == 400 || pe.Status == 422 || pe.Status == 404 || pe.Status == 413):
			r.log.Info("agent: command rejected", "session_id", s.rec.ID, "action", a.Name, "status", pe.Status, "detail", pe.Detail)
			s.stats(func(st *client.AgentStats) { st.ActionsDropped++ })
			r.d.Metrics.action("rejected")
			if a.Name == "create_shape" {
				s.san.Forget(a.Params["id"].(string))
			}
			return nil
		case s.ctx.Err() != nil:
			return s.ctx.Err()
		case attempt < 2:
			// A transport error or 5xx: the same idempotency key makes the retry safe.
			t := time.NewTimer(time.Duration(50*(attempt+1)) * time.Millisecond)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return s.ctx.Err()
			case <-t.C:
			}
			continue
		default:
			return fmt.Errorf("applying %s: %w", a.Name, err)
		}
	}
}

// refsOf lists the existing shapes an action modifies.
func refsOf(a Action) []string {
	var out []string
	if a.Name != "create_shape" {
		if id, ok := a.Params["id"].(string); ok {
			out = append(out, id)
		}
	}
	if ids, ok := a.Params["ids"].([]any); ok {
		for _, x := range ids {
			out = append(out, x.(string))
		}
	}
	return out
}

// advance moves knownRev past our own commit, learning any commits of
// others in between (their shapes become protected).
func (s *session) advance(rev int64) error {
	if rev == s.knownRev+1 {
		s.knownRev = rev
		return nil
	}
	if rev <= s.knownRev {
		return nil // an idempotent replay
	}
	commits, err := s.r.d.Client.AllEvents(s.ctx, s.rec.CanvasID, s.knownRev)
	if err != nil {
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		s.r.log.Warn("agent: reading concurrent commits failed", "session_id", s.rec.ID, "err", err)
		return nil // keep the old base: the server's conflict check still protects
	}
	s.learn(commits)
	if rev > s.knownRev {
		s.knownRev = rev
	}
	return nil
}

// syncTo reads commits up to rev; it reports whether every commit in ops
// (the commits that touched the conflicting ids) was ours.
func (s *session) syncTo(rev int64, ops []canvas.Commit) bool {
	ours := len(ops) > 0
	for _, c := range ops {
		if !s.isOurs(c) {
			ours = false
		}
	}
	commits, err := s.r.d.Client.AllEvents(s.ctx, s.rec.CanvasID, s.knownRev)
	if err != nil {
		return false
	}
	s.learn(commits)
	if ours && rev > s.knownRev {
		s.knownRev = rev
	}
	return ours
}

func (s *session) isOurs(c canvas.Commit) bool {
	return strings.HasPrefix(c.CmdID, "cmd_"+s.rec.ID+"_")
}

// learn applies others' commits to what the session knows.
func (s *session) learn(commits []canvas.Commit) {
	for _, c := range commits {
		if c.Rev > s.knownRev {
			s.knownRev = c.Rev
		}
		if s.isOurs(c) {
			continue
		}
		for _, ch := range c.Changes {
			if ch.Kind != canvas.KindNode {
				continue
			}
			s.protected[ch.ID] = true
			if ch.Op == canvas.OpDelete {
				s.san.Forget(ch.ID)
			} else {
				s.san.Learn(ch.ID)
			}
		}
	}
}

// promptContext builds (or reuses) the canvas context of a prompt.
func (r *Runner) promptContext(canvasID string, snap client.Snapshot, vp *Box, sel []string, tr []client.TranscriptEntry) PromptContext {
	cfg := r.d.Config
	now := r.d.Now()
	in := ContextInput{Snapshot: snap, Viewport: vp, Selection: sel, Transcript: tr, Now: now}
	if cfg.DisablePromptCache {
		return BuildContext(cfg, in)
	}
	var window []string
	for _, e := range tr {
		if now.Sub(e.TS) <= cfg.TranscriptWindow {
			window = append(window, e.Role+":"+e.Text)
		}
	}
	key := fmt.Sprintf("%s|%d|%v|%v|%s", canvasID, snap.HeadRev, sel, vp, strings.Join(window, "\x00"))
	r.cacheMu.Lock()
	if c, ok := r.cache[key]; ok && now.Before(c.expires) {
		r.cacheMu.Unlock()
		return c.pc
	}
	r.cacheMu.Unlock()
	pc := BuildContext(cfg, in)
	r.cacheMu.Lock()
	if len(r.cache) >= 256 {
		for k, c := range r.cache {
			if !now.Before(c.expires) || len(r.cache) >= 256 {
				delete(r.cache, k)
			}
		}
	}
	r.cache[key] = cachedContext{pc: pc, expires: now.Add(cfg.PromptCacheTTL)}
	r.cacheMu.Unlock()
	return pc
}
