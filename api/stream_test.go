package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/hub"
)

func TestStreamLiveAndResume(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_sse")
	create := func(base int64) map[string]any {
		return e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", base, map[string]any{"name": "n"}))
	}
	s := e.stream("/sse/canvas/"+id, testAdmin, nil)
	if m := s.next(); m.Event != "caught_up" || m.json(t)["head_rev"] != 0.0 {
		t.Fatalf("first event %+v", m)
	}
	first := create(0)
	m := s.next()
	if m.Event != "canvas_commit" || m.ID != first["event_id"] || m.json(t)["rev"] != 1.0 {
		t.Fatalf("live commit %+v", m)
	}
	for i := int64(1); i < 5; i++ {
		create(i)
	}
	snapAt3 := e.must(200, "GET", "/canvas_commands/snapshot/"+id+"?at_rev=3", testAdmin, nil)
	if snapAt3["head_rev"] != 3.0 || len(snapAt3["state"].(map[string]any)["nodes"].([]any)) != 3 {
		t.Fatalf("time travel: %v", snapAt3)
	}

	resumes := map[string]map[string]string{
		"event id header":   {"Last-Event-ID": first["event_id"].(string)},
		"integer revision":  {"Last-Event-ID": "1"},
		"snapshot event id": {"Last-Event-ID": snapAt3["head_event_id"].(string)},
	}
	for name, hdr := range resumes {
		t.Run(name, func(t *testing.T) {
			from := 1
			if strings.HasPrefix(hdr["Last-Event-ID"], "3-") {
				from = 3
			}
			r := e.stream("/sse/canvas/"+id, testAdmin, hdr)
			for rev := from + 1; rev <= 5; rev++ {
				m := r.next()
				if m.Event != "canvas_commit" || m.json(t)["rev"] != float64(rev) {
					t.Fatalf("replay: want rev %d, got %+v", rev, m)
				}
			}
			if m := r.next(); m.Event != "caught_up" || m.json(t)["head_rev"] != 5.0 {
				t.Fatalf("want caught_up 5, got %+v", m)
			}
		})
	}
	q := e.stream("/sse/canvas/"+id+"?last_event_id=4", testAdmin, nil)
	if m := q.next(); m.json(t)["rev"] != 5.0 {
		t.Fatalf("query resume: %+v", m)
	}
	for name, bad := range map[string]string{"unknown": "3-deadbeef", "ahead": "99", "garbage": "zz"} {
		t.Run("reset "+name, func(t *testing.T) {
			r := e.stream("/sse/canvas/"+id, testAdmin, map[string]string{"Last-Event-ID": bad})
			if m := r.next(); m.Event != "reset" || m.json(t)["head_rev"] != 5.0 {
				t.Fatalf("want reset, got %+v", m)
			}
		})
	}
	// The first stream saw every commit in order with no duplicate.
	for rev := 2; rev <= 5; rev++ {
		if m := s.next(); m.json(t)["rev"] != float64(rev) {
			t.Fatalf("live order: want %d got %+v", rev, m)
		}
	}
}

func TestStreamGestureAndHeartbeat(t *testing.T) {
	// The throttle interval is long, so the second gesture falls within it
	// however slowly the machine serves the first.
	e := newTestEnv(t, func(c *Config) { c.Heartbeat = 50 * time.Millisecond; c.GestureInterval = time.Hour })
	id := e.canvas("c_gesture")
	s := e.stream("/sse/canvas/"+id+"?access_token="+testAdmin, "", nil)
	s.next() // caught_up
	select {
	case m := <-s.events:
		if m.Event != "comment" {
			t.Fatalf("want heartbeat, got %+v", m)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no heartbeat")
	}
	e.must(202, "POST", "/canvas_commands/"+id+"/gesture", testAdmin, map[string]any{"cursor": map[string]any{"x": 1, "y": 2}, "selection": []string{"a"}})
	m := s.next()
	if m.Event != "gesture" || m.ID != "" {
		t.Fatalf("gesture event %+v", m)
	}
	g := m.json(t)
	if g["actor_id"] != AdminActorID || fmt.Sprint(g["cursor"]) != "map[x:1 y:2]" {
		t.Fatalf("gesture data %v", g)
	}
	// A second gesture at once is throttled and never stored.
	if r := e.must(202, "POST", "/canvas_commands/"+id+"/gesture", testAdmin, map[string]any{"cursor": map[string]any{"x": 3, "y": 4}}); r["delivered"] != false {
		t.Fatalf("second gesture not throttled: %v", r)
	}
	if snap := e.snapshot(id); snap["head_rev"] != 0.0 {
		t.Fatal("gesture was stored")
	}
	for result, want := range map[string]float64{"forwarded": 1, "throttled": 1} {
		if n := counterValue(t, e.reg, "canvas_gestures_total", "result", result); n != want {
			t.Errorf("canvas_gestures_total{result=%q} = %v, want %v", result, n, want)
		}
	}
}

// TestSlowSubscriberCatchesUpNotBlocking: writers never wait for a slow
// subscriber. Commits that find its queue full are left out, and its stream
// reads them from the engine: a reader whose queue is far smaller than the
// burst still gets every commit, in order, with no reset. An ephemeral
// event that finds a queue full kicks that subscriber (a reset, never a
// silent gap).
func TestSlowSubscriberCatchesUpNotBlocking(t *testing.T) {
	e := newTestEnvHub(t, openSQLite(t), hub.Config{QueueSize: 4})
	id := e.canvas("c_slow")
	// A subscriber that never reads: it registers, then stalls.
	stalled, _ := e.api.hub.Subscribe(id, nil)
	defer e.api.hub.Unsubscribe(id, stalled)
	live := e.stream("/sse/canvas/"+id, testAdmin, nil)
	live.next()
	start := time.Now()
	for i := int64(0); i < 20; i++ {
		e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", i, nil))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("writers were slowed by a stalled subscriber: %v", d)
	}
	// Delivery is asynchronous (hub/fanout.go): wait for the signal.
	select {
	case <-stalled.Lagged():
	case <-time.After(5 * time.Second):
		t.Fatal("the stalled subscriber's full queue was not signalled")
	}
	select {
	case <-stalled.Ended():
		t.Fatal("a subscriber was kicked for commits it can read from the engine")
	default:
	}
	// A batch publishes its 50 commits at once: most find the reader's
	// queue full, the last ones included, and come from the engine.
	cmds := make([]any, 50)
	for i := range cmds {
		cmds[i] = map[string]any{"type": "create_node", "args": map[string]any{}}
	}
	e.must(200, "POST", "/canvas_commands/"+id+"/commands", testAdmin, map[string]any{"base_rev": 20, "commands": cmds})
	for rev := 1; rev <= 70; rev++ {
		if m := live.next(); m.Event != "canvas_commit" || m.json(t)["rev"] != float64(rev) {
			t.Fatalf("want commit %d, got %+v", rev, m)
		}
	}
	// Ephemeral events are not stored: one that finds the queue full kicks.
	for i := 0; i < 5; i++ {
		e.api.hub.PublishEvent(id, "test", map[string]int{"i": i})
	}
	select {
	case <-stalled.Ended():
	case <-time.After(5 * time.Second):
		t.Fatal("a stalled subscriber with a full queue was not kicked for an ephemeral event")
	}
}

// TestStreamDirectWritesThroughFullSocket: a live stream's frames are
// written to its socket by the fan-out shard itself while the client keeps
// up. A client that stops reading fills its socket: the shard's
// non-blocking write then takes what fits, the rest of that frame and the
// frames after it go through the stream's queue, and once that queue is full
// too, commits are read back from the engine. Heartbeats (every 10 ms here)
// never cut into a frame the shard began. When the client reads again it
// gets every commit once, in order, each frame whole.
func TestStreamDirectWritesThroughFullSocket(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Heartbeat = 10 * time.Millisecond })
	id := e.canvas("c_direct")
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /sse/canvas/%s HTTP/1.1\r\nHost: canvasd\r\nAuthorization: Bearer %s\r\n\r\n", id, testAdmin)
	rd := bufio.NewReaderSize(conn, 64<<10)
	for caughtUp := false; ; {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("before caught_up: %v", err)
		}
		caughtUp = caughtUp || strings.HasPrefix(line, "event: caught_up")
		if caughtUp && line == "\n" {
			break
		}
	}
	direct0, queued0 := e.api.hub.Stats().Direct, e.api.hub.Stats().Queued
	// The client reads nothing from here on. 40 batches of 50 commits of
	// over 2 KiB each (the name is in the args and the change) are far more
	// than the socket buffers hold.
	name := strings.Repeat("n", 1000)
	const batches, per = 40, 50
	for b := range batches {
		cmds := make([]any, per)
		for i := range cmds {
			cmds[i] = map[string]any{"type": "create_node", "args": map[string]any{"name": name}}
		}
		e.must(200, "POST", "/canvas_commands/"+id+"/commands", testAdmin, map[string]any{"base_rev": b * per, "commands": cmds})
	}
	time.Sleep(100 * time.Millisecond) // heartbeats come due while the socket is full
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for rev := 1; rev <= batches*per; rev++ {
		var ev, data string
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("reading commit %d: %v", rev, err)
			}
			line = strings.TrimSuffix(line, "\n")
			if line == "" {
				if ev != "" {
					break
				}
				continue
			}
			switch {
			case strings.HasPrefix(line, "event: "):
				ev = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data += line[len("data: "):]
			}
		}
		if ev != "canvas_commit" {
			t.Fatalf("want commit %d, got event %q: %.200s", rev, ev, data)
		}
		var c struct {
			Rev int `json:"rev"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil || c.Rev != rev {
			t.Fatalf("want commit %d, got rev %d (%v): %.200s", rev, c.Rev, err, data)
		}
	}
	direct, queued := e.api.hub.Stats().Direct-direct0, e.api.hub.Stats().Queued-queued0
	if direct == 0 || queued == 0 {
		t.Fatalf("frames written directly %d, queued %d: want both (the socket filled up)", direct, queued)
	}
	t.Logf("%d frames written directly, %d queued", direct, queued)
	if d, q := counterValue(t, e.reg, "canvas_sse_frames_total", "path", "direct"), counterValue(t, e.reg, "canvas_sse_frames_total", "path", "queued"); d < float64(direct) || q < float64(queued) {
		t.Errorf("canvas_sse_frames_total: direct %v, queued %v; want at least %d and %d", d, q, direct, queued)
	}
}

// TestStreamDirectWritesTogether: commits that pile up in a fan-out
// shard's queue while it writes (a batch of 200 published at once) reach a
// reading client in fewer system calls than frames (at most 3/4 as many),
// each commit once, in order: the shard writes the frames waiting with one
// writev.
func TestStreamDirectWritesTogether(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("c_together")
	s := e.stream("/sse/canvas/"+id, testAdmin, nil)
	if m := s.next(); m.Event != "caught_up" {
		t.Fatalf("first event %+v", m)
	}
	before := e.api.hub.Stats()
	const n = 200
	cmds := make([]any, n)
	for i := range cmds {
		cmds[i] = map[string]any{"type": "create_node", "args": map[string]any{"name": "n"}}
	}
	e.must(200, "POST", "/canvas_commands/"+id+"/commands", testAdmin, map[string]any{"base_rev": 0, "commands": cmds})
	for rev := 1; rev <= n; rev++ {
		if m := s.next(); m.Event != "canvas_commit" || m.json(t)["rev"] != float64(rev) {
			t.Fatalf("want commit %d, got %+v", rev, m)
		}
	}
	// The shard counts a frame once its write returned, which may be after the reader has it.
	delivered := func() int64 { st := e.api.hub.Stats(); return st.Direct + st.Queued - before.Direct - before.Queued }
	for pl := newPoller(2*time.Second, 5*time.Millisecond); delivered() < n && !pl.expired(); pl.wait() {
	}
	st := e.api.hub.Stats()
	direct, writes := st.Direct-before.Direct, st.DirectWrites-before.DirectWrites
	t.Logf("%d commits: %d written directly in %d system calls, %d queued", n, direct, writes, st.Queued-before.Queued)
	// (4 to 24 calls here, 20 to 60 with the race detector; one each without the runs.)
	if direct == 0 || writes*4 > direct*3 {
		t.Errorf("%d frames written directly in %d system calls: want them together, at most 3/4 as many calls", direct, writes)
	}
	if w := counterValue(t, e.reg, "canvas_sse_direct_writes_total", "", ""); w < float64(writes) {
		t.Errorf("canvas_sse_direct_writes_total %v, want at least %d", w, writes)
	}
}

// TestStreamDirectWritesAfterIdle: a stream idle for longer than the write
// timeout of its own flushes still gets the next commit written straight
// to its socket by the fan-out (a write deadline left behind by the
// caught_up flush once made every later direct write fail, and the frame was
// lost). It waits out the write timeout, shortened to a second (long
// enough for the caught_up flush itself on a loaded machine).
func TestStreamDirectWritesAfterIdle(t *testing.T) {
	const writeTimeout = time.Second
	e := newTestEnv(t, func(c *Config) { c.SSEWriteTimeout = writeTimeout })
	id := e.canvas("c_idle")
	s := e.stream("/sse/canvas/"+id, testAdmin, nil)
	if m := s.next(); m.Event != "caught_up" {
		t.Fatalf("first event %+v", m)
	}
	time.Sleep(writeTimeout + 500*time.Millisecond) // the stream idle past a deadline its flush would have left behind
	direct0 := e.api.hub.Stats().Direct
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_node", 0, nil))
	if m := s.next(); m.Event != "canvas_commit" || m.json(t)["rev"] != 1.0 {
		t.Fatalf("want commit 1, got %+v", m)
	}
	// The shard counts a frame once its write returned, which may be after the reader has it.
	for pl := newPoller(2*time.Second, 5*time.Millisecond); e.api.hub.Stats().Direct == direct0 && !pl.expired(); pl.wait() {
	}
	if e.api.hub.Stats().Direct == direct0 {
		t.Fatalf("the commit after %v idle was not written directly (queued %d)", writeTimeout, e.api.hub.Stats().Queued)
	}
}
