package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// Queue is the agent endpoints' service on a server without an in-process
// runner: Run stores the session as queued (a worker sharing the database
// claims it), Cancel marks it canceled in the store and waits until the
// worker running it has stopped. It implements the same methods as Runner.
type Queue struct {
	cfg    Config
	store  SessionStore
	events Events
	now    func() time.Time
}

// NewQueue returns the queue service. events may be nil.
func NewQueue(cfg Config, store SessionStore, events Events) *Queue {
	return &Queue{cfg: cfg, store: store, events: events, now: time.Now}
}

// Run validates and queues a session. A canvas that does not exist is canvas.ErrNotFound.
func (q *Queue) Run(ctx context.Context, req client.AgentRunRequest) (string, error) {
	rec, err := newSessionRecord(q.cfg, req, q.now(), canvas.AgentQueued)
	if err != nil {
		return "", err
	}
	if err := q.store.CreateAgentSession(ctx, rec); err != nil {
		return "", err
	}
	q.publish(rec.CanvasID, StatusEvent{Type: "agent:status", SessionID: rec.ID, State: client.AgentScheduled, Detail: "queued for an agent worker"})
	return rec.ID, nil
}

func (q *Queue) publish(canvasID string, ev StatusEvent) {
	if q.events != nil {
		q.events.PublishEvent(canvasID, client.EventAgentStatus, ev)
	}
}

// Session returns the stored session (a queued one shows as scheduled).
func (q *Queue) Session(ctx context.Context, id string) (client.AgentSession, error) {
	s, err := q.store.GetAgentSession(ctx, id)
	return shownQueued(s), err
}

// Sessions returns the last limit sessions of a canvas, newest first, as
// Session returns them.
func (q *Queue) Sessions(ctx context.Context, canvasID string, limit int) ([]client.AgentSession, error) {
	list, err := q.store.ListAgentSessions(ctx, canvasID, limit)
	for i := range list {
		list[i] = shownQueued(list[i])
	}
	return list, err
}

// shownQueued is s as clients see it: a queued session is scheduled.
func shownQueued(s client.AgentSession) client.AgentSession {
	if s.State == canvas.AgentQueued {
		s.State = client.AgentScheduled
	}
	return s
}

// Wait returns the session once it has ended, or as it is when ctx ends
// first (then its state is not terminal): it polls the store, where the
// worker running it saves its state.
func (q *Queue) Wait(ctx context.Context, id string) (client.AgentSession, error) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		s, err := q.Session(context.WithoutCancel(ctx), id)
		if err != nil || client.AgentTerminal(s.State) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return s, nil
		case <-t.C:
		}
	}
}

// Cancel stops a session as Runner.Cancel does: no further action is
// applied once it returns. It marks the session canceled in the store; when
// a worker was running it, Cancel then waits until that worker has stopped,
// its command in flight answered, and saved the session's final state (its
// worker notices the cancel within its poll interval), up to 10 s: longer is
// an error wrapping canvas.ErrUnavailable. A queued session is never claimed
// once canceled; canceling a finished session changes nothing.
func (q *Queue) Cancel(ctx context.Context, id string) error {
	s, err := q.store.GetAgentSession(ctx, id)
	if err != nil {
		return err
	}
	was, at, err := q.store.CancelAgentSession(ctx, id)
	if err != nil || was == "" {
		return err
	}
	q.publish(s.CanvasID, StatusEvent{Type: "agent:status", SessionID: id, State: client.AgentCanceled, Detail: "canceled"})
	if was == canvas.AgentQueued {
		return nil
	}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return fmt.Errorf("agent session %q: canceled, but its worker did not confirm that it stopped within 10 s: %w", id, canvas.ErrUnavailable)
		case <-t.C:
		}
		// The worker's final save is the only one over the cancel's.
		cur, err := q.store.GetAgentSession(ctx, id)
		if err != nil {
			return err
		}
		if !cur.UpdatedAt.Equal(at) {
			return nil
		}
	}
}

// Catalog returns the action catalog JSON.
func (q *Queue) Catalog() []byte { return CatalogJSON() }

// WorkerOptions tune Runner.Work.
type WorkerOptions struct {
	Poll          time.Duration // how often to look for queued sessions and cancels (default 200 ms)
	MaxConcurrent int           // sessions run at once (default 8)
}

// Work claims queued sessions from the store and runs them until ctx ends
// (the `canvasd agent` worker). Start must have been called. It returns
// ctx's error, or an error when the store keeps failing.
func (r *Runner) Work(ctx context.Context, o WorkerOptions) error {
	if o.Poll <= 0 {
		o.Poll = 200 * time.Millisecond
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 8
	}
	r.mu.Lock()
	r.poll = o.Poll
	r.mu.Unlock()
	failures := 0
	t := time.NewTicker(o.Poll)
	defer t.Stop()
	for {
		for r.active() < o.MaxConcurrent && r.running() {
			rec, err := r.d.Store.ClaimAgentSession(ctx, r.d.ActorID)
			if errors.Is(err, canvas.ErrNotFound) {
				failures = 0
				break
			}
			if err != nil {
				failures++
				r.log.Warn("agent worker: claiming a session failed", "err", err, "failures", failures)
				if failures >= 50 {
					return fmt.Errorf("agent worker: the session store keeps failing: %w", err)
				}
				break
			}
			failures = 0
			r.log.Info("agent worker: claimed session", "session_id", rec.ID, "canvas_id", rec.CanvasID)
			if err := r.launch(rec, true); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (r *Runner) active() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}

// watchRemoteCancel polls the store for a cancel made by the server.
func (s *session) watchRemoteCancel() {
	defer s.r.wg.Done()
	s.r.mu.Lock()
	poll := s.r.poll
	s.r.mu.Unlock()
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-s.ctx.Done():
			return
		case <-t.C:
			if s.remoteCanceled() {
				s.markCanceled()
				return
			}
		}
	}
}

// remoteCanceled reports whether the stored session was canceled elsewhere.
func (s *session) remoteCanceled() bool {
	st, err := s.r.d.Store.AgentSessionState(s.ctx, s.rec.ID)
	return err == nil && st == client.AgentCanceled
}

func (s *session) markCanceled() {
	s.mu.Lock()
	s.canceled = true
	s.mu.Unlock()
	s.cancel()
}

// WorkerSettings configure a standalone agent worker (`canvasd agent`).
type WorkerSettings struct {
	ServerURL string // a canvasd base URL, e.g. http://127.0.0.1:8080
	Token     string // an agent token (actor agent-{uuid}) with the editor role
	ActorID   string // that token's actor id, recorded with sessions (optional)
	// Store is the store the servers share (their PostgreSQL, or the
	// embedded database file of a server on the same machine), where runs
	// are queued.
	Store      SessionStore
	Config     Config
	Logger     *slog.Logger
	Registerer prometheus.Registerer // nil: metrics not registered
	Options    WorkerOptions
}

// RunWorker runs a standalone agent worker until ctx ends: it claims the
// sessions queued by servers (whose agent endpoints use a Queue), applies
// actions through the server's HTTP API with its own token, and publishes
// agent events through POST /api/canvas-agent/events. It returns nil when
// ctx ends, or an error when it cannot start or its store keeps failing.
func RunWorker(ctx context.Context, ws WorkerSettings) error {
	if ws.Token == "" {
		return fmt.Errorf("agent worker: a token is required (canvasd token create --role editor --actor-type agent): %w", canvas.ErrInvalid)
	}
	log := ws.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := client.New(ws.ServerURL, ws.Token)
	if err != nil {
		return err
	}
	if err := c.Health(ctx); err != nil {
		return fmt.Errorf("agent worker: server %s is not healthy: %w", ws.ServerURL, err)
	}
	r, err := NewRunner(Deps{Config: ws.Config, Client: c, ActorID: ws.ActorID, Events: HTTPEvents{Client: c, Log: log},
		Store: ws.Store, Screenshots: InvokeScreenshotter{Client: c}, Logger: log, Metrics: NewMetrics(ws.Registerer)})
	if err != nil {
		return err
	}
	r.Start(ctx)
	defer r.Stop()
	log.Info("agent worker: started", "server", ws.ServerURL, "config", ws.Config.String())
	err = r.Work(ctx, ws.Options)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}
