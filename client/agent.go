package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/canvasd/canvasd/canvas"
)

// Agent wire types: the bodies of the agent endpoints, defined in canvas so
// that the server and every Go client agree on them.
type (
	AgentRunRequest  = canvas.AgentRunRequest
	AgentRunResponse = canvas.AgentRunResponse
	TranscriptEntry  = canvas.TranscriptEntry
	AgentTodo        = canvas.AgentTodo
	AgentStats       = canvas.AgentStats
	AgentSession     = canvas.AgentSession
	AgentEvent       = canvas.AgentEvent
)

// AgentEventToHost is the To of an AgentEvent for the canvas's host alone.
const AgentEventToHost = canvas.AgentEventToHost

// Agent session states, as sent in agent:status and stored with the session.
const (
	AgentWaitingContext = canvas.AgentWaitingContext
	AgentCallingModel   = canvas.AgentCallingModel
	AgentStreaming      = canvas.AgentStreaming
	AgentScheduled      = canvas.AgentScheduled
	AgentDone           = canvas.AgentDone
	AgentCanceled       = canvas.AgentCanceled
	AgentError          = canvas.AgentError
)

// AgentTerminal reports whether a session state is final.
func AgentTerminal(state string) bool { return canvas.AgentTerminal(state) }

// RunAgent starts an agent session on a canvas; the run continues on the
// server after the 202.
func (c *Client) RunAgent(ctx context.Context, req AgentRunRequest) (AgentRunResponse, error) {
	var out AgentRunResponse
	err := c.call(ctx, http.MethodPost, "/api/canvas-agent/run", nil, req, &out)
	return out, err
}

// AgentSession reads a session with its transcript, todos and stats.
func (c *Client) AgentSession(ctx context.Context, id string) (AgentSession, error) {
	var out AgentSession
	err := c.call(ctx, http.MethodGet, "/api/canvas-agent/sessions/"+seg(id), nil, nil, &out)
	return out, err
}

// AgentSessions reads a canvas's last limit (1–100; 0: the server's
// default, 20) agent sessions, newest first, each as AgentSession reads it.
func (c *Client) AgentSessions(ctx context.Context, canvasID string, limit int) ([]AgentSession, error) {
	var q url.Values
	if limit > 0 {
		q = url.Values{"limit": {strconv.Itoa(limit)}}
	}
	var out struct {
		Sessions []AgentSession `json:"sessions"`
	}
	err := c.call(ctx, http.MethodGet, "/api/canvases/"+seg(canvasID)+"/agent-sessions", q, nil, &out)
	return out.Sessions, err
}

// CancelAgent cancels a session: its model stream stops and nothing more is applied.
func (c *Client) CancelAgent(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodPost, "/api/canvas-agent/sessions/"+seg(id)+"/cancel", nil, struct{}{}, nil)
}

// AgentCatalog returns the action catalog with its JSON Schemas, as raw JSON.
func (c *Client) AgentCatalog(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.call(ctx, http.MethodGet, "/api/canvas-agent/catalog", nil, nil, &out)
	return out, err
}

// PublishAgentEvent asks the server to send an agent-topic event on a
// canvas's SSE stream (POST /api/canvas-agent/events); the standalone
// `canvasd agent` worker publishes through it.
func (c *Client) PublishAgentEvent(ctx context.Context, ev AgentEvent) error {
	return c.call(ctx, http.MethodPost, "/api/canvas-agent/events", nil, ev, nil)
}

// RevertAgentTurns reverts the commits of the given turns of an agent
// session (none given: of every turn not reverted yet) as one revert_commits
// command by the caller; the server then records reverted_rev on those
// turns. A conflict is a *ConflictError with recovery_ops. A turn already
// reverted whose changes are not on the canvas is left out (it keeps its
// reverted_rev); only such turns (or, with none given, no turn left) are a
// *ProblemError wrapping canvas.ErrUnprocessable.
func (c *Client) RevertAgentTurns(ctx context.Context, sessionID string, turns ...int) (canvas.RevisionResult, error) {
	body := map[string]any{}
	if len(turns) > 0 {
		body["turns"] = turns
	}
	r, err := c.do(ctx, http.MethodPost, "/api/canvas-agent/sessions/"+seg(sessionID)+"/revert", nil, body)
	if err != nil {
		return canvas.RevisionResult{}, err
	}
	return decodeRevision(r)
}

// AckEnvelope acks an agent:action envelope the caller (a browser) applied.
func (c *Client) AckEnvelope(ctx context.Context, a canvas.AgentAck) error {
	return c.call(ctx, http.MethodPost, "/api/canvas-agent/ack", nil, a, nil)
}

// PublishView sends a browser's viewport and selection to a running session.
func (c *Client) PublishView(ctx context.Context, v canvas.AgentView) error {
	return c.call(ctx, http.MethodPost, "/api/canvas-agent/view", nil, v, nil)
}
