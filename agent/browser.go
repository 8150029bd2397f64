package agent

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// The browser side of a session (the agent's eyes and hands): browsers ack
// the complete agent:action envelopes they applied; the envelopes the
// canvas's host has not acked within Config.AckTimeout are resent to the
// host (a browser ignores a seq it has seen, and acks it again if it had
// applied it: its first ack may have been lost), at most
// Config.AckRetries times, after which the session counts the envelope as
// missed (stats acks_missed) and says so in an agent:status. An envelope
// due for a resend while the canvas has no host (its host left) spends no
// attempt: it waits for a host (stats host_waits, an agent:status with
// ack_waiting_host), is resent as soon as one is elected, and counts as
// missed (reason no_host) when none came within Config.AckHostWait in all.
// Browsers also publish their viewport and selection while the session
// runs; each turn uses the latest.
//
// Hosts are known only where Events knows them (the in-process hub); the
// standalone worker's HTTPEvents does not, so its sessions send envelopes
// without tracking acks.

// pendingEnvelope is a complete envelope its host has not acked yet.
type pendingEnvelope struct {
	env     ActionEnvelope
	host    string    // the host it was last sent to
	first   time.Time // first sent
	sent    time.Time // last (re)sent
	resends int
	// waitFrom is when it last found no host to be resent to (zero: not
	// waiting); waited sums its earlier waits, bounded by AckHostWait.
	waitFrom time.Time
	waited   time.Duration
	waits    bool // it has waited for a host (counted once in host_waits)
}

// Why an envelope counts as missed (the reason of agent:status ack_missed).
const (
	missedNotAcked = "not_acked" // its host had it AckRetries+1 times and never acked
	missedNoHost   = "no_host"   // the canvas had no host to send it to within AckHostWait
)

// missedEnvelope is an envelope given up on, with why.
type missedEnvelope struct {
	p      pendingEnvelope
	reason string
}

// waitForHost starts (or goes on with) p's wait for a host at now and
// reports whether it is its first wait. Call with d.mu held.
func (p *pendingEnvelope) waitForHost(now time.Time) (first bool) {
	if p.waitFrom.IsZero() {
		p.waitFrom = now
	}
	first = !p.waits
	p.waits = true
	return first
}

// hostWaited is how long p has waited for a host, its current wait included.
func (p *pendingEnvelope) hostWaited(now time.Time) time.Duration {
	if p.waitFrom.IsZero() {
		return p.waited
	}
	return p.waited + now.Sub(p.waitFrom)
}

// ackPoint is what one of a browser's acks said, for its apply jitter.
type ackPoint struct {
	seq     int64
	applied int64 // the browser's clock, Unix ms
	sent    int64 // the envelope's ts, Unix ms
}

// maxJitterSamples bounds the apply jitter samples a session keeps.
const maxJitterSamples = 1024

// keptSeqs is how many of its latest seqs a session remembers the complete
// envelopes of (their ts, and which browsers acked them).
const keptSeqs = 256

// delivery is a session's envelope bookkeeping (its own lock: acks arrive on
// request goroutines, resends happen on the session's watcher). Lock order:
// mu before the session's mu, never the other way.
type delivery struct {
	mu      sync.Mutex
	pending map[int64]*pendingEnvelope
	sentTS  map[int64]int64           // seq → ts of recent complete envelopes
	acked   map[int64]map[string]bool // seq → the browsers whose ack of it counted
	watch   bool                      // the watcher runs (started with the first tracked envelope)
	points  map[string][]ackPoint     // the host's acks that measured jitter, by browser, in seq order (the latest keptSeqs)
	jitter  []float64                 // ms, the host's
}

func newDelivery() *delivery {
	return &delivery{pending: map[int64]*pendingEnvelope{}, sentTS: map[int64]int64{}, acked: map[int64]map[string]bool{}, points: map[string][]ackPoint{}}
}

// sendEnvelope publishes a complete envelope to every subscriber, except
// set_viewport actions, which go in an envelope of their own to the canvas's
// host only (dropped when there is none). Envelopes with a known host are
// tracked until the host acks them.
func (s *session) sendEnvelope(actions []Action) {
	var viewport, rest []Action
	for _, a := range actions {
		if a.Name == "set_viewport" {
			viewport = append(viewport, a)
		} else {
			rest = append(rest, a)
		}
	}
	// Each envelope is recorded before it goes out: a browser's ack may
	// come back before publishing returns.
	ev := s.r.d.Events
	if len(rest) > 0 {
		env := s.nextEnvelope(false, rest)
		s.sent(env)
		s.r.publish(s.rec.CanvasID, client.EventAgentAction, env)
		s.track(env, ev.Host(s.rec.CanvasID))
	}
	if len(viewport) > 0 {
		env := s.nextEnvelope(false, viewport)
		s.sent(env)
		s.track(env, ev.PublishToHost(s.rec.CanvasID, client.EventAgentAction, env))
	}
}

// sent records a complete envelope about to be published, so that its
// acks count (onAck).
func (s *session) sent(env ActionEnvelope) {
	d := s.dl
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sentTS[env.Seq] = env.TS
	if len(d.sentTS) > keptSeqs {
		for seq := range d.sentTS {
			if seq <= env.Seq-keptSeqs { // seqs of partial envelopes leave gaps: not just env.Seq-keptSeqs
				delete(d.sentTS, seq)
				delete(d.acked, seq)
			}
		}
	}
}

// track awaits host's ack of env (published since sent(env)): resends it
// until the host acks, unless it has acked already. host "" (the canvas has
// none here) tracks nothing.
func (s *session) track(env ActionEnvelope, host string) {
	d := s.dl
	now := s.r.d.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if host != "" && !d.acked[env.Seq][host] {
		d.pending[env.Seq] = &pendingEnvelope{env: env, host: host, first: now, sent: now}
		if !d.watch {
			d.watch = true
			s.r.wg.Add(1) // the session's own worker holds a count: no race with Stop's Wait
			go s.watchAcks()
		}
	}
}

// onAck records a browser's ack: it counts once per browser and envelope
// the session sent (an ack again, or for a seq never sent as a complete
// envelope, counts for nothing), resolves the envelope when the ack comes
// from the host it was sent to, and measures the host's apply jitter:
// |(applied_i − applied_j) − (ts_i − ts_j)| between each ack i and the ack
// j of the nearest seq below it (the nearest above for the lowest so far),
// clock-skew free. Each first ack of an envelope by the host gives one
// sample, whatever order the acks arrive in.
func (s *session) onAck(a canvas.AgentAck) {
	r := s.r
	d := s.dl
	now := r.d.Now()
	d.mu.Lock()
	var p95 float64
	hasP95 := false
	if p := d.pending[a.Seq]; p != nil && p.host == a.ClientID {
		delete(d.pending, a.Seq)
		r.d.Metrics.observeAck(now.Sub(p.first))
	}
	ts, known := d.sentTS[a.Seq]
	counts := known && !d.acked[a.Seq][a.ClientID]
	if counts {
		if d.acked[a.Seq] == nil {
			d.acked[a.Seq] = map[string]bool{}
		}
		d.acked[a.Seq][a.ClientID] = true
	}
	if counts && a.AppliedAt > 0 && a.ClientID == r.d.Events.Host(s.rec.CanvasID) {
		// Every ack counts once, in whatever order the acks arrive (a
		// browser's acks are requests of their own, and overtake one
		// another): against the ack of the nearest seq below it already
		// here, or, when it is the lowest so far, the nearest above.
		pts := d.points[a.ClientID]
		i, _ := slices.BinarySearchFunc(pts, a.Seq, func(p ackPoint, seq int64) int { return cmp.Compare(p.seq, seq) })
		var prev *ackPoint
		if i > 0 {
			prev = &pts[i-1]
		} else if i < len(pts) {
			prev = &pts[i]
		}
		if prev != nil {
			j := math.Abs(float64((a.AppliedAt - prev.applied) - (ts - prev.sent)))
			r.d.Metrics.observeJitter(time.Duration(j * float64(time.Millisecond)))
			if len(d.jitter) == maxJitterSamples {
				d.jitter = d.jitter[1:]
			}
			d.jitter = append(d.jitter, j)
			p95, hasP95 = percentile(d.jitter, 0.95), true
		}
		pts = slices.Insert(pts, i, ackPoint{seq: a.Seq, applied: a.AppliedAt, sent: ts})
		if len(pts) > keptSeqs {
			pts = pts[len(pts)-keptSeqs:]
		}
		d.points[a.ClientID] = pts
	}
	// Counted before d.mu is released: awaitAcks, seeing nothing pending,
	// ends the session with this ack in its stats.
	if counts || hasP95 {
		s.stats(func(st *client.AgentStats) {
			if counts {
				st.Acks++
			}
			if hasP95 {
				st.ApplyJitterP95MS = p95
			}
		})
	}
	d.mu.Unlock()
}

// percentile returns the q-quantile of xs (nearest rank).
func percentile(xs []float64, q float64) float64 {
	c := append([]float64(nil), xs...)
	sort.Float64s(c)
	i := int(math.Ceil(q*float64(len(c)))) - 1
	return c[max(i, 0)]
}

// watchAcks resends unacked envelopes and gives up on them, until the
// session ends (started by the first envelope sent to a known host).
func (s *session) watchAcks() {
	defer s.r.wg.Done()
	tick := time.NewTicker(max(s.r.d.Config.AckTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
			s.checkAcks()
		}
	}
}

// checkAcks resends the envelopes whose host did not ack within AckTimeout,
// to the current host, or counts them missed once AckRetries resends are
// used. With no host nothing is sent and no attempt is spent: the envelope
// waits for one, and counts as missed once it waited AckHostWait in all.
func (s *session) checkAcks() {
	r := s.r
	cfg := r.d.Config
	now := r.d.Now()
	host := r.d.Events.Host(s.rec.CanvasID)
	var resend []*pendingEnvelope
	var missed []missedEnvelope
	var waiting []int64 // envelopes that began waiting for a host
	d := s.dl
	d.mu.Lock()
	for seq, p := range d.pending {
		if now.Sub(p.sent) < cfg.AckTimeout {
			continue
		}
		if host == "" {
			if p.waitForHost(now) {
				waiting = append(waiting, seq)
			}
			if p.hostWaited(now) >= cfg.AckHostWait {
				missed = append(missed, missedEnvelope{*p, missedNoHost})
				delete(d.pending, seq)
			}
			continue
		}
		if p.resends >= cfg.AckRetries {
			missed = append(missed, missedEnvelope{*p, missedNotAcked})
			delete(d.pending, seq)
			continue
		}
		p.resends++
		p.sent = now
		resend = append(resend, p)
	}
	if len(missed) > 0 {
		// Counted before d.mu is released, as in onAck.
		s.stats(func(st *client.AgentStats) { st.AcksMissed += len(missed) })
	}
	d.mu.Unlock()
	// In seq order (not the map's): a browser ignores a seq below one it
	// has seen, so a new host given a later envelope first would never
	// apply, nor ack, the earlier ones.
	sort.Slice(resend, func(i, j int) bool { return resend[i].env.Seq < resend[j].env.Seq })
	resent := 0
	for _, p := range resend {
		got := r.d.Events.PublishToHost(s.rec.CanvasID, client.EventAgentAction, p.env)
		d.mu.Lock()
		if got == "" {
			// The host left since: nothing was sent, the attempt is not spent.
			p.resends--
			if p.waitForHost(now) {
				waiting = append(waiting, p.env.Seq)
			}
		} else {
			p.host = got
			p.waited, p.waitFrom = p.hostWaited(now), time.Time{}
			resent++
			if d.acked[p.env.Seq][got] && d.pending[p.env.Seq] == p {
				// got acked it already: before this publishing returned
				// (onAck still saw the old host), or as a browser that
				// had applied it before it was host.
				delete(d.pending, p.env.Seq)
				r.d.Metrics.observeAck(now.Sub(p.first))
			}
		}
		d.mu.Unlock()
	}
	if resent > 0 {
		s.stats(func(st *client.AgentStats) { st.Resends += resent })
		for range resent {
			r.d.Metrics.resend()
		}
	}
	s.mu.Lock()
	state := s.rec.State
	s.mu.Unlock()
	if len(waiting) > 0 {
		sort.Slice(waiting, func(i, j int) bool { return waiting[i] < waiting[j] })
		s.stats(func(st *client.AgentStats) { st.HostWaits += len(waiting) })
		r.log.Info("agent: envelopes wait for a host browser", "session_id", s.rec.ID, "seqs", waiting, "wait", cfg.AckHostWait)
		r.publish(s.rec.CanvasID, client.EventAgentStatus, StatusEvent{Type: "agent:status", SessionID: s.rec.ID, State: state,
			Detail: map[string]any{"ack_waiting_host": map[string]any{"seqs": waiting, "wait_ms": cfg.AckHostWait.Milliseconds()}}})
	}
	for _, m := range missed {
		p := m.p
		r.d.Metrics.ackMissed()
		r.log.Warn("agent: the host never acked an envelope", "session_id", s.rec.ID, "seq", p.env.Seq, "client_id", p.host,
			"resends", p.resends, "reason", m.reason)
		r.publish(s.rec.CanvasID, client.EventAgentStatus, StatusEvent{Type: "agent:status", SessionID: s.rec.ID, State: state,
			Detail: map[string]any{"ack_missed": map[string]any{"seq": p.env.Seq, "client_id": p.host, "resends": p.resends, "reason": m.reason}}})
	}
}

// ackBudget bounds how long a session's end waits for the host's acks:
// 2·(AckRetries+1)·AckTimeout plus AckHostWait (each attempt takes
// AckTimeout plus the watcher's tick, and an envelope waits for a host at
// most AckHostWait in all; the slack absorbs a loaded machine).
func (c Config) ackBudget() time.Duration {
	return 2*time.Duration(c.AckRetries+1)*c.AckTimeout + c.AckHostWait
}

// awaitAcks waits, at the end of a session, until every tracked envelope
// was acked or given up on, at most Config.ackBudget. While the session
// still takes messages (not ended), a queued turn ends the wait early
// (queued true): the envelopes stay tracked by the watcher meanwhile.
func (s *session) awaitAcks() (queued bool) {
	deadline := time.Now().Add(s.r.d.Config.ackBudget())
	for time.Now().Before(deadline) && s.ctx.Err() == nil {
		s.dl.mu.Lock()
		n := len(s.dl.pending)
		s.dl.mu.Unlock()
		if n == 0 {
			return false
		}
		s.mu.Lock()
		queued = !s.ended && len(s.queue) > 0
		s.mu.Unlock()
		if queued {
			return true
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-s.ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	return false
}

// onView takes a browser's viewport and selection for the next turn.
func (s *session) onView(v canvas.AgentView) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v.Viewport != nil {
		vp := *v.Viewport
		s.rec.Viewport = &vp
	}
	if v.Selection != nil {
		s.rec.Selection = append([]string(nil), v.Selection...)
	}
}

// liveSession returns the session running id in this runner, or an error
// wrapping canvas.ErrNotFound.
func (r *Runner) liveSession(id string) (*session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.sessions[id]; s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("agent session %q is not running here: %w", id, canvas.ErrNotFound)
}

// Ack hands a browser's ack to the session (POST /api/canvas-agent/ack);
// canvas.ErrNotFound when the session does not run in this runner.
func (r *Runner) Ack(sessionID string, a canvas.AgentAck) error {
	s, err := r.liveSession(sessionID)
	if err == nil {
		s.onAck(a)
	}
	return err
}

// View hands a browser's viewport and selection to the session (POST
// /api/canvas-agent/view); canvas.ErrNotFound when it does not run here.
func (r *Runner) View(sessionID string, v canvas.AgentView) error {
	s, err := r.liveSession(sessionID)
	if err == nil {
		s.onView(v)
	}
	return err
}
