package api

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
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
// Deleting a canvas ends its streams with a reset (canvasDeleted).
//
// With a relay (Config.Broadcaster, relay.go) ephemeral events also reach the
// subscribers of the other processes sharing the store, and Subscribers
// counts theirs too.
type Hub struct {
	queueSize int
	onCount   func(delta int)

	mu       sync.RWMutex
	subs     map[string]map[*subscriber]struct{}
	browsers map[string]map[string][]*browserClient // canvas id → client id → the declarations of its open streams in subs
	fans     map[string]*fanout                     // the subscribers of each canvas in subs, by fan-out shard
	fanStats fanStats

	relay     atomic.Pointer[relay]                 // nil: this process only
	onDeleted atomic.Pointer[func(canvasID string)] // setOnDeleted

	brokerMu sync.Mutex
	brokers  []*host.Broker // bound through CanvasInvokeDeliverer, for answers relayed from other processes

	electMu sync.Mutex // serializes elections (browsers.go)
	hostMu  sync.Mutex
	hosts   map[string]*hostState // canvas id → elected host; absent: none

	input    atomic.Pointer[BrowserInput]  // the agent service taking acks and views here (browsers.go)
	messages atomic.Pointer[AgentMessages] // and messages relayed from other processes (relay_messages.go)
}

// frame is one encoded SSE event; rev > 0 for commits.
type frame struct {
	rev  int64
	data []byte
	to   string // a browser's client id: only its streams get the frame
	rest bool   // the unwritten end of a frame a shard began (fanout.go)
}

type subscriber struct {
	ch     chan *frame
	lagged chan struct{} // holds a signal while commits were left out of a full ch
	kicked chan struct{}
	once   sync.Once
	// ended is the reason of the reset that ends the stream on purpose (its
	// canvas was deleted), set before kicked is closed; "": kicked because
	// it fell behind.
	ended  string
	client *browserClient // nil: the stream declared no browser
	shard  *fanShard      // set by fanout.add

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

func (s *subscriber) kick() { s.end("") }

// end kicks the subscriber so that its stream ends with a reset giving
// reason ("": it fell behind).
func (s *subscriber) end(reason string) {
	s.once.Do(func() {
		s.ended = reason
		close(s.kicked)
	})
}

// isKicked reports whether the stream is ending (kicked or ended).
func (s *subscriber) isKicked() bool {
	select {
	case <-s.kicked:
		return true
	default:
		return false
	}
}

// lag records that a commit was left out of the subscriber's full queue.
func (s *subscriber) lag() {
	select {
	case s.lagged <- struct{}{}:
	default: // already signalled
	}
}

// NewHub returns a hub whose subscribers each queue at most queueSize events.
// onCount, if not nil, is told of every subscriber added (+1) or removed (-1).
func NewHub(queueSize int, onCount func(delta int)) *Hub {
	if queueSize <= 0 {
		queueSize = 256
	}
	return &Hub{queueSize: queueSize, onCount: onCount, subs: map[string]map[*subscriber]struct{}{}, browsers: map[string]map[string][]*browserClient{},
		fans: map[string]*fanout{}, hosts: map[string]*hostState{}}
}

// Publish sends a commit to the canvas's subscribers (store.Publisher). It
// encodes the commit once for all of them, and not at all when there are none
// (commits cross processes through the store, not through the hub).
func (h *Hub) Publish(c *canvas.Commit) {
	if h.localSubscribers(c.CanvasID) == 0 {
		return
	}
	h.send(c.CanvasID, &frame{rev: c.Rev, data: commitFrame(c)})
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
	h.send(canvasID, &frame{data: sseFrame(event, "", data), to: to})
	if r := h.relay.Load(); r != nil {
		r.publish(canvasID, to, event, data)
	}
}

// Subscribers returns how many streams a canvas has: this process's, plus,
// with a relay, those the other processes last reported (relay.go).
func (h *Hub) Subscribers(canvasID string) int {
	n := h.localSubscribers(canvasID)
	if r := h.relay.Load(); r != nil {
		n += r.remoteSubscribers(streamKey{id: canvasID})
	}
	return n
}

func (h *Hub) localSubscribers(canvasID string) int {
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

// subscribe registers a stream; b is the browser it declared, or nil. A
// declared browser's queue starts with the canvas's current host. A browser
// whose client id another token's open stream declares on the canvas (here,
// or on another process as far as its presence says) is refused with an
// error wrapping canvas.ErrConflict, and nothing is registered.
func (h *Hub) subscribe(canvasID string, b *browserClient) (*subscriber, error) {
	if b != nil && h.remoteOwnerConflict(canvasID, b.id, b.owner) {
		return nil, errClientTaken(canvasID, b.id)
	}
	s := &subscriber{ch: make(chan *frame, h.queueSize), lagged: make(chan struct{}, 1), kicked: make(chan struct{}), client: b}
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
			byID = map[string][]*browserClient{}
			h.browsers[canvasID] = byID
		}
		byID[b.id] = append(open, b)
	}
	set := h.subs[canvasID]
	if set == nil {
		set = map[*subscriber]struct{}{}
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
	if r := h.relay.Load(); r != nil {
		r.touch(streamKey{id: canvasID})
	}
	if b != nil && !(b.candidate && h.elect(canvasID)) { // a change was announced to s too
		s.enqueue(&frame{data: hostFrame(canvasID, h.Host(canvasID))})
	}
	return s, nil
}

// canvasDeletedReason is the reason of the reset that ends a deleted canvas's streams.
const canvasDeletedReason = "the canvas was deleted; re-read it (a canvas created again under its id is a new canvas: re-read its snapshot)"

// canvasDeleted ends every stream of a deleted canvas with a reset event
// (canvasDeletedReason), on this process and, with a relay, on the others,
// which also drop the canvas from their engines (setOnDeleted). Frames
// published after it returns reach none of these streams, so a canvas
// created again under the same id is followed by new streams only.
func (h *Hub) canvasDeleted(canvasID string) {
	h.endLocal(canvasID, canvasDeletedReason)
	if r := h.relay.Load(); r != nil {
		r.queue(relayEvent{CanvasID: canvasID, Deleted: true})
	}
}

// setOnDeleted makes fn run when another process reports a deleted canvas,
// before the canvas's streams here end (the Server drops it from its
// engine, whose copy would otherwise go on serving it).
func (h *Hub) setOnDeleted(fn func(canvasID string)) { h.onDeleted.Store(&fn) }

// deletedElsewhere handles a deletion another process reported.
func (h *Hub) deletedElsewhere(canvasID string) {
	if fn := h.onDeleted.Load(); fn != nil {
		(*fn)(canvasID)
	}
	h.endLocal(canvasID, canvasDeletedReason)
}

// endLocal takes the canvas's subscribers here out of the hub (nothing more
// is fanned out to them) and ends each stream with a reset giving reason;
// their goroutines still unsubscribe as they end (a no-op by then).
func (h *Hub) endLocal(canvasID, reason string) {
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
		s.end(reason)
	}
	if r := h.relay.Load(); r != nil {
		r.touch(streamKey{id: canvasID})
	}
	h.elect(canvasID) // its host candidates are gone
}

func (h *Hub) unsubscribe(canvasID string, s *subscriber) {
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
	if r := h.relay.Load(); r != nil {
		r.touch(streamKey{id: canvasID})
	}
	if s.client != nil && s.client.candidate {
		h.elect(canvasID)
	}
}
