package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/hub"
)

// maxInvokeBody bounds invoke requests and answers (an answer may carry a
// screenshot as a data URL).
const maxInvokeBody = 16 << 20

// CanvasInvokeDeliverer sends invoke events to the browsers on a canvas's
// stream (GET /sse/canvas/{canvas_id}, event "invoke") and reports how many
// were subscribed (with a relay, on every process). It is a
// host.BrokerBinder: a broker built on it receives the answers that reach
// other processes (hub/relay.go).
func CanvasInvokeDeliverer(h *hub.Hub) host.Deliverer { return canvasDeliverer{hub: h} }

type canvasDeliverer struct{ hub *hub.Hub }

// DeliverInvoke publishes the invoke event on the canvas's streams; an
// agent screenshot goes to the canvas's elected host only (an error wrapping
// canvas.ErrUnavailable when there is none).
func (d canvasDeliverer) DeliverInvoke(t host.Target, req host.InvokeRequest) (int, error) {
	if req.Action == canvas.InvokeAgentScreenshot {
		if d.hub.PublishToHost(t.CanvasID, host.EventInvoke, req) == "" {
			return 0, hub.NoHost(t.CanvasID)
		}
		return 1, nil
	}
	n := d.hub.Subscribers(t.CanvasID)
	d.hub.PublishEvent(t.CanvasID, host.EventInvoke, req)
	return n, nil
}

// BindBroker lets the hub's relay hand b the answers other processes receive.
func (d canvasDeliverer) BindBroker(b *host.Broker) { d.hub.BindBroker(brokerAnswers{b}) }

// brokerAnswers is a broker as the hub's relay hands it answers
// (hub.InvokeAnswers).
type brokerAnswers struct{ b *host.Broker }

func (a brokerAnswers) InvokeTarget(id string) (canvasID, hostSession string, err error) {
	t, err := a.b.Target(id)
	return t.CanvasID, t.HostSession, err
}

func (a brokerAnswers) AnswerInvoke(id string, answer json.RawMessage) (bool, error) {
	var ans host.Answer
	if err := json.Unmarshal(answer, &ans); err != nil {
		return false, fmt.Errorf("%w: the relayed answer is not an invoke answer: %v", canvas.ErrInvalid, err)
	}
	return a.b.Answer(id, ans)
}

// invokeRequest is the body of POST /api/invoke.
type invokeRequest struct {
	CanvasID    string          `json:"canvas_id,omitempty"`
	HostSession string          `json:"host_session,omitempty"`
	Action      string          `json:"action"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	TimeoutMS   int64           `json:"timeout_ms,omitempty"`
}

// authorizeTarget checks role need on the invoke's canvas or host session.
func authorizeTarget(r *http.Request, t host.Target, need canvas.Role) error {
	if t.HostSession != "" {
		return authorize(r, t.HostSession, need)
	}
	return authorize(r, t.CanvasID, need)
}

// handleInvoke serves POST /api/invoke: it sends the invoke to the target's
// browsers and answers with the first browser answer (200), or a 504
// problem with unconfirmed (a browser was connected but did not answer).
// A canvas that does not exist is a 404 (after authorization), at once.
func (h *hostAPI) handleInvoke(w http.ResponseWriter, r *http.Request) {
	var req invokeRequest
	if err := decodeJSON(r, &req); err != nil {
		h.s.problem(w, r, err)
		return
	}
	t := host.Target{CanvasID: req.CanvasID, HostSession: req.HostSession}
	if err := t.Validate(); err != nil {
		h.s.problem(w, r, err)
		return
	}
	if err := authorizeTarget(r, t, canvas.RoleEditor); err != nil {
		h.s.problem(w, r, err)
		return
	}
	if req.TimeoutMS < 0 || req.TimeoutMS > host.MaxInvokeTimeout.Milliseconds() {
		h.s.problem(w, r, canvas.Invalid("timeout_ms", "must be 1 to %d", host.MaxInvokeTimeout.Milliseconds()))
		return
	}
	if t.HostSession != "" {
		if err := host.ValidateHostAction(req.Action, req.Payload); err != nil {
			h.s.problem(w, r, err)
			return
		}
	}
	if t.CanvasID != "" {
		if _, err := h.s.st.GetCanvas(r.Context(), t.CanvasID); err != nil {
			h.s.problem(w, r, err)
			return
		}
	}
	ctx := r.Context()
	if req.Action == canvas.InvokeAgentScreenshot && t.CanvasID != "" {
		// Fails at once without a host, and when the host leaves while it waits.
		_, hctx, cancel, err := h.s.hub.WhileHost(ctx, t.CanvasID)
		if err != nil {
			h.s.problem(w, r, err)
			return
		}
		defer cancel()
		ctx = hctx
	}
	a, err := h.broker.Invoke(ctx, t, req.Action, req.Payload, time.Duration(req.TimeoutMS)*time.Millisecond)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, hub.ErrHostLost) && r.Context().Err() == nil {
		err = cause
	}
	if err != nil {
		if errors.Is(err, r.Context().Err()) && r.Context().Err() != nil {
			return // the caller went away
		}
		h.s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// handleAnswer serves POST /api/invoke/{invoke_id}: the first answer to a
// pending invoke wins ("accepted": true); later answers are acknowledged
// with "accepted": false and ignored; an unknown id is a 404. A host
// session's viewer answers with the session's capability, which answers
// only invokes sent to that session (403 otherwise).
//
// With a relay (several processes on one PostgreSQL), an id this process's
// broker does not know is relayed to the other processes: the one whose
// broker waits for it checks the answerer's access, resolves it and
// acknowledges, and this handler answers as that broker decided (200 with
// accepted true/false, or 403). 404 means no process claimed the id within
// answerForwardWait (2 s): unknown, forgotten, or its process is gone.
func (h *hostAPI) handleAnswer(w http.ResponseWriter, r *http.Request) {
	id, err := pathParam(r, "invoke_id")
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	var a host.Answer
	if err := decodeJSON(r, &a); err != nil {
		h.s.problem(w, r, err)
		return
	}
	onlyHost := capSession(r.Context()) // a page's capability answers only its session's invokes
	if t, err := h.broker.Target(id); err == nil {
		if onlyHost != "" && t.HostSession != onlyHost {
			h.s.problem(w, r, fmt.Errorf("%w: this page's capability answers only the invokes sent to host session %q", canvas.ErrForbidden, onlyHost))
			return
		}
		if err := authorizeTarget(r, t, canvas.RoleViewer); err != nil {
			h.s.problem(w, r, err)
			return
		}
	}
	accepted, err := h.broker.Answer(id, a)
	if h.s.hub.Relays() && errors.Is(err, canvas.ErrNotFound) {
		var raw []byte
		if raw, err = json.Marshal(a); err == nil {
			accepted, err = h.s.hub.ForwardAnswer(r.Context(), id, raw, principalFrom(r.Context()), onlyHost)
		}
	}
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"accepted": accepted})
}
