package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// streamStatus opens path as token and returns the status, headers and body
// of an answer that is not a stream (a stream is closed at once: status 200,
// no body).
func (e *testEnv) streamStatus(path, token string) (int, http.Header, []byte) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, resp.Header, nil
	}
	body, _ := io.ReadAll(resp.Body)
	checkResponse(e.t, e.spec, req, resp, body)
	return resp.StatusCode, resp.Header, body
}

// checkTooMany fails t unless the answer is a 429 problem document of type
// slug with a Retry-After of want seconds ("" for any) and a detail that
// contains each of says.
func checkTooMany(t testing.TB, what string, status int, hdr http.Header, body []byte, slug, want string, says ...string) {
	t.Helper()
	if status != http.StatusTooManyRequests {
		t.Fatalf("%s: status %d, want 429: %s", what, status, body)
	}
	if ct := hdr.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s: Content-Type %q, want application/problem+json", what, ct)
	}
	if ra := hdr.Get("Retry-After"); ra == "" || want != "" && ra != want {
		t.Errorf("%s: Retry-After %q, want %q", what, ra, want)
	}
	var p map[string]any
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("%s: not JSON: %v: %s", what, err, body)
	}
	if p["type"] != problemBase+slug || p["status"] != float64(429) {
		t.Errorf("%s: problem %v, want type %s and status 429", what, p, problemBase+slug)
	}
	for _, s := range says {
		if d, _ := p["detail"].(string); !strings.Contains(d, s) {
			t.Errorf("%s: detail %q does not say %q", what, d, s)
		}
	}
}

// TestStreamCapPerToken: a token holds at most MaxStreamsPerToken canvas and
// host streams at once; above it a stream is a 429 problem that subscribes
// nothing, other tokens are unaffected, and a slot frees up however a stream
// ends (the client leaves, the hub kicks it, an error before it starts, the
// server closes streams).
func TestStreamCapPerToken(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxStreamsPerToken = 2 })
	c := e.canvas("c_cap")
	tok, actor := e.token(canvas.RoleViewer, canvas.ActorHuman)
	other, _ := e.token(canvas.RoleViewer, canvas.ActorHuman)
	path := "/sse/canvas/" + c

	s1 := e.stream(path, tok, nil)
	s2 := e.stream("/sse/host/"+c, tok, nil)
	if n := e.api.streams.count(actor); n != 2 {
		t.Fatalf("%d slots taken after two streams, want 2", n)
	}
	for _, p := range []string{path, "/sse/host/" + c} {
		status, hdr, body := e.streamStatus(p, tok)
		checkTooMany(t, "third stream "+p, status, hdr, body, "too-many-streams", "5", "2 streams open", "--max-streams-per-token", "close streams")
	}
	if n := counterValue(t, e.reg, "canvas_http_too_many_requests_total", "type", "too-many-streams"); n != 2 {
		t.Errorf("canvas_http_too_many_requests_total{type=too-many-streams} = %v after two 429s, want 2", n)
	}
	if n := e.api.hub.Subscribers(c); n != 1 {
		t.Errorf("the refused streams left %d canvas subscribers, want 1", n)
	}
	if n := e.api.streams.count(actor); n != 2 {
		t.Errorf("%d slots taken after refusals, want 2", n)
	}
	// The cap is per token: another token, and the admin, still stream.
	e.stream(path, other, nil).close()
	e.stream(path, testAdmin, nil).close()

	// The client leaves: its slot frees up.
	s1.close()
	waitUntil(t, 20*time.Second, "the closed stream's slot is free", func() bool { return e.api.streams.count(actor) == 1 })
	s1 = e.stream(path, tok, nil)
	s1.next() // caught_up

	// A host stream the client leaves frees its slot too.
	s2.close()
	waitUntil(t, 20*time.Second, "the closed host stream's slot is free", func() bool { return e.api.streams.count(actor) == 1 })

	// A stream refused after the slot was taken (unknown canvas, bad
	// Last-Event-ID) gives it back.
	for i := 0; i < 3; i++ {
		if status, _, body := e.streamStatus("/sse/canvas/c_nowhere", tok); status != http.StatusNotFound {
			t.Fatalf("stream of an unknown canvas: %d %s", status, body)
		}
	}
	if n := e.api.streams.count(actor); n != 1 {
		t.Fatalf("%d slots taken after failed streams, want 1", n)
	}

	// The hub kicks a subscriber (it fell behind): the slot frees up.
	s2 = e.stream(path, tok, nil)
	s2.next() // caught_up
	behind := counterValue(t, e.reg, "canvas_sse_streams_behind_total", "", "")
	e.api.hub.Kick(c)
	waitUntil(t, 20*time.Second, "the kicked streams' slots are free", func() bool { return e.api.streams.count(actor) == 0 })
	if n := counterValue(t, e.reg, "canvas_sse_streams_behind_total", "", ""); n <= behind {
		t.Errorf("canvas_sse_streams_behind_total went from %v to %v when a stream was kicked", behind, n)
	}

	// The server closes every stream: every slot frees up.
	e.stream(path, tok, nil)
	e.stream("/sse/host/"+c, tok, nil)
	e.api.hub.Stop()
	waitUntil(t, 20*time.Second, "the slots of the streams the server closed are free", func() bool { return e.api.streams.count(actor) == 0 })
}

// TestClientStreamWaitsRetryAfter: the Go client's stream, refused for the
// cap, waits the 429's Retry-After (capped by its MaxRetry) before it tries
// again, not its much shorter backoff, and then follows the canvas.
func TestClientStreamWaitsRetryAfter(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxStreamsPerToken = 1 })
	cid := e.canvas("c_wait")
	tok, _ := e.token(canvas.RoleViewer, canvas.ActorHuman)
	held := e.stream("/sse/canvas/"+cid, tok, nil)
	c, err := client.New(e.srv.URL, tok)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := c.Stream(ctx, cid, client.StreamOptions{MinRetry: 10 * time.Millisecond, MaxRetry: time.Second})
	defer st.Close()
	got := make(chan error, 1)
	go func() {
		ev, err := st.Recv()
		if err == nil && ev.Event != client.EventCaughtUp {
			err = fmt.Errorf("first event %q, want caught_up", ev.Event)
		}
		got <- err
	}()
	refused := func() float64 {
		return counterValue(t, e.reg, "canvas_http_too_many_requests_total", "type", "too-many-streams")
	}
	waitUntil(t, 20*time.Second, "the client's stream refused", func() bool { return refused() == 1 })
	t0 := time.Now()
	held.close() // the slot frees at once: only the Retry-After keeps the client waiting
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(t0); waited < 900*time.Millisecond {
		t.Fatalf("the client came back %v after the 429, want about its Retry-After capped by MaxRetry (1 s)", waited)
	}
	if n := refused(); n != 1 {
		t.Fatalf("%v refusals, want 1: the client retried before the Retry-After", n)
	}
}

// TestStreamCapOff: without MaxStreamsPerToken a token opens as many
// streams as it likes.
func TestStreamCapOff(t *testing.T) {
	e := newTestEnv(t)
	c := e.canvas("c_nocap")
	for i := 0; i < 5; i++ {
		e.stream("/sse/canvas/"+c, testAdmin, nil)
	}
	if n := e.api.streams.count(AdminActorID); n != 5 {
		t.Fatalf("%d streams counted, want 5", n)
	}
}

// throttleClient sends requests to e's handler from one remote address.
type throttleClient struct {
	e    *testEnv
	addr string // host:port
}

func (c throttleClient) do(method, path, token string) (int, http.Header, []byte) {
	c.e.t.Helper()
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = c.addr
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	c.e.api.Handler().ServeHTTP(rec, req)
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	checkResponse(c.e.t, c.e.spec, req, resp, body)
	return resp.StatusCode, resp.Header, body
}

func (c throttleClient) want(status int, method, path, token string) {
	c.e.t.Helper()
	if got, _, body := c.do(method, path, token); got != status {
		c.e.t.Fatalf("%s %s from %s: %d, want %d: %s", method, path, c.addr, got, status, body)
	}
}

// TestAuthFailureThrottle: after MaxAuthFailures requests with bad tokens
// within a minute, an address's requests with any token, a good one
// included, are 429 until the minute since its first failure has passed;
// successful requests never count; other addresses, and loopback, are not
// affected.
func TestAuthFailureThrottle(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxAuthFailures = 3 })
	c := e.canvas("c_throttle")
	e.must(201, "PUT", "/api/host/"+c+"/files/index.html", testAdmin, "<p>page</p>")
	good, _ := e.token(canvas.RoleViewer, canvas.ActorHuman)
	clock := &testClock{now: time.Now()}
	e.api.auth.now = clock.Now
	const bad = TokenPrefix + "not-a-token"
	list := "/api/canvases"

	a := throttleClient{e, "192.0.2.7:40001"}
	a.want(401, "GET", list, bad)
	a.want(401, "GET", list, TokenPrefix+strings.Repeat("x", 600)) // malformed counts too
	for i := 0; i < 20; i++ {
		a.want(200, "GET", list, good) // successes never count
	}
	a.want(200, "GET", list, testAdmin)
	a.want(401, "GET", list, bad) // the third failure, still checked
	status, hdr, body := a.do("GET", list, bad)
	checkTooMany(t, "fourth failure", status, hdr, body, "too-many-auth-failures", "60", "3 requests", "60 s", "Retry-After")
	if n := counterValue(t, e.reg, "canvas_http_too_many_requests_total", "type", "too-many-auth-failures"); n != 1 {
		t.Errorf("canvas_http_too_many_requests_total{type=too-many-auth-failures} = %v after one 429, want 1", n)
	}

	// The address is refused whatever token it sends, without checking it,
	// on every authenticated route; a request without a token is still a
	// 401, and public routes answer.
	for _, tok := range []string{good, testAdmin, bad} {
		status, hdr, body := a.do("GET", list, tok)
		checkTooMany(t, "a token from the throttled address", status, hdr, body, "too-many-auth-failures", "60")
	}
	status, hdr, body = a.do("GET", "/host/"+c+"/index.html", good)
	checkTooMany(t, "a host page", status, hdr, body, "too-many-auth-failures", "60")
	status, hdr, body = a.do("GET", "/sse/canvas/"+c+"?access_token="+good, "")
	checkTooMany(t, "a stream with ?access_token=", status, hdr, body, "too-many-auth-failures", "60")
	a.want(401, "GET", list, "")
	a.want(200, "GET", "/healthz", "")

	// Another address, one of another /64 and loopback are not affected;
	// the same /64 is.
	b := throttleClient{e, "198.51.100.9:5000"}
	b.want(200, "GET", list, good)
	b.want(401, "GET", list, bad)
	v6 := throttleClient{e, "[2001:db8:0:1::1]:443"}
	for i := 0; i < 3; i++ {
		v6.want(401, "GET", list, bad)
	}
	if status, _, _ := (throttleClient{e, "[2001:db8:0:1::ffff]:443"}).do("GET", list, good); status != 429 {
		t.Errorf("another address of the throttled /64: %d, want 429", status)
	}
	(throttleClient{e, "[2001:db8:0:2::1]:443"}).want(200, "GET", list, good)
	lo := throttleClient{e, "127.0.0.1:9999"}
	for i := 0; i < 10; i++ {
		lo.want(401, "GET", list, bad)
	}
	lo.want(200, "GET", list, good)

	// The refusal lasts until the minute since the first failure is over;
	// refused requests do not extend it.
	clock.advance(45 * time.Second)
	status, hdr, body = a.do("GET", list, good)
	checkTooMany(t, "45 s later", status, hdr, body, "too-many-auth-failures", "15")
	clock.advance(15 * time.Second)
	a.want(200, "GET", list, good)
	// A fresh window: the address has its failures again.
	for i := 0; i < 3; i++ {
		a.want(401, "GET", list, bad)
	}
	status, hdr, body = a.do("GET", list, good)
	checkTooMany(t, "a new window's fourth request", status, hdr, body, "too-many-auth-failures", "60")
}

// TestAuthFailureThrottleOff: without MaxAuthFailures bad tokens are 401
// however many there are.
func TestAuthFailureThrottleOff(t *testing.T) {
	e := newTestEnv(t)
	a := throttleClient{e, "192.0.2.7:40001"}
	for i := 0; i < 50; i++ {
		a.want(401, "GET", "/api/canvases", TokenPrefix+"not-a-token")
	}
	a.want(200, "GET", "/api/canvases", testAdmin)
}

// TestAuthThrottleBounded: however many addresses fail, the throttle keeps
// at most maxThrottledAddrs of them, and its count of entries stays exact.
func TestAuthThrottleBounded(t *testing.T) {
	th := newAuthThrottle(2, time.Minute)
	now := time.Now()
	r := httptest.NewRequest("GET", "/", nil)
	for i := 0; i < 3*maxThrottledAddrs; i++ {
		ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		r.RemoteAddr = netip.AddrPortFrom(ip, 1).String()
		th.fail(r, now)
	}
	total := 0
	for i := range th.shards {
		total += len(th.shards[i].m)
	}
	if total > maxThrottledAddrs {
		t.Errorf("the throttle keeps %d addresses, more than %d", total, maxThrottledAddrs)
	}
	if n := th.entries.Load(); n != int64(total) {
		t.Errorf("entries says %d, the shards hold %d", n, total)
	}
	// Expired entries are dropped when a full shard needs room.
	later := now.Add(2 * time.Minute)
	for i := 0; i < maxThrottledAddrs; i++ {
		ip := netip.AddrFrom4([4]byte{11, byte(i >> 16), byte(i >> 8), byte(i)})
		r.RemoteAddr = netip.AddrPortFrom(ip, 1).String()
		th.fail(r, later)
	}
	for i := range th.shards {
		for a, f := range th.shards[i].m {
			if f.since.Before(later) {
				t.Fatalf("expired entry %v kept while the shard was full", a)
			}
		}
	}
}

// TestAuthThrottleCheckAllocates: checking an address that is not
// throttled allocates nothing, even while other addresses have failures.
func TestAuthThrottleCheckAllocates(t *testing.T) {
	th := newAuthThrottle(2, time.Minute)
	now := time.Now()
	bad := httptest.NewRequest("GET", "/", nil)
	bad.RemoteAddr = "192.0.2.1:1"
	th.fail(bad, now)
	for _, addr := range []string{"198.51.100.1:2", "[2001:db8::1]:3"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = addr
		if n := testing.AllocsPerRun(100, func() {
			if err := th.check(r, func() time.Time { return now }); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("check of %s: %v allocations, want 0", addr, n)
		}
	}
}

// TestRetryAfterSeconds: Retry-After is whole seconds, rounded up, at least 1.
func TestRetryAfterSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "1", time.Millisecond: "1", time.Second: "1",
		1500 * time.Millisecond: "2", time.Minute: "60", -time.Second: "1"} {
		if got := retryAfterSeconds(d); got != want {
			t.Errorf("retryAfterSeconds(%v) = %s, want %s", d, got, want)
		}
	}
}

// TestAuthThrottleWindowRestarts: a failure after an address's window has
// passed starts a new window, even when no check dropped the old record.
func TestAuthThrottleWindowRestarts(t *testing.T) {
	th := newAuthThrottle(2, time.Minute)
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.1:1"
	t0 := time.Now()
	th.fail(r, t0)
	later := t0.Add(61 * time.Second)
	th.fail(r, later)
	if err := th.check(r, func() time.Time { return later }); err != nil {
		t.Fatalf("one failure in the new window is refused: %v", err)
	}
	th.fail(r, later)
	if err := th.check(r, func() time.Time { return later.Add(time.Second) }); err == nil {
		t.Fatal("two failures in the new window are not refused")
	}
}
