package api

import (
	"fmt"
	"net/http"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// messageBodyLimit is the body limit of POST /api/sessions/{id}/messages:
// the base64 of the largest image plus room for the prompt. A larger body is
// a 413 naming the limit; an image over maxImage decoded bytes is a 413 too.
func messageBodyLimit(maxImage int64) int64 {
	return maxImage/3*4 + 4 + host.MaxPromptBytes + 4096
}

// messageAccepted is the 202 answer of POST /api/sessions/{id}/messages.
type messageAccepted struct {
	OK        bool              `json:"ok"`
	SessionID string            `json:"session_id"`
	Delivered bool              `json:"delivered"`       // an agent inbox took the message
	Image     *host.StoredImage `json:"image,omitempty"` // the stored image, by content hash
}

// handleMessage serves POST /api/sessions/{id}/messages (a stable path): it validates
// the prompt and the optional imageData strictly (400 malformed, 413 too
// large, 415 other types), stores the image by SHA-256 and hands the message
// to the agent inbox. Any editor may post; the inbox decides whether the
// principal may talk to that session.
func (h *hostAPI) handleMessage(w http.ResponseWriter, r *http.Request) {
	id, err := pathParam(r, "id")
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	if p := principalFrom(r.Context()); !p.Role.Allows(canvas.RoleEditor) {
		h.s.problem(w, r, fmt.Errorf("%w: sending a message needs the editor role; your token has %s", canvas.ErrForbidden, p.DescribeScope()))
		return
	}
	if !validSessionID(id) {
		h.s.problem(w, r, canvas.Invalid("id", "must be 1 to 200 letters, digits or _ . : - (a session_id of POST /api/canvas-agent/run)"))
		return
	}
	body, err := readBody(r)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	req, img, err := host.DecodeMessageRequest(body, h.host.Images().MaxBytes())
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	out := messageAccepted{OK: true, SessionID: id}
	m := host.Message{SessionID: id, Principal: principalFrom(r.Context()), Prompt: req.Prompt,
		Source: req.Source, AppletSlug: req.AppletSlug, ReceivedAt: h.s.now().UTC()}
	if img != nil {
		stored, err := h.host.Images().Put(*img)
		if err != nil {
			h.s.problem(w, r, err)
			return
		}
		out.Image, m.Image = &stored, &stored
	}
	if h.inbox != nil {
		if err := h.inbox.Deliver(r.Context(), m); err != nil {
			h.s.problem(w, r, err)
			return
		}
		out.Delivered = true
	}
	writeJSON(w, http.StatusAccepted, out)
}

// validSessionID reports whether id can name an agent session: 1 to 200
// bytes of [A-Za-z0-9_.:-] (session ids are made of these; anything else,
// such as "../x" or invalid UTF-8, is refused before it reaches an inbox).
func validSessionID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}
