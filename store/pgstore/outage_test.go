package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/internal/testwait"
	"github.com/canvasd/canvasd/store/pgstore/faultproxy"
)

// startProxy starts a faultproxy.Proxy to target, closed at cleanup.
func startProxy(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
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
	s := openIn(t, rewrite(p.Addr()), schema, WithOpTimeout(500*time.Millisecond))
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
		testwait.Until(t, 10*time.Second, phase+": store recovered after the database returned", func() bool { return s.Ping(ctx) == nil })
		ackOne()
	}

	p.Cut()
	checkUnavailable("cut", 2500*time.Millisecond)
	p.Restore()
	recovered("after cut")
	w.waitFor(t, "", 10*time.Second) // the listener reconnected and asks for a catch-up

	p.Stall()
	checkUnavailable("stall", 2500*time.Millisecond)
	p.Restore()
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
