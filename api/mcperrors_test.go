package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMCPErrorsAreProblems: every 4xx of /mcp is a problem document naming
// what was wrong (the SDK answered text/plain); JSON-RPC errors of a
// well-formed request stay inside a 200.
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
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"nope/nope"}`, "application/json", accept, 400, "nope/nope"},
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
