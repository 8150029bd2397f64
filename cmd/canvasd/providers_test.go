package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
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
}

// protocolServer is one provider's local protocol server as canvasd sees it.
type protocolServer struct {
	spec  string            // the model spec prefix, "anthropic" or "google"
	env   map[string]string // canvasd's environment pointing at the server
	calls func() []modelCallView
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
		v := modelCallView{Model: r.Model, Temperature: r.Temperature}
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
		v := modelCallView{Model: r.Model, Temperature: r.Temperature()}
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

// TestProviderModelsEndToEnd runs canvasd serve with anthropic:<model> and
// then google:<model>, each configured through its environment variables
// and pointed at a local server speaking that provider's streaming protocol.
// Over real listeners: a run's actions stream into the canvas, committed by
// the agent; the low-action follow-up carries temperature 0 and the first
// call none; Anthropic calls carry 1h cache breakpoints on the system
// prompt and the canvas context; an image message reaches the model as an
// image of exactly the posted bytes; and a provider that answers 401, 429,
// 500 or a broken stream ends the session in the error state with the reason.
func TestProviderModelsEndToEnd(t *testing.T) {
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	for _, newServer := range []func(*testing.T) protocolServer{anthropicServer, googleServer} {
		srv := newServer(t)
		t.Run(srv.spec, func(t *testing.T) {
			vars := map[string]string{"CANVAS_STEWARD_MODEL": srv.spec + ":ok"}
			for k, v := range srv.env {
				vars[k] = v
			}
			c := startCanvasd(t, vars)
			c.must(201, "POST", "/api/canvases", c.admin, map[string]any{"canvas_id": "board"})

			id := c.must(202, "POST", "/api/canvas-agent/run", c.admin, map[string]any{"roomId": "board", "message": "start"})["session_id"].(string)
			if s := c.sessionEnded(id, c.admin); s["state"] != "done" || s["model"] != srv.spec+":ok" {
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
			if seen == nil || len(seen.Images) != 1 || seen.Images[0] != dataURL {
				t.Fatalf("image message call %+v: want exactly the posted image", seen)
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
