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

// Listen calls wake(canvasID) for each append another Store (another
// process) made, in the order PostgreSQL delivers them, through the store's
// one LISTEN connection (see listener). Each time LISTEN takes effect (when
// Listen starts on a connection already listening, and after every
// reconnection) it calls wake("") so callers catch up from the log on
// anything committed while nobody was listening. wake is called from one
// goroutine at a time and must not block for long. Listen returns nil when
// ctx ends or the store is closed.
func (s *Store) Listen(ctx context.Context, wake func(canvasID string)) error {
	return s.listen.serve(ctx, &listenSub{wake: wake})
}

// listener is the store's one LISTEN connection (not from the pool),
// shared by Listen and ListenBroadcast: it LISTENs on the commit channel and
// on the broadcast channel and hands each notification to the callbacks of
// its channel. It runs while any Listen or ListenBroadcast call is active,
// and re-establishes a lost connection with exponential backoff (50 ms
// doubling to 5 s, reset after a connection whose LISTEN took effect).
type listener struct {
	s *Store

	// mu guards what follows and is held while calling back, so that
	// callbacks never run concurrently and none runs after its call ended.
	mu        sync.Mutex
	subs      map[*listenSub]struct{}
	listening bool               // LISTEN is in effect on the connection
	cancel    context.CancelFunc // stops the running loop; nil when none runs
	done      chan struct{}      // closed when that loop has exited
}

// listenSub is one active Listen (wake) or ListenBroadcast (deliver) call.
type listenSub struct {
	wake    func(canvasID string)
	deliver func(topic string, payload []byte)
}

// connected tells sub that LISTEN has (just) taken effect.
func (sub *listenSub) connected() {
	if sub.wake != nil {
		sub.wake("")
	} else {
		sub.deliver("", nil)
	}
}

// serve registers sub until ctx ends or the store is closed.
func (l *listener) serve(ctx context.Context, sub *listenSub) error {
	l.mu.Lock()
	if l.subs == nil {
		l.subs = map[*listenSub]struct{}{}
	}
	l.subs[sub] = struct{}{}
	if l.listening {
		sub.connected()
	}
	if l.cancel == nil {
		var lctx context.Context
		lctx, l.cancel = context.WithCancel(l.s.ctx)
		l.done = make(chan struct{})
		go l.run(lctx, l.done)
	}
	l.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-l.s.ctx.Done():
	}
	l.mu.Lock()
	delete(l.subs, sub)
	if len(l.subs) > 0 || l.cancel == nil {
		l.mu.Unlock()
		return nil
	}
	l.cancel()
	l.cancel = nil
	done := l.done
	l.mu.Unlock()
	<-done
	return nil
}

// run keeps a LISTEN connection until ctx ends.
func (l *listener) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	backoff := 50 * time.Millisecond
	for {
		listened, err := l.once(ctx)
		l.mu.Lock()
		l.listening = false
		l.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if listened {
			backoff = 50 * time.Millisecond
		}
		l.s.log.Warn("pgstore: listener lost its connection; reconnecting", "err", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// once connects, LISTENs on both channels, tells every callback, and then
// relays notifications until the connection fails or ctx ends. listened
// says LISTEN took effect.
func (l *listener) once(ctx context.Context) (listened bool, err error) {
	s := l.s
	bc, err := s.BroadcastChannel(ctx)
	if err != nil {
		return false, err
	}
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
	if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()+"; LISTEN "+pgx.Identifier{bc}.Sanitize()); err != nil {
		return false, err
	}
	l.mu.Lock()
	l.listening = true
	for sub := range l.subs {
		sub.connected()
	}
	l.mu.Unlock()
	s.pruneBroadcasts(ctx, true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		switch n.Channel {
		case s.channel:
			if id, own := s.parsePayload(n.Payload); !own {
				l.each(func(sub *listenSub) {
					if sub.wake != nil {
						sub.wake(id)
					}
				})
			}
		case bc:
			if topic, payload, ok := s.decodeBroadcast(ctx, n.Payload); ok {
				l.each(func(sub *listenSub) {
					if sub.deliver != nil {
						sub.deliver(topic, payload)
					}
				})
			}
		}
	}
}

// each calls fn for every registered callback, under l.mu.
func (l *listener) each(fn func(*listenSub)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for sub := range l.subs {
		fn(sub)
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
	failing bool // the last flush failed (only the run goroutine uses it)
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
	ids := make([]string, 0, len(n.pending))
	payloads := make([]string, 0, len(n.pending))
	for id := range n.pending {
		ids = append(ids, id)
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
			n.failing = false
			return
		}
	}
	// The commits are in the log, but a listener whose connection stayed
	// up hears of them only by NOTIFY: they are announced again a second
	// from now (and so on, while the database cannot be reached).
	n.mu.Lock()
	for _, id := range ids {
		n.pending[id] = struct{}{}
	}
	n.mu.Unlock()
	if !n.failing {
		n.failing = true
		n.s.log.Warn("pgstore: NOTIFY after commit failed; retrying every second", "err", err, "canvases", len(ids), "first", ids[0])
	}
	time.AfterFunc(notifyRetry, func() {
		select {
		case n.kick <- struct{}{}:
		default:
		}
	})
}

// notifyRetry is how long a NOTIFY that failed waits before it is sent again.
const notifyRetry = time.Second

// close sends what is pending and stops the goroutine.
func (n *notifier) close() {
	close(n.stop)
	<-n.done
}
