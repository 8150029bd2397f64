package host

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// PageCSP is the Content-Security-Policy of every agent-written file served
// under /host/{session}/: a sandbox without allow-same-origin, so the page
// runs scripts in an opaque origin and cannot use the API's credentials,
// storage or cookies.
const PageCSP = "sandbox allow-scripts allow-forms allow-modals allow-popups allow-downloads"

// ShellCSP is the policy of the built-in shell, which is our own code: no
// inline or foreign scripts, network only to this origin.
const ShellCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob: https:; " +
	"media-src 'self' data: blob: https:; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"

// FileInfo describes one file in a session directory.
type FileInfo struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	Created  bool      `json:"-"` // PutFile: the file did not exist before
}

// ServePage answers GET/HEAD /host/{session}/{escapedPath}. escapedPath is
// the request's still-escaped path after "/host/{session}/" (use
// r.URL.EscapedPath(), not a router's decoded value). Files are read through
// os.Root, so symlinks that point outside the session directory are not
// followed. A directory serves its index.html or index.htm (redirecting to
// the slash form first); the session root without an index serves the
// built-in A2UI shell; other directories without an index are not found
// (there are no listings). "__canvas__/..." serves built-in assets.
//
// It returns an error, having written nothing, when the request is refused:
// ErrInvalid (400) for a hostile or malformed path or session name,
// ErrNotFound (404) otherwise. A nil error means the response was written.
func (h *Host) ServePage(w http.ResponseWriter, r *http.Request, session, escapedPath string) error {
	if err := ValidateSession(session); err != nil {
		return err
	}
	clean, isDir, err := ParsePath(escapedPath)
	if err != nil {
		return err
	}
	if clean == ReservedDir || strings.HasPrefix(clean, ReservedDir+"/") {
		if clean == ReservedDir && !isDir {
			redirectSlash(w, r)
			return nil
		}
		return h.serveBuiltin(w, r, session, strings.TrimPrefix(strings.TrimPrefix(clean, ReservedDir), "/"))
	}
	sroot, err := h.root.OpenRoot(session)
	if err != nil {
		if clean == "" {
			h.serveShell(w, r, session)
			return nil
		}
		return fmt.Errorf("host session %q: %w", session, canvas.ErrNotFound)
	}
	defer sroot.Close()
	name := clean
	if name == "" {
		name = "."
	}
	f, st, err := openRegularOrDir(sroot, name)
	if err != nil {
		return fmt.Errorf("host file %q: %w", clean, canvas.ErrNotFound)
	}
	if st.IsDir() {
		f.Close()
		if !isDir && clean != "" {
			redirectSlash(w, r)
			return nil
		}
		for _, idx := range []string{"index.html", "index.htm"} {
			f, st, err = openRegularOrDir(sroot, path.Join(name, idx))
			if err == nil && !st.IsDir() {
				defer f.Close()
				h.serveFile(w, r, idx, st, f)
				return nil
			}
			if err == nil {
				f.Close()
			}
		}
		if clean == "" {
			h.serveShell(w, r, session)
			return nil
		}
		return fmt.Errorf("host directory %q has no index.html: %w", clean, canvas.ErrNotFound)
	}
	defer f.Close()
	if isDir { // "file.txt/" names a file as if it were a directory
		return fmt.Errorf("host file %q is not a directory: %w", clean, canvas.ErrNotFound)
	}
	h.serveFile(w, r, clean, st, f)
	return nil
}

func openRegularOrDir(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.IsDir() && !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: not a regular file: %w", name, canvas.ErrNotFound)
	}
	return f, st, nil
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

func (h *Host) serveFile(w http.ResponseWriter, r *http.Request, name string, st fs.FileInfo, f io.ReadSeeker) {
	commonHeaders(w, PageCSP)
	w.Header().Set("Content-Type", contentType(name))
	http.ServeContent(w, r, name, st.ModTime(), f)
}

// PutFile writes one file of the session atomically (a temporary file in the
// same directory, synced, then renamed over the target), creating the session
// and parent directories. rel is a decoded relative path (see CleanPath);
// hidden names, the reserved __canvas__ directory and top-level names starting
// with TicketPrefix ("~", page tickets) are refused. More than
// MaxFileBytes is ErrTooLarge and leaves nothing behind. Subscribers of the
// session get a "reload" event.
func (h *Host) PutFile(session, rel string, body io.Reader) (FileInfo, error) {
	if err := ValidateSession(session); err != nil {
		return FileInfo{}, err
	}
	clean, isDir, err := CleanPath(rel)
	if errors.Is(err, canvas.ErrNotFound) {
		return FileInfo{}, canvas.Invalid("path", "names starting with . are never served, so they cannot be written")
	}
	if err != nil {
		return FileInfo{}, err
	}
	if clean == "" || isDir {
		return FileInfo{}, canvas.Invalid("path", "name a file, not a directory")
	}
	if clean == ReservedDir || strings.HasPrefix(clean, ReservedDir+"/") {
		return FileInfo{}, canvas.Invalid("path", "%s/ is reserved for built-in assets; choose another directory", ReservedDir)
	}
	if strings.HasPrefix(clean, TicketPrefix) {
		return FileInfo{}, canvas.Invalid("path", "top-level names starting with %s are reserved for page tickets (/host/{session}/%s{ticket}/...); choose another name", TicketPrefix, TicketPrefix)
	}
	if err := h.root.Mkdir(session, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return FileInfo{}, fmt.Errorf("host: create session %q: %w", session, err)
	}
	sroot, err := h.root.OpenRoot(session)
	if err != nil {
		return FileInfo{}, fmt.Errorf("host: open session %q: %w", session, err)
	}
	defer sroot.Close()
	if dir := path.Dir(clean); dir != "." {
		if err := sroot.MkdirAll(dir, 0o750); err != nil {
			return FileInfo{}, canvas.Unprocessable("path", "cannot create directory %q (a file of that name exists?)", dir)
		}
	}
	st, statErr := sroot.Lstat(clean)
	if statErr == nil && st.IsDir() {
		return FileInfo{}, canvas.Unprocessable("path", "%q is a directory", clean)
	}
	n, err := writeAtomic(sroot, clean, body, h.cfg.MaxFileBytes)
	if err != nil {
		return FileInfo{}, err
	}
	h.publishReload(session, clean, "put")
	return FileInfo{Path: clean, Size: n, Modified: time.Now().UTC(), Created: statErr != nil}, nil
}

// writeAtomic writes body to name inside root through a temporary file and a
// rename. More than limit bytes is ErrTooLarge.
func writeAtomic(root *os.Root, name string, body io.Reader, limit int64) (int64, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(name), ".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return 0, fmt.Errorf("host: create temporary file: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			_ = root.Remove(tmp)
		}
	}()
	n, err := io.Copy(f, io.LimitReader(body, limit+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return 0, fmt.Errorf("file is larger than the limit of %d bytes: %w", limit, canvas.ErrTooLarge)
		}
		return 0, fmt.Errorf("host: write %q: %w", name, err)
	}
	if n > limit {
		return 0, fmt.Errorf("file is larger than the limit of %d bytes; split it or raise the limit: %w", limit, canvas.ErrTooLarge)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("host: sync %q: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("host: close %q: %w", name, err)
	}
	if err := root.Rename(tmp, name); err != nil {
		_ = root.Remove(tmp)
		ok = true
		return 0, fmt.Errorf("host: rename into %q: %w", name, err)
	}
	ok = true
	return n, nil
}

// DeleteFile removes one file (or an empty directory) of the session. A
// missing file is ErrNotFound. Subscribers get a "reload" event.
func (h *Host) DeleteFile(session, rel string) error {
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
	sroot, err := h.root.OpenRoot(session)
	if err != nil {
		return fmt.Errorf("host session %q: %w", session, canvas.ErrNotFound)
	}
	defer sroot.Close()
	if err := sroot.Remove(clean); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("host file %q: %w", clean, canvas.ErrNotFound)
		}
		return canvas.Unprocessable("path", "cannot delete %q (a directory that is not empty?)", clean)
	}
	h.publishReload(session, clean, "delete")
	return nil
}

// maxListed bounds ListFiles.
const maxListed = 10000

// ListFiles lists the regular files of the session (not hidden ones, not
// following symlinks), sorted by path, at most 10000. A session without a
// directory has no files (an empty list, not an error).
func (h *Host) ListFiles(session string) ([]FileInfo, error) {
	if err := ValidateSession(session); err != nil {
		return nil, err
	}
	out := []FileInfo{}
	sroot, err := h.root.OpenRoot(session)
	if err != nil {
		return out, nil
	}
	defer sroot.Close()
	err = fs.WalkDir(sroot.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		out = append(out, FileInfo{Path: p, Size: info.Size(), Modified: info.ModTime().UTC()})
		if len(out) >= maxListed {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("host: list %q: %w", session, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func (h *Host) publishReload(session, p, op string) {
	h.hub.Publish(session, Event{Name: EventReload, Data: mustJSON(map[string]string{"path": p, "op": op})})
}
