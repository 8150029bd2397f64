package api

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/web"
)

// routes is the one route table of canvasd.
//
// It stays over 100 lines on purpose: every route of the server is listed
// here, one line each, so that this function is the one place to read
// (and the tests to walk) what the server answers.
func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(s.recoverer)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.problem(w, r, fmt.Errorf("%w: no route %s %s; see /openapi.yaml", canvas.ErrNotFound, r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		drainUnread(w, r)
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
	uiRoute := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			drainUnread(w, r) // the UI answers 405 without reading
		}
		ui.ServeHTTP(w, r)
	})
	r.Handle("/", uiRoute)
	r.Handle("/ui/*", uiRoute)
	hostAPI := newHostAPI(s, s.cfg.Host) // nil: no host, message or invoke routes
	s.hostAPI = hostAPI
	if hostAPI != nil {
		// The page route authenticates itself: the built-in pages' assets
		// (/host/{session}/__canvas__/...) are public like the web UI shell,
		// every session file needs a token with the viewer role on the
		// session (header or ?access_token=), or a page ticket in the path
		// (/host/{session}/~{ticket}/...; see handlePage).
		r.Get("/host/{session}/*", hostAPI.handlePage)

		// The pages' bridge (host_bridge.go): a token, or the session's
		// bridge capability that its viewer carries, for that session only.
		r.Group(func(r chi.Router) {
			r.Use(hostAPI.capOrAuth(s.requireAuth))
			c := hostAPI.host.Config()
			r.Post("/api/host/{session}/actions", s.jsonBody(256<<10, hostAPI.handleAction))
			r.Post("/api/host/{session}/messages", s.jsonBody(messageBodyLimit(c.MaxImageBytes), hostAPI.handleHostMessage))
			r.Post("/api/host/{session}/agent-link", s.jsonBody(64<<10, hostAPI.handleAgentLink))
			r.Post("/api/invoke/{invoke_id}", s.jsonBody(maxInvokeBody, hostAPI.handleAnswer))
		})
	}

	// Streams: the token in the Authorization header or, since a browser's
	// EventSource cannot set headers, as ?access_token= (requireStreamAuth).
	// A route opts in to ?access_token= only by being listed here (a GET
	// under /sse/) or by authenticating itself as a page route does
	// (handlePage); every other route refuses it with a 401.
	r.Group(func(r chi.Router) {
		r.Use(s.requireStreamAuth)
		r.Get("/sse/canvas/{canvas_id}", s.handleCanvasStream)
	})
	if hostAPI != nil { // a stream of the bridge too: the session's capability, else a stream's token
		r.With(hostAPI.capOrAuth(s.requireStreamAuth)).Get("/sse/host/{session}", hostAPI.handleStream)
	}

	// Authenticated by the Authorization header only (requireAuth). Every
	// JSON body passes jsonBody (body.go): its media type (415 unless
	// application/json), its limit, UTF-8, nesting depth.
	r.Group(func(r chi.Router) {
		r.Use(s.requireAuth)
		cmdLimit := s.cfg.MaxCommandBytes

		r.Post("/api/tokens", s.jsonBody(64<<10, s.handleCreateToken))
		r.Get("/api/tokens", s.handleListTokens)
		r.Delete("/api/tokens/{actor_id}", s.handleRevokeToken)

		r.Post("/api/canvases", s.jsonBody(64<<10, s.handleCreateCanvas))
		r.Get("/api/canvases", s.handleListCanvases)
		r.Get("/api/canvases/{canvas_id}", s.handleGetCanvas)
		r.Delete("/api/canvases/{canvas_id}", s.handleDeleteCanvas)

		r.Get("/canvas_commands/snapshot/{canvas_id}", s.handleSnapshot)
		r.Post("/canvas_commands/{canvas_id}/command", s.jsonBody(cmdLimit, s.handleCommand))
		r.Post("/canvas_commands/{canvas_id}/commands", s.jsonBody(cmdLimit, s.handleBatch))
		r.Get("/canvas_commands/{canvas_id}/events", s.handleEvents)
		r.Post("/canvas_commands/{canvas_id}/gesture", s.jsonBody(16<<10, s.handleGesture))

		// Documents and named snapshots (docs.go), MCP (mcp.go).
		r.Get("/api/canvases/{canvas_id}/docs/{node_id}", s.handleDocContent)
		r.Get("/api/canvases/{canvas_id}/docs/{node_id}/diff", s.handleDocDiff)
		r.Get("/api/canvases/{canvas_id}/docs/{node_id}/selection", s.handleDocSelection)
		r.Post("/api/canvases/{canvas_id}/snapshots", s.jsonBody(64<<10, s.handleCreateNamedSnapshot))
		r.Get("/api/canvases/{canvas_id}/snapshots", s.handleListNamedSnapshots)
		r.Post("/mcp", s.jsonBody(cmdLimit, s.mcpHandler().ServeHTTP))

		// Files in and out (files.go): the import's body is the file itself.
		r.Get("/api/canvases/{canvas_id}/export", s.handleExport)
		r.Post("/api/canvases/{canvas_id}/import", limitBody(maxImportBody, s.handleImport))

		// Agent (agent.go). Without an in-process runner or worker queue
		// (Config.Agent nil) only the catalog and the event relay are served.
		r.Get("/api/canvas-agent/catalog", s.handleAgentCatalog)
		r.Post("/api/canvas-agent/events", s.jsonBody(256<<10, s.handleAgentEvent))
		if s.cfg.Agent != nil {
			r.Post("/api/canvas-agent/run", s.jsonBody(64<<10, s.handleAgentRun))
			r.Get("/api/canvas-agent/sessions/{session_id}", s.handleAgentSession)
			r.Get("/api/canvases/{canvas_id}/agent-sessions", s.handleAgentSessions)
			r.Post("/api/canvas-agent/sessions/{session_id}/cancel", s.noBody(s.handleAgentCancel))
			r.Post("/api/canvas-agent/sessions/{session_id}/revert", s.jsonBody(4<<10, s.handleAgentRevert)) // agent_review.go
			r.Post("/api/canvas-agent/edit-request", s.jsonBody(64<<10, s.handleAgentEditRequest))           // agent_edit.go
			r.Post("/api/canvas-agent/ack", s.jsonBody(4<<10, s.handleAgentAck))
			r.Post("/api/canvas-agent/view", s.jsonBody(64<<10, s.handleAgentView))
		}

		// Canvas host and A2UI (host.go), image messages (messages.go),
		// invoke (invoke.go).
		if hostAPI != nil {
			c := hostAPI.host.Config()
			r.Get("/api/host/{session}/files", hostAPI.handleListFiles)
			r.Put("/api/host/{session}/files/*", limitBody(c.MaxFileBytes+1, hostAPI.handlePutFile)) // raw bytes, any content
			r.Delete("/api/host/{session}/files/*", hostAPI.handleDeleteFile)
			r.Get("/api/host/{session}/viewer", hostAPI.handleViewerURL)
			r.Get("/api/host/{session}/link-key", hostAPI.handleLinkKey)
			r.Post("/api/host/{session}/a2ui", s.jsonLinesBody(c.MaxA2UIBytes, hostAPI.handlePushA2UI))
			r.Post("/api/host/{session}/a2ui/reset", s.noBody(hostAPI.handleResetA2UI))
			r.Post("/api/host/{session}/present", s.jsonBody(16<<10, hostAPI.handlePresent))
			r.Post("/api/sessions/{id}/messages", s.jsonBody(messageBodyLimit(c.MaxImageBytes), hostAPI.handleMessage))
			r.Post("/api/invoke", s.jsonBody(maxInvokeBody, hostAPI.handleInvoke))
		}
	})
	return r
}

// canvasRoute returns the canvas id of a route under /{canvas_id}, once the
// caller is found to hold role on that canvas.
func canvasRoute(r *http.Request, role canvas.Role) (string, error) {
	id, err := pathParam(r, "canvas_id")
	if err != nil {
		return "", err
	}
	return id, authorize(r, id, role)
}

// pathParam returns the route parameter name, percent-decoded exactly once.
// chi matches on r.URL.RawPath when the request path holds escapes Go would
// not write itself (%3A for ':', %2F for '/', ...), and its parameters are
// then still escaped; otherwise it matches on the decoded r.URL.Path and they
// must not be decoded again (an actor id may be "50%off"). Every handler
// reads its path parameters through it. An invalid escape is a 400 naming the
// parameter (net/http refuses such a request line before routing, so this is
// a safeguard).
func pathParam(r *http.Request, name string) (string, error) {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v, nil
	}
	dec, err := url.PathUnescape(v)
	if err != nil {
		return "", canvas.Invalid(name, "is not validly percent-encoded: %q", v)
	}
	return dec, nil
}
