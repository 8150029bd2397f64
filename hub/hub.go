// Package hub is canvasd's publish/subscribe system: the subscriptions of
// canvas streams and of canvas host session streams (one Subscription
// type), their fan-out, the live streams' loops (Follow, FollowHost), the
// relay that carries ephemeral events, host session events, presence,
// invoke answers and agent messages between the processes sharing a store,
// and the election of each canvas's host browser. It speaks SSE frames but
// knows nothing of HTTP: package api answers the requests and hands each
// stream's connection to the hub. It imports neither the agent runner nor
// the canvas host: what it needs of them it declares (BrowserInput,
// AgentMessages, InvokeAnswers), and cmd/canvasd builds the hub, wires it
// (Wire, and host.Host.SetStreams) and runs it (Start, Stop).
package hub

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// Hub fans commits and ephemeral events out to the SSE subscribers of each
// canvas. Publishing never blocks: it hands the frame to the canvas's
// fan-out shards (fanout.go), which write it straight to the connections of
// idle live subscribers and queue it for the others. Each subscriber has a
// bounded queue. A commit that finds it full is not queued; the subscriber
// is told it lags and its stream reads the commits it missed from the
// engine (they are durable). An ephemeral event that finds it full kicks
// the subscriber (it gets a reset event and reconnects with Last-Event-ID).
// A commit is encoded once for all subscribers, and its bytes are shared.
// Deleting a canvas ends its streams with a reset (CanvasDeleted).
//
// With a relay (Config.Broadcaster, relay.go) ephemeral events also reach the
// subscribers of the other processes sharing the store, and Subscribers
// counts theirs too.
type Hub struct {
	queueSize int
	onCount   func(delta int)

	mu       sync.RWMutex
	subs     map[string]map[*Subscription]struct{}
	hostSubs map[string]map[*Subscription]struct{} // canvas host session → its streams (hoststream.go)
	browsers map[string]map[string][]*Browser      // canvas id → client id → the declarations of its open streams in subs
	fans     map[string]*fanout                    // the subscribers of each canvas in subs, by fan-out shard
	fanStats fanStats

	relay  *relay                 // nil: this process only
	wiring atomic.Pointer[Wiring] // Wire

	brokerMu sync.Mutex
	brokers  []InvokeAnswers // bound through BindBroker, for answers relayed from other processes

	electMu sync.Mutex // serializes elections (browsers.go)
	hostMu  sync.Mutex
	hosts   map[string]*hostState // canvas id → elected host; absent: none

	problem func(err error) (status int, slug, detail string)
	now     func() time.Time // Config.Now

	lifeMu    sync.Mutex
	stopped   bool           // guarded by lifeMu: Follow returns at once
	followers sync.WaitGroup // running Follow calls
	stopping  chan struct{}  // closed by Stop: every stream ends
	startOnce sync.Once
	stopOnce  sync.Once
}

// Config wires a Hub. Every field is optional.
type Config struct {
	// QueueSize bounds each subscriber's queue (default 256).
	QueueSize int
	// OnCount, if not nil, is told of every subscriber added (+1) or removed (-1).
	OnCount func(delta int)
	Logger  *slog.Logger
	// Broadcaster carries ephemeral events (gesture, agent:*, invoke), the
	// canvas host's session events, invoke answers and agent messages to the
	// other processes sharing the store (relay.go); nil (SQLite, one
	// process): they stay in this process. Start starts the relay over it.
	Broadcaster store.Broadcaster
	// Problem tells how a relayed agent message refused by this process's
	// agent service is answered to the sender (the HTTP status, the problem
	// type's last path segment and the detail); nil: 500 "internal".
	Problem func(err error) (status int, slug, detail string)
	// Now is the clock of the presence the other processes report (it
	// expires presenceTTL after it was last refreshed); nil: time.Now.
	// Heartbeats and relay timeouts run on timers, on the wall clock.
	Now func() time.Time
}

// Wiring is what a hub hands work to that is built after it (it needs the
// hub): Wire it before Start.
type Wiring struct {
	// Input takes the acks and views of browsers for the agent sessions that
	// run in this process; nil: none run here.
	Input BrowserInput
	// Messages takes agent messages relayed from other processes; nil: none.
	Messages AgentMessages
	// OnDeleted runs when another process reports a deleted canvas, before
	// the canvas's streams here end (the engine forgets it: its copy would
	// otherwise go on serving it).
	OnDeleted func(canvasID string)
}

// frame is one encoded SSE event (or, on a host stream, the events of one
// publish); rev > 0 for commits.
type frame struct {
	rev     int64
	data    []byte
	to      string // a browser's client id: only its streams get the frame
	rest    bool   // the unwritten end of a frame a shard began (fanout.go)
	version int64  // a host stream's frame: its canvas.HostEvent.Version
}

// Subscription is one stream's place in the hub, a canvas stream's
// (Subscribe) or a canvas host session's (SubscribeHost): its bounded
// queue, and for a canvas stream the connection the fan-out writes to
// directly once the stream is live (Follow).
type Subscription struct {
	ch     chan *frame
	lagged chan struct{} // holds a signal while commits were left out of a full ch
	kicked chan struct{}
	once   sync.Once
	// ended is the reason of the reset that ends the stream on purpose (its
	// canvas was deleted), set before kicked is closed; "": kicked because
	// it fell behind.
	ended  string
	client *Browser  // nil: the stream declared no browser
	shard  *fanShard // set by fanout.add

	// queued counts the frames sent to ch that the stream's goroutine has
	// not written yet; it is decremented under wmu once they are written.
	queued atomic.Int32
	// wmu is held by whoever writes to the stream's connection once it is
	// live: its goroutine (streamLive), or a shard writing directly.
	wmu    sync.Mutex
	direct syscall.RawConn // the live stream's connection, for direct writes; nil: none (guarded by wmu)
	last   int64           // the last revision the client was sent (guarded by wmu while live)
	sentAt time.Time       // when something was last written to the live connection (guarded by wmu)
	// partial: the connection holds the start of a frame whose rest is the
	// first frame in ch; nothing else may be written before it (guarded by wmu).
	partial bool
	// unsent: the rest of a frame the connection holds the start of, when ch
	// had no room for it (the stream was kicked then); the reset follows it
	// (guarded by wmu).
	unsent []byte
}

func (s *Subscription) kick() { s.End("") }

// End kicks the subscriber so that its stream ends with a reset giving
// reason ("": it fell behind).
func (s *Subscription) End(reason string) {
	s.once.Do(func() {
		s.ended = reason
		close(s.kicked)
	})
}

// Ended is closed once the stream is ending: kicked (it fell behind, or an
// ephemeral event found its queue full) or ended on purpose (End).
func (s *Subscription) Ended() <-chan struct{} { return s.kicked }

// Lagged holds a signal while commits were left out of the subscriber's
// full queue (its stream then reads them from the engine); receiving takes
// the signal.
func (s *Subscription) Lagged() <-chan struct{} { return s.lagged }

// isKicked reports whether the stream is ending (kicked or ended).
func (s *Subscription) isKicked() bool {
	select {
	case <-s.kicked:
		return true
	default:
		return false
	}
}

// lag records that a commit was left out of the subscriber's full queue.
func (s *Subscription) lag() {
	select {
	case s.lagged <- struct{}{}:
	default: // already signalled
	}
}

// New returns a hub; Start starts its relay, Stop ends its streams and
// stops it.
func New(cfg Config) *Hub {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Hub{now: cfg.Now, queueSize: cfg.QueueSize, onCount: cfg.OnCount, subs: map[string]map[*Subscription]struct{}{}, hostSubs: map[string]map[*Subscription]struct{}{},
		browsers: map[string]map[string][]*Browser{},
		fans:     map[string]*fanout{}, hosts: map[string]*hostState{}, problem: cfg.Problem, stopping: make(chan struct{})}
	if cfg.Broadcaster != nil {
		h.relay = newRelay(h, cfg.Broadcaster, cfg.Logger)
	}
	return h
}

// Wire hands the hub the services built after it (they need the hub).
// Call it before Start; a later call replaces the wiring (tests swap the
// agent service).
func (h *Hub) Wire(w Wiring) {
	h.wiring.Store(&w)
}

// wired returns the hub's wiring (zero before Wire).
func (h *Hub) wired() Wiring {
	if w := h.wiring.Load(); w != nil {
		return *w
	}
	return Wiring{}
}

// Start starts the relay over Config.Broadcaster, if any: it runs until
// Stop, not until ctx ends (a stopping server still answers the requests in
// flight), or until the Broadcaster's listener returns (the store was
// closed). Calls after the first do nothing.
func (h *Hub) Start(context.Context) {
	h.startOnce.Do(func() {
		if h.relay != nil {
			h.relay.start()
		}
	})
}

// Stop ends every canvas stream that Follow serves and every canvas host
// stream that FollowHost serves, waits for them to end, then withdraws this
// process's subscriber counts from the other processes and stops the relay
// (call it before closing the store). Events published afterwards stay in
// this process. Stop is safe to call more than once and from several
// goroutines; each call returns once the hub has stopped.
func (h *Hub) Stop() {
	h.stopOnce.Do(func() {
		h.lifeMu.Lock()
		h.stopped = true
		close(h.stopping)
		h.lifeMu.Unlock()
		h.followers.Wait()
		if h.relay != nil {
			h.relay.stop()
		}
	})
}

// Publish sends a commit to the canvas's subscribers (store.Publisher). It
// encodes the commit once for all of them, and not at all when there are none
// (commits cross processes through the store, not through the hub).
func (h *Hub) Publish(c *canvas.Commit) {
	if h.LocalSubscribers(c.CanvasID) == 0 {
		return
	}
	h.send(c.CanvasID, &frame{rev: c.Rev, data: CommitFrame(c)})
}

// PublishEvent sends an ephemeral event (no id, never stored) such as
// gesture, agent:status or invoke to the canvas's subscribers, and, with a
// relay, queues it for the other processes' subscribers (never blocking: a
// full relay queue drops the event for the other processes and logs it).
func (h *Hub) PublishEvent(canvasID, event string, v any) {
	h.publish(canvasID, "", event, v)
}

// publish sends an ephemeral event to the canvas's subscribers here and
// elsewhere; to, when set, limits it to that browser's streams.
func (h *Hub) publish(canvasID, to, event string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(`{}`)
	}
	h.send(canvasID, &frame{data: EncodeFrame(event, "", data), to: to})
	if r := h.relay; r != nil {
		r.publish(canvasID, to, event, data)
	}
}

// Subscribers returns how many streams a canvas has: this process's, plus,
// with a relay, those the other processes last reported (relay.go).
func (h *Hub) Subscribers(canvasID string) int {
	n := h.LocalSubscribers(canvasID)
	if r := h.relay; r != nil {
		n += r.remoteSubscribers(streamKey{id: canvasID})
	}
	return n
}

// LocalSubscribers returns how many streams a canvas has on this process.
func (h *Hub) LocalSubscribers(canvasID string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs[canvasID])
}

// send hands f to the canvas's fan-out (fanout.go); it never blocks.
func (h *Hub) send(canvasID string, f *frame) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if fo := h.fans[canvasID]; fo != nil {
		fo.send(f)
	}
}

// Subscribe registers a stream; b is the browser it declared, or nil. A
// declared browser's queue starts with the canvas's current host. A browser
// whose client id another token's open stream declares on the canvas (here,
// or on another process as far as its presence says) is refused with an
// error wrapping canvas.ErrConflict, and nothing is registered.
func (h *Hub) Subscribe(canvasID string, b *Browser) (*Subscription, error) {
	if b != nil && h.remoteOwnerConflict(canvasID, b.id, b.owner) {
		return nil, errClientTaken(canvasID, b.id)
	}
	s := &Subscription{ch: make(chan *frame, h.queueSize), lagged: make(chan struct{}, 1), kicked: make(chan struct{}), client: b}
	h.mu.Lock()
	if b != nil {
		open := h.browsers[canvasID][b.id]
		if len(open) > 0 && open[0].owner != b.owner { // the open ones all have one owner
			h.mu.Unlock()
			return nil, errClientTaken(canvasID, b.id)
		}
		// A reconnect keeps its place in the election: the join time of the
		// client's open stream, if that one could be elected too (a stream
		// that could not gives no place to one that can).
		for _, o := range open {
			if (o.candidate || !b.candidate) && o.since < b.since {
				b.since = o.since
			}
		}
		byID := h.browsers[canvasID]
		if byID == nil {
			byID = map[string][]*Browser{}
			h.browsers[canvasID] = byID
		}
		byID[b.id] = append(open, b)
	}
	set := h.subs[canvasID]
	if set == nil {
		set = map[*Subscription]struct{}{}
		h.subs[canvasID] = set
	}
	set[s] = struct{}{}
	fo := h.fans[canvasID]
	if fo == nil {
		fo = newFanout(&h.fanStats)
		h.fans[canvasID] = fo
	}
	fo.add(s)
	h.mu.Unlock()
	if h.onCount != nil {
		h.onCount(1)
	}
	if r := h.relay; r != nil {
		r.touch(streamKey{id: canvasID})
	}
	if b != nil && !(b.candidate && h.elect(canvasID)) { // a change was announced to s too
		s.enqueue(&frame{data: hostFrame(canvasID, h.Host(canvasID))})
	}
	return s, nil
}

// Kick ends every stream of the canvas on this process as if it fell
// behind: each gets a reset naming the last revision it was sent, and its
// client reconnects and resumes from there.
func (h *Hub) Kick(canvasID string) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.subs[canvasID] {
		s.kick()
	}
}

// CanvasDeletedReason is the reason of the reset that ends a deleted canvas's streams.
const CanvasDeletedReason = "the canvas was deleted; re-read it (a canvas created again under its id is a new canvas: re-read its snapshot)"

// CanvasDeleted ends every stream of a deleted canvas with a reset event
// (CanvasDeletedReason), on this process and, with a relay, on the others,
// which also drop the canvas from their engines (setOnDeleted). Frames
// published after it returns reach none of these streams, so a canvas
// created again under the same id is followed by new streams only.
func (h *Hub) CanvasDeleted(canvasID string) {
	h.EndLocal(canvasID, CanvasDeletedReason)
	if r := h.relay; r != nil {
		r.queue(relayEvent{CanvasID: canvasID, Deleted: true})
	}
}

// deletedElsewhere handles a deletion another process reported.
func (h *Hub) deletedElsewhere(canvasID string) {
	if fn := h.wired().OnDeleted; fn != nil {
		fn(canvasID)
	}
	h.EndLocal(canvasID, CanvasDeletedReason)
}

// EndLocal takes the canvas's subscribers here out of the hub (nothing more
// is fanned out to them) and ends each stream with a reset giving reason;
// their goroutines still unsubscribe as they end (a no-op by then).
func (h *Hub) EndLocal(canvasID, reason string) {
	h.mu.Lock()
	set, fo := h.subs[canvasID], h.fans[canvasID]
	if fo != nil {
		for s := range set {
			fo.remove(s)
		}
		fo.close()
	}
	delete(h.subs, canvasID)
	delete(h.fans, canvasID)
	delete(h.browsers, canvasID)
	h.mu.Unlock()
	if len(set) == 0 {
		return
	}
	for s := range set {
		s.End(reason)
	}
	if r := h.relay; r != nil {
		r.touch(streamKey{id: canvasID})
	}
	h.elect(canvasID) // its host candidates are gone
}

// Unsubscribe takes a stream out of the hub (again: a no-op).
func (h *Hub) Unsubscribe(canvasID string, s *Subscription) {
	h.mu.Lock()
	if set := h.subs[canvasID]; set != nil {
		if _, ok := set[s]; ok && s.client != nil {
			h.undeclare(canvasID, s.client)
		}
		delete(set, s)
		fo := h.fans[canvasID] // made and dropped with set
		fo.remove(s)
		if len(set) == 0 {
			fo.close()
			delete(h.subs, canvasID)
			delete(h.fans, canvasID)
		}
	}
	h.mu.Unlock()
	if h.onCount != nil {
		h.onCount(-1)
	}
	if r := h.relay; r != nil {
		r.touch(streamKey{id: canvasID})
	}
	if s.client != nil && s.client.candidate {
		h.elect(canvasID)
	}
}
