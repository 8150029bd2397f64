package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// collector is a store.Publisher that records what it is given.
type collector struct {
	mu        sync.Mutex
	commits   []*canvas.Commit
	published chan struct{} // signalled after each Publish (buffer of one)
}

func newCollector() *collector { return &collector{published: make(chan struct{}, 1)} }

func (c *collector) Publish(cm *canvas.Commit) {
	c.mu.Lock()
	c.commits = append(c.commits, cm)
	c.mu.Unlock()
	select {
	case c.published <- struct{}{}:
	default:
	}
}

// waitCount waits until n commits were published or the deadline passes.
func (c *collector) waitCount(n int, deadline <-chan time.Time) {
	for len(c.revs()) < n {
		select {
		case <-c.published:
		case <-deadline:
			return
		}
	}
}

func (c *collector) revs() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int64, len(c.commits))
	for i, cm := range c.commits {
		out[i] = cm.Rev
	}
	return out
}

// TestTwoEnginesFanOut runs two engines on two Stores sharing one schema,
// as two canvasd processes share one database. Both write one canvas
// concurrently; afterwards each engine has published every commit (its own
// and, woken by NOTIFY, the other's) exactly once, in order, and both
// states are equal.
func TestTwoEnginesFanOut(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := newSchema(t, url)
	ctx := context.Background()
	pubs := []*collector{newCollector(), newCollector()}
	engines := make([]*store.Engine, 2)
	for i := range engines {
		st := openIn(t, url, schema)
		e := store.NewEngine(st, store.EngineConfig{Publisher: pubs[i], Logger: quietLogger(), SnapshotEvery: 16})
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Stop)
		engines[i] = e
	}
	if err := engines[0].Store().CreateCanvas(ctx, canvas.Canvas{ID: "c", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// Load the canvas in both engines before writing: an engine publishes the
	// commits after the state it loaded, and this test wants every one.
	for _, e := range engines {
		if _, _, err := e.Head(ctx, "c"); err != nil {
			t.Fatal(err)
		}
	}
	actor := canvas.Actor{ID: "user-1", Type: canvas.ActorHuman}
	const writers, each = 6, 15
	var wg sync.WaitGroup
	for w := range writers {
		e := engines[w%2]
		wg.Go(func() {
			for i := range each {
				base := int64(0)
				args, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("n%d-%d", w, i), "name": "x"})
				resp, err := e.Execute(ctx, "c", actor, canvas.Envelope{Type: "create_node", BaseRev: &base, Args: args})
				if err != nil || resp.Outcome != store.OutcomeApplied {
					t.Errorf("Execute: %v %s %s", err, resp.Outcome, resp.Result)
					return
				}
			}
		})
	}
	wg.Wait()
	const total = writers * each
	want := make([]int64, total)
	for i := range want {
		want[i] = int64(i + 1)
	}
	deadline := time.After(10 * time.Second)
	for i, p := range pubs {
		p.waitCount(total, deadline)
		if got := p.revs(); !reflect.DeepEqual(got, want) {
			t.Fatalf("engine %d published revs %v, want 1..%d in order", i, got, total)
		}
	}
	var states [2][]byte
	for i, e := range engines {
		err := e.View(ctx, "c", -1, func(s *canvas.State, _ string) error {
			var err error
			states[i], err = json.Marshal(s.Scene())
			if s.Rev != total {
				return fmt.Errorf("engine %d state at rev %d, want %d", i, s.Rev, total)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if string(states[0]) != string(states[1]) {
		t.Fatalf("engines disagree:\n%s\n%s", states[0], states[1])
	}
}
