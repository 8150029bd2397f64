package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/canvasd/canvasd/api"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// tokenKeeper gives the tokens this process mints for itself (the in-process
// agent runner's) a lifetime and deletes expired tokens from the store:
// every ttl/3 it moves the expiry of each of its tokens to ttl from now and
// prunes every token of the store that has expired (its own process's or
// another's, user tokens minted with expires_in included). A process that
// dies stops renewing: its tokens expire within ttl and the next prune of
// any process sharing the store deletes them. Start it once; Stop ends the
// loop (Release revokes a token at once).
type tokenKeeper struct {
	st  store.Store
	ttl time.Duration
	log *slog.Logger
	now func() time.Time // the clock of the tokens' creation, expiry and pruning

	mu   sync.Mutex
	kept map[string]*keptToken // by actor id

	cancel context.CancelFunc
	done   chan struct{}
}

// keptToken is a token the keeper renews. Its secret changes when the keeper
// has to mint it anew (the stored token was revoked, or pruned after the
// process could not renew it in time); Transport always sends the current one.
type keptToken struct {
	req    canvas.TokenRequest // ActorID set
	secret atomic.Pointer[string]
}

func newTokenKeeper(st store.Store, ttl time.Duration, log *slog.Logger) *tokenKeeper {
	return &tokenKeeper{st: st, ttl: ttl, log: log, now: time.Now, kept: map[string]*keptToken{}}
}

// Start runs the renew-and-prune loop until Stop.
func (k *tokenKeeper) Start(ctx context.Context) {
	ctx, k.cancel = context.WithCancel(ctx)
	k.done = make(chan struct{})
	go func() {
		defer close(k.done)
		t := time.NewTicker(k.ttl / 3)
		defer t.Stop()
		for {
			k.tick(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends the loop and waits for it.
func (k *tokenKeeper) Stop() {
	k.cancel()
	<-k.done
}

// Mint stores a new token for req that expires ttl from now and keeps it
// alive until Release.
func (k *tokenKeeper) Mint(ctx context.Context, req canvas.TokenRequest) (*keptToken, error) {
	t := &keptToken{req: req}
	actorID, err := k.store(ctx, t)
	if err != nil {
		return nil, err
	}
	t.req.ActorID = actorID
	k.mu.Lock()
	k.kept[actorID] = t
	k.mu.Unlock()
	return t, nil
}

// store mints a secret for t and stores it with an expiry ttl from now.
func (k *tokenKeeper) store(ctx context.Context, t *keptToken) (actorID string, err error) {
	now := k.now()
	rec, grant, err := api.NewTokenRecord(t.req, now)
	if err != nil {
		return "", err
	}
	rec.ExpiresAt = now.Add(k.ttl)
	if err := k.st.CreateToken(ctx, rec); err != nil {
		return "", err
	}
	t.secret.Store(&grant.Token)
	return grant.ActorID, nil
}

// Release stops renewing t and revokes it.
func (k *tokenKeeper) Release(ctx context.Context, t *keptToken) {
	k.mu.Lock()
	delete(k.kept, t.req.ActorID)
	k.mu.Unlock()
	if err := k.st.RevokeToken(ctx, t.req.ActorID); err != nil && !errors.Is(err, canvas.ErrNotFound) {
		k.log.Warn("revoking a process token at shutdown failed; it expires by itself", "actor_id", t.req.ActorID, "err", err)
	}
}

// tick renews the kept tokens and prunes expired ones. A kept token that is
// gone is minted anew for the same actor.
func (k *tokenKeeper) tick(ctx context.Context) {
	k.mu.Lock()
	kept := make([]*keptToken, 0, len(k.kept))
	for _, t := range k.kept {
		kept = append(kept, t)
	}
	k.mu.Unlock()
	for _, t := range kept {
		err := k.st.RenewToken(ctx, t.req.ActorID, k.now().Add(k.ttl))
		if errors.Is(err, canvas.ErrNotFound) {
			k.log.Warn("a process token was revoked, or expired before it could be renewed; minting a new secret", "actor_id", t.req.ActorID)
			_, err = k.store(ctx, t)
		}
		if err != nil && ctx.Err() == nil {
			k.log.Warn("renewing a process token failed; retrying at the next tick", "actor_id", t.req.ActorID, "err", err,
				"every", k.ttl/3)
		}
	}
	n, err := k.st.PruneTokens(ctx, k.now())
	switch {
	case err != nil && ctx.Err() == nil:
		k.log.Warn("pruning expired tokens failed", "err", err)
	case n > 0:
		k.log.Info("pruned expired tokens", "count", n)
	}
}

// Transport returns a RoundTripper that authenticates every request with t's
// current secret, then sends it through next.
func (t *keptToken) Transport(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+*t.secret.Load())
		return next.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// validTokenTTL checks --agent-token-ttl.
func validTokenTTL(d time.Duration) error {
	if d < 3*time.Second {
		return fmt.Errorf("agent-token-ttl must be at least 3s (it is renewed every third of it), got %v", d)
	}
	return nil
}
