package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// defaultGeminiBaseURL is the Gemini API's address; GOOGLE_GEMINI_BASE_URL
// replaces it (a proxy, or a test server).
const defaultGeminiBaseURL = "https://generativelanguage.googleapis.com"

// GoogleProvider streams Gemini models through the Gemini API's REST
// streamGenerateContent (server-sent events, ?alt=sse). It speaks the wire
// protocol directly over net/http: Google's Go SDK would bring Google
// Cloud's API and gRPC modules (about 500 MB of downloads on a first build)
// for the one call canvasd makes.
type GoogleProvider struct {
	hc        *http.Client
	base      string // without a trailing slash
	key       string
	maxTokens int // > 0: maxOutputTokens of every call
}

// newGoogleProvider builds the provider from cfg's key, base URL and
// MaxTokens; the Gemini API refuses calls without a key, so a missing one
// is an error here.
func newGoogleProvider(cfg Config, hc *http.Client) (*GoogleProvider, error) {
	if cfg.GoogleAPIKey == "" {
		return nil, errors.New("google: no API key: set GOOGLE_API_KEY or GEMINI_API_KEY")
	}
	base := cfg.GoogleBaseURL
	if base == "" {
		base = defaultGeminiBaseURL
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &GoogleProvider{hc: hc, base: strings.TrimRight(base, "/"), key: cfg.GoogleAPIKey, maxTokens: cfg.MaxTokens}, nil
}

// Vision reports true: images are sent as inline data parts.
func (g *GoogleProvider) Vision() bool { return true }

// geminiPart is one part of a content: text or inline (base64) data.
type geminiPart struct {
	Text       string      `json:"text,omitempty"`
	InlineData *geminiBlob `json:"inlineData,omitempty"`
	Thought    bool        `json:"thought,omitempty"` // in replies: a thinking part, not the answer
}

type geminiBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction,omitempty"`
	GenerationConfig  *struct {
		Temperature     *float32 `json:"temperature,omitempty"`
		MaxOutputTokens int      `json:"maxOutputTokens,omitempty"`
	} `json:"generationConfig,omitempty"`
}

// geminiChunk is one event of the stream: a GenerateContentResponse.
type geminiChunk struct {
	Candidates []struct {
		Content      *geminiContent `json:"content"`
		FinishReason string         `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason        string `json:"blockReason"`
		BlockReasonMessage string `json:"blockReasonMessage"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
		ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	Error *geminiError `json:"error"`
}

// geminiError is Google's error document: {"error": {code, message, status}}.
type geminiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// Stream starts a streaming generateContent call. System messages become
// the system instruction; consecutive messages of one role become one
// content. A message's image goes between its static prefix and the rest,
// as for Anthropic, so the prompt's stable part comes first. A status other
// than 200 is an error carrying Google's message; calls are not retried.
func (g *GoogleProvider) Stream(ctx context.Context, req ModelRequest) (ModelStream, error) {
	body, err := g.request(req)
	if err != nil {
		return nil, err
	}
	u := g.base + "/v1beta/models/" + url.PathEscape(req.Model) + ":streamGenerateContent?alt=sse"
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("google: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("x-goog-api-key", g.key)
	resp, err := g.hc.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("google: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var doc struct {
			Error geminiError `json:"error"`
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(raw, &doc) == nil && doc.Error.Message != "" {
			return nil, fmt.Errorf("google: %d %s: %s", resp.StatusCode, doc.Error.Status, doc.Error.Message)
		}
		return nil, fmt.Errorf("google: %d %s", resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	return &googleStream{body: resp.Body, events: newSSEReader(resp.Body)}, nil
}

// request encodes req as a generateContent request body.
func (g *GoogleProvider) request(req ModelRequest) ([]byte, error) {
	var out geminiRequest
	if req.Temperature != nil || g.maxTokens > 0 {
		out.GenerationConfig = &struct {
			Temperature     *float32 `json:"temperature,omitempty"`
			MaxOutputTokens int      `json:"maxOutputTokens,omitempty"`
		}{Temperature: req.Temperature, MaxOutputTokens: g.maxTokens}
	}
	for i, m := range req.Messages {
		static, rest := m.split()
		var parts []geminiPart
		if static != "" {
			parts = append(parts, geminiPart{Text: static})
		}
		if m.ImageDataURL != "" && m.Role != "system" {
			mt, payload, ok := splitImageDataURL(m.ImageDataURL)
			if !ok || !isBase64(payload) {
				return nil, fmt.Errorf("google: the image of message %d is not a base64 data:image/... URL", i)
			}
			parts = append(parts, geminiPart{InlineData: &geminiBlob{MimeType: mt, Data: payload}})
		}
		if rest != "" {
			parts = append(parts, geminiPart{Text: rest})
		}
		switch role := geminiRole(m.Role); {
		case m.Role == "system":
			if out.SystemInstruction == nil {
				out.SystemInstruction = &geminiContent{}
			}
			out.SystemInstruction.Parts = append(out.SystemInstruction.Parts, parts...)
		case len(out.Contents) > 0 && out.Contents[len(out.Contents)-1].Role == role:
			last := &out.Contents[len(out.Contents)-1]
			last.Parts = append(last.Parts, parts...)
		default:
			out.Contents = append(out.Contents, geminiContent{Role: role, Parts: parts})
		}
	}
	return json.Marshal(out)
}

// isBase64 reports whether s is standard base64 with padding, as Gemini's
// inlineData.data must be.
func isBase64(s string) bool {
	if len(s)%4 != 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' && i >= len(s)-2) {
			return false
		}
	}
	return true
}

// geminiRole maps a prompt role to Gemini's: "model" for the assistant.
func geminiRole(role string) string {
	if role == "assistant" {
		return "model"
	}
	return "user"
}

type googleStream struct {
	body      io.ReadCloser
	events    *sseReader
	finished  bool // a candidate carried a finish reason
	truncated bool // that reason was MAX_TOKENS
	usage     Usage
}

// Recv returns the next text (thought parts are skipped), or io.EOF when
// the stream ends after a finish reason. An error event, an undecodable
// event, a blocked prompt or a stream cut before any finish reason is an
// error.
func (g *googleStream) Recv() (string, error) {
	for {
		_, data, err := g.events.next()
		if err == io.EOF {
			if !g.finished {
				return "", errors.New("google stream: the stream ended without a finish reason (connection cut)")
			}
			return "", io.EOF
		}
		if err != nil {
			return "", fmt.Errorf("google stream: %w", err)
		}
		var c geminiChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return "", fmt.Errorf("google stream: an undecodable event: %w", err)
		}
		if c.Error != nil {
			return "", fmt.Errorf("google stream: %d %s: %s", c.Error.Code, c.Error.Status, c.Error.Message)
		}
		if u := c.UsageMetadata; u != nil { // cumulative: the last chunk's is the call's
			g.usage = Usage{Input: max(u.PromptTokenCount-u.CachedContentTokenCount, 0), CacheRead: u.CachedContentTokenCount,
				Output: u.CandidatesTokenCount + u.ThoughtsTokenCount}
		}
		if pf := c.PromptFeedback; pf != nil && pf.BlockReason != "" {
			return "", fmt.Errorf("google: the prompt was blocked (%s) %s", pf.BlockReason, pf.BlockReasonMessage)
		}
		var b strings.Builder
		for _, cand := range c.Candidates {
			if cand.FinishReason != "" && cand.FinishReason != "FINISH_REASON_UNSPECIFIED" {
				g.finished = true
				g.truncated = g.truncated || cand.FinishReason == "MAX_TOKENS"
			}
			if cand.Content == nil {
				continue
			}
			for _, p := range cand.Content.Parts {
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
func (g *googleStream) Close() error { return g.body.Close() }

// Truncated reports whether the reply stopped at maxOutputTokens
// (finishReason MAX_TOKENS).
func (g *googleStream) Truncated() bool { return g.truncated }

// Usage is the last usageMetadata: cachedContentTokenCount is CacheRead,
// candidates and thoughts are Output.
func (g *googleStream) Usage() Usage { return g.usage }
