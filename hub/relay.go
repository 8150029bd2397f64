package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// The relay carries a Hub's ephemeral events (gesture, agent:*, invoke), and
// every event of the canvas host's sessions (reload, a2ui, present, invoke:
// PublishSession), to the other processes sharing the
// store, through store.Broadcaster (PostgreSQL NOTIFY). Design:
//
//   - PublishEvent delivers locally at once and queues the event for the
//     other processes (relayQueue events; a full queue drops the event for
//     them and logs it, so publishers never block). One sender goroutine
//     broadcasts the queue in order. A receiving process hands the event to
//     its local subscribers only (it never re-broadcasts), and the store
//     skips a process's own broadcasts, so each subscriber sees an event once.
//   - A deleted canvas: the process that deleted it tells the others, which
//     drop it from their engines and end its streams there with a reset
//     (Hub.CanvasDeleted), as it does with its own.
//   - Presence: each process broadcasts its subscriber counts per canvas and
//     per host session when they change (coalesced), all of them every
//     presenceEvery, and when its listener (re)connects it asks the others
//     for theirs ("hello"). Hub.Subscribers (and Hub.PublishSession) add the
//     counts the others last reported (each expires presenceTTL after it was
//     last refreshed; a process that stops cleanly withdraws its counts at
//     once). Invokes use it to tell "nobody is connected" from "a browser
//     elsewhere did not answer".
//   - Invoke answers: POST /api/invoke/{id} on a process whose brokers do not
//     know id broadcasts the answer with the answering principal; the process
//     whose broker is waiting checks the principal's viewer access to the
//     invoke's target, resolves it (the first answer wins) and acknowledges to
//     the sender, which answers the browser. No acknowledgement within
//     AnswerForwardWait means no process knows the id: 404.
//
// Peers are trusted: anything that can NOTIFY on the store's database can
// inject events and answers.
type relay struct {
	hub *Hub
	b   store.Broadcaster
	log *slog.Logger
	id  string // this process's relay id (presence and acknowledgements)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	out     chan relayEvent
	kick    chan struct{}
	dropped atomic.Int64
	failed  atomic.Int64
	lastLog atomic.Int64 // unix nanos of the last drop/failure warning

	mu      sync.Mutex
	dirty   map[streamKey]struct{} // streams whose local count changed since the last presence
	full    bool                   // next presence lists every stream
	peers   map[string]map[streamKey]peerCount
	waiters map[string]chan relayAck // forwarded answers awaiting their acknowledgement
}

// streamKey names what subscribers are counted for: a canvas, or (host) a
// canvas host session.
type streamKey struct {
	host bool
	id   string
}

type peerCount struct {
	n       int
	seen    time.Time
	hosts   []hostCandidate  // the peer's host candidates on the canvas (browsers.go)
	clients []declaredClient // the browsers declared there, with their tokens (browsers.go)
}

// Relay topics.
const (
	topicEvent    = "canvasd.event"
	topicPresence = "canvasd.presence"
	topicHello    = "canvasd.hello"
	topicAnswer   = "canvasd.invoke.answer"
	topicAck      = "canvasd.invoke.ack"
)

// Relay bounds and timing.
const (
	relayQueue        = 4096
	presenceEvery     = 10 * time.Second
	presenceTTL       = 35 * time.Second
	AnswerForwardWait = 2 * time.Second // how long a forwarded invoke answer waits for its owner's acknowledgement
	relaySendTimeout  = 5 * time.Second
	relayLogGap       = 10 * time.Second
	presenceChunk     = 6000 // bytes of canvas ids per presence message (stays inline in NOTIFY)
)

// relayEvent is one canvas event, or the events of one PublishSession
// (which travel together, so a push's a2ui messages stay contiguous), or a
// browser's input for an agent session.
type relayEvent struct {
	CanvasID string             `json:"c,omitempty"`
	Event    string             `json:"e,omitempty"`
	Data     json.RawMessage    `json:"d,omitempty"`
	To       string             `json:"t,omitempty"` // a browser's client id: only its streams get the canvas event
	Session  string             `json:"s,omitempty"`
	Host     []canvas.HostEvent `json:"h,omitempty"`
	Input    *inputMsg          `json:"i,omitempty"` // browser input for an agent session (browsers.go)
	Deleted  bool               `json:"x,omitempty"` // canvas CanvasID was deleted: end its streams (Hub.CanvasDeleted)
}

type presenceMsg struct {
	From   string          `json:"from"`
	Counts []presenceEntry `json:"n,omitempty"`
	Bye    bool            `json:"bye,omitempty"`
}

type presenceEntry struct {
	CanvasID string           `json:"c"` // or the host session, with Host
	N        int              `json:"k"`
	Host     bool             `json:"h,omitempty"`
	Hosts    []hostCandidate  `json:"hc,omitempty"` // host candidates on the canvas (browsers.go)
	Clients  []declaredClient `json:"bc,omitempty"` // the browsers declared on the canvas, with their tokens (browsers.go)
}

type answerMsg struct {
	From      string           `json:"from"`
	Req       string           `json:"req"`
	InvokeID  string           `json:"id"`
	Answer    json.RawMessage  `json:"a"` // the browser's answer, as InvokeAnswers.AnswerInvoke takes it
	Principal canvas.Principal `json:"p"`
	// OnlyHost: the answer came with a host session's bridge capability,
	// which may answer only invokes sent to that session.
	OnlyHost string `json:"hs,omitempty"`
}

// Acknowledgement results.
const (
	ackAccepted  = "accepted"
	ackIgnored   = "ignored" // already answered or timed out
	ackForbidden = "forbidden"
	ackInvalid   = "invalid"
)

type relayAck struct {
	To     string `json:"to"`
	Req    string `json:"req"`
	Result string `json:"r"`
	Detail string `json:"detail,omitempty"`
	Status int    `json:"st,omitempty"`   // ackError: the problem's status
	Slug   string `json:"slug,omitempty"` // and type (last path segment)
}

// newRelay returns the relay of h over b, not started yet: events queued
// before start wait in its queue.
func newRelay(h *Hub, b store.Broadcaster, log *slog.Logger) *relay {
	r := &relay{hub: h, b: b, log: log, id: randomHex(8), out: make(chan relayEvent, relayQueue),
		kick: make(chan struct{}, 1), dirty: map[streamKey]struct{}{}, peers: map[string]map[streamKey]peerCount{},
		waiters: map[string]chan relayAck{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// start runs the relay's listener and sender until stop, or until b's
// listener returns (the store was closed).
func (r *relay) start() {
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		defer r.cancel()
		if err := r.b.ListenBroadcast(r.ctx, r.receive); err != nil {
			r.log.Error("relay: broadcast listener stopped", "err", err)
		}
	}()
	go r.runSender()
}

// stop withdraws this process's subscriber counts from the other processes
// (when the relay was started) and stops the relay's goroutines. Ephemeral
// events published afterwards stay local.
func (r *relay) stop() {
	r.cancel()
	r.wg.Wait()
}

// InvokeAnswers is a broker of the invokes this process sent (package
// host's Broker, bound by package api): the relay hands it the answers that
// reached other processes.
type InvokeAnswers interface {
	// InvokeTarget returns where invoke id was sent: a canvas, or a canvas
	// host session; an error wrapping canvas.ErrNotFound when the broker
	// does not know id.
	InvokeTarget(id string) (canvasID, hostSession string, err error)
	// AnswerInvoke records a browser's answer (its JSON). accepted is true
	// for the first answer to a pending invoke; an id the broker does not
	// know is an error wrapping canvas.ErrNotFound, a malformed answer one
	// wrapping canvas.ErrInvalid.
	AnswerInvoke(id string, answer json.RawMessage) (accepted bool, err error)
}

// BindBroker remembers a broker whose invokes this hub delivers, so answers
// relayed from other processes can reach it (again: a no-op).
func (h *Hub) BindBroker(b InvokeAnswers) {
	h.brokerMu.Lock()
	defer h.brokerMu.Unlock()
	for _, x := range h.brokers {
		if x == b {
			return
		}
	}
	h.brokers = append(h.brokers, b)
}

func (h *Hub) boundBrokers() []InvokeAnswers {
	h.brokerMu.Lock()
	defer h.brokerMu.Unlock()
	return append([]InvokeAnswers(nil), h.brokers...)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// publish queues a canvas event for the other processes without blocking;
// to, when set, limits it to that browser's streams.
func (r *relay) publish(canvasID, to, event string, data []byte) {
	r.queue(relayEvent{CanvasID: canvasID, To: to, Event: event, Data: data})
}

// inputMsg carries browser input to the process running the session.
type inputMsg struct {
	SessionID string          `json:"s"`
	Kind      string          `json:"k"`
	Data      json.RawMessage `json:"d"`
}

// sendInput queues browser input for a session that does not run here (the
// other processes ignore it unless they run the session).
func (r *relay) sendInput(m inputMsg) {
	r.queue(relayEvent{Input: &m})
}

// queue queues ev for the other processes without blocking; a full queue
// drops it (and logs it).
func (r *relay) queue(ev relayEvent) {
	if r.ctx.Err() != nil {
		return
	}
	select {
	case r.out <- ev:
	default:
		n := r.dropped.Add(1)
		r.warnLimited("relay: queue full; an event was not sent to the other processes",
			"canvas_id", ev.CanvasID, "event", ev.Event, "host_session", ev.Session, "dropped_total", n, "queue", relayQueue)
	}
}

// warnLimited logs at most one warning per relayLogGap.
func (r *relay) warnLimited(msg string, args ...any) {
	now := time.Now().UnixNano()
	last := r.lastLog.Load()
	if now-last < int64(relayLogGap) || !r.lastLog.CompareAndSwap(last, now) {
		return
	}
	r.log.Warn(msg, args...)
}

// touch notes that a stream's local subscriber count changed.
func (r *relay) touch(k streamKey) {
	r.mu.Lock()
	r.dirty[k] = struct{}{}
	r.mu.Unlock()
	r.kickSender()
}

func (r *relay) kickSender() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// remoteCandidate returns the first host candidate the other processes
// reported fresh for a canvas.
func (r *relay) remoteCandidate(canvasID string) hostCandidate {
	cut := r.hub.now().Add(-presenceTTL)
	r.mu.Lock()
	defer r.mu.Unlock()
	var best hostCandidate
	for _, counts := range r.peers {
		if c, ok := counts[streamKey{id: canvasID}]; ok && c.seen.After(cut) {
			for _, h := range c.hosts {
				if h.before(best) {
					best = h
				}
			}
		}
	}
	return best
}

// remoteOwners returns the actors whose tokens declare clientID on the
// canvas on the other processes, as their fresh presence reported.
func (r *relay) remoteOwners(canvasID, clientID string) []string {
	cut := r.hub.now().Add(-presenceTTL)
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, counts := range r.peers {
		if c, ok := counts[streamKey{id: canvasID}]; ok && c.seen.After(cut) {
			for _, d := range c.clients {
				if d.ID == clientID {
					out = append(out, d.Owner)
				}
			}
		}
	}
	return out
}

// remoteSubscribers sums the fresh counts the other processes reported.
func (r *relay) remoteSubscribers(k streamKey) int {
	cut := r.hub.now().Add(-presenceTTL)
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, counts := range r.peers {
		if c, ok := counts[k]; ok && c.seen.After(cut) {
			n += c.n
		}
	}
	return n
}

// localSubscribers counts this process's subscribers of a stream.
func (r *relay) localSubscribers(k streamKey) int {
	if !k.host {
		return r.hub.LocalSubscribers(k.id)
	}
	return r.hub.localSessionSubscribers(k.id)
}

// send broadcasts one message, bounded by relaySendTimeout.
func (r *relay) send(ctx context.Context, topic string, v any) error {
	payload, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, relaySendTimeout)
	defer cancel()
	if err := r.b.Broadcast(ctx, topic, payload); err != nil {
		n := r.failed.Add(1)
		r.warnLimited("relay: broadcast failed; the other processes miss this message", "topic", topic, "err", err, "failed_total", n)
		return err
	}
	return nil
}

func (r *relay) runSender() {
	defer r.wg.Done()
	tick := time.NewTicker(presenceEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.ctx.Done():
			r.mu.Lock()
			clear(r.peers) // stopped: the others' counts would only go stale
			r.mu.Unlock()
			bctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = r.b.Broadcast(bctx, topicPresence, mustMarshal(presenceMsg{From: r.id, Bye: true}))
			cancel()
			return
		case ev := <-r.out:
			_ = r.send(r.ctx, topicEvent, ev)
		case <-r.kick:
			r.sendPresence()
		case <-tick.C:
			r.mu.Lock()
			r.full = true
			cut := r.hub.now().Add(-presenceTTL)
			var reelect []string
			for id, counts := range r.peers {
				for c, pc := range counts {
					if pc.seen.Before(cut) {
						delete(counts, c)
						if len(pc.hosts) > 0 {
							reelect = append(reelect, c.id)
						}
					}
				}
				if len(counts) == 0 {
					delete(r.peers, id)
				}
			}
			r.mu.Unlock()
			for _, c := range reelect {
				r.hub.elect(c)
			}
			r.sendPresence()
		}
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// sendPresence broadcasts the local counts of the changed streams (every
// stream with subscribers when a full presence is due), in chunks.
func (r *relay) sendPresence() {
	r.mu.Lock()
	dirty, full := r.dirty, r.full
	r.dirty, r.full = map[streamKey]struct{}{}, false
	r.mu.Unlock()
	if full {
		r.hub.mu.RLock()
		for c := range r.hub.subs {
			dirty[streamKey{id: c}] = struct{}{}
		}
		for s := range r.hub.hostSubs {
			dirty[streamKey{host: true, id: s}] = struct{}{}
		}
		r.hub.mu.RUnlock()
	}
	if len(dirty) == 0 {
		return
	}
	var batch []presenceEntry
	size := 0
	for k := range dirty {
		e := presenceEntry{CanvasID: k.id, Host: k.host, N: r.localSubscribers(k)}
		if !k.host {
			e.Hosts = r.hub.localCandidates(k.id)
			e.Clients = r.hub.localClients(k.id)
		}
		batch = append(batch, e)
		size += len(k.id) + 24
		for _, h := range e.Hosts {
			size += len(h.ID) + 32
		}
		for _, c := range e.Clients {
			size += len(c.ID) + len(c.Owner) + 20
		}
		if size >= presenceChunk {
			_ = r.send(r.ctx, topicPresence, presenceMsg{From: r.id, Counts: batch})
			batch, size = nil, 0
		}
	}
	if len(batch) > 0 {
		_ = r.send(r.ctx, topicPresence, presenceMsg{From: r.id, Counts: batch})
	}
}

// receive handles one message from another process (the listener's
// goroutine: nothing here blocks on the network).
func (r *relay) receive(topic string, payload []byte) {
	switch topic {
	case "": // (re)connected: tell the others we are here, ask for theirs
		r.mu.Lock()
		r.full = true
		r.mu.Unlock()
		r.kickSender()
		r.wg.Add(1) // the listener's own count is held, so Add cannot race Wait
		go func() {
			defer r.wg.Done()
			_ = r.send(r.ctx, topicHello, presenceMsg{From: r.id})
		}()
	case topicEvent:
		var ev relayEvent
		err := json.Unmarshal(payload, &ev)
		switch {
		case err == nil && ev.Input != nil && ev.Input.SessionID != "":
			r.hub.DeliverInput(ev.Input.SessionID, ev.Input.Kind, ev.Input.Data, false)
		case err == nil && ev.Deleted && ev.CanvasID != "":
			r.hub.deletedElsewhere(ev.CanvasID)
		case err == nil && ev.CanvasID != "" && ev.Event != "":
			r.hub.send(ev.CanvasID, &frame{data: EncodeFrame(ev.Event, "", ev.Data), to: ev.To})
		case err == nil && ev.Session != "" && len(ev.Host) > 0:
			r.hub.deliverSession(ev.Session, ev.Host)
		default:
			r.log.Warn("relay: malformed event from another process", "err", err)
		}
	case topicPresence:
		var m presenceMsg
		if err := json.Unmarshal(payload, &m); err != nil || m.From == "" || m.From == r.id {
			return
		}
		for _, c := range r.notePresence(m) {
			r.hub.elect(c)
		}
	case topicHello:
		r.mu.Lock()
		r.full = true
		r.mu.Unlock()
		r.kickSender()
	case topicAnswer:
		var m answerMsg
		if err := json.Unmarshal(payload, &m); err != nil || m.From == r.id {
			return
		}
		res, detail, known := r.resolveLocal(m.InvokeID, m.Answer, m.Principal, m.OnlyHost)
		if !known {
			return // another process's invoke, or nobody's
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			_ = r.send(r.ctx, topicAck, relayAck{To: m.From, Req: m.Req, Result: res, Detail: detail})
		}()
	case topicMessage:
		r.receiveMessage(payload)
	case topicAck:
		var a relayAck
		if err := json.Unmarshal(payload, &a); err != nil || a.To != r.id {
			return
		}
		r.mu.Lock()
		ch := r.waiters[a.Req]
		r.mu.Unlock()
		if ch != nil {
			select {
			case ch <- a:
			default:
			}
		}
	}
}

// notePresence records another process's presence message and returns the
// canvases whose host candidates it changed.
func (r *relay) notePresence(m presenceMsg) (changed []string) {
	now := r.hub.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := r.peers[m.From]
	if m.Bye {
		for k, pc := range counts {
			if len(pc.hosts) > 0 {
				changed = append(changed, k.id)
			}
		}
		delete(r.peers, m.From)
		return changed
	}
	if counts == nil {
		counts = map[streamKey]peerCount{}
		r.peers[m.From] = counts
	}
	for _, e := range m.Counts {
		k := streamKey{host: e.Host, id: e.CanvasID}
		if !k.host && !slices.Equal(counts[k].hosts, e.Hosts) {
			changed = append(changed, k.id)
		}
		if e.N <= 0 {
			delete(counts, k)
		} else {
			counts[k] = peerCount{n: e.N, seen: now, hosts: e.Hosts, clients: e.Clients}
		}
	}
	return changed
}

// resolveLocal gives an answer to whichever of the hub's brokers knows the
// invoke; known is false when none does.
func (r *relay) resolveLocal(id string, a json.RawMessage, p canvas.Principal, onlyHost string) (result, detail string, known bool) {
	for _, b := range r.hub.boundBrokers() {
		if result, detail, known = resolveWith(b, id, a, p, onlyHost); known {
			return result, detail, true
		}
	}
	return "", "", false
}

// resolveWith answers invoke id on b for principal p, who needs the viewer
// role on the invoke's target (as POST /api/invoke/{id} requires locally);
// an answer made with a host session's capability (onlyHost) resolves only
// invokes sent to that session.
func resolveWith(b InvokeAnswers, id string, a json.RawMessage, p canvas.Principal, onlyHost string) (result, detail string, known bool) {
	if canvasID, hostSession, err := b.InvokeTarget(id); err == nil {
		if onlyHost != "" && hostSession != onlyHost {
			return ackForbidden, fmt.Sprintf("a page's capability answers only the invokes sent to host session %q", onlyHost), true
		}
		scope := canvasID
		if hostSession != "" {
			scope = hostSession
		}
		if !p.CanAccess(scope, canvas.RoleViewer) {
			return ackForbidden, fmt.Sprintf("answering this invoke needs the viewer role on %q; your token has %s", scope, p.DescribeScope()), true
		}
	}
	accepted, err := b.AnswerInvoke(id, a)
	switch {
	case errors.Is(err, canvas.ErrNotFound):
		return "", "", false
	case err != nil:
		return ackInvalid, err.Error(), true
	case accepted:
		return ackAccepted, "", true
	default:
		return ackIgnored, "", true
	}
}

// Relays reports whether the hub relays to other processes (Config.Broadcaster).
func (h *Hub) Relays() bool { return h.relay != nil }

// ForwardAnswer is forwardAnswer through the hub's relay (Relays must be true).
func (h *Hub) ForwardAnswer(ctx context.Context, id string, a json.RawMessage, p canvas.Principal, onlyHost string) (accepted bool, err error) {
	return h.relay.forwardAnswer(ctx, id, a, p, onlyHost)
}

// forwardAnswer delivers an answer whose invoke this process's broker does
// not know: first to the hub's other brokers, then to the other processes,
// waiting up to AnswerForwardWait for the owner's acknowledgement. It
// returns what the owning broker said, canvas.ErrForbidden when the
// principal may not answer, or canvas.ErrNotFound when no process claimed
// the id in time.
func (r *relay) forwardAnswer(ctx context.Context, id string, a json.RawMessage, p canvas.Principal, onlyHost string) (accepted bool, err error) {
	if res, detail, known := r.resolveLocal(id, a, p, onlyHost); known {
		return ackToResult(id, relayAck{Result: res, Detail: detail})
	}
	ctx, cancel := context.WithTimeout(ctx, AnswerForwardWait)
	defer cancel()
	req, ch, done := r.awaitAck()
	defer done()
	payload, err := json.Marshal(answerMsg{From: r.id, Req: req, InvokeID: id, Answer: a, Principal: p, OnlyHost: onlyHost})
	if err != nil {
		return false, err
	}
	if err := r.b.Broadcast(ctx, topicAnswer, payload); err != nil {
		return false, fmt.Errorf("relaying the answer to invoke %q to the other processes: %w", id, err)
	}
	select {
	case ack := <-ch:
		return ackToResult(id, ack)
	case <-ctx.Done():
		return false, fmt.Errorf("invoke %q is unknown or expired (no process claimed it within %v): %w", id, AnswerForwardWait, canvas.ErrNotFound)
	}
}

// awaitAck registers a request id whose acknowledgement from another
// process arrives on ch; done unregisters it.
func (r *relay) awaitAck() (req string, ch chan relayAck, done func()) {
	req = randomHex(8)
	ch = make(chan relayAck, 1)
	r.mu.Lock()
	r.waiters[req] = ch
	r.mu.Unlock()
	return req, ch, func() {
		r.mu.Lock()
		delete(r.waiters, req)
		r.mu.Unlock()
	}
}

func ackToResult(id string, a relayAck) (bool, error) {
	switch a.Result {
	case ackAccepted:
		return true, nil
	case ackIgnored:
		return false, nil
	case ackForbidden:
		return false, fmt.Errorf("%w: %s", canvas.ErrForbidden, a.Detail)
	default:
		return false, fmt.Errorf("answer to invoke %q: %s: %w", id, a.Detail, canvas.ErrInvalid)
	}
}
