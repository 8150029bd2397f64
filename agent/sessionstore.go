package agent

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// SessionStore persists agent sessions with their turns and todos, so GET
// /api/canvas-agent/sessions/{id} works after a restart and workers share
// one queue. It is the store.AgentStore interface (whose doc comments state
// the contract), which both stores implement; the agent package names it
// here because it reaches the server only through package client.
type SessionStore interface {
	CreateAgentSession(ctx context.Context, s canvas.AgentSession) error
	SaveAgentSession(ctx context.Context, s canvas.AgentSession) error
	ReopenAgentSession(ctx context.Context, s canvas.AgentSession, staleBefore time.Time) error
	ClaimAgentSession(ctx context.Context, actorID string) (canvas.AgentSession, error)
	AgentSessionState(ctx context.Context, id string) (string, error)
	CancelAgentSession(ctx context.Context, id string) (was string, at time.Time, err error)
	GetAgentSession(ctx context.Context, id string) (canvas.AgentSession, error)
	ListAgentSessions(ctx context.Context, canvasID string, limit int) ([]canvas.AgentSession, error)
	SaveAgentTurn(ctx context.Context, sessionID string, t canvas.AgentTurn) error
	UpsertAgentTodo(ctx context.Context, t canvas.AgentTodo) (canvas.AgentTodo, bool, error)
}

func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
