package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// Defaults for Config fields left zero.
const (
	DefaultMaxFileBytes  int64 = 10 << 20 // one file written through the file API
	DefaultMaxImageBytes int64 = 10 << 20 // decoded bytes of one image message
	DefaultMaxA2UIBytes  int64 = 1 << 20  // one JSONL push
	DefaultMaxA2UILines        = 5000     // messages in one push
	DefaultMaxComponents       = 10000    // components kept per surface
	DefaultMaxSurfaces         = 256      // surfaces kept per session
	DefaultMaxStateBytes int64 = 8 << 20  // encoded surfaces and data models of one session
	maxSessionLen              = 128
)

// Storage is where a Host keeps what every process sharing the store must
// see alike: session files, A2UI state and the page-ticket key. It is the
// part of store.HostStore the host uses (both stores implement it; the
// contract is written there); declared here so that host depends on canvas
// only.
type Storage interface {
	PutHostFile(ctx context.Context, f canvas.HostFile) (created bool, err error)
	GetHostFile(ctx context.Context, session, path string) (canvas.HostFile, error)
	HostDirExists(ctx context.Context, session, dir string) (bool, error)
	DeleteHostFile(ctx context.Context, session, path string) error
	ListHostFiles(ctx context.Context, session string, limit int) ([]canvas.HostFile, error)
	LoadHostState(ctx context.Context, session string) (version int64, data []byte, err error)
	SaveHostState(ctx context.Context, session string, expected int64, data []byte) error
	SharedSecret(ctx context.Context, name string, candidate []byte) ([]byte, error)
}

// ticketKeySecret names the page-ticket key in Storage.SharedSecret.
const ticketKeySecret = "host page ticket key"

// Config configures a Host. Zero fields take the defaults above.
type Config struct {
	// Store keeps session files and A2UI state (required).
	Store Storage
	// DataDir is canvasd's data directory; image messages are kept in
	// DataDir/images/ (required).
	DataDir       string
	MaxFileBytes  int64
	MaxImageBytes int64
	MaxA2UIBytes  int64
	MaxA2UILines  int
	MaxComponents int
	MaxSurfaces   int
	MaxStateBytes int64
	// ShellFS holds the built-in pages (web.ShellFS(): the viewer template
	// index.html with viewer.js and viewer.css, the page runtime page.js, the
	// A2UI page a2ui.html with a2ui.js). Nil, or without index.html: the host
	// serves a plain welcome page where the viewer would be.
	ShellFS fs.FS
	// TicketKey is the HMAC-SHA256 key of page tickets (see ticket.go);
	// empty: the key kept in Store (created on first use), which every
	// process sharing the store reads alike. Derive one from a configured
	// secret with TicketKey(secret).
	TicketKey []byte
	// TicketTTL is how long a page ticket is valid; zero: DefaultTicketTTL.
	TicketTTL time.Duration
	// Now is the clock of ticket expiry and of the files' modification
	// times (an imported directory's name too); nil: time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Host serves every session's files, keeps its surfaces and publishes its
// events through the Streams it is given (SetStreams). Files and surfaces
// live in Config.Store, so several processes sharing one store serve the
// same sessions (their events cross processes through the Streams). It is
// safe for concurrent use. It starts no goroutines and holds no stream, so
// it needs no Stop or Close.
type Host struct {
	cfg    Config
	log    *slog.Logger
	store  Storage
	images *ImageStore
	shell  fs.FS

	streams streamsRef // SetStreams

	mu       sync.Mutex
	sessions map[string]*sessionState
}

// New returns a Host, creating DataDir/images when missing and, when
// cfg.TicketKey is empty, reading (or creating) the shared ticket key in
// cfg.Store within ctx.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if cfg.Store == nil || cfg.DataDir == "" {
		return nil, errors.New("host: Config.Store and Config.DataDir are required")
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.TicketKey) == 0 {
		key, err := cfg.Store.SharedSecret(ctx, ticketKeySecret, randomTicketKey())
		if err != nil {
			return nil, fmt.Errorf("host: reading the page-ticket key: %w", err)
		}
		cfg.TicketKey = key
	}
	if cfg.TicketTTL <= 0 {
		cfg.TicketTTL = DefaultTicketTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ShellFS == nil {
		cfg.ShellFS = emptyFS{}
	}
	images, err := NewImageStore(filepath.Join(cfg.DataDir, "images"), cfg.MaxImageBytes)
	if err != nil {
		return nil, err
	}
	return &Host{
		cfg:      cfg,
		log:      cfg.Logger,
		store:    cfg.Store,
		images:   images,
		shell:    cfg.ShellFS,
		sessions: make(map[string]*sessionState),
	}, nil
}

// emptyFS holds no file.
type emptyFS struct{}

func (emptyFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// Images returns the content-addressed image store.
func (h *Host) Images() *ImageStore { return h.images }

// Config returns the effective configuration (defaults filled in).
func (h *Host) Config() Config { return h.cfg }
