package api

import (
	"context"
	"net/http"
	"syscall"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/hub"
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
	browser, err := hub.ParseBrowser(r.URL.Query(), actor, s.now())
	if err != nil {
		s.problem(w, r, err)
		return
	}
	// Register before reading the head: a commit made in between is then in
	// the queue (and dropped as a duplicate if the head already has it).
	sub, err := s.hub.Subscribe(id, browser)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	slot, err := s.streams.acquire(actor, tokenExpiry(ctx), sub.End)
	if err != nil {
		s.hub.Unsubscribe(id, sub)
		s.problem(w, r, err)
		return
	}
	head, headEvent, last, resetReason, err := s.resumePoint(ctx, id, lastID)
	if err != nil {
		s.hub.Unsubscribe(id, sub)
		s.streams.release(slot)
		s.problem(w, r, err)
		return
	}
	out := openSSE(w, s.cfg.SSEWriteTimeout)
	var ok bool
	live := false // once the live loop owns sub, out and the slot, this handler must not release them
	defer func() {
		if !live {
			out.close()
			s.hub.Unsubscribe(id, sub)
			s.streams.release(slot)
		}
	}()
	if resetReason != "" {
		// A resume that cannot be served is reset to the head: the reset's
		// id is the head's event id, so an EventSource reconnects from there
		// and never again with the Last-Event-ID that cannot be resumed.
		out.write(hub.ResetFrame(headEvent, head, resetReason))
		out.flush()
		return
	}
	if last, ok = s.replay(store.LocalReads(ctx), id, out, last, head); !ok {
		return
	}
	out.write(hub.EncodeEvent(canvas.EventCaughtUp, "", map[string]int64{"head_rev": last}))
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

// resumePoint reads the canvas's head and its event id, and resolves the
// stream's Last-Event-ID (lastID, "": none): last is the revision to replay
// from, or resetReason says why the stream is reset to the head instead.
// The head is read linearizably: on a process that cannot reach the
// database this is an error (a 503), never a stream (or a reset) from a
// copy that may be behind what the client has seen. The Last-Event-ID is
// resolved before answering, so that a store error is a 503 too; once the
// head is known, it reads this process's copy.
func (s *Server) resumePoint(ctx context.Context, id, lastID string) (head int64, headEvent string, last int64, resetReason string, err error) {
	head, headEvent, err = s.engine.Head(ctx, id)
	last = head
	if err != nil || lastID == "" {
		return head, headEvent, last, "", err
	}
	rev, ok, err := s.engine.ResolveEventID(store.LocalReads(ctx), id, lastID)
	switch {
	case err != nil:
	case !ok:
		resetReason = "Last-Event-ID " + hub.StripBreaks(lastID) + " cannot be resumed on this canvas (unknown, or ahead of the head); re-read the snapshot"
	case head-rev > s.cfg.MaxReplay:
		resetReason = "too many commits missed to replay; re-read the snapshot"
	default:
		last = rev
	}
	return head, headEvent, last, resetReason, err
}

// replay writes the commits after last up to head to out, from this
// process's copy (local), and returns the last revision written; false:
// the stream ends without a reset, the log could not be read (the store
// went away) or the client left, and a reconnect with the last id it
// received misses nothing.
func (s *Server) replay(local context.Context, id string, out *sseOut, last, head int64) (int64, bool) {
	for last < head {
		commits, _, err := s.engine.CommitsAfter(local, id, last, 1000)
		if err != nil || len(commits) == 0 {
			return last, false
		}
		for _, c := range commits {
			out.write(hub.CommitFrame(c))
			last = c.Rev
		}
		if !out.flush() {
			return last, false
		}
	}
	return last, true
}

// streamLive follows the canvas from this process's copy, which its fan-out
// feeds (hub.Hub.Follow), then frees the stream's slot.
func (s *Server) streamLive(ctx context.Context, id string, slot *streamSlot, sub *hub.Subscription, out *sseOut, last int64) {
	defer s.streams.release(slot)
	s.hub.Follow(store.LocalReads(ctx), id, sub, sseConn{out}, last, s.engine, hub.FollowOptions{Heartbeat: s.cfg.Heartbeat, MaxReplay: s.cfg.MaxReplay})
}

// sseConn is an SSE response as the hub writes to it (hub.Conn).
type sseConn struct{ o *sseOut }

func (c sseConn) Write(b []byte) bool      { return c.o.write(b) }
func (c sseConn) Flush() bool              { return c.o.flush() }
func (c sseConn) Done() <-chan struct{}    { return c.o.done() }
func (c sseConn) RawConn() syscall.RawConn { return c.o.rawConn() }
func (c sseConn) Close()                   { c.o.close() }
