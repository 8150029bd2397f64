package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// Browsers on a canvas stream (the agent's eyes and hands). A stream opened
// with ?client_id=...&capabilities=... declares a browser; one that declares
// the screenshot capability is a host candidate. Per canvas the hub elects
// one host among the candidates of every process (relay.go shares each
// process's candidates in its presence messages): the candidate that joined
// first (its process's clock, then the client id, so every process that
// knows the same candidates picks the same one). A host stays host until its
// stream ends; then the next candidate is elected at once on its process and
// as soon as the presence message arrives on the others (a NOTIFY round
// trip). A process that dies without closing its streams keeps its
// candidates in the others' view until presenceTTL expires.
//
// Every change of host is announced to the canvas's local subscribers as an
// agent:host event, and each declared browser gets the current host right
// after it subscribes. Only the host receives screenshot invokes and the
// events the agent sends to it (set_viewport, resent envelopes).
//
// A client id belongs, on its canvas, to the token (its actor) whose open
// streams declare it: while one is open (on any process: the relay's
// presence messages carry each process's declared clients with their
// tokens), a stream of another token declaring the same id is refused
// (409), and acks and views (POST /api/canvas-agent/ack and /view) speak
// only for a client id the caller's own token declared (403 otherwise), so
// no token can ack, steer or take the place of another's browser.

// Browser is what a stream declared about its browser.
type Browser struct {
	id        string
	owner     string // the actor of the token that opened the stream
	candidate bool   // declared the screenshot capability: may be elected host
	since     int64  // Unix nanoseconds it joined (kept while another stream of the same id is open)
}

// declaredClient is a browser declared on a canvas and the actor of the
// token that declared it (shared with the other processes by the relay).
type declaredClient struct {
	ID    string `json:"id"`
	Owner string `json:"o"`
}

// hostCandidate is one host candidate, local or from another process.
type hostCandidate struct {
	ID    string `json:"id"`
	Since int64  `json:"s"`
}

// before orders candidates: the earlier joiner, then the smaller id; the
// zero candidate (none) comes after every real one.
func (c hostCandidate) before(o hostCandidate) bool {
	if c.ID == "" || o.ID == "" {
		return c.ID != ""
	}
	if c.Since != o.Since {
		return c.Since < o.Since
	}
	return c.ID < o.ID
}

type hostState struct {
	id      string
	changed chan struct{} // closed when the canvas's host changes
}

// Browser capabilities a stream may declare.
const (
	CapScreenshot = "screenshot" // answers agent:screenshot invokes: a host candidate
	CapViewport   = "viewport"   // follows set_viewport
)

// ParseBrowser reads a stream's declaration from its query, made with the
// token of actor owner: nil when it declared nothing.
func ParseBrowser(q url.Values, owner string, now time.Time) (*Browser, error) {
	id, caps := q.Get("client_id"), q.Get("capabilities")
	if id == "" {
		if caps != "" {
			return nil, canvas.Invalid("client_id", "is required with capabilities: the browser's id (1 to 64 of A-Z a-z 0-9 . _ : -)")
		}
		return nil, nil
	}
	if !canvas.IsClientID(id) {
		return nil, canvas.Invalid("client_id", "must be 1 to 64 of A-Z a-z 0-9 . _ : -")
	}
	b := &Browser{id: id, owner: owner, since: now.UnixNano()}
	if caps == "" {
		return b, nil
	}
	list := strings.Split(caps, ",")
	if len(list) > 16 {
		return nil, canvas.Invalid("capabilities", "at most 16 comma-separated capabilities (known: screenshot, viewport)")
	}
	for _, c := range list {
		switch c {
		case CapScreenshot:
			b.candidate = true
		case CapViewport:
		default:
			if len(c) == 0 || len(c) > 32 {
				return nil, canvas.Invalid("capabilities", "a capability is 1 to 32 characters (known: screenshot, viewport)")
			}
			// Unknown capabilities are accepted and ignored (newer browsers).
		}
	}
	return b, nil
}

// errClientTaken is the error of a stream declaring a client id that
// another token's open stream declares on the canvas (409).
func errClientTaken(canvasID, clientID string) error {
	return fmt.Errorf("%w: client_id %q is declared on canvas %q by a stream of another token; a client id belongs to the token whose streams declare it while one is open: give each browser its own (e.g. random) id",
		canvas.ErrConflict, clientID, canvasID)
}

// remoteOwnerConflict reports whether another process reported clientID on
// the canvas declared by a token other than owner's.
func (h *Hub) remoteOwnerConflict(canvasID, clientID, owner string) bool {
	if r := h.relay; r != nil {
		for _, o := range r.remoteOwners(canvasID, clientID) {
			if o != owner {
				return true
			}
		}
	}
	return false
}

// SpeaksFor returns nil when a stream of owner's token declaring clientID
// is open on the canvas, on this process or (as the relay's presence last
// said) on another; otherwise an error wrapping canvas.ErrForbidden. Acks
// and views speak for a browser only with the token that declared it.
func (h *Hub) SpeaksFor(canvasID, clientID, owner string) error {
	h.mu.RLock()
	open := h.browsers[canvasID][clientID]
	mine := len(open) > 0 && open[0].owner == owner // the open ones all have one owner
	h.mu.RUnlock()
	if mine {
		return nil
	}
	if r := h.relay; r != nil && slices.Contains(r.remoteOwners(canvasID, clientID), owner) {
		return nil
	}
	return fmt.Errorf("%w: client %q is not a browser your token declared on canvas %q: acks and views speak only for a client_id that a stream of the same token declares and keeps open (GET /sse/canvas/{canvas_id}?client_id=...)",
		canvas.ErrForbidden, clientID, canvasID)
}

// undeclare drops b, the declaration of a stream leaving subs, from the
// index of declared browsers. The caller holds h.mu.
func (h *Hub) undeclare(canvasID string, b *Browser) {
	byID := h.browsers[canvasID]
	open := slices.DeleteFunc(byID[b.id], func(o *Browser) bool { return o == b })
	if len(open) > 0 {
		byID[b.id] = open
		return
	}
	delete(byID, b.id)
	if len(byID) == 0 {
		delete(h.browsers, canvasID)
	}
}

// localClients lists the browsers declared on a canvas on this process, one
// per client id (for the relay's presence messages).
func (h *Hub) localClients(canvasID string) []declaredClient {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []declaredClient
	for id, open := range h.browsers[canvasID] {
		out = append(out, declaredClient{ID: id, Owner: open[0].owner})
	}
	slices.SortFunc(out, func(a, b declaredClient) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Host returns the client id of the canvas's elected host, or "" when no
// browser on any process declared the screenshot capability.
func (h *Hub) Host(canvasID string) string {
	id, _ := h.HostWatch(canvasID)
	return id
}

// HostWatch returns the canvas's host and a channel closed when it changes
// (nil when there is no host).
func (h *Hub) HostWatch(canvasID string) (string, <-chan struct{}) {
	h.hostMu.Lock()
	defer h.hostMu.Unlock()
	if st := h.hosts[canvasID]; st != nil {
		return st.id, st.changed
	}
	return "", nil
}

// ErrNoHost: no browser on the canvas declared the screenshot capability;
// ErrHostLost: the host's stream ended while a request to it was pending.
// Both are 503 problems (retry when a browser is there).
var (
	ErrNoHost   = fmt.Errorf("no host browser on the canvas: %w", canvas.ErrUnavailable)
	ErrHostLost = fmt.Errorf("the host browser left: %w", canvas.ErrUnavailable)
)

// WhileHost returns the canvas's host and a context canceled (with cause
// ErrHostLost) when the host changes; with no host it returns "" and a
// canvas.ErrUnavailable error at once.
func (h *Hub) WhileHost(ctx context.Context, canvasID string) (string, context.Context, context.CancelFunc, error) {
	id, changed := h.HostWatch(canvasID)
	if id == "" {
		return "", nil, nil, NoHost(canvasID)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-changed:
			cancel(fmt.Errorf("%w: %s no longer hosts canvas %q", ErrHostLost, id, canvasID))
		case <-ctx.Done():
		}
	}()
	return id, ctx, func() { cancel(context.Canceled) }, nil
}

// NoHost is the error for a canvas without a host browser.
func NoHost(canvasID string) error {
	return fmt.Errorf("%w on canvas %q: no browser declared the %q capability on its stream (GET /sse/canvas/{canvas_id}?client_id=...&capabilities=screenshot); the agent goes on text-only",
		ErrNoHost, canvasID, CapScreenshot)
}

// PublishEventTo sends an ephemeral event to one browser's streams (on
// whichever process they are), never to other subscribers.
func (h *Hub) PublishEventTo(canvasID, clientID, event string, v any) {
	h.publish(canvasID, clientID, event, v)
}

// PublishToHost sends an ephemeral event to the canvas's host only and
// returns the host's client id, or "" (nothing sent) when there is none.
func (h *Hub) PublishToHost(canvasID, event string, v any) string {
	id := h.Host(canvasID)
	if id != "" {
		h.publish(canvasID, id, event, v)
	}
	return id
}

// localCandidate returns this process's first host candidate on a canvas.
func (h *Hub) localCandidate(canvasID string) hostCandidate {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var best hostCandidate
	for _, open := range h.browsers[canvasID] {
		for _, b := range open {
			if c := (hostCandidate{ID: b.id, Since: b.since}); b.candidate && c.before(best) {
				best = c
			}
		}
	}
	return best
}

// localCandidates lists this process's host candidates on a canvas (one per
// client id, for the relay's presence messages).
func (h *Hub) localCandidates(canvasID string) []hostCandidate {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []hostCandidate
	for id, open := range h.browsers[canvasID] {
		c, candidate := hostCandidate{ID: id}, false
		for _, b := range open {
			if b.candidate && (!candidate || b.since < c.Since) {
				c.Since, candidate = b.since, true
			}
		}
		if candidate {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b hostCandidate) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	return out
}

// elect recomputes a canvas's host from the local and remote candidates and
// announces a change to the local subscribers; it reports whether the host
// changed. Elections are serialized so announcements go out in the order
// the hosts changed.
func (h *Hub) elect(canvasID string) bool {
	h.electMu.Lock()
	defer h.electMu.Unlock()
	best := h.localCandidate(canvasID)
	if r := h.relay; r != nil {
		if c := r.remoteCandidate(canvasID); c.before(best) {
			best = c
		}
	}
	h.hostMu.Lock()
	old := h.hosts[canvasID]
	if (old == nil && best.ID == "") || (old != nil && old.id == best.ID) {
		h.hostMu.Unlock()
		return false
	}
	if best.ID == "" {
		delete(h.hosts, canvasID)
	} else {
		h.hosts[canvasID] = &hostState{id: best.ID, changed: make(chan struct{})}
	}
	if old != nil {
		close(old.changed)
	}
	// Announced before hostMu is released: whoever reads the new host
	// (PublishToHost: set_viewport, resent envelopes, screenshot invokes)
	// sends to it after the agent:host event naming it, so the browser
	// knows it is the host when they arrive.
	h.send(canvasID, &frame{data: hostFrame(canvasID, best.ID)})
	h.hostMu.Unlock()
	return true
}

// hostFrame encodes an agent:host event.
func hostFrame(canvasID, hostID string) []byte {
	return EncodeEvent(canvas.EventAgentHost, "", canvas.AgentHost{CanvasID: canvasID, HostClientID: hostID})
}

// BrowserInput is implemented by agent services whose sessions run in this
// process: they take the browsers' acks and views (POST
// /api/canvas-agent/ack and /view). Both return canvas.ErrNotFound when the
// session does not run here; the server then relays the input to the other
// processes (relay.go), whose services try in turn.
type BrowserInput interface {
	Ack(sessionID string, a canvas.AgentAck) error
	View(sessionID string, v canvas.AgentView) error
}

// Kinds of browser input for a running agent session.
const (
	InputAck  = "ack"
	InputView = "view"
)

// DeliverInput hands a browser's ack or view to the agent session: to this
// process's agent service, and when the session does not run here and relay
// is set, to the other processes (their relays call DeliverInput with
// relay false).
func (h *Hub) DeliverInput(sessionID, kind string, data []byte, relay bool) {
	err := fmt.Errorf("no agent service here: %w", canvas.ErrNotFound)
	if bi := h.wired().Input; bi != nil {
		switch kind {
		case InputAck:
			var a canvas.AgentAck
			if err = json.Unmarshal(data, &a); err == nil {
				err = bi.Ack(sessionID, a)
			}
		case InputView:
			var v canvas.AgentView
			if err = json.Unmarshal(data, &v); err == nil {
				err = bi.View(sessionID, v)
			}
		}
	}
	if r := h.relay; r != nil && relay && errors.Is(err, canvas.ErrNotFound) {
		r.sendInput(inputMsg{SessionID: sessionID, Kind: kind, Data: data})
	}
}
