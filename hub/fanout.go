package hub

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Fan-out. A canvas with subscribers has a few shard goroutines
// (GOMAXPROCS of them, each with its share of the subscribers, assigned
// round-robin); the hub hands each of them every frame through a bounded
// queue and never waits. A shard writes the frame straight to each idle
// live subscriber's connection with one non-blocking write (no goroutine
// woken, no copy: the frame's bytes are shared); when frames have piled up
// in its queue (the shard fell behind: the machine is short of CPU), it
// takes up to maxRun of them at once and writes them to each connection
// with one writev, so that each subscriber, and its reader, costs one
// system call for all of them, not one each. It queues a frame for the
// subscriber's own goroutine (streamLive) otherwise: during replay, while
// that goroutine is writing, behind earlier queued frames, across a gap in
// revisions, or when the socket takes only part of it (the rest is queued).
// Frames reach each subscriber in the order the hub sent them; a subscriber
// belongs to one shard, and a direct write happens only when nothing queued
// for that subscriber is still unwritten.

// fanQueue bounds the frames waiting in a shard's queue. A frame that finds
// it full waits in the shard's spill instead, and so does every frame after
// it until the shard has delivered the queue and then the spill: frames keep
// their order. Past maxSpill spilled frames (a shard that far behind), a
// frame is queued for each of the shard's subscribers by the sender
// instead; a commit that overtakes others that way is put in order by the
// stream (it fills the gap from the engine), an ephemeral event is not.
const (
	fanQueue = 1024
	maxSpill = 16 * fanQueue
	maxRun   = 64 // frames a shard delivers together, at most
)

// fanout is the shards of one canvas's subscribers.
type fanout struct {
	shards     []*fanShard
	next       int            // shard of the next subscriber
	shardsDone sync.WaitGroup // the shards' goroutines, which end after close
}

// Stats counts the frames the fan-out delivered, per subscriber: Direct
// ones written straight to the connection (in DirectWrites system calls:
// fewer when frames piled up and went together), Queued ones handed to the
// stream's goroutine; Behind counts the streams ended with a reset because
// they fell too far behind.
type Stats struct{ Direct, DirectWrites, Queued, Behind int64 }

// Stats returns the hub's fan-out counters.
func (h *Hub) Stats() Stats {
	return Stats{Direct: h.fanStats.direct.Load(), DirectWrites: h.fanStats.writes.Load(), Queued: h.fanStats.queued.Load(), Behind: h.fanStats.behind.Load()}
}

// fanStats counts the frames shards delivered, per subscriber, by path,
// and the streams ended because they fell behind.
type fanStats struct {
	direct atomic.Int64 // written straight to the connection
	writes atomic.Int64 // the system calls that wrote them
	queued atomic.Int64 // handed to the stream's goroutine
	behind atomic.Int64 // streams ended with a reset: too far behind, or kicked by a full queue
}

// fanShard is one shard's subscribers and its queue of frames to deliver.
type fanShard struct {
	mu      sync.Mutex
	subs    []*Subscription       // guarded by mu
	idx     map[*Subscription]int // index in subs; guarded by mu
	version uint64                // counts changes to subs; guarded by mu
	n       atomic.Int32          // len(subs)
	queue   chan *frame
	spill   []*frame      // frames that found queue full, and those after them; guarded by mu
	spilled atomic.Bool   // len(spill) > 0
	woken   chan struct{} // (1) a frame was spilled: the shard may have found its queue empty before
	stats   *fanStats
}

func newFanout(stats *fanStats) *fanout {
	fo := &fanout{shards: make([]*fanShard, runtime.GOMAXPROCS(0))}
	for i := range fo.shards {
		sh := &fanShard{idx: map[*Subscription]int{}, queue: make(chan *frame, fanQueue), woken: make(chan struct{}, 1), stats: stats}
		fo.shards[i] = sh
		fo.shardsDone.Add(1)
		go func() {
			defer fo.shardsDone.Done()
			sh.run()
		}()
	}
	return fo
}

// add assigns s to a shard. The caller holds the hub's write lock.
func (fo *fanout) add(s *Subscription) {
	sh := fo.shards[fo.next%len(fo.shards)]
	fo.next++
	s.shard = sh
	sh.mu.Lock()
	sh.idx[s] = len(sh.subs)
	sh.subs = append(sh.subs, s)
	sh.version++
	sh.n.Store(int32(len(sh.subs)))
	sh.mu.Unlock()
}

// remove takes s out of its shard. The caller holds the hub's write lock.
func (fo *fanout) remove(s *Subscription) {
	sh := s.shard
	sh.mu.Lock()
	if i, ok := sh.idx[s]; ok {
		last := len(sh.subs) - 1
		sh.subs[i] = sh.subs[last]
		sh.idx[sh.subs[i]] = i
		sh.subs[last] = nil
		sh.subs = sh.subs[:last]
		delete(sh.idx, s)
		sh.version++
		sh.n.Store(int32(len(sh.subs)))
	}
	sh.mu.Unlock()
}

// send hands f to every shard that has subscribers; never blocks. The
// caller holds the hub's read lock (close takes its write lock).
func (fo *fanout) send(f *frame) {
	for _, sh := range fo.shards {
		if sh.n.Load() == 0 {
			continue
		}
		if !sh.spilled.Load() {
			select {
			case sh.queue <- f:
				continue
			default:
			}
		}
		sh.mu.Lock()
		if len(sh.spill) < maxSpill {
			sh.spill = append(sh.spill, f)
			sh.spilled.Store(true)
			select {
			case sh.woken <- struct{}{}:
			default:
			}
		} else { // the shard is far behind: its subscribers' goroutines take f
			for _, s := range sh.subs {
				s.enqueue(f)
			}
		}
		sh.mu.Unlock()
	}
}

// close ends the shards' goroutines once they have delivered what they hold.
func (fo *fanout) close() {
	for _, sh := range fo.shards {
		close(sh.queue)
	}
}

// run delivers the shard's frames: those of its queue, and once the queue
// is empty those spilled meanwhile (which came after them), in runs of the
// frames waiting (at most maxRun); it returns once the queue is closed and
// both are delivered.
func (sh *fanShard) run() {
	d := shardDelivery{seen: ^uint64(0)}
	var spill []*frame // the spill taken out, its buffer reused
	run := make([]*frame, 0, maxRun)
	for open := true; open; {
		select {
		case f, ok := <-sh.queue:
			if open = ok; !ok {
				break
			}
			run = append(run[:0], f)
			for len(run) < maxRun && len(sh.queue) > 0 { // the shard is the queue's one receiver: these do not block
				run = append(run, <-sh.queue)
			}
			d.deliver(sh, run)
			clear(run)
		case <-sh.woken:
		}
		for len(sh.queue) == 0 && sh.spilled.Load() {
			sh.mu.Lock()
			spill, sh.spill = sh.spill, spill[:0]
			sh.spilled.Store(false)
			sh.mu.Unlock()
			for i := 0; i < len(spill); i += maxRun {
				part := spill[i:min(i+maxRun, len(spill))]
				d.deliver(sh, part)
				clear(part)
			}
			spill = spill[:0]
		}
	}
}

// shardDelivery is a shard goroutine's copy of its subscriber list, taken
// anew when the list changed (so subscribing never waits for a delivery),
// and its room for the writes of a run of frames.
type shardDelivery struct {
	subs []*Subscription
	seen uint64 // the list's version the copy is of
	out  directWrite
}

// deliver writes the frames of run (in order) to each of the shard's
// subscribers that can take them at once, and queues the rest for the others.
func (d *shardDelivery) deliver(sh *fanShard, run []*frame) {
	sh.mu.Lock()
	if d.seen != sh.version {
		clear(d.subs)
		d.subs, d.seen = append(d.subs[:0], sh.subs...), sh.version
	}
	sh.mu.Unlock()
	var direct, writes, queued int64
	now := time.Now() // one clock read per run, not per subscriber
	for _, s := range d.subs {
		k, written := s.writeDirect(run, now, &d.out)
		if written > 0 {
			direct, writes = direct+int64(written), writes+1
		}
		for _, f := range run[k:] {
			if s.enqueue(f) {
				queued++
			}
		}
	}
	sh.stats.direct.Add(direct)
	sh.stats.writes.Add(writes)
	sh.stats.queued.Add(queued)
}

// wants reports whether f is for this subscriber: frames addressed to one
// browser (to) reach only its streams.
func (s *Subscription) wants(f *frame) bool {
	return f.to == "" || (s.client != nil && s.client.id == f.to)
}

// enqueue queues f for the subscriber's goroutine and reports whether it
// did. A commit that finds the queue full is left out (the goroutine reads
// it from the engine); an ephemeral event kicks the subscriber.
func (s *Subscription) enqueue(f *frame) bool {
	if !s.wants(f) {
		return false
	}
	s.queued.Add(1)
	select {
	case s.ch <- f:
		return true
	default:
		s.queued.Add(-1)
		if f.rev > 0 {
			s.lag()
		} else {
			s.kick()
		}
		return false
	}
}

// directWrite is a shard's room for one subscriber's write: the frames'
// bytes and their places in the run.
type directWrite struct {
	bufs [][]byte
	at   []int
}

// writeDirect writes the frames of run the subscriber wants to its
// connection when it is live and idle (nothing queued for it unwritten),
// with one non-blocking write (writev for several), stopping before a
// commit that does not follow the last one sent (a gap: the goroutine fills
// it from the engine); what the socket does not take is queued. It returns
// k, how many of run's first frames were dealt with (written, queued,
// already sent, or not for this subscriber), the caller queueing run[k:],
// and how many frames it wrote or queued. now is when the shard took up
// the run: the heartbeat counts from it.
func (s *Subscription) writeDirect(run []*frame, now time.Time, w *directWrite) (k, written int) {
	if s.queued.Load() != 0 || !s.wmu.TryLock() {
		return 0, 0
	}
	defer s.wmu.Unlock()
	if s.direct == nil || s.queued.Load() != 0 {
		return 0, 0
	}
	w.bufs, w.at = w.bufs[:0], w.at[:0]
	last := s.last
	for ; k < len(run); k++ {
		f := run[k]
		if !s.wants(f) {
			continue
		}
		if f.rev > 0 {
			if f.rev <= last {
				continue // sent already
			}
			if f.rev != last+1 {
				break // a gap: the goroutine fills it from the engine
			}
			last = f.rev
		}
		w.bufs, w.at = append(w.bufs, f.data), append(w.at, k)
	}
	if len(w.bufs) == 0 {
		return k, 0
	}
	var n int
	var werr error
	err := s.direct.Write(func(fd uintptr) bool {
		if len(w.bufs) == 1 {
			n, werr = syscall.Write(int(fd), w.bufs[0])
		} else {
			n, werr = unix.Writev(int(fd), w.bufs)
		}
		return true // never wait for the socket: the goroutine does
	})
	if err == nil && werr != nil && !errors.Is(werr, syscall.EAGAIN) && !errors.Is(werr, syscall.EINTR) {
		err = werr
	}
	clear(w.bufs)
	if err != nil {
		// Nothing was written (the connection failed, or is closing): the
		// goroutine writes the run, or finds out and ends the stream.
		return 0, 0
	}
	n = max(n, 0)
	s.sentAt = now
	for i, at := range w.at {
		f := run[at]
		if f.rev > 0 {
			s.last = f.rev
		}
		if n >= len(f.data) {
			n -= len(f.data)
			continue
		}
		// The socket took part of f (or none of it): the rest goes first in
		// the (empty: queued was 0) queue, and the frames after it behind it.
		s.queued.Add(1)
		select {
		case s.ch <- &frame{data: f.data[n:], rest: true}:
			s.partial = true
		default: // filled meanwhile by enqueue: the stream ends after this frame
			s.queued.Add(-1)
			s.unsent = f.data[n:]
			s.kick()
		}
		return at + 1, i + 1
	}
	return k, len(w.at)
}
