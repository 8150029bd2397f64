package host

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"
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

// TestPushCountsRemoteBrowsers: a push publishes its events together, each
// with the state version it produced, and counts the browsers the streams
// report (here and on the other processes).
func TestPushCountsRemoteBrowsers(t *testing.T) {
	h := openHost(t, Config{})
	streamsOf(h).Remote = 2
	sub, _, err := subscribe(h, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	res, err := h.PushA2UI(ctx, "s", []byte(seedExample))
	if err != nil || res.Browsers != 3 {
		t.Fatalf("push: %+v %v (want 1 local + 2 remote browsers)", res, err)
	}
	evs := <-sub.C
	if len(evs) != 2 {
		t.Fatalf("the push's %d events, want its 2 messages together", len(evs))
	}
	for i, ev := range evs {
		if ev.Version != 1 {
			t.Fatalf("event %d has version %d", i, ev.Version)
		}
	}
}
