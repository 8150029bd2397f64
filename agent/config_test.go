package agent

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

func TestConfigFromEnvModelsAndProviders(t *testing.T) {
	vars := map[string]string{
		"CANVAS_STEWARD_MODEL": "openai:from-env",
		"CANVAS_AGENT_CONFIG":  `{"model":"anthropic:claude-from-config"}`,
		"ANTHROPIC_API_KEY":    "ak", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/", "ANTHROPIC_CACHE_TTL": "1h",
		"GEMINI_API_KEY": "gemini", "GOOGLE_API_KEY": "google", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:8",
	}
	cfg, err := ConfigFromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "anthropic:claude-from-config" {
		t.Fatalf("model %q: CANVAS_AGENT_CONFIG's model wins over CANVAS_STEWARD_MODEL", cfg.Model)
	}
	if cfg.AnthropicAPIKey != "ak" || cfg.AnthropicBaseURL != "http://127.0.0.1:9/" || cfg.AnthropicCacheTTL != "1h" ||
		cfg.GoogleAPIKey != "google" || cfg.GoogleBaseURL != "http://127.0.0.1:8" {
		t.Fatalf("provider settings %s", cfg)
	}
	if s := cfg.String(); strings.Contains(s, "ak") || strings.Contains(s, "google\"") {
		t.Fatalf("the summary leaks a key: %s", s)
	}
	delete(vars, "GOOGLE_API_KEY")
	delete(vars, "CANVAS_AGENT_CONFIG")
	if cfg, _ = ConfigFromEnv(func(k string) string { return vars[k] }); cfg.GoogleAPIKey != "gemini" || cfg.Model != "openai:from-env" {
		t.Fatalf("key %q model %q: GEMINI_API_KEY is the fallback, CANVAS_STEWARD_MODEL the model", cfg.GoogleAPIKey, cfg.Model)
	}
	if cfg, _ = ConfigFromEnv(func(string) string { return "" }); cfg.Model != "debug/fake" || cfg.AnthropicCacheTTL != "5m" {
		t.Fatalf("defaults: model %q ttl %q", cfg.Model, cfg.AnthropicCacheTTL)
	}

	for _, bad := range []struct{ k, v, want string }{
		{"ANTHROPIC_CACHE_TTL", "10m", "ANTHROPIC_CACHE_TTL"},
		{"CANVAS_STEWARD_MODEL", "claude", "CANVAS_STEWARD_MODEL"},
		{"CANVAS_AGENT_CONFIG", `{"model":"gemini"}`, `CANVAS_AGENT_CONFIG "model"`},
		{"CANVAS_STEWARD_MODEL", "google:", "google:<model>"},
	} {
		_, err := ConfigFromEnv(func(k string) string {
			if k == bad.k {
				return bad.v
			}
			return ""
		})
		if !errors.Is(err, canvas.ErrInvalid) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s=%s: %v, want an invalid-config error naming %s", bad.k, bad.v, err, bad.want)
		}
	}
}

func TestParseModel(t *testing.T) {
	for spec, want := range map[string][2]string{
		"debug/fake": {"debug", "fake"}, "openai:gpt-4o-mini": {"openai", "gpt-4o-mini"},
		"anthropic:claude-sonnet-4-5": {"anthropic", "claude-sonnet-4-5"}, "google:gemini-2.5-flash": {"google", "gemini-2.5-flash"},
		" google:models/gemini-2.5-pro ": {"google", "models/gemini-2.5-pro"},
	} {
		p, m, err := ParseModel(spec)
		if err != nil || p != want[0] || m != want[1] {
			t.Errorf("%q → %q %q %v", spec, p, m, err)
		}
	}
	for _, spec := range []string{"", "openai:", "claude", "mistral:large", "debug/other"} {
		if _, _, err := ParseModel(spec); err == nil {
			t.Errorf("%q accepted", spec)
		}
	}
}

// TestValidateMaxTokens: MaxTokens is 0 (each provider's default) or a
// positive count that fits Gemini's int32 maxOutputTokens.
func TestValidateMaxTokens(t *testing.T) {
	for n, ok := range map[int]bool{0: true, 1: true, 4096: true, math.MaxInt32: true, -1: false, math.MaxInt32 + 1: false} {
		cfg := DefaultConfig()
		cfg.MaxTokens = n
		if err := cfg.Validate(); (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "max tokens")) {
			t.Errorf("MaxTokens %d: %v, want ok %v", n, err, ok)
		}
	}
}

// TestConfigAckHostWait: CANVAS_AGENT_ACK_HOST_WAIT_MS and acks.hostWaitMs
// set how long an envelope waits for a host; 0 to 600000 ms.
func TestConfigAckHostWait(t *testing.T) {
	if cfg, err := ConfigFromEnv(func(string) string { return "" }); err != nil || cfg.AckHostWait != 10*time.Second {
		t.Fatalf("default %v %v, want 10 s", cfg.AckHostWait, err)
	}
	for env, want := range map[string]time.Duration{"0": 0, "2500": 2500 * time.Millisecond} {
		cfg, err := ConfigFromEnv(func(k string) string {
			if k == "CANVAS_AGENT_ACK_HOST_WAIT_MS" {
				return env
			}
			return ""
		})
		if err != nil || cfg.AckHostWait != want {
			t.Errorf("CANVAS_AGENT_ACK_HOST_WAIT_MS=%s: %v %v", env, cfg.AckHostWait, err)
		}
	}
	cfg, err := ConfigFromEnv(func(k string) string {
		if k == "CANVAS_AGENT_CONFIG" {
			return `{"acks":{"hostWaitMs":1500}}`
		}
		return ""
	})
	if err != nil || cfg.AckHostWait != 1500*time.Millisecond {
		t.Errorf("acks.hostWaitMs: %v %v", cfg.AckHostWait, err)
	}
	if _, err := ConfigFromEnv(func(k string) string {
		if k == "CANVAS_AGENT_ACK_HOST_WAIT_MS" {
			return "600001"
		}
		return ""
	}); !errors.Is(err, canvas.ErrInvalid) || !strings.Contains(err.Error(), "ack host wait") {
		t.Errorf("600001 ms: %v, want an invalid-config error", err)
	}
}
