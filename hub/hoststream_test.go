package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

func TestHostPositionAdmit(t *testing.T) {
	steps := []struct {
		version int64
		send    bool
		err     error
	}{
		{3, false, nil}, // an update the snapshot (version 4) holds
		{4, false, nil}, // likewise
		{0, true, nil},  // unversioned events always pass
		{5, true, nil},  // the next update
		{5, true, nil},  // ... and the rest of its events
		{4, false, nil}, // a late copy of an older one
		{6, true, nil},
		{8, false, errMissedUpdate}, // version 7 never arrived
	}
	p := hostPosition{seen: 4}
	for i, s := range steps {
		send, err := p.admit(s.version)
		if send != s.send || !errors.Is(err, s.err) {
			t.Fatalf("step %d (v%d): send %v err %v, want %v %v", i, s.version, send, err, s.send, s.err)
		}
	}
}

func hostEvent(name string, i int, version int64) canvas.HostEvent {
	return canvas.HostEvent{Name: name, Data: json.RawMessage(strconv.Itoa(i)), Version: version}
}

// followHost runs FollowHost on sub into a memConn until it returns.
func followHost(h *Hub, session string, sub *Subscription, seen int64) (*memConn, chan struct{}) {
	out, done := newMemConn(), make(chan struct{})
	go func() {
		defer close(done)
		h.FollowHost(context.Background(), session, sub, out, seen, time.Hour)
	}()
	return out, done
}

// TestHostStreamOverflowNeverBlocks publishes past a subscriber that never
// reads (a blocking publish would hang the test) while another one's stream
// follows: the first is ended with a reset once its stream runs, the
// second gets every event in order, and only live subscribers count.
func TestHostStreamOverflowNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(Config{QueueSize: 4})
		defer h.Stop()
		slow, fast := h.SubscribeHost("s"), h.SubscribeHost("s")
		fastOut, fastDone := followHost(h, "s", fast, 0)
		for i := range 1000 {
			h.PublishSession("s", hostEvent("x", i, 0))
			synctest.Wait() // the fast stream has written it
		}
		if n := h.PublishSession("s"); n != 1 {
			t.Fatalf("%d browsers counted, want 1 (the slow one was ended)", n)
		}
		if got := strings.Count(fastOut.String(), "event: x\n"); got != 1000 {
			t.Fatalf("the fast stream got %d events, want 1000", got)
		}
		if !strings.Contains(fastOut.String(), "data: 999\n\n") {
			t.Fatal("the fast stream misses the last event")
		}
		slowOut, slowDone := followHost(h, "s", slow, 0)
		<-slowDone
		if got := slowOut.String(); strings.Count(got, "event: x\n") != 4 || !strings.HasSuffix(got, "event: reset\ndata: {\"reason\":\""+hostBehindReason+"\"}\n\n") {
			t.Fatalf("the slow stream wrote %q, want its 4 queued events and a reset", got)
		}
		if n := h.localSessionSubscribers("s"); n != 1 {
			t.Fatalf("%d subscribers after the slow stream ended, want 1", n)
		}
		h.Stop()
		<-fastDone
		if !strings.HasSuffix(fastOut.String(), hostStoppingReason+"\"}\n\n") {
			t.Fatalf("the stream ended by Stop wrote %q last, want a reset saying so", fastOut.String()[max(0, fastOut.out.Len()-120):])
		}
	})
}

// TestHostStreamVersions: a stream drops the updates its snapshot holds,
// sends a publish's events together, ends with the reason End gives, and
// with a reset when it missed an update.
func TestHostStreamVersions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(Config{})
		defer h.Stop()
		sub := h.SubscribeHost("s")
		h.PublishSession("s", hostEvent("a2ui", 1, 2), hostEvent("a2ui", 2, 2)) // the snapshot (version 2) holds it
		out, done := followHost(h, "s", sub, 2)
		h.PublishSession("s", hostEvent("a2ui", 3, 3), hostEvent("a2ui", 4, 3))
		h.PublishSession("s", hostEvent("reload", 5, 0))
		synctest.Wait()
		if got := out.String(); got != "event: a2ui\ndata: 3\n\nevent: a2ui\ndata: 4\n\nevent: reload\ndata: 5\n\n" {
			t.Fatalf("stream wrote %q", got)
		}
		sub.End("the token expired")
		<-done
		if !strings.HasSuffix(out.String(), "event: reset\ndata: {\"reason\":\"the token expired\"}\n\n") {
			t.Fatalf("stream ended with %q", out.String())
		}

		sub = h.SubscribeHost("s")
		out, done = followHost(h, "s", sub, 3)
		h.PublishSession("s", hostEvent("a2ui", 6, 5)) // version 4 was missed
		<-done
		if got := out.String(); got != "event: reset\ndata: {\"reason\":\""+hostMissedReason+"\"}\n\n" {
			t.Fatalf("stream that missed an update wrote %q", got)
		}
	})
}

// TestHostStreamRelay: a publish reaches the other process's browsers
// together, and each process counts the other's.
func TestHostStreamRelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b bus
		a, bh := New(Config{Broadcaster: b.end()}), New(Config{Broadcaster: b.end()})
		a.Start(t.Context())
		bh.Start(t.Context())
		defer a.Stop()
		defer bh.Stop()
		sub := bh.SubscribeHost("s")
		out, _ := followHost(bh, "s", sub, 0)
		synctest.Wait()
		if n := a.PublishSession("s", hostEvent("a2ui", 1, 1), hostEvent("a2ui", 2, 1)); n != 1 {
			t.Fatalf("A counts %d browsers of s, want B's 1", n)
		}
		synctest.Wait()
		if got := out.String(); got != "event: a2ui\ndata: 1\n\nevent: a2ui\ndata: 2\n\n" {
			t.Fatalf("B's stream wrote %q", got)
		}
	})
}
