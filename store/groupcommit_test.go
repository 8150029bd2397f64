package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// TestGroupCommitterBatches holds the loop in a first batch, queues a full
// batch of jobs meanwhile, and checks that they then run together, in queue
// order, and that Do returns only after its batch ran.
func TestGroupCommitterBatches(t *testing.T) { synctest.Test(t, testGroupCommitterBatches) }

func testGroupCommitterBatches(t *testing.T) {
	type job struct{ n, batch int }
	hold, held := make(chan struct{}), make(chan struct{})
	var batches [][]int
	g := store.NewGroupCommitter(1, 3, 0, func(batch []*job) {
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
		synctest.Wait() // job i is queued: its Do waits for its batch
		if q := g.Queued(); q != i {
			t.Fatalf("%d jobs queued, want %d", q, i)
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
func TestGroupCommitterClose(t *testing.T) { synctest.Test(t, testGroupCommitterClose) }

func testGroupCommitterClose(t *testing.T) {
	hold, held := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	ran := map[string]bool{}
	g := store.NewGroupCommitter(1, 1, 0, func(batch []string) {
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
	synctest.Wait()                                            // the job is queued: its Do waits for its batch
	if q := g.Queued(); q != 1 {
		t.Fatalf("%d jobs queued, want 1", q)
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

// TestGroupCommitterStallGuard: with two loops, a batch runs beside a
// running one only once that one has run for stallAfter. While the first
// batch is quick the jobs queued meanwhile wait and then share one batch;
// when it stalls, the second loop takes them after stallAfter. It runs in a
// synctest bubble: stallAfter passes on the bubble's clock, and "the jobs
// wait" means every goroutine is blocked with them still queued.
func TestGroupCommitterStallGuard(t *testing.T) {
	for _, tc := range []struct {
		name       string
		stallAfter time.Duration
	}{{"quick", time.Hour}, {"stalled", 20 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hold, held := make(chan struct{}), make(chan struct{})
				var mu sync.Mutex
				var batches [][]int
				ranBeside := make(chan struct{}, 1)
				g := store.NewGroupCommitter(2, 8, tc.stallAfter, func(batch []int) {
					if batch[0] == 0 {
						close(held)
						<-hold
					} else {
						select {
						case <-hold:
						default: // the holder still runs
							select {
							case ranBeside <- struct{}{}:
							default: // signalled already
							}
						}
					}
					mu.Lock()
					batches = append(batches, slices.Clone(batch)) // the committer reuses batch
					mu.Unlock()
				})
				var wg sync.WaitGroup
				wg.Go(func() { _ = g.Do(context.Background(), 0) })
				<-held
				for i := 1; i <= 3; i++ {
					wg.Go(func() { _ = g.Do(context.Background(), i) })
				}
				if tc.name == "stalled" {
					select {
					case <-ranBeside:
					case <-time.After(10 * time.Second):
						t.Fatal("no batch ran beside the stalled one")
					}
				} else {
					synctest.Wait() // the other loop would have taken the queued jobs by now
					if q := g.Queued(); q != 3 {
						t.Fatalf("%d jobs queued, want 3", q)
					}
				}
				close(hold)
				wg.Wait()
				g.Close()
				mu.Lock()
				defer mu.Unlock()
				if tc.name == "quick" {
					if len(batches) != 2 || len(batches[1]) != 3 {
						t.Fatalf("batches %v, want the holder's and one of the three queued jobs", batches)
					}
					select {
					case <-ranBeside:
						t.Fatal("a batch ran beside a batch that had not stalled")
					default:
					}
				}
			})
		})
	}
}
