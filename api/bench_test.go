package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
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

func postCommand(c *http.Client, url string, body []byte) (int, error) {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testAdmin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
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
		if code, err := postCommand(c, e.srv.URL+"/canvas_commands/lat/command", cmd(i)); err != nil || code != 200 {
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
					if code, err := postCommand(c, url, cmd(0)); err != nil || code != 200 {
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

// BenchmarkSSEDelivery measures commit → SSE delivery latency with 1,000
// subscribers on one canvas over real HTTP connections.
func BenchmarkSSEDelivery(b *testing.B) {
	const subscribers, commits = 1000, 100
	e := newTestEnv(b)
	c := benchClient()
	c.Transport.(*http.Transport).MaxIdleConnsPerHost = subscribers + 10
	c.Transport.(*http.Transport).MaxConnsPerHost = 0
	body, _ := json.Marshal(map[string]any{"canvas_id": "fan"})
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/canvases", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testAdmin)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != 201 {
		b.Fatalf("create canvas: %v", err)
	}

	var mu sync.Mutex
	var lats []time.Duration
	sent := make([]time.Time, commits+1)
	var ready, done sync.WaitGroup
	for i := 0; i < subscribers; i++ {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			resp, err := c.Get(e.srv.URL + "/sse/canvas/fan?access_token=" + testAdmin)
			if err != nil {
				ready.Done()
				b.Errorf("subscribe: %v", err)
				return
			}
			defer resp.Body.Close()
			rd := bufio.NewReader(resp.Body)
			got, signalled := 0, false
			local := make([]time.Duration, 0, commits)
			for got < commits {
				line, err := rd.ReadString('\n')
				if err != nil {
					b.Errorf("read: %v", err)
					break
				}
				if strings.HasPrefix(line, "event: caught_up") && !signalled {
					signalled = true
					ready.Done()
				}
				if strings.HasPrefix(line, "id: ") {
					now := time.Now()
					var rev int
					fmt.Sscanf(line[4:], "%d-", &rev)
					mu.Lock()
					t0 := sent[rev]
					mu.Unlock()
					local = append(local, now.Sub(t0))
					got++
				}
			}
			mu.Lock()
			lats = append(lats, local...)
			mu.Unlock()
		}()
	}
	ready.Wait()
	url := e.srv.URL + "/canvas_commands/fan/command"
	for i := 1; i <= commits; i++ {
		mu.Lock()
		sent[i] = time.Now()
		mu.Unlock()
		if code, err := postCommand(c, url, []byte(fmt.Sprintf(`{"type":"create_node","base_rev":%d,"args":{"name":"n"}}`, i-1))); err != nil || code != 200 {
			b.Fatalf("command: %d %v", code, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	done.Wait()
	b.ReportMetric(float64(percentile(lats, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lats, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(lats)), "deliveries")
}
