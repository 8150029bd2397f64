package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	canvasd "github.com/canvasd/canvasd"
	"github.com/canvasd/canvasd/api"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/hub"
	"github.com/canvasd/canvasd/store"
	_ "github.com/canvasd/canvasd/store/pgstore"     // store.Open's postgres:// URLs
	_ "github.com/canvasd/canvasd/store/sqlitestore" // store.Open's sqlite: URLs
	"github.com/canvasd/canvasd/web"
)

// openStore opens the store the configuration names (running migrations).
// On PostgreSQL --store-timeout bounds each store operation and opening each
// connection (a smaller connect_timeout in the URL wins for connecting); the
// engine bounds each command's write, from its arrival to its answer, by the
// same value (store.EngineConfig.WriteTimeout follows the store's
// OpTimeout). The embedded store has no such timeouts.
func openStore(ctx context.Context, c Config, log *slog.Logger) (store.Store, error) {
	url := c.DatabaseURL
	if url == "" {
		if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating data dir: %w", err)
		}
		url = "sqlite:" + filepath.Join(c.DataDir, "canvasd.db")
	}
	return store.Open(ctx, url, store.OpenOptions{Logger: log, OpTimeout: c.StoreTimeout, FullSync: c.FullSync})
}

// broadcasterOf returns st's store.Broadcaster (PostgreSQL), or nil: ephemeral
// events then stay in this process.
func broadcasterOf(st store.Store) store.Broadcaster { return st.Capabilities().Broadcaster }

func newLogger(c Config, w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: c.LogLevel}))
}

// runServe runs `canvasd serve`: it opens the store, builds the engine, the
// hub, the canvas host, the agent side and the HTTP API, wires them, and
// serves until ctx ends, then stops them in reverse order.
//
// It stays over 100 lines because it is the server's wiring: every service
// is built, wired and deferred to stop in the one order they depend on,
// which reads, and is reviewed, best as one sequence.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, rest, err := loadConfig("canvasd serve", args, getenv, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError{fmt.Sprintf("unexpected arguments %q", rest)}
	}
	log := newLogger(c, stderr)
	store.TuneGC()
	st, err := openStore(ctx, c, log)
	if err != nil {
		return err
	}
	defer st.Close()
	if c.AdminToken == "" {
		if err := ensureAdminToken(ctx, st, stdout); err != nil {
			return err
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := api.NewMetrics(reg)
	events := hub.New(hub.Config{OnCount: metrics.SubscriberDelta, Logger: log, Broadcaster: broadcasterOf(st), Problem: api.ProblemOf})
	metrics.WatchHub(events)
	// WriteTimeout is left unset: it follows the store's OpTimeout, that is
	// --store-timeout on PostgreSQL and none on the embedded store.
	engine := store.NewEngine(st, store.EngineConfig{Logger: log, Publisher: events, Observer: metrics, SnapshotEvery: c.SnapshotEvery,
		InUse: func(canvasID string) bool { return events.Subscribers(canvasID) > 0 }})
	if err := engine.Start(ctx); err != nil {
		return err
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "canvas_live_canvases",
		Help: "Canvases loaded in memory (idle ones without subscribers are unloaded)."},
		func() float64 { return float64(engine.LiveCanvases()) }))
	defer engine.Stop()
	hostSrv, err := host.New(ctx, host.Config{Store: st, DataDir: c.DataDir, MaxImageBytes: c.MaxImageBytes, TicketKey: ticketKey(c), Logger: log,
		ShellFS: web.ShellFS()})
	if err != nil {
		return err
	}
	if err := importHostFiles(ctx, hostSrv, log); err != nil {
		return err
	}
	broker := host.NewBroker(hostSrv.HostDeliverer(api.CanvasInvokeDeliverer(events)))
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", c.Addr, err)
	}
	defer ln.Close()
	keeper := newTokenKeeper(st, c.AgentTokenTTL, log)
	keeper.Start(ctx)
	defer keeper.Stop()
	agents, err := startAgent(ctx, c, getenv, st, keeper, "http://"+ln.Addr().String(), events, broker, reg, log)
	if err != nil {
		return err
	}
	srv, err := api.New(api.Config{Logger: log, Engine: engine, Store: st, Hub: events, Metrics: metrics, Gatherer: reg,
		AdminToken: c.AdminToken, MaxCommandBytes: c.MaxCommandBytes, Heartbeat: c.Heartbeat, OpenAPISpec: canvasd.Spec,
		Host: api.HostOptions{Host: hostSrv, Broker: broker, Inbox: agents.inbox}, Agent: agents.svc,
		MaxStreamsPerToken: c.MaxStreams, MaxAuthFailures: c.MaxAuthFailures})
	if err != nil {
		agents.stop()
		return err
	}
	// The hub hands browser input and relayed messages to the agent service,
	// a canvas another process deleted to the engine, and carries the canvas
	// host's events; a canvas the engine found deleted itself (the notice
	// was missed) ends its streams here as it would have.
	w := hub.Wiring{OnDeleted: engine.Forget, Messages: api.RelayedMessages(agents.svc)}
	w.Input, _ = agents.svc.(hub.BrowserInput)
	events.Wire(w)
	hostSrv.SetStreams(events)
	engine.OnGone(func(id string) { events.EndLocal(id, hub.CanvasDeletedReason) })
	events.Start(ctx)
	// Stop ends the streams (they own their hijacked connections, so
	// Shutdown does not wait for them) and withdraws this process's presence
	// from the others; deferred too (before st.Close, deferred earlier), so
	// that run returns only once the hub has stopped.
	defer events.Stop()
	hs := newHTTPServer(c, srv.Handler(), log)
	hs.RegisterOnShutdown(events.Stop)
	backend := "embedded SQLite in " + c.DataDir
	if c.DatabaseURL != "" {
		backend = "PostgreSQL"
	}
	log.Info("canvasd listening", "addr", "http://"+ln.Addr().String(), "store", backend)
	if !web.Built() {
		log.Warn("this binary has no web UI bundle: / shows how to build it (make ui, then rebuild); the API works without it")
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		agents.stop()
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	agents.stop() // before the HTTP server: its runs end as canceled, not as errors
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	// SSE streams never finish on their own: stop the engine's writers only after
	// in-flight commands are answered, then close remaining connections.
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	_ = hs.Close()
	return nil
}

// newHTTPServer bounds how long a client may hold a connection without
// sending: a request's headers within min(10 s, --read-timeout), headers and
// body within --read-timeout (a body that stalls is cut), an idle keep-alive
// connection for --idle-timeout. SSE streams take their connection over and
// clear its deadlines (api/sse.go); requests whose body has been read, such
// as a waiting POST /api/invoke, are not cut either.
func newHTTPServer(c Config, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: min(10*time.Second, c.ReadTimeout), ReadTimeout: c.ReadTimeout,
		IdleTimeout: c.IdleTimeout, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// importHostFiles moves the host sessions an earlier canvasd kept in
// <data-dir>/host/ into the store, once (host.ImportLegacyDir).
func importHostFiles(ctx context.Context, h *host.Host, log *slog.Logger) error {
	rep, err := h.ImportLegacyDir(ctx)
	if err != nil {
		return fmt.Errorf("importing the host files of an earlier version: %w", err)
	}
	if rep.MovedTo == "" {
		return nil
	}
	for _, s := range rep.Skipped {
		log.Warn("host file not imported", "what", s)
	}
	log.Info("imported the host files of an earlier version into the store", "sessions", rep.Sessions, "files", rep.Files,
		"surfaces", rep.States, "skipped", len(rep.Skipped), "old_directory", rep.MovedTo)
	return nil
}

// ticketKey is the host page-ticket key derived from --host-secret, or nil,
// which makes the host use the key kept in the store (every process sharing
// the store then accepts the others' tickets).
func ticketKey(c Config) []byte {
	if c.HostSecret == "" {
		return nil
	}
	return host.TicketKey("host-secret:" + c.HostSecret)
}

// ensureAdminToken generates the admin token on first start, stores its hash
// and prints the secret once. Later starts find it stored and print nothing.
func ensureAdminToken(ctx context.Context, st store.Store, stdout io.Writer) error {
	secret, hash := api.NewToken()
	err := st.CreateToken(ctx, store.TokenRecord{Hash: hash, ActorID: api.AdminActorID, ActorType: canvas.ActorService,
		Role: canvas.RoleAdmin, Canvases: []string{}, Name: "generated admin token", CreatedAt: time.Now().UTC()})
	if errors.Is(err, canvas.ErrAlreadyExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storing the generated admin token: %w", err)
	}
	fmt.Fprintf(stdout, "%s\nGenerated admin token (shown once; store it now):\n\n    %s\n\n%s\n",
		strings.Repeat("=", 60), secret, strings.Repeat("=", 60))
	return nil
}

func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, _, err := loadConfig("canvasd migrate", args, getenv, stderr)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, c, newLogger(c, stderr)) // opening applies the migrations
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "migrations applied")
	return st.Close()
}
