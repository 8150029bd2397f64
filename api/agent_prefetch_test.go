package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/hub"
)

// snapshotGate is the runner's HTTP transport: a read of the canvas waits
// until the host was asked for the turn's screenshot (at most 10 s).
type snapshotGate struct {
	asked chan struct{}
	late  chan bool // one value a read: whether it had to wait the 10 s out
}

func (g snapshotGate) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.Path, "/canvas_commands/snapshot/") {
		select {
		case <-g.asked:
			g.late <- false
		case <-time.After(10 * time.Second):
			g.late <- true
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A vision turn asks the host for its screenshot of the session's viewport
// before it reads the canvas (the page draws while the server reads and
// builds the prompt), and the model gets that picture.
func TestAgentAsksForTheScreenshotBeforeReadingTheCanvas(t *testing.T) {
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{actionsJSON(`{"name":"think","params":{"text":"seen"}}`)}})
	e := newAgentEnv(t, model, nil)
	broker := host.NewBroker(CanvasInvokeDeliverer(e.hub))
	gate := snapshotGate{asked: make(chan struct{}), late: make(chan bool, 4)}
	r := visionRunner(t, e, model, gate, AgentScreenshotter{Hub: e.hub, Broker: broker}, nil)
	e.newCanvas("p")
	var asked sync.Once
	hostAnswersScreenshots(t, e, broker, "p", func(agent.ScreenshotRequest) { asked.Do(func() { close(gate.asked) }) })
	id, err := r.Run(context.Background(), client.AgentRunRequest{RoomID: "p", Message: "look", Viewport: &client.Box{X: 1, Y: 2, W: 300, H: 200}})
	if err != nil {
		t.Fatal(err)
	}
	waitRunner(t, r, id)
	if <-gate.late {
		t.Fatal("the turn read the canvas before it asked the host for its screenshot")
	}
	sess, _ := r.Session(context.Background(), id)
	if _, img := model.requests()[0].last(); img != "data:image/png;base64,iVBORw0KGgo=" || sess.Stats.ScreenshotSource != agent.ShotFromBrowser || sess.Stats.Screenshots != 1 {
		t.Fatalf("the model got image %q; stats %+v", img, sess.Stats)
	}
}

// shotSignal is a Screenshotter that closes returned when its first
// screenshot returns.
type shotSignal struct {
	agent.Screenshotter
	returned chan struct{}
	once     sync.Once
}

func (s *shotSignal) Screenshot(ctx context.Context, canvasID string, req agent.ScreenshotRequest, timeout time.Duration) (agent.Screenshot, error) {
	shot, err := s.Screenshotter.Screenshot(ctx, canvasID, req, timeout)
	s.once.Do(func() { close(s.returned) })
	return shot, err
}

// clockAfterShot is the runner's HTTP transport: a read of the canvas waits
// for the host's screenshot, then moves the runner's clock on by an hour
// once the server answered it (the read outlasts the screenshot by that).
type clockAfterShot struct {
	returned <-chan struct{}
	skew     *atomic.Int64
}

func (c clockAfterShot) RoundTrip(r *http.Request) (*http.Response, error) {
	snapshot := strings.HasPrefix(r.URL.Path, "/canvas_commands/snapshot/")
	if snapshot {
		<-c.returned
	}
	res, err := http.DefaultTransport.RoundTrip(r)
	if snapshot {
		c.skew.Add(int64(time.Hour))
	}
	return res, err
}

// A prefetched screenshot's time (screenshot_ms) is from the request to
// the host's answer, also when the turn wanted it only later (its read of
// the canvas took longer).
func TestAgentPrefetchedScreenshotTimeIsItsRoundTrip(t *testing.T) {
	model := newFakeOpenAI(t, scriptedReply{chunks: []string{actionsJSON(`{"name":"think","params":{"text":"seen"}}`)}})
	e := newAgentEnv(t, model, nil)
	broker := host.NewBroker(CanvasInvokeDeliverer(e.hub))
	shots := &shotSignal{Screenshotter: AgentScreenshotter{Hub: e.hub, Broker: broker}, returned: make(chan struct{})}
	var skew atomic.Int64
	r := visionRunner(t, e, model, clockAfterShot{returned: shots.returned, skew: &skew}, shots,
		func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
	e.newCanvas("p")
	hostAnswersScreenshots(t, e, broker, "p", nil)
	id, err := r.Run(context.Background(), client.AgentRunRequest{RoomID: "p", Message: "look", Viewport: &client.Box{X: 1, Y: 2, W: 300, H: 200}})
	if err != nil {
		t.Fatal(err)
	}
	waitRunner(t, r, id)
	sess, _ := r.Session(context.Background(), id)
	if st := sess.Stats; st.ScreenshotSource != agent.ShotFromBrowser || st.Screenshots != 1 || st.ScreenshotMS >= float64(time.Hour.Milliseconds()) {
		t.Fatalf("stats %+v: want one screenshot from the browser, its time under the hour the read of the canvas took after it", st)
	}
}

// visionRunner replaces e's runner with one of a vision model (model) that
// reaches canvasd through transport, takes its screenshots from shots and,
// when now is not nil, its time from now; stopped at cleanup.
func visionRunner(t *testing.T, e *agentEnv, model *fakeOpenAI, transport http.RoundTripper, shots agent.Screenshotter, now func() time.Time) *agent.Runner {
	t.Helper()
	e.runner.Stop()
	tok, _ := e.admin.CreateToken(context.Background(), canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent})
	ac, _ := client.New(e.srv.URL, tok.Token, client.WithHTTPClient(&http.Client{Transport: transport}))
	cfg := agent.DefaultConfig()
	cfg.Model, cfg.OpenAIAPIKey, cfg.OpenAIBaseURL, cfg.LowActionThreshold = "openai:gpt-vision", "sk-test", model.srv.URL+"/v1", 0
	r, err := agent.NewRunner(agent.Deps{Config: cfg, Client: ac, Events: e.hub, Store: e.sessions, Screenshots: shots, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	r.Start(context.Background())
	t.Cleanup(r.Stop)
	return r
}

// hostAnswersScreenshots subscribes a browser that takes screenshots to
// canvas cid and answers each screenshot invoke through broker with a tiny
// PNG of the bounds asked for, after handing the request to onRequest
// (when not nil). It returns once the browser caught up (the hub counts
// it), and stop, which closes its stream (also run at cleanup).
func hostAnswersScreenshots(t *testing.T, e *agentEnv, broker *host.Broker, cid string, onRequest func(agent.ScreenshotRequest)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st := e.human.Stream(ctx, cid, client.StreamOptions{ClientID: "b1", Capabilities: []string{hub.CapScreenshot}})
	stop = sync.OnceFunc(func() { cancel(); st.Close() })
	t.Cleanup(stop)
	subscribed := make(chan struct{})
	go func() {
		for {
			ev, err := st.Recv()
			if err != nil {
				return
			}
			if ev.Event == client.EventCaughtUp {
				close(subscribed)
			}
			if ev.Event != "invoke" {
				continue
			}
			var inv host.InvokeRequest
			_ = ev.Decode(&inv)
			var req agent.ScreenshotRequest
			_ = json.Unmarshal(inv.Payload, &req)
			if onRequest != nil {
				onRequest(req)
			}
			res, _ := json.Marshal(agent.Screenshot{DataURL: "data:image/png;base64,iVBORw0KGgo=", Bounds: *req.Bounds, DocVersion: "0"})
			_, _ = broker.Answer(inv.InvokeID, host.Answer{OK: true, Result: res})
		}
	}()
	<-subscribed
	return stop
}
