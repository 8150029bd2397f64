package api

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
)

type createCanvasRequest struct {
	CanvasID string `json:"canvas_id,omitempty"`
	Title    string `json:"title,omitempty"`
}

// handleCreateCanvas serves POST /api/canvases. The body is optional:
// without one (or without canvas_id) the server mints the id.
func (s *Server) handleCreateCanvas(w http.ResponseWriter, r *http.Request) {
	if err := authorize(r, "", canvas.RoleEditor); err != nil {
		s.problem(w, r, err)
		return
	}
	var req createCanvasRequest
	if err := decodeOptionalJSON(r, &req); err != nil {
		s.problem(w, r, err)
		return
	}
	if req.CanvasID == "" {
		var b [16]byte // 128 bits: unguessable
		_, _ = rand.Read(b[:])
		req.CanvasID = "c_" + hex.EncodeToString(b[:])
	} else if err := canvas.ValidateID("canvas_id", req.CanvasID); err != nil {
		s.problem(w, r, err)
		return
	} else if s.routeWords[req.CanvasID] {
		s.problem(w, r, canvas.Unprocessable("canvas_id", "%q is a word of the route table: a canvas under it would shadow a route (/canvas_commands/snapshot/{canvas_id} and /canvas_commands/{canvas_id}/events, say); choose another id (refused: %s)",
			req.CanvasID, strings.Join(slices.Sorted(maps.Keys(s.routeWords)), ", ")))
		return
	}
	if utf8.RuneCountInString(req.Title) > 500 {
		s.problem(w, r, canvas.Unprocessable("title", "is longer than 500 characters"))
		return
	}
	c := canvas.Canvas{ID: req.CanvasID, Title: req.Title, CreatedAt: s.now().UTC().Truncate(time.Microsecond),
		CreatedBy: principalFrom(r.Context()).ID}
	if err := s.st.CreateCanvas(r.Context(), c); err != nil {
		if errors.Is(err, canvas.ErrAlreadyExists) {
			err = fmt.Errorf("%w: canvas %q already exists; choose another canvas_id, or omit it to get a new unguessable one", canvas.ErrAlreadyExists, c.ID)
		}
		s.problem(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/canvases/"+c.ID)
	writeJSON(w, http.StatusCreated, c)
}

func (s *Server) handleListCanvases(w http.ResponseWriter, r *http.Request) {
	all, err := s.st.ListCanvases(r.Context())
	if err != nil {
		s.problem(w, r, err)
		return
	}
	p := principalFrom(r.Context())
	out := make([]canvas.Canvas, 0, len(all))
	for _, c := range all {
		if p.CanAccess(c.ID, canvas.RoleViewer) {
			out = append(out, c)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"canvases": out})
}

func (s *Server) handleGetCanvas(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleViewer)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	c, err := s.st.GetCanvas(r.Context(), id)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if head, _, err := s.engine.Head(r.Context(), id); err == nil {
		c.HeadRev = head
	}
	writeJSON(w, http.StatusOK, c)
}

// handleDeleteCanvas serves DELETE /api/canvases/{canvas_id}: the canvas and
// its log go, and every stream of it ends with a reset saying so, on every
// process sharing the store (Hub.canvasDeleted).
func (s *Server) handleDeleteCanvas(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleAdmin)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if err := s.st.DeleteCanvas(r.Context(), id); err != nil {
		s.problem(w, r, err)
		return
	}
	s.engine.Forget(id)
	s.hub.CanvasDeleted(id)
	w.WriteHeader(http.StatusNoContent)
}

// snapshotOf returns the snapshot document of canvas id's state st, read at
// revision at (-1: the head). The head is at model 2 (the engine migrated
// it when it loaded the canvas); an earlier revision may be at model 1.
func snapshotOf(id string, st *canvas.State, eventID string, at int64) canvas.Snapshot {
	model := canvas.Model
	if at >= 0 && reducer.NeedsMigration(st) {
		model = 1
	}
	return canvas.Snapshot{CanvasID: id, HeadRev: st.Rev, HeadEventID: eventID, Model: model, State: st.Scene()}
}

func (s *Server) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleViewer)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	at := int64(-1)
	if v := r.URL.Query().Get("at_rev"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.problem(w, r, canvas.Invalid("at_rev", "must be a revision number ≥ 0, got %q", v))
			return
		}
		at = n
	}
	ctx, err := readConsistency(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	var body []byte
	err = s.engine.View(ctx, id, at, func(st *canvas.State, eventID string) error {
		var err error
		body, err = json.Marshal(snapshotOf(id, st, eventID, at))
		return err
	})
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, body)
}

// shadowingIDs returns the values of the path parameter param that would
// make a route ambiguous: every static segment that stands, in another
// route with the same segments before it, where param stands. With
// /canvas_commands/snapshot/{canvas_id} and
// /canvas_commands/{canvas_id}/events in the table, a canvas named
// "snapshot" would have its events page answered by the snapshot of a
// canvas named "events"; so "snapshot" is such a value. Computed from the
// route table, it covers routes added later.
func shadowingIDs(routes chi.Routes, param string) (map[string]bool, error) {
	var patterns [][]string
	err := chi.Walk(routes, func(_, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		patterns = append(patterns, strings.Split(strings.Trim(route, "/"), "/"))
		return nil
	})
	if err != nil {
		return nil, err
	}
	words := map[string]bool{}
	for _, p := range patterns {
		for i, seg := range p {
			if seg != "{"+param+"}" {
				continue
			}
			for _, q := range patterns {
				if len(q) > i && slices.Equal(q[:i], p[:i]) && !strings.HasPrefix(q[i], "{") && q[i] != "*" {
					words[q[i]] = true
				}
			}
		}
	}
	return words, nil
}
