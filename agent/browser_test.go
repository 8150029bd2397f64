package agent

import (
	"context"
	"log/slog"
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
