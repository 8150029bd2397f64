package reducer

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// Edges are the arrows of a canvas and the one way shapes are connected
// (docs/model.md). Each end is bound to a node or free; props.points is the
// path in page coordinates, the from end first, always stored. The reducer
// keeps bound ends on their nodes in the same commit that changes a node's
// box, whatever the verb (tx.finish → keepEdgesBound; settle does the same
// for the history verbs), and deletes a node's edges with it.
//
// A bound end keeps its place relative to its node: its position in the
// node's own frame (unrotated, relative to the top-left corner) is taken as
// a share of the box (clamped into it) plus what lies outside the box, in
// page units (an Excalidraw arrow stops a few units short of the shape);
// after the change the same share of the new box, plus the same offset, is
// the end's new place. An end with fromSide/toSide sits at the middle of
// that side. The middle points of a straight or curved edge stay, unless
// both ends' nodes moved by the same offset (then they move with them); an
// elbow edge is routed again between its ends.

// edgeNearMargin is how far outside its node's box a bound end may lie (in
// page units); an end given farther away is moved onto the node's outline.
const edgeNearMargin = 32.0

// Props keys of edges the reducer reads.
const (
	pointsProp   = "points"
	routingProp  = "routing"
	fromSideProp = "fromSide"
	toSideProp   = "toSide"
)

type pt struct{ x, y float64 }

// toLocal returns page point p in n's frame: relative to its top-left
// corner, unrotated.
func toLocal(n *canvas.Node, p pt) pt {
	dx, dy := p.x-n.X, p.y-n.Y
	if n.Rotation == 0 {
		return pt{dx, dy}
	}
	s, c := sincos(n.Rotation)
	return pt{dx*c + dy*s, -dx*s + dy*c}
}

// toPage returns the page point of l, a point in n's frame.
func toPage(n *canvas.Node, l pt) pt {
	if n.Rotation == 0 {
		return pt{n.X + l.x, n.Y + l.y}
	}
	s, c := sincos(n.Rotation)
	return pt{n.X + l.x*c - l.y*s, n.Y + l.x*s + l.y*c}
}

func centre(n *canvas.Node) pt { return toPage(n, pt{n.W / 2, n.H / 2}) }

// anchor is where an end lies relative to a node: the share (u, v) of the
// box of the nearest point of the box, and the offset (ox, oy) from it, in
// the node's frame.
type anchor struct{ u, v, ox, oy float64 }

func anchorOf(n *canvas.Node, p pt) anchor {
	l := toLocal(n, p)
	cx, cy := math.Min(math.Max(l.x, 0), n.W), math.Min(math.Max(l.y, 0), n.H)
	a := anchor{u: 0.5, v: 0.5, ox: l.x - cx, oy: l.y - cy}
	if n.W > 0 {
		a.u = cx / n.W
	}
	if n.H > 0 {
		a.v = cy / n.H
	}
	return a
}

// at returns the page point of a on node n.
func (a anchor) at(n *canvas.Node) pt { return toPage(n, pt{a.u*n.W + a.ox, a.v*n.H + a.oy}) }

// near reports whether the end lies on its node's box or within edgeNearMargin of it.
func (a anchor) near() bool { return math.Hypot(a.ox, a.oy) <= edgeNearMargin }

// sideMiddle returns the page point of the middle of a side of n.
func sideMiddle(n *canvas.Node, side string) pt {
	l := pt{n.W / 2, n.H / 2}
	switch side {
	case "top":
		l.y = 0
	case "right":
		l.x = n.W
	case "bottom":
		l.y = n.H
	case "left":
		l.x = 0
	}
	return toPage(n, l)
}

// outlinePoint returns where the ray from n's centre towards page point p
// leaves n's outline: its ellipse for a geo node drawn as an ellipse or an
// oval, its diamond for a diamond, its box otherwise.
func outlinePoint(n *canvas.Node, p pt) pt {
	hw, hh := n.W/2, n.H/2
	d := toLocal(n, p)
	d.x -= hw
	d.y -= hh
	if d.x == 0 && d.y == 0 || !finite(d.x, d.y) {
		d = pt{1, 0}
	}
	if hw <= 0 || hh <= 0 {
		return centre(n)
	}
	var k float64
	geo, _ := n.Props["geo"].(string)
	switch {
	case n.Type == "geo" && (geo == "ellipse" || geo == "oval"):
		k = 1 / math.Hypot(d.x/hw, d.y/hh)
	case n.Type == "geo" && geo == "diamond":
		k = 1 / (math.Abs(d.x)/hw + math.Abs(d.y)/hh)
	default:
		k = math.Inf(1)
		if d.x != 0 {
			k = hw / math.Abs(d.x)
		}
		if d.y != 0 {
			k = math.Min(k, hh/math.Abs(d.y))
		}
	}
	return toPage(n, pt{hw + d.x*k, hh + d.y*k})
}

// route returns an elbow path from s to e: horizontal and vertical segments
// with one bend on each side of the middle, leaving s horizontally when
// fromSide says so or the ends lie farther apart across than down.
func route(s, e pt, fromSide string) []pt {
	if s.x == e.x || s.y == e.y {
		return []pt{s, e}
	}
	horizontal := fromSide == "left" || fromSide == "right" ||
		fromSide == "" && math.Abs(e.x-s.x) >= math.Abs(e.y-s.y)
	if horizontal {
		mx := (s.x + e.x) / 2
		return []pt{s, {mx, s.y}, {mx, e.y}, e}
	}
	my := (s.y + e.y) / 2
	return []pt{s, {s.x, my}, {e.x, my}, e}
}

// computedPoints returns the path of an edge from node a to node b given
// without points: from the middle of a towards the middle of b, each end
// where that line leaves its node's outline (or at the middle of fromSide
// and toSide), routed when elbow. An edge from a node to itself runs from
// the middle of its right side to the middle of its top.
func computedPoints(a, b *canvas.Node, fromSide, toSide string, elbow bool) []pt {
	ca, cb := centre(a), centre(b)
	if a.ID == b.ID && fromSide == "" && toSide == "" {
		fromSide, toSide = "right", "top"
	}
	if elbow && fromSide == "" && toSide == "" && a.ID != b.ID {
		if math.Abs(cb.x-ca.x) >= math.Abs(cb.y-ca.y) {
			fromSide, toSide = "right", "left"
			if cb.x < ca.x {
				fromSide, toSide = "left", "right"
			}
		} else {
			fromSide, toSide = "bottom", "top"
			if cb.y < ca.y {
				fromSide, toSide = "top", "bottom"
			}
		}
	}
	s, e := outlinePoint(a, cb), outlinePoint(b, ca)
	if fromSide != "" {
		s = sideMiddle(a, fromSide)
	}
	if toSide != "" {
		e = sideMiddle(b, toSide)
	}
	if elbow {
		return route(s, e, fromSide)
	}
	return []pt{s, e}
}

// pointsOf returns the page points of an edge's props.points; ok is false
// when it has none (or they are not a list of points).
func pointsOf(props map[string]any) ([]pt, bool) {
	a, ok := props[pointsProp].([]any)
	if !ok || len(a) < 2 {
		return nil, false
	}
	out := make([]pt, len(a))
	for i, x := range a {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, false
		}
		px, okx := canvas.NumberValue(m["x"])
		py, oky := canvas.NumberValue(m["y"])
		if !okx || !oky {
			return nil, false
		}
		out[i] = pt{px, py}
	}
	return out, true
}

// pointsValue returns pts as props hold them: [{x, y}] with numbers as the
// log keeps them (json.Number), rounded to a millionth of a unit.
func pointsValue(pts []pt) []any {
	out := make([]any, len(pts))
	round := func(f float64) json.Number {
		r := math.Round(f*1e6) / 1e6
		if !finite(r) {
			r = f
		}
		return canvas.Num(r + 0) // + 0: no -0
	}
	for i, p := range pts {
		out[i] = map[string]any{"x": round(p.x), "y": round(p.y)}
	}
	return out
}

// withPoints returns a copy of props (top level) with points set to pts.
func withPoints(props map[string]any, pts []pt) map[string]any {
	out := make(map[string]any, len(props)+1)
	for k, v := range props {
		out[k] = v
	}
	out[pointsProp] = pointsValue(pts)
	return out
}

func propString(props map[string]any, key string) string {
	s, _ := props[key].(string)
	return s
}

// placement is how placeEdge treats an edge's points.
type placement int

const (
	keepPoints    placement = iota // bound ends far from their nodes move onto them (an elbow edge is then routed again); the rest stays
	reroutePoints                  // also route an elbow edge again
	newPoints                      // compute the path anew (both ends bound)
)

// placeEdge sets the points of working edge e (a private copy) against the
// current boxes of its nodes, as create_edge and update_edge leave them (see
// placement), and marks e placed so that keepEdgesBound leaves it. field
// names props.points in errors.
func (t *tx) placeEdge(e *canvas.Edge, how placement, field string) error {
	pts, has := pointsOf(e.Props)
	from, fromOK := t.getNode(e.From)
	to, toOK := t.getNode(e.To)
	fromSide, toSide := propString(e.Props, fromSideProp), propString(e.Props, toSideProp)
	elbow := propString(e.Props, routingProp) == "elbow"
	switch {
	case !has || how == newPoints:
		if !fromOK || !toOK {
			return canvas.Unprocessable(field, "is required: an edge with a free end (from or to \"\") needs its path, 2 or more points {x, y} in page coordinates, the from end first")
		}
		pts = computedPoints(from, to, fromSide, toSide, elbow)
	default:
		given := pts
		pts = slices.Clone(pts)
		n := len(pts)
		if fromOK {
			pts[0] = boundEnd(from, pts[0], pts[1], fromSide)
		}
		if toOK {
			pts[n-1] = boundEnd(to, pts[n-1], pts[n-2], toSide)
		}
		if elbow && (how == reroutePoints || pts[0] != given[0] || pts[n-1] != given[n-1]) {
			pts = route(pts[0], pts[n-1], fromSide)
		}
	}
	if !finitePoints(pts) {
		t.badEdge = e.ID
		return nil
	}
	if old, _ := pointsOf(e.Props); !slices.Equal(old, pts) || !has {
		e.Props = withPoints(e.Props, pts)
	}
	if t.placed == nil {
		t.placed = make(map[string]bool, 2)
	}
	t.placed[e.ID] = true
	return nil
}

// boundEnd returns where an end given at p, bound to node n, lies: the
// middle of side when one is named, p when it is on or near n's box, else
// where the line from n's middle towards next (the neighbouring point)
// leaves n's outline.
func boundEnd(n *canvas.Node, p, next pt, side string) pt {
	switch {
	case side != "":
		return sideMiddle(n, side)
	case anchorOf(n, p).near():
		return p
	}
	return outlinePoint(n, next)
}

// finitePoints reports whether every coordinate of pts is a finite number.
func finitePoints(pts []pt) bool {
	for _, p := range pts {
		if !finite(p.x, p.y) {
			return false
		}
	}
	return true
}

// boxChanged reports whether a and b differ in position, size or rotation.
func boxChanged(a, b *canvas.Node) bool {
	return a.X != b.X || a.Y != b.Y || a.W != b.W || a.H != b.H || a.Rotation != b.Rotation
}

// keepEdgesBound moves the bound ends of every edge of a node whose box
// this command changed (all but the edges placeEdge set), as the package
// comment says. It costs the changed nodes and their edges.
func (t *tx) keepEdgesBound() {
	var moved map[string]bool
	for _, ref := range t.order {
		if ref.Kind != canvas.KindNode {
			continue
		}
		o, existed := t.s.Nodes[ref.ID]
		n := t.nodes[ref.ID]
		if existed && n != nil && boxChanged(o, n) {
			if moved == nil {
				moved = make(map[string]bool, 4)
			}
			moved[ref.ID] = true
		}
	}
	if len(moved) == 0 {
		return
	}
	var ids []string
	for id := range moved {
		ids = append(ids, t.s.EdgesOf(id)...)
	}
	for id, e := range t.edges {
		if e != nil && (moved[e.From] || moved[e.To]) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for _, id := range ids {
		e, ok := t.getEdge(id)
		if !ok || t.placed[id] {
			continue
		}
		pts, ok := t.followNodes(e, moved)
		if !ok {
			continue
		}
		if old, _ := pointsOf(e.Props); slices.Equal(old, pts) {
			continue
		}
		if !finitePoints(pts) {
			t.badEdge = id
			return
		}
		m := t.editEdge(id)
		m.Props = withPoints(m.Props, pts)
	}
}

// followNodes returns e's points after its nodes in moved changed their
// boxes (from the state's to the working ones); ok is false when e has no
// points and cannot get any.
func (t *tx) followNodes(e *canvas.Edge, moved map[string]bool) ([]pt, bool) {
	pts, has := pointsOf(e.Props)
	fromSide, toSide := propString(e.Props, fromSideProp), propString(e.Props, toSideProp)
	elbow := propString(e.Props, routingProp) == "elbow"
	from, fromOK := t.getNode(e.From)
	to, toOK := t.getNode(e.To)
	if !has {
		if !fromOK || !toOK {
			return nil, false
		}
		return computedPoints(from, to, fromSide, toSide, elbow), true
	}
	n := len(pts)
	out := slices.Clone(pts)
	var dFrom, dTo pt
	var pureFrom, pureTo bool
	if fromOK && moved[e.From] {
		old := t.s.Nodes[e.From]
		out[0] = followEnd(old, from, pts[0], fromSide)
		dFrom, pureFrom = translation(old, from)
	}
	if toOK && moved[e.To] {
		old := t.s.Nodes[e.To]
		out[n-1] = followEnd(old, to, pts[n-1], toSide)
		dTo, pureTo = translation(old, to)
	}
	switch {
	case elbow:
		return route(out[0], out[n-1], fromSide), true
	case n > 2 && pureFrom && pureTo && dFrom == dTo:
		for i := 1; i < n-1; i++ {
			out[i] = pt{pts[i].x + dFrom.x, pts[i].y + dFrom.y}
		}
	}
	return out, true
}

// followEnd returns where an end at p on node old lies on the node as it
// is now (nw).
func followEnd(old, nw *canvas.Node, p pt, side string) pt {
	if side != "" {
		return sideMiddle(nw, side)
	}
	return anchorOf(old, p).at(nw)
}

// translation returns the offset from a to b when b is a moved without a
// change of size or rotation (pure).
func translation(a, b *canvas.Node) (pt, bool) {
	return pt{b.X - a.X, b.Y - a.Y}, a.W == b.W && a.H == b.H && a.Rotation == b.Rotation
}

// checkEdgeType checks an edge's type: a label of up to maxEdgeTypeLen
// characters on one line.
func checkEdgeType(typ string) error {
	if len(typ) > maxEdgeTypeLen || strings.ContainsAny(typ, "\r\n\x00") {
		return canvas.Unprocessable("args.type", "must be at most %d characters on one line", maxEdgeTypeLen)
	}
	return nil
}
