package canvas

// Statuses in RevisionResult.Status.
const (
	StatusApplied  = "applied"
	StatusConflict = "conflict"
)

// RevisionResult is the 200 answer to a command.
type RevisionResult struct {
	Status     string   `json:"status"`
	CurrentRev int64    `json:"current_rev"`
	CmdID      string   `json:"cmd_id"`
	EventID    string   `json:"event_id"`
	CreatedIDs []string `json:"created_ids"`
	Rebased    bool     `json:"rebased,omitempty"`
	Result     any      `json:"result,omitempty"`
}

// ConflictResult is the 409 answer to a command whose base_rev is stale and
// conflicts. RecoveryOps are the commits after BaseRev that touched ConflictingIDs.
type ConflictResult struct {
	Status         string   `json:"status"`
	CurrentRev     int64    `json:"current_rev"`
	BaseRev        int64    `json:"base_rev"`
	ConflictingIDs []string `json:"conflicting_ids"`
	RecoveryOps    []Commit `json:"recovery_ops"`
	Suggestion     string   `json:"suggestion"`
}

// ConflictError carries a ConflictResult through error returns; it wraps ErrConflict.
type ConflictError struct{ Result ConflictResult }

func (e *ConflictError) Error() string { return "conflict: " + e.Result.Suggestion }

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }
