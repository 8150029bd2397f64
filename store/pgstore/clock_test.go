package pgstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// testClock is a clock a test sets by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// TestTimesComeFromTheInjectedClock: every time the store writes itself —
// the creation of a canvas, token, named snapshot or idempotency record given
// without one, an agent session's claim and cancellation — is read from
// WithNow's clock, set here years away from the wall clock (and the
// database's now()).
func TestTimesComeFromTheInjectedClock(t *testing.T) {
	t0 := time.Date(2001, 2, 3, 4, 5, 6, 789000000, time.UTC)
	clk := &testClock{t: t0}
	s := openTest(t, WithNow(clk.Now))
	ctx := context.Background()

	if err := s.CreateCanvas(ctx, canvas.Canvas{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.GetCanvas(ctx, "c"); err != nil || !c.CreatedAt.Equal(t0) {
		t.Errorf("canvas created at %v (%v), want %v", c.CreatedAt, err, t0)
	}

	if err := s.CreateToken(ctx, store.TokenRecord{Hash: []byte("h1"), ActorID: "a1", ActorType: canvas.ActorService, Role: canvas.RoleEditor}); err != nil {
		t.Fatal(err)
	}
	if tok, err := s.TokenByActor(ctx, "a1"); err != nil || !tok.CreatedAt.Equal(t0) {
		t.Errorf("token created at %v (%v), want %v", tok.CreatedAt, err, t0)
	}

	t1 := t0.Add(time.Hour)
	clk.Set(t1)
	idem := []store.IdempotencyRecord{{Key: "k", Fingerprint: "fp", Outcome: store.OutcomeApplied, Result: []byte(`{}`), Rev: 1}}
	if err := s.Append(ctx, "c", 0, mkCommits("c", 0, 1, "a1"), idem); err != nil {
		t.Fatal(err)
	}
	if r, err := s.GetIdempotency(ctx, "c", "k"); err != nil || !r.CreatedAt.Equal(t1) {
		t.Errorf("idempotency record created at %v (%v), want %v", r.CreatedAt, err, t1)
	}
	if err := s.CreateNamedSnapshot(ctx, store.NamedSnapshot{CanvasID: "c", ID: "s1", Label: "one", Rev: 1}); err != nil {
		t.Fatal(err)
	}
	if ns, err := s.GetNamedSnapshot(ctx, "c", "s1"); err != nil || !ns.CreatedAt.Equal(t1) {
		t.Errorf("named snapshot created at %v (%v), want %v", ns.CreatedAt, err, t1)
	}

	if err := s.CreateAgentSession(ctx, canvas.AgentSession{ID: "as_1", CanvasID: "c", State: canvas.AgentQueued, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	t2 := t1.Add(time.Minute)
	clk.Set(t2)
	if a, err := s.ClaimAgentSession(ctx, "agent"); err != nil || a.ID != "as_1" || !a.UpdatedAt.Equal(t2) {
		t.Errorf("claimed session %q updated at %v (%v), want as_1 at %v", a.ID, a.UpdatedAt, err, t2)
	}
	t3 := t2.Add(time.Second)
	clk.Set(t3)
	if was, at, err := s.CancelAgentSession(ctx, "as_1"); err != nil || was != canvas.AgentWaitingContext || !at.Equal(t3) {
		t.Errorf("CancelAgentSession = %q at %v (%v), want %q at %v", was, at, err, canvas.AgentWaitingContext, t3)
	}
}
