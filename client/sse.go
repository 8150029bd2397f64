package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// SSE event names sent on a canvas stream.
const (
	EventCommit            = canvas.EventCommit
	EventCaughtUp          = canvas.EventCaughtUp
	EventReset             = canvas.EventReset
	EventGesture           = canvas.EventGesture
	EventAgentAction       = canvas.EventAgentAction
	EventAgentChat         = canvas.EventAgentChat
	EventAgentStatus       = canvas.EventAgentStatus
	EventScreenshotRequest = canvas.EventScreenshotRequest
	EventInvoke            = canvas.EventInvoke
)

// Event is one server-sent event. Event is "message" when the server sent no
// event name. ID is empty for events without an id (gestures, agent topics).
type Event struct {
	ID    string
	Event string
	Data  []byte
}

// Decode unmarshals the event's data as JSON.
func (e Event) Decode(v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("client: decoding %s event data: %w", e.Event, err)
	}
	return nil
}

// Commit decodes a canvas_commit event.
func (e Event) Commit() (canvas.Commit, error) {
	var c canvas.Commit
	err := e.Decode(&c)
	return c, err
}

// ResetInfo is the data of a reset event.
type ResetInfo = canvas.ResetInfo

// StreamOptions configures a Stream. Zero values take the defaults.
type StreamOptions struct {
	// LastEventID resumes after this event id (a head_event_id or an integer revision).
	LastEventID string
	// MaxLineBytes bounds one line of the stream (default 64 MiB: a commit
	// of a command at the server's largest body, 1 MiB by default, is about
	// twice that; an invoke's payload may be 16 MiB); a longer line ends the
	// stream with ErrLineTooLong.
	MaxLineBytes int
	// MaxEventBytes bounds one event's data (default 64 MiB); a larger event
	// ends the stream with ErrLineTooLong.
	MaxEventBytes int
	// IdleTimeout drops a connection on which nothing arrives for this long
	// (the server sends a heartbeat every 15 s), and the stream reconnects
	// with Last-Event-ID: a half-open connection does not hang Recv. Default
	// 45 s; negative: never.
	IdleTimeout time.Duration
	// MinRetry and MaxRetry bound the reconnect backoff (defaults 200 ms and
	// 10 s); the server's "retry:" field replaces MinRetry. A refusal with
	// Retry-After (a 429 when the token holds too many streams, a 503) waits
	// at least that long, up to MaxRetry.
	MinRetry, MaxRetry time.Duration
	// MaxReconnects bounds consecutive failed reconnects (0: unlimited until
	// the context ends; a negative value: never reconnect). A connection the
	// server accepted (200) ends a run of failures, even if it dropped
	// before any event (a host stream sends only heartbeats for a while).
	MaxReconnects int
	// ClientID and Capabilities declare a browser on a canvas stream
	// (?client_id=&capabilities=): one declaring "screenshot" may be elected
	// the canvas's host. Empty: a plain subscriber.
	ClientID     string
	Capabilities []string
}

// ErrLineTooLong ends a stream whose line or event exceeds its bound.
var ErrLineTooLong = errors.New("client: SSE line or event over the size limit (StreamOptions.MaxLineBytes, MaxEventBytes)")

// Stream reads a canvas's SSE stream, reconnecting with Last-Event-ID after
// a dropped connection so that, with a server that honours it, the caller
// sees every commit exactly once and in order. Recv must be called from one
// goroutine; Close may be called from any, and should be called when done
// (it releases the stream's context).
//
// After a reset event (the server cannot resume), the caller should re-read
// the snapshot and call SetLastEventID with its head_event_id; if it does
// not, the stream resumes from the reset's head_rev.
type Stream struct {
	c      *Client
	path   string
	opts   StreamOptions
	ctx    context.Context // the caller's, ended early by Close
	cancel context.CancelFunc

	mu       sync.Mutex
	body     io.ReadCloser
	closed   bool
	lastID   string
	resetRev *int64

	sc         *bufio.Scanner
	failures   int
	connects   int
	retry      time.Duration
	terminated error
}

// Stream opens (lazily, at the first Recv) the stream of a canvas.
func (c *Client) Stream(ctx context.Context, canvasID string, opts StreamOptions) *Stream {
	return c.StreamPath(ctx, "/sse/canvas/"+seg(canvasID), opts)
}

// StreamPath opens (lazily) the SSE stream at path (e.g. "/sse/host/{session}"),
// whose segments are escaped as url.PathEscape does.
func (c *Client) StreamPath(ctx context.Context, path string, opts StreamOptions) *Stream {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = 64 << 20
	}
	if opts.MaxEventBytes <= 0 {
		opts.MaxEventBytes = 64 << 20
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = 45 * time.Second
	}
	if opts.MinRetry <= 0 {
		opts.MinRetry = 200 * time.Millisecond
	}
	if opts.MaxRetry <= 0 {
		opts.MaxRetry = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	return &Stream{c: c, path: path, opts: opts, ctx: ctx, cancel: cancel, lastID: opts.LastEventID, retry: opts.MinRetry}
}

// LastEventID returns the id of the last event with an id that Recv returned.
func (s *Stream) LastEventID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastID
}

// SetLastEventID sets the id the next (re)connection resumes after.
func (s *Stream) SetLastEventID(id string) {
	s.mu.Lock()
	s.lastID = id
	s.resetRev = nil
	s.mu.Unlock()
}

// Connects returns how many connections the stream has opened.
func (s *Stream) Connects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

// Close ends the stream: a Recv blocked reading, connecting or waiting to
// reconnect returns at once with an error.
func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.cancel()
	if s.body != nil {
		_ = s.body.Close()
		s.body = nil
	}
	return nil
}

// Recv returns the next event, connecting and reconnecting as needed. It
// returns the context's error when the context ends, errStreamClosed after
// Close, a *ProblemError when the server refuses the stream (401, 403, 404),
// ErrLineTooLong for an oversized event, or the last error once
// MaxReconnects consecutive reconnects failed.
func (s *Stream) Recv() (Event, error) {
	for {
		if s.terminated != nil {
			return Event{}, s.terminated
		}
		if err := s.ctxErr(); err != nil {
			return Event{}, err
		}
		if s.sc == nil {
			if err := s.connect(); err != nil {
				if s.terminated != nil {
					return Event{}, s.terminated
				}
				if err := s.backoff(err); err != nil {
					return Event{}, err
				}
				continue
			}
		}
		ev, err := s.readEvent()
		if err == nil {
			if ev.Event == EventReset {
				var ri ResetInfo
				if json.Unmarshal(ev.Data, &ri) == nil {
					s.mu.Lock()
					r := ri.HeadRev
					s.resetRev = &r
					s.mu.Unlock()
				}
			}
			return ev, nil
		}
		s.dropConn()
		if errors.Is(err, ErrLineTooLong) {
			s.terminated = err
			return Event{}, err
		}
		if s.isClosed() {
			return Event{}, errStreamClosed
		}
		if err := s.backoff(err); err != nil {
			return Event{}, err
		}
	}
}

func (s *Stream) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// ctxErr is errStreamClosed after Close, else the context's error.
func (s *Stream) ctxErr() error {
	if s.isClosed() {
		return errStreamClosed
	}
	return s.ctx.Err()
}

// backoff waits before the next reconnect, or returns the terminal error.
func (s *Stream) backoff(cause error) error {
	if err := s.ctxErr(); err != nil {
		return err
	}
	if s.opts.MaxReconnects < 0 || (s.opts.MaxReconnects > 0 && s.failures >= s.opts.MaxReconnects) {
		s.terminated = fmt.Errorf("client: SSE stream %s: giving up after %d reconnects: %w", s.path, s.failures, cause)
		return s.terminated
	}
	d := retryDelay(s.retry, s.opts.MaxRetry, s.failures)
	if pe := (*ProblemError)(nil); errors.As(cause, &pe) {
		d = max(d, min(pe.RetryAfter, s.opts.MaxRetry))
	}
	s.failures++
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return s.ctxErr()
	case <-t.C:
		return nil
	}
}

func (s *Stream) dropConn() {
	s.mu.Lock()
	if s.body != nil {
		_ = s.body.Close()
		s.body = nil
	}
	s.mu.Unlock()
	s.sc = nil
}

func (s *Stream) connect() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.terminated = errStreamClosed
		return errStreamClosed
	}
	last := s.lastID
	if s.resetRev != nil {
		last = strconv.FormatInt(*s.resetRev, 10)
	}
	s.mu.Unlock()

	var q url.Values
	if s.opts.ClientID != "" {
		q = url.Values{"client_id": {s.opts.ClientID}}
		if len(s.opts.Capabilities) > 0 {
			q.Set("capabilities", strings.Join(s.opts.Capabilities, ","))
		}
	}
	req, err := s.c.newRequest(s.ctx, http.MethodGet, s.path, q, nil)
	if err != nil {
		s.terminated = err
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	res, err := s.c.http.Do(req)
	if err != nil {
		return fmt.Errorf("client: SSE connect %s: %w", s.path, err)
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		res.Body.Close()
		pe := problem(&response{status: res.StatusCode, header: res.Header, body: b})
		switch res.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusBadRequest:
			s.terminated = pe
		}
		return pe
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "text/event-stream" {
		res.Body.Close()
		s.terminated = fmt.Errorf("client: SSE connect %s: Content-Type %q is not text/event-stream: %w", s.path, mt, canvas.ErrInvalid)
		return s.terminated
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		res.Body.Close()
		return errStreamClosed
	}
	body := io.ReadCloser(res.Body)
	if s.opts.IdleTimeout > 0 {
		body = newIdleBody(res.Body, s.opts.IdleTimeout)
	}
	s.body = body
	s.connects++
	s.failures = 0 // the server took us: a drop from here on starts a new run of failures
	if last != "" && s.resetRev != nil {
		// Resuming from the reset's head: that is now our position.
		s.lastID = last
		s.resetRev = nil
	}
	s.mu.Unlock()
	sc := bufio.NewScanner(body)
	// The scanner's limit is the larger of its max and its buffer's capacity.
	sc.Buffer(make([]byte, 0, min(4096, s.opts.MaxLineBytes)), s.opts.MaxLineBytes)
	sc.Split((&sseSplitter{}).split)
	s.sc = sc
	return nil
}

// readEvent reads lines until a blank line dispatches an event with data.
func (s *Stream) readEvent() (Event, error) {
	var (
		data    bytes.Buffer
		hasData bool
		name    string
		id      *string
	)
	for s.sc.Scan() {
		line := s.sc.Bytes()
		if len(line) == 0 {
			if id != nil {
				s.mu.Lock()
				s.lastID = *id
				s.resetRev = nil
				s.mu.Unlock()
			}
			if !hasData {
				name, id = "", nil
				continue
			}
			if name == "" {
				name = "message"
			}
			ev := Event{Event: name, Data: bytes.Clone(data.Bytes())}
			if id != nil {
				ev.ID = *id
			}
			return ev, nil
		}
		if line[0] == ':' {
			continue // comment (heartbeat)
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if data.Len()+len(value)+1 > s.opts.MaxEventBytes {
				return Event{}, ErrLineTooLong
			}
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				v := string(value)
				id = &v
			}
		case "retry":
			if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 {
				s.retry = time.Duration(n) * time.Millisecond
				if s.retry <= 0 {
					s.retry = s.opts.MinRetry
				}
			}
		}
	}
	if err := s.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Event{}, ErrLineTooLong
		}
		return Event{}, err
	}
	return Event{}, io.EOF
}

// utf8BOM is dropped at the start of a stream, as the SSE specification requires.
var utf8BOM = []byte("\xEF\xBB\xBF")

// sseSplitter splits one connection's stream into lines on CRLF, LF or CR,
// as the SSE specification requires, after dropping a leading UTF-8 BOM. A
// CR that is the last byte received ends its line at once (the event it
// completes is not held back until more bytes arrive); an LF right after it
// is then skipped, being the rest of a CRLF.
type sseSplitter struct {
	started   bool // the BOM check is done
	pendingCR bool // the last line ended with a CR whose next byte was not seen yet
}

// split is a bufio.SplitFunc. It consumes a BOM or the LF of a CRLF with
// the line after it: bufio.Scanner reads more input after an advance without
// a token instead of splitting what it holds.
func (sp *sseSplitter) split(data []byte, atEOF bool) (int, []byte, error) {
	skip := 0
	if !sp.started {
		if len(data) < len(utf8BOM) && bytes.HasPrefix(utf8BOM, data) && !atEOF {
			return 0, nil, nil // maybe a BOM cut short: wait for more
		}
		sp.started = true
		if bytes.HasPrefix(data, utf8BOM) {
			skip = len(utf8BOM)
		}
	}
	if sp.pendingCR && len(data) > 0 {
		sp.pendingCR = false
		if data[0] == '\n' {
			skip = 1
		}
	}
	rest := data[skip:]
	for i, b := range rest {
		switch b {
		case '\n':
			return skip + i + 1, rest[:i], nil
		case '\r':
			if i+1 < len(rest) {
				if rest[i+1] == '\n' {
					return skip + i + 2, rest[:i], nil
				}
				return skip + i + 1, rest[:i], nil
			}
			sp.pendingCR = !atEOF
			return skip + i + 1, rest[:i], nil
		}
	}
	if atEOF && len(rest) > 0 {
		// An unterminated last line: an incomplete event, never dispatched.
		return len(data), nil, io.EOF
	}
	return skip, nil, nil
}

// StreamURL returns the absolute URL of a canvas's stream with the token as
// ?access_token= (for browsers' EventSource, which cannot set headers).
func (c *Client) StreamURL(canvasID string) string {
	u := c.url("/sse/canvas/"+seg(canvasID), nil)
	if c.token != "" {
		u += "?access_token=" + url.QueryEscape(c.token)
	}
	return u
}

// idleBody is a stream's response body that closes itself when no read
// returns data for idle; the read then fails with errIdle.
type idleBody struct {
	io.ReadCloser
	idle     time.Duration
	t        *time.Timer
	timedOut atomic.Bool
}

func newIdleBody(rc io.ReadCloser, idle time.Duration) *idleBody {
	b := &idleBody{ReadCloser: rc, idle: idle}
	b.t = time.AfterFunc(idle, func() {
		b.timedOut.Store(true)
		_ = rc.Close()
	})
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.t.Reset(b.idle)
	}
	if err != nil && b.timedOut.Load() {
		err = fmt.Errorf("client: SSE connection silent for %v (no heartbeat): %w", b.idle, errIdle)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.t.Stop()
	return b.ReadCloser.Close()
}

// errIdle: a stream's connection went silent; the stream reconnects.
var errIdle = errors.New("connection idle")
