package host

import "net/http"

// The errors below implement the API's TypedProblem contract
// (ProblemStatus, ProblemSlug) and add members for the problem document
// through ProblemExtra, so the one problem mapper can render them without
// knowing this package.

// UnsupportedMediaTypeError is an image (or body) of a type the server does
// not accept: HTTP 415. It wraps ErrUnsupportedMediaType.
type UnsupportedMediaTypeError struct {
	Field  string
	Reason string
}

func (e *UnsupportedMediaTypeError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrUnsupportedMediaType) true.
func (e *UnsupportedMediaTypeError) Unwrap() error { return ErrUnsupportedMediaType }

// ProblemStatus is 415.
func (e *UnsupportedMediaTypeError) ProblemStatus() int { return http.StatusUnsupportedMediaType }

// ProblemSlug names the problem type.
func (e *UnsupportedMediaTypeError) ProblemSlug() string { return "unsupported-media-type" }

// ProblemExtra names the field.
func (e *UnsupportedMediaTypeError) ProblemExtra() map[string]any {
	return map[string]any{"field": e.Field}
}

// ProblemStatus is 422.
func (e *ValidationError) ProblemStatus() int { return http.StatusUnprocessableEntity }

// ProblemSlug names the problem type.
func (e *ValidationError) ProblemSlug() string { return "a2ui-invalid" }

// ProblemExtra lists every bad line as "errors".
func (e *ValidationError) ProblemExtra() map[string]any { return map[string]any{"errors": e.Lines} }

// ProblemStatus is 504.
func (e *InvokeTimeoutError) ProblemStatus() int { return http.StatusGatewayTimeout }

// ProblemSlug names the problem type.
func (e *InvokeTimeoutError) ProblemSlug() string { return "invoke-timeout" }

// ProblemExtra carries invoke_id, unconfirmed and listeners.
func (e *InvokeTimeoutError) ProblemExtra() map[string]any {
	return map[string]any{"invoke_id": e.InvokeID, "unconfirmed": e.Unconfirmed, "listeners": e.Listeners}
}
