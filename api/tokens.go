package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

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
	if len(req.Name) > 200 {
		return store.TokenRecord{}, canvas.TokenGrant{}, canvas.Unprocessable("name", "is longer than 200 characters")
	}
	if len(req.Canvases) > 1000 {
		return store.TokenRecord{}, canvas.TokenGrant{}, canvas.Unprocessable("canvases", "names more than 1000 canvases; use an unscoped token")
	}
	if req.Canvases == nil {
		req.Canvases = []string{}
	}
	secret, hash := NewToken()
	rec := store.TokenRecord{Hash: hash, ActorID: req.ActorID, ActorType: req.ActorType, Role: role,
		Canvases: req.Canvases, Name: req.Name, CreatedAt: now.UTC()}
	return rec, canvas.TokenGrant{Token: secret, ActorID: req.ActorID, ActorType: req.ActorType, Role: role, Canvases: req.Canvases}, nil
}

func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request) {
	if err := authorize(r, "", canvas.RoleAdmin); err != nil {
		s.problem(w, r, err)
		return
	}
	var req canvas.TokenRequest
	if err := decodeJSON(r, &req); err != nil {
		s.problem(w, r, err)
		return
	}
	rec, resp, err := NewTokenRecord(req, time.Now())
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

func (s *Server) handleRevokeToken(w http.ResponseWriter, r *http.Request) {
	if err := authorize(r, "", canvas.RoleAdmin); err != nil {
		s.problem(w, r, err)
		return
	}
	if err := s.st.RevokeToken(r.Context(), chi.URLParam(r, "actor_id")); err != nil {
		s.problem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
