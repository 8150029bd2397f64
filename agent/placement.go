package agent

import (
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/canvasd/canvasd/canvas"
)

// Placement: what an agent creates goes into free space. The shapes of the
// canvas that the session did not create are obstacles; a create that would
// overlap one moves to the nearest free position, and the move becomes the
// reply's coordinate offset, applied to its later creates too, so that a
// composition moves as a whole. The offset ends with the turn: the next
// turn's model sees the canvas as it is (the moved shapes where they landed)
// and its coordinates need no shift. Moving or updating existing shapes is
// the model's choice and is never corrected (the lints report what it
// causes).

// placeGap is the space kept between new content and obstacles.
const placeGap = 24

// rect is an axis-aligned box in page coordinates.
type rect struct{ x0, y0, x1, y1 float64 }

func (r rect) w() float64 { return r.x1 - r.x0 }
func (r rect) h() float64 { return r.y1 - r.y0 }

// overlaps reports whether r and o share an area (touching is not overlapping).
func (r rect) overlaps(o rect) bool {
	return r.x0 < o.x1 && o.x0 < r.x1 && r.y0 < o.y1 && o.y0 < r.y1
}

func (r rect) at(x, y float64) rect { return rect{x, y, x + r.w(), y + r.h()} }

func boxRect(b Box) rect { return rect{b.X, b.Y, b.X + b.W, b.Y + b.H} }

// nodeRect is a node's page bounds (rotation included).
func nodeRect(n *canvas.Node) rect {
	if n.Rotation == 0 {
		return rect{n.X, n.Y, n.X + n.W, n.Y + n.H}
	}
	sin, cos := math.Sincos(n.Rotation)
	r := rect{n.X, n.Y, n.X, n.Y}
	for _, p := range [3][2]float64{{n.W, 0}, {0, n.H}, {n.W, n.H}} {
		x, y := n.X+p[0]*cos-p[1]*sin, n.Y+p[0]*sin+p[1]*cos
		r = rect{math.Min(r.x0, x), math.Min(r.y0, y), math.Max(r.x1, x), math.Max(r.y1, y)}
	}
	return r
}

// solid reports whether a node takes room on the canvas (connectors,
// groups and empty boxes do not).
func solid(typ string, r rect) bool {
	switch typ {
	case "arrow", "line", "group":
		return false
	}
	return r.w() > 0 && r.h() > 0
}

// placer keeps one session's new content in free space.
type placer struct {
	obstacles []rect
	placed    []rect                // the session's creates this turn: a moved create avoids them too
	own       map[string]bool       // shapes the session created
	moved     map[string]bool       // shapes placement moved
	dx, dy    float64               // this turn's coordinate offset
	shifted   map[string][2]float64 // this turn's creates that placement moved, by how much: their children follow
}

func newPlacer() *placer {
	return &placer{own: map[string]bool{}, moved: map[string]bool{}, shifted: map[string][2]float64{}}
}

// reset takes the obstacles of a turn: the solid shapes the session did not
// create. The previous turn's offset is dropped: this turn's model placed its
// creates from the canvas as it is now.
func (p *placer) reset(nodes []*canvas.Node) {
	p.obstacles, p.placed = p.obstacles[:0], p.placed[:0]
	p.dx, p.dy = 0, 0
	clear(p.shifted)
	for _, n := range nodes {
		if r := nodeRect(n); !p.own[n.ID] && solid(n.Type, r) {
			p.obstacles = append(p.obstacles, r)
		}
	}
}

// place moves a sanitized create_shape (params x, y, w, h) by the turn's
// offset and, if it then overlaps an obstacle, to the nearest free position
// (updating the offset). A create inside a parent (a frame or group) moves
// as its parent did if the parent is one of this reply's moved creates, and
// stays as it is otherwise; connectors only take the offset.
func (p *placer) place(a Action) {
	if a.Name != "create_shape" {
		return
	}
	id, _ := a.Params["id"].(string)
	p.own[id] = true
	x, _ := a.Params["x"].(float64)
	y, _ := a.Params["y"].(float64)
	if parent, inParent := a.Params["parent_id"]; inParent {
		pid, _ := parent.(string)
		if d, ok := p.shifted[pid]; ok {
			a.Params["x"], a.Params["y"] = clamp(x+d[0], -MaxCoord, MaxCoord), clamp(y+d[1], -MaxCoord, MaxCoord)
			p.shifted[id] = d
		}
		return
	}
	x0, y0 := x, y
	x, y = clamp(x+p.dx, -MaxCoord, MaxCoord), clamp(y+p.dy, -MaxCoord, MaxCoord)
	typ, _ := a.Params["type"].(string)
	r := createRect(typ, x, y, a.Params)
	if solid(typ, r) {
		if !p.free(r, false) {
			free := p.nearestFree(r, true)
			p.dx += free.x0 - r.x0
			p.dy += free.y0 - r.y0
			r = free
			p.moved[id] = true
		}
		p.placed = append(p.placed, r)
	}
	a.Params["x"], a.Params["y"] = r.x0, r.y0
	if r.x0 != x0 || r.y0 != y0 {
		p.shifted[id] = [2]float64{r.x0 - x0, r.y0 - y0}
	}
}

// free reports whether r overlaps no obstacle (and, with own, none of the
// session's creates of this turn).
func (p *placer) free(r rect, own bool) bool {
	for _, o := range p.obstacles {
		if r.overlaps(o) {
			return false
		}
	}
	if own {
		for _, o := range p.placed {
			if r.overlaps(o) {
				return false
			}
		}
	}
	return true
}

// nearestFree returns r itself when it is free, else the free position
// nearest to it among those beside an obstacle near it (left, right, above,
// below, and their combinations), else a position below every obstacle.
// Moves up or left count half again as far: a composition grows right and
// down from its first shape, so moving that way keeps room for the rest.
// With own, the session's creates of this turn are obstacles too.
func (p *placer) nearestFree(r rect, own bool) rect {
	if p.free(r, own) {
		return r
	}
	// Obstacles near r matter; bound the search to the nearest 100.
	reach := math.Max(r.w(), r.h()) + 2000
	var near []rect
	all := p.obstacles
	if own {
		all = append(append([]rect(nil), p.obstacles...), p.placed...)
	}
	for _, o := range all {
		if o.x1 >= r.x0-reach && o.x0 <= r.x1+reach && o.y1 >= r.y0-reach && o.y0 <= r.y1+reach {
			near = append(near, o)
		}
	}
	dist := func(o rect) float64 { return math.Hypot((o.x0+o.x1-r.x0-r.x1)/2, (o.y0+o.y1-r.y0-r.y1)/2) }
	sort.Slice(near, func(i, j int) bool { return dist(near[i]) < dist(near[j]) })
	if len(near) > 100 {
		near = near[:100]
	}
	xs, ys := []float64{r.x0}, []float64{r.y0}
	for _, o := range near {
		xs = append(xs, o.x1+placeGap, o.x0-r.w()-placeGap)
		ys = append(ys, o.y1+placeGap, o.y0-r.h()-placeGap)
	}
	type cand struct {
		r rect
		d float64
	}
	cands := make([]cand, 0, len(xs)*len(ys))
	cost := func(d float64) float64 {
		if d < 0 {
			return -1.5 * d
		}
		return d
	}
	for _, x := range xs {
		for _, y := range ys {
			cands = append(cands, cand{r.at(x, y), math.Hypot(cost(x-r.x0), cost(y-r.y0))})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].d != cands[j].d {
			return cands[i].d < cands[j].d
		}
		return cands[i].r.y0 < cands[j].r.y0 || cands[i].r.y0 == cands[j].r.y0 && cands[i].r.x0 < cands[j].r.x0
	})
	for _, c := range cands {
		if p.free(c.r, own) {
			return c.r
		}
	}
	bottom := r.y0
	for _, o := range all {
		bottom = math.Max(bottom, o.y1+placeGap)
	}
	return r.at(r.x0, bottom)
}

// freeSpace is a free box of the given size near the viewport, for the
// model to put new content in.
func (p *placer) freeSpace(vp Box, w, h float64) Box {
	r := p.nearestFree(rect{0, 0, w, h}.at(vp.X+(vp.W-w)/2, vp.Y+(vp.H-h)/2), false)
	return Box{X: r.x0, Y: r.y0, W: r.w(), H: r.h()}
}

// createRect is the box a create will occupy: its w and h, or the size the
// canvas gives such a shape (a text shape: its text at the default size).
func createRect(typ string, x, y float64, params map[string]any) rect {
	w, hasW := params["w"].(float64)
	h, hasH := params["h"].(float64)
	if !hasW || !hasH {
		dw, dh := 100.0, 100.0
		if typ == "note" {
			dw, dh = 200, 200
		}
		if typ == "text" {
			props, _ := params["props"].(map[string]any)
			text, _ := props["text"].(string)
			size, _ := props["size"].(string)
			fs := textFontSize(size)
			cols, lines := textExtent(text)
			dw, dh = math.Max(float64(cols)*fs*charWidth, fs), float64(lines)*fs*lineHeight
		}
		if !hasW {
			w = dw
		}
		if !hasH {
			h = dh
		}
	}
	return rect{x, y, x + w, y + h}
}

// Text metrics estimated for lints and placement (TLDraw's sans font).
const (
	charWidth  = 0.55 // average glyph width, in font sizes
	lineHeight = 1.35 // line height, in font sizes
	labelPad   = 16   // padding inside a geo or note shape
)

// textFontSize is the font size of a TLDraw size.
func textFontSize(size string) float64 {
	switch size {
	case "s":
		return 18
	case "l":
		return 36
	case "xl":
		return 44
	}
	return 24
}

// textExtent returns the longest line in characters and the line count.
func textExtent(text string) (cols, lines int) {
	lines = 1
	n := 0
	for _, r := range text {
		if r == '\n' {
			lines++
			n = 0
			continue
		}
		n++
		cols = max(cols, n)
	}
	return cols, lines
}

// wrappedHeight is the height text needs in a box of inner width inner,
// and whether a word is wider than it.
func wrappedHeight(text string, fs, inner float64) (height float64, wordTooWide bool) {
	cw := fs * charWidth
	lines := 0
	for _, para := range strings.Split(text, "\n") {
		width, n := 0.0, 1
		for _, word := range strings.Fields(para) {
			ww := float64(utf8.RuneCountInString(word)) * cw
			if ww > inner {
				wordTooWide = true
			}
			if width > 0 && width+cw+ww > inner {
				n++
				width = ww
				continue
			}
			if width > 0 {
				width += cw
			}
			width += ww
		}
		lines += n
	}
	return float64(lines) * fs * lineHeight, wordTooWide
}
