package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/host"
)

// *agent.Runner is the AgentService of an in-process runner.
var _ AgentService = (*agent.Runner)(nil)

// AgentService is what the agent endpoints delegate to.
type AgentService interface {
	// Run starts a session and returns its id (the run continues in the background).
	Run(ctx context.Context, req client.AgentRunRequest) (string, error)
	// Session returns a session with transcript, todos and stats, or canvas.ErrNotFound.
	Session(ctx context.Context, id string) (client.AgentSession, error)
	// Cancel stops a session; afterwards nothing more is applied.
	Cancel(ctx context.Context, id string) error
	// Catalog returns the action catalog JSON with its JSON Schemas.
	Catalog() []byte
}

// isAgentTopic reports whether POST /api/canvas-agent/events may publish event.
func isAgentTopic(event string) bool {
	switch event {
	case client.EventAgentAction, client.EventAgentChat, client.EventAgentStatus, client.EventScreenshotRequest:
		return true
	}
	return false
}

// agentRoutes mounts API.md "Agent" (behind requireAuth):
//
//	POST /api/canvas-agent/run                    editor on roomId → 202 {ok, session_id}
//	GET  /api/canvas-agent/sessions/{session_id}  viewer on the session's canvas
//	POST /api/canvas-agent/sessions/{session_id}/cancel  editor on the session's canvas
//	GET  /api/canvas-agent/catalog                any authenticated caller
//	POST /api/canvas-agent/events                 an agent or service actor with editor on canvas_id
//
// svc nil mounts only the catalog and the events relay (a server whose
// agents run as separate `canvasd agent` workers).
func (s *Server) agentRoutes(r chi.Router, svc AgentService) {
	catalog := func(w http.ResponseWriter, r *http.Request) {
		if svc != nil {
			writeRaw(w, http.StatusOK, svc.Catalog())
			return
		}
		writeRaw(w, http.StatusOK, agent.CatalogJSON())
	}
	r.Get("/api/canvas-agent/catalog", catalog)
	r.Post("/api/canvas-agent/events", limitBody(256<<10, s.handleAgentEvent))
	if svc == nil {
		return
	}
	r.Post("/api/canvas-agent/run", limitBody(64<<10, func(w http.ResponseWriter, r *http.Request) {
		var req client.AgentRunRequest
		if err := decodeJSON(r, &req); err != nil {
			s.problem(w, r, err)
			return
		}
		if req.RoomID == "" {
			s.problem(w, r, canvas.Invalid("roomId", "is required: the canvas id"))
			return
		}
		if err := authorize(r, req.RoomID, canvas.RoleEditor); err != nil {
			s.problem(w, r, err)
			return
		}
		id, err := svc.Run(r.Context(), req)
		if err != nil {
			s.problem(w, r, err)
			return
		}
		writeJSON(w, http.StatusAccepted, client.AgentRunResponse{OK: true, SessionID: id})
	}))
	r.Get("/api/canvas-agent/sessions/{session_id}", func(w http.ResponseWriter, r *http.Request) {
		sess, err := s.agentSession(r, svc, canvas.RoleViewer)
		if err != nil {
			s.problem(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, sess)
	})
	r.Post("/api/canvas-agent/sessions/{session_id}/cancel", limitBody(4<<10, func(w http.ResponseWriter, r *http.Request) {
		sess, err := s.agentSession(r, svc, canvas.RoleEditor)
		if err != nil {
			s.problem(w, r, err)
			return
		}
		if err := svc.Cancel(r.Context(), sess.ID); err != nil {
			s.problem(w, r, err)
			return
		}
		if sess, err = svc.Session(r.Context(), sess.ID); err != nil {
			s.problem(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "session_id": sess.ID, "state": sess.State})
	}))
}

// agentSession loads a session and checks the caller's role on its canvas;
// a session on a canvas the caller cannot see is reported as not found.
func (s *Server) agentSession(r *http.Request, svc AgentService, need canvas.Role) (client.AgentSession, error) {
	id := chi.URLParam(r, "session_id")
	sess, err := svc.Session(r.Context(), id)
	if err != nil {
		return sess, err
	}
	p := principalFrom(r.Context())
	if !p.CanAccess(sess.CanvasID, canvas.RoleViewer) {
		return client.AgentSession{}, fmt.Errorf("agent session %q: %w", id, canvas.ErrNotFound)
	}
	return sess, authorize(r, sess.CanvasID, need)
}

// agentEventRequest is the body of POST /api/canvas-agent/events.
type agentEventRequest struct {
	CanvasID string          `json:"canvas_id"`
	Event    string          `json:"event"`
	Data     json.RawMessage `json:"data"`
}

// handleAgentEvent relays an agent-topic event from a standalone agent
// worker to the canvas's SSE subscribers (ephemeral, never stored).
func (s *Server) handleAgentEvent(w http.ResponseWriter, r *http.Request) {
	var req agentEventRequest
	if err := decodeJSON(r, &req); err != nil {
		s.problem(w, r, err)
		return
	}
	if req.CanvasID == "" {
		s.problem(w, r, canvas.Invalid("canvas_id", "is required"))
		return
	}
	if !isAgentTopic(req.Event) {
		s.problem(w, r, canvas.Invalid("event", "%q is not an agent topic; use agent:action, agent:chat, agent:status or agent:screenshot_request", req.Event))
		return
	}
	data := bytes.TrimSpace(req.Data)
	if len(data) == 0 || data[0] != '{' {
		s.problem(w, r, canvas.Invalid("data", "must be a JSON object"))
		return
	}
	if err := authorize(r, req.CanvasID, canvas.RoleEditor); err != nil {
		s.problem(w, r, err)
		return
	}
	if t := principalFrom(r.Context()).Type; t != canvas.ActorAgent && t != canvas.ActorService {
		s.problem(w, r, fmt.Errorf("%w: only agent and service actors publish agent events", canvas.ErrForbidden))
		return
	}
	if _, err := s.st.GetCanvas(r.Context(), req.CanvasID); err != nil {
		s.problem(w, r, err)
		return
	}
	s.hub.PublishEvent(req.CanvasID, req.Event, json.RawMessage(data))
	w.WriteHeader(http.StatusAccepted)
}

// AgentScreenshotter gets agent screenshots from the browsers on a canvas's
// stream through the invoke broker (in-process runner). With no browser
// subscribed it fails at once, so the run continues text-only without
// waiting for a timeout. The browser answers the invoke (action
// "agent:screenshot", payload an agent.ScreenshotRequest) with an
// agent.Screenshot as its result.
type AgentScreenshotter struct {
	Hub    *Hub
	Broker *host.Broker
}

// Screenshot implements agent.Screenshotter.
func (a AgentScreenshotter) Screenshot(ctx context.Context, canvasID string, req agent.ScreenshotRequest, timeout time.Duration) (agent.Screenshot, error) {
	if a.Hub.Subscribers(canvasID) == 0 {
		return agent.Screenshot{}, fmt.Errorf("no browser is connected to canvas %q: %w", canvasID, canvas.ErrUnavailable)
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return agent.Screenshot{}, err
	}
	ans, err := a.Broker.Invoke(ctx, host.Target{CanvasID: canvasID}, "agent:screenshot", payload, timeout)
	if err != nil {
		return agent.Screenshot{}, err
	}
	if !ans.OK {
		return agent.Screenshot{}, fmt.Errorf("the browser could not take a screenshot: %s", ans.Error)
	}
	var shot agent.Screenshot
	if err := json.Unmarshal(ans.Result, &shot); err != nil {
		return agent.Screenshot{}, fmt.Errorf("screenshot answer: %w", err)
	}
	if !strings.HasPrefix(shot.DataURL, "data:image/") {
		return agent.Screenshot{}, fmt.Errorf("screenshot answer has no data:image URL: %w", canvas.ErrInvalid)
	}
	return shot, nil
}
