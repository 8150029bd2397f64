package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPErrorsAreProblems: every 4xx of /mcp is a problem document naming
// what was wrong (the SDK answered text/plain); JSON-RPC errors of a
// well-formed request stay inside a 200. A JSON-RPC batch is refused (MCP
// dropped batching in 2025-06-18; the SDK took batches from clients naming
// an older protocol or none).
func TestMCPErrorsAreProblems(t *testing.T) {
	e := newTestEnv(t)
	const accept = "application/json, text/event-stream"
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	cases := []struct {
		name, body, ctype, accept string
		status                    int
		detail                    string
	}{
		{"malformed JSON", `{"jsonrpc":`, "application/json", accept, 400, "malformed"},
		{"not JSON-RPC", `{"a":1}`, "application/json", accept, 400, "2.0"},
		{"empty body", ``, "application/json", accept, 400, "non-empty body"},
		{"unknown notification", `{"jsonrpc":"2.0","method":"notifications/nope"}`, "application/json", accept, 400, "notifications/nope"},
		{"batch", `[` + list + `]`, "application/json", accept, 400, "batches are not accepted"},
		{"batch naming the protocol", ` [` + list + `,` + list + `]`, "application/json", accept, 400, "2025-06-18"},
		{"no Accept", list, "application/json", "", 400, "Accept"},
		{"wrong Content-Type", list, "text/plain", accept, 415, "Content-Type"},
		{"oversized body", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`,
			"application/json", accept, 413, "1048576"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, ctype, body := mcpPost(t, e, c.body, c.ctype, c.accept, "")
			if status != c.status || !strings.HasPrefix(ctype, "application/problem+json") {
				t.Fatalf("status %d %s, want %d problem: %s", status, ctype, c.status, body)
			}
			var p map[string]any
			if err := json.Unmarshal(body, &p); err != nil || p["status"] != float64(c.status) || !strings.Contains(p["detail"].(string), c.detail) {
				t.Fatalf("problem %s does not name %q", body, c.detail)
			}
		})
	}
	t.Run("tool error stays in a 200", func(t *testing.T) {
		status, ctype, body := mcpPost(t, e, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"canvas_get_state","arguments":{"canvas_id":"ghost"}}}`,
			"application/json", accept, "")
		if status != 200 || !strings.HasPrefix(ctype, "application/json") || !bytes.Contains(body, []byte(`"isError":true`)) {
			t.Fatalf("%d %s %s", status, ctype, body)
		}
	})
	t.Run("any Host header", func(t *testing.T) {
		// Behind a reverse proxy the Host is the public name; the bearer token
		// is what guards /mcp.
		if status, _, body := mcpPost(t, e, list, "application/json", accept, "canvas.example.com"); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
	})
}

func mcpPost(t *testing.T, e *testEnv, body, ctype, accept, host string) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testAdmin)
	req.Header.Set("Content-Type", ctype)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	req.Body = io.NopCloser(strings.NewReader(body))
	checkResponse(t, e.spec, req, resp, out)
	return resp.StatusCode, resp.Header.Get("Content-Type"), out
}

// TestMCPUnknownMethod: a request for a method the server does not have gets
// the JSON-RPC error -32601 in a 200, so the SDK's client reads it as an MCP
// error; it got HTTP 400, which the SDK raises as a transport error.
func TestMCPUnknownMethod(t *testing.T) {
	e := newTestEnv(t)
	status, ctype, body := mcpPost(t, e, `{"jsonrpc":"2.0","id":7,"method":"nope/nope","params":{}}`, "application/json", "application/json, text/event-stream", "")
	var resp struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if status != 200 || !strings.HasPrefix(ctype, "application/json") || json.Unmarshal(body, &resp) != nil ||
		resp.ID != 7 || resp.Error.Code != -32601 || !strings.Contains(resp.Error.Message, "nope/nope") {
		t.Fatalf("unknown method: %d %s %s; want a 200 with the JSON-RPC error -32601 for id 7", status, ctype, body)
	}

	// The official SDK's client transport.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{testAdmin, e.srv.Client().Transport}}}
	conn, err := tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id, _ := jsonrpc.MakeID(float64(1))
	if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "resources/nope", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatalf("the SDK's transport failed (an HTTP error, not an MCP error): %v", err)
	}
	msg, err := conn.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	r, ok := msg.(*jsonrpc.Response)
	var jerr *jsonrpc.Error
	if !ok || !errors.As(r.Error, &jerr) || jerr.Code != jsonrpc.CodeMethodNotFound {
		t.Fatalf("the SDK read %#v; want a response with the error -32601", msg)
	}
}

// TestMCPCapabilities: the server, stateless with JSON answers, cannot send
// notifications, so it does not advertise tools.listChanged (it did) nor
// logging.
func TestMCPCapabilities(t *testing.T) {
	e := newTestEnv(t)
	b, _ := json.Marshal(mcpSession(t, e, testAdmin).InitializeResult().Capabilities)
	var caps map[string]map[string]any
	if err := json.Unmarshal(b, &caps); err != nil {
		t.Fatal(err)
	}
	if _, logging := caps["logging"]; caps["tools"] == nil || caps["tools"]["listChanged"] == true || logging {
		t.Fatalf("capabilities %s; want tools without listChanged, no logging", b)
	}
}
