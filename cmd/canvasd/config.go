package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Config is canvasd's configuration, built once from flags and environment.
// A flag given on the command line wins over its environment variable.
type Config struct {
	Addr            string
	DataDir         string
	DatabaseURL     string
	AdminToken      string
	HostSecret      string // page-ticket key material; empty: a random key kept in the store
	Model           string // --model (CANVAS_STEWARD_MODEL); see agentConfig for how it combines with CANVAS_AGENT_CONFIG
	ModelFlag       bool   // --model was given on the command line
	AgentMode       string
	ServerURL       string // canvasd agent: the server to work for
	Token           string // canvasd agent: its agent token
	LogLevel        slog.Level
	MaxCommandBytes int64
	MaxImageBytes   int64
	SnapshotEvery   int64
	Heartbeat       time.Duration
	ReadTimeout     time.Duration // longest a request (headers and body) may take to arrive
	IdleTimeout     time.Duration // how long a keep-alive connection may sit idle
	FullSync        bool          // embedded store: fsync every commit (survives power loss)
	ShutdownTimeout time.Duration
	AgentTokenTTL   time.Duration // lifetime of the in-process runner's token, renewed every third of it
}

// setting is one flag with its environment variable and default.
type setting struct {
	flag, env, def, help string
	set                  func(c *Config, v string) error
}

func settings() []setting {
	str := func(f func(c *Config) *string) func(*Config, string) error {
		return func(c *Config, v string) error { *f(c) = v; return nil }
	}
	i64 := func(name string, f func(c *Config) *int64) func(*Config, string) error {
		return func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return fmt.Errorf("%s must be a positive integer, got %q", name, v)
			}
			*f(c) = n
			return nil
		}
	}
	dur := func(name string, f func(c *Config) *time.Duration) func(*Config, string) error {
		return func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("%s must be a positive duration like 15s, got %q", name, v)
			}
			*f(c) = d
			return nil
		}
	}
	return []setting{
		{"addr", "CANVASD_ADDR", "127.0.0.1:8080", "listen address", str(func(c *Config) *string { return &c.Addr })},
		{"data-dir", "CANVASD_DATA_DIR", "./data", "directory of the embedded store (canvasd.db) and of image messages", str(func(c *Config) *string { return &c.DataDir })},
		{"database-url", "CANVASD_DATABASE_URL", "", "empty: the embedded store in the data dir; postgres://...: PostgreSQL", str(func(c *Config) *string { return &c.DatabaseURL })},
		{"admin-token", "CANVASD_ADMIN_TOKEN", "", "admin bearer token; empty: one is generated on first start and printed once", str(func(c *Config) *string { return &c.AdminToken })},
		{"host-secret", "CANVASD_HOST_SECRET", "", "key for host page tickets; empty: a random key kept in the store (shared by every process on it)", str(func(c *Config) *string { return &c.HostSecret })},
		{"model", "CANVAS_STEWARD_MODEL", "debug/fake", "agent model: debug/fake, openai:<model>, anthropic:<model> or google:<model>", str(func(c *Config) *string { return &c.Model })},
		{"agent", "CANVASD_AGENT", agentInProcess, "agent runner: inprocess, workers (runs go to canvasd agent workers) or off", func(c *Config, v string) error {
			if v != agentInProcess && v != agentWorkers && v != agentOff {
				return fmt.Errorf("agent must be inprocess, workers or off, got %q", v)
			}
			c.AgentMode = v
			return nil
		}},
		{"server", "CANVASD_URL", "", "canvasd agent: base URL of the server to work for", str(func(c *Config) *string { return &c.ServerURL })},
		{"token", "CANVASD_TOKEN", "", "canvasd agent: an agent token with the editor role", str(func(c *Config) *string { return &c.Token })},
		{"log-level", "CANVASD_LOG_LEVEL", "info", "debug, info, warn or error", func(c *Config, v string) error {
			return c.LogLevel.UnmarshalText([]byte(v))
		}},
		{"max-command-bytes", "CANVASD_MAX_COMMAND_BYTES", "1048576", "request body limit for commands", i64("max-command-bytes", func(c *Config) *int64 { return &c.MaxCommandBytes })},
		{"max-image-bytes", "CANVASD_MAX_IMAGE_BYTES", "10485760", "decoded size limit for image messages", i64("max-image-bytes", func(c *Config) *int64 { return &c.MaxImageBytes })},
		{"snapshot-every", "CANVASD_SNAPSHOT_EVERY", "1000", "store a state snapshot every N commits", i64("snapshot-every", func(c *Config) *int64 { return &c.SnapshotEvery })},
		{"sync", "CANVASD_SYNC", "normal", "embedded store durability: normal (survives a crash of canvasd) or full (fsync per commit: survives power loss)", func(c *Config, v string) error {
			switch v {
			case "normal", "full":
				c.FullSync = v == "full"
				return nil
			}
			return fmt.Errorf("sync must be normal or full, got %q", v)
		}},
		{"heartbeat", "CANVASD_HEARTBEAT", "15s", "SSE heartbeat interval", dur("heartbeat", func(c *Config) *time.Duration { return &c.Heartbeat })},
		{"read-timeout", "CANVASD_READ_TIMEOUT", "60s", "longest a request's headers and body may take to arrive; a stalled or slower request is cut (408). SSE streams are not affected", dur("read-timeout", func(c *Config) *time.Duration { return &c.ReadTimeout })},
		{"idle-timeout", "CANVASD_IDLE_TIMEOUT", "120s", "how long an idle keep-alive connection stays open", dur("idle-timeout", func(c *Config) *time.Duration { return &c.IdleTimeout })},
		{"shutdown-timeout", "CANVASD_SHUTDOWN_TIMEOUT", "10s", "how long shutdown waits for requests", dur("shutdown-timeout", func(c *Config) *time.Duration { return &c.ShutdownTimeout })},
		{"agent-token-ttl", "CANVASD_AGENT_TOKEN_TTL", "5m", "lifetime of the in-process agent runner's token, renewed every third of it while the process runs (a crashed process's token expires within it); expired tokens are deleted on the same schedule", func(c *Config, v string) error {
			if err := dur("agent-token-ttl", func(c *Config) *time.Duration { return &c.AgentTokenTTL })(c, v); err != nil {
				return err
			}
			return validTokenTTL(c.AgentTokenTTL)
		}},
	}
}

// newFlagSet declares every setting as a flag writing into c.
func newFlagSet(name string, c *Config, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	for _, s := range settings() {
		s := s
		fs.Func(s.flag, fmt.Sprintf("%s (env %s, default %q)", s.help, s.env, s.def), func(v string) error { return s.set(c, v) })
	}
	return fs
}

// loadConfig applies defaults, then the environment, then flags, and
// returns the remaining positional arguments.
func loadConfig(name string, args []string, getenv func(string) string, out io.Writer) (Config, []string, error) {
	var c Config
	for _, s := range settings() {
		v := s.def
		if e := getenv(s.env); e != "" {
			v = e
		}
		if err := s.set(&c, v); err != nil {
			return Config{}, nil, usageError{fmt.Sprintf("%s: %v", s.env, err)}
		}
	}
	fs := newFlagSet(name, &c, out)
	if err := fs.Parse(args); err != nil {
		return Config{}, nil, usageError{err.Error()}
	}
	fs.Visit(func(f *flag.Flag) { c.ModelFlag = c.ModelFlag || f.Name == "model" })
	if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		return Config{}, nil, usageError{"--database-url must be empty (embedded store) or start with postgres://"}
	}
	return c, fs.Args(), nil
}
