package render

import "math"

// stroker turns polylines into the polygons of their strokes: a quad per
// segment, a disc (or, for a slight turn, a wedge) at each joint and round
// caps. Every polygon it makes winds the same way (the way a glyph's outer
// contour winds), so where they overlap each other or a label's glyphs the
// rasterizer counts them once.
type stroker struct {
	f     *feeder
	hw    float64 // half the stroke width, device pixels
	round bool    // round caps and joins; else butt caps and bevel joins
}

// polyline strokes pts (device pixels).
func (s *stroker) polyline(pts []pt, closed bool) {
	// Drop repeated points: they have no direction.
	q := make([]pt, 0, len(pts))
	for _, p := range pts {
		if len(q) == 0 || p.sub(q[len(q)-1]).len() > 1e-3 {
			q = append(q, p)
		}
	}
	if closed && len(q) > 2 && q[0].sub(q[len(q)-1]).len() <= 1e-3 {
		q = q[:len(q)-1]
	}
	if len(q) == 1 {
		if s.round {
			s.disc(q[0])
		}
		return
	}
	n := len(q)
	segs := n - 1
	if closed && n > 2 {
		segs = n
	}
	for i := 0; i < segs; i++ {
		a, b := q[i], q[(i+1)%n]
		d := b.sub(a).unit()
		nrm := pt{-d.Y * s.hw, d.X * s.hw}
		s.f.polygon([]pt{a.sub(nrm), b.sub(nrm), b.add(nrm), a.add(nrm)})
	}
	// Joints.
	for i := 0; i < n; i++ {
		if !closed && (i == 0 || i == n-1) {
			continue
		}
		if closed && n <= 2 {
			continue
		}
		prev, v, next := q[(i+n-1)%n], q[i], q[(i+1)%n]
		d1, d2 := v.sub(prev).unit(), next.sub(v).unit()
		if d1.X*d2.X+d1.Y*d2.Y > 0.94 || !s.round { // under about 20°: a wedge covers it
			n1 := pt{-d1.Y * s.hw, d1.X * s.hw}
			n2 := pt{-d2.Y * s.hw, d2.X * s.hw}
			s.triangle(v, v.add(n1), v.add(n2))
			s.triangle(v, v.sub(n1), v.sub(n2))
			continue
		}
		s.disc(v)
	}
	if !closed && s.round {
		s.disc(q[0])
		s.disc(q[n-1])
	}
}

// triangle adds a triangle wound as the stroker's quads are.
func (s *stroker) triangle(a, b, c pt) {
	area := (b.X-a.X)*(c.Y-a.Y) - (c.X-a.X)*(b.Y-a.Y)
	if math.Abs(area) < 1e-9 {
		return
	}
	if area < 0 {
		b, c = c, b
	}
	s.f.polygon([]pt{a, b, c})
}

// disc adds a disc of the stroke's width at c, wound as the quads are.
func (s *stroker) disc(c pt) {
	k := int(math.Ceil(s.hw * 2))
	k = max(8, min(k, 64))
	var buf [64]pt
	pts := buf[:k]
	for i := range pts {
		a := 2 * math.Pi * float64(i) / float64(k)
		pts[i] = pt{c.X + s.hw*math.Cos(a), c.Y + s.hw*math.Sin(a)}
	}
	s.f.polygon(pts)
}

// dashes cuts a polyline into its dashes: pattern alternates on and off
// lengths in page units, scale converts them to device pixels.
func dashes(pl polyline, pattern []float64, scale float64) [][]pt {
	pts := pl.pts
	if pl.closed && len(pts) > 1 {
		pts = append(pts[:len(pts):len(pts)], pts[0])
	}
	total := 0.0
	for _, v := range pattern {
		total += v
	}
	if total <= 0 || len(pts) < 2 {
		return [][]pt{pts}
	}
	var out [][]pt
	idx, left, on := 0, pattern[0]*scale, true
	var cur []pt
	if on {
		cur = []pt{pts[0]}
	}
	const most = 200000 // a pattern tiny next to its path: stop cutting
	for i := 1; i < len(pts) && len(out) < most; i++ {
		a, b := pts[i-1], pts[i]
		l := b.sub(a).len()
		pos := 0.0
		for l-pos > left && len(out) < most {
			pos += left
			p := a.lerp(b, pos/l)
			if on {
				cur = append(cur, p)
				out = append(out, cur)
				cur = nil
			} else {
				cur = []pt{p}
			}
			on = !on
			idx = (idx + 1) % len(pattern)
			left = math.Max(pattern[idx]*scale, 0.01)
		}
		left -= l - pos
		if on {
			cur = append(cur, b)
		}
	}
	if on && len(cur) > 1 {
		out = append(out, cur)
	}
	return out
}
