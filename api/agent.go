package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/hub"
)

// *agent.Runner is the AgentService of an in-process runner.
var _ AgentService = (*agent.Runner)(nil)

// AgentService is what the agent endpoints delegate to.
type AgentService interface {
	// Run starts a session and returns its id (the run continues in the background).
	Run(ctx context.Context, req canvas.AgentRunRequest) (string, error)
	// Session returns a session with transcript, todos and stats, or canvas.ErrNotFound.
	Session(ctx context.Context, id string) (canvas.AgentSession, error)
	// Sessions returns the last limit sessions of a canvas, newest first,
	// as Session returns them (none for a canvas without sessions).
	Sessions(ctx context.Context, canvasID string, limit int) ([]canvas.AgentSession, error)
	// Cancel stops a session; afterwards nothing more is applied.
	Cancel(ctx context.Context, id string) error
	// Wait returns a session once its run has ended, or as it is (not
	// ended) when ctx ends first.
	Wait(ctx context.Context, id string) (canvas.AgentSession, error)
	// Catalog returns the action catalog JSON with its JSON Schemas.
	Catalog() []byte
}

// isAgentTopic reports whether POST /api/canvas-agent/events may publish event.
func isAgentTopic(event string) bool {
	switch event {
	case canvas.EventAgentAction, canvas.EventAgentChat, canvas.EventAgentStatus, canvas.EventScreenshotRequest:
		return true
	}
	return false
}

// handleAgentCatalog serves GET /api/canvas-agent/catalog: the action
// catalog with its JSON Schemas (the runner's, or the built-in one on a
// server whose agents run as separate `canvasd agent` workers).
func (s *Server) handleAgentCatalog(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Agent != nil {
		writeRaw(w, http.StatusOK, s.cfg.Agent.Catalog())
		return
	}
	writeRaw(w, http.StatusOK, agent.CatalogJSON())
}

// handleAgentRun serves POST /api/canvas-agent/run (editor on roomId): it
// starts a session and answers 202 {ok, session_id}. A document the run
// edits must be a doc node on the canvas.
func (s *Server) handleAgentRun(w http.ResponseWriter, r *http.Request) {
	var req canvas.AgentRunRequest
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
	if req.Document != "" { // a document on the canvas (404 when not there, 422 when not a document)
		if _, _, _, err := s.docAt(r.Context(), req.RoomID, req.Document, -1, false); err != nil {
			s.problem(w, r, err)
			return
		}
	}
	id, err := s.cfg.Agent.Run(r.Context(), req)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, canvas.AgentRunResponse{OK: true, SessionID: id})
}

// handleAgentSession serves GET /api/canvas-agent/sessions/{session_id}
// (viewer on the session's canvas).
func (s *Server) handleAgentSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.agentSession(r, canvas.RoleViewer)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sess)
}

// agentSessionList is the answer of GET /api/canvases/{canvas_id}/agent-sessions.
type agentSessionList struct {
	CanvasID string                `json:"canvas_id"`
	Sessions []canvas.AgentSession `json:"sessions"`
}

// handleAgentSessions serves GET /api/canvases/{canvas_id}/agent-sessions
// (viewer): the canvas's last ?limit (1–100, default 20) agent sessions,
// newest first, each as GET /api/canvas-agent/sessions/{id} answers it.
func (s *Server) handleAgentSessions(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleViewer)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	limit, err := intParam(r.URL.Query().Get("limit"), "limit", 20, 1, 100)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if _, err := s.st.GetCanvas(r.Context(), id); err != nil {
		s.problem(w, r, err)
		return
	}
	list, err := s.cfg.Agent.Sessions(r.Context(), id, int(limit))
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if list == nil {
		list = []canvas.AgentSession{}
	}
	writeJSON(w, http.StatusOK, agentSessionList{CanvasID: id, Sessions: list})
}

// handleAgentCancel serves POST /api/canvas-agent/sessions/{session_id}/cancel
// (editor on the session's canvas).
func (s *Server) handleAgentCancel(w http.ResponseWriter, r *http.Request) {
	svc := s.cfg.Agent
	sess, err := s.agentSession(r, canvas.RoleEditor)
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
}

// agentSession loads a session and checks the caller's role on its canvas;
// a session on a canvas the caller cannot see is reported as not found.
func (s *Server) agentSession(r *http.Request, need canvas.Role) (canvas.AgentSession, error) {
	id, err := pathParam(r, "session_id")
	if err != nil {
		return canvas.AgentSession{}, err
	}
	sess, err := s.cfg.Agent.Session(r.Context(), id)
	if err != nil {
		return sess, err
	}
	p := principalFrom(r.Context())
	if !p.CanAccess(sess.CanvasID, canvas.RoleViewer) {
		return canvas.AgentSession{}, fmt.Errorf("agent session %q: %w", id, canvas.ErrNotFound)
	}
	return sess, authorize(r, sess.CanvasID, need)
}

// handleAgentEvent relays an agent-topic event from a standalone agent
// worker to the canvas's SSE subscribers (ephemeral, never stored).
func (s *Server) handleAgentEvent(w http.ResponseWriter, r *http.Request) {
	var req canvas.AgentEvent
	if err := decodeJSON(r, &req); err != nil {
		s.problem(w, r, err)
		return
	}
	if req.CanvasID == "" {
		s.problem(w, r, canvas.Invalid("canvas_id", "is required"))
		return
	}
	if req.To != "" && req.To != canvas.AgentEventToHost {
		s.problem(w, r, canvas.Invalid("to", "must be %q (the canvas's host browser only) or absent (every subscriber)", canvas.AgentEventToHost))
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
	if req.To == canvas.AgentEventToHost {
		s.hub.PublishToHost(req.CanvasID, req.Event, json.RawMessage(data))
	} else {
		s.hub.PublishEvent(req.CanvasID, req.Event, json.RawMessage(data))
	}
	w.WriteHeader(http.StatusAccepted)
}

// handleAgentAck serves POST /api/canvas-agent/ack (viewer on the session's
// canvas): a browser applied an agent:action envelope. 202 whether or not
// the session still runs (a late ack changes nothing); 403 when the caller's
// token did not declare clientId on the session's canvas (Hub.speaksFor).
func (s *Server) handleAgentAck(w http.ResponseWriter, r *http.Request) {
	var a canvas.AgentAck
	if err := decodeJSON(r, &a); err != nil {
		s.problem(w, r, err)
		return
	}
	if err := a.Validate(); err != nil {
		s.problem(w, r, err)
		return
	}
	s.browserInput(w, r, a.SessionID, a.ClientID, hub.InputAck, a)
}

// handleAgentView serves POST /api/canvas-agent/view (viewer on the
// session's canvas): a browser's viewport and selection for a running
// session, used by its next turn; 403 as for acks when the caller's token
// did not declare clientId.
func (s *Server) handleAgentView(w http.ResponseWriter, r *http.Request) {
	var v canvas.AgentView
	if err := decodeJSON(r, &v); err != nil {
		s.problem(w, r, err)
		return
	}
	if err := v.Validate(); err != nil {
		s.problem(w, r, err)
		return
	}
	s.browserInput(w, r, v.SessionID, v.ClientID, hub.InputView, v)
}

// browserInput checks the caller's viewer role on the session's canvas and
// that its token declared clientID there, and hands the input to the
// session, here or (relayed) on another process.
func (s *Server) browserInput(w http.ResponseWriter, r *http.Request, sessionID, clientID, kind string, v any) {
	sess, err := s.cfg.Agent.Session(r.Context(), sessionID)
	p := principalFrom(r.Context())
	if err == nil && !p.CanAccess(sess.CanvasID, canvas.RoleViewer) {
		err = fmt.Errorf("agent session %q: %w", sessionID, canvas.ErrNotFound)
	}
	if err == nil {
		err = s.hub.SpeaksFor(sess.CanvasID, clientID, p.Actor.ID)
	}
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if !canvas.AgentTerminal(sess.State) {
		data, _ := json.Marshal(v)
		s.hub.DeliverInput(sessionID, kind, data, true)
	}
	writeJSON(w, http.StatusAccepted, map[string]bool{"ok": true})
}

// AgentScreenshotter gets agent screenshots from the canvas's elected host
// browser through the invoke broker (in-process runner). With no host it
// fails at once, so the turn goes on text-only without waiting; when the
// host leaves while it waits, it fails at once too (the runner retries, and
// the retry goes to the newly elected host). The host answers the invoke
// (action canvas.InvokeAgentScreenshot, payload an agent.ScreenshotRequest)
// with an agent.Screenshot as its result.
type AgentScreenshotter struct {
	Hub    *hub.Hub
	Broker *host.Broker
}

// Screenshot implements agent.Screenshotter.
func (a AgentScreenshotter) Screenshot(ctx context.Context, canvasID string, req agent.ScreenshotRequest, timeout time.Duration) (agent.Screenshot, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return agent.Screenshot{}, err
	}
	_, hctx, cancel, err := a.Hub.WhileHost(ctx, canvasID)
	if err != nil {
		return agent.Screenshot{}, asAgentError(err)
	}
	defer cancel()
	ans, err := a.Broker.Invoke(hctx, host.Target{CanvasID: canvasID}, canvas.InvokeAgentScreenshot, payload, timeout)
	if err != nil {
		err = asAgentError(err)
		if cause := context.Cause(hctx); errors.Is(cause, hub.ErrHostLost) && ctx.Err() == nil {
			return agent.Screenshot{}, cause
		}
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
