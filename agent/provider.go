package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Message is one prompt message. ImageDataURL (a data: URL) is sent as an
// image part to providers that accept images.
type Message struct {
	Role         string // system | user | assistant
	Text         string
	ImageDataURL string
	// Static is how many leading bytes of Text stay the same from turn to
	// turn (the system prompt, the canvas context). Providers with prompt
	// caching cache the prompt up to there and put the image after it.
	Static int
}

// split returns Text's static prefix and the rest.
func (m Message) split() (static, rest string) {
	n := min(max(m.Static, 0), len(m.Text))
	return m.Text[:n], m.Text[n:]
}

// ModelRequest is one model call.
type ModelRequest struct {
	Model       string // the provider's model name (after "openai:", "anthropic:", "google:")
	Messages    []Message
	Temperature *float32 // nil: provider default; follow-ups use 0 (stricter sampling; not sent to OpenAI's reasoning models)
	// Task is the plain instruction of this turn (the user's message, or the
	// follow-up/replan instruction); the fake model answers from it.
	Task string
	// Kind is why the turn runs (TurnInitial, TurnFollowup, ...).
	Kind TurnKind
	// Viewport is the current viewport (the fake model lays out inside it).
	Viewport Box
	// Document is the node id of the document the turn edits, or "" when
	// the target is the canvas.
	Document string
	// FreeSpace is an empty area near the viewport for new content (the
	// prompt names it; the fake model lays out inside it).
	FreeSpace Box
}

// ModelStream yields the assistant's text as it streams. Recv returns io.EOF
// at the end. Close releases the stream; it may be called at any time.
type ModelStream interface {
	Recv() (string, error)
	Close() error
}

// Usage is the token usage of one model call, in the same terms for every
// provider: Input counts the prompt tokens processed at the full price
// (OpenAI-compatible endpoints and Gemini report prompt tokens with the
// cached ones included: those are subtracted), CacheRead the prompt tokens
// read from the provider's prompt cache, CacheCreation those written to it
// (Anthropic's cache_creation_input_tokens), Output the generated tokens
// (Gemini's thinking tokens included). A whole prompt is Input + CacheRead +
// CacheCreation tokens.
type Usage struct {
	Input, Output, CacheRead, CacheCreation int64
}

// nonNegative is u with negative counts, which no provider should report,
// as 0: what the metrics and a session's stats count.
func (u Usage) nonNegative() Usage {
	return Usage{Input: max(u.Input, 0), Output: max(u.Output, 0), CacheRead: max(u.CacheRead, 0), CacheCreation: max(u.CacheCreation, 0)}
}

// UsageReporter is a ModelStream that knows its call's token usage. Usage
// returns what the provider reported so far: the whole call's once Recv has
// returned io.EOF; for a stream that failed or was closed before, what had
// arrived (possibly nothing). It may be called after Close.
type UsageReporter interface {
	Usage() Usage
}

// TruncationReporter is a ModelStream that knows whether the reply was cut
// off at the output-token bound (Config.MaxTokens, or the provider's own):
// Anthropic's stop_reason "max_tokens", an OpenAI-compatible finish_reason
// "length", Gemini's finishReason MAX_TOKENS. Truncated is final once Recv
// has returned io.EOF.
type TruncationReporter interface {
	Truncated() bool
}

// Provider is a streaming chat model.
type Provider interface {
	Stream(ctx context.Context, req ModelRequest) (ModelStream, error)
	// Vision reports whether the provider accepts image parts.
	Vision() bool
}

// Providers resolves model specs ("debug/fake", "openai:<model>",
// "anthropic:<model>", "google:<model>") to providers.
type Providers struct {
	cfg  Config
	http *http.Client
	fake *FakeProvider
}

// NewProviders returns a resolver using cfg's provider settings; hc is the
// HTTP client for the model APIs (nil: http.DefaultClient).
func NewProviders(cfg Config, hc *http.Client) *Providers {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Providers{cfg: cfg, http: hc, fake: &FakeProvider{ChunkSize: 24}}
}

// SetFake replaces the debug/fake provider (tests and benchmarks tune its pacing).
func (p *Providers) SetFake(f *FakeProvider) { p.fake = f }

// Get returns the provider for spec and the model name to pass in ModelRequest.
func (p *Providers) Get(spec string) (Provider, string, error) {
	kind, model, err := ParseModel(spec)
	if err != nil {
		return nil, "", err
	}
	switch kind {
	case "debug":
		return p.fake, model, nil
	case "openai":
		cc := openai.DefaultConfig(p.cfg.OpenAIAPIKey)
		if p.cfg.OpenAIBaseURL != "" {
			cc.BaseURL = strings.TrimRight(p.cfg.OpenAIBaseURL, "/")
		}
		cc.HTTPClient = temperatureDoer{p.http}
		return &OpenAIProvider{client: openai.NewClientWithConfig(cc), vision: true, maxTokens: p.cfg.MaxTokens}, model, nil
	case "anthropic":
		return newAnthropicProvider(p.cfg, p.http), model, nil
	case "google":
		g, err := newGoogleProvider(p.cfg, p.http)
		return g, model, err
	}
	return nil, "", fmt.Errorf("no provider for %q", spec)
}

// OpenAIProvider streams chat completions from any OpenAI-compatible
// endpoint through go-openai.
type OpenAIProvider struct {
	client    *openai.Client
	vision    bool
	maxTokens int // > 0: the output bound of every call (see Stream)
}

// Vision reports true: image parts are sent as image_url content parts.
func (o *OpenAIProvider) Vision() bool { return o.vision }

// Stream starts a streaming chat completion. With an output bound it sends
// max_tokens, which OpenAI-compatible servers widely accept, except to
// OpenAI's reasoning models (names starting with o1, o3, o4 or gpt-5),
// which refuse max_tokens and get max_completion_tokens instead. The
// request's temperature is sent too, except to those reasoning models,
// which refuse any but their default.
func (o *OpenAIProvider) Stream(ctx context.Context, req ModelRequest) (ModelStream, error) {
	// include_usage: the last chunk carries the call's usage (cached prompt
	// tokens included); without it a streamed completion reports none.
	cr := openai.ChatCompletionRequest{Model: req.Model, Stream: true, StreamOptions: &openai.StreamOptions{IncludeUsage: true}}
	if o.maxTokens > 0 {
		if openaiReasoningModel(req.Model) {
			cr.MaxCompletionTokens = o.maxTokens
		} else {
			// max_tokens, not max_completion_tokens: many OpenAI-compatible
			// servers (vLLM, Ollama, older gateways) know only the former.
			cr.MaxTokens = o.maxTokens //lint:ignore SA1019 see above
		}
	}
	if req.Temperature != nil && !openaiReasoningModel(req.Model) {
		ctx = context.WithValue(ctx, temperatureKey{}, *req.Temperature)
	}
	for _, m := range req.Messages {
		cm := openai.ChatCompletionMessage{Role: m.Role}
		if m.ImageDataURL != "" && o.vision {
			cm.MultiContent = []openai.ChatMessagePart{
				{Type: openai.ChatMessagePartTypeText, Text: m.Text},
				{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: m.ImageDataURL, Detail: openai.ImageURLDetailLow}},
			}
		} else {
			cm.Content = m.Text
		}
		cr.Messages = append(cr.Messages, cm)
	}
	s, err := o.client.CreateChatCompletionStream(ctx, cr)
	if err != nil {
		return nil, fmt.Errorf("openai stream: %w", err)
	}
	return &openaiStream{s: s}, nil
}

// openaiReasoningModel reports whether model is one of OpenAI's reasoning
// models, which take max_completion_tokens and refuse max_tokens and any
// temperature but the default.
func openaiReasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// temperatureKey carries a request's temperature to temperatureDoer.
type temperatureKey struct{}

// temperatureDoer sets "temperature" in the JSON body of requests whose
// context carries one. go-openai's request type drops a temperature of 0
// (omitempty), and 0 is what follow-ups ask for.
type temperatureDoer struct{ hc *http.Client }

func (d temperatureDoer) Do(req *http.Request) (*http.Response, error) {
	t, ok := req.Context().Value(temperatureKey{}).(float32)
	if !ok || req.Body == nil {
		return d.hc.Do(req)
	}
	raw, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("openai request body: %w", err)
	}
	body["temperature"], _ = json.Marshal(t)
	if raw, err = json.Marshal(body); err != nil {
		return nil, err
	}
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	return d.hc.Do(req)
}

type openaiStream struct {
	s         *openai.ChatCompletionStream
	usage     Usage
	finished  bool // a choice carried a finish_reason
	truncated bool // a choice finished with "length"
}

// Recv returns the next non-empty content delta, or io.EOF at the end. A
// chunk's usage (the last one's, with include_usage) is kept for Usage, a
// finish_reason "length" for Truncated. go-openai reports io.EOF both after
// [DONE] and when the body just ends, so the reply is complete only once a
// choice carried a finish_reason (a stream that has one but no [DONE] is
// accepted): without one, a connection cut or an error chunk that is no
// choice (vLLM's {"object":"error",...} before [DONE]) is an error, not the
// end of the reply.
func (o *openaiStream) Recv() (string, error) {
	for {
		r, err := o.s.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				if !o.finished {
					return "", errors.New("openai stream: the stream ended without a finish_reason (connection cut)")
				}
				return "", io.EOF
			}
			return "", fmt.Errorf("openai stream: %w", err)
		}
		if u := r.Usage; u != nil {
			var cached int64
			if d := u.PromptTokensDetails; d != nil {
				cached = int64(d.CachedTokens)
			}
			o.usage = Usage{Input: max(int64(u.PromptTokens)-cached, 0), Output: int64(u.CompletionTokens), CacheRead: cached}
		}
		var b strings.Builder
		for _, c := range r.Choices {
			b.WriteString(c.Delta.Content)
			o.finished = o.finished || c.FinishReason != ""
			o.truncated = o.truncated || c.FinishReason == openai.FinishReasonLength
		}
		if b.Len() > 0 {
			return b.String(), nil
		}
	}
}

// Close closes the HTTP stream.
func (o *openaiStream) Close() error { return o.s.Close() }

// Truncated reports whether the reply stopped at the output bound
// (finish_reason "length").
func (o *openaiStream) Truncated() bool { return o.truncated }

// Usage is the usage the endpoint reported (usage.prompt_tokens_details.cached_tokens
// counts as CacheRead), or zero if it reported none.
func (o *openaiStream) Usage() Usage { return o.usage }

// FakeProvider is the deterministic, offline debug/fake model. For a task
// mentioning a brutalist poster it drafts a hero headline, a supporting
// block, a vertical divider and three sticky notes; follow-up and re-plan
// turns answer with a think note; any other task (and any user message)
// becomes one sticky note. When the last message carries an image, the
// reply starts with a think saying so ("I received an image/png image of N
// bytes."), so tests can see that the image reached the model.
// It streams its reply in ChunkSize-byte chunks, ChunkDelay apart.
type FakeProvider struct {
	ChunkSize  int
	ChunkDelay time.Duration
	// Reply, when set, replaces the built-in replies (benchmarks and tests).
	Reply func(req ModelRequest) string
}

// Vision reports false: the fake model ignores images.
func (f *FakeProvider) Vision() bool { return false }

// Stream returns the deterministic reply for req.
func (f *FakeProvider) Stream(ctx context.Context, req ModelRequest) (ModelStream, error) {
	text := FakeReply(req)
	if f.Reply != nil {
		text = f.Reply(req)
	}
	n := f.ChunkSize
	if n <= 0 {
		n = 24
	}
	return &fakeStream{ctx: ctx, text: text, n: n, delay: f.ChunkDelay}, nil
}

// FakeReply is the debug/fake model's reply to req.
func FakeReply(req ModelRequest) string {
	area := req.FreeSpace
	if area.W == 0 {
		area = req.Viewport
	}
	x, y := area.X+80, area.Y+80
	task := strings.ToLower(req.Task)
	if req.Document != "" {
		return fakeDocReply(req) // document.go
	}
	img := fakeImageThink(req) // "" or a think action noting an attached image, then a comma (inbox.go)
	switch {
	case req.Kind == TurnReplan:
		return `{"actions":[` + img + `{"name":"think","params":{"text":"Someone changed the canvas while I worked; I will leave their edits as they are."}}]}`
	case req.Kind != TurnInitial && req.Kind != TurnMessage:
		return `{"actions":[` + img + `{"name":"think","params":{"text":"The draft is complete; nothing more to add."}}]}`
	case strings.Contains(task, "brutalist poster"):
		return fmt.Sprintf("```json\n"+`{"actions":[`+img+`
{"name":"think","params":{"text":"Drafting a brutalist poster: hero headline, supporting block, divider, three notes."}},
{"name":"create_shape","params":{"id":"hero","type":"headline","x":%[1]g,"y":%[2]g,"w":720,"props":{"text":"RAW / HONEST / LOUD","size":"xl","font":"sans","color":"charcoal"}}},
{"name":"create_shape","params":{"id":"support","type":"box","x":%[1]g,"y":%[3]g,"w":420,"h":260,"props":{"text":"Concrete, exposed, unapologetic.","color":"brutalist orange","fill":"solid","dash":"solid"}}},
{"name":"create_shape","params":{"id":"divider","type":"box","name":"vertical divider","x":%[4]g,"y":%[3]g,"w":8,"h":520,"props":{"color":"ink","fill":"solid"}}},
{"name":"create_shape","params":{"id":"note1","type":"sticky","x":%[5]g,"y":%[3]g,"props":{"text":"Raw materials","color":"burnt orange"}}},
{"name":"create_shape","params":{"id":"note2","type":"sticky","x":%[5]g,"y":%[6]g,"props":{"text":"Heavy type","color":"yellow"}}},
{"name":"create_shape","params":{"id":"note3","type":"sticky","x":%[5]g,"y":%[7]g,"props":{"text":"No ornament","color":"grey"}}}
]}`+"\n```", x, y, y+200, x+460, x+500, y+440, y+680)
	}
	msg := strings.TrimSpace(req.Task)
	if len(msg) > 200 {
		msg = truncUTF8(msg, 200)
	}
	q := func(s string) string {
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
		return r.Replace(strings.ToValidUTF8(s, ""))
	}
	return fmt.Sprintf(`{"actions":[`+img+`{"name":"think","params":{"text":"Noting that down."}},{"name":"create_shape","params":{"type":"sticky","x":%g,"y":%g,"props":{"text":"%s"}}}]}`, x, y, q(stripControl(msg)))
}

func stripControl(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, s)
}

type fakeStream struct {
	ctx   context.Context
	text  string
	n     int
	delay time.Duration
	pos   int
}

// Recv returns the next chunk (after ChunkDelay), or io.EOF at the end.
func (f *fakeStream) Recv() (string, error) {
	if err := f.ctx.Err(); err != nil {
		return "", err
	}
	if f.pos >= len(f.text) {
		return "", io.EOF
	}
	if f.delay > 0 && f.pos > 0 {
		t := time.NewTimer(f.delay)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return "", f.ctx.Err()
		case <-t.C:
		}
	}
	end := min(f.pos+f.n, len(f.text))
	s := f.text[f.pos:end]
	f.pos = end
	return s, nil
}

// Close does nothing; the fake stream holds no resources.
func (f *fakeStream) Close() error { return nil }
