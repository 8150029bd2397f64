package store

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// GroupCommitter is the group-commit loop both stores share: callers queue
// write jobs with Do, and a loop goroutine takes everything queued (up to a
// batch limit, never waiting for more: a lone job runs at once; with several
// loops, one at a time unless a batch stalls, see NewGroupCommitter) and
// hands it to the store's run function, which writes the whole batch in
// as few transactions as it can (one commit, one log flush) and records
// each job's own outcome in the job. Do returns once the batch carrying its
// job has run.
type GroupCommitter[J any] struct {
	run        func(batch []J)
	maxBatch   int
	stallAfter time.Duration
	turn       chan struct{} // with several loops: held by the loop whose batch runs in the normal course

	mu      sync.RWMutex // guards closed against sends on queue
	closed  bool
	queue   chan *waiter[J]
	wg      sync.WaitGroup
	waiters sync.Pool
}

// waiter is one queued job and the signal that its batch has run.
type waiter[J any] struct {
	job  J
	done chan struct{} // buffered(1)
}

// NewGroupCommitter starts loops goroutines that run batches of at most
// maxBatch jobs with run. With loops > 1, one batch runs at a time while
// batches are quick, so that the jobs queued meanwhile go together into the
// next one; a further loop starts a batch beside the running ones only when
// they have run for stallAfter (say a batch waits for a lock another
// process holds), so one stalled batch does not hold up every job. Close
// stops them.
func NewGroupCommitter[J any](loops, maxBatch int, stallAfter time.Duration, run func(batch []J)) *GroupCommitter[J] {
	g := &GroupCommitter[J]{run: run, maxBatch: maxBatch, stallAfter: stallAfter, queue: make(chan *waiter[J], maxBatch)}
	if loops > 1 {
		g.turn = make(chan struct{}, 1)
	}
	g.waiters.New = func() any { return &waiter[J]{done: make(chan struct{}, 1)} }
	for range max(1, loops) {
		g.wg.Go(g.loop)
	}
	return g
}

// Do queues j and waits until the batch carrying it has run; j's outcome is
// what run recorded in it. Do gives up only while j is still unqueued: when
// ctx ends first (ctx's error) or the committer is closed (an error wrapping
// canvas.ErrUnavailable). A queued job always runs, even if ctx ends, so its
// outcome is never ambiguous.
func (g *GroupCommitter[J]) Do(ctx context.Context, j J) error {
	w := g.waiters.Get().(*waiter[J])
	w.job = j
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		g.put(w)
		return fmt.Errorf("the store is closed: %w", canvas.ErrUnavailable)
	}
	select {
	case g.queue <- w:
	case <-ctx.Done():
		g.mu.RUnlock()
		g.put(w)
		return ctx.Err()
	}
	g.mu.RUnlock()
	<-w.done
	g.put(w)
	return nil
}

// holdTurn returns the function that gives up the turn the calling loop
// holds, once: when its batch has run, or stallAfter after now, whichever
// comes first (so that another loop can take the jobs queued meanwhile).
func (g *GroupCommitter[J]) holdTurn() (giveUp func()) {
	if g.turn == nil {
		return func() {}
	}
	var once sync.Once
	release := func() { once.Do(func() { <-g.turn }) }
	t := time.AfterFunc(g.stallAfter, release)
	return func() {
		t.Stop()
		release()
	}
}

func (g *GroupCommitter[J]) put(w *waiter[J]) {
	var zero J
	w.job = zero
	g.waiters.Put(w)
}

// Queued returns how many jobs wait for a batch.
func (g *GroupCommitter[J]) Queued() int { return len(g.queue) }

// Close stops taking jobs, runs the queued ones and waits for the loops to
// exit. Close is idempotent.
func (g *GroupCommitter[J]) Close() {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		close(g.queue)
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// loop takes batches from the queue. With several loops, only the one
// holding the turn takes from the queue; it gives the turn up when its batch
// has run, or once it has run for stallAfter.
func (g *GroupCommitter[J]) loop() {
	batch := make([]*waiter[J], 0, g.maxBatch)
	jobs := make([]J, 0, g.maxBatch)
	prev := 0
	for {
		if g.turn != nil {
			g.turn <- struct{}{}
		}
		w, ok := <-g.queue
		if !ok {
			if g.turn != nil {
				<-g.turn // the next loop finds the queue closed too
			}
			return
		}
		giveUp := g.holdTurn()
		batch = append(batch[:0], w)
		if prev > 1 {
			// Concurrent writers are active: let them queue their next
			// calls so this transaction carries more than one.
			runtime.Gosched()
		}
	drain:
		for len(batch) < g.maxBatch {
			select {
			case w, ok := <-g.queue:
				if !ok {
					break drain
				}
				batch = append(batch, w)
			default:
				break drain
			}
		}
		for _, w := range batch {
			jobs = append(jobs, w.job)
		}
		g.run(jobs)
		giveUp()
		clear(jobs)
		jobs = jobs[:0]
		prev = len(batch)
		for i, w := range batch {
			w.done <- struct{}{}
			batch[i] = nil
		}
	}
}
