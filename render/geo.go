package render

import "math"

// Geos lists the geometries of a geo node (docs/model.md), each of which the
// renderer draws.
var Geos = []string{"rectangle", "ellipse", "triangle", "diamond", "pentagon", "hexagon", "octagon",
	"star", "rhombus", "rhombus-2", "oval", "trapezoid", "arrow-right", "arrow-left", "arrow-up",
	"arrow-down", "x-box", "check-box", "heart", "cloud"}

// cornerRadius is the radius Excalidraw gives a rounded box (its adaptive
// radius: a quarter of the shorter side, at most 32).
func cornerRadius(w, h float64) float64 {
	return math.Min(math.Min(w, h)*0.25, 32)
}

// geoOutline is the outline of a geo of size w×h in the node's own
// coordinates, and the strokes drawn inside it (x-box, check-box).
func geoOutline(geo string, w, h float64, round bool) (outline, inner *path) {
	p := &path{}
	reg := func(k int, start, innerR float64) []pt {
		pts := make([]pt, k)
		for i := range pts {
			r := 1.0
			if i%2 == 1 && innerR != 1 {
				r = innerR
			}
			a := start + float64(i)*2*math.Pi/float64(k)
			pts[i] = pt{w/2 + w/2*r*math.Cos(a), h/2 + h/2*r*math.Sin(a)}
		}
		return pts
	}
	switch geo {
	case "ellipse":
		p.ellipse(0, 0, w, h)
	case "oval":
		p.roundRect(0, 0, w, h, math.Min(w, h)/2)
	case "triangle":
		p.polygon([]pt{{w / 2, 0}, {w, h}, {0, h}}, true)
	case "diamond":
		p.polygon([]pt{{w / 2, 0}, {w, h / 2}, {w / 2, h}, {0, h / 2}}, true)
	case "rhombus", "rhombus-2":
		o := math.Min(w*0.38, h*0.38)
		if geo == "rhombus" {
			p.polygon([]pt{{o, 0}, {w, 0}, {w - o, h}, {0, h}}, true)
		} else {
			p.polygon([]pt{{0, 0}, {w - o, 0}, {w, h}, {o, h}}, true)
		}
	case "pentagon":
		p.polygon(reg(5, -math.Pi/2, 1), true)
	case "hexagon":
		p.polygon([]pt{{w * 0.25, 0}, {w * 0.75, 0}, {w, h / 2}, {w * 0.75, h}, {w * 0.25, h}, {0, h / 2}}, true)
	case "octagon":
		p.polygon(reg(8, -math.Pi/2+math.Pi/8, 1), true)
	case "star":
		p.polygon(reg(10, -math.Pi/2, 0.4), true)
	case "trapezoid":
		p.polygon([]pt{{w * 0.2, 0}, {w * 0.8, 0}, {w, h}, {0, h}}, true)
	case "arrow-right":
		p.polygon([]pt{{0, h * 0.25}, {w * 0.6, h * 0.25}, {w * 0.6, 0}, {w, h / 2}, {w * 0.6, h}, {w * 0.6, h * 0.75}, {0, h * 0.75}}, true)
	case "arrow-left":
		p.polygon([]pt{{w, h * 0.25}, {w * 0.4, h * 0.25}, {w * 0.4, 0}, {0, h / 2}, {w * 0.4, h}, {w * 0.4, h * 0.75}, {w, h * 0.75}}, true)
	case "arrow-up":
		p.polygon([]pt{{w * 0.25, h}, {w * 0.25, h * 0.4}, {0, h * 0.4}, {w / 2, 0}, {w, h * 0.4}, {w * 0.75, h * 0.4}, {w * 0.75, h}}, true)
	case "arrow-down":
		p.polygon([]pt{{w * 0.25, 0}, {w * 0.25, h * 0.6}, {0, h * 0.6}, {w / 2, h}, {w, h * 0.6}, {w * 0.75, h * 0.6}, {w * 0.75, 0}}, true)
	case "heart":
		p.moveTo(pt{w / 2, h * 0.3})
		p.cubeTo(pt{w * 0.5, h * 0.05}, pt{w * 0.05, h * -0.05}, pt{0, h * 0.3})
		p.cubeTo(pt{w * -0.05, h * 0.6}, pt{w * 0.35, h * 0.8}, pt{w / 2, h})
		p.cubeTo(pt{w * 0.65, h * 0.8}, pt{w * 1.05, h * 0.6}, pt{w, h * 0.3})
		p.cubeTo(pt{w * 0.95, h * -0.05}, pt{w * 0.5, h * 0.05}, pt{w / 2, h * 0.3})
		p.close()
	case "cloud":
		cloud(p, w, h)
	case "x-box", "check-box":
		if round {
			p.roundRect(0, 0, w, h, cornerRadius(w, h))
		} else {
			p.roundRect(0, 0, w, h, 0)
		}
		inner = &path{}
		if geo == "x-box" {
			inner.polygon([]pt{{0, 0}, {w, h}}, false)
			inner.polygon([]pt{{w, 0}, {0, h}}, false)
		} else {
			inner.polygon([]pt{{w * 0.25, h * 0.52}, {w * 0.45, h * 0.72}, {w * 0.78, h * 0.3}}, false)
		}
	default: // rectangle
		if round {
			p.roundRect(0, 0, w, h, cornerRadius(w, h))
		} else {
			p.roundRect(0, 0, w, h, 0)
		}
	}
	return p, inner
}

// cloud adds a cloud in the box w×h: bumps around an ellipse.
func cloud(p *path, w, h float64) {
	const bumps = 9
	cx, cy := w/2, h/2
	rx, ry := w/2*0.82, h/2*0.78
	at := func(i int) pt {
		a := -math.Pi/2 + float64(i)*2*math.Pi/bumps
		return pt{cx + rx*math.Cos(a), cy + ry*math.Sin(a)}
	}
	p.moveTo(at(0))
	for i := 0; i < bumps; i++ {
		a, b := at(i), at(i+1)
		m := a.lerp(b, 0.5)
		out := m.sub(pt{cx, cy})
		// push the control outwards so the bump reaches the box
		k := 1 + 0.55*b.sub(a).len()/math.Max(out.len(), 1)
		c := pt{cx, cy}.add(out.mul(k))
		c.X = math.Max(-w*0.02, math.Min(w*1.02, c.X))
		c.Y = math.Max(-h*0.02, math.Min(h*1.02, c.Y))
		p.quadTo(c, b)
	}
	p.close()
}

// GeoOutline is the outline of a geo of size w×h as a closed polygon in the
// node's own coordinates (curves flattened, the first point repeated last),
// for formats that draw a geometry as a polygon.
func GeoOutline(geo string, w, h float64) [][2]float64 {
	outline, _ := geoOutline(geo, w, h, false)
	pls := outline.flatten(func(p pt) pt { return p }, 0.5)
	if len(pls) == 0 || len(pls[0].pts) == 0 {
		return nil
	}
	var out [][2]float64 // the first polyline, closed
	for _, p := range pls[0].pts {
		out = append(out, [2]float64{p.X, p.Y})
	}
	return append(out, [2]float64{pls[0].pts[0].X, pls[0].pts[0].Y})
}
