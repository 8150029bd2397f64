package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/canvasd/canvasd/client"
)

// ScreenshotRequest is the payload of agent:screenshot_request (design).
type ScreenshotRequest struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	RequestID string `json:"requestId"`
	Bounds    *Box   `json:"bounds,omitempty"`
	MaxSize   *Size  `json:"maxSize,omitempty"`
}

// Size is a width and height in pixels.
type Size struct {
	W int `json:"w"`
	H int `json:"h"`
}

// Screenshot is a browser's answer (design's agent:screenshot).
type Screenshot struct {
	DataURL    string   `json:"dataUrl"`
	Bounds     Box      `json:"bounds"`
	Viewport   Box      `json:"viewport"`
	Selection  []string `json:"selection"`
	DocVersion string   `json:"docVersion"`
}

// Screenshotter asks a browser on the canvas for a screenshot. An error
// (including a timeout) makes the turn continue text-only.
type Screenshotter interface {
	Screenshot(ctx context.Context, canvasID string, req ScreenshotRequest, timeout time.Duration) (Screenshot, error)
}

// InvokeScreenshotter gets screenshots through canvasd's invoke round trip
// (POST /api/invoke with action "agent:screenshot"; a browser answers with
// POST /api/invoke/{invoke_id}).
type InvokeScreenshotter struct{ Client *client.Client }

// Screenshot implements Screenshotter.
func (i InvokeScreenshotter) Screenshot(ctx context.Context, canvasID string, req ScreenshotRequest, timeout time.Duration) (Screenshot, error) {
	payload, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	res, err := i.Client.Invoke(ctx, client.InvokeRequest{CanvasID: canvasID, Action: "agent:screenshot", Payload: payload, TimeoutMS: int(timeout.Milliseconds())})
	if err != nil {
		return Screenshot{}, err
	}
	if !res.OK {
		return Screenshot{}, fmt.Errorf("browser could not take the screenshot: %s", res.Error)
	}
	var s Screenshot
	if err := json.Unmarshal(res.Result, &s); err != nil {
		return Screenshot{}, fmt.Errorf("screenshot answer: %w", err)
	}
	if !strings.HasPrefix(s.DataURL, "data:image/") {
		return Screenshot{}, errors.New("screenshot answer has no data:image URL")
	}
	return s, nil
}

// screenshot requests one with the configured timeout and retries,
// announcing each request as agent:screenshot_request.
func (r *Runner) screenshot(s *session, pc PromptContext) (Screenshot, error) {
	cfg := r.d.Config
	vp := pc.Viewport
	var last error
	for attempt := 0; attempt <= cfg.ScreenshotRetries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(cfg.ScreenshotRetryDelay)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return Screenshot{}, s.ctx.Err()
			case <-t.C:
			}
		}
		req := ScreenshotRequest{Type: "agent:screenshot_request", SessionID: s.rec.ID, RequestID: "ss_" + nanoid(12), Bounds: &vp, MaxSize: &Size{W: 800, H: 800}}
		r.publish(s.rec.CanvasID, client.EventScreenshotRequest, req)
		shot, err := r.d.Screenshots.Screenshot(s.ctx, s.rec.CanvasID, req, cfg.ScreenshotTimeout)
		if err == nil {
			return shot, nil
		}
		last = err
		if s.ctx.Err() != nil {
			return Screenshot{}, s.ctx.Err()
		}
	}
	return Screenshot{}, last
}
