package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// runnerTokens returns the expiry of every in-process agent runner token in
// the database, by actor id.
func runnerTokens(t *testing.T, dbURL string) map[string]time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT actor_id, expires_at FROM tokens WHERE name = 'in-process agent runner'`)
	out := map[string]time.Time{}
	var actor string
	var expires *time.Time
	_, err = pgx.ForEachRow(rows, []any{&actor, &expires}, func() error {
		if expires == nil {
			t.Errorf("the runner token of %s never expires", actor)
		} else {
			out[actor] = *expires
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitFor polls cond every 100 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for pl := newPoller(d, 100*time.Millisecond); !cond(); pl.wait() {
		if pl.expired() {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

// poller paces a loop that polls a condition (instead of sleeping): wait
// returns at the next tick, expired reports whether the time allowed has
// passed.
type poller struct {
	deadline time.Time
	tick     *time.Ticker
}

func newPoller(within, every time.Duration) *poller {
	return &poller{deadline: time.Now().Add(within), tick: time.NewTicker(every)}
}

func (p *poller) wait()         { <-p.tick.C }
func (p *poller) expired() bool { return time.Now().After(p.deadline) }

// TestMultiProcessTokenLifetime runs two canvasd processes on one PostgreSQL
// schema with a short runner-token lifetime: each in-process agent runner's
// token carries an expiry that its process keeps renewing; a token minted
// through one process with expires_in works through the other until it
// expires, then both refuse it and it is deleted; and after a kill -9 the
// dead process's runner token expires and the surviving process deletes it,
// while its own stays alive.
func TestMultiProcessTokenLifetime(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const ttl = 6 * time.Second
	dbURL := pgSchemaURL(t)
	bin := buildCanvasd(t)
	a, b := newProc(t, "A", bin, dbURL), newProc(t, "B", bin, dbURL)
	a.env = []string{"CANVASD_AGENT_TOKEN_TTL=" + ttl.String()}
	b.env = a.env
	a.start()
	waitReady(t, a.base())
	var actorA string
	for id := range runnerTokens(t, dbURL) {
		actorA = id
	}
	b.start()
	waitReady(t, b.base())
	c := mpClient()

	tokens := runnerTokens(t, dbURL)
	if len(tokens) != 2 || actorA == "" {
		t.Fatalf("runner tokens %v, want one per process", tokens)
	}
	var actorB string
	for id, exp := range tokens {
		if id != actorA {
			actorB = id
		}
		if until := time.Until(exp); until <= 0 || until > ttl+5*time.Second {
			t.Fatalf("runner token %s expires in %v, want within %v", id, until, ttl)
		}
	}
	first := tokens[actorA]
	waitFor(t, 3*ttl, "A renews its runner token", func() bool { return runnerTokens(t, dbURL)[actorA].After(first) })

	// A user token minted through A with a lifetime works through B until
	// it expires; then both refuse it and the store drops it.
	const lifetime = 3 * time.Second
	var secret string
	get := func(p *proc) answer {
		return send(t, c, "GET", p.base()+"/api/canvases", map[string]string{"Authorization": "Bearer " + secret}, "")
	}
	for attempt := 1; ; attempt++ {
		minted := time.Now() // the token expires at least lifetime after this
		grant := mustCall(t, c, 201, "POST", a.base()+"/api/tokens", map[string]any{"role": "viewer", "expires_in": lifetime / time.Second, "name": "short"})
		secret = grant.decoded["token"].(string)
		r := get(b)
		if r.status == 200 {
			break
		}
		// A refusal is a failure only if B answered within the lifetime; a
		// machine too busy to mint and ask within 3 s tries a new token.
		if elapsed := time.Since(minted); elapsed < lifetime || attempt == 5 {
			t.Fatalf("a fresh token with a lifetime, minted through A, via B %v after minting (attempt %d): %d %s", elapsed, attempt, r.status, r.body)
		}
		t.Logf("minting and using the token took %v, over its lifetime; trying a new one", time.Since(minted))
	}
	waitFor(t, 20*time.Second, "B refuses the expired token", func() bool { return get(b).status == 401 })
	// Once expired the token may already be deleted by either process's
	// sweep, so A answers "expired" or "unknown"; either way a 401.
	if r := get(a); r.status != 401 || !(strings.Contains(string(r.body), "expired") || strings.Contains(string(r.body), "unknown")) {
		t.Fatalf("A after the expiry: %d %s", r.status, r.body)
	}
	waitFor(t, 3*ttl, "the expired user token is deleted", func() bool {
		list := mustCall(t, c, 200, "GET", b.base()+"/api/tokens", nil)
		return !strings.Contains(string(list.body), `"short"`)
	})

	// kill -9: A's runner token is left behind, expires, and B deletes it.
	a.kill()
	waitFor(t, 4*ttl, "B deletes the runner token of the killed process", func() bool {
		_, left := runnerTokens(t, dbURL)[actorA]
		return !left
	})
	if exp, ok := runnerTokens(t, dbURL)[actorB]; !ok || !exp.After(time.Now()) {
		t.Fatalf("B's own runner token: %v %v (it must stay alive)", exp, ok)
	}
}
