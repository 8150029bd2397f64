package api

import (
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/web"
)

// routes is the one route table of canvasd.
func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(s.recoverer)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.problem(w, r, fmt.Errorf("%w: no route %s %s; see /openapi.yaml", canvas.ErrNotFound, r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeJSONType(w, http.StatusMethodNotAllowed, "application/problem+json",
			newProblem(http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed",
				r.Method+" is not supported on "+r.URL.Path+"; see /openapi.yaml", nil))
	})

	// Public.
	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	if s.cfg.Gatherer != nil {
		r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	r.Get("/openapi.yaml", s.handleOpenAPI)
	ui := web.Handler() // the browser UI (web/): public static shell, assets under /ui/
	r.Handle("/", ui)
	r.Handle("/ui/*", ui)
	hostAPI := newHostAPI(s, s.cfg.Host)
	if hostAPI != nil {
		hostAPI.mountPages(r) // authenticates itself; the built-in shell's assets are public
	}

	// Authenticated.
	r.Group(func(r chi.Router) {
		r.Use(s.requireAuth)
		cmdLimit := s.cfg.MaxCommandBytes

		r.Post("/api/tokens", limitBody(64<<10, s.handleCreateToken))
		r.Delete("/api/tokens/{actor_id}", s.handleRevokeToken)

		r.Post("/api/canvases", limitBody(64<<10, s.handleCreateCanvas))
		r.Get("/api/canvases", s.handleListCanvases)
		r.Get("/api/canvases/{canvas_id}", s.handleGetCanvas)
		r.Delete("/api/canvases/{canvas_id}", s.handleDeleteCanvas)

		r.Get("/canvas_commands/snapshot/{canvas_id}", s.handleSnapshot)
		r.Post("/canvas_commands/{canvas_id}/command", limitBody(cmdLimit, s.handleCommand))
		r.Post("/canvas_commands/{canvas_id}/commands", limitBody(cmdLimit, s.handleBatch))
		r.Get("/canvas_commands/{canvas_id}/events", s.handleEvents)
		r.Post("/canvas_commands/{canvas_id}/gesture", limitBody(16<<10, s.handleGesture))
		r.Get("/sse/canvas/{canvas_id}", s.handleCanvasStream)

		// Documents, snapshots and MCP (docs*.go, mcp*.go).
		s.docRoutes(r)
		r.Method(http.MethodPost, "/mcp", http.MaxBytesHandler(s.mcpHandler(s.cfg.Agent), cmdLimit))

		// Agent (agent*.go).
		s.agentRoutes(r, s.cfg.Agent)

		// Canvas host, image messages and invoke (host*.go, messages*.go, invoke*.go).
		if hostAPI != nil {
			hostAPI.mountAPI(r)
		}
	})
	return r
}
