package host

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Two Hosts on one store stand for two processes sharing it.

func TestTicketKeySharedThroughStore(t *testing.T) {
	a := openHost(t, Config{})
	b := peer(t, a)
	other := openHost(t, Config{}) // another store: another key
	hash := sha256.Sum256([]byte("cvd_token"))
	tk, err := a.MintTicket("demo", hash[:])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.VerifyTicket("demo", tk); err != nil {
		t.Fatalf("a ticket minted by one process is refused by another on the same store: %v", err)
	}
	if _, err := other.VerifyTicket("demo", tk); err == nil {
		t.Fatal("a host on another store accepted the ticket")
	}
}

// TestConcurrentPushesFromTwoHosts: pushes through two processes to one
// session all land (each validated against the other's result), and each
// process's subscriber sees every push exactly once, in version order.
func TestConcurrentPushesFromTwoHosts(t *testing.T) {
	a := openHost(t, Config{})
	b := peer(t, a)
	const perHost = 10
	var wg sync.WaitGroup
	errs := make(chan error, 2*perHost)
	for i, h := range []*Host{a, b} {
		for j := range perHost {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("h%d-%d", i, j)
				push := `{"surfaceUpdate":{"surfaceId":"main","components":[{"id":"` + id + `","component":{"Divider":{}}}]}}`
				if _, err := h.PushA2UI(ctx, "shared", []byte(push)); err != nil {
					errs <- fmt.Errorf("push %s: %w", id, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, h := range []*Host{a, b} {
		msgs, err := h.A2UIMessages(ctx, "shared")
		if err != nil || len(msgs) != 1 || strings.Count(string(msgs[0]), `"Divider"`) != 2*perHost {
			t.Fatalf("surfaces after the pushes: %s %v", msgs, err)
		}
	}
}

func TestSubscriptionAdmit(t *testing.T) {
	a2ui := func(v int64) Event { return Event{Name: EventA2UI, Data: []byte(`{}`), Version: v} }
	steps := []struct {
		ev   Event
		send bool
		err  error
	}{
		{a2ui(3), false, nil},                 // a push the snapshot (version 4) holds
		{a2ui(4), false, nil},                 // likewise
		{Event{Name: EventReload}, true, nil}, // other events always pass
		{a2ui(5), true, nil},                  // the next push
		{a2ui(5), true, nil},                  // ... and the rest of its messages
		{a2ui(4), false, nil},                 // a late copy of an older one
		{a2ui(6), true, nil},
		{a2ui(8), false, ErrResync}, // version 7 never arrived
	}
	sub := &Subscription{seen: 4}
	for i, s := range steps {
		send, err := sub.Admit(s.ev)
		if send != s.send || !errors.Is(err, s.err) {
			t.Fatalf("step %d (%s v%d): send %v err %v, want %v %v", i, s.ev.Name, s.ev.Version, send, err, s.send, s.err)
		}
	}
}

// fakeRelay records what a Hub forwards, standing for the other processes.
type fakeRelay struct {
	mu      sync.Mutex
	fwd     [][]Event
	changed []string
	remote  int
}

func (f *fakeRelay) Forward(session string, evs []Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fwd = append(f.fwd, evs)
}

func (f *fakeRelay) Subscribers(string) int { return f.remote }

func (f *fakeRelay) CountChanged(session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changed = append(f.changed, session)
}

// TestHubRelay: a push's events are forwarded as one group, remote
// subscribers count in Publish's answer, Deliver stays local, and
// subscribing and closing report count changes.
func TestHubRelay(t *testing.T) {
	h := openHost(t, Config{})
	r := &fakeRelay{remote: 2}
	h.Hub().SetRelay(r)
	sub, _, err := h.Subscribe(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.PushA2UI(ctx, "s", []byte(seedExample))
	if err != nil || res.Browsers != 3 {
		t.Fatalf("push: %+v %v (want 1 local + 2 remote browsers)", res, err)
	}
	for i, ev := range <-sub.C {
		if ev.Version != 1 {
			t.Fatalf("local event %d has version %d", i, ev.Version)
		}
	}
	h.Hub().Deliver("s", []Event{{Name: EventReload, Data: []byte(`{}`)}})
	select {
	case evs := <-sub.C:
		if evs[0].Name != EventReload {
			t.Fatalf("delivered %s", evs[0].Name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Deliver did not reach the local subscriber")
	}
	sub.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.fwd) != 1 || len(r.fwd[0]) != 2 || r.fwd[0][0].Version != 1 {
		t.Fatalf("forwarded %v, want the push's 2 events as one group", r.fwd)
	}
	if strings.Join(r.changed, ",") != "s,s" {
		t.Fatalf("count changes %q, want s twice (subscribe, close)", r.changed)
	}
}
