// Package sqlitestore is the embedded store.Store: one SQLite database file
// (modernc.org/sqlite, pure Go) in WAL mode with synchronous=NORMAL, which
// makes every committed transaction durable against a crash of the process
// (kill -9), though not against power loss.
//
// # Concurrency model
//
// All writes go through ONE writer connection owned by a single committer
// goroutine. Concurrent write calls (Append from many canvases' writer
// goroutines, CreateCanvas, ...) are queued and GROUP COMMITTED: the
// committer takes everything queued (up to a batch limit) into one
// transaction, commits once, and only then answers every caller. Each call
// keeps its own outcome: an Append is checked before it writes anything
// (idempotency keys, then the head; for a run of Appends, with one query
// for all their heads and one for all their keys; a lone one without keys
// with the INSERT of its first commit, which inserts nothing on the wrong
// head), so one that fails (head
// mismatch, duplicate key, missing canvas) leaves the others untouched, and
// the heads and rows of the Appends that passed are written together with
// multi-row statements; any other write runs in its own SAVEPOINT.
//
// The commits and idempotency rows carry no foreign key to their canvas:
// they are written only for an Append whose canvas row was found (and its
// head moved) in the same transaction, and DeleteCanvas deletes them
// explicitly. Reads use a separate pool of
// read-only connections and never wait for the writer (WAL snapshots). A
// background connection checkpoints the log, keeping that work and its
// fsync off the commit path.
//
// Timestamps are stored as Unix microseconds and returned in UTC, truncated
// to the microsecond. Commit args and changes are stored as JSON text.
package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/migrations"
	"github.com/canvasd/canvasd/store"
)

// pageSize is the page size of new databases (1024 and 2048 measured no
// better for many-canvas transactions, and overflow more).
const pageSize = 4096

// Dialect is the migrations dialect this store applies.
const Dialect = "sqlite"

// Option configures Open.
type Option func(*config)

type config struct {
	log         *slog.Logger
	readers     int
	maxBatch    int
	busyTimeout time.Duration
	cacheKiB    int
	checkpoint  time.Duration
	fullSync    bool
	now         func() time.Time
}

// WithNow sets the clock of the timestamps the store writes itself (an
// agent session's claim and cancellation, a shared secret's creation;
// default time.Now). Commits, tokens and sessions carry the times their
// callers give them.
func WithNow(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithReaders sets the maximum number of read connections (default
// max(4, 2*GOMAXPROCS)). n < 1 is ignored.
func WithReaders(n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.readers = n
		}
	}
}

// WithMaxBatch bounds how many write calls one group-commit transaction
// holds (default 256). n < 1 is ignored.
func WithMaxBatch(n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.maxBatch = n
		}
	}
}

// WithBusyTimeout sets how long a connection waits for a lock held by
// another process before failing with canvas.ErrUnavailable (default 5 s).
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) {
		if d >= 0 {
			c.busyTimeout = d
		}
	}
}

// WithFullSync makes every commit fsync the write-ahead log
// (synchronous=FULL): acknowledged commits then survive power loss and
// operating-system crashes too, at the cost of one fsync per group commit.
// The default (synchronous=NORMAL) survives a crash of the process only.
func WithFullSync() Option { return func(c *config) { c.fullSync = true } }

// writerDSN is the writer connection's DSN: synchronous=NORMAL, or FULL
// (fsync per commit) with fullSync.
func writerDSN(path, common string, fullSync bool) string {
	sync := "NORMAL"
	if fullSync {
		sync = "FULL"
	}
	return path + "?" + common + "&_pragma=synchronous(" + sync + ")&_pragma=temp_store(MEMORY)" +
		"&_pragma=wal_autocheckpoint(16384)&_pragma=journal_size_limit(67108864)&_txlock=immediate"
}

// WithCheckpointInterval sets how often a background connection copies the
// write-ahead log into the database file (default 250 ms), which keeps that
// work, and its fsync, off the commit path. The writer still checkpoints by
// itself when the log passes 64 MiB. d ≤ 0 is ignored.
func WithCheckpointInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.checkpoint = d
		}
	}
}

// Store is the SQLite implementation of store.Store. It is safe for
// concurrent use. Only one Store (one process) may write a database file at
// a time; a second writer waits up to the busy timeout and then fails.
type Store struct {
	log  *slog.Logger
	path string
	now  func() time.Time // WithNow

	wdb  *sql.DB // exactly one connection, owned by the committer
	rdb  *sql.DB // read-only pool
	ckdb *sql.DB // one connection for background WAL checkpoints

	// read statements, prepared on rdb (database/sql re-prepares per connection)
	getCanvas, listCanvases, canvasExists, readCommits, loadSnap, getIdem,
	getNamed, listNamed, tokenByHash *sql.Stmt

	w       *writer // the write connection; only the group committer's loop uses it
	commits *store.GroupCommitter[*job]
	closed  atomic.Bool
	ckQuit  chan struct{} // closed by Close to stop the checkpointer
	ckDone  chan struct{} // closed when the checkpointer has exited

	batches, jobsDone, commitsDone, reruns atomic.Int64

	jobPool   sync.Pool
	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path, applies the
// pending migrations, and starts the committer. The caller must Close the
// Store. path is a file path; it may not contain '?'. ctx bounds the opening
// and the migrations only.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := config{
		log:         slog.New(slog.DiscardHandler),
		readers:     max(4, 2*runtime.GOMAXPROCS(0)),
		maxBatch:    256,
		busyTimeout: 5 * time.Second,
		cacheKiB:    32 << 10,
		checkpoint:  250 * time.Millisecond,
		now:         time.Now,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlitestore: invalid database path %q: %w", path, canvas.ErrInvalid)
	}
	busy := cfg.busyTimeout.Milliseconds()
	common := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=cache_size(-%d)", busy, cfg.cacheKiB)
	// journal_mode=WAL is persistent in the file; synchronous=NORMAL in WAL
	// mode syncs at checkpoints only, which survives a process crash.
	// The writer checkpoints by itself only when the background checkpointer
	// falls behind (16384 pages = 64 MiB of log).
	wdsn := writerDSN(path, common, cfg.fullSync)
	rdsn := path + "?" + common + "&_pragma=query_only(1)"
	ckdsn := path + "?" + common + "&_pragma=synchronous(NORMAL)"

	s := &Store{log: cfg.log, path: path, now: cfg.now, ckQuit: make(chan struct{}), ckDone: make(chan struct{})}
	s.jobPool.New = func() any { return &job{} }

	var err error
	if s.wdb, err = sql.Open("sqlite", wdsn); err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)

	conn, err := s.wdb.Conn(ctx)
	if err != nil {
		s.wdb.Close()
		return nil, mapErr("open "+path, err)
	}
	fail := func(err error) (*Store, error) {
		conn.Close()
		s.wdb.Close()
		if s.rdb != nil {
			s.rdb.Close()
		}
		if s.ckdb != nil {
			s.ckdb.Close()
		}
		return nil, err
	}
	// page_size takes effect only on a new, empty database, so it is set
	// before journal_mode (which writes the file header).
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d", pageSize)); err != nil {
		return fail(mapErr("open "+path, err))
	}
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return fail(mapErr("open "+path, err))
	}
	if !strings.EqualFold(mode, "wal") {
		return fail(fmt.Errorf("sqlitestore: open %s: journal_mode is %q, want wal: %w", path, mode, canvas.ErrUnavailable))
	}
	if err := migrate(ctx, conn); err != nil {
		return fail(err)
	}

	if s.rdb, err = sql.Open("sqlite", rdsn); err != nil {
		return fail(fmt.Errorf("sqlitestore: open %s: %w", path, err))
	}
	s.rdb.SetMaxOpenConns(cfg.readers)
	s.rdb.SetMaxIdleConns(cfg.readers)
	s.rdb.SetConnMaxIdleTime(5 * time.Minute)
	if err := s.prepareReads(ctx); err != nil {
		return fail(err)
	}
	if s.ckdb, err = sql.Open("sqlite", ckdsn); err != nil {
		return fail(fmt.Errorf("sqlitestore: open %s: %w", path, err))
	}
	s.ckdb.SetMaxOpenConns(1)
	if err := s.ckdb.PingContext(ctx); err != nil {
		return fail(mapErr("open "+path, err))
	}
	w, err := newWriter(ctx, conn)
	if err != nil {
		return fail(err)
	}
	s.w = w
	s.commits = store.NewGroupCommitter(1, cfg.maxBatch, 0, s.commitBatch)
	go s.checkpointLoop(cfg.checkpoint)
	return s, nil
}

// checkpointLoop copies the log into the database file every interval
// while there are new writes. PASSIVE never blocks the writer or readers.
func (s *Store) checkpointLoop(every time.Duration) {
	defer close(s.ckDone)
	t := time.NewTicker(every)
	defer t.Stop()
	last := s.batches.Load()
	for {
		select {
		case <-s.ckQuit:
			return
		case <-t.C:
		}
		n := s.batches.Load()
		if n == last {
			continue
		}
		last = n
		var busy, logFrames, done int64
		if err := s.ckdb.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &done); err != nil {
			s.log.Warn("sqlitestore: checkpoint failed", "err", err)
			continue
		}
		s.log.Debug("sqlitestore: checkpoint", "log_frames", logFrames, "checkpointed", done)
	}
}

// migrate applies the pending migrations, each in its own transaction with
// its schema_migrations row.
func migrate(ctx context.Context, conn *sql.Conn) error {
	ms, err := migrations.Load(Dialect)
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, migrations.SchemaMigrationsDDL); err != nil {
		return mapErr("migrate", err)
	}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		return mapErr("migrate", err)
	}
	var applied []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return mapErr("migrate", err)
		}
		applied = append(applied, v)
	}
	if err := rows.Close(); err != nil {
		return mapErr("migrate", err)
	}
	if err := migrations.Check(ms, applied); err != nil {
		return err
	}
	for _, m := range migrations.Pending(ms, applied) {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return mapErr("migrate", err)
		}
		if _, err := tx.ExecContext(ctx, m.Up); err != nil {
			tx.Rollback()
			return mapErr(fmt.Sprintf("migrate: version %d (%s)", m.Version, m.Name), err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
			m.Version, m.Name, time.Now().UnixMicro()); err != nil {
			tx.Rollback()
			return mapErr("migrate", err)
		}
		if err := tx.Commit(); err != nil {
			return mapErr("migrate", err)
		}
	}
	return nil
}

func (s *Store) prepareReads(ctx context.Context) error {
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{
		{&s.getCanvas, `SELECT title, ` + headOfC + `, created_at, created_by FROM canvases AS c WHERE id = ?`},
		{&s.listCanvases, `SELECT id, title, ` + headOfC + `, created_at, created_by FROM canvases AS c ORDER BY created_at, id`},
		{&s.canvasExists, `SELECT 1 FROM canvases WHERE id = ?`},
		{&s.readCommits, `SELECT rev, event_id, cmd_id, type, args, actor_id, actor_type, ts, changes
			FROM commits WHERE canvas_id = ? AND rev > ? ORDER BY rev LIMIT ?`},
		{&s.loadSnap, `SELECT rev, schema, data FROM state_snapshots
			WHERE canvas_id = ? AND rev <= ? ORDER BY rev DESC LIMIT 1`},
		{&s.getIdem, `SELECT fingerprint, outcome, result, rev, created_at FROM idempotency WHERE canvas_id = ? AND key = ?`},
		{&s.getNamed, `SELECT label, description, rev, created_by, created_at FROM named_snapshots WHERE canvas_id = ? AND id = ?`},
		{&s.listNamed, `SELECT id, label, description, rev, created_by, created_at FROM named_snapshots
			WHERE canvas_id = ? ORDER BY created_at, id`},
		{&s.tokenByHash, `SELECT ` + tokenColumns + ` FROM tokens WHERE hash = ?`},
	} {
		st, err := s.rdb.PrepareContext(ctx, p.q)
		if err != nil {
			return mapErr("prepare", err)
		}
		*p.dst = st
	}
	return nil
}

// Close stops accepting calls, waits for the queued writes to commit, and
// closes the database. Calls after Close fail with canvas.ErrUnavailable.
// Close is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.commits.Close()
		s.w.close()
		close(s.ckQuit)
		<-s.ckDone
		var errs []error
		for _, st := range []*sql.Stmt{s.getCanvas, s.listCanvases, s.canvasExists, s.readCommits, s.loadSnap,
			s.getIdem, s.getNamed, s.listNamed, s.tokenByHash} {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
		// The writer closes last: closing the last connection checkpoints
		// and removes the log.
		errs = append(errs, s.ckdb.Close(), s.rdb.Close(), s.wdb.Close())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Stats are counters of the group committer since Open.
type Stats struct {
	Transactions int64 // write transactions committed or rolled back
	Writes       int64 // write calls (Append, CreateCanvas, ...) they carried
	Commits      int64 // canvas commits durably appended
	Reruns       int64 // transactions rolled back after an unexpected error and run again isolated
}

// Stats returns the committer's counters; Writes/Transactions is the mean
// group-commit batch size.
func (s *Store) Stats() Stats {
	return Stats{Transactions: s.batches.Load(), Writes: s.jobsDone.Load(), Commits: s.commitsDone.Load(), Reruns: s.reruns.Load()}
}

// Ping reports whether the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed("ping")
	}
	var one int
	if err := s.rdb.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return mapErr("ping", err)
	}
	return nil
}

// ---- canvases ----

// CreateCanvas stores a new canvas with head 0 (c.HeadRev is ignored). An
// existing id is canvas.ErrAlreadyExists; an empty id canvas.ErrInvalid.
func (s *Store) CreateCanvas(ctx context.Context, c canvas.Canvas) error {
	if c.ID == "" {
		return fmt.Errorf("sqlitestore: create canvas: %w", canvas.Invalid("canvas_id", "must not be empty"))
	}
	return s.write(ctx, func(w *writer) error {
		res, err := w.conn.ExecContext(bg, `INSERT INTO canvases (id, title, created_at, created_by)
			VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, c.ID, c.Title, c.CreatedAt.UnixMicro(), c.CreatedBy)
		if err != nil {
			return mapErr("create canvas "+c.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("canvas %q: %w", c.ID, canvas.ErrAlreadyExists)
		}
		return nil
	})
}

// GetCanvas returns the canvas with its head, or canvas.ErrNotFound.
func (s *Store) GetCanvas(ctx context.Context, id string) (canvas.Canvas, error) {
	c := canvas.Canvas{ID: id}
	var created int64
	err := s.getCanvas.QueryRowContext(ctx, id).Scan(&c.Title, &c.HeadRev, &created, &c.CreatedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return canvas.Canvas{}, fmt.Errorf("canvas %q: %w", id, canvas.ErrNotFound)
	}
	if err != nil {
		return canvas.Canvas{}, mapErr("get canvas "+id, err)
	}
	c.CreatedAt = fromMicros(created)
	return c, nil
}

// ListCanvases returns every canvas ordered by creation time, then id.
func (s *Store) ListCanvases(ctx context.Context) ([]canvas.Canvas, error) {
	rows, err := s.listCanvases.QueryContext(ctx)
	if err != nil {
		return nil, mapErr("list canvases", err)
	}
	defer rows.Close()
	out := []canvas.Canvas{}
	for rows.Next() {
		var c canvas.Canvas
		var created int64
		if err := rows.Scan(&c.ID, &c.Title, &c.HeadRev, &created, &c.CreatedBy); err != nil {
			return nil, mapErr("list canvases", err)
		}
		c.CreatedAt = fromMicros(created)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("list canvases", err)
	}
	return out, nil
}

// DeleteCanvas removes a canvas with its log, snapshots, idempotency
// records, named snapshots and agent sessions/todos, or returns
// canvas.ErrNotFound.
func (s *Store) DeleteCanvas(ctx context.Context, id string) error {
	return s.write(ctx, func(w *writer) error {
		// commits and idempotency have no foreign key (see migration 0002),
		// and the todos none to their session: delete them first.
		for _, q := range []string{
			`DELETE FROM commits WHERE canvas_id = ?`,
			`DELETE FROM idempotency WHERE canvas_id = ?`,
			`DELETE FROM canvas_agent_todos WHERE session_id IN (SELECT id FROM canvas_agent_sessions WHERE canvas_id = ?)`,
		} {
			if _, err := w.conn.ExecContext(bg, q, id); err != nil {
				return mapErr("delete canvas "+id, err)
			}
		}
		res, err := w.conn.ExecContext(bg, `DELETE FROM canvases WHERE id = ?`, id) // the rest cascades
		if err != nil {
			return mapErr("delete canvas "+id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("canvas %q: %w", id, canvas.ErrNotFound)
		}
		return nil
	})
}

// ---- event log ----

// Append implements store.Store.Append. Besides the contract there, it
// checks that commits[i].Rev == expectedHead+1+i and that each commit's
// CanvasID is empty or canvasID (canvas.ErrInvalid otherwise, nothing
// written). It returns once the group-commit transaction carrying it has
// committed: nil means durable, an error means nothing of this call was
// written. ctx is honoured until the call is taken into a transaction; after
// that Append waits for the outcome (one transaction) so that it is never
// ambiguous.
func (s *Store) Append(ctx context.Context, canvasID string, expectedHead int64, commits []canvas.Commit, idem []store.IdempotencyRecord) error {
	if expectedHead < 0 {
		return fmt.Errorf("sqlitestore: append to canvas %q: expected head %d < 0: %w", canvasID, expectedHead, canvas.ErrInvalid)
	}
	j := s.jobPool.Get().(*job)
	j.fn = nil
	j.canvasID, j.expectedHead, j.commits, j.idem = canvasID, expectedHead, commits, idem
	j.args, j.changes = j.args[:0], j.changes[:0]
	for i := range commits {
		c := &commits[i]
		if c.Rev != expectedHead+1+int64(i) || (c.CanvasID != "" && c.CanvasID != canvasID) {
			s.putJob(j)
			return fmt.Errorf("sqlitestore: append to canvas %q at head %d: commit %d has canvas %q rev %d, want rev %d: %w",
				canvasID, expectedHead, i, c.CanvasID, c.Rev, expectedHead+1+int64(i), canvas.ErrInvalid)
		}
		args, ok, changes, err := c.StoredText()
		if err != nil {
			s.putJob(j)
			return fmt.Errorf("sqlitestore: append to canvas %q: encode changes of rev %d: %v: %w", canvasID, c.Rev, err, canvas.ErrInvalid)
		}
		var a any
		if ok {
			a = args
		}
		j.args, j.changes = append(j.args, a), append(j.changes, changes)
	}
	return s.submit(ctx, j)
}

// ReadCommits implements store.Store.ReadCommits; limit ≤ 0 means no limit.
func (s *Store) ReadCommits(ctx context.Context, canvasID string, afterRev int64, limit int) ([]canvas.Commit, error) {
	lim := int64(limit)
	if limit <= 0 {
		lim = -1
	}
	rows, err := s.readCommits.QueryContext(ctx, canvasID, afterRev, lim)
	if err != nil {
		return nil, mapErr("read commits of "+canvasID, err)
	}
	defer rows.Close()
	out := []canvas.Commit{}
	for rows.Next() {
		c := canvas.Commit{CanvasID: canvasID}
		var args []byte
		var changes sql.RawBytes
		var ts int64
		var actorType string
		if err := rows.Scan(&c.Rev, &c.EventID, &c.CmdID, &c.Type, &args, &c.ActorID, &actorType, &ts, &changes); err != nil {
			return nil, mapErr("read commits of "+canvasID, err)
		}
		c.ActorType = canvas.ActorType(actorType)
		if args != nil {
			c.Args = args
		}
		c.TS = fromMicros(ts)
		if err := canvas.UnmarshalChanges(changes, &c.Changes); err != nil {
			return nil, fmt.Errorf("sqlitestore: read commits of %q: rev %d: corrupt changes: %w", canvasID, c.Rev, err)
		}
		if c.Changes == nil {
			c.Changes = []canvas.Change{}
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("read commits of "+canvasID, err)
	}
	if len(out) == 0 {
		if err := s.mustExist(ctx, canvasID, "read commits"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Store) mustExist(ctx context.Context, canvasID, op string) error {
	var one int
	err := s.canvasExists.QueryRowContext(ctx, canvasID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("canvas %q: %w", canvasID, canvas.ErrNotFound)
	}
	if err != nil {
		return mapErr(op+" "+canvasID, err)
	}
	return nil
}

// ---- state snapshots ----

// SaveStateSnapshot stores snap (replacing a stored snapshot at the same
// rev); a missing canvas is canvas.ErrNotFound.
func (s *Store) SaveStateSnapshot(ctx context.Context, canvasID string, snap store.StateSnapshot) error {
	data := snap.Data
	if data == nil {
		data = []byte{}
	}
	return s.write(ctx, func(w *writer) error {
		if err := w.mustExist(canvasID, "save state snapshot"); err != nil {
			return err
		}
		if snap.EventID != "" {
			var one int
			err := w.conn.QueryRowContext(bg, `SELECT 1 FROM commits WHERE canvas_id = ? AND rev = ? AND event_id = ?`, canvasID, snap.Rev, snap.EventID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("canvas %q has no commit %s at rev %d (deleted and created again?): %w", canvasID, snap.EventID, snap.Rev, canvas.ErrNotFound)
			}
			if err != nil {
				return mapErr("save state snapshot of "+canvasID, err)
			}
		}
		if _, err := w.conn.ExecContext(bg, `INSERT INTO state_snapshots (canvas_id, rev, schema, data) VALUES (?, ?, ?, ?)
			ON CONFLICT (canvas_id, rev) DO UPDATE SET schema = excluded.schema, data = excluded.data`,
			canvasID, snap.Rev, snap.Schema, data); err != nil {
			return mapErr("save state snapshot of "+canvasID, err)
		}
		return nil
	})
}

// LoadStateSnapshot returns the snapshot with the greatest Rev ≤ atOrBefore,
// or canvas.ErrNotFound.
func (s *Store) LoadStateSnapshot(ctx context.Context, canvasID string, atOrBefore int64) (store.StateSnapshot, error) {
	var snap store.StateSnapshot
	err := s.loadSnap.QueryRowContext(ctx, canvasID, atOrBefore).Scan(&snap.Rev, &snap.Schema, &snap.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return store.StateSnapshot{}, fmt.Errorf("state snapshot of canvas %q at or before rev %d: %w",
			canvasID, atOrBefore, canvas.ErrNotFound)
	}
	if err != nil {
		return store.StateSnapshot{}, mapErr("load state snapshot of "+canvasID, err)
	}
	return snap, nil
}

// ---- idempotency ----

// GetIdempotency returns the record for (canvasID, key), or canvas.ErrNotFound.
func (s *Store) GetIdempotency(ctx context.Context, canvasID, key string) (store.IdempotencyRecord, error) {
	r := store.IdempotencyRecord{CanvasID: canvasID, Key: key}
	var created int64
	var outcome string
	err := s.getIdem.QueryRowContext(ctx, canvasID, key).Scan(&r.Fingerprint, &outcome, &r.Result, &r.Rev, &created)
	r.Outcome = store.Outcome(outcome)
	if errors.Is(err, sql.ErrNoRows) {
		return store.IdempotencyRecord{}, fmt.Errorf("idempotency key %q of canvas %q: %w", key, canvasID, canvas.ErrNotFound)
	}
	if err != nil {
		return store.IdempotencyRecord{}, mapErr("get idempotency record", err)
	}
	r.CreatedAt = fromMicros(created)
	return r, nil
}

// PruneIdempotency deletes the records created before cutoff, on every
// canvas, and says how many.
func (s *Store) PruneIdempotency(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, func(w *writer) error {
		res, err := w.conn.ExecContext(bg, `DELETE FROM idempotency WHERE created_at < ?`, cutoff.UnixMicro())
		if err != nil {
			return mapErr("prune idempotency", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// ---- named snapshots ----

// CreateNamedSnapshot stores a marker. Ids are unique per canvas: an existing
// (canvas, id) is canvas.ErrAlreadyExists; a missing canvas canvas.ErrNotFound.
func (s *Store) CreateNamedSnapshot(ctx context.Context, ns store.NamedSnapshot) error {
	return s.write(ctx, func(w *writer) error {
		if err := w.mustExist(ns.CanvasID, "create named snapshot"); err != nil {
			return err
		}
		res, err := w.conn.ExecContext(bg, `INSERT INTO named_snapshots
			(canvas_id, id, label, description, rev, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`,
			ns.CanvasID, ns.ID, ns.Label, ns.Description, ns.Rev, ns.CreatedBy, ns.CreatedAt.UnixMicro())
		if err != nil {
			return mapErr("create named snapshot", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("snapshot %q of canvas %q: %w", ns.ID, ns.CanvasID, canvas.ErrAlreadyExists)
		}
		return nil
	})
}

// GetNamedSnapshot returns one marker, or canvas.ErrNotFound.
func (s *Store) GetNamedSnapshot(ctx context.Context, canvasID, id string) (store.NamedSnapshot, error) {
	ns := store.NamedSnapshot{CanvasID: canvasID, ID: id}
	var created int64
	err := s.getNamed.QueryRowContext(ctx, canvasID, id).Scan(&ns.Label, &ns.Description, &ns.Rev, &ns.CreatedBy, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return store.NamedSnapshot{}, fmt.Errorf("snapshot %q of canvas %q: %w", id, canvasID, canvas.ErrNotFound)
	}
	if err != nil {
		return store.NamedSnapshot{}, mapErr("get named snapshot", err)
	}
	ns.CreatedAt = fromMicros(created)
	return ns, nil
}

// ListNamedSnapshots returns a canvas's markers, oldest first (creation
// time, then id); a missing canvas is canvas.ErrNotFound.
func (s *Store) ListNamedSnapshots(ctx context.Context, canvasID string) ([]store.NamedSnapshot, error) {
	rows, err := s.listNamed.QueryContext(ctx, canvasID)
	if err != nil {
		return nil, mapErr("list named snapshots", err)
	}
	defer rows.Close()
	out := []store.NamedSnapshot{}
	for rows.Next() {
		ns := store.NamedSnapshot{CanvasID: canvasID}
		var created int64
		if err := rows.Scan(&ns.ID, &ns.Label, &ns.Description, &ns.Rev, &ns.CreatedBy, &created); err != nil {
			return nil, mapErr("list named snapshots", err)
		}
		ns.CreatedAt = fromMicros(created)
		out = append(out, ns)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("list named snapshots", err)
	}
	if len(out) == 0 {
		if err := s.mustExist(ctx, canvasID, "list named snapshots"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ---- tokens ----

// CreateToken stores a token. An existing actor id (or hash) is
// canvas.ErrAlreadyExists.
func (s *Store) CreateToken(ctx context.Context, t store.TokenRecord) error {
	cs := t.Canvases
	if cs == nil {
		cs = []string{}
	}
	canvases, err := json.Marshal(cs)
	if err != nil {
		return fmt.Errorf("sqlitestore: create token: %w", err)
	}
	return s.write(ctx, func(w *writer) error {
		res, err := w.conn.ExecContext(bg, `INSERT INTO tokens (hash, actor_id, actor_type, role, canvases, name, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			t.Hash, t.ActorID, string(t.ActorType), string(t.Role), string(canvases), t.Name, t.CreatedAt.UnixMicro(), nullMicros(t.ExpiresAt))
		if err != nil {
			return mapErr("create token", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("token of actor %q: %w", t.ActorID, canvas.ErrAlreadyExists)
		}
		return nil
	})
}

// TokenByHash returns the token with that hash, or canvas.ErrNotFound.
// Canvases is nil when the token holds on every canvas.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.TokenRecord, error) {
	t, err := scanToken(s.tokenByHash.QueryRowContext(ctx, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return store.TokenRecord{}, fmt.Errorf("token: %w", canvas.ErrNotFound)
	}
	return t, err
}

// TokenByActor returns the token of an actor, or canvas.ErrNotFound.
func (s *Store) TokenByActor(ctx context.Context, actorID string) (store.TokenRecord, error) {
	t, err := scanToken(s.rdb.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE actor_id = ?`, actorID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.TokenRecord{}, fmt.Errorf("token of actor %q: %w", actorID, canvas.ErrNotFound)
	}
	return t, err
}

// ListTokens returns every token ordered by creation time, then actor id.
func (s *Store) ListTokens(ctx context.Context) ([]store.TokenRecord, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY created_at, actor_id`)
	if err != nil {
		return nil, mapErr("list tokens", err)
	}
	defer rows.Close()
	var out []store.TokenRecord
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("list tokens", err)
	}
	return out, nil
}

const tokenColumns = `hash, actor_id, actor_type, role, canvases, name, created_at, expires_at`

// scanToken reads one row of tokenColumns; sql.ErrNoRows passes through.
func scanToken(row interface{ Scan(...any) error }) (store.TokenRecord, error) {
	var t store.TokenRecord
	var actorType, role string
	var canvases []byte
	var created int64
	var expires sql.NullInt64
	err := row.Scan(&t.Hash, &t.ActorID, &actorType, &role, &canvases, &t.Name, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return t, err
	}
	if err != nil {
		return store.TokenRecord{}, mapErr("read token", err)
	}
	t.ActorType, t.Role, t.CreatedAt = canvas.ActorType(actorType), canvas.Role(role), fromMicros(created)
	if expires.Valid {
		t.ExpiresAt = fromMicros(expires.Int64)
	}
	if err := json.Unmarshal(canvases, &t.Canvases); err != nil {
		return store.TokenRecord{}, fmt.Errorf("sqlitestore: token of actor %q: corrupt canvases: %w", t.ActorID, err)
	}
	if len(t.Canvases) == 0 {
		t.Canvases = nil
	}
	return t, nil
}

// RevokeToken deletes the token of an actor, or returns canvas.ErrNotFound.
func (s *Store) RevokeToken(ctx context.Context, actorID string) error {
	return s.write(ctx, func(w *writer) error {
		res, err := w.conn.ExecContext(bg, `DELETE FROM tokens WHERE actor_id = ?`, actorID)
		if err != nil {
			return mapErr("revoke token", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("token of actor %q: %w", actorID, canvas.ErrNotFound)
		}
		return nil
	})
}

// RenewToken moves the expiry of an actor's token, or returns canvas.ErrNotFound.
func (s *Store) RenewToken(ctx context.Context, actorID string, expiresAt time.Time) error {
	return s.write(ctx, func(w *writer) error {
		res, err := w.conn.ExecContext(bg, `UPDATE tokens SET expires_at = ? WHERE actor_id = ?`, expiresAt.UnixMicro(), actorID)
		if err != nil {
			return mapErr("renew token", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("token of actor %q: %w", actorID, canvas.ErrNotFound)
		}
		return nil
	})
}

// PruneTokens deletes the tokens that expired at or before now.
func (s *Store) PruneTokens(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, func(w *writer) error {
		res, err := w.conn.ExecContext(bg, `DELETE FROM tokens WHERE expires_at <= ?`, now.UnixMicro())
		if err != nil {
			return mapErr("prune tokens", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// ---- helpers ----

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// optMicros is a nullable Unix-microseconds column as a time, nil for NULL.
func optMicros(us sql.NullInt64) *time.Time {
	if !us.Valid {
		return nil
	}
	t := fromMicros(us.Int64)
	return &t
}

// nullMicros is t in Unix microseconds, or NULL for the zero time.
func nullMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func errClosed(op string) error {
	return fmt.Errorf("sqlitestore: %s: store is closed: %w", op, canvas.ErrUnavailable)
}

// mapErr wraps a driver error with context, translating SQLite result codes
// to canvas sentinels: constraint violations on a unique key are
// ErrAlreadyExists, on a foreign key ErrNotFound; lock timeouts, I/O errors,
// a full disk and the like are ErrUnavailable.
func mapErr(op string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code()
		switch code {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%s: %w", op, canvas.ErrAlreadyExists) // the driver text would name internals
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%s: %w", op, canvas.ErrNotFound)
		}
		switch code & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL,
			sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_NOLFS:
			return fmt.Errorf("sqlitestore: %s: %w (%v)", op, canvas.ErrUnavailable, err)
		}
		return fmt.Errorf("sqlitestore: %s: %w", op, err)
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driverBadConn) {
		return fmt.Errorf("sqlitestore: %s: %w (%v)", op, canvas.ErrUnavailable, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("sqlitestore: %s: %w", op, err)
	}
	if strings.Contains(err.Error(), "sql: database is closed") {
		return fmt.Errorf("sqlitestore: %s: %w (%v)", op, canvas.ErrUnavailable, err)
	}
	return fmt.Errorf("sqlitestore: %s: %w", op, err)
}

// Capabilities implements store.Store.Capabilities: the embedded store
// keeps the agent's sessions; only this process writes it.
func (s *Store) Capabilities() store.Capabilities { return store.Capabilities{Agents: s} }

// The embedded store opens URLs sqlite:PATH (store.Open).
func init() {
	store.Register("sqlite", func(ctx context.Context, url string, o store.OpenOptions) (store.Store, error) {
		path := strings.TrimPrefix(url, "sqlite:")
		if path == "" {
			return nil, fmt.Errorf("store URL sqlite: names no file (want sqlite:PATH): %w", canvas.ErrInvalid)
		}
		opts := []Option{WithLogger(o.Logger)}
		if o.FullSync {
			opts = append(opts, WithFullSync())
		}
		return Open(ctx, path, opts...)
	})
}
