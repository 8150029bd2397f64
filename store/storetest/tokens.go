package storetest

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// testTokenExpiry checks token lifetimes: the expiry round-trips (zero:
// never), reads return expired tokens (callers refuse them), RenewToken
// moves it, PruneTokens deletes only what expired by the given time.
func testTokenExpiry(t *testing.T, h *harness) {
	ctx := ctxT(t)
	tok := func(actor string, expires time.Time) store.TokenRecord {
		hash := sha256.Sum256([]byte("secret of " + actor))
		return store.TokenRecord{Hash: hash[:], ActorID: actor, ActorType: canvas.ActorService, Role: canvas.RoleEditor,
			CreatedAt: t0, ExpiresAt: expires}
	}
	forever, soon, later := tok("svc-forever", time.Time{}), tok("svc-soon", t0.Add(time.Minute)), tok("svc-later", t0.Add(time.Hour))
	for _, r := range []store.TokenRecord{forever, soon, later} {
		if err := h.s.CreateToken(ctx, r); err != nil {
			t.Fatalf("CreateToken(%s): %v", r.ActorID, err)
		}
	}
	for _, want := range []store.TokenRecord{forever, soon, later} {
		got, err := h.s.TokenByHash(ctx, want.Hash)
		if err != nil || !sameTime(got.ExpiresAt, want.ExpiresAt) || got.ExpiresAt.IsZero() != want.ExpiresAt.IsZero() {
			t.Fatalf("TokenByHash(%s) expires %v (%v), want %v", want.ActorID, got.ExpiresAt, err, want.ExpiresAt)
		}
	}
	if soon.Expired(t0) || !soon.Expired(t0.Add(time.Minute)) || forever.Expired(t0.Add(1000*time.Hour)) {
		t.Fatal("TokenRecord.Expired disagrees with its expiry")
	}
	// Renewing moves the expiry, also of a token that already expired.
	renewed := t0.Add(2 * time.Hour)
	if err := h.s.RenewToken(ctx, soon.ActorID, renewed); err != nil {
		t.Fatalf("RenewToken: %v", err)
	}
	if got, err := h.s.TokenByActor(ctx, soon.ActorID); err != nil || !sameTime(got.ExpiresAt, renewed) {
		t.Fatalf("expiry after RenewToken = %v (%v), want %v", got.ExpiresAt, err, renewed)
	}
	wantErr(t, "RenewToken of a missing actor", h.s.RenewToken(ctx, "svc-nobody", renewed), canvas.ErrNotFound)

	// Pruning at a time deletes what expired by then, nothing else.
	n, err := h.s.PruneTokens(ctx, t0.Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("PruneTokens at +1h = %d, %v; want 1 (svc-later)", n, err)
	}
	_, err = h.s.TokenByHash(ctx, later.Hash)
	wantErr(t, "TokenByHash of a pruned token", err, canvas.ErrNotFound)
	wantErr(t, "RenewToken of a pruned token", h.s.RenewToken(ctx, later.ActorID, renewed), canvas.ErrNotFound)
	for _, r := range []store.TokenRecord{forever, soon} {
		if _, err := h.s.TokenByHash(ctx, r.Hash); err != nil {
			t.Fatalf("PruneTokens deleted %s: %v", r.ActorID, err)
		}
	}
	if n, err := h.s.PruneTokens(ctx, t0.Add(1000*time.Hour)); err != nil || n != 1 {
		t.Fatalf("PruneTokens far ahead = %d, %v; want 1 (svc-soon; svc-forever never expires)", n, err)
	}
	if _, err := h.s.TokenByHash(ctx, forever.Hash); err != nil {
		t.Fatalf("a token without an expiry was pruned: %v", err)
	}
}
