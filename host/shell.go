package host

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

//go:embed shell
var shellFiles embed.FS

func embeddedShell() fs.FS {
	sub, err := fs.Sub(shellFiles, "shell")
	if err != nil {
		panic("host: embedded shell: " + err.Error()) // the directory is compiled in
	}
	return sub
}

// welcomePage is served when the shell's assets are missing.
const welcomePage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>canvasd host</title></head>
<body style="font-family: system-ui, sans-serif; margin: 3rem; color: #222">
<h1>canvasd canvas host</h1>
<p>Session <code>{{SESSION}}</code> has no <code>index.html</code> yet, and the built-in A2UI shell is not available on this server.</p>
<p>Write files with <code>PUT /api/host/{{SESSION}}/files/index.html</code>.</p>
</body></html>
`

var shellStart = time.Now()

// serveShell writes the built-in A2UI shell for session, or the welcome page
// when the shell's index.html is missing.
func (h *Host) serveShell(w http.ResponseWriter, r *http.Request, session string) {
	page, err := fs.ReadFile(h.shell, "index.html")
	if err != nil {
		page = []byte(welcomePage)
	}
	// Session names are [A-Za-z0-9._-] (ValidateSession), safe in HTML attributes and JS strings.
	page = bytes.ReplaceAll(page, []byte("{{BASE}}"), []byte("/host/"+session+"/"+ReservedDir+"/"))
	page = bytes.ReplaceAll(page, []byte("{{SESSION}}"), []byte(session))
	commonHeaders(w, ShellCSP)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	http.ServeContent(w, r, "index.html", shellStart, bytes.NewReader(page))
}

// serveBuiltin serves /host/{session}/__canvas__/{name}: "" is the shell,
// other names are the shell's assets. eval.html (the sandboxed helper that
// runs "eval" invokes) gets the sandbox policy, the rest the shell policy.
func (h *Host) serveBuiltin(w http.ResponseWriter, r *http.Request, session, name string) error {
	if name == "" || name == "index.html" {
		h.serveShell(w, r, session)
		return nil
	}
	if strings.Contains(name, "/") {
		return fmt.Errorf("built-in asset %q: %w", name, canvas.ErrNotFound)
	}
	b, err := fs.ReadFile(h.shell, name)
	if err != nil {
		return fmt.Errorf("built-in asset %q: %w", name, canvas.ErrNotFound)
	}
	csp := ShellCSP
	if name == "eval.html" {
		csp = PageCSP
	}
	commonHeaders(w, csp)
	w.Header().Set("Content-Type", contentType(name))
	http.ServeContent(w, r, path.Base(name), shellStart, bytes.NewReader(b))
	return nil
}

// IsPublicAsset reports whether the escaped path after /host/{session}/
// names a built-in shell asset (under __canvas__/, not the shell page
// itself), which holds no session data and may be served without
// credentials.
func IsPublicAsset(escapedPath string) bool {
	clean, _, err := ParsePath(escapedPath)
	if err != nil || !strings.HasPrefix(clean, ReservedDir+"/") {
		return false
	}
	name := strings.TrimPrefix(clean, ReservedDir+"/")
	return name != "" && name != "index.html" && !strings.Contains(name, "/")
}
