package render

import "math"

// Arrowheads lists the heads an edge end may have (docs/model.md).
var Arrowheads = []string{"none", "arrow", "triangle", "triangle-outline", "dot", "circle-outline",
	"diamond", "diamond-outline", "bar", "square", "pipe", "inverted", "crowfoot-one",
	"crowfoot-many", "crowfoot-one-or-many"}

// head is an arrowhead's shapes: filled is drawn filled with the stroke
// colour (and outlined), hollow is filled with the background and
// outlined, lines are stroked only.
type head struct {
	filled, hollow, lines *path
}

// arrowhead builds the head kind at tip, the line arriving along dir (a
// unit vector pointing at the tip), for a stroke of width sw on an edge of
// length length (a head is never longer than half of it).
func arrowhead(kind string, tip, dir pt, sw, length float64) head {
	if kind == "" || kind == "none" || dir == (pt{}) {
		return head{}
	}
	k := math.Max(0.75, 1+(sw-2)/8) // thicker strokes, larger heads
	capLen := func(size, frac float64) float64 {
		return math.Min(size*k, math.Max(length*frac, 1))
	}
	back := pt{-dir.X, -dir.Y}
	side := pt{-dir.Y, dir.X}
	at := func(along, across float64) pt { return tip.add(back.mul(along)).add(side.mul(across)) }
	var h head
	switch kind {
	case "arrow":
		l := capLen(25, 0.5)
		a := l * math.Tan(20*math.Pi/180)
		h.lines = &path{}
		h.lines.polygon([]pt{at(l, a), tip, at(l, -a)}, false)
	case "triangle", "triangle-outline":
		l := capLen(15, 0.5)
		a := l * math.Tan(25*math.Pi/180)
		p := &path{}
		p.polygon([]pt{tip, at(l, a), at(l, -a)}, true)
		if kind == "triangle" {
			h.filled = p
		} else {
			h.hollow = p
		}
	case "inverted":
		l := capLen(15, 0.5)
		a := l * math.Tan(25*math.Pi/180)
		h.filled = &path{}
		h.filled.polygon([]pt{at(l, 0), at(0, a), at(0, -a)}, true)
	case "dot", "circle-outline":
		d := capLen(15, 0.5)
		c := at(d/2, 0)
		p := &path{}
		p.ellipse(c.X-d/2, c.Y-d/2, d, d)
		if kind == "dot" {
			h.filled = p
		} else {
			h.hollow = p
		}
	case "diamond", "diamond-outline":
		l := capLen(24, 0.25)
		a := l * 0.3
		p := &path{}
		p.polygon([]pt{tip, at(l/2, a), at(l, 0), at(l/2, -a)}, true)
		if kind == "diamond" {
			h.filled = p
		} else {
			h.hollow = p
		}
	case "square":
		s := capLen(10, 0.5)
		h.filled = &path{}
		h.filled.polygon([]pt{at(0, s/2), at(s, s/2), at(s, -s/2), at(0, -s/2)}, true)
	case "bar", "pipe":
		a := 10 * k
		h.lines = &path{}
		h.lines.polygon([]pt{at(0, a), at(0, -a)}, false)
	case "crowfoot-one", "crowfoot-many", "crowfoot-one-or-many":
		l := capLen(15, 0.5)
		a := 10 * k
		h.lines = &path{}
		if kind != "crowfoot-many" {
			bar := l
			if kind == "crowfoot-one" {
				bar = l * 0.5
			}
			h.lines.polygon([]pt{at(bar, a), at(bar, -a)}, false)
		}
		if kind != "crowfoot-one" {
			h.lines.polygon([]pt{at(0, a), at(l*0.6, 0), at(0, -a)}, false)
			h.lines.polygon([]pt{at(l*0.6, 0), tip}, false)
		}
	}
	return h
}

// pathLength is the length of flattened polylines.
func pathLength(pls []polyline) float64 {
	l := 0.0
	for _, pl := range pls {
		for i := 1; i < len(pl.pts); i++ {
			l += pl.pts[i].sub(pl.pts[i-1]).len()
		}
	}
	return l
}

// pointAtLength is the point at distance d along the polylines, and the
// direction there.
func pointAtLength(pls []polyline, d float64) (pt, pt) {
	var last, dir pt
	for _, pl := range pls {
		for i := 1; i < len(pl.pts); i++ {
			seg := pl.pts[i].sub(pl.pts[i-1])
			l := seg.len()
			if l > 0 {
				dir = seg.mul(1 / l)
			}
			if d <= l && l > 0 {
				return pl.pts[i-1].lerp(pl.pts[i], d/l), dir
			}
			d -= l
			last = pl.pts[i]
		}
	}
	return last, dir
}
