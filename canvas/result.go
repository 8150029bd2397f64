package canvas

import (
	"encoding/json"
	"strconv"
)

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
	// RecoveryOpsIncomplete: recovery_ops could not list every such commit
	// (base_rev too far behind, or the log unreadable): re-read the snapshot.
	RecoveryOpsIncomplete bool   `json:"recovery_ops_incomplete,omitempty"`
	Suggestion            string `json:"suggestion"`
}

// ConflictError carries a ConflictResult through error returns; it wraps ErrConflict.
type ConflictError struct{ Result ConflictResult }

func (e *ConflictError) Error() string { return "conflict: " + e.Result.Suggestion }

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// MarshalJSON encodes the result as encoding/json would encode its fields,
// without reflection for all but Result: it is the body of every applied
// command.
func (r RevisionResult) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

// AppendJSON appends the result's JSON (see MarshalJSON) to b.
func (r *RevisionResult) AppendJSON(b []byte) ([]byte, error) {
	b = appendJSONString(append(b, `{"status":`...), r.Status)
	b = strconv.AppendInt(append(b, `,"current_rev":`...), r.CurrentRev, 10)
	b = appendJSONString(append(b, `,"cmd_id":`...), r.CmdID)
	b = appendJSONString(append(b, `,"event_id":`...), r.EventID)
	b = append(b, `,"created_ids":`...)
	if r.CreatedIDs == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, id := range r.CreatedIDs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, id)
		}
		b = append(b, ']')
	}
	if r.Rebased {
		b = append(b, `,"rebased":true`...)
	}
	if r.Result != nil {
		v, err := json.Marshal(r.Result)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"result":`...), v...)
	}
	return append(b, '}'), nil
}
