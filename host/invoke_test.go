package host

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

func TestInvokeFirstAnswerWins(t *testing.T) {
	h, _ := newTestHost(t, Config{})
	b := NewBroker(h.HostDeliverer(nil))
	sub := listen(h, "inv")
	defer sub.Close()

	var accepted atomic.Int32
	answered := make(chan struct{}) // closed when all eight answers returned
	go func() {
		defer close(answered)
		ev := (<-sub.C)[0]
		var req InvokeRequest
		if err := json.Unmarshal(ev.Data, &req); err != nil || ev.Name != EventInvoke {
			t.Errorf("event %s %s", ev.Name, ev.Data)
			return
		}
		if _, err := b.Target(req.InvokeID); err != nil {
			t.Errorf("pending: %v", err)
		}
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				ok, err := b.Answer(req.InvokeID, Answer{OK: true, Result: json.RawMessage(itoa(i))})
				if err != nil {
					t.Errorf("answer %d: %v", i, err)
				}
				if ok {
					accepted.Add(1)
				}
			}(i)
		}
		wg.Wait()
	}()
	a, err := b.Invoke(context.Background(), Target{HostSession: "inv"}, "eval", json.RawMessage(`{"js":"1+1"}`), 5*time.Second)
	if err != nil || !a.OK || len(a.Result) == 0 {
		t.Fatalf("invoke: %+v %v", a, err)
	}
	<-answered
	if accepted.Load() != 1 {
		t.Fatalf("%d answers accepted, want 1", accepted.Load())
	}
}

// TestInvokeTimeouts runs in a synctest bubble: its clock is fake, so an
// invoke that times out after 50 ms has waited exactly 50 ms, however busy
// the machine.
func TestInvokeTimeouts(t *testing.T) {
	synctest.Test(t, testInvokeTimeouts)
}

func testInvokeTimeouts(t *testing.T) {
	h := openHost(t, Config{})
	b := NewBroker(h.HostDeliverer(nil))

	// Nobody connected.
	_, err := b.Invoke(context.Background(), Target{HostSession: "empty"}, "snapshot", nil, 30*time.Millisecond)
	var te *InvokeTimeoutError
	if !errors.As(err, &te) || te.Unconfirmed || te.Listeners != 0 || !errors.Is(err, ErrInvokeTimeout) {
		t.Fatalf("no listener: %v", err)
	}

	// A browser connected but silent.
	sub := listen(h, "quiet")
	defer sub.Close()
	start := time.Now()
	_, err = b.Invoke(context.Background(), Target{HostSession: "quiet"}, "snapshot", nil, 50*time.Millisecond)
	if !errors.As(err, &te) || !te.Unconfirmed || te.Listeners != 1 {
		t.Fatalf("silent listener: %v", err)
	}
	if d := time.Since(start); d != 50*time.Millisecond {
		t.Fatalf("waited %v, want the timeout of 50ms", d)
	}
	ev := (<-sub.C)[0]
	var req InvokeRequest
	_ = json.Unmarshal(ev.Data, &req)
	if req.TimeoutMS != 50 || len(req.InvokeID) != 36 {
		t.Fatalf("request %+v", req)
	}
	// A late answer is recognised and ignored; a made-up id is not found.
	if ok, err := b.Answer(req.InvokeID, Answer{OK: true}); ok || err != nil {
		t.Fatalf("late answer: %v %v", ok, err)
	}
	if _, err := b.Answer("inv_00000000000000000000000000000000", Answer{OK: true}); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	// Its target stays known (a late answerer's access is checked against it); a made-up id's is not.
	if tg, err := b.Target(req.InvokeID); err != nil || tg.HostSession != "quiet" {
		t.Fatalf("target after timeout: %+v %v", tg, err)
	}
	if _, err := b.Target("inv_00000000000000000000000000000000"); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("target of an unknown id: %v", err)
	}

	// Context cancellation ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := b.Invoke(ctx, Target{HostSession: "quiet"}, "snapshot", nil, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx: %v", err)
	}
	if d := time.Since(start); d != 20*time.Millisecond {
		t.Fatalf("waited %v, want the context's 20ms", d)
	}

	// Bad requests.
	for _, tc := range []struct {
		t      Target
		action string
		pl     string
	}{
		{Target{}, "x", ""},
		{Target{CanvasID: "c", HostSession: "s"}, "x", ""},
		{Target{HostSession: "../x"}, "x", ""},
		{Target{HostSession: "s"}, "", ""},
		{Target{HostSession: "s"}, "x", "{bad"},
	} {
		if _, err := b.Invoke(context.Background(), tc.t, tc.action, json.RawMessage(tc.pl), time.Millisecond); !errors.Is(err, canvas.ErrInvalid) {
			t.Errorf("%+v: %v", tc, err)
		}
	}
	// Canvas targets without a canvas deliverer.
	if _, err := b.Invoke(context.Background(), Target{CanvasID: "c1"}, "x", nil, time.Millisecond); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("canvas target: %v", err)
	}
	// An answer with ok and error together is invalid.
	if _, err := b.Answer("inv_x", Answer{OK: true, Error: json.RawMessage(`"e"`)}); !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("ok+error: %v", err)
	}
}

func TestPresentValidation(t *testing.T) {
	h, _ := newTestHost(t, Config{})
	sub := listen(h, "p")
	defer sub.Close()
	w := 300.0
	if n, err := h.Present("p", Presentation{Action: PresentNavigate, Path: "yolo/", Placement: &Placement{Width: &w}}); err != nil || n != 1 {
		t.Fatalf("present: %d %v", n, err)
	}
	ev := (<-sub.C)[0]
	if ev.Name != EventPresent || string(ev.Data) != `{"action":"navigate","path":"yolo/","placement":{"width":300}}` {
		t.Fatalf("event %s %s", ev.Name, ev.Data)
	}
	neg := -1.0
	for _, p := range []Presentation{{Action: "explode"}, {Action: PresentNavigate}, {Action: PresentNavigate, Path: "../x"}, {Action: PresentShow, Placement: &Placement{Height: &neg}}} {
		if _, err := h.Present("p", p); !errors.Is(err, canvas.ErrUnprocessable) {
			t.Errorf("%+v: %v", p, err)
		}
	}
}
