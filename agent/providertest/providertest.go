// Package providertest runs local HTTP servers that speak the streaming wire
// protocols of the model providers the agent supports, for tests: Anthropic's
// Messages API (POST /v1/messages, server-sent message_start …
// content_block_delta … message_stop events), the Gemini API's
// streamGenerateContent (POST /v1beta/models/{model}:streamGenerateContent?alt=sse,
// server-sent GenerateContentResponse chunks) and OpenAI's chat completions
// (POST /v1/chat/completions with stream: server-sent chunks, then
// [DONE]). Each server decodes and records the requests it gets and answers
// with scripted replies; point the provider's base URL at Server.URL.
//
// Every stream that ends normally reports the same token usage in its
// provider's terms: InputTokens prompt tokens at the full price,
// CacheReadTokens read from the prompt cache, CacheCreationTokens written to
// it (Anthropic only) and OutputTokens(reply text) generated.
//
// A request's output-token bound (Anthropic's max_tokens, OpenAI's
// max_tokens or max_completion_tokens, Gemini's maxOutputTokens) is
// enforced as a model would: a reply of more tokens is cut (see Bounded) and
// ends with the provider's stop reason for it (max_tokens, length,
// MAX_TOKENS) instead of the normal one (end_turn, stop, STOP).
package providertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The token usage the servers report (see the package comment).
const (
	InputTokens         = 100
	CacheReadTokens     = 2000
	CacheCreationTokens = 300
)

// OutputTokens is the output token count reported for a reply of text.
func OutputTokens(text string) int { return len(text)/4 + 1 }

// Bounded is what the servers stream of a reply text under an output bound
// of max tokens (≤ 0: none): text itself, or, when OutputTokens(text)
// exceeds max, its first 4*max bytes, reported as max output tokens, with
// cut true.
func Bounded(text string, max int) (streamed string, tokens int, cut bool) {
	if max <= 0 || OutputTokens(text) <= max {
		return text, OutputTokens(text), false
	}
	return text[:min(4*max, len(text))], max, true
}

// Reply is one scripted answer.
type Reply struct {
	// Text is streamed in ChunkSize-byte deltas (default 16).
	Text      string
	ChunkSize int
	// Status, when not 0, answers with that HTTP status and the provider's
	// error document instead of a stream.
	Status int
	// Malformed sends one delta, then an event whose data is not JSON.
	Malformed bool
	// Cut sends one delta, then ends the response without the closing events.
	Cut bool
}

// Server is a running protocol server recording requests of type R.
type Server[R any] struct {
	URL  string
	mu   sync.Mutex
	reqs []R
}

// Requests returns the decoded requests received so far, in order.
func (s *Server[R]) Requests() []R {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]R(nil), s.reqs...)
}

func (s *Server[R]) record(r R) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
}

func start[R any](t testing.TB, h func(s *Server[R]) http.HandlerFunc) *Server[R] {
	s := &Server[R]{}
	ts := httptest.NewServer(h(s))
	t.Cleanup(ts.Close)
	s.URL = ts.URL
	return s
}

func chunks(r Reply) []string {
	n := r.ChunkSize
	if n <= 0 {
		n = 16
	}
	var out []string
	for s := r.Text; len(s) > 0; {
		k := min(n, len(s))
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func sse(w http.ResponseWriter, event string, data any) {
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	b, ok := data.([]byte)
	if !ok {
		b, _ = json.Marshal(data)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	w.(http.Flusher).Flush()
}

func readJSON(r *http.Request, v any) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// AnthropicRequest is a Messages API request as sent on the wire.
type AnthropicRequest struct {
	APIKey      string           `json:"-"` // the x-api-key header
	Version     string           `json:"-"` // the anthropic-version header
	Model       string           `json:"model"`
	MaxTokens   int              `json:"max_tokens"`
	Stream      bool             `json:"stream"`
	Temperature *float64         `json:"temperature"`
	System      []AnthropicBlock `json:"system"`
	Messages    []struct {
		Role    string           `json:"role"`
		Content []AnthropicBlock `json:"content"`
	} `json:"messages"`
}

// AnthropicBlock is a content block: text or image, with its cache_control.
type AnthropicBlock struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Source *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
	CacheControl *struct {
		Type string `json:"type"`
		TTL  string `json:"ttl"`
	} `json:"cache_control"`
}

// NewAnthropic starts a Messages API server that accepts the API key key
// and answers each request with reply(request). Error statuses come with
// Anthropic's error document and "retry-after: 0", so the SDK's retries of
// 429 and 5xx answers happen at once.
func NewAnthropic(t testing.TB, key string, reply func(AnthropicRequest) Reply) *Server[AnthropicRequest] {
	fail := func(w http.ResponseWriter, status int, kind, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("retry-after", "0")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
	}
	return start(t, func(s *Server[AnthropicRequest]) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var req AnthropicRequest
			if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
				fail(w, http.StatusNotFound, "not_found_error", "no route "+r.Method+" "+r.URL.Path)
				return
			}
			if err := readJSON(r, &req); err != nil || !req.Stream || req.MaxTokens <= 0 || req.Model == "" {
				fail(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("want a streaming request with model and max_tokens (%v)", err))
				return
			}
			req.APIKey, req.Version = r.Header.Get("x-api-key"), r.Header.Get("anthropic-version")
			s.record(req)
			if req.APIKey != key {
				fail(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
				return
			}
			rep := reply(req)
			text, out, cut := Bounded(rep.Text, req.MaxTokens)
			rep.Text = text
			stop := "end_turn"
			if cut {
				stop = "max_tokens"
			}
			if rep.Status != 0 {
				kind := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
					429: "rate_limit_error", 529: "overloaded_error"}[rep.Status]
				if kind == "" {
					kind = "api_error"
				}
				fail(w, rep.Status, kind, fmt.Sprintf("scripted %d", rep.Status))
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
				"id": "msg_test", "type": "message", "role": "assistant", "content": []any{}, "model": req.Model,
				"stop_reason": nil, "stop_sequence": nil,
				"usage": map[string]any{"input_tokens": InputTokens, "output_tokens": 1,
					"cache_creation_input_tokens": CacheCreationTokens, "cache_read_input_tokens": CacheReadTokens}}})
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "text", "text": ""}})
			sse(w, "ping", map[string]any{"type": "ping"})
			for i, c := range chunks(rep) {
				if r.Context().Err() != nil {
					return
				}
				sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
					"delta": map[string]any{"type": "text_delta", "text": c}})
				if i == 0 && rep.Malformed {
					sse(w, "content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`))
					return
				}
				if i == 0 && rep.Cut {
					return
				}
			}
			sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
			sse(w, "message_delta", map[string]any{"type": "message_delta",
				"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}})
			sse(w, "message_stop", map[string]any{"type": "message_stop"})
		}
	})
}

// GeminiRequest is a generateContent request as sent on the wire.
type GeminiRequest struct {
	APIKey            string          `json:"-"` // the x-goog-api-key header
	Model             string          `json:"-"` // from the path
	Contents          []GeminiContent `json:"contents"`
	SystemInstruction *GeminiContent  `json:"systemInstruction"`
	GenerationConfig  *struct {
		Temperature     *float64 `json:"temperature"`
		MaxOutputTokens *int     `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

// GeminiContent is one content: a role and its parts.
type GeminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text       string `json:"text"`
		InlineData *struct {
			MimeType string `json:"mimeType"`
			Data     string `json:"data"` // base64
		} `json:"inlineData"`
	} `json:"parts"`
}

// Temperature returns the request's generationConfig.temperature, or nil.
func (r GeminiRequest) Temperature() *float64 {
	if r.GenerationConfig == nil {
		return nil
	}
	return r.GenerationConfig.Temperature
}

// MaxOutputTokens returns the request's generationConfig.maxOutputTokens, or nil.
func (r GeminiRequest) MaxOutputTokens() *int {
	if r.GenerationConfig == nil {
		return nil
	}
	return r.GenerationConfig.MaxOutputTokens
}

// NewGemini starts a Gemini API server that accepts the API key key and
// answers each request with reply(request). A wrong key gets the API's 400
// "API key not valid"; error statuses come with Google's error document.
func NewGemini(t testing.TB, key string, reply func(GeminiRequest) Reply) *Server[GeminiRequest] {
	fail := func(w http.ResponseWriter, status int, code, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": code}})
	}
	return start(t, func(s *Server[GeminiRequest]) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var req GeminiRequest
			model, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
			model, ok2 := strings.CutSuffix(model, ":streamGenerateContent")
			if r.Method != http.MethodPost || !ok || !ok2 || r.URL.Query().Get("alt") != "sse" {
				fail(w, http.StatusNotFound, "NOT_FOUND", "no route "+r.Method+" "+r.URL.String())
				return
			}
			if err := readJSON(r, &req); err != nil || len(req.Contents) == 0 {
				fail(w, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("want contents (%v)", err))
				return
			}
			req.APIKey, req.Model = r.Header.Get("x-goog-api-key"), model
			s.record(req)
			if req.APIKey != key {
				fail(w, http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
				return
			}
			rep := reply(req)
			if rep.Status != 0 {
				code := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
					429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[rep.Status]
				if code == "" {
					code = "INTERNAL"
				}
				fail(w, rep.Status, code, fmt.Sprintf("scripted %d", rep.Status))
				return
			}
			bound := 0
			if m := req.MaxOutputTokens(); m != nil {
				bound = *m
			}
			text, total, cut := Bounded(rep.Text, bound)
			rep.Text = text
			stop := "STOP"
			if cut {
				stop = "MAX_TOKENS"
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			out := 0 // cumulative output tokens, total in the last chunk
			chunk := func(text, finish string) {
				out = 1
				if finish != "" {
					out = total
				}
				cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, "index": 0}
				if finish != "" {
					cand["finishReason"] = finish
				}
				sse(w, "", map[string]any{"candidates": []any{cand}, "modelVersion": model,
					"usageMetadata": map[string]any{"promptTokenCount": InputTokens + CacheReadTokens, "cachedContentTokenCount": CacheReadTokens,
						"candidatesTokenCount": out, "totalTokenCount": InputTokens + CacheReadTokens + out}})
			}
			cs := chunks(rep)
			for i, c := range cs {
				if r.Context().Err() != nil {
					return
				}
				if i == 0 && rep.Malformed {
					chunk(c, "")
					sse(w, "", []byte(`{"candidates":[{"content":{"parts":[{"text":`))
					return
				}
				if i == 0 && rep.Cut {
					chunk(c, "")
					return
				}
				finish := ""
				if i == len(cs)-1 {
					finish = stop
				}
				chunk(c, finish)
			}
			if len(cs) == 0 {
				chunk("", stop)
			}
		}
	})
}

// OpenAIRequest is a chat completions request as sent on the wire.
type OpenAIRequest struct {
	APIKey      string   `json:"-"` // from the Authorization header
	Model       string   `json:"model"`
	Stream      bool     `json:"stream"`
	Temperature *float64 `json:"temperature"`
	// MaxTokens and MaxCompletionTokens are the output bounds, nil when absent.
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"` // a string, or an array of text and image_url parts
	} `json:"messages"`
}

// NewOpenAI starts an OpenAI-compatible chat completions server that
// accepts the API key key and answers each request with reply(request).
// When the request asks for stream_options.include_usage, the stream ends
// with a chunk without choices that carries the usage, the cached prompt
// tokens in prompt_tokens_details.cached_tokens (and counted in
// prompt_tokens). Error statuses come with OpenAI's error document.
func NewOpenAI(t testing.TB, key string, reply func(OpenAIRequest) Reply) *Server[OpenAIRequest] {
	fail := func(w http.ResponseWriter, status int, kind, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": kind, "code": nil}})
	}
	return start(t, func(s *Server[OpenAIRequest]) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var req OpenAIRequest
			if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
				fail(w, http.StatusNotFound, "invalid_request_error", "no route "+r.Method+" "+r.URL.Path)
				return
			}
			if err := readJSON(r, &req); err != nil || !req.Stream || req.Model == "" {
				fail(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("want a streaming request with a model (%v)", err))
				return
			}
			req.APIKey, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			s.record(req)
			if req.APIKey != key {
				fail(w, http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided.")
				return
			}
			rep := reply(req)
			if rep.Status != 0 {
				fail(w, rep.Status, "server_error", fmt.Sprintf("scripted %d", rep.Status))
				return
			}
			bound := 0
			for _, m := range []*int{req.MaxTokens, req.MaxCompletionTokens} {
				if m != nil {
					bound = *m
				}
			}
			text, out, cut := Bounded(rep.Text, bound)
			rep.Text = text
			finish := "stop"
			if cut {
				finish = "length"
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			chunk := func(delta map[string]any, finish any) {
				sse(w, "", map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
					"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			}
			chunk(map[string]any{"role": "assistant", "content": ""}, nil)
			for i, c := range chunks(rep) {
				if r.Context().Err() != nil {
					return
				}
				chunk(map[string]any{"content": c}, nil)
				if i == 0 && rep.Malformed {
					sse(w, "", []byte(`{"id":"chatcmpl-test","choices":[{"delta":{"content":`))
					return
				}
				if i == 0 && rep.Cut {
					return
				}
			}
			chunk(map[string]any{}, finish)
			if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
				sse(w, "", map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
					"choices": []any{}, "usage": map[string]any{"prompt_tokens": InputTokens + CacheReadTokens, "completion_tokens": out,
						"total_tokens": InputTokens + CacheReadTokens + out, "prompt_tokens_details": map[string]any{"cached_tokens": CacheReadTokens}}})
			}
			sse(w, "", []byte("[DONE]"))
		}
	})
}
