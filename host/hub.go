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
// (encoding/json never emits CR or LF outside escapes). Version is set on
// "a2ui" events: the session state version the push (or reset) that sent
// them produced (see Subscription.Admit); it is not sent to browsers.
type Event struct {
	Name    string          `json:"name"`
	Data    json.RawMessage `json:"data"`
	Version int64           `json:"version,omitempty"`
}

// Why a subscription ended.
var (
	// ErrOverflow: the subscriber's queue was full; it missed events and must
	// reconnect (the stream handler sends a "reset" event and ends).
	ErrOverflow = errors.New("subscriber queue overflow")
	// ErrHubClosed: the host is shutting down.
	ErrHubClosed = errors.New("host hub closed")
	// ErrResync: a subscriber missed a2ui events (another process's push
	// did not reach it); it must reconnect to get the surfaces again.
	ErrResync = errors.New("subscriber missed surface updates")
)

// Subscription receives a session's events on C, in publish order. C is
// closed when the subscription ends; Err then says why (nil after Close).
type Subscription struct {
	// C delivers each Publish's events, in order, as one slice (a push of
	// many messages takes one place in the queue); it closes when the
	// subscription ends. The slices are shared: read them, never change them.
	C <-chan []Event

	ch      chan []Event
	hub     *Hub
	session string
	err     error // guarded by hub.mu
	ended   bool  // guarded by hub.mu

	// The reader's a2ui position (Admit): the state version its browser
	// has, and whether the events of that version are still arriving.
	seen    int64
	current bool
}

// Relay carries a Hub's events to the hubs of the other processes sharing
// the store, and counts their subscribers (package api implements it over
// store.Broadcaster). Its methods never block.
type Relay interface {
	// Forward queues events published on this process, in order, for the
	// other processes' subscribers of session (best effort).
	Forward(session string, evs []Event)
	// Subscribers returns how many subscribers of session the other
	// processes last reported.
	Subscribers(session string) int
	// CountChanged says this process's subscriber count of session changed.
	CountChanged(session string)
}

// Hub fans events out per session. Publish never blocks: each subscriber has
// a bounded queue, and a subscriber whose queue is full is ended with
// ErrOverflow instead of slowing the publisher or the other subscribers.
// With a Relay, published events also reach the other processes.
type Hub struct {
	queue int

	mu       sync.Mutex
	sessions map[string]map[*Subscription]struct{}
	closed   bool
	relay    Relay
}

// NewHub returns a hub whose subscribers buffer up to queue publishes each.
func NewHub(queue int) *Hub {
	if queue <= 0 {
		queue = DefaultQueueSize
	}
	return &Hub{queue: queue, sessions: make(map[string]map[*Subscription]struct{})}
}

// SetRelay makes the hub forward what it publishes through r (set once, at
// start, before events flow).
func (h *Hub) SetRelay(r Relay) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.relay = r
}

// Subscribe registers a subscriber for session. After CloseAll it returns a
// subscription that is already ended with ErrHubClosed.
func (h *Hub) Subscribe(session string) *Subscription {
	ch := make(chan []Event, h.queue)
	s := &Subscription{C: ch, ch: ch, hub: h, session: session}
	h.mu.Lock()
	if h.closed {
		s.endLocked(ErrHubClosed)
		h.mu.Unlock()
		return s
	}
	m := h.sessions[session]
	if m == nil {
		m = make(map[*Subscription]struct{})
		h.sessions[session] = m
	}
	m[s] = struct{}{}
	r := h.relay
	h.mu.Unlock()
	if r != nil {
		r.CountChanged(session)
	}
	return s
}

// Publish queues evs, in order, for every subscriber of session on this
// process and, with a relay, on the others. It returns how many subscribers
// there are: those that received evs here plus those the other processes
// last reported. It never blocks.
func (h *Hub) Publish(session string, evs ...Event) int {
	n := h.Deliver(session, evs)
	h.mu.Lock()
	r := h.relay
	h.mu.Unlock()
	if r != nil {
		r.Forward(session, evs)
		n += r.Subscribers(session)
	}
	return n
}

// Deliver queues evs for the subscribers of session on this process only
// (the relay hands it what other processes published) and returns how many
// received them.
func (h *Hub) Deliver(session string, evs []Event) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for s := range h.sessions[session] {
		if s.sendLocked(evs) {
			n++
		}
	}
	return n
}

// sendLocked queues evs for s as one entry, ending s with ErrOverflow when
// its queue is full.
func (s *Subscription) sendLocked(evs []Event) bool {
	if len(evs) == 0 {
		return true
	}
	select {
	case s.ch <- evs:
		return true
	default:
		s.endLocked(ErrOverflow)
		return false
	}
}

// Count returns the number of live subscribers of session on this process.
func (h *Hub) Count(session string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions[session])
}

// Sessions returns the sessions with subscribers on this process.
func (h *Hub) Sessions() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.sessions))
	for s := range h.sessions {
		out = append(out, s)
	}
	return out
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
	s.endLocked(nil)
	r := s.hub.relay
	s.hub.mu.Unlock()
	if r != nil {
		r.CountChanged(s.session)
	}
}

// Admit tells the one goroutine reading C whether to send ev: it drops the
// a2ui events of pushes the snapshot from Host.Subscribe already holds, and
// returns ErrResync when the events of a push were missed (only a push
// relayed from another process can be: the stream must end with a reset so
// the browser reconnects and gets the surfaces again). Other events always
// pass.
func (s *Subscription) Admit(ev Event) (bool, error) {
	if ev.Name != EventA2UI || ev.Version == 0 {
		return true, nil
	}
	switch {
	case ev.Version == s.seen+1:
		s.seen, s.current = ev.Version, true
		return true, nil
	case ev.Version == s.seen:
		return s.current, nil // more of the push being sent, or a push the snapshot holds
	case ev.Version < s.seen:
		return false, nil
	}
	return false, ErrResync
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
