package api

import (
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// TestMintedTokenNeverOutlivesItsMinter: a token that expires mints only
// tokens that expire no later than itself (a 403 problem otherwise, also
// when expires_in is absent), scoped or not; a token that never expires
// mints tokens that never expire.
func TestMintedTokenNeverOutlivesItsMinter(t *testing.T) {
	e := newTestEnv(t)
	c := e.canvas("c_mint")
	for _, scope := range [][]string{nil, {c}} {
		parent := e.must(201, "POST", "/api/tokens", testAdmin, map[string]any{"role": "admin", "canvases": scope, "expires_in": 3600})
		minter := parent["token"].(string)
		parentExp, err := time.Parse(time.RFC3339Nano, parent["expires_at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range []map[string]any{
			{"role": "viewer", "canvases": []string{c}},                      // never expires
			{"role": "viewer", "canvases": []string{c}, "expires_in": 3700},  // after the minter
			{"role": "admin", "canvases": []string{c}, "expires_in": 7200},   // after the minter
			{"role": "viewer", "canvases": []string{c}, "expires_in": 86400}, // after the minter
		} {
			p := e.must(403, "POST", "/api/tokens", minter, req)
			if d := p["detail"].(string); !strings.Contains(d, "expires") || !strings.Contains(d, "expires_in") {
				t.Errorf("scope %v, mint %v: the detail does not say the minter's expiry and the expires_in to use: %s", scope, req, d)
			}
		}
		child := e.must(201, "POST", "/api/tokens", minter, map[string]any{"role": "editor", "canvases": []string{c}, "expires_in": 1800})
		childExp, err := time.Parse(time.RFC3339Nano, child["expires_at"].(string))
		if err != nil || childExp.After(parentExp) {
			t.Fatalf("scope %v: child expires at %v (%v), after its minter (%v)", scope, child["expires_at"], err, parentExp)
		}
		e.must(200, "GET", "/api/canvases/"+c, child["token"].(string), nil)
	}
	// A stored token that never expires may mint one that never expires.
	forever, _ := e.token(canvas.RoleAdmin, canvas.ActorHuman)
	if m := e.must(201, "POST", "/api/tokens", forever, map[string]any{"role": "viewer"}); m["expires_at"] != nil {
		t.Fatalf("a token minted by a token that never expires expires: %v", m)
	}
}
