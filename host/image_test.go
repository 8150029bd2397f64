package host

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

var (
	pngBytes  = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0}, 32)...)
	jpegBytes = append([]byte{0xFF, 0xD8, 0xFF, 0xE0}, bytes.Repeat([]byte{1}, 32)...)
	gifBytes  = append([]byte("GIF89a"), bytes.Repeat([]byte{2}, 32)...)
	webpBytes = append([]byte("RIFF\x10\x00\x00\x00WEBPVP8 "), bytes.Repeat([]byte{3}, 32)...)
)

func dataURL(mt string, b []byte) string {
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b)
}

func TestImageDataURLs(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString(pngBytes)
	cases := []struct {
		name, in string
		status   int // 0: accepted
		mt       string
	}{
		{"png", dataURL("image/png", pngBytes), 0, MediaPNG},
		{"jpeg", dataURL("image/jpeg", jpegBytes), 0, MediaJPEG},
		{"gif", dataURL("image/gif", gifBytes), 0, MediaGIF},
		{"webp", dataURL("image/webp", webpBytes), 0, MediaWebP},
		{"case-insensitive", "DATA:IMAGE/PNG;BASE64," + b64, 0, MediaPNG},
		{"not a data url", "https://example.com/a.png", 400, ""},
		{"no comma", "data:image/png;base64", 400, ""},
		{"not base64", "data:image/png," + b64, 400, ""},
		{"extra parameter", "data:image/png;charset=utf-8;base64," + b64, 400, ""},
		{"whitespace", "data:image/png;base64," + b64[:8] + "\n" + b64[8:], 400, ""},
		{"space", "data:image/png;base64, " + b64, 400, ""},
		{"url-safe alphabet", "data:image/png;base64," + b64[:4] + "-" + b64[5:], 400, ""},
		{"url-safe underscore", "data:image/png;base64," + b64[:4] + "_" + b64[5:], 400, ""},
		{"missing padding", "data:image/png;base64," + strings.TrimRight(base64.StdEncoding.EncodeToString(append(pngBytes, 1)), "="), 400, ""},
		{"non-canonical trailing bits", "data:image/png;base64," + b64[:len(b64)-2] + "B=", 400, ""},
		{"empty", "data:image/png;base64,", 400, ""},
		{"declared png, bytes jpeg", dataURL("image/png", jpegBytes), 400, ""},
		{"declared gif, bytes webp", dataURL("image/gif", webpBytes), 400, ""},
		{"svg", dataURL("image/svg+xml", []byte("<svg/>")), 415, ""},
		{"bmp", dataURL("image/bmp", []byte("BM....")), 415, ""},
		{"text", dataURL("text/plain", []byte("hi")), 415, ""},
		{"declared png, bytes pdf", dataURL("image/png", []byte("%PDF-1.7 ....")), 415, ""},
		{"declared jpeg, bytes html", dataURL("image/jpeg", []byte("<html>")), 415, ""},
		{"too large", dataURL("image/png", append(pngBytes, make([]byte, 100)...)), 413, ""},
		{"far too large (rejected before decoding)", "data:image/png;base64," + strings.Repeat("A", 4000), 413, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img, err := ParseImageDataURL("imageData", c.in, 100)
			if c.status == 0 {
				if err != nil || img.MediaType != c.mt {
					t.Fatalf("got %v %q", err, img.MediaType)
				}
				return
			}
			if got := statusFor(err); got != c.status {
				t.Fatalf("status %d (%v), want %d", got, err, c.status)
			}
			if !strings.Contains(err.Error(), "imageData") {
				t.Errorf("error does not name the field: %v", err)
			}
			var fe *canvas.FieldError
			var me *UnsupportedMediaTypeError
			if c.status == 400 && !errors.As(err, &fe) || c.status == 415 && !errors.As(err, &me) {
				t.Errorf("error type %T for %d", err, c.status)
			}
			if c.status == 413 && !strings.Contains(err.Error(), "100 bytes") {
				t.Errorf("413 does not state the limit: %v", err)
			}
		})
	}
}

func TestImageStore(t *testing.T) {
	h, _ := newTestHost(t, Config{})
	img, err := ParseImageDataURL("imageData", dataURL("image/png", pngBytes), 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := h.Images().Put(img)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Images().Put(img)
	if err != nil || a != b || len(a.SHA256) != 64 {
		t.Fatalf("put twice: %+v %+v %v", a, b, err)
	}
	got, err := os.ReadFile(a.Path)
	if err != nil || !bytes.Equal(got, pngBytes) {
		t.Fatalf("stored bytes: %v", err)
	}
	g, err := h.Images().Get(a.SHA256)
	if err != nil || g.Path != a.Path || g.MediaType != MediaPNG {
		t.Fatalf("get: %+v %v", g, err)
	}
	u, err := g.DataURL()
	if err != nil || u != dataURL("image/png", pngBytes) {
		t.Fatalf("data url: %v", err)
	}
	if _, err := h.Images().Get(strings.Repeat("0", 64)); !errors.Is(err, canvas.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := h.Images().Get("../../etc/passwd"); !errors.Is(err, canvas.ErrInvalid) {
		t.Fatalf("hostile: %v", err)
	}
}

func TestDecodeMessages(t *testing.T) {
	if _, img, err := DecodeMessageRequest([]byte(`{"prompt":"hi","imageData":"`+dataURL("image/gif", gifBytes)+`","source":"applet","appletSlug":"doodle"}`), 1000); err != nil || img == nil || img.MediaType != MediaGIF {
		t.Fatalf("good: %v", err)
	}
	for body, status := range map[string]int{
		`{}`:                                400,
		`{"prompt":"a","extra":1}`:          400,
		`{"prompt":"a"} {}`:                 400,
		`{"prompt":1}`:                      400,
		`{"prompt":"a","imageData":"nope"}`: 400,
		`{"prompt":"a","imageData":"` + dataURL("image/tiff", []byte("II*")) + `"}`: 415,
	} {
		if _, _, err := DecodeMessageRequest([]byte(body), 1000); statusFor(err) != status {
			t.Errorf("%s: %v, want %d", body, err, status)
		}
	}
	ua := `{"userAction":{"name":"go","surfaceId":"s","sourceComponentId":"b","timestamp":"2025-09-19T17:05:00Z","context":{"k":1}}}`
	if a, err := DecodeUserAction([]byte(ua)); err != nil || a.Name != "go" || a.Context["k"] != float64(1) {
		t.Fatalf("userAction: %+v %v", a, err)
	}
	for _, bad := range []string{`{}`, `{"userAction":{"name":"go"}}`, strings.Replace(ua, "2025-09-19T17:05:00Z", "yesterday", 1), `{"userAction":{},"x":1}`} {
		if _, err := DecodeUserAction([]byte(bad)); !errors.Is(err, canvas.ErrInvalid) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
