package api

// Documents, named snapshots and diffs (docs/api.md, "Documents"):
//
//	GET  /api/canvases/{id}/docs/{node_id}?start_line&end_line        viewer
//	GET  /api/canvases/{id}/docs/{node_id}/diff?since&format          viewer
//	GET  /api/canvases/{id}/docs/{node_id}/selection?start_line&...   viewer
//	POST /api/canvases/{id}/snapshots {label?, description?}          editor → 201
//	GET  /api/canvases/{id}/snapshots                                 viewer
//
// The edits themselves are commands (replace_lines, ..., undo, redo,
// revert_to_snapshot) on POST /canvas_commands/{canvas_id}/command. The
// functions below the handlers are shared with the MCP tools (mcp.go).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
	"github.com/canvasd/canvasd/store"
)

// docRoute returns the canvas and node ids of a document route, which the
// caller may read (viewer on the canvas).
func docRoute(r *http.Request) (canvasID, nodeID string, err error) {
	if canvasID, err = canvasRoute(r, canvas.RoleViewer); err != nil {
		return "", "", err
	}
	nodeID, err = pathParam(r, "node_id")
	return canvasID, nodeID, err
}

func (s *Server) handleDocContent(w http.ResponseWriter, r *http.Request) {
	id, nodeID, err := docRoute(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	q := r.URL.Query()
	start, err := intParam(q.Get("start_line"), "start_line", 0, 1, math.MaxInt32)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	end, err := intParam(q.Get("end_line"), "end_line", 0, 1, math.MaxInt32)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	ctx, err := readConsistency(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	out, err := s.docContent(ctx, id, nodeID, int(start), int(end))
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleDocDiff(w http.ResponseWriter, r *http.Request) {
	id, nodeID, err := docRoute(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	q := r.URL.Query()
	format, err := reducer.ParseDiffFormat("format", q.Get("format"))
	if err != nil {
		s.problem(w, r, err)
		return
	}
	ctx, err := readConsistency(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	out, err := s.docDiff(ctx, id, nodeID, q.Get("since"), format)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleDocSelection(w http.ResponseWriter, r *http.Request) {
	id, nodeID, err := docRoute(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	q := r.URL.Query()
	if q.Get("start_line") == "" {
		s.problem(w, r, canvas.Invalid("start_line", "is required (1-indexed)"))
		return
	}
	var v [4]int64
	for i, name := range []string{"start_line", "end_line", "start_column", "end_column"} {
		n, err := intParam(q.Get(name), name, 0, 1, math.MaxInt32)
		if err != nil {
			s.problem(w, r, err)
			return
		}
		v[i] = n
	}
	ctx, err := readConsistency(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	out, err := s.docSelection(ctx, id, nodeID, int(v[0]), int(v[1]), int(v[2]), int(v[3]))
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// namedSnapshotRequest is the body of POST /api/canvases/{id}/snapshots.
type namedSnapshotRequest struct {
	Label       string `json:"label,omitempty"`
	Description string `json:"description,omitempty"`
}

func (s *Server) handleCreateNamedSnapshot(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleEditor)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	var req namedSnapshotRequest
	if err := decodeOptionalJSON(r, &req); err != nil {
		s.problem(w, r, err)
		return
	}
	snap, err := s.createNamedSnapshot(r.Context(), id, principalFrom(r.Context()).Actor, req.Label, req.Description)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, snap)
}

// namedSnapshotList is GET /api/canvases/{id}/snapshots.
type namedSnapshotList struct {
	Snapshots []store.NamedSnapshot `json:"snapshots"`
}

func (s *Server) handleListNamedSnapshots(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleViewer)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	list, err := s.listNamedSnapshots(r.Context(), id)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, namedSnapshotList{Snapshots: list})
}

// --- shared with the MCP tools ---

// docAt reads a doc node's text and language at revision rev (-1: head). A
// missing node is canvas.ErrNotFound unless missingOK (then the text is "").
func (s *Server) docAt(ctx context.Context, canvasID, nodeID string, rev int64, missingOK bool) (text, language string, at int64, err error) {
	err = s.engine.View(ctx, canvasID, rev, func(st *canvas.State, _ string) error {
		at = st.Rev
		n, ok := st.Nodes[nodeID]
		if !ok {
			if missingOK {
				return nil
			}
			return fmt.Errorf("%w: no node %q on canvas %q at revision %d", canvas.ErrNotFound, nodeID, canvasID, st.Rev)
		}
		var derr error
		text, language, derr = reducer.DocText(n, "node_id") // strings are immutable: safe to keep
		return derr
	})
	return text, language, at, err
}

func (s *Server) docContent(ctx context.Context, canvasID, nodeID string, start, end int) (reducer.DocContent, error) {
	text, lang, rev, err := s.docAt(ctx, canvasID, nodeID, -1, false)
	if err != nil {
		return reducer.DocContent{}, err
	}
	out, err := reducer.Content(text, start, end)
	if err != nil {
		return out, err
	}
	out.NodeID, out.Language, out.Rev = nodeID, lang, rev
	return out, nil
}

// docDiffResponse is GET .../docs/{node_id}/diff.
type docDiffResponse struct {
	reducer.DocDiff
	Success    bool   `json:"success"`
	NodeID     string `json:"node_id"`
	Since      string `json:"since"`
	SinceRev   int64  `json:"since_rev"`
	SnapshotID string `json:"snapshot_id,omitempty"`
	Rev        int64  `json:"rev"`
}

// docDiff diffs a document at since (a snapshot id, a revision number, or ""
// for the latest named snapshot, or revision 0 when there is none) against
// its head. A node that did not exist then diffs from the empty text.
func (s *Server) docDiff(ctx context.Context, canvasID, nodeID, since, format string) (docDiffResponse, error) {
	out := docDiffResponse{Success: true, NodeID: nodeID, Since: since}
	var err error
	out.SinceRev, out.SnapshotID, err = s.resolveSince(ctx, canvasID, since)
	if err != nil {
		return out, err
	}
	after, _, head, err := s.docAt(ctx, canvasID, nodeID, -1, false)
	if err != nil {
		return out, err
	}
	if out.SinceRev > head {
		return out, canvas.Unprocessable("since", "revision %d is after the head (%d)", out.SinceRev, head)
	}
	before := ""
	if out.SinceRev > 0 {
		if before, _, _, err = s.docAt(ctx, canvasID, nodeID, out.SinceRev, true); err != nil {
			var fe *canvas.FieldError
			if !errors.As(err, &fe) {
				return out, err
			}
			before = "" // it was not a doc then
		}
	}
	out.Rev = head
	out.DocDiff = reducer.Diff(before, after, reducer.DiffOptions{Format: format, Context: reducer.DefaultContext,
		FromName: fmt.Sprintf("%s@%d", nodeID, out.SinceRev), ToName: fmt.Sprintf("%s@%d", nodeID, head)})
	return out, nil
}

// resolveSince turns a since parameter into a revision.
func (s *Server) resolveSince(ctx context.Context, canvasID, since string) (int64, string, error) {
	if since == "" {
		list, err := s.st.ListNamedSnapshots(ctx, canvasID)
		if err != nil {
			return 0, "", err
		}
		if len(list) == 0 {
			return 0, "", nil
		}
		last := list[len(list)-1]
		return last.Rev, last.ID, nil
	}
	if n, err := strconv.ParseInt(since, 10, 64); err == nil || strings.TrimLeft(since, "-0123456789") == "" {
		if err != nil || n < 0 {
			return 0, "", canvas.Invalid("since", "must be a snapshot id or a revision ≥ 0, got %q", since)
		}
		return n, "", nil
	}
	snap, err := s.st.GetNamedSnapshot(ctx, canvasID, since)
	if err != nil {
		return 0, "", err // it names the snapshot and the canvas
	}
	return snap.Rev, snap.ID, nil
}

func (s *Server) docSelection(ctx context.Context, canvasID, nodeID string, startLine, endLine, startCol, endCol int) (reducer.SelectionContext, error) {
	text, lang, _, err := s.docAt(ctx, canvasID, nodeID, -1, false)
	if err != nil {
		return reducer.SelectionContext{}, err
	}
	return reducer.SelectContext(text, lang, startLine, endLine, startCol, endCol)
}

// createNamedSnapshot marks the canvas's current head revision.
func (s *Server) createNamedSnapshot(ctx context.Context, canvasID string, actor canvas.Actor, label, description string) (store.NamedSnapshot, error) {
	if utf8.RuneCountInString(label) > 200 {
		return store.NamedSnapshot{}, canvas.Invalid("label", "is longer than 200 characters")
	}
	if utf8.RuneCountInString(description) > 4000 {
		return store.NamedSnapshot{}, canvas.Invalid("description", "is longer than 4000 characters")
	}
	head, _, err := s.engine.Head(ctx, canvasID)
	if err != nil {
		return store.NamedSnapshot{}, err
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	snap := store.NamedSnapshot{CanvasID: canvasID, ID: "snap_" + hex.EncodeToString(b[:]), Label: label,
		Description: description, Rev: head, CreatedBy: actor.ID, CreatedAt: s.now().UTC().Truncate(time.Microsecond)} // as the stores keep it
	if err := s.st.CreateNamedSnapshot(ctx, snap); err != nil {
		return store.NamedSnapshot{}, err
	}
	return snap, nil
}

func (s *Server) listNamedSnapshots(ctx context.Context, canvasID string) ([]store.NamedSnapshot, error) {
	if _, err := s.st.GetCanvas(ctx, canvasID); err != nil {
		return nil, err
	}
	list, err := s.st.ListNamedSnapshots(ctx, canvasID)
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []store.NamedSnapshot{}
	}
	return list, nil
}
