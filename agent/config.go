package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// Config holds the agent runner's knobs. Build it with ConfigFromEnv (which
// cmd/canvasd calls once) or start from DefaultConfig.
type Config struct {
	// Model is the default provider spec: "debug/fake", "openai:<model>",
	// "anthropic:<model>" or "google:<model>" (CANVAS_STEWARD_MODEL, or
	// CANVAS_AGENT_CONFIG's "model", which wins). A run may override it per
	// request.
	Model string
	// OpenAIAPIKey and OpenAIBaseURL configure openai:* models
	// (OPENAI_API_KEY, OPENAI_BASE_URL; empty base: the OpenAI API).
	OpenAIAPIKey  string
	OpenAIBaseURL string
	// AnthropicAPIKey and AnthropicBaseURL configure anthropic:* models
	// (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL; empty base: the Anthropic API).
	AnthropicAPIKey  string
	AnthropicBaseURL string
	// AnthropicCacheTTL is the lifetime of the prompt cache entries that
	// anthropic:* calls ask for on the static prompt parts: "5m" or "1h"
	// (ANTHROPIC_CACHE_TTL). DisablePromptCache turns them off.
	AnthropicCacheTTL string
	// GoogleAPIKey and GoogleBaseURL configure google:* models
	// (GOOGLE_API_KEY, else GEMINI_API_KEY; GOOGLE_GEMINI_BASE_URL, empty:
	// the Gemini API).
	GoogleAPIKey  string
	GoogleBaseURL string
	// Debug (CANVAS_STEWARD_DEBUG) logs, at INFO level so that it needs no
	// other setting, each turn's prompt (the user message; the system
	// prompt's size), the model's raw reply and each dropped action with its
	// params. Without it model text and payloads are never logged.
	Debug bool

	// Screenshot request timeout, extra attempts and delay between them
	// (CANVAS_AGENT_SCREENSHOT_TIMEOUT_MS ≥ 2500, _RETRIES, _RETRY_DELAY_MS).
	ScreenshotTimeout    time.Duration
	ScreenshotRetries    int
	ScreenshotRetryDelay time.Duration
	// ScreenshotCacheTTL is how long a screenshot serves the turns that ask
	// for the same canvas revision and bounds; 0 turns the cache off
	// (CANVAS_AGENT_SCREENSHOT_CACHE_TTL_MS: 0, or 10000 to 30000).
	ScreenshotCacheTTL time.Duration
	// AckTimeout is how long the host browser has to ack an envelope before
	// it is resent; AckRetries bounds the resends, after which the envelope
	// counts as missed (CANVAS_AGENT_ACK_TIMEOUT_MS, CANVAS_AGENT_ACK_RETRIES).
	AckTimeout time.Duration
	AckRetries int
	// AckHostWait bounds, in all, how long an envelope due for a resend
	// waits for a host while the canvas has none (its attempts are not
	// spent meanwhile); then it counts as missed
	// (CANVAS_AGENT_ACK_HOST_WAIT_MS, 0 to 600000).
	AckHostWait time.Duration

	// LowActionThreshold: a first turn that applies fewer canvas actions than
	// this gets one deterministic follow-up (CANVAS_AGENT_LOW_ACTION_THRESHOLD).
	LowActionThreshold int
	// MaxFollowups bounds follow-up turns per session (CANVAS_AGENT_MAX_FOLLOWUPS).
	MaxFollowups int
	// MaxReplans bounds re-plans after conflicts per session.
	MaxReplans int
	// ShapeStateLimit bounds the serialized shape state in a prompt, bytes
	// (CANVAS_AGENT_SHAPE_STATE_LIMIT).
	ShapeStateLimit int
	// MaxShapes caps the shapes listed in a prompt (blurry shapes); the rest
	// are summarized as peripheral clusters.
	MaxShapes int
	// TranscriptWindow is how far back the prompt's transcript reaches.
	TranscriptWindow time.Duration
	// Watchdog bounds one session's whole run (all its turns).
	Watchdog time.Duration
	// DisablePromptCache turns off both prompt caches: the memoized prompt
	// parts and the provider-side cache (CANVAS_AGENT_DISABLE_PROMPT_CACHE).
	DisablePromptCache bool
	// PromptCacheTTL is how long memoized prompt parts live.
	PromptCacheTTL time.Duration
	// TTFBSLO is the time-to-first-action objective; slower runs are logged (CANVAS_AGENT_TTFB_SLO_MS).
	TTFBSLO time.Duration
	// MaxOutputBytes bounds one model reply.
	MaxOutputBytes int
	// MaxTokens bounds the tokens one model call may generate
	// (--agent-max-tokens, CANVASD_AGENT_MAX_TOKENS, set by cmd/canvasd):
	// Anthropic's max_tokens (0: 8192, as the Messages API requires a
	// bound), an OpenAI-compatible max_tokens (max_completion_tokens for
	// OpenAI's reasoning models) and Gemini's maxOutputTokens, which with 0
	// are not sent. 0..math.MaxInt32.
	MaxTokens int
	// QueueDepth bounds pending tasks per session.
	QueueDepth int
}

// DefaultConfig returns the design's defaults.
func DefaultConfig() Config {
	return Config{
		Model:                "debug/fake",
		AnthropicCacheTTL:    "5m",
		ScreenshotTimeout:    3500 * time.Millisecond,
		ScreenshotRetries:    1,
		ScreenshotRetryDelay: 450 * time.Millisecond,
		ScreenshotCacheTTL:   15 * time.Second,
		AckTimeout:           1000 * time.Millisecond,
		AckRetries:           2,
		AckHostWait:          10 * time.Second,
		LowActionThreshold:   6,
		MaxFollowups:         3,
		MaxReplans:           2,
		ShapeStateLimit:      4096,
		MaxShapes:            300,
		TranscriptWindow:     60 * time.Second,
		Watchdog:             60 * time.Second,
		PromptCacheTTL:       2 * time.Minute,
		TTFBSLO:              200 * time.Millisecond,
		MaxOutputBytes:       DefaultMaxOutputBytes,
		QueueDepth:           8,
	}
}

// jsonConfig is the CANVAS_AGENT_CONFIG document; every member is optional
// and overrides the matching environment knob.
type jsonConfig struct {
	Model      *string `json:"model"`
	Screenshot *struct {
		TimeoutMS    *int `json:"timeoutMs"`
		Retries      *int `json:"retries"`
		RetryDelayMS *int `json:"retryDelayMs"`
		CacheTTLMS   *int `json:"cacheTtlMs"`
	} `json:"screenshot"`
	Acks *struct {
		TimeoutMS  *int `json:"timeoutMs"`
		Retries    *int `json:"retries"`
		HostWaitMS *int `json:"hostWaitMs"`
	} `json:"acks"`
	Followups *struct {
		LowActionThreshold *int `json:"lowActionThreshold"`
		MaxFollowups       *int `json:"maxFollowups"`
	} `json:"followups"`
	ShapeStateLimit *int  `json:"shapeStateLimit"`
	MaxShapes       *int  `json:"maxShapes"`
	MaxReplans      *int  `json:"maxReplans"`
	WatchdogMS      *int  `json:"watchdogMs"`
	TranscriptMS    *int  `json:"transcriptWindowMs"`
	TTFBSLOMS       *int  `json:"ttfbSloMs"`
	PromptCache     *bool `json:"promptCache"`
}

// ConfigFromEnv builds the config from the environment (getenv, e.g.
// os.Getenv): CANVAS_STEWARD_MODEL, CANVAS_STEWARD_DEBUG, the providers'
// keys and base URLs (OPENAI_*, ANTHROPIC_*, GOOGLE_API_KEY or
// GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL), the CANVAS_AGENT_* knobs, then
// CANVAS_AGENT_CONFIG (JSON) on top: its "model" wins over
// CANVAS_STEWARD_MODEL. A malformed or out-of-range value is an error wrapping
// canvas.ErrInvalid that names the variable.
//
// It stays over 100 lines because it is the one place that lists every
// variable the runner reads, one line each, in the order of precedence;
// split, a variable's name and its place in that order would be sought in
// several functions.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := DefaultConfig()
	str := func(k string, dst *string) {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			*dst = v
		}
	}
	var errs []string
	num := func(k string, dst *int, min int) {
		v := strings.TrimSpace(getenv(k))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			errs = append(errs, fmt.Sprintf("%s=%q must be an integer ≥ %d", k, v, min))
			return
		}
		*dst = n
	}
	ms := func(k string, dst *time.Duration, min int) {
		n := -1
		num(k, &n, min)
		if n >= 0 {
			*dst = time.Duration(n) * time.Millisecond
		}
	}
	boolean := func(k string, dst *bool) {
		v := strings.TrimSpace(getenv(k))
		if v == "" {
			return
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s=%q must be true/false/1/0", k, v))
			return
		}
		*dst = b
	}
	str("CANVAS_STEWARD_MODEL", &c.Model)
	modelFrom := "CANVAS_STEWARD_MODEL"
	boolean("CANVAS_STEWARD_DEBUG", &c.Debug)
	str("OPENAI_API_KEY", &c.OpenAIAPIKey)
	str("OPENAI_BASE_URL", &c.OpenAIBaseURL)
	str("ANTHROPIC_API_KEY", &c.AnthropicAPIKey)
	str("ANTHROPIC_BASE_URL", &c.AnthropicBaseURL)
	str("ANTHROPIC_CACHE_TTL", &c.AnthropicCacheTTL)
	str("GEMINI_API_KEY", &c.GoogleAPIKey)
	str("GOOGLE_API_KEY", &c.GoogleAPIKey) // wins over GEMINI_API_KEY, as in Google's own SDKs
	str("GOOGLE_GEMINI_BASE_URL", &c.GoogleBaseURL)
	ms("CANVAS_AGENT_SCREENSHOT_TIMEOUT_MS", &c.ScreenshotTimeout, 0)
	num("CANVAS_AGENT_SCREENSHOT_RETRIES", &c.ScreenshotRetries, 0)
	ms("CANVAS_AGENT_SCREENSHOT_RETRY_DELAY_MS", &c.ScreenshotRetryDelay, 0)
	ms("CANVAS_AGENT_SCREENSHOT_CACHE_TTL_MS", &c.ScreenshotCacheTTL, 0)
	ms("CANVAS_AGENT_ACK_TIMEOUT_MS", &c.AckTimeout, 1)
	num("CANVAS_AGENT_ACK_RETRIES", &c.AckRetries, 0)
	ms("CANVAS_AGENT_ACK_HOST_WAIT_MS", &c.AckHostWait, 0)
	num("CANVAS_AGENT_LOW_ACTION_THRESHOLD", &c.LowActionThreshold, 0)
	num("CANVAS_AGENT_MAX_FOLLOWUPS", &c.MaxFollowups, 0)
	num("CANVAS_AGENT_SHAPE_STATE_LIMIT", &c.ShapeStateLimit, 0)
	ms("CANVAS_AGENT_TTFB_SLO_MS", &c.TTFBSLO, 1)
	boolean("CANVAS_AGENT_DISABLE_PROMPT_CACHE", &c.DisablePromptCache)

	if raw := strings.TrimSpace(getenv("CANVAS_AGENT_CONFIG")); raw != "" {
		var j jsonConfig
		if err := canvas.DecodeStrict([]byte(raw), &j); err != nil {
			errs = append(errs, fmt.Sprintf("CANVAS_AGENT_CONFIG is not valid: %v", err))
		} else {
			if j.Model != nil {
				c.Model, modelFrom = *j.Model, `CANVAS_AGENT_CONFIG "model"`
			}
			if s := j.Screenshot; s != nil {
				setMS(&c.ScreenshotTimeout, s.TimeoutMS)
				setInt(&c.ScreenshotRetries, s.Retries)
				setMS(&c.ScreenshotRetryDelay, s.RetryDelayMS)
				setMS(&c.ScreenshotCacheTTL, s.CacheTTLMS)
			}
			if a := j.Acks; a != nil {
				setMS(&c.AckTimeout, a.TimeoutMS)
				setInt(&c.AckRetries, a.Retries)
				setMS(&c.AckHostWait, a.HostWaitMS)
			}
			if f := j.Followups; f != nil {
				setInt(&c.LowActionThreshold, f.LowActionThreshold)
				setInt(&c.MaxFollowups, f.MaxFollowups)
			}
			setInt(&c.ShapeStateLimit, j.ShapeStateLimit)
			setInt(&c.MaxShapes, j.MaxShapes)
			setInt(&c.MaxReplans, j.MaxReplans)
			setMS(&c.Watchdog, j.WatchdogMS)
			setMS(&c.TranscriptWindow, j.TranscriptMS)
			setMS(&c.TTFBSLO, j.TTFBSLOMS)
			if j.PromptCache != nil {
				c.DisablePromptCache = !*j.PromptCache
			}
		}
	}
	// The design enforces a 2500 ms minimum screenshot timeout.
	if c.ScreenshotTimeout < 2500*time.Millisecond {
		c.ScreenshotTimeout = 2500 * time.Millisecond
	}
	if _, _, err := ParseModel(c.Model); err != nil {
		errs = append(errs, modelFrom+": "+err.Error())
	} else if err := c.Validate(); err != nil {
		errs = append(errs, "CANVAS_AGENT_*: "+err.Error())
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("agent config: %s: %w", strings.Join(errs, "; "), canvas.ErrInvalid)
	}
	return c, nil
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

func setMS(dst *time.Duration, v *int) {
	if v != nil {
		*dst = time.Duration(*v) * time.Millisecond
	}
}

// Validate checks ranges and the model spec.
func (c Config) Validate() error {
	var errs []string
	if _, _, err := ParseModel(c.Model); err != nil {
		errs = append(errs, err.Error())
	}
	if c.ScreenshotRetries < 0 || c.ScreenshotRetries > 10 {
		errs = append(errs, "screenshot retries must be 0..10")
	}
	if c.ScreenshotCacheTTL != 0 && (c.ScreenshotCacheTTL < 10*time.Second || c.ScreenshotCacheTTL > 30*time.Second) {
		errs = append(errs, "screenshot cache TTL must be 0 (off) or 10000..30000 ms")
	}
	if c.AckTimeout <= 0 || c.AckTimeout > time.Minute {
		errs = append(errs, "ack timeout must be 1..60000 ms")
	}
	if c.AckRetries < 0 || c.AckRetries > 10 {
		errs = append(errs, "ack retries must be 0..10")
	}
	if c.AckHostWait < 0 || c.AckHostWait > 10*time.Minute {
		errs = append(errs, "ack host wait must be 0..600000 ms")
	}
	if c.MaxFollowups < 0 || c.MaxFollowups > 20 {
		errs = append(errs, "max follow-ups must be 0..20")
	}
	if c.MaxReplans < 0 || c.MaxReplans > 10 {
		errs = append(errs, "max replans must be 0..10")
	}
	if c.LowActionThreshold < 0 {
		errs = append(errs, "low-action threshold must be ≥ 0")
	}
	if c.ShapeStateLimit < 0 || c.ShapeStateLimit > 1<<20 {
		errs = append(errs, "shape state limit must be 0..1048576 bytes")
	}
	if c.MaxShapes < 1 || c.MaxShapes > 5000 {
		errs = append(errs, "max shapes must be 1..5000")
	}
	if c.Watchdog <= 0 {
		errs = append(errs, "watchdog must be > 0")
	}
	if c.MaxTokens < 0 || c.MaxTokens > math.MaxInt32 {
		errs = append(errs, fmt.Sprintf("max tokens must be 0 (the provider's default) or 1..%d", math.MaxInt32))
	}
	if c.AnthropicCacheTTL != "5m" && c.AnthropicCacheTTL != "1h" {
		errs = append(errs, fmt.Sprintf("ANTHROPIC_CACHE_TTL %q must be 5m or 1h", c.AnthropicCacheTTL))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// ParseModel splits a model spec: "debug/fake" → ("debug", "fake");
// "openai:gpt-4o-mini" → ("openai", "gpt-4o-mini"); likewise
// "anthropic:<model>" and "google:<model>".
func ParseModel(spec string) (provider, model string, err error) {
	spec = strings.TrimSpace(spec)
	if spec == "debug/fake" {
		return "debug", "fake", nil
	}
	if p, m, ok := strings.Cut(spec, ":"); ok && m != "" {
		switch p {
		case "openai", "anthropic", "google":
			return p, m, nil
		}
	}
	return "", "", fmt.Errorf("model %q: use debug/fake, openai:<model>, anthropic:<model> or google:<model>", spec)
}

// MarshalJSON-free summary for logs (never includes the API key).
func (c Config) String() string {
	b, _ := json.Marshal(map[string]any{
		"model": c.Model, "openai_base_url": c.OpenAIBaseURL, "openai_key_set": c.OpenAIAPIKey != "",
		"anthropic_base_url": c.AnthropicBaseURL, "anthropic_key_set": c.AnthropicAPIKey != "", "anthropic_cache_ttl": c.AnthropicCacheTTL,
		"google_base_url": c.GoogleBaseURL, "google_key_set": c.GoogleAPIKey != "",
		"low_action_threshold": c.LowActionThreshold, "max_followups": c.MaxFollowups, "max_replans": c.MaxReplans,
		"shape_state_limit": c.ShapeStateLimit, "screenshot_timeout_ms": c.ScreenshotTimeout.Milliseconds(),
		"screenshot_retries": c.ScreenshotRetries, "screenshot_cache_ttl_ms": c.ScreenshotCacheTTL.Milliseconds(),
		"ack_timeout_ms": c.AckTimeout.Milliseconds(), "ack_retries": c.AckRetries, "ack_host_wait_ms": c.AckHostWait.Milliseconds(),
		"watchdog_ms": c.Watchdog.Milliseconds(), "prompt_cache": !c.DisablePromptCache,
		"max_tokens": c.MaxTokens,
	})
	return string(b)
}
