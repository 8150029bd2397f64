package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/api"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/host"
	"github.com/canvasd/canvasd/hub"
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
// for this process and kept alive by keeper (revoked at shutdown; expiring
// when the process dies).
func startAgent(ctx context.Context, c Config, getenv func(string) string, st store.Store, keeper *tokenKeeper, baseURL string,
	events *hub.Hub, broker *host.Broker, reg prometheus.Registerer, log *slog.Logger) (agentSide, error) {
	if c.AgentMode == agentOff {
		return agentSide{stop: func() {}}, nil
	}
	cfg, err := agentConfig(c, getenv)
	if err != nil {
		return agentSide{}, err
	}
	sessions, err := agentStore(st)
	if err != nil {
		return agentSide{}, err
	}
	if c.AgentMode == agentWorkers {
		q := agent.NewQueue(cfg, sessions, events)
		return agentSide{svc: q, inbox: agentInbox{svc: q, log: log}, stop: func() {}}, nil
	}
	tok, err := keeper.Mint(ctx, canvas.TokenRequest{Role: canvas.RoleEditor, ActorType: canvas.ActorAgent, Name: "in-process agent runner"})
	if err != nil {
		return agentSide{}, fmt.Errorf("minting the agent runner's token: %w", err)
	}
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		keeper.Release(rctx, tok)
	}
	cl, err := client.New(baseURL, "", client.WithHTTPClient(&http.Client{Transport: tok.Transport(http.DefaultTransport)}))
	if err != nil {
		release()
		return agentSide{}, err
	}
	runner, err := agent.NewRunner(agent.Deps{Config: cfg, Client: cl, ActorID: tok.req.ActorID, Events: events, Store: sessions,
		Screenshots: api.AgentScreenshotter{Hub: events, Broker: broker}, Logger: log, Metrics: agent.NewMetrics(reg)})
	if err != nil {
		release()
		return agentSide{}, err
	}
	runner.Start(ctx)
	return agentSide{svc: runner, inbox: agentInbox{svc: runner, log: log}, stop: func() {
		runner.Stop()
		release()
	}}, nil
}

// agentStore returns st's store.AgentStore (both stores implement it).
func agentStore(st store.Store) (store.AgentStore, error) {
	as := st.Capabilities().Agents
	if as == nil {
		return nil, fmt.Errorf("the store %T keeps no agent sessions: %w", st, canvas.ErrUnavailable)
	}
	return as, nil
}

// agentConfig reads the agent's configuration from the environment, with
// c's --agent-max-tokens. The default model is, from strongest to weakest:
// --model on the command line, CANVAS_AGENT_CONFIG's "model",
// CANVAS_STEWARD_MODEL, debug/fake.
func agentConfig(c Config, getenv func(string) string) (agent.Config, error) {
	cfg, err := agent.ConfigFromEnv(getenv)
	cfg.MaxTokens = c.AgentMaxTokens // loadConfig checked its range
	if err != nil || !c.ModelFlag {
		return cfg, err
	}
	cfg.Model = c.Model
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{"--model: " + err.Error()}
	}
	return cfg, nil
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
	cfg, err := agentConfig(c, getenv)
	if err != nil {
		return err
	}
	log := newLogger(c, stderr)
	queue := "the embedded store in " + c.DataDir
	if c.DatabaseURL != "" {
		queue = "PostgreSQL (--database-url)"
	}
	// The runs are queued in the servers' store: a worker given another one
	// (say a fresh ./data) finds none, so say which one it reads.
	log.Info("canvasd agent worker starting: it takes the runs queued in its store, which must be the servers' (same --database-url, or the same --data-dir on their machine)",
		"server", c.ServerURL, "store", queue)
	st, err := openStore(ctx, c, log) // the servers' store, where their runs are queued
	if err != nil {
		return err
	}
	defer st.Close()
	sessions, err := agentStore(st)
	if err != nil {
		return err
	}
	return agent.RunWorker(ctx, agent.WorkerSettings{ServerURL: c.ServerURL, Token: c.Token, Store: sessions, Config: cfg, Logger: log})
}
