package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
)

// Publisher receives every commit of every live canvas, per canvas in
// revision order, gap-free. Publish must not block.
type Publisher interface {
	Publish(c *canvas.Commit)
}

// Observer receives engine measurements (Prometheus in the api package). Nil is allowed.
type Observer interface {
	// CommandDone is called once per command: its type, its outcome
	// ("applied", "conflict", "rejected", "replayed", "error") and the time spent.
	CommandDone(cmdType, outcome string, d time.Duration)
}

// EngineConfig configures an Engine. Zero values take the defaults noted.
type EngineConfig struct {
	Logger        *slog.Logger
	Publisher     Publisher
	Observer      Observer
	SnapshotEvery int64            // store a state snapshot every N commits (default 1000)
	RecentCommits int              // commits kept in memory per canvas for resume and recovery_ops (default 4096)
	MaxGroup      int              // commands committed together in one Append (default 256)
	Now           func() time.Time // default time.Now
	// Sleep waits d or until ctx ends (then it returns ctx's error): the
	// writer's back-off between attempts on a canvas other processes
	// append to. Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// IdleAfter unloads a canvas from memory after this long without
	// commands, unless InUse says it is still needed (default 10 min).
	IdleAfter time.Duration
	// InUse reports whether a canvas must stay loaded although idle (for
	// example while it has stream subscribers, so other processes' commits
	// keep reaching them). Nil: idle canvases are always unloaded.
	InUse func(canvasID string) bool
	// IdempotencyTTL is how long idempotency records are kept (default 48 h;
	// the contract promises at least 24 h). Older ones are pruned hourly.
	IdempotencyTTL time.Duration
	// WriteTimeout bounds a command from its arrival to its answer, the wait
	// behind the canvas's earlier writes and catch-ups included: one the
	// writer has not taken by then is answered canvas.ErrUnavailable
	// (nothing written) whatever the writer is doing, and every store
	// operation of a group (its catch-ups, its append) ends by the deadline
	// of its oldest command. Default: the store's OpTimeout (see
	// Capabilities), else none.
	WriteTimeout time.Duration
}

// Engine is the one path every write takes: per canvas it keeps the
// materialized state in memory, decides commands with the reducer, appends
// the commits through the Store (many commands per transaction: group
// commit), and publishes them. One writer goroutine per live canvas
// serializes its commands; reads (View, CommitsAfter) run concurrently and
// are linearizable (engine_read.go).
type Engine struct {
	st   Store
	cfg  EngineConfig
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu    sync.Mutex
	lives map[string]*live

	snaps chan snapJob // captures for the snapshotter (engine_snapshot.go)

	// shared: other processes write the store too (it has a Notifier), so
	// reads and refusals confirm the head in it (Linearize, process).
	shared   bool
	notifier Notifier

	onGone atomic.Pointer[func(canvasID string)] // see OnGone
}

// OnGone makes fn run when the engine finds that a canvas it holds was
// deleted from the store, or deleted and created again under its id, by
// another process whose notice this one missed (a relay message lost while
// its listener reconnected): the engine has dropped the canvas, and fn ends
// whatever still follows its old copy (its streams). Set it once, at start.
func (e *Engine) OnGone(fn func(canvasID string)) { e.onGone.Store(&fn) }

// gone drops l, found deleted or replaced in the store (the caller marked
// it retired, under l.mu, so that readers holding it load the canvas anew),
// and tells OnGone.
func (e *Engine) gone(l *live) {
	e.log.Warn("canvas deleted by another process: dropped from memory", "canvas", l.id)
	e.mu.Lock()
	if e.lives[l.id] == l {
		delete(e.lives, l.id)
	}
	e.mu.Unlock()
	l.cancel()
	if fn := e.onGone.Load(); fn != nil {
		(*fn)(l.id)
	}
}

// errReplaced: the canvas in memory was deleted and created again under
// its id by another process (a write to it is not written: retry).
var errReplaced = fmt.Errorf("the canvas was deleted and created again by another process; retry: %w: %w", canvas.ErrUnavailable, canvas.ErrNotWritten)

// stillThere checks that the store still has l's canvas: an error wrapping
// canvas.ErrNotFound when it was deleted, errReplaced when it was deleted
// and created again (another creation time, or a head behind the one in
// memory), a store error, or nil. On success it returns the stored head. The
// caller must not hold l.mu (the store is read without it).
func (e *Engine) stillThere(ctx context.Context, l *live) (int64, error) {
	// The copy's head is read before the store's: the copy holds only
	// committed revisions, so a stored head behind it means the canvas was
	// replaced (read after, it could be ahead by commits made meanwhile).
	l.mu.RLock()
	createdAt, head := l.createdAt, l.state.Rev
	l.mu.RUnlock()
	c, err := e.st.GetCanvas(ctx, l.id)
	if err != nil {
		return 0, err
	}
	if !c.CreatedAt.Equal(createdAt) || c.HeadRev < head {
		return 0, fmt.Errorf("canvas %s: %w", l.id, errReplaced)
	}
	return c.HeadRev, nil
}

// isGone reports whether err says l's canvas is no longer the store's.
func isGone(err error) bool { return errors.Is(err, canvas.ErrNotFound) || errors.Is(err, errReplaced) }

// NewEngine returns an engine over st. Call Start before use and Stop after.
func NewEngine(st Store, cfg EngineConfig) *Engine {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SnapshotEvery <= 0 {
		cfg.SnapshotEvery = 1000
	}
	if cfg.RecentCommits <= 0 {
		cfg.RecentCommits = 4096
	}
	if cfg.MaxGroup <= 0 {
		cfg.MaxGroup = 256
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = 10 * time.Minute
	}
	if cfg.IdempotencyTTL <= 0 {
		cfg.IdempotencyTTL = 48 * time.Hour
	}
	caps := st.Capabilities()
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = caps.OpTimeout
	}
	return &Engine{st: st, cfg: cfg, log: cfg.Logger, lives: map[string]*live{}, snaps: make(chan snapJob, snapshotQueue),
		notifier: caps.Notifier, shared: caps.Notifier != nil}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Start starts the engine; with a Notifier store it also listens for other
// processes' commits. The engine runs until Stop.
func (e *Engine) Start(ctx context.Context) error {
	e.ctx, e.stop = context.WithCancel(ctx)
	e.wg.Add(2)
	go e.pruneIdempotency()
	go e.snapshotter()
	if n := e.notifier; n != nil {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			for e.ctx.Err() == nil {
				if err := n.Listen(e.ctx, e.Wake); err != nil && e.ctx.Err() == nil {
					e.log.Warn("commit listener stopped; retrying", "err", err)
					select {
					case <-e.ctx.Done():
					case <-time.After(time.Second):
					}
					e.Wake("")
				}
			}
		}()
	}
	return nil
}

// pruneIdempotency deletes expired idempotency records every hour.
func (e *Engine) pruneIdempotency() {
	defer e.wg.Done()
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		n, err := e.st.PruneIdempotency(e.ctx, e.cfg.Now().Add(-e.cfg.IdempotencyTTL))
		if err != nil && e.ctx.Err() == nil {
			e.log.Warn("pruning idempotency records", "err", err)
		} else if n > 0 {
			e.log.Info("pruned idempotency records", "count", n)
		}
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// LiveCanvases returns how many canvases are loaded in memory.
func (e *Engine) LiveCanvases() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.lives)
}

// Stop stops every canvas writer and waits for them; in-flight commands finish first.
func (e *Engine) Stop() {
	if e.stop != nil {
		e.stop()
	}
	e.wg.Wait()
}

// Store returns the engine's store.
func (e *Engine) Store() Store { return e.st }

// Wake makes a live canvas catch up from the log (another process appended);
// "" wakes every live canvas. Unknown or unloaded canvases are ignored.
func (e *Engine) Wake(canvasID string) {
	e.mu.Lock()
	var targets []*live
	if canvasID == "" {
		for _, l := range e.lives {
			targets = append(targets, l)
		}
	} else if l, ok := e.lives[canvasID]; ok {
		targets = append(targets, l)
	}
	e.mu.Unlock()
	for _, l := range targets {
		if canvasID == "" {
			// Every canvas: notices may have been missed (a listener
			// reconnected), a deletion's among them: check the canvas too.
			l.recheck.Store(true)
		}
		select {
		case l.wake <- struct{}{}:
		default: // a wake is already pending
		}
	}
}

// Forget drops a canvas from memory (after DeleteCanvas).
func (e *Engine) Forget(canvasID string) {
	e.mu.Lock()
	l := e.lives[canvasID]
	delete(e.lives, canvasID)
	e.mu.Unlock()
	if l != nil {
		l.cancel()
	}
}

// live is one canvas held in memory with its writer goroutine.
type live struct {
	id     string
	reqs   chan *request
	wake   chan struct{}
	cancel context.CancelFunc
	exited chan struct{} // closed when the writer has stopped and drained its queue
	ready  chan struct{} // closed when loading finished
	err    error         // load error, set before ready is closed

	mu          sync.RWMutex // guards everything below; the writer holds it while deciding and appending
	state       *canvas.State
	createdAt   time.Time   // the canvas's creation (a canvas created again under its id is another one)
	recheck     atomic.Bool // set by Wake(""): the next catch-up first checks the canvas is still the store's
	headEventID string
	retired     bool             // unloaded while idle: callers holding this live must get a fresh one
	unsure      bool             // an append's outcome is unknown: catch up before the next decision (only the writer goroutine sets and clears it)
	recent      []*canvas.Commit // the last commits, ascending, at most cfg.RecentCommits
	idem        map[string]*IdempotencyRecord
	idemOrder   []string
	journal     journal    // the writer's rollback journal, reused by every group
	pend        []pending  // the writer's room for a group's answers (tryGroup)
	answers     []*pending // pointers into pend

	// State snapshots (engine_snapshot.go): the last one captured, what
	// changed since, and the chain of stored snapshots it extends.
	snapRev    int64
	snapHist   canvas.History          // state.History at snapRev
	changed    map[canvas.Ref]struct{} // entities changed after snapRev
	chain      chainStats
	snapBroken atomic.Bool // a capture failed to store: the next one must be whole
}

// request is one command or batch waiting for the writer.
type request struct {
	ctx     context.Context
	actor   canvas.Actor
	envs    []canvas.Envelope
	one     [1]canvas.Envelope // envs of a single command
	baseRev int64              // batch base; single commands use envs[0].BaseRev
	batch   bool
	idemKey string // the key that answers this request (command key or batch key)
	fp      string
	// reverts holds, per envelope, what the commits a revert_commits names
	// changed, read from the log before the request queues (nil for other
	// types).
	reverts []*canvas.RevertBase
	// snapshots holds, per envelope, the state at the named snapshot a
	// revert_to_snapshot names, read likewise (nil for other types).
	snapshots []*canvas.State
	start     time.Time    // its arrival: its write deadline is WriteTimeout after it
	state     atomic.Int32 // reqQueued, reqTaken, reqWithdrawn (submit, take)
	done      chan Answer
	err       error
}

// get returns the live canvas, loading it on first use.
func (e *Engine) get(ctx context.Context, canvasID string) (*live, error) {
	return e.getUntil(ctx, canvasID, nil)
}

// getUntil is get that also stops waiting for a load when expired is
// closed (the load goes on), with an error wrapping canvas.ErrUnavailable
// and canvas.ErrNotWritten.
func (e *Engine) getUntil(ctx context.Context, canvasID string, expired <-chan struct{}) (*live, error) {
	e.mu.Lock()
	l, ok := e.lives[canvasID]
	if !ok {
		if e.ctx == nil || e.ctx.Err() != nil {
			e.mu.Unlock()
			return nil, fmt.Errorf("engine not running: %w: %w", canvas.ErrUnavailable, canvas.ErrNotWritten)
		}
		lctx, cancel := context.WithCancel(e.ctx)
		l = &live{id: canvasID, reqs: make(chan *request, 1024), wake: make(chan struct{}, 1),
			cancel: cancel, ready: make(chan struct{}), exited: make(chan struct{}), idem: map[string]*IdempotencyRecord{},
			changed: map[canvas.Ref]struct{}{}}
		e.lives[canvasID] = l
		e.wg.Add(1)
		go e.run(lctx, l)
	}
	e.mu.Unlock()
	select {
	case <-l.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-expired:
		return nil, fmt.Errorf("canvas %s did not load within the write timeout (%v): %w: %w", canvasID, e.cfg.WriteTimeout, canvas.ErrUnavailable, canvas.ErrNotWritten)
	}
	if l.err != nil {
		return nil, l.err
	}
	return l, nil
}

// run loads the canvas and then serves its writer queue.
func (e *Engine) run(ctx context.Context, l *live) {
	defer e.wg.Done()
	defer close(l.exited)
	l.err = e.load(ctx, l)
	if l.err != nil {
		// Out of the map before ready is closed: a caller told of this
		// failure (say not found) and then creating the canvas must not
		// find the failed live on its next call.
		e.mu.Lock()
		if e.lives[l.id] == l {
			delete(e.lives, l.id)
		}
		e.mu.Unlock()
		close(l.ready)
		return
	}
	close(l.ready)
	group := make([]*request, 0, e.cfg.MaxGroup)
	idle := time.NewTimer(e.cfg.IdleAfter)
	defer idle.Stop()
	// While an append's outcome is unknown (l.unsure), the writer reads the
	// log until it can, unsureRetry after the append and then backing off to
	// maxUnsureRetry: a commit that did land reaches readers and streams
	// then, not only with the canvas's next write.
	unsure := time.NewTimer(time.Hour)
	unsure.Stop()
	defer unsure.Stop()
	retryIn := unsureRetry
	prev := 0 // requests in the previous group
	for {
		select {
		case <-ctx.Done():
			if !l.isRetired() { // a retired canvas's queued commands go to the canvas loaded anew (submit)
				e.drain(l)
			}
			return
		case <-idle.C:
			if e.retire(l) {
				return
			}
		case <-l.wake:
			e.catchUpWoken(ctx, l) // when gone, the loop ends; queued commands go to the canvas loaded anew
		case <-unsure.C:
			e.catchUpWoken(ctx, l)
			retryIn = min(2*retryIn, maxUnsureRetry)
		case r := <-l.reqs:
			group = e.gather(l, group[:0], r, prev > 1)
			if !l.unsure {
				retryIn = unsureRetry
			}
			if len(group) > 0 {
				e.process(ctx, l, group)
			}
			prev = len(group)
		}
		if l.unsure { // only this goroutine sets it
			unsure.Reset(retryIn)
		}
		idle.Reset(e.cfg.IdleAfter)
	}
}

// gather makes the next group of l's writer: r, then the commands queued
// behind it, up to MaxGroup, leaving out those withdrawn by their
// submitters at their deadlines. busy (the previous group held more than
// one) lets the writers about to submit queue first, so that this group
// (one decision pass, one Append, one transaction) carries more than one.
func (e *Engine) gather(l *live, group []*request, r *request, busy bool) []*request {
	if r.take() {
		group = append(group, r)
	}
	if busy {
		runtime.Gosched()
	}
	for len(group) < e.cfg.MaxGroup {
		select {
		case r := <-l.reqs:
			if r.take() {
				group = append(group, r)
			}
		default:
			return group
		}
	}
	return group
}

// catchUpWoken reads l's log after a wake-up (another process appended, or
// this one's listener reconnected) or an unknown outcome, for l's writer;
// when the canvas is no longer the store's (stillThere), l is dropped. It
// reads the store without holding l.mu, and commands that queue meanwhile
// are answered by their deadline all the same (submit), so it never makes
// a write wait past the write timeout.
func (e *Engine) catchUpWoken(ctx context.Context, l *live) {
	if e.cfg.WriteTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.cfg.WriteTimeout)
		defer cancel()
	}
	var err error
	recheck := l.recheck.Swap(false)
	if recheck {
		// Notices may have been lost: the canvas may have been deleted
		// (and made again) meanwhile; its log is then not ours to read.
		_, err = e.stillThere(ctx, l)
	}
	if err == nil {
		err = e.catchUpTo(ctx, l, -1)
	}
	switch {
	case isGone(err):
		e.drop(l)
	case err != nil:
		e.log.Warn("catch-up failed", "canvas", l.id, "err", err)
		if recheck {
			l.recheck.Store(true) // not checked yet: at the next wake-up
		}
	default:
		l.unsure = false
	}
}

// A canvas whose last append's outcome is unknown reads its log again
// unsureRetry later, then at twice the previous interval, at most
// maxUnsureRetry, until it can.
const (
	unsureRetry    = 200 * time.Millisecond
	maxUnsureRetry = 5 * time.Second
)

// retire unloads an idle canvas unless it is in use or has work queued.
// Requests that reach the retired writer's queue anyway are resubmitted by
// their callers to a freshly loaded one (see submit).
func (e *Engine) retire(l *live) bool {
	if len(l.reqs) > 0 || e.cfg.InUse != nil && e.cfg.InUse(l.id) {
		return false
	}
	e.mu.Lock()
	if e.lives[l.id] == l {
		delete(e.lives, l.id)
	}
	e.mu.Unlock()
	l.mu.Lock()
	l.retired = true
	l.mu.Unlock()
	l.cancel()
	return true
}

// isRetired reports whether l was unloaded while idle.
func (l *live) isRetired() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.retired
}

// readLocked returns the live canvas read-locked (the caller unlocks),
// never one that was retired meanwhile.
func (e *Engine) readLocked(ctx context.Context, canvasID string) (*live, error) {
	for {
		l, err := e.get(ctx, canvasID)
		if err != nil {
			return nil, err
		}
		l.mu.RLock()
		if !l.retired {
			return l, nil
		}
		l.mu.RUnlock()
	}
}

func (e *Engine) drain(l *live) {
	for {
		select {
		case r := <-l.reqs:
			if r.take() { // else its submitter answered it already
				r.err = fmt.Errorf("server shutting down: %w: %w", canvas.ErrUnavailable, canvas.ErrNotWritten)
				close(r.done)
			}
		default:
			return
		}
	}
}

// load reads the latest snapshot of the current schema and the log tail,
// and migrates a canvas of model 1 to model 2.
func (e *Engine) load(ctx context.Context, l *live) error {
	c, err := e.st.GetCanvas(ctx, l.id)
	if err != nil {
		return err
	}
	st, chain, err := e.loadState(ctx, l.id, c.HeadRev)
	if err != nil {
		return err
	}
	l.createdAt = c.CreatedAt
	l.state, l.snapRev, l.snapHist, l.chain = st, st.Rev, st.History, chain
	l.headEventID = strconv.FormatInt(st.Rev, 10) // a bare revision, until a commit names the head
	if err := e.catchUp(ctx, l); err != nil {
		return err
	}
	if l.snapRev == 0 { // rebuilt from the log: it may be a canvas of model 1 (engine_migrate.go)
		if err := e.migrate(ctx, l); err != nil {
			return err
		}
	}
	if l.state.Rev == l.snapRev && l.snapRev > 0 { // no tail: the snapshot's own commit names the head
		at, err := e.st.ReadCommits(ctx, l.id, l.snapRev-1, 1)
		if err != nil {
			return err
		}
		if len(at) == 1 {
			l.headEventID = at[0].EventID
		}
	}
	return nil
}

// catchUp applies and publishes commits appended after the in-memory head.
// The caller owns l exclusively while loading it; afterwards catch-ups go
// through catchUpTo, which does not hold l.mu while it reads the store.
func (e *Engine) catchUp(ctx context.Context, l *live) error {
	for {
		commits, err := e.st.ReadCommits(ctx, l.id, l.state.Rev, 1000)
		if err != nil {
			return err
		}
		if err := e.applyCommits(l, commits); err != nil {
			return err
		}
		if len(commits) < 1000 {
			return nil
		}
	}
}

// applyCommits applies and publishes commits read from the log (ascending
// and contiguous) that are after the in-memory head; those the copy already
// holds are skipped. The caller holds l.mu.
func (e *Engine) applyCommits(l *live, commits []canvas.Commit) error {
	for i := range commits {
		c := &commits[i]
		if c.Rev <= l.state.Rev {
			continue
		}
		if c.Rev != l.state.Rev+1 {
			return fmt.Errorf("log of canvas %s has a gap at rev %d", l.id, l.state.Rev+1)
		}
		if err := reducer.Apply(l.state, c); err != nil {
			return fmt.Errorf("replaying rev %d of canvas %s: %w", c.Rev, l.id, err)
		}
		e.committed(l, c)
	}
	return nil
}

// committed records a durable commit in memory and publishes it.
func (e *Engine) committed(l *live, c *canvas.Commit) {
	if err := c.Encode(); err != nil { // commits read from the log; the engine's own are encoded
		e.log.Warn("encoding a commit", "canvas", l.id, "rev", c.Rev, "err", err)
	}
	l.headEventID = c.EventID
	for i := range c.Changes {
		l.changed[canvas.Ref{Kind: c.Changes[i].Kind, ID: c.Changes[i].ID}] = struct{}{}
	}
	if len(l.recent) >= e.cfg.RecentCommits {
		n := copy(l.recent, l.recent[len(l.recent)/4:])
		clear(l.recent[n:])
		l.recent = l.recent[:n]
	}
	l.recent = append(l.recent, c)
	if e.cfg.Publisher != nil {
		e.cfg.Publisher.Publish(c)
	}
}
