package hub

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// memConn is a Conn in memory: what the stream wrote, with no socket for
// direct writes (every frame goes through the stream's goroutine).
type memConn struct {
	mu     sync.Mutex
	out    bytes.Buffer
	gone   chan struct{}
	closed bool
}

func newMemConn() *memConn { return &memConn{gone: make(chan struct{})} }

func (c *memConn) Write(b []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.Write(b)
	return true
}
func (c *memConn) Flush() bool              { return true }
func (c *memConn) Done() <-chan struct{}    { return c.gone }
func (c *memConn) RawConn() syscall.RawConn { return nil }
func (c *memConn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
}

func (c *memConn) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// memLog is a canvas's log in memory.
type memLog struct{ commits []*canvas.Commit }

func (l *memLog) Head(context.Context, string) (int64, string, error) {
	return int64(len(l.commits)), "", nil
}

func (l *memLog) CommitsAfter(_ context.Context, _ string, after int64, limit int) ([]*canvas.Commit, int64, error) {
	end := min(int(after)+limit, len(l.commits))
	return l.commits[after:end], int64(len(l.commits)), nil
}

func commitAt(rev int64) *canvas.Commit {
	return &canvas.Commit{CanvasID: "c", EventID: fmt.Sprint("e", rev), Rev: rev, Type: "create_node", Args: []byte(`{}`),
		ActorID: "a", ActorType: canvas.ActorHuman, TS: time.Unix(0, 0).UTC(), Changes: []canvas.Change{}}
}

// TestFollowHeartbeatGapAndStop follows a canvas on the fake clock: an idle
// stream gets a heartbeat comment every Heartbeat, and anything written
// meanwhile puts it off; a live commit ahead of the stream is preceded by
// the commits it missed, read from the log; Stop ends the stream and
// returns once it has.
func TestFollowHeartbeatGapAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const beat = 15 * time.Second
		h := New(Config{})
		log := &memLog{}
		sub, _ := h.Subscribe("c", nil)
		conn := newMemConn()
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			h.Follow(context.Background(), "c", sub, conn, 0, log, FollowOptions{Heartbeat: beat, MaxReplay: 100})
		}()
		heartbeats := func() int { return strings.Count(conn.String(), HeartbeatComment) }

		advance(beat - time.Second)
		if n := heartbeats(); n != 0 {
			t.Fatalf("%d heartbeats before the interval", n)
		}
		advance(2 * time.Second) // t = beat+1s
		if n := heartbeats(); n != 1 {
			t.Fatalf("%d heartbeats after one idle interval, want 1", n)
		}
		h.PublishEvent("c", "gesture", map[string]int{"x": 1}) // at beat+1s: the next heartbeat is due at 2·beat+1s
		advance(beat - time.Second/2)                          // t = 2·beat+0.5s: past when it was due before the gesture
		if n := heartbeats(); n != 1 || !strings.Contains(conn.String(), "event: gesture\n") {
			t.Fatalf("%d heartbeats (want 1: the gesture put the next off), gesture sent: %v", heartbeats(), strings.Contains(conn.String(), "event: gesture"))
		}
		advance(time.Second) // t = 2·beat+1.5s
		if n := heartbeats(); n != 2 {
			t.Fatalf("%d heartbeats, want 2", n)
		}

		// Commit 3 arrives live while the stream has sent none: 1 and 2 come from the log first.
		log.commits = []*canvas.Commit{commitAt(1), commitAt(2), commitAt(3)}
		h.Publish(log.commits[2])
		synctest.Wait()
		var ids []string
		for _, line := range strings.Split(conn.String(), "\n") {
			if id, ok := strings.CutPrefix(line, "id: "); ok {
				ids = append(ids, id)
			}
		}
		if got := strings.Join(ids, ","); got != "e1,e2,e3" {
			t.Fatalf("commits sent %s, want e1,e2,e3 in order", got)
		}

		h.Stop()
		<-followed
		if !conn.closed || h.LocalSubscribers("c") != 0 {
			t.Fatalf("after Stop: connection closed %v, %d subscribers left", conn.closed, h.LocalSubscribers("c"))
		}
	})
}

// advance lets d pass on the bubble's fake clock, then waits until every
// goroutine of the bubble is blocked again (has done what came due).
func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}
