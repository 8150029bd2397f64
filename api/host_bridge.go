package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// The bridge between a host session's pages and the API. A page shown in
// the session's viewer (GET /host/{session}/~{ticket}/__canvas__/) reaches
// the API only through the viewer, which authenticates with the session's
// bridge capability (host.MintCap; in the viewer's HTML, never in a URL).
// The capability opens the routes wrapped in capOrAuth, for its session
// only: the session's stream, its messages, userActions and agent links,
// and the answers to invokes sent to the session. Everywhere else it is an
// unknown token (401).
//
// A host session S talks to the agent of the canvas whose id is S: its
// messages and userActions go to that canvas's most recent agent session
// (or start one), and its agent links start a run there. When there is no
// such canvas yet, the first message, userAction or agent link creates it
// (the sender has the editor role on S, which is what the session needs).

type capKeyT struct{}

var capKey capKeyT

// capSession returns the session of the bridge capability a request was
// authenticated with, or "" for a token.
func capSession(ctx context.Context) string {
	s, _ := ctx.Value(capKey).(string)
	return s
}

// capOrAuth authenticates a bridge capability in the Authorization header
// (never in the query) for the session of the route ({session}; routes
// without one check the session themselves, as handleAnswer does), and
// hands every other request to fallback, the route's ordinary token check.
// A capability stands for the token it was minted for: that token must
// still exist and not be expired, and its principal is the request's; the
// routes check its role as for the token itself.
func (h *hostAPI) capOrAuth(fallback func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		other := fallback(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok := bearerHeader(r)
			if !host.IsCap(tok) {
				other.ServeHTTP(w, r)
				return
			}
			c, err := h.verifyCap(r, tok)
			if err != nil {
				if errors.Is(err, canvas.ErrUnauthorized) {
					h.s.auth.throttle.fail(r, h.s.auth.now())
				}
				h.s.problem(w, r, err)
				return
			}
			ctx := context.WithValue(r.Context(), principalKey, c.cred)
			ctx = context.WithValue(ctx, capKey, c.session)
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// bearerHeader returns the bearer token of the Authorization header only.
func bearerHeader(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

type verifiedCap struct {
	session string
	cred    credential
}

// verifyCap checks capability tok for r: its MAC and expiry, the route's
// session, and the token it was minted for.
func (h *hostAPI) verifyCap(r *http.Request, tok string) (verifiedCap, error) {
	if err := h.s.auth.throttle.check(r, h.s.auth.now); err != nil {
		return verifiedCap{}, err
	}
	c, err := h.host.VerifyCap(tok)
	if err != nil {
		return verifiedCap{}, err
	}
	if want := chi.URLParam(r, "session"); want != "" {
		if dec, err := url.PathUnescape(want); err == nil {
			want = dec
		}
		if want != c.Session {
			return verifiedCap{}, fmt.Errorf("%w: this page's capability is for host session %q, not %q", canvas.ErrForbidden, c.Session, want)
		}
	}
	cred, err := h.capHolder(r.Context(), c)
	if err != nil {
		return verifiedCap{}, err
	}
	return verifiedCap{session: c.Session, cred: cred}, nil
}

// capHolder returns the credential of the token a capability was minted
// for, or a 401 when it was revoked or has expired. The credential expires
// when the capability does, if that is sooner.
func (h *hostAPI) capHolder(ctx context.Context, c host.Cap) (credential, error) {
	a := h.s.auth
	if a.adminHash != nil && subtle.ConstantTimeCompare(c.TokenHash, a.adminHash) == 1 {
		return credential{Principal: canvas.Principal{Actor: canvas.Actor{ID: AdminActorID, Type: canvas.ActorService}, Role: canvas.RoleAdmin},
			expires: c.Expires}, nil
	}
	rec, err := a.st.TokenByHash(ctx, c.TokenHash)
	if errors.Is(err, canvas.ErrNotFound) || err == nil && rec.Expired(a.now()) {
		return credential{}, fmt.Errorf("%w: the token this page was opened with has been revoked or has expired; reopen /host/%s/ with a token", canvas.ErrUnauthorized, c.Session)
	}
	if err != nil {
		return credential{}, err
	}
	exp := c.Expires
	if !rec.ExpiresAt.IsZero() && rec.ExpiresAt.Before(exp) {
		exp = rec.ExpiresAt
	}
	return credential{Principal: canvas.Principal{Actor: canvas.Actor{ID: rec.ActorID, Type: rec.ActorType}, Role: rec.Role, Canvases: rec.Canvases},
		expires: exp}, nil
}

// sessionCanvas returns the canvas of host session s (the canvas of the same
// id), creating it when it does not exist yet: the caller has the editor
// role on s, which a token scoped to canvases grants on that id.
func (h *hostAPI) sessionCanvas(r *http.Request, session string) (string, error) {
	_, err := h.s.st.GetCanvas(r.Context(), session)
	if !errors.Is(err, canvas.ErrNotFound) {
		return session, err
	}
	if cerr := canvas.ValidateID("canvas_id", session); cerr != nil {
		return "", fmt.Errorf("host session %q has no canvas and cannot have one of its name: %w", session, cerr)
	}
	c := canvas.Canvas{ID: session, Title: "Pages of " + session, CreatedAt: h.s.now().UTC().Truncate(time.Microsecond),
		CreatedBy: principalFrom(r.Context()).ID}
	if err := h.s.st.CreateCanvas(r.Context(), c); err != nil && !errors.Is(err, canvas.ErrAlreadyExists) {
		return "", err
	}
	h.s.log.Info("host: created the canvas of a host session for its agent", "session", session)
	return session, nil
}

// hostMessageAccepted is the 202 answer of POST /api/host/{session}/messages.
type hostMessageAccepted struct {
	OK        bool              `json:"ok"`
	CanvasID  string            `json:"canvas_id"`       // the canvas whose agent takes it
	Delivered bool              `json:"delivered"`       // an agent inbox took the message
	Image     *host.StoredImage `json:"image,omitempty"` // the stored image, by content hash
}

// handleHostMessage serves POST /api/host/{session}/messages (editor on
// the session; a token or the session's capability): a page's
// sendAgentMessage. The body is validated as POST /api/sessions/{id}/messages
// validates it (400 malformed, 413 too large, 415 another image type), the
// image is stored by SHA-256, and the message goes to the agent of the
// session's canvas (created when missing), also on a server whose agents run
// as `canvasd agent` workers.
func (h *hostAPI) handleHostMessage(w http.ResponseWriter, r *http.Request) {
	session, ok := h.authorizedSession(w, r, canvas.RoleEditor)
	if !ok {
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
	canvasID, err := h.sessionCanvas(r, session)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	source := req.Source
	if source == "" {
		source = "applet"
	}
	out := hostMessageAccepted{OK: true, CanvasID: canvasID}
	m := host.Message{HostSession: session, Principal: principalFrom(r.Context()), Prompt: req.Prompt,
		Source: source, AppletSlug: req.AppletSlug, ReceivedAt: h.s.now().UTC()}
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

// agentLinkRequest is the body of POST /api/host/{session}/agent-link.
type agentLinkRequest struct {
	Message   string `json:"message"`
	Key       string `json:"key,omitempty"`
	Confirmed bool   `json:"confirmed,omitempty"`
}

// ConfirmationRequiredError is the 428 of an agent link without a valid
// key that the person has not confirmed.
type ConfirmationRequiredError struct{ Session string }

func (e *ConfirmationRequiredError) Error() string {
	return fmt.Sprintf("this agent link of host session %q carries no valid key, so the person must confirm it: ask them, then send it again with \"confirmed\": true "+
		"(a link that carries the session's key, GET /api/host/%s/link-key, runs at once)", e.Session, e.Session)
}

// ProblemStatus is 428.
func (e *ConfirmationRequiredError) ProblemStatus() int { return http.StatusPreconditionRequired }

// ProblemSlug names the problem type.
func (e *ConfirmationRequiredError) ProblemSlug() string { return "confirmation-required" }

// handleAgentLink serves POST /api/host/{session}/agent-link (editor; a
// token or the session's capability): a canvasd://agent?message=...[&key=...]
// link followed in one of the session's pages. With the session's link key,
// or confirmed by the person (the viewer asks them), it starts an agent run
// on the session's canvas with the message: 202 {ok, session_id, canvas_id}.
// Otherwise nothing runs: 428 confirmation-required; a wrong key is 403.
func (h *hostAPI) handleAgentLink(w http.ResponseWriter, r *http.Request) {
	session, ok := h.authorizedSession(w, r, canvas.RoleEditor)
	if !ok {
		return
	}
	var req agentLinkRequest
	if err := decodeJSON(r, &req); err != nil {
		h.s.problem(w, r, err)
		return
	}
	switch {
	case strings.TrimSpace(req.Message) == "":
		h.s.problem(w, r, canvas.Invalid("message", "is required: the link's message (canvasd://agent?message=...)"))
		return
	case len(req.Message) > 20000:
		h.s.problem(w, r, canvas.Invalid("message", "is longer than 20000 bytes"))
		return
	case req.Key != "" && !h.host.CheckLinkKey(session, req.Key):
		h.s.problem(w, r, fmt.Errorf("%w: the link's key is not host session %q's link key (GET /api/host/%s/link-key)", canvas.ErrForbidden, session, session))
		return
	case req.Key == "" && !req.Confirmed:
		h.s.problem(w, r, &ConfirmationRequiredError{Session: session})
		return
	}
	if h.s.cfg.Agent == nil {
		h.s.problem(w, r, fmt.Errorf("%w: this server runs no agent", canvas.ErrUnavailable))
		return
	}
	canvasID, err := h.sessionCanvas(r, session)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	id, err := h.s.cfg.Agent.Run(r.Context(), canvas.AgentRunRequest{RoomID: canvasID, Message: req.Message})
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	h.s.log.Info("host: agent link started a run", "session", session, "agent_session", id, "key", req.Key != "")
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "session_id": id, "canvas_id": canvasID})
}

// handleLinkKey serves GET /api/host/{session}/link-key (editor): the key
// that lets the session's agent links run without asking the person.
func (h *hostAPI) handleLinkKey(w http.ResponseWriter, r *http.Request) {
	session, ok := h.authorizedSession(w, r, canvas.RoleEditor)
	if !ok {
		return
	}
	key := h.host.LinkKey(session)
	writeJSON(w, http.StatusOK, map[string]string{"session": session, "key": key,
		"example": "canvasd://agent?message=" + url.QueryEscape("Summarize this page") + "&key=" + key})
}

// viewerURL is the answer of GET /api/host/{session}/viewer.
type viewerURL struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// handleViewerURL serves GET /api/host/{session}/viewer (viewer role): the
// address of the session's viewer under a fresh page ticket of the caller's
// token, for a client that holds its token in memory (the web UI's pages
// panel) and should not put it in a URL.
func (h *hostAPI) handleViewerURL(w http.ResponseWriter, r *http.Request) {
	session, ok := h.authorizedSession(w, r, canvas.RoleViewer)
	if !ok {
		return
	}
	if capSession(r.Context()) != "" {
		h.s.problem(w, r, fmt.Errorf("%w: a page's capability cannot mint viewers", canvas.ErrForbidden))
		return
	}
	ticket, err := h.host.MintTicket(session, HashToken(tokenFrom(r, headerOnly)))
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	t, err := h.host.VerifyTicket(session, ticket)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	u := "/host/" + session + "/" + host.TicketPrefix + ticket + "/" + host.ReservedDir + "/"
	if page := r.URL.Query().Get("page"); page != "" {
		u += "?page=" + url.QueryEscape(page)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, viewerURL{URL: u, ExpiresAt: t.Expires})
}
