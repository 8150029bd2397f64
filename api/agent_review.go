package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
)

// agentRevertRequest is the body of POST
// /api/canvas-agent/sessions/{session_id}/revert: one turn, or several
// (turns), reverted together; no body (neither) reverts every turn of the
// session.
type agentRevertRequest struct {
	Turn  *int  `json:"turn,omitempty"`
	Turns []int `json:"turns,omitempty"`
}

// selected returns the turns the request names, nil for every turn.
func (req agentRevertRequest) selected() ([]int, error) {
	switch {
	case req.Turn != nil && req.Turns != nil:
		return nil, canvas.Invalid("turns", "cannot be sent with turn: name one turn in turn, or several in turns")
	case req.Turn != nil:
		return []int{*req.Turn}, nil
	case req.Turns != nil && len(req.Turns) == 0:
		return nil, canvas.Invalid("turns", "is empty: name at least one turn, or send no body to revert every turn")
	}
	return req.Turns, nil
}

// handleAgentRevert serves POST /api/canvas-agent/sessions/{session_id}/revert
// (editor on the session's canvas): it reverts the commits of one turn of
// the session, or of all its turns, as one revert_commits command by the
// caller, answered like POST .../command (200 with the new revision, or 409
// with recovery_ops when someone changed those shapes since).
func (s *Server) handleAgentRevert(w http.ResponseWriter, r *http.Request) {
	sess, err := s.agentSession(r, canvas.RoleEditor)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	var req agentRevertRequest
	body, err := readBody(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if len(bytes.TrimSpace(body)) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := decodeJSON(r, &req); err != nil {
			s.problem(w, r, err)
			return
		}
	}
	turns, err := req.selected()
	if err != nil {
		s.problem(w, r, err)
		return
	}
	revs, err := turnRevs(sess, turns)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if revs, err = s.changingRevs(r.Context(), sess.CanvasID, revs); err != nil {
		s.problem(w, r, err)
		return
	}
	if len(revs) == 0 {
		s.problem(w, r, canvas.Unprocessable("turn", "nothing to revert: the agent made no change in %s", turnName(turns)))
		return
	}
	head, _, err := s.engine.Head(r.Context(), sess.CanvasID)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	args, _ := json.Marshal(map[string]any{"revs": revs, "reason": fmt.Sprintf("revert of %s of agent session %s", turnName(turns), sess.ID)})
	env := canvas.Envelope{Type: reducer.CmdRevertCommits, BaseRev: &head, Args: args}
	resp, err := s.engine.Execute(r.Context(), sess.CanvasID, principalFrom(r.Context()).Actor, env)
	s.writeAnswer(w, r, resp, err)
}

func turnName(turns []int) string {
	switch len(turns) {
	case 0:
		return "every turn"
	case 1:
		return fmt.Sprintf("turn %d", turns[0])
	}
	return fmt.Sprintf("turns %v", turns)
}

// turnRevs returns the revisions of the given turns of sess (nil: of every
// turn), ascending.
func turnRevs(sess canvas.AgentSession, turns []int) ([]int64, error) {
	want := map[int]bool{}
	for _, n := range turns {
		want[n] = true
	}
	var revs []int64
	for _, t := range sess.Turns {
		if turns == nil || want[t.Turn] {
			revs = append(revs, t.Revs...)
			delete(want, t.Turn)
		}
	}
	for n := range want {
		return nil, canvas.Unprocessable("turn", "agent session %s has no turn %d (it has %d turns, numbered from 1)", sess.ID, n, len(sess.Turns))
	}
	sort.Slice(revs, func(i, j int) bool { return revs[i] < revs[j] })
	return revs, nil
}

// changingRevs keeps the revisions whose commits changed something (a
// command that changed nothing has nothing to revert).
func (s *Server) changingRevs(ctx context.Context, canvasID string, revs []int64) ([]int64, error) {
	if len(revs) == 0 {
		return nil, nil
	}
	want := make(map[int64]bool, len(revs))
	for _, r := range revs {
		want[r] = true
	}
	first, last := revs[0], revs[len(revs)-1]
	commits, err := s.st.ReadCommits(ctx, canvasID, first-1, int(last-first+1))
	if err != nil {
		return nil, err
	}
	out := revs[:0:0]
	for _, c := range commits {
		if want[c.Rev] && len(c.Changes) > 0 {
			out = append(out, c.Rev)
		}
	}
	return out, nil
}
