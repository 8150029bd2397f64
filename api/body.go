package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// Request bodies. Every route that takes JSON is wrapped in jsonBody (JSON
// lines: jsonLinesBody), which checks the body's media type, reads the
// whole body under the route's limit and checks its text before the
// handler runs; handlers then read it with readBody or decodeJSON. A route
// without a body uses noBody; raw uploads (host files) use limitBody. So a
// new JSON route gets the 415, 413, 408 and 400 rules by being wrapped.

// jsonBody reads a JSON request body of at most n bytes and checks its type
// and text (canvas.CheckJSONText) before next runs: a body whose
// Content-Type is not application/json (or missing, unless the body is
// empty) is a 415, over n a 413, a body that does not arrive within the
// server's read timeout a 408, invalid UTF-8, NUL or a lone surrogate a
// 400, nesting deeper than canvas.MaxJSONDepth a 422 naming the field. A
// refused body never reaches next, so nothing is written.
func (s *Server) jsonBody(n int64, next http.HandlerFunc) http.HandlerFunc {
	return s.checkedBody(n, jsonType, next)
}

// jsonLinesBody is jsonBody for a body of JSON lines (one JSON value a
// line): its Content-Type may be any of jsonLinesType's, or missing.
func (s *Server) jsonLinesBody(n int64, next http.HandlerFunc) http.HandlerFunc {
	return s.checkedBody(n, jsonLinesType, next)
}

func (s *Server) checkedBody(n int64, mt bodyType, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		if err := mt.check(ct); err != nil && (ct != "" || r.ContentLength > 0) {
			s.problem(w, r, err) // the body is not read: refused before it is
			return
		}
		b, err := readAll(http.MaxBytesReader(w, r.Body, n), min(r.ContentLength, n))
		if err == nil && ct == "" && len(bytes.TrimSpace(b)) > 0 {
			err = mt.check(ct) // sent chunked, without a type
		}
		if err == nil {
			err = canvas.CheckJSONText(b)
		}
		if err != nil {
			s.problem(w, r, err)
			return
		}
		r.Body = &checkedBody{Reader: bytes.NewReader(b), data: b}
		next(w, r)
	}
}

// bodyType is the media types a body route takes.
type bodyType struct {
	accept    map[string]bool // media types, lower case, without parameters
	want      string          // what to send, for the problem's detail
	missingOK bool            // a body without Content-Type is taken too
}

var (
	jsonType      = bodyType{accept: map[string]bool{"application/json": true}, want: "application/json"}
	jsonLinesType = bodyType{accept: map[string]bool{"application/jsonl": true, "application/x-ndjson": true,
		"application/json-lines": true, "application/json": true, "text/plain": true},
		want: "application/jsonl (one JSON value per line)", missingOK: true}
	// importFileType is what an import's body (the file itself) may be sent as.
	importFileType = bodyType{accept: map[string]bool{"application/json": true, "application/vnd.excalidraw+json": true,
		"text/plain": true, "text/vnd.mermaid": true, "application/octet-stream": true},
		want:      "the file's own type: application/json (.canvas, .excalidraw), text/vnd.mermaid or text/plain (.mmd), or application/octet-stream",
		missingOK: true}
)

// check returns a 415 error unless the Content-Type header value ct names
// one of t's media types, in UTF-8 (a charset parameter other than utf-8 is
// refused: canvasd reads bodies as UTF-8).
func (t bodyType) check(ct string) error {
	if ct == "" {
		if t.missingOK {
			return nil
		}
		return &mediaTypeError{reason: "the request has a body but no Content-Type; send Content-Type: " + t.want}
	}
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case err != nil || !t.accept[mt]:
		return &mediaTypeError{reason: fmt.Sprintf("Content-Type %q is not accepted here; send Content-Type: %s", ct, t.want)}
	case params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8"):
		return &mediaTypeError{reason: fmt.Sprintf("charset %q is not accepted: send the body as UTF-8 (Content-Type: %s, or with charset=utf-8)", params["charset"], t.want)}
	}
	return nil
}

// mediaTypeError is a body of a media type the route does not take: 415.
type mediaTypeError struct{ reason string }

func (e *mediaTypeError) Error() string { return e.reason }

// ProblemStatus is 415.
func (e *mediaTypeError) ProblemStatus() int { return http.StatusUnsupportedMediaType }

// ProblemSlug names the problem type.
func (e *mediaTypeError) ProblemSlug() string { return "unsupported-media-type" }

// ProblemExtra names the header at fault.
func (e *mediaTypeError) ProblemExtra() map[string]any {
	return map[string]any{"field": "Content-Type"}
}

// noBody serves a POST that takes no body: an empty body or {} is accepted,
// anything else is a 400 and never reaches next.
func (s *Server) noBody(next http.HandlerFunc) http.HandlerFunc {
	return s.jsonBody(4<<10, func(w http.ResponseWriter, r *http.Request) {
		if err := decodeOptionalJSON(r, &struct{}{}); err != nil {
			s.problem(w, r, err)
			return
		}
		next(w, r)
	})
}

// limitBody caps a handler's raw (not JSON) request body; reading past it is a 413.
func limitBody(n int64, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, n)
		next(w, r)
	}
}

// Most HTTP clients read the answer only once they have sent the whole
// body, and net/http discards at most 256 KiB of a body the handler left
// unread before it closes the connection: a client still sending a larger
// body to a route that refused it (a bad token, a 403, a 404) would see a
// connection reset instead of the problem document. drainUnread reads and
// discards what is left of the body first, up to maxDrainedBody and for
// at most maxDrainTime (a body announced larger is left to the reset).
const (
	maxDrainedBody = 32 << 20 // above every default body limit (the largest, invoke's, is 16 MiB)
	maxDrainTime   = 2 * time.Second
)

// drainUnread discards the unread rest of r's body (see maxDrainedBody)
// before an error is answered. A body jsonBody has read, or one already
// read to its end or its limit, costs nothing. A client that sent
// "Expect: 100-continue" waits for the answer before it sends the body, so
// its body is not asked for (reading it would send "100 Continue").
func drainUnread(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength > maxDrainedBody ||
		strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		return
	}
	if _, ok := r.Body.(*checkedBody); ok {
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(maxDrainTime)) != nil {
		return // not a connection whose reads can be bounded: leave it to net/http
	}
	_, _ = io.CopyN(io.Discard, r.Body, maxDrainedBody)
}

// checkedBody is a body jsonBody has read and checked.
type checkedBody struct {
	*bytes.Reader
	data []byte
}

func (*checkedBody) Close() error { return nil }

// readBody returns the whole request body (without a copy when jsonBody has
// read it).
func readBody(r *http.Request) ([]byte, error) {
	if b, ok := r.Body.(*checkedBody); ok {
		return b.data, nil
	}
	return readAll(r.Body, r.ContentLength)
}

// maxPreallocatedBody bounds the buffer readAll allocates from a body's
// announced length (a larger body grows its buffer as it arrives).
const maxPreallocatedBody = 1 << 20

// readAll reads a body announced as size bytes (unknown when size ≤ 0),
// into one buffer of that size when the announcement is right and small; a
// body over its limit (413) or past the read timeout (408) keeps its error
// for the problem mapper, any other failure is a 400.
func readAll(body io.Reader, size int64) ([]byte, error) {
	capacity := 512
	if size > 0 && size <= maxPreallocatedBody {
		capacity = int(size) + 1 // +1: the read that finds the end needs room
	}
	b := make([]byte, 0, capacity)
	var err error
	for {
		var n int
		n, err = body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			break
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow, as io.ReadAll does
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, err
	}
	if err != nil {
		return nil, canvas.Invalid("body", "could not read the request body: %v", err)
	}
	return b, nil
}

// decodeOptionalJSON is decodeJSON for a body the route does not require:
// an empty (or blank) body leaves v as it is.
func decodeOptionalJSON(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return err
	}
	return decodeJSON(r, v)
}

// decodeJSON strictly decodes a request body into v; errors are 400s naming
// the problem (or the body's 413 or 408).
func decodeJSON(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return canvas.Invalid("body", "not valid JSON for this endpoint: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return canvas.Invalid("body", "trailing data after the JSON object")
	}
	return nil
}
