package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Agent wire types: the bodies of API.md "Agent". The agent package stores and
// serves exactly these, so the server and every client agree on them.

// AgentRunRequest is the body of POST /api/canvas-agent/run. RoomID is the canvas id.
type AgentRunRequest struct {
	RoomID    string   `json:"roomId"`
	Message   string   `json:"message"`
	Model     string   `json:"model,omitempty"`
	Viewport  *Box     `json:"viewport,omitempty"`
	Selection []string `json:"selection,omitempty"`
}

// AgentRunResponse is the 202 answer of POST /api/canvas-agent/run.
type AgentRunResponse struct {
	OK        bool   `json:"ok"`
	SessionID string `json:"session_id"`
}

// Agent session states, as sent in agent:status and stored with the session.
const (
	AgentWaitingContext = "waiting_context"
	AgentCallingModel   = "calling_model"
	AgentStreaming      = "streaming"
	AgentScheduled      = "scheduled"
	AgentDone           = "done"
	AgentCanceled       = "canceled"
	AgentError          = "error"
)

// AgentTerminal reports whether a session state is final.
func AgentTerminal(state string) bool {
	return state == AgentDone || state == AgentCanceled || state == AgentError
}

// TranscriptEntry is one message of a session's conversation: the user's
// request, the model's think notes, system notes (conflicts, follow-ups).
type TranscriptEntry struct {
	Role string    `json:"role"` // user | assistant | system
	Text string    `json:"text"`
	TS   time.Time `json:"ts"`
}

// AgentTodo is one row of canvas_agent_todos.
type AgentTodo struct {
	ID         string     `json:"id"`
	SessionID  string     `json:"session_id"`
	Text       string     `json:"text"`
	Status     string     `json:"status"` // open | done | skipped
	Position   int        `json:"position"`
	CreatedAt  time.Time  `json:"created_at"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

// AgentStats are a session's counters and latencies (milliseconds).
type AgentStats struct {
	Turns             int     `json:"turns"`
	TTFBMS            float64 `json:"ttfb_ms"`                 // run start → first model byte, first turn
	TimeToFirstAction float64 `json:"time_to_first_action_ms"` // run start → first complete action envelope
	ModelLatencyMS    float64 `json:"model_latency_ms"`        // total time spent streaming from the model
	ActionsParsed     int     `json:"actions_parsed"`
	ActionsApplied    int     `json:"actions_applied"`
	ActionsDropped    int     `json:"actions_dropped"`
	DuplicatesDropped int     `json:"duplicates_dropped"`
	Conflicts         int     `json:"conflicts"`
	Replans           int     `json:"replans"`
	FollowUps         int     `json:"followups"`
	ScreenshotMissed  int     `json:"screenshots_missed,omitempty"`
}

// AgentSession is the answer of GET /api/canvas-agent/sessions/{id}.
type AgentSession struct {
	ID         string            `json:"session_id"`
	CanvasID   string            `json:"canvas_id"`
	ActorID    string            `json:"actor_id"`
	State      string            `json:"state"`
	Detail     string            `json:"detail,omitempty"`
	Model      string            `json:"model"`
	Message    string            `json:"message"`
	Viewport   *Box              `json:"viewport,omitempty"`
	Selection  []string          `json:"selection,omitempty"`
	Transcript []TranscriptEntry `json:"transcript"`
	Todos      []AgentTodo       `json:"todos"`
	Stats      AgentStats        `json:"stats"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
}

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

// AgentEvent is one agent-topic event for a canvas's stream (agent:action,
// agent:chat, agent:status, agent:screenshot_request).
type AgentEvent struct {
	CanvasID string          `json:"canvas_id"`
	Event    string          `json:"event"`
	Data     json.RawMessage `json:"data"`
}

// PublishAgentEvent asks the server to send an agent-topic event on a
// canvas's SSE stream (POST /api/canvas-agent/events); the standalone
// `canvasd agent` worker publishes through it.
func (c *Client) PublishAgentEvent(ctx context.Context, ev AgentEvent) error {
	return c.call(ctx, http.MethodPost, "/api/canvas-agent/events", nil, ev, nil)
}
