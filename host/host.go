package host

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Defaults for Config fields left zero.
const (
	DefaultMaxFileBytes  int64 = 10 << 20 // one file written through the file API
	DefaultMaxImageBytes int64 = 10 << 20 // decoded bytes of one image message
	DefaultMaxA2UIBytes  int64 = 1 << 20  // one JSONL push
	DefaultQueueSize           = 256      // events buffered per SSE subscriber
	DefaultMaxA2UILines        = 5000     // messages in one push
	DefaultMaxComponents       = 10000    // components kept per surface
	DefaultMaxSurfaces         = 256      // surfaces kept per session
	DefaultMaxStateBytes int64 = 8 << 20  // encoded surfaces and data models of one session
	maxSessionLen              = 128
)

// Config configures a Host. Zero fields take the defaults above.
type Config struct {
	// DataDir is canvasd's data directory. Session files live in
	// DataDir/host/<session>/, images in DataDir/images/.
	DataDir       string
	MaxFileBytes  int64
	MaxImageBytes int64
	MaxA2UIBytes  int64
	MaxA2UILines  int
	MaxComponents int
	MaxSurfaces   int
	MaxStateBytes int64
	QueueSize     int
	// ShellFS holds the built-in A2UI shell (index.html, shell.js, shell.css);
	// nil uses the embedded copy. When it has no index.html the host serves a
	// plain welcome page instead.
	ShellFS fs.FS
	// TicketKey is the HMAC-SHA256 key of page tickets (see ticket.go);
	// empty: a random key per Host, so tickets work only on the process that
	// minted them. Derive a shared one with TicketKey(secret).
	TicketKey []byte
	// TicketTTL is how long a page ticket is valid; zero: DefaultTicketTTL.
	TicketTTL time.Duration
	// Now is the clock for ticket expiry; nil: time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Host owns every session's files, surfaces and subscribers. It is safe for
// concurrent use. It starts no goroutines, so it needs no Stop; Close releases
// the directory handle.
type Host struct {
	cfg     Config
	log     *slog.Logger
	dataDir string
	root    *os.Root // DataDir/host
	images  *ImageStore
	hub     *Hub
	shell   fs.FS

	mu       sync.Mutex
	sessions map[string]*sessionState
}

// New creates DataDir/host (and DataDir/images) when missing and returns a Host.
func New(cfg Config) (*Host, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("host: Config.DataDir is required")
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.MaxImageBytes <= 0 {
		cfg.MaxImageBytes = DefaultMaxImageBytes
	}
	if cfg.MaxA2UIBytes <= 0 {
		cfg.MaxA2UIBytes = DefaultMaxA2UIBytes
	}
	if cfg.MaxA2UILines <= 0 {
		cfg.MaxA2UILines = DefaultMaxA2UILines
	}
	if cfg.MaxComponents <= 0 {
		cfg.MaxComponents = DefaultMaxComponents
	}
	if cfg.MaxSurfaces <= 0 {
		cfg.MaxSurfaces = DefaultMaxSurfaces
	}
	if cfg.MaxStateBytes <= 0 {
		cfg.MaxStateBytes = DefaultMaxStateBytes
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.TicketKey) == 0 {
		cfg.TicketKey = randomTicketKey()
	}
	if cfg.TicketTTL <= 0 {
		cfg.TicketTTL = DefaultTicketTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ShellFS == nil {
		cfg.ShellFS = embeddedShell()
	}
	dir := filepath.Join(cfg.DataDir, "host")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("host: create %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("host: open %s: %w", dir, err)
	}
	images, err := NewImageStore(filepath.Join(cfg.DataDir, "images"), cfg.MaxImageBytes)
	if err != nil {
		root.Close()
		return nil, err
	}
	return &Host{
		cfg:      cfg,
		log:      cfg.Logger,
		dataDir:  cfg.DataDir,
		root:     root,
		images:   images,
		hub:      NewHub(cfg.QueueSize),
		shell:    cfg.ShellFS,
		sessions: make(map[string]*sessionState),
	}, nil
}

// Close releases the host directory handle. Subscribers are ended.
func (h *Host) Close() error {
	h.hub.CloseAll()
	return h.root.Close()
}

// Hub returns the per-session event broadcaster.
func (h *Host) Hub() *Hub { return h.hub }

// Images returns the content-addressed image store.
func (h *Host) Images() *ImageStore { return h.images }

// Config returns the effective configuration (defaults filled in).
func (h *Host) Config() Config { return h.cfg }
