package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/hub"
)

// The agent as the hub sees it. Package hub declares what it needs of the
// agent runner (hub.BrowserInput, hub.AgentMessages) and imports neither
// agent nor host; these adapters connect them, and cmd/canvasd wires them
// (hub.Wiring).

// *agent.Runner takes browser input.
var _ hub.BrowserInput = (*agent.Runner)(nil)

// messagePoster is an agent service that takes messages relayed from other
// processes (*agent.Runner).
type messagePoster interface {
	PostIfRunning(ctx context.Context, sessionID string, m agent.UserMessage) (running bool, err error)
}

var _ messagePoster = (*agent.Runner)(nil)

// RelayedMessages returns what hands the agent messages relayed from other
// processes to svc (hub.Wiring.Messages), or nil when svc takes none (its
// sessions run elsewhere, or there is no agent service).
func RelayedMessages(svc AgentService) hub.AgentMessages {
	if p, ok := svc.(messagePoster); ok {
		return relayedMessages{p}
	}
	return nil
}

type relayedMessages struct{ p messagePoster }

// PostRelayed decodes a message ForwardMessage relayed (an
// agent.UserMessage) and posts it when its session runs here.
func (r relayedMessages) PostRelayed(ctx context.Context, sessionID string, m json.RawMessage) (bool, error) {
	var um agent.UserMessage
	if err := json.Unmarshal(m, &um); err != nil {
		return false, fmt.Errorf("relayed agent message for session %q: %w", sessionID, err)
	}
	return r.p.PostIfRunning(ctx, sessionID, um)
}

// forwardingInbox delivers to next, and when next says the agent session
// runs in another process (agent.RunningElsewhereError), to that process
// through the hub's relay.
type forwardingInbox struct {
	next host.Inbox
	hub  *hub.Hub
}

// Deliver implements host.Inbox.
func (f forwardingInbox) Deliver(ctx context.Context, m host.Message) error {
	err := f.next.Deliver(ctx, m)
	var re *agent.RunningElsewhereError
	if !errors.As(err, &re) || !f.hub.Relays() {
		return err
	}
	payload, merr := json.Marshal(re.Message)
	if merr != nil {
		return merr
	}
	if running, ferr := f.hub.ForwardMessage(ctx, re.SessionID, payload); running {
		return ferr
	}
	// No process runs it (any more): it may have ended meanwhile, so that
	// this process can reopen it now; otherwise its process died (409 until
	// the watchdog lets a process take it over).
	return f.next.Deliver(ctx, m)
}

// noHostError is the hub's error for a canvas without a host browser, which
// the agent runner knows as agent.ErrNoHost (it goes on text-only).
type noHostError struct{ err error }

func (e noHostError) Error() string   { return e.err.Error() }
func (e noHostError) Unwrap() []error { return []error{e.err, agent.ErrNoHost} }

// asAgentError makes a hub error the agent runner must recognize one it does.
func asAgentError(err error) error {
	if errors.Is(err, hub.ErrNoHost) {
		return noHostError{err}
	}
	return err
}
