package host

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/canvasd/canvasd/canvas"
)

// ReservedDir is the first path segment reserved for built-in assets
// (/host/{session}/__canvas__/...). The file API refuses to write under it.
const ReservedDir = "__canvas__"

const (
	maxPathLen    = 1024
	maxSegmentLen = 255
	maxPathDepth  = 32
)

// ValidateSession checks a session name: 1 to 128 characters from
// [A-Za-z0-9._-], starting with a letter or digit (so "." and ".." and hidden
// names are impossible). A bad name is a *canvas.FieldError of kind ErrInvalid.
func ValidateSession(s string) error {
	if s == "" || len(s) > maxSessionLen {
		return canvas.Invalid("session", "must be 1 to %d characters from A-Z a-z 0-9 . _ -", maxSessionLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return canvas.Invalid("session", "must start with a letter or digit, got %q", s)
		}
		if !alnum && c != '.' && c != '_' && c != '-' {
			return canvas.Invalid("session", "may only hold A-Z a-z 0-9 . _ -, got %q", s)
		}
	}
	return nil
}

// ParsePath turns the still-escaped part of a request path after
// "/host/{session}/" (or ".../files/") into a clean relative path with "/"
// separators. It refuses, as ErrInvalid: encoded slashes or backslashes
// (%2F, %5C), encoded percent signs (double encoding, %25), NUL and other
// control characters, backslashes, empty segments, "." and ".." segments, and
// over-long paths. Segments starting with "." (hidden files) are ErrNotFound.
// The returned dir is true when the path ends in "/" (or is empty).
func ParsePath(escaped string) (clean string, dir bool, err error) {
	if len(escaped) > 3*maxPathLen {
		return "", false, canvas.Invalid("path", "is longer than %d characters", maxPathLen)
	}
	low := strings.ToLower(escaped)
	for _, bad := range []string{"%2f", "%5c", "%25", "%00"} {
		if strings.Contains(low, bad) {
			return "", false, canvas.Invalid("path", "encoded %q is not allowed in a host path", bad)
		}
	}
	dec, uerr := url.PathUnescape(escaped)
	if uerr != nil {
		return "", false, canvas.Invalid("path", "bad percent-encoding")
	}
	return CleanPath(dec)
}

// CleanPath validates an already-decoded relative path with the rules of
// ParsePath (minus the percent-encoding checks) and returns it unchanged
// without a trailing slash.
func CleanPath(dec string) (clean string, dir bool, err error) {
	if len(dec) > maxPathLen {
		return "", false, canvas.Invalid("path", "is longer than %d characters", maxPathLen)
	}
	if !utf8.ValidString(dec) {
		return "", false, canvas.Invalid("path", "is not valid UTF-8")
	}
	for _, r := range dec {
		if r < 0x20 || r == 0x7f || r == '\\' || r == '%' {
			return "", false, canvas.Invalid("path", "control characters, backslashes and %% are not allowed in a host path")
		}
	}
	if strings.HasPrefix(dec, "/") {
		return "", false, canvas.Invalid("path", "must be relative to the session directory")
	}
	if dec == "" {
		return "", true, nil
	}
	dir = strings.HasSuffix(dec, "/")
	trimmed := strings.TrimSuffix(dec, "/")
	segs := strings.Split(trimmed, "/")
	if len(segs) > maxPathDepth {
		return "", false, canvas.Invalid("path", "is deeper than %d directories", maxPathDepth)
	}
	for _, s := range segs {
		switch {
		case s == "":
			return "", false, canvas.Invalid("path", "has an empty segment (//)")
		case s == "." || s == "..":
			return "", false, canvas.Invalid("path", "may not contain . or .. segments")
		case len(s) > maxSegmentLen:
			return "", false, canvas.Invalid("path", "has a segment longer than %d bytes", maxSegmentLen)
		case s[0] == '.':
			return "", false, fmt.Errorf("hidden name %q (names starting with . are never served or written): %w", s, canvas.ErrNotFound)
		}
	}
	return trimmed, dir, nil
}
