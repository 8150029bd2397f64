package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// PageCSP is the Content-Security-Policy of every agent-written file served
// under /host/{session}/ (and of the built-in A2UI page): a sandbox without
// allow-same-origin, so the page runs scripts in an opaque origin and cannot
// use the API's credentials, storage or cookies. Its popups (external links
// open in one) leave the sandbox.
const PageCSP = "sandbox allow-scripts allow-forms allow-modals allow-popups allow-popups-to-escape-sandbox allow-downloads"

// ShellCSP is the policy of the built-in scripts and styles (and the page
// shown when they are missing): no inline or foreign scripts, network only
// to this origin.
const ShellCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: https:; " +
	"media-src 'self' data: blob: https:; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"

// FileInfo describes one file of a session.
type FileInfo struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	Created  bool      `json:"-"` // PutFile: the file did not exist before
}

// ServePage answers GET/HEAD /host/{session}/{escapedPath} for a client
// that sent a token (an API client reading files: no page ticket) from the
// session's files in the store, exactly as stored. escapedPath is the
// request's still-escaped path after "/host/{session}/" (use
// r.URL.EscapedPath(), not a router's decoded value). A directory serves its
// index.html or index.htm (redirecting to the slash form first); the session
// root without an index serves the viewer; other directories without an
// index are not found (there are no listings). "__canvas__/..." serves the
// built-in pages and assets.
//
// It returns an error, having written nothing, when the request is refused:
// ErrInvalid (400) for a hostile or malformed path or session name,
// ErrNotFound (404) otherwise, or the store's error. A nil error means the
// response was written.
func (h *Host) ServePage(w http.ResponseWriter, r *http.Request, session, escapedPath string) error {
	if err := ValidateSession(session); err != nil {
		return err
	}
	return h.servePage(w, r, session, escapedPath, nil)
}

// ServeTicketPage answers GET/HEAD /host/{session}/~{ticket}/{escapedRest},
// the addresses a browser uses; the caller has verified t (VerifyTicket)
// and that its token still has the viewer role on the session. It serves
// as ServePage does, except that:
//
//   - __canvas__/ is the viewer of the session, carrying a bridge
//     capability minted for t's token (MintCap; never in a URL);
//   - an HTML page loaded as a top-level document is answered 303 to the
//     viewer with ?page= naming it, so every page is shown in the viewer's
//     frame; in a frame it is served with the runtime's script first
//     (injectRuntime), as is the built-in A2UI page, which stands for the
//     session root while the session has no index.html;
//   - a request from an opaque origin (Origin: null: the session's own
//     pages, sandboxed) may read the files (Access-Control-Allow-Origin:
//     null), so a snapshot can draw the page's images and fonts.
func (h *Host) ServeTicketPage(w http.ResponseWriter, r *http.Request, t Ticket, ticket, escapedRest string) error {
	if err := ValidateSession(t.Session); err != nil {
		return err
	}
	return h.servePage(w, r, t.Session, escapedRest, &ticketed{t: t, base: "/host/" + t.Session + "/" + TicketPrefix + ticket + "/"})
}

// ticketed is a request under a page ticket.
type ticketed struct {
	t    Ticket
	base string // /host/{session}/~{ticket}/
}

func (h *Host) servePage(w http.ResponseWriter, r *http.Request, session, escapedPath string, tk *ticketed) error {
	clean, isDir, err := ParsePath(escapedPath)
	if err != nil {
		return err
	}
	if clean == ReservedDir || strings.HasPrefix(clean, ReservedDir+"/") {
		if clean == ReservedDir && !isDir {
			redirectSlash(w, r)
			return nil
		}
		name := strings.TrimPrefix(strings.TrimPrefix(clean, ReservedDir), "/")
		var opts viewerOptions
		if tk != nil && (name == "" || name == viewerTemplate) {
			c, err := h.MintCap(session, tk.t.TokenHash, tk.t.Expires)
			if err != nil {
				return err
			}
			opts = viewerOptions{base: tk.base, cap: c}
		}
		return h.serveBuiltin(w, r, session, name, opts, tk != nil)
	}
	ctx := r.Context()
	var f canvas.HostFile
	switch {
	case clean == "":
		f, err = h.index(ctx, session, "")
		if errors.Is(err, canvas.ErrNotFound) {
			if tk == nil {
				h.serveViewer(w, r, session, viewerOptions{})
				return nil
			}
			if topLevel(r) {
				redirectToViewer(w, r, tk, "")
				return nil
			}
			return h.serveA2UIPage(w, r, session, true)
		}
		if err != nil {
			return err
		}
	default:
		f, err = h.store.GetHostFile(ctx, session, clean)
		if err == nil && isDir { // "file.txt/" names a file as if it were a directory
			return fmt.Errorf("host file %q is not a directory: %w", clean, canvas.ErrNotFound)
		}
		if errors.Is(err, canvas.ErrNotFound) {
			f, err = h.dirIndex(w, r, session, clean, isDir)
			if err != nil || f.Path == "" {
				return err // "" : redirected to the slash form
			}
		} else if err != nil {
			return err
		}
	}
	html := strings.HasPrefix(contentType(f.Path), "text/html")
	if tk != nil && html && topLevel(r) {
		redirectToViewer(w, r, tk, strings.TrimPrefix(r.URL.EscapedPath(), tk.base))
		return nil
	}
	var base string
	if tk != nil {
		base = tk.base
	}
	serveFile(w, r, f, html, session, h, base)
	return nil
}

// dirIndex returns the index of directory clean, having checked that it is
// one; a directory named without its slash is redirected (f.Path "").
func (h *Host) dirIndex(w http.ResponseWriter, r *http.Request, session, clean string, isDir bool) (canvas.HostFile, error) {
	dir, err := h.store.HostDirExists(r.Context(), session, clean)
	if err != nil {
		return canvas.HostFile{}, err
	}
	if !dir {
		return canvas.HostFile{}, fmt.Errorf("host file %q: %w", clean, canvas.ErrNotFound)
	}
	if !isDir {
		redirectSlash(w, r)
		return canvas.HostFile{}, nil
	}
	f, err := h.index(r.Context(), session, clean)
	if errors.Is(err, canvas.ErrNotFound) {
		return f, fmt.Errorf("host directory %q has no index.html: %w", clean, canvas.ErrNotFound)
	}
	return f, err
}

// topLevel reports whether r loads a top-level document (Fetch Metadata;
// browsers without it are sent to the viewer by the runtime instead).
func topLevel(r *http.Request) bool { return r.Header.Get("Sec-Fetch-Dest") == "document" }

// redirectToViewer answers 303 to the session's viewer showing page (the
// still-escaped path under the ticket, "" for the root) with r's query.
func redirectToViewer(w http.ResponseWriter, r *http.Request, tk *ticketed, page string) {
	if r.URL.RawQuery != "" {
		page += "?" + r.URL.RawQuery
	}
	loc := tk.base + ReservedDir + "/"
	if page != "" {
		if dec, err := url.PathUnescape(page); err == nil {
			page = dec
		}
		loc += "?page=" + url.QueryEscape(page)
	}
	hd := w.Header()
	hd.Set("Location", loc)
	hd.Set("Cache-Control", "no-store")
	hd.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusSeeOther)
}

// index returns dir's index.html, else its index.htm, else ErrNotFound.
func (h *Host) index(ctx context.Context, session, dir string) (canvas.HostFile, error) {
	for _, name := range []string{"index.html", "index.htm"} {
		f, err := h.store.GetHostFile(ctx, session, path.Join(dir, name))
		if !errors.Is(err, canvas.ErrNotFound) {
			return f, err
		}
	}
	return canvas.HostFile{}, fmt.Errorf("host directory %q has no index: %w", dir, canvas.ErrNotFound)
}

func redirectSlash(w http.ResponseWriter, r *http.Request) {
	target := r.URL.EscapedPath() + "/"
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	http.Redirect(w, r, target, http.StatusMovedPermanently)
}

func commonHeaders(w http.ResponseWriter, csp string) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-cache")
	// No Cross-Origin-Resource-Policy: sandboxed pages have an opaque origin,
	// so same-origin would block their own scripts, styles and images.
}

func contentType(name string) string {
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

// serveFile writes f. Under a page ticket (base, /host/{session}/~{ticket}/,
// not ""): an HTML page gets the runtime first, HTML and scripts have their
// canvasd://agent links rewritten (rewriteAgentLinks), and the session's
// sandboxed pages may read the file (CORS for Origin: null).
func serveFile(w http.ResponseWriter, r *http.Request, f canvas.HostFile, html bool, session string, h *Host, base string) {
	commonHeaders(w, PageCSP)
	hd := w.Header()
	ct := contentType(f.Path)
	hd.Set("Content-Type", ct)
	data := f.Data
	if base != "" {
		hd.Add("Vary", "Origin")
		if r.Header.Get("Origin") == "null" {
			hd.Set("Access-Control-Allow-Origin", "null")
		}
		if html || strings.Contains(ct, "javascript") {
			data = rewriteAgentLinks(data, base)
		}
		if html {
			data = h.injectRuntime(data, session)
		}
	}
	http.ServeContent(w, r, path.Base(f.Path), f.Modified, bytes.NewReader(data))
}

// PutFile stores one file of the session (replacing it atomically: readers
// see the old or the new content), its parent directories implied. rel is a
// decoded relative path (see CleanPath); hidden names, the reserved
// __canvas__ directory and top-level names starting with TicketPrefix ("~",
// page tickets) are refused. More than MaxFileBytes is ErrTooLarge and
// stores nothing. A path that is a directory, or below a file, is
// ErrUnprocessable. Subscribers of the session, on every process, get a
// "reload" event.
func (h *Host) PutFile(ctx context.Context, session, rel string, body io.Reader) (FileInfo, error) {
	if err := ValidateSession(session); err != nil {
		return FileInfo{}, err
	}
	clean, err := writablePath(rel)
	if err != nil {
		return FileInfo{}, err
	}
	data, err := io.ReadAll(io.LimitReader(body, h.cfg.MaxFileBytes+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return FileInfo{}, fmt.Errorf("file is larger than the limit of %d bytes: %w", h.cfg.MaxFileBytes, canvas.ErrTooLarge)
		}
		return FileInfo{}, fmt.Errorf("host: read %q: %w", clean, err)
	}
	if int64(len(data)) > h.cfg.MaxFileBytes {
		return FileInfo{}, fmt.Errorf("file is larger than the limit of %d bytes; split it or raise the limit: %w", h.cfg.MaxFileBytes, canvas.ErrTooLarge)
	}
	now := h.cfg.Now().UTC()
	created, err := h.store.PutHostFile(ctx, canvas.HostFile{Session: session, Path: clean, Data: data, Modified: now})
	if errors.Is(err, canvas.ErrConflict) {
		if dir, derr := h.store.HostDirExists(ctx, session, clean); derr == nil && dir {
			return FileInfo{}, canvas.Unprocessable("path", "%q is a directory", clean)
		}
		return FileInfo{}, canvas.Unprocessable("path", "cannot create the directories of %q (a file of that name exists?)", clean)
	}
	if err != nil {
		return FileInfo{}, err
	}
	h.publishReload(session, clean, "put")
	return FileInfo{Path: clean, Size: int64(len(data)), Modified: now, Created: created}, nil
}

// writablePath checks a decoded path for PutFile and returns it clean.
func writablePath(rel string) (string, error) {
	clean, isDir, err := CleanPath(rel)
	if errors.Is(err, canvas.ErrNotFound) {
		return "", canvas.Invalid("path", "names starting with . are never served, so they cannot be written")
	}
	if err != nil {
		return "", err
	}
	if clean == "" || isDir {
		return "", canvas.Invalid("path", "name a file, not a directory")
	}
	if clean == ReservedDir || strings.HasPrefix(clean, ReservedDir+"/") {
		return "", canvas.Invalid("path", "%s/ is reserved for built-in assets; choose another directory", ReservedDir)
	}
	if strings.HasPrefix(clean, TicketPrefix) {
		return "", canvas.Invalid("path", "top-level names starting with %s are reserved for page tickets (/host/{session}/%s{ticket}/...); choose another name", TicketPrefix, TicketPrefix)
	}
	return clean, nil
}

// DeleteFile removes one file of the session. A missing file is
// ErrNotFound, a directory (it holds files) ErrUnprocessable. Subscribers
// get a "reload" event.
func (h *Host) DeleteFile(ctx context.Context, session, rel string) error {
	if err := ValidateSession(session); err != nil {
		return err
	}
	clean, _, err := CleanPath(rel)
	if err != nil {
		return err
	}
	if clean == "" {
		return canvas.Invalid("path", "name a file")
	}
	err = h.store.DeleteHostFile(ctx, session, clean)
	if errors.Is(err, canvas.ErrNotFound) {
		if dir, derr := h.store.HostDirExists(ctx, session, clean); derr == nil && dir {
			return canvas.Unprocessable("path", "%q is a directory that holds files; delete the files", clean)
		}
		return fmt.Errorf("host file %q: %w", clean, canvas.ErrNotFound)
	}
	if err != nil {
		return err
	}
	h.publishReload(session, clean, "delete")
	return nil
}

// maxListed bounds ListFiles.
const maxListed = 10000

// ListFiles lists the session's files sorted by path (byte order), at most
// 10000. A session without files has none (an empty list, not an error).
func (h *Host) ListFiles(ctx context.Context, session string) ([]FileInfo, error) {
	if err := ValidateSession(session); err != nil {
		return nil, err
	}
	fs, err := h.store.ListHostFiles(ctx, session, maxListed)
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, len(fs))
	for i, f := range fs {
		out[i] = FileInfo{Path: f.Path, Size: f.Size, Modified: f.Modified}
	}
	return out, nil
}

func (h *Host) publishReload(session, p, op string) {
	h.publish(session, Event{Name: EventReload, Data: mustJSON(map[string]string{"path": p, "op": op})})
}
