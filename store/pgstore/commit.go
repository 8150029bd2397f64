package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// Group commit. Every Append is queued to a few committer goroutines (the
// store.GroupCommitter loop, shared with the embedded store); each
// takes what is queued (never waiting for more: a lone Append runs at once)
// and runs those Appends, of any canvases, in one implicit transaction,
// hence one WAL flush, instead of one transaction each: Appends to distinct
// canvases as one batchSQL statement, otherwise (or when the server refuses
// that statement) as one pipelined batch of appendSQL statements, one per
// Append, sent in one round trip.
//
// appendSQL never raises an error for an Append's own expected failures
// (head mismatch, stored idempotency key, missing canvas): its statement
// writes nothing and reports why, and the other statements of the batch go
// on. An unexpected error (a key inserted by a concurrent transaction after
// the statement's snapshot, args that are not JSON) aborts the whole
// transaction; the statement that failed is then known (the first error in
// the pipeline), its Append alone gets the error, and the others run again
// as a new batch. Statements run in canvas id order, so batches of different
// committers or processes take the canvas row locks in one order and do not
// deadlock one another.
//
// Callers are answered only after the batch's COMMIT succeeded (or failed).

// maxBatch bounds the Appends of one transaction.
const maxBatch = 128

// maxCommitters bounds the batches in flight at once (each on its own
// pooled connection; the pool keeps at least as many connections again for
// reads). More than one, so that a batch waiting for a canvas row lock held
// by another process does not stall every canvas: a second batch starts
// beside a running one only once that one has run for stallAfter. While
// batches are quick they run one at a time, so that the Appends queued
// meanwhile share the next transaction (and its WAL flush).
const (
	maxCommitters = 2
	stallAfter    = 5 * time.Millisecond
)

// appendJob is one queued Append: its rows, encoded by the caller, and its
// outcome.
type appendJob struct {
	ctx      context.Context
	deadline time.Time // the Append's op deadline; zero: none
	canvasID string
	head     int64
	cols     appendCols
	err      error
}

// args returns appendSQL's parameters for j.
func (j *appendJob) args() []any {
	return append(append([]any{j.canvasID, j.head, int64(len(j.cols.revs))}, j.cols.commitArgs()...), j.cols.idemArgs()...)
}

// committer runs queued Appends in batches on the shared group-commit loop.
type committer struct {
	s       *Store
	gc      *store.GroupCommitter[*appendJob]
	jobPool sync.Pool

	batches, appends atomic.Int64 // batches run and the Appends they carried
	refused          atomic.Int64 // transactions rolled back because a statement failed
}

func newCommitter(s *Store, maxConns int32) *committer {
	c := &committer{s: s}
	c.jobPool.New = func() any { return &appendJob{} }
	c.gc = store.NewGroupCommitter(min(maxCommitters, max(1, int(maxConns)/2)), maxBatch, stallAfter, c.run)
	return c
}

// submit queues j and waits until its batch has finished, then returns j's
// own outcome. It gives up only while j is still unqueued.
func (c *committer) submit(ctx context.Context, j *appendJob) error {
	if err := c.gc.Do(ctx, j); err != nil {
		if errors.Is(err, canvas.ErrUnavailable) { // the store is closed: never queued
			return fmt.Errorf("pgstore: append to %q: %w: %w", j.canvasID, canvas.ErrNotWritten, err)
		}
		return markNotWritten(c.s.wrap(ctx, "append to "+j.canvasID+" (not queued)", err))
	}
	return j.err
}

// markNotWritten marks an unavailability error of an Append that never ran.
func markNotWritten(err error) error {
	if errors.Is(err, canvas.ErrUnavailable) && !errors.Is(err, canvas.ErrNotWritten) {
		return fmt.Errorf("%w: %w", canvas.ErrNotWritten, err)
	}
	return err
}

// put returns a finished job to the pool.
func (c *committer) put(j *appendJob) {
	j.ctx, j.err = nil, nil
	j.cols.reset()
	c.jobPool.Put(j)
}

// close stops taking Appends, runs the queued ones and waits for the
// committers to exit.
func (c *committer) close() { c.gc.Close() }

// run is the group committer's run function: it runs one batch and
// schedules the NOTIFYs of the Appends that committed, and of those that
// may have (outcome unknown: a wake-up for nothing costs the other
// processes one empty read; a missed one would leave their streams without
// the commit until the canvas's next write).
func (c *committer) run(batch []*appendJob) {
	c.s.runBatch(batch)
	c.batches.Add(1)
	c.appends.Add(int64(len(batch)))
	for _, j := range batch {
		if j.err == nil || errors.Is(j.err, canvas.ErrOutcomeUnknown) {
			c.s.notify.add(j.canvasID)
		}
	}
}

// appendResult is appendSQL's one row.
type appendResult struct {
	updated int64
	exists  bool
	dupKey  *string
}

// runBatch runs the Appends of batch in as few transactions as it can and
// sets every job's err.
func (s *Store) runBatch(batch []*appendJob) {
	live := make([]*appendJob, 0, len(batch))
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.err = markNotWritten(s.wrap(j.ctx, "append to "+j.canvasID+" (canceled before it ran)", err))
			continue
		}
		j.err = nil
		live = append(live, j)
	}
	slices.SortStableFunc(live, func(a, b *appendJob) int { return cmp.Compare(a.canvasID, b.canvasID) })
	res := make([]appendResult, len(live))
	if len(live) > 1 {
		done, err := s.execCombined(live, res)
		if done {
			for i, j := range live {
				j.err = err
				if err == nil {
					j.err = res[i].outcome(j)
				}
			}
			return
		}
	}
	for len(live) > 0 {
		culprit, err := s.execBatch(live, res[:len(live)])
		if err == nil {
			for i, j := range live {
				j.err = res[i].outcome(j)
			}
			return
		}
		if culprit < 0 {
			for _, j := range live {
				j.err = err
			}
			return
		}
		s.commit.refused.Add(1)
		live[culprit].err = err
		live = slices.Delete(live, culprit, culprit+1)
	}
}

// outcome turns an appendSQL row into the Append's outcome.
func (r *appendResult) outcome(j *appendJob) error {
	switch {
	case r.updated > 0:
		return nil
	case !r.exists:
		return fmt.Errorf("canvas %q: %w", j.canvasID, canvas.ErrNotFound)
	case r.dupKey != nil:
		return fmt.Errorf("pgstore: append to %q: idempotency key %q: %w", j.canvasID, *r.dupKey, canvas.ErrDuplicateIdempotencyKey)
	default:
		return fmt.Errorf("pgstore: append to %q at head %d: %w", j.canvasID, j.head, canvas.ErrHeadMismatch)
	}
}

// execBatch runs jobs (sorted by canvas id) as one pipelined implicit
// transaction and fills res. On error nothing was committed, unless the
// error wraps canvas.ErrOutcomeUnknown (sent, not confirmed). culprit ≥ 0
// names the job whose statement the server refused; err is then that job's
// own error and the others may be run again. culprit < 0: err is every job's.
func (s *Store) execBatch(jobs []*appendJob, res []appendResult) (culprit int, err error) {
	ctx, cancel := s.batchCtx(jobs)
	defer cancel()
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(jobs))}
	for _, j := range jobs {
		b.Queue(appendSQL, j.args()...)
	}
	sent := false // the statements may have reached the server
	for attempt := 0; attempt < 2; attempt++ {
		culprit = -1
		var conn *pgxpool.Conn
		if conn, err = s.pool.Acquire(ctx); err != nil {
			break // no connection: nothing was sent
		}
		br := conn.SendBatch(ctx, b)
		for i := range jobs {
			r := &res[i]
			if err = br.QueryRow().Scan(&r.updated, &r.exists, &r.dupKey); err != nil {
				culprit = i
				break
			}
		}
		// Close reads the Sync's answer: the implicit transaction's COMMIT.
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		conn.Release()
		sent = err != nil && !pgconn.SafeToRetry(err)
		// A pooled connection that died while idle fails before sending
		// anything: nothing can have been written, so try a fresh one.
		if err == nil || sent || ctx.Err() != nil {
			break
		}
	}
	if err == nil {
		return -1, nil
	}
	var pgErr *pgconn.PgError
	isPg := errors.As(err, &pgErr)
	if ctx.Err() != nil || !isPg || isUnavailable(err) {
		return -1, s.appendFailed(ctx, err, sent && !isPg)
	}
	if culprit < 0 {
		return -1, s.wrap(ctx, "append", err)
	}
	j := jobs[culprit]
	if pgErr.Code == codeUniqueViolation && pgErr.TableName == "idempotency" {
		// Repeated within the Append, or inserted by a concurrent
		// transaction after the statement's snapshot.
		return culprit, fmt.Errorf("pgstore: append to %q: %w", j.canvasID, canvas.ErrDuplicateIdempotencyKey)
	}
	return culprit, s.wrap(ctx, "append to "+j.canvasID, err)
}

// appendFailed is the error of a batch that failed for want of the
// database. A batch that may have reached the server (sent) has an unknown
// outcome: the statements may have committed before the connection broke
// or the time ran out. An error the server reported (a PgError) means the
// transaction was rolled back, and an error before anything was sent (no
// connection) means it never ran: nothing was written.
func (s *Store) appendFailed(ctx context.Context, err error, sent bool) error {
	if sent {
		return fmt.Errorf("pgstore: append: sent but not confirmed: %w: %w: %w", canvas.ErrUnavailable, canvas.ErrOutcomeUnknown, err)
	}
	if ctx.Err() != nil || isUnavailable(err) {
		// The batch ran out of time (the server may report that as a
		// canceled statement) or the database could not be reached.
		return fmt.Errorf("pgstore: append: %w: %w: %w", canvas.ErrUnavailable, canvas.ErrNotWritten, err)
	}
	return s.wrap(ctx, "append", err)
}

// execCombined runs jobs (sorted by canvas id) as one batchSQL statement,
// and fills res. done is false when it did not run them: their canvases are
// not distinct, or the server refused the statement (which then wrote
// nothing, say for an idempotency key a concurrent transaction inserted):
// the caller runs them one statement each. done with err means the batch
// failed as a whole (err wraps canvas.ErrOutcomeUnknown when it may have
// committed).
func (s *Store) execCombined(jobs []*appendJob, res []appendResult) (done bool, err error) {
	for i := 1; i < len(jobs); i++ {
		if jobs[i].canvasID == jobs[i-1].canvasID {
			return false, nil
		}
	}
	ids := make([]string, len(jobs))
	heads := make([]int64, len(jobs))
	counts := make([]int64, len(jobs))
	var cols appendCols
	for i, j := range jobs {
		ids[i], heads[i], counts[i] = j.canvasID, j.head, int64(len(j.cols.revs))
		cols.canvas = append(cols.canvas, j.cols.canvas...)
		cols.revs = append(cols.revs, j.cols.revs...)
		cols.eventIDs = append(cols.eventIDs, j.cols.eventIDs...)
		cols.cmdIDs = append(cols.cmdIDs, j.cols.cmdIDs...)
		cols.types = append(cols.types, j.cols.types...)
		cols.args = append(cols.args, j.cols.args...)
		cols.actorIDs = append(cols.actorIDs, j.cols.actorIDs...)
		cols.actorTypes = append(cols.actorTypes, j.cols.actorTypes...)
		cols.tss = append(cols.tss, j.cols.tss...)
		cols.changes = append(cols.changes, j.cols.changes...)
		cols.idemCanvas = append(cols.idemCanvas, j.cols.idemCanvas...)
		cols.keys = append(cols.keys, j.cols.keys...)
		cols.fps = append(cols.fps, j.cols.fps...)
		cols.outcomes = append(cols.outcomes, j.cols.outcomes...)
		cols.results = append(cols.results, j.cols.results...)
		cols.irevs = append(cols.irevs, j.cols.irevs...)
		cols.created = append(cols.created, j.cols.created...)
	}
	args := append(append(append([]any{ids, heads, counts, cols.canvas}, cols.commitArgs()...), cols.idemCanvas), cols.idemArgs()...)
	ctx, cancel := s.batchCtx(jobs)
	defer cancel()
	sent := false // the statement may have reached the server
	for attempt := 0; attempt < 2; attempt++ {
		var conn *pgxpool.Conn
		if conn, err = s.pool.Acquire(ctx); err != nil {
			break // no connection: nothing was sent
		}
		err = queryCombined(ctx, conn, args, res)
		conn.Release()
		sent = err != nil && !pgconn.SafeToRetry(err)
		// A pooled connection that died while idle fails before sending
		// anything: nothing can have been written, so try a fresh one.
		if err == nil || sent || ctx.Err() != nil {
			break
		}
	}
	var pgErr *pgconn.PgError
	isPg := errors.As(err, &pgErr)
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil || !isPg || isUnavailable(err):
		return true, s.appendFailed(ctx, err, sent && !isPg)
	}
	s.commit.refused.Add(1)
	return false, nil
}

// queryCombined runs batchSQL on conn and reads one result per Append into res.
func queryCombined(ctx context.Context, conn *pgxpool.Conn, args []any, res []appendResult) error {
	rows, err := conn.Query(ctx, batchSQL, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		if i == len(res) {
			return fmt.Errorf("pgstore: append: more results than Appends")
		}
		r := &res[i]
		if err := rows.Scan(&r.updated, &r.exists, &r.dupKey); err != nil {
			return err
		}
		i++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if i != len(res) {
		return fmt.Errorf("pgstore: append: %d results for %d Appends", i, len(res))
	}
	return nil
}

// batchCtx bounds a batch by the earliest op deadline of its jobs; one
// caller's cancellation does not interrupt a transaction shared with others.
func (s *Store) batchCtx(jobs []*appendJob) (context.Context, context.CancelFunc) {
	var dl time.Time
	for _, j := range jobs {
		if !j.deadline.IsZero() && (dl.IsZero() || j.deadline.Before(dl)) {
			dl = j.deadline
		}
	}
	if dl.IsZero() {
		return context.WithCancel(context.Background())
	}
	return context.WithDeadline(context.Background(), dl)
}

// opDeadline is the deadline opCtx would give an operation starting now. It
// reads time.Now, not the store's clock: it is compared with context
// deadlines, which run on the wall clock.
func (s *Store) opDeadline(ctx context.Context) time.Time {
	dl, ok := ctx.Deadline()
	if s.cfg.opTimeout <= 0 {
		if ok {
			return dl
		}
		return time.Time{}
	}
	if d := time.Now().Add(s.cfg.opTimeout); !ok || d.Before(dl) {
		return d
	}
	return dl
}
