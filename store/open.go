package store

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// OpenOptions are what every backend is opened with besides its URL; each
// takes the ones that apply to it.
type OpenOptions struct {
	Logger *slog.Logger // default: discard
	// OpTimeout bounds each store operation and opening each connection
	// (PostgreSQL; a smaller connect_timeout in the URL wins for connecting;
	// 0: the backend's defaults).
	OpTimeout time.Duration
	// FullSync makes the embedded store sync every commit to disk.
	FullSync bool
	// Schema makes a PostgreSQL store work in its own schema, created if
	// missing (tests give each test its own).
	Schema string
}

// Opener opens the store a URL of its scheme names.
type Opener func(ctx context.Context, url string, o OpenOptions) (Store, error)

var (
	backendsMu sync.RWMutex
	backends   = map[string]Opener{}
)

// Register makes Open open URLs of scheme ("sqlite", "postgres", ...) with
// open. Backends register themselves when their package is imported.
func Register(scheme string, open Opener) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	backends[scheme] = open
}

// Open opens (migrating it) the store url names, by its scheme:
// sqlite:PATH is the embedded store in the file at PATH,
// postgres://... (or postgresql://...) PostgreSQL. The backend's package
// must be imported (it registers itself). An unknown scheme is an error
// wrapping canvas.ErrInvalid.
func Open(ctx context.Context, url string, o OpenOptions) (Store, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	open, err := backendOf(url)
	if err != nil {
		return nil, err
	}
	return open(ctx, url, o)
}

// CheckURL reports whether Open knows url's scheme (without opening it).
func CheckURL(url string) error {
	_, err := backendOf(url)
	return err
}

func backendOf(url string) (Opener, error) {
	scheme, _, ok := strings.Cut(url, ":")
	backendsMu.RLock()
	open := backends[scheme]
	known := make([]string, 0, len(backends))
	for s := range backends {
		known = append(known, s+":")
	}
	backendsMu.RUnlock()
	if !ok || open == nil {
		sort.Strings(known)
		return nil, fmt.Errorf("store URL %q: want one of the schemes %s: %w", redact(url), strings.Join(known, ", "), canvas.ErrInvalid)
	}
	return open, nil
}

// redact keeps a URL's scheme and host, not its password.
func redact(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		if len(url) > 16 {
			return url[:16] + "..."
		}
		return url
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		rest = "..." + rest[at:]
	}
	return scheme + "://" + rest
}
