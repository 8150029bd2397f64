package api

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestCreateCanvasWithoutBody: the request body of POST /api/canvases is
// optional (openapi.yaml): without one (none at all, or chunked and empty)
// the server mints an id; a body that is there must still be valid JSON.
func TestCreateCanvasWithoutBody(t *testing.T) {
	e := newTestEnv(t)
	minted := regexp.MustCompile(`^c_[0-9a-f]{32}$`)
	m := e.must(201, "POST", "/api/canvases", testAdmin, nil)
	if id, _ := m["canvas_id"].(string); !minted.MatchString(id) || m["title"] != "" {
		t.Fatalf("canvas created without a body: %v", m)
	}
	e.must(200, "GET", "/api/canvases/"+m["canvas_id"].(string), testAdmin, nil)

	// Chunked, so without a Content-Length, and empty.
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/canvases", struct{ *strings.Reader }{strings.NewReader("")})
	req.Header.Set("Authorization", "Bearer "+testAdmin)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("chunked empty body: %d", resp.StatusCode)
	}

	for _, bad := range []string{"{", "x", `{"title":5}`, `{"canvas_id":"c_1"} {}`, "null x"} {
		e.must(400, "POST", "/api/canvases", testAdmin, bad)
	}
}

// TestLimitsCountCharacters: the limits stated in characters count
// characters (Unicode code points), not bytes: a canvas title of 500, a
// snapshot label and a token name of 200; one more is refused naming the
// field and the limit in characters.
func TestLimitsCountCharacters(t *testing.T) {
	e := newTestEnv(t)
	c := e.canvas("c_chars")
	for _, tc := range []struct {
		what, path, field string
		limit, status     int
		body              func(v string) map[string]any
	}{
		{"canvas title", "/api/canvases", "title", 500, 422, func(v string) map[string]any { return map[string]any{"title": v} }},
		{"snapshot label", "/api/canvases/" + c + "/snapshots", "label", 200, 400, func(v string) map[string]any { return map[string]any{"label": v} }},
		{"token name", "/api/tokens", "name", 200, 422, func(v string) map[string]any { return map[string]any{"role": "viewer", "name": v} }},
	} {
		for _, ch := range []string{"é", "界", "🎨"} {
			ok := strings.Repeat(ch, tc.limit)
			m := e.must(201, "POST", tc.path, testAdmin, tc.body(ok))
			if tc.field != "name" && m[tc.field] != ok { // a token's name is shown in its listing only
				t.Errorf("%s of %d %q: stored as %v", tc.what, tc.limit, ch, m[tc.field])
			}
			p := e.must(tc.status, "POST", tc.path, testAdmin, tc.body(ok+ch))
			if p["field"] != tc.field || !strings.Contains(p["detail"].(string), "characters") {
				t.Errorf("%s of %d %q: %v", tc.what, tc.limit+1, ch, p)
			}
		}
	}
}
