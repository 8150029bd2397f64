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

// TestCanvasIDCannotShadowARoute: a canvas may not be named after a word of
// the route table where a canvas id stands in another route (a canvas named
// "snapshot" had GET /canvas_commands/snapshot/events answered with the
// snapshot of a canvas named "events"): 422 naming canvas_id, nothing
// created. The words come from the route table itself.
func TestCanvasIDCannotShadowARoute(t *testing.T) {
	e := newTestEnv(t)
	words, err := shadowingIDs(e.api.Routes(), "canvas_id")
	if err != nil {
		t.Fatal(err)
	}
	if !words["snapshot"] {
		t.Fatalf("shadowing ids %v lack snapshot", words)
	}
	for w := range words {
		p := e.must(422, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": w})
		if p["field"] != "canvas_id" || !strings.Contains(p["detail"].(string), "shadow") {
			t.Errorf("canvas %q: %v", w, p)
		}
		e.must(404, "GET", "/api/canvases/"+w, testAdmin, nil)
	}
	// So the snapshot route is never ambiguous.
	e.canvas("events")
	if m := e.snapshot("events"); m["canvas_id"] != "events" {
		t.Errorf("snapshot of events: %v", m)
	}
}
