package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// TokenPrefix starts every token canvasd mints, so leaked ones are easy to grep for.
const TokenPrefix = "cvd_"

// AdminActorID is the actor of the configured or generated admin token.
const AdminActorID = "admin"

type ctxKey int

const principalKey ctxKey = 1

// credential is what a request's token established: its principal, and
// when the token expires (zero: never). The auth middleware stores it in
// the request's context.
type credential struct {
	canvas.Principal
	expires time.Time
}

// principalFrom returns the authenticated principal of a request that passed
// the auth middleware.
func principalFrom(ctx context.Context) canvas.Principal {
	c, _ := ctx.Value(principalKey).(credential)
	return c.Principal
}

// tokenExpiry returns when the token of a request that passed the auth
// middleware expires (zero: never).
func tokenExpiry(ctx context.Context) time.Time {
	c, _ := ctx.Value(principalKey).(credential)
	return c.expires
}

// authenticator resolves bearer tokens to principals. A token verified
// against the store is trusted for tokenCacheTTL without asking the store
// again (the hot path of every command would otherwise read it).
type authenticator struct {
	st        store.Store
	adminHash []byte           // SHA-256 of the configured admin token; nil when the store holds it
	now       func() time.Time // the clock of the cache and of throttle
	throttle  *authThrottle    // failed token attempts per client address

	mu    sync.RWMutex
	cache map[[sha256.Size]byte]verifiedToken // by the token's hash
	// revocations counts forget calls: a store read that began before one
	// is not cached (it may have read the token just revoked).
	revocations uint64
}

// tokenCacheTTL is how long a verified token is trusted without reading the
// store. Revoking a token through this process's API takes effect at once;
// a revocation this process does not see (by another process sharing the
// store, or in the store directly) takes effect within tokenCacheTTL.
const tokenCacheTTL = time.Second

// maxCachedTokens bounds the cache; when full, it starts over.
const maxCachedTokens = 4096

type verifiedToken struct {
	c     credential
	until time.Time
}

func newAuthenticator(st store.Store, adminToken string, maxFailures int) *authenticator {
	a := &authenticator{st: st, now: time.Now, cache: map[[sha256.Size]byte]verifiedToken{},
		throttle: newAuthThrottle(maxFailures, authFailureWindow)}
	if adminToken != "" {
		a.adminHash = HashToken(adminToken)
	}
	return a
}

// forget drops the cached tokens of an actor (its token was revoked; call
// it after the store's revocation), and keeps reads of the store that were
// under way from caching them again.
func (a *authenticator) forget(actorID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.revocations++
	for h, v := range a.cache {
		if v.c.Actor.ID == actorID {
			delete(a.cache, h)
		}
	}
}

// NewToken mints a random token secret (256 bits) and its SHA-256 hash.
func NewToken() (secret string, hash []byte) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err))
	}
	secret = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashToken(secret)
}

// HashToken returns the SHA-256 of a token secret, the form tokens are stored in.
func HashToken(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// tokenSource says where a route takes its token from.
type tokenSource int

const (
	// headerOnly: the Authorization header. A request that also carries
	// ?access_token= is refused (401): a token in a URL ends up in logs,
	// proxies and browser history, so only the routes that cannot send a
	// header take it there.
	headerOnly tokenSource = iota
	// headerOrQuery: the Authorization header, else ?access_token=: the
	// GET /sse/... streams (a browser's EventSource cannot set headers) and
	// the page routes (a browser navigation cannot either).
	headerOrQuery
)

// tokenFrom extracts the bearer token from the Authorization header or,
// when src allows it, the access_token query parameter.
func tokenFrom(r *http.Request, src tokenSource) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if scheme, tok, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
		return ""
	}
	if src != headerOrQuery {
		return ""
	}
	return r.URL.Query().Get("access_token")
}

// errQueryToken refuses ?access_token= on a route that takes the header only.
var errQueryToken = fmt.Errorf("%w: ?access_token= is accepted only on GET /sse/... streams and on page routes (/host/...); "+
	"send the token in the Authorization header instead (Authorization: Bearer <token>), and treat a token that was put in a URL as leaked", canvas.ErrUnauthorized)

// authenticate returns the credential of r's token, taken from src. A
// request without a token, or one with ?access_token= on a route that takes
// the header only, is a 401; one with a token from an address the throttle
// refuses is a 429 (the token unchecked); a token that is malformed,
// unknown, revoked or expired is a 401 and counts as a failure of r's
// address.
func (a *authenticator) authenticate(r *http.Request, src tokenSource) (credential, error) {
	if src == headerOnly && r.URL.Query().Has("access_token") {
		return credential{}, errQueryToken
	}
	tok := tokenFrom(r, src)
	if tok == "" {
		return credential{}, fmt.Errorf("%w: send Authorization: Bearer <token> (or ?access_token= on GET /sse/... streams and page routes); an admin creates tokens with POST /api/tokens or `canvasd token create`", canvas.ErrUnauthorized)
	}
	if err := a.throttle.check(r, a.now); err != nil {
		return credential{}, err
	}
	c, err := a.verify(r, tok)
	if err != nil && errors.Is(err, canvas.ErrUnauthorized) {
		a.throttle.fail(r, a.now())
	}
	return c, err
}

// verify checks the token tok of r.
func (a *authenticator) verify(r *http.Request, tok string) (credential, error) {
	if len(tok) > 512 {
		return credential{}, fmt.Errorf("%w: the token is malformed", canvas.ErrUnauthorized)
	}
	sum := sha256.Sum256([]byte(tok))
	hash := sum[:]
	if a.adminHash != nil && subtle.ConstantTimeCompare(hash, a.adminHash) == 1 {
		return credential{Principal: canvas.Principal{Actor: canvas.Actor{ID: AdminActorID, Type: canvas.ActorService}, Role: canvas.RoleAdmin}}, nil
	}
	now := a.now()
	a.mu.RLock()
	v, ok := a.cache[sum]
	revocations := a.revocations
	a.mu.RUnlock()
	if ok && now.Before(v.until) {
		return v.c, nil
	}
	rec, err := a.st.TokenByHash(r.Context(), hash)
	if errors.Is(err, canvas.ErrNotFound) {
		return credential{}, fmt.Errorf("%w: the token is unknown or revoked", canvas.ErrUnauthorized)
	}
	if err != nil {
		return credential{}, err
	}
	// The lookup is by hash; compare again in constant time as the contract says.
	if subtle.ConstantTimeCompare(rec.Hash, hash) != 1 {
		return credential{}, fmt.Errorf("%w: the token is unknown or revoked", canvas.ErrUnauthorized)
	}
	if rec.Expired(now) {
		return credential{}, fmt.Errorf("%w: the token expired at %s; an admin mints a new one", canvas.ErrUnauthorized,
			rec.ExpiresAt.Format(time.RFC3339))
	}
	c := credential{Principal: canvas.Principal{Actor: canvas.Actor{ID: rec.ActorID, Type: rec.ActorType}, Role: rec.Role, Canvases: rec.Canvases},
		expires: rec.ExpiresAt}
	until := now.Add(tokenCacheTTL)
	if !rec.ExpiresAt.IsZero() && rec.ExpiresAt.Before(until) {
		until = rec.ExpiresAt // never trusted past its expiry
	}
	a.mu.Lock()
	if a.revocations == revocations { // else a token was revoked meanwhile: maybe this one
		if len(a.cache) >= maxCachedTokens {
			clear(a.cache)
		}
		a.cache[sum] = verifiedToken{c: c, until: until}
	}
	a.mu.Unlock()
	return c, nil
}

// requireAuth rejects requests without a valid token in the Authorization
// header (and any that carries ?access_token=) and stores the credential
// (principalFrom, tokenExpiry) in the context. It guards every
// authenticated route but the streams (requireStreamAuth).
func (s *Server) requireAuth(next http.Handler) http.Handler {
	return s.authenticated(headerOnly, next)
}

// requireStreamAuth is requireAuth for the GET /sse/... streams: the token
// may also come as ?access_token=, since a browser's EventSource cannot set
// headers.
func (s *Server) requireStreamAuth(next http.Handler) http.Handler {
	return s.authenticated(headerOrQuery, next)
}

func (s *Server) authenticated(src tokenSource, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.auth.authenticate(r, src)
		if err != nil {
			s.problem(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, c)))
	})
}

// authorize checks the request's principal has role need on canvasID ("" = a
// global action, which only unscoped tokens may take).
func authorize(r *http.Request, canvasID string, need canvas.Role) error {
	p := principalFrom(r.Context())
	if canvasID == "" {
		if !p.Role.Allows(need) || p.Scoped() {
			return fmt.Errorf("%w: this needs the %s role on every canvas (a token without canvases); your token has %s", canvas.ErrForbidden, need, p.DescribeScope())
		}
		return nil
	}
	if !p.CanAccess(canvasID, need) {
		return fmt.Errorf("%w: this needs the %s role on canvas %q; your token has %s", canvas.ErrForbidden, need, canvasID, p.DescribeScope())
	}
	return nil
}

// newActorID mints an actor id for a token created without one.
func newActorID(t canvas.ActorType) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	if t == canvas.ActorAgent {
		b[6] = b[6]&0x0f | 0x40 // UUID v4
		b[8] = b[8]&0x3f | 0x80
		h := hex.EncodeToString(b[:])
		return "agent-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	}
	prefix := "user-"
	if t == canvas.ActorService {
		prefix = "svc-"
	}
	return prefix + hex.EncodeToString(b[:8])
}
