package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// handleCanvasStream serves GET /sse/canvas/{canvas_id}: replay after
// Last-Event-ID, caught_up, then live commits and ephemeral events, with no
// gap and no duplicate. It registers for live events before reading the
// head and the replay, and drops live commits already sent. A token that
// already holds Config.MaxStreamsPerToken streams is refused with 429 before
// anything is subscribed; the slot the stream takes is freed however it ends.
func (s *Server) handleCanvasStream(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleViewer)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	lastID := r.Header.Get("Last-Event-ID")
	if lastID == "" {
		lastID = r.URL.Query().Get("last_event_id")
	}
	ctx := r.Context()
	actor := principalFrom(ctx).Actor.ID
	browser, err := parseBrowser(r.URL.Query(), actor, time.Now())
	if err != nil {
		s.problem(w, r, err)
		return
	}
	// Register before reading the head: a commit made in between is then in
	// the queue (and dropped as a duplicate if the head already has it).
	sub, err := s.hub.subscribe(id, browser)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	slot, err := s.streams.acquire(actor, tokenExpiry(ctx), sub.end)
	if err != nil {
		s.hub.unsubscribe(id, sub)
		s.problem(w, r, err)
		return
	}
	// The head is read linearizably: on a process that cannot reach the
	// database this is a 503, never a stream (or a reset) from a copy that
	// may be behind what the client has seen.
	head, headEvent, err := s.engine.Head(ctx, id)
	// Resolve the Last-Event-ID before answering, so that a store error is
	// a 503 too. The head is known now: the rest reads this process's copy.
	local := store.LocalReads(ctx)
	last, resetReason := head, ""
	if err == nil && lastID != "" {
		var rev int64
		var ok bool
		rev, ok, err = s.engine.ResolveEventID(local, id, lastID)
		switch {
		case err != nil:
		case !ok:
			resetReason = "Last-Event-ID " + stripBreaks(lastID) + " cannot be resumed on this canvas (unknown, or ahead of the head); re-read the snapshot"
		case head-rev > s.cfg.MaxReplay:
			resetReason = "too many commits missed to replay; re-read the snapshot"
		default:
			last = rev
		}
	}
	if err != nil {
		s.hub.unsubscribe(id, sub)
		s.streams.release(slot)
		s.problem(w, r, err)
		return
	}
	out := openSSE(w)
	live := false // once the live loop owns sub, out and the slot, this handler must not release them
	defer func() {
		if !live {
			out.close()
			s.hub.unsubscribe(id, sub)
			s.streams.release(slot)
		}
	}()
	if resetReason != "" {
		// A resume that cannot be served is reset to the head: the reset's
		// id is the head's event id, so an EventSource reconnects from there
		// and never again with the Last-Event-ID that cannot be resumed.
		out.write(resetFrame(headEvent, head, resetReason))
		out.flush()
		return
	}
	for last < head {
		commits, _, err := s.engine.CommitsAfter(local, id, last, 1000)
		if err != nil || len(commits) == 0 {
			// The log could not be read (the store went away): end the
			// stream without a reset; the client reconnects with the last
			// id it received and misses nothing.
			return
		}
		for _, c := range commits {
			out.write(commitFrame(c))
			last = c.Rev
		}
		if !out.flush() {
			return
		}
	}
	out.write(sseEvent(canvas.EventCaughtUp, "", map[string]int64{"head_rev": last}))
	if !out.flush() {
		return
	}
	live = true
	if out.conn != nil {
		// The connection is ours: return, so net/http frees the request, its
		// buffers and this deep stack, and follow the canvas on a small goroutine.
		go s.streamLive(context.Background(), id, slot, sub, out, last)
		return
	}
	s.streamLive(ctx, id, slot, sub, out, last)
}

// streamLive sends live commits and events from sub until the client goes
// away, it is kicked (an ephemeral event found its queue full) or falls
// more than Config.MaxReplay commits behind, its canvas is deleted (a reset
// saying so ends it: Hub.canvasDeleted), its token expires or is revoked
// (slot ends it with a reset saying so), or the server closes streams;
// then it releases sub, out and the stream's slot. Commits left out of a
// full queue are read from the engine. last is the revision the client has.
// On a hijacked TCP connection, sub's fan-out shard writes most frames
// itself (fanout.go); this goroutine writes what is queued.
func (s *Server) streamLive(ctx context.Context, id string, slot *streamSlot, sub *subscriber, out *sseOut, last int64) {
	ctx = store.LocalReads(ctx) // a live stream follows this process's copy, which its fan-out feeds
	defer s.streams.release(slot)
	defer s.hub.unsubscribe(id, sub)
	defer func() {
		sub.wmu.Lock()
		sub.direct = nil
		out.close()
		sub.wmu.Unlock()
	}()
	sub.wmu.Lock()
	sub.last, sub.direct, sub.sentAt = last, out.rawConn(), time.Now()
	sub.wmu.Unlock()
	// The heartbeat timer is not reset on every event (a timer update per
	// subscriber per commit adds up at 10k subscribers): when it fires it
	// re-arms for the rest of the interval if something was sent meanwhile.
	hb := time.NewTimer(s.cfg.Heartbeat)
	defer hb.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case <-out.done():
			return
		case <-sub.kicked:
			sub.wmu.Lock()
			sub.direct = nil // the reset is the last frame: no direct write after it
			// Finish the frame the client has the start of.
			switch {
			case sub.partial:
				out.write((<-sub.ch).data)
			case sub.unsent != nil:
				out.write(sub.unsent)
			}
			if sub.ended != "" {
				out.write(endedReset(sub.ended, sub.last))
			} else {
				out.write(behindReset(sub.last))
				s.hub.fanStats.behind.Add(1)
			}
			sub.wmu.Unlock()
			return
		case <-sub.lagged:
			if !s.sendLive(ctx, id, sub, nil, out) {
				return
			}
		case now := <-hb.C:
			sub.wmu.Lock()
			wait := s.cfg.Heartbeat - now.Sub(sub.sentAt)
			if sub.queued.Load() > 0 { // queued frames come next, not a heartbeat
				wait = s.cfg.Heartbeat
			}
			if wait > 0 {
				sub.wmu.Unlock()
				hb.Reset(wait)
				continue
			}
			out.write([]byte(heartbeatComment))
			ok := out.flush()
			sub.sentAt = now
			sub.wmu.Unlock()
			if !ok {
				return
			}
			hb.Reset(s.cfg.Heartbeat)
		case f := <-sub.ch:
			if !s.sendLive(ctx, id, sub, f, out) {
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
func (s *Server) sendLive(ctx context.Context, id string, sub *subscriber, first *frame, out *sseOut) bool {
	sub.wmu.Lock()
	defer sub.wmu.Unlock()
	sub.sentAt = time.Now()
	if first != nil {
		sub.queued.Add(-1) // written below, before wmu is released
		sub.partial = sub.partial && !first.rest
		if !s.emit(ctx, id, sub, first, out.write) {
			return false
		}
	}
	for queued := true; queued; {
		select {
		case f := <-sub.ch:
			sub.queued.Add(-1)
			sub.partial = sub.partial && !f.rest
			if !s.emit(ctx, id, sub, f, out.write) {
				return false
			}
		default:
			queued = false
		}
	}
	if first == nil {
		if sub.isKicked() { // ending: its reset comes next, not the log (of a canvas perhaps deleted)
			return out.flush()
		}
		head, _, err := s.engine.Head(ctx, id)
		if err != nil || head-sub.last > s.cfg.MaxReplay || !s.fillGap(ctx, id, &sub.last, head+1, out.write) {
			out.write(behindReset(sub.last))
			s.hub.fanStats.behind.Add(1)
			return false
		}
	}
	return out.flush()
}

// Every reset event carries an id, the one a client resumes from, since a
// browser's EventSource reconnects by itself with the last id it saw: a
// reset without one left it reconnecting with a Last-Event-ID that could
// not be resumed, to be reset again, every few seconds for ever.

// resetFrame is a reset event with the SSE id eventID.
func resetFrame(eventID string, head int64, reason string) []byte {
	return sseEvent(canvas.EventReset, eventID, canvas.ResetInfo{HeadRev: head, Reason: reason})
}

// behindReset is the reset event of a stream that fell too far behind: its
// id is the last revision it was sent, so a reconnect replays what it
// missed (or, more than the replay limit behind, is reset to the head).
func behindReset(last int64) []byte {
	return resetFrame(strconv.FormatInt(last, 10), last,
		"this subscriber fell too far behind; reconnect with Last-Event-ID or re-read the snapshot")
}

// endedReset is the reset event of a stream the server ends on purpose
// (reason): its token expired or was revoked (a reconnect is a 401, which
// stops an EventSource), or its canvas was deleted (a reconnect is a 404,
// which stops it too; its id is 0, so that a canvas created again under
// the id is followed from its first commit, never from a revision of the
// deleted one).
func endedReset(reason string, last int64) []byte {
	id := strconv.FormatInt(last, 10)
	if reason == canvasDeletedReason {
		id = "0"
	}
	return resetFrame(id, last, reason)
}

// emit writes one live frame of sub (whose wmu the caller holds), skipping
// commits already sent and filling any gap before it from the engine; a
// stream that is ending (its reset comes next) skips a commit after a gap.
func (s *Server) emit(ctx context.Context, id string, sub *subscriber, f *frame, write func([]byte) bool) bool {
	if f.rev > 0 {
		if f.rev <= sub.last {
			return true // already replayed
		}
		if f.rev > sub.last+1 {
			if sub.isKicked() {
				return true
			}
			if !s.fillGap(ctx, id, &sub.last, f.rev, write) {
				return false
			}
		}
		sub.last = f.rev
	}
	return write(f.data)
}

// fillGap writes the commits between *last and upTo (exclusive) from the
// engine, should a live commit ever arrive ahead of the stream.
func (s *Server) fillGap(ctx context.Context, id string, last *int64, upTo int64, write func([]byte) bool) bool {
	for *last < upTo-1 {
		commits, _, err := s.engine.CommitsAfter(ctx, id, *last, int(min(upTo-1-*last, 1000)))
		if err != nil || len(commits) == 0 {
			return false
		}
		for _, c := range commits {
			if c.Rev >= upTo {
				return true
			}
			if !write(commitFrame(c)) {
				return false
			}
			*last = c.Rev
		}
	}
	return true
}

// commitFrame encodes a commit as a canvas_commit SSE event.
func commitFrame(c *canvas.Commit) []byte {
	data, err := c.JSON()
	if err != nil {
		data = []byte(`{}`)
	}
	return sseFrame(canvas.EventCommit, c.EventID, data)
}
