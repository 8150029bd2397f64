package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/agent/providertest"
)

// A one-pixel PNG and a tiny GIF, as data URLs.
const (
	testPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	testGIF = "R0lGODlhAQABAAAAACw="
)

// testPrompt is the shape of a turn's prompt as the runner builds it: the
// system prompt (static), a screenshot message, then the user message whose
// canvas context is its static prefix, with the user's image.
func testPrompt(temp *float32) ModelRequest {
	const sys, ctx, instr = "You are the canvas agent.", "Canvas context (JSON):\n{\"shapes\":[]}\n\n", "Task: draw a box"
	return ModelRequest{Model: "m-1", Temperature: temp, Messages: []Message{
		{Role: "system", Text: sys, Static: len(sys)},
		{Role: "user", Text: "Screenshot of the current viewport.", ImageDataURL: "data:image/gif;base64," + testGIF},
		{Role: "user", Text: ctx + instr, Static: len(ctx), ImageDataURL: "data:image/png;base64," + testPNG},
	}}
}

// drain reads a stream to its end, failing the test if that takes over 20 s.
func drain(t *testing.T, s ModelStream) (string, error) {
	t.Helper()
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var b strings.Builder
		for {
			c, err := s.Recv()
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				done <- result{b.String(), err}
				return
			}
			b.WriteString(c)
		}
	}()
	select {
	case r := <-done:
		s.Close()
		return r.text, r.err
	case <-time.After(20 * time.Second):
		t.Fatal("the stream neither ended nor failed within 20 s")
		return "", nil
	}
}

func testProviders(t *testing.T, cfg Config) *Providers {
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	return NewProviders(cfg, hc)
}

// stream resolves spec, starts the call and reads it to the end.
func stream(t *testing.T, p *Providers, spec string, req ModelRequest) (string, error) {
	t.Helper()
	prov, model, err := p.Get(spec)
	if err != nil {
		return "", err
	}
	if !prov.Vision() {
		t.Fatalf("%s: want a vision provider", spec)
	}
	req.Model = model
	s, err := prov.Stream(context.Background(), req)
	if err != nil {
		return "", err
	}
	return drain(t, s)
}

const reply = `{"actions":[{"name":"think","params":{"text":"Drawing a box for the task."}}]}`

func TestAnthropicRequestCachingAndStream(t *testing.T) {
	srv := providertest.NewAnthropic(t, "sk-ant-test", func(providertest.AnthropicRequest) providertest.Reply {
		return providertest.Reply{Text: reply, ChunkSize: 7}
	})
	cfg := DefaultConfig()
	cfg.AnthropicAPIKey, cfg.AnthropicBaseURL, cfg.AnthropicCacheTTL = "sk-ant-test", srv.URL, "1h"
	zero := float32(0)
	got, err := stream(t, testProviders(t, cfg), "anthropic:claude-test", testPrompt(&zero))
	if err != nil || got != reply {
		t.Fatalf("streamed %q, %v; want the reply", got, err)
	}
	req := srv.Requests()[0]
	if req.Model != "claude-test" || req.Version == "" || req.MaxTokens != anthropicDefaultMaxTokens || req.Temperature == nil || *req.Temperature != 0 {
		t.Fatalf("model %q version %q max_tokens %d temperature %v", req.Model, req.Version, req.MaxTokens, req.Temperature)
	}
	cached := func(b providertest.AnthropicBlock) bool {
		return b.CacheControl != nil && b.CacheControl.Type == "ephemeral" && b.CacheControl.TTL == "1h"
	}
	if len(req.System) != 1 || req.System[0].Text != "You are the canvas agent." || !cached(req.System[0]) {
		t.Fatalf("system %+v: want the system prompt with an ephemeral 1h breakpoint", req.System)
	}
	// The two user messages are one turn: screenshot, its caption, the
	// cached context, the user's image, the instruction.
	if len(req.Messages) != 1 || req.Messages[0].Role != "user" {
		t.Fatalf("messages %+v", req.Messages)
	}
	c := req.Messages[0].Content
	want := []struct{ typ, text, media, data string }{
		{"image", "", "image/gif", testGIF},
		{"text", "Screenshot of the current viewport.", "", ""},
		{"text", "Canvas context (JSON):\n{\"shapes\":[]}\n\n", "", ""},
		{"image", "", "image/png", testPNG},
		{"text", "Task: draw a box", "", ""},
	}
	if len(c) != len(want) {
		t.Fatalf("%d blocks: %+v", len(c), c)
	}
	for i, w := range want {
		b := c[i]
		if b.Type != w.typ || b.Text != w.text || (w.typ == "image" && (b.Source == nil || b.Source.Type != "base64" ||
			b.Source.MediaType != w.media || b.Source.Data != w.data)) {
			t.Fatalf("block %d: %+v, want %+v", i, b, w)
		}
		if cached(b) != (i == 2) {
			t.Fatalf("block %d cache_control %+v: only the canvas context carries a breakpoint", i, b.CacheControl)
		}
	}

	// No temperature → none on the wire; the prompt cache off → no breakpoints.
	cfg.DisablePromptCache = true
	if _, err := stream(t, testProviders(t, cfg), "anthropic:claude-test", testPrompt(nil)); err != nil {
		t.Fatal(err)
	}
	req = srv.Requests()[1]
	if req.Temperature != nil || req.System[0].CacheControl != nil || req.Messages[0].Content[2].CacheControl != nil {
		t.Fatalf("temperature %v, system %+v, context %+v", req.Temperature, req.System[0], req.Messages[0].Content[2])
	}
}

func TestGoogleRequestAndStream(t *testing.T) {
	srv := providertest.NewGemini(t, "g-test", func(providertest.GeminiRequest) providertest.Reply {
		return providertest.Reply{Text: reply, ChunkSize: 9}
	})
	cfg := DefaultConfig()
	cfg.GoogleAPIKey, cfg.GoogleBaseURL = "g-test", srv.URL
	zero := float32(0)
	got, err := stream(t, testProviders(t, cfg), "google:gemini-test", testPrompt(&zero))
	if err != nil || got != reply {
		t.Fatalf("streamed %q, %v; want the reply", got, err)
	}
	req := srv.Requests()[0]
	if req.Model != "gemini-test" || req.Temperature() == nil || *req.Temperature() != 0 {
		t.Fatalf("model %q temperature %v", req.Model, req.Temperature())
	}
	if si := req.SystemInstruction; si == nil || len(si.Parts) != 1 || si.Parts[0].Text != "You are the canvas agent." {
		t.Fatalf("system instruction %+v", si)
	}
	if len(req.Contents) != 1 || req.Contents[0].Role != "user" {
		t.Fatalf("contents %+v", req.Contents)
	}
	p := req.Contents[0].Parts
	want := []struct{ text, mime, data string }{
		{"", "image/gif", testGIF},
		{"Screenshot of the current viewport.", "", ""},
		{"Canvas context (JSON):\n{\"shapes\":[]}\n\n", "", ""},
		{"", "image/png", testPNG},
		{"Task: draw a box", "", ""},
	}
	if len(p) != len(want) {
		t.Fatalf("%d parts: %+v", len(p), p)
	}
	for i, w := range want {
		if p[i].Text != w.text || (w.mime != "") != (p[i].InlineData != nil) ||
			(w.mime != "" && (p[i].InlineData.MimeType != w.mime || p[i].InlineData.Data != w.data)) {
			t.Fatalf("part %d: %+v, want %+v", i, p[i], w)
		}
	}

	if _, err := stream(t, testProviders(t, cfg), "google:gemini-test", testPrompt(nil)); err != nil {
		t.Fatal(err)
	}
	if tp := srv.Requests()[1].Temperature(); tp != nil {
		t.Fatalf("temperature %v sent without one asked for", *tp)
	}
	// Without a key there is no call, and the error says what to set.
	cfg.GoogleAPIKey = ""
	if _, err := stream(t, testProviders(t, cfg), "google:gemini-test", testPrompt(nil)); err == nil || !strings.Contains(err.Error(), "GOOGLE_API_KEY") {
		t.Fatalf("no key: %v", err)
	}
}

// Every provider failure ends the call with an error that names it; none hangs.
func TestProviderErrors(t *testing.T) {
	script := func(model string) providertest.Reply {
		switch model {
		case "e401":
			return providertest.Reply{Status: 401}
		case "e429":
			return providertest.Reply{Status: 429}
		case "e500":
			return providertest.Reply{Status: 500}
		case "malformed":
			return providertest.Reply{Text: reply, Malformed: true}
		}
		return providertest.Reply{Text: reply, Cut: true}
	}
	ant := providertest.NewAnthropic(t, "k", func(r providertest.AnthropicRequest) providertest.Reply { return script(r.Model) })
	gem := providertest.NewGemini(t, "k", func(r providertest.GeminiRequest) providertest.Reply { return script(r.Model) })
	oai := providertest.NewOpenAI(t, "k", func(r providertest.OpenAIRequest) providertest.Reply { return script(r.Model) })
	cfg := DefaultConfig()
	cfg.AnthropicAPIKey, cfg.AnthropicBaseURL, cfg.GoogleAPIKey, cfg.GoogleBaseURL = "k", ant.URL, "k", gem.URL
	cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "k", oai.URL+"/v1"
	p := testProviders(t, cfg)
	for _, c := range []struct{ model, want string }{
		{"e401", "401"}, {"e429", "429"}, {"e500", "500"}, {"malformed", "stream"}, {"cut", "ended"},
	} {
		for _, prov := range []string{"anthropic", "google", "openai"} {
			_, err := stream(t, p, prov+":"+c.model, testPrompt(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), prov) {
				t.Errorf("%s:%s: error %v, want one naming %s and %q", prov, c.model, err, prov, c.want)
			}
		}
	}
	// The Anthropic SDK retries 429 and 5xx twice (honouring retry-after); Gemini calls are not retried.
	var a429, g429 int
	for _, r := range ant.Requests() {
		if r.Model == "e429" {
			a429++
		}
	}
	for _, r := range gem.Requests() {
		if r.Model == "e429" {
			g429++
		}
	}
	if a429 != 3 || g429 != 1 {
		t.Fatalf("429 attempts: anthropic %d, google %d; want 3 and 1", a429, g429)
	}
	// A wrong key: Anthropic's 401, Gemini's 400 "API key not valid".
	cfg.AnthropicAPIKey, cfg.GoogleAPIKey = "wrong", "wrong"
	p = testProviders(t, cfg)
	if _, err := stream(t, p, "anthropic:ok", testPrompt(nil)); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("anthropic wrong key: %v", err)
	}
	if _, err := stream(t, p, "google:ok", testPrompt(nil)); err == nil || !strings.Contains(err.Error(), "API key not valid") {
		t.Fatalf("google wrong key: %v", err)
	}
	// A cancelled call stops at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	prov, _, _ := p.Get("anthropic:ok")
	if _, err := prov.Stream(ctx, testPrompt(nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled anthropic call: %v", err)
	}
}

// TestOpenAIStreamEnd: go-openai reports io.EOF both after [DONE] and when
// the connection drops, so an OpenAI-compatible reply is complete only once a
// choice carried a finish_reason. A vLLM-style error chunk followed by
// [DONE], or a body that just stops, is an error saying the stream ended
// without one; a reply with a finish_reason but no [DONE] is accepted.
func TestOpenAIStreamEnd(t *testing.T) {
	chunk := func(content, finish string) string {
		c, _ := json.Marshal(content)
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return fmt.Sprintf(`data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":%s},"finish_reason":%s}]}`+"\n\n", c, f)
	}
	for _, c := range []struct {
		name, body string
		want       string // "": the stream succeeds with reply
	}{
		{"error chunk then [DONE]", chunk(reply[:10], "") + `data: {"object":"error","message":"overloaded","type":"BadRequestError","code":400}` + "\n\ndata: [DONE]\n\n", "finish_reason"},
		{"cut", chunk(reply[:10], ""), "finish_reason"},
		{"[DONE] without a finish_reason", chunk(reply, "") + "data: [DONE]\n\n", "finish_reason"},
		{"finish_reason without [DONE]", chunk(reply, "") + chunk("", "stop"), ""},
		{"finish_reason and [DONE]", chunk(reply, "") + chunk("", "stop") + "data: [DONE]\n\n", ""},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, c.body)
		}))
		cfg := DefaultConfig()
		cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "k", srv.URL+"/v1"
		got, err := stream(t, testProviders(t, cfg), "openai:m", testPrompt(nil))
		srv.Close()
		if c.want == "" {
			if err != nil || got != reply {
				t.Errorf("%s: streamed %q, %v; want the reply", c.name, got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "openai") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: streamed %q, error %v; want one naming openai and %q", c.name, got, err, c.want)
		}
	}
}

// TestOpenAIReasoningModelTemperature: OpenAI's reasoning models (o1, o3,
// o4, gpt-5) refuse any temperature but their default, so a follow-up's
// temperature 0 is left off their requests; other models get it on the wire.
func TestOpenAIReasoningModelTemperature(t *testing.T) {
	oai := providertest.NewOpenAI(t, "k", func(providertest.OpenAIRequest) providertest.Reply { return providertest.Reply{Text: reply} })
	cfg := DefaultConfig()
	cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "k", oai.URL+"/v1"
	p := testProviders(t, cfg)
	zero := float32(0)
	for model, reasoning := range map[string]bool{"o1": true, "o3-mini": true, "o4-mini": true, "gpt-5-mini": true, "gpt-4o": false} {
		if _, err := stream(t, p, "openai:"+model, testPrompt(&zero)); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		r := oai.Requests()
		tp := r[len(r)-1].Temperature
		if reasoning && tp != nil {
			t.Errorf("%s: temperature %v on the wire, want none", model, *tp)
		}
		if !reasoning && (tp == nil || *tp != 0) {
			t.Errorf("%s: temperature %v on the wire, want 0", model, tp)
		}
	}
}

func TestImageThatIsNotADataURL(t *testing.T) {
	cfg := DefaultConfig()
	cfg.GoogleAPIKey = "k"
	p := testProviders(t, cfg)
	req := ModelRequest{Model: "m", Messages: []Message{{Role: "user", Text: "look", ImageDataURL: "https://example.invalid/x.png"}}}
	for _, spec := range []string{"anthropic:m", "google:m"} {
		prov, _, err := p.Get(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := prov.Stream(context.Background(), req); err == nil || !strings.Contains(err.Error(), "data:image") {
			t.Fatalf("%s: %v", spec, err)
		}
	}
}

// TestProviderUsage: each provider's stream reports the call's token usage
// in the same terms (Usage): Anthropic's input, cache read and cache
// creation counts as sent; the cached tokens OpenAI-compatible endpoints
// and Gemini count within their prompt tokens as CacheRead, the rest as
// Input. The OpenAI request asks for the usage (stream_options.include_usage).
func TestProviderUsage(t *testing.T) {
	ant := providertest.NewAnthropic(t, "k", func(providertest.AnthropicRequest) providertest.Reply { return providertest.Reply{Text: reply} })
	gem := providertest.NewGemini(t, "k", func(providertest.GeminiRequest) providertest.Reply { return providertest.Reply{Text: reply} })
	oai := providertest.NewOpenAI(t, "k", func(providertest.OpenAIRequest) providertest.Reply { return providertest.Reply{Text: reply} })
	cfg := DefaultConfig()
	cfg.AnthropicAPIKey, cfg.AnthropicBaseURL, cfg.GoogleAPIKey, cfg.GoogleBaseURL = "k", ant.URL, "k", gem.URL
	cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "k", oai.URL+"/v1"
	p := testProviders(t, cfg)
	out := int64(providertest.OutputTokens(reply))
	for _, c := range []struct {
		spec string
		want Usage
	}{
		{"anthropic:m", Usage{Input: providertest.InputTokens, Output: out, CacheRead: providertest.CacheReadTokens, CacheCreation: providertest.CacheCreationTokens}},
		{"openai:m", Usage{Input: providertest.InputTokens, Output: out, CacheRead: providertest.CacheReadTokens}},
		{"google:m", Usage{Input: providertest.InputTokens, Output: out, CacheRead: providertest.CacheReadTokens}},
	} {
		s := streamOf(t, p, c.spec)
		if got, err := drain(t, s); err != nil || got != reply {
			t.Fatalf("%s: streamed %q, %v", c.spec, got, err)
		}
		ur, ok := s.(UsageReporter)
		if !ok {
			t.Fatalf("%s: the stream %T reports no usage", c.spec, s)
		}
		if got := ur.Usage(); got != c.want {
			t.Errorf("%s: usage %+v, want %+v", c.spec, got, c.want)
		}
	}
	if r := oai.Requests(); len(r) != 1 || r[0].StreamOptions == nil || !r[0].StreamOptions.IncludeUsage {
		t.Fatalf("%d openai requests, the first's stream_options %+v: want one asking for the usage", len(r), r[0].StreamOptions)
	}
}

// TestProviderMaxTokens: Config.MaxTokens is every call's output bound on
// the wire: Anthropic's max_tokens (8192 when 0), an OpenAI-compatible
// max_tokens (max_completion_tokens for OpenAI's reasoning models, o1, o3,
// o4 and gpt-5), Gemini's generationConfig.maxOutputTokens (neither of the
// two sent when 0). A reply the bound cut off reports Truncated (the
// protocol servers end it with max_tokens, length, MAX_TOKENS); one within
// it does not.
func TestProviderMaxTokens(t *testing.T) {
	ok := func(string) providertest.Reply { return providertest.Reply{Text: reply} }
	ant := providertest.NewAnthropic(t, "k", func(r providertest.AnthropicRequest) providertest.Reply { return ok(r.Model) })
	gem := providertest.NewGemini(t, "k", func(r providertest.GeminiRequest) providertest.Reply { return ok(r.Model) })
	oai := providertest.NewOpenAI(t, "k", func(r providertest.OpenAIRequest) providertest.Reply { return ok(r.Model) })
	// sent is the bound fields of the last request to spec's server, by wire name.
	sent := func(spec string) map[string]int {
		out := map[string]int{}
		switch {
		case strings.HasPrefix(spec, "anthropic:"):
			r := ant.Requests()
			out["max_tokens"] = r[len(r)-1].MaxTokens
		case strings.HasPrefix(spec, "openai:"):
			r := oai.Requests()[len(oai.Requests())-1]
			if r.MaxTokens != nil {
				out["max_tokens"] = *r.MaxTokens
			}
			if r.MaxCompletionTokens != nil {
				out["max_completion_tokens"] = *r.MaxCompletionTokens
			}
		default:
			r := gem.Requests()
			if m := r[len(r)-1].MaxOutputTokens(); m != nil {
				out["maxOutputTokens"] = *m
			}
		}
		return out
	}
	reasoning := []string{"openai:o1", "openai:o3-mini", "openai:o4-mini", "openai:gpt-5-mini"}
	for _, c := range []struct {
		maxTokens int
		want      map[string]map[string]int // spec → bound fields
	}{
		{0, map[string]map[string]int{"anthropic:m": {"max_tokens": 8192}, "openai:m": {}, "openai:o3-mini": {}, "google:m": {}}},
		{4096, map[string]map[string]int{"anthropic:m": {"max_tokens": 4096}, "openai:m": {"max_tokens": 4096},
			"openai:gpt-4o": {"max_tokens": 4096}, "google:m": {"maxOutputTokens": 4096}}},
		{5, map[string]map[string]int{"anthropic:m": {"max_tokens": 5}, "openai:m": {"max_tokens": 5}, "google:m": {"maxOutputTokens": 5}}},
	} {
		if c.maxTokens > 0 {
			for _, spec := range reasoning {
				c.want[spec] = map[string]int{"max_completion_tokens": c.maxTokens}
			}
		}
		cfg := DefaultConfig()
		cfg.MaxTokens = c.maxTokens
		cfg.AnthropicAPIKey, cfg.AnthropicBaseURL, cfg.GoogleAPIKey, cfg.GoogleBaseURL = "k", ant.URL, "k", gem.URL
		cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "k", oai.URL+"/v1"
		p := testProviders(t, cfg)
		for spec, want := range c.want {
			s := streamOf(t, p, spec)
			got, err := drain(t, s)
			if err != nil {
				t.Fatalf("max tokens %d, %s: %v", c.maxTokens, spec, err)
			}
			if b := sent(spec); !maps.Equal(b, want) {
				t.Errorf("max tokens %d, %s: bound fields %v on the wire, want %v", c.maxTokens, spec, b, want)
			}
			wantText, wantOut, cut := providertest.Bounded(reply, c.maxTokens)
			if got != wantText {
				t.Errorf("max tokens %d, %s: streamed %q, want %q", c.maxTokens, spec, got, wantText)
			}
			tr, isTR := s.(TruncationReporter)
			if !isTR || tr.Truncated() != cut {
				t.Errorf("max tokens %d, %s: stream %T truncated %v, want %v", c.maxTokens, spec, s, isTR && tr.Truncated(), cut)
			}
			if u := s.(UsageReporter).Usage(); u.Output != int64(wantOut) {
				t.Errorf("max tokens %d, %s: %d output tokens, want %d", c.maxTokens, spec, u.Output, wantOut)
			}
		}
	}
}

// streamOf starts the test prompt's stream on spec's provider and model.
func streamOf(t *testing.T, p *Providers, spec string) ModelStream {
	t.Helper()
	prov, model, err := p.Get(spec)
	if err != nil {
		t.Fatal(err)
	}
	req := testPrompt(nil)
	req.Model = model
	s, err := prov.Stream(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	return s
}
