package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// The agent tables (store.AgentStore). Writes go through the committer like
// every other write; reads use the read pool.

var _ store.AgentStore = (*Store)(nil)

const terminalStates = `('done', 'canceled', 'error')`

// endedStates are the terminal states a canceled session may not be saved over.
const endedStates = `('done', 'error')`

func micros(t time.Time) int64 { return t.UnixMicro() }

// agentErr is mapErr that passes nil through.
func agentErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return mapErr(op, err)
}

// CreateAgentSession implements store.AgentStore.
func (s *Store) CreateAgentSession(ctx context.Context, a canvas.AgentSession) error {
	data, err := store.EncodeAgentSessionData(a)
	if err != nil {
		return fmt.Errorf("sqlitestore: create agent session: %w", err)
	}
	updated := a.UpdatedAt
	if updated.IsZero() {
		updated = a.CreatedAt
	}
	return s.write(ctx, func(w *writer) error {
		if err := w.mustExist(a.CanvasID, "create agent session"); err != nil {
			return err
		}
		_, err := w.conn.ExecContext(bg, `INSERT INTO canvas_agent_sessions (id, canvas_id, actor_id, state, model, data, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, a.CanvasID, a.ActorID, a.State, a.Model, string(data), micros(a.CreatedAt), micros(updated))
		return agentErr(fmt.Sprintf("agent session %q", a.ID), err)
	})
}

// SaveAgentSession implements store.AgentStore.
func (s *Store) SaveAgentSession(ctx context.Context, a canvas.AgentSession) error {
	cond := `state NOT IN ` + terminalStates
	if a.State == canvas.AgentCanceled {
		cond = `state NOT IN ` + endedStates // a worker's final save after a cancel
	}
	return s.updateAgentSession(ctx, a, cond, nil, store.AgentSessionEnded)
}

// ReopenAgentSession implements store.AgentStore.
func (s *Store) ReopenAgentSession(ctx context.Context, a canvas.AgentSession, staleBefore time.Time) error {
	return s.updateAgentSession(ctx, a, `(state IN `+terminalStates+` OR (state <> '`+canvas.AgentQueued+`' AND updated_at < ?))`,
		[]any{micros(staleBefore)}, store.AgentSessionRunning)
}

// updateAgentSession stores a's fields over the session when cond holds;
// otherwise the session is missing (canvas.ErrNotFound) or refused(id, state).
func (s *Store) updateAgentSession(ctx context.Context, a canvas.AgentSession, cond string, condArgs []any, refused func(id, state string) error) error {
	data, err := store.EncodeAgentSessionData(a)
	if err != nil {
		return fmt.Errorf("sqlitestore: save agent session: %w", err)
	}
	return s.write(ctx, func(w *writer) error {
		args := append([]any{a.State, a.Model, a.ActorID, string(data), micros(a.UpdatedAt), a.ID}, condArgs...)
		res, err := w.conn.ExecContext(bg, `UPDATE canvas_agent_sessions SET state = ?, model = ?, actor_id = ?, data = ?, updated_at = ?
			WHERE id = ? AND `+cond, args...)
		if err != nil {
			return agentErr("save agent session "+a.ID, err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			return nil
		}
		state, err := agentState(bg, w.conn, a.ID)
		if err != nil {
			return err
		}
		return refused(a.ID, state)
	})
}

// queryRower is the writer's connection or the read pool.
type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// agentState reads a session's state.
func agentState(ctx context.Context, q queryRower, id string) (string, error) {
	var state string
	err := q.QueryRowContext(ctx, `SELECT state FROM canvas_agent_sessions WHERE id = ?`, id).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("agent session %q: %w", id, canvas.ErrNotFound)
	}
	return state, agentErr("read agent session state", err)
}

// ClaimAgentSession implements store.AgentStore.
func (s *Store) ClaimAgentSession(ctx context.Context, actorID string) (canvas.AgentSession, error) {
	var id string
	err := s.write(ctx, func(w *writer) error {
		err := w.conn.QueryRowContext(bg, `UPDATE canvas_agent_sessions SET state = ?, actor_id = ?, updated_at = ?
			WHERE id = (SELECT id FROM canvas_agent_sessions WHERE state = ? ORDER BY created_at, id LIMIT 1)
			RETURNING id`, canvas.AgentWaitingContext, actorID, micros(s.now()), canvas.AgentQueued).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no queued agent session: %w", canvas.ErrNotFound)
		}
		return agentErr("claim agent session", err)
	})
	if err != nil {
		return canvas.AgentSession{}, err
	}
	return s.GetAgentSession(ctx, id)
}

// AgentSessionState implements store.AgentStore.
func (s *Store) AgentSessionState(ctx context.Context, id string) (string, error) {
	return agentState(ctx, s.rdb, id)
}

// CancelAgentSession implements store.AgentStore: it reads the state and
// updates it in one write transaction.
func (s *Store) CancelAgentSession(ctx context.Context, id string) (string, time.Time, error) {
	var was string
	at := micros(s.now())
	err := s.write(ctx, func(w *writer) error {
		was = "" // a batch may run fn again
		state, err := agentState(bg, w.conn, id)
		if err != nil || canvas.AgentTerminal(state) {
			return err
		}
		if _, err := w.conn.ExecContext(bg, `UPDATE canvas_agent_sessions SET state = 'canceled', updated_at = ? WHERE id = ?`, at, id); err != nil {
			return agentErr("cancel agent session "+id, err)
		}
		was = state
		return nil
	})
	if err != nil || was == "" {
		return "", time.Time{}, err
	}
	return was, fromMicros(at), nil
}

// GetAgentSession implements store.AgentStore.
func (s *Store) GetAgentSession(ctx context.Context, id string) (canvas.AgentSession, error) {
	a := canvas.AgentSession{ID: id}
	var data string
	var created, updated int64
	err := s.rdb.QueryRowContext(ctx, `SELECT canvas_id, actor_id, state, model, data, created_at, updated_at
		FROM canvas_agent_sessions WHERE id = ?`, id).Scan(&a.CanvasID, &a.ActorID, &a.State, &a.Model, &data, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return canvas.AgentSession{}, fmt.Errorf("agent session %q: %w", id, canvas.ErrNotFound)
	}
	if err != nil {
		return canvas.AgentSession{}, agentErr("get agent session "+id, err)
	}
	if err := store.DecodeAgentSessionData([]byte(data), &a); err != nil {
		return canvas.AgentSession{}, err
	}
	a.CreatedAt, a.UpdatedAt = fromMicros(created), fromMicros(updated)
	if a.Todos, err = s.agentTodos(ctx, id); err != nil {
		return canvas.AgentSession{}, err
	}
	if a.Turns, err = s.agentTurns(ctx, id); err != nil {
		return canvas.AgentSession{}, err
	}
	return a, nil
}

func (s *Store) agentTodos(ctx context.Context, sessionID string) ([]canvas.AgentTodo, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, text, status, position, created_at, resolved_at
		FROM canvas_agent_todos WHERE session_id = ? ORDER BY position, created_at`, sessionID)
	if err != nil {
		return nil, agentErr("list agent todos", err)
	}
	defer rows.Close()
	out := []canvas.AgentTodo{}
	for rows.Next() {
		t := canvas.AgentTodo{SessionID: sessionID}
		var created int64
		var resolved sql.NullInt64
		if err := rows.Scan(&t.ID, &t.Text, &t.Status, &t.Position, &created, &resolved); err != nil {
			return nil, agentErr("list agent todos", err)
		}
		t.CreatedAt = fromMicros(created)
		t.ResolvedAt = optMicros(resolved)
		out = append(out, t)
	}
	return out, agentErr("list agent todos", rows.Err())
}

func (s *Store) agentTurns(ctx context.Context, sessionID string) ([]canvas.AgentTurn, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT turn, kind, revs, started_at, ended_at, reverted_rev
		FROM canvas_agent_turns WHERE session_id = ? ORDER BY turn`, sessionID)
	if err != nil {
		return nil, agentErr("list agent turns", err)
	}
	defer rows.Close()
	out := []canvas.AgentTurn{}
	for rows.Next() {
		var t canvas.AgentTurn
		var revs string
		var started int64
		var ended, reverted sql.NullInt64
		if err := rows.Scan(&t.Turn, &t.Kind, &revs, &started, &ended, &reverted); err != nil {
			return nil, agentErr("list agent turns", err)
		}
		if err := json.Unmarshal([]byte(revs), &t.Revs); err != nil {
			return nil, fmt.Errorf("sqlitestore: agent session %q turn %d: corrupt revs: %v: %w", sessionID, t.Turn, err, canvas.ErrUnavailable)
		}
		if t.Revs == nil {
			t.Revs = []int64{}
		}
		t.StartedAt = fromMicros(started)
		t.EndedAt = optMicros(ended)
		if reverted.Valid {
			t.RevertedRev = &reverted.Int64
		}
		out = append(out, t)
	}
	return out, agentErr("list agent turns", rows.Err())
}

// ListAgentSessions implements store.AgentStore.
func (s *Store) ListAgentSessions(ctx context.Context, canvasID string, limit int) ([]canvas.AgentSession, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("sqlitestore: list agent sessions: limit %d: %w", limit, canvas.ErrUnprocessable)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT id FROM canvas_agent_sessions WHERE canvas_id = ?
		ORDER BY created_at DESC, id DESC LIMIT ?`, canvasID, limit)
	if err != nil {
		return nil, agentErr("list agent sessions", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, agentErr("list agent sessions", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, agentErr("list agent sessions", err)
	}
	return store.SessionsByID(ctx, ids, s.GetAgentSession)
}

// SaveAgentTurn implements store.AgentStore.
func (s *Store) SaveAgentTurn(ctx context.Context, sessionID string, t canvas.AgentTurn) error {
	revs := t.Revs
	if revs == nil {
		revs = []int64{}
	}
	b, err := json.Marshal(revs)
	if err != nil {
		return fmt.Errorf("sqlitestore: save agent turn: %w", err)
	}
	var ended any
	if t.EndedAt != nil {
		ended = micros(*t.EndedAt)
	}
	return s.write(ctx, func(w *writer) error {
		_, err := w.conn.ExecContext(bg, `INSERT INTO canvas_agent_turns (session_id, turn, kind, revs, started_at, ended_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, turn) DO UPDATE
			SET kind = excluded.kind, revs = excluded.revs, started_at = excluded.started_at, ended_at = excluded.ended_at`,
			sessionID, t.Turn, t.Kind, string(b), micros(t.StartedAt), ended)
		return agentErr(fmt.Sprintf("agent session %q", sessionID), err)
	})
}

// MarkAgentTurnsReverted implements store.AgentStore.
func (s *Store) MarkAgentTurnsReverted(ctx context.Context, sessionID string, turns []int, rev int64) ([]int, error) {
	if err := store.CheckRevertRev(rev); err != nil {
		return nil, err
	}
	list, err := json.Marshal(turns)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: mark agent turns reverted: %w", err)
	}
	marked := []int{}
	err = s.write(ctx, func(w *writer) error {
		marked = marked[:0]
		if _, err := agentState(bg, w.conn, sessionID); err != nil {
			return err
		}
		rows, err := w.conn.QueryContext(bg, `UPDATE canvas_agent_turns SET reverted_rev = ?
			WHERE session_id = ? AND (reverted_rev IS NULL OR reverted_rev < ?) AND turn IN (SELECT value FROM json_each(?))
			RETURNING turn`, rev, sessionID, rev, string(list))
		if err != nil {
			return agentErr("mark agent turns reverted", err)
		}
		defer rows.Close()
		for rows.Next() {
			var n int
			if err := rows.Scan(&n); err != nil {
				return agentErr("mark agent turns reverted", err)
			}
			marked = append(marked, n)
		}
		return agentErr("mark agent turns reverted", rows.Err())
	})
	if err != nil {
		return nil, err
	}
	sort.Ints(marked)
	return marked, nil
}

// UpsertAgentTodo implements store.AgentStore.
func (s *Store) UpsertAgentTodo(ctx context.Context, t canvas.AgentTodo) (canvas.AgentTodo, bool, error) {
	if err := store.CheckTodoStatus(t.Status); err != nil {
		return t, false, err
	}
	now := t.CreatedAt.UTC().Truncate(time.Microsecond)
	changed := false
	err := s.write(ctx, func(w *writer) error {
		if _, err := agentState(bg, w.conn, t.SessionID); err != nil {
			return err
		}
		var old string
		var created int64
		var resolved sql.NullInt64
		err := w.conn.QueryRowContext(bg, `SELECT id, status, position, created_at, resolved_at FROM canvas_agent_todos
			WHERE session_id = ? AND text = ?`, t.SessionID, t.Text).Scan(&t.ID, &old, &t.Position, &created, &resolved)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return s.insertTodo(w, &t, now, &changed)
		case err != nil:
			return agentErr("read agent todo", err)
		}
		return s.updateTodo(w, &t, now, old, created, resolved, &changed)
	})
	return t, changed, err
}

func (s *Store) insertTodo(w *writer, t *canvas.AgentTodo, now time.Time, changed *bool) error {
	if t.Status == "" {
		t.Status = canvas.TodoOpen
	}
	t.CreatedAt, t.ResolvedAt = now, nil
	var resolved any
	if t.Status != canvas.TodoOpen {
		t.ResolvedAt = &now
		resolved = micros(now)
	}
	err := w.conn.QueryRowContext(bg, `INSERT INTO canvas_agent_todos (session_id, text, status, position, created_at, resolved_at)
		VALUES (?, ?, ?, (SELECT COALESCE(MAX(position), -1) + 1 FROM canvas_agent_todos WHERE session_id = ?), ?, ?)
		RETURNING id, position`, t.SessionID, t.Text, t.Status, t.SessionID, micros(now), resolved).Scan(&t.ID, &t.Position)
	*changed = err == nil
	return agentErr("add agent todo", err)
}

// updateTodo sets the stored todo's status (old) to t.Status when that
// differs (and t.Status is set), and fills t with the stored row.
func (s *Store) updateTodo(w *writer, t *canvas.AgentTodo, now time.Time, old string, created int64, resolved sql.NullInt64, changed *bool) error {
	t.CreatedAt = fromMicros(created)
	t.ResolvedAt = optMicros(resolved)
	if t.Status == "" || t.Status == old {
		t.Status = old
		return nil
	}
	var res any
	t.ResolvedAt = nil
	if t.Status != canvas.TodoOpen {
		t.ResolvedAt = &now
		res = micros(now)
	}
	_, err := w.conn.ExecContext(bg, `UPDATE canvas_agent_todos SET status = ?, resolved_at = ? WHERE id = ?`, t.Status, res, t.ID)
	*changed = err == nil
	return agentErr("update agent todo", err)
}
