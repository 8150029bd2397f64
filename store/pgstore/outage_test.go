package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/canvasd/canvasd/canvas"
)

// tcpProxy forwards TCP connections to a PostgreSQL server. Cut closes every
// forwarded connection and refuses new ones (a crashed database or a
// dropped network); Stall keeps connections open but forwards nothing (a
// black hole); Deaf forwards what the client sends but drops the server's
// answers (a partition after the request went out: the server commits, the
// client never hears); Restore forwards again.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	mode    string // "open", "cut", "stall", "deaf"
	resumed chan struct{}
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
	held    chan struct{} // signalled when the proxy holds back or drops data
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, mode: "open", resumed: make(chan struct{}), conns: map[net.Conn]struct{}{},
		held: make(chan struct{}, 1)}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		if mode == "cut" {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *tcpProxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer p.forget(c)
	if !p.gate() {
		return
	}
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.mode == "cut" {
		p.mu.Unlock()
		up.Close()
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	defer p.forget(up)
	done := make(chan struct{}, 2)
	go func() { p.pipe(up, c, false); done <- struct{}{} }()
	go func() { p.pipe(c, up, true); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}

// gate blocks while the proxy stalls; false means the proxy was cut.
func (p *tcpProxy) gate() bool {
	for {
		p.mu.Lock()
		mode, resumed := p.mode, p.resumed
		p.mu.Unlock()
		switch mode {
		case "open", "deaf":
			return true
		case "cut":
			return false
		}
		<-resumed
	}
}

// signalHeld tells a test waiting on p.held that data is being held back.
func (p *tcpProxy) signalHeld() {
	select {
	case p.held <- struct{}{}:
	default:
	}
}

func (p *tcpProxy) pipe(dst, src net.Conn, toClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			mode := p.mode
			p.mu.Unlock()
			if mode == "stall" {
				p.signalHeld()
			}
			if !p.gate() {
				return
			}
			if toClient && mode == "deaf" {
				p.signalHeld()
				continue // the answer is lost
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *tcpProxy) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *tcpProxy) setMode(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == "stall" {
		close(p.resumed)
		p.resumed = make(chan struct{})
	}
	p.mode = mode
	if mode == "cut" {
		for c := range p.conns {
			c.Close()
		}
	}
}

func (p *tcpProxy) cut()     { p.setMode("cut") }
func (p *tcpProxy) stall()   { p.setMode("stall") }
func (p *tcpProxy) deaf()    { p.setMode("deaf") }
func (p *tcpProxy) restore() { p.setMode("open") }

func (p *tcpProxy) close() {
	p.ln.Close()
	p.setMode("cut")
	p.wg.Wait()
}

// proxied returns dbURL with its host replaced by the proxy, and the
// PostgreSQL address the proxy should forward to.
func proxied(t *testing.T, dbURL string) (target string, rewrite func(addr string) string) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dbURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("CANVASD_TEST_DATABASE_URL must be a postgres:// URL for the outage test, got %q", dbURL)
	}
	target = net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	if cfg.Host == "" || cfg.Host[0] == '/' {
		t.Fatalf("the outage test needs a TCP database address, got host %q", cfg.Host)
	}
	return target, func(addr string) string {
		v := *u
		v.Host = addr
		return v.String()
	}
}

// within fails the test when fn takes longer than limit, and returns its error.
func within(t *testing.T, what string, limit time.Duration, fn func() error) error {
	t.Helper()
	start := time.Now()
	err := fn()
	if d := time.Since(start); d > limit {
		t.Errorf("%s took %v while the database was unreachable, want ≤ %v", what, d, limit)
	}
	return err
}

// appendNext appends one commit at the stored head, as the engine does
// (re-read the head after a mismatch), and returns its revision.
func appendNext(ctx context.Context, s *Store, canvasID, actor string) (int64, error) {
	for {
		c, err := s.GetCanvas(ctx, canvasID)
		if err != nil {
			return 0, err
		}
		err = s.Append(ctx, canvasID, c.HeadRev, mkCommits(canvasID, c.HeadRev, 1, actor), nil)
		if errors.Is(err, canvas.ErrHeadMismatch) {
			continue
		}
		return c.HeadRev + 1, err
	}
}

func TestOutageFailsFastAndRecovers(t *testing.T) {
	t.Parallel()
	dbURL := testURL(t)
	schema := newSchema(t, dbURL)
	target, rewrite := proxied(t, dbURL)
	p := startProxy(t, target)
	s := openIn(t, rewrite(p.addr()), schema, WithOpTimeout(500*time.Millisecond))
	direct := openIn(t, dbURL, schema)
	ctx := context.Background()
	mustCreateCanvas(t, s, "c1")
	w := startListen(t, s)
	w.waitFor(t, "", 5*time.Second)

	acked := map[int64]string{} // rev → event id of every acknowledged commit
	ackOne := func() {
		t.Helper()
		c, err := s.GetCanvas(ctx, "c1")
		if err != nil {
			t.Fatalf("GetCanvas: %v", err)
		}
		cs := mkCommits("c1", c.HeadRev, 1, "svc")
		if err := s.Append(ctx, "c1", c.HeadRev, cs, nil); err != nil {
			t.Fatalf("Append at %d: %v", c.HeadRev, err)
		}
		acked[cs[0].Rev] = cs[0].EventID
	}
	for range 3 {
		ackOne()
	}

	checkUnavailable := func(phase string, limit time.Duration) {
		t.Helper()
		ops := map[string]func() error{
			"Append": func() error { return s.Append(ctx, "c1", 3, mkCommits("c1", 3, 1, "lost"), nil) },
			"Ping":   func() error { return s.Ping(ctx) },
			"GetCanvas": func() error {
				_, err := s.GetCanvas(ctx, "c1")
				return err
			},
			"ReadCommits": func() error {
				_, err := s.ReadCommits(ctx, "c1", 0, 10)
				return err
			},
		}
		for name, op := range ops {
			if err := within(t, phase+" "+name, limit, op); !errors.Is(err, canvas.ErrUnavailable) {
				t.Errorf("%s: %s = %v, want an error wrapping canvas.ErrUnavailable", phase, name, err)
			}
		}
	}
	recovered := func(phase string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for s.Ping(ctx) != nil {
			if time.Now().After(deadline) {
				t.Fatalf("%s: store did not recover within 10 s of the database returning", phase)
			}
			time.Sleep(50 * time.Millisecond)
		}
		ackOne()
	}

	p.cut()
	checkUnavailable("cut", 2500*time.Millisecond)
	p.restore()
	recovered("after cut")
	w.waitFor(t, "", 10*time.Second) // the listener reconnected and asks for a catch-up

	p.stall()
	checkUnavailable("stall", 2500*time.Millisecond)
	p.restore()
	recovered("after stall")

	// No acknowledged commit was lost, and the log is gap-free.
	log, err := direct.ReadCommits(ctx, "c1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	head, err := direct.GetCanvas(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(log)) != head.HeadRev {
		t.Fatalf("log has %d commits, head is %d", len(log), head.HeadRev)
	}
	byRev := map[int64]string{}
	for i, c := range log {
		if c.Rev != int64(i+1) {
			t.Fatalf("log[%d] has rev %d: not gap-free", i, c.Rev)
		}
		byRev[c.Rev] = c.EventID
	}
	for rev, ev := range acked {
		if byRev[rev] != ev {
			t.Errorf("acknowledged commit rev %d (%s) is missing or replaced by %q", rev, ev, byRev[rev])
		}
	}
	if len(acked) != 5 {
		t.Errorf("%d commits acknowledged, want 5", len(acked))
	}
}

func TestOpenUnreachableFailsFast(t *testing.T) {
	t.Parallel()
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, err = Open(context.Background(), "postgres://postgres@"+addr+"/test?sslmode=disable", WithLogger(quietLogger()))
	if !errors.Is(err, canvas.ErrUnavailable) {
		t.Fatalf("Open(unreachable) = %v, want canvas.ErrUnavailable", err)
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("Open(unreachable) took %v", d)
	}
}

func TestOpenBadURLHidesPassword(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), "postgres://u:s3cret@host:notaport/db", WithLogger(quietLogger()))
	if !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("Open(bad URL) = %v, want canvas.ErrInvalid", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open(bad URL) error leaks the password: %v", err)
	}
}
