package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/canvasd/canvasd/canvas"
)

// The tests in this file run two canvasd binaries on one PostgreSQL database
// (CANVASD_TEST_DATABASE_URL, skipped only when unset; CI sets it), each test
// in a schema of its own selected through the URL's search_path, as an
// operator would run a fleet behind a load balancer.

const mpAdmin = "cvd_multiprocess_admin"

// pgSchemaURL creates a fresh schema in the test database and returns a
// database URL whose connections use it (options=-csearch_path=<schema>).
// The schema and everything in it is dropped at cleanup.
func pgSchemaURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv("CANVASD_TEST_DATABASE_URL")
	if base == "" {
		t.Skip("CANVASD_TEST_DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	schema := fmt.Sprintf("t_mp_%x", rnd)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, base) // the URL may carry pool_max_conns
	if err != nil {
		t.Fatalf("connecting to CANVASD_TEST_DATABASE_URL: %v", err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pool, err := pgxpool.New(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer pool.Close()
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("CANVASD_TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("options", "-csearch_path="+schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// buildCanvasd builds the binary once for a test.
func buildCanvasd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "canvasd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// lockedBuffer collects a process's stderr for the failure log.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// proc is one canvasd process serving PostgreSQL on a fixed address.
type proc struct {
	t      *testing.T
	name   string
	bin    string
	addr   string
	dbURL  string
	cmd    *exec.Cmd
	stderr *lockedBuffer
	env    []string // more environment variables (KEY=value) for serve
}

func newProc(t *testing.T, name, bin, dbURL string) *proc {
	p := &proc{t: t, name: name, bin: bin, addr: freeAddr(t), dbURL: dbURL, stderr: &lockedBuffer{}}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", p.name, p.stderr.String())
		}
	})
	return p
}

func (p *proc) base() string { return "http://" + p.addr }

// start starts the process (not waiting for it to be ready).
func (p *proc) start() {
	p.t.Helper()
	p.cmd = exec.Command(p.bin, "serve", "--addr", p.addr, "--database-url", p.dbURL,
		"--admin-token", mpAdmin, "--log-level", "warn", "--data-dir", p.t.TempDir())
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.name, err)
	}
}

// kill sends SIGKILL and reaps the process; killing a stopped process is a no-op.
func (p *proc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = p.cmd.Process.Wait()
	p.cmd = nil
}

// mpClient keeps connections alive across the writer goroutines.
func mpClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// answer is one HTTP response.
type answer struct {
	status  int
	header  http.Header
	body    []byte
	decoded map[string]any
}

func call(c *http.Client, method, url string, body any) (answer, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+mpAdmin)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: b}
	_ = json.Unmarshal(b, &a.decoded)
	return a, nil
}

func mustCall(t *testing.T, c *http.Client, status int, method, url string, body any) answer {
	t.Helper()
	a, err := call(c, method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if a.status != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, url, a.status, status, a.body)
	}
	return a
}

// sseSub is one SSE subscriber of a canvas on one process. It records every
// canvas_commit (rev and event id, in arrival order) and every other event.
type sseSub struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	revs     []int64
	ids      []string
	others   []string // event names other than canvas_commit
	lastID   string
	caughtUp chan struct{}
	err      error
}

// subscribe opens GET /sse/canvas/{id} (with Last-Event-ID when lastID is
// set) and waits for caught_up.
func subscribe(t *testing.T, base, canvasID, lastID string) *sseSub {
	t.Helper()
	s := openSSE(t, base, canvasID, lastID)
	select {
	case <-s.caughtUp:
	case <-s.done:
		t.Fatalf("stream on %s ended before caught_up: %v (events %v)", base, s.err, s.others)
	case <-time.After(10 * time.Second):
		t.Fatalf("no caught_up from %s within 10s", base)
	}
	return s
}

// openSSE opens GET /sse/canvas/{id} without waiting for caught_up.
func openSSE(t *testing.T, base, canvasID, lastID string) *sseSub {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &sseSub{cancel: cancel, done: make(chan struct{}), caughtUp: make(chan struct{})}
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/sse/canvas/"+canvasID, nil)
	req.Header.Set("Authorization", "Bearer "+mpAdmin)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("subscribe %s: %v", base, err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("subscribe %s: status %d: %s", base, resp.StatusCode, b)
	}
	go s.read(resp.Body)
	t.Cleanup(s.stop)
	return s
}

func (s *sseSub) read(body io.ReadCloser) {
	defer close(s.done)
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var event, id, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			switch event {
			case "":
			case "canvas_commit":
				var c canvas.Commit
				if err := json.Unmarshal([]byte(data), &c); err != nil {
					s.mu.Lock()
					s.err = fmt.Errorf("commit data is not JSON: %v: %q", err, data)
					s.mu.Unlock()
					return
				}
				s.mu.Lock()
				s.revs = append(s.revs, c.Rev)
				s.ids = append(s.ids, id)
				s.lastID = id
				s.mu.Unlock()
			case "caught_up":
				s.mu.Lock()
				s.others = append(s.others, event)
				s.mu.Unlock()
				select {
				case <-s.caughtUp:
				default:
					close(s.caughtUp)
				}
			default:
				s.mu.Lock()
				s.others = append(s.others, event+" "+data)
				s.mu.Unlock()
			}
			event, id, data = "", "", ""
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "data: "):
			if data != "" {
				data += "\n"
			}
			data += line[6:]
		}
	}
	s.mu.Lock()
	s.err = sc.Err()
	s.mu.Unlock()
}

func (s *sseSub) stop() {
	s.cancel()
	<-s.done
}

// snapshot returns the received commits so far.
func (s *sseSub) snapshot() (revs []int64, ids []string, others []string, last string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.revs...), append([]string(nil), s.ids...), append([]string(nil), s.others...), s.lastID
}

// waitRev waits until the subscriber received a commit with rev ≥ n or its
// stream ended.
func (s *sseSub) waitRev(n int64, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		got := len(s.revs) > 0 && s.revs[len(s.revs)-1] >= n
		s.mu.Unlock()
		if got {
			return
		}
		select {
		case <-s.done:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// checkSequence asserts revs is exactly from, from+1, ..., to.
func checkSequence(t *testing.T, what string, revs []int64, from, to int64) {
	t.Helper()
	if int64(len(revs)) != to-from+1 {
		t.Errorf("%s: %d commits, want %d (revs %d..%d)", what, len(revs), to-from+1, from, to)
	}
	want := from
	for i, r := range revs {
		if r != want {
			t.Errorf("%s: commit %d is rev %d, want %d (a gap, a duplicate or out of order)", what, i, r, want)
			return
		}
		want++
	}
}

// waitHead polls the snapshot of a canvas on a process until its head is at least n.
func waitHead(t *testing.T, c *http.Client, base, canvasID string, n int64) answer {
	t.Helper()
	for pl := newPoller(10*time.Second, 20*time.Millisecond); ; pl.wait() {
		a := mustCall(t, c, 200, "GET", base+"/canvas_commands/snapshot/"+canvasID, nil)
		if int64(a.decoded["head_rev"].(float64)) >= n || pl.expired() {
			return a
		}
	}
}

// readLog pages through GET /canvas_commands/{id}/events on one process.
func readLog(t *testing.T, c *http.Client, base, canvasID string) []canvas.Commit {
	t.Helper()
	var out []canvas.Commit
	for after := int64(0); ; {
		a := mustCall(t, c, 200, "GET", fmt.Sprintf("%s/canvas_commands/%s/events?after_rev=%d&limit=1000", base, canvasID, after), nil)
		var page struct{ Commits []canvas.Commit }
		if err := json.Unmarshal(a.body, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Commits) == 0 {
			return out
		}
		out = append(out, page.Commits...)
		after = page.Commits[len(page.Commits)-1].Rev
	}
}

// TestMultiProcessPostgres starts two canvasd processes on one PostgreSQL
// schema and checks what docs/architecture.md ("Several processes") promises: gap-free revisions
// while both write one canvas, conflicts decided against the true head,
// equal snapshots, complete ordered SSE streams on both processes,
// idempotency across processes, and a kill -9 whose SSE resume has no gap.
func TestMultiProcessPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dbURL := pgSchemaURL(t)
	bin := buildCanvasd(t)
	a, b := newProc(t, "A", bin, dbURL), newProc(t, "B", bin, dbURL)
	a.start() // started together: the migrations' advisory lock serializes them
	b.start()
	waitReady(t, a.base())
	waitReady(t, b.base())
	c := mpClient()

	t.Run("ConcurrentWrites", func(t *testing.T) { testConcurrentWrites(t, c, a, b) })
	t.Run("IdempotencyAcrossProcesses", func(t *testing.T) { testIdempotencyAcross(t, c, a, b) })
	t.Run("BaseRevFromOtherProcess", func(t *testing.T) { testBaseRevFromOther(t, c, a, b) })
	t.Run("LastEventIDFromOtherProcess", func(t *testing.T) { testLastEventIDFromOther(t, c, a, b) })
	t.Run("KillAndResume", func(t *testing.T) { testKillAndResume(t, c, a, b) })
}

func testConcurrentWrites(t *testing.T, c *http.Client, a, b *proc) {
	const cv = "shared"
	mustCall(t, c, 201, "POST", a.base()+"/api/canvases", map[string]any{"canvas_id": cv})
	subA := subscribe(t, a.base(), cv, "")
	subB := subscribe(t, b.base(), cv, "") // B loads the canvas A created
	// rev 1: the node the conflicting updates fight over.
	mustCall(t, c, 200, "POST", b.base()+"/canvas_commands/"+cv+"/command",
		map[string]any{"type": "create_node", "base_rev": 0, "args": map[string]any{"id": "hot", "name": "hot"}})

	const perProc, perWriter = 4, 25
	type ack struct {
		id  string
		rev int64
	}
	var mu sync.Mutex
	var acks []ack
	var hotApplied, hotConflicts atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 2*perProc)
	for _, p := range []*proc{a, b} {
		for w := 0; w < perProc; w++ {
			wg.Add(1)
			go func(p *proc, w int) {
				defer wg.Done()
				url := p.base() + "/canvas_commands/" + cv + "/command"
				for i := 0; i < perWriter; i++ {
					if i == perWriter/2 {
						// Every writer updates "hot" from base_rev 1: only the
						// first to commit may apply; the rest see it changed.
						r, err := call(c, "POST", url, map[string]any{"type": "update_node", "base_rev": 1,
							"args": map[string]any{"id": "hot", "name": fmt.Sprintf("%s-%d", p.name, w)}})
						switch {
						case err != nil:
							errs <- err
							return
						case r.status == 200:
							hotApplied.Add(1)
						case r.status == 409 && fmt.Sprint(r.decoded["conflicting_ids"]) == "[hot]":
							hotConflicts.Add(1)
						default:
							errs <- fmt.Errorf("update hot via %s: %d %s", p.name, r.status, r.body)
							return
						}
					}
					id := fmt.Sprintf("%s-w%d-%d", p.name, w, i)
					r, err := call(c, "POST", url, map[string]any{"type": "create_node", "base_rev": 0,
						"args": map[string]any{"id": id, "name": id}})
					if err != nil {
						errs <- err
						return
					}
					if r.status != 200 || r.decoded["rebased"] != true {
						errs <- fmt.Errorf("create %s via %s: %d %s", id, p.name, r.status, r.body)
						return
					}
					mu.Lock()
					acks = append(acks, ack{id, int64(r.decoded["current_rev"].(float64))})
					mu.Unlock()
				}
			}(p, w)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if hotApplied.Load() != 1 || hotConflicts.Load() != 2*perProc-1 {
		t.Errorf("updates of hot from base_rev 1: %d applied, %d conflicts; want 1 and %d",
			hotApplied.Load(), hotConflicts.Load(), 2*perProc-1)
	}
	n := int64(1 + 2*perProc*perWriter + 1)

	// Both processes converge on the same head, log and state.
	snapA := waitHead(t, c, a.base(), cv, n)
	snapB := waitHead(t, c, b.base(), cv, n)
	for _, s := range []answer{snapA, snapB} {
		if h := int64(s.decoded["head_rev"].(float64)); h != n {
			t.Fatalf("head_rev %d, want %d", h, n)
		}
	}
	var sa, sb any
	_ = json.Unmarshal(snapA.body, &sa)
	_ = json.Unmarshal(snapB.body, &sb)
	if !reflect.DeepEqual(sa, sb) {
		t.Errorf("snapshots differ between the processes:\nA %s\nB %s", snapA.body, snapB.body)
	}
	created := map[string]int64{}
	for _, nd := range snapA.decoded["state"].(map[string]any)["nodes"].([]any) {
		m := nd.(map[string]any)
		created[m["id"].(string)] = int64(m["created_rev"].(float64))
	}
	for _, k := range acks {
		if created[k.id] != k.rev {
			t.Errorf("node %s acknowledged at rev %d, snapshot says %d", k.id, k.rev, created[k.id])
		}
	}
	logA, logB := readLog(t, c, a.base(), cv), readLog(t, c, b.base(), cv)
	var revsA []int64
	for i := range logA {
		revsA = append(revsA, logA[i].Rev)
	}
	checkSequence(t, "events via A", revsA, 1, n)
	if len(logA) != len(logB) {
		t.Fatalf("events: %d via A, %d via B", len(logA), len(logB))
	}
	eventIDs := make([]string, len(logA))
	for i := range logA {
		if logA[i].EventID != logB[i].EventID || logA[i].CmdID != logB[i].CmdID {
			t.Fatalf("rev %d differs between the processes: %s/%s vs %s/%s", logA[i].Rev,
				logA[i].EventID, logA[i].CmdID, logB[i].EventID, logB[i].CmdID)
		}
		eventIDs[i] = logA[i].EventID
	}

	// Each process's subscriber saw every commit, including those written
	// through the other process, in order, once, with the log's event ids.
	for name, s := range map[string]*sseSub{"A": subA, "B": subB} {
		s.waitRev(n, 10*time.Second)
		revs, ids, others, _ := s.snapshot()
		checkSequence(t, "SSE on "+name, revs, 1, n)
		if !reflect.DeepEqual(ids, eventIDs) && len(ids) == len(eventIDs) {
			t.Errorf("SSE on %s: event ids differ from the log", name)
		}
		if len(others) != 1 {
			t.Errorf("SSE on %s: unexpected events %q", name, others)
		}
	}
	t.Logf("%d commits through 2 processes x %d writers; 1 of %d conflicting updates applied", n, perProc, 2*perProc)
}

func testIdempotencyAcross(t *testing.T, c *http.Client, a, b *proc) {
	const cv = "idem"
	mustCall(t, c, 201, "POST", a.base()+"/api/canvases", map[string]any{"canvas_id": cv})
	mustCall(t, c, 200, "POST", a.base()+"/canvas_commands/"+cv+"/command",
		map[string]any{"type": "create_node", "base_rev": 0, "args": map[string]any{"id": "target", "name": "t"}})
	waitHead(t, c, b.base(), cv, 1)

	head := int64(1)
	kinds := []string{"create-minted", "create-explicit", "update"}
	const rounds = 12
	for i := 0; i < rounds; i++ {
		kind := kinds[i%len(kinds)]
		var env map[string]any
		switch kind {
		case "create-minted":
			env = map[string]any{"type": "create_node", "base_rev": head, "args": map[string]any{"name": fmt.Sprint("m", i)}}
		case "create-explicit":
			env = map[string]any{"type": "create_node", "base_rev": head, "args": map[string]any{"id": fmt.Sprint("x", i), "name": "x"}}
		case "update":
			env = map[string]any{"type": "update_node", "base_rev": head, "args": map[string]any{"id": "target", "name": fmt.Sprint("u", i)}}
		}
		env["idempotency_key"] = fmt.Sprintf("idem-%d", i)
		var answers [2]answer
		var errs [2]error
		var wg sync.WaitGroup
		start := make(chan struct{})
		for j, p := range []*proc{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				answers[j], errs[j] = call(c, "POST", p.base()+"/canvas_commands/"+cv+"/command", env)
			}()
		}
		close(start)
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: %v %v", i, errs[0], errs[1])
		}
		replayed := 0
		for _, r := range answers {
			if r.header.Get("Idempotent-Replayed") == "true" {
				replayed++
			}
		}
		if answers[0].status != 200 || answers[1].status != 200 || !bytes.Equal(answers[0].body, answers[1].body) || replayed != 1 {
			t.Errorf("round %d (%s): the same key sent to both processes answered\nA %d replayed=%q %s\nB %d replayed=%q %s",
				i, kind, answers[0].status, answers[0].header.Get("Idempotent-Replayed"), answers[0].body,
				answers[1].status, answers[1].header.Get("Idempotent-Replayed"), answers[1].body)
		}
		committed := answers[0].body
		if answers[0].status != 200 {
			committed = answers[1].body
		}
		head++
		// Exactly one commit per key, seen by both processes.
		for _, p := range []*proc{a, b} {
			s := waitHead(t, c, p.base(), cv, head)
			if h := int64(s.decoded["head_rev"].(float64)); h != head {
				t.Fatalf("round %d: head %d via %s, want %d (one commit per key)", i, h, p.name, head)
			}
		}
		// A later retry through either process is a replay of the same body.
		for _, p := range []*proc{a, b} {
			r, err := call(c, "POST", p.base()+"/canvas_commands/"+cv+"/command", env)
			if err != nil {
				t.Fatal(err)
			}
			if r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.body, committed) {
				t.Errorf("round %d (%s): later retry via %s: %d replayed=%q %s", i, kind, p.name, r.status, r.header.Get("Idempotent-Replayed"), r.body)
			}
		}
	}
	if log := readLog(t, c, a.base(), cv); int64(len(log)) != head {
		t.Errorf("log holds %d commits, want %d", len(log), head)
	}
}

// testBaseRevFromOtherProcess is a client behind a load balancer: it writes
// through A and sends its next command, with the current_rev A answered as
// base_rev, through B. B must decide it against the true head (the
// database's), not answer from an in-memory copy that has not yet heard of
// A's commit.
func testBaseRevFromOther(t *testing.T, c *http.Client, a, b *proc) {
	const cv = "lb"
	mustCall(t, c, 201, "POST", a.base()+"/api/canvases", map[string]any{"canvas_id": cv})
	r := mustCall(t, c, 200, "POST", a.base()+"/canvas_commands/"+cv+"/command",
		map[string]any{"type": "create_node", "base_rev": 0, "args": map[string]any{"id": "n", "name": "n"}})
	head := int64(r.decoded["current_rev"].(float64))
	waitHead(t, c, b.base(), cv, head)
	const rounds = 20
	bad := 0
	for i := 0; i < rounds; i++ {
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		r := mustCall(t, c, 200, "POST", first.base()+"/canvas_commands/"+cv+"/command",
			map[string]any{"type": "update_node", "base_rev": head, "args": map[string]any{"id": "n", "name": fmt.Sprint("first", i)}})
		head = int64(r.decoded["current_rev"].(float64))
		r2, err := call(c, "POST", second.base()+"/canvas_commands/"+cv+"/command",
			map[string]any{"type": "update_node", "base_rev": head, "args": map[string]any{"id": "n", "name": fmt.Sprint("second", i)}})
		if err != nil {
			t.Fatal(err)
		}
		if r2.status != 200 {
			if bad == 0 {
				t.Errorf("round %d: base_rev %d (just answered by %s) sent to %s: %d %s", i, head, first.name, second.name, r2.status, r2.body)
			}
			bad++
			waitHead(t, c, second.base(), cv, head)
			continue
		}
		head = int64(r2.decoded["current_rev"].(float64))
	}
	if bad > 0 {
		t.Errorf("%d of %d commands whose base_rev another process had just answered were refused", bad, rounds)
	}
}

// testLastEventIDFromOther is an SSE client behind a load balancer that
// reconnects to B with an event id it just got from A: the id names a
// committed revision, so B must resume from it (caught_up), not reset.
func testLastEventIDFromOther(t *testing.T, c *http.Client, a, b *proc) {
	const cv = "lb-sse"
	mustCall(t, c, 201, "POST", a.base()+"/api/canvases", map[string]any{"canvas_id": cv})
	waitHead(t, c, b.base(), cv, 0) // B has the canvas live
	const rounds = 10
	resets := 0
	for i := 0; i < rounds; i++ {
		r := mustCall(t, c, 200, "POST", a.base()+"/canvas_commands/"+cv+"/command",
			map[string]any{"type": "create_node", "base_rev": 0, "args": map[string]any{"name": "n"}})
		s := openSSE(t, b.base(), cv, r.decoded["event_id"].(string))
		select {
		case <-s.caughtUp:
		case <-s.done:
			_, _, others, _ := s.snapshot()
			if resets == 0 {
				t.Errorf("round %d: Last-Event-ID %v (committed through A) on B: %q", i, r.decoded["event_id"], others)
			}
			resets++
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: no caught_up or reset from B within 10s", i)
		}
		s.stop()
	}
	if resets > 0 {
		t.Errorf("%d of %d resumes with an event id just committed through the other process were reset", resets, rounds)
	}
}

func testKillAndResume(t *testing.T, c *http.Client, a, b *proc) {
	const cv = "restart"
	mustCall(t, c, 201, "POST", a.base()+"/api/canvases", map[string]any{"canvas_id": cv})
	subA := subscribe(t, a.base(), cv, "")
	subB := subscribe(t, b.base(), cv, "")

	var acked sync.Map // node id → rev
	var count atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range []*proc{a, b} {
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func(p *proc, w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					id := fmt.Sprintf("%s-w%d-%d", p.name, w, i)
					r, err := call(c, "POST", p.base()+"/canvas_commands/"+cv+"/command",
						map[string]any{"type": "create_node", "base_rev": 0, "args": map[string]any{"id": id, "name": id}})
					if err != nil {
						time.Sleep(20 * time.Millisecond) // B is down: keep trying until it is back
						continue
					}
					if r.status == 200 {
						acked.Store(id, int64(r.decoded["current_rev"].(float64)))
						count.Add(1)
					}
				}
			}(p, w)
		}
	}
	waitCount := func(n int64) {
		for pl := newPoller(15*time.Second, 5*time.Millisecond); count.Load() < n && !pl.expired(); pl.wait() {
		}
		if count.Load() < n {
			t.Errorf("only %d commands acknowledged, waited for %d", count.Load(), n)
		}
	}
	waitCount(60)
	b.kill()
	killedAt := count.Load()
	<-subB.done // B's stream ended with the process
	before, _, _, lastID := subB.snapshot()
	waitCount(killedAt + 30) // A keeps committing while B is down
	b.start()
	waitReady(t, b.base())
	resumed := subscribe(t, b.base(), cv, lastID)
	waitCount(count.Load() + 60) // both write again
	close(stop)
	wg.Wait()

	var last int64
	acked.Range(func(_, v any) bool { last = max(last, v.(int64)); return true })
	snapA := waitHead(t, c, a.base(), cv, last)
	n := int64(snapA.decoded["head_rev"].(float64))
	snapB := waitHead(t, c, b.base(), cv, n)
	if !bytes.Equal(snapA.body, snapB.body) {
		var sa, sb any
		_ = json.Unmarshal(snapA.body, &sa)
		_ = json.Unmarshal(snapB.body, &sb)
		if !reflect.DeepEqual(sa, sb) {
			t.Errorf("snapshots differ after the restart (heads %v, %v)", snapA.decoded["head_rev"], snapB.decoded["head_rev"])
		}
	}
	nodes := map[string]int64{}
	for _, nd := range snapA.decoded["state"].(map[string]any)["nodes"].([]any) {
		m := nd.(map[string]any)
		nodes[m["id"].(string)] = int64(m["created_rev"].(float64))
	}
	if int64(len(nodes)) != n {
		t.Errorf("head %d but %d nodes", n, len(nodes))
	}
	acked.Range(func(k, v any) bool {
		if nodes[k.(string)] != v.(int64) {
			t.Errorf("acknowledged %s at rev %d is missing (snapshot: %d)", k, v, nodes[k.(string)])
		}
		return true
	})

	subA.waitRev(n, 10*time.Second)
	resumed.waitRev(n, 10*time.Second)
	revsA, _, othersA, _ := subA.snapshot()
	checkSequence(t, "SSE on A across B's restart", revsA, 1, n)
	if len(othersA) != 1 {
		t.Errorf("SSE on A: unexpected events %q", othersA)
	}
	after, _, othersB, _ := resumed.snapshot()
	if len(before) == 0 {
		t.Fatalf("B's subscriber got nothing before the kill")
	}
	if len(othersB) != 1 {
		t.Errorf("resumed SSE on B (Last-Event-ID %s): unexpected events %q", lastID, othersB)
	}
	checkSequence(t, "SSE on B before kill -9 + resumed after restart", append(before, after...), 1, n)
	t.Logf("B killed after %d acknowledged commands; B's stream had %d commits, resumed from %s with %d more; head %d",
		killedAt, len(before), lastID, len(after), n)
}
