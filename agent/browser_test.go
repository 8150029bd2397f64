package agent

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// ackingFirst is Events on a canvas whose host ("host") acks every
// agent:action envelope before publishing returns, as a fast
// browser may on a loaded server.
type ackingFirst struct{ s *session }

func (a *ackingFirst) PublishEvent(_, event string, v any) { a.ack(event, v) }

func (a *ackingFirst) PublishToHost(_, event string, v any) string {
	a.ack(event, v)
	return "host"
}

func (a *ackingFirst) Host(string) string { return "host" }

func (a *ackingFirst) ack(event string, v any) {
	if env, ok := v.(ActionEnvelope); ok && event == client.EventAgentAction {
		a.s.onAck(canvas.AgentAck{SessionID: env.SessionID, Seq: env.Seq, ClientID: "host", AppliedAt: time.Now().UnixMilli()})
	}
}

// An ack that arrives before the envelope's publishing returned counts, and
// the envelope is not awaited (nor resent) any more.
func TestAckBeforePublishingReturned(t *testing.T) {
	ev := &ackingFirst{}
	r := &Runner{d: Deps{Events: ev, Config: DefaultConfig(), Now: time.Now}, log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{r: r, ctx: ctx, rec: client.AgentSession{ID: "s1", CanvasID: "c"}, dl: newDelivery()}
	ev.s = s
	t.Cleanup(func() { cancel(); r.wg.Wait() })

	s.sendEnvelope([]Action{{Name: "create_shape", Params: map[string]any{"type": "note"}}, {Name: "set_viewport", Params: map[string]any{"x": 0}}})
	s.mu.Lock()
	acks := s.rec.Stats.Acks
	s.mu.Unlock()
	s.dl.mu.Lock()
	pending, watch := len(s.dl.pending), s.dl.watch
	s.dl.mu.Unlock()
	if acks != 2 || pending != 0 || watch {
		t.Fatalf("acks %d, pending %d, watcher started %v: want both envelopes acked and none awaited", acks, pending, watch)
	}
}

// hostChanges is Events on a canvas whose host is "h1" until moved to "h2";
// h2 acks the envelopes resent to it before publishing returns, as
// ackingFirst's host does.
type hostChanges struct {
	s    *session
	host atomic.Value // string
}

func (h *hostChanges) PublishEvent(string, string, any) {}

func (h *hostChanges) PublishToHost(_, event string, v any) string {
	host := h.Host("")
	if env, ok := v.(ActionEnvelope); ok && event == client.EventAgentAction && host == "h2" {
		h.s.onAck(canvas.AgentAck{SessionID: env.SessionID, Seq: env.Seq, ClientID: host, AppliedAt: time.Now().UnixMilli()})
	}
	return host
}

func (h *hostChanges) Host(string) string { return h.host.Load().(string) }

// A new host's ack of a resend that arrives before the resend's publishing
// returned resolves the envelope: it is not resent again, nor counted
// missed once its retries are spent (a CI flake: onAck saw the old host).
func TestAckOfAResendBeforePublishingReturned(t *testing.T) {
	ev := &hostChanges{}
	ev.host.Store("h1")
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	cfg := DefaultConfig()
	cfg.AckTimeout, cfg.AckRetries = time.Second, 1
	r := &Runner{d: Deps{Events: ev, Config: cfg, Now: now}, log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{r: r, ctx: ctx, rec: client.AgentSession{ID: "s1", CanvasID: "c"}, dl: newDelivery()}
	ev.s = s
	t.Cleanup(func() { cancel(); r.wg.Wait() })

	s.sendEnvelope([]Action{{Name: "create_shape", Params: map[string]any{"type": "note"}}}) // to h1, never acked
	ev.host.Store("h2")
	for range 3 { // the resend to h2, then what would be a second resend and the give-up
		clock.Add(int64(2 * cfg.AckTimeout))
		s.checkAcks()
	}
	s.mu.Lock()
	st := s.rec.Stats
	s.mu.Unlock()
	s.dl.mu.Lock()
	pending := len(s.dl.pending)
	s.dl.mu.Unlock()
	if st.Acks != 1 || st.Resends != 1 || st.AcksMissed != 0 || pending != 0 {
		t.Fatalf("stats %+v, pending %d: want one resend, acked by h2, nothing missed or awaited", st, pending)
	}
}

// quietHost is Events on a canvas whose host ("host") acks nothing by
// itself: the test acks for it.
type quietHost struct{}

func (quietHost) PublishEvent(string, string, any)         {}
func (quietHost) PublishToHost(string, string, any) string { return "host" }
func (quietHost) Host(string) string                       { return "host" }

// The host's acks arrive out of order (each is a request of its own): every
// one of them gives an apply jitter sample, measured against the ack of
// the nearest seq, and the jitter is what the acks say (zero here: each
// envelope was applied the same 40 ms after it was sent, but one, 90 ms).
func TestApplyJitterCountsAcksInAnyOrder(t *testing.T) {
	r := &Runner{d: Deps{Events: quietHost{}, Config: DefaultConfig(), Now: time.Now}, log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{r: r, ctx: ctx, rec: client.AgentSession{ID: "s1", CanvasID: "c"}, dl: newDelivery()}
	t.Cleanup(func() { cancel(); r.wg.Wait() })

	var envs []ActionEnvelope
	for range 8 {
		env := s.nextEnvelope(false, []Action{{Name: "create_shape", Params: map[string]any{"type": "note"}}})
		s.sent(env)
		s.track(env, "host")
		envs = append(envs, env)
	}
	for _, i := range []int{1, 0, 3, 2, 7, 5, 4, 6} {
		env := envs[i]
		late := int64(40)
		if i == 5 {
			late = 90
		}
		s.onAck(canvas.AgentAck{SessionID: env.SessionID, Seq: env.Seq, ClientID: "host", AppliedAt: env.TS + late})
		s.onAck(canvas.AgentAck{SessionID: env.SessionID, Seq: env.Seq, ClientID: "host", AppliedAt: env.TS + late + 500}) // again: counts for nothing
	}
	s.mu.Lock()
	st := s.rec.Stats
	s.mu.Unlock()
	s.dl.mu.Lock()
	samples := append([]float64(nil), s.dl.jitter...)
	s.dl.mu.Unlock()
	if st.Acks != 8 || len(samples) != 7 {
		t.Fatalf("acks %d, jitter samples %v: want 8 acks and 7 samples (one per ack but the first)", st.Acks, samples)
	}
	// Samples in the order the acks came: 2 against 1, 4 against 3, 3
	// against 2, 8 against 4, 6 (90 ms) against 4, 5 against 4, 7 against 6.
	want := []float64{0, 0, 0, 0, 50, 0, 50}
	if !slices.Equal(samples, want) || st.ApplyJitterP95MS != 50 {
		t.Fatalf("jitter samples %v (p95 %v), want %v (p95 50)", samples, st.ApplyJitterP95MS, want)
	}
}
