package hub

import (
	"context"
	"errors"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// Canvas host session streams (GET /sse/host/{session}). A session's
// browsers subscribe here with the same Subscription as a canvas stream's:
// a bounded queue, which a publish that finds full ends with a reset (every
// host event is ephemeral), and End for the server's own reasons. The
// events of one publish (a push's a2ui messages) take one place in the
// queue, and with a relay they travel to the other processes together.
// There is no fan-out shard: a session has a browser or two.

// Reasons of the resets that end a host stream.
const (
	hostBehindReason   = "this subscriber fell too far behind; reconnect to receive the current surfaces"
	hostMissedReason   = "this stream missed surface updates made through another server; reconnect to receive the current surfaces"
	hostStoppingReason = "the server is shutting down; reconnect"
)

// errMissedUpdate: a host stream missed a versioned update (only one relayed
// from another process can be missed).
var errMissedUpdate = errors.New("subscriber missed surface updates")

// SubscribeHost registers a browser for a canvas host session's events.
// Register before reading the session's state for the snapshot the browser
// is sent first: an update made in between is then both in the snapshot and
// in the queue, and FollowHost drops the copy (canvas.HostEvent.Version).
func (h *Hub) SubscribeHost(session string) *Subscription {
	s := &Subscription{ch: make(chan *frame, h.queueSize), lagged: make(chan struct{}, 1), kicked: make(chan struct{})}
	h.mu.Lock()
	set := h.hostSubs[session]
	if set == nil {
		set = map[*Subscription]struct{}{}
		h.hostSubs[session] = set
	}
	set[s] = struct{}{}
	h.mu.Unlock()
	if r := h.relay; r != nil {
		r.touch(streamKey{host: true, id: session})
	}
	return s
}

// UnsubscribeHost takes a host stream out of the hub (again: a no-op).
func (h *Hub) UnsubscribeHost(session string, s *Subscription) {
	h.mu.Lock()
	if set := h.hostSubs[session]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(h.hostSubs, session)
		}
	}
	h.mu.Unlock()
	if r := h.relay; r != nil {
		r.touch(streamKey{host: true, id: session})
	}
}

// PublishSession queues evs, in order and as one entry, for every browser
// of a canvas host session on this process and, with a relay, on the
// others (host.Streams). It returns how many browsers there are: those that
// received evs here plus those the other processes last reported. It never
// blocks: a browser whose queue is full is ended with a reset.
func (h *Hub) PublishSession(session string, evs ...canvas.HostEvent) int {
	n := h.deliverSession(session, evs)
	if r := h.relay; r != nil {
		r.queue(relayEvent{Session: session, Host: evs})
		n += r.remoteSubscribers(streamKey{host: true, id: session})
	}
	return n
}

// deliverSession queues evs for the session's browsers on this process
// (the relay hands it what other processes published) and returns how many
// received them.
func (h *Hub) deliverSession(session string, evs []canvas.HostEvent) int {
	f := &frame{}
	for _, ev := range evs {
		f.data = append(f.data, EncodeFrame(ev.Name, "", ev.Data)...)
		if f.version == 0 {
			f.version = ev.Version
		}
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for s := range h.hostSubs[session] {
		if !s.isKicked() && (len(evs) == 0 || s.enqueue(f)) {
			n++
		}
	}
	return n
}

// localSessionSubscribers counts a host session's browsers on this process.
func (h *Hub) localSessionSubscribers(session string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.hostSubs[session])
}

// FollowHost sends a canvas host session's live events from sub
// (SubscribeHost) to out until the client goes away or ctx ends, or the
// stream ends with a reset event saying why: its queue was full, it was
// ended on purpose (Subscription.End: its token expired or was revoked), it
// missed an update published through another process, or the hub stops.
// seen is the session state version of the snapshot the client was sent
// (canvas.HostEvent.Version): events of versions it holds are dropped. It
// unsubscribes sub before it returns; out stays open.
func (h *Hub) FollowHost(ctx context.Context, session string, sub *Subscription, out Conn, seen int64, heartbeat time.Duration) {
	h.lifeMu.Lock()
	if !h.stopped { // once stopped, FollowHost returns at once (stopping is closed)
		h.followers.Add(1)
		defer h.followers.Done()
	}
	h.lifeMu.Unlock()
	defer h.UnsubscribeHost(session, sub)
	pos := hostPosition{seen: seen}
	reset := func(reason string) {
		out.Write(EncodeEvent(canvas.EventReset, "", map[string]string{"reason": reason}))
		out.Flush()
	}
	hb := time.NewTimer(heartbeat)
	defer hb.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-out.Done():
			return
		case <-h.stopping:
			reset(hostStoppingReason)
			return
		case <-sub.kicked:
			if pos.sendQueued(sub, out) == nil {
				reason := sub.ended
				if reason == "" {
					reason = hostBehindReason
				}
				reset(reason)
			}
			return
		case <-hb.C:
			out.Write([]byte(HeartbeatComment))
			if !out.Flush() {
				return
			}
			hb.Reset(heartbeat)
		case f := <-sub.ch:
			sub.queued.Add(-1)
			if !pos.send(f, out) || pos.sendQueued(sub, out) != nil {
				reset(hostMissedReason)
				return
			}
			if !out.Flush() {
				return
			}
			hb.Reset(heartbeat)
		}
	}
}

// hostPosition is a host stream's place in its session's versioned
// updates: the state version its browser has, and whether the events of
// that version are still arriving.
type hostPosition struct {
	seen    int64
	current bool
}

// sendQueued writes the frames queued for sub; errMissedUpdate when one of
// them is of a version after one the stream missed.
func (p *hostPosition) sendQueued(sub *Subscription, out Conn) error {
	for {
		select {
		case f := <-sub.ch:
			sub.queued.Add(-1)
			if !p.send(f, out) {
				return errMissedUpdate
			}
		default:
			return nil
		}
	}
}

// send writes f unless admit drops it; false: f follows a missed version.
func (p *hostPosition) send(f *frame, out Conn) bool {
	ok, err := p.admit(f.version)
	if ok {
		out.Write(f.data)
	}
	return err == nil
}

// admit says whether to send the events of an update of version (0:
// unversioned, always sent): it drops those the snapshot already holds, and
// returns errMissedUpdate when the events of a version were missed.
func (p *hostPosition) admit(version int64) (bool, error) {
	switch {
	case version == 0:
		return true, nil
	case version == p.seen+1:
		p.seen, p.current = version, true
		return true, nil
	case version == p.seen:
		return p.current, nil // more of the update being sent, or one the snapshot holds
	case version < p.seen:
		return false, nil
	}
	return false, errMissedUpdate
}
