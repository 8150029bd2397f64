package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// anthropicDefaultMaxTokens bounds one reply when Config.MaxTokens is 0
// (the Messages API requires a bound); current Claude models accept it, and
// it is far above what a turn needs.
const anthropicDefaultMaxTokens = 8192

// anthropicMaxBreakpoints is the API's limit of cache_control blocks per request.
const anthropicMaxBreakpoints = 4

// anthropicVersion is the anthropic-version header of every call.
const anthropicVersion = "2023-06-01"

// defaultAnthropicBaseURL is the Messages API's address; ANTHROPIC_BASE_URL
// replaces it.
const defaultAnthropicBaseURL = "https://api.anthropic.com"

// anthropicRetries is how many times a call refused with 408, 409, 429 or a
// 5xx (or cut before an answer) is tried again, as Anthropic's SDKs do.
const anthropicRetries = 2

// AnthropicProvider streams Claude models through the Messages API, spoken
// directly over net/http (Anthropic's Go SDK would bring AWS's and Google
// Cloud's modules, for Bedrock and Vertex, into every build). It asks for
// prompt caching: the end of the system prompt and of each message's static
// prefix carries an ephemeral cache_control breakpoint, so a later call that
// starts the same way reads that prefix from Anthropic's cache. The
// screenshot and the turn's instruction come after the breakpoints and are
// never cached.
type AnthropicProvider struct {
	hc        *http.Client
	base      string // without a trailing slash
	key       string
	ttl       string // "5m" or "1h"; "": no breakpoints
	maxTokens int    // max_tokens of every call
}

// newAnthropicProvider builds the provider from cfg (key, base URL, cache
// TTL; no breakpoints when cfg.DisablePromptCache; max_tokens
// cfg.MaxTokens, or anthropicDefaultMaxTokens when 0). Nothing is read from
// the process environment: cfg is the only source.
func newAnthropicProvider(cfg Config, hc *http.Client) *AnthropicProvider {
	if hc == nil {
		hc = http.DefaultClient
	}
	base := cfg.AnthropicBaseURL
	if base == "" {
		base = defaultAnthropicBaseURL
	}
	p := &AnthropicProvider{hc: hc, base: strings.TrimRight(base, "/"), key: cfg.AnthropicAPIKey, maxTokens: anthropicDefaultMaxTokens}
	if cfg.MaxTokens > 0 {
		p.maxTokens = cfg.MaxTokens
	}
	if !cfg.DisablePromptCache {
		p.ttl = cfg.AnthropicCacheTTL
	}
	return p
}

// Vision reports true: images are sent as base64 image blocks.
func (a *AnthropicProvider) Vision() bool { return true }

type anthropicCache struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

type anthropicImage struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// anthropicBlock is a content block of a request: text or an image.
type anthropicBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	Source       *anthropicImage `json:"source,omitempty"`
	CacheControl *anthropicCache `json:"cache_control,omitempty"`
}

type anthropicMessage struct {
	Role    string           `json:"role"`
	Content []anthropicBlock `json:"content"`
}

type anthropicRequest struct {
	Model       string             `json:"model"`
	MaxTokens   int                `json:"max_tokens"`
	Stream      bool               `json:"stream"`
	Temperature *float32           `json:"temperature,omitempty"`
	System      []anthropicBlock   `json:"system,omitempty"`
	Messages    []anthropicMessage `json:"messages"`
}

// anthropicUsage is the usage of message_start and message_delta.
type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// anthropicEvent is one server-sent event of a Messages stream.
type anthropicEvent struct {
	Type    string `json:"type"`
	Message *struct {
		Usage anthropicUsage `json:"usage"`
	} `json:"message"`
	Delta *struct {
		Type       string `json:"type"`
		Text       string `json:"text"`
		StopReason string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anthropicUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// Stream starts a streaming Messages API call. System messages become the
// system blocks; consecutive messages of one role become one turn. A call
// refused with 408, 409, 429 or a 5xx, or whose connection fails before an
// answer, is tried again up to twice, after the retry-after the API asks
// for or a short back-off.
func (a *AnthropicProvider) Stream(ctx context.Context, req ModelRequest) (ModelStream, error) {
	body, err := a.request(req)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		resp, err := a.send(ctx, body)
		retry := attempt < anthropicRetries && ctx.Err() == nil
		if err != nil {
			if !retry {
				return nil, fmt.Errorf("anthropic: %w", err)
			}
			if err := sleepCtx(ctx, anthropicBackoff(attempt, nil)); err != nil {
				return nil, fmt.Errorf("anthropic: %w", err)
			}
			continue
		}
		if resp.StatusCode == http.StatusOK {
			return &anthropicStream{body: resp.Body, events: newSSEReader(resp.Body)}, nil
		}
		failure := anthropicFailure(resp)
		if !retry || !retryableStatus(resp.StatusCode) || resp.Header.Get("x-should-retry") == "false" {
			return nil, failure
		}
		if err := sleepCtx(ctx, anthropicBackoff(attempt, resp.Header)); err != nil {
			return nil, fmt.Errorf("anthropic: %w", err)
		}
	}
}

// send makes one call.
func (a *AnthropicProvider) send(ctx context.Context, body []byte) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	hr.Header.Set("anthropic-version", anthropicVersion)
	if a.key != "" {
		hr.Header.Set("x-api-key", a.key)
	}
	return a.hc.Do(hr)
}

// anthropicFailure reads an error answer (Anthropic's {"type": "error",
// "error": {type, message}}) into an error naming the status, and closes it.
func anthropicFailure(resp *http.Response) error {
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var doc anthropicEvent
	if json.Unmarshal(raw, &doc) == nil && doc.Error != nil {
		return fmt.Errorf("anthropic: %d %s: %s", resp.StatusCode, doc.Error.Type, doc.Error.Message)
	}
	return fmt.Errorf("anthropic: %d %s", resp.StatusCode, strings.TrimSpace(string(raw)))
}

// retryableStatus reports whether a call answered with status may succeed
// when tried again.
func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict || status == http.StatusTooManyRequests || status >= 500
}

// anthropicBackoff is the wait before retry attempt+1: what the answer's
// retry-after-ms or retry-after asks for (up to a minute), else 0.5 s
// doubling per attempt, up to 8 s, less up to a quarter of jitter.
func anthropicBackoff(attempt int, h http.Header) time.Duration {
	if h != nil {
		if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms >= 0 && ms <= 60e3 {
			return time.Duration(ms * float64(time.Millisecond))
		}
		if s, err := strconv.ParseFloat(h.Get("retry-after"), 64); err == nil && s >= 0 && s <= 60 {
			return time.Duration(s * float64(time.Second))
		}
	}
	d := min(500*time.Millisecond<<attempt, 8*time.Second)
	return d - time.Duration(rand.Float64()*0.25*float64(d))
}

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// request encodes req as a Messages API request body, with the cache
// breakpoints.
func (a *AnthropicProvider) request(req ModelRequest) ([]byte, error) {
	p := anthropicRequest{Model: req.Model, MaxTokens: a.maxTokens, Stream: true, Temperature: req.Temperature}
	breakpoints := 0
	text := func(s string, cache bool) anthropicBlock {
		b := anthropicBlock{Type: "text", Text: s}
		if cache && a.ttl != "" && breakpoints < anthropicMaxBreakpoints {
			b.CacheControl = &anthropicCache{Type: "ephemeral", TTL: a.ttl}
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
		var blocks []anthropicBlock
		if static != "" {
			blocks = append(blocks, text(static, true))
		}
		if m.ImageDataURL != "" {
			mt, data, ok := splitImageDataURL(m.ImageDataURL)
			if !ok {
				return nil, fmt.Errorf("anthropic: the image of message %d is not a base64 data:image/... URL", i)
			}
			blocks = append(blocks, anthropicBlock{Type: "image", Source: &anthropicImage{Type: "base64", MediaType: mt, Data: data}})
		}
		if rest != "" {
			blocks = append(blocks, text(rest, false))
		}
		role := "user"
		if m.Role == "assistant" {
			role = "assistant"
		}
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == role {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, blocks...)
		} else {
			p.Messages = append(p.Messages, anthropicMessage{Role: role, Content: blocks})
		}
	}
	return json.Marshal(p)
}

type anthropicStream struct {
	body      io.ReadCloser
	events    *sseReader
	stopped   bool // message_stop arrived
	truncated bool // message_delta's stop_reason was max_tokens
	usage     Usage
}

// Recv returns the next text delta, or io.EOF after message_stop. An error
// event, an undecodable event or a stream cut before message_stop is an
// error.
func (a *anthropicStream) Recv() (string, error) {
	for !a.stopped {
		_, data, err := a.events.next()
		if err == io.EOF {
			return "", errors.New("anthropic stream: the stream ended before message_stop (connection cut)")
		}
		if err != nil {
			return "", fmt.Errorf("anthropic stream: %w", err)
		}
		var ev anthropicEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return "", fmt.Errorf("anthropic stream: an undecodable event: %w", err)
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta != nil && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				return ev.Delta.Text, nil
			}
		case "message_start":
			if ev.Message != nil {
				u := ev.Message.Usage
				a.usage = Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheCreation: u.CacheCreationInputTokens}
			}
		case "message_delta":
			// Cumulative counts; the input ones only when the API sends them.
			a.truncated = a.truncated || ev.Delta != nil && ev.Delta.StopReason == "max_tokens"
			if u := ev.Usage; u != nil {
				a.usage.Output = u.OutputTokens
				if u.InputTokens > 0 || u.CacheReadInputTokens > 0 || u.CacheCreationInputTokens > 0 {
					a.usage.Input, a.usage.CacheRead, a.usage.CacheCreation = u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens
				}
			}
		case "message_stop":
			a.stopped = true
		case "error":
			if ev.Error != nil {
				return "", fmt.Errorf("anthropic stream: %s: %s", ev.Error.Type, ev.Error.Message)
			}
			return "", errors.New("anthropic stream: an error event")
		}
	}
	return "", io.EOF
}

// Close closes the HTTP stream.
func (a *anthropicStream) Close() error { return a.body.Close() }

// Truncated reports whether the reply stopped at max_tokens (stop_reason
// "max_tokens").
func (a *anthropicStream) Truncated() bool { return a.truncated }

// Usage is the usage of message_start, updated by message_delta: input,
// output, cache_read_input_tokens and cache_creation_input_tokens.
func (a *anthropicStream) Usage() Usage { return a.usage }
