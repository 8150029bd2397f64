package agent

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// The browser side of a session (the agent's eyes and hands): browsers ack
// the complete agent:action envelopes they applied; the envelopes the
// canvas's host has not acked within Config.AckTimeout are resent to the
// host (a browser ignores a seq it has seen and acks it again), at most
// Config.AckRetries times, after which the session counts the envelope as
// missed (stats acks_missed) and says so in an agent:status. Browsers also
// publish their viewport and selection while the session runs; each turn
// uses the latest.
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
}

// ackPoint is what a browser's previous ack said, for its apply jitter.
type ackPoint struct {
	seq     int64
	applied int64 // the browser's clock, Unix ms
	sent    int64 // the envelope's ts, Unix ms
}

// maxJitterSamples bounds the apply jitter samples a session keeps.
const maxJitterSamples = 1024

// delivery is a session's envelope bookkeeping (its own lock: acks arrive on
// request goroutines, resends happen on the session's watcher).
type delivery struct {
	mu      sync.Mutex
	pending map[int64]*pendingEnvelope
	sentTS  map[int64]int64 // seq → ts of recent complete envelopes
	watch   bool            // the watcher runs (started with the first tracked envelope)
	last    map[string]ackPoint
	jitter  []float64 // ms, the host's
}

func newDelivery() *delivery {
	return &delivery{pending: map[int64]*pendingEnvelope{}, sentTS: map[int64]int64{}, last: map[string]ackPoint{}}
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
	ev := s.r.d.Events
	if len(rest) > 0 {
		env := s.nextEnvelope(false, rest)
		s.r.publish(s.rec.CanvasID, client.EventAgentAction, env)
		s.track(env, ev.Host(s.rec.CanvasID))
	}
	if len(viewport) > 0 {
		env := s.nextEnvelope(false, viewport)
		s.track(env, ev.PublishToHost(s.rec.CanvasID, client.EventAgentAction, env))
	}
}

func (s *session) track(env ActionEnvelope, host string) {
	d := s.dl
	now := s.r.d.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sentTS[env.Seq] = env.TS
	if len(d.sentTS) > 256 {
		delete(d.sentTS, env.Seq-256)
	}
	if host != "" {
		d.pending[env.Seq] = &pendingEnvelope{env: env, host: host, first: now, sent: now}
		if !d.watch {
			d.watch = true
			s.r.wg.Add(1) // the session's own worker holds a count: no race with Stop's Wait
			go s.watchAcks()
		}
	}
}

// onAck records a browser's ack: it counts, resolves the envelope when the
// ack comes from the host it was sent to, and measures the host's apply
// jitter: |(applied_i − applied_j) − (ts_i − ts_j)| between its consecutive
// acks i > j, clock-skew free.
func (s *session) onAck(a canvas.AgentAck) {
	r := s.r
	s.stats(func(st *client.AgentStats) { st.Acks++ })
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
	if known && a.AppliedAt > 0 && a.ClientID == r.d.Events.Host(s.rec.CanvasID) {
		if prev, ok := d.last[a.ClientID]; ok && a.Seq > prev.seq {
			j := math.Abs(float64((a.AppliedAt - prev.applied) - (ts - prev.sent)))
			r.d.Metrics.observeJitter(time.Duration(j * float64(time.Millisecond)))
			if len(d.jitter) == maxJitterSamples {
				d.jitter = d.jitter[1:]
			}
			d.jitter = append(d.jitter, j)
			p95, hasP95 = percentile(d.jitter, 0.95), true
		}
		if prev, ok := d.last[a.ClientID]; !ok || a.Seq > prev.seq {
			d.last[a.ClientID] = ackPoint{seq: a.Seq, applied: a.AppliedAt, sent: ts}
		}
	}
	d.mu.Unlock()
	if hasP95 {
		s.stats(func(st *client.AgentStats) { st.ApplyJitterP95MS = p95 })
	}
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
// to the current host, or counts them missed once AckRetries resends are used.
func (s *session) checkAcks() {
	r := s.r
	cfg := r.d.Config
	now := r.d.Now()
	var resend []*pendingEnvelope
	var missed []pendingEnvelope
	d := s.dl
	d.mu.Lock()
	for seq, p := range d.pending {
		if now.Sub(p.sent) < cfg.AckTimeout {
			continue
		}
		if p.resends >= cfg.AckRetries {
			missed = append(missed, *p)
			delete(d.pending, seq)
			continue
		}
		p.resends++
		p.sent = now
		resend = append(resend, p)
	}
	d.mu.Unlock()
	for _, p := range resend {
		host := r.d.Events.PublishToHost(s.rec.CanvasID, client.EventAgentAction, p.env)
		d.mu.Lock()
		if host != "" {
			p.host = host
		}
		d.mu.Unlock()
		s.stats(func(st *client.AgentStats) { st.Resends++ })
		r.d.Metrics.resend()
	}
	for _, p := range missed {
		s.stats(func(st *client.AgentStats) { st.AcksMissed++ })
		r.d.Metrics.ackMissed()
		r.log.Warn("agent: the host never acked an envelope", "session_id", s.rec.ID, "seq", p.env.Seq, "client_id", p.host, "resends", p.resends)
		s.mu.Lock()
		state := s.rec.State
		s.mu.Unlock()
		r.publish(s.rec.CanvasID, client.EventAgentStatus, StatusEvent{Type: "agent:status", SessionID: s.rec.ID, State: state,
			Detail: map[string]any{"ack_missed": map[string]any{"seq": p.env.Seq, "client_id": p.host, "resends": p.resends}}})
	}
}

// awaitAcks waits, at the end of a session, until every tracked envelope
// was acked or given up on: at most 2·(AckRetries+1)·AckTimeout (each
// attempt takes AckTimeout plus the watcher's tick; the slack absorbs a
// loaded machine).
func (s *session) awaitAcks() {
	cfg := s.r.d.Config
	deadline := time.Now().Add(2 * time.Duration(cfg.AckRetries+1) * cfg.AckTimeout)
	for time.Now().Before(deadline) && s.ctx.Err() == nil {
		s.dl.mu.Lock()
		n := len(s.dl.pending)
		s.dl.mu.Unlock()
		if n == 0 {
			return
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-s.ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
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
