package canvas

import (
	"fmt"
	"slices"
	"time"
)

// ActorType says what kind of principal made a write.
type ActorType string

// Actor types.
const (
	ActorAgent   ActorType = "agent"
	ActorHuman   ActorType = "human"
	ActorService ActorType = "service"
)

// Valid reports whether t is one of the known actor types.
func (t ActorType) Valid() bool {
	return t == ActorAgent || t == ActorHuman || t == ActorService
}

// Actor identifies who made a request. Agent actor ids are "agent-{uuid}".
type Actor struct {
	ID   string    `json:"actor_id"`
	Type ActorType `json:"actor_type"`
}

// Role is what a token may do. Roles are ordered: viewer < editor < admin.
type Role string

// Roles.
const (
	RoleViewer Role = "viewer"
	RoleEditor Role = "editor"
	RoleAdmin  Role = "admin"
)

// ParseRole validates a role name.
func ParseRole(s string) (Role, error) {
	switch Role(s) {
	case RoleViewer, RoleEditor, RoleAdmin:
		return Role(s), nil
	}
	return "", Unprocessable("role", "unknown role %q; use viewer, editor or admin", s)
}

// Allows reports whether r includes the permissions of need.
func (r Role) Allows(need Role) bool { return r.rank() >= need.rank() }

func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleEditor:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Principal is an authenticated actor with its role and canvas scope.
type Principal struct {
	Actor
	Role     Role
	Canvases []string // empty: the role holds on every canvas
}

// CanAccess reports whether the principal's role reaches need on canvasID.
func (p Principal) CanAccess(canvasID string, need Role) bool {
	if !p.Role.Allows(need) {
		return false
	}
	return !p.Scoped() || slices.Contains(p.Canvases, canvasID)
}

// Scoped reports whether the principal's role holds on named canvases only.
func (p Principal) Scoped() bool { return len(p.Canvases) > 0 }

// Covers reports whether every canvas of scope lies within the principal's
// scope. An empty scope means every canvas, which only an unscoped principal
// covers. It decides what a token may grant or revoke: never more than it holds.
func (p Principal) Covers(scope []string) bool {
	if !p.Scoped() {
		return true
	}
	if len(scope) == 0 {
		return false
	}
	for _, c := range scope {
		if !slices.Contains(p.Canvases, c) {
			return false
		}
	}
	return true
}

// ValidateActorID checks the id shape for an actor type: agents are "agent-{uuid}".
func ValidateActorID(id string, t ActorType) error {
	if id == "" || len(id) > 200 {
		return Unprocessable("actor_id", "must be 1 to 200 characters")
	}
	if t == ActorAgent && !isAgentID(id) {
		return Unprocessable("actor_id", "agent actor ids are agent-{uuid}, got %q", id)
	}
	return nil
}

func isAgentID(id string) bool {
	const prefix = "agent-"
	if len(id) != len(prefix)+36 || id[:len(prefix)] != prefix {
		return false
	}
	u := id[len(prefix):]
	for i, c := range u {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// TokenRequest is the body of POST /api/tokens (and what `canvasd token
// create` builds). Without Canvases the role holds on every canvas; without
// ActorID one is minted (agent-{uuid} for agents); without ExpiresIn the
// token never expires.
type TokenRequest struct {
	Role      Role      `json:"role"`
	ActorType ActorType `json:"actor_type"`
	ActorID   string    `json:"actor_id,omitempty"`
	Canvases  []string  `json:"canvases,omitempty"`
	Name      string    `json:"name,omitempty"`
	ExpiresIn int64     `json:"expires_in,omitempty"` // seconds from now (1 to MaxTokenLifetime)
}

// MaxTokenLifetime bounds TokenRequest.ExpiresIn: ten years, in seconds.
const MaxTokenLifetime = 10 * 365 * 24 * 3600

// TokenGrant is the answer to POST /api/tokens: Token is the secret, shown
// only here (the server keeps its hash).
type TokenGrant struct {
	Token     string     `json:"token"`
	ActorID   string     `json:"actor_id"`
	ActorType ActorType  `json:"actor_type"`
	Role      Role       `json:"role"`
	Canvases  []string   `json:"canvases"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"` // nil: never expires
}

// TokenInfo describes a stored token (GET /api/tokens): metadata only, never
// the secret or its hash.
type TokenInfo struct {
	ActorID   string     `json:"actor_id"`
	ActorType ActorType  `json:"actor_type"`
	Role      Role       `json:"role"`
	Canvases  []string   `json:"canvases"` // empty: the role holds on every canvas
	Name      string     `json:"name"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"` // nil: never expires
}

// DescribeScope says what p may do, for error messages: "editor on every
// canvas", or "viewer on 2 canvas(es)".
func (p Principal) DescribeScope() string {
	if !p.Scoped() {
		return string(p.Role) + " on every canvas"
	}
	return fmt.Sprintf("%s on %d canvas(es)", p.Role, len(p.Canvases))
}
