package host

import (
	"sync"
	"testing"
)

// testStreams stands for the pub/sub system in the host's tests (package
// hub tests the streams themselves): each subscriber gets every publish of
// its session, as one entry, and Remote browsers elsewhere count too.
type testStreams struct {
	mu     sync.Mutex
	subs   map[string]map[*testSub]struct{}
	Remote int
}

// testSub is one subscriber of a testStreams session.
type testSub struct {
	C       <-chan []Event
	c       chan []Event
	s       *testStreams
	session string
	seen    int64 // the snapshot's state version (subscribe)
}

func (s *testStreams) PublishSession(session string, evs ...Event) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub := range s.subs[session] {
		sub.c <- evs
	}
	return len(s.subs[session]) + s.Remote
}

// Close takes the subscriber out of its session.
func (sub *testSub) Close() {
	sub.s.mu.Lock()
	defer sub.s.mu.Unlock()
	delete(sub.s.subs[sub.session], sub)
}

// streamsOf returns the testStreams openHost gave h.
func streamsOf(h *Host) *testStreams { return (*h.streams.Load()).(*testStreams) }

// listen registers a subscriber of session on h's streams.
func listen(h *Host, session string) *testSub {
	s := streamsOf(h)
	c := make(chan []Event, 1024)
	sub := &testSub{C: c, c: c, s: s, session: session}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs == nil {
		s.subs = map[string]map[*testSub]struct{}{}
	}
	if s.subs[session] == nil {
		s.subs[session] = map[*testSub]struct{}{}
	}
	s.subs[session][sub] = struct{}{}
	return sub
}

// subscribe registers a browser of session and reads its snapshot, in the
// order the stream handler does.
func subscribe(h *Host, session string) (*testSub, []Event, error) {
	sub := listen(h, session)
	v, evs, err := h.Snapshot(ctx, session)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	sub.seen = v
	return sub, evs, nil
}

func TestSnapshotValidatesTheSession(t *testing.T) {
	h := openHost(t, Config{})
	if _, _, err := h.Snapshot(ctx, "../x"); err == nil {
		t.Fatal("a snapshot of an invalid session name")
	}
}
