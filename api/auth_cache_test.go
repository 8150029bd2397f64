package api

import (
	"context"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
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

// heldTokenReads pauses the first armed TokenByHash after it read the
// record, until release is closed.
type heldTokenReads struct {
	store.Store
	mu      sync.Mutex
	armed   bool
	read    chan struct{}
	release chan struct{}
}

func (s *heldTokenReads) TokenByHash(ctx context.Context, h []byte) (store.TokenRecord, error) {
	rec, err := s.Store.TokenByHash(ctx, h)
	s.mu.Lock()
	armed := s.armed
	s.armed = false
	s.mu.Unlock()
	if armed {
		close(s.read)
		<-s.release
	}
	return rec, err
}

// TestTokenRevokedDuringItsCheck: a request whose token check read the
// token just before it was revoked through the API does not put it back in
// the cache: once the revoke answered 204, the token is refused.
func TestTokenRevokedDuringItsCheck(t *testing.T) {
	base, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "canvasd.db"))
	if err != nil {
		t.Fatal(err)
	}
	st := &heldTokenReads{Store: base, read: make(chan struct{}), release: make(chan struct{})}
	e := newTestEnvOn(t, st)
	e.canvas("c")
	tok, actor := e.token("editor", "human")
	st.mu.Lock()
	st.armed = true
	st.mu.Unlock()
	inFlight := make(chan int)
	go func() { inFlight <- e.do("GET", "/canvas_commands/snapshot/c", tok, nil).Status }()
	<-st.read
	e.must(http.StatusNoContent, "DELETE", "/api/tokens/"+actor, testAdmin, nil)
	close(st.release)
	<-inFlight // began before the revoke: either answer is right
	if s := e.do("GET", "/canvas_commands/snapshot/c", tok, nil).Status; s != http.StatusUnauthorized {
		t.Fatalf("a token revoked through the API (204) is accepted afterwards: %d", s)
	}
}
