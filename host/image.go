package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// ErrUnsupportedMediaType: an image of a type the server does not accept
// (HTTP 415). The concrete error is a *UnsupportedMediaTypeError.
var ErrUnsupportedMediaType = errors.New("unsupported media type")

// Image media types accepted in image messages.
const (
	MediaPNG  = "image/png"
	MediaJPEG = "image/jpeg"
	MediaGIF  = "image/gif"
	MediaWebP = "image/webp"
)

// Image is a decoded, validated image.
type Image struct {
	MediaType string // one of the Media* constants
	Data      []byte
}

// StoredImage is an image kept in the ImageStore.
type StoredImage struct {
	SHA256    string `json:"sha256"` // hex of the decoded bytes
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	Path      string `json:"-"` // absolute file path on this server
}

// DataURL re-encodes the stored image as a data URL (what an OpenAI-style
// vision model takes as an image part).
func (s StoredImage) DataURL() (string, error) {
	b, err := os.ReadFile(s.Path)
	if err != nil {
		return "", fmt.Errorf("host: read image %s: %w", s.SHA256, err)
	}
	return "data:" + s.MediaType + ";base64," + base64.StdEncoding.EncodeToString(b), nil
}

func sniffImage(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return MediaPNG
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		return MediaJPEG
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return MediaGIF
	case len(b) >= 12 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WEBP")):
		return MediaWebP
	}
	return ""
}

// ParseImageDataURL strictly parses "data:image/(png|jpeg|gif|webp);base64,..."
// (the media type and "base64" are case-insensitive; nothing else may stand
// between them) and checks the decoded bytes. Errors, all naming field:
//   - *canvas.FieldError of kind ErrInvalid (400): not a data URL, not base64,
//     bad base64 (characters outside the standard alphabet, whitespace, bad
//     padding), empty, or bytes of another supported type than declared;
//   - ErrTooLarge (413): more than max decoded bytes;
//   - *UnsupportedMediaTypeError (415): a declared type other than the four,
//     or bytes that are not a PNG, JPEG, GIF or WebP image.
func ParseImageDataURL(field, s string, max int64) (Image, error) {
	const prefix = "data:"
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return Image{}, canvas.Invalid(field, "must be a data URL: data:image/png;base64,<base64> (png, jpeg, gif or webp)")
	}
	rest := s[len(prefix):]
	comma := strings.IndexByte(rest, ',')
	if comma < 0 {
		return Image{}, canvas.Invalid(field, "data URL has no comma before its data")
	}
	meta, payload := rest[:comma], rest[comma+1:]
	mt, enc, ok := strings.Cut(meta, ";")
	if !ok || !strings.EqualFold(enc, "base64") {
		return Image{}, canvas.Invalid(field, "data URL must be base64-encoded with nothing between the type and ;base64 (got %q)", truncate(meta, 80))
	}
	mt = strings.ToLower(mt)
	switch mt {
	case MediaPNG, MediaJPEG, MediaGIF, MediaWebP:
	default:
		return Image{}, &UnsupportedMediaTypeError{Field: field,
			Reason: fmt.Sprintf("media type %q is not accepted; send image/png, image/jpeg, image/gif or image/webp", truncate(mt, 80))}
	}
	if max > 0 && int64(base64.StdEncoding.DecodedLen(len(payload))) > max+2 {
		return Image{}, fmt.Errorf("%s: the image is about %d bytes, over the limit of %d bytes; scale it down or compress it: %w",
			field, base64.StdEncoding.DecodedLen(len(payload)), max, canvas.ErrTooLarge)
	}
	for i := 0; i < len(payload); i++ {
		c := payload[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return Image{}, canvas.Invalid(field, "invalid base64 character at offset %d (only the standard alphabet with = padding; no whitespace, no URL-safe - or _)", i)
		}
	}
	data, err := base64.StdEncoding.Strict().DecodeString(payload)
	if err != nil {
		return Image{}, canvas.Invalid(field, "invalid base64: %v", err)
	}
	if len(data) == 0 {
		return Image{}, canvas.Invalid(field, "the image is empty")
	}
	if max > 0 && int64(len(data)) > max {
		return Image{}, fmt.Errorf("%s: the image is %d bytes, over the limit of %d bytes; scale it down or compress it: %w",
			field, len(data), max, canvas.ErrTooLarge)
	}
	actual := sniffImage(data)
	switch {
	case actual == "":
		return Image{}, &UnsupportedMediaTypeError{Field: field,
			Reason: fmt.Sprintf("declared %s but the bytes are not a PNG, JPEG, GIF or WebP image; convert it to PNG, JPEG, GIF or WebP", mt)}
	case actual != mt:
		return Image{}, canvas.Invalid(field, "declared %s but the bytes are %s; fix the data URL's media type", mt, actual)
	}
	return Image{MediaType: mt, Data: data}, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ImageStore keeps images by the SHA-256 of their bytes under one directory:
// <dir>/<first 2 hex>/<sha256>.<ext>. Writing the same image twice stores it
// once.
type ImageStore struct {
	dir string
	max int64
}

// NewImageStore creates dir when missing.
func NewImageStore(dir string, max int64) (*ImageStore, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("host: create image dir: %w", err)
	}
	return &ImageStore{dir: dir, max: max}, nil
}

// MaxBytes is the decoded-size limit of one image.
func (s *ImageStore) MaxBytes() int64 { return s.max }

func extFor(mt string) string {
	switch mt {
	case MediaPNG:
		return ".png"
	case MediaJPEG:
		return ".jpg"
	case MediaGIF:
		return ".gif"
	}
	return ".webp"
}

// Put stores img (atomically: temporary file then rename) and returns where.
func (s *ImageStore) Put(img Image) (StoredImage, error) {
	sum := sha256.Sum256(img.Data)
	h := hex.EncodeToString(sum[:])
	sub := filepath.Join(s.dir, h[:2])
	final := filepath.Join(sub, h+extFor(img.MediaType))
	out := StoredImage{SHA256: h, MediaType: img.MediaType, Size: int64(len(img.Data)), Path: final}
	if st, err := os.Stat(final); err == nil && st.Size() == out.Size {
		return out, nil
	}
	if err := os.MkdirAll(sub, 0o750); err != nil {
		return StoredImage{}, fmt.Errorf("host: image dir: %w", err)
	}
	f, err := os.CreateTemp(sub, ".tmp-*")
	if err != nil {
		return StoredImage{}, fmt.Errorf("host: store image: %w", err)
	}
	tmp := f.Name()
	if _, err := f.Write(img.Data); err != nil {
		f.Close()
		os.Remove(tmp)
		return StoredImage{}, fmt.Errorf("host: store image: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return StoredImage{}, fmt.Errorf("host: store image: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return StoredImage{}, fmt.Errorf("host: store image: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return StoredImage{}, fmt.Errorf("host: store image: %w", err)
	}
	return out, nil
}

// Get returns the stored image with the given hex SHA-256, or ErrNotFound.
func (s *ImageStore) Get(sha string) (StoredImage, error) {
	if len(sha) != 64 {
		return StoredImage{}, canvas.Invalid("sha256", "must be 64 hex digits")
	}
	if _, err := hex.DecodeString(sha); err != nil {
		return StoredImage{}, canvas.Invalid("sha256", "must be 64 hex digits")
	}
	sha = strings.ToLower(sha)
	for _, mt := range []string{MediaPNG, MediaJPEG, MediaGIF, MediaWebP} {
		p := filepath.Join(s.dir, sha[:2], sha+extFor(mt))
		if st, err := os.Stat(p); err == nil {
			return StoredImage{SHA256: sha, MediaType: mt, Size: st.Size(), Path: p}, nil
		}
	}
	return StoredImage{}, fmt.Errorf("image %s: %w", sha, canvas.ErrNotFound)
}
