package host

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store/sqlitestore"
)

const secret = "TOPSECRET-do-not-serve"

// newTestHost builds a data dir as an earlier canvasd left it (two sessions
// under host/, a secret outside them, hostile symlinks), opens a Host on a
// fresh store and imports that directory, as canvasd serve does at start.
func newTestHost(t *testing.T, cfg Config) (*Host, string) {
	t.Helper()
	dir := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("secret.txt", secret)
	write("host/secret.txt", secret)
	write("host/s1/index.html", "<h1>s1 index</h1>")
	write("host/s1/app.js", "console.log(1)")
	write("host/s1/.hidden", secret)
	write("host/s1/sub/file.txt", "sub file")
	write("host/s1/docs/index.htm", "docs index htm")
	write("host/s2/private.txt", secret)
	write("host/s2/sub2/readme.txt", "s2 readme")
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("../../secret.txt", "host/s1/link-out")
	link(filepath.Join(dir, "secret.txt"), "host/s1/link-abs")
	link(dir, "host/s1/dir-out")
	link("../s2/private.txt", "host/s1/link-s2")
	link("index.html", "host/s1/link-in")
	link("../secret.txt", "host/s1/sub/up")
	cfg.DataDir = dir
	h := openHost(t, cfg)
	if _, err := h.ImportLegacyDir(ctx); err != nil {
		t.Fatal(err)
	}
	return h, dir
}

// testShell stands for the built pages (web.ShellFS) with their template
// markers.
var testShell = fstest.MapFS{
	"index.html": {Data: []byte(`<!doctype html><meta name="canvasd-session" content="{{SESSION}}"><meta name="canvasd-base" content="{{BASE}}">` +
		`<meta name="canvasd-cap" content="{{CAP}}"><meta name="canvasd-max-image" content="{{MAXIMAGE}}"><script src="{{ASSETS}}viewer.js"></script>`)},
	"viewer.js":  {Data: []byte("/* the viewer */")},
	"page.js":    {Data: []byte("/* the canvasd page runtime */")},
	"a2ui.html":  {Data: []byte(`<!doctype html><meta name="canvasd-a2ui" content="1"><script src="{{ASSETS}}a2ui.js" defer></script>`)},
	"a2ui.js":    {Data: []byte("/* the A2UI page */")},
	"agent.html": {Data: []byte(`<!doctype html><p>passing the link on</p>`)},
}

// openHost returns a Host for cfg, closed at cleanup; without cfg.Store on a
// fresh SQLite store, without cfg.DataDir in a fresh directory.
func openHost(t testing.TB, cfg Config) *Host {
	t.Helper()
	if cfg.Store == nil {
		st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "canvasd.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		cfg.Store = st
	}
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.ShellFS == nil {
		cfg.ShellFS = testShell
	}
	h, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.SetStreams(&testStreams{})
	return h
}

// peer is another Host on h's store and data dir: a restarted process, or
// a second one sharing the store.
func peer(t *testing.T, h *Host) *Host {
	t.Helper()
	return openHost(t, Config{Store: h.cfg.Store, DataDir: h.cfg.DataDir})
}

// statusFor maps errors as the API's problem mapper does.
func statusFor(err error) int {
	switch {
	case errors.Is(err, canvas.ErrInvalid):
		return 400
	case errors.Is(err, canvas.ErrNotFound):
		return 404
	case errors.Is(err, canvas.ErrTooLarge):
		return 413
	case errors.Is(err, ErrUnsupportedMediaType):
		return 415
	case errors.Is(err, canvas.ErrUnprocessable):
		return 422
	}
	return 500
}

func pageServer(t *testing.T, h *Host) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/host/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		session, sub, _ := strings.Cut(rest, "/")
		if err := h.ServePage(w, r, session, sub); err != nil {
			http.Error(w, err.Error(), statusFor(err))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// rawGet sends the request target byte for byte (no client-side cleaning).
func rawGet(t *testing.T, srv *httptest.Server, target string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestHostilePaths(t *testing.T) {
	h, _ := newTestHost(t, Config{})
	srv := pageServer(t, h)
	hostile := []string{
		"/host/s1/../secret.txt",
		"/host/s1/../../secret.txt",
		"/host/s1/..%2fsecret.txt",
		"/host/s1/..%2Fsecret.txt",
		"/host/s1/%2e%2e/secret.txt",
		"/host/s1/%2E%2E/%2E%2E/secret.txt",
		"/host/s1/%2e%2e%2fsecret.txt",
		"/host/s1/%252e%252e%252fsecret.txt",
		"/host/s1/%252e%252e/secret.txt",
		"/host/s1/..%5csecret.txt",
		"/host/s1/..%5c..%5csecret.txt",
		`/host/s1/..\secret.txt`,
		`/host/s1/..\..\secret.txt`,
		"/host/s1/%00",
		"/host/s1/index.html%00.txt",
		"/host/s1/%c0%ae%c0%ae/secret.txt",
		"/host/s1/.%2e/secret.txt",
		"/host/s1/./../secret.txt",
		"/host/s1//../secret.txt",
		"/host/s1/%2fsecret.txt",
		"/host/s1/%2f%2e%2e%2fsecret.txt",
		"/host/s1/sub/../../s2/private.txt",
		"/host/s1/sub/%2e%2e/%2e%2e/s2/private.txt",
		"/host/..%2f/secret.txt",
		"/host/%2e%2e/secret.txt",
		"/host/../secret.txt",
		"/host/./s1/index.html",
		"/host/s1/link-out",
		"/host/s1/link-abs",
		"/host/s1/dir-out/secret.txt",
		"/host/s1/link-s2",
		"/host/s1/link-in",
		"/host/s1/sub/up",
		"/host/s1/.hidden",
		"/host/s1/.a2ui-state.json",
		"/host/s1/%2ehidden",
		"/host/s1/sub/",
		"/host/s2/sub2/",
		"/host/s1/index.html/",
		"/host/s1/__canvas__/../../secret.txt",
		"/host/s1/__canvas__/%2e%2e/%2e%2e/secret.txt",
		"/host/s1/__canvas__/sub/shell.js",
		"/host/s1/__canvas__/missing.js",
		"/host/s1/%u002e%u002e/secret.txt",
		"/host/s1/%EF%BC%8E%EF%BC%8E/secret.txt",
		"/host/s1/sub%2F..%2F..%2Fsecret.txt",
		"/host/s1/%2E%2Fsecret.txt",
		"/host/s1/INDEX.HTML%00",
		"/host/s1/index.html%0a",
		"/host/s1/%7f",
		"/host/S1/index.html",
		"/host/s1/.HIDDEN",
		"/host/s1/%7e/index.html",
	}
	for _, target := range hostile {
		t.Run(target, func(t *testing.T) {
			resp, body := rawGet(t, srv, target)
			if resp.StatusCode != 400 && resp.StatusCode != 404 {
				t.Errorf("status %d, want 400 or 404; body %q", resp.StatusCode, body)
			}
			if strings.Contains(body, secret) {
				t.Fatalf("secret leaked: %q", body)
			}
		})
	}
}

func TestServePages(t *testing.T) {
	h, _ := newTestHost(t, Config{})
	srv := pageServer(t, h)
	cases := []struct {
		target, want string
		status       int
		csp          string
	}{
		{"/host/s1/", "s1 index", 200, PageCSP},
		{"/host/s1/index.html", "s1 index", 200, PageCSP},
		{"/host/s1/app.js", "console.log", 200, PageCSP},
		{"/host/s1/sub/file.txt", "sub file", 200, PageCSP},
		{"/host/s1/sub/fil%65.txt", "sub file", 200, PageCSP},
		{"/host/s1/docs/", "docs index htm", 200, PageCSP},
		{"/host/s2/sub2/readme.txt", "s2 readme", 200, PageCSP},
		{"/host/new-session/", `content="new-session"`, 200, "frame-src http://"},
		{"/host/s2/", `/host/s2/__canvas__/viewer.js`, 200, "frame-src http://"},
		{"/host/s1/__canvas__/", `content="s1"`, 200, "frame-src http://"},
		{"/host/s1/__canvas__/page.js", "page runtime", 200, ShellCSP},
		{"/host/s1/__canvas__/a2ui.html", `<script src="/host/s1/__canvas__/a2ui.js" defer>`, 200, PageCSP},
	}
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			resp, body := rawGet(t, srv, c.target)
			if resp.StatusCode != c.status || !strings.Contains(body, c.want) {
				t.Fatalf("status %d body %q, want %d containing %q", resp.StatusCode, body, c.status, c.want)
			}
			if got := resp.Header.Get("Content-Security-Policy"); got != c.csp && !strings.Contains(got, c.csp) {
				t.Errorf("CSP %q, want %q", got, c.csp)
			}
			if strings.Contains(body, "page runtime") && c.target != "/host/s1/__canvas__/page.js" {
				t.Errorf("the runtime was injected for an API client: %q", body)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("missing nosniff")
			}
		})
	}
	// A directory without a slash redirects, keeping the query (the token).
	resp, _ := rawGet(t, srv, "/host/s1/docs?access_token=abc")
	if resp.StatusCode != 301 || resp.Header.Get("Location") != "/host/s1/docs/?access_token=abc" {
		t.Fatalf("redirect: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if ct := func() string { r, _ := rawGet(t, srv, "/host/s1/app.js"); return r.Header.Get("Content-Type") }(); !strings.Contains(ct, "javascript") {
		t.Errorf("content type of app.js: %q", ct)
	}
}

func TestWelcomePageWhenShellMissing(t *testing.T) {
	h, _ := newTestHost(t, Config{ShellFS: fstest.MapFS{}})
	srv := pageServer(t, h)
	resp, body := rawGet(t, srv, "/host/empty/")
	if resp.StatusCode != 200 || !strings.Contains(body, "canvas host") || strings.Contains(body, "<script") {
		t.Fatalf("welcome page: %d %q", resp.StatusCode, body)
	}
}

func TestSessionNames(t *testing.T) {
	for _, ok := range []string{"main", "a", "S-1_x.y", strings.Repeat("a", 128)} {
		if err := ValidateSession(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", ".x", "-x", "a/b", `a\b`, "a b", "a%2f", "é", strings.Repeat("a", 129), "a\x00"} {
		if err := ValidateSession(bad); !errors.Is(err, canvas.ErrInvalid) {
			t.Errorf("%q: %v, want ErrInvalid", bad, err)
		}
	}
}

func TestFileAPI(t *testing.T) {
	h, dir := newTestHost(t, Config{MaxFileBytes: 100})
	sub := listen(h, "w")
	defer sub.Close()

	fi, err := h.PutFile(ctx, "w", "a/b/page.html", strings.NewReader("<p>hi</p>"))
	if err != nil || fi.Size != 9 || fi.Path != "a/b/page.html" || !fi.Created {
		t.Fatalf("put: %+v %v", fi, err)
	}
	ev := (<-sub.C)[0]
	if ev.Name != EventReload || !strings.Contains(string(ev.Data), `"a/b/page.html"`) {
		t.Fatalf("event %s %s", ev.Name, ev.Data)
	}
	content := func() string {
		f, err := h.store.GetHostFile(ctx, "w", "a/b/page.html")
		if err != nil {
			t.Fatal(err)
		}
		return string(f.Data)
	}
	// Overwrite replaces the content whole.
	if fi, err := h.PutFile(ctx, "w", "a/b/page.html", strings.NewReader("<p>v2</p>")); err != nil || fi.Created {
		t.Fatalf("overwrite: %+v %v", fi, err)
	}
	if c := content(); c != "<p>v2</p>" {
		t.Fatalf("content %q", c)
	}
	// Too large: ErrTooLarge and the old content stays.
	if _, err := h.PutFile(ctx, "w", "a/b/page.html", strings.NewReader(strings.Repeat("x", 101))); !errors.Is(err, canvas.ErrTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	if c := content(); c != "<p>v2</p>" {
		t.Fatalf("content after failed put %q", c)
	}
	// Hostile or reserved names.
	for _, p := range []string{"../x", "a/../../x", ".hidden", "a/.git/config", "__canvas__/shell.js", "", "dir/", "/abs", `a\b`, "a//b", "x\x00",
		"~ticket/x", "a/%2e%2e/x", "a\tb", "\u00e9\xff"} {
		if _, err := h.PutFile(ctx, "w", p, strings.NewReader("x")); err == nil {
			t.Errorf("put %q succeeded", p)
		} else if s := statusFor(err); s != 400 && s != 404 && s != 422 {
			t.Errorf("put %q: status %d (%v)", p, s, err)
		}
	}
	// Names that were symlinks in the old data dir are plain names in the
	// store: writing there stays in the session.
	if _, err := h.PutFile(ctx, "s1", "dir-out/evil.txt", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "evil.txt")); err == nil {
		t.Fatal("file created outside the store")
	}
	// A directory cannot be overwritten by a file, nor a file hold one.
	if _, err := h.PutFile(ctx, "w", "a", strings.NewReader("x")); statusFor(err) != 422 || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("put over dir: %v", err)
	}
	if _, err := h.PutFile(ctx, "w", "a/b/page.html/x", strings.NewReader("x")); statusFor(err) != 422 {
		t.Fatalf("put under a file: %v", err)
	}
	list, err := h.ListFiles(ctx, "w")
	if err != nil || len(list) != 1 || list[0].Path != "a/b/page.html" || list[0].Size != 9 {
		t.Fatalf("list: %+v %v", list, err)
	}
	list, _ = h.ListFiles(ctx, "s1") // symlinks and hidden files were not imported
	for _, f := range list {
		if strings.HasPrefix(f.Path, ".") || strings.Contains(f.Path, "link") || f.Path == "sub/up" {
			t.Errorf("listed %q", f.Path)
		}
	}
	if list, err := h.ListFiles(ctx, "nobody"); err != nil || len(list) != 0 {
		t.Fatalf("empty session: %v %v", list, err)
	}
	if err := h.DeleteFile(ctx, "w", "a/b"); statusFor(err) != 422 {
		t.Fatalf("delete of a directory with files: %v", err)
	}
	if err := h.DeleteFile(ctx, "w", "a/b/page.html"); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteFile(ctx, "w", "a/b/page.html"); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if err := h.DeleteFile(ctx, "s1", "../secret.txt"); !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("hostile delete: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "secret.txt")); err != nil {
		t.Fatal("secret was deleted")
	}
}

// TestImportLegacyDir checks the import of an earlier version's data dir:
// what the file API would accept comes over, symlinks and hidden names do
// not, the store's files win, and a second start imports nothing.
func TestImportLegacyDir(t *testing.T) {
	h, dir := newTestHost(t, Config{}) // imported once already
	if _, err := os.Stat(filepath.Join(dir, "host")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("host/ is still there after the import: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "host.imported", "s1", "index.html")); err != nil {
		t.Fatalf("the old directory was not kept as host.imported: %v", err)
	}
	want := map[string][]string{"s1": {"app.js", "docs/index.htm", "index.html", "sub/file.txt"}, "s2": {"private.txt", "sub2/readme.txt"}}
	for session, paths := range want {
		list, _ := h.ListFiles(ctx, session)
		var got []string
		for _, f := range list {
			got = append(got, f.Path)
		}
		if strings.Join(got, " ") != strings.Join(paths, " ") {
			t.Errorf("session %s holds %q, want %q", session, got, paths)
		}
	}
	// A later version of the directory (say copied back by hand) does not
	// overwrite what the store has, and brings its surfaces along once.
	state := `{"version":1,"surfaces":[{"id":"main","order":["t"],"components":{"t":{"id":"t","component":{"Text":{"text":{"literalString":"kept"}}}}},"root":"t","rendering":true,"data":{}}]}`
	for p, s := range map[string]string{"s1/index.html": "stale copy", "s1/new.txt": "new", "s3/.a2ui-state.json": state, "s3/__canvas__/x.js": "reserved", "bad name/x": "x"} {
		full := filepath.Join(dir, "host", p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := h.ImportLegacyDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != 1 || rep.States != 1 || rep.Sessions != 2 || len(rep.Skipped) != 3 || !strings.HasPrefix(rep.MovedTo, filepath.Join(dir, "host.imported-")) {
		t.Fatalf("second import: %+v", rep)
	}
	if f, _ := h.store.GetHostFile(ctx, "s1", "index.html"); string(f.Data) != "<h1>s1 index</h1>" {
		t.Errorf("the import overwrote a stored file: %q", f.Data)
	}
	if msgs, err := h.A2UIMessages(ctx, "s3"); err != nil || len(msgs) != 2 || !strings.Contains(string(msgs[0]), "kept") {
		t.Errorf("imported surfaces: %s %v", msgs, err)
	}
	if rep, err := h.ImportLegacyDir(ctx); err != nil || rep.MovedTo != "" || rep.Files != 0 {
		t.Fatalf("third import: %+v %v", rep, err)
	}
}
