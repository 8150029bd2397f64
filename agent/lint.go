package agent

import (
	"fmt"
	"sort"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// Lints: after a turn on the canvas, the shapes the turn created or changed
// are checked, and what is wrong goes back to the model as one follow-up
// turn (within the follow-up bound): shapes overlapping, text overflowing
// its shape, arrows (edges) not bound to shapes at both ends, content off
// the viewport.

// maxLints bounds the problems reported in one follow-up.
const maxLints = 20

// lintInput is what the lints look at.
type lintInput struct {
	nodes   []*canvas.Node
	edges   []*canvas.Edge
	touched map[string]bool // shapes and edges the turn created or changed
	moved   map[string]bool // shapes placement moved (their position is not the model's)
	visible rect            // the viewport and the free space given to the model (empty: no viewport, not checked)
	names   map[string]string
}

// lint returns the problems of the touched shapes, one line each, sorted.
func lint(in lintInput) []string {
	byID := make(map[string]*canvas.Node, len(in.nodes))
	for _, n := range in.nodes {
		byID[n.ID] = n
	}
	name := func(id string) string {
		if own, ok := in.names[id]; ok {
			return fmt.Sprintf("%s (your %q)", id, own)
		}
		return id
	}
	var out []string
	for _, n := range in.nodes {
		if !in.touched[n.ID] {
			continue
		}
		r := nodeRect(n)
		if solid(n.Type, r) {
			for _, o := range in.nodes {
				or := nodeRect(o)
				if o.ID == n.ID || !solid(o.Type, or) || !r.overlaps(or) || related(n, o, byID) || in.touched[o.ID] && o.ID < n.ID {
					continue
				}
				out = append(out, fmt.Sprintf("overlap: %s overlaps %s by %.0f×%.0f; move or resize one of them into free space",
					name(n.ID), name(o.ID), min(r.x1, or.x1)-max(r.x0, or.x0), min(r.y1, or.y1)-max(r.y0, or.y0)))
			}
		}
		if problem := textOverflow(n); problem != "" {
			out = append(out, fmt.Sprintf("text overflow: the text of %s %s", name(n.ID), problem))
		}
		if !in.moved[n.ID] && in.visible.w() > 0 && !r.overlaps(in.visible) {
			out = append(out, fmt.Sprintf("off viewport: %s at (%.0f, %.0f) is outside the viewport, where nobody sees it; move it into view", name(n.ID), n.X, n.Y))
		}
	}
	for _, e := range in.edges {
		if in.touched[e.ID] && (e.From == "" || e.To == "") {
			out = append(out, fmt.Sprintf("unbound arrow: %s is not bound to shapes at both ends; connect it to a shape at its free end (an arrow's from and to name shapes), or delete it", name(e.ID)))
		}
	}
	sort.Strings(out)
	if len(out) > maxLints {
		out = append(out[:maxLints], fmt.Sprintf("(and %d more)", len(out)-maxLints))
	}
	return out
}

// related reports whether one node is the other's container (an ancestor).
func related(a, b *canvas.Node, byID map[string]*canvas.Node) bool {
	return ancestor(a, b.ID, byID) || ancestor(b, a.ID, byID)
}

func ancestor(n *canvas.Node, id string, byID map[string]*canvas.Node) bool {
	for i := 0; n != nil && n.ParentID != "" && i < 64; i++ {
		if n.ParentID == id {
			return true
		}
		n = byID[n.ParentID]
	}
	return false
}

// textOverflow says how the text of a geo or note shape does not fit it, or "".
func textOverflow(n *canvas.Node) string {
	if n.Type != "geo" && n.Type != "note" {
		return ""
	}
	text, _ := n.Props["text"].(string)
	if strings.TrimSpace(text) == "" {
		return ""
	}
	size, _ := n.Props["size"].(string)
	fs := textFontSize(size)
	inner := n.W - 2*labelPad
	need, wordTooWide := wrappedHeight(text, fs, inner)
	switch {
	case wordTooWide:
		return fmt.Sprintf("has a word wider than the shape (w %.0f); make the shape wider or the text smaller", n.W)
	case need+2*labelPad > n.H+1:
		return fmt.Sprintf("needs about %.0f of height but the shape is %.0f high; make it taller or wider, shorten the text, or use a smaller size", need+2*labelPad, n.H)
	}
	return ""
}

// lintFollowUp checks the shapes the turn created or changed and, when
// there are problems not reported before, queues a lint turn asking the
// model to fix them (a follow-up, within the session's bound).
func (s *session) lintFollowUp(v turnView, ts *turnState) {
	snap, err := s.r.d.Client.Snapshot(s.ctx, s.rec.CanvasID)
	if err != nil {
		s.r.log.Warn("agent: reading the canvas for the lints failed", "session_id", s.rec.ID, "err", err)
		return
	}
	names := map[string]string{}
	for given, id := range s.san.Renames() {
		names[id] = given
	}
	// Content is off the viewport only when there is one (a request's or a
	// browser's), not the bounds of the canvas that stand in for it.
	var visible rect
	s.mu.Lock()
	hasViewport := s.rec.Viewport != nil
	s.mu.Unlock()
	if hasViewport {
		visible = boxRect(v.pc.Viewport)
		if f := boxRect(v.free); f.w() > 0 {
			visible = rect{min(visible.x0, f.x0), min(visible.y0, f.y0), max(visible.x1, f.x1), max(visible.y1, f.y1)}
		}
	}
	problems := lint(lintInput{nodes: snap.State.Nodes, edges: snap.State.Edges, touched: ts.touched, moved: s.place.moved, visible: visible, names: names})
	sig := strings.Join(problems, "\n")
	switch {
	case len(problems) == 0:
	case sig == s.lastLints:
		s.note("system", fmt.Sprintf("Layout check: the same %d problems remain.", len(problems)))
	case s.enqueue(task{kind: TurnLint, text: "- " + strings.Join(problems, "\n- ")}):
		s.note("system", fmt.Sprintf("Layout check: %d problems; asking for a fix:\n- %s", len(problems), strings.Join(problems, "\n- ")))
	default:
		s.note("system", fmt.Sprintf("Layout check: %d problems, not fixed (follow-up limit reached).", len(problems)))
	}
	s.lastLints = sig
}
