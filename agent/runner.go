package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

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
	d         Deps
	log       *slog.Logger
	system    string // the system prompt of canvas turns
	docSystem string // and of document turns

	mu       sync.Mutex
	base     context.Context
	stop     context.CancelFunc
	sessions map[string]*session
	wg       sync.WaitGroup
	poll     time.Duration // worker mode: how often to check for remote cancels

	cacheMu sync.Mutex
	cache   map[string]cachedContext

	shots shotCache // screenshots by canvas, revision and bounds (screenshot.go)

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
	return &Runner{d: d, log: d.Logger, system: SystemPrompt(), docSystem: DocumentSystemPrompt(), sessions: map[string]*session{},
		cache: map[string]cachedContext{}}, nil
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
	if err := r.d.Store.CreateAgentSession(ctx, rec); err != nil {
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
	if ds := req.DocumentSelection; ds != nil {
		if req.Document == "" {
			return client.AgentSession{}, canvas.Invalid("document_selection", "needs document: the node id of the document it is a selection of")
		}
		if ds.StartLine < 1 || ds.EndLine < ds.StartLine {
			return client.AgentSession{}, canvas.Invalid("document_selection", "start_line must be ≥ 1 and end_line ≥ start_line")
		}
	}
	now = now.UTC()
	return client.AgentSession{ID: "as_" + uuid4(), CanvasID: req.RoomID, State: state, Model: spec,
		Message: req.Message, Viewport: req.Viewport, Selection: req.Selection, Document: req.Document, DocumentSelection: req.DocumentSelection,
		Transcript: []client.TranscriptEntry{{Role: "user", Text: req.Message, TS: now}}, Todos: []client.AgentTodo{}, Turns: []canvas.AgentTurn{},
		CreatedAt: now, UpdatedAt: now}, nil
}

func (r *Runner) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.base != nil && r.base.Err() == nil
}

// launch starts the worker goroutine of a stored session. remote: the
// session was claimed from the shared queue, so a cancel may arrive through
// the store (polled). A session queued with pending turns (messages taken
// by a server whose agents run as workers) runs those, and drops them from
// what it saves; any other runs its message as its first turn.
func (r *Runner) launch(rec client.AgentSession, remote bool) error {
	if len(rec.Pending) > 0 {
		tasks := pendingTasks(rec.Pending)
		rec.Pending = nil
		return r.launchTasks(rec, remote, tasks)
	}
	return r.launchTasks(rec, remote, []task{{kind: TurnInitial, text: rec.Message}})
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
		protected: map[string]bool{}, docs: map[string]bool{}, place: newPlacer(), startRev: -1, started: r.d.Now(), queue: tasks, remote: remote,
		turn: rec.Stats.Turns, seq: seqBase(rec, r.d.Now()), dl: newDelivery()}
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
// view while it runs, the stored one afterwards (also after a restart). The
// todos and each turn's RevertedRev are always the stored ones (a revert is
// recorded by the server, not by the run).
func (r *Runner) Session(ctx context.Context, id string) (client.AgentSession, error) {
	stored, err := r.d.Store.GetAgentSession(ctx, id)
	if err != nil {
		return stored, err
	}
	return r.liveView(stored), nil
}

// Sessions returns the last limit sessions of a canvas, newest first, each
// as Session returns it.
func (r *Runner) Sessions(ctx context.Context, canvasID string, limit int) ([]client.AgentSession, error) {
	list, err := r.d.Store.ListAgentSessions(ctx, canvasID, limit)
	for i := range list {
		list[i] = r.liveView(list[i])
	}
	return list, err
}

// liveView returns the session as it runs in this runner, with the stored
// todos and RevertedRevs; stored itself when it does not run here.
func (r *Runner) liveView(stored client.AgentSession) client.AgentSession {
	r.mu.Lock()
	s := r.sessions[stored.ID]
	r.mu.Unlock()
	if s == nil {
		return stored
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	live := s.rec
	live.Transcript = append([]client.TranscriptEntry(nil), s.rec.Transcript...)
	reverted := make(map[int]*int64, len(stored.Turns))
	for _, t := range stored.Turns {
		reverted[t.Turn] = t.RevertedRev
	}
	live.Turns = make([]canvas.AgentTurn, len(s.rec.Turns))
	for i, t := range s.rec.Turns {
		t.Revs = append([]int64{}, t.Revs...)
		t.RevertedRev = reverted[t.Turn]
		live.Turns[i] = t
	}
	live.Todos = stored.Todos
	return live
}

// Cancel stops a session: its model stream is closed and no further action
// is applied once Cancel returns (it waits up to 10 s for an in-flight
// command to finish). Canceling a finished session changes nothing; one
// stored as running that no process runs any more (not updated within
// Config.Watchdog: its process stopped mid-run) is marked canceled.
func (r *Runner) Cancel(ctx context.Context, id string) error {
	r.mu.Lock()
	s := r.sessions[id]
	r.mu.Unlock()
	if s == nil {
		rec, err := r.d.Store.GetAgentSession(ctx, id)
		if err != nil || client.AgentTerminal(rec.State) || r.d.Now().Sub(rec.UpdatedAt) <= r.d.Config.Watchdog {
			return err // ended, or running (in another process: its last update is recent)
		}
		// Stored as running but not updated for longer than a run may last:
		// the process running it stopped mid-run. It is marked canceled, so
		// it does not show as running forever.
		if was, _, err := r.d.Store.CancelAgentSession(ctx, id); err != nil || was == "" {
			return err
		}
		r.publish(rec.CanvasID, client.EventAgentStatus, StatusEvent{Type: "agent:status", SessionID: id, State: client.AgentCanceled,
			Detail: "canceled (its run had stopped: the process running it ended)"})
		return nil
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

// Wait returns the session once its run has ended, or as it is when ctx
// ends first (then its state is not terminal; Wait does not fail for that).
func (r *Runner) Wait(ctx context.Context, id string) (client.AgentSession, error) {
	if done := r.Done(id); done != nil {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	return r.Session(context.WithoutCancel(ctx), id)
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
