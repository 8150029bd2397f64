package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func serve(t *testing.T, h http.Handler, method, path string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestHandler(t *testing.T) {
	h := Handler()
	cases := []struct {
		method, path string
		status       int
		ctype, body  string
	}{
		{"GET", "/", 200, "text/html", `<script type="module" src="/ui/app.js">`},
		{"GET", "/index.html", 200, "text/html", "<title>canvasd</title>"},
		{"HEAD", "/", 200, "text/html", ""},
		{"GET", "/ui/app.js", 200, "text/javascript", "EventSource"},
		{"GET", "/ui/model.js", 200, "text/javascript", "export class Model"},
		{"GET", "/ui/capture.js", 200, "text/javascript", "export async function renderPNG"},
		{"GET", "/ui/app.css", 200, "text/css", "#stage"},
		{"GET", "/ui/index.html", 200, "text/html", "<title>canvasd</title>"},
		{"GET", "/ui/", 404, "application/problem+json", `"status":404`},
		{"GET", "/ui/missing.js", 404, "application/problem+json", "no web UI asset"},
		{"GET", "/ui/../web.go", 404, "application/problem+json", ""},
		{"GET", "/other", 404, "application/problem+json", ""},
		{"POST", "/", 405, "application/problem+json", "read-only"},
		{"DELETE", "/ui/app.js", 405, "application/problem+json", ""},
	}
	for _, c := range cases {
		resp, body := serve(t, h, c.method, c.path, nil)
		if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) || !strings.Contains(body, c.body) {
			t.Errorf("%s %s: %d %q %.120q; want %d %s containing %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status, c.ctype, c.body)
		}
		if resp.Header.Get("Content-Security-Policy") != CSP || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s %s: security headers %v", c.method, c.path, resp.Header)
		}
	}
	// Revalidation: the ETag answers 304.
	resp, _ := serve(t, h, "GET", "/ui/app.js", nil)
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("no ETag / Cache-Control: %v", resp.Header)
	}
	if resp, _ := serve(t, h, "GET", "/ui/app.js", map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", resp.StatusCode)
	}
	if resp, _ := serve(t, h, "GET", "/ui/model.js", map[string]string{"If-None-Match": etag}); resp.StatusCode != 200 {
		t.Errorf("another file's ETag matched: %d", resp.StatusCode)
	}
}

// TestNoInnerHTML guards the rule that user text reaches the page only as
// text: the UI's scripts never assign HTML strings.
func TestNoInnerHTML(t *testing.T) {
	for _, name := range []string{"static/app.js", "static/model.js"} {
		b, err := files.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s uses %s", name, bad)
			}
		}
	}
}

func BenchmarkHandler(b *testing.B) {
	h := Handler()
	req := httptest.NewRequest("GET", "/ui/app.js", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
	}
}
