package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// cannedServer answers with the bodies openapi.yaml documents; it checks the
// requests the client makes.
func cannedServer(t *testing.T) (*httptest.Server, *sync.Map) {
	t.Helper()
	seen := &sync.Map{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /canvas_commands/snapshot/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(401)
			io.WriteString(w, `{"type":"https://canvasd.dev/problems/unauthorized","title":"Unauthorized","status":401,"detail":"missing token"}`)
			return
		}
		if r.PathValue("id") == "missing" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(404)
			io.WriteString(w, `{"type":"https://canvasd.dev/problems/not-found","title":"Not found","status":404,"detail":"canvas \"missing\" not found"}`)
			return
		}
		rev := "7"
		if a := r.URL.Query().Get("at_rev"); a != "" {
			rev = a
		}
		fmt.Fprintf(w, `{"canvas_id":"c1","head_rev":%s,"head_event_id":"%s-ab","state":{"nodes":[{"id":"shape:a","type":"geo","name":"A","parent_id":"","x":1,"y":2,"w":3,"h":4,"rotation":0,"index":"a1","props":{"color":"red"},"created_by":"u","updated_by":"u","created_rev":1,"updated_rev":2}],"edges":[]}}`, rev, rev)
	})
	mux.HandleFunc("POST /canvas_commands/{id}/command", func(w http.ResponseWriter, r *http.Request) {
		env, err := canvas.DecodeEnvelope(mustRead(r))
		if err != nil {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(400)
			io.WriteString(w, `{"type":"x/invalid","title":"Malformed","status":400,"detail":"bad","field":"base_rev"}`)
			return
		}
		seen.Store("env:"+env.Type, env)
		switch env.Type {
		case "create_node":
			fmt.Fprintf(w, `{"status":"applied","current_rev":%d,"cmd_id":%q,"event_id":"43-aa","created_ids":["shape:x"]}`, *env.BaseRev+1, env.ID)
		case "update_node":
			w.WriteHeader(409)
			io.WriteString(w, `{"status":"conflict","current_rev":45,"base_rev":42,"conflicting_ids":["shape:a"],"recovery_ops":[{"event_id":"44-bb","rev":44,"cmd_id":"h1","type":"update_node","args":{},"actor_id":"human-1","actor_type":"human","ts":"2026-01-01T00:00:00Z","changes":[{"op":"patch","kind":"node","id":"shape:a","patch":{"x":5}}]}],"suggestion":"re-read"}`)
		default:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(422)
			io.WriteString(w, `{"type":"https://canvasd.dev/problems/unprocessable","title":"Command cannot be applied","status":422,"detail":"args.id: no node","field":"args.id"}`)
		}
	})
	mux.HandleFunc("POST /canvas_commands/{id}/commands", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			BaseRev        int64             `json:"base_rev"`
			IdempotencyKey string            `json:"idempotency_key"`
			Commands       []canvas.Envelope `json:"commands"`
		}
		_ = json.Unmarshal(mustRead(r), &body)
		seen.Store("batch", body.Commands)
		seen.Store("batch-key", body.IdempotencyKey)
		fmt.Fprintf(w, `{"status":"applied","current_rev":%d,"results":[{"status":"applied","current_rev":%d,"cmd_id":"a","event_id":"x","created_ids":[]},{"status":"applied","current_rev":%d,"cmd_id":"b","event_id":"y","created_ids":[]}]}`, body.BaseRev+2, body.BaseRev+1, body.BaseRev+2)
	})
	mux.HandleFunc("GET /canvas_commands/c1/events", func(w http.ResponseWriter, r *http.Request) {
		after, _ := strconv.Atoi(r.URL.Query().Get("after_rev"))
		var cs []string
		for rev := after + 1; rev <= 5 && rev <= after+2; rev++ {
			cs = append(cs, fmt.Sprintf(`{"event_id":"%d-e","rev":%d,"cmd_id":"c","type":"create_node","args":{},"actor_id":"a","actor_type":"agent","ts":"2026-01-01T00:00:00Z","changes":[]}`, rev, rev))
		}
		fmt.Fprintf(w, `{"head_rev":5,"commits":[%s]}`, strings.Join(cs, ","))
	})
	mux.HandleFunc("POST /api/canvases", func(w http.ResponseWriter, r *http.Request) {
		var b map[string]string
		_ = json.Unmarshal(mustRead(r), &b)
		if b["canvas_id"] == "taken" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(409)
			io.WriteString(w, `{"type":"https://canvasd.dev/problems/already-exists","title":"Already exists","status":409,"detail":"canvas taken exists"}`)
			return
		}
		w.WriteHeader(201)
		fmt.Fprintf(w, `{"canvas_id":%q,"title":%q,"head_rev":0,"created_at":"2026-01-01T00:00:00Z"}`, b["canvas_id"], b["title"])
	})
	mux.HandleFunc("GET /api/canvases", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"canvases":[{"canvas_id":"c1","title":"t","head_rev":3,"created_at":"2026-01-01T00:00:00Z"}]}`)
	})
	mux.HandleFunc("POST /api/tokens", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(201)
		io.WriteString(w, `{"token":"secret","actor_id":"agent-00000000-0000-0000-0000-000000000000","actor_type":"agent","role":"editor","canvases":["c1"]}`)
	})
	mux.HandleFunc("POST /canvas_commands/{id}/gesture", func(w http.ResponseWriter, r *http.Request) {
		seen.Store("gesture", string(mustRead(r)))
		w.WriteHeader(202)
	})
	return httptest.NewServer(mux), seen
}

func mustRead(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}

func newTestClient(t *testing.T, url string) *Client {
	t.Helper()
	c, err := New(url, "tok")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientCalls(t *testing.T) {
	srv, seen := cannedServer(t)
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	ctx := context.Background()

	snap, err := c.Snapshot(ctx, "c1")
	if err != nil || snap.HeadRev != 7 || snap.HeadEventID != "7-ab" || len(snap.State.Nodes) != 1 || snap.State.Nodes[0].Props["color"] != "red" {
		t.Fatalf("snapshot = %+v, %v", snap, err)
	}
	if snap, err = c.SnapshotAt(ctx, "c1", 3); err != nil || snap.HeadRev != 3 {
		t.Fatalf("snapshot at 3 = %+v, %v", snap, err)
	}
	_, err = c.Snapshot(ctx, "missing")
	var pe *ProblemError
	if !errors.As(err, &pe) || pe.Status != 404 || !errors.Is(err, canvas.ErrNotFound) || !strings.Contains(pe.Detail, "missing") {
		t.Fatalf("missing canvas: %v", err)
	}
	if _, err := c.WithToken("").Snapshot(ctx, "c1"); !errors.Is(err, canvas.ErrUnauthorized) {
		t.Fatalf("no token: %v", err)
	}

	base := int64(42)
	rr, err := c.Command(ctx, "c1", canvas.Envelope{Type: "create_node", BaseRev: &base, Args: json.RawMessage(`{"name":"x"}`)})
	if err != nil || rr.CurrentRev != 43 || rr.Status != "applied" || len(rr.CreatedIDs) != 1 {
		t.Fatalf("command = %+v, %v", rr, err)
	}
	v, _ := seen.Load("env:create_node")
	if env := v.(canvas.Envelope); env.ID == "" || env.IdempotencyKey == "" || rr.CmdID != env.ID {
		t.Fatalf("envelope not filled: %+v", env)
	}

	_, err = c.Command(ctx, "c1", canvas.Envelope{Type: "update_node", BaseRev: &base})
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, canvas.ErrConflict) || ce.Result.CurrentRev != 45 || len(ce.Result.RecoveryOps) != 1 || ce.Result.RecoveryOps[0].ActorType != canvas.ActorHuman {
		t.Fatalf("conflict: %#v", err)
	}
	_, err = c.Command(ctx, "c1", canvas.Envelope{Type: "delete_node", BaseRev: &base})
	if !errors.As(err, &pe) || pe.Status != 422 || pe.Field() != "args.id" || !errors.Is(err, canvas.ErrUnprocessable) {
		t.Fatalf("422: %v", err)
	}
	_, err = c.Command(ctx, "c1", canvas.Envelope{Type: "create_node"})
	if !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("missing base_rev: %v", err)
	}

	br, err := c.Batch(ctx, "c1", 10, []canvas.Envelope{{Type: "create_node"}, {Type: "create_node"}})
	if err != nil || br.CurrentRev != 12 || len(br.Results) != 2 {
		t.Fatalf("batch = %+v, %v", br, err)
	}
	bv, _ := seen.Load("batch")
	for _, e := range bv.([]canvas.Envelope) {
		// One key on the batch: the server refuses commands carrying their own.
		if e.BaseRev == nil || *e.BaseRev != 10 || e.IdempotencyKey != "" || e.ID == "" {
			t.Fatalf("batch envelope %+v", e)
		}
	}
	if k, _ := seen.Load("batch-key"); k == "" {
		t.Fatal("the batch carries no idempotency key")
	}

	all, err := c.AllEvents(ctx, "c1", 0)
	if err != nil || len(all) != 5 || all[4].Rev != 5 {
		t.Fatalf("all events = %d, %v", len(all), err)
	}

	cv, err := c.CreateCanvas(ctx, "c9", "Nine")
	if err != nil || cv.ID != "c9" || cv.Title != "Nine" {
		t.Fatalf("create canvas %+v %v", cv, err)
	}
	if _, err := c.CreateCanvas(ctx, "taken", ""); !errors.Is(err, canvas.ErrAlreadyExists) {
		t.Fatalf("taken: %v", err)
	}
	list, err := c.ListCanvases(ctx)
	if err != nil || len(list) != 1 || list[0].HeadRev != 3 {
		t.Fatalf("list %+v %v", list, err)
	}
	tok, err := c.CreateToken(ctx, canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent})
	if err != nil || tok.Token != "secret" || tok.ActorType != canvas.ActorAgent {
		t.Fatalf("token %+v %v", tok, err)
	}
	if err := c.Gesture(ctx, "c1", Gesture{Cursor: Point{X: 1, Y: 2}, Selection: []string{"shape:a"}}); err != nil {
		t.Fatal(err)
	}
	if g, _ := seen.Load("gesture"); !strings.Contains(g.(string), `"cursor":{"x":1,"y":2}`) {
		t.Fatalf("gesture body %v", g)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "127.0.0.1:8080", "http://"} {
		if _, err := New(u, ""); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}

// sseServer serves commits 1..n; each connection sends at most perConn events
// then drops, so the client must resume with Last-Event-ID.
type sseServer struct {
	mu       sync.Mutex
	n        int
	perConn  int
	lastIDs  []string
	resetFor string
}

func (s *sseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	last := r.Header.Get("Last-Event-ID")
	s.mu.Lock()
	s.lastIDs = append(s.lastIDs, last)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	if last == s.resetFor && s.resetFor != "" {
		io.WriteString(w, "event: reset\ndata: {\"head_rev\":3,\"reason\":\"unknown id\"}\n\n")
		fl.Flush()
		return
	}
	after := 0
	if last != "" {
		after, _ = strconv.Atoi(strings.SplitN(last, "-", 2)[0])
	}
	io.WriteString(w, ": heartbeat\r\nretry: 10\r\n\r\n")
	sent := 0
	for rev := after + 1; rev <= s.n && sent < s.perConn; rev++ {
		// data split over two lines, CRLF and LF line ends mixed.
		fmt.Fprintf(w, "id: %d-x\r\nevent: canvas_commit\ndata: {\"rev\":%d,\ndata: \"event_id\":\"%d-x\"}\n\n", rev, rev, rev)
		sent++
	}
	if after+sent >= s.n {
		fmt.Fprintf(w, "event: caught_up\ndata: {\"head_rev\":%d}\n\n", s.n)
		fmt.Fprintf(w, "event: agent:status\ndata: {\"state\":\"done\"}\n\n")
	}
	fl.Flush()
	// an unterminated event at the end must never be dispatched
	io.WriteString(w, "event: canvas_commit\ndata: {\"rev\":999}")
}

func TestStreamResumes(t *testing.T) {
	ss := &sseServer{n: 7, perConn: 2}
	srv := httptest.NewServer(ss)
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := c.Stream(ctx, "c1", StreamOptions{LastEventID: "1", MinRetry: time.Millisecond, MaxRetry: 5 * time.Millisecond})
	defer st.Close()
	var revs []int64
	for {
		ev, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Event == EventCaughtUp {
			continue
		}
		if ev.Event == EventAgentStatus {
			if ev.ID != "" || string(ev.Data) != `{"state":"done"}` {
				t.Fatalf("agent event %+v", ev)
			}
			break
		}
		cm, err := ev.Commit()
		if err != nil {
			t.Fatal(err)
		}
		if ev.ID != cm.EventID {
			t.Fatalf("id %q vs data %q", ev.ID, cm.EventID)
		}
		revs = append(revs, cm.Rev)
	}
	if fmt.Sprint(revs) != "[2 3 4 5 6 7]" {
		t.Fatalf("revs = %v (want 2..7 once each, in order)", revs)
	}
	ss.mu.Lock()
	ids := fmt.Sprint(ss.lastIDs)
	ss.mu.Unlock()
	if ids != "[1 3-x 5-x]" {
		t.Fatalf("Last-Event-ID per connection = %s", ids)
	}
	if st.LastEventID() != "7-x" || st.Connects() != 3 {
		t.Fatalf("last id %q connects %d", st.LastEventID(), st.Connects())
	}
}

func TestStreamResetResumesFromHead(t *testing.T) {
	ss := &sseServer{n: 5, perConn: 10, resetFor: "99"}
	srv := httptest.NewServer(ss)
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := c.Stream(ctx, "c1", StreamOptions{LastEventID: "99", MinRetry: time.Millisecond})
	defer st.Close()
	ev, err := st.Recv()
	if err != nil || ev.Event != EventReset {
		t.Fatalf("first event %+v %v", ev, err)
	}
	ev, err = st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if cm, _ := ev.Commit(); cm.Rev != 4 {
		t.Fatalf("after reset got %+v; want resume after head_rev 3", ev)
	}
}

func TestStreamBounds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/sse/canvas/")) // the line's length
		io.WriteString(w, "data: "+strings.Repeat("x", n)+"\n\n")
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	// Lines over the bound, also below the scanner's initial 4 KiB buffer.
	for _, n := range []int{5000, 3000, 1100} {
		st := c.Stream(context.Background(), strconv.Itoa(n), StreamOptions{MaxLineBytes: 1024})
		if ev, err := st.Recv(); !errors.Is(err, ErrLineTooLong) {
			t.Fatalf("%d-byte line with MaxLineBytes 1024: %d bytes of data, %v; want ErrLineTooLong", n, len(ev.Data), err)
		}
		st.Close()
	}
	st := c.Stream(context.Background(), "900", StreamOptions{MaxLineBytes: 1024})
	if ev, err := st.Recv(); err != nil || len(ev.Data) != 900 {
		t.Fatalf("900-byte line with MaxLineBytes 1024: %d bytes of data, %v", len(ev.Data), err)
	}
	st.Close()
	// many short data lines adding up past the event bound
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 100; i++ {
			io.WriteString(w, "data: "+strings.Repeat("y", 100)+"\n")
		}
		io.WriteString(w, "\n")
	}))
	defer srv2.Close()
	st = newTestClient(t, srv2.URL).Stream(context.Background(), "c1", StreamOptions{MaxEventBytes: 2048})
	defer st.Close()
	if _, err := st.Recv(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("big event: %v", err)
	}
}

func TestStreamRefusedAndClosed(t *testing.T) {
	connected := make(chan struct{}, 1) // the stream handler was reached: a Recv is in progress
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sse/canvas/nope" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(403)
			io.WriteString(w, `{"type":"x/forbidden","title":"Forbidden","status":403,"detail":"no access"}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		select {
		case connected <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	st := c.Stream(context.Background(), "nope", StreamOptions{})
	if _, err := st.Recv(); !errors.Is(err, canvas.ErrForbidden) {
		t.Fatalf("403: %v", err)
	}
	st = c.Stream(context.Background(), "ok", StreamOptions{})
	done := make(chan error, 1)
	go func() { _, err := st.Recv(); done <- err }()
	<-connected
	st.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Recv after Close returned no error")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not unblock Recv")
	}
	ctx, cancel := context.WithCancel(context.Background())
	st = c.Stream(ctx, "ok", StreamOptions{})
	go func() { <-connected; cancel() }()
	if _, err := st.Recv(); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
}

// splitLines feeds chunks to one connection's splitter as bufio.Scanner
// does (each chunk as it arrives, then the end of input; after an advance
// without a line it waits for more input) and returns the lines it yields
// after each chunk.
func splitLines(chunks ...string) [][]string {
	sp := &sseSplitter{}
	var buf []byte
	var out [][]string
	drain := func(atEOF bool) []string {
		var got []string
		for len(buf) > 0 || atEOF {
			n, tok, err := sp.split(buf, atEOF)
			buf = buf[n:]
			if err != nil || tok == nil {
				break
			}
			got = append(got, string(tok))
		}
		return got
	}
	for _, c := range chunks {
		buf = append(buf, c...)
		out = append(out, drain(false))
	}
	return append(out, drain(true))
}

func TestSplitSSELine(t *testing.T) {
	for _, tc := range []struct {
		chunks []string
		want   string // the lines yielded after each chunk, then at the end of input
	}{
		{[]string{"a\r\nb\nc\rd\r\n\r\n"}, `[["a" "b" "c" "d" ""] []]`},
		// A CR that is the last byte received ends its line at once; the LF
		// that follows in the next chunk is the rest of a CRLF, not a blank line.
		{[]string{"x\r", "\ny\r", "\r", "\n"}, `[["x"] ["y"] [""] [] []]`},
		{[]string{"x\r", "y\n"}, `[["x"] ["y"] []]`},
		// A leading UTF-8 BOM is dropped, also when it arrives in pieces;
		// elsewhere it is data.
		{[]string{"\xEF\xBB\xBFa\n"}, `[["a"] []]`},
		{[]string{"\xEF", "\xBB", "\xBFa\n"}, `[[] [] ["a"] []]`},
		{[]string{"a\n\xEF\xBB\xBFb\n"}, `[["a" "\ufeffb"] []]`},
		// An unterminated last line is never a line.
		{[]string{"data: x"}, `[[] []]`},
	} {
		if got := fmt.Sprintf("%q", splitLines(tc.chunks...)); got != tc.want {
			t.Errorf("split %q = %s, want %s", tc.chunks, got, tc.want)
		}
	}
}

// recvWithin calls st.Recv and fails the test when it does not return within d.
func recvWithin(t *testing.T, st *Stream, d time.Duration) (Event, error) {
	t.Helper()
	type result struct {
		ev  Event
		err error
	}
	done := make(chan result, 1)
	go func() { ev, err := st.Recv(); done <- result{ev, err} }()
	select {
	case r := <-done:
		return r.ev, r.err
	case <-time.After(d):
		st.Close()
		<-done
		t.Fatalf("Recv did not return within %v", d)
		return Event{}, nil
	}
}

// TestStreamLoneCRAndBOM: an event whose last byte received is a CR is
// dispatched at once, not when more bytes arrive; a leading BOM is dropped.
func TestStreamLoneCRAndBOM(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.URL.Path == "/sse/canvas/bom" {
			io.WriteString(w, "\xEF\xBB\xBFdata: {\"bom\":true}\n\n")
		} else {
			io.WriteString(w, "id: 1\rdata: {\"cr\":true}\r\r")
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done() // nothing more: the event must not wait for another byte
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	for _, tc := range []struct{ canvas, data, id string }{{"cr", `{"cr":true}`, "1"}, {"bom", `{"bom":true}`, ""}} {
		st := c.Stream(context.Background(), tc.canvas, StreamOptions{})
		ev, err := recvWithin(t, st, 3*time.Second)
		st.Close()
		if err != nil || string(ev.Data) != tc.data || ev.ID != tc.id {
			t.Fatalf("%s: event %+v (data %s), %v", tc.canvas, ev, ev.Data, err)
		}
	}
}

// TestStreamCloseWakesRecv: Close ends a Recv that is waiting out a 503's
// Retry-After, and one whose server accepted the connection but never
// answers, at once.
func TestStreamCloseWakesRecv(t *testing.T) {
	refused := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(503)
		io.WriteString(w, `{"type":"https://canvasd.dev/problems/unavailable","title":"Service unavailable","status":503,"detail":"later"}`)
		select {
		case refused <- struct{}{}:
		default:
		}
	}))
	defer srv.Close()

	// A listener that accepts and then says nothing, not even headers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- conn
		}
	}()
	defer ln.Close()

	for _, tc := range []struct {
		name, url string
		// reached waits until Recv is blocked where the case means it to
		// be and returns what unblocks it without Close.
		reached func() (unblock func())
	}{
		{"backing off after 503 Retry-After: 5", srv.URL, func() func() {
			<-refused
			time.Sleep(100 * time.Millisecond) // Recv is now waiting out the 5 s
			return func() {}                   // the 5 s end
		}},
		{"connecting to a server that never answers", "http://" + ln.Addr().String(), func() func() {
			conn := <-accepted
			t.Cleanup(func() { conn.Close() })
			return func() { conn.Close() }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newTestClient(t, tc.url).Stream(context.Background(), "c1", StreamOptions{})
			done := make(chan error, 1)
			go func() { _, err := st.Recv(); done <- err }()
			unblock := tc.reached()
			start := time.Now()
			st.Close()
			select {
			case err := <-done:
				if !errors.Is(err, errStreamClosed) {
					t.Fatalf("Recv after Close: %v, want the stream closed", err)
				}
				if d := time.Since(start); d > time.Second {
					t.Fatalf("Recv returned %v after Close", d)
				}
			case <-time.After(3 * time.Second):
				t.Error("Close did not unblock Recv within 3 s")
				unblock()
				<-done
			}
		})
	}
}

// TestStreamHeartbeatOnlyDropsAreNotFailures: a connection the server
// accepted resets the count of consecutive failures, so a stream that gets
// only heartbeats before each drop (a quiet host stream) never gives up.
func TestStreamHeartbeatOnlyDropsAreNotFailures(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		conn := n
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if conn <= 5 {
			io.WriteString(w, ": heartbeat\n\n")
			return // dropped with no event
		}
		io.WriteString(w, "event: caught_up\ndata: {\"head_rev\":0}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	st := newTestClient(t, srv.URL).Stream(context.Background(), "c1",
		StreamOptions{MaxReconnects: 2, MinRetry: time.Millisecond, MaxRetry: 5 * time.Millisecond})
	defer st.Close()
	ev, err := recvWithin(t, st, 5*time.Second)
	if err != nil || ev.Event != EventCaughtUp {
		t.Fatalf("after 5 heartbeat-only connections: %+v, %v (want caught_up: each was a successful connect)", ev, err)
	}
	if st.Connects() != 6 {
		t.Fatalf("connects %d, want 6", st.Connects())
	}
}

// TestStreamDefaultsCarryBigEvents: with the default bounds, an event as
// large as the server may send (a commit of a 1 MiB command is about 2 MiB,
// an invoke up to 16 MiB) arrives whole.
func TestStreamDefaultsCarryBigEvents(t *testing.T) {
	big := strings.Repeat("x", 17<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: invoke\ndata: "+big+"\n\n")
	}))
	defer srv.Close()
	st := newTestClient(t, srv.URL).Stream(context.Background(), "c1", StreamOptions{})
	defer st.Close()
	// 17 MiB through the race detector: the bound is for a hang, not a
	// speed check. It takes ~4.5 CPU-seconds; at load 30 on 2 cores (make
	// test beside other work) that was over a minute of wall time.
	if ev, err := recvWithin(t, st, 5*time.Minute); err != nil || len(ev.Data) != len(big) {
		t.Fatalf("a %d-byte event: %d bytes, %v", len(big), len(ev.Data), err)
	}
}

// TestStreamIdleReconnects: a connection on which nothing arrives for the
// idle timeout (a half-open one: no heartbeat) is dropped, and the stream
// reconnects with Last-Event-ID instead of waiting forever.
func TestStreamIdleReconnects(t *testing.T) {
	var mu sync.Mutex
	var lastIDs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		conn := len(lastIDs)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: %d-e\nevent: canvas_commit\ndata: {\"rev\":%d}\n\n", conn, conn)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // then silent
	}))
	defer srv.Close()
	st := newTestClient(t, srv.URL).Stream(context.Background(), "c1",
		StreamOptions{IdleTimeout: 200 * time.Millisecond, MinRetry: time.Millisecond})
	defer st.Close()
	for want := 1; want <= 2; want++ {
		ev, err := recvWithin(t, st, 5*time.Second)
		if err != nil || ev.ID != fmt.Sprintf("%d-e", want) {
			t.Fatalf("event %d: %+v, %v", want, ev, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if lastIDs[1] != "1-e" {
		t.Fatalf("the reconnect after the silence sent Last-Event-ID %q, want 1-e", lastIDs[1])
	}
}

// TestStreamURLEscapesOnce: ids are escaped exactly once in request paths and
// StreamURL, under a base path of its own.
func TestStreamURLEscapesOnce(t *testing.T) {
	paths := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.RequestURI
		w.WriteHeader(204)
	}))
	defer srv.Close()
	c, err := New(srv.URL+"/base%20dir/", "to k")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"carol smith": "carol%20smith",
		"50%off":      "50%25off",
		"a/b":         "a%2Fb",
		"héctor":      "h%C3%A9ctor",
		"team:alpha":  "team:alpha",
	} {
		if got, w := c.StreamURL(id), srv.URL+"/base%20dir/sse/canvas/"+want+"?access_token=to+k"; got != w {
			t.Errorf("StreamURL(%q) = %s, want %s", id, got, w)
		}
		if err := c.RevokeToken(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if got, w := <-paths, "/base%20dir/api/tokens/"+want; got != w {
			t.Errorf("RevokeToken(%q) sent %s, want %s", id, got, w)
		}
	}
}

// TestRetryOnlyKeyedWrites: Command and Batch resend a 503 (their requests
// always carry an idempotency key) with the very same key, at most
// WithRetries times; a write without a key is sent once. The problem's
// outcome member is readable.
func TestRetryOnlyKeyedWrites(t *testing.T) {
	var mu sync.Mutex
	bodies := map[string][]string{}
	fail := map[string]int{"command": 1, "commands": 5, "canvases": 5}
	mux := http.NewServeMux()
	handle := func(name string, ok string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b := string(mustRead(r))
			mu.Lock()
			bodies[name] = append(bodies[name], b)
			n := len(bodies[name])
			mu.Unlock()
			if n <= fail[name] {
				w.Header().Set("Content-Type", "application/problem+json")
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(503)
				io.WriteString(w, `{"type":"https://canvasd.dev/problems/outcome-unknown","title":"Outcome unknown","status":503,"detail":"retry with the same idempotency_key","outcome":"unknown"}`)
				return
			}
			io.WriteString(w, ok)
		}
	}
	mux.HandleFunc("POST /canvas_commands/c1/command", handle("command", `{"status":"applied","current_rev":1,"cmd_id":"x","event_id":"1-a","created_ids":[]}`))
	mux.HandleFunc("POST /canvas_commands/c1/commands", handle("commands", `{}`))
	mux.HandleFunc("POST /api/canvases", handle("canvases", `{}`))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := New(srv.URL, "tok", WithRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := int64(0)
	if _, err := c.Command(ctx, "c1", canvas.Envelope{Type: "create_node", BaseRev: &base}); err != nil {
		t.Fatalf("command after one 503: %v", err)
	}
	_, err = c.Batch(ctx, "c1", 0, []canvas.Envelope{{Type: "create_node"}})
	var pe *ProblemError
	if !errors.As(err, &pe) || pe.Status != 503 || pe.Outcome() != "unknown" || !errors.Is(err, canvas.ErrUnavailable) {
		t.Fatalf("batch after three 503s: %v, want the 503 with outcome unknown", err)
	}
	if _, err := c.CreateCanvas(ctx, "c2", ""); !errors.Is(err, canvas.ErrUnavailable) {
		t.Fatalf("create canvas: %v", err)
	}
	key := func(b string) string {
		var m struct {
			Key string `json:"idempotency_key"`
		}
		_ = json.Unmarshal([]byte(b), &m)
		return m.Key
	}
	mu.Lock()
	defer mu.Unlock()
	for name, want := range map[string]int{"command": 2, "commands": 3, "canvases": 1} {
		got := bodies[name]
		if len(got) != want {
			t.Errorf("%s sent %d times, want %d", name, len(got), want)
			continue
		}
		for _, b := range got[1:] {
			if b != got[0] || (name != "canvases" && key(b) == "") {
				t.Errorf("%s resent %s, want the same body with its key as %s", name, b, got[0])
			}
		}
	}
}
