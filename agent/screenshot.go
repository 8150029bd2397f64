package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/canvasd/canvasd/canvas"
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

// Screenshotter asks the canvas's host browser for a screenshot. An error
// wrapping ErrNoHost means no browser can take one: the turn goes on
// text-only at once. Other errors (a timeout, the host left) are retried
// up to Config.ScreenshotRetries times, then the turn goes on text-only.
type Screenshotter interface {
	Screenshot(ctx context.Context, canvasID string, req ScreenshotRequest, timeout time.Duration) (Screenshot, error)
}

// ErrNoHost: no browser on the canvas declared the screenshot capability.
var ErrNoHost = errors.New("no host browser on the canvas")

// NoHostProblem is the last path segment of the problem type of a
// screenshot invoke refused for want of a host browser.
const NoHostProblem = "no-host"

// InvokeScreenshotter gets screenshots through canvasd's invoke round trip
// (POST /api/invoke with action "agent:screenshot"; a browser answers with
// POST /api/invoke/{invoke_id}).
type InvokeScreenshotter struct{ Client *client.Client }

// Screenshot implements Screenshotter.
func (i InvokeScreenshotter) Screenshot(ctx context.Context, canvasID string, req ScreenshotRequest, timeout time.Duration) (Screenshot, error) {
	payload, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	res, err := i.Client.Invoke(ctx, client.InvokeRequest{CanvasID: canvasID, Action: canvas.InvokeAgentScreenshot, Payload: payload, TimeoutMS: int(timeout.Milliseconds())})
	var pe *client.ProblemError
	if errors.As(err, &pe) && strings.HasSuffix(pe.Type, "/"+NoHostProblem) {
		return Screenshot{}, fmt.Errorf("%w: %s", ErrNoHost, pe.Detail)
	}
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

// Where a turn's screenshot came from (AgentStats.ScreenshotSource, and
// the outcome label of canvas_agent_screenshots_total).
const (
	ShotFromBrowser = "browser" // the canvas's host browser took it
	ShotFromServer  = "server"  // no browser could: the server drew the viewport (GET .../export?format=png)
	ShotFromCache   = "cache"   // an earlier one of the same revision and viewport
	ShotNone        = "none"    // neither: the turn went on text-only
)

// screenshot returns the turn's screenshot: from the cache when one of the
// same canvas revision and bounds is fresh (Config.ScreenshotCacheTTL),
// else from the canvas's host browser, with the configured timeout and
// retries (each request announced to the host as
// agent:screenshot_request), else drawn by the server: the viewport at the
// turn's revision as a PNG that fits 800×800 pixels, exactly as the canvas
// holds it, with no browser. Only when that fails too does the turn go on
// text-only. The session's stats and the log say which it got.
//
// pre, when not nil, is the host's screenshot asked for before the turn
// read the canvas (prefetchShot): when it is of the turn's viewport, it
// is the first attempt (its time counts from when it was asked for to
// when its answer came, which may be before the turn wanted it).
func (r *Runner) screenshot(s *session, pc PromptContext, pre *shotPrefetch) (Screenshot, error) {
	cfg := r.d.Config
	vp := pc.Viewport
	key := fmt.Sprintf("%s|%s|%g,%g,%g,%g", s.rec.CanvasID, pc.DocVersion, vp.X, vp.Y, vp.W, vp.H)
	if shot, ok := r.shots.get(key, r.d.Now()); ok {
		s.stats(func(st *client.AgentStats) {
			st.Screenshots++
			st.ScreenshotsCached++
			st.ScreenshotSource = ShotFromCache
		})
		r.d.Metrics.screenshotOutcome("cached")
		return shot, nil
	}
	last := ErrNoHost
	for attempt := 0; r.d.Screenshots != nil && attempt <= cfg.ScreenshotRetries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(cfg.ScreenshotRetryDelay)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return Screenshot{}, s.ctx.Err()
			case <-t.C:
			}
		}
		var shot Screenshot
		var err error
		var start, end time.Time
		if attempt == 0 && pre != nil && *pre.req.Bounds == vp {
			start = pre.start
			select {
			case <-pre.done:
				shot, err, end = pre.shot, pre.err, pre.end
			case <-s.ctx.Done():
				return Screenshot{}, s.ctx.Err()
			}
		} else {
			req := shotRequest(s, vp)
			r.d.Events.PublishToHost(s.rec.CanvasID, client.EventScreenshotRequest, req)
			start = r.d.Now()
			shot, err = r.d.Screenshots.Screenshot(s.ctx, s.rec.CanvasID, req, cfg.ScreenshotTimeout)
			end = r.d.Now()
		}
		if err == nil {
			d := end.Sub(start)
			r.d.Metrics.observeScreenshot(d)
			r.d.Metrics.screenshotOutcome("taken")
			s.stats(func(st *client.AgentStats) {
				st.Screenshots++
				st.ScreenshotMS = ms(d)
				st.ScreenshotSource = ShotFromBrowser
			})
			r.log.Info("agent: screenshot", "session_id", s.rec.ID, "source", ShotFromBrowser, "ms", ms(d))
			if shot.DocVersion == pc.DocVersion { // (a prefetched one may show an earlier revision)
				r.shots.put(key, shot, r.d.Now(), cfg.ScreenshotCacheTTL)
			}
			return shot, nil
		}
		last = err
		if s.ctx.Err() != nil {
			return Screenshot{}, s.ctx.Err()
		}
		if errors.Is(err, ErrNoHost) {
			break // no retry can help this turn
		}
	}
	start := r.d.Now()
	shot, err := r.drawnScreenshot(s, pc)
	if err == nil {
		d := r.d.Now().Sub(start)
		r.d.Metrics.screenshotOutcome("drawn")
		s.stats(func(st *client.AgentStats) {
			st.Screenshots++
			st.ScreenshotsDrawn++
			st.ScreenshotMS = ms(d)
			st.ScreenshotSource = ShotFromServer
		})
		r.log.Info("agent: screenshot", "session_id", s.rec.ID, "source", ShotFromServer, "ms", ms(d), "why", last.Error())
		r.shots.put(key, shot, r.d.Now(), cfg.ScreenshotCacheTTL)
		return shot, nil
	}
	if s.ctx.Err() != nil {
		return Screenshot{}, s.ctx.Err()
	}
	r.d.Metrics.screenshotOutcome("missed")
	s.stats(func(st *client.AgentStats) { st.ScreenshotSource = ShotNone })
	return Screenshot{}, fmt.Errorf("%w; the server could not draw it either: %v", last, err)
}

// shotRequest is a screenshot request of viewport vp for session s.
func shotRequest(s *session, vp Box) ScreenshotRequest {
	return ScreenshotRequest{Type: "agent:screenshot_request", SessionID: s.rec.ID, RequestID: "ss_" + nanoid(12), Bounds: &vp, MaxSize: &Size{W: maxShotSide, H: maxShotSide}}
}

// shotPrefetch is a turn's screenshot asked of the host before the turn
// reads the canvas: the page draws it while the server reads the canvas
// and builds the prompt, instead of after.
type shotPrefetch struct {
	req    ScreenshotRequest
	start  time.Time
	done   chan struct{} // closed when shot, err and end are set
	end    time.Time     // when the answer (or the error) came
	shot   Screenshot
	err    error
	cancel context.CancelFunc
}

// prefetchShot asks the canvas's host for a screenshot of the session's
// viewport, when the turn will want one (its model takes images) and the
// viewport is known (a browser published it, or the run gave it); nil
// otherwise. The caller ends it with stop.
func (r *Runner) prefetchShot(s *session) *shotPrefetch {
	if r.d.Screenshots == nil {
		return nil
	}
	if provider, _, err := r.d.Providers.Get(s.spec); err != nil || !provider.Vision() {
		return nil
	}
	s.mu.Lock()
	vp := s.rec.Viewport
	s.mu.Unlock()
	if vp == nil || defaultViewport(vp, nil) != *vp {
		return nil
	}
	ctx, cancel := context.WithCancel(s.ctx)
	p := &shotPrefetch{req: shotRequest(s, *vp), start: r.d.Now(), done: make(chan struct{}), cancel: cancel}
	r.d.Events.PublishToHost(s.rec.CanvasID, client.EventScreenshotRequest, p.req)
	go func() {
		defer close(p.done)
		p.shot, p.err = r.d.Screenshots.Screenshot(ctx, s.rec.CanvasID, p.req, r.d.Config.ScreenshotTimeout)
		p.end = r.d.Now()
	}()
	return p
}

// stop cancels the prefetch (when the turn did not use it) and waits for it.
func (p *shotPrefetch) stop() {
	if p != nil {
		p.cancel()
		<-p.done
	}
}

// maxShotSide is the longest side of a screenshot given to the model.
const maxShotSide = 800

// drawnScreenshot asks canvasd to draw the turn's viewport at the turn's
// revision (its export as a PNG, no browser involved), scaled down to fit
// maxShotSide pixels.
func (r *Runner) drawnScreenshot(s *session, pc PromptContext) (Screenshot, error) {
	vp := pc.Viewport
	if !(vp.W > 0 && vp.H > 0) {
		return Screenshot{}, errors.New("the viewport has no area")
	}
	scale := min(1, maxShotSide/vp.W, maxShotSide/vp.H)
	o := client.ExportOptions{Format: "png", Bounds: &[4]float64{vp.X, vp.Y, vp.W, vp.H}, Scale: max(scale, 0.01)}
	if rev, err := strconv.ParseInt(pc.DocVersion, 10, 64); err == nil {
		o.AtRev = &rev
	}
	x, err := r.d.Client.Export(s.ctx, s.rec.CanvasID, o)
	if err != nil {
		return Screenshot{}, err
	}
	return Screenshot{DataURL: "data:image/png;base64," + base64.StdEncoding.EncodeToString(x.Data), Bounds: vp, Viewport: vp,
		DocVersion: pc.DocVersion}, nil
}

// shotCache keeps screenshots by canvas, revision and bounds until they expire.
type shotCache struct {
	mu sync.Mutex
	m  map[string]cachedShot
}

type cachedShot struct {
	shot    Screenshot
	expires time.Time
}

// maxCachedShots bounds the cache (a screenshot is up to a few hundred KiB).
const maxCachedShots = 64

func (c *shotCache) get(key string, now time.Time) (Screenshot, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !now.Before(e.expires) {
		return Screenshot{}, false
	}
	return e.shot, true
}

// put keeps shot until now+ttl (ttl 0: the cache is off). A full cache
// drops its expired entries, then arbitrary ones down to half.
func (c *shotCache) put(key string, shot Screenshot, now time.Time, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedShot{}
	}
	if len(c.m) >= maxCachedShots {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < maxCachedShots/2 {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[key] = cachedShot{shot: shot, expires: now.Add(ttl)}
}
