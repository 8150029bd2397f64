package canvas

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Sentinel errors. Stores and the reducer wrap these with %w; the API maps
// them to HTTP statuses in exactly one place (api.problemFor).
var (
	// ErrNotFound: the canvas, node, edge, token or record does not exist (404,
	// or 422 when a command names a missing entity; see FieldError).
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a create named an id that is taken (409).
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: a command's base_rev is stale and it touches entities changed since (409).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: a malformed request or envelope (400).
	ErrInvalid = errors.New("invalid")
	// ErrUnprocessable: a well-formed command that cannot apply (422).
	ErrUnprocessable = errors.New("unprocessable")
	// ErrHeadMismatch: Store.Append was given an expected head that is not the
	// stored head (another writer appended first). The engine catches up and retries.
	ErrHeadMismatch = errors.New("head revision mismatch")
	// ErrDuplicateIdempotencyKey: Store.Append was given an idempotency key already
	// stored for that canvas (a concurrent duplicate won). Nothing was written.
	ErrDuplicateIdempotencyKey = errors.New("duplicate idempotency key")
	// ErrUnauthorized: no valid credentials (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: valid credentials without the needed role (403).
	ErrForbidden = errors.New("forbidden")
	// ErrTooLarge: a body or field over its limit (413).
	ErrTooLarge = errors.New("too large")
	// ErrUnavailable: the store cannot be reached right now (503).
	ErrUnavailable = errors.New("unavailable")
	// ErrOutcomeUnknown comes with ErrUnavailable when a write reached the
	// store but its commit was not confirmed (the connection broke, or the
	// operation timed out, after the statement was sent): it may have
	// committed. A retry with the same idempotency key returns the original
	// answer if it did (503, problem type outcome-unknown).
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrNotWritten comes with ErrUnavailable when the store knows the write
	// did not happen (no connection, or it failed before anything was sent).
	ErrNotWritten = errors.New("nothing was written")
)

// FieldError is a validation failure that names the offending field, for
// example "args.transform.w". It wraps ErrInvalid (400) or ErrUnprocessable (422).
type FieldError struct {
	Field  string // JSON path of the offending field, e.g. "args.ids[2]"
	Reason string // what is wrong and what to do, for a person or a model
	Kind   error  // ErrInvalid or ErrUnprocessable
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }

// Unwrap returns the kind, so errors.Is(err, ErrUnprocessable) works.
func (e *FieldError) Unwrap() error { return e.Kind }

// Unprocessable returns a FieldError of kind ErrUnprocessable (HTTP 422).
func Unprocessable(field, format string, a ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, a...), Kind: ErrUnprocessable}
}

// Invalid returns a FieldError of kind ErrInvalid (HTTP 400).
func Invalid(field, format string, a ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, a...), Kind: ErrInvalid}
}

// ErrForStatus is the sentinel error of the same meaning as an HTTP status
// of canvasd's (problemType tells an already-exists 409 from a conflict),
// or nil when no sentinel has that meaning. Clients and relays use it so
// errors.Is works on an answer that crossed the network.
func ErrForStatus(status int, problemType string) error {
	switch status {
	case http.StatusBadRequest:
		return ErrInvalid
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusConflict:
		if strings.HasSuffix(problemType, "already-exists") {
			return ErrAlreadyExists
		}
		return ErrConflict
	case http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	case http.StatusUnprocessableEntity:
		return ErrUnprocessable
	case http.StatusServiceUnavailable:
		return ErrUnavailable
	}
	return nil
}
