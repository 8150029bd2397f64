package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchClient is a keep-alive client that skips the test harness's
// response validation (it would dominate the timings).
func benchClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: tr}
}

// postCommand sends one command as the admin and returns the status and body.
func postCommand(c *http.Client, url string, body []byte) (int, []byte, error) {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testAdmin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

func percentile(d []time.Duration, p float64) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// benchTotal is how many commands each throughput run sends.
const benchTotal = 8000

// BenchmarkCommandApplyHTTP measures one command over HTTP loopback on the
// embedded store: latency of sequential commands, then throughput with
// concurrent clients on one canvas and across canvases.
func BenchmarkCommandApplyHTTP(b *testing.B) {
	e := newTestEnv(b)
	c := benchClient()
	mk := func(id string) {
		body, _ := json.Marshal(map[string]any{"canvas_id": id})
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/canvases", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testAdmin)
		resp, err := c.Do(req)
		if err != nil || resp.StatusCode != 201 {
			b.Fatalf("create canvas: %v", err)
		}
		resp.Body.Close()
	}
	mk("lat")
	cmd := func(base int) []byte {
		return []byte(fmt.Sprintf(`{"type":"create_node","base_rev":%d,"args":{"name":"n","transform":{"x":1,"y":2}}}`, base))
	}
	const seq = 2000
	lat := make([]time.Duration, 0, seq)
	for i := 0; i < seq; i++ {
		t0 := time.Now()
		if code, _, err := postCommand(c, e.srv.URL+"/canvas_commands/lat/command", cmd(i)); err != nil || code != 200 {
			b.Fatalf("command: %d %v", code, err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")

	throughput := func(canvases []string, clients, total int) float64 {
		var wg sync.WaitGroup
		per := total / clients
		t0 := time.Now()
		for w := 0; w < clients; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				url := e.srv.URL + "/canvas_commands/" + canvases[w%len(canvases)] + "/command"
				for i := 0; i < per; i++ {
					if code, _, err := postCommand(c, url, cmd(0)); err != nil || code != 200 {
						b.Errorf("command: %d %v", code, err)
						return
					}
				}
			}(w)
		}
		wg.Wait()
		return float64(per*clients) / time.Since(t0).Seconds()
	}
	mk("hot")
	b.ReportMetric(throughput([]string{"hot"}, 32, benchTotal), "cmds/s-one-canvas")
	var many []string
	for i := 0; i < 32; i++ {
		id := fmt.Sprintf("many%d", i)
		mk(id)
		many = append(many, id)
	}
	b.ReportMetric(throughput(many, 32, benchTotal), "cmds/s-across-canvases")
}

// BenchmarkSSEDelivery measures commit → SSE delivery latency over real HTTP
// connections to a canvasd child process (so the readers' garbage does not
// pause the server, and one process need not hold both ends of 10k
// connections under this machine's file limit): 1,000 subscribers with a
// commit every 10 ms, and 10,000 with a commit every 100 ms (both 100k
// deliveries/s). The 10k run also reports resident memory per idle subscriber.
func BenchmarkSSEDelivery(b *testing.B) {
	b.Run("1k-subscribers", func(b *testing.B) {
		lats := measureDelivery(b, startCanvasd(b), testAdmin, 1000, 100, 10*time.Millisecond, nil)
		reportLatencies(b, lats)
	})
	b.Run("10k-subscribers", func(b *testing.B) {
		base := startCanvasd(b)
		var rssIdle, heapIdle, stackIdle float64
		lats := measureDelivery(b, base, testAdmin, 10000, 50, 100*time.Millisecond, func(subscribed bool) {
			time.Sleep(500 * time.Millisecond) // let the streams (or the start-up) settle
			rss := metricValue(b, base, "process_resident_memory_bytes")
			heap := metricValue(b, base, "go_memstats_heap_inuse_bytes")
			stack := metricValue(b, base, "go_memstats_stack_inuse_bytes")
			if !subscribed {
				rssIdle, heapIdle, stackIdle = rss, heap, stack
				return
			}
			b.ReportMetric((rss-rssIdle)/10000/1024, "KiB-rss/idle-subscriber")
			b.ReportMetric((heap-heapIdle)/10000/1024, "KiB-heap/idle-subscriber")
			b.ReportMetric((stack-stackIdle)/10000/1024, "KiB-stack/idle-subscriber")
		})
		reportLatencies(b, lats)
	})
}

func reportLatencies(b *testing.B, lats []time.Duration) {
	b.ReportMetric(float64(percentile(lats, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lats, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(lats)), "deliveries")
}

// measureDelivery opens subscribers streams on a new canvas of the server at
// base, sends commits commands one every `every`, and returns every commit's
// delivery latency at every subscriber. onReady is called before the
// subscribers connect (false) and once all are caught up (true).
func measureDelivery(b *testing.B, base, token string, subscribers, commits int, every time.Duration, onReady func(subscribed bool)) []time.Duration {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	c := &http.Client{Transport: tr}
	canvasID := fmt.Sprintf("fan%d", subscribers)
	body, _ := json.Marshal(map[string]any{"canvas_id": canvasID})
	req, _ := http.NewRequest("POST", base+"/api/canvases", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != 201 {
		b.Fatalf("create canvas: %v", err)
	}
	if onReady != nil {
		onReady(false)
	}
	var mu sync.Mutex
	var lats []time.Duration
	start := time.Now()
	sent := make([]atomic.Int64, commits+1) // when commit rev was sent, in ns since start
	var ready, done sync.WaitGroup
	streamURL := base + "/sse/canvas/" + canvasID + "?access_token=" + token
	for i := 0; i < subscribers; i++ {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			resp, err := c.Get(streamURL)
			if err != nil {
				ready.Done()
				b.Errorf("subscribe: %v", err)
				return
			}
			defer resp.Body.Close()
			rd := bufio.NewReaderSize(resp.Body, 4096)
			got, signalled := 0, false
			local := make([]time.Duration, 0, commits)
			for got < commits {
				line, err := rd.ReadSlice('\n') // no allocation per line
				if err != nil {
					b.Errorf("read: %v", err)
					break
				}
				if !signalled && bytes.HasPrefix(line, []byte("event: caught_up")) {
					signalled = true
					ready.Done()
				}
				if bytes.HasPrefix(line, []byte("id: ")) {
					now := time.Since(start)
					local = append(local, now-time.Duration(sent[eventRev(line)].Load()))
					got++
				}
			}
			mu.Lock()
			lats = append(lats, local...)
			mu.Unlock()
		}()
	}
	ready.Wait()
	if onReady != nil {
		onReady(true)
	}
	url := base + "/canvas_commands/" + canvasID + "/command"
	for i := 1; i <= commits; i++ {
		sent[i].Store(int64(time.Since(start)))
		req, _ := http.NewRequest("POST", url, strings.NewReader(fmt.Sprintf(`{"type":"create_node","base_rev":%d,"args":{"name":"n"}}`, i-1)))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("command: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		time.Sleep(every)
	}
	done.Wait()
	if len(lats) != subscribers*commits {
		b.Fatalf("%d deliveries, want %d: a subscriber missed commits", len(lats), subscribers*commits)
	}
	return lats
}

// eventRev parses the revision of an "id: <rev>-<hex>" line (cheaply: the
// benchmark's readers share the machine with the server they measure).
func eventRev(line []byte) int {
	rev := 0
	for _, c := range line[len("id: "):] {
		if c < '0' || c > '9' {
			break
		}
		rev = rev*10 + int(c-'0')
	}
	return rev
}

// startCanvasd builds and starts canvasd as a child process on a free port
// and returns its base URL (admin token testAdmin).
func startCanvasd(b *testing.B) string {
	dir := b.TempDir()
	bin := filepath.Join(dir, "canvasd")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/canvasd").CombinedOutput(); err != nil {
		b.Fatalf("build canvasd: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", filepath.Join(dir, "data"), "--admin-token", testAdmin, "--agent", "off")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	base := "http://" + addr
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
	}
	b.Fatal("canvasd did not become ready")
	return ""
}

// metricValue reads one unlabelled sample from the server's /metrics.
func metricValue(b *testing.B, base, name string) float64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	b.Fatalf("metric %s not found", name)
	return 0
}

// BenchmarkSSEResume measures a stream resuming 1,000 missed commits: the
// time from the request to caught_up, checking order, gaps and duplicates.
func BenchmarkSSEResume(b *testing.B) {
	e := newTestEnv(b)
	e.canvas("resume")
	cmds := make([]any, 1000)
	for i := range cmds {
		cmds[i] = map[string]any{"type": "create_node", "args": map[string]any{"name": "n"}}
	}
	e.must(200, "POST", "/canvas_commands/resume/commands", testAdmin, map[string]any{"base_rev": 0, "commands": cmds})
	var times []time.Duration
	for i := 0; i < max(b.N, 20); i++ {
		req, _ := http.NewRequest("GET", e.srv.URL+"/sse/canvas/resume", nil)
		req.Header.Set("Authorization", "Bearer "+testAdmin)
		req.Header.Set("Last-Event-ID", "0")
		t0 := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		rd := bufio.NewReader(resp.Body)
		next := 1
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.HasPrefix(line, "id: ") {
				rev := eventRev([]byte(line))
				if rev != next {
					b.Fatalf("resume: got rev %d, want %d", rev, next)
				}
				next++
			}
			if strings.HasPrefix(line, "event: caught_up") {
				break
			}
		}
		times = append(times, time.Since(t0))
		resp.Body.Close()
		if next != 1001 {
			b.Fatalf("resume delivered %d commits, want 1000", next-1)
		}
	}
	b.ReportMetric(float64(percentile(times, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(times, 0.99).Microseconds())/1000, "p99-ms")
}
