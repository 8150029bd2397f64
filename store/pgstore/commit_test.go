package pgstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/internal/testwait"
	"github.com/canvasd/canvasd/store"
)

// batchJob builds the job Append would queue.
func batchJob(t *testing.T, s *Store, canvasID string, head int64, commits []canvas.Commit, keys ...string) *appendJob {
	t.Helper()
	var idem []store.IdempotencyRecord
	for _, k := range keys {
		idem = append(idem, store.IdempotencyRecord{Key: k, Fingerprint: "fp", Outcome: store.OutcomeApplied, Result: []byte(`{}`), Rev: head + 1})
	}
	j, err := s.newAppendJob(context.Background(), canvasID, head, commits, idem)
	if err != nil {
		t.Fatalf("newAppendJob(%s): %v", canvasID, err)
	}
	return j
}

// txOf returns the distinct transaction ids (xmin) that wrote canvasID's commits.
func txOf(t *testing.T, s *Store, canvasID string) []string {
	t.Helper()
	rows, _ := s.pool.Query(context.Background(), `SELECT DISTINCT xmin::text FROM commits WHERE canvas_id = $1`, canvasID)
	xs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return xs
}

func wantHead(t *testing.T, s *Store, canvasID string, want int64) {
	t.Helper()
	c, err := s.GetCanvas(context.Background(), canvasID)
	if err != nil {
		t.Fatal(err)
	}
	if c.HeadRev != want {
		t.Errorf("%s: head %d, want %d", canvasID, c.HeadRev, want)
	}
}

func wantNoKey(t *testing.T, s *Store, canvasID, key string) {
	t.Helper()
	if _, err := s.GetIdempotency(context.Background(), canvasID, key); !errors.Is(err, canvas.ErrNotFound) {
		t.Errorf("%s: key %q of a failed Append is stored (GetIdempotency: %v)", canvasID, key, err)
	}
}

// TestBatchPoisonedAppendsFailAlone runs good Appends and failing ones (head
// mismatch, stored key, missing canvas, a losing racer, args that are not
// JSON) as one batch: each failing one gets its own error and writes
// nothing, the good ones all commit, in one transaction.
func TestBatchPoisonedAppendsFailAlone(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	for _, id := range []string{"good1", "good2", "good3", "race", "stale", "taken", "badjson"} {
		mustCreateCanvas(t, s, id)
	}
	if err := s.Append(ctx, "stale", 0, mkCommits("stale", 0, 1, "x"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "taken", 0, mkCommits("taken", 0, 1, "x"),
		[]store.IdempotencyRecord{{Key: "k", Fingerprint: "fp", Outcome: store.OutcomeApplied, Result: []byte(`{}`), Rev: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, poisonJSON := range []bool{false, true} {
		name := map[bool]string{false: "no statement fails", true: "one statement fails"}[poisonJSON]
		t.Run(name, func(t *testing.T) {
			base := int64(0)
			if poisonJSON {
				base = 3 // heads after the first run
			}
			bad := mkCommits("badjson", 0, 1, "x")
			bad[0].Args = []byte(`{"unterminated": `)
			raceWinner := mkCommits("race", base/3, 1, "winner")
			type tc struct {
				job  *appendJob
				want error
			}
			cases := []tc{
				{batchJob(t, s, "stale", 0, mkCommits("stale", 0, 1, "y"), "stale-key"), canvas.ErrHeadMismatch},
				{batchJob(t, s, "good2", base/3, mkCommits("good2", base/3, 1, "g")), nil},
				{batchJob(t, s, "taken", 1, mkCommits("taken", 1, 1, "y"), "fresh", "k"), canvas.ErrDuplicateIdempotencyKey},
				{batchJob(t, s, "race", base/3, raceWinner, "race-key-"+name), nil},
				{batchJob(t, s, "nope", 0, mkCommits("nope", 0, 1, "y"), "nope-key"), canvas.ErrNotFound},
				{batchJob(t, s, "good1", base, mkCommits("good1", base, 3, "g"), "g1-"+name), nil},
				// Same canvas, same head, queued after the winner: it loses.
				{batchJob(t, s, "race", base/3, mkCommits("race", base/3, 1, "loser"), "loser-key"), canvas.ErrHeadMismatch},
				{batchJob(t, s, "good3", base/3, mkCommits("good3", base/3, 1, "g")), nil},
			}
			if poisonJSON {
				cases = append(cases, tc{batchJob(t, s, "badjson", 0, bad, "bad-key"), canvas.ErrInvalid})
			}
			batch := make([]*appendJob, len(cases))
			for i := range cases {
				batch[i] = cases[i].job
			}
			refused := s.commit.refused.Load()
			s.runBatch(batch)
			// Expected failures do not abort the shared transaction; a
			// statement the server refuses aborts it once.
			if got, want := s.commit.refused.Load()-refused, base/3; got != want {
				t.Errorf("%d transactions rolled back because a statement failed, want %d", got, want)
			}
			for _, c := range cases {
				if c.want == nil && c.job.err != nil || c.want != nil && !errors.Is(c.job.err, c.want) {
					t.Errorf("Append to %s at %d: %v, want %v", c.job.canvasID, c.job.head, c.job.err, c.want)
				}
			}
			wantHead(t, s, "stale", 1)
			wantHead(t, s, "taken", 1)
			wantHead(t, s, "badjson", 0)
			wantHead(t, s, "race", base/3+1)
			wantHead(t, s, "good1", base+3)
			wantHead(t, s, "good2", base/3+1)
			wantHead(t, s, "good3", base/3+1)
			wantNoKey(t, s, "race", "loser-key")
			wantNoKey(t, s, "stale", "stale-key")
			wantNoKey(t, s, "taken", "fresh")
			wantNoKey(t, s, "badjson", "bad-key")
			wantNoKey(t, s, "nope", "nope-key")
			if rec, err := s.GetIdempotency(ctx, "good1", "g1-"+name); err != nil || rec.Rev != base+1 {
				t.Errorf("good1's key: %+v, %v", rec, err)
			}
			log, err := s.ReadCommits(ctx, "race", base/3, 0)
			if err != nil || len(log) != 1 || log[0].EventID != raceWinner[0].EventID {
				t.Errorf("race log after %d: %+v, %v; want the winner's commit", base/3, log, err)
			}
			// The good Appends of each run shared one transaction (the
			// second run's were run again once the failing statement was
			// known, as one batch).
			tx := map[string]bool{}
			for _, id := range []string{"good1", "good2", "good3", "race"} {
				for _, x := range txOf(t, s, id) {
					tx[x] = true
				}
			}
			if want := 1 + int(base/3); len(tx) != want {
				t.Errorf("the good Appends of %d runs were committed by %d transactions", want, len(tx))
			}
		})
	}
}

// TestBatchOneStatement runs Appends to distinct canvases that succeed and
// fail in every expected way as one batch: they run as one statement (no
// statement is refused, one transaction), each failing one gets its own
// error and writes nothing. A batch with args that are not JSON is refused
// as one statement and then run one statement each, with the same outcomes.
func TestBatchOneStatement(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	for _, id := range []string{"ok1", "ok2", "stale", "taken", "badjson"} {
		mustCreateCanvas(t, s, id)
	}
	if err := s.Append(ctx, "stale", 0, mkCommits("stale", 0, 1, "x"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "taken", 0, mkCommits("taken", 0, 1, "x"),
		[]store.IdempotencyRecord{{Key: "k", Fingerprint: "fp", Outcome: store.OutcomeApplied, Result: []byte(`{}`), Rev: 1}}); err != nil {
		t.Fatal(err)
	}
	for round, poison := range []bool{false, true} {
		base := int64(round)
		type tc struct {
			job  *appendJob
			want error
		}
		cases := []tc{
			{batchJob(t, s, "stale", 0, mkCommits("stale", 0, 1, "y"), fmt.Sprint("stale-key", round)), canvas.ErrHeadMismatch},
			{batchJob(t, s, "ok2", base, mkCommits("ok2", base, 1, "g"), fmt.Sprint("ok2-", round)), nil},
			{batchJob(t, s, "taken", 1, mkCommits("taken", 1, 1, "y"), fmt.Sprint("fresh", round), "k"), canvas.ErrDuplicateIdempotencyKey},
			{batchJob(t, s, "nope", 0, mkCommits("nope", 0, 1, "y")), canvas.ErrNotFound},
			{batchJob(t, s, "ok1", 3*base, mkCommits("ok1", 3*base, 3, "g")), nil},
		}
		wantRefused := int64(0)
		if poison {
			bad := mkCommits("badjson", 0, 1, "x")
			bad[0].Args = []byte(`{"unterminated": `)
			cases = append(cases, tc{batchJob(t, s, "badjson", 0, bad), canvas.ErrInvalid})
			wantRefused = 2 // the statement of all, then the culprit's own
		}
		batch := make([]*appendJob, len(cases))
		for i := range cases {
			batch[i] = cases[i].job
		}
		refused := s.commit.refused.Load()
		s.runBatch(batch)
		if got := s.commit.refused.Load() - refused; got != wantRefused {
			t.Errorf("round %d: %d statements refused, want %d", round, got, wantRefused)
		}
		for _, c := range cases {
			if c.want == nil && c.job.err != nil || c.want != nil && !errors.Is(c.job.err, c.want) {
				t.Errorf("round %d: Append to %s at %d: %v, want %v", round, c.job.canvasID, c.job.head, c.job.err, c.want)
			}
		}
		wantHead(t, s, "stale", 1)
		wantHead(t, s, "taken", 1)
		wantHead(t, s, "badjson", 0)
		wantHead(t, s, "ok1", 3*base+3)
		wantHead(t, s, "ok2", base+1)
		wantNoKey(t, s, "taken", fmt.Sprint("fresh", round))
		wantNoKey(t, s, "stale", fmt.Sprint("stale-key", round))
		if rec, err := s.GetIdempotency(ctx, "ok2", fmt.Sprint("ok2-", round)); err != nil || rec.Rev != base+1 {
			t.Errorf("round %d: ok2's key: %+v, %v", round, rec, err)
		}
		if log, err := s.ReadCommits(ctx, "ok1", 3*base, 0); err != nil || len(log) != 3 {
			t.Errorf("round %d: ok1's commits: %d, %v", round, len(log), err)
		}
		tx := map[string]bool{}
		for _, id := range []string{"ok1", "ok2"} {
			for _, x := range txOf(t, s, id) {
				tx[x] = true
			}
		}
		if len(tx) != round+1 {
			t.Errorf("after round %d the good Appends were committed by %d transactions, want %d", round, len(tx), round+1)
		}
	}
}

// TestBatchConcurrentKeyInsertFailsAlone: a key the statement's snapshot
// could not see (inserted by a transaction that commits while the batch
// waits on it) fails its own Append with ErrDuplicateIdempotencyKey; the
// Appends batched with it are run again and commit.
func TestBatchConcurrentKeyInsertFailsAlone(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		mustCreateCanvas(t, s, id)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var pid int32
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO idempotency (canvas_id, key, fingerprint, outcome, result, rev, created_at)
		VALUES ('b', 'k', 'fp', 'applied', '{}', 0, now())`); err != nil {
		t.Fatal(err)
	}
	batch := []*appendJob{
		batchJob(t, s, "a", 0, mkCommits("a", 0, 1, "x"), "k"),
		batchJob(t, s, "b", 0, mkCommits("b", 0, 1, "x"), "k"),
		batchJob(t, s, "c", 0, mkCommits("c", 0, 2, "x"), "k"),
	}
	done := make(chan struct{})
	go func() { defer close(done); s.runBatch(batch) }()
	testwait.Until(t, 5*time.Second, "the batch waits on the concurrent insert", func() bool {
		var waiting bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid)))`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		return waiting
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if !errors.Is(batch[1].err, canvas.ErrDuplicateIdempotencyKey) {
		t.Errorf("Append to b = %v, want ErrDuplicateIdempotencyKey", batch[1].err)
	}
	for _, j := range []*appendJob{batch[0], batch[2]} {
		if j.err != nil {
			t.Errorf("Append to %s = %v, want nil", j.canvasID, j.err)
		}
	}
	wantHead(t, s, "a", 1)
	wantHead(t, s, "b", 0)
	wantHead(t, s, "c", 2)
	if xa, xc := txOf(t, s, "a"), txOf(t, s, "c"); len(xa) != 1 || len(xc) != 1 || xa[0] != xc[0] {
		t.Errorf("a and c committed by transactions %v and %v, want one", xa, xc)
	}
}

// TestAppendAfterClose: the committers are gone; Append says unavailable.
func TestAppendAfterClose(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	mustCreateCanvas(t, s, "c1")
	if err := s.Append(context.Background(), "c1", 0, mkCommits("c1", 0, 1, "x"), nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	err := s.Append(context.Background(), "c1", 1, mkCommits("c1", 1, 1, "x"), nil)
	if !errors.Is(err, canvas.ErrUnavailable) {
		t.Fatalf("Append after Close = %v, want ErrUnavailable", err)
	}
}
