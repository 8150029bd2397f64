package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostEvent is one event of a /sse/host/{session} stream.
type hostEvent struct {
	name string
	data map[string]any
	raw  string
}

// hostStream reads GET /sse/host/{session} on one process.
type hostStream struct {
	events chan hostEvent
	cancel context.CancelFunc
	done   chan struct{}
}

// openHostStream subscribes to a host session on base; when it returns, the
// subscription is registered (the server answers only after that).
func openHostStream(t *testing.T, base, session string) *hostStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/sse/host/"+session, nil)
	req.Header.Set("Authorization", "Bearer "+mpAdmin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("host stream on %s: %v", base, err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("host stream on %s: %d %s", base, resp.StatusCode, b)
	}
	s := &hostStream{events: make(chan hostEvent, 256), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var name, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "" && name != "":
				ev := hostEvent{name: name, raw: data}
				_ = json.Unmarshal([]byte(data), &ev.data)
				select {
				case s.events <- ev:
				case <-ctx.Done():
					return
				}
				name, data = "", ""
			case strings.HasPrefix(line, "event: "):
				name = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			}
		}
	}()
	t.Cleanup(func() { s.cancel(); <-s.done })
	return s
}

// next returns the stream's next event, which must be named want.
func (s *hostStream) next(t *testing.T, want string) hostEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatalf("host stream ended; want %s", want)
		}
		if ev.name != want {
			t.Fatalf("host stream: %s %s, want %s", ev.name, ev.raw, want)
		}
		return ev
	case <-time.After(15 * time.Second):
		t.Fatalf("no %s event within 15s", want)
	}
	return hostEvent{}
}

// quiet asserts the stream receives nothing for d.
func (s *hostStream) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			t.Fatalf("unexpected host event %s %s", ev.name, ev.raw)
		}
	case <-time.After(d):
	}
}

// send makes one request as the admin, with a raw body and extra headers.
func send(t *testing.T, c *http.Client, method, url string, header map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+mpAdmin)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, body: b}
	_ = json.Unmarshal(b, &a.decoded)
	return a
}

func mustSend(t *testing.T, c *http.Client, status int, method, url string, header map[string]string, body string) answer {
	t.Helper()
	a := send(t, c, method, url, header, body)
	if a.status != status {
		t.Fatalf("%s %s: %d, want %d: %s", method, url, a.status, status, a.body)
	}
	return a
}

// noRedirects is c without following redirects.
func noRedirects(c *http.Client) *http.Client {
	return &http.Client{Transport: c.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// waitBrowsers presents on a session through p until p counts n browsers
// (the other process's streams included), so presence has arrived.
func waitBrowsers(t *testing.T, c *http.Client, p *proc, session string, n float64) {
	t.Helper()
	for pl := newPoller(15*time.Second, 50*time.Millisecond); ; pl.wait() {
		a := mustCall(t, c, 200, "POST", p.base()+"/api/host/"+session+"/present", map[string]any{"action": "hide"})
		if a.decoded["browsers"] == n {
			return
		}
		if pl.expired() {
			t.Fatalf("%s counts %v browsers on host session %s, want %v", p.name, a.decoded["browsers"], session, n)
		}
	}
}

// waitRelays returns once an ephemeral canvas event sent through either
// process reaches a stream on the other: both relays are listening (an event
// sent before a listener is up is missed, by design).
func waitRelays(t *testing.T, c *http.Client, a, b *proc) {
	t.Helper()
	mustCall(t, c, 201, "POST", a.base()+"/api/canvases", map[string]any{"canvas_id": "relay-warm-up"})
	for _, pair := range [][2]*proc{{a, b}, {b, a}} {
		from, to := pair[0], pair[1]
		sub := subscribe(t, to.base(), "relay-warm-up", "")
		pl := newPoller(15*time.Second, 50*time.Millisecond)
		for seen := false; !seen; {
			mustCall(t, c, 202, "POST", from.base()+"/canvas_commands/relay-warm-up/gesture", map[string]any{"cursor": map[string]any{"x": 1, "y": 2}})
			pl.wait()
			_, _, others, _ := sub.snapshot()
			seen = len(others) > 1 // caught_up, then a gesture
			if !seen && pl.expired() {
				t.Fatalf("a gesture posted to %s never reached %s", from.name, to.name)
			}
		}
		sub.stop()
	}
}

// TestMultiProcessHost runs two canvasd processes on one PostgreSQL schema
// and checks that they serve one canvas host: files written through either
// are served by both, host streams on either get every session event
// (reload, a2ui, present, invoke) wherever it happened, surfaces pushed
// through one are replayed by the other, a page ticket minted by one opens
// pages on the other, and host-session invokes reach browsers on the other
// process (first answer wins; 504 says whether a browser was connected).
func TestMultiProcessHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dbURL := pgSchemaURL(t)
	bin := buildCanvasd(t)
	a, b := newProc(t, "A", bin, dbURL), newProc(t, "B", bin, dbURL)
	a.start()
	b.start()
	waitReady(t, a.base())
	waitReady(t, b.base())
	c := mpClient()
	waitRelays(t, c, a, b)

	t.Run("FilesAndReload", func(t *testing.T) { testHostFilesAcross(t, c, a, b) })
	t.Run("Surfaces", func(t *testing.T) { testHostSurfacesAcross(t, c, a, b) })
	t.Run("Tickets", func(t *testing.T) { testHostTicketsAcross(t, c, a, b) })
	t.Run("Invoke", func(t *testing.T) { testHostInvokeAcross(t, c, a, b) })
}

func testHostFilesAcross(t *testing.T, c *http.Client, a, b *proc) {
	onA, onB := openHostStream(t, a.base(), "site"), openHostStream(t, b.base(), "site")
	mustSend(t, c, 201, "PUT", a.base()+"/api/host/site/files/index.html", nil, "<h1>written through A</h1>")
	for name, s := range map[string]*hostStream{"A": onA, "B": onB} {
		if ev := s.next(t, "reload"); ev.data["path"] != "index.html" || ev.data["op"] != "put" {
			t.Fatalf("reload on %s: %s", name, ev.raw)
		}
	}
	page := mustSend(t, c, 200, "GET", b.base()+"/host/site/", nil, "")
	if string(page.body) != "<h1>written through A</h1>" || !strings.HasPrefix(page.header.Get("Content-Security-Policy"), "sandbox") ||
		!strings.HasPrefix(page.header.Get("Content-Type"), "text/html") {
		t.Fatalf("B serves %q (CSP %q, type %q)", page.body, page.header.Get("Content-Security-Policy"), page.header.Get("Content-Type"))
	}
	mustSend(t, c, 201, "PUT", b.base()+"/api/host/site/files/css/app.css", nil, "body{}")
	onA.next(t, "reload")
	onB.next(t, "reload")
	if css := mustSend(t, c, 200, "GET", a.base()+"/host/site/css/app.css", nil, ""); !strings.HasPrefix(css.header.Get("Content-Type"), "text/css") {
		t.Fatalf("css via A: %q", css.header.Get("Content-Type"))
	}
	// Directories, listings and hostile names behave as on one process.
	if r := send(t, noRedirects(c), "GET", a.base()+"/host/site/css", nil, ""); r.status != 301 || r.header.Get("Location") != "/host/site/css/" {
		t.Fatalf("directory without a slash via A: %d %q", r.status, r.header.Get("Location"))
	}
	mustSend(t, c, 404, "GET", a.base()+"/host/site/css/", nil, "") // no index, no listing
	mustSend(t, c, 400, "GET", b.base()+"/host/site/css/..%2f..%2fsecret", nil, "")
	mustSend(t, c, 422, "PUT", a.base()+"/api/host/site/files/css", nil, "a file over a directory")
	list := mustCall(t, c, 200, "GET", b.base()+"/api/host/site/files", nil)
	if files := list.decoded["files"].([]any); len(files) != 2 {
		t.Fatalf("B lists %v", files)
	}
	mustSend(t, c, 204, "DELETE", b.base()+"/api/host/site/files/index.html", nil, "")
	if ev := onA.next(t, "reload"); ev.data["op"] != "delete" {
		t.Fatalf("reload on A after the delete through B: %s", ev.raw)
	}
	onB.next(t, "reload")
	if shell := mustSend(t, c, 200, "GET", a.base()+"/host/site/", nil, ""); !strings.Contains(shell.header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("A does not fall back to the shell once index.html is gone: CSP %q", shell.header.Get("Content-Security-Policy"))
	}
	onA.quiet(t, 300*time.Millisecond) // each change was announced once
}

const mpPush = `{"surfaceUpdate":{"surfaceId":"main","components":[{"id":"root","component":{"Column":{"children":{"explicitList":["t"]}}}},{"id":"t","component":{"Text":{"text":{"literalString":"pushed through A"}}}}]}}
{"beginRendering":{"surfaceId":"main","root":"root"}}`

func testHostSurfacesAcross(t *testing.T, c *http.Client, a, b *proc) {
	jsonl := map[string]string{"Content-Type": "application/jsonl"}
	onB := openHostStream(t, b.base(), "ui")
	mustSend(t, c, 200, "POST", a.base()+"/api/host/ui/a2ui", jsonl, mpPush)
	if ev := onB.next(t, "a2ui"); ev.data["surfaceUpdate"] == nil {
		t.Fatalf("first a2ui event on B: %s", ev.raw)
	}
	onB.next(t, "a2ui")
	// A new stream on B replays the surfaces pushed through A.
	late := openHostStream(t, b.base(), "ui")
	if ev := late.next(t, "a2ui"); !strings.Contains(ev.raw, "pushed through A") {
		t.Fatalf("replay on B: %s", ev.raw)
	}
	late.next(t, "a2ui")
	// A push through B may refer to what was pushed through A.
	mustSend(t, c, 200, "POST", b.base()+"/api/host/ui/a2ui", jsonl,
		`{"surfaceUpdate":{"surfaceId":"main","components":[{"id":"card","component":{"Card":{"child":"t"}}}]}}`)
	onB.next(t, "a2ui")
	late.next(t, "a2ui")
	// Present reaches B's streams; A counts them.
	waitBrowsers(t, c, a, "ui", 2)
	onB.next(t, "present")
	late.next(t, "present")
	// Pushes through both at once all land.
	var wg sync.WaitGroup
	for i := range 10 {
		p := []*proc{a, b}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := send(t, c, "POST", p.base()+"/api/host/ui/a2ui", jsonl,
				fmt.Sprintf(`{"surfaceUpdate":{"surfaceId":"main","components":[{"id":"c%d","component":{"Divider":{}}}]}}`, i))
			if r.status != 200 {
				t.Errorf("concurrent push %d via %s: %d %s", i, p.name, r.status, r.body)
			}
		}()
	}
	wg.Wait()
	replay := openHostStream(t, a.base(), "ui").next(t, "a2ui")
	for i := range 10 {
		if !strings.Contains(replay.raw, fmt.Sprintf(`"c%d"`, i)) {
			t.Errorf("component c%d of the concurrent pushes is missing: %s", i, replay.raw)
		}
	}
	mustSend(t, c, 204, "POST", b.base()+"/api/host/ui/a2ui/reset", nil, "")
	openHostStream(t, a.base(), "ui").quiet(t, 300*time.Millisecond) // the reset through B left A nothing to replay
}

func testHostTicketsAcross(t *testing.T, c *http.Client, a, b *proc) {
	mustSend(t, c, 201, "PUT", a.base()+"/api/host/tk/files/index.html", nil, `<link rel="stylesheet" href="style.css">`)
	mustSend(t, c, 201, "PUT", a.base()+"/api/host/tk/files/style.css", nil, "h1{}")
	nav := send(t, noRedirects(c), "GET", a.base()+"/host/tk/", map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, "")
	loc := nav.header.Get("Location")
	if nav.status != 303 || !strings.HasPrefix(loc, "/host/tk/~") {
		t.Fatalf("navigation on A: %d %q", nav.status, loc)
	}
	// The navigation lands on the viewer; the viewer's frame, the page and
	// its next requests go to B (a load balancer), without the token.
	base, ok := strings.CutSuffix(loc, "__canvas__/")
	if !ok {
		t.Fatalf("navigation on A did not land on the viewer: %q", loc)
	}
	var viewer string
	for _, p := range []string{loc, base, base + "style.css", base + "__canvas__/page.js"} {
		resp, err := c.Get(b.base() + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("ticket URL %s minted by A, on B: %d %s", p, resp.StatusCode, body)
		}
		if p == loc {
			viewer = string(body)
		}
	}
	// The viewer's bridge capability (minted by B here) opens the session's
	// host stream on A too, and only that session's.
	_, rest, _ := strings.Cut(viewer, `name="canvasd-cap" content="`)
	capability, _, _ := strings.Cut(rest, `"`)
	if capability == "" {
		t.Fatalf("no capability in the viewer: %.400s", viewer)
	}
	for session, want := range map[string]int{"tk": 200, "other": 403} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", a.base()+"/sse/host/"+session, nil)
		req.Header.Set("Authorization", "Bearer "+capability)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		resp.Body.Close()
		cancel()
		if resp.StatusCode != want {
			t.Errorf("B's capability for tk on A's /sse/host/%s: %d, want %d", session, resp.StatusCode, want)
		}
	}
}

func testHostInvokeAcross(t *testing.T, c *http.Client, a, b *proc) {
	onB := openHostStream(t, b.base(), "inv")
	invoke := func(session string, timeoutMS int) chan answer {
		ch := make(chan answer, 1)
		go func() {
			r, err := call(c, "POST", a.base()+"/api/invoke", map[string]any{"host_session": session, "action": "eval",
				"payload": map[string]any{"js": "1+1"}, "timeout_ms": timeoutMS})
			if err != nil {
				t.Errorf("invoke: %v", err)
			}
			ch <- r
		}()
		return ch
	}
	done := invoke("inv", 15000)
	ev := onB.next(t, "invoke")
	id, _ := ev.data["invoke_id"].(string)
	if id == "" || ev.data["action"] != "eval" {
		t.Fatalf("invoke event on B: %s", ev.raw)
	}
	if r := mustCall(t, c, 200, "POST", b.base()+"/api/invoke/"+id, map[string]any{"ok": true, "result": 2}); r.decoded["accepted"] != true {
		t.Fatalf("answer through B: %s", r.body)
	}
	r := <-done
	if r.status != 200 || r.decoded["ok"] != true || r.decoded["result"] != 2.0 {
		t.Fatalf("invoke through A answered by B's browser: %d %s", r.status, r.body)
	}
	if r := mustCall(t, c, 200, "POST", a.base()+"/api/invoke/"+id, map[string]any{"ok": true, "result": 3}); r.decoded["accepted"] != false {
		t.Fatalf("a second answer was accepted: %s", r.body)
	}
	// A browser on B that does not answer: 504 unconfirmed (it may have run).
	waitBrowsers(t, c, a, "inv", 1)
	done = invoke("inv", 1000)
	r = <-done
	if r.status != 504 || r.decoded["unconfirmed"] != true {
		t.Fatalf("unanswered invoke with a browser on B: %d %s", r.status, r.body)
	}
	// Nobody connected anywhere: 504, not unconfirmed.
	r = <-invoke("nobody-here", 1000)
	if r.status != 504 || r.decoded["unconfirmed"] == true {
		t.Fatalf("invoke with no browser anywhere: %d %s", r.status, r.body)
	}
}
