package render

import (
	"math"
	"sort"
)

// hatchLines returns the lines that fill outline (in the node's own
// coordinates) in a hachure style: parallel lines gap apart at angle
// degrees (Excalidraw's -41°), clipped to the outline (even-odd); zigzag
// turns each line into a zigzag.
func hatchLines(outline *path, gap, angle float64, zigzag bool) *path {
	out := &path{}
	if gap <= 0 {
		return out
	}
	id := func(p pt) pt { return p }
	polys := outline.flatten(id, 0.5)
	a := angle * math.Pi / 180
	sin, cos := math.Sin(a), math.Cos(a)
	// Rotate by -a so the lines are horizontal; rotate results back by a.
	toH := func(p pt) pt { return pt{p.X*cos + p.Y*sin, -p.X*sin + p.Y*cos} }
	back := func(p pt) pt { return pt{p.X*cos - p.Y*sin, p.X*sin + p.Y*cos} }
	var edges [][2]pt
	box := noRect
	for _, pl := range polys {
		n := len(pl.pts)
		for i := 0; i < n; i++ {
			p0, p1 := toH(pl.pts[i]), toH(pl.pts[(i+1)%n])
			edges = append(edges, [2]pt{p0, p1})
			box = box.union(rect{p0.X, p0.Y, 0, 0})
		}
	}
	if box.W < 0 || len(edges) > 200000 {
		return out
	}
	lines := int(box.H/gap) + 1
	if lines > 20000 {
		gap = box.H / 20000
		lines = 20000
	}
	xs := make([]float64, 0, 16)
	for i := 0; i < lines; i++ {
		y := box.Y + gap/2 + float64(i)*gap
		xs = xs[:0]
		for _, e := range edges {
			y0, y1 := e[0].Y, e[1].Y
			if (y0 <= y && y < y1) || (y1 <= y && y < y0) {
				t := (y - y0) / (y1 - y0)
				xs = append(xs, e[0].X+t*(e[1].X-e[0].X))
			}
		}
		sort.Float64s(xs)
		for j := 0; j+1 < len(xs); j += 2 {
			x0, x1 := xs[j], xs[j+1]
			if x1-x0 < 0.5 {
				continue
			}
			if !zigzag {
				out.polygon([]pt{back(pt{x0, y}), back(pt{x1, y})}, false)
				continue
			}
			pts := []pt{back(pt{x0, y})}
			up := true
			for x := x0 + gap/2; x < x1; x += gap / 2 {
				dy := gap / 2
				if up {
					dy = -dy
				}
				pts = append(pts, back(pt{x, y + dy}))
				up = !up
			}
			pts = append(pts, back(pt{x1, y}))
			out.polygon(pts, false)
		}
	}
	return out
}
