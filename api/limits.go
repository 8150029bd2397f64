package api

import (
	"fmt"
	"hash/maphash"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Two limits keep one client from exhausting the server: a cap on the
// streams a token holds open at once (streamSlots), and a throttle on failed
// token attempts per client address (authThrottle). Both answer 429 problem
// documents (tooManyError) and both count only this process.

// tooManyError is a 429 Too Many Requests problem: slug is its problem type,
// detail says the limit and what to do, retryAfter becomes the Retry-After
// header (whole seconds, at least 1).
type tooManyError struct {
	slug, detail string
	retryAfter   time.Duration
	extra        map[string]any
}

func (e *tooManyError) Error() string                { return e.detail }
func (e *tooManyError) ProblemStatus() int           { return http.StatusTooManyRequests }
func (e *tooManyError) ProblemSlug() string          { return e.slug }
func (e *tooManyError) ProblemExtra() map[string]any { return e.extra }

// RetryAfter is how long the client should wait before trying again.
func (e *tooManyError) RetryAfter() time.Duration { return e.retryAfter }

// retryAfterSeconds renders d as a Retry-After value: whole seconds, rounded
// up, at least 1.
func retryAfterSeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(s, 1), 10)
}

// streamRetryAfter is the Retry-After of a stream refused for the cap: a
// slot frees only when another stream of the token ends, which the server
// cannot foresee, so this only keeps clients from retrying in a tight loop.
const streamRetryAfter = 5 * time.Second

// streamSlots caps the streams (GET /sse/canvas/..., GET /sse/host/...) one
// token (its actor id) holds open at once in this process, and ends them
// when the token expires or is revoked here. The zero limit means no cap.
// Its methods are safe for concurrent use.
type streamSlots struct {
	limit int
	mu    sync.Mutex
	open  map[string]map[*streamSlot]struct{} // by actor id; an actor without open streams has no entry
}

// streamSlot is one open stream's place: end ends the stream with a reason
// (the client is told, then the connection closes).
type streamSlot struct {
	actor  string
	end    func(reason string)
	expiry *time.Timer // ends the stream when its token expires; nil: never
}

func newStreamSlots(limit int) *streamSlots {
	return &streamSlots{limit: limit, open: map[string]map[*streamSlot]struct{}{}}
}

// Why the server ends a token's streams.
const (
	tokenExpiredReason = "the token expired; an admin mints a new one"
	tokenRevokedReason = "the token was revoked"
)

// acquire takes a slot for one stream of actor, whose token expires at
// expires (zero: never; the stream is ended then), or returns a 429 problem
// when actor already holds limit streams. Every successful acquire must be
// followed by exactly one release, whatever ends the stream.
func (s *streamSlots) acquire(actor string, expires time.Time, end func(reason string)) (*streamSlot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.open[actor])
	if s.limit > 0 && n >= s.limit {
		return nil, &tooManyError{slug: "too-many-streams", retryAfter: streamRetryAfter,
			detail: fmt.Sprintf("this token already has %d streams open on this server, the most it may hold at once "+
				"(--max-streams-per-token); close streams you no longer read (each browser tab holds one or two), then retry", n),
			extra: map[string]any{"limit": s.limit}}
	}
	slot := &streamSlot{actor: actor, end: end}
	if !expires.IsZero() {
		slot.expiry = time.AfterFunc(time.Until(expires), func() { end(tokenExpiredReason) })
	}
	if s.open[actor] == nil {
		s.open[actor] = map[*streamSlot]struct{}{}
	}
	s.open[actor][slot] = struct{}{}
	return slot, nil
}

// release frees a slot acquire took.
func (s *streamSlots) release(slot *streamSlot) {
	if slot.expiry != nil {
		slot.expiry.Stop()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open[slot.actor], slot)
	if len(s.open[slot.actor]) == 0 {
		delete(s.open, slot.actor)
	}
}

// endAll ends every open stream of actor with reason.
func (s *streamSlots) endAll(actor, reason string) {
	s.mu.Lock()
	slots := make([]*streamSlot, 0, len(s.open[actor]))
	for slot := range s.open[actor] {
		slots = append(slots, slot)
	}
	s.mu.Unlock()
	for _, slot := range slots {
		slot.end(reason)
	}
}

// count returns how many streams actor holds open.
func (s *streamSlots) count(actor string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open[actor])
}

// authFailureWindow is the window of the failed-token throttle: an address
// that made limit failed attempts within it is refused until it ends.
const authFailureWindow = time.Minute

// maxThrottledAddrs bounds the addresses the throttle remembers (a few
// dozen bytes each); when a shard is full, expired entries are dropped and,
// if none are, an arbitrary one.
const maxThrottledAddrs = 16384

const throttleShards = 16

// authThrottle counts failed token attempts per client address (the
// connection's remote IP; IPv6 addresses by their /64, which one host
// usually has whole). After limit failures within authFailureWindow of the
// first one, requests from the address that carry a token are refused with
// 429 until that window ends, without the token being checked, whatever the
// token (a good one included). Requests without a token, and successful
// ones, are never counted. Loopback addresses are never throttled: the
// in-process agent runner calls its own server over loopback, and behind a
// reverse proxy on the same machine every client would share one address. A
// zero limit turns it off. Its methods are safe for concurrent use.
//
// A successful request pays one atomic load while no address has failures on
// record, otherwise one uncontended lock of one of throttleShards shards.
type authThrottle struct {
	limit   int
	window  time.Duration
	seed    maphash.Seed
	entries atomic.Int64 // addresses on record in every shard
	shards  [throttleShards]throttleShard
}

type throttleShard struct {
	mu sync.Mutex
	m  map[netip.Addr]failures
}

// failures is an address's record: n failed attempts since the window
// started at since.
type failures struct {
	since time.Time
	n     int
}

func newAuthThrottle(limit int, window time.Duration) *authThrottle {
	t := &authThrottle{limit: limit, window: window, seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].m = map[netip.Addr]failures{}
	}
	return t
}

// clientAddr is the throttle's key of r: its remote IP (not X-Forwarded-For:
// canvasd has no trusted-proxy setting), IPv6 by its /64. Addresses it
// cannot parse share the zero key.
func clientAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	a := ap.Addr().Unmap().WithZone("")
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			a = p.Addr()
		}
	}
	return a
}

func (t *authThrottle) shard(a netip.Addr) *throttleShard {
	b := a.As16()
	return &t.shards[maphash.Bytes(t.seed, b[:])%throttleShards]
}

// check returns a 429 problem when r's address is refused now, else nil;
// it reads the clock only when the address has failures on record.
func (t *authThrottle) check(r *http.Request, clock func() time.Time) error {
	if t.limit <= 0 || t.entries.Load() == 0 {
		return nil
	}
	a := clientAddr(r)
	if a.IsLoopback() {
		return nil
	}
	sh := t.shard(a)
	sh.mu.Lock()
	f, ok := sh.m[a]
	if !ok {
		sh.mu.Unlock()
		return nil
	}
	left := f.since.Add(t.window).Sub(clock())
	if left <= 0 {
		delete(sh.m, a) // the window passed: the address starts afresh
		t.entries.Add(-1)
	}
	sh.mu.Unlock()
	if f.n < t.limit || left <= 0 {
		return nil
	}
	return &tooManyError{slug: "too-many-auth-failures", retryAfter: left,
		detail: fmt.Sprintf("%d requests from your address presented a token that is unknown, revoked, expired or malformed within %d s, "+
			"the most allowed; every request with a token from this address is refused without checking it for the next %s s "+
			"(Retry-After). Fix the token (an admin mints one with POST /api/tokens or `canvasd token create`), then retry",
			f.n, int(t.window/time.Second), retryAfterSeconds(left)),
		extra: map[string]any{"limit": t.limit, "window_seconds": int(t.window / time.Second)}}
}

// fail records one failed attempt from r's address at now.
func (t *authThrottle) fail(r *http.Request, now time.Time) {
	if t.limit <= 0 {
		return
	}
	a := clientAddr(r)
	if a.IsLoopback() {
		return
	}
	sh := t.shard(a)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	f, ok := sh.m[a]
	if !ok && len(sh.m) >= maxThrottledAddrs/throttleShards {
		t.evict(sh, now)
	}
	if !ok || !now.Before(f.since.Add(t.window)) {
		f = failures{since: now}
	}
	f.n++
	sh.m[a] = f
	if !ok {
		t.entries.Add(1)
	}
}

// evict makes room in a full shard (its lock held): it drops the expired
// entries, or one arbitrary entry when none has expired.
func (t *authThrottle) evict(sh *throttleShard, now time.Time) {
	before := len(sh.m)
	for a, f := range sh.m {
		if !now.Before(f.since.Add(t.window)) {
			delete(sh.m, a)
		}
	}
	if len(sh.m) == before {
		for a := range sh.m {
			delete(sh.m, a)
			break
		}
	}
	t.entries.Add(int64(len(sh.m) - before))
}
