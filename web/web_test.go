package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
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

// bundle is a small stand-in for web/dist (the real one is built by make ui).
var bundle = fstest.MapFS{
	"BUILD.txt":                {Data: []byte("placeholder")},
	"index.html":               {Data: []byte(`<!doctype html><title>canvasd</title><script type="module" src="/ui/app.js"></script>`)},
	"app.js":                   {Data: []byte("export const app = 1;" + strings.Repeat(" ", 2000))},
	"app.css":                  {Data: []byte("#stage { flex: 1 }")},
	"chunks/chunk-AB12.js":     {Data: []byte("export const c = 2;")},
	"chunks/chunk-CD34.js":     {Data: []byte("export const d = 3;" + strings.Repeat(" ", 2000))},
	"chunks/chunk-CD34.js.gz":  {Data: gzipped("export const d = 3;" + strings.Repeat(" ", 2000))},
	"fonts/Excalifont/x.woff2": {Data: []byte("wOF2")},
	".hidden":                  {Data: []byte("secret")},
}

func TestHandler(t *testing.T) {
	h := newHandler(bundle)
	cases := []struct {
		method, path string
		status       int
		ctype, body  string
		cache        string
	}{
		{"GET", "/", 200, "text/html", `<script type="module" src="/ui/app.js">`, "no-cache"},
		{"GET", "/index.html", 200, "text/html", "<title>canvasd</title>", "no-cache"},
		{"HEAD", "/", 200, "text/html", "", "no-cache"},
		{"GET", "/ui/app.js", 200, "text/javascript", "export const app", "no-cache"},
		{"GET", "/ui/app.css", 200, "text/css", "#stage", "no-cache"},
		{"GET", "/ui/chunks/chunk-AB12.js", 200, "text/javascript", "export const c", "public, max-age=31536000, immutable"},
		{"GET", "/ui/fonts/Excalifont/x.woff2", 200, "font/woff2", "wOF2", "public, max-age=31536000, immutable"},
		{"GET", "/ui/", 404, "application/problem+json", `"status":404`, ""},
		{"GET", "/ui/missing.js", 404, "application/problem+json", "no web UI asset", ""},
		{"GET", "/ui/BUILD.txt", 404, "application/problem+json", "", ""},
		{"GET", "/ui/.hidden", 404, "application/problem+json", "", ""},
		{"GET", "/ui/chunks/../app.js", 404, "application/problem+json", "", ""},
		{"GET", "/ui/chunks/chunk-CD34.js.gz", 404, "application/problem+json", "", ""},
		{"GET", "/ui/../web.go", 404, "application/problem+json", "", ""},
		{"GET", "/other", 404, "application/problem+json", "", ""},
		{"POST", "/", 405, "application/problem+json", "read-only", ""},
		{"DELETE", "/ui/app.js", 405, "application/problem+json", "", ""},
	}
	for _, c := range cases {
		resp, body := serve(t, h, c.method, c.path, nil)
		if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) || !strings.Contains(body, c.body) ||
			(c.cache != "" && resp.Header.Get("Cache-Control") != c.cache) {
			t.Errorf("%s %s: %d %q %q %.120q; want %d %s %q containing %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"),
				resp.Header.Get("Cache-Control"), body, c.status, c.ctype, c.cache, c.body)
		}
		if resp.Header.Get("Content-Security-Policy") != CSP || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s %s: security headers %v", c.method, c.path, resp.Header)
		}
	}
	// Revalidation: the ETag answers 304; another file's does not match.
	resp, _ := serve(t, h, "GET", "/ui/app.js", nil)
	etag := resp.Header.Get("ETag")
	if etag == "" {
		t.Fatalf("no ETag: %v", resp.Header)
	}
	if resp, _ := serve(t, h, "GET", "/ui/app.js", map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", resp.StatusCode)
	}
	if resp, _ := serve(t, h, "GET", "/ui/app.css", map[string]string{"If-None-Match": etag}); resp.StatusCode != 200 {
		t.Errorf("another file's ETag matched: %d", resp.StatusCode)
	}
	// Text over 1 KiB is gzipped for clients that accept it, and decodes to the file.
	resp, body := serve(t, h, "GET", "/ui/app.js", map[string]string{"Accept-Encoding": "br, gzip"})
	if resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("gzip: %v", resp.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := io.ReadAll(zr); string(plain) != string(bundle["app.js"].Data) {
		t.Errorf("gzipped body decodes to %.60q", plain)
	}
	if resp, _ := serve(t, h, "GET", "/ui/app.js", map[string]string{"Accept-Encoding": "gzip;q=0"}); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 got %q", resp.Header.Get("Content-Encoding"))
	}
	// A file the build gzipped (name.gz beside it) is served as that copy; without gzip, as itself.
	if resp, body := serve(t, h, "GET", "/ui/chunks/chunk-CD34.js", map[string]string{"Accept-Encoding": "gzip"}); resp.Header.Get("Content-Encoding") != "gzip" ||
		body != string(bundle["chunks/chunk-CD34.js.gz"].Data) {
		t.Errorf("the build's gzipped copy: %v %d bytes, want its %d", resp.Header, len(body), len(bundle["chunks/chunk-CD34.js.gz"].Data))
	}
	if resp, body := serve(t, h, "GET", "/ui/chunks/chunk-CD34.js", nil); resp.Header.Get("Content-Encoding") != "" || body != string(bundle["chunks/chunk-CD34.js"].Data) {
		t.Errorf("without gzip: %v %.60q", resp.Header, body)
	}
}

// gzipped is s compressed at the best ratio (as the build compresses, not as the handler would).
func gzipped(s string) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return buf.Bytes()
}

// TestHandlerWithoutBundle: a binary built without `make ui` serves a page
// at / that says how to build the UI, and problem documents elsewhere.
func TestHandlerWithoutBundle(t *testing.T) {
	h := newHandler(fstest.MapFS{"BUILD.txt": {Data: []byte("placeholder")}})
	resp, body := serve(t, h, "GET", "/", nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "make ui") {
		t.Errorf("GET /: %d %q", resp.StatusCode, body)
	}
	resp, body = serve(t, h, "GET", "/ui/app.js", nil)
	if resp.StatusCode != 404 || !strings.Contains(body, "make ui") {
		t.Errorf("GET /ui/app.js: %d %q", resp.StatusCode, body)
	}
}

func BenchmarkHandler(b *testing.B) {
	h := newHandler(bundle)
	req := httptest.NewRequest("GET", "/ui/app.js", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
	}
}
