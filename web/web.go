// Package web is canvasd's browser UI: a static shell (plain HTML, CSS and
// JavaScript, no build step, no external network) embedded in the binary.
// The shell is public; it asks for a token (kept in localStorage, or taken
// from ?access_token=) and then talks to the API like any other client:
// snapshot, commands with base_rev, and the canvas SSE stream. On that
// stream it answers the server's invoke calls from a fixed set of actions
// (agent:screenshot renders the SVG scene to a PNG data URL on an offscreen
// canvas; viewport; selection; anything else is refused, nothing is
// evaluated), and its agent box starts runs (POST /api/canvas-agent/run)
// with the page's viewport and selection.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var files embed.FS

// CSP is the Content-Security-Policy of every response: scripts, styles and
// connections only from the serving origin, no framing, no plugins, no
// forms. User text is never parsed as HTML by the UI; this is the second
// line of defence.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file with its precomputed validator.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// handler serves the shell and its assets from memory.
type handler struct {
	assets map[string]asset // by name relative to static/, e.g. "app.js"
}

// Handler returns the UI's handler. It serves index.html for "/" (and
// "/index.html"), and the files under static/ at "/ui/<name>". Only GET and
// HEAD are allowed (405 otherwise); unknown paths are 404. Every answer
// carries the CSP above, X-Content-Type-Options: nosniff and
// Referrer-Policy: no-referrer (the page may hold a token in its URL), and
// a strong ETag so browsers revalidate instead of running stale code. It is
// safe for concurrent use and holds no credentials: the page gets its token
// from the user.
func Handler() http.Handler {
	h := &handler{assets: map[string]asset{}}
	err := fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		h.assets[strings.TrimPrefix(p, "static/")] = asset{body: b, ctype: contentType(p),
			etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		panic("web: embedded assets: " + err.Error()) // compiled in: cannot fail at run time
	}
	return h
}

// ServeHTTP implements http.Handler.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		problem(w, http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed",
			r.Method+" is not supported on "+r.URL.Path+"; the web UI is read-only (GET)")
		return
	}
	var name string
	switch p := r.URL.Path; {
	case p == "/" || p == "/index.html":
		name = "index.html"
	case strings.HasPrefix(p, "/ui/"):
		name = path.Clean(strings.TrimPrefix(p, "/ui/"))
	}
	a, ok := h.assets[name]
	if !ok || name == "" || strings.HasPrefix(name, ".") {
		problem(w, http.StatusNotFound, "not-found", "Not found",
			"no web UI asset at "+r.URL.Path+"; the UI is served at /")
		return
	}
	hd.Set("Content-Type", a.ctype)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", a.etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body)) // no Last-Modified: the ETag validates
}

// problem writes a small RFC 9457 document (this package does not import api).
func problem(w http.ResponseWriter, status int, typ, title, detail string) {
	b, _ := json.Marshal(map[string]any{"type": "https://canvasd.dev/problems/" + typ, "title": title,
		"status": status, "detail": detail})
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".ico":
		return "image/x-icon"
	}
	return "application/octet-stream"
}
