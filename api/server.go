// Package api serves canvasd's HTTP contract (openapi.yaml, docs/api.md): the route
// table, handlers, the SSE responses (the streams' pub/sub is package hub), authentication, RFC 9457 problem documents
// and Prometheus metrics. Handlers parse, authorize, delegate once, respond.
package api

import (
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/canvasd/canvasd/hub"
	"github.com/canvasd/canvasd/store"
)

// Config wires a Server. Engine, Store, Hub and Metrics are required. The
// caller wires the Hub to the engine and the agent service and runs it
// (hub.Hub.Start, Stop: its Stop ends the streams the Server serves).
type Config struct {
	Logger          *slog.Logger
	Engine          *store.Engine
	Store           store.Store
	Hub             *hub.Hub
	Metrics         *Metrics
	Gatherer        prometheus.Gatherer // serves /metrics; nil: no metrics endpoint
	AdminToken      string              // accepted as an admin token in addition to stored tokens
	MaxCommandBytes int64               // body limit for commands (default 1 MiB)
	Heartbeat       time.Duration       // SSE heartbeat interval (default 15 s)
	// SSEWriteTimeout bounds one flush to a stream's client that stopped
	// reading (default sseWriteTimeout, 10 s); tests shorten it.
	SSEWriteTimeout time.Duration
	MaxReplay       int64         // most commits replayed on resume before a reset (default 10000)
	GestureInterval time.Duration // minimum spacing of one actor's gestures (default 30 ms)
	OpenAPISpec     []byte        // served at /openapi.yaml
	Host            HostOptions   // canvas host, image messages and invoke (host.go); zero: not served
	Agent           AgentService  // the agent runner or queue (agent.go); nil: catalog and event relay only
	// MaxStreamsPerToken caps the streams (/sse/canvas/..., /sse/host/...)
	// one token, by its actor id, holds open at once in this process; more
	// are refused with 429. 0: no cap.
	MaxStreamsPerToken int
	// MaxAuthFailures is how many requests with a bad token (unknown,
	// revoked, expired, malformed) one client address may make within a
	// minute; after that its requests that carry a token are refused with
	// 429 until the minute since its first failure has passed. 0: no limit.
	MaxAuthFailures int
	// Now is the clock of the timestamps the server stores or compares:
	// created_at of canvases, documents and tokens, a message's receipt,
	// a token's expiry, gesture spacing, a browser's join time in the host
	// election; nil: time.Now. Connection deadlines use the wall clock.
	Now func() time.Time
}

// Server is canvasd's HTTP API.
type Server struct {
	cfg     Config
	log     *slog.Logger
	engine  *store.Engine
	st      store.Store
	hub     *hub.Hub
	auth    *authenticator
	streams *streamSlots // open streams per token
	router  chi.Router
	// routeWords are the canvas ids that would shadow a route (see
	// shadowingIDs); creating a canvas under one is refused.
	routeWords map[string]bool
	hostAPI    *hostAPI // the canvas host's routes and MCP tools; nil without a host

	gestureMu   sync.Mutex
	lastGesture map[string]time.Time
}

// New builds the server and its route table.
func New(cfg Config) (*Server, error) {
	if cfg.Engine == nil || cfg.Store == nil || cfg.Hub == nil || cfg.Metrics == nil {
		return nil, errors.New("api: Engine, Store, Hub and Metrics are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxCommandBytes <= 0 {
		cfg.MaxCommandBytes = 1 << 20
	}
	if cfg.SSEWriteTimeout <= 0 {
		cfg.SSEWriteTimeout = sseWriteTimeout
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.MaxReplay <= 0 {
		cfg.MaxReplay = 10000
	}
	if cfg.GestureInterval <= 0 {
		cfg.GestureInterval = 30 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, log: cfg.Logger, engine: cfg.Engine, st: cfg.Store, hub: cfg.Hub,
		auth: newAuthenticator(cfg.Store, cfg.AdminToken, cfg.MaxAuthFailures), streams: newStreamSlots(cfg.MaxStreamsPerToken),
		lastGesture: map[string]time.Time{}}
	s.auth.now = cfg.Now
	s.router = s.routes()
	words, err := shadowingIDs(s.router, "canvas_id")
	if err != nil {
		return nil, err
	}
	s.routeWords = words
	return s, nil
}

// now reads the server's clock (Config.Now).
func (s *Server) now() time.Time { return s.cfg.Now() }

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.router }

// Routes returns the route table (for tests that walk it).
func (s *Server) Routes() chi.Routes { return s.router }

// problem answers err as a problem document, counting 429s in the metrics.
func (s *Server) problem(w http.ResponseWriter, r *http.Request, err error) {
	var tooMany *tooManyError
	if errors.As(err, &tooMany) {
		s.cfg.Metrics.TooManyRequests(tooMany.slug)
	}
	writeProblem(w, r, s.log, err)
}

// recoverer turns a panic into a logged 500 problem document.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic in handler", "path", r.URL.Path, "panic", v)
				s.problem(w, r, errors.New("panic"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
