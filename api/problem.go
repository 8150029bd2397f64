package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/canvasd/canvasd/canvas"
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

// problemFor maps an error to its problem document, with any members the
// error offers through ProblemExtras. It is the one place where errors become
// HTTP statuses.
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
			fmt.Sprintf("the request body is over the limit of %d bytes; send less, or split it (the limit is configurable on the server)", mbe.Limit), nil)
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
	case errors.Is(err, canvas.ErrUnavailable):
		return newProblem(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
			"the event store is unreachable right now; retry with backoff (nothing was written)", nil)
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
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// decodeJSON strictly decodes a request body into v; errors are 400s naming the
// problem, or 413 when the body is over the handler's limit.
func decodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return canvas.Invalid("body", "not valid JSON for this endpoint: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return canvas.Invalid("body", "trailing data after the JSON object")
	}
	return nil
}

// writeRaw writes an already-encoded JSON body.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
