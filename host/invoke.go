package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// Invoke limits.
const (
	DefaultInvokeTimeout = 10 * time.Second
	MaxInvokeTimeout     = 5 * time.Minute
	answeredTTL          = 2 * time.Minute // how long late answers are recognised (and ignored)
)

// ErrInvokeTimeout: no browser answered an invoke in time (HTTP 504). The
// concrete error is a *InvokeTimeoutError.
var ErrInvokeTimeout = errors.New("invoke timed out")

// InvokeTimeoutError is returned by Broker.Invoke when no answer came in
// time. Unconfirmed is true when at least one browser was subscribed to the
// target when the call was sent (it may have run the action without
// answering); false means nobody was listening. It wraps ErrInvokeTimeout.
type InvokeTimeoutError struct {
	InvokeID    string
	Timeout     time.Duration
	Listeners   int
	Unconfirmed bool
}

func (e *InvokeTimeoutError) Error() string {
	if e.Unconfirmed {
		return fmt.Sprintf("invoke %s: %d browser(s) were connected but none answered within %v; the action may or may not have run",
			e.InvokeID, e.Listeners, e.Timeout)
	}
	return fmt.Sprintf("invoke %s: no browser is connected to the target, so nothing ran; open the page (or the shell) and retry (waited %v)",
		e.InvokeID, e.Timeout)
}

// Unwrap makes errors.Is(err, ErrInvokeTimeout) true.
func (e *InvokeTimeoutError) Unwrap() error { return ErrInvokeTimeout }

// Target names where an invoke goes: a canvas's stream or a host session's.
type Target struct {
	CanvasID    string `json:"canvas_id,omitempty"`
	HostSession string `json:"host_session,omitempty"`
}

// Validate requires exactly one of CanvasID and HostSession.
func (t Target) Validate() error {
	if (t.CanvasID == "") == (t.HostSession == "") {
		return canvas.Invalid("canvas_id", "give exactly one of canvas_id or host_session")
	}
	if t.HostSession != "" {
		return ValidateSession(t.HostSession)
	}
	return nil
}

// InvokeRequest is the "invoke" event browsers receive.
type InvokeRequest struct {
	InvokeID  string          `json:"invoke_id"`
	Action    string          `json:"action"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	TimeoutMS int64           `json:"timeout_ms"`
}

// Answer is a browser's reply to an invoke.
type Answer struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// Deliverer sends an invoke event to the browsers of a target and returns
// how many subscribers received it.
type Deliverer interface {
	DeliverInvoke(t Target, req InvokeRequest) (listeners int, err error)
}

// DelivererFunc adapts a function to Deliverer.
type DelivererFunc func(t Target, req InvokeRequest) (int, error)

// DeliverInvoke calls f.
func (f DelivererFunc) DeliverInvoke(t Target, req InvokeRequest) (int, error) { return f(t, req) }

// BrokerBinder is implemented by Deliverers that must know the Broker they
// deliver for, e.g. to hand it answers that reached another process (see
// api's cross-process relay). NewBroker calls BindBroker once with the new
// broker; a Deliverer wrapping others passes the call on.
type BrokerBinder interface {
	BindBroker(b *Broker)
}

// Validate checks an answer's shape: ok with a result, or not ok with an
// error, both JSON when present. It is what Broker.Answer checks first.
func (a Answer) Validate() error {
	if a.OK && len(a.Error) > 0 {
		return canvas.Invalid("error", "give result when ok is true, error when it is false")
	}
	for _, raw := range []json.RawMessage{a.Result, a.Error} {
		if len(raw) > 0 && !json.Valid(raw) {
			return canvas.Invalid("result", "must be JSON")
		}
	}
	return nil
}

type pending struct {
	target Target
	done   chan Answer // buffered 1; the first answer wins
}

// Broker correlates server→browser invokes with their answers. Ids are
// minted by the broker (128 random bits); the first answer to an id wins and
// later ones are ignored. It starts no goroutines.
type Broker struct {
	deliver Deliverer
	now     func() time.Time

	mu       sync.Mutex
	pending  map[string]*pending
	answered map[string]finished // finished ids, for recognising late answers
}

// finished is an invoke that was answered or timed out.
type finished struct {
	at     time.Time
	target Target
}

// NewBroker returns a broker that sends invoke events through d (and binds
// itself to d when d is a BrokerBinder).
func NewBroker(d Deliverer) *Broker {
	b := &Broker{deliver: d, now: time.Now, pending: map[string]*pending{}, answered: map[string]finished{}}
	if bb, ok := d.(BrokerBinder); ok {
		bb.BindBroker(b)
	}
	return b
}

// HostDeliverer delivers invokes for host sessions to the host's hub, and
// passes canvas targets to canvas (which may be nil: canvas targets then fail
// with ErrNotFound).
// The returned Deliverer passes BindBroker on to canvasTargets.
func (h *Host) HostDeliverer(canvasTargets Deliverer) Deliverer {
	return hostDeliverer{h: h, canvasTargets: canvasTargets}
}

type hostDeliverer struct {
	h             *Host
	canvasTargets Deliverer
}

// DeliverInvoke sends host-session invokes to this process's host streams
// and canvas invokes to canvasTargets.
func (d hostDeliverer) DeliverInvoke(t Target, req InvokeRequest) (int, error) {
	if t.HostSession != "" {
		return d.h.publish(t.HostSession, Event{Name: EventInvoke, Data: mustJSON(req)}), nil
	}
	if d.canvasTargets == nil {
		return 0, fmt.Errorf("invoke to canvas %q: canvas streams are not wired: %w", t.CanvasID, canvas.ErrNotFound)
	}
	return d.canvasTargets.DeliverInvoke(t, req)
}

// BindBroker passes b on to canvasTargets when it is a BrokerBinder.
func (d hostDeliverer) BindBroker(b *Broker) {
	if bb, ok := d.canvasTargets.(BrokerBinder); ok {
		bb.BindBroker(b)
	}
}

// Invoke sends action and payload to the target's browsers and waits for the
// first answer, the timeout (≤ 0: DefaultInvokeTimeout; capped at
// MaxInvokeTimeout) or ctx. On timeout the error is a *InvokeTimeoutError; on
// ctx's end, ctx.Err(). The answer's OK=false is a normal return (the
// browser reported an error), not an error of Invoke.
func (b *Broker) Invoke(ctx context.Context, t Target, action string, payload json.RawMessage, timeout time.Duration) (Answer, error) {
	if err := t.Validate(); err != nil {
		return Answer{}, err
	}
	if action == "" || len(action) > 64 {
		return Answer{}, canvas.Invalid("action", "is required (1 to 64 characters), e.g. \"eval\" or \"snapshot\"")
	}
	if len(payload) > 0 && !json.Valid(payload) {
		return Answer{}, canvas.Invalid("payload", "must be JSON")
	}
	if timeout <= 0 {
		timeout = DefaultInvokeTimeout
	}
	if timeout > MaxInvokeTimeout {
		timeout = MaxInvokeTimeout
	}
	id := newInvokeID()
	p := &pending{target: t, done: make(chan Answer, 1)}
	b.mu.Lock()
	b.pruneLocked()
	b.pending[id] = p
	b.mu.Unlock()
	defer b.finish(id)

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	n, err := b.deliver.DeliverInvoke(t, InvokeRequest{InvokeID: id, Action: action, Payload: payload, TimeoutMS: timeout.Milliseconds()})
	if err != nil {
		return Answer{}, err
	}
	select {
	case a := <-p.done:
		return a, nil
	case <-timer.C:
		return Answer{}, &InvokeTimeoutError{InvokeID: id, Timeout: timeout, Listeners: n, Unconfirmed: n > 0}
	case <-ctx.Done():
		return Answer{}, ctx.Err()
	}
}

func (b *Broker) finish(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.pending[id]; p != nil {
		delete(b.pending, id)
		b.answered[id] = finished{b.now(), p.target}
	}
}

func (b *Broker) pruneLocked() {
	cut := b.now().Add(-answeredTTL)
	for id, f := range b.answered {
		if f.at.Before(cut) {
			delete(b.answered, id)
		}
	}
}

// Target returns the target of a pending or recently finished invoke, so a
// handler can check the answering principal's access (a late answer too).
// An id the broker never minted, or forgot, is ErrNotFound.
func (b *Broker) Target(id string) (Target, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.pending[id]; p != nil {
		return p.target, nil
	}
	if f, ok := b.answered[id]; ok {
		return f.target, nil
	}
	return Target{}, fmt.Errorf("invoke %q is unknown or expired: %w", id, canvas.ErrNotFound)
}

// Answer records a browser's answer. accepted is true for the first answer
// to a pending invoke; an answer to an invoke that was already answered or
// timed out recently is ignored (accepted false, nil error); an id the broker
// never minted, or forgot, is ErrNotFound.
func (b *Broker) Answer(id string, a Answer) (accepted bool, err error) {
	if err := a.Validate(); err != nil {
		return false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.pending[id]; p != nil {
		select {
		case p.done <- a:
			delete(b.pending, id)
			b.answered[id] = finished{b.now(), p.target}
			return true, nil
		default:
			return false, nil
		}
	}
	if _, ok := b.answered[id]; ok {
		return false, nil
	}
	return false, fmt.Errorf("invoke %q is unknown or expired: %w", id, canvas.ErrNotFound)
}

func newInvokeID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "inv_" + hex.EncodeToString(b[:])
}
