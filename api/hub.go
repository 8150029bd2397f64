package api

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// Hub fans commits and ephemeral events out to the SSE subscribers of each
// canvas. Publishing never blocks: each subscriber has a bounded queue, and a
// subscriber whose queue is full is kicked (it gets a reset event and
// reconnects with Last-Event-ID). A commit is encoded once for all subscribers.
//
// With a relay (Config.Broadcaster, relay.go) ephemeral events also reach the
// subscribers of the other processes sharing the store, and Subscribers
// counts theirs too.
type Hub struct {
	queueSize int
	onCount   func(delta int)

	mu   sync.RWMutex
	subs map[string]map[*subscriber]struct{}

	relay atomic.Pointer[relay] // nil: this process only

	brokerMu sync.Mutex
	brokers  []*host.Broker // bound through CanvasInvokeDeliverer, for answers relayed from other processes
}

// frame is one encoded SSE event; rev > 0 for commits.
type frame struct {
	rev  int64
	data []byte
}

type subscriber struct {
	ch     chan *frame
	kicked chan struct{}
	once   sync.Once
}

func (s *subscriber) kick() { s.once.Do(func() { close(s.kicked) }) }

// NewHub returns a hub whose subscribers each queue at most queueSize events.
// onCount, if not nil, is told of every subscriber added (+1) or removed (-1).
func NewHub(queueSize int, onCount func(delta int)) *Hub {
	if queueSize <= 0 {
		queueSize = 256
	}
	return &Hub{queueSize: queueSize, onCount: onCount, subs: map[string]map[*subscriber]struct{}{}}
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
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(`{}`)
	}
	h.send(canvasID, &frame{data: sseFrame(event, "", data)})
	if r := h.relay.Load(); r != nil {
		r.publish(canvasID, event, data)
	}
}

// Subscribers returns how many streams a canvas has: this process's, plus,
// with a relay, those the other processes last reported (relay.go).
func (h *Hub) Subscribers(canvasID string) int {
	n := h.localSubscribers(canvasID)
	if r := h.relay.Load(); r != nil {
		n += r.remoteSubscribers(canvasID)
	}
	return n
}

func (h *Hub) localSubscribers(canvasID string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs[canvasID])
}

func (h *Hub) send(canvasID string, f *frame) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.subs[canvasID] {
		select {
		case s.ch <- f:
		default:
			s.kick()
		}
	}
}

func (h *Hub) subscribe(canvasID string) *subscriber {
	s := &subscriber{ch: make(chan *frame, h.queueSize), kicked: make(chan struct{})}
	h.mu.Lock()
	set := h.subs[canvasID]
	if set == nil {
		set = map[*subscriber]struct{}{}
		h.subs[canvasID] = set
	}
	set[s] = struct{}{}
	h.mu.Unlock()
	if h.onCount != nil {
		h.onCount(1)
	}
	if r := h.relay.Load(); r != nil {
		r.touch(canvasID)
	}
	return s
}

func (h *Hub) unsubscribe(canvasID string, s *subscriber) {
	h.mu.Lock()
	if set := h.subs[canvasID]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(h.subs, canvasID)
		}
	}
	h.mu.Unlock()
	if h.onCount != nil {
		h.onCount(-1)
	}
	if r := h.relay.Load(); r != nil {
		r.touch(canvasID)
	}
}
