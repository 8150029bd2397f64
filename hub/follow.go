package hub

import (
	"context"
	"strconv"
	"syscall"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// Conn is the connection a live stream writes to (package api's SSE
// response). Write buffers a frame and Flush sends what is buffered; both
// report false once the connection failed. Done is closed when the client
// goes away. RawConn is the socket for the fan-out's direct writes (nil:
// none, every frame goes through Write). Close ends the response.
type Conn interface {
	Write(b []byte) bool
	Flush() bool
	Done() <-chan struct{}
	RawConn() syscall.RawConn
	Close()
}

// Log is where a stream reads the commits it missed (*store.Engine).
type Log interface {
	Head(ctx context.Context, canvasID string) (int64, string, error)
	CommitsAfter(ctx context.Context, canvasID string, afterRev int64, limit int) ([]*canvas.Commit, int64, error)
}

// FollowOptions bounds a live stream.
type FollowOptions struct {
	Heartbeat time.Duration // the heartbeat comment's interval while idle
	MaxReplay int64         // most commits a stream may fall behind before it is reset
}

// Follow sends live commits and events from sub until the client goes
// away, it is kicked (an ephemeral event found its queue full) or falls
// more than Config.MaxReplay commits behind, its canvas is deleted (a reset
// saying so ends it: Hub.CanvasDeleted), its token expires or is revoked
// (Subscription.End ends it with a reset saying so), or the hub stops;
// then it unsubscribes sub and closes out. Commits left out of a
// full queue are read from the engine. last is the revision the client has.
// On a hijacked TCP connection, sub's fan-out shard writes most frames
// itself (fanout.go); this goroutine writes what is queued.
func (h *Hub) Follow(ctx context.Context, id string, sub *Subscription, out Conn, last int64, log Log, opt FollowOptions) {
	h.lifeMu.Lock()
	if !h.stopped { // once stopped, Follow returns at once (stopping is closed)
		h.followers.Add(1)
		defer h.followers.Done()
	}
	h.lifeMu.Unlock()
	defer h.Unsubscribe(id, sub)
	defer func() {
		sub.wmu.Lock()
		sub.direct = nil
		out.Close()
		sub.wmu.Unlock()
	}()
	sub.wmu.Lock()
	sub.last, sub.direct, sub.sentAt = last, out.RawConn(), time.Now()
	sub.wmu.Unlock()
	// The heartbeat timer is not reset on every event (a timer update per
	// Subscription per commit adds up at 10k subscribers): when it fires it
	// re-arms for the rest of the interval if something was sent meanwhile.
	hb := time.NewTimer(opt.Heartbeat)
	defer hb.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.stopping:
			return
		case <-out.Done():
			return
		case <-sub.kicked:
			sub.wmu.Lock()
			sub.direct = nil // the reset is the last frame: no direct write after it
			// Finish the frame the client has the start of.
			switch {
			case sub.partial:
				out.Write((<-sub.ch).data)
			case sub.unsent != nil:
				out.Write(sub.unsent)
			}
			if sub.ended != "" {
				out.Write(endedReset(sub.ended, sub.last))
			} else {
				out.Write(behindReset(sub.last))
				h.fanStats.behind.Add(1)
			}
			sub.wmu.Unlock()
			return
		case <-sub.lagged:
			if !h.sendLive(ctx, id, sub, nil, out, log, opt) {
				return
			}
		case now := <-hb.C:
			sub.wmu.Lock()
			wait := opt.Heartbeat - now.Sub(sub.sentAt)
			if sub.queued.Load() > 0 { // queued frames come next, not a heartbeat
				wait = opt.Heartbeat
			}
			if wait > 0 {
				sub.wmu.Unlock()
				hb.Reset(wait)
				continue
			}
			out.Write([]byte(HeartbeatComment))
			ok := out.Flush()
			sub.sentAt = now
			sub.wmu.Unlock()
			if !ok {
				return
			}
			hb.Reset(opt.Heartbeat)
		case f := <-sub.ch:
			if !h.sendLive(ctx, id, sub, f, out, log, opt) {
				return
			}
		}
	}
}

// sendLive writes first (when not nil) and every frame queued after it,
// then flushes once, holding sub.wmu. With first nil it was called because
// commits were left out of the full queue: after the queue it also writes
// the commits up to the head, from the engine, or a reset when the client
// is more than Config.MaxReplay commits behind. It reports whether the
// stream goes on.
func (h *Hub) sendLive(ctx context.Context, id string, sub *Subscription, first *frame, out Conn, log Log, opt FollowOptions) bool {
	sub.wmu.Lock()
	defer sub.wmu.Unlock()
	sub.sentAt = time.Now()
	if first != nil {
		sub.queued.Add(-1) // written below, before wmu is released
		sub.partial = sub.partial && !first.rest
		if !emit(ctx, id, sub, first, log, out.Write) {
			return false
		}
	}
	for queued := true; queued; {
		select {
		case f := <-sub.ch:
			sub.queued.Add(-1)
			sub.partial = sub.partial && !f.rest
			if !emit(ctx, id, sub, f, log, out.Write) {
				return false
			}
		default:
			queued = false
		}
	}
	if first == nil {
		if sub.isKicked() { // ending: its reset comes next, not the log (of a canvas perhaps deleted)
			return out.Flush()
		}
		head, _, err := log.Head(ctx, id)
		if err != nil || head-sub.last > opt.MaxReplay || !fillGap(ctx, id, log, &sub.last, head+1, out.Write) {
			out.Write(behindReset(sub.last))
			h.fanStats.behind.Add(1)
			return false
		}
	}
	return out.Flush()
}

// Every reset event carries an id, the one a client resumes from, since a
// browser's EventSource reconnects by itself with the last id it saw: a
// reset without one left it reconnecting with a Last-Event-ID that could
// not be resumed, to be reset again, every few seconds for ever.

// ResetFrame is a reset event with the SSE id eventID.
func ResetFrame(eventID string, head int64, reason string) []byte {
	return EncodeEvent(canvas.EventReset, eventID, canvas.ResetInfo{HeadRev: head, Reason: reason})
}

// behindReset is the reset event of a stream that fell too far behind: its
// id is the last revision it was sent, so a reconnect replays what it
// missed (or, more than the replay limit behind, is reset to the head).
func behindReset(last int64) []byte {
	return ResetFrame(strconv.FormatInt(last, 10), last,
		"this Subscription fell too far behind; reconnect with Last-Event-ID or re-read the snapshot")
}

// endedReset is the reset event of a stream the server ends on purpose
// (reason): its token expired or was revoked (a reconnect is a 401, which
// stops an EventSource), or its canvas was deleted (a reconnect is a 404,
// which stops it too; its id is 0, so that a canvas created again under
// the id is followed from its first commit, never from a revision of the
// deleted one).
func endedReset(reason string, last int64) []byte {
	id := strconv.FormatInt(last, 10)
	if reason == CanvasDeletedReason {
		id = "0"
	}
	return ResetFrame(id, last, reason)
}

// emit writes one live frame of sub (whose wmu the caller holds), skipping
// commits already sent and filling any gap before it from the engine; a
// stream that is ending (its reset comes next) skips a commit after a gap.
func emit(ctx context.Context, id string, sub *Subscription, f *frame, log Log, write func([]byte) bool) bool {
	if f.rev > 0 {
		if f.rev <= sub.last {
			return true // already replayed
		}
		if f.rev > sub.last+1 {
			if sub.isKicked() {
				return true
			}
			if !fillGap(ctx, id, log, &sub.last, f.rev, write) {
				return false
			}
		}
		sub.last = f.rev
	}
	return write(f.data)
}

// fillGap writes the commits between *last and upTo (exclusive) from the
// engine, should a live commit ever arrive ahead of the stream.
func fillGap(ctx context.Context, id string, log Log, last *int64, upTo int64, write func([]byte) bool) bool {
	for *last < upTo-1 {
		commits, _, err := log.CommitsAfter(ctx, id, *last, int(min(upTo-1-*last, 1000)))
		if err != nil || len(commits) == 0 {
			return false
		}
		for _, c := range commits {
			if c.Rev >= upTo {
				return true
			}
			if !write(CommitFrame(c)) {
				return false
			}
			*last = c.Rev
		}
	}
	return true
}

// CommitFrame encodes a commit as a canvas_commit SSE event.
func CommitFrame(c *canvas.Commit) []byte {
	data, err := c.JSON()
	if err != nil {
		data = []byte(`{}`)
	}
	return EncodeFrame(canvas.EventCommit, c.EventID, data)
}
