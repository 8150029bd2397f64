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
)

const secret = "TOPSECRET-do-not-serve"

// newTestHost builds a data dir with two sessions, a secret outside them and
// hostile symlinks.
func newTestHost(t *testing.T, cfg Config) (*Host, string) {
	t.Helper()
	dir := t.TempDir()
	cfg.DataDir = dir
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
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
	return h, dir
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
		{"/host/s1/link-in", "s1 index", 200, PageCSP},
		{"/host/s2/sub2/readme.txt", "s2 readme", 200, PageCSP},
		{"/host/new-session/", `content="new-session"`, 200, ShellCSP},
		{"/host/s2/", `/host/s2/__canvas__/shell.js`, 200, ShellCSP},
		{"/host/s1/__canvas__/", `content="s1"`, 200, ShellCSP},
		{"/host/s1/__canvas__/shell.js", "EventSource", 200, ShellCSP},
		{"/host/s1/__canvas__/eval.html", "eval.js", 200, PageCSP},
	}
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			resp, body := rawGet(t, srv, c.target)
			if resp.StatusCode != c.status || !strings.Contains(body, c.want) {
				t.Fatalf("status %d body %q, want %d containing %q", resp.StatusCode, body, c.status, c.want)
			}
			if got := resp.Header.Get("Content-Security-Policy"); got != c.csp {
				t.Errorf("CSP %q, want %q", got, c.csp)
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
	sub := h.Hub().Subscribe("w")
	defer sub.Close()

	fi, err := h.PutFile("w", "a/b/page.html", strings.NewReader("<p>hi</p>"))
	if err != nil || fi.Size != 9 || fi.Path != "a/b/page.html" {
		t.Fatalf("put: %+v %v", fi, err)
	}
	ev := <-sub.C
	if ev.Name != EventReload || !strings.Contains(string(ev.Data), `"a/b/page.html"`) {
		t.Fatalf("event %s %s", ev.Name, ev.Data)
	}
	// Overwrite is atomic and leaves no temporary files.
	if _, err := h.PutFile("w", "a/b/page.html", strings.NewReader("<p>v2</p>")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "host/w/a/b/page.html"))
	if string(b) != "<p>v2</p>" {
		t.Fatalf("content %q", b)
	}
	// Too large: ErrTooLarge and the old content stays.
	if _, err := h.PutFile("w", "a/b/page.html", strings.NewReader(strings.Repeat("x", 101))); !errors.Is(err, canvas.ErrTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "host/w/a/b/page.html"))
	if string(b) != "<p>v2</p>" {
		t.Fatalf("content after failed put %q", b)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "host/w/a/b"))
	if len(entries) != 1 {
		t.Fatalf("leftovers: %v", entries)
	}
	// Hostile or reserved names.
	for _, p := range []string{"../x", "a/../../x", ".hidden", "a/.git/config", "__canvas__/shell.js", "", "dir/", "/abs", `a\b`, "a//b", "x\x00"} {
		if _, err := h.PutFile("w", p, strings.NewReader("x")); err == nil {
			t.Errorf("put %q succeeded", p)
		} else if s := statusFor(err); s != 400 && s != 404 && s != 422 {
			t.Errorf("put %q: status %d (%v)", p, s, err)
		}
	}
	// Writing through a symlink directory that points outside fails.
	if _, err := h.PutFile("s1", "dir-out/evil.txt", strings.NewReader("x")); err == nil {
		t.Fatal("wrote through an escaping symlink")
	}
	if _, err := os.Stat(filepath.Join(dir, "evil.txt")); err == nil {
		t.Fatal("file created outside the session")
	}
	// A directory cannot be overwritten by a file.
	if _, err := h.PutFile("w", "a", strings.NewReader("x")); statusFor(err) != 422 {
		t.Fatalf("put over dir: %v", err)
	}
	list, err := h.ListFiles("w")
	if err != nil || len(list) != 1 || list[0].Path != "a/b/page.html" {
		t.Fatalf("list: %+v %v", list, err)
	}
	list, _ = h.ListFiles("s1") // symlinks and hidden files are not listed
	for _, f := range list {
		if strings.HasPrefix(f.Path, ".") || strings.Contains(f.Path, "link") || strings.Contains(f.Path, "dir-out") {
			t.Errorf("listed %q", f.Path)
		}
	}
	if list, err := h.ListFiles("nobody"); err != nil || len(list) != 0 {
		t.Fatalf("empty session: %v %v", list, err)
	}
	if err := h.DeleteFile("w", "a/b/page.html"); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteFile("w", "a/b/page.html"); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if err := h.DeleteFile("s1", "../secret.txt"); !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("hostile delete: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "host/secret.txt")); err != nil {
		t.Fatal("secret was deleted")
	}
}
