package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

func (s *Server) handleCommand(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleEditor)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	body, err := readBody(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	env, err := canvas.DecodeEnvelope(body)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	resp, err := s.engine.Execute(r.Context(), id, principalFrom(r.Context()).Actor, env)
	s.writeAnswer(w, r, resp, err)
}

// batchRequest is the body of POST /canvas_commands/{canvas_id}/commands.
type batchRequest struct {
	BaseRev        *int64            `json:"base_rev"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	Commands       []json.RawMessage `json:"commands"`
}

// maxBatch bounds the commands in one batch.
const maxBatch = 1000

func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleEditor)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	var req batchRequest
	if err := decodeJSON(r, &req); err != nil {
		s.problem(w, r, err)
		return
	}
	if req.BaseRev == nil {
		s.problem(w, r, canvas.Invalid("base_rev", "is required: send the head_rev you last read"))
		return
	}
	if len(req.Commands) > maxBatch {
		s.problem(w, r, canvas.Invalid("commands", "holds %d commands; at most %d per batch", len(req.Commands), maxBatch))
		return
	}
	envs := make([]canvas.Envelope, len(req.Commands))
	for i, raw := range req.Commands {
		if err := canvas.DecodeStrict(raw, &envs[i]); err != nil {
			s.problem(w, r, canvas.Invalid("commands["+strconv.Itoa(i)+"]", "not a valid CommandEnvelope: %v", err))
			return
		}
	}
	resp, err := s.engine.ExecuteBatch(r.Context(), id, principalFrom(r.Context()).Actor, *req.BaseRev, req.IdempotencyKey, envs)
	s.writeAnswer(w, r, resp, err)
}

// writeAnswer writes the engine's answer to a command or batch, or err as a problem document.
func (s *Server) writeAnswer(w http.ResponseWriter, r *http.Request, a store.Answer, err error) {
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if a.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeRaw(w, outcomeStatus(a.Outcome), a.Result)
}

// eventsResponse is GET /canvas_commands/{canvas_id}/events.
type eventsResponse struct {
	HeadRev int64            `json:"head_rev"`
	Commits []*canvas.Commit `json:"commits"`
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleViewer)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	q := r.URL.Query()
	after, err := intParam(q.Get("after_rev"), "after_rev", 0, 0, 1<<62)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	limit, err := intParam(q.Get("limit"), "limit", 100, 1, 1000)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	ctx, err := readConsistency(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	commits, head, err := s.engine.CommitsAfter(ctx, id, after, int(limit))
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if commits == nil {
		commits = []*canvas.Commit{}
	}
	writeJSON(w, http.StatusOK, eventsResponse{HeadRev: head, Commits: commits})
}

// intParam parses an optional integer query parameter within [lo, hi].
func intParam(v, name string, def, lo, hi int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, canvas.Invalid(name, "must be an integer from %d to %d, got %q", lo, hi, v)
	}
	return n, nil
}

// gestureRequest is the body of POST /canvas_commands/{canvas_id}/gesture.
type gestureRequest struct {
	Cursor    *struct{ X, Y float64 } `json:"cursor"`
	Selection []string                `json:"selection,omitempty"`
	Viewport  *struct {
		X float64 `json:"x"`
		Y float64 `json:"y"`
		W float64 `json:"w"`
		H float64 `json:"h"`
	} `json:"viewport,omitempty"`
}

// gestureEvent is the data of an SSE gesture event.
type gestureEvent struct {
	ActorID   string             `json:"actor_id"`
	ActorType canvas.ActorType   `json:"actor_type"`
	Cursor    map[string]float64 `json:"cursor"`
	Selection []string           `json:"selection,omitempty"`
	Viewport  any                `json:"viewport,omitempty"`
}

func (s *Server) handleGesture(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleViewer)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	var req gestureRequest
	if err := decodeJSON(r, &req); err != nil {
		s.problem(w, r, err)
		return
	}
	if req.Cursor == nil {
		s.problem(w, r, canvas.Invalid("cursor", "is required: {\"x\": ..., \"y\": ...}"))
		return
	}
	if len(req.Selection) > 1000 {
		s.problem(w, r, canvas.Invalid("selection", "names more than 1000 shapes"))
		return
	}
	// The canvas must exist; a gesture is ephemeral, so this process's copy says.
	if _, _, err := s.engine.Head(store.LocalReads(r.Context()), id); err != nil {
		s.problem(w, r, err)
		return
	}
	actor := principalFrom(r.Context()).Actor
	if !s.allowGesture(id+"\x00"+actor.ID, s.now()) {
		s.cfg.Metrics.Gesture("throttled")
		writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "delivered": false, "reason": "throttled"})
		return
	}
	ev := gestureEvent{ActorID: actor.ID, ActorType: actor.Type, Cursor: map[string]float64{"x": req.Cursor.X, "y": req.Cursor.Y},
		Selection: req.Selection}
	if req.Viewport != nil {
		ev.Viewport = req.Viewport
	}
	s.hub.PublishEvent(id, canvas.EventGesture, ev)
	s.cfg.Metrics.Gesture("forwarded")
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "delivered": true})
}

// allowGesture throttles one actor's gestures on one canvas to one per GestureInterval.
func (s *Server) allowGesture(key string, now time.Time) bool {
	s.gestureMu.Lock()
	defer s.gestureMu.Unlock()
	if last, ok := s.lastGesture[key]; ok && now.Sub(last) < s.cfg.GestureInterval {
		return false
	}
	s.lastGesture[key] = now
	if len(s.lastGesture) > 100000 { // bound memory: forget old entries
		for k, t := range s.lastGesture {
			if now.Sub(t) > time.Second {
				delete(s.lastGesture, k)
			}
		}
	}
	return true
}

// readConsistency returns the context a read of r runs with: linearizable
// (the default: it reflects every commit acknowledged through any process
// before the request arrived, or fails with 503), or, with
// ?consistency=local, answered from this process's copy, which may trail
// other processes' commits (store.LocalReads). Any other value is a 400.
// Every route that reads a canvas's state or log takes it.
func readConsistency(r *http.Request) (context.Context, error) {
	switch v := r.URL.Query().Get("consistency"); v {
	case "", "linearizable":
		return r.Context(), nil
	case "local":
		return store.LocalReads(r.Context()), nil
	default:
		return nil, canvas.Invalid("consistency", "must be linearizable (the default) or local, got %q", v)
	}
}
