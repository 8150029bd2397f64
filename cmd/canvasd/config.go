package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/canvasd/canvasd/store"
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
	AgentMaxTokens  int    // --agent-max-tokens: agent.Config.MaxTokens; 0: each provider's default
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
	StoreTimeout    time.Duration // PostgreSQL: each store operation, connecting, and so each command's write (see openStore)
	AgentTokenTTL   time.Duration // lifetime of the in-process runner's token, renewed every third of it
	MaxStreams      int           // streams one token may hold open at once in this process; 0: no cap
	MaxAuthFailures int           // failed token attempts per client address per minute; 0: no limit
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
	// count parses a count of 0..math.MaxInt32; zero says what 0 means.
	count := func(name, zero string, f func(c *Config) *int) func(*Config, string) error {
		return func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return fmt.Errorf("%s must be 0 (%s) or a positive integer up to %d, got %q", name, zero, math.MaxInt32, v)
			}
			*f(c) = int(n)
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
		{"database-url", "CANVASD_DATABASE_URL", "", "empty: the embedded store in the data dir; sqlite:PATH: the embedded store in that file; postgres://...: PostgreSQL", str(func(c *Config) *string { return &c.DatabaseURL })},
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
		{"agent-max-tokens", "CANVASD_AGENT_MAX_TOKENS", "0", "most tokens one agent model call may generate (max_tokens; Gemini's maxOutputTokens); 0: Anthropic 8192, the others send none (the model's own limit)",
			count("agent-max-tokens", "the provider's default", func(c *Config) *int { return &c.AgentMaxTokens })},
		{"server", "CANVASD_URL", "", "canvasd agent: base URL of the server to work for", str(func(c *Config) *string { return &c.ServerURL })},
		{"token", "CANVASD_TOKEN", "", "canvasd agent: an agent token with the editor role", str(func(c *Config) *string { return &c.Token })},
		{"log-level", "CANVASD_LOG_LEVEL", "info", "debug, info, warn or error", func(c *Config, v string) error {
			return c.LogLevel.UnmarshalText([]byte(v))
		}},
		{"max-command-bytes", "CANVASD_MAX_COMMAND_BYTES", "1048576", "request body limit for commands", i64("max-command-bytes", func(c *Config) *int64 { return &c.MaxCommandBytes })},
		{"max-image-bytes", "CANVASD_MAX_IMAGE_BYTES", "10485760", "decoded size limit for image messages", i64("max-image-bytes", func(c *Config) *int64 { return &c.MaxImageBytes })},
		{"snapshot-every", "CANVASD_SNAPSHOT_EVERY", "1000", "store a state snapshot every N commits", i64("snapshot-every", func(c *Config) *int64 { return &c.SnapshotEvery })},
		{"max-streams-per-token", "CANVASD_MAX_STREAMS_PER_TOKEN", "64", "streams (SSE) one token may hold open at once on this process; more are refused with 429; 0: no cap",
			count("max-streams-per-token", "no limit", func(c *Config) *int { return &c.MaxStreams })},
		{"max-auth-failures", "CANVASD_MAX_AUTH_FAILURES", "20", "requests with a bad token one client address may make per minute; then its requests with a token get 429 until the minute passes; 0: no limit",
			count("max-auth-failures", "no limit", func(c *Config) *int { return &c.MaxAuthFailures })},
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
		{"store-timeout", "CANVASD_STORE_TIMEOUT", "2s", "PostgreSQL: the longest one store operation or opening a connection may take; a command is answered within it of its arrival (503 past it)", dur("store-timeout", func(c *Config) *time.Duration { return &c.StoreTimeout })},
		{"shutdown-timeout", "CANVASD_SHUTDOWN_TIMEOUT", "10s", "how long shutdown waits for requests", dur("shutdown-timeout", func(c *Config) *time.Duration { return &c.ShutdownTimeout })},
		{"agent-token-ttl", "CANVASD_AGENT_TOKEN_TTL", "5m", "lifetime of the in-process agent runner's token, renewed every third of it while the process runs (a crashed process's token expires within it); expired tokens are deleted on the same schedule", func(c *Config, v string) error {
			if err := dur("agent-token-ttl", func(c *Config) *time.Duration { return &c.AgentTokenTTL })(c, v); err != nil {
				return err
			}
			return validTokenTTL(c.AgentTokenTTL)
		}},
	}
}

// newFlagSet declares every setting as a flag writing into c. On a parse
// error it writes "Usage of <name>:" and the flags (printFlags) to out; the
// error itself is only returned (run prints it, with --name).
func newFlagSet(name string, c *Config, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Go's own error line and -name listing
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage of %s:\n", name)
		printFlags(out, fs)
	}
	for _, s := range settings() {
		s := s
		fs.Func(s.flag, fmt.Sprintf("%s (env %s, default %q)", s.help, s.env, s.def), func(v string) error { return s.set(c, v) })
	}
	return fs
}

// printFlags lists fs's flags in name order the way the documents spell
// them: "  --name value" (the word after the name as flag.UnquoteUsage
// gives it), then the usage on an indented line. A setting's usage already
// names its variable and default; another flag whose default is not its
// type's zero value gets "(default ...)" appended, as Go's PrintDefaults
// does.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if typ != "" {
			head += " " + typ
		}
		switch f.DefValue {
		case "", "0", "0s", "false", "[]":
		default:
			if typ == "string" {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", head, strings.ReplaceAll(usage, "\n", "\n    \t"))
	})
}

// dashDash rewrites the flag name in the flag package's parse errors
// ("flag provided but not defined: -x", "invalid value "v" for flag -x: ...",
// "flag needs an argument: -x") to --x, the spelling of the documents.
// Other messages are returned unchanged.
func dashDash(msg string) string {
	for _, p := range []string{"flag provided but not defined: -", "flag needs an argument: -"} {
		if rest, ok := strings.CutPrefix(msg, p); ok && !strings.HasPrefix(rest, "-") {
			return p + "-" + rest
		}
	}
	for _, p := range []string{"invalid value ", "invalid boolean value "} {
		rest, ok := strings.CutPrefix(msg, p)
		if !ok {
			continue
		}
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			continue
		}
		for _, f := range []string{" for flag -", " for -"} {
			if after, ok := strings.CutPrefix(rest[len(q):], f); ok {
				return p + q + f + "-" + after
			}
		}
	}
	return msg
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
	if c.DatabaseURL != "" && store.CheckURL(c.DatabaseURL) != nil {
		return Config{}, nil, usageError{"--database-url must be empty (embedded store in the data dir), postgres://... (PostgreSQL) or sqlite:PATH"}
	}
	return c, fs.Args(), nil
}
