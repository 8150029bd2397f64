// Package client is a Go client of canvasd's HTTP API (docs/api.md): canvas
// snapshots, commands with base_rev and idempotency keys, batches, the event
// log, canvases, tokens, gestures, the agent endpoints, and a resumable SSE
// stream reader. The agent runner, the CLI and tests use it.
//
// Errors: a 409 answer to a command is a *canvas.ConflictError (errors.Is
// canvas.ErrConflict) carrying the server's ConflictResult; any other non-2xx
// answer is a *ProblemError holding the RFC 9457 problem document, which
// unwraps to the matching canvas sentinel (404 → canvas.ErrNotFound, ...).
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// DefaultMaxResponseBytes bounds how much of a non-streaming response body the
// client reads (a larger body is an error, never silently truncated).
const DefaultMaxResponseBytes = 64 << 20

// Client talks to one canvasd server with one bearer token. It is safe for
// concurrent use.
type Client struct {
	base     *url.URL
	token    string
	http     *http.Client
	maxBody  int64
	userAgnt string
	retries  int // resends of a keyed write after a 503
}

// DefaultRetries is how many times Command and Batch resend after a 503.
const DefaultRetries = 2

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the *http.Client used for every request (default: a
// client without an overall timeout, since streams are long-lived; use
// contexts for deadlines).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithMaxResponseBytes bounds non-streaming response bodies.
func WithMaxResponseBytes(n int64) Option { return func(c *Client) { c.maxBody = n } }

// WithRetries sets how many times Command and Batch resend a request the
// server answered 503 (default DefaultRetries; 0: never). They resend only
// because their requests always carry an idempotency key (the caller's or
// one the client fills in): the resend carries the same key, so a command
// whose first attempt did commit (a 503 of type outcome-unknown) is answered
// from the server's idempotency store instead of applying twice. Requests
// without a key (creating or deleting a canvas or a token, ...) are never
// resent. The wait before a resend is the answer's Retry-After (at most 5 s),
// else 500 ms.
func WithRetries(n int) Option { return func(c *Client) { c.retries = max(0, n) } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgnt = ua } }

// New returns a client of the server at baseURL (e.g. "http://127.0.0.1:8080")
// authenticating with token (empty: no Authorization header). It fails when
// baseURL is not an absolute http(s) URL.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q must be an absolute http(s) URL: %w", baseURL, canvas.ErrInvalid)
	}
	c := &Client{base: u, token: token, http: &http.Client{}, maxBody: DefaultMaxResponseBytes, userAgnt: "canvasd-client/1",
		retries: DefaultRetries}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// WithToken returns a copy of c that authenticates with another token.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}

// BaseURL returns the server's base URL.
func (c *Client) BaseURL() string { return c.base.String() }

// ProblemError is a non-2xx answer carrying an RFC 9457 problem document (or,
// when the server sent something else, the status and a short excerpt of the body).
type ProblemError struct {
	Status int
	Type   string
	Title  string
	Detail string
	// Extra holds the problem's other members (e.g. "field").
	Extra map[string]any
	// RetryAfter is the answer's Retry-After in seconds (0: none): how long a
	// 429 or 503 asks the caller to wait before trying again.
	RetryAfter time.Duration
}

// Error is "canvasd: <status> <text>: <detail>".
func (e *ProblemError) Error() string {
	msg := e.Detail
	if msg == "" {
		msg = e.Title
	}
	return fmt.Sprintf("canvasd: %d %s: %s", e.Status, http.StatusText(e.Status), msg)
}

// Unwrap maps the status to the canvas sentinel error of the same meaning.
func (e *ProblemError) Unwrap() error { return canvas.ErrForStatus(e.Status, e.Type) }

// Outcome returns what a 503 to a write says of it: "not_written" (nothing
// was written), "unknown" (problem type outcome-unknown: the write reached
// the database but was not confirmed, so it may have committed; resend it
// with the same idempotency key), or "" when the server did not say.
func (e *ProblemError) Outcome() string {
	s, _ := e.Extra["outcome"].(string)
	return s
}

// Field returns the problem's "field" member (the offending field of a 400/422), if any.
func (e *ProblemError) Field() string {
	s, _ := e.Extra["field"].(string)
	return s
}

// ConflictError is the error a command returns on 409: canvas.ConflictError
// carrying the server's ConflictResult (current_rev, conflicting_ids, recovery_ops).
type ConflictError = canvas.ConflictError

// NewID returns prefix followed by 128 random bits in hex; used for command
// ids and idempotency keys.
func NewID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// url returns the absolute URL of the escaped path p (its segments escaped
// once, by seg) under the base URL's path, with query q.
func (c *Client) url(p string, q url.Values) string {
	u := *c.base
	u.RawPath = strings.TrimRight(c.base.EscapedPath(), "/") + p
	if dec, err := url.PathUnescape(u.RawPath); err == nil {
		u.Path = dec
	} else {
		u.Path = u.RawPath // a '%' that is no escape: p was not escaped, so String escapes it
		u.RawPath = ""
	}
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// seg escapes one path segment: the server decodes it once, so any id
// (with '/', '%', spaces, non-ASCII...) reaches it unchanged.
func seg(s string) string { return url.PathEscape(s) }

func (c *Client) newRequest(ctx context.Context, method, p string, q url.Values, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("client: encode %s %s body: %w", method, p, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(p, q), rd)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, p, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.userAgnt != "" {
		req.Header.Set("User-Agent", c.userAgnt)
	}
	return req, nil
}

// response is a fully read answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (c *Client) do(ctx context.Context, method, p string, q url.Values, body any) (*response, error) {
	req, err := c.newRequest(ctx, method, p, q, body)
	if err != nil {
		return nil, err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, p, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, c.maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: reading body: %w", method, p, err)
	}
	if int64(len(b)) > c.maxBody {
		return nil, fmt.Errorf("client: %s %s: response body over %d bytes: %w", method, p, c.maxBody, canvas.ErrTooLarge)
	}
	return &response{status: res.StatusCode, header: res.Header, body: b}, nil
}

// doKeyed sends a write that carries an idempotency key, resending it (the
// very same body, hence the same key) after a 503 up to c.retries times.
func (c *Client) doKeyed(ctx context.Context, method, p string, body any) (*response, error) {
	for attempt := 0; ; attempt++ {
		r, err := c.do(ctx, method, p, nil, body)
		if err != nil || r.status != http.StatusServiceUnavailable || attempt >= c.retries {
			return r, err
		}
		wait := 500 * time.Millisecond
		if _, ok := r.header["Retry-After"]; ok {
			wait = min(retryAfter(r.header), 5*time.Second)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return r, nil // the 503 is the answer
		case <-t.C:
		}
	}
}

// retryAfter reads a Retry-After header given in seconds; an absent,
// negative or HTTP-date value is 0.
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// problem turns a non-2xx response into a *ProblemError.
func problem(r *response) error {
	pe := &ProblemError{Status: r.status, RetryAfter: retryAfter(r.header)}
	var m map[string]any
	if json.Unmarshal(r.body, &m) == nil && m != nil {
		pe.Type, _ = m["type"].(string)
		pe.Title, _ = m["title"].(string)
		pe.Detail, _ = m["detail"].(string)
		delete(m, "type")
		delete(m, "title")
		delete(m, "detail")
		delete(m, "status")
		if len(m) > 0 {
			pe.Extra = m
		}
	} else {
		ex := strings.TrimSpace(string(r.body))
		if len(ex) > 200 {
			ex = ex[:200] + "…"
		}
		pe.Title = http.StatusText(r.status)
		pe.Detail = ex
	}
	return pe
}

func isProblem(r *response) bool {
	mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
	return mt == "application/problem+json"
}

// call does a request and decodes a 2xx JSON body into out (nil: ignore the body).
func (c *Client) call(ctx context.Context, method, p string, q url.Values, body, out any) error {
	r, err := c.do(ctx, method, p, q, body)
	if err != nil {
		return err
	}
	if r.status < 200 || r.status > 299 {
		return problem(r)
	}
	if out == nil || len(bytes.TrimSpace(r.body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.body, out); err != nil {
		return fmt.Errorf("client: %s %s: decoding %d answer: %w", method, p, r.status, err)
	}
	return nil
}

// Snapshot is the answer of GET /canvas_commands/snapshot/{canvas_id}.
type Snapshot = canvas.Snapshot

// Snapshot reads a canvas's state at its head.
func (c *Client) Snapshot(ctx context.Context, canvasID string) (Snapshot, error) {
	var s Snapshot
	err := c.call(ctx, http.MethodGet, "/canvas_commands/snapshot/"+seg(canvasID), nil, nil, &s)
	return s, err
}

// SnapshotAt reads a canvas's state as it was at revision rev (time travel).
func (c *Client) SnapshotAt(ctx context.Context, canvasID string, rev int64) (Snapshot, error) {
	var s Snapshot
	q := url.Values{"at_rev": {strconv.FormatInt(rev, 10)}}
	err := c.call(ctx, http.MethodGet, "/canvas_commands/snapshot/"+seg(canvasID), q, nil, &s)
	return s, err
}

// Command sends one CommandEnvelope. Where env.ID or env.IdempotencyKey is
// empty it fills its own copy of env as FillEnvelope does: that key makes the
// client's own resends after a 503 safe, but the caller never sees it, and
// calling Command again with the same unfilled env sends a new key. To resend
// after an error that leaves the outcome open (a lost connection, a timeout,
// a 503 left after the client's resends), call FillEnvelope first (or set
// the key) and send that same env again: the server answers the resend from
// its idempotency store (keys are kept 48 hours) instead of applying it
// twice. env.BaseRev is required (the server answers 400 without it).
//
// 200 returns the RevisionResult; 409 returns a *ConflictError; 400/422/...
// return a *ProblemError.
func (c *Client) Command(ctx context.Context, canvasID string, env canvas.Envelope) (canvas.RevisionResult, error) {
	FillEnvelope(&env)
	r, err := c.doKeyed(ctx, http.MethodPost, "/canvas_commands/"+seg(canvasID)+"/command", env)
	if err != nil {
		return canvas.RevisionResult{}, err
	}
	return decodeRevision(r)
}

// FillEnvelope sets a random id and idempotency key where they are empty and
// an empty args object where args is absent.
func FillEnvelope(env *canvas.Envelope) {
	if env.ID == "" {
		env.ID = NewID("cmd_")
	}
	if env.IdempotencyKey == "" {
		env.IdempotencyKey = NewID("idem_")
	}
	if len(env.Args) == 0 {
		env.Args = json.RawMessage("{}")
	}
}

func decodeRevision(r *response) (canvas.RevisionResult, error) {
	switch {
	case r.status == http.StatusOK || r.status == http.StatusCreated:
		var rr canvas.RevisionResult
		if err := json.Unmarshal(r.body, &rr); err != nil {
			return rr, fmt.Errorf("client: decoding command result: %w", err)
		}
		return rr, nil
	case r.status == http.StatusConflict && !isProblem(r):
		return canvas.RevisionResult{}, decodeConflict(r)
	}
	return canvas.RevisionResult{}, problem(r)
}

func decodeConflict(r *response) error {
	var cr canvas.ConflictResult
	if err := json.Unmarshal(r.body, &cr); err != nil || cr.Status != canvas.StatusConflict {
		return problem(r)
	}
	return &ConflictError{Result: cr}
}

// BatchResult is the answer of POST /canvas_commands/{canvas_id}/commands.
type BatchResult struct {
	Status     string                  `json:"status"`
	CurrentRev int64                   `json:"current_rev"`
	Results    []canvas.RevisionResult `json:"results"`
}

// BatchRequest is the body of POST /canvas_commands/{canvas_id}/commands:
// commands applied all-or-nothing from BaseRev under one IdempotencyKey.
// The commands cannot carry keys of their own (the server refuses an
// envelope with one).
type BatchRequest struct {
	BaseRev        int64             `json:"base_rev"`
	IdempotencyKey string            `json:"idempotency_key"`
	Commands       []canvas.Envelope `json:"commands"`
}

// FillBatch sets a random idempotency key where b has none, and replaces
// b.Commands with a copy (the caller's slice is left alone) whose envelopes
// have base_rev b.BaseRev and ids and args filled as FillEnvelope does (but
// no key). Sending the filled b again sends the very same batch.
func FillBatch(b *BatchRequest) {
	if b.IdempotencyKey == "" {
		b.IdempotencyKey = NewID("idem_")
	}
	cmds := make([]canvas.Envelope, len(b.Commands))
	for i, e := range b.Commands {
		br := b.BaseRev
		e.BaseRev = &br
		key := e.IdempotencyKey
		FillEnvelope(&e)
		e.IdempotencyKey = key
		cmds[i] = e
	}
	b.Commands = cmds
}

// Batch sends commands all-or-nothing, one revision per command, with one
// base_rev (the envelopes' own base_rev is set to it), as SendBatch does
// with a fresh idempotency key. To be able to resend a batch after a lost
// answer, use FillBatch and SendBatch.
func (c *Client) Batch(ctx context.Context, canvasID string, baseRev int64, envs []canvas.Envelope) (BatchResult, error) {
	return c.SendBatch(ctx, canvasID, BatchRequest{BaseRev: baseRev, Commands: envs})
}

// SendBatch sends a batch. Like Command, it fills its own copy of b (as
// FillBatch does), so a key it fills serves only its own resends after a
// 503; to resend after an error that leaves the outcome open, call FillBatch
// first (or set b.IdempotencyKey) and send that same b again: the server
// answers the resend from its idempotency store instead of applying the
// batch twice. 409 is a *ConflictError.
func (c *Client) SendBatch(ctx context.Context, canvasID string, b BatchRequest) (BatchResult, error) {
	FillBatch(&b)
	r, err := c.doKeyed(ctx, http.MethodPost, "/canvas_commands/"+seg(canvasID)+"/commands", b)
	if err != nil {
		return BatchResult{}, err
	}
	switch {
	case r.status == http.StatusOK:
		var br BatchResult
		if err := json.Unmarshal(r.body, &br); err != nil {
			return br, fmt.Errorf("client: decoding batch result: %w", err)
		}
		return br, nil
	case r.status == http.StatusConflict && !isProblem(r):
		return BatchResult{}, decodeConflict(r)
	}
	return BatchResult{}, problem(r)
}

// EventsPage is one page of a canvas's event log.
type EventsPage struct {
	HeadRev int64           `json:"head_rev"`
	Commits []canvas.Commit `json:"commits"`
}

// Events returns up to limit commits with rev > afterRev, in order (limit ≤ 0:
// the server's default page size).
func (c *Client) Events(ctx context.Context, canvasID string, afterRev int64, limit int) (EventsPage, error) {
	q := url.Values{"after_rev": {strconv.FormatInt(afterRev, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p EventsPage
	err := c.call(ctx, http.MethodGet, "/canvas_commands/"+seg(canvasID)+"/events", q, nil, &p)
	return p, err
}

// AllEvents pages through the log from afterRev up to the head it finds and
// returns every commit in order.
func (c *Client) AllEvents(ctx context.Context, canvasID string, afterRev int64) ([]canvas.Commit, error) {
	var out []canvas.Commit
	for {
		p, err := c.Events(ctx, canvasID, afterRev, 0)
		if err != nil {
			return out, err
		}
		out = append(out, p.Commits...)
		if len(p.Commits) == 0 || p.Commits[len(p.Commits)-1].Rev >= p.HeadRev {
			return out, nil
		}
		afterRev = p.Commits[len(p.Commits)-1].Rev
	}
}

// CreateCanvas creates a canvas; id empty lets the server mint one. An
// existing id is an error wrapping canvas.ErrAlreadyExists (or ErrConflict).
func (c *Client) CreateCanvas(ctx context.Context, id, title string) (canvas.Canvas, error) {
	body := map[string]string{}
	if id != "" {
		body["canvas_id"] = id
	}
	if title != "" {
		body["title"] = title
	}
	var cv canvas.Canvas
	err := c.call(ctx, http.MethodPost, "/api/canvases", nil, body, &cv)
	return cv, err
}

// GetCanvas returns a canvas's metadata.
func (c *Client) GetCanvas(ctx context.Context, id string) (canvas.Canvas, error) {
	var cv canvas.Canvas
	err := c.call(ctx, http.MethodGet, "/api/canvases/"+seg(id), nil, nil, &cv)
	return cv, err
}

// ListCanvases returns the canvases the token's actor may see. It accepts
// either a bare JSON array or an object with a "canvases" member.
func (c *Client) ListCanvases(ctx context.Context) ([]canvas.Canvas, error) {
	var raw json.RawMessage
	if err := c.call(ctx, http.MethodGet, "/api/canvases", nil, nil, &raw); err != nil {
		return nil, err
	}
	raw = bytes.TrimSpace(raw)
	var out []canvas.Canvas
	if len(raw) > 0 && raw[0] == '[' {
		err := json.Unmarshal(raw, &out)
		return out, err
	}
	var w struct {
		Canvases []canvas.Canvas `json:"canvases"`
	}
	err := json.Unmarshal(raw, &w)
	return w.Canvases, err
}

// DeleteCanvas deletes a canvas (admin).
func (c *Client) DeleteCanvas(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/canvases/"+seg(id), nil, nil, nil)
}

// CreateToken mints a token (admin).
func (c *Client) CreateToken(ctx context.Context, req canvas.TokenRequest) (canvas.TokenGrant, error) {
	var t canvas.TokenGrant
	err := c.call(ctx, http.MethodPost, "/api/tokens", nil, req, &t)
	return t, err
}

// RevokeToken revokes the token of an actor (admin).
func (c *Client) RevokeToken(ctx context.Context, actorID string) error {
	return c.call(ctx, http.MethodDelete, "/api/tokens/"+seg(actorID), nil, nil, nil)
}

// Point and Box are canvas coordinates and rectangles (a viewport or bounds).
type (
	Point = canvas.Point
	Box   = canvas.Box
)

// Gesture is an ephemeral presence update (never stored).
type Gesture struct {
	Cursor    Point    `json:"cursor"`
	Selection []string `json:"selection,omitempty"`
	Viewport  *Box     `json:"viewport,omitempty"`
}

// Gesture sends a presence update to a canvas's subscribers.
func (c *Client) Gesture(ctx context.Context, canvasID string, g Gesture) error {
	return c.call(ctx, http.MethodPost, "/canvas_commands/"+seg(canvasID)+"/gesture", nil, g, nil)
}

// Health reports whether GET /healthz answers 2xx.
func (c *Client) Health(ctx context.Context) error {
	return c.call(ctx, http.MethodGet, "/healthz", nil, nil, nil)
}

// InvokeRequest is the body of POST /api/invoke: a call to a browser on a
// canvas's stream (or a host session), answered by the first browser.
type InvokeRequest struct {
	CanvasID    string          `json:"canvas_id,omitempty"`
	HostSession string          `json:"host_session,omitempty"`
	Action      string          `json:"action"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	TimeoutMS   int             `json:"timeout_ms,omitempty"`
}

// InvokeResult is a browser's answer to an invoke.
type InvokeResult struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Invoke calls a browser and waits for its answer; a timeout is a
// *ProblemError with status 504.
func (c *Client) Invoke(ctx context.Context, req InvokeRequest) (InvokeResult, error) {
	var out InvokeResult
	err := c.call(ctx, http.MethodPost, "/api/invoke", nil, req, &out)
	return out, err
}

// retryDelay is the wait before retry n (0-based) of a reconnecting loop.
func retryDelay(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}

var errStreamClosed = errors.New("client: stream closed")
