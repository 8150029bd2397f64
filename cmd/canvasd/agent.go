package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/api"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/store"
)

// Agent modes (--agent / CANVASD_AGENT).
const (
	agentInProcess = "inprocess" // this process runs the agent runner
	agentWorkers   = "workers"   // runs are queued for `canvasd agent` workers
	agentOff       = "off"       // no agent: the catalog and event relay only
)

// agentSide is the agent service of a server, with what must happen at shutdown.
type agentSide struct {
	svc   api.AgentService
	inbox host.Inbox // image messages and A2UI userActions (inbox.go); nil with the agent off
	stop  func()
}

// startAgent builds the server's agent side. In-process, the runner is a
// client of this server's own HTTP API at baseURL, with an agent token minted
// for this process (revoked at shutdown).
func startAgent(ctx context.Context, c Config, getenv func(string) string, st store.Store, baseURL string,
	hub *api.Hub, broker *host.Broker, reg prometheus.Registerer, log *slog.Logger) (agentSide, error) {
	if c.AgentMode == agentOff {
		return agentSide{stop: func() {}}, nil
	}
	cfg, err := agent.ConfigFromEnv(getenv)
	if err != nil {
		return agentSide{}, err
	}
	cfg.Model = c.Model
	sessions, err := agent.OpenSQLSessionStore(ctx, c.DatabaseURL, filepath.Join(c.DataDir, "canvasd.db"))
	if err != nil {
		return agentSide{}, fmt.Errorf("opening the agent session store: %w", err)
	}
	if c.AgentMode == agentWorkers {
		q := agent.NewQueue(cfg, sessions, hub)
		return agentSide{svc: q, inbox: agentInbox{svc: q, log: log}, stop: func() { sessions.Close() }}, nil
	}
	rec, tok, err := api.NewTokenRecord(canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent,
		Name: "in-process agent runner"}, time.Now())
	if err == nil {
		err = st.CreateToken(ctx, rec)
	}
	if err != nil {
		sessions.Close()
		return agentSide{}, fmt.Errorf("minting the agent runner's token: %w", err)
	}
	cl, err := client.New(baseURL, tok.Token)
	if err != nil {
		sessions.Close()
		return agentSide{}, err
	}
	runner, err := agent.NewRunner(agent.Deps{Config: cfg, Client: cl, ActorID: tok.ActorID, Events: hub, Store: sessions,
		Screenshots: api.AgentScreenshotter{Hub: hub, Broker: broker}, Logger: log, Metrics: agent.NewMetrics(reg)})
	if err != nil {
		sessions.Close()
		return agentSide{}, err
	}
	runner.Start(ctx)
	return agentSide{svc: runner, inbox: agentInbox{svc: runner, log: log}, stop: func() {
		runner.Stop()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = st.RevokeToken(rctx, tok.ActorID)
		sessions.Close()
	}}, nil
}

// runAgent implements `canvasd agent`: a standalone worker that claims the
// runs queued by servers started with --agent workers.
func runAgent(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, rest, err := loadConfig("canvasd agent", args, getenv, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError{fmt.Sprintf("unexpected arguments %q", rest)}
	}
	if c.ServerURL == "" || c.Token == "" {
		return usageError{"canvasd agent needs --server (CANVASD_URL) and --token (CANVASD_TOKEN, an agent token with the editor role)"}
	}
	cfg, err := agent.ConfigFromEnv(getenv)
	if err != nil {
		return err
	}
	cfg.Model = c.Model
	log := newLogger(c, stderr)
	log.Info("canvasd agent worker starting", "server", c.ServerURL)
	return agent.RunWorker(ctx, agent.WorkerSettings{ServerURL: c.ServerURL, Token: c.Token,
		DatabaseURL: c.DatabaseURL, SQLitePath: filepath.Join(c.DataDir, "canvasd.db"), Config: cfg, Logger: log})
}
