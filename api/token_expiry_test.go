package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/store"
)

// TestTokenExpiry: POST /api/tokens with expires_in mints a token that
// expires; an expired token is refused (401) on every route, its page
// tickets too; expires_in outside its bounds is a problem naming it.
func TestTokenExpiry(t *testing.T) {
	e := newHostTestEnv(t, host.Config{})
	before := time.Now()
	grant := e.must(201, "POST", "/api/tokens", testAdmin, map[string]any{"role": "viewer", "expires_in": 3600})
	exp, err := time.Parse(time.RFC3339Nano, grant["expires_at"].(string))
	if err != nil || exp.Before(before.Add(time.Hour)) || exp.After(time.Now().Add(time.Hour)) {
		t.Fatalf("expires_at %v (%v), want an hour from now", grant["expires_at"], err)
	}
	e.must(200, "GET", "/api/canvases", grant["token"].(string), nil)
	forever := e.must(201, "POST", "/api/tokens", testAdmin, map[string]any{"role": "viewer"})
	if _, ok := forever["expires_at"]; ok {
		t.Fatalf("a token without expires_in has an expiry: %v", forever)
	}
	listed := map[string]any{}
	for _, tok := range e.must(200, "GET", "/api/tokens", testAdmin, nil)["tokens"].([]any) {
		m := tok.(map[string]any)
		listed[m["actor_id"].(string)] = m["expires_at"]
	}
	if listed[grant["actor_id"].(string)] != grant["expires_at"] || listed[forever["actor_id"].(string)] != nil {
		t.Fatalf("GET /api/tokens expiries %v", listed)
	}

	for _, bad := range []any{-1, canvas.MaxTokenLifetime + 1} {
		p := e.must(422, "POST", "/api/tokens", testAdmin, map[string]any{"role": "viewer", "expires_in": bad})
		if p["field"] != "expires_in" || !strings.Contains(p["detail"].(string), "315360000") {
			t.Errorf("expires_in %v: %v", bad, p)
		}
	}
	for _, bad := range []any{1.5, "60"} {
		e.must(400, "POST", "/api/tokens", testAdmin, map[string]any{"role": "viewer", "expires_in": bad})
	}

	// A token whose expiry has passed (not yet pruned) is refused, and so
	// are the page tickets minted for it.
	e.must(201, "PUT", "/api/host/exp/files/index.html", testAdmin, "<p>page</p>")
	secret, hash := NewToken()
	rec := store.TokenRecord{Hash: hash, ActorID: "user-expired", ActorType: canvas.ActorHuman, Role: canvas.RoleViewer,
		CreatedAt: time.Now().Add(-time.Hour), ExpiresAt: time.Now().Add(-time.Second)}
	if err := e.st.CreateToken(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	p := e.must(401, "GET", "/api/canvases", secret, nil)
	if !strings.Contains(p["detail"].(string), "expired") {
		t.Errorf("401 for an expired token does not say so: %v", p["detail"])
	}
	e.must(401, "GET", "/sse/host/exp?access_token="+secret, "", nil)
	ticket, err := e.host.MintTicket("exp", hash)
	if err != nil {
		t.Fatal(err)
	}
	status, hdr, body := e.get("/host/exp/~"+ticket+"/index.html", nil)
	wantTicketProblem(t, "ticket of an expired token", status, hdr, body, 401, "ticket-revoked")

	// A verified token is trusted for a moment without the store, but never
	// past its expiry.
	clock := &testClock{now: time.Now()}
	e.api.auth.now = clock.Now
	secret, hash = NewToken()
	rec = store.TokenRecord{Hash: hash, ActorID: "user-brief", ActorType: canvas.ActorHuman, Role: canvas.RoleViewer,
		CreatedAt: clock.Now(), ExpiresAt: clock.Now().Add(300 * time.Millisecond)}
	if err := e.st.CreateToken(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	e.must(200, "GET", "/api/canvases", secret, nil)
	clock.advance(400 * time.Millisecond) // still within the cache's second
	e.must(401, "GET", "/api/canvases", secret, nil)
}

// TestStreamsEndWithTheirToken: revoking a token through the API ends its
// open canvas and host streams (a reset saying why, then the connection
// closes, and the slots are free), and a token's stream ends when the token
// expires: no stream outlives the right to open it.
func TestStreamsEndWithTheirToken(t *testing.T) {
	e := newTestEnv(t)
	c := e.canvas("c_token_streams")
	ended := func(name string, s *sseStream, why string) {
		t.Helper()
		ev := s.next()
		for ev.Event != "reset" {
			ev = s.next()
		}
		if reason, _ := ev.json(t)["reason"].(string); !strings.Contains(reason, why) {
			t.Fatalf("%s stream: reset %q, want one saying %q", name, ev.Data, why)
		}
		endsAfterReset(t, s, name+" stream")
	}
	tok, actor := e.token(canvas.RoleViewer, canvas.ActorHuman)
	cs := e.stream("/sse/canvas/"+c, tok, nil)
	if ev := cs.next(); ev.Event != "caught_up" {
		t.Fatalf("first event %+v", ev)
	}
	hs := e.stream("/sse/host/"+c, tok, nil)
	e.must(http.StatusNoContent, "DELETE", "/api/tokens/"+actor, testAdmin, nil)
	ended("canvas", cs, "revoked")
	ended("host", hs, "revoked")
	waitUntil(t, 10*time.Second, "the revoked token's slots are free", func() bool { return e.api.streams.count(actor) == 0 })

	short := e.must(201, "POST", "/api/tokens", testAdmin, map[string]any{"role": "viewer", "actor_type": "human", "expires_in": 1})
	s := e.stream("/sse/canvas/"+c, short["token"].(string), nil)
	if ev := s.next(); ev.Event != "caught_up" {
		t.Fatalf("first event %+v", ev)
	}
	ended("expiring", s, "expired")
}
