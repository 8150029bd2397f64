package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// agentInbox implements host.Inbox over the agent side (agent.Inbox: the
// in-process runner, or the workers-mode queue, which refuses messages with
// a 503 that says why). It converts host messages to agent messages:
//
//   - a message for POST /api/sessions/{id}/messages goes to the agent
//     session {id} (agent.Runner.PostMessage: a new turn of that session; its
//     image, read back from the image store, reaches the model as an image
//     part);
//   - an A2UI userAction from host session S (Message.Action, HostSession
//     set) goes to the most recent agent session of the canvas whose id is
//     S, or starts a new session on that canvas (agent.Runner.PostToCanvas);
//     with no such canvas it is canvas.ErrNotFound.
//
// Deliver never waits for the model.
type agentInbox struct {
	svc agent.Inbox
	log *slog.Logger
}

var _ host.Inbox = agentInbox{}

// Deliver implements host.Inbox.
func (a agentInbox) Deliver(ctx context.Context, m host.Message) error {
	um := agent.UserMessage{Principal: m.Principal, Prompt: m.Prompt, Source: m.Source, AppletSlug: m.AppletSlug}
	if m.Image != nil {
		url, err := m.Image.DataURL()
		if err != nil {
			return fmt.Errorf("reading the stored image back: %v: %w", err, canvas.ErrUnavailable)
		}
		um.ImageDataURL = url
	}
	if m.Action != nil || m.HostSession != "" {
		if m.Action != nil {
			um.Action = &agent.UserAction{Name: m.Action.Name, SurfaceID: m.Action.SurfaceID,
				SourceComponentID: m.Action.SourceComponentID, Context: m.Action.Context}
		}
		canvasID := m.HostSession
		if canvasID == "" {
			canvasID = m.SessionID
		}
		id, err := a.svc.PostToCanvas(ctx, canvasID, um)
		if err == nil && a.log != nil {
			a.log.Info("userAction delivered to the agent", "host_session", canvasID, "agent_session", id)
		}
		return err
	}
	return a.svc.PostMessage(ctx, m.SessionID, um)
}
