package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

// NewTokenRecord validates a token request and mints its secret. It is shared
// by POST /api/tokens and `canvasd token create`.
func NewTokenRecord(req canvas.TokenRequest, now time.Time) (store.TokenRecord, canvas.TokenGrant, error) {
	role, err := canvas.ParseRole(string(req.Role))
	if err != nil {
		return store.TokenRecord{}, canvas.TokenGrant{}, err
	}
	if req.ActorType == "" {
		req.ActorType = canvas.ActorHuman
	}
	if !req.ActorType.Valid() {
		return store.TokenRecord{}, canvas.TokenGrant{}, canvas.Unprocessable("actor_type", "unknown actor type %q; use agent, human or service", req.ActorType)
	}
	if req.ActorID == "" {
		req.ActorID = newActorID(req.ActorType)
	}
	if err := canvas.ValidateActorID(req.ActorID, req.ActorType); err != nil {
		return store.TokenRecord{}, canvas.TokenGrant{}, err
	}
	if req.ActorID == AdminActorID {
		return store.TokenRecord{}, canvas.TokenGrant{}, canvas.Unprocessable("actor_id", "%q is reserved for the admin token", AdminActorID)
	}
	if utf8.RuneCountInString(req.Name) > 200 {
		return store.TokenRecord{}, canvas.TokenGrant{}, canvas.Unprocessable("name", "is longer than 200 characters")
	}
	if len(req.Canvases) > 1000 {
		return store.TokenRecord{}, canvas.TokenGrant{}, canvas.Unprocessable("canvases", "names more than 1000 canvases; use an unscoped token")
	}
	for i, c := range req.Canvases {
		if err := canvas.ValidateID(fmt.Sprintf("canvases[%d]", i), c); err != nil {
			return store.TokenRecord{}, canvas.TokenGrant{}, err
		}
	}
	if req.ExpiresIn < 0 || req.ExpiresIn > canvas.MaxTokenLifetime {
		return store.TokenRecord{}, canvas.TokenGrant{}, canvas.Unprocessable("expires_in",
			"must be 1 to %d seconds (ten years); omit it for a token that never expires", canvas.MaxTokenLifetime)
	}
	if req.Canvases == nil {
		req.Canvases = []string{}
	}
	secret, hash := NewToken()
	rec := store.TokenRecord{Hash: hash, ActorID: req.ActorID, ActorType: req.ActorType, Role: role,
		Canvases: req.Canvases, Name: req.Name, CreatedAt: now.UTC()}
	if req.ExpiresIn > 0 {
		rec.ExpiresAt = rec.CreatedAt.Add(time.Duration(req.ExpiresIn) * time.Second).Truncate(time.Microsecond)
	}
	return rec, canvas.TokenGrant{Token: secret, ActorID: req.ActorID, ActorType: req.ActorType, Role: role,
		Canvases: req.Canvases, ExpiresAt: expiry(rec)}, nil
}

// expiry is the token's expiry for the wire (nil: never).
func expiry(rec store.TokenRecord) *time.Time {
	if rec.ExpiresAt.IsZero() {
		return nil
	}
	return &rec.ExpiresAt
}

// withinExpiry refuses (403) a token that would outlive its minter's token,
// which expires at minter (zero: never): one that expires later, or never.
func withinExpiry(rec store.TokenRecord, minter time.Time) error {
	if minter.IsZero() || (!rec.ExpiresAt.IsZero() && !rec.ExpiresAt.After(minter)) {
		return nil
	}
	left := int64(minter.Sub(rec.CreatedAt) / time.Second)
	if left < 1 {
		return fmt.Errorf("%w: your token expires at %s, in less than a second, and a token never outlives the token that mints it",
			canvas.ErrForbidden, minter.Format(time.RFC3339))
	}
	return fmt.Errorf("%w: your token expires at %s and a token never outlives the token that mints it: give expires_in of at most %d (seconds)",
		canvas.ErrForbidden, minter.Format(time.RFC3339), left)
}

// tokenAdmin returns the principal of a token-management request: it needs
// the admin role. A scoped admin manages only tokens whose canvases lie within
// its own scope (canvas.Principal.Covers): it can never mint, list or revoke
// beyond what it holds.
func tokenAdmin(r *http.Request) (canvas.Principal, error) {
	p := principalFrom(r.Context())
	if !p.Role.Allows(canvas.RoleAdmin) {
		return p, fmt.Errorf("%w: managing tokens needs the admin role; your token has %s", canvas.ErrForbidden, p.DescribeScope())
	}
	return p, nil
}

// handleCreateToken serves POST /api/tokens. The token minted never grants
// more than the caller's own: its canvases lie within the caller's scope,
// and it expires no later than the caller's token (withinExpiry); 403
// otherwise.
func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request) {
	p, err := tokenAdmin(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	var req canvas.TokenRequest
	if err := decodeJSON(r, &req); err != nil {
		s.problem(w, r, err)
		return
	}
	rec, resp, err := NewTokenRecord(req, s.now())
	if err == nil && !p.Covers(rec.Canvases) {
		err = fmt.Errorf("%w: your token has %s, so it can mint tokens only for those canvases: list some of them in canvases "+
			"(a token for every canvas needs an unscoped admin token)", canvas.ErrForbidden, p.DescribeScope())
	}
	if err == nil {
		err = withinExpiry(rec, tokenExpiry(r.Context()))
	}
	if err == nil {
		err = s.st.CreateToken(r.Context(), rec)
		if errors.Is(err, canvas.ErrAlreadyExists) {
			err = fmt.Errorf("%w: actor %q already has a token; revoke it first (DELETE /api/tokens/%s) or choose another actor_id", canvas.ErrAlreadyExists, rec.ActorID, rec.ActorID)
		}
	}
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, resp)
}

// handleListTokens serves GET /api/tokens: the tokens the caller may manage
// (all for an unscoped admin; for a scoped admin those within its scope),
// metadata only.
func (s *Server) handleListTokens(w http.ResponseWriter, r *http.Request) {
	p, err := tokenAdmin(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	recs, err := s.st.ListTokens(r.Context())
	if err != nil {
		s.problem(w, r, err)
		return
	}
	out := []canvas.TokenInfo{}
	for _, rec := range recs {
		if !p.Covers(rec.Canvases) {
			continue
		}
		cs := rec.Canvases
		if cs == nil {
			cs = []string{}
		}
		out = append(out, canvas.TokenInfo{ActorID: rec.ActorID, ActorType: rec.ActorType, Role: rec.Role,
			Canvases: cs, Name: rec.Name, CreatedAt: rec.CreatedAt, ExpiresAt: expiry(rec)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (s *Server) handleRevokeToken(w http.ResponseWriter, r *http.Request) {
	p, err := tokenAdmin(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	actorID, err := pathParam(r, "actor_id")
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if p.Scoped() {
		rec, err := s.st.TokenByActor(r.Context(), actorID)
		if err == nil && !p.Covers(rec.Canvases) {
			err = fmt.Errorf("%w: the token of actor %q reaches beyond your token's scope (%s); only an admin whose scope covers it may revoke it",
				canvas.ErrForbidden, actorID, p.DescribeScope())
		}
		if err != nil {
			s.problem(w, r, err)
			return
		}
	}
	if err := s.st.RevokeToken(r.Context(), actorID); err != nil {
		s.problem(w, r, err)
		return
	}
	s.auth.forget(actorID)
	s.streams.endAll(actorID, tokenRevokedReason)
	w.WriteHeader(http.StatusNoContent)
}
