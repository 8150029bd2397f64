package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// ExportOptions are the query of GET /api/canvases/{canvas_id}/export.
type ExportOptions struct {
	// Format is svg, png (the default), jsoncanvas or excalidraw.
	Format string
	// AtRev, when set, exports the canvas as it was at that revision.
	AtRev *int64
	// IDs, when non-nil, exports only these nodes and edges (a frame or
	// group brings its children).
	IDs []string
	// Bounds, when set, is the page region x, y, w, h to draw (svg, png).
	Bounds *[4]float64
	// Scale is a PNG's pixels per page unit (0: the server's default, 1).
	Scale float64
	// Transparent leaves a picture's background transparent.
	Transparent bool
}

// Exported is an export: the file's bytes, its media type and the revision
// it shows.
type Exported struct {
	Data        []byte
	ContentType string
	Rev         int64
}

// Export draws the canvas (svg, png) or writes it as a file (jsoncanvas,
// excalidraw). A refused option is a *ProblemError naming it.
func (c *Client) Export(ctx context.Context, canvasID string, o ExportOptions) (Exported, error) {
	q := url.Values{}
	if o.Format != "" {
		q.Set("format", o.Format)
	}
	if o.AtRev != nil {
		q.Set("at_rev", strconv.FormatInt(*o.AtRev, 10))
	}
	if o.IDs != nil {
		q.Set("ids", strings.Join(o.IDs, ","))
	}
	if b := o.Bounds; b != nil {
		q.Set("bounds", fmt.Sprintf("%g,%g,%g,%g", b[0], b[1], b[2], b[3]))
	}
	if o.Scale != 0 {
		q.Set("scale", strconv.FormatFloat(o.Scale, 'g', -1, 64))
	}
	if o.Transparent {
		q.Set("background", "transparent")
	}
	r, err := c.do(ctx, http.MethodGet, "/api/canvases/"+seg(canvasID)+"/export", q, nil)
	if err != nil {
		return Exported{}, err
	}
	if r.status != http.StatusOK {
		return Exported{}, problem(r)
	}
	rev, _ := strconv.ParseInt(r.header.Get("X-Canvas-Rev"), 10, 64)
	return Exported{Data: r.body, ContentType: r.header.Get("Content-Type"), Rev: rev}, nil
}

// ImportOptions are the query of POST /api/canvases/{canvas_id}/import.
type ImportOptions struct {
	// Format is jsoncanvas, excalidraw or mermaid (required).
	Format string
	// Mode is merge (the default: the file joins the canvas, replacing what
	// has the same id) or replace (everything else is deleted).
	Mode string
	// BaseRev, when set, is the revision the import was planned against.
	BaseRev *int64
	// IdempotencyKey makes a retry safe; empty: the client makes one, so its
	// own resends after a 503 are safe.
	IdempotencyKey string
}

// Import reads file into the canvas as one commit, answered like a command
// (current_rev, created_ids). A file the server cannot read is a
// *ProblemError whose "field" names the place in it; a stale BaseRev that
// conflicts is a *ConflictError.
func (c *Client) Import(ctx context.Context, canvasID string, file []byte, o ImportOptions) (canvas.RevisionResult, error) {
	q := url.Values{"format": {o.Format}}
	if o.Mode != "" {
		q.Set("mode", o.Mode)
	}
	if o.BaseRev != nil {
		q.Set("base_rev", strconv.FormatInt(*o.BaseRev, 10))
	}
	key := o.IdempotencyKey
	if key == "" {
		key = NewID("idem_")
	}
	q.Set("idempotency_key", key)
	ctype := "application/json"
	if o.Format == "mermaid" {
		ctype = "text/plain; charset=utf-8"
	}
	var r *response
	for attempt := 0; ; attempt++ { // resent after a 503 with the same key, as commands are
		var err error
		r, err = c.doRaw(ctx, http.MethodPost, "/api/canvases/"+seg(canvasID)+"/import", q, ctype, file)
		if err != nil {
			return canvas.RevisionResult{}, err
		}
		if r.status != http.StatusServiceUnavailable || attempt >= c.retries {
			break
		}
		if err := sleepCtx(ctx, min(max(retryAfter(r.header), 500*time.Millisecond), 5*time.Second)); err != nil {
			break
		}
	}
	return decodeRevision(r)
}

// doRaw sends body as it is, with contentType.
func (c *Client) doRaw(ctx context.Context, method, p string, q url.Values, contentType string, body []byte) (*response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url(p, q), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, p, err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.userAgnt != "" {
		req.Header.Set("User-Agent", c.userAgnt)
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

// sleepCtx waits d, or until ctx is done (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
