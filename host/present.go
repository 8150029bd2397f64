package host

import (
	"fmt"

	"github.com/canvasd/canvasd/canvas"
)

// Presentation actions.
const (
	PresentShow     = "show"
	PresentHide     = "hide"
	PresentNavigate = "navigate"
)

// Placement is where a panel should appear, in screen pixels.
type Placement struct {
	X      *float64 `json:"x,omitempty"`
	Y      *float64 `json:"y,omitempty"`
	Width  *float64 `json:"width,omitempty"`
	Height *float64 `json:"height,omitempty"`
}

// Presentation is the body of a "present" event.
type Presentation struct {
	Action    string     `json:"action"`              // show | hide | navigate
	Path      string     `json:"path,omitempty"`      // navigate (and optionally show): a path in the session, e.g. "yolo/"
	Placement *Placement `json:"placement,omitempty"` // show and navigate
}

// Validate checks the action, the path (ParsePath rules, relative to the
// session) and the placement (width and height positive).
func (p *Presentation) Validate() error {
	switch p.Action {
	case PresentShow, PresentHide, PresentNavigate:
	default:
		return canvas.Unprocessable("action", "must be show, hide or navigate, got %q", p.Action)
	}
	if p.Action == PresentNavigate && p.Path == "" {
		return canvas.Unprocessable("path", "is required for navigate (\"\" is not allowed; use \"/\" for the session root)")
	}
	if p.Path != "" && p.Path != "/" {
		if _, _, err := ParsePath(p.Path); err != nil {
			return canvas.Unprocessable("path", "%v", err)
		}
	}
	if pl := p.Placement; pl != nil {
		if pl.Width != nil && *pl.Width <= 0 || pl.Height != nil && *pl.Height <= 0 {
			return canvas.Unprocessable("placement", "width and height must be positive")
		}
	}
	return nil
}

// Present validates p and publishes it as a "present" event to the
// session's browsers, returning how many received it.
func (h *Host) Present(session string, p Presentation) (int, error) {
	if err := ValidateSession(session); err != nil {
		return 0, err
	}
	if err := p.Validate(); err != nil {
		return 0, fmt.Errorf("present: %w", err)
	}
	return h.publish(session, Event{Name: EventPresent, Data: mustJSON(p)}), nil
}
