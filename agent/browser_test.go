package agent

import (
	"context"
	"log/slog"
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

