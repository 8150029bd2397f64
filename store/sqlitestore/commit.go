package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

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
	ctx context.Context
	fn  func(w *writer) error
	err error

	canvasID     string
	expectedHead int64
	commits      []canvas.Commit
	args         []any    // commits[i]'s args as text (nil: none), sharing the commit's encoding
	changes      []string // commits[i].Changes as JSON, sharing the commit's encoding
	idem         []store.IdempotencyRecord

	// unchecked: an Append without idempotency records, alone in its run
	// of Appends, whose head check flush folds into the INSERT of its
	// first commit (insGuarded) instead of querying the head first.
	unchecked bool
}

func (s *Store) putJob(j *job) {
	j.ctx, j.fn, j.err, j.commits, j.idem, j.unchecked = nil, nil, nil, nil, nil, false
	clear(j.args)
	clear(j.changes)
	j.args, j.changes = j.args[:0], j.changes[:0]
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
	err := s.commits.Do(ctx, j)
	if err == nil {
		err = j.err
	} else if errors.Is(err, canvas.ErrUnavailable) {
		err = fmt.Errorf("%w: %w", canvas.ErrNotWritten, errClosed("write")) // never queued
	} else {
		err = fmt.Errorf("sqlitestore: write not queued: %w", err)
	}
	s.putJob(j)
	return err
}

// writer is the one write connection and its prepared statements. Only the
// committer goroutine uses it.
type writer struct {
	conn                           *sql.Conn
	begin, commit, rollback        *sql.Stmt
	savepoint, release, rollbackTo *sql.Stmt
	headOf, has                    *sql.Stmt
	insGuarded                     *sql.Stmt // insGuardedSQL

	// Multi-row statements, prepared on first use: insCommits[k] inserts
	// k+1 rows, readHeads[k] reads k+1 heads, and so on. One statement per
	// chunk of up to maxRows rows costs far less than one per row.
	insCommits, insIdems [maxRows]*sql.Stmt
	readHeads, findKeys  [maxRows]*sql.Stmt
	args                 []any // reused argument buffer

	pending []*job               // checked Appends whose rows flush inserts
	keys    map[idemKey]struct{} // idempotency keys taken by this batch's Appends

	seg segment // the checks of the current run of Appends
}

type idemKey struct{ canvasID, key string }

// segment holds what a run of consecutive Appends of a batch (no other
// write between them) is checked against: the heads and the stored
// idempotency keys of all of them, read with a few multi-row queries before
// the first one is checked. Each check then moves the head in ids/heads
// only; the rows flush inserts move the heads in the database.
type segment struct {
	end     int                  // index in the batch of the first job past the run
	batched bool                 // the run's Appends are checked against this segment (else one by one)
	idx     map[string]int       // canvas id → index in ids
	ids     []string             // the run's canvases
	read    []int64              // head read from the database; -1: no such canvas
	heads   []int64              // head after the run's checked Appends
	stored  map[idemKey]struct{} // the run's idempotency keys that are already stored
}

func (g *segment) reset() {
	g.end, g.batched = 0, false
	clear(g.idx)
	clear(g.ids)
	g.ids, g.read, g.heads = g.ids[:0], g.read[:0], g.heads[:0]
	clear(g.stored)
}

// maxRows is the largest multi-row statement (SQLite allows 32766 parameters).
const maxRows = 32

const (
	insCommitSQL = `INSERT OR FAIL INTO commits (canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes) VALUES `
	commitRow    = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insIdemSQL   = `INSERT OR FAIL INTO idempotency (canvas_id, key, fingerprint, outcome, result, rev, created_at) VALUES `
	idemRow      = `(?, ?, ?, ?, ?, ?, ?)`
	// The lookups join a VALUES list (each row probes the index) rather
	// than test IN (...), for which SQLite first builds a temporary b-tree.
	readHeadsSQL = `SELECT c.id, ` + headOfC + ` FROM (VALUES `
	readHeadsEnd = `) AS v JOIN canvases AS c ON c.id = v.column1`
	findKeysSQL  = `SELECT i.canvas_id, i.key FROM (VALUES `
	findKeysEnd  = `) AS v JOIN idempotency AS i ON i.canvas_id = v.column1 AND i.key = v.column2`
)

// insGuardedSQL inserts one commit row only if its canvas exists and its
// head is the expected one (the last parameter): an Append's check and
// its write in one statement, for the common Append without idempotency
// records (its other commits follow in a plain multi-row INSERT).
// Otherwise its rev is NULL, which the column's NOT NULL refuses
// (SQLITE_CONSTRAINT_NOTNULL: nothing inserted, the transaction goes on),
// and checkAppend then says why. (A WHERE on an INSERT ... SELECT would
// say it without an error, but SQLite would first copy the row to a
// temporary table, as the SELECT reads the table it inserts into.)
const insGuardedSQL = `INSERT OR FAIL INTO commits (canvas_id, rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes) ` +
	`VALUES (?1, CASE WHEN (SELECT ` + headOfC + ` FROM canvases AS c WHERE c.id = ?1) = ?11 THEN ?2 END, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)`

// headOfC is the head of canvas c (a canvases row): the last revision in its
// log, 0 for none, read from the end of the unique (canvas_id, rev) index.
// An Append moves it by inserting its commits and writes no canvases row,
// which saves every group commit a statement and a page written to the log
// (migration 0007 dropped the head_rev column that Appends used to move).
// Only the writer connection appends, inside its transaction, so a head it
// read cannot move before its rows are in; the unique index would refuse a
// revision appended twice regardless.
const headOfC = `coalesce((SELECT max(rev) FROM commits WHERE canvas_id = c.id), 0)`

// The INSERTs are OR FAIL and the two tables have no foreign key, so SQLite
// keeps no statement journal for them: a failed INSERT may leave some of its
// rows behind, which is fine because every failure rolls back further (the
// whole transaction on the fast path, the job's savepoint when isolated).

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
	w := &writer{conn: conn, keys: map[idemKey]struct{}{},
		seg: segment{idx: map[string]int{}, stored: map[idemKey]struct{}{}}}
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
		{&w.headOf, `SELECT ` + headOfC + ` FROM canvases AS c WHERE id = ?`},
		{&w.has, `SELECT 1 FROM canvases WHERE id = ?`},
		{&w.insGuarded, insGuardedSQL},
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
	sts := []*sql.Stmt{w.begin, w.commit, w.rollback, w.savepoint, w.release, w.rollbackTo, w.headOf, w.has, w.insGuarded}
	for _, c := range []*[maxRows]*sql.Stmt{&w.insCommits, &w.insIdems, &w.readHeads, &w.findKeys} {
		sts = append(sts, c[:]...)
	}
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
		return fmt.Errorf("canvas %q: %w", canvasID, canvas.ErrNotFound)
	}
	if err != nil {
		return mapErr(op, err)
	}
	return nil
}

// commitBatch is the group committer's run function: it runs batch on the
// writer connection in one transaction (see runBatch) and counts it.
func (s *Store) commitBatch(batch []*job) {
	s.runBatch(s.w, batch)
	var appended int64
	for _, j := range batch {
		if j.err == nil && j.fn == nil {
			appended += int64(len(j.commits))
		}
	}
	s.commitsDone.Add(appended)
	s.jobsDone.Add(int64(len(batch)))
	s.batches.Add(1)
}

// runBatch runs the jobs in one transaction and sets every job's err; a
// job's nil err stands only if COMMIT succeeds.
//
// An Append is checked first (its idempotency keys are not stored, not even
// by an earlier Append of this batch; then the head is the expected one), so
// a failing Append writes nothing and needs no savepoint. A run of several
// consecutive Appends is checked together: one query reads the heads of all
// their canvases, one the idempotency keys among theirs that are stored
// (per chunk of up to maxRows), and each Append is then decided in memory,
// in batch order. The rows of the Appends that passed are inserted (which
// moves their heads) together at the end of the run: a few multi-row
// statements for the whole batch. A lone Append (its run holds no other)
// without idempotency records is checked by the INSERT of its first commit
// itself (insertGuarded), which saves the head query. Any other write runs
// in its own savepoint, after the pending rows are flushed.
//
// If that fast path meets an unexpected error (say a row that violates a
// constraint the checks cannot see), the transaction is rolled back and the
// batch runs again isolated: every job in its own savepoint with its own
// statements, so only the culprit fails. An error that breaks the
// transaction itself (I/O, full disk) fails every job.
func (s *Store) runBatch(w *writer, batch []*job) {
	if !s.tryBatch(w, batch, false) {
		return
	}
	s.reruns.Add(1)
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
	w.seg.reset()
	single := len(batch) == 1
	for i, j := range batch {
		j.unchecked = false
		if err := j.ctx.Err(); err != nil {
			j.err = fmt.Errorf("sqlitestore: write canceled before it ran: %w", err)
			continue
		}
		if j.fn == nil && !isolated {
			if i >= w.seg.end {
				if err := w.readSegment(batch, i); err != nil {
					s.abort(w, batch, err)
					return !single
				}
			}
			var fatal error
			switch {
			case w.seg.batched:
				j.err, fatal = w.checkInSegment(j)
			case len(j.idem) == 0 && len(j.commits) > 0:
				j.unchecked = true // flush checks it as it inserts (insGuarded)
			default:
				j.err, fatal = w.checkAppend(j)
			}
			if fatal != nil {
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
	w.seg.reset()
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

// readSegment starts the segment of the run of Appends at batch[start]: it
// ends before the next job that is not an Append. A run of one Append is
// checked by checkAppend's statements; a longer one reads the heads of its
// canvases and its stored idempotency keys here, for checkInSegment. The
// previous segment's rows must have been flushed.
func (w *writer) readSegment(batch []*job, start int) error {
	g := &w.seg
	g.reset()
	end := start
	for end < len(batch) && batch[end].fn == nil {
		end++
	}
	g.end = end
	if end-start == 1 {
		return nil
	}
	g.batched = true
	run := batch[start:end]
	for _, j := range run {
		if _, ok := g.idx[j.canvasID]; !ok {
			g.idx[j.canvasID] = len(g.ids)
			g.ids = append(g.ids, j.canvasID)
			g.read = append(g.read, -1)
		}
	}
	for lo := 0; lo < len(g.ids); lo += maxRows {
		ids := g.ids[lo:min(lo+maxRows, len(g.ids))]
		st, err := w.cached(&w.readHeads, len(ids), readHeadsSQL, "(?)", ", ", readHeadsEnd)
		if err != nil {
			return err
		}
		args := w.args[:0]
		for _, id := range ids {
			args = append(args, id)
		}
		w.args = args
		err = w.scan(st, func(rows *sql.Rows) error {
			var id sql.RawBytes
			var head int64
			if err := rows.Scan(&id, &head); err != nil {
				return err
			}
			if k, ok := g.idx[string(id)]; ok {
				g.read[k] = head
			}
			return nil
		})
		if err != nil {
			return mapErr("append: read heads", err)
		}
	}
	g.heads = append(g.heads, g.read...)

	args, n := w.args[:0], 0
	find := func() error {
		st, err := w.cached(&w.findKeys, n, findKeysSQL, "(?, ?)", ", ", findKeysEnd)
		if err != nil {
			return err
		}
		w.args = args
		err = w.scan(st, func(rows *sql.Rows) error {
			var k idemKey
			if err := rows.Scan(&k.canvasID, &k.key); err != nil {
				return err
			}
			g.stored[k] = struct{}{}
			return nil
		})
		args, n = w.args[:0], 0
		if err != nil {
			return mapErr("append: find idempotency keys", err)
		}
		return nil
	}
	for _, j := range run {
		for i := range j.idem {
			args = append(args, j.canvasID, j.idem[i].Key)
			if n++; n == maxRows {
				if err := find(); err != nil {
					return err
				}
			}
		}
	}
	if n > 0 {
		return find()
	}
	return nil
}

// scan runs query st with w.args and calls fn for each row.
func (w *writer) scan(st *sql.Stmt, fn func(*sql.Rows) error) error {
	rows, err := st.QueryContext(bg, w.args...)
	clear(w.args)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// checkInSegment decides an Append of a batched segment, in memory: err is
// the Append's own failure (nothing written), fatal an error that breaks
// the transaction. The rows flush inserts move the head in the database.
func (w *writer) checkInSegment(j *job) (err, fatal error) {
	g := &w.seg
	for i := range j.idem {
		k := idemKey{j.canvasID, j.idem[i].Key}
		_, taken := w.keys[k]
		if _, stored := g.stored[k]; taken || stored {
			return fmt.Errorf("sqlitestore: append to canvas %q: idempotency key %q: %w", j.canvasID, k.key, canvas.ErrDuplicateIdempotencyKey), nil
		}
	}
	x, ok := g.idx[j.canvasID]
	if !ok {
		return nil, fmt.Errorf("sqlitestore: append to canvas %q: not in the checked segment", j.canvasID)
	}
	switch head := g.heads[x]; {
	case head < 0:
		return fmt.Errorf("canvas %q: %w", j.canvasID, canvas.ErrNotFound), nil
	case head != j.expectedHead:
		return fmt.Errorf("sqlitestore: append to canvas %q: expected head %d, stored head is %d: %w",
			j.canvasID, j.expectedHead, head, canvas.ErrHeadMismatch), nil
	}
	g.heads[x] = j.expectedHead + int64(len(j.commits))
	for i := range j.idem {
		w.keys[idemKey{j.canvasID, j.idem[i].Key}] = struct{}{}
	}
	return nil, nil
}

// checkAppend decides an Append inside the batch's transaction with its own
// statements, writing nothing (flush inserts its rows): err is the Append's own
// failure (nothing written), fatal an error that breaks the transaction.
func (w *writer) checkAppend(j *job) (err, fatal error) {
	for i := range j.idem {
		k := idemKey{j.canvasID, j.idem[i].Key}
		if _, dup := w.keys[k]; dup {
			return fmt.Errorf("sqlitestore: append to canvas %q: idempotency key %q: %w", j.canvasID, k.key, canvas.ErrDuplicateIdempotencyKey), nil
		}
	}
	for lo := 0; lo < len(j.idem); lo += maxRows {
		rs := j.idem[lo:min(lo+maxRows, len(j.idem))]
		st, err := w.cached(&w.findKeys, len(rs), findKeysSQL, "(?, ?)", ", ", findKeysEnd)
		if err != nil {
			return nil, err
		}
		args := w.args[:0]
		for i := range rs {
			args = append(args, j.canvasID, rs[i].Key)
		}
		w.args = args
		var k idemKey
		err = st.QueryRowContext(bg, args...).Scan(&k.canvasID, &k.key)
		clear(args)
		if err == nil {
			return fmt.Errorf("sqlitestore: append to canvas %q: idempotency key %q: %w", j.canvasID, k.key, canvas.ErrDuplicateIdempotencyKey), nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, mapErr("append to "+j.canvasID, err)
		}
	}
	var head int64
	switch err := w.headOf.QueryRowContext(bg, j.canvasID).Scan(&head); {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("canvas %q: %w", j.canvasID, canvas.ErrNotFound), nil
	case err != nil:
		return nil, mapErr("append to "+j.canvasID, err)
	case head != j.expectedHead:
		return fmt.Errorf("sqlitestore: append to canvas %q: expected head %d, stored head is %d: %w",
			j.canvasID, j.expectedHead, head, canvas.ErrHeadMismatch), nil
	}
	for i := range j.idem {
		w.keys[idemKey{j.canvasID, j.idem[i].Key}] = struct{}{}
	}
	return nil, nil
}

// insertGuarded inserts the first commit of the unchecked Append j if its
// canvas exists and its head is j's expected head, in one statement, and
// reports whether it did. If not, checkAppend finds j's own failure (j.err;
// nothing was written); a failure it cannot find breaks the transaction.
func (w *writer) insertGuarded(j *job) (bool, error) {
	c := &j.commits[0]
	_, err := w.insGuarded.ExecContext(bg, j.canvasID, c.Rev, c.EventID, c.CmdID, c.Type, j.args[0],
		c.ActorID, string(c.ActorType), c.TS.UnixMicro(), j.changes[0], j.expectedHead)
	if err == nil {
		return true, nil
	}
	if se := (*sqlite.Error)(nil); !errors.As(err, &se) || se.Code() != sqlite3.SQLITE_CONSTRAINT_NOTNULL {
		return false, mapErr("append", err)
	}
	own, fatal := w.checkAppend(j)
	if fatal != nil {
		return false, fatal
	}
	if own == nil {
		return false, fmt.Errorf("sqlitestore: append to canvas %q: the guarded insert wrote nothing, yet head %d is as expected", j.canvasID, j.expectedHead)
	}
	j.err = own
	return false, nil
}

// flush writes what the pending (checked) Appends decided: the idempotency
// records, then the commits (which move the heads), up to maxRows rows per
// statement. It ends the segment. An error here is
// unexpected (the checks passed) and breaks the transaction.
// An unchecked Append (alone in pending) is checked as its first commit is
// inserted (insertGuarded).
func (w *writer) flush() error {
	defer func() {
		w.pending = w.pending[:0]
		w.seg.reset()
	}()
	skip := 0 // commits of pending[0] inserted already
	if len(w.pending) == 1 && w.pending[0].unchecked {
		if ok, err := w.insertGuarded(w.pending[0]); err != nil || !ok {
			return err
		}
		skip = 1
	}
	args, rows := w.args[:0], 0
	exec := func(st *sql.Stmt) (int64, error) {
		res, err := st.ExecContext(bg, args...)
		clear(args)
		args, rows = args[:0], 0
		if err != nil {
			return 0, mapErr("append", err)
		}
		return res.RowsAffected()
	}
	insert := func(cache *[maxRows]*sql.Stmt, head, row string) error {
		st, err := w.cached(cache, rows, head, row, ", ", "")
		if err != nil {
			return err
		}
		_, err = exec(st)
		return err
	}
	for _, j := range w.pending {
		for i := range j.idem {
			r := &j.idem[i]
			result := r.Result
			if result == nil {
				result = []byte{}
			}
			args = append(args, j.canvasID, r.Key, r.Fingerprint, string(r.Outcome), result, r.Rev, r.CreatedAt.UnixMicro())
			if rows++; rows == maxRows {
				if err := insert(&w.insIdems, insIdemSQL, idemRow); err != nil {
					return err
				}
			}
		}
	}
	if rows > 0 {
		if err := insert(&w.insIdems, insIdemSQL, idemRow); err != nil {
			return err
		}
	}
	for _, j := range w.pending {
		for i := skip; i < len(j.commits); i++ {
			c := &j.commits[i]
			args = append(args, j.canvasID, c.Rev, c.EventID, c.CmdID, c.Type, j.args[i],
				c.ActorID, string(c.ActorType), c.TS.UnixMicro(), j.changes[i])
			if rows++; rows == maxRows {
				if err := insert(&w.insCommits, insCommitSQL, commitRow); err != nil {
					return err
				}
			}
		}
	}
	if rows > 0 {
		if err := insert(&w.insCommits, insCommitSQL, commitRow); err != nil {
			return err
		}
	}
	w.args = args
	return nil
}
