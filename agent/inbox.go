package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// MaxMessagePromptBytes bounds a posted message's prompt (the host's limit).
const MaxMessagePromptBytes = 64 << 10

// UserMessage is a message for an agent session from outside the run: a
// prompt with an optional image (POST /api/sessions/{id}/messages, an
// applet's sendAgentMessage) or an A2UI userAction (POST
// /api/host/{session}/actions). It becomes one turn of the session.
type UserMessage struct {
	// Principal is who sent it; they need the editor role on the session's canvas.
	Principal canvas.Principal
	// Prompt is the user's text; for a userAction, a one-line description.
	Prompt string
	// ImageDataURL is "data:image/<type>;base64,<data>" or empty. It is sent
	// to the model as an image part of the turn's user message.
	ImageDataURL string
	Source       string // e.g. "applet", "a2ui" (optional)
	AppletSlug   string // the applet that sent it (optional)
	// Action is set for an A2UI userAction.
	Action *UserAction
}

// UserAction is an A2UI userAction as the agent sees it.
type UserAction struct {
	Name              string
	SurfaceID         string
	SourceComponentID string
	Context           map[string]any
}

// Inbox is what the HTTP side (cmd/canvasd's host.Inbox adapter) posts
// messages to. *Runner delivers them to its sessions; *Queue (agents run as
// separate `canvasd agent` workers) queues them in the shared store as
// pending turns of a queued session, for the worker that claims it.
type Inbox interface {
	// PostMessage adds m as a new turn of session sessionID; see Runner.PostMessage.
	PostMessage(ctx context.Context, sessionID string, m UserMessage) error
	// PostToCanvas delivers m to the most recent session on canvasID, or a
	// new one, and returns that session's id; see Runner.PostToCanvas.
	PostToCanvas(ctx context.Context, canvasID string, m UserMessage) (string, error)
}

var (
	_ Inbox = (*Runner)(nil)
	_ Inbox = (*Queue)(nil)
)

// splitImageDataURL returns the media type (lower case) and the base64
// payload of a "data:image/<type>;base64,<payload>" URL.
func splitImageDataURL(dataURL string) (mediaType, payload string, ok bool) {
	rest, found := strings.CutPrefix(dataURL, "data:")
	if !found {
		return "", "", false
	}
	meta, payload, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mt, enc, found := strings.Cut(meta, ";")
	if !found || !strings.EqualFold(enc, "base64") || !strings.HasPrefix(strings.ToLower(mt), "image/") || len(payload)%4 != 0 {
		return "", "", false
	}
	for _, c := range mt {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/+.-", c)) {
			return "", "", false
		}
	}
	return strings.ToLower(mt), payload, true
}

// imageInfo returns the media type and decoded size of a base64 data URL.
func imageInfo(dataURL string) (mediaType string, size int, ok bool) {
	mt, payload, ok := splitImageDataURL(dataURL)
	if !ok {
		return "", 0, false
	}
	size = len(payload) / 4 * 3
	if strings.HasSuffix(payload, "==") {
		size -= 2
	} else if strings.HasSuffix(payload, "=") {
		size--
	}
	return mt, size, size > 0
}

// turn validates m and returns the turn it becomes and its transcript text.
func (m UserMessage) turn() (task, string, error) {
	if strings.TrimSpace(m.Prompt) == "" && m.ImageDataURL == "" && m.Action == nil {
		return task{}, "", canvas.Invalid("prompt", "is required (or send imageData)")
	}
	if len(m.Prompt) > MaxMessagePromptBytes {
		return task{}, "", canvas.Invalid("prompt", "is longer than %d bytes", MaxMessagePromptBytes)
	}
	var b strings.Builder
	switch {
	case m.Action != nil:
		ctxJSON, err := json.Marshal(m.Action.Context)
		if err != nil || m.Action.Context == nil {
			ctxJSON = []byte("{}")
		}
		fmt.Fprintf(&b, "A2UI userAction %q from component %q on surface %q, context %s", m.Action.Name,
			m.Action.SourceComponentID, m.Action.SurfaceID, truncUTF8(string(ctxJSON), 4000))
		if p := strings.TrimSpace(m.Prompt); p != "" && !strings.HasPrefix(p, "userAction ") {
			b.WriteString(": " + p)
		}
	default:
		b.WriteString(strings.TrimSpace(m.Prompt))
	}
	text := b.String()
	var note strings.Builder
	if m.Source != "" || m.AppletSlug != "" {
		note.WriteString("[")
		note.WriteString(m.Source)
		if m.AppletSlug != "" {
			if m.Source != "" {
				note.WriteString(" ")
			}
			note.WriteString(m.AppletSlug)
		}
		note.WriteString("] ")
	}
	note.WriteString(text)
	if m.ImageDataURL != "" {
		mt, size, ok := imageInfo(m.ImageDataURL)
		if !ok {
			return task{}, "", canvas.Invalid("imageData", "must be a data:image/<type>;base64,<data> URL")
		}
		if text == "" {
			text = "Look at the attached image."
		}
		fmt.Fprintf(&note, " (image attached: %s, %d bytes)", mt, size)
	}
	return task{kind: TurnMessage, text: text, image: m.ImageDataURL, from: sourceLine(m)}, strings.TrimSpace(note.String()), nil
}

// sourceLine names where a message came from.
func sourceLine(m UserMessage) string {
	switch {
	case m.Action != nil:
		return "the canvas host's A2UI surface"
	case m.AppletSlug != "":
		return fmt.Sprintf("applet %q", m.AppletSlug)
	case m.Source != "":
		return m.Source
	}
	return ""
}

// messageInstruction is the prompt instruction of a message turn.
func messageInstruction(t task) string {
	var b strings.Builder
	b.WriteString("The user sent you a message")
	if t.from != "" {
		b.WriteString(" from " + t.from)
	}
	b.WriteString(":\n" + t.text)
	if t.image != "" {
		mt, size, _ := imageInfo(t.image)
		fmt.Fprintf(&b, "\nAn image is attached (%s, %d bytes): look at it and answer about it.", mt, size)
	}
	b.WriteString("\nRespond with actions: think to answer in the chat, canvas actions to change the canvas.")
	return b.String()
}

// fakeImageThink is the debug/fake model's note about an image in the last
// message: a think action followed by a comma, or "". It never contains '%'.
func fakeImageThink(req ModelRequest) string {
	if len(req.Messages) == 0 {
		return ""
	}
	mt, size, ok := imageInfo(req.Messages[len(req.Messages)-1].ImageDataURL)
	if !ok {
		return ""
	}
	return fmt.Sprintf(`{"name":"think","params":{"text":"I received an %s image of %d bytes."}},`, mt, size)
}

// seqBase is the first agent:action seq of a launch: 0 for a new session;
// for a session relaunched by a message, the launch time in Unix
// microseconds' order of magnitude (ms × 1000), so seq stays strictly
// increasing across the session's launches (each launch would need more
// than 1000 envelopes per millisecond to overtake the next one).
func seqBase(rec client.AgentSession, now time.Time) int64 {
	if rec.Stats.Turns == 0 {
		return 0
	}
	return now.UnixMilli() * 1000
}

// PostMessage makes m a new turn of the agent session sessionID (an id from
// POST /api/canvas-agent/run) and returns without waiting for the model.
//
//   - The session must exist (canvas.ErrNotFound) and m.Principal needs the
//     editor role on its canvas (canvas.ErrForbidden otherwise).
//   - While the session runs in this runner, the turn is queued FIFO after
//     its pending turns (follow-ups and earlier messages); a full queue
//     (Config.QueueDepth) is canvas.ErrUnavailable.
//   - A session that has ended (done, canceled, error) is reopened: it
//     starts again on the same canvas with this turn, continuing its
//     transcript, stats and turn count (its agent:status goes back to
//     waiting_context). A session still marked running but not live here is
//     taken over only when its last update is older than Config.Watchdog
//     (its process died); otherwise it is running on another server:
//     canvas.ErrConflict.
//
// The message is recorded in the transcript as a user entry (with the
// source, applet and image size). Its image reaches the model as an image
// part of the turn's user message (OpenAI-compatible providers: an
// image_url content part; debug/fake notes it in a think).
func (r *Runner) PostMessage(ctx context.Context, sessionID string, m UserMessage) error {
	t, entry, err := m.turn()
	if err != nil {
		return err
	}
	if !r.running() {
		return fmt.Errorf("agent: %w: %w", ErrNotRunning, canvas.ErrUnavailable)
	}
	rec, err := r.d.Store.GetAgentSession(ctx, sessionID)
	if err != nil {
		return err
	}
	if err := mayMessage(m.Principal, sessionID, rec.CanvasID); err != nil {
		return err
	}
	return elsewhere(r.post(ctx, sessionID, t, entry), m)
}

// mayMessage checks that p may send a message to agent session sessionID
// on canvasID: the editor role there (canvas.ErrForbidden); a session on a
// canvas p cannot even view is not there for p (canvas.ErrNotFound), as for
// every read of a session.
func mayMessage(p canvas.Principal, sessionID, canvasID string) error {
	if !p.CanAccess(canvasID, canvas.RoleViewer) {
		return fmt.Errorf("agent session %q: %w", sessionID, canvas.ErrNotFound)
	}
	if !p.CanAccess(canvasID, canvas.RoleEditor) {
		return fmt.Errorf("%w: sending a message to agent session %q needs the editor role on canvas %q", canvas.ErrForbidden, sessionID, canvasID)
	}
	return nil
}

// PostIfRunning posts m to session sessionID as PostMessage does, but only
// when the session runs in this runner; running is false (and nothing is
// done) otherwise. A server uses it for messages relayed from another
// process that found the session running elsewhere (RunningElsewhereError).
func (r *Runner) PostIfRunning(ctx context.Context, sessionID string, m UserMessage) (running bool, err error) {
	if _, err := r.liveSession(sessionID); err != nil {
		return false, nil
	}
	return true, r.PostMessage(ctx, sessionID, m)
}

// RunningElsewhereError is the error (wrapping canvas.ErrConflict) of a
// message for a session that runs in another process's runner (the stored
// session is running and was updated within the watchdog). It carries the
// session and the message, so that the server can relay the message to the
// process running the session (which takes it with PostIfRunning).
type RunningElsewhereError struct {
	SessionID string
	Message   UserMessage
	Err       error
}

// Error returns the store's refusal.
func (e *RunningElsewhereError) Error() string { return e.Err.Error() }

// Unwrap returns the store's refusal (canvas.ErrConflict).
func (e *RunningElsewhereError) Unwrap() error { return e.Err }

// elsewhere sets m as the message of a RunningElsewhereError.
func elsewhere(err error, m UserMessage) error {
	var re *RunningElsewhereError
	if errors.As(err, &re) {
		re.Message = m
	}
	return err
}

// PostToCanvas delivers m (typically an A2UI userAction from the host
// session named like the canvas) to the most recent agent session of
// canvasID — the one created last, whether running or finished, handled as
// PostMessage handles it — or, when the canvas has no session yet, starts a
// new session on it with the default model whose first turn is m. It returns
// the session's id. A canvas that does not exist is canvas.ErrNotFound;
// m.Principal needs the editor role on it (canvas.ErrForbidden).
func (r *Runner) PostToCanvas(ctx context.Context, canvasID string, m UserMessage) (string, error) {
	t, entry, err := m.turn()
	if err != nil {
		return "", err
	}
	if canvasID == "" {
		return "", canvas.Invalid("canvas_id", "is required")
	}
	if !m.Principal.CanAccess(canvasID, canvas.RoleEditor) {
		return "", fmt.Errorf("%w: sending a message to the agent of canvas %q needs the editor role on it", canvas.ErrForbidden, canvasID)
	}
	if !r.running() {
		return "", fmt.Errorf("agent: %w: %w", ErrNotRunning, canvas.ErrUnavailable)
	}
	id, started, err := r.sessionFor(ctx, canvasID, t, entry)
	if err != nil || started {
		return id, err
	}
	return id, elsewhere(r.post(ctx, id, t, entry), m)
}

// sessionFor returns the most recent session of canvasID (started false:
// the caller posts t to it) or, when the canvas has none, creates and
// launches a new session whose first turn is t (started true).
func (r *Runner) sessionFor(ctx context.Context, canvasID string, t task, entry string) (id string, started bool, err error) {
	r.inboxMu.Lock() // one new session per canvas, even for concurrent userActions
	defer r.inboxMu.Unlock()
	// The store knows every process's sessions: a newer session running in
	// another process's runner gets the message (relayed), not an older one
	// that runs here.
	latest, err := r.d.Store.ListAgentSessions(ctx, canvasID, 1)
	switch {
	case err != nil:
		return "", false, err
	case len(latest) > 0:
		return latest[0].ID, false, nil
	}
	if _, err := r.d.Client.GetCanvas(ctx, canvasID); err != nil {
		return "", false, fmt.Errorf("agent message for canvas %q: %w", canvasID, err)
	}
	rec, err := newSessionRecord(r.d.Config, client.AgentRunRequest{RoomID: canvasID, Message: truncUTF8(t.text, 20000)}, r.d.Now(), client.AgentWaitingContext)
	if err != nil {
		return "", false, err
	}
	rec.ActorID = r.d.ActorID
	rec.Transcript = []client.TranscriptEntry{{Role: "user", Text: entry, TS: rec.CreatedAt}}
	if err := r.d.Store.CreateAgentSession(ctx, rec); err != nil {
		return "", false, err
	}
	r.log.Info("agent: session started by a message", "session_id", rec.ID, "canvas_id", canvasID)
	return rec.ID, true, r.launchTasks(rec, false, []task{t})
}

// post queues t on the live session id or reopens the session with it.
func (r *Runner) post(ctx context.Context, id string, t task, entry string) error {
	for attempt := 0; ; attempt++ {
		r.inboxMu.Lock()
		r.mu.Lock()
		s := r.sessions[id]
		r.mu.Unlock()
		if s == nil {
			err := r.reopen(ctx, id, []task{t}, entry)
			r.inboxMu.Unlock()
			return err
		}
		queued, err := s.post(t, entry)
		r.inboxMu.Unlock()
		if err != nil || queued {
			return err
		}
		if attempt >= 3 {
			return &UnavailableError{Reason: fmt.Sprintf("agent session %q keeps ending while the message is posted; retry", id)}
		}
		// The session is ending (its queue ran out, or it was canceled): wait
		// for it, then reopen it with this turn. Its end may still await
		// the host's acks (an error's end does).
		wait := time.NewTimer(r.d.Config.ackBudget() + 5*time.Second)
		select {
		case <-s.done:
			wait.Stop()
		case <-ctx.Done():
			wait.Stop()
			return ctx.Err()
		case <-wait.C:
			return &UnavailableError{Reason: fmt.Sprintf("agent session %q is still stopping; retry in a few seconds", id)}
		}
	}
}

// post appends t to a live session's queue; false when the session is
// ending (or canceled) and must be reopened instead.
func (s *session) post(t task, entry string) (bool, error) {
	cfg := s.r.d.Config
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.canceled || s.ctx.Err() != nil {
		return false, nil
	}
	if len(s.queue) >= cfg.QueueDepth {
		return false, &UnavailableError{Reason: fmt.Sprintf("agent session %q already has %d pending turns (the limit); retry when it has caught up",
			s.rec.ID, len(s.queue))}
	}
	s.queue = append(s.queue, t)
	s.rec.Transcript = append(s.rec.Transcript, client.TranscriptEntry{Role: "user", Text: entry, TS: s.r.d.Now().UTC()})
	if n := len(s.rec.Transcript); n > 500 {
		s.rec.Transcript = s.rec.Transcript[n-500:]
	}
	return true, nil
}

// reopen restarts the stored session id with tasks, appending entry (when
// not empty) to its transcript. The caller holds r.inboxMu and has checked
// that the session is not live in this runner.
func (r *Runner) reopen(ctx context.Context, id string, tasks []task, entry string) error {
	rec, err := r.d.Store.GetAgentSession(ctx, id)
	if err != nil {
		return err
	}
	now := r.d.Now().UTC()
	if entry != "" {
		rec.Transcript = append(rec.Transcript, client.TranscriptEntry{Role: "user", Text: entry, TS: now})
		if n := len(rec.Transcript); n > 500 {
			rec.Transcript = rec.Transcript[n-500:]
		}
	}
	prev := rec.State
	rec.State, rec.Detail, rec.UpdatedAt = client.AgentWaitingContext, "", now
	rec.ActorID = r.d.ActorID
	if err := r.d.Store.ReopenAgentSession(ctx, rec, now.Add(-r.d.Config.Watchdog)); err != nil {
		if errors.Is(err, canvas.ErrConflict) && prev != canvas.AgentQueued {
			// Live in another process's runner (or reopened by one just now).
			return &RunningElsewhereError{SessionID: id, Err: err}
		}
		return err
	}
	r.log.Info("agent: session reopened by a message", "session_id", id, "canvas_id", rec.CanvasID, "previous_state", prev, "turns", len(tasks))
	return r.launchTasks(rec, false, tasks)
}

// handOff runs after a session's worker has ended and saved its final state:
// message turns still queued (posted while it was ending, or left behind by
// a failed turn or the watchdog) reopen the session, unless it was canceled
// or the runner is stopping, in which case they are dropped and logged.
func (s *session) handOff(final string) {
	s.mu.Lock()
	var rest []task
	for _, t := range s.queue {
		if t.kind == TurnMessage {
			rest = append(rest, t)
		}
	}
	s.queue = nil
	s.mu.Unlock()
	if len(rest) == 0 {
		return
	}
	r := s.r
	if final == client.AgentCanceled || !r.running() {
		r.log.Warn("agent: queued messages dropped: the session ended", "session_id", s.rec.ID, "state", final, "messages", len(rest))
		return
	}
	r.inboxMu.Lock()
	defer r.inboxMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.reopen(ctx, s.rec.ID, rest, ""); err != nil {
		r.log.Error("agent: queued messages dropped: reopening the session failed", "session_id", s.rec.ID, "messages", len(rest), "err", err)
	}
}

// PostMessage makes m a turn of session sessionID on a server whose agents
// run as `canvasd agent` workers: the session must exist
// (canvas.ErrNotFound) and m.Principal needs the editor role on its canvas
// (canvas.ErrForbidden). A session that has ended is queued again with m as
// its pending turn (canvas.AgentSession.Pending), for the worker that claims
// it: it continues its transcript, stats and turn count, as a reopened
// session of the in-process runner does. A session that is still queued or
// running in a worker cannot take it (a worker does not read new turns while
// it runs): a *canvas.ErrConflict error that says to send it once the session
// has ended, or to the session's canvas (which starts a new run).
func (q *Queue) PostMessage(ctx context.Context, sessionID string, m UserMessage) error {
	t, entry, err := m.turn()
	if err != nil {
		return err
	}
	rec, err := q.store.GetAgentSession(ctx, sessionID)
	if err != nil {
		return err
	}
	if err := mayMessage(m.Principal, sessionID, rec.CanvasID); err != nil {
		return err
	}
	now := q.now().UTC()
	rec.Transcript = append(rec.Transcript, client.TranscriptEntry{Role: "user", Text: entry, TS: now})
	if n := len(rec.Transcript); n > 500 {
		rec.Transcript = rec.Transcript[n-500:]
	}
	rec.Pending = append(rec.Pending, pendingOf(t))
	prev := rec.State
	rec.State, rec.Detail, rec.UpdatedAt = canvas.AgentQueued, "", now
	if err := q.store.ReopenAgentSession(ctx, rec, now.Add(-q.cfg.Watchdog)); err != nil {
		if errors.Is(err, canvas.ErrConflict) {
			return fmt.Errorf("%w: agent session %q is %s in a `canvasd agent` worker, which takes no new turns while it runs; "+
				"send the message once the session has ended, or to its canvas (POST /api/host/%s/messages starts a new run there)",
				canvas.ErrConflict, sessionID, prev, rec.CanvasID)
		}
		return err
	}
	q.publish(rec.CanvasID, StatusEvent{Type: "agent:status", SessionID: rec.ID, State: client.AgentScheduled, Detail: "a message is queued for an agent worker"})
	return nil
}

// PostToCanvas queues a new agent session on canvasID whose first turn is
// m (its pending turn, canvas.AgentSession.Pending), for the `canvasd agent`
// worker that claims it, and returns its id. m.Principal needs the editor
// role on the canvas (canvas.ErrForbidden); a canvas that does not exist is
// canvas.ErrNotFound.
func (q *Queue) PostToCanvas(ctx context.Context, canvasID string, m UserMessage) (string, error) {
	t, entry, err := m.turn()
	if err != nil {
		return "", err
	}
	if canvasID == "" {
		return "", canvas.Invalid("canvas_id", "is required")
	}
	if !m.Principal.CanAccess(canvasID, canvas.RoleEditor) {
		return "", fmt.Errorf("%w: sending a message to the agent of canvas %q needs the editor role on it", canvas.ErrForbidden, canvasID)
	}
	rec, err := newSessionRecord(q.cfg, client.AgentRunRequest{RoomID: canvasID, Message: truncUTF8(t.text, 20000)}, q.now(), canvas.AgentQueued)
	if err != nil {
		return "", err
	}
	rec.Transcript = []client.TranscriptEntry{{Role: "user", Text: entry, TS: rec.CreatedAt}}
	rec.Pending = []canvas.PendingTurn{pendingOf(t)}
	if err := q.store.CreateAgentSession(ctx, rec); err != nil {
		return "", err
	}
	q.publish(rec.CanvasID, StatusEvent{Type: "agent:status", SessionID: rec.ID, State: client.AgentScheduled, Detail: "a message is queued for an agent worker"})
	return rec.ID, nil
}

// pendingOf is the stored form of a message turn.
func pendingOf(t task) canvas.PendingTurn {
	return canvas.PendingTurn{Text: t.text, Image: t.image, From: t.from}
}

// pendingTasks are the turns of a claimed session's pending messages.
func pendingTasks(p []canvas.PendingTurn) []task {
	out := make([]task, len(p))
	for i, t := range p {
		out[i] = task{kind: TurnMessage, text: t.Text, image: t.Image, from: t.From}
	}
	return out
}

// UnavailableError is a canvas.ErrUnavailable whose text is meant for the
// sender: the API answers it as a 503 problem with the text as its detail
// (it implements the API's TypedProblem), so the sender learns why the
// agent cannot take the message and what to do.
type UnavailableError struct{ Reason string }

// Error returns the reason.
func (e *UnavailableError) Error() string { return e.Reason }

// Unwrap makes errors.Is(err, canvas.ErrUnavailable) true.
func (e *UnavailableError) Unwrap() error { return canvas.ErrUnavailable }

// ProblemStatus is 503.
func (e *UnavailableError) ProblemStatus() int { return 503 }

// ProblemSlug is "unavailable".
func (e *UnavailableError) ProblemSlug() string { return "unavailable" }
