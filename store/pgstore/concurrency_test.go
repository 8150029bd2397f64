package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// TestConcurrentWritersTwoStores plays two processes: 8 goroutines on two
// Store instances append to one canvas with the engine's retry (on
// ErrHeadMismatch re-read the head and try again). The log must be gap-free
// and hold every acknowledged commit exactly once; idempotency holds across
// the two stores.
func TestConcurrentWritersTwoStores(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := newSchema(t, url)
	stores := []*Store{openIn(t, url, schema), openIn(t, url, schema)}
	ctx := context.Background()
	mustCreateCanvas(t, stores[0], "hot")
	const writers, each = 8, 40
	var mu sync.Mutex
	acked := map[string]int64{} // cmd id → rev
	var mismatches int
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		s := stores[w%2]
		wg.Go(func() {
			head := int64(0)
			for i := 0; i < each; {
				c := mkCommits("hot", head, 1, fmt.Sprintf("w%d", w))[0]
				c.CmdID = fmt.Sprintf("w%d-%d", w, i)
				err := s.Append(ctx, "hot", head, []canvas.Commit{c}, nil)
				switch {
				case err == nil:
					mu.Lock()
					acked[c.CmdID] = c.Rev
					mu.Unlock()
					head++
					i++
				case errors.Is(err, canvas.ErrHeadMismatch):
					mu.Lock()
					mismatches++
					mu.Unlock()
					cv, err := s.GetCanvas(ctx, "hot")
					if err != nil {
						errs <- err
						return
					}
					head = cv.HeadRev
				default:
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("writer: %v", err)
	}
	log, err := stores[1].ReadCommits(ctx, "hot", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != writers*each || len(acked) != writers*each {
		t.Fatalf("log has %d commits, %d acknowledged; want %d", len(log), len(acked), writers*each)
	}
	for i, c := range log {
		if c.Rev != int64(i+1) {
			t.Fatalf("log[%d].Rev = %d: not gap-free", i, c.Rev)
		}
		if acked[c.CmdID] != c.Rev {
			t.Fatalf("rev %d holds %s, acknowledged as rev %d", c.Rev, c.CmdID, acked[c.CmdID])
		}
	}
	t.Logf("%d commits, %d head mismatches retried", len(log), mismatches)

	// Concurrent duplicates of one idempotency key through both stores: one commit.
	var wins, dups int
	var wg2 sync.WaitGroup
	head := int64(writers * each)
	for i := range 8 {
		s := stores[i%2]
		wg2.Go(func() {
			h := head
			for {
				rec := store.IdempotencyRecord{Key: "same-key", Fingerprint: "fp", Outcome: store.OutcomeApplied, Result: []byte(`{}`), Rev: h + 1}
				err := s.Append(ctx, "hot", h, mkCommits("hot", h, 1, "dup"), []store.IdempotencyRecord{rec})
				mu.Lock()
				switch {
				case err == nil:
					wins++
				case errors.Is(err, canvas.ErrDuplicateIdempotencyKey):
					dups++
				case errors.Is(err, canvas.ErrHeadMismatch):
					mu.Unlock()
					// The engine would now look the key up before retrying.
					if _, gerr := s.GetIdempotency(ctx, "hot", "same-key"); gerr == nil {
						mu.Lock()
						dups++
						mu.Unlock()
						return
					}
					cv, _ := s.GetCanvas(ctx, "hot")
					h = cv.HeadRev
					continue
				default:
					t.Errorf("duplicate-key append: %v", err)
				}
				mu.Unlock()
				return
			}
		})
	}
	wg2.Wait()
	if wins != 1 || dups != 7 {
		t.Fatalf("concurrent duplicates: %d applied, %d rejected; want 1 and 7", wins, dups)
	}
	if cv, _ := stores[0].GetCanvas(ctx, "hot"); cv.HeadRev != head+1 {
		t.Fatalf("head after duplicates = %d, want %d", cv.HeadRev, head+1)
	}
}

// TestInvalidTextIsInvalid: PostgreSQL text cannot hold NUL; that is the
// caller's bad input (canvas.ErrInvalid), not an outage.
func TestInvalidTextIsInvalid(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	err := s.CreateCanvas(context.Background(), canvas.Canvas{ID: "c1", Title: "a\x00b"})
	if !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("CreateCanvas with a NUL in the title = %v, want canvas.ErrInvalid", err)
	}
}

func TestAppendInvalidArgsJSONIsInvalid(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	mustCreateCanvas(t, s, "c1")
	cs := mkCommits("c1", 0, 1, "a")
	cs[0].Args = []byte(`{"unterminated": `)
	if err := s.Append(context.Background(), "c1", 0, cs, nil); !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("Append with args that are not JSON = %v, want canvas.ErrInvalid", err)
	}
	if c, _ := s.GetCanvas(context.Background(), "c1"); c.HeadRev != 0 {
		t.Fatalf("head = %d after a rejected Append, want 0", c.HeadRev)
	}
}
