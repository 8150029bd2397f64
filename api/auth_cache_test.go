package api

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestTokenCacheRevocation checks the verified-token cache: a token revoked
// through the API is refused at once; one revoked behind this process's back
// (as another process sharing the store would) is refused once its cache
// entry expires, tokenCacheTTL after it was verified.
func TestTokenCacheRevocation(t *testing.T) {
	e := newTestEnv(t)
	var mu sync.Mutex
	clock := time.Unix(1700000000, 0)
	e.api.auth.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	e.canvas("c")
	status := func(tok string) int { return e.do("GET", "/canvas_commands/snapshot/c", tok, nil).Status }

	viaAPI, actor := e.token("editor", "human")
	if s := status(viaAPI); s != http.StatusOK {
		t.Fatalf("fresh token: %d", s)
	}
	e.must(http.StatusNoContent, "DELETE", "/api/tokens/"+actor, testAdmin, nil)
	if s := status(viaAPI); s != http.StatusUnauthorized {
		t.Fatalf("token revoked through the API, still cached: %d", s)
	}

	behind, actor2 := e.token("editor", "human")
	if s := status(behind); s != http.StatusOK {
		t.Fatalf("fresh token: %d", s)
	}
	if err := e.st.RevokeToken(context.Background(), actor2); err != nil {
		t.Fatal(err)
	}
	if s := status(behind); s != http.StatusOK {
		t.Fatalf("token revoked in the store within the cache's lifetime: %d (the cache was not used)", s)
	}
	advance(tokenCacheTTL)
	if s := status(behind); s != http.StatusUnauthorized {
		t.Fatalf("token revoked in the store, %v later: %d", tokenCacheTTL, s)
	}
}
