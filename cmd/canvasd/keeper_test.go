package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/canvasd/canvasd/api"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

// TestTokenKeeper: a kept token is stored with an expiry ttl ahead and
// renewed; one that disappears (revoked) is minted anew under the same actor
// with a new secret, which the token's Transport sends from then on; expired
// tokens of anyone are pruned; Release revokes.
func TestTokenKeeper(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "canvasd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const ttl = time.Hour
	k := newTokenKeeper(st, ttl, slog.New(slog.DiscardHandler))
	tok, err := k.Mint(ctx, canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent, Name: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	stored := func() store.TokenRecord {
		t.Helper()
		rec, err := st.TokenByActor(ctx, tok.req.ActorID)
		if err != nil {
			t.Fatalf("the kept token: %v", err)
		}
		return rec
	}
	first := stored()
	if d := time.Until(first.ExpiresAt); d < ttl-time.Minute || d > ttl {
		t.Fatalf("a kept token expires in %v, want %v", d, ttl)
	}
	// The server sees the current secret.
	auth := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { auth <- r.Header.Get("Authorization") }))
	defer srv.Close()
	hc := &http.Client{Transport: tok.Transport(http.DefaultTransport)}
	get := func() string {
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return <-auth
	}
	if got := get(); got != "Bearer "+*tok.secret.Load() || string(api.HashToken(*tok.secret.Load())) != string(first.Hash) {
		t.Fatalf("Authorization %q does not carry the stored token's secret", got)
	}

	// Someone's expired token goes at the next tick; the kept one is renewed.
	_, hash := api.NewToken()
	if err := st.CreateToken(ctx, store.TokenRecord{Hash: hash, ActorID: "svc-old", ActorType: canvas.ActorService, Role: canvas.RoleViewer,
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	// The kept token is about to expire; the tick moves its expiry a ttl ahead.
	soon := time.Now().Add(time.Minute)
	if err := st.RenewToken(ctx, tok.req.ActorID, soon); err != nil {
		t.Fatal(err)
	}
	k.tick(ctx)
	if _, err := st.TokenByActor(ctx, "svc-old"); err == nil {
		t.Fatal("an expired token survived the tick")
	}
	if d := time.Until(stored().ExpiresAt); d < ttl-time.Minute {
		t.Fatalf("the kept token was not renewed: it expires in %v, want about %v", d, ttl)
	}

	// Revoked behind the keeper's back: a new secret for the same actor.
	oldAuth := get()
	if err := st.RevokeToken(ctx, tok.req.ActorID); err != nil {
		t.Fatal(err)
	}
	k.tick(ctx)
	again := stored()
	if string(again.Hash) == string(first.Hash) || again.ActorID != first.ActorID {
		t.Fatalf("after a revoke the keeper stored %x for %s, want a new secret for %s", again.Hash, again.ActorID, first.ActorID)
	}
	if got := get(); got == oldAuth || string(api.HashToken(got[len("Bearer "):])) != string(again.Hash) {
		t.Fatal("the Transport still sends the revoked secret")
	}

	k.Release(ctx, tok)
	if _, err := st.TokenByActor(ctx, tok.req.ActorID); err == nil {
		t.Fatal("Release did not revoke the token")
	}
}
