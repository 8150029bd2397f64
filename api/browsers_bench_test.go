package api

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/hub"
)

// BenchmarkAgentBrowserSLOs measures the agent's SLOs over real HTTP and SSE:
// a host browser (a Go SSE client that declares the screenshot capability,
// answers screenshot invokes and acks every complete envelope with its
// apply time) and a plain subscriber on each canvas, an agent run per
// iteration against an OpenAI-compatible streaming model whose 12 actions
// arrive 20 ms apart. Reported: time from the model's first byte to the
// first complete action (the session's stats, server side, and at the plain
// subscriber), screenshot latency, and the host's apply jitter p95.
func BenchmarkAgentBrowserSLOs(b *testing.B) {
	var acts []string
	for i := 0; i < 12; i++ {
		acts = append(acts, fmt.Sprintf(`{"name":"create_shape","params":{"type":"note","x":%d,"y":0,"props":{"text":"n%d"}}}`, i*220, i))
	}
	reply := actionsJSON(acts...)
	// One chunk per action (the first one is the first token), 20 ms apart.
	var chunks []string
	for i, a := range acts {
		sep := ","
		if i == 0 {
			sep = `{"actions":[`
		}
		chunks = append(chunks, sep+a)
	}
	chunks = append(chunks, "]}")
	if strings.Join(chunks, "") != reply {
		b.Fatal("chunks do not make the reply")
	}
	replies := make([]scriptedReply, b.N)
	for i := range replies {
		replies[i] = scriptedReply{chunks: chunks, delay: 20 * time.Millisecond}
	}
	model := newFakeOpenAI(b, replies...)
	e := newAgentEnv(b, model, nil)
	e.runner.Stop()
	broker := host.NewBroker(CanvasInvokeDeliverer(e.hub))
	tok, _ := e.admin.CreateToken(context.Background(), canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent})
	ac, _ := client.New(e.srv.URL, tok.Token)
	cfg := agent.DefaultConfig()
	cfg.Model, cfg.OpenAIAPIKey, cfg.OpenAIBaseURL, cfg.LowActionThreshold = "openai:gpt-bench", "sk-test", model.srv.URL+"/v1", 0
	r, err := agent.NewRunner(agent.Deps{Config: cfg, Client: ac, Events: e.hub, Store: e.sessions,
		Screenshots: AgentScreenshotter{Hub: e.hub, Broker: broker}})
	if err != nil {
		b.Fatal(err)
	}
	r.Start(context.Background())
	defer r.Stop()
	e.hub.Wire(hub.Wiring{Input: r}) // the browsers' acks reach this runner

	var ttfa, plainTTFA, shot, jitter []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cid := fmt.Sprintf("slo-%d", i)
		e.newCanvas(cid)
		ctx, cancel := context.WithCancel(context.Background())
		hostReady, plainReady := make(chan struct{}), make(chan struct{})
		firstAction := make(chan time.Time, 1)
		go runBenchHost(ctx, e, broker, cid, hostReady)
		go func() {
			st := e.human.Stream(ctx, cid, client.StreamOptions{})
			defer st.Close()
			for {
				ev, err := st.Recv()
				if err != nil {
					return
				}
				if ev.Event == client.EventCaughtUp {
					close(plainReady)
				}
				if ev.Event == client.EventAgentAction && strings.Contains(string(ev.Data), `"partial":false`) {
					select {
					case firstAction <- time.Now():
					default:
					}
				}
			}
		}()
		<-hostReady
		<-plainReady
		start := time.Now()
		id, err := r.Run(context.Background(), client.AgentRunRequest{RoomID: cid, Message: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		waitRunner(b, r, id)
		cancel()
		sess, _ := r.Session(context.Background(), id)
		st := sess.Stats
		if sess.State != client.AgentDone || st.Screenshots != 1 || st.AcksMissed != 0 {
			b.Fatalf("session %s stats %+v", sess.State, st)
		}
		ttfa = append(ttfa, st.TimeToFirstAction-st.TTFBMS)
		plainTTFA = append(plainTTFA, float64((<-firstAction).Sub(start).Microseconds())/1000-st.TTFBMS)
		shot = append(shot, st.ScreenshotMS)
		jitter = append(jitter, st.ApplyJitterP95MS)
	}
	b.StopTimer()
	q := func(xs []float64, p float64) float64 {
		c := append([]float64(nil), xs...)
		sort.Float64s(c)
		return c[min(len(c)-1, int(p*float64(len(c))))]
	}
	b.ReportMetric(q(ttfa, 0.5), "ttfa_after_token_p50_ms")
	b.ReportMetric(q(ttfa, 0.95), "ttfa_after_token_p95_ms")
	b.ReportMetric(q(plainTTFA, 0.95), "plain_ttfa_after_token_p95_ms")
	b.ReportMetric(q(shot, 0.5), "screenshot_p50_ms")
	b.ReportMetric(q(shot, 0.95), "screenshot_p95_ms")
	b.ReportMetric(q(jitter, 0.95), "apply_jitter_p95_ms")
}

// runBenchHost is the benchmark's host browser: it declares the screenshot
// capability, answers screenshot invokes with a small PNG and acks complete
// envelopes with the time it got them.
func runBenchHost(ctx context.Context, e *agentEnv, broker *host.Broker, canvasID string, ready chan struct{}) {
	st := e.human.Stream(ctx, canvasID, client.StreamOptions{ClientID: "bench-host", Capabilities: []string{hub.CapScreenshot}})
	defer st.Close()
	for {
		ev, err := st.Recv()
		if err != nil {
			return
		}
		switch ev.Event {
		case client.EventCaughtUp:
			close(ready)
		case host.EventInvoke:
			var inv host.InvokeRequest
			_ = ev.Decode(&inv)
			res, _ := json.Marshal(agent.Screenshot{DataURL: "data:image/png;base64,iVBORw0KGgo=", DocVersion: "0"})
			_, _ = broker.Answer(inv.InvokeID, host.Answer{OK: true, Result: res})
		case client.EventAgentAction:
			var env agent.ActionEnvelope
			if ev.Decode(&env) == nil && !env.Partial {
				_ = e.human.AckEnvelope(ctx, canvas.AgentAck{SessionID: env.SessionID, Seq: env.Seq, ClientID: "bench-host", AppliedAt: time.Now().UnixMilli()})
			}
		}
	}
}
