package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Notification payloads are "<instance>:<canvas id>", where instance is the
// 16 hex digits naming the Store that appended, so a process's Listen skips
// the wake-ups of its own appends (its engine already has those commits). A
// payload without that prefix (say, a NOTIFY typed by an operator) wakes the
// canvas it names.
const instanceLen = 16

func (s *Store) payload(canvasID string) string { return s.instance + ":" + canvasID }

// parsePayload returns the canvas id of a payload and whether this store sent it.
func (s *Store) parsePayload(p string) (canvasID string, own bool) {
	if len(p) > instanceLen && p[instanceLen] == ':' && isHex(p[:instanceLen]) {
		return p[instanceLen+1:], p[:instanceLen] == s.instance
	}
	return p, false
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Listen holds one dedicated connection (not from the pool) that LISTENs on
// the store's channel, and calls wake(canvasID) for each append another
// Store (another process) made, in the order PostgreSQL delivers them.
// Each time LISTEN takes effect (the first connection and every reconnection)
// it calls wake("") so callers catch up from the log on anything committed
// while nobody was listening. A lost connection is re-established with
// exponential backoff (50 ms doubling to 5 s). wake is called from Listen's
// goroutine and must not block for long. Listen returns nil when ctx ends
// or the store is closed.
func (s *Store) Listen(ctx context.Context, wake func(canvasID string)) error {
	return s.keepListening(ctx, "commit", func(ctx context.Context) (bool, error) { return s.listenOnce(ctx, wake) })
}

// keepListening runs once (one LISTEN connection's life) until ctx ends or
// the store is closed, reconnecting with exponential backoff (50 ms doubling
// to 5 s, reset after a connection whose LISTEN took effect). It returns nil.
func (s *Store) keepListening(ctx context.Context, what string, once func(context.Context) (listened bool, err error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	backoff := 50 * time.Millisecond
	for {
		listened, err := once(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if listened {
			backoff = 50 * time.Millisecond
		}
		s.log.Warn("pgstore: "+what+" listener lost its connection; reconnecting", "err", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// listenOnce connects, LISTENs, calls wake("") and then relays notifications
// until the connection fails or ctx ends. listened says LISTEN took effect.
func (s *Store) listenOnce(ctx context.Context, wake func(string)) (listened bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, s.connCfg.ConnectTimeout+s.cfg.opTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, s.connCfg)
	if err != nil {
		return false, err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return false, err
	}
	wake("")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		if id, own := s.parsePayload(n.Payload); !own {
			wake(id)
		}
	}
}

// notifier sends the post-commit NOTIFYs from one goroutine, coalescing the
// canvases appended to while the previous NOTIFY was in flight into one
// statement, so appends do not pay a second round trip and the database's
// notification queue lock is taken once per batch rather than once per commit.
type notifier struct {
	s       *Store
	mu      sync.Mutex
	pending map[string]struct{}
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newNotifier(s *Store) *notifier {
	n := &notifier{s: s, pending: map[string]struct{}{}, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go n.run()
	return n
}

// maxPayloadID bounds the canvas ids sent in a payload (PostgreSQL caps
// payloads at 8000 bytes); a longer id is announced as "", which makes
// listeners catch up on every canvas.
const maxPayloadID = 4000

// add schedules a NOTIFY for canvasID (after its append committed).
func (n *notifier) add(canvasID string) {
	if len(canvasID) > maxPayloadID {
		canvasID = ""
	}
	n.mu.Lock()
	n.pending[canvasID] = struct{}{}
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *notifier) run() {
	defer close(n.done)
	for {
		select {
		case <-n.kick:
			n.flush()
		case <-n.stop:
			n.flush()
			return
		}
	}
}

func (n *notifier) flush() {
	n.mu.Lock()
	if len(n.pending) == 0 {
		n.mu.Unlock()
		return
	}
	payloads := make([]string, 0, len(n.pending))
	for id := range n.pending {
		payloads = append(payloads, n.s.payload(id))
	}
	clear(n.pending)
	n.mu.Unlock()
	var err error
	for attempt := 0; attempt < 2; attempt++ { // a second try gets a fresh pooled connection
		ctx, cancel := context.WithTimeout(context.Background(), n.s.cfg.connectTimeout+n.s.cfg.opTimeout)
		_, err = n.s.pool.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, n.s.channel, payloads)
		cancel()
		if err == nil {
			return
		}
	}
	// The commits are in the log either way: listeners that lost their
	// connection catch up on reconnecting (wake("")), the others with the
	// canvas's next NOTIFY.
	n.s.log.Warn("pgstore: NOTIFY after commit failed", "err", err, "canvases", len(payloads),
		"first", payloads[0][instanceLen+1:])
}

// close sends what is pending and stops the goroutine.
func (n *notifier) close() {
	close(n.stop)
	<-n.done
}
