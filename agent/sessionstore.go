package agent

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// SessionStore persists agent sessions (canvas_agent_sessions) and their
// todos (canvas_agent_todos), so GET /api/canvas-agent/sessions/{id} works
// after a restart. Implementations are safe for concurrent use; a missing
// session is an error wrapping canvas.ErrNotFound.
type SessionStore interface {
	// CreateSession stores a new session (its Todos are ignored). A session of
	// a canvas that does not exist is canvas.ErrNotFound.
	CreateSession(ctx context.Context, s client.AgentSession) error
	// SaveSession replaces a session's state, detail, transcript and stats and
	// sets updated_at (Todos are ignored). A session that has ended (done,
	// canceled, error) never changes again: saving it is an error wrapping
	// canvas.ErrConflict (how a worker learns of a cancel made elsewhere).
	SaveSession(ctx context.Context, s client.AgentSession) error
	// ClaimSession atomically moves the oldest queued session (StateQueued)
	// to waiting_context with actorID as its agent and returns it; with none
	// queued it returns canvas.ErrNotFound. Concurrent claimers (several
	// workers) never get the same session.
	ClaimSession(ctx context.Context, actorID string) (client.AgentSession, error)
	// SessionState returns a session's stored state, or canvas.ErrNotFound.
	SessionState(ctx context.Context, id string) (string, error)
	// CancelSession marks a session canceled unless it has ended, and
	// reports whether it did. A missing session is canvas.ErrNotFound.
	CancelSession(ctx context.Context, id string) (bool, error)
	// GetSession returns a session with its todos in position order.
	GetSession(ctx context.Context, id string) (client.AgentSession, error)
	// AddTodo appends a todo at the end of its session's list (ID, Position
	// and CreatedAt are assigned) and returns it.
	AddTodo(ctx context.Context, t client.AgentTodo) (client.AgentTodo, error)
	// SetTodoStatus sets a todo's status (open, done, skipped); done and
	// skipped set resolved_at. A missing todo is canvas.ErrNotFound.
	SetTodoStatus(ctx context.Context, sessionID, todoID, status string) error
}

// SQLSessionStore implements SessionStore over database/sql on the tables
// of migrations/sqlite and migrations/postgres.
type SQLSessionStore struct {
	db       *sql.DB
	postgres bool
	owned    bool
}

// NewSQLSessionStore uses an open database (dialect "sqlite" or "postgres")
// whose schema has been migrated. The caller keeps ownership of db.
func NewSQLSessionStore(db *sql.DB, dialect string) (*SQLSessionStore, error) {
	switch dialect {
	case "sqlite":
		return &SQLSessionStore{db: db}, nil
	case "postgres":
		return &SQLSessionStore{db: db, postgres: true}, nil
	}
	return nil, fmt.Errorf("agent: session store dialect %q: use sqlite or postgres: %w", dialect, canvas.ErrInvalid)
}

// OpenSQLSessionStore opens its own connection pool: databaseURL
// "postgres://..." (pgx) or, otherwise, the path of the embedded SQLite
// database file (with a busy timeout, sharing the file with the store).
// The schema must already be migrated by the store. Close releases it.
func OpenSQLSessionStore(ctx context.Context, databaseURL, sqlitePath string) (*SQLSessionStore, error) {
	var (
		db  *sql.DB
		err error
		pg  bool
	)
	if strings.HasPrefix(databaseURL, "postgres://") || strings.HasPrefix(databaseURL, "postgresql://") {
		db, err = sql.Open("pgx", databaseURL)
		pg = true
	} else {
		db, err = sql.Open("sqlite", "file:"+sqlitePath+"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)")
		if err == nil {
			db.SetMaxOpenConns(2)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("agent: open session store: %w", err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("agent: open session store: %v: %w", err, canvas.ErrUnavailable)
	}
	return &SQLSessionStore{db: db, postgres: pg, owned: true}, nil
}

// Close closes the pool if OpenSQLSessionStore opened it.
func (s *SQLSessionStore) Close() error {
	if s.owned {
		return s.db.Close()
	}
	return nil
}

// q rewrites ? placeholders to $n for PostgreSQL.
func (s *SQLSessionStore) q(query string) string {
	if !s.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (s *SQLSessionStore) ts(t time.Time) any {
	if s.postgres {
		return t.UTC()
	}
	return t.UTC().UnixMicro()
}

func (s *SQLSessionStore) scanTime(v any) time.Time {
	switch t := v.(type) {
	case time.Time:
		return t.UTC()
	case int64:
		return time.UnixMicro(t).UTC()
	}
	return time.Time{}
}

// sessionData is the JSON in canvas_agent_sessions.data.
type sessionData struct {
	Message    string                   `json:"message"`
	Detail     string                   `json:"detail,omitempty"`
	Viewport   *client.Box              `json:"viewport,omitempty"`
	Selection  []string                 `json:"selection,omitempty"`
	Transcript []client.TranscriptEntry `json:"transcript"`
	Stats      client.AgentStats        `json:"stats"`
}

func dataOf(a client.AgentSession) (string, error) {
	b, err := json.Marshal(sessionData{Message: a.Message, Detail: a.Detail, Viewport: a.Viewport, Selection: a.Selection, Transcript: a.Transcript, Stats: a.Stats})
	return string(b), err
}

func (s *SQLSessionStore) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("agent session store: %s: %w", op, err)
	}
	msg := strings.ToLower(err.Error())
	if strings.Contains(msg, "foreign key") || strings.Contains(msg, "violates foreign key") {
		return fmt.Errorf("agent session store: %s: canvas does not exist: %w", op, canvas.ErrNotFound)
	}
	if strings.Contains(msg, "unique") || strings.Contains(msg, "duplicate key") {
		return fmt.Errorf("agent session store: %s: %w", op, canvas.ErrAlreadyExists)
	}
	return fmt.Errorf("agent session store: %s: %v: %w", op, err, canvas.ErrUnavailable)
}

// CreateSession implements SessionStore.
func (s *SQLSessionStore) CreateSession(ctx context.Context, a client.AgentSession) error {
	data, err := dataOf(a)
	if err != nil {
		return fmt.Errorf("agent session store: encode: %w", err)
	}
	now := a.CreatedAt
	if now.IsZero() {
		now = time.Now()
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO canvas_agent_sessions (id, canvas_id, actor_id, state, model, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
		a.ID, a.CanvasID, a.ActorID, a.State, a.Model, data, s.ts(now), s.ts(now))
	return s.wrap("create session", err)
}

// SaveSession implements SessionStore.
func (s *SQLSessionStore) SaveSession(ctx context.Context, a client.AgentSession) error {
	data, err := dataOf(a)
	if err != nil {
		return fmt.Errorf("agent session store: encode: %w", err)
	}
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE canvas_agent_sessions SET state = ?, model = ?, actor_id = ?, data = ?, updated_at = ?
		WHERE id = ? AND state NOT IN ('done', 'canceled', 'error')`),
		a.State, a.Model, a.ActorID, data, s.ts(time.Now()), a.ID)
	if err != nil {
		return s.wrap("save session", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.endedOrMissing(ctx, a.ID)
	}
	return nil
}

// SessionState implements SessionStore.
func (s *SQLSessionStore) SessionState(ctx context.Context, id string) (string, error) {
	var state string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT state FROM canvas_agent_sessions WHERE id = ?`), id).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("agent session %q: %w", id, canvas.ErrNotFound)
	}
	return state, s.wrap("read session state", err)
}

// endedOrMissing explains an update that matched no row.
func (s *SQLSessionStore) endedOrMissing(ctx context.Context, id string) error {
	state, err := s.SessionState(ctx, id)
	if err != nil {
		return err
	}
	return fmt.Errorf("agent session %q has already ended (%s): %w", id, state, canvas.ErrConflict)
}

// ClaimSession implements SessionStore.
func (s *SQLSessionStore) ClaimSession(ctx context.Context, actorID string) (client.AgentSession, error) {
	lock := ""
	if s.postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var id string
	err := s.db.QueryRowContext(ctx, s.q(`UPDATE canvas_agent_sessions SET state = ?, actor_id = ?, updated_at = ?
		WHERE id = (SELECT id FROM canvas_agent_sessions WHERE state = ? ORDER BY created_at, id LIMIT 1`+lock+`) AND state = ?
		RETURNING id`), "waiting_context", actorID, s.ts(time.Now()), StateQueued, StateQueued).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return client.AgentSession{}, fmt.Errorf("no queued agent session: %w", canvas.ErrNotFound)
	}
	if err != nil {
		return client.AgentSession{}, s.wrap("claim session", err)
	}
	return s.GetSession(ctx, id)
}

// CancelSession implements SessionStore.
func (s *SQLSessionStore) CancelSession(ctx context.Context, id string) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE canvas_agent_sessions SET state = 'canceled', updated_at = ?
		WHERE id = ? AND state NOT IN ('done', 'canceled', 'error')`), s.ts(time.Now()), id)
	if err != nil {
		return false, s.wrap("cancel session", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return true, nil
	}
	if err := s.endedOrMissing(ctx, id); errors.Is(err, canvas.ErrNotFound) {
		return false, err
	}
	return false, nil
}

// GetSession implements SessionStore.
func (s *SQLSessionStore) GetSession(ctx context.Context, id string) (client.AgentSession, error) {
	var (
		a              client.AgentSession
		data           string
		created, updat any
	)
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id, canvas_id, actor_id, state, model, data, created_at, updated_at FROM canvas_agent_sessions WHERE id = ?`), id).
		Scan(&a.ID, &a.CanvasID, &a.ActorID, &a.State, &a.Model, &data, &created, &updat)
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("agent session %q: %w", id, canvas.ErrNotFound)
	}
	if err != nil {
		return a, s.wrap("get session", err)
	}
	var d sessionData
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		return a, fmt.Errorf("agent session %q: stored data is not valid JSON: %v: %w", id, err, canvas.ErrUnavailable)
	}
	a.Message, a.Detail, a.Viewport, a.Selection, a.Transcript, a.Stats = d.Message, d.Detail, d.Viewport, d.Selection, d.Transcript, d.Stats
	if a.Transcript == nil {
		a.Transcript = []client.TranscriptEntry{}
	}
	a.CreatedAt, a.UpdatedAt = s.scanTime(created), s.scanTime(updat)
	a.Todos, err = s.listTodos(ctx, id)
	return a, err
}

func (s *SQLSessionStore) listTodos(ctx context.Context, sessionID string) ([]client.AgentTodo, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, session_id, text, status, position, created_at, resolved_at FROM canvas_agent_todos WHERE session_id = ? ORDER BY position, created_at`), sessionID)
	if err != nil {
		return nil, s.wrap("list todos", err)
	}
	defer rows.Close()
	out := []client.AgentTodo{}
	for rows.Next() {
		var (
			t                 client.AgentTodo
			created, resolved any
		)
		if err := rows.Scan(&t.ID, &t.SessionID, &t.Text, &t.Status, &t.Position, &created, &resolved); err != nil {
			return nil, s.wrap("scan todo", err)
		}
		t.CreatedAt = s.scanTime(created)
		if resolved != nil {
			r := s.scanTime(resolved)
			t.ResolvedAt = &r
		}
		out = append(out, t)
	}
	return out, s.wrap("list todos", rows.Err())
}

// AddTodo implements SessionStore.
func (s *SQLSessionStore) AddTodo(ctx context.Context, t client.AgentTodo) (client.AgentTodo, error) {
	if t.Status == "" {
		t.Status = "open"
	}
	if !inEnum(enumTodo, t.Status) {
		return t, canvas.Unprocessable("status", "todo status %q: use open, done or skipped", t.Status)
	}
	t.ID = uuid4()
	t.CreatedAt = time.Now().UTC().Truncate(time.Microsecond)
	var resolved any
	if t.Status != "open" {
		r := t.CreatedAt
		t.ResolvedAt = &r
		resolved = s.ts(r)
	}
	err := s.db.QueryRowContext(ctx, s.q(`INSERT INTO canvas_agent_todos (id, session_id, text, status, position, created_at, resolved_at)
		VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(position), -1) + 1 FROM canvas_agent_todos WHERE session_id = ?), ?, ?) RETURNING position`),
		t.ID, t.SessionID, t.Text, t.Status, t.SessionID, s.ts(t.CreatedAt), resolved).Scan(&t.Position)
	return t, s.wrap("add todo", err)
}

// SetTodoStatus implements SessionStore.
func (s *SQLSessionStore) SetTodoStatus(ctx context.Context, sessionID, todoID, status string) error {
	if !inEnum(enumTodo, status) {
		return canvas.Unprocessable("status", "todo status %q: use open, done or skipped", status)
	}
	var resolved any
	if status != "open" {
		resolved = s.ts(time.Now())
	}
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE canvas_agent_todos SET status = ?, resolved_at = ? WHERE CAST(id AS TEXT) = ? AND session_id = ?`), status, resolved, todoID, sessionID)
	if err != nil {
		return s.wrap("set todo status", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("agent todo %q of session %q: %w", todoID, sessionID, canvas.ErrNotFound)
	}
	return nil
}

func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
