package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/agent/providertest"
)

// modelCallView is one model request reduced to what these tests check,
// whatever the provider's wire format.
type modelCallView struct {
	Model        string
	Text         string   // every text block or part, joined
	Images       []string // image blocks or inline data, as data URLs
	Temperature  *float64 // nil: none on the wire
	CachedPrefix []string // the texts that carry a cache breakpoint (Anthropic)
	// Bound is the output-token bound on the wire, by field name:
	// max_tokens, max_completion_tokens (OpenAI) or maxOutputTokens (Gemini).
	Bound map[string]int
}

// protocolServer is one provider's local protocol server as canvasd sees it.
type protocolServer struct {
	spec  string            // the model spec prefix, "anthropic" or "google"
	env   map[string]string // canvasd's environment pointing at the server
	calls func() []modelCallView
}

// startCanvasd starts canvasd with the server's ":ok" model as its agent
// model, and vars, and creates the canvas "board".
func (srv protocolServer) startCanvasd(t *testing.T, vars map[string]string) *canvasdProc {
	t.Helper()
	env := map[string]string{"CANVAS_STEWARD_MODEL": srv.spec + ":ok"}
	maps.Copy(env, srv.env)
	maps.Copy(env, vars)
	c := startCanvasd(t, env)
	c.must(201, "POST", "/api/canvases", c.admin, map[string]any{"canvas_id": "board"})
	return c
}

// scriptedModel answers like a small vision model: models e401, e429,
// e500 and malformed fail that way; otherwise "Task: start" gets one note
// (so a low-action follow-up comes next), an image with "What is this
// drawing?" gets a note about it, anything else a think.
func scriptedModel(provider, model, text string, images int) providertest.Reply {
	switch model {
	case "e401":
		return providertest.Reply{Status: 401}
	case "e429":
		return providertest.Reply{Status: 429}
	case "e500":
		return providertest.Reply{Status: 500}
	case "malformed":
		return providertest.Reply{Text: `{"actions":[]}`, Malformed: true}
	}
	switch {
	case images > 0 && strings.Contains(text, "What is this drawing?"):
		return providertest.Reply{Text: `{"actions":[{"name":"create_shape","params":{"type":"note","x":10,"y":20,"props":{"text":"I see a one-pixel PNG"}}}]}`}
	case strings.Contains(text, "Task: start"):
		return providertest.Reply{Text: "```json\n" + `{"actions":[{"name":"create_shape","params":{"type":"note","x":300,"y":20,"props":{"text":"hello from ` + provider + `"}}}]}` + "\n```"}
	}
	return providertest.Reply{Text: `{"actions":[{"name":"think","params":{"text":"Nothing to add."}}]}`}
}

func anthropicServer(t *testing.T) protocolServer {
	view := func(r providertest.AnthropicRequest) modelCallView {
		v := modelCallView{Model: r.Model, Temperature: r.Temperature, Bound: map[string]int{"max_tokens": r.MaxTokens}}
		blocks := append([]providertest.AnthropicBlock(nil), r.System...)
		for _, m := range r.Messages {
			blocks = append(blocks, m.Content...)
		}
		for _, b := range blocks {
			v.Text += b.Text
			if b.Source != nil {
				v.Images = append(v.Images, "data:"+b.Source.MediaType+";base64,"+b.Source.Data)
			}
			if b.CacheControl != nil && b.CacheControl.Type == "ephemeral" && b.CacheControl.TTL == "1h" {
				v.CachedPrefix = append(v.CachedPrefix, b.Text)
			}
		}
		return v
	}
	srv := providertest.NewAnthropic(t, "sk-ant-test", func(r providertest.AnthropicRequest) providertest.Reply {
		v := view(r)
		return scriptedModel("anthropic", r.Model, v.Text, len(v.Images))
	})
	return protocolServer{spec: "anthropic",
		env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_CACHE_TTL": "1h"},
		calls: func() []modelCallView {
			var out []modelCallView
			for _, r := range srv.Requests() {
				out = append(out, view(r))
			}
			return out
		}}
}

func googleServer(t *testing.T) protocolServer {
	view := func(r providertest.GeminiRequest) modelCallView {
		v := modelCallView{Model: r.Model, Temperature: r.Temperature(), Bound: map[string]int{}}
		if m := r.MaxOutputTokens(); m != nil {
			v.Bound["maxOutputTokens"] = *m
		}
		contents := r.Contents
		if r.SystemInstruction != nil {
			contents = append([]providertest.GeminiContent{*r.SystemInstruction}, contents...)
		}
		for _, c := range contents {
			for _, p := range c.Parts {
				v.Text += p.Text
				if p.InlineData != nil {
					v.Images = append(v.Images, "data:"+p.InlineData.MimeType+";base64,"+p.InlineData.Data)
				}
			}
		}
		return v
	}
	srv := providertest.NewGemini(t, "g-test", func(r providertest.GeminiRequest) providertest.Reply {
		v := view(r)
		return scriptedModel("google", r.Model, v.Text, len(v.Images))
	})
	return protocolServer{spec: "google",
		env: map[string]string{"GEMINI_API_KEY": "g-test", "GOOGLE_GEMINI_BASE_URL": srv.URL},
		calls: func() []modelCallView {
			var out []modelCallView
			for _, r := range srv.Requests() {
				out = append(out, view(r))
			}
			return out
		}}
}

func openaiServer(t *testing.T) protocolServer {
	view := func(r providertest.OpenAIRequest) modelCallView {
		v := modelCallView{Model: r.Model, Temperature: r.Temperature, Bound: map[string]int{}}
		if r.MaxTokens != nil {
			v.Bound["max_tokens"] = *r.MaxTokens
		}
		if r.MaxCompletionTokens != nil {
			v.Bound["max_completion_tokens"] = *r.MaxCompletionTokens
		}
		for _, m := range r.Messages {
			var text string
			var parts []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL *struct {
					URL string `json:"url"`
				} `json:"image_url"`
			}
			if json.Unmarshal(m.Content, &text) == nil {
				v.Text += text
			} else if err := json.Unmarshal(m.Content, &parts); err != nil {
				t.Errorf("openai message content %s: %v", m.Content, err)
			}
			for _, p := range parts {
				v.Text += p.Text
				if p.ImageURL != nil {
					v.Images = append(v.Images, p.ImageURL.URL)
				}
			}
		}
		return v
	}
	srv := providertest.NewOpenAI(t, "sk-test", func(r providertest.OpenAIRequest) providertest.Reply {
		v := view(r)
		return scriptedModel("openai", r.Model, v.Text, len(v.Images))
	})
	return protocolServer{spec: "openai",
		env: map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL + "/v1"},
		calls: func() []modelCallView {
			var out []modelCallView
			for _, r := range srv.Requests() {
				out = append(out, view(r))
			}
			return out
		}}
}

// usage is the token usage the protocol server reported for calls, summed,
// by kind as canvas_agent_model_tokens_total names them.
func (srv protocolServer) usage(calls []modelCallView) map[string]float64 {
	n := float64(len(calls))
	u := map[string]float64{"input": n * providertest.InputTokens, "cache_read": n * providertest.CacheReadTokens, "cache_creation": 0, "output": 0}
	if srv.spec == "anthropic" { // the others report no cache writes
		u["cache_creation"] = n * providertest.CacheCreationTokens
	}
	for _, call := range calls {
		u["output"] += float64(providertest.OutputTokens(scriptedModel(srv.spec, call.Model, call.Text, len(call.Images)).Text))
	}
	return u
}

// checkSessionTokens checks the token counts in the stats of session s (a
// GET /api/canvas-agent/sessions/{id} answer; absent counts are 0) against
// want, by kind as usage gives them.
func checkSessionTokens(t *testing.T, s map[string]any, want map[string]float64) {
	t.Helper()
	stats, _ := s["stats"].(map[string]any)
	for kind, w := range want {
		field := kind + "_tokens"
		if got, _ := stats[field].(float64); got != w {
			t.Errorf("session %v: stats.%s = %v, want %v (stats %v)", s["session_id"], field, got, w, stats)
		}
	}
}

// metricValue is the value of the sample name{labels} (labels as
// Prometheus's text format orders them) in a /metrics answer, or -1.
func metricValue(t *testing.T, c *canvasdProc, name, labels string) float64 {
	t.Helper()
	code, m := c.call("GET", "/metrics", "", nil)
	text, _ := m["_raw"].(string)
	if code != 200 {
		t.Fatalf("GET /metrics: %d %s", code, text)
	}
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+"{"+labels+"} "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return -1
}

// TestProviderModelsEndToEnd runs canvasd serve with anthropic:<model>,
// google:<model> and openai:<model>, each configured through its environment variables
// and pointed at a local server speaking that provider's streaming protocol.
// Over real listeners: a run's actions stream into the canvas, committed by
// the agent; the low-action follow-up carries temperature 0 and the first
// call none; Anthropic calls carry 1h cache breakpoints on the system
// prompt and the canvas context; an image message reaches the model as an
// image of exactly the posted bytes; and a provider that answers 401, 429,
// 500 or a broken stream ends the session in the error state with the reason.
// The calls' token usage, prompt-cache reads and writes included, is counted
// in canvas_agent_model_tokens_total and summed in the session's stats
// (input_tokens, ...), the image message's turns added to the run's.
// Without --agent-max-tokens Anthropic calls carry max_tokens 8192, the
// others no output bound.
func TestProviderModelsEndToEnd(t *testing.T) {
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	for _, newServer := range []func(*testing.T) protocolServer{anthropicServer, googleServer, openaiServer} {
		srv := newServer(t)
		t.Run(srv.spec, func(t *testing.T) {
			c := srv.startCanvasd(t, nil)

			id := c.must(202, "POST", "/api/canvas-agent/run", c.admin, map[string]any{"roomId": "board", "message": "start"})["session_id"].(string)
			s := c.sessionEnded(id, c.admin)
			if s["state"] != "done" || s["model"] != srv.spec+":ok" {
				t.Fatalf("run: %v", s)
			}
			note := c.node("board", "hello from "+srv.spec)
			if by, _ := note["created_by"].(string); !strings.HasPrefix(by, "agent-") {
				t.Fatalf("note %v: want one committed by the agent", note)
			}
			calls := srv.calls()
			if len(calls) != 2 || calls[0].Model != "ok" || !strings.Contains(calls[0].Text, "Task: start") {
				t.Fatalf("%d calls: %+v", len(calls), calls)
			}
			if calls[0].Temperature != nil || calls[1].Temperature == nil || *calls[1].Temperature != 0 {
				t.Fatalf("temperatures %v, %v: want none on the first call, 0 on the low-action follow-up", calls[0].Temperature, calls[1].Temperature)
			}
			wantBound := map[string]int{}
			if srv.spec == "anthropic" {
				wantBound["max_tokens"] = 8192
			}
			for _, call := range calls {
				if !maps.Equal(call.Bound, wantBound) {
					t.Fatalf("output bound %v on the wire, want %v", call.Bound, wantBound)
				}
			}
			// Both calls' usage, as the protocol servers report it, in the
			// metrics and in the session's stats.
			for kind, want := range srv.usage(calls) {
				if got := metricValue(t, c, "canvas_agent_model_tokens_total", `kind="`+kind+`",provider="`+srv.spec+`"`); got != want {
					t.Errorf("canvas_agent_model_tokens_total{kind=%q,provider=%q} = %v, want %v", kind, srv.spec, got, want)
				}
			}
			checkSessionTokens(t, s, srv.usage(calls))
			if srv.spec == "anthropic" {
				cp := calls[0].CachedPrefix
				if len(cp) != 2 || !strings.Contains(cp[0], "canvas") || !strings.HasPrefix(cp[1], "Canvas context (JSON):") || strings.Contains(cp[1], "Task: start") {
					t.Fatalf("cache breakpoints on %q: want the system prompt and the canvas context (without the task)", cp)
				}
			}

			// An image message: a new turn of the finished session.
			c.must(202, "POST", "/api/sessions/"+id+"/messages", c.admin, map[string]any{"prompt": "What is this drawing?", "imageData": dataURL})
			c.waitFor("the model's note about the image", func() bool { return c.node("board", "I see a one-pixel PNG") != nil })
			var seen *modelCallView
			for _, call := range srv.calls() {
				if strings.Contains(call.Text, "What is this drawing?") {
					seen = &call
				}
			}
			// The posted image is the turn's subject, last; before it, the
			// viewport as the server drew it (no browser is open).
			if seen == nil || len(seen.Images) != 2 || seen.Images[1] != dataURL || !strings.HasPrefix(seen.Images[0], "data:image/png;base64,") {
				t.Fatalf("image message call %+v: want the server-drawn screenshot, then the posted image", seen)
			}
			// The message's turns add to the session's token counts.
			if s := c.sessionEnded(id, c.admin); s["state"] != "done" {
				t.Fatalf("image message: %v", s)
			} else if calls := srv.calls(); len(calls) < 3 {
				t.Fatalf("%d calls after the image message: want 3 or more", len(calls))
			} else {
				checkSessionTokens(t, s, srv.usage(calls))
			}

			// Provider failures end the session with the reason.
			for _, f := range []struct{ model, want string }{{"e401", "401"}, {"e429", "429"}, {"e500", "500"}, {"malformed", "stream"}} {
				id := c.must(202, "POST", "/api/canvas-agent/run", c.admin, map[string]any{"roomId": "board", "message": "x", "model": srv.spec + ":" + f.model})["session_id"].(string)
				s := c.sessionEnded(id, c.admin)
				if detail := fmt.Sprint(s["detail"]); s["state"] != "error" || !strings.Contains(detail, f.want) || !strings.Contains(detail, srv.spec) {
					t.Fatalf("%s: session %v %q", f.model, s["state"], detail)
				}
			}
		})
	}
}

// TestAgentModelPrecedence: the default model is --model, else
// CANVAS_AGENT_CONFIG's "model", else CANVAS_STEWARD_MODEL, else debug/fake.
func TestAgentModelPrecedence(t *testing.T) {
	modelOfARun := func(c *canvasdProc) any {
		c.must(201, "POST", "/api/canvases", c.admin, map[string]any{"canvas_id": "p"})
		id := c.must(202, "POST", "/api/canvas-agent/run", c.admin, map[string]any{"roomId": "p", "message": "hi"})["session_id"].(string)
		return c.sessionEnded(id, c.admin)["model"]
	}
	// CANVAS_AGENT_CONFIG wins over CANVAS_STEWARD_MODEL (an unreachable model: no call is made with it).
	c := startCanvasd(t, map[string]string{"CANVAS_STEWARD_MODEL": "openai:from-env", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
		"CANVAS_AGENT_CONFIG": `{"model":"debug/fake"}`})
	if m := modelOfARun(c); m != "debug/fake" {
		t.Fatalf("model %v: CANVAS_AGENT_CONFIG's model must win over CANVAS_STEWARD_MODEL", m)
	}
	// --model wins over both.
	c = startCanvasd(t, map[string]string{"CANVAS_STEWARD_MODEL": "openai:from-env", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
		"CANVAS_AGENT_CONFIG": `{"model":"openai:from-config"}`}, "--model", "debug/fake")
	if m := modelOfARun(c); m != "debug/fake" {
		t.Fatalf("model %v: --model must win", m)
	}
	// A bad --model is a usage error naming the flag.
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--model", "claude"},
		env(map[string]string{}), &bytes.Buffer{}, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--model") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// TestAgentMaxTokensEndToEnd runs canvasd serve with
// CANVASD_AGENT_MAX_TOKENS=12 against each provider's protocol server:
// every call carries the bound (Anthropic's and OpenAI's max_tokens,
// OpenAI's max_completion_tokens for an o3 model, Gemini's
// maxOutputTokens); the run's reply, longer than 12 tokens, is cut there
// by the server with the provider's stop reason, and the session's chat
// says the reply hit the output-token bound.
func TestAgentMaxTokensEndToEnd(t *testing.T) {
	for _, newServer := range []func(*testing.T) protocolServer{anthropicServer, googleServer, openaiServer} {
		srv := newServer(t)
		t.Run(srv.spec, func(t *testing.T) {
			c := srv.startCanvasd(t, map[string]string{"CANVASD_AGENT_MAX_TOKENS": "12"})
			id := c.must(202, "POST", "/api/canvas-agent/run", c.admin, map[string]any{"roomId": "board", "message": "start"})["session_id"].(string)
			s := c.sessionEnded(id, c.admin)
			tr, _ := json.Marshal(s["transcript"])
			if s["state"] != "done" || !strings.Contains(string(tr), "hit the output-token bound") {
				t.Fatalf("session %v, transcript %s: want done, with a note that the reply hit the output-token bound", s["state"], tr)
			}
			if reply := scriptedModel(srv.spec, "ok", "Task: start", 0).Text; providertest.OutputTokens(reply) <= 12 {
				t.Fatalf("the scripted reply %q fits in 12 tokens: the test cuts nothing", reply)
			}
			field := map[string]string{"anthropic": "max_tokens", "openai": "max_tokens", "google": "maxOutputTokens"}[srv.spec]
			calls := srv.calls()
			if len(calls) == 0 {
				t.Fatal("no model call")
			}
			for _, call := range calls {
				if !maps.Equal(call.Bound, map[string]int{field: 12}) {
					t.Fatalf("output bound %v on the wire, want %s 12", call.Bound, field)
				}
			}
			if srv.spec != "openai" {
				return
			}
			// OpenAI's reasoning models get max_completion_tokens instead.
			id = c.must(202, "POST", "/api/canvas-agent/run", c.admin, map[string]any{"roomId": "board", "message": "x", "model": "openai:o3-mini"})["session_id"].(string)
			c.sessionEnded(id, c.admin)
			calls = srv.calls()
			if last := calls[len(calls)-1]; last.Model != "o3-mini" || !maps.Equal(last.Bound, map[string]int{"max_completion_tokens": 12}) {
				t.Fatalf("o3-mini call: model %q, output bound %v, want max_completion_tokens 12", last.Model, last.Bound)
			}
		})
	}
}

// TestAgentMaxTokensSetting: --agent-max-tokens (CANVASD_AGENT_MAX_TOKENS)
// defaults to 0, takes a count from its variable or, winning, the flag,
// reaches the agent's config (agentConfig, which canvasd serve and canvasd
// agent both use), and anything but a count up to 2147483647 is a usage
// error naming it, for canvasd agent workers too.
func TestAgentMaxTokensSetting(t *testing.T) {
	c, _, err := loadConfig("serve", nil, env(nil), io.Discard)
	if err != nil || c.AgentMaxTokens != 0 {
		t.Fatalf("default: %d, %v; want 0", c.AgentMaxTokens, err)
	}
	c, _, err = loadConfig("serve", nil, env(map[string]string{"CANVASD_AGENT_MAX_TOKENS": "4096"}), io.Discard)
	if err != nil || c.AgentMaxTokens != 4096 {
		t.Fatalf("variable 4096: %d, %v", c.AgentMaxTokens, err)
	}
	c, _, err = loadConfig("agent", []string{"--agent-max-tokens", "1024"}, env(map[string]string{"CANVASD_AGENT_MAX_TOKENS": "4096"}), io.Discard)
	if err != nil || c.AgentMaxTokens != 1024 {
		t.Fatalf("flag 1024 over variable 4096: %d, %v", c.AgentMaxTokens, err)
	}
	if cfg, err := agentConfig(c, env(nil)); err != nil || cfg.MaxTokens != 1024 {
		t.Fatalf("agent config: max tokens %d, %v; want 1024", cfg.MaxTokens, err)
	}
	for _, bad := range []string{"-1", "many", "1.5", "", "2147483648"} {
		if _, _, err := loadConfig("serve", []string{"--agent-max-tokens", bad}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "agent-max-tokens must be") {
			t.Errorf("--agent-max-tokens %q: %v, want a usage error saying what is allowed", bad, err)
		}
		if bad == "" {
			continue
		}
		if _, _, err := loadConfig("serve", nil, env(map[string]string{"CANVASD_AGENT_MAX_TOKENS": bad}), io.Discard); err == nil || !strings.Contains(err.Error(), "CANVASD_AGENT_MAX_TOKENS") {
			t.Errorf("CANVASD_AGENT_MAX_TOKENS=%q: %v, want a usage error naming the variable", bad, err)
		}
	}
	for _, cmd := range []string{"serve", "agent"} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{cmd, "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--agent-max-tokens", "-5"}, env(nil), io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "agent-max-tokens") {
			t.Errorf("canvasd %s --agent-max-tokens -5: exit %d: %s", cmd, code, stderr.String())
		}
	}
}
