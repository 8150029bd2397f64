package reducer

import (
	"math"

	"github.com/canvasd/canvasd/canvas"
)

const (
	twoPi = 2 * math.Pi
	// snapEpsilon: rotations this close to a multiple of π/2 snap to it, so
	// four quarter turns give exactly 0 rather than 1e-16.
	snapEpsilon = 1e-9
)

// quarterTurn returns k·π/2 for k in 0..3.
func quarterTurn(k int) float64 {
	switch k {
	case 1:
		return math.Pi / 2
	case 2:
		return math.Pi
	case 3:
		return 3 * math.Pi / 2
	}
	return 0
}

// rect is an axis-aligned box in page coordinates.
type rect struct{ minX, minY, maxX, maxY float64 }

func (r rect) w() float64    { return r.maxX - r.minX }
func (r rect) h() float64    { return r.maxY - r.minY }
func (r rect) midX() float64 { return (r.minX + r.maxX) / 2 }
func (r rect) midY() float64 { return (r.minY + r.maxY) / 2 }
func (r rect) union(o rect) rect {
	return rect{math.Min(r.minX, o.minX), math.Min(r.minY, o.minY), math.Max(r.maxX, o.maxX), math.Max(r.maxY, o.maxY)}
}

// normRotation brings r into [0, 2π) and snaps near-quarter turns.
func normRotation(r float64) float64 {
	if r == 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return 0
	}
	r = math.Mod(r, twoPi)
	if r < 0 {
		r += twoPi
	}
	if math.Abs(r-twoPi) < snapEpsilon {
		return 0
	}
	for k := 0; k < 4; k++ {
		if q := quarterTurn(k); math.Abs(r-q) < snapEpsilon {
			return q
		}
	}
	return r
}

// sincos is math.Sincos, exact for normalized quarter turns.
func sincos(r float64) (sin, cos float64) {
	switch r {
	case 0:
		return 0, 1
	case math.Pi / 2:
		return 1, 0
	case math.Pi:
		return 0, -1
	case 3 * math.Pi / 2:
		return -1, 0
	}
	return math.Sincos(r)
}

// degreesToRadians converts degrees to a normalized angle in [0, 2π),
// exactly for multiples of 90.
func degreesToRadians(deg float64) float64 {
	if math.Mod(deg, 90) == 0 {
		k := int(math.Mod(deg/90, 4))
		if k < 0 {
			k += 4
		}
		return quarterTurn(k)
	}
	return normRotation(deg * math.Pi / 180)
}

// bounds is the page-space bounding box of n, rotated about its top-left corner.
func bounds(n *canvas.Node) rect {
	if n.Rotation == 0 {
		return rect{n.X, n.Y, n.X + n.W, n.Y + n.H}
	}
	s, c := sincos(n.Rotation)
	r := rect{n.X, n.Y, n.X, n.Y}
	for _, p := range [3][2]float64{{n.W, 0}, {0, n.H}, {n.W, n.H}} {
		x := n.X + p[0]*c - p[1]*s
		y := n.Y + p[0]*s + p[1]*c
		r = r.union(rect{x, y, x, y})
	}
	return r
}

// rotatePoint rotates (x, y) about (cx, cy) by the angle whose sine and cosine are s and c.
func rotatePoint(x, y, cx, cy, s, c float64) (float64, float64) {
	dx, dy := x-cx, y-cy
	return cx + dx*c - dy*s, cy + dx*s + dy*c
}

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

func isContainer(n *canvas.Node) bool { return n.Type == "group" || n.Type == "frame" }
