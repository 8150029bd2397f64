package host

import (
	"path"
	"strings"
	"testing"
)

// FuzzParsePath: whatever the request path, an accepted path is clean,
// relative, has no dot segments, no backslash and no hidden segment, so
// joining it under the session directory cannot leave it.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"", "a/b", "..%2f", "%2e%2e/x", "a/./b", "a//b", "%252e", `a\b`, "index.html", "d/", "%c0%ae", ".x", "a/%2E%2E"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		clean, _, err := ParsePath(s)
		if err != nil || clean == "" {
			return
		}
		if path.Clean(clean) != clean || strings.HasPrefix(clean, "/") || strings.ContainsAny(clean, "\\\x00%") {
			t.Fatalf("%q → unclean %q", s, clean)
		}
		for _, seg := range strings.Split(clean, "/") {
			if seg == ".." || seg == "." || strings.HasPrefix(seg, ".") {
				t.Fatalf("%q → %q has segment %q", s, clean, seg)
			}
		}
	})
}

// FuzzParseImageDataURL: an accepted image's bytes always start with the
// magic of its declared type, and nothing panics.
func FuzzParseImageDataURL(f *testing.F) {
	f.Add(dataURL("image/png", pngBytes))
	f.Add(dataURL("image/webp", webpBytes))
	f.Add("data:image/gif;base64,R0lGODlh")
	f.Add("data:text/plain;base64,aGk=")
	f.Fuzz(func(t *testing.T, s string) {
		img, err := ParseImageDataURL("imageData", s, 1<<16)
		if err != nil {
			return
		}
		if sniffImage(img.Data) != img.MediaType {
			t.Fatalf("accepted %s with bytes of %q", img.MediaType, sniffImage(img.Data))
		}
	})
}

// FuzzParseA2UI: nothing panics, and an accepted line re-validates after
// compaction (the form the host stores and replays).
func FuzzParseA2UI(f *testing.F) {
	f.Add([]byte(seedExample))
	f.Add([]byte(`{"dataModelUpdate":{"surfaceId":"s","contents":[{"key":"m","valueMap":[{"key":"a","valueNumber":1}]}]}}`))
	f.Add([]byte(`{"deleteSurface":{"surfaceId":"x"}}` + "\n\n{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := ParseA2UI(b, 100)
		if err != nil {
			return
		}
		for _, m := range msgs {
			if _, err := ParseA2UI(m.Raw, 1); err != nil {
				t.Fatalf("compacted line %s no longer validates: %v", m.Raw, err)
			}
		}
	})
}
