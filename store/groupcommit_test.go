package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// TestGroupCommitterBatches holds the loop in a first batch, queues a full
// batch of jobs meanwhile, and checks that they then run together, in queue
// order, and that Do returns only after its batch ran.
func TestGroupCommitterBatches(t *testing.T) {
	type job struct{ n, batch int }
	hold, held := make(chan struct{}), make(chan struct{})
	var batches [][]int
	g := store.NewGroupCommitter(1, 3, func(batch []*job) {
		if batch[0].n == 0 {
			close(held)
			<-hold
		}
		var ns []int
		for _, j := range batch {
			j.batch = len(batches)
			ns = append(ns, j.n)
		}
		batches = append(batches, ns)
	})
	defer g.Close()
	jobs := make([]*job, 4)
	var wg sync.WaitGroup
	for i := range jobs {
		jobs[i] = &job{n: i, batch: -1}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.Do(context.Background(), jobs[i]); err != nil {
				t.Error(err)
			}
			if jobs[i].batch < 0 {
				t.Errorf("Do of job %d returned before its batch ran", i)
			}
		}()
		if i == 0 {
			<-held
			continue
		}
		for deadline := time.Now().Add(10 * time.Second); g.Queued() < i; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("job %d was not queued", i)
			}
		}
	}
	close(hold)
	wg.Wait()
	want := [][]int{{0}, {1, 2, 3}}
	if len(batches) != len(want) {
		t.Fatalf("batches %v, want %v", batches, want)
	}
	for i := range want {
		if len(batches[i]) != len(want[i]) {
			t.Fatalf("batches %v, want %v", batches, want)
		}
		for k := range want[i] {
			if batches[i][k] != want[i][k] {
				t.Fatalf("batches %v, want %v", batches, want)
			}
		}
	}
}

// TestGroupCommitterClose checks that Close runs the jobs already queued,
// that Do afterwards fails as unavailable without running its job, and that
// a Do whose context ends before its job is queued does not run it.
func TestGroupCommitterClose(t *testing.T) {
	hold, held := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	ran := map[string]bool{}
	g := store.NewGroupCommitter(1, 1, func(batch []string) {
		if batch[0] == "holder" {
			close(held)
			<-hold
		}
		mu.Lock()
		ran[batch[0]] = true
		mu.Unlock()
	})
	var wg sync.WaitGroup
	wg.Go(func() { _ = g.Do(context.Background(), "holder") })
	<-held
	wg.Go(func() { _ = g.Do(context.Background(), "queued") }) // fills the queue (1)
	for deadline := time.Now().Add(10 * time.Second); g.Queued() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("job not queued")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Do(ctx, "canceled"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with a canceled context on a full queue = %v", err)
	}
	close(hold)
	g.Close()
	wg.Wait()
	if err := g.Do(context.Background(), "late"); !errors.Is(err, canvas.ErrUnavailable) {
		t.Fatalf("Do after Close = %v, want unavailable", err)
	}
	if !ran["holder"] || !ran["queued"] || ran["canceled"] || ran["late"] {
		t.Fatalf("ran %v: want holder and queued only", ran)
	}
}
