package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// The agent tables (store.AgentStore).

var _ store.AgentStore = (*Store)(nil)

const terminalStates = `('done', 'canceled', 'error')`

// endedStates are the terminal states a canceled session may not be saved over.
const endedStates = `('done', 'error')`

// CreateAgentSession implements store.AgentStore.
func (s *Store) CreateAgentSession(ctx context.Context, a canvas.AgentSession) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	data, err := store.EncodeAgentSessionData(a)
	if err != nil {
		return fmt.Errorf("pgstore: create agent session: %w", err)
	}
	updated := a.UpdatedAt
	if updated.IsZero() {
		updated = a.CreatedAt
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO canvas_agent_sessions (id, canvas_id, actor_id, state, model, data, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, a.ID, a.CanvasID, a.ActorID, a.State, a.Model, string(data), a.CreatedAt, updated)
	if fkViolation(err) {
		return fmt.Errorf("canvas %q: %w", a.CanvasID, canvas.ErrNotFound)
	}
	if _, ok := uniqueViolation(err); ok {
		return fmt.Errorf("agent session %q: %w", a.ID, canvas.ErrAlreadyExists)
	}
	return s.wrap(ctx, "create agent session", err)
}

// SaveAgentSession implements store.AgentStore.
func (s *Store) SaveAgentSession(ctx context.Context, a canvas.AgentSession) error {
	cond := `state NOT IN ` + terminalStates
	if a.State == canvas.AgentCanceled {
		cond = `state NOT IN ` + endedStates // a worker's final save after a cancel
	}
	return s.updateAgentSession(ctx, a, cond, nil, store.AgentSessionEnded)
}

// ReopenAgentSession implements store.AgentStore: one conditional UPDATE, so
// of two servers reopening the same session only one succeeds.
func (s *Store) ReopenAgentSession(ctx context.Context, a canvas.AgentSession, staleBefore time.Time) error {
	return s.updateAgentSession(ctx, a, `(state IN `+terminalStates+` OR (state <> '`+canvas.AgentQueued+`' AND updated_at < $7))`,
		[]any{staleBefore}, store.AgentSessionRunning)
}

// updateAgentSession stores a's fields over the session when cond holds
// (cond's parameters start at $7); otherwise the session is missing
// (canvas.ErrNotFound) or refused(id, state).
func (s *Store) updateAgentSession(ctx context.Context, a canvas.AgentSession, cond string, condArgs []any, refused func(id, state string) error) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	data, err := store.EncodeAgentSessionData(a)
	if err != nil {
		return fmt.Errorf("pgstore: save agent session: %w", err)
	}
	args := append([]any{a.State, a.Model, a.ActorID, string(data), a.UpdatedAt, a.ID}, condArgs...)
	tag, err := s.pool.Exec(ctx, `UPDATE canvas_agent_sessions SET state = $1, model = $2, actor_id = $3, data = $4, updated_at = $5
		WHERE id = $6 AND `+cond, args...)
	if err != nil {
		return s.wrap(ctx, "save agent session", err)
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	state, err := s.AgentSessionState(ctx, a.ID)
	if err != nil {
		return err
	}
	return refused(a.ID, state)
}

// ClaimAgentSession implements store.AgentStore.
func (s *Store) ClaimAgentSession(ctx context.Context, actorID string) (canvas.AgentSession, error) {
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	var id string
	err := s.pool.QueryRow(octx, `UPDATE canvas_agent_sessions SET state = $1, actor_id = $2, updated_at = $4
		WHERE id = (SELECT id FROM canvas_agent_sessions WHERE state = $3 ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
		  AND state = $3
		RETURNING id`, canvas.AgentWaitingContext, actorID, canvas.AgentQueued, s.now()).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return canvas.AgentSession{}, fmt.Errorf("no queued agent session: %w", canvas.ErrNotFound)
	}
	if err != nil {
		return canvas.AgentSession{}, s.wrap(octx, "claim agent session", err)
	}
	return s.GetAgentSession(ctx, id)
}

// AgentSessionState implements store.AgentStore.
func (s *Store) AgentSessionState(ctx context.Context, id string) (string, error) {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	var state string
	err := s.pool.QueryRow(ctx, `SELECT state FROM canvas_agent_sessions WHERE id = $1`, id).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("agent session %q: %w", id, canvas.ErrNotFound)
	}
	return state, s.wrap(ctx, "read agent session state", err)
}

// CancelAgentSession implements store.AgentStore: one UPDATE, which locks the
// row in its subquery and so returns the state it replaced.
func (s *Store) CancelAgentSession(ctx context.Context, id string) (string, time.Time, error) {
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	var was string
	var at time.Time
	err := s.pool.QueryRow(octx, `UPDATE canvas_agent_sessions n SET state = 'canceled', updated_at = $2
		FROM (SELECT id, state FROM canvas_agent_sessions WHERE id = $1 FOR UPDATE) o
		WHERE n.id = o.id AND o.state NOT IN `+terminalStates+`
		RETURNING o.state, n.updated_at`, id, s.now()).Scan(&was, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		_, err = s.AgentSessionState(ctx, id)
		return "", time.Time{}, err
	}
	if err != nil {
		return "", time.Time{}, s.wrap(octx, "cancel agent session", err)
	}
	return was, at.UTC(), nil
}

// GetAgentSession implements store.AgentStore.
func (s *Store) GetAgentSession(ctx context.Context, id string) (canvas.AgentSession, error) {
	ctx, cancel := s.opCtxN(ctx, 3)
	defer cancel()
	a := canvas.AgentSession{ID: id}
	var data string
	err := s.pool.QueryRow(ctx, `SELECT canvas_id, actor_id, state, model, data::text, created_at, updated_at
		FROM canvas_agent_sessions WHERE id = $1`, id).Scan(&a.CanvasID, &a.ActorID, &a.State, &a.Model, &data, &a.CreatedAt, &a.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return canvas.AgentSession{}, fmt.Errorf("agent session %q: %w", id, canvas.ErrNotFound)
	}
	if err != nil {
		return canvas.AgentSession{}, s.wrap(ctx, "get agent session", err)
	}
	if err := store.DecodeAgentSessionData([]byte(data), &a); err != nil {
		return canvas.AgentSession{}, err
	}
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	if a.Todos, err = s.agentTodos(ctx, id); err != nil {
		return canvas.AgentSession{}, err
	}
	if a.Turns, err = s.agentTurns(ctx, id); err != nil {
		return canvas.AgentSession{}, err
	}
	return a, nil
}

// todoColumns are the columns scanTodo reads.
const todoColumns = `id::text, text, status, position, created_at, resolved_at`

func scanTodo(row pgx.Row, sessionID string) (canvas.AgentTodo, error) {
	t := canvas.AgentTodo{SessionID: sessionID}
	err := row.Scan(&t.ID, &t.Text, &t.Status, &t.Position, &t.CreatedAt, &t.ResolvedAt)
	t.CreatedAt = t.CreatedAt.UTC()
	if t.ResolvedAt != nil {
		r := t.ResolvedAt.UTC()
		t.ResolvedAt = &r
	}
	return t, err
}

func (s *Store) agentTodos(ctx context.Context, sessionID string) ([]canvas.AgentTodo, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+todoColumns+` FROM canvas_agent_todos
		WHERE session_id = $1 ORDER BY position, created_at`, sessionID)
	if err != nil {
		return nil, s.wrap(ctx, "list agent todos", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (canvas.AgentTodo, error) { return scanTodo(r, sessionID) })
	if err != nil {
		return nil, s.wrap(ctx, "list agent todos", err)
	}
	if out == nil {
		out = []canvas.AgentTodo{}
	}
	return out, nil
}

func (s *Store) agentTurns(ctx context.Context, sessionID string) ([]canvas.AgentTurn, error) {
	rows, err := s.pool.Query(ctx, `SELECT turn, kind, revs::text, started_at, ended_at, reverted_rev FROM canvas_agent_turns
		WHERE session_id = $1 ORDER BY turn`, sessionID)
	if err != nil {
		return nil, s.wrap(ctx, "list agent turns", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (canvas.AgentTurn, error) {
		var t canvas.AgentTurn
		var revs string
		if err := r.Scan(&t.Turn, &t.Kind, &revs, &t.StartedAt, &t.EndedAt, &t.RevertedRev); err != nil {
			return t, err
		}
		if err := json.Unmarshal([]byte(revs), &t.Revs); err != nil {
			return t, fmt.Errorf("turn %d: corrupt revs: %v: %w", t.Turn, err, canvas.ErrUnavailable)
		}
		if t.Revs == nil {
			t.Revs = []int64{}
		}
		t.StartedAt = t.StartedAt.UTC()
		if t.EndedAt != nil {
			e := t.EndedAt.UTC()
			t.EndedAt = &e
		}
		return t, nil
	})
	if err != nil {
		return nil, s.wrap(ctx, "list agent turns", err)
	}
	if out == nil {
		out = []canvas.AgentTurn{}
	}
	return out, nil
}

// ListAgentSessions implements store.AgentStore.
func (s *Store) ListAgentSessions(ctx context.Context, canvasID string, limit int) ([]canvas.AgentSession, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("pgstore: list agent sessions: limit %d: %w", limit, canvas.ErrUnprocessable)
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	rows, err := s.pool.Query(octx, `SELECT id FROM canvas_agent_sessions WHERE canvas_id = $1
		ORDER BY created_at DESC, id DESC LIMIT $2`, canvasID, limit)
	if err != nil {
		return nil, s.wrap(octx, "list agent sessions", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.wrap(octx, "list agent sessions", err)
	}
	return store.SessionsByID(ctx, ids, s.GetAgentSession)
}

// SaveAgentTurn implements store.AgentStore.
func (s *Store) SaveAgentTurn(ctx context.Context, sessionID string, t canvas.AgentTurn) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	revs := t.Revs
	if revs == nil {
		revs = []int64{}
	}
	b, err := json.Marshal(revs)
	if err != nil {
		return fmt.Errorf("pgstore: save agent turn: %w", err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO canvas_agent_turns (session_id, turn, kind, revs, started_at, ended_at)
		VALUES ($1, $2, $3, $4::jsonb, $5, $6) ON CONFLICT (session_id, turn) DO UPDATE
		SET kind = excluded.kind, revs = excluded.revs, started_at = excluded.started_at, ended_at = excluded.ended_at`,
		sessionID, t.Turn, t.Kind, string(b), t.StartedAt, t.EndedAt)
	if fkViolation(err) {
		return fmt.Errorf("agent session %q: %w", sessionID, canvas.ErrNotFound)
	}
	return s.wrap(ctx, "save agent turn", err)
}

// MarkAgentTurnsReverted implements store.AgentStore: one conditional
// UPDATE, so of two concurrent marks of a turn the newer revision sticks.
func (s *Store) MarkAgentTurnsReverted(ctx context.Context, sessionID string, turns []int, rev int64) ([]int, error) {
	if err := store.CheckRevertRev(rev); err != nil {
		return nil, err
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	nums := make([]int64, len(turns))
	for i, n := range turns {
		nums[i] = int64(n)
	}
	rows, err := s.pool.Query(octx, `UPDATE canvas_agent_turns SET reverted_rev = $1
		WHERE session_id = $2 AND (reverted_rev IS NULL OR reverted_rev < $1) AND turn = ANY($3::bigint[])
		RETURNING turn`, rev, sessionID, nums)
	if err != nil {
		return nil, s.wrap(octx, "mark agent turns reverted", err)
	}
	marked, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, s.wrap(octx, "mark agent turns reverted", err)
	}
	if len(marked) == 0 {
		if _, err := s.AgentSessionState(ctx, sessionID); err != nil {
			return nil, err
		}
		return []int{}, nil
	}
	sort.Ints(marked)
	return marked, nil
}

// UpsertAgentTodo implements store.AgentStore: an insert that does nothing
// when the text is taken, then an update that does nothing when the status
// is unchanged, then a read; each statement is atomic on its own.
func (s *Store) UpsertAgentTodo(ctx context.Context, t canvas.AgentTodo) (canvas.AgentTodo, bool, error) {
	if err := store.CheckTodoStatus(t.Status); err != nil {
		return t, false, err
	}
	ctx, cancel := s.opCtxN(ctx, 4)
	defer cancel()
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM canvas_agent_sessions WHERE id = $1)`, t.SessionID).Scan(&exists); err != nil {
		return t, false, s.wrap(ctx, "upsert agent todo", err)
	}
	if !exists {
		return t, false, fmt.Errorf("agent session %q: %w", t.SessionID, canvas.ErrNotFound)
	}
	now := t.CreatedAt.UTC().Truncate(time.Microsecond)
	status := t.Status
	if status == "" {
		status = canvas.TodoOpen
	}
	out, err := scanTodo(s.pool.QueryRow(ctx, `INSERT INTO canvas_agent_todos (session_id, text, status, position, created_at, resolved_at)
		VALUES ($1, $2, $3, (SELECT COALESCE(MAX(position), -1) + 1 FROM canvas_agent_todos WHERE session_id = $1), $4,
			CASE WHEN $3 = 'open' THEN NULL ELSE $4::timestamptz END)
		ON CONFLICT (session_id, text) DO NOTHING
		RETURNING `+todoColumns, t.SessionID, t.Text, status, now), t.SessionID)
	if err == nil {
		return out, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return t, false, s.wrap(ctx, "add agent todo", err)
	}
	if t.Status != "" {
		out, err = scanTodo(s.pool.QueryRow(ctx, `UPDATE canvas_agent_todos
			SET status = $3, resolved_at = CASE WHEN $3 = 'open' THEN NULL ELSE $4::timestamptz END
			WHERE session_id = $1 AND text = $2 AND status <> $3
			RETURNING `+todoColumns, t.SessionID, t.Text, t.Status, now), t.SessionID)
		if err == nil {
			return out, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return t, false, s.wrap(ctx, "update agent todo", err)
		}
	}
	out, err = scanTodo(s.pool.QueryRow(ctx, `SELECT `+todoColumns+` FROM canvas_agent_todos WHERE session_id = $1 AND text = $2`,
		t.SessionID, t.Text), t.SessionID)
	return out, false, s.wrap(ctx, "read agent todo", err)
}
