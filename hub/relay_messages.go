package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// Agent messages across processes. A message or userAction posted to a
// process whose runner finds the session running in another process's
// runner (agent.RunningElsewhereError) is relayed to the other processes;
// the one running the session posts it there (agent.Runner.PostIfRunning)
// and acknowledges with the outcome, which the first process answers the
// sender with. With no acknowledgement within messageForwardWait the first
// process tries once more itself (the session may have ended meanwhile);
// a session whose process died stays 409 (running on another server).

// AgentMessages is implemented by agent services whose sessions run in this
// process (*agent.Runner): they take messages relayed from other processes.
type AgentMessages interface {
	// PostIfRunning posts m to the session when it runs here; running is
	// false when it does not (the message is then not this process's).
	PostIfRunning(ctx context.Context, sessionID string, m agent.UserMessage) (running bool, err error)
}

var _ AgentMessages = (*agent.Runner)(nil)

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
	From      string            `json:"from"`
	Req       string            `json:"req"`
	SessionID string            `json:"s"`
	Message   agent.UserMessage `json:"m"`
}

// Inbox returns the host.Inbox the API delivers to: next, and when next
// says the agent session runs in another process, that process (relayed).
func (h *Hub) Inbox(next host.Inbox) host.Inbox { return forwardingInbox{next: next, hub: h} }

type forwardingInbox struct {
	next host.Inbox
	hub  *Hub
}

// Deliver implements host.Inbox.
func (f forwardingInbox) Deliver(ctx context.Context, m host.Message) error {
	err := f.next.Deliver(ctx, m)
	var re *agent.RunningElsewhereError
	if !errors.As(err, &re) {
		return err
	}
	r := f.hub.relay
	if r == nil {
		return err
	}
	if running, ferr := r.forwardMessage(ctx, re.SessionID, re.Message); running {
		return ferr
	}
	// No process runs it (any more): it may have ended meanwhile, so that
	// this process can reopen it now; otherwise its process died (409 until
	// the watchdog lets a process take it over).
	return f.next.Deliver(ctx, m)
}

// forwardMessage relays m for sessionID to the other processes and waits
// for the answer of the one running it; running is false when none answered
// within messageForwardWait.
func (r *relay) forwardMessage(ctx context.Context, sessionID string, m agent.UserMessage) (running bool, err error) {
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
		running, err := am.PostIfRunning(ctx, m.SessionID, m.Message)
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
