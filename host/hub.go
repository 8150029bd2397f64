package host

import (
	"encoding/json"
	"errors"
	"sync"
)

// Event names on /sse/host/{session}.
const (
	EventReload  = "reload"  // {path, op: put|delete}: a session file changed
	EventA2UI    = "a2ui"    // one A2UI v0.8 server→client message
	EventPresent = "present" // {action: show|hide|navigate, path?, placement?}
	EventInvoke  = "invoke"  // {invoke_id, action, payload, timeout_ms}
)

// Event is one server-sent event for a session. Data is one line of JSON
// (encoding/json never emits CR or LF outside escapes).
type Event struct {
	Name string
	Data json.RawMessage
}

// Why a subscription ended.
var (
	// ErrOverflow: the subscriber's queue was full; it missed events and must
	// reconnect (the stream handler sends a "reset" event and ends).
	ErrOverflow = errors.New("subscriber queue overflow")
	// ErrHubClosed: the host is shutting down.
	ErrHubClosed = errors.New("host hub closed")
)

// Subscription receives a session's events on C, in publish order. C is
// closed when the subscription ends; Err then says why (nil after Close).
type Subscription struct {
	C <-chan Event

	ch      chan Event
	hub     *Hub
	session string
	err     error // guarded by hub.mu
	ended   bool  // guarded by hub.mu
}

// Hub fans events out per session. Publish never blocks: each subscriber has
// a bounded queue, and a subscriber whose queue is full is ended with
// ErrOverflow instead of slowing the publisher or the other subscribers.
type Hub struct {
	queue int

	mu       sync.Mutex
	sessions map[string]map[*Subscription]struct{}
	closed   bool
}

// NewHub returns a hub whose subscribers buffer up to queue events each.
func NewHub(queue int) *Hub {
	if queue <= 0 {
		queue = DefaultQueueSize
	}
	return &Hub{queue: queue, sessions: make(map[string]map[*Subscription]struct{})}
}

// Subscribe registers a subscriber for session. After CloseAll it returns a
// subscription that is already ended with ErrHubClosed.
func (h *Hub) Subscribe(session string) *Subscription {
	ch := make(chan Event, h.queue)
	s := &Subscription{C: ch, ch: ch, hub: h, session: session}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		s.endLocked(ErrHubClosed)
		return s
	}
	m := h.sessions[session]
	if m == nil {
		m = make(map[*Subscription]struct{})
		h.sessions[session] = m
	}
	m[s] = struct{}{}
	return s
}

// Publish queues ev for every subscriber of session and returns how many
// received it. It never blocks.
func (h *Hub) Publish(session string, ev Event) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for s := range h.sessions[session] {
		select {
		case s.ch <- ev:
			n++
		default:
			s.endLocked(ErrOverflow)
		}
	}
	return n
}

// Count returns the number of live subscribers of session.
func (h *Hub) Count(session string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions[session])
}

// CloseAll ends every subscription with ErrHubClosed; later Subscribe calls
// return ended subscriptions.
func (h *Hub) CloseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, m := range h.sessions {
		for s := range m {
			s.endLocked(ErrHubClosed)
		}
	}
}

// Close ends the subscription. It is safe to call more than once.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.endLocked(nil)
}

// Err says why the subscription ended: ErrOverflow, ErrHubClosed, or nil
// (still live, or closed by its owner).
func (s *Subscription) Err() error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.err
}

func (s *Subscription) endLocked(err error) {
	if s.ended {
		return
	}
	s.ended = true
	s.err = err
	if m := s.hub.sessions[s.session]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(s.hub.sessions, s.session)
		}
	}
	close(s.ch)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("host: marshal event: " + err.Error()) // only our own plain types reach here
	}
	return b
}
