package host

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// The built-in pages (Config.ShellFS, built from web/ui/shell into
// web/dist/shell): the viewer that shows a session's pages in a frame it
// controls, the runtime injected into every HTML page served in that frame,
// and the A2UI page. They are served under /host/{session}/__canvas__/.
const (
	viewerTemplate = "index.html" // the viewer, with {{SESSION}}, {{BASE}}, {{ASSETS}}, {{CAP}}, {{MAXIMAGE}}
	a2uiPage       = "a2ui.html"  // the A2UI page, with {{ASSETS}}
	agentLinkPage  = "agent.html" // where canvasd://agent links lead in the viewer (AgentLinkPath)
	runtimeScript  = "page.js"    // injected into served HTML pages
)

// welcomePage is served when the built-in pages are missing (a binary built
// without `make ui`).
const welcomePage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>canvasd host</title></head>
<body style="font-family: system-ui, sans-serif; margin: 3rem; color: #222">
<h1>canvasd canvas host</h1>
<p>Session <code>{{SESSION}}</code>: this server was built without its web pages (the viewer and the A2UI page), so it cannot show the session here.</p>
<p>Build them with <code>make ui</code> and rebuild canvasd. The session's files are still served at <code>/host/{{SESSION}}/&lt;path&gt;</code>.</p>
</body></html>
`

var shellStart = time.Now()

// hostHeader is what a Host header may hold to be used in the viewer's
// frame-src (anything else falls back to 'self').
var hostHeader = regexp.MustCompile(`^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$`)

// ViewerCSP is the Content-Security-Policy of the viewer of session,
// answering r: our own scripts and styles only, connections to this origin,
// and frames only from the session's own files (/host/{session}/), so that a
// page in the frame cannot navigate it elsewhere (to another session, the
// API or another site). The frame's origin is the one r was sent to.
func ViewerCSP(r *http.Request, session string) string {
	frame := "'self'"
	if hostHeader.MatchString(r.Host) {
		scheme := "http://" // also matches https (CSP allows the upgrade)
		if r.TLS != nil {
			scheme = "https://"
		}
		frame = scheme + r.Host + "/host/" + session + "/"
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"frame-src " + frame + "; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
}

// viewerOptions are what a viewer page carries.
type viewerOptions struct {
	base string // the session's files as the frame reads them: /host/{session}/~{ticket}/
	cap  string // the bridge capability; "" outside a ticket (the viewer then says how to open it)
}

// serveViewer writes the viewer of session, or the welcome page when the
// built-in pages are missing.
func (h *Host) serveViewer(w http.ResponseWriter, r *http.Request, session string, o viewerOptions) {
	page, err := fs.ReadFile(h.shell, viewerTemplate)
	if err != nil {
		h.serveWelcome(w, r, session)
		return
	}
	if o.base == "" {
		o.base = "/host/" + session + "/"
	}
	// Session names are [A-Za-z0-9._-] (ValidateSession), tickets and
	// capabilities base64url and ".": safe in HTML attributes.
	page = bytes.ReplaceAll(page, []byte("{{BASE}}"), []byte(o.base))
	page = bytes.ReplaceAll(page, []byte("{{ASSETS}}"), []byte(h.assets(session)))
	page = bytes.ReplaceAll(page, []byte("{{CAP}}"), []byte(o.cap))
	page = bytes.ReplaceAll(page, []byte("{{MAXIMAGE}}"), []byte(strconv.FormatInt(h.cfg.MaxImageBytes, 10)))
	page = bytes.ReplaceAll(page, []byte("{{SESSION}}"), []byte(session))
	commonHeaders(w, ViewerCSP(r, session))
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store") // it carries a capability
	hd.Set("X-Frame-Options", "SAMEORIGIN")
	_, _ = w.Write(page)
}

func (h *Host) serveWelcome(w http.ResponseWriter, r *http.Request, session string) {
	commonHeaders(w, ShellCSP)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	http.ServeContent(w, r, "index.html", shellStart, strings.NewReader(strings.ReplaceAll(welcomePage, "{{SESSION}}", session)))
}

// assets is where session's built-in assets are served (public: they hold
// no session data).
func (h *Host) assets(session string) string {
	return "/host/" + session + "/" + ReservedDir + "/"
}

// serveA2UIPage writes the built-in A2UI page of session, with the runtime
// when it is served in a viewer (runtime: the ticketed request).
func (h *Host) serveA2UIPage(w http.ResponseWriter, r *http.Request, session string, runtime bool) error {
	page, err := fs.ReadFile(h.shell, a2uiPage)
	if err != nil {
		return fmt.Errorf("built-in A2UI page: %w", canvas.ErrNotFound)
	}
	page = bytes.ReplaceAll(page, []byte("{{ASSETS}}"), []byte(h.assets(session)))
	if runtime {
		page = h.injectRuntime(page, session)
	}
	commonHeaders(w, PageCSP)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	http.ServeContent(w, r, a2uiPage, shellStart, bytes.NewReader(page))
	return nil
}

// serveBuiltin serves /host/{session}/__canvas__/{name}: "" (or
// index.html) is the viewer, a2ui.html the A2UI page, other names the
// pages' scripts and styles. inViewer is set under a page ticket (the
// viewer then carries opts' capability, the A2UI page the runtime).
func (h *Host) serveBuiltin(w http.ResponseWriter, r *http.Request, session, name string, opts viewerOptions, inViewer bool) error {
	switch {
	case name == "" || name == viewerTemplate:
		h.serveViewer(w, r, session, opts)
		return nil
	case name == a2uiPage:
		return h.serveA2UIPage(w, r, session, inViewer)
	case name == agentLinkPage && inViewer:
		page, err := fs.ReadFile(h.shell, agentLinkPage)
		if err != nil {
			return fmt.Errorf("built-in agent link page: %w", canvas.ErrNotFound)
		}
		commonHeaders(w, PageCSP)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		http.ServeContent(w, r, agentLinkPage, shellStart, bytes.NewReader(h.injectRuntime(page, session)))
		return nil
	case strings.Contains(name, "/") || strings.HasSuffix(name, ".html"):
		return fmt.Errorf("built-in asset %q: %w", name, canvas.ErrNotFound)
	}
	b, err := fs.ReadFile(h.shell, name)
	if err != nil {
		return fmt.Errorf("built-in asset %q: %w", name, canvas.ErrNotFound)
	}
	commonHeaders(w, ShellCSP)
	w.Header().Set("Content-Type", contentType(name))
	http.ServeContent(w, r, path.Base(name), shellStart, bytes.NewReader(b))
	return nil
}

// IsPublicAsset reports whether the escaped path after /host/{session}/
// names a built-in asset (under __canvas__/, not the viewer itself), which
// holds no session data and may be served without credentials.
func IsPublicAsset(escapedPath string) bool {
	clean, _, err := ParsePath(escapedPath)
	if err != nil || !strings.HasPrefix(clean, ReservedDir+"/") {
		return false
	}
	name := strings.TrimPrefix(clean, ReservedDir+"/")
	return name != "" && name != viewerTemplate && !strings.Contains(name, "/")
}

// AgentLinkScheme is the start of an agent link in a page
// (canvasd://agent?message=...&key=...).
const AgentLinkScheme = "canvasd://agent"

// rewriteAgentLinks replaces canvasd://agent in a page or script served in
// the viewer with the address of the session's agent-link page under the
// page ticket (base: /host/{session}/~{ticket}/), so that
// location.href = "canvasd://agent?message=..." (which a page in an opaque
// origin cannot be watched doing) becomes a navigation the runtime sees;
// links to it are taken by the runtime before they navigate.
func rewriteAgentLinks(data []byte, base string) []byte {
	if !bytes.Contains(data, []byte(AgentLinkScheme)) {
		return data
	}
	return bytes.ReplaceAll(data, []byte(AgentLinkScheme), []byte(base+ReservedDir+"/"+agentLinkPage))
}

// doctype matches the start of an HTML document up to the end of its
// doctype: a BOM, whitespace and comments may precede it.
var doctype = regexp.MustCompile(`(?is)^(\x{FEFF}?(\s|<!--.*?-->)*<!doctype[^>]*>)`)

// injectRuntime returns page with the runtime's script tag first: right
// after the doctype (so the page keeps its rendering mode) or at the very
// start. The script runs before anything of the page's own.
func (h *Host) injectRuntime(page []byte, session string) []byte {
	tag := []byte(`<script src="` + h.assets(session) + runtimeScript + `"></script>`)
	n := 0
	if m := doctype.FindIndex(page); m != nil {
		n = m[1]
	} else if bytes.HasPrefix(page, []byte("\xEF\xBB\xBF")) {
		n = 3
	}
	out := make([]byte, 0, len(page)+len(tag))
	out = append(out, page[:n]...)
	out = append(out, tag...)
	return append(out, page[n:]...)
}
