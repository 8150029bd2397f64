// Package pgstore is the PostgreSQL implementation of store.Store and
// store.Notifier, on pgx/v5 (pgxpool).
//
// Several canvasd processes may share one database: every append takes the
// per-canvas row lock
//
//	UPDATE canvases SET head_rev = head_rev + n WHERE id = $1 AND head_rev = $2
//
// in the same statement that inserts the commits and idempotency records, so
// revisions stay gap-free per canvas whichever process writes. After the
// append commits, the store sends pg_notify on a channel (payload: the canvas
// id) that the other processes' Listen turns into wake-ups.
//
// A database that cannot be reached yields errors wrapping
// canvas.ErrUnavailable, returned within a couple of seconds (short connect
// and operation timeouts) rather than hanging the request.
package pgstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// DefaultChannel is the NOTIFY channel appends are announced on when no
// schema is set with WithSchema.
const DefaultChannel = "canvasd_commits"

// Defaults for the timeouts; see WithConnectTimeout and WithOpTimeout.
const (
	DefaultConnectTimeout = 2 * time.Second
	DefaultOpTimeout      = 2 * time.Second
)

var (
	_ store.Store    = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
)

// Store is a store.Store and store.Notifier backed by PostgreSQL. It is safe
// for concurrent use. Create it with Open; release it with Close.
type Store struct {
	pool     *pgxpool.Pool
	cfg      config
	connCfg  *pgx.ConnConfig // for the LISTEN connection (listen.go)
	channel  string
	instance string // hex id of this Store in NOTIFY payloads
	log      *slog.Logger
	notify   *notifier
	commit   *committer      // group commit of Appends (commit.go)
	bc       broadcastState  // store.Broadcaster set-up (broadcast.go)
	listen   listener        // the one LISTEN connection of Listen and ListenBroadcast (listen.go)
	ctx      context.Context // canceled by Close (stops Listen)
	cancel   context.CancelFunc

	closeOnce sync.Once
}

type config struct {
	schema         string
	logger         *slog.Logger
	maxConns       int32
	connectTimeout time.Duration
	opTimeout      time.Duration
	channel        string
	now            func() time.Time
}

// Option configures Open.
type Option func(*config)

// WithSchema makes the store work in schema name: it is created if missing,
// made the search_path of every connection, and the migrations create
// their tables there. The NOTIFY channel becomes "canvasd_commits:<name>" so
// stores in different schemas of one database do not wake each other. Tests
// use it to give each test its own schema.
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// DefaultMaxConns is the pool size when neither WithMaxConns nor
// pool_max_conns in the URL sets one.
const DefaultMaxConns = 16

// WithMaxConns bounds the connection pool (default: DefaultMaxConns, or
// pool_max_conns in the URL). Listen uses one extra connection of its own.
func WithMaxConns(n int) Option { return func(c *config) { c.maxConns = int32(n) } }

// WithConnectTimeout bounds establishing one connection (default 2 s; a
// smaller connect_timeout in the URL wins).
func WithConnectTimeout(d time.Duration) Option { return func(c *config) { c.connectTimeout = d } }

// WithOpTimeout bounds each store operation that arrives with no earlier
// deadline (default 2 s), so a database that stops answering fails requests
// with canvas.ErrUnavailable instead of hanging them.
func WithOpTimeout(d time.Duration) Option { return func(c *config) { c.opTimeout = d } }

// WithNow sets the clock of the timestamps the store writes or decides on
// itself (default time.Now): the creation time of a canvas, token, named
// snapshot or idempotency record given without one, a state snapshot's and a
// shared secret's creation, an agent session's claim and cancellation, a
// migration's application, the pacing of broadcast pruning. Commits carry
// the times their callers give them. As in sqlitestore, tests drive time
// through it.
func WithNow(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// WithChannel overrides the NOTIFY channel name (names over 63 bytes are
// replaced by a hash of them).
func WithChannel(name string) Option { return func(c *config) { c.channel = name } }

// Open connects to the database at databaseURL (a postgres:// URL or a
// key=value connection string), applies pending migrations and returns the
// store. Migrations run in one transaction that holds a transaction-scoped
// advisory lock, so processes starting together apply them exactly once.
// An unreachable database is an error wrapping canvas.ErrUnavailable.
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	cfg := config{connectTimeout: DefaultConnectTimeout, opTimeout: DefaultOpTimeout, now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	pc, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// Not err's text: it may quote the URL, password included.
		return nil, fmt.Errorf("pgstore: cannot parse the database URL (want postgres://user@host:5432/db?sslmode=disable): %w", canvas.ErrInvalid)
	}
	cc := pc.ConnConfig
	if cc.ConnectTimeout == 0 || cc.ConnectTimeout > cfg.connectTimeout {
		cc.ConnectTimeout = cfg.connectTimeout
	}
	// Detect a peer that vanished without closing the connection (keepalive
	// probes), and bound dialing by the connect timeout.
	dialer := &net.Dialer{Timeout: cc.ConnectTimeout, KeepAliveConfig: net.KeepAliveConfig{
		Enable: true, Idle: 5 * time.Second, Interval: 2 * time.Second, Count: 3}}
	cc.DialFunc = dialer.DialContext
	if cfg.schema != "" {
		cc.RuntimeParams["search_path"] = cfg.schema
	}
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "canvasd"
	}
	switch {
	case cfg.maxConns > 0:
		pc.MaxConns = cfg.maxConns
	case !strings.Contains(databaseURL, "pool_max_conns"):
		// Appends to different canvases run in parallel, one connection each;
		// pgxpool's default (4 on small machines) serializes them.
		pc.MaxConns = DefaultMaxConns
	}
	pc.HealthCheckPeriod = 5 * time.Second
	channel := cfg.channel
	if channel == "" {
		channel = DefaultChannel
		if cfg.schema != "" {
			channel = DefaultChannel + ":" + cfg.schema
		}
	}
	if len(channel) > 63 { // PostgreSQL identifiers (LISTEN's channel) stop at 63 bytes
		sum := sha256.Sum256([]byte(channel))
		channel = DefaultChannel + ":" + hex.EncodeToString(sum[:12])
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open pool: %w", err)
	}
	var inst [instanceLen / 2]byte
	_, _ = rand.Read(inst[:])
	s := &Store{pool: pool, cfg: cfg, connCfg: cc.Copy(), channel: channel,
		instance: hex.EncodeToString(inst[:]), log: cfg.logger}
	s.connCfg.RuntimeParams["application_name"] = "canvasd-listener"
	mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.migrate(mctx); err != nil {
		pool.Close()
		return nil, s.wrap(mctx, "migrate", err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.listen.s = s
	s.notify = newNotifier(s)
	s.commit = newCommitter(s, pc.MaxConns)
	return s, nil
}

// OpTimeout is the operation timeout (WithOpTimeout): the engine bounds a
// whole write by it (store.Capabilities.OpTimeout).
func (s *Store) OpTimeout() time.Duration { return s.cfg.opTimeout }

// now reads the store's clock (WithNow) in UTC at the database's precision.
func (s *Store) now() time.Time { return s.cfg.now().UTC().Truncate(time.Microsecond) }

// orNow is t, or the store's clock's now when t is zero.
func (s *Store) orNow(t time.Time) time.Time {
	if t.IsZero() {
		return s.now()
	}
	return t
}

// Channel returns the NOTIFY channel this store announces appends on.
func (s *Store) Channel() string { return s.channel }

// Ping reports whether the database answers, within the operation timeout.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	return s.wrap(ctx, "ping", s.pool.Ping(ctx))
}

// Close finishes the queued Appends, sends the pending NOTIFYs, stops
// Listen and closes the pool; operations after Close fail with
// canvas.ErrUnavailable. Close is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.commit.close()
		s.notify.close()
		s.pool.Close()
	})
	return nil
}

// opCtx bounds one operation by the op timeout unless ctx ends sooner.
func (s *Store) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return s.opCtxN(ctx, 1)
}

func (s *Store) opCtxN(ctx context.Context, factor int) (context.Context, context.CancelFunc) {
	if s.cfg.opTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	d := s.cfg.opTimeout * time.Duration(factor)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// Postgres error codes the store translates.
const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
)

// wrap translates err from operation op: connection failures and timeouts
// become canvas.ErrUnavailable (unless the caller's own context ended),
// everything else is returned with context.
func (s *Store) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if isUnavailable(err) {
		if cerr := context.Cause(ctx); cerr != nil && !errors.Is(cerr, context.DeadlineExceeded) {
			// The caller gave up (not our op timeout): say so, not "unavailable".
			return fmt.Errorf("pgstore: %s: %w", op, err)
		}
		return fmt.Errorf("pgstore: %s: %w: %w", op, canvas.ErrUnavailable, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "22021" || pgErr.Code == "22P05" || pgErr.Code == "22P02") {
		// Text with NUL bytes or invalid UTF-8, or args that are not JSON:
		// the caller's bad input, not a server fault.
		return fmt.Errorf("pgstore: %s: %w: %w", op, canvas.ErrInvalid, err)
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

// isUnavailable reports whether err means the database could not be reached
// or stopped answering, as opposed to an error the server reported about
// the statement.
func isUnavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08": // connection exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // shutdown, cannot connect now
			return true
		case pgErr.Code == "53300": // too many connections
			return true
		}
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, context.Canceled) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	if pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return true
	}
	// pgxpool after Close, and a connection pgx has already marked dead.
	msg := err.Error()
	return msg == "closed pool" || msg == "conn closed"
}

func uniqueViolation(err error) (constraint string, ok bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == codeUniqueViolation {
		return pgErr.ConstraintName, true
	}
	return "", false
}

func fkViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == codeForeignKeyViolation
}

// Capabilities implements store.Store.Capabilities: PostgreSQL is shared by
// the processes of a deployment (commit notices, broadcasts), keeps the
// agent's sessions and bounds each operation by its OpTimeout.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{Notifier: s, Broadcaster: s, Agents: s, OpTimeout: s.cfg.opTimeout}
}

// PostgreSQL opens URLs postgres://... and postgresql://... (store.Open).
func init() {
	open := func(ctx context.Context, url string, o store.OpenOptions) (store.Store, error) {
		opts := []Option{WithLogger(o.Logger)}
		if o.OpTimeout > 0 { // else the defaults
			opts = append(opts, WithOpTimeout(o.OpTimeout), WithConnectTimeout(o.OpTimeout))
		}
		if o.Schema != "" {
			opts = append(opts, WithSchema(o.Schema))
		}
		return Open(ctx, url, opts...)
	}
	store.Register("postgres", open)
	store.Register("postgresql", open)
}
