package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/canvasd/canvasd/client"
)

// Events publishes agent-topic events (agent:action, agent:chat,
// agent:status, agent:screenshot_request) on a canvas's SSE stream. It must
// not block on slow subscribers. *api.Hub implements it in-process;
// HTTPEvents implements it for the standalone worker.
type Events interface {
	// PublishEvent sends an event to every subscriber of the canvas.
	PublishEvent(canvasID, event string, v any)
	// PublishToHost sends an event to the canvas's elected host browser
	// only. It returns the host's client id, or "" when there is none (or
	// it is not known here: the event may still have reached the host).
	PublishToHost(canvasID, event string, v any) string
	// Host returns the canvas's elected host browser, or "" when there is
	// none or it is not known here.
	Host(canvasID string) string
}

// HTTPEvents publishes through POST /api/canvas-agent/events of a canvasd
// server (the standalone `canvasd agent` worker). Failures are logged.
type HTTPEvents struct {
	Client *client.Client
	Log    *slog.Logger
}

// PublishEvent implements Events.
func (h HTTPEvents) PublishEvent(canvasID, event string, v any) { h.post(canvasID, "", event, v) }

// PublishToHost implements Events: the server sends the event to the host
// ("to": "host"); the worker does not learn who that is, so it returns "".
func (h HTTPEvents) PublishToHost(canvasID, event string, v any) string {
	h.post(canvasID, client.AgentEventToHost, event, v)
	return ""
}

// Host implements Events: a worker does not know the hosts ("").
func (h HTTPEvents) Host(string) string { return "" }

func (h HTTPEvents) post(canvasID, to, event string, v any) {
	b, err := json.Marshal(v)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = h.Client.PublishAgentEvent(ctx, client.AgentEvent{CanvasID: canvasID, To: to, Event: event, Data: b})
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
