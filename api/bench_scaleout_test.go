package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkPGScaleOut measures scale-out on PostgreSQL with real OS
// processes: the canvasd binary, built once by the benchmark, runs four
// times (`canvasd serve` on random loopback ports) against one fresh schema
// of CANVASD_TEST_DATABASE_URL (skipped when unset). Sixteen clients, one
// per canvas, write 16 canvases, in pgRounds rounds of 4,000 commands, the
// two configurations interleaved (their order reversed every other round) so
// that the machine's noise falls on both:
//
//   - 1-process: every client writes through process 0;
//   - 4-processes: canvas i is written through process i%4.
//
// Each canvas has an SSE subscriber (GET /sse/canvas/{id}) on the process
// that writes it and, with four processes, a second one on the next process
// (j = i%4+1 mod 4, never the writer), which hears the commit through
// PostgreSQL's NOTIFY and reads it from the log. It reports commits/s (the
// median round, with the range), commit latency, and commit → SSE delivery
// p50/p99 measured from sending the command (sse-same-*, sse-cross-*) and
// from its 200 (sse-cross-after-ack-*: a cross-process event may arrive
// before the writer's answer, counted as 0), with the load average;
// x-one-process is the median of the rounds' 4-processes/1-process rate
// ratios. The processes are killed at cleanup.
func BenchmarkPGScaleOut(b *testing.B) {
	const procs, canvases, total = 4, 16, 4000
	dbURL := pgSchemaProcessURL(b)
	bin := buildCanvasd(b)
	// One at a time: the first applies the migrations, the rest find them done.
	ps := make([]string, procs)
	for i := range ps {
		ps[i], _, _ = startChild(b, bin, "serve", "--database-url", dbURL, "--data-dir", b.TempDir(),
			"--admin-token", testAdmin, "--agent", "off", "--log-level", "warn")
	}
	c := benchClient()
	ids := make([]string, canvases)
	for i := range ids {
		ids[i] = fmt.Sprintf("scale%d", i)
		if code, msg, err := postCommand(c, ps[0]+"/api/canvases", []byte(`{"canvas_id":"`+ids[i]+`"}`)); err != nil || code != 201 {
			b.Fatalf("create canvas %s: %d %v %s", ids[i], code, err, msg)
		}
	}

	// Subscribers: same[i] on the process that writes canvas i in the
	// 4-process configuration, cross[i] on the next one, one[i] on process 0
	// (the writer of every canvas in the 1-process configuration).
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	sseClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 3 * canvases}}
	var same, cross, one []*revSubscriber
	for i, id := range ids {
		w := i % procs
		same = append(same, subscribeRevs(ctx, b, sseClient, ps[w], id))
		cross = append(cross, subscribeRevs(ctx, b, sseClient, ps[(w+1)%procs], id))
		if w == 0 {
			one = append(one, same[i]) // process 0 writes canvas i in both configurations
		} else {
			one = append(one, subscribeRevs(ctx, b, sseClient, ps[0], id))
		}
	}

	type figures struct {
		rates             []float64
		lat               []time.Duration // send → 200
		sseSame, sseCross []time.Duration // send → event
		sseCrossAfterAck  []time.Duration // 200 → event (0 when the event came first)
	}
	var single, multi figures
	var ratios []float64
	// round writes total commands, client i on canvas i through
	// writers[i], then waits for every subscriber to have each commit, and
	// adds the latencies to f.
	round := func(f *figures, writers []string, sameSubs, crossSubs []*revSubscriber) float64 {
		sent := make([][]sentCommand, canvases)
		var wg sync.WaitGroup
		var failed atomic.Int64
		var firstErr atomic.Value
		t0 := time.Now()
		for i := range canvases {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				u := writers[i] + "/canvas_commands/" + ids[i] + "/command"
				body := []byte(`{"type":"create_node","base_rev":0,"args":{"name":"n","transform":{"x":1,"y":2}}}`)
				local := make([]sentCommand, 0, total/canvases)
				for range total / canvases {
					s := time.Now()
					code, msg, err := postCommand(c, u, body)
					ack := time.Now()
					var a struct {
						CurrentRev int64 `json:"current_rev"`
					}
					if err == nil && code == 200 {
						err = json.Unmarshal(msg, &a)
					}
					if err != nil || code != 200 || a.CurrentRev == 0 {
						if failed.Add(1) == 1 {
							firstErr.Store(fmt.Sprintf("%d %v %s", code, err, msg))
						}
						continue
					}
					local = append(local, sentCommand{rev: a.CurrentRev, sent: s, acked: ack})
				}
				sent[i] = local
			}(i)
		}
		wg.Wait()
		elapsed := time.Since(t0)
		if n := failed.Load(); n > 0 {
			b.Fatalf("%d of %d commands failed; the first: %s", n, total, firstErr.Load())
		}
		n := 0
		for i := range canvases {
			n += len(sent[i])
			last := sent[i][len(sent[i])-1].rev
			subs := []*revSubscriber{sameSubs[i]}
			if crossSubs != nil {
				subs = append(subs, crossSubs[i])
			}
			for _, s := range subs {
				s.waitFor(b, last)
			}
			for _, sc := range sent[i] {
				f.lat = append(f.lat, sc.acked.Sub(sc.sent))
				f.sseSame = append(f.sseSame, sameSubs[i].arrival(sc.rev).Sub(sc.sent))
				if crossSubs != nil {
					at := crossSubs[i].arrival(sc.rev)
					f.sseCross = append(f.sseCross, at.Sub(sc.sent))
					f.sseCrossAfterAck = append(f.sseCrossAfterAck, max(0, at.Sub(sc.acked)))
				}
			}
		}
		rate := float64(n) / elapsed.Seconds()
		f.rates = append(f.rates, rate)
		return rate
	}
	oneWriters, multiWriters := make([]string, canvases), make([]string, canvases)
	for i := range canvases {
		oneWriters[i], multiWriters[i] = ps[0], ps[i%procs]
	}
	var loads []float64
	for r := range pgRounds {
		var r1, r4 float64
		if r%2 == 0 {
			r1 = round(&single, oneWriters, one, nil)
			r4 = round(&multi, multiWriters, same, cross)
		} else {
			r4 = round(&multi, multiWriters, same, cross)
			r1 = round(&single, oneWriters, one, nil)
		}
		ratios = append(ratios, r4/r1)
		loads = append(loads, loadAvg())
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	reportFigures := func(b *testing.B, f *figures) {
		reportSpread(b, f.rates, "cmds/s")
		b.ReportMetric(float64(percentile(f.lat, 0.50).Microseconds()), "p50-µs")
		b.ReportMetric(float64(percentile(f.lat, 0.99).Microseconds()), "p99-µs")
		b.ReportMetric(ms(percentile(f.sseSame, 0.50)), "sse-same-p50-ms")
		b.ReportMetric(ms(percentile(f.sseSame, 0.99)), "sse-same-p99-ms")
		b.ReportMetric(median(loads), "loadavg")
	}
	b.Run(fmt.Sprintf("1-process-%d-canvases-%d-clients", canvases, canvases), func(b *testing.B) {
		reportFigures(b, &single)
	})
	b.Run(fmt.Sprintf("%d-processes-%d-canvases-%d-clients", procs, canvases, canvases), func(b *testing.B) {
		reportFigures(b, &multi)
		b.ReportMetric(ms(percentile(multi.sseCross, 0.50)), "sse-cross-p50-ms")
		b.ReportMetric(ms(percentile(multi.sseCross, 0.99)), "sse-cross-p99-ms")
		b.ReportMetric(ms(percentile(multi.sseCrossAfterAck, 0.50)), "sse-cross-after-ack-p50-ms")
		b.ReportMetric(ms(percentile(multi.sseCrossAfterAck, 0.99)), "sse-cross-after-ack-p99-ms")
		b.ReportMetric(median(ratios), "x-one-process")
	})
}

// sentCommand is one acknowledged command of BenchmarkPGScaleOut: the
// revision it committed, when it was sent and when its 200 arrived.
type sentCommand struct {
	rev         int64
	sent, acked time.Time
}

// revSubscriber is an SSE subscriber of one canvas on one process that
// records when each revision's canvas_commit arrived.
type revSubscriber struct {
	base, canvasID string
	mu             sync.Mutex
	at             map[int64]time.Time
	last           int64
	err            error
}

// subscribeRevs opens GET /sse/canvas/{id} on base and returns once the
// stream has caught up; the stream ends with ctx.
func subscribeRevs(ctx context.Context, b *testing.B, c *http.Client, base, canvasID string) *revSubscriber {
	b.Helper()
	s := &revSubscriber{base: base, canvasID: canvasID, at: make(map[int64]time.Time)}
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/sse/canvas/"+canvasID, nil)
	req.Header.Set("Authorization", "Bearer "+testAdmin)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatalf("subscribe to %s on %s: %v", canvasID, base, err)
	}
	if resp.StatusCode != 200 {
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b.Fatalf("subscribe to %s on %s: %d %s", canvasID, base, resp.StatusCode, msg)
	}
	caughtUp := make(chan struct{})
	go func() {
		defer resp.Body.Close()
		rd := bufio.NewReaderSize(resp.Body, 64<<10)
		signalled := false
		for {
			line, err := rd.ReadSlice('\n')
			if err != nil {
				if ctx.Err() == nil {
					s.mu.Lock()
					s.err = err
					s.mu.Unlock()
				}
				if !signalled {
					close(caughtUp)
				}
				return
			}
			switch {
			case bytes.HasPrefix(line, []byte("id: ")):
				now := time.Now()
				rest := line[4:]
				if i := bytes.IndexByte(rest, '-'); i > 0 {
					rest = rest[:i]
				}
				rev, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
				if err != nil {
					continue
				}
				s.mu.Lock()
				s.at[rev] = now
				s.last = max(s.last, rev)
				s.mu.Unlock()
			case bytes.HasPrefix(line, []byte("event: caught_up")) && !signalled:
				signalled = true
				close(caughtUp)
			case bytes.HasPrefix(line, []byte("event: reset")):
				s.mu.Lock()
				s.err = fmt.Errorf("reset")
				s.mu.Unlock()
			}
		}
	}()
	select {
	case <-caughtUp:
	case <-time.After(30 * time.Second):
		b.Fatalf("subscriber of %s on %s: no caught_up within 30s", canvasID, base)
	}
	if err := s.failure(); err != nil {
		b.Fatalf("subscriber of %s on %s: %v", canvasID, base, err)
	}
	return s
}

func (s *revSubscriber) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// waitFor returns once the subscriber has received rev (and fails the
// benchmark after 30 s or when the stream broke).
func (s *revSubscriber) waitFor(b *testing.B, rev int64) {
	b.Helper()
	for pl := newPoller(30*time.Second, 2*time.Millisecond); ; pl.wait() {
		s.mu.Lock()
		last, err := s.last, s.err
		s.mu.Unlock()
		if err != nil {
			b.Fatalf("subscriber of %s on %s: %v", s.canvasID, s.base, err)
		}
		if last >= rev {
			return
		}
		if pl.expired() {
			b.Fatalf("subscriber of %s on %s: has rev %d, not %d, after 30s", s.canvasID, s.base, last, rev)
		}
	}
}

// arrival is when rev's commit arrived (the zero time when it did not,
// which waitFor rules out).
func (s *revSubscriber) arrival(rev int64) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at[rev]
}

// pgSchemaProcessURL creates a fresh schema in CANVASD_TEST_DATABASE_URL
// (skipping only when it is unset), dropped at cleanup, and returns a URL
// whose connections use it (options=-csearch_path=<schema>), for canvasd
// processes.
func pgSchemaProcessURL(b *testing.B) string {
	b.Helper()
	base, schema := pgTestSchema(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		b.Fatalf("connecting to CANVASD_TEST_DATABASE_URL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		b.Fatalf("create schema: %v", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		b.Fatalf("CANVASD_TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("options", "-csearch_path="+schema)
	u.RawQuery = q.Encode()
	return u.String()
}
