package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/internal/testwait"
	"github.com/canvasd/canvasd/store"
)

// queueInOneBatch holds the committer in a write, queues calls in order
// (each one is in the queue before the next is started), then releases the
// committer so that they all run in the next transaction. It returns each
// call's error, in order, and fails t unless they shared one transaction
// which was rerun isolated wantReruns times (0 or 1).
func queueInOneBatch(t *testing.T, s *Store, wantReruns int64, calls []func() error) []error {
	t.Helper()
	ctx := context.Background()
	hold, held := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = s.write(ctx, func(*writer) error { close(held); <-hold; return nil })
	}()
	<-held
	st0 := s.Stats()
	errs := make([]error, len(calls))
	for i, call := range calls {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = call() }()
		testwait.Until(t, 10*time.Second, fmt.Sprintf("call %d queued", i), func() bool { return s.commits.Queued() >= i+1 })
	}
	close(hold)
	wg.Wait()
	st := s.Stats()
	if st.Transactions-st0.Transactions != 2 || st.Writes-st0.Writes != int64(len(calls))+1 {
		t.Fatalf("%d calls ran in %d transactions (the holder's included), want 2", len(calls), st.Transactions-st0.Transactions)
	}
	if got := st.Reruns - st0.Reruns; got != wantReruns {
		t.Fatalf("the batch was rerun isolated %d times, want %d", got, wantReruns)
	}
	return errs
}

func segCommits(id string, from int64, n int) []canvas.Commit {
	out := make([]canvas.Commit, n)
	for i := range out {
		rev := from + 1 + int64(i)
		out[i] = canvas.Commit{CanvasID: id, Rev: rev, EventID: fmt.Sprintf("%d-ab", rev), Type: "create_node",
			ActorID: "human-1", ActorType: canvas.ActorHuman, TS: time.Now(),
			Changes: []canvas.Change{{Op: canvas.OpPut, Kind: canvas.KindNode, ID: fmt.Sprintf("shape:%d", rev)}}}
	}
	return out
}

func segIdem(rev int64, keys ...string) []store.IdempotencyRecord {
	out := make([]store.IdempotencyRecord, len(keys))
	for i, k := range keys {
		out[i] = store.IdempotencyRecord{Key: k, Fingerprint: "fp-" + k, Outcome: store.OutcomeApplied, Result: []byte(`{"k":"` + k + `"}`), Rev: rev, CreatedAt: time.Now()}
	}
	return out
}

// TestBatchedAppendChecks runs Appends that succeed and fail in every way
// the checks know, with other writes between them, in ONE transaction, and
// checks each outcome and what was stored: a failed Append writes nothing,
// and the others are unaffected and see the effects of the earlier calls
// of the batch in order.
func TestBatchedAppendChecks(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"a", "b", "c", "d", "gone", "late"} {
		if err := s.CreateCanvas(ctx, canvas.Canvas{ID: id, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, "d", 0, segCommits("d", 0, 1), segIdem(1, "stored")); err != nil {
		t.Fatal(err)
	}
	app := func(id string, head int64, n int, keys ...string) func() error {
		return func() error { return s.Append(ctx, id, head, segCommits(id, head, n), segIdem(head+1, keys...)) }
	}
	calls := []struct {
		call func() error
		want error
	}{
		{app("a", 0, 2, "k1"), nil},                                     // a: 0 → 2
		{app("a", 2, 1, "k2", "k3"), nil},                               // a: 2 → 3, after the previous one
		{app("a", 0, 1, "k4"), canvas.ErrHeadMismatch},                  // stale head
		{app("a", 3, 1, "k1"), canvas.ErrDuplicateIdempotencyKey},       // k1 taken by this batch
		{app("b", 0, 1, "k1"), nil},                                     // keys are per canvas
		{app("b", 1, 1, "k9", "k1"), canvas.ErrDuplicateIdempotencyKey}, // one of two keys taken
		{app("b", 1, 1, "k9"), nil},                                     // k9 was not kept by the failed one
		{app("d", 1, 1, "stored"), canvas.ErrDuplicateIdempotencyKey},   // stored before the batch
		{app("d", 1, 1, "fresh"), nil},
		{app("nope", 0, 1, "k1"), canvas.ErrNotFound},
		{app("gone", 0, 1, "g1"), nil}, // written, then deleted by the next call
		{func() error { return s.DeleteCanvas(ctx, "gone") }, nil},
		{app("gone", 1, 1, "g2"), canvas.ErrNotFound}, // after the delete
		{app("late", 0, 1, "stored"), nil},            // a new segment after the delete
		{app("late", 1, 1, "stored"), canvas.ErrDuplicateIdempotencyKey},
		{app("c", 0, 3), nil}, // no keys at all
		{app("c", 3, 1, "c1"), nil},
	}
	fns := make([]func() error, len(calls))
	for i := range calls {
		fns[i] = calls[i].call
	}
	errs := queueInOneBatch(t, s, 0, fns)
	for i, c := range calls {
		if (c.want == nil) != (errs[i] == nil) || (c.want != nil && !errors.Is(errs[i], c.want)) {
			t.Errorf("call %d: err %v, want %v", i, errs[i], c.want)
		}
	}
	heads := map[string]int64{"a": 3, "b": 2, "c": 4, "d": 2, "late": 1}
	for id, want := range heads {
		c, err := s.GetCanvas(ctx, id)
		if err != nil || c.HeadRev != want {
			t.Errorf("canvas %s: head %d (err %v), want %d", id, c.HeadRev, err, want)
		}
		cs, err := s.ReadCommits(ctx, id, 0, 0)
		if err != nil || int64(len(cs)) != want {
			t.Fatalf("canvas %s: %d commits (err %v), want %d", id, len(cs), err, want)
		}
		for i, c := range cs {
			if c.Rev != int64(i+1) {
				t.Fatalf("canvas %s: commit %d has rev %d", id, i, c.Rev)
			}
		}
	}
	if _, err := s.GetCanvas(ctx, "gone"); !errors.Is(err, canvas.ErrNotFound) {
		t.Errorf("deleted canvas: %v", err)
	}
	keys := map[string][]string{"a": {"k1", "k2", "k3"}, "b": {"k1", "k9"}, "d": {"stored", "fresh"}, "late": {"stored"}, "c": {"c1"}}
	for id, ks := range keys {
		for _, k := range ks {
			r, err := s.GetIdempotency(ctx, id, k)
			if err != nil || r.Fingerprint != "fp-"+k {
				t.Errorf("key %s/%s: %+v, %v", id, k, r, err)
			}
		}
	}
	for _, k := range [][2]string{{"a", "k4"}, {"gone", "g1"}, {"gone", "g2"}, {"nope", "k1"}} {
		if _, err := s.GetIdempotency(ctx, k[0], k[1]); !errors.Is(err, canvas.ErrNotFound) {
			t.Errorf("key %s/%s was stored (err %v)", k[0], k[1], err)
		}
	}
	var orphans int
	if err := s.rdb.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM commits WHERE canvas_id NOT IN (SELECT id FROM canvases)) +
		(SELECT count(*) FROM idempotency WHERE canvas_id NOT IN (SELECT id FROM canvases))`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("%d rows of missing canvases (err %v)", orphans, err)
	}
}

// TestBatchedAppendsPoisoned checks the retry: an Append that passes the
// checks but whose INSERT fails (a planted trigger) makes the fast path roll
// back, and the isolated rerun fails it alone, in a batch of checked runs.
func TestBatchedAppendsPoisoned(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"ok1", "bad", "ok2"} {
		if err := s.CreateCanvas(ctx, canvas.Canvas{ID: id, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.write(ctx, func(w *writer) error {
		_, err := w.conn.ExecContext(bg, `CREATE TRIGGER poison BEFORE INSERT ON commits WHEN NEW.canvas_id = 'bad' BEGIN SELECT RAISE(ABORT, 'poisoned'); END`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	app := func(id string, head int64, key string) func() error {
		return func() error { return s.Append(ctx, id, head, segCommits(id, head, 1), segIdem(head+1, key)) }
	}
	errs := queueInOneBatch(t, s, 1, []func() error{app("ok1", 0, "x"), app("bad", 0, "x"), app("ok2", 0, "x"), app("ok1", 1, "y")})
	for i, err := range errs {
		if (i == 1) != (err != nil) {
			t.Errorf("call %d: %v", i, err)
		}
	}
	for id, want := range map[string]int64{"ok1": 2, "bad": 0, "ok2": 1} {
		if c, err := s.GetCanvas(ctx, id); err != nil || c.HeadRev != want {
			t.Errorf("canvas %s: head %d (err %v), want %d", id, c.HeadRev, err, want)
		}
	}
	if _, err := s.GetIdempotency(ctx, "bad", "x"); !errors.Is(err, canvas.ErrNotFound) {
		t.Errorf("the failed Append's key was stored (err %v)", err)
	}
}
