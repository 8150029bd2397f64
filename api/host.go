package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/hub"
)

// HostOptions wires the canvas host (host pages, A2UI, image messages and
// invoke) into the API. cmd/canvasd builds the host with host.New and, when
// the agent runner needs invoke too, one host.Broker shared with it.
type HostOptions struct {
	// Host serves /host/... and /api/host/...; nil disables every host route.
	Host *host.Host
	// Broker correlates invokes; nil: a broker delivering to host sessions
	// (Host) and canvas streams (the API's Hub).
	Broker *host.Broker
	// Inbox receives image messages and A2UI userActions for the agent; nil:
	// they are validated (and images stored) and answered 202 with
	// "delivered": false.
	Inbox host.Inbox
}

// hostAPI holds the handlers of the host, messages and invoke routes.
type hostAPI struct {
	s      *Server
	host   *host.Host
	broker *host.Broker
	inbox  host.Inbox
}

// newHostAPI returns nil when o.Host is nil.
func newHostAPI(s *Server, o HostOptions) *hostAPI {
	if o.Host == nil {
		return nil
	}
	b := o.Broker
	if b == nil {
		b = host.NewBroker(o.Host.HostDeliverer(CanvasInvokeDeliverer(s.hub)))
	}
	h := &hostAPI{s: s, host: o.Host, broker: b}
	if o.Inbox != nil {
		h.inbox = forwardingInbox{next: o.Inbox, hub: s.hub}
	}
	return h
}

// authorizedSession validates the {session} URL parameter and checks the
// caller's role on it; on failure it has written the problem and ok is false.
func (h *hostAPI) authorizedSession(w http.ResponseWriter, r *http.Request, need canvas.Role) (session string, ok bool) {
	session, err := sessionParam(r)
	if err == nil {
		err = authorize(r, session, need)
	}
	if err != nil {
		h.s.problem(w, r, err)
		return "", false
	}
	return session, true
}

// sessionParam validates the {session} URL parameter.
func sessionParam(r *http.Request) (string, error) {
	s, err := pathParam(r, "session")
	if err != nil {
		return "", err
	}
	return s, host.ValidateSession(s)
}

// restOfPath returns the still-escaped request path after prefix; chi's "*"
// value cannot be used because chi matches on the raw path only sometimes.
func restOfPath(r *http.Request, prefix string) (string, error) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	if !ok {
		return "", canvas.Invalid("path", "the session name must not be percent-encoded")
	}
	return rest, nil
}

// handlePage serves GET /host/{session}/{path}.
//
// A browser navigation that carries a token (?access_token= or a bearer
// header) with the viewer role on the session is answered 303 to a page
// ticket URL, so that the token never stays in an address bar or a
// history: a page (the session root, a directory, an .html file, the
// viewer itself) goes to the session's viewer,
// /host/{session}/~{ticket}/__canvas__/?page={path} (the viewer shows it in
// its frame and carries the session's bridge capability in its HTML), any
// other file to /host/{session}/~{ticket}/{path}. The query is kept without
// access_token. Other token requests (API clients: no Sec-Fetch-Mode:
// navigate and no text/html in Accept) get the file directly, as stored.
//
// Under /host/{session}/~{ticket}/ the ticket alone authorizes GET of the
// session's files and the viewer; it is checked on every request (see
// serveTicketPage). Tickets are never accepted on /api or /sse routes.
func (h *hostAPI) handlePage(w http.ResponseWriter, r *http.Request) {
	session, err := sessionParam(r)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	rest, err := restOfPath(r, "/host/"+session+"/")
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	if ticket, after, slash, ok := host.SplitTicket(rest); ok {
		h.serveTicketPage(w, r, session, ticket, after, slash)
		return
	}
	if !host.IsPublicAsset(rest) {
		c, err := h.s.auth.authenticate(r, headerOrQuery) // a page route: a navigation cannot send a header
		if err != nil {
			h.s.problem(w, r, err)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), principalKey, c))
		if err := authorize(r, session, canvas.RoleViewer); err != nil {
			h.s.problem(w, r, err)
			return
		}
		clean, dir, err := host.ParsePath(rest)
		if err != nil {
			h.s.problem(w, r, err)
			return
		}
		if isNavigation(r) {
			h.redirectToTicket(w, r, session, rest, clean, dir)
			return
		}
	}
	if err := h.host.ServePage(w, r, session, rest); err != nil {
		h.s.problem(w, r, err)
	}
}

// isNavigation reports whether r is a browser loading a document (top-level,
// frame, object or embed), which gets the ticket redirect: Sec-Fetch-Mode or
// Sec-Fetch-Dest say so, or, from a browser without Fetch Metadata, Accept
// asks for text/html.
func isNavigation(r *http.Request) bool {
	mode, dest := r.Header.Get("Sec-Fetch-Mode"), r.Header.Get("Sec-Fetch-Dest")
	if mode != "" || dest != "" {
		switch dest {
		case "document", "iframe", "frame", "object", "embed":
			return true
		}
		return mode == "navigate"
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// redirectToTicket answers 303 to the ticket URL of the escaped path rest
// (clean and dir are its ParsePath form): the viewer for a page, the file
// itself otherwise. The caller has authorized the viewer role.
func (h *hostAPI) redirectToTicket(w http.ResponseWriter, r *http.Request, session, rest, clean string, dir bool) {
	ticket, err := h.host.MintTicket(session, HashToken(tokenFrom(r, headerOrQuery)))
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	base := "/host/" + session + "/" + host.TicketPrefix + ticket + "/"
	q := withoutAccessToken(r.URL.RawQuery)
	var loc string
	switch ext := strings.ToLower(path.Ext(clean)); {
	case clean == host.ReservedDir || clean == host.ReservedDir+"/index.html":
		loc = base + host.ReservedDir + "/"
		if q != "" {
			loc += "?" + q
		}
	case clean == "" || dir || ext == ".html" || ext == ".htm" || ext == "":
		// A page (or a directory named without its slash): shown in the viewer.
		page := clean
		if dir && clean != "" {
			page += "/"
		}
		if q != "" {
			page += "?" + q
		}
		loc = base + host.ReservedDir + "/"
		if page != "" {
			loc += "?page=" + url.QueryEscape(page)
		}
	default:
		loc = base + rest
		if q != "" {
			loc += "?" + q
		}
	}
	hd := w.Header()
	hd.Set("Location", loc)
	hd.Set("Cache-Control", "no-store")
	hd.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusSeeOther)
}

// withoutAccessToken returns the raw query without its access_token
// parameters, the other parameters untouched and in order.
func withoutAccessToken(raw string) string {
	if raw == "" {
		return ""
	}
	var kept []string
	for _, part := range strings.Split(raw, "&") {
		k, _, _ := strings.Cut(part, "=")
		if uk, err := url.QueryUnescape(k); part == "" || k == "access_token" || (err == nil && uk == "access_token") {
			continue
		}
		kept = append(kept, part)
	}
	return strings.Join(kept, "&")
}

// serveTicketPage serves /host/{session}/~{ticket}/{rest}: the ticket must
// verify (HMAC, constant time), be unexpired and minted for this session, and
// the token it was minted for must still exist and still have the viewer role
// on the session (so revoking the token ends its tickets at once). Any token
// on the request is ignored. What it serves is host.ServeTicketPage's.
func (h *hostAPI) serveTicketPage(w http.ResponseWriter, r *http.Request, session, ticket, rest string, slash bool) {
	t, err := h.host.VerifyTicket(session, ticket)
	if err == nil {
		err = h.checkTicketHolder(r.Context(), session, t.TokenHash)
	}
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	if !slash { // /host/{session}/~{ticket} → the slash form, so relative URLs resolve under the ticket
		redirectSlash(w, r)
		return
	}
	if err := h.host.ServeTicketPage(w, r, t, ticket, rest); err != nil {
		h.s.problem(w, r, err)
	}
}

// checkTicketHolder checks that the token whose hash a ticket carries still
// exists, has not expired and has the viewer role on session. The configured
// admin token (--admin-token) is not in the store and cannot be revoked; its
// tickets end when they expire or the ticket key changes.
func (h *hostAPI) checkTicketHolder(ctx context.Context, session string, hash []byte) error {
	a := h.s.auth
	if a.adminHash != nil && subtle.ConstantTimeCompare(hash, a.adminHash) == 1 {
		return nil
	}
	rec, err := a.st.TokenByHash(ctx, hash)
	if errors.Is(err, canvas.ErrNotFound) || err == nil && rec.Expired(a.now()) {
		return host.RevokedTicketError(session)
	}
	if err != nil {
		return err
	}
	p := canvas.Principal{Actor: canvas.Actor{ID: rec.ActorID, Type: rec.ActorType}, Role: rec.Role, Canvases: rec.Canvases}
	if !p.CanAccess(session, canvas.RoleViewer) {
		return host.ForbiddenTicketError(session)
	}
	return nil
}

// redirectSlash answers 301, without a body, to the request's path with a
// slash appended.
func redirectSlash(w http.ResponseWriter, r *http.Request) {
	target := r.URL.EscapedPath() + "/"
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", target)
	w.WriteHeader(http.StatusMovedPermanently)
}

type hostFileList struct {
	Files []host.FileInfo `json:"files"`
}

func (h *hostAPI) handleListFiles(w http.ResponseWriter, r *http.Request) {
	session, ok := h.authorizedSession(w, r, canvas.RoleEditor)
	if !ok {
		return
	}
	files, err := h.host.ListFiles(r.Context(), session)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, hostFileList{Files: files})
}

// filePath authorizes an editor on the session and returns the decoded path.
func (h *hostAPI) filePath(r *http.Request) (session, rel string, err error) {
	if session, err = sessionParam(r); err != nil {
		return "", "", err
	}
	if err = authorize(r, session, canvas.RoleEditor); err != nil {
		return "", "", err
	}
	rest, err := restOfPath(r, "/api/host/"+session+"/files/")
	if err != nil {
		return "", "", err
	}
	rel, _, err = host.ParsePath(rest)
	if errors.Is(err, canvas.ErrNotFound) {
		err = canvas.Invalid("path", "names starting with . are reserved and cannot be written or deleted")
	}
	return session, rel, err
}

func (h *hostAPI) handlePutFile(w http.ResponseWriter, r *http.Request) {
	session, rel, err := h.filePath(r)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	fi, err := h.host.PutFile(r.Context(), session, rel, r.Body)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	status := http.StatusOK
	if fi.Created {
		status = http.StatusCreated
	}
	writeJSON(w, status, fi)
}

func (h *hostAPI) handleDeleteFile(w http.ResponseWriter, r *http.Request) {
	session, rel, err := h.filePath(r)
	if err == nil {
		err = h.host.DeleteFile(r.Context(), session, rel)
	}
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleStream serves GET /sse/host/{session}: first the a2ui messages that
// rebuild the current surfaces, then live reload, a2ui, present and invoke
// events, published through this process or another one sharing the store
// (hub.Hub.FollowHost keeps a2ui messages from being missed or doubled).
// A subscriber that falls behind, or missed another process's push, gets
// "reset" and the stream ends; the browser reconnects and receives the
// surfaces again. Its slot counts against Config.MaxStreamsPerToken like a
// canvas stream's (429 when the token has none left).
func (h *hostAPI) handleStream(w http.ResponseWriter, r *http.Request) {
	session, ok := h.authorizedSession(w, r, canvas.RoleViewer)
	if !ok {
		return
	}
	// Register before reading the state (host.Host.Snapshot).
	sub := h.s.hub.SubscribeHost(session)
	slot, err := h.s.streams.acquire(principalFrom(r.Context()).Actor.ID, tokenExpiry(r.Context()), sub.End)
	if err != nil {
		h.s.hub.UnsubscribeHost(session, sub)
		h.s.problem(w, r, err)
		return
	}
	defer h.s.streams.release(slot)
	version, snapshot, err := h.host.Snapshot(r.Context(), session)
	if err != nil {
		h.s.hub.UnsubscribeHost(session, sub)
		h.s.problem(w, r, err)
		return
	}
	out := openSSE(w, h.s.cfg.SSEWriteTimeout)
	defer out.close()
	out.write([]byte("retry: 1000\n\n"))
	for _, ev := range snapshot {
		out.write(hub.EncodeFrame(ev.Name, "", ev.Data))
	}
	if !out.flush() {
		h.s.hub.UnsubscribeHost(session, sub)
		return
	}
	h.s.hub.FollowHost(r.Context(), session, sub, sseConn{out}, version, h.s.cfg.Heartbeat)
}

func (h *hostAPI) handlePushA2UI(w http.ResponseWriter, r *http.Request) {
	session, ok := h.authorizedSession(w, r, canvas.RoleEditor)
	if !ok {
		return
	}
	body, err := readBody(r)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	res, err := h.host.PushA2UI(r.Context(), session, body)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *hostAPI) handleResetA2UI(w http.ResponseWriter, r *http.Request) {
	session, err := sessionParam(r)
	if err == nil {
		err = authorize(r, session, canvas.RoleEditor)
	}
	if err == nil {
		_, err = h.host.ResetA2UI(r.Context(), session)
	}
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleAction accepts a userAction from the A2UI page (through its
// viewer: a token or the session's capability) and hands it to the agent of
// the session's canvas as a message (the canvas is created when missing).
func (h *hostAPI) handleAction(w http.ResponseWriter, r *http.Request) {
	session, ok := h.authorizedSession(w, r, canvas.RoleEditor)
	if !ok {
		return
	}
	body, err := readBody(r)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	a, err := host.DecodeUserAction(body)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	delivered := false // nothing to deliver to without an agent inbox; the action is dropped after validation
	if h.inbox != nil {
		if _, err := h.sessionCanvas(r, session); err != nil {
			h.s.problem(w, r, err)
			return
		}
		m := host.Message{SessionID: session, HostSession: session, Principal: principalFrom(r.Context()),
			Prompt: fmt.Sprintf("userAction %q from component %q on surface %q", a.Name, a.SourceComponentID, a.SurfaceID),
			Source: "a2ui", Action: &a, ReceivedAt: h.s.now().UTC()}
		if err := h.inbox.Deliver(r.Context(), m); err != nil {
			h.s.problem(w, r, err)
			return
		}
		delivered = true
	}
	h.s.log.Debug("host userAction", "session", session, "name", a.Name, "delivered", delivered)
	w.WriteHeader(http.StatusAccepted)
}

// handlePresent publishes a present event (show, hide, navigate) to the
// session's viewers (in a tab of their own or in a web UI's pages panel).
func (h *hostAPI) handlePresent(w http.ResponseWriter, r *http.Request) {
	session, ok := h.authorizedSession(w, r, canvas.RoleEditor)
	if !ok {
		return
	}
	var p host.Presentation
	if err := decodeJSON(r, &p); err != nil {
		h.s.problem(w, r, err)
		return
	}
	n, panels, err := h.present(session, p)
	if err != nil {
		h.s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"browsers": n, "panels": panels})
}

// EventHostPresent is the event on a canvas's stream that tells the web
// UI's pages panel to show, hide or navigate host session {session} (the
// session of the canvas's id): {session, action, path?}.
const EventHostPresent = "host:present"

// present publishes p to the session's viewers and, as EventHostPresent, to
// the stream of the session's canvas (where a web UI opens its pages panel).
// It returns how many viewers and canvas subscribers it reached.
func (h *hostAPI) present(session string, p host.Presentation) (viewers, panels int, err error) {
	n, err := h.host.Present(session, p)
	if err != nil {
		return 0, 0, err
	}
	panels = h.s.hub.Subscribers(session)
	h.s.hub.PublishEvent(session, EventHostPresent, map[string]string{"session": session, "action": p.Action, "path": p.Path})
	return n, panels, nil
}
