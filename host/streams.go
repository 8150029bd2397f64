package host

import (
	"encoding/json"
	"sync/atomic"

	"github.com/canvasd/canvasd/canvas"
)

// Event names on /sse/host/{session}.
const (
	EventReload  = "reload"  // {path, op: put|delete}: a session file changed
	EventA2UI    = "a2ui"    // one A2UI v0.8 server→client message
	EventPresent = "present" // {action: show|hide|navigate, path?, placement?}
	EventInvoke  = "invoke"  // {invoke_id, action, payload, timeout_ms}
)

// Event is one server-sent event for a session. Version is set on "a2ui"
// events: the session state version the push (or reset) that sent them
// produced (see Snapshot); it is not sent to browsers.
type Event = canvas.HostEvent

// Streams carries a session's events to its browsers, on this process and
// the others sharing the store (package hub implements it; cmd/canvasd
// wires it with SetStreams). PublishSession queues evs, in order and
// together, for every browser of session, never blocks, and returns how
// many browsers there are.
type Streams interface {
	PublishSession(session string, evs ...Event) int
}

// SetStreams makes the host publish its sessions' events through s (set
// once, at start, before events flow). Until then, and with nil, events
// reach no browser.
func (h *Host) SetStreams(s Streams) { h.streams.Store(&s) }

// publish hands evs to the streams and returns how many browsers the
// session has.
func (h *Host) publish(session string, evs ...Event) int {
	s := h.streams.Load()
	if s == nil || *s == nil {
		return 0
	}
	return (*s).PublishSession(session, evs...)
}

// streamsRef holds the Streams SetStreams was given.
type streamsRef = atomic.Pointer[Streams]

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("host: marshal event: " + err.Error()) // only our own plain types reach here
	}
	return b
}
