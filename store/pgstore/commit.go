package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/canvasd/canvasd/canvas"
)

// Group commit. Every Append is queued to a few committer goroutines; each
// takes what is queued (never waiting for more: a lone Append runs at once)
// and runs those Appends, of any canvases, as one pipelined batch of
// appendSQL statements sent in one round trip and committed by one implicit
// transaction, hence one WAL flush, instead of one transaction each.
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
// by another process does not stall every canvas; few, so that batches are
// large when the server is busy.
const maxCommitters = 2

// appendJob is one queued Append: its appendSQL arguments, built by the
// caller, and its outcome.
type appendJob struct {
	ctx      context.Context
	deadline time.Time // the Append's op deadline; zero: none
	canvasID string
	head     int64
	args     []any
	err      error
	done     chan struct{} // buffered(1): sent once the batch finished
}

// committer queues Appends and runs them in batches.
type committer struct {
	s       *Store
	mu      sync.RWMutex // guards closed against sends on jobs
	closed  bool
	jobs    chan *appendJob
	wg      sync.WaitGroup
	jobPool sync.Pool

	batches, appends atomic.Int64 // batches run and the Appends they carried
	refused          atomic.Int64 // transactions rolled back because a statement failed
}

func newCommitter(s *Store, maxConns int32) *committer {
	c := &committer{s: s, jobs: make(chan *appendJob, 4*maxBatch)}
	c.jobPool.New = func() any { return &appendJob{done: make(chan struct{}, 1)} }
	n := min(maxCommitters, max(1, int(maxConns)/2))
	for range n {
		c.wg.Go(c.loop)
	}
	return c
}

// submit queues j and waits until its batch has finished, then returns j's
// own outcome. It gives up only while j is still unqueued.
func (c *committer) submit(ctx context.Context, j *appendJob) error {
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return fmt.Errorf("pgstore: append to %q: store closed: %w", j.canvasID, canvas.ErrUnavailable)
	}
	select {
	case c.jobs <- j:
	case <-ctx.Done():
		c.mu.RUnlock()
		return c.s.wrap(ctx, "append to "+j.canvasID+" (not queued)", ctx.Err())
	}
	c.mu.RUnlock()
	<-j.done
	return j.err
}

// put returns a finished job to the pool.
func (c *committer) put(j *appendJob) {
	j.ctx, j.err = nil, nil
	clear(j.args)
	c.jobPool.Put(j)
}

// close stops taking Appends, runs the queued ones and waits for the
// committers to exit.
func (c *committer) close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.jobs)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// loop is one committer goroutine.
func (c *committer) loop() {
	batch := make([]*appendJob, 0, maxBatch)
	prev := 0
	for {
		j, ok := <-c.jobs
		if !ok {
			return
		}
		batch = append(batch[:0], j)
		if prev > 1 {
			// Concurrent writers are active: let them queue their next
			// Appends so this transaction carries more than one.
			runtime.Gosched()
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case j, ok := <-c.jobs:
				if !ok {
					break drain
				}
				batch = append(batch, j)
			default:
				break drain
			}
		}
		c.s.runBatch(batch)
		prev = len(batch)
		c.batches.Add(1)
		c.appends.Add(int64(len(batch)))
		for i, j := range batch {
			if j.err == nil {
				c.s.notify.add(j.canvasID)
			}
			j.done <- struct{}{}
			batch[i] = nil
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
			j.err = s.wrap(j.ctx, "append to "+j.canvasID+" (canceled before it ran)", err)
			continue
		}
		j.err = nil
		live = append(live, j)
	}
	slices.SortStableFunc(live, func(a, b *appendJob) int { return cmp.Compare(a.canvasID, b.canvasID) })
	res := make([]appendResult, len(live))
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
		return fmt.Errorf("pgstore: append to %q: %w", j.canvasID, canvas.ErrNotFound)
	case r.dupKey != nil:
		return fmt.Errorf("pgstore: append to %q: idempotency key %q: %w", j.canvasID, *r.dupKey, canvas.ErrDuplicateIdempotencyKey)
	default:
		return fmt.Errorf("pgstore: append to %q at head %d: %w", j.canvasID, j.head, canvas.ErrHeadMismatch)
	}
}

// execBatch runs jobs (sorted by canvas id) as one pipelined implicit
// transaction and fills res. On error nothing was committed, unless the
// error wraps canvas.ErrUnavailable (outcome unknown). culprit ≥ 0 names
// the job whose statement the server refused; err is then that job's own
// error and the others may be run again. culprit < 0: err is every job's.
func (s *Store) execBatch(jobs []*appendJob, res []appendResult) (culprit int, err error) {
	ctx, cancel := s.batchCtx(jobs)
	defer cancel()
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(jobs))}
	for _, j := range jobs {
		b.Queue(appendSQL, j.args...)
	}
	for attempt := 0; attempt < 2; attempt++ {
		culprit = -1
		br := s.pool.SendBatch(ctx, b)
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
		// A pooled connection that died while idle fails before sending
		// anything: nothing can have been written, so try a fresh one.
		if err == nil || !pgconn.SafeToRetry(err) || ctx.Err() != nil {
			break
		}
	}
	if err == nil {
		return -1, nil
	}
	if ctx.Err() != nil {
		// The batch ran out of time (the server may report that as a
		// canceled statement): the database did not answer in time.
		return -1, fmt.Errorf("pgstore: append: %w: %w", canvas.ErrUnavailable, err)
	}
	var pgErr *pgconn.PgError
	if culprit < 0 || !errors.As(err, &pgErr) || isUnavailable(err) {
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

// opDeadline is the deadline opCtx would give an operation starting now.
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
