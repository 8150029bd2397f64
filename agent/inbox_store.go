package agent

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

var _ InboxStore = (*SQLSessionStore)(nil)

// ReopenSession implements InboxStore: one conditional UPDATE, so of two
// servers reopening the same session only one succeeds.
func (s *SQLSessionStore) ReopenSession(ctx context.Context, a client.AgentSession, staleBefore time.Time) error {
	data, err := dataOf(a)
	if err != nil {
		return fmt.Errorf("agent session store: encode: %w", err)
	}
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE canvas_agent_sessions SET state = ?, model = ?, actor_id = ?, data = ?, updated_at = ?
		WHERE id = ? AND (state IN ('done', 'canceled', 'error') OR (state <> ? AND updated_at < ?))`),
		a.State, a.Model, a.ActorID, data, s.ts(time.Now()), a.ID, StateQueued, s.ts(staleBefore))
	if err != nil {
		return s.wrap("reopen session", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	state, err := s.SessionState(ctx, a.ID)
	if err != nil {
		return err
	}
	return fmt.Errorf("agent session %q is running on another server (state %s); retry when it has finished: %w", a.ID, state, canvas.ErrConflict)
}

// LatestSession implements InboxStore.
func (s *SQLSessionStore) LatestSession(ctx context.Context, canvasID string) (client.AgentSession, error) {
	var id string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id FROM canvas_agent_sessions WHERE canvas_id = ? ORDER BY created_at DESC, id DESC LIMIT 1`), canvasID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return client.AgentSession{}, fmt.Errorf("canvas %q has no agent session: %w", canvasID, canvas.ErrNotFound)
	}
	if err != nil {
		return client.AgentSession{}, s.wrap("latest session", err)
	}
	return s.GetSession(ctx, id)
}
