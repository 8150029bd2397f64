package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkLinearizableReads measures what linearizable reads cost on
// PostgreSQL (docs/architecture.md, "linearizable snapshot read on
// PostgreSQL: cost printed beside a local read"): GET
// /canvas_commands/snapshot/{id} of a 50-node canvas, linearizable (the
// default: the server confirms the canvas's head in the database first)
// against ?consistency=local (the server's copy alone).
//
//   - one-process: reads only; p50/p99 of 1,000 sequential reads and the
//     reads/s of 8 concurrent clients (the median of 3 rounds of 4,000);
//   - two-processes: the same reads on process B while a client commits
//     to the canvas through process A, 200 commits/s (it renames one node,
//     so the canvas keeps its size); besides the figures, stale-% is the
//     share of reads that missed a commit A had acknowledged before the
//     read was sent, and max-behind the most revisions one missed.
//
// Like the other PostgreSQL benchmarks it does a fixed amount of work (run
// it with -benchtime 1x) and needs CANVASD_TEST_DATABASE_URL.
func BenchmarkLinearizableReads(b *testing.B) {
	url, schema := pgTestSchema(b)
	a := newPGTestEnv(b, url, schema)
	c := benchClient()
	createCanvasOn(b, a, c, "reads")
	for i := range 50 {
		body := fmt.Appendf(nil, `{"type":"create_node","base_rev":%d,"args":{"id":"n%d","name":"n%d","transform":{"x":%d,"y":2}}}`, i, i, i, i*10)
		if code, msg, err := postCommand(c, a.srv.URL+"/canvas_commands/reads/command", body); err != nil || code != 200 {
			b.Fatalf("command: %d %v %s", code, err, msg)
		}
	}
	other := newPGTestEnv(b, url, schema) // process B
	for _, procs := range []string{"one-process", "two-processes"} {
		for _, mode := range []string{"linearizable", "local"} {
			b.Run(procs+"/"+mode, func(b *testing.B) {
				reader := a
				var acked atomic.Int64 // the head A acknowledged last
				acked.Store(getHead(b, c, a.srv.URL+"/canvas_commands/snapshot/reads"))
				stop := func() {}
				if procs == "two-processes" {
					reader = other
					stop = keepWriting(b, c, a, "reads", &acked)
				}
				path := reader.srv.URL + "/canvas_commands/snapshot/reads"
				if mode == "local" {
					path += "?consistency=local"
				}
				var stale, behind atomic.Int64
				read := func() time.Duration {
					before := acked.Load()
					s := time.Now()
					head := getHead(b, c, path)
					d := time.Since(s)
					if lag := before - head; lag > 0 {
						stale.Add(1)
						for m := behind.Load(); lag > m && !behind.CompareAndSwap(m, lag); m = behind.Load() {
						}
					}
					return d
				}
				lat := make([]time.Duration, 0, 1000)
				for range 1000 {
					lat = append(lat, read())
				}
				var rates []float64
				for range 3 {
					const clients, total = 8, 4000
					var wg sync.WaitGroup
					t0 := time.Now()
					for range clients {
						wg.Go(func() {
							for range total / clients {
								read()
							}
						})
					}
					wg.Wait()
					rates = append(rates, total/time.Since(t0).Seconds())
				}
				stop()
				b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
				b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
				reportSpread(b, rates, "reads/s")
				if procs == "two-processes" {
					b.ReportMetric(100*float64(stale.Load())/float64(1000+3*4000), "stale-%")
					b.ReportMetric(float64(behind.Load()), "max-behind")
				}
				b.ReportMetric(loadAvg(), "loadavg")
				if mode == "linearizable" && stale.Load() > 0 {
					b.Errorf("%d linearizable reads missed a commit acknowledged before they were sent (by up to %d revisions)", stale.Load(), behind.Load())
				}
			})
		}
	}
}

// getHead reads a snapshot and returns its head_rev.
func getHead(b *testing.B, c *http.Client, url string) int64 {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+testAdmin)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatalf("snapshot: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("snapshot: %d %v %.200s", resp.StatusCode, err, body)
	}
	var s struct {
		HeadRev int64 `json:"head_rev"`
	}
	if err := json.Unmarshal(body, &s); err != nil {
		b.Fatalf("snapshot: %v", err)
	}
	return s.HeadRev
}

// keepWriting renames node n0 of canvas id through e every 5 ms, storing
// each acknowledged revision in acked, until the returned stop is called.
func keepWriting(b *testing.B, c *http.Client, e *testEnv, id string, acked *atomic.Int64) (stop func()) {
	url := e.srv.URL + "/canvas_commands/" + id + "/command"
	write := func(body []byte) bool {
		code, answer, err := postCommand(c, url, body)
		var res struct {
			CurrentRev int64 `json:"current_rev"`
		}
		if err != nil || code != 200 || json.Unmarshal(answer, &res) != nil {
			b.Errorf("write through A: %d %v %.200s", code, err, answer)
			return false
		}
		acked.Store(res.CurrentRev)
		return true
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 1; ; i++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if !write(fmt.Appendf(nil, `{"type":"update_node","base_rev":%d,"args":{"id":"n0","name":"%d"}}`, acked.Load(), i)) {
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
