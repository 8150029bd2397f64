package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path"
	"time"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/hub"
	"github.com/canvasd/canvasd/store"
)

// Problem is an RFC 9457 problem document. Extra members go in Extra and are
// flattened into the JSON object.
type Problem struct {
	Type   string
	Title  string
	Status int
	Detail string
	Extra  map[string]any
}

// MarshalJSON flattens Extra next to the standard members.
func (p Problem) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(p.Extra)+4)
	for k, v := range p.Extra {
		m[k] = v
	}
	m["type"], m["title"], m["status"], m["detail"] = p.Type, p.Title, p.Status, p.Detail
	return json.Marshal(m)
}

// TypedProblem lets another package's error choose its own status and type
// (for example 415 for an unsupported image type) without the API knowing it.
type TypedProblem interface {
	error
	ProblemStatus() int  // HTTP status
	ProblemSlug() string // last path segment of the problem type
}

const problemBase = "https://canvasd.dev/problems/"

// ProblemExtras lets an error add members to its problem document (for
// example the bad lines of an A2UI push).
type ProblemExtras interface {
	ProblemExtra() map[string]any
}

// outcomeStatus is the HTTP status of what became of a command: with
// problemFor (for errors) the one place where the engine's answers become
// HTTP statuses.
func outcomeStatus(o store.Outcome) int {
	if o == store.OutcomeConflict {
		return http.StatusConflict
	}
	return http.StatusOK
}

// problemFor maps an error to its problem document, with any members the
// error offers through ProblemExtras. It is the one place where errors become
// HTTP statuses.
// ProblemOf returns how the API answers err: the HTTP status, the
// problem type's last path segment and the detail (hub.Config.Problem: a
// refusal relayed from another process is answered the same way).
func ProblemOf(err error) (status int, slug, detail string) {
	p := problemFor(err)
	return p.Status, path.Base(p.Type), p.Detail
}

func problemFor(err error) Problem {
	p := baseProblem(err)
	var ex ProblemExtras
	if errors.As(err, &ex) {
		if p.Extra == nil {
			p.Extra = map[string]any{}
		}
		for k, v := range ex.ProblemExtra() {
			p.Extra[k] = v
		}
	}
	return p
}

func baseProblem(err error) Problem {
	var fe *canvas.FieldError
	var tp TypedProblem
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return newProblem(http.StatusRequestEntityTooLarge, "too-large", "Request body too large",
			fmt.Sprintf("the request body is over this route's limit of %d bytes; send less, or split it (commands, batches and /mcp: the server's --max-command-bytes; other routes: fixed)", mbe.Limit), nil)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return newProblem(http.StatusRequestTimeout, "request-timeout", "Request timeout",
			"the request did not arrive within the server's read timeout (--read-timeout); send the whole body at once, or ask the operator for a longer timeout", nil)
	case errors.As(err, &tp):
		return newProblem(tp.ProblemStatus(), tp.ProblemSlug(), http.StatusText(tp.ProblemStatus()), tp.Error(), nil)
	case errors.As(err, &fe):
		status, slug, title := http.StatusUnprocessableEntity, "unprocessable", "Command cannot be applied"
		if errors.Is(fe.Kind, canvas.ErrInvalid) {
			status, slug, title = http.StatusBadRequest, "invalid", "Malformed request"
		}
		return newProblem(status, slug, title, fe.Error(), map[string]any{"field": fe.Field})
	case errors.Is(err, canvas.ErrInvalid):
		return newProblem(http.StatusBadRequest, "invalid", "Malformed request", err.Error(), nil)
	case errors.Is(err, canvas.ErrUnprocessable):
		return newProblem(http.StatusUnprocessableEntity, "unprocessable", "Request cannot be processed", err.Error(), nil)
	case errors.Is(err, canvas.ErrUnauthorized):
		return newProblem(http.StatusUnauthorized, "unauthorized", "Unauthorized", err.Error(), nil)
	case errors.Is(err, canvas.ErrForbidden):
		return newProblem(http.StatusForbidden, "forbidden", "Forbidden", err.Error(), nil)
	case errors.Is(err, canvas.ErrNotFound):
		return newProblem(http.StatusNotFound, "not-found", "Not found", err.Error(), nil)
	case errors.Is(err, canvas.ErrAlreadyExists):
		return newProblem(http.StatusConflict, "already-exists", "Already exists", err.Error(), nil)
	case errors.Is(err, canvas.ErrConflict):
		return newProblem(http.StatusConflict, "conflict", "Conflict", err.Error(), nil)
	case errors.Is(err, canvas.ErrTooLarge):
		return newProblem(http.StatusRequestEntityTooLarge, "too-large", "Too large", err.Error(), nil)
	case errors.Is(err, hub.ErrNoHost):
		return newProblem(http.StatusServiceUnavailable, agent.NoHostProblem, "No host browser", err.Error(), nil)
	case errors.Is(err, hub.ErrHostLost):
		return newProblem(http.StatusServiceUnavailable, "host-left", "The host browser left", err.Error()+"; retry: another browser is elected", nil)
	case errors.Is(err, canvas.ErrOutcomeUnknown):
		return newProblem(http.StatusServiceUnavailable, "outcome-unknown", "Outcome unknown",
			"the event store stopped answering after the write was sent, so it may or may not have committed: the outcome is unknown. "+
				"Retry the same request with the same idempotency_key (it will return the original result if it committed)",
			map[string]any{"outcome": "unknown"})
	case errors.Is(err, canvas.ErrNotWritten):
		return newProblem(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
			"the event store is unreachable right now; nothing was written. Retry with backoff",
			map[string]any{"outcome": "not_written"})
	case errors.Is(err, canvas.ErrUnavailable):
		return newProblem(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
			"the event store is unreachable right now; retry with backoff (a write with the same idempotency_key)", nil)
	}
	return newProblem(http.StatusInternalServerError, "internal", "Internal server error",
		"the server failed to handle the request; it has been logged. Retry later", nil)
}

func newProblem(status int, slug, title, detail string, extra map[string]any) Problem {
	return Problem{Type: problemBase + slug, Title: title, Status: status, Detail: detail, Extra: extra}
}

// writeProblem writes err as a problem document; 5xx errors are logged.
func writeProblem(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	p := problemFor(err)
	if p.Status >= 500 && log != nil {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", p.Status, "err", err)
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="canvasd"`)
	}
	if p.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		w.Header().Set("Retry-After", retryAfterSeconds(ra.RetryAfter()))
	}
	if p.Status != http.StatusRequestTimeout { // a body that stalled is not waited for again
		drainUnread(w, r)
	}
	writeJSONType(w, p.Status, "application/problem+json", p)
}

// writeJSON writes v as JSON with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeJSONType(w, status, "application/json", v)
}

func writeJSONType(w http.ResponseWriter, status int, contentType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"type":"` + problemBase + `internal","title":"Internal server error","status":500,"detail":"response encoding failed"}`)
		status, contentType = http.StatusInternalServerError, "application/problem+json"
	}
	setContentType(w, contentType)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// contentTypes are shared header values (net/http never modifies them), so
// that setting one allocates nothing.
var contentTypes = map[string][]string{
	"application/json":         {"application/json"},
	"application/problem+json": {"application/problem+json"},
}

func setContentType(w http.ResponseWriter, contentType string) {
	if v, ok := contentTypes[contentType]; ok {
		w.Header()["Content-Type"] = v
		return
	}
	w.Header().Set("Content-Type", contentType)
}

// writeRaw writes an already-encoded JSON body.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	setContentType(w, "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
