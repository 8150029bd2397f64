package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
)

// Edit requests: another agent (over MCP, canvas_agent_edit_request) or any
// client (POST /api/canvas-agent/edit-request) hands the canvas agent an
// instruction and waits for the run's outcome.

// Edit request wait bounds.
const (
	defaultEditTimeout = 60 * time.Second
	maxEditTimeout     = 300 * time.Second
)

// agentEditRequest is the body of POST /api/canvas-agent/edit-request.
type agentEditRequest struct {
	CanvasID    string `json:"canvas_id"`
	NodeID      string `json:"node_id,omitempty"`
	Instruction string `json:"instruction"`
	Context     string `json:"context,omitempty"`
	Model       string `json:"model,omitempty"`
	TimeoutMS   int    `json:"timeout_ms,omitempty"`
}

// agentEditResult is the outcome of an edit request: the session's state
// when the run ended (or when the wait timed out: then it is not terminal
// and the run goes on), what the agent said it did, the diff of the target
// document since the request (empty without node_id), and the revisions
// the run made.
type agentEditResult struct {
	SessionID string  `json:"session_id"`
	State     string  `json:"state"`
	Detail    string  `json:"detail,omitempty"`
	Summary   string  `json:"summary"`
	Diff      string  `json:"diff"`
	Revs      []int64 `json:"revs"`
}

// handleAgentEditRequest serves POST /api/canvas-agent/edit-request (editor
// on canvas_id).
func (s *Server) handleAgentEditRequest(w http.ResponseWriter, r *http.Request) {
	var req agentEditRequest
	if err := decodeJSON(r, &req); err != nil {
		s.problem(w, r, err)
		return
	}
	if req.CanvasID == "" {
		s.problem(w, r, canvas.Invalid("canvas_id", "is required"))
		return
	}
	if err := authorize(r, req.CanvasID, canvas.RoleEditor); err != nil {
		s.problem(w, r, err)
		return
	}
	res, err := s.agentEdit(r.Context(), req)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// agentEdit starts a run on the canvas, focused on the document node_id
// when given, waits for it up to the request's timeout, and reports its
// outcome. The caller has checked the editor role on the canvas.
func (s *Server) agentEdit(ctx context.Context, req agentEditRequest) (agentEditResult, error) {
	svc := s.cfg.Agent
	if svc == nil {
		return agentEditResult{}, &agent.UnavailableError{Reason: "no agent runner is configured on this server: edit the canvas directly with the canvas_* tools"}
	}
	timeout := defaultEditTimeout
	switch {
	case req.TimeoutMS < 0 || int64(req.TimeoutMS) > maxEditTimeout.Milliseconds(): // in ms: a huge value would overflow a Duration
		return agentEditResult{}, canvas.Invalid("timeout_ms", "must be 1 to %d (default %d)", maxEditTimeout.Milliseconds(), defaultEditTimeout.Milliseconds())
	case req.TimeoutMS > 0:
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	if strings.TrimSpace(req.Instruction) == "" {
		return agentEditResult{}, canvas.Invalid("instruction", "is required: what the canvas agent should do")
	}
	head, _, err := s.engine.Head(ctx, req.CanvasID)
	if err != nil {
		return agentEditResult{}, err
	}
	run := canvas.AgentRunRequest{RoomID: req.CanvasID, Message: req.Instruction, Model: req.Model}
	if req.NodeID != "" {
		if _, _, _, err := s.docAt(ctx, req.CanvasID, req.NodeID, -1, false); err != nil {
			return agentEditResult{}, err
		}
		run.Selection = []string{req.NodeID}
	}
	if req.Context != "" {
		run.Message += "\n\nContext: " + req.Context
	}
	id, err := svc.Run(ctx, run)
	if err != nil {
		return agentEditResult{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	sess, err := svc.Wait(wctx, id)
	cancel()
	if err != nil {
		return agentEditResult{}, err
	}
	res := agentEditResult{SessionID: id, State: sess.State, Detail: sess.Detail, Summary: editSummary(sess), Revs: []int64{}}
	for _, t := range sess.Turns {
		res.Revs = append(res.Revs, t.Revs...)
	}
	if req.NodeID != "" {
		d, err := s.docDiff(context.WithoutCancel(ctx), req.CanvasID, req.NodeID, strconv.FormatInt(head, 10), reducer.DiffUnified)
		if err != nil {
			return agentEditResult{}, err
		}
		res.Diff = d.Diff
	}
	return res, nil
}

// editSummary is what the agent told the people watching (its think notes),
// or a count of what it did.
func editSummary(sess canvas.AgentSession) string {
	var notes []string
	for _, e := range sess.Transcript {
		if e.Role == "assistant" {
			notes = append(notes, e.Text)
		}
	}
	if len(notes) > 0 {
		return strings.Join(notes, "\n")
	}
	return fmt.Sprintf("%d actions applied in %d turns.", sess.Stats.ActionsApplied, sess.Stats.Turns)
}
