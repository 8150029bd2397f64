package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
	"github.com/canvasd/canvasd/store"
)

// agentRevertRequest is the body of POST
// /api/canvas-agent/sessions/{session_id}/revert: one turn, or several
// (turns), reverted together; no body (neither) reverts every turn of the
// session not reverted yet.
type agentRevertRequest struct {
	Turn  *int  `json:"turn,omitempty"`
	Turns []int `json:"turns,omitempty"`
}

// selected returns the turns the request names, nil for every turn not
// reverted yet.
func (req agentRevertRequest) selected() ([]int, error) {
	switch {
	case req.Turn != nil && req.Turns != nil:
		return nil, canvas.Invalid("turns", "cannot be sent with turn: name one turn in turn, or several in turns")
	case req.Turn != nil:
		return []int{*req.Turn}, nil
	case req.Turns != nil && len(req.Turns) == 0:
		return nil, canvas.Invalid("turns", "is empty: name at least one turn, or send no body to revert every turn not reverted yet")
	}
	return req.Turns, nil
}

// handleAgentRevert serves POST /api/canvas-agent/sessions/{session_id}/revert
// (editor on the session's canvas): it reverts the commits of the named
// turns of the session, or of every turn not reverted yet, as one
// revert_commits command by the caller, answered like POST .../command (200
// with the new revision, or 409 with recovery_ops when someone changed those
// shapes since). The turns it reverted then carry reverted_rev, the new
// revision, in the session. A named turn already reverted is reverted again
// when its changes are back on the canvas (its revert was undone), and left
// out (keeping its reverted_rev) when they are not; naming only such turns,
// or sending no body when every turn is reverted, is a 422 that commits
// nothing.
func (s *Server) handleAgentRevert(w http.ResponseWriter, r *http.Request) {
	sess, err := s.agentSession(r, canvas.RoleEditor)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	as := s.st.Capabilities().Agents
	if as == nil {
		s.problem(w, r, fmt.Errorf("the store %T keeps no agent turns: %w", s.st, canvas.ErrUnavailable))
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
	named, err := req.selected()
	if err != nil {
		s.problem(w, r, err)
		return
	}
	turns, revs, reverted, err := turnRevs(sess, named)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if len(revs) == 0 {
		s.problem(w, r, canvas.Unprocessable(turnsField(named), "nothing to revert: the agent made no change in %s", turnName(turns)))
		return
	}
	if len(reverted) > 0 {
		left, err := s.stillReverted(r.Context(), sess, turns)
		if err != nil {
			s.problem(w, r, err)
			return
		}
		if len(left) == len(turns) {
			was, its := "was", "its"
			if len(turns) > 1 {
				was, its = "were", "their"
			}
			s.problem(w, r, canvas.Unprocessable(turnsField(named), "agent session %s: %s %s already reverted (%s) and %s changes are not on the canvas: there is nothing to revert",
				sess.ID, turnName(turns), was, strings.Join(reverted, ", "), its))
			return
		}
		kept := slices.DeleteFunc(slices.Clone(named), func(n int) bool { return left[n] })
		if turns, revs, _, err = turnRevs(sess, kept); err != nil {
			s.problem(w, r, err)
			return
		}
	}
	if len(revs) > reducer.MaxRevertRevs {
		s.problem(w, r, canvas.Unprocessable(turnsField(named), "%s made %d commands; one revert takes at most %d: revert fewer turns at a time, the newest first",
			turnName(turns), len(revs), reducer.MaxRevertRevs))
		return
	}
	if lo, hi := revs[0], revs[len(revs)-1]; hi-lo+1 > reducer.MaxRevertSpan {
		s.problem(w, r, canvas.Unprocessable(turnsField(named), "the commands of %s span revisions %d to %d (%d commits); one revert reaches over at most %d: revert fewer turns at a time, the newest first",
			turnName(turns), lo, hi, hi-lo+1, reducer.MaxRevertSpan))
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
	if err == nil && resp.Outcome == store.OutcomeApplied {
		s.markReverted(r.Context(), as, sess.ID, turns, resp.Result)
	}
	s.writeAnswer(w, r, resp, err)
}

// stillReverted returns those of turns (numbers of sess's turns) that were
// reverted and whose revert still holds: reverting their commits again
// would change nothing on the canvas. A revert of several turns leaves them
// out and keeps their reverted_rev.
func (s *Server) stillReverted(ctx context.Context, sess canvas.AgentSession, turns []int) (map[int]bool, error) {
	left := map[int]bool{}
	for _, t := range sess.Turns {
		if t.RevertedRev == nil || !slices.Contains(turns, t.Turn) {
			continue
		}
		revs := slices.Sorted(slices.Values(t.Revs))
		if len(revs) == 0 {
			left[t.Turn] = true
			continue
		}
		if len(revs) > reducer.MaxRevertRevs || revs[len(revs)-1]-revs[0]+1 > reducer.MaxRevertSpan {
			continue // too big to revert at all: the revert's own bounds refuse it
		}
		nothing, err := s.engine.RevertChangesNothing(ctx, sess.CanvasID, revs)
		if err != nil {
			return nil, err
		}
		if nothing {
			left[t.Turn] = true
		}
	}
	return left, nil
}

// markReverted records on turns that the revert answered by result (a
// canvas.RevisionResult) reverted them. The revert is committed by then:
// a failure is logged, not answered, and leaves those turns unmarked (a
// second revert of them then finds their shapes as they were before them:
// it commits no change and marks them).
func (s *Server) markReverted(ctx context.Context, as store.AgentStore, sessionID string, turns []int, result []byte) {
	var res canvas.RevisionResult
	err := json.Unmarshal(result, &res)
	if err == nil {
		_, err = as.MarkAgentTurnsReverted(context.WithoutCancel(ctx), sessionID, turns, res.CurrentRev)
	}
	if err != nil {
		s.log.Error("agent revert: committed, but recording the reverted turns failed", "session_id", sessionID, "turns", turns, "err", err)
	}
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

// turnRevs returns the numbers of the turns of sess a revert takes, in turn
// order, the revisions of their commits, ascending, and which of those turns
// were reverted already ("turn N by revision R"): the named turns, or with
// named nil every turn not reverted yet (then none). A named turn the
// session lacks and (named nil) a session whose turns are all reverted are
// canvas.ErrUnprocessable.
func turnRevs(sess canvas.AgentSession, named []int) (turns []int, revs []int64, reverted []string, err error) {
	want := map[int]bool{}
	for _, n := range named {
		want[n] = true
	}
	for _, t := range sess.Turns {
		if named != nil && !want[t.Turn] {
			continue
		}
		delete(want, t.Turn)
		if t.RevertedRev != nil {
			reverted = append(reverted, fmt.Sprintf("turn %d by revision %d", t.Turn, *t.RevertedRev))
			if named == nil {
				continue
			}
		}
		turns = append(turns, t.Turn)
		revs = append(revs, t.Revs...)
	}
	missing := make([]int, 0, len(want))
	for n := range want {
		missing = append(missing, n)
	}
	sort.Ints(missing)
	switch {
	case len(missing) > 0:
		return nil, nil, nil, canvas.Unprocessable(turnsField(named), "agent session %s has no turn %d (it has %d turns, numbered from 1)", sess.ID, missing[0], len(sess.Turns))
	case named == nil && len(sess.Turns) > 0 && len(turns) == 0:
		return nil, nil, nil, canvas.Unprocessable("turn", "agent session %s: every turn was already reverted (%s); there is nothing left to revert",
			sess.ID, strings.Join(reverted, ", "))
	case named == nil:
		reverted = nil
	}
	sort.Slice(revs, func(i, j int) bool { return revs[i] < revs[j] })
	return turns, revs, reverted, nil
}

// turnsField is the request field that named turns: turn for one (or
// none), turns for several.
func turnsField(named []int) string {
	if len(named) > 1 {
		return "turns"
	}
	return "turn"
}
