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
// the polygons a stroker (stroke.go) makes of them, text as glyph outlines
// (an upright glyph's coverage is drawn once per size and quarter-pixel
// offset and added where the glyph is: a label's glyphs are the same few
// dozen shapes again and again).
//
// The picture may be drawn whole or in bands of rows: dst holds the rows
// being drawn (its Rect is where they lie in the picture), and every item
// is cut to them.
type raster struct {
	dst    *image.RGBA
	full   image.Rectangle // the whole picture
	z      vector.Rasterizer
	mask   image.Alpha // the coverage of the item being drawn
	view   rect
	scale  float64
	glyphs map[glyphKey]*glyphShape // flattened outlines at a size
	pts    []pt                     // scratch

	masks  map[maskKey]*glyphMask // upright glyphs' coverage at a size and offset
	gz     vector.Rasterizer      // draws the masks
	placed []placedMask           // the masks the pass being drawn adds to its coverage
}

// glyphMask is an upright glyph's coverage at a size and a quarter-pixel
// offset: w×h bytes, its top-left x, y pixels from the pen's pixel.
type glyphMask struct {
	x, y, w, h int
	pix        []uint8
}

// maskKey names a glyph's mask: the glyph at a size in device pixels,
// offset by sx/4, sy/4 of a pixel.
type maskKey struct {
	glyphKey
	sx, sy int8
}

// placedMask is a mask placed with its top-left at device pixel (x, y).
type placedMask struct {
	m    *glyphMask
	x, y int
}

// glyphShape is a glyph's outline flattened at a size: contours in device
// pixels from the pen, unturned, and how far they reach above and below it.
type glyphShape struct {
	contours               [][]pt
	minX, minY, maxX, maxY float64
}

// glyphKey names a glyph's outline at a size in device pixels.
type glyphKey struct {
	face *Face
	idx  sfnt.GlyphIndex
	ppem float64
}

// newRaster is a raster of a w×h picture of view at scale; dst is nil
// until the caller gives it the rows to draw.
func newRaster(w, h int, view rect, scale float64) *raster {
	return &raster{full: image.Rect(0, 0, w, h), view: view, scale: scale, glyphs: map[glyphKey]*glyphShape{}, masks: map[maskKey]*glyphMask{}}
}

// clear makes dst transparent, or white unless transparent.
func (r *raster) clear(transparent bool) {
	d := r.dst
	n := 4 * d.Rect.Dx()
	if n == 0 {
		return
	}
	first := d.Pix[d.PixOffset(d.Rect.Min.X, d.Rect.Min.Y):][:n]
	for y := d.Rect.Min.Y; y < d.Rect.Max.Y; y++ {
		row := d.Pix[d.PixOffset(d.Rect.Min.X, y):][:n]
		switch {
		case transparent:
			clear(row)
		case y == d.Rect.Min.Y:
			row[0] = 0xff
			for k := 1; k < n; k *= 2 {
				copy(row[k:], row[:k])
			}
		default:
			copy(row, first)
		}
	}
}

// dev maps a page point to device pixels.
func (r *raster) dev(p pt) pt {
	return pt{(p.X - r.view.X) * r.scale, (p.Y - r.view.Y) * r.scale}
}

// area is the device rectangle to rasterize for a page box: the box's
// pixels within the picture and the item's clip.
func (r *raster) area(box rect, clip *rect) image.Rectangle {
	a := r.dev(pt{box.X, box.Y})
	z := r.dev(pt{box.X + box.W, box.Y + box.H})
	out := image.Rect(int(math.Floor(a.X))-1, int(math.Floor(a.Y))-1, int(math.Ceil(z.X))+1, int(math.Ceil(z.Y))+1)
	out = out.Intersect(r.full)
	if clip != nil {
		ca := r.dev(pt{clip.X, clip.Y})
		cz := r.dev(pt{clip.X + clip.W, clip.Y + clip.H})
		out = out.Intersect(image.Rect(int(math.Round(ca.X)), int(math.Round(ca.Y)), int(math.Round(cz.X)), int(math.Round(cz.Y))))
	}
	return out
}

// step is one pass of the rasterizer: one item, or a run of coverage
// items (see coverage) rasterized together and composited once in colour
// c. Its areas are device areas in the whole picture: area is what the
// item (or run) covers, or for a path its fill; stroke is a path's stroke.
type step struct {
	first, end   int // the items
	c            color.NRGBA
	area, stroke image.Rectangle
}

// rows is the span of rows a step touches.
func (s *step) rows() (y0, y1 int) {
	u := s.area.Union(s.stroke)
	return u.Min.Y, u.Max.Y
}

// plan makes the steps that draw items in order, batching runs of
// coverage items; steps that draw nothing are left out.
func (r *raster) plan(items []item) []step {
	steps := make([]step, 0, len(items))
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
		s := step{first: i, end: j}
		switch {
		case j > i+1:
			s.c = c
			for k := i; k < j; k++ {
				if items[k].text != nil {
					s.area = s.area.Union(r.textArea(&items[k]))
				} else {
					s.area = s.area.Union(r.strokeArea(&items[k]))
				}
			}
		case it.only == onlySVG:
		case it.text != nil:
			s.area = r.textArea(it)
		case it.pic != nil:
			if it.pic.img != nil {
				s.area = r.area(it.bounds(), it.clip)
			}
		case it.path != nil:
			if it.fill.A > 0 {
				s.area = r.area(it.path.bounds(), it.clip)
			}
			if it.stroke.A > 0 && it.width > 0 {
				s.stroke = r.strokeArea(it)
			}
		}
		if !s.area.Empty() || !s.stroke.Empty() {
			steps = append(steps, s)
		}
		i = j
	}
	return steps
}

// drawStep draws a step, cut to the rows of dst.
func (r *raster) drawStep(items []item, s *step) {
	area, stroke := s.area.Intersect(r.dst.Rect), s.stroke.Intersect(r.dst.Rect)
	if area.Empty() && stroke.Empty() {
		return
	}
	if s.end > s.first+1 {
		f := r.begin(s.area, area)
		for k := s.first; k < s.end; k++ {
			if items[k].text != nil {
				r.feedText(f, &items[k])
			} else {
				r.feedStroke(f, &items[k])
			}
		}
		r.paint(area, s.c)
		return
	}
	it := &items[s.first]
	switch {
	case it.text != nil:
		r.text(it, s.area, area)
	case it.pic != nil:
		r.picture(it, area)
	case it.path != nil:
		if !area.Empty() {
			r.fillPath(it, s.area, area)
		}
		if !stroke.Empty() {
			r.strokePath(it, s.stroke, stroke)
		}
	}
}

// begin resets the rasterizer to area, the rows of whole (an item's area
// in the whole picture) being drawn; it returns a feeder that takes device
// points.
func (r *raster) begin(whole, area image.Rectangle) *feeder {
	r.z.Reset(area.Dx(), area.Dy())
	r.placed = r.placed[:0]
	return &feeder{z: &r.z, ox: float64(area.Min.X), oy: float64(area.Min.Y), w: float64(area.Dx()), h: float64(area.Dy()),
		top: float64(whole.Min.Y - area.Min.Y), bottom: float64(whole.Max.Y - area.Min.Y)}
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
	for _, pm := range r.placed {
		addMask(&r.mask, area.Min, pm)
	}
	r.placed = r.placed[:0]
	composite(r.dst, area, r.mask.Pix, c)
}

// addMask adds a placed glyph mask to the coverage mask of the area whose
// top-left is at device pixel o, saturating: where the glyph overlaps what
// else the pass covers, the pixel is covered once, as when the glyph's
// outline is rasterized with the rest (all wind the same way).
func addMask(mask *image.Alpha, o image.Point, pm placedMask) {
	m := pm.m
	x0, y0 := max(pm.x, o.X), max(pm.y, o.Y)
	x1, y1 := min(pm.x+m.w, o.X+mask.Rect.Dx()), min(pm.y+m.h, o.Y+mask.Rect.Dy())
	for y := y0; y < y1; y++ {
		dst := mask.Pix[(y-o.Y)*mask.Stride+x0-o.X : (y-o.Y)*mask.Stride+x1-o.X]
		src := m.pix[(y-pm.y)*m.w+x0-pm.x:]
		for i, v := range dst {
			dst[i] = uint8(min(255, uint16(v)+uint16(src[i])))
		}
	}
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

func (r *raster) fillPath(it *item, whole, area image.Rectangle) {
	f := r.begin(whole, area)
	for _, pl := range it.path.flatten(r.dev, 0.2) {
		f.polygon(pl.pts)
	}
	r.paint(area, it.fill)
}

func (r *raster) strokePath(it *item, whole, area image.Rectangle) {
	r.feedStroke(r.begin(whole, area), it)
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

func (r *raster) text(it *item, whole, area image.Rectangle) {
	t := it.text
	if t.bg.A > 0 {
		sin, cos, o := r.textFrame(t)
		toDev := func(p pt) pt { return o.add(turn(p.mul(r.scale), sin, cos)) }
		b := t.bgBox
		f := r.begin(whole, area)
		f.polygon([]pt{toDev(pt{b.X, b.Y}), toDev(pt{b.X + b.W, b.Y}), toDev(pt{b.X + b.W, b.Y + b.H}), toDev(pt{b.X, b.Y + b.H})})
		r.paint(area, t.bg)
	}
	r.feedText(r.begin(whole, area), it)
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
// the same way, so overlaps count once; upright glyphs' masks are added to
// the coverage saturating, to the same effect) and composited once.
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

// glyph adds one glyph's outline at pen (local coordinates), font units
// scaled by k; its flattened outline is kept for the drawing's other
// glyphs of the same size. An upright glyph wholly above or below the
// feeder's rows adds nothing and is skipped.
func (r *raster) glyph(f *feeder, g glyph, pen pt, k float64, sin, cos float64, o pt) {
	key := glyphKey{g.face, g.idx, k * r.scale}
	shape, ok := r.glyphs[key]
	if !ok {
		shape = flattenGlyph(g.face.outline(g.idx), k*r.scale)
		r.glyphs[key] = shape
	}
	d := o.add(turn(pen.mul(r.scale), sin, cos))
	if sin == 0 && (d.Y+shape.maxY <= f.oy || d.Y+shape.minY >= f.oy+f.h) {
		return
	}
	if sin == 0 {
		// Upright: its coverage, drawn once at the nearest quarter pixel.
		qx, qy := int(math.Floor(d.X*4+0.5)), int(math.Floor(d.Y*4+0.5))
		ix, iy := floorDiv4(qx), floorDiv4(qy)
		mk := maskKey{key, int8(qx - 4*ix), int8(qy - 4*iy)}
		m, ok := r.masks[mk]
		if !ok {
			m = r.drawMask(shape, float64(mk.sx)/4, float64(mk.sy)/4)
			r.masks[mk] = m
		}
		x, y := ix+m.x, iy+m.y
		if m.w > 0 && m.h > 0 && float64(x) < f.ox+f.w && float64(x+m.w) > f.ox && float64(y) < f.oy+f.h && float64(y+m.h) > f.oy {
			r.placed = append(r.placed, placedMask{m, x, y})
		}
		return
	}
	for _, c := range shape.contours {
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

// floorDiv4 is ⌊q/4⌋.
func floorDiv4(q int) int { return q >> 2 }

// drawMask rasterizes a glyph's outline offset by (dx, dy) pixels.
func (r *raster) drawMask(shape *glyphShape, dx, dy float64) *glyphMask {
	m := &glyphMask{}
	if len(shape.contours) == 0 {
		return m
	}
	x0, y0 := int(math.Floor(shape.minX+dx)), int(math.Floor(shape.minY+dy))
	x1, y1 := int(math.Ceil(shape.maxX+dx)), int(math.Ceil(shape.maxY+dy))
	m.x, m.y, m.w, m.h = x0, y0, x1-x0, y1-y0
	if m.w <= 0 || m.h <= 0 {
		return m
	}
	r.gz.Reset(m.w, m.h)
	f := &feeder{z: &r.gz, ox: float64(x0) - dx, oy: float64(y0) - dy, w: float64(m.w), h: float64(m.h), bottom: float64(m.h)}
	for _, c := range shape.contours {
		f.polygon(c)
	}
	m.pix = make([]uint8, m.w*m.h)
	r.gz.DrawOp = draw.Src
	r.gz.Draw(&image.Alpha{Pix: m.pix, Stride: m.w, Rect: image.Rect(0, 0, m.w, m.h)}, image.Rect(0, 0, m.w, m.h), image.Opaque, image.Point{})
	return m
}

// flattenGlyph flattens a glyph outline scaled by k into contours.
func flattenGlyph(segs []outlineSeg, k float64) *glyphShape {
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
	shape := &glyphShape{contours: out, minX: math.Inf(1), minY: math.Inf(1), maxX: math.Inf(-1), maxY: math.Inf(-1)}
	for _, c := range out {
		for _, q := range c {
			shape.minX, shape.maxX = math.Min(shape.minX, q.X), math.Max(shape.maxX, q.X)
			shape.minY, shape.maxY = math.Min(shape.minY, q.Y), math.Max(shape.maxY, q.Y)
		}
	}
	return shape
}

// picture draws an image node's picture, scaled, cropped, flipped and
// turned, with its opacity.
func (r *raster) picture(it *item, area image.Rectangle) {
	p := it.pic
	if p.img == nil {
		return
	}
	if p.w <= 0 || p.h <= 0 {
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
//
// When the area is a band of the rows of an item's whole area, edges are
// cut where the whole area would cut them (top, bottom) and the
// rasterizer steps through the rows above the band: it walks an edge row
// by row from its start, rounding as it goes, so an edge that started at
// the band's top instead would land on slightly different coverage, and
// the band would not match the picture drawn whole.
type feeder struct {
	z           *vector.Rasterizer
	ox, oy      float64
	w, h        float64
	top, bottom float64 // where the whole area's rows end, relative to oy: top ≤ 0, bottom ≥ h
	pen         pt
	penValid    bool
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
	if a.X >= 0 && b.X >= 0 && a.X <= f.w && b.X <= f.w && a.Y >= f.top && b.Y >= f.top && a.Y <= f.bottom && b.Y <= f.bottom {
		f.line(a, b)
		return
	}
	// Cut to top ≤ y ≤ bottom.
	cutY := func(p, q pt, y float64) pt { return p.lerp(q, (y-p.Y)/(q.Y-p.Y)) }
	if a.Y < f.top {
		a = cutY(a, b, f.top)
	} else if a.Y > f.bottom {
		a = cutY(a, b, f.bottom)
	}
	if b.Y < f.top {
		b = cutY(b, a, f.top)
	} else if b.Y > f.bottom {
		b = cutY(b, a, f.bottom)
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
