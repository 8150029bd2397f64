package render

import (
	"encoding/binary"
	"image"
	"image/color"
	"image/draw"
	"math"

	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/f64"
	"golang.org/x/image/vector"
)

// raster draws items into an RGBA image with golang.org/x/image/vector,
// the Go project's anti-aliasing rasterizer: fills directly, strokes as
// the polygons a stroker (stroke.go) makes of them, text as glyph outlines.
type raster struct {
	dst    *image.RGBA
	z      vector.Rasterizer
	mask   image.Alpha // the coverage of the item being drawn
	view   rect
	scale  float64
	glyphs map[glyphKey][][]pt // flattened outlines at a size, device pixels from the pen
	pts    []pt                // scratch
}

// glyphKey names a glyph's outline at a size in device pixels.
type glyphKey struct {
	face *Face
	idx  sfnt.GlyphIndex
	ppem float64
}

func newRaster(w, h int, view rect, scale float64) *raster {
	return &raster{dst: image.NewRGBA(image.Rect(0, 0, w, h)), view: view, scale: scale, glyphs: map[glyphKey][][]pt{}}
}

func (r *raster) fillWhite() {
	pix := r.dst.Pix
	if len(pix) == 0 {
		return
	}
	pix[0] = 0xff
	for n := 1; n < len(pix); n *= 2 {
		copy(pix[n:], pix[:n])
	}
}

// dev maps a page point to device pixels.
func (r *raster) dev(p pt) pt {
	return pt{(p.X - r.view.X) * r.scale, (p.Y - r.view.Y) * r.scale}
}

// area is the device rectangle to rasterize for a page box: the box's
// pixels within the image and the item's clip.
func (r *raster) area(box rect, clip *rect) image.Rectangle {
	a := r.dev(pt{box.X, box.Y})
	z := r.dev(pt{box.X + box.W, box.Y + box.H})
	out := image.Rect(int(math.Floor(a.X))-1, int(math.Floor(a.Y))-1, int(math.Ceil(z.X))+1, int(math.Ceil(z.Y))+1)
	out = out.Intersect(r.dst.Rect)
	if clip != nil {
		ca := r.dev(pt{clip.X, clip.Y})
		cz := r.dev(pt{clip.X + clip.W, clip.Y + clip.H})
		out = out.Intersect(image.Rect(int(math.Round(ca.X)), int(math.Round(ca.Y)), int(math.Round(cz.X)), int(math.Round(cz.Y))))
	}
	return out
}

// draw draws one item.
func (r *raster) draw(it *item) {
	if it.only == onlySVG {
		return
	}
	switch {
	case it.text != nil:
		r.text(it)
	case it.pic != nil:
		r.picture(it)
	case it.path != nil:
		if it.fill.A > 0 {
			r.fillPath(it)
		}
		if it.stroke.A > 0 && it.width > 0 {
			r.strokePath(it)
		}
	}
}

// begin resets the rasterizer to area; it returns a feeder that takes
// device points.
func (r *raster) begin(area image.Rectangle) *feeder {
	r.z.Reset(area.Dx(), area.Dy())
	return &feeder{z: &r.z, ox: float64(area.Min.X), oy: float64(area.Min.Y), w: float64(area.Dx()), h: float64(area.Dy())}
}

// paint composites the rasterized coverage over area in colour c.
func (r *raster) paint(area image.Rectangle, c color.NRGBA) {
	w, h := area.Dx(), area.Dy()
	if cap(r.mask.Pix) < w*h {
		r.mask.Pix = make([]uint8, w*h)
	}
	r.mask.Pix, r.mask.Stride, r.mask.Rect = r.mask.Pix[:w*h], w, image.Rect(0, 0, w, h)
	r.z.DrawOp = draw.Src
	r.z.Draw(&r.mask, r.mask.Rect, image.Opaque, image.Point{})
	composite(r.dst, area, r.mask.Pix, c)
}

// composite paints c over dst in area through mask (area's size, one byte
// of coverage a pixel), skipping what the mask does not cover.
func composite(dst *image.RGBA, area image.Rectangle, mask []uint8, c color.NRGBA) {
	w := area.Dx()
	ca := uint32(c.A)
	cr, cg, cb := uint32(c.R), uint32(c.G), uint32(c.B)
	div := func(x uint32) uint32 { return (x + 1 + (x >> 8)) >> 8 } // x / 255, rounded, for x ≤ 255²
	var solid [32]byte                                              // eight pixels of c, opaque
	for i := 0; i < 32; i += 4 {
		solid[i], solid[i+1], solid[i+2], solid[i+3] = c.R, c.G, c.B, 255
	}
	for y := 0; y < area.Dy(); y++ {
		row := mask[y*w : y*w+w]
		pix := dst.Pix[dst.PixOffset(area.Min.X, area.Min.Y+y):]
		for x := 0; x < len(row); x++ {
			if x&7 == 0 && x+8 <= len(row) {
				switch binary.LittleEndian.Uint64(row[x:]) {
				case 0: // eight uncovered pixels
					x += 7
					continue
				case ^uint64(0): // eight covered pixels
					if ca == 255 {
						copy(pix[4*x:4*x+32], solid[:])
						x += 7
						continue
					}
				}
			}
			m := row[x]
			if m == 0 {
				continue
			}
			a := div(uint32(m) * ca)
			if a == 0 {
				continue
			}
			p := pix[4*x : 4*x+4 : 4*x+4]
			if a == 255 {
				p[0], p[1], p[2], p[3] = uint8(cr), uint8(cg), uint8(cb), 255
				continue
			}
			na := 255 - a
			p[0] = uint8(div(cr*a + uint32(p[0])*na))
			p[1] = uint8(div(cg*a + uint32(p[1])*na))
			p[2] = uint8(div(cb*a + uint32(p[2])*na))
			p[3] = uint8(div(255*a + uint32(p[3])*na))
		}
	}
}

func (r *raster) fillPath(it *item) {
	area := r.area(it.path.bounds(), it.clip)
	if area.Empty() {
		return
	}
	f := r.begin(area)
	for _, pl := range it.path.flatten(r.dev, 0.2) {
		f.polygon(pl.pts)
	}
	r.paint(area, it.fill)
}

func (r *raster) strokePath(it *item) {
	area := r.strokeArea(it)
	if area.Empty() {
		return
	}
	r.feedStroke(r.begin(area), it)
	r.paint(area, it.stroke)
}

// strokeArea is the device area a stroke covers.
func (r *raster) strokeArea(it *item) image.Rectangle {
	return r.area(it.path.bounds().grow(it.width/2+1), it.clip)
}

// feedStroke adds the polygons of an item's stroke.
func (r *raster) feedStroke(f *feeder, it *item) {
	hw := it.width * r.scale / 2
	if hw < 0.35 {
		hw = 0.35 // thinner than a pixel: a faint hairline rather than nothing
	}
	s := stroker{f: f, hw: hw, round: !it.butt}
	for _, pl := range it.path.flatten(r.dev, 0.2) {
		if len(it.dash) > 0 {
			for _, piece := range dashes(pl, it.dash, r.scale) {
				s.polyline(piece, false)
			}
			continue
		}
		s.polyline(pl.pts, pl.closed)
	}
}

// turn rotates p by (sin, cos).
func turn(p pt, sin, cos float64) pt { return pt{p.X*cos - p.Y*sin, p.X*sin + p.Y*cos} }

func (r *raster) text(it *item) {
	t := it.text
	area := r.textArea(it)
	if area.Empty() {
		return
	}
	if t.bg.A > 0 {
		sin, cos, o := r.textFrame(t)
		toDev := func(p pt) pt { return o.add(turn(p.mul(r.scale), sin, cos)) }
		b := t.bgBox
		f := r.begin(area)
		f.polygon([]pt{toDev(pt{b.X, b.Y}), toDev(pt{b.X + b.W, b.Y}), toDev(pt{b.X + b.W, b.Y + b.H}), toDev(pt{b.X, b.Y + b.H})})
		r.paint(area, t.bg)
	}
	r.feedText(r.begin(area), it)
	r.paint(area, t.color)
}

// textArea is the device area a text item covers.
func (r *raster) textArea(it *item) image.Rectangle {
	return r.area(it.bounds().grow(it.text.size*0.5), it.clip)
}

// textFrame is a text item's rotation and device origin.
func (r *raster) textFrame(t *textItem) (sin, cos float64, o pt) {
	sin, cos = math.Sin(t.rot), math.Cos(t.rot)
	if t.rot == 0 {
		sin, cos = 0, 1
	}
	return sin, cos, r.dev(t.origin)
}

// feedText adds the outlines of an item's glyphs.
func (r *raster) feedText(f *feeder, it *item) {
	t := it.text
	sin, cos, o := r.textFrame(t)
	base := t.face.Baseline(t.size, t.lineH)
	for i, line := range t.lines {
		pen := pt{t.xs[i], t.top + float64(i)*t.lineH + base}
		var prev glyph
		for _, ch := range line {
			g := t.face.glyphFor(ch)
			k := t.size / g.face.upm
			if prev.face == g.face && prev.face != nil && prev.idx != 0 && g.idx != 0 {
				pen.X += g.face.kern(prev.idx, g.idx) * k
			}
			if ch != ' ' && ch != '\t' {
				r.glyph(f, g, pen, k, sin, cos, o)
			}
			pen.X += g.adv * k
			prev = g
		}
	}
}

// coverage is the one colour an item paints when it is a stroke or text
// alone (no fill, no background): such items of one owner, one after
// another in one colour, are rasterized together (their polygons all wind
// the same way, so overlaps count once) and composited once.
func coverage(it *item) (color.NRGBA, bool) {
	if it.only == onlySVG {
		return color.NRGBA{}, false
	}
	switch {
	case it.text != nil && it.text.bg.A == 0:
		return it.text.color, true
	case it.path != nil && it.fill.A == 0 && it.stroke.A > 0 && it.width > 0:
		return it.stroke, true
	}
	return color.NRGBA{}, false
}

// drawAll draws items in order, batching runs of coverage items.
func (r *raster) drawAll(items []item) {
	for i := 0; i < len(items); {
		it := &items[i]
		c, ok := coverage(it)
		j := i + 1
		for ok && j < len(items) && items[j].owner == it.owner && items[j].clip == it.clip {
			if c2, ok2 := coverage(&items[j]); !ok2 || c2 != c {
				break
			}
			j++
		}
		if j == i+1 {
			r.draw(it)
			i++
			continue
		}
		area := image.Rectangle{}
		for k := i; k < j; k++ {
			if items[k].text != nil {
				area = area.Union(r.textArea(&items[k]))
			} else {
				area = area.Union(r.strokeArea(&items[k]))
			}
		}
		if !area.Empty() {
			f := r.begin(area)
			for k := i; k < j; k++ {
				if items[k].text != nil {
					r.feedText(f, &items[k])
				} else {
					r.feedStroke(f, &items[k])
				}
			}
			r.paint(area, c)
		}
		i = j
	}
}

// glyph adds one glyph's outline at pen (local coordinates), font units
// scaled by k; its flattened outline is kept for the drawing's other
// glyphs of the same size.
func (r *raster) glyph(f *feeder, g glyph, pen pt, k float64, sin, cos float64, o pt) {
	key := glyphKey{g.face, g.idx, k * r.scale}
	contours, ok := r.glyphs[key]
	if !ok {
		contours = flattenGlyph(g.face.outline(g.idx), k*r.scale)
		r.glyphs[key] = contours
	}
	d := o.add(turn(pen.mul(r.scale), sin, cos))
	for _, c := range contours {
		pts := r.pts[:0]
		for _, q := range c {
			if sin != 0 {
				q = turn(q, sin, cos)
			}
			pts = append(pts, d.add(q))
		}
		f.polygon(pts)
		r.pts = pts
	}
}

// flattenGlyph flattens a glyph outline scaled by k into contours.
func flattenGlyph(segs []outlineSeg, k float64) [][]pt {
	var out [][]pt
	var pts []pt
	var cur pt
	at := func(q pt) pt { return q.mul(k) }
	for _, s := range segs {
		switch s.op {
		case sfnt.SegmentOpMoveTo:
			if len(pts) > 1 {
				out = append(out, pts)
			}
			cur = at(s.pts[0])
			pts = []pt{cur}
		case sfnt.SegmentOpLineTo:
			cur = at(s.pts[0])
			pts = append(pts, cur)
		case sfnt.SegmentOpQuadTo:
			b, c := at(s.pts[0]), at(s.pts[1])
			pts = flattenCubic(pts, cur, cur.add(b.sub(cur).mul(2.0/3)), c.add(b.sub(c).mul(2.0/3)), c, 0.2)
			cur = c
		case sfnt.SegmentOpCubeTo:
			b, c, d := at(s.pts[0]), at(s.pts[1]), at(s.pts[2])
			pts = flattenCubic(pts, cur, b, c, d, 0.2)
			cur = d
		}
	}
	if len(pts) > 1 {
		out = append(out, pts)
	}
	return out
}

// picture draws an image node's picture, scaled, cropped, flipped and
// turned, with its opacity.
func (r *raster) picture(it *item) {
	p := it.pic
	if p.img == nil {
		return
	}
	area := r.area(it.bounds(), it.clip)
	if area.Empty() || p.w <= 0 || p.h <= 0 {
		return
	}
	sb := p.img.Bounds()
	crop := image.Rect(
		sb.Min.X+int(math.Round(p.crop.X*float64(sb.Dx()))), sb.Min.Y+int(math.Round(p.crop.Y*float64(sb.Dy()))),
		sb.Min.X+int(math.Round((p.crop.X+p.crop.W)*float64(sb.Dx()))), sb.Min.Y+int(math.Round((p.crop.Y+p.crop.H)*float64(sb.Dy()))),
	).Intersect(sb)
	if crop.Empty() {
		return
	}
	// source pixel → local: x' = (x - crop.x) * w / crop.w, flipped if asked
	sx, sy := p.w/float64(crop.Dx()), p.h/float64(crop.Dy())
	tx, ty := -float64(crop.Min.X)*sx, -float64(crop.Min.Y)*sy
	if p.flipX {
		sx, tx = -sx, p.w-tx
	}
	if p.flipY {
		sy, ty = -sy, p.h-ty
	}
	sin, cos := math.Sin(p.rot), math.Cos(p.rot)
	o := r.dev(p.origin)
	k := r.scale
	// local → device: o + R * (k * local)
	m := f64.Aff3{
		k * cos * sx, -k * sin * sy, o.X + k*(cos*tx-sin*ty),
		k * sin * sx, k * cos * sy, o.Y + k*(sin*tx+cos*ty),
	}
	dst := r.dst.SubImage(area).(*image.RGBA)
	var opts *xdraw.Options
	if p.alpha < 1 {
		opts = &xdraw.Options{SrcMask: image.NewUniform(color.Alpha{uint8(math.Round(p.alpha * 255))})}
	}
	xdraw.ApproxBiLinear.Transform(dst, m, p.img, crop, draw.Over, opts)
}

// feeder hands polygons in device pixels to the rasterizer, relative to
// its area and cut to it: what lies above or below the area is dropped,
// what lies left or right of it runs along its side (the rasterizer
// accumulates coverage along rows, so that is exactly what it would
// count), which keeps the rasterizer's work to the area.
type feeder struct {
	z        *vector.Rasterizer
	ox, oy   float64
	w, h     float64
	pen      pt
	penValid bool
}

// polygon adds a closed polygon.
func (f *feeder) polygon(pts []pt) {
	n := len(pts)
	if n < 2 {
		return
	}
	for i := 0; i < n; i++ {
		f.seg(pts[i], pts[(i+1)%n])
	}
}

// seg adds the edge a→b.
func (f *feeder) seg(a, b pt) {
	a = pt{a.X - f.ox, a.Y - f.oy}
	b = pt{b.X - f.ox, b.Y - f.oy}
	if a.Y == b.Y {
		return // a horizontal edge adds no coverage
	}
	if (a.Y <= 0 && b.Y <= 0) || (a.Y >= f.h && b.Y >= f.h) {
		return
	}
	if a.X >= 0 && b.X >= 0 && a.X <= f.w && b.X <= f.w && a.Y >= 0 && b.Y >= 0 && a.Y <= f.h && b.Y <= f.h {
		f.line(a, b)
		return
	}
	// Cut to 0 ≤ y ≤ h.
	cutY := func(p, q pt, y float64) pt { return p.lerp(q, (y-p.Y)/(q.Y-p.Y)) }
	if a.Y < 0 {
		a = cutY(a, b, 0)
	} else if a.Y > f.h {
		a = cutY(a, b, f.h)
	}
	if b.Y < 0 {
		b = cutY(b, a, 0)
	} else if b.Y > f.h {
		b = cutY(b, a, f.h)
	}
	// Split where the edge crosses x = 0 and x = w, and run the parts
	// outside along those sides.
	ts := [4]float64{0, 0, 0, 1}
	n := 1
	for _, x := range [2]float64{0, f.w} {
		if (a.X < x) != (b.X < x) && a.X != b.X {
			t := (x - a.X) / (b.X - a.X)
			if t > 0 && t < 1 {
				ts[n] = t
				n++
			}
		}
	}
	ts[n] = 1
	if n == 3 && ts[1] > ts[2] {
		ts[1], ts[2] = ts[2], ts[1]
	}
	clampX := func(p pt) pt { p.X = math.Max(0, math.Min(f.w, p.X)); return p }
	for i := 0; i < n; i++ {
		p, q := a.lerp(b, ts[i]), a.lerp(b, ts[i+1])
		f.line(clampX(p), clampX(q))
	}
}

// line adds the edge a→b inside the area.
func (f *feeder) line(a, b pt) {
	if !f.penValid || f.pen != a {
		f.z.MoveTo(float32(a.X), float32(a.Y))
	}
	f.z.LineTo(float32(b.X), float32(b.Y))
	f.pen, f.penValid = b, true
}
