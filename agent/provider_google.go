package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"

	"google.golang.org/genai"
)

// GoogleProvider streams Gemini models through the Gemini API's
// streamGenerateContent (server-sent events) with google.golang.org/genai.
type GoogleProvider struct {
	client    *genai.Client
	maxTokens int32 // > 0: maxOutputTokens of every call
}

// newGoogleProvider builds the provider from cfg's key, base URL and
// MaxTokens (Validate keeps it within int32); the Gemini API refuses calls
// without a key, so a missing one is an error here.
func newGoogleProvider(cfg Config, hc *http.Client) (*GoogleProvider, error) {
	if cfg.GoogleAPIKey == "" {
		return nil, errors.New("google: no API key: set GOOGLE_API_KEY or GEMINI_API_KEY")
	}
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: cfg.GoogleAPIKey,
		Backend: genai.BackendGeminiAPI, HTTPClient: hc, HTTPOptions: genai.HTTPOptions{BaseURL: cfg.GoogleBaseURL}})
	if err != nil {
		return nil, fmt.Errorf("google: %w", err)
	}
	return &GoogleProvider{client: c, maxTokens: int32(cfg.MaxTokens)}, nil
}

// Vision reports true: images are sent as inline data parts.
func (g *GoogleProvider) Vision() bool { return true }

// Stream starts a streaming generateContent call. System messages become
// the system instruction; consecutive messages of one role become one
// content. A message's image goes between its static prefix and the rest,
// as for Anthropic, so the prompt's stable part comes first.
func (g *GoogleProvider) Stream(ctx context.Context, req ModelRequest) (ModelStream, error) {
	cfg := &genai.GenerateContentConfig{Temperature: req.Temperature, MaxOutputTokens: g.maxTokens} // 0: omitted
	var contents []*genai.Content
	for i, m := range req.Messages {
		static, rest := m.split()
		var parts []*genai.Part
		if static != "" {
			parts = append(parts, genai.NewPartFromText(static))
		}
		if m.ImageDataURL != "" && m.Role != "system" {
			mt, payload, ok := splitImageDataURL(m.ImageDataURL)
			data, err := base64.StdEncoding.DecodeString(payload)
			if !ok || err != nil {
				return nil, fmt.Errorf("google: the image of message %d is not a base64 data:image/... URL", i)
			}
			parts = append(parts, genai.NewPartFromBytes(data, mt))
		}
		if rest != "" {
			parts = append(parts, genai.NewPartFromText(rest))
		}
		switch {
		case m.Role == "system":
			if cfg.SystemInstruction == nil {
				cfg.SystemInstruction = &genai.Content{}
			}
			cfg.SystemInstruction.Parts = append(cfg.SystemInstruction.Parts, parts...)
		case len(contents) > 0 && contents[len(contents)-1].Role == geminiRole(m.Role):
			last := contents[len(contents)-1]
			last.Parts = append(last.Parts, parts...)
		default:
			contents = append(contents, &genai.Content{Role: geminiRole(m.Role), Parts: parts})
		}
	}
	next, stop := iter.Pull2(g.client.Models.GenerateContentStream(ctx, req.Model, contents, cfg))
	return &googleStream{next: next, stop: stop}, nil
}

// geminiRole maps a prompt role to Gemini's: "model" for the assistant.
func geminiRole(role string) string {
	if role == "assistant" {
		return genai.RoleModel
	}
	return genai.RoleUser
}

type googleStream struct {
	next      func() (*genai.GenerateContentResponse, error, bool)
	stop      func()
	finished  bool // a candidate carried a finish reason
	truncated bool // that reason was MAX_TOKENS
	usage     Usage
}

// Recv returns the next text (thought parts are skipped), or io.EOF when
// the stream ends after a finish reason. An error chunk, an undecodable
// chunk, a blocked prompt or a stream cut before any finish reason is an
// error.
func (g *googleStream) Recv() (string, error) {
	for {
		resp, err, ok := g.next()
		if !ok {
			if !g.finished {
				return "", errors.New("google stream: the stream ended without a finish reason (connection cut)")
			}
			return "", io.EOF
		}
		if err != nil {
			return "", fmt.Errorf("google stream: %w", err)
		}
		if u := resp.UsageMetadata; u != nil { // cumulative: the last chunk's is the call's
			cached := int64(u.CachedContentTokenCount)
			g.usage = Usage{Input: max(int64(u.PromptTokenCount)-cached, 0), CacheRead: cached,
				Output: int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount)}
		}
		if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
			return "", fmt.Errorf("google: the prompt was blocked (%s) %s", pf.BlockReason, pf.BlockReasonMessage)
		}
		var b strings.Builder
		for _, c := range resp.Candidates {
			if c.FinishReason != "" && c.FinishReason != genai.FinishReasonUnspecified {
				g.finished = true
				g.truncated = g.truncated || c.FinishReason == genai.FinishReasonMaxTokens
			}
			if c.Content == nil {
				continue
			}
			for _, p := range c.Content.Parts {
				if !p.Thought {
					b.WriteString(p.Text)
				}
			}
		}
		if b.Len() > 0 {
			return b.String(), nil
		}
	}
}

// Close ends the stream and closes its HTTP response.
func (g *googleStream) Close() error {
	g.stop()
	return nil
}

// Truncated reports whether the reply stopped at maxOutputTokens
// (finishReason MAX_TOKENS).
func (g *googleStream) Truncated() bool { return g.truncated }

// Usage is the last usageMetadata: cachedContentTokenCount is CacheRead,
// candidates and thoughts are Output.
func (g *googleStream) Usage() Usage { return g.usage }
