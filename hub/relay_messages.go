package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// Agent messages across processes. A message or userAction posted to a
// process whose runner finds the session running in another process's
// runner is relayed to the other processes (ForwardMessage, which package
// api calls); the one running the session posts it there (AgentMessages)
// and acknowledges with the outcome, which the first process answers the
// sender with. With no acknowledgement within messageForwardWait the first
// process tries once more itself (the session may have ended meanwhile);
// a session whose process died stays 409 (running on another server). The
// hub carries a message as the JSON its sender encoded and its receiver
// decodes (the agent's own type).

// AgentMessages is implemented by agent services whose sessions run in this
// process (the agent runner, through package api): they take messages
// relayed from other processes.
type AgentMessages interface {
	// PostRelayed posts m (as ForwardMessage was given it) to the session
	// when it runs here; running is false when it does not (the message is
	// then not this process's).
	PostRelayed(ctx context.Context, sessionID string, m json.RawMessage) (running bool, err error)
}

const (
	topicMessage = "canvasd.agent.message"
	// messageForwardWait bounds the wait for the running process's answer;
	// messagePostWait (shorter) bounds that process's posting, so that its
	// answer arrives while the sender still waits.
	messageForwardWait = 6 * time.Second
	messagePostWait    = 4 * time.Second
	ackError           = "error"
)

type agentMessageMsg struct {
	From      string          `json:"from"`
	Req       string          `json:"req"`
	SessionID string          `json:"s"`
	Message   json.RawMessage `json:"m"`
}

// ForwardMessage relays an agent message m for sessionID to the other
// processes and waits for the answer of the one running the session:
// running is false when none answered within messageForwardWait, or the
// hub has no relay; err is that process's refusal (a TypedProblem).
func (h *Hub) ForwardMessage(ctx context.Context, sessionID string, m json.RawMessage) (running bool, err error) {
	if h.relay == nil {
		return false, nil
	}
	return h.relay.forwardMessage(ctx, sessionID, m)
}

// forwardMessage is ForwardMessage through the relay.
func (r *relay) forwardMessage(ctx context.Context, sessionID string, m json.RawMessage) (running bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, messageForwardWait)
	defer cancel()
	req, ch, done := r.awaitAck()
	defer done()
	payload, err := json.Marshal(agentMessageMsg{From: r.id, Req: req, SessionID: sessionID, Message: m})
	if err != nil {
		return false, err
	}
	if err := r.b.Broadcast(ctx, topicMessage, payload); err != nil {
		r.log.Warn("relay: forwarding an agent message failed", "session_id", sessionID, "err", err)
		return false, nil
	}
	select {
	case a := <-ch:
		if a.Result == ackAccepted {
			return true, nil
		}
		return true, &relayedProblem{status: a.Status, slug: a.Slug, detail: a.Detail}
	case <-ctx.Done():
		return false, nil
	}
}

// receiveMessage posts a relayed message when its session runs here and
// acknowledges the outcome to the sender (in a goroutine: posting reads the
// store).
func (r *relay) receiveMessage(payload []byte) {
	var m agentMessageMsg
	if err := json.Unmarshal(payload, &m); err != nil || m.From == r.id || m.SessionID == "" {
		return
	}
	am := r.hub.wired().Messages
	if am == nil {
		return
	}
	r.wg.Add(1) // the listener's own count is held, so Add cannot race Wait
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(r.ctx, messagePostWait)
		defer cancel()
		running, err := am.PostRelayed(ctx, m.SessionID, m.Message)
		if !running {
			return
		}
		ack := relayAck{To: m.From, Req: m.Req, Result: ackAccepted}
		if err != nil {
			ack.Result, ack.Status, ack.Slug, ack.Detail = ackError, 500, "internal", err.Error()
			if r.hub.problem != nil {
				ack.Status, ack.Slug, ack.Detail = r.hub.problem(err)
			}
		}
		_ = r.send(r.ctx, topicAck, ack)
	}()
}

// relayedProblem is the refusal of a message by the process running its
// session, answered as that process would have answered it.
type relayedProblem struct {
	status       int
	slug, detail string
}

func (e *relayedProblem) Error() string { return e.detail }

// ProblemStatus implements TypedProblem.
func (e *relayedProblem) ProblemStatus() int {
	if e.status < 400 || e.status > 599 {
		return 502 // Bad Gateway
	}
	return e.status
}

// ProblemSlug implements TypedProblem.
func (e *relayedProblem) ProblemSlug() string {
	if e.slug == "" || e.slug == "." || e.slug == "/" {
		return "relayed"
	}
	return e.slug
}

// Unwrap gives errors.Is the canvas error of the status.
func (e *relayedProblem) Unwrap() error {
	if err := canvas.ErrForStatus(e.status, e.slug); err != nil {
		return err
	}
	return fmt.Errorf("status %d", e.status)
}
