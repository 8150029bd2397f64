package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// mcpProblems wraps the MCP transport so that every 4xx/5xx it answers is a
// problem document, like every other canvasd error: the SDK writes its
// refusals (malformed JSON-RPC, wrong Accept or Content-Type, an unknown
// method, an oversized body) as text/plain, some as a JSON-RPC error with a
// 4xx status. JSON-RPC errors inside a 200 (a tool error, a protocol error
// of a well-formed request) stay where the MCP specification puts them.
//
// Two refusals are canvasd's own, before the SDK sees the request: a JSON-RPC
// batch (an array of messages), which MCP removed in 2025-06-18, is a 400
// problem whatever protocol version the client names (the SDK accepted
// batches from clients naming no version or an older one). And a request
// for a method the server does not have gets the JSON-RPC error -32601
// (method not found) in a 200, as JSON-RPC says, so that SDKs raise an MCP
// error rather than a transport error (the SDK answered such a request
// with HTTP 400).
func (s *Server) mcpProblems(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg, err := readBody(r) // read and checked by jsonBody
		if err != nil {
			s.problem(w, r, err)
			return
		}
		if trimmed := bytes.TrimLeft(msg, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
			s.problem(w, r, &mcpRefusal{status: http.StatusBadRequest, slug: "invalid",
				msg: "JSON-RPC batches are not accepted: MCP removed batching in its 2025-06-18 revision; " + mcpUsage})
			return
		}
		pw := &mcpProblemWriter{ResponseWriter: w}
		next.ServeHTTP(pw, r)
		if pw.status == 0 {
			return
		}
		for _, h := range []string{"Content-Type", "Content-Length", "X-Content-Type-Options"} {
			w.Header().Del(h)
		}
		if resp := methodNotFound(pw.status, pw.body.Bytes(), msg); resp != nil {
			writeRaw(w, http.StatusOK, resp)
			return
		}
		s.problem(w, r, mcpTransportError(pw.status, pw.body.Bytes()))
	})
}

// sdkNotHandled starts the SDK's refusal of a method it does not handle
// (TestMCPUnknownMethod fails if the SDK changes it).
const sdkNotHandled = "JSON RPC not handled"

// methodNotFound returns the JSON-RPC error response -32601 for the request
// msg when the SDK refused it (status, body) because it does not handle its
// method, and msg is a call (it has an id to answer); nil otherwise.
func methodNotFound(status int, body, msg []byte) []byte {
	if status != http.StatusBadRequest || !bytes.HasPrefix(bytes.TrimSpace(body), []byte(sdkNotHandled)) {
		return nil
	}
	m, err := jsonrpc.DecodeMessage(msg)
	req, ok := m.(*jsonrpc.Request)
	if err != nil || !ok || !req.IsCall() {
		return nil
	}
	out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: fmt.Sprintf("method %q not found: canvasd's MCP server answers initialize, ping, tools/list and tools/call (the canvas_* tools)", req.Method)}})
	if err != nil {
		return nil
	}
	return out
}

// mcpProblemWriter passes a response through unless its status is an error
// without a problem document: then it keeps status and body (up to
// maxMCPErrorBody) for mcpProblems to rewrite.
type mcpProblemWriter struct {
	http.ResponseWriter
	wroteHeader bool
	status      int // the error status being rewritten; 0 while passing through
	body        bytes.Buffer
}

const maxMCPErrorBody = 4 << 10

func (w *mcpProblemWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	if code >= 400 && !strings.HasPrefix(w.Header().Get("Content-Type"), "application/problem+json") {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *mcpProblemWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.status != 0 {
		if room := maxMCPErrorBody - w.body.Len(); room > 0 {
			w.body.Write(b[:min(len(b), room)])
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes through only while the response is not being rewritten.
func (w *mcpProblemWriter) Flush() {
	if w.status == 0 {
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *mcpProblemWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// mcpTransportError turns a transport refusal into the error the problem
// mapper turns back into status, with the transport's own message (or a
// JSON-RPC error's message) as the detail and what a client must send.
func mcpTransportError(status int, body []byte) error {
	msg := strings.TrimSpace(string(body))
	var rpc struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &rpc) == nil && rpc.Error != nil {
		msg = rpc.Error.Message
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	switch {
	case status == http.StatusRequestEntityTooLarge:
		return &mcpRefusal{status: status, slug: "too-large", msg: msg + "; send less (the limit is the server's --max-command-bytes)"}
	case status >= 500:
		return errors.New("mcp transport: " + msg) // logged; the client sees a generic 500
	case status == http.StatusUnsupportedMediaType:
		return &mcpRefusal{status: status, slug: "unsupported-media-type", msg: msg + "; " + mcpUsage}
	case status == http.StatusForbidden:
		return &mcpRefusal{status: status, slug: "forbidden", msg: msg}
	case status == http.StatusNotFound:
		return &mcpRefusal{status: status, slug: "not-found", msg: msg + "; " + mcpUsage}
	case status == http.StatusMethodNotAllowed:
		return &mcpRefusal{status: status, slug: "method-not-allowed", msg: msg + "; " + mcpUsage}
	}
	return &mcpRefusal{status: status, slug: "invalid", msg: msg + "; " + mcpUsage}
}

const mcpUsage = "/mcp speaks MCP over streamable HTTP, stateless: POST one JSON-RPC 2.0 message (initialize, tools/list, tools/call, ...) " +
	"with Content-Type: application/json and Accept: application/json, text/event-stream"

// mcpRefusal is a refusal of the MCP transport (a TypedProblem).
type mcpRefusal struct {
	status int
	slug   string
	msg    string
}

func (e *mcpRefusal) Error() string       { return e.msg }
func (e *mcpRefusal) ProblemStatus() int  { return e.status }
func (e *mcpRefusal) ProblemSlug() string { return e.slug }
