package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"
)

// anthropicDefaultMaxTokens bounds one reply when Config.MaxTokens is 0
// (the Messages API requires a bound); current Claude models accept it, and
// it is far above what a turn needs.
const anthropicDefaultMaxTokens = 8192

// anthropicMaxBreakpoints is the API's limit of cache_control blocks per request.
const anthropicMaxBreakpoints = 4

// AnthropicProvider streams Claude models through the Messages API with
// anthropic-sdk-go. It asks for prompt caching: the end of the system
// prompt and of each message's static prefix carries an ephemeral
// cache_control breakpoint, so a later call that starts the same way reads
// that prefix from Anthropic's cache. The screenshot and the turn's
// instruction come after the breakpoints and are never cached.
type AnthropicProvider struct {
	client    anthropic.Client
	ttl       anthropic.CacheControlEphemeralTTL // "": no breakpoints
	maxTokens int64                              // max_tokens of every call
}

// newAnthropicProvider builds the provider from cfg (key, base URL, cache
// TTL; no breakpoints when cfg.DisablePromptCache; max_tokens
// cfg.MaxTokens, or anthropicDefaultMaxTokens when 0). The SDK reads
// nothing from the process environment: cfg is the only source.
func newAnthropicProvider(cfg Config, hc *http.Client) *AnthropicProvider {
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithHTTPClient(hc)}
	if cfg.AnthropicAPIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.AnthropicAPIKey))
	}
	if cfg.AnthropicBaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.AnthropicBaseURL))
	}
	p := &AnthropicProvider{client: anthropic.NewClient(opts...), maxTokens: anthropicDefaultMaxTokens}
	if cfg.MaxTokens > 0 {
		p.maxTokens = int64(cfg.MaxTokens)
	}
	if !cfg.DisablePromptCache {
		p.ttl = anthropic.CacheControlEphemeralTTL(cfg.AnthropicCacheTTL)
	}
	return p
}

// Vision reports true: images are sent as base64 image blocks.
func (a *AnthropicProvider) Vision() bool { return true }

// Stream starts a streaming Messages API call. System messages become the
// system blocks; consecutive messages of one role become one turn.
func (a *AnthropicProvider) Stream(ctx context.Context, req ModelRequest) (ModelStream, error) {
	p := anthropic.MessageNewParams{Model: anthropic.Model(req.Model), MaxTokens: a.maxTokens}
	if req.Temperature != nil {
		p.Temperature = anthropic.Float(float64(*req.Temperature))
	}
	breakpoints := 0
	text := func(s string, cache bool) anthropic.TextBlockParam {
		b := anthropic.TextBlockParam{Text: s}
		if cache && a.ttl != "" && breakpoints < anthropicMaxBreakpoints {
			b.CacheControl = anthropic.CacheControlEphemeralParam{TTL: a.ttl}
			breakpoints++
		}
		return b
	}
	for i, m := range req.Messages {
		static, rest := m.split()
		if m.Role == "system" {
			if static != "" {
				p.System = append(p.System, text(static, true))
			}
			if rest != "" {
				p.System = append(p.System, text(rest, false))
			}
			continue
		}
		var blocks []anthropic.ContentBlockParamUnion
		if static != "" {
			blocks = append(blocks, anthropic.ContentBlockParamUnion{OfText: ptr(text(static, true))})
		}
		if m.ImageDataURL != "" {
			mt, data, ok := splitImageDataURL(m.ImageDataURL)
			if !ok {
				return nil, fmt.Errorf("anthropic: the image of message %d is not a base64 data:image/... URL", i)
			}
			blocks = append(blocks, anthropic.NewImageBlockBase64(mt, data))
		}
		if rest != "" {
			blocks = append(blocks, anthropic.ContentBlockParamUnion{OfText: ptr(text(rest, false))})
		}
		role := anthropic.MessageParamRoleUser
		if m.Role == "assistant" {
			role = anthropic.MessageParamRoleAssistant
		}
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == role {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, blocks...)
		} else {
			p.Messages = append(p.Messages, anthropic.MessageParam{Role: role, Content: blocks})
		}
	}
	s := a.client.Messages.NewStreaming(ctx, p)
	if err := s.Err(); err != nil {
		s.Close()
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	return &anthropicStream{s: s}, nil
}

func ptr[T any](v T) *T { return &v }

type anthropicStream struct {
	s         *ssestream.Stream[anthropic.MessageStreamEventUnion]
	stopped   bool // message_stop arrived
	truncated bool // message_delta's stop_reason was max_tokens
	usage     Usage
}

// Recv returns the next text delta, or io.EOF after message_stop. An error
// event, an undecodable event or a stream cut before message_stop is an
// error.
func (a *anthropicStream) Recv() (string, error) {
	for a.s.Next() {
		ev := a.s.Current()
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				return ev.Delta.Text, nil
			}
		case "message_start":
			u := ev.Message.Usage
			a.usage = Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheCreation: u.CacheCreationInputTokens}
		case "message_delta":
			// Cumulative counts; the input ones only when the API sends them.
			a.truncated = a.truncated || ev.Delta.StopReason == anthropic.StopReasonMaxTokens
			u := ev.Usage
			a.usage.Output = u.OutputTokens
			if u.InputTokens > 0 || u.CacheReadInputTokens > 0 || u.CacheCreationInputTokens > 0 {
				a.usage.Input, a.usage.CacheRead, a.usage.CacheCreation = u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens
			}
		case "message_stop":
			a.stopped = true
		}
	}
	if err := a.s.Err(); err != nil {
		return "", fmt.Errorf("anthropic stream: %w", err)
	}
	if !a.stopped {
		return "", errors.New("anthropic stream: the stream ended before message_stop (connection cut)")
	}
	return "", io.EOF
}

// Close closes the HTTP stream.
func (a *anthropicStream) Close() error { return a.s.Close() }

// Truncated reports whether the reply stopped at max_tokens (stop_reason
// "max_tokens").
func (a *anthropicStream) Truncated() bool { return a.truncated }

// Usage is the usage of message_start, updated by message_delta: input,
// output, cache_read_input_tokens and cache_creation_input_tokens.
func (a *anthropicStream) Usage() Usage { return a.usage }
