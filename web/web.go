// Package web serves canvasd's browser UI: a TypeScript application (source
// in web/ui: Excalidraw for the canvas, CodeMirror 6 for documents, on the
// public API) bundled by `make ui` into web/dist and embedded in the binary.
// A binary built without the bundle still serves a page at / that says how
// to build it.
//
// The shell is public; it asks for a token (kept in localStorage, or handed
// over once in the fragment as #access_token=...) and then talks to the API
// like any other client.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed dist
var files embed.FS

// CSP is the Content-Security-Policy of every response: scripts,
// connections, fonts and frames only from the serving origin, no plugins,
// no forms, no framing of the UI. Inline styles are allowed (the editors set
// them); user text is never parsed as HTML by the UI.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; " +
	"font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; frame-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file with its validator and, for text, its gzipped
// copy: the build's (name.gz beside it in dist), else made on first use.
type asset struct {
	body      []byte
	ctype     string
	etag      string
	immutable bool // a content-hashed name: cached for a year

	gzOnce sync.Once
	gz     []byte
}

// handler serves the bundle from memory.
type handler struct {
	assets map[string]*asset // by path relative to dist/, e.g. "app.js", "chunks/x-HASH.js"
	built  bool              // dist/index.html exists
}

// Handler returns the UI's handler. It serves index.html at "/" (and
// "/index.html") and the bundle's files at "/ui/<path>". Only GET and HEAD
// are allowed (405 otherwise); unknown paths are 404 problem documents.
// Every answer carries the CSP above, X-Content-Type-Options: nosniff and
// Referrer-Policy: no-referrer; files carry a strong ETag (content-hashed
// chunks and fonts are also immutable for a year) and are gzipped when the
// client accepts it. Without a built bundle, "/" answers a page saying how
// to build the UI. Safe for concurrent use; holds no credentials.
func Handler() http.Handler {
	dist, err := fs.Sub(files, "dist")
	if err != nil {
		panic("web: embedded assets: " + err.Error()) // compiled in: cannot fail at run time
	}
	return newHandler(dist)
}

// newHandler serves the bundle in dist (the embedded one, or a test's).
func newHandler(dist fs.FS) http.Handler {
	h := &handler{assets: map[string]*asset{}}
	err := fs.WalkDir(dist, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasPrefix(name, "shell/") {
			return nil // the host's pages: served under /host/{session}/__canvas__/ (ShellFS)
		}
		if strings.HasSuffix(name, ".gz") {
			return nil // a file's gzipped copy, taken with the file
		}
		b, err := fs.ReadFile(dist, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		a := &asset{body: b, ctype: contentType(name), etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`,
			immutable: strings.HasPrefix(name, "chunks/") || strings.HasPrefix(name, "assets/") || strings.HasPrefix(name, "fonts/")}
		if gz, err := fs.ReadFile(dist, name+".gz"); err == nil && a.compressible() {
			a.gz = gz // compressed by the build: no first request waits for it
		}
		h.assets[name] = a
		return nil
	})
	if err != nil {
		panic("web: embedded assets: " + err.Error()) // compiled in: cannot fail at run time
	}
	_, h.built = h.assets["index.html"]
	return h
}

// ShellFS returns the canvas host's built pages (dist/shell: the viewer
// template index.html, viewer.js and viewer.css, the page runtime page.js
// injected into served pages, and the A2UI page a2ui.html with a2ui.js),
// for host.Config.ShellFS. Without a built bundle it holds nothing, and the
// host serves its plain welcome page instead of the viewer.
func ShellFS() fs.FS {
	sub, err := fs.Sub(files, "dist/shell")
	if err != nil {
		panic("web: embedded assets: " + err.Error()) // compiled in: cannot fail at run time
	}
	return sub
}

// Built reports whether the binary holds the UI bundle.
func Built() bool {
	_, err := fs.Stat(files, "dist/index.html")
	return err == nil
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
		if !h.built {
			hd.Set("Content-Type", "text/html; charset=utf-8")
			hd.Set("Cache-Control", "no-cache")
			_, _ = w.Write([]byte(notBuiltPage))
			return
		}
		name = "index.html"
	case strings.HasPrefix(p, "/ui/"):
		name = strings.TrimPrefix(p, "/ui/")
	}
	a, ok := h.assets[name]
	if !ok || name == "" || name == "BUILD.txt" || path.Clean(name) != name || strings.HasPrefix(path.Base(name), ".") {
		detail := "no web UI asset at " + r.URL.Path + "; the UI is served at /"
		if !h.built {
			detail += " (this binary was built without the UI bundle: run `make ui`, then rebuild)"
		}
		problem(w, http.StatusNotFound, "not-found", "Not found", detail)
		return
	}
	hd.Set("Content-Type", a.ctype)
	if a.immutable {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	hd.Set("ETag", a.etag)
	body := a.body
	if a.compressible() {
		hd.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			body = a.gzipped()
			hd.Set("Content-Encoding", "gzip")
		}
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body)) // no Last-Modified: the ETag validates
}

func (a *asset) compressible() bool {
	return len(a.body) > 1024 && (strings.HasPrefix(a.ctype, "text/") || strings.HasPrefix(a.ctype, "application/json"))
}

func (a *asset) gzipped() []byte {
	a.gzOnce.Do(func() {
		if a.gz != nil {
			return // the build's
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		_, _ = zw.Write(a.body)
		_ = zw.Close()
		a.gz = buf.Bytes()
	})
	return a.gz
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if enc, q, _ := strings.Cut(strings.TrimSpace(part), ";"); strings.TrimSpace(enc) == "gzip" && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}

// notBuiltPage is what "/" shows when the binary has no UI bundle.
const notBuiltPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>canvasd</title></head>
<body style="font: 15px/1.5 system-ui, sans-serif; max-width: 44em; margin: 3em auto; padding: 0 1em">
<h1>canvasd is running, but this binary has no web UI</h1>
<p>The browser UI is a TypeScript application in <code>web/ui</code> that is bundled and then
embedded in the binary. This binary was built without the bundle (a plain <code>go build</code>).</p>
<p>To build it (needs Node.js 20 and npm):</p>
<pre>make ui      # npm ci and the bundle, into web/dist
make build   # or make run: the binary now embeds the UI</pre>
<p>The API works without the UI: see <a href="/openapi.yaml">/openapi.yaml</a>.</p>
</body></html>
`

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
	case ".json":
		return "application/json"
	case ".txt":
		return "text/plain; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".woff2":
		return "font/woff2"
	case ".ttf":
		return "font/ttf"
	case ".ico":
		return "image/x-icon"
	}
	return "application/octet-stream"
}
