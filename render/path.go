package render

import (
	"math"
	"strconv"
)

// pt is a point in page coordinates (or device pixels once transformed).
type pt struct{ X, Y float64 }

func (a pt) add(b pt) pt             { return pt{a.X + b.X, a.Y + b.Y} }
func (a pt) sub(b pt) pt             { return pt{a.X - b.X, a.Y - b.Y} }
func (a pt) mul(k float64) pt        { return pt{a.X * k, a.Y * k} }
func (a pt) len() float64            { return math.Hypot(a.X, a.Y) }
func (a pt) lerp(b pt, t float64) pt { return pt{a.X + (b.X-a.X)*t, a.Y + (b.Y-a.Y)*t} }

// unit returns a scaled to length 1 (or zero).
func (a pt) unit() pt {
	l := a.len()
	if l == 0 {
		return pt{}
	}
	return pt{a.X / l, a.Y / l}
}

// rect is an axis-aligned box.
type rect struct{ X, Y, W, H float64 }

// union is the smallest box holding both (an empty box holds nothing).
func (r rect) union(o rect) rect {
	if r.W < 0 || r.H < 0 {
		return o
	}
	if o.W < 0 || o.H < 0 {
		return r
	}
	x0, y0 := math.Min(r.X, o.X), math.Min(r.Y, o.Y)
	x1, y1 := math.Max(r.X+r.W, o.X+o.W), math.Max(r.Y+r.H, o.Y+o.H)
	return rect{x0, y0, x1 - x0, y1 - y0}
}

func (r rect) intersects(o rect) bool {
	return r.X <= o.X+o.W && o.X <= r.X+r.W && r.Y <= o.Y+o.H && o.Y <= r.Y+r.H
}

func (r rect) grow(d float64) rect { return rect{r.X - d, r.Y - d, r.W + 2*d, r.H + 2*d} }

// noRect is the empty union.
var noRect = rect{W: -1, H: -1}

// bboxOf is the box of points.
func bboxOf(ps []pt) rect {
	r := noRect
	for _, p := range ps {
		r = r.union(rect{p.X, p.Y, 0, 0})
	}
	return r
}

type opKind uint8

const (
	opMove opKind = iota
	opLine
	opCubic
	opClose
)

// op is one path command: a move or line to p[0], or a cubic Bézier through
// the controls p[0], p[1] to p[2].
type op struct {
	k opKind
	p [3]pt
}

// path is a vector path in page coordinates.
type path struct{ ops []op }

func (p *path) moveTo(a pt) { p.ops = append(p.ops, op{k: opMove, p: [3]pt{a}}) }
func (p *path) lineTo(a pt) { p.ops = append(p.ops, op{k: opLine, p: [3]pt{a}}) }
func (p *path) cubeTo(b, c, d pt) {
	p.ops = append(p.ops, op{k: opCubic, p: [3]pt{b, c, d}})
}
func (p *path) close() { p.ops = append(p.ops, op{k: opClose}) }

// quadTo adds a quadratic Bézier from the current point through b to c.
func (p *path) quadTo(b, c pt) {
	a := p.current()
	p.cubeTo(a.add(b.sub(a).mul(2.0/3)), c.add(b.sub(c).mul(2.0/3)), c)
}

// current is the pen position.
func (p *path) current() pt {
	start := pt{}
	for i := len(p.ops) - 1; i >= 0; i-- {
		switch p.ops[i].k {
		case opMove, opLine:
			return p.ops[i].p[0]
		case opCubic:
			return p.ops[i].p[2]
		case opClose:
			for j := i - 1; j >= 0; j-- {
				if p.ops[j].k == opMove {
					return p.ops[j].p[0]
				}
			}
			return start
		}
	}
	return start
}

// polygon adds a polyline, closed when closed.
func (p *path) polygon(ps []pt, closed bool) {
	for i, q := range ps {
		if i == 0 {
			p.moveTo(q)
		} else {
			p.lineTo(q)
		}
	}
	if closed && len(ps) > 0 {
		p.close()
	}
}

// kappa places the controls of a cubic quarter circle.
const kappa = 0.5522847498

// ellipse adds the ellipse in the box (x, y, w, h).
func (p *path) ellipse(x, y, w, h float64) {
	rx, ry := w/2, h/2
	cx, cy := x+rx, y+ry
	kx, ky := rx*kappa, ry*kappa
	p.moveTo(pt{cx + rx, cy})
	p.cubeTo(pt{cx + rx, cy + ky}, pt{cx + kx, cy + ry}, pt{cx, cy + ry})
	p.cubeTo(pt{cx - kx, cy + ry}, pt{cx - rx, cy + ky}, pt{cx - rx, cy})
	p.cubeTo(pt{cx - rx, cy - ky}, pt{cx - kx, cy - ry}, pt{cx, cy - ry})
	p.cubeTo(pt{cx + kx, cy - ry}, pt{cx + rx, cy - ky}, pt{cx + rx, cy})
	p.close()
}

// roundRect adds the box (x, y, w, h) with corners of radius r.
func (p *path) roundRect(x, y, w, h, r float64) {
	r = math.Max(0, math.Min(r, math.Min(w, h)/2))
	if r == 0 {
		p.polygon([]pt{{x, y}, {x + w, y}, {x + w, y + h}, {x, y + h}}, true)
		return
	}
	k := r * (1 - kappa)
	p.moveTo(pt{x + r, y})
	p.lineTo(pt{x + w - r, y})
	p.cubeTo(pt{x + w - k, y}, pt{x + w, y + k}, pt{x + w, y + r})
	p.lineTo(pt{x + w, y + h - r})
	p.cubeTo(pt{x + w, y + h - k}, pt{x + w - k, y + h}, pt{x + w - r, y + h})
	p.lineTo(pt{x + r, y + h})
	p.cubeTo(pt{x + k, y + h}, pt{x, y + h - k}, pt{x, y + h - r})
	p.lineTo(pt{x, y + r})
	p.cubeTo(pt{x, y + k}, pt{x + k, y}, pt{x + r, y})
	p.close()
}

// transformed returns the path with every point mapped by f (an affine map).
func (p *path) transformed(f func(pt) pt) *path {
	out := &path{ops: make([]op, len(p.ops))}
	for i, o := range p.ops {
		out.ops[i].k = o.k
		switch o.k {
		case opMove, opLine:
			out.ops[i].p[0] = f(o.p[0])
		case opCubic:
			out.ops[i].p = [3]pt{f(o.p[0]), f(o.p[1]), f(o.p[2])}
		}
	}
	return out
}

// bounds is the box of the path's points and controls (a cubic lies inside
// the hull of its controls).
func (p *path) bounds() rect {
	r := noRect
	for _, o := range p.ops {
		n := 0
		switch o.k {
		case opMove, opLine:
			n = 1
		case opCubic:
			n = 3
		}
		for i := 0; i < n; i++ {
			r = r.union(rect{o.p[i].X, o.p[i].Y, 0, 0})
		}
	}
	return r
}

// polyline is a flattened subpath.
type polyline struct {
	pts    []pt
	closed bool
}

// flatten turns the path into polylines, mapping each point by f first
// (page → device) and dividing curves finely enough that no chord strays
// more than tol (device units) from its curve.
func (p *path) flatten(f func(pt) pt, tol float64) []polyline {
	var out []polyline
	var cur *polyline
	var pen pt
	for _, o := range p.ops {
		switch o.k {
		case opMove:
			out = append(out, polyline{})
			cur = &out[len(out)-1]
			pen = f(o.p[0])
			cur.pts = append(cur.pts, pen)
		case opLine:
			if cur == nil {
				out = append(out, polyline{pts: []pt{pen}})
				cur = &out[len(out)-1]
			}
			pen = f(o.p[0])
			cur.pts = append(cur.pts, pen)
		case opCubic:
			if cur == nil {
				out = append(out, polyline{pts: []pt{pen}})
				cur = &out[len(out)-1]
			}
			b, c, d := f(o.p[0]), f(o.p[1]), f(o.p[2])
			cur.pts = flattenCubic(cur.pts, pen, b, c, d, tol)
			pen = d
		case opClose:
			if cur != nil {
				cur.closed = true
				pen = cur.pts[0]
				cur = nil
			}
		}
	}
	return out
}

// flattenCubic appends the points of the cubic a b c d after a.
func flattenCubic(dst []pt, a, b, c, d pt, tol float64) []pt {
	// The second differences bound how far a chord strays from the curve.
	dd := math.Max(a.sub(b.mul(2)).add(c).len(), b.sub(c.mul(2)).add(d).len())
	n := int(math.Ceil(math.Sqrt(dd * 0.75 / math.Max(tol, 1e-3))))
	if n < 1 {
		n = 1
	}
	if n > 256 {
		n = 256
	}
	for i := 1; i <= n; i++ {
		t := float64(i) / float64(n)
		u := 1 - t
		dst = append(dst, pt{
			u*u*u*a.X + 3*u*u*t*b.X + 3*u*t*t*c.X + t*t*t*d.X,
			u*u*u*a.Y + 3*u*u*t*b.Y + 3*u*t*t*c.Y + t*t*t*d.Y,
		})
	}
	return dst
}

// svgD writes the path as SVG path data.
func (p *path) svgD() string {
	b := make([]byte, 0, 16*len(p.ops))
	num := func(v float64) {
		b = strconv.AppendFloat(b, math.Round(v*100)/100, 'f', -1, 64)
	}
	pair := func(q pt) {
		num(q.X)
		b = append(b, ' ')
		num(q.Y)
	}
	for _, o := range p.ops {
		switch o.k {
		case opMove:
			b = append(b, 'M')
			pair(o.p[0])
		case opLine:
			b = append(b, 'L')
			pair(o.p[0])
		case opCubic:
			b = append(b, 'C')
			pair(o.p[0])
			b = append(b, ' ')
			pair(o.p[1])
			b = append(b, ' ')
			pair(o.p[2])
		case opClose:
			b = append(b, 'Z')
		}
	}
	return string(b)
}

// catmullRom adds a smooth curve through ps (a centripetal-free uniform
// Catmull-Rom spline as cubic Béziers), starting with a move to ps[0].
func (p *path) catmullRom(ps []pt, closed bool) {
	n := len(ps)
	if n < 3 {
		p.polygon(ps, closed)
		return
	}
	at := func(i int) pt {
		if closed {
			return ps[((i%n)+n)%n]
		}
		return ps[max(0, min(n-1, i))]
	}
	p.moveTo(ps[0])
	segs := n - 1
	if closed {
		segs = n
	}
	for i := 0; i < segs; i++ {
		p0, p1, p2, p3 := at(i-1), at(i), at(i+1), at(i+2)
		p.cubeTo(p1.add(p2.sub(p0).mul(1.0/6)), p2.sub(p3.sub(p1).mul(1.0/6)), p2)
	}
	if closed {
		p.close()
	}
}
