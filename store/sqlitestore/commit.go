package sqlitestore

import (
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
	insCommits, insIdems [maxRows]*sql.Stmt
	args                 []any // reused argument buffer
}

// maxRows is the largest multi-row INSERT (SQLite allows 32766 parameters).
const maxRows = 32

const (
	insCommitSQL = `INSERT INTO commits (canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes) VALUES `
	commitRow    = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insIdemSQL   = `INSERT INTO idempotency (canvas_id, key, fingerprint, status, body, rev, created_at) VALUES `
	idemRow      = `(?, ?, ?, ?, ?, ?, ?)`
	idemTail     = ` ON CONFLICT DO NOTHING`
)

// rowsStmt returns the cached statement inserting n rows (1 ≤ n ≤ maxRows).
func (w *writer) rowsStmt(cache *[maxRows]*sql.Stmt, n int, head, row, tail string) (*sql.Stmt, error) {
	if st := cache[n-1]; st != nil {
		return st, nil
	}
	q := head + strings.Repeat(row+", ", n-1) + row + tail
	st, err := w.conn.PrepareContext(bg, q)
	if err != nil {
		return nil, mapErr("prepare", err)
	}
	cache[n-1] = st
	return st, nil
}

func newWriter(ctx context.Context, conn *sql.Conn) (*writer, error) {
	w := &writer{conn: conn}
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
	sts = append(append(sts, w.insCommits[:]...), w.insIdems[:]...)
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
		for i, j := range batch {
			j.done <- struct{}{}
			batch[i] = nil
		}
	}
}

// runBatch runs the jobs in one transaction, each in its own savepoint (a
// lone job needs none: its failure rolls back the whole transaction), and
// sets every job's err. A job's nil err stands only if COMMIT succeeds.
func (s *Store) runBatch(w *writer, batch []*job) {
	if _, err := w.begin.ExecContext(bg); err != nil {
		err = mapErr("begin", err)
		for _, j := range batch {
			j.err = err
		}
		return
	}
	if len(batch) == 1 {
		j := batch[0]
		j.err = s.runJob(w, j)
		if j.err != nil {
			s.rollbackAll(w)
			return
		}
	} else {
		for i, j := range batch {
			if _, err := w.savepoint.ExecContext(bg); err != nil {
				s.abort(w, batch[:i], batch[i:], mapErr("savepoint", err))
				return
			}
			if j.err = s.runJob(w, j); j.err != nil {
				if _, err := w.rollbackTo.ExecContext(bg); err != nil {
					// The failure took the transaction down (I/O error, full
					// disk): nothing in it can be committed.
					s.abort(w, batch[:i], batch[i+1:], mapErr("rollback to savepoint", err))
					return
				}
			}
			if _, err := w.release.ExecContext(bg); err != nil {
				s.abort(w, batch[:i+1], batch[i+1:], mapErr("release savepoint", err))
				return
			}
		}
	}
	if _, err := w.commit.ExecContext(bg); err != nil {
		err = mapErr("commit", err)
		s.rollbackAll(w)
		for _, j := range batch {
			if j.err == nil {
				j.err = err
			}
		}
	}
}

// abort rolls the transaction back after an error that broke it: jobs in
// ran that had succeeded, and every job in rest, fail with err.
func (s *Store) abort(w *writer, ran, rest []*job, err error) {
	s.rollbackAll(w)
	for _, j := range ran {
		if j.err == nil {
			j.err = err
		}
	}
	for _, j := range rest {
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

func (s *Store) runJob(w *writer, j *job) error {
	if err := j.ctx.Err(); err != nil {
		return fmt.Errorf("sqlitestore: write canceled before it ran: %w", err)
	}
	if j.fn != nil {
		return j.fn(w)
	}
	return w.appendCommits(j)
}

func (w *writer) appendCommits(j *job) error {
	newHead := j.expectedHead + int64(len(j.commits))
	res, err := w.updHead.ExecContext(bg, newHead, j.canvasID, j.expectedHead)
	if err != nil {
		return mapErr("append to "+j.canvasID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return mapErr("append to "+j.canvasID, err)
	} else if n == 0 {
		var head int64
		err := w.headOf.QueryRowContext(bg, j.canvasID).Scan(&head)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlitestore: append to canvas %q: %w", j.canvasID, canvas.ErrNotFound)
		}
		if err != nil {
			return mapErr("append to "+j.canvasID, err)
		}
		return fmt.Errorf("sqlitestore: append to canvas %q: expected head %d, stored head is %d: %w",
			j.canvasID, j.expectedHead, head, canvas.ErrHeadMismatch)
	}
	for lo := 0; lo < len(j.idem); lo += maxRows {
		rs := j.idem[lo:min(lo+maxRows, len(j.idem))]
		st, err := w.rowsStmt(&w.insIdems, len(rs), insIdemSQL, idemRow, idemTail)
		if err != nil {
			return err
		}
		args := w.args[:0]
		for i := range rs {
			r := &rs[i]
			body := r.Body
			if body == nil {
				body = []byte{}
			}
			args = append(args, j.canvasID, r.Key, r.Fingerprint, r.Status, body, r.Rev, r.CreatedAt.UnixMicro())
		}
		w.args = args
		res, err := st.ExecContext(bg, args...)
		clear(args)
		if err != nil {
			return mapErr("append to "+j.canvasID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return mapErr("append to "+j.canvasID, err)
		} else if n != int64(len(rs)) {
			return fmt.Errorf("sqlitestore: append to canvas %q: %w", j.canvasID, canvas.ErrDuplicateIdempotencyKey)
		}
	}
	for lo := 0; lo < len(j.commits); lo += maxRows {
		cs := j.commits[lo:min(lo+maxRows, len(j.commits))]
		st, err := w.rowsStmt(&w.insCommits, len(cs), insCommitSQL, commitRow, "")
		if err != nil {
			return err
		}
		args := w.args[:0]
		for i := range cs {
			c := &cs[i]
			var a any
			if c.Args != nil {
				a = string(c.Args)
			}
			args = append(args, j.canvasID, c.Rev, c.EventID, c.CmdID, c.Type, a,
				c.ActorID, string(c.ActorType), c.TS.UnixMicro(), j.changes[lo+i])
		}
		w.args = args
		_, err = st.ExecContext(bg, args...)
		clear(args)
		if err != nil {
			return mapErr("append to "+j.canvasID, err)
		}
	}
	return nil
}
