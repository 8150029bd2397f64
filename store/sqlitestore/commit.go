package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// bg is the context of every statement the committer runs: one caller's
// cancellation must not interrupt a transaction shared with others.
var bg = context.Background()

var driverBadConn = driver.ErrBadConn

// job is one queued write call. An Append job carries its arguments in
// fields (no closure, pooled); every other write is a closure in fn.
type job struct {
	ctx  context.Context
	fn   func(w *writer) error
	err  error
	done chan struct{} // buffered(1): the committer sends once the batch committed

	canvasID     string
	expectedHead int64
	commits      []canvas.Commit
	changes      []string // commits[i].Changes as JSON, encoded by the caller
	idem         []store.IdempotencyRecord
}

func (s *Store) putJob(j *job) {
	j.ctx, j.fn, j.err, j.commits, j.idem = nil, nil, nil, nil, nil
	for i := range j.changes {
		j.changes[i] = ""
	}
	j.changes = j.changes[:0]
	s.jobPool.Put(j)
}

// write runs fn on the writer connection inside a group-commit transaction.
func (s *Store) write(ctx context.Context, fn func(w *writer) error) error {
	j := s.jobPool.Get().(*job)
	j.fn = fn
	return s.submit(ctx, j)
}

// submit queues j, waits until its batch is committed (or rolled back), and
// returns j's own outcome. It gives up only while j is still unqueued.
func (s *Store) submit(ctx context.Context, j *job) error {
	j.ctx = ctx
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		s.putJob(j)
		return errClosed("write")
	}
	select {
	case s.jobs <- j:
	case <-ctx.Done():
		s.mu.RUnlock()
		s.putJob(j)
		return fmt.Errorf("sqlitestore: write not queued: %w", ctx.Err())
	}
	s.mu.RUnlock()
	<-j.done
	err := j.err
	s.putJob(j)
	return err
}

// writer is the one write connection and its prepared statements. Only the
// committer goroutine uses it.
type writer struct {
	conn                           *sql.Conn
	begin, commit, rollback        *sql.Stmt
	savepoint, release, rollbackTo *sql.Stmt
	updHead, headOf, has           *sql.Stmt

	// Multi-row INSERTs, prepared on first use: insCommits[k] inserts k+1
	// rows. One statement per chunk of up to maxRows rows costs far less
	// than one per row.
	insCommits, insIdems, hasKeys [maxRows]*sql.Stmt
	args                          []any // reused argument buffer

	pending []*job               // checked Appends whose rows flush inserts
	keys    map[idemKey]struct{} // idempotency keys taken by this batch's Appends
}

type idemKey struct{ canvasID, key string }

// maxRows is the largest multi-row INSERT (SQLite allows 32766 parameters).
const maxRows = 32

const (
	insCommitSQL = `INSERT INTO commits (canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes) VALUES `
	commitRow    = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insIdemSQL   = `INSERT INTO idempotency (canvas_id, key, fingerprint, status, body, rev, created_at) VALUES `
	idemRow      = `(?, ?, ?, ?, ?, ?, ?)`
	hasKeysSQL   = `SELECT key FROM idempotency WHERE canvas_id = ? AND key IN (`
)

// cached returns the cached statement head + n×item (joined by sep) + tail,
// preparing it on first use (1 ≤ n ≤ maxRows).
func (w *writer) cached(cache *[maxRows]*sql.Stmt, n int, head, item, sep, tail string) (*sql.Stmt, error) {
	if st := cache[n-1]; st != nil {
		return st, nil
	}
	q := head + strings.Repeat(item+sep, n-1) + item + tail
	st, err := w.conn.PrepareContext(bg, q)
	if err != nil {
		return nil, mapErr("prepare", err)
	}
	cache[n-1] = st
	return st, nil
}

func newWriter(ctx context.Context, conn *sql.Conn) (*writer, error) {
	w := &writer{conn: conn, keys: map[idemKey]struct{}{}}
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{
		{&w.begin, `BEGIN IMMEDIATE`},
		{&w.commit, `COMMIT`},
		{&w.rollback, `ROLLBACK`},
		{&w.savepoint, `SAVEPOINT job`},
		{&w.release, `RELEASE job`},
		{&w.rollbackTo, `ROLLBACK TO job`},
		{&w.updHead, `UPDATE canvases SET head_rev = ? WHERE id = ? AND head_rev = ?`},
		{&w.headOf, `SELECT head_rev FROM canvases WHERE id = ?`},
		{&w.has, `SELECT 1 FROM canvases WHERE id = ?`},
	} {
		st, err := conn.PrepareContext(ctx, p.q)
		if err != nil {
			w.close()
			return nil, mapErr("prepare", err)
		}
		*p.dst = st
	}
	return w, nil
}

func (w *writer) close() {
	sts := []*sql.Stmt{w.begin, w.commit, w.rollback, w.savepoint, w.release, w.rollbackTo, w.updHead, w.headOf, w.has}
	sts = append(append(append(sts, w.insCommits[:]...), w.insIdems[:]...), w.hasKeys[:]...)
	for _, st := range sts {
		if st != nil {
			st.Close()
		}
	}
	w.conn.Close()
}

func (w *writer) mustExist(canvasID, op string) error {
	var one int
	err := w.has.QueryRowContext(bg, canvasID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlitestore: %s: canvas %q: %w", op, canvasID, canvas.ErrNotFound)
	}
	if err != nil {
		return mapErr(op, err)
	}
	return nil
}

// commitLoop is the committer goroutine: it batches queued jobs into one
// transaction each until the queue is closed and drained.
func (s *Store) commitLoop(w *writer) {
	defer close(s.stopped)
	defer w.close()
	batch := make([]*job, 0, s.maxBatch)
	prev := 0
	for {
		j, ok := <-s.jobs
		if !ok {
			return
		}
		batch = append(batch[:0], j)
		if prev > 1 {
			// Concurrent writers are active: let them queue their next
			// calls so this transaction carries more than one.
			runtime.Gosched()
		}
	drain:
		for len(batch) < s.maxBatch {
			select {
			case j, ok := <-s.jobs:
				if !ok {
					break drain
				}
				batch = append(batch, j)
			default:
				break drain
			}
		}
		s.runBatch(w, batch)
		s.batches.Add(1)
		s.jobsDone.Add(int64(len(batch)))
		prev = len(batch)
		var appended int64
		for _, j := range batch {
			if j.err == nil && j.fn == nil {
				appended += int64(len(j.commits))
			}
		}
		s.commitsDone.Add(appended)
		for i, j := range batch {
			j.done <- struct{}{}
			batch[i] = nil
		}
	}
}

// runBatch runs the jobs in one transaction and sets every job's err; a
// job's nil err stands only if COMMIT succeeds.
//
// An Append is checked first (its idempotency keys are not stored, not even
// by an earlier Append of this batch; then the head moves only if it is the
// expected one), so a failing Append writes nothing and needs no savepoint.
// The rows of the Appends that passed are inserted together, a few
// multi-row INSERTs for the whole batch. Any other write runs in its own
// savepoint, after the pending rows are flushed.
//
// If that fast path meets an unexpected error (say a row that violates a
// constraint the checks cannot see), the transaction is rolled back and the
// batch runs again isolated: every job in its own savepoint with its own
// INSERTs, so only the culprit fails. An error that breaks the transaction
// itself (I/O, full disk) fails every job.
func (s *Store) runBatch(w *writer, batch []*job) {
	if !s.tryBatch(w, batch, false) {
		return
	}
	for _, j := range batch {
		j.err = nil
	}
	s.tryBatch(w, batch, true)
}

// tryBatch runs batch once; it reports whether the caller should run it
// again isolated (only after a fast-path failure, with everything rolled back).
func (s *Store) tryBatch(w *writer, batch []*job, isolated bool) (retry bool) {
	if _, err := w.begin.ExecContext(bg); err != nil {
		err = mapErr("begin", err)
		for _, j := range batch {
			j.err = err
		}
		return false
	}
	w.pending = w.pending[:0]
	clear(w.keys)
	single := len(batch) == 1
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.err = fmt.Errorf("sqlitestore: write canceled before it ran: %w", err)
			continue
		}
		if j.fn == nil && !isolated {
			var fatal error
			if j.err, fatal = w.checkAppend(j); fatal != nil {
				s.abort(w, batch, fatal)
				return !single
			}
			if j.err == nil {
				w.pending = append(w.pending, j)
			}
			continue
		}
		if err := w.flush(); err != nil {
			s.abort(w, batch, err)
			return !isolated && !single
		}
		// The flushed keys are in the table now; fn may delete some
		// (DeleteCanvas, PruneIdempotency), so the table alone decides.
		clear(w.keys)
		run := j.fn
		if run == nil { // an Append, isolated
			run = func(w *writer) error {
				err, fatal := w.checkAppend(j)
				if err != nil || fatal != nil {
					return cmp.Or(err, fatal)
				}
				w.pending = append(w.pending, j)
				return w.flush()
			}
		}
		if single {
			if j.err = run(w); j.err != nil {
				s.rollbackAll(w)
				return false
			}
			continue
		}
		if _, err := w.savepoint.ExecContext(bg); err != nil {
			s.abort(w, batch, mapErr("savepoint", err))
			return false
		}
		if j.err = run(w); j.err != nil {
			w.pending = w.pending[:0]
			if _, err := w.rollbackTo.ExecContext(bg); err != nil {
				// The failure took the transaction down (I/O error, full
				// disk): nothing in it can be committed.
				s.abort(w, batch, mapErr("rollback to savepoint", err))
				return false
			}
		}
		if _, err := w.release.ExecContext(bg); err != nil {
			s.abort(w, batch, mapErr("release savepoint", err))
			return false
		}
	}
	if err := w.flush(); err != nil {
		s.abort(w, batch, err)
		return !isolated && !single
	}
	if _, err := w.commit.ExecContext(bg); err != nil {
		s.abort(w, batch, mapErr("commit", err))
	}
	return false
}

// abort rolls the transaction back after an error that broke it: every job
// that had not failed on its own fails with err.
func (s *Store) abort(w *writer, batch []*job, err error) {
	s.rollbackAll(w)
	w.pending = w.pending[:0]
	for _, j := range batch {
		if j.err == nil {
			j.err = err
		}
	}
}

func (s *Store) rollbackAll(w *writer) {
	if _, err := w.rollback.ExecContext(bg); err != nil {
		// "no transaction is active" after SQLite rolled back by itself is fine.
		s.log.Debug("sqlitestore: rollback", "err", err)
	}
}

// checkAppend decides an Append inside the batch's transaction without
// writing anything but the new head: err is the Append's own failure
// (nothing written), fatal an error that breaks the transaction.
func (w *writer) checkAppend(j *job) (err, fatal error) {
	for i := range j.idem {
		k := idemKey{j.canvasID, j.idem[i].Key}
		if _, dup := w.keys[k]; dup {
			return fmt.Errorf("sqlitestore: append to canvas %q: idempotency key %q: %w", j.canvasID, k.key, canvas.ErrDuplicateIdempotencyKey), nil
		}
	}
	for lo := 0; lo < len(j.idem); lo += maxRows {
		rs := j.idem[lo:min(lo+maxRows, len(j.idem))]
		st, err := w.cached(&w.hasKeys, len(rs), hasKeysSQL, "?", ", ", ")")
		if err != nil {
			return nil, err
		}
		args := append(w.args[:0], j.canvasID)
		for i := range rs {
			args = append(args, rs[i].Key)
		}
		w.args = args
		var key string
		err = st.QueryRowContext(bg, args...).Scan(&key)
		clear(args)
		if err == nil {
			return fmt.Errorf("sqlitestore: append to canvas %q: idempotency key %q: %w", j.canvasID, key, canvas.ErrDuplicateIdempotencyKey), nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, mapErr("append to "+j.canvasID, err)
		}
	}
	newHead := j.expectedHead + int64(len(j.commits))
	res, err := w.updHead.ExecContext(bg, newHead, j.canvasID, j.expectedHead)
	if err != nil {
		return nil, mapErr("append to "+j.canvasID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, mapErr("append to "+j.canvasID, err)
	} else if n == 0 {
		var head int64
		err := w.headOf.QueryRowContext(bg, j.canvasID).Scan(&head)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlitestore: append to canvas %q: %w", j.canvasID, canvas.ErrNotFound), nil
		}
		if err != nil {
			return nil, mapErr("append to "+j.canvasID, err)
		}
		return fmt.Errorf("sqlitestore: append to canvas %q: expected head %d, stored head is %d: %w",
			j.canvasID, j.expectedHead, head, canvas.ErrHeadMismatch), nil
	}
	for i := range j.idem {
		w.keys[idemKey{j.canvasID, j.idem[i].Key}] = struct{}{}
	}
	return nil, nil
}

// flush inserts the rows of the pending (checked) Appends: idempotency
// records, then commits, up to maxRows rows per statement. An error here is
// unexpected (the checks passed) and breaks the transaction.
func (w *writer) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	defer func() { w.pending = w.pending[:0] }()
	args, rows := w.args[:0], 0
	insert := func(cache *[maxRows]*sql.Stmt, head, row, tail string) error {
		st, err := w.cached(cache, rows, head, row, ", ", tail)
		if err != nil {
			return err
		}
		_, err = st.ExecContext(bg, args...)
		clear(args)
		args, rows = args[:0], 0
		if err != nil {
			return mapErr("append", err)
		}
		return nil
	}
	for _, j := range w.pending {
		for i := range j.idem {
			r := &j.idem[i]
			body := r.Body
			if body == nil {
				body = []byte{}
			}
			args = append(args, j.canvasID, r.Key, r.Fingerprint, r.Status, body, r.Rev, r.CreatedAt.UnixMicro())
			if rows++; rows == maxRows {
				if err := insert(&w.insIdems, insIdemSQL, idemRow, ""); err != nil {
					return err
				}
			}
		}
	}
	if rows > 0 {
		if err := insert(&w.insIdems, insIdemSQL, idemRow, ""); err != nil {
			return err
		}
	}
	for _, j := range w.pending {
		for i := range j.commits {
			c := &j.commits[i]
			var a any
			if c.Args != nil {
				a = string(c.Args)
			}
			args = append(args, j.canvasID, c.Rev, c.EventID, c.CmdID, c.Type, a,
				c.ActorID, string(c.ActorType), c.TS.UnixMicro(), j.changes[i])
			if rows++; rows == maxRows {
				if err := insert(&w.insCommits, insCommitSQL, commitRow, ""); err != nil {
					return err
				}
			}
		}
	}
	if rows > 0 {
		if err := insert(&w.insCommits, insCommitSQL, commitRow, ""); err != nil {
			return err
		}
	}
	w.args = args
	return nil
}
