package canvas

import (
	"encoding/json"
	"strings"
	"time"
)

// Wire types of the HTTP API that are not canvas state: the server (api)
// encodes them and the Go client decodes them, so both agree by construction.

// SSE event names sent on a canvas stream (GET /sse/canvas/{canvas_id}).
const (
	EventCommit            = "canvas_commit"
	EventCaughtUp          = "caught_up"
	EventReset             = "reset"
	EventGesture           = "gesture"
	EventAgentAction       = "agent:action"
	EventAgentChat         = "agent:chat"
	EventAgentStatus       = "agent:status"
	EventScreenshotRequest = "agent:screenshot_request"
	EventInvoke            = "invoke"
	EventAgentHost         = "agent:host"
)

// InvokeAgentScreenshot is the invoke action of agent screenshots: its
// payload is an agent:screenshot_request, its result a Screenshot. Only the
// canvas's elected host is asked.
const InvokeAgentScreenshot = "agent:screenshot"

// AgentHost is the data of an agent:host event: the browser elected to host
// the canvas (screenshots, set_viewport); HostClientID is "" when no browser
// on the canvas declared the screenshot capability.
type AgentHost struct {
	CanvasID     string `json:"canvas_id"`
	HostClientID string `json:"host_client_id"`
}

// AgentAck is the body of POST /api/canvas-agent/ack: a browser applied the
// agent:action envelope seq of a session. AppliedAt is the browser's clock
// (Unix milliseconds) when it applied it; consecutive acks of one browser
// give the apply jitter.
type AgentAck struct {
	Type      string `json:"type,omitempty"` // "agent:ack" (optional)
	SessionID string `json:"sessionId"`
	Seq       int64  `json:"seq"`
	ClientID  string `json:"clientId"`
	AppliedAt int64  `json:"appliedAt,omitempty"`
}

// Validate checks an ack's fields.
func (a AgentAck) Validate() error {
	if a.Type != "" && a.Type != "agent:ack" {
		return Invalid("type", "must be agent:ack when given")
	}
	if a.SessionID == "" {
		return Invalid("sessionId", "is required: the session of the envelope")
	}
	if a.Seq < 1 {
		return Invalid("seq", "must be the envelope's seq (1 or more)")
	}
	return validClientID(a.ClientID)
}

// AgentView is the body of POST /api/canvas-agent/view: a browser's viewport
// and selection for a running session; the session's next turn uses the
// latest one.
type AgentView struct {
	SessionID string   `json:"sessionId"`
	ClientID  string   `json:"clientId"`
	Viewport  *Box     `json:"viewport,omitempty"`
	Selection []string `json:"selection,omitempty"`
}

// MaxViewSelection bounds the selection of an AgentView.
const MaxViewSelection = 1000

// Validate checks a view's fields.
func (v AgentView) Validate() error {
	if v.SessionID == "" {
		return Invalid("sessionId", "is required: the running session the view is for")
	}
	if v.Viewport != nil && !(v.Viewport.W > 0 && v.Viewport.H > 0) {
		return Invalid("viewport", "w and h must be > 0")
	}
	if len(v.Selection) > MaxViewSelection {
		return Invalid("selection", "more than %d ids", MaxViewSelection)
	}
	return validClientID(v.ClientID)
}

// IsClientID reports whether id is a valid browser client id: 1 to 64 of
// A-Z a-z 0-9 . _ : -.
func IsClientID(id string) bool {
	return len(id) >= 1 && len(id) <= 64 && strings.Trim(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == ""
}

func validClientID(id string) error {
	if !IsClientID(id) {
		return Invalid("clientId", "must be the browser's client id (1 to 64 of A-Z a-z 0-9 . _ : -)")
	}
	return nil
}

// Snapshot is the answer of GET /canvas_commands/snapshot/{canvas_id}.
// HeadEventID is a valid Last-Event-ID: the snapshot then the stream from it
// is gap-free. Model is the canvas model State follows (Model; 1 for a
// revision before the canvas was migrated to model 2).
type Snapshot struct {
	CanvasID    string     `json:"canvas_id"`
	HeadRev     int64      `json:"head_rev"`
	HeadEventID string     `json:"head_event_id"`
	Model       int        `json:"model"`
	State       SceneState `json:"state"`
}

// ResetInfo is the data of a reset event: the stream cannot be resumed and
// the client re-reads the snapshot.
type ResetInfo struct {
	HeadRev int64  `json:"head_rev"`
	Reason  string `json:"reason"`
}

// Point is a canvas coordinate.
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Box is a rectangle in canvas coordinates (a viewport or bounds).
type Box struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// AgentRunRequest is the body of POST /api/canvas-agent/run. RoomID is the canvas id.
type AgentRunRequest struct {
	RoomID    string   `json:"roomId"`
	Message   string   `json:"message"`
	Model     string   `json:"model,omitempty"`
	Viewport  *Box     `json:"viewport,omitempty"`
	Selection []string `json:"selection,omitempty"`
	// Document is the node id of a document (a doc node) the run edits,
	// e.g. the one open in the UI's document panel: each turn gives the
	// model its numbered lines and the document verbs. Empty: the run works
	// on the canvas (or on the first document in Selection).
	Document string `json:"document,omitempty"`
	// DocumentSelection is the person's selection in Document (lines, from
	// 1, inclusive), given to the model as what the instruction is about.
	DocumentSelection *LineSpan `json:"document_selection,omitempty"`
}

// LineSpan is a range of a document's lines, numbered from 1, inclusive.
type LineSpan struct {
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
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

// AgentQueued is the stored state of a session accepted by a server whose
// agents run as separate workers, until a worker claims it (the API shows it
// as AgentScheduled).
const AgentQueued = "queued"

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

// AgentTodo is one row of canvas_agent_todos: one item of a session's list,
// unique by Text within the session. ResolvedAt is set when Status becomes
// done or skipped.
type AgentTodo struct {
	ID         string     `json:"id"`
	SessionID  string     `json:"session_id"`
	Text       string     `json:"text"`
	Status     string     `json:"status"` // TodoOpen | TodoDone | TodoSkipped
	Position   int        `json:"position"`
	CreatedAt  time.Time  `json:"created_at"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

// Todo statuses.
const (
	TodoOpen    = "open"
	TodoDone    = "done"
	TodoSkipped = "skipped"
)

// AgentTurn is one turn of an agent session: why it ran and the revisions
// of the commits it made, ascending (what a revert of the turn undoes).
// RevertedRev is the revision of the revert_commits commit that reverted the
// turn (POST /api/canvas-agent/sessions/{id}/revert), nil while it has not
// been reverted; the newest one's when it was reverted again after its
// revert was undone.
type AgentTurn struct {
	Turn        int        `json:"turn"` // 1, 2, ... within the session
	Kind        string     `json:"kind"` // initial | followup | low_action | lint | replan | message
	Revs        []int64    `json:"revs"`
	StartedAt   time.Time  `json:"started_at"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`     // nil while it runs
	RevertedRev *int64     `json:"reverted_rev,omitempty"` // nil until reverted
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
	ScreenshotMissed  int     `json:"screenshots_missed,omitempty"`  // turns that went on text-only (no host, or no answer): degraded
	Screenshots       int     `json:"screenshots,omitempty"`         // screenshots a turn used (cached ones included)
	ScreenshotsCached int     `json:"screenshots_cached,omitempty"`  // of those, taken from the cache (same revision and bounds)
	ScreenshotMS      float64 `json:"screenshot_ms,omitempty"`       // request → answer of the last screenshot taken
	ScreenshotsDrawn  int     `json:"screenshots_drawn,omitempty"`   // of those, drawn by the server because no browser could take one
	ScreenshotSource  string  `json:"screenshot_source,omitempty"`   // the last turn's: browser, server, cache or none (text-only)
	Acks              int     `json:"acks,omitempty"`                // browser acks of agent:action envelopes, one per browser and envelope sent
	Resends           int     `json:"resends,omitempty"`             // envelopes resent to the host for want of its ack
	AcksMissed        int     `json:"acks_missed,omitempty"`         // envelopes the host never acked, resends included
	HostWaits         int     `json:"host_waits,omitempty"`          // envelopes due for a resend that found no host and waited for one (no attempt spent)
	ApplyJitterP95MS  float64 `json:"apply_jitter_p95_ms,omitempty"` // p95 of the host's apply jitter
	// Model tokens of every model call of the session (turns, re-plans and
	// follow-ups), as canvas_agent_model_tokens_total counts them: prompt
	// tokens at the full price, generated ones, and prompt tokens read from
	// or written to the provider's prompt cache. Calls that failed or were
	// stopped count what was reported until then.
	InputTokens         int64 `json:"input_tokens,omitempty"`
	OutputTokens        int64 `json:"output_tokens,omitempty"`
	CacheReadTokens     int64 `json:"cache_read_tokens,omitempty"`
	CacheCreationTokens int64 `json:"cache_creation_tokens,omitempty"`
}

// AgentSession is the answer of GET /api/canvas-agent/sessions/{id}.
type AgentSession struct {
	ID        string   `json:"session_id"`
	CanvasID  string   `json:"canvas_id"`
	ActorID   string   `json:"actor_id"`
	State     string   `json:"state"`
	Detail    string   `json:"detail,omitempty"`
	Model     string   `json:"model"`
	Message   string   `json:"message"`
	Viewport  *Box     `json:"viewport,omitempty"`
	Selection []string `json:"selection,omitempty"`
	// Document and DocumentSelection are the run request's: the document
	// the session edits and the person's selection in it.
	Document          string            `json:"document,omitempty"`
	DocumentSelection *LineSpan         `json:"document_selection,omitempty"`
	Transcript        []TranscriptEntry `json:"transcript"`
	Todos             []AgentTodo       `json:"todos"`
	Turns             []AgentTurn       `json:"turns"`
	Stats             AgentStats        `json:"stats"`
	CreatedAt         time.Time         `json:"created_at"`
	UpdatedAt         time.Time         `json:"updated_at"`
	// Pending are the turns a queued session waits with for the `canvasd
	// agent` worker that claims it: the messages and userActions a server
	// whose agents run as workers took for it. The worker runs them as the
	// session's next turns (instead of Message as its first) and drops them.
	// Kept in the store, never sent to clients.
	Pending []PendingTurn `json:"-"`
}

// PendingTurn is one turn waiting in a queued agent session (AgentSession.Pending).
type PendingTurn struct {
	Text  string `json:"text"`            // the instruction: the message, or the userAction's description
	Image string `json:"image,omitempty"` // a data: URL sent to the model with the turn
	From  string `json:"from,omitempty"`  // where it came from, e.g. an applet
}

// AgentEvent is the body of POST /api/canvas-agent/events: one agent-topic
// event (agent:action, agent:chat, agent:status, agent:screenshot_request)
// for a canvas's stream, published by a standalone agent worker. To
// AgentEventToHost sends it to the canvas's elected host browser only
// (dropped when there is none); empty: to every subscriber.
type AgentEvent struct {
	CanvasID string          `json:"canvas_id"`
	To       string          `json:"to,omitempty"`
	Event    string          `json:"event"`
	Data     json.RawMessage `json:"data"`
}

// AgentEventToHost is the To of an AgentEvent for the canvas's host alone.
const AgentEventToHost = "host"

// HostEvent is one server-sent event of a canvas host session's stream
// (GET /sse/host/{session}): the canvas host publishes it and the pub/sub
// system carries it to the session's browsers, in this process and the
// others sharing the store. Data is one line of JSON. Version, when not 0,
// is the session state version the update that sent it produced (the a2ui
// events of one push share it); a stream drops the versions its snapshot
// already holds and is reset when it misses one. Version is not sent to
// browsers.
type HostEvent struct {
	Name    string          `json:"name"`
	Data    json.RawMessage `json:"data"`
	Version int64           `json:"version,omitempty"`
}
