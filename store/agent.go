package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// AgentStore persists agent sessions (canvas_agent_sessions) with their
// turns (canvas_agent_turns) and todos (canvas_agent_todos). Both stores
// implement it; its contract is checked by the storetest conformance suite.
// Methods are safe for concurrent use, also between processes sharing the
// database. A missing session is an error wrapping canvas.ErrNotFound.
// Deleting a canvas deletes its sessions with their turns and todos.
//
// A session's State is one of the canvas.Agent* states (canvas.AgentQueued included); the
// terminal states (canvas.AgentTerminal) are final except for
// ReopenAgentSession.
type AgentStore interface {
	// CreateAgentSession stores a new session (its Todos and Turns are
	// ignored). A session of a canvas that does not exist is
	// canvas.ErrNotFound; an existing id is canvas.ErrAlreadyExists.
	CreateAgentSession(ctx context.Context, s canvas.AgentSession) error
	// SaveAgentSession replaces a running session's state, detail, model,
	// actor, message, viewport, selection, transcript and stats, and sets
	// updated_at to s.UpdatedAt (Todos and Turns are ignored). A session that
	// has ended never changes again: saving it is an error wrapping
	// canvas.ErrConflict (how a worker learns of a cancel made elsewhere),
	// except that a canceled session may be saved again as canceled: the
	// final save of the worker that ran it, which confirms that its run has
	// stopped (the canceler waits for it).
	SaveAgentSession(ctx context.Context, s canvas.AgentSession) error
	// ReopenAgentSession stores s like SaveAgentSession over a session that
	// has ended, or that is still marked running but was last updated before
	// staleBefore (its process died); queued sessions are never taken over.
	// Of several concurrent callers at most one succeeds; a session running
	// elsewhere is canvas.ErrConflict.
	ReopenAgentSession(ctx context.Context, s canvas.AgentSession, staleBefore time.Time) error
	// ClaimAgentSession atomically moves the oldest queued session (by
	// creation time, then id) to canvas.AgentWaitingContext with actorID as
	// its agent, and returns it. With none queued it returns
	// canvas.ErrNotFound. Concurrent claimers never get the same session.
	ClaimAgentSession(ctx context.Context, actorID string) (canvas.AgentSession, error)
	// AgentSessionState returns a session's stored state.
	AgentSessionState(ctx context.Context, id string) (string, error)
	// CancelAgentSession marks a session canceled unless it has ended. It
	// returns the state the session had when it canceled it ("" when the
	// session had ended: then nothing changed) and the updated_at it set.
	CancelAgentSession(ctx context.Context, id string) (was string, at time.Time, err error)
	// GetAgentSession returns a session with its todos in position order and
	// its turns in turn order (both empty, never nil, when there are none).
	GetAgentSession(ctx context.Context, id string) (canvas.AgentSession, error)
	// ListAgentSessions returns the last limit (> 0) sessions created on a
	// canvas, newest first (by creation time, then id), each with its todos
	// and turns; none (an empty list, no error) when the canvas has none or
	// does not exist.
	ListAgentSessions(ctx context.Context, canvasID string, limit int) ([]canvas.AgentSession, error)

	// SaveAgentTurn stores turn t of a session, replacing a stored turn with
	// the same number (a turn is saved again as it makes revisions and when
	// it ends). It never changes a stored turn's RevertedRev (t.RevertedRev
	// is ignored): only MarkAgentTurnsReverted sets it. A missing session is
	// canvas.ErrNotFound.
	SaveAgentTurn(ctx context.Context, sessionID string, t canvas.AgentTurn) error
	// MarkAgentTurnsReverted records that the commit at revision rev (> 0)
	// reverted the given turns of a session: it sets RevertedRev to rev on
	// each of them that is stored and not reverted yet or reverted at an
	// older revision (a turn reverted again after its revert was undone),
	// atomically, and returns the turns it marked, ascending. RevertedRev
	// never moves back: a turn reverted at rev or later keeps its mark, so of
	// concurrent marks the newest revision wins. Turn numbers the session
	// does not have are skipped. A missing session is canvas.ErrNotFound;
	// rev <= 0 is canvas.ErrUnprocessable.
	MarkAgentTurnsReverted(ctx context.Context, sessionID string, turns []int, rev int64) ([]int, error)

	// UpsertAgentTodo records a todo of session t.SessionID by its text:
	// a text the session has not used yet is appended at the end of the list
	// (status t.Status, default open; ID and Position assigned; created at
	// t.CreatedAt); the same text again updates that todo's status when
	// t.Status is set and differs. A todo moving to done or skipped gets
	// resolved_at t.CreatedAt; moving back to open clears it. It returns the
	// stored todo and whether anything changed. A status other than open,
	// done or skipped is canvas.ErrUnprocessable; a missing session
	// canvas.ErrNotFound.
	UpsertAgentTodo(ctx context.Context, t canvas.AgentTodo) (canvas.AgentTodo, bool, error)
}

// agentSessionData is the JSON of canvas_agent_sessions.data: the session's
// fields that have no column of their own.
type agentSessionData struct {
	Message    string                   `json:"message"`
	Detail     string                   `json:"detail,omitempty"`
	Viewport   *canvas.Box              `json:"viewport,omitempty"`
	Selection  []string                 `json:"selection,omitempty"`
	Document   string                   `json:"document,omitempty"`
	DocSel     *canvas.LineSpan         `json:"document_selection,omitempty"`
	Transcript []canvas.TranscriptEntry `json:"transcript"`
	Stats      canvas.AgentStats        `json:"stats"`
	Pending    []canvas.PendingTurn     `json:"pending,omitempty"`
}

// EncodeAgentSessionData returns the data column of s (both stores use it).
func EncodeAgentSessionData(s canvas.AgentSession) ([]byte, error) {
	return json.Marshal(agentSessionData{Message: s.Message, Detail: s.Detail, Viewport: s.Viewport, Selection: s.Selection,
		Document: s.Document, DocSel: s.DocumentSelection, Transcript: s.Transcript, Stats: s.Stats, Pending: s.Pending})
}

// DecodeAgentSessionData fills s's fields from a data column; Todos and
// Turns are set to empty lists, for the caller to fill.
func DecodeAgentSessionData(data []byte, s *canvas.AgentSession) error {
	var d agentSessionData
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("agent session %q: stored data is not valid JSON: %v: %w", s.ID, err, canvas.ErrUnavailable)
	}
	s.Message, s.Detail, s.Viewport, s.Selection, s.Transcript, s.Stats = d.Message, d.Detail, d.Viewport, d.Selection, d.Transcript, d.Stats
	s.Document, s.DocumentSelection, s.Pending = d.Document, d.DocSel, d.Pending
	if s.Transcript == nil {
		s.Transcript = []canvas.TranscriptEntry{}
	}
	s.Todos, s.Turns = []canvas.AgentTodo{}, []canvas.AgentTurn{}
	return nil
}

// CheckTodoStatus returns canvas.ErrUnprocessable unless status is "" (keep
// or default) or a todo status.
func CheckTodoStatus(status string) error {
	switch status {
	case "", canvas.TodoOpen, canvas.TodoDone, canvas.TodoSkipped:
		return nil
	}
	return canvas.Unprocessable("status", "todo status %q: use open, done or skipped", status)
}

// CheckRevertRev returns canvas.ErrUnprocessable unless rev is a revision
// (> 0) that a revert can have been committed at.
func CheckRevertRev(rev int64) error {
	if rev <= 0 {
		return canvas.Unprocessable("reverted_rev", "%d is not a revision (revisions start at 1)", rev)
	}
	return nil
}

// AgentSessionEnded is the error (wrapping canvas.ErrConflict) of saving a
// session that has ended.
func AgentSessionEnded(id, state string) error {
	return fmt.Errorf("agent session %q has already ended (%s): %w", id, state, canvas.ErrConflict)
}

// AgentSessionRunning is the error (wrapping canvas.ErrConflict) of
// reopening a session that is running on another server.
func AgentSessionRunning(id, state string) error {
	return fmt.Errorf("agent session %q is running on another server (state %s); retry when it has finished: %w", id, state, canvas.ErrConflict)
}

// SessionsByID reads the sessions ids name, in that order, with get (a
// store's GetAgentSession), leaving out any deleted meanwhile (with its
// canvas): how the stores' ListAgentSessions read what their query listed.
func SessionsByID(ctx context.Context, ids []string, get func(context.Context, string) (canvas.AgentSession, error)) ([]canvas.AgentSession, error) {
	out := make([]canvas.AgentSession, 0, len(ids))
	for _, id := range ids {
		a, err := get(ctx, id)
		if errors.Is(err, canvas.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
