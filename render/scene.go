package render

import (
	"image"
	"image/color"
	"math"
	"net/url"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// item is one thing to draw, in page coordinates: a path filled and/or
// stroked, a block of text, or a picture. The SVG and PNG writers draw
// the same items, so both show the same.
type item struct {
	owner string // the node or edge id it belongs to
	kind  string // the owner's kind ("geo", ..., "edge")

	path   *path
	fill   color.NRGBA // A 0: not filled
	stroke color.NRGBA // A 0: not stroked
	width  float64     // stroke width, page units
	dash   []float64   // page units; nil is solid
	butt   bool        // butt caps (hachure lines); round otherwise

	text *textItem
	pic  *picture

	clip *rect // a frame's box its children are cut to (page coordinates)
	only int   // 0: both formats; onlySVG or onlyPNG
}

// What an item is drawn in when not both: an https: or SVG image is
// referenced by an SVG, and drawn as a card in a PNG (the server fetches
// nothing and rasterizes no SVG).
const (
	onlySVG = 1
	onlyPNG = 2
)

// textItem is lines of text in a box that may be turned.
type textItem struct {
	face   *Face
	size   float64 // px
	lineH  float64 // px
	lines  []string
	xs     []float64 // each line's left edge, local coordinates
	top    float64   // the first line box's top, local coordinates
	color  color.NRGBA
	origin pt      // the page position of local (0, 0)
	rot    float64 // radians about origin
	bg     color.NRGBA
	bgBox  rect // local coordinates; drawn first when bg.A > 0
}

// picture is an image node's picture.
type picture struct {
	href         string      // the data: or https: URL
	img          image.Image // decoded; nil when it cannot be (drawn as a card in PNG)
	crop         rect        // 0–1 of the image
	flipX, flipY bool
	origin       pt
	w, h, rot    float64
	alpha        float64
	alt          string
}

// local maps a node's own coordinates to the page: (0, 0) is its corner,
// turned by its rotation about that corner.
func local(x, y, rot float64) func(pt) pt {
	if rot == 0 {
		return func(p pt) pt { return pt{x + p.X, y + p.Y} }
	}
	s, c := math.Sin(rot), math.Cos(rot)
	return func(p pt) pt { return pt{x + p.X*c - p.Y*s, y + p.X*s + p.Y*c} }
}

// bounds is the page box an item covers.
func (it *item) bounds() rect {
	switch {
	case it.text != nil:
		t := it.text
		r := noRect
		if t.bg.A > 0 {
			r = t.bgBox
		}
		for i, line := range t.lines {
			w := t.face.Measure(line, t.size)
			r = r.union(rect{t.xs[i], t.top + float64(i)*t.lineH, w, t.lineH})
		}
		return turnedBox(r, t.origin, t.rot)
	case it.pic != nil:
		p := it.pic
		return turnedBox(rect{0, 0, p.w, p.h}, p.origin, p.rot)
	case it.path != nil:
		r := it.path.bounds()
		if it.stroke.A > 0 {
			r = r.grow(it.width/2 + 1)
		}
		return r
	}
	return noRect
}

// turnedBox is the page box of the local box r turned by rot about origin.
func turnedBox(r rect, origin pt, rot float64) rect {
	if r.W < 0 {
		return r
	}
	f := local(origin.X, origin.Y, rot)
	return bboxOf([]pt{f(pt{r.X, r.Y}), f(pt{r.X + r.W, r.Y}), f(pt{r.X, r.Y + r.H}), f(pt{r.X + r.W, r.Y + r.H})})
}

// labelPadding is the space between a shape's side and its label, as the
// web UI leaves it.
const labelPadding = 5

// builder turns a canvas state into items.
type builder struct {
	s     *canvas.State
	items []item
	clips map[string]*rect // frame id → its box, for its descendants
}

// frameClip is the box of the innermost unrotated frame holding n, if any.
func (b *builder) frameClip(n *canvas.Node) *rect {
	p := b.s.Nodes[n.ParentID]
	for depth := 0; p != nil && depth < 64; depth++ {
		if p.Type == "frame" {
			if p.Rotation != 0 {
				return nil
			}
			if r, ok := b.clips[p.ID]; ok {
				return r
			}
			r := &rect{p.X, p.Y, p.W, p.H}
			b.clips[p.ID] = r
			return r
		}
		p = b.s.Nodes[p.ParentID]
	}
	return nil
}

func (b *builder) add(it item) { b.items = append(b.items, it) }

// node adds the items of one node.
func (b *builder) node(n *canvas.Node) {
	p := props(n.Props)
	if p == nil {
		p = props{}
	}
	alpha := p.opacity()
	w, h := math.Max(n.W, 0), math.Max(n.H, 0)
	f := local(n.X, n.Y, n.Rotation)
	clip := b.frameClip(n)
	base := item{owner: n.ID, kind: n.Type, clip: clip}
	shape := func(outline *path, fill, stroke color.NRGBA, sw float64, dash []float64) {
		it := base
		it.path, it.fill, it.stroke, it.width, it.dash = outline.transformed(f), withAlpha(fill, alpha), withAlpha(stroke, alpha), sw, dash
		b.add(it)
	}
	switch n.Type {
	case "group":
		return
	case "geo":
		b.geo(n, p, base, f, alpha)
	case "note":
		bg := p.lightTone("yellow")
		if c, ok := ParseColor(p.str("fillColor"), true); ok {
			bg = c
		}
		o := &path{}
		o.roundRect(0, 0, w, h, cornerRadius(w, h))
		shape(o, bg, color.NRGBA{}, 0, nil)
		// A note's color is its paper; its text is black unless labelColor says.
		ink, ok := ParseColor(p.str("labelColor"), false)
		if !ok {
			ink, _ = ParseColor("black", false)
		}
		b.label(n, p, base, ink, "middle", "middle", alpha)
	case "text":
		c := p.color("black")
		b.textBlock(n, p, base, c, "start", "start", alpha, true)
	case "frame":
		c := color.NRGBA{0xbb, 0xbb, 0xbb, 255}
		if s := p.str("color"); s != "" {
			c = p.color("grey")
		}
		o := &path{}
		o.roundRect(0, 0, w, h, math.Min(8, math.Min(w, h)/2))
		frame := base
		frame.clip = nil
		frame.path, frame.stroke, frame.width = o.transformed(f), withAlpha(c, alpha), 2
		b.add(frame)
		name := n.Name
		if name == "" {
			name = "Frame"
		}
		face := FaceOf("sans")
		const size = 14
		tag := base
		tag.clip = nil
		tag.text = &textItem{face: face, size: size, lineH: size * 1.25,
			lines: []string{face.Ellipsize(name, size, math.Max(w, 40))}, xs: []float64{0},
			top: -size*1.25 - 4, color: withAlpha(color.NRGBA{0x86, 0x8e, 0x96, 255}, alpha),
			origin: pt{n.X, n.Y}, rot: n.Rotation}
		b.add(tag)
	case "doc":
		b.doc(n, p, base, f, alpha)
	case "image":
		b.image(n, p, base, f, alpha)
	case "embed":
		c := p.color("grey")
		o := &path{}
		o.roundRect(0, 0, w, h, cornerRadius(w, h)*0.5)
		shape(o, color.NRGBA{0xf8, 0xf9, 0xfa, 255}, c, math.Max(p.strokeWidth(), 1), nil)
		u := p.str("url")
		if pu, err := url.Parse(u); err == nil && pu.Host != "" {
			u = pu.Host + strings.TrimSuffix(pu.EscapedPath(), "/")
		}
		b.centredText(n, base, FaceOf("sans"), 16, u, withAlpha(color.NRGBA{0x49, 0x50, 0x57, 255}, alpha))
	case "draw":
		b.draw(n, p, base, f, alpha)
	case "line":
		b.line(n, p, base, f, alpha)
	default:
		// A kind this renderer does not know (a newer model): its box.
		o := &path{}
		o.roundRect(0, 0, w, h, 0)
		shape(o, color.NRGBA{}, p.color("grey"), 1, []float64{4, 4})
	}
}

// labelColor is props.labelColor, else props.color, else def.
func labelColor(p props, def string) color.NRGBA {
	if c, ok := ParseColor(p.str("labelColor"), false); ok {
		return c
	}
	return p.color(def)
}

func (b *builder) geo(n *canvas.Node, p props, base item, f func(pt) pt, alpha float64) {
	w, h := math.Max(n.W, 0), math.Max(n.H, 0)
	geo := p.str("geo")
	// A rectangle is round unless said sharp; other geometries are sharp unless said round.
	round := p.str("roundness") == "round"
	if geo == "" || geo == "rectangle" {
		round = p.str("roundness") != "sharp"
	}
	outline, inner := geoOutline(geo, w, h, round)
	sw := p.strokeWidth()
	stroke := p.color("black")
	fill := p.fillColor()
	style := p.str("fill")
	dash := p.dash(sw)
	it := base
	it.path = outline.transformed(f)
	switch style {
	case "hachure", "cross-hatch", "zigzag", "pattern", "lined-fill":
		if style == "pattern" || style == "lined-fill" {
			bg := item{owner: base.owner, kind: base.kind, clip: base.clip, path: it.path, fill: withAlpha(fill, alpha)}
			if style == "pattern" {
				bg.fill = withAlpha(p.lightTone("black"), alpha*0.5)
			}
			b.add(bg)
		}
		gap := math.Max(4*sw, 4)
		lineC := fill
		if style == "pattern" {
			lineC = p.color("black")
		}
		angles := []float64{-41}
		if style == "cross-hatch" {
			angles = append(angles, 49)
		}
		if style == "lined-fill" {
			angles = []float64{0}
		}
		for _, a := range angles {
			lines := hatchLines(outline, gap, a, style == "zigzag")
			b.add(item{owner: base.owner, kind: base.kind, clip: base.clip, path: lines.transformed(f),
				stroke: withAlpha(lineC, alpha), width: math.Max(sw/2, 0.5), butt: true})
		}
	default:
		it.fill = withAlpha(fill, alpha)
	}
	if sw > 0 {
		it.stroke, it.width, it.dash = withAlpha(stroke, alpha), sw, dash
	}
	b.add(it)
	if inner != nil && sw > 0 {
		b.add(item{owner: base.owner, kind: base.kind, clip: base.clip, path: inner.transformed(f),
			stroke: withAlpha(stroke, alpha), width: sw, dash: dash})
	}
	b.label(n, p, base, labelColor(p, "black"), "middle", "middle", alpha)
}

// label adds a node's props.text, wrapped inside its box.
func (b *builder) label(n *canvas.Node, p props, base item, c color.NRGBA, align, valign string, alpha float64) {
	b.textBlock(n, p, base, c, align, valign, alpha, false)
}

// textBlock lays out props.text in the node's box: wrapped to the box less
// its padding (a text node only when autoSize is false), aligned by
// align/verticalAlign (defaults given), as the web UI places a label.
func (b *builder) textBlock(n *canvas.Node, p props, base item, c color.NRGBA, align, valign string, alpha float64, isText bool) {
	text := p.str("text")
	if strings.TrimSpace(text) == "" {
		return
	}
	if a := p.str("align"); a != "" {
		align = a
	}
	if v := p.str("verticalAlign"); v != "" {
		valign = v
	}
	face := FaceOf(p.str("font"))
	size := p.fontSize()
	lh := size * face.LineHeight
	w, h := math.Max(n.W, 0), math.Max(n.H, 0)
	pad := float64(labelPadding)
	inner := math.Max(w-2*pad, size)
	if isText {
		pad = 0
		inner = w
		if auto, ok := p.boolean("autoSize"); !ok || auto {
			inner = 0 // the width follows the text
		}
	}
	lines := face.Wrap(text, size, inner)
	it := base
	it.text = layoutLines(face, size, lh, lines, w, h, pad, align, valign, withAlpha(c, alpha), pt{n.X, n.Y}, n.Rotation)
	b.add(it)
}

// layoutLines places lines in a box w×h with padding pad.
func layoutLines(face *Face, size, lh float64, lines []string, w, h, pad float64, align, valign string, c color.NRGBA, origin pt, rot float64) *textItem {
	t := &textItem{face: face, size: size, lineH: lh, lines: lines, color: c, origin: origin, rot: rot}
	blockH := float64(len(lines)) * lh
	switch valign {
	case "start", "top":
		t.top = pad
	case "end", "bottom":
		t.top = h - pad - blockH
	default:
		t.top = (h - blockH) / 2
	}
	t.xs = make([]float64, len(lines))
	for i, l := range lines {
		lw := face.Measure(l, size)
		switch align {
		case "start", "left":
			t.xs[i] = pad
		case "end", "right":
			t.xs[i] = w - pad - lw
		default:
			t.xs[i] = (w - lw) / 2
		}
	}
	return t
}

// centredText adds one line of text centred in the node's box, cut to fit.
func (b *builder) centredText(n *canvas.Node, base item, face *Face, size float64, s string, c color.NRGBA) {
	w, h := math.Max(n.W, 0), math.Max(n.H, 0)
	s = face.Ellipsize(s, size, math.Max(w-2*labelPadding, size))
	it := base
	it.text = layoutLines(face, size, size*face.LineHeight, []string{s}, w, h, labelPadding, "middle", "middle", c, pt{n.X, n.Y}, n.Rotation)
	b.add(it)
}

// docFontSize is the size of a document card's text, as the web UI shows it.
const docFontSize = 13

// doc adds a document card: its name and language, then its first lines,
// each cut to the card's width, as many as fit.
func (b *builder) doc(n *canvas.Node, p props, base item, f func(pt) pt, alpha float64) {
	w, h := math.Max(n.W, 0), math.Max(n.H, 0)
	stroke := color.NRGBA{0x49, 0x50, 0x57, 255}
	if p.str("color") != "" {
		stroke = p.color("black")
	}
	o := &path{}
	o.roundRect(0, 0, w, h, cornerRadius(w, h))
	card := base
	card.path, card.fill, card.stroke, card.width = o.transformed(f), withAlpha(color.NRGBA{0xf8, 0xf9, 0xfa, 255}, alpha), withAlpha(stroke, alpha), 1
	b.add(card)
	face := FaceOf("mono")
	size := float64(docFontSize)
	lh := size * 1.25
	name := n.Name
	if name == "" {
		name = "document"
	}
	head := "≡ " + name
	if lang := p.str("language"); lang != "" {
		head += " · " + lang
	}
	inner := math.Max(w-2*labelPadding, size)
	maxLines := int(math.Max(1, math.Floor((h-2*labelPadding)/lh)))
	lines := []string{face.Ellipsize(head, size, inner)}
	text := p.str("text")
	for len(lines) < maxLines && text != "" {
		line, rest, more := strings.Cut(text, "\n")
		text = rest
		if len(lines) == maxLines-1 && more && rest != "" {
			lines = append(lines, "…")
			break
		}
		lines = append(lines, face.Ellipsize(strings.ReplaceAll(line, "\t", "    "), size, inner))
		if !more {
			break
		}
	}
	it := base
	it.text = layoutLines(face, size, lh, lines, w, h, labelPadding, "start", "start", withAlpha(color.NRGBA{0x1e, 0x1e, 0x1e, 255}, alpha), pt{n.X, n.Y}, n.Rotation)
	b.add(it)
}

// image adds an image node's picture (or a card naming it).
func (b *builder) image(n *canvas.Node, p props, base item, f func(pt) pt, alpha float64) {
	w, h := math.Max(n.W, 0), math.Max(n.H, 0)
	pic := &picture{href: p.str("url"), crop: rect{0, 0, 1, 1}, origin: pt{n.X, n.Y}, w: w, h: h, rot: n.Rotation,
		alpha: alpha, alt: p.str("altText")}
	if c, ok := p["crop"].(map[string]any); ok {
		cp := props(c)
		x, _ := cp.num("x")
		y, _ := cp.num("y")
		cw, okw := cp.num("w")
		ch, okh := cp.num("h")
		if okw && okh && cw > 0 && ch > 0 {
			pic.crop = rect{x, y, cw, ch}
		}
	}
	pic.flipX, _ = p.boolean("flipX")
	pic.flipY, _ = p.boolean("flipY")
	pic.img = decodeDataImage(pic.href)
	it := base
	if pic.img == nil {
		cardOnly := 0
		if strings.HasPrefix(pic.href, "data:image/svg+xml;base64,") || strings.HasPrefix(pic.href, "https:") {
			it.pic = pic
			it.only = onlySVG
			b.add(it)
			cardOnly = onlyPNG
		}
		// A card with the alt text.
		base.only = cardOnly
		o := &path{}
		o.roundRect(0, 0, w, h, 0)
		card := base
		card.path, card.fill, card.stroke, card.width, card.dash = o.transformed(f), withAlpha(color.NRGBA{0xee, 0xf0, 0xf3, 255}, alpha),
			withAlpha(color.NRGBA{0xad, 0xb5, 0xbd, 255}, alpha), 1, []float64{4, 4}
		b.add(card)
		label := pic.alt
		if label == "" {
			label = "image"
		}
		b.centredText(n, base, FaceOf("sans"), 14, label, withAlpha(color.NRGBA{0x49, 0x50, 0x57, 255}, alpha))
		base.only = 0
	} else {
		it.pic = pic
		b.add(it)
	}
	if sw, ok := p.num("strokeWidth"); ok && sw > 0 {
		o := &path{}
		r := 0.0
		if p.str("roundness") == "round" {
			r = cornerRadius(w, h)
		}
		o.roundRect(0, 0, w, h, r)
		frame := base
		frame.path, frame.stroke, frame.width = o.transformed(f), withAlpha(p.color("black"), alpha), sw
		b.add(frame)
	}
}

// pointsOf reads a list of {x, y} points.
func pointsOf(v any) []pt {
	list, _ := v.([]any)
	out := make([]pt, 0, len(list))
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		x, okx := props(m).num("x")
		y, oky := props(m).num("y")
		if okx && oky {
			out = append(out, pt{x, y})
		}
	}
	return out
}

// draw adds a freehand drawing: each segment a smoothed stroke.
func (b *builder) draw(n *canvas.Node, p props, base item, f func(pt) pt, alpha float64) {
	segs, _ := p["segments"].([]any)
	closed, _ := p.boolean("closed")
	sw := p.strokeWidth()
	c := p.color("black")
	fill := p.fillColor()
	for _, s := range segs {
		sm, ok := s.(map[string]any)
		if !ok {
			continue
		}
		pts := pointsOf(sm["points"])
		if len(pts) == 0 {
			continue
		}
		o := &path{}
		if len(pts) == 1 {
			pts = append(pts, pts[0].add(pt{0.01, 0}))
		}
		if props(sm).str("type") == "straight" || len(pts) < 3 {
			o.polygon(pts, closed)
		} else {
			// Through the midpoints, each point a control: a smooth pen line.
			o.moveTo(pts[0])
			for i := 1; i < len(pts)-1; i++ {
				o.quadTo(pts[i], pts[i].lerp(pts[i+1], 0.5))
			}
			o.lineTo(pts[len(pts)-1])
			if closed {
				o.close()
			}
		}
		it := base
		it.path = o.transformed(f)
		if closed {
			it.fill = withAlpha(fill, alpha)
		}
		it.stroke, it.width, it.dash = withAlpha(c, alpha), sw, p.dash(sw)
		b.add(it)
	}
}

// line adds a line node: its points, straight or curved, maybe closed.
func (b *builder) line(n *canvas.Node, p props, base item, f func(pt) pt, alpha float64) {
	pts := pointsOf(p["points"])
	if len(pts) < 2 {
		return
	}
	closed, _ := p.boolean("closed")
	o := &path{}
	if p.str("routing") == "curved" {
		o.catmullRom(pts, closed)
	} else {
		o.polygon(pts, closed)
	}
	sw := p.strokeWidth()
	it := base
	it.path = o.transformed(f)
	if closed {
		it.fill = withAlpha(p.fillColor(), alpha)
	}
	it.stroke, it.width, it.dash = withAlpha(p.color("black"), alpha), sw, p.dash(sw)
	b.add(it)
}

// edge adds an edge: its path from props.points, its heads and its label.
func (b *builder) edge(e *canvas.Edge, bg color.NRGBA) {
	p := props(e.Props)
	if p == nil {
		p = props{}
	}
	pts := pointsOf(p["points"])
	if len(pts) < 2 {
		pts = b.edgeEnds(e)
		if len(pts) < 2 {
			return
		}
	}
	alpha := p.opacity()
	sw := p.strokeWidth()
	c := withAlpha(p.color("black"), alpha)
	o := &path{}
	if p.str("routing") == "curved" {
		o.catmullRom(pts, false)
	} else {
		o.polygon(pts, false)
	}
	base := item{owner: e.ID, kind: "edge"}
	line := base
	line.path, line.stroke, line.width, line.dash = o, c, sw, p.dash(sw)
	b.add(line)
	flat := o.flatten(func(q pt) pt { return q }, 0.25)
	length := pathLength(flat)
	ends := []struct {
		kind     string
		tip, dir pt
	}{
		{headKind(p, "arrowheadStart", "none"), pts[0], endDir(o, pts, true)},
		{headKind(p, "arrowheadEnd", "arrow"), pts[len(pts)-1], endDir(o, pts, false)},
	}
	for _, end := range ends {
		hd := arrowhead(end.kind, end.tip, end.dir, sw, length)
		if hd.filled != nil {
			b.add(item{owner: e.ID, kind: "edge", path: hd.filled, fill: c, stroke: c, width: sw})
		}
		if hd.hollow != nil {
			b.add(item{owner: e.ID, kind: "edge", path: hd.hollow, fill: withAlpha(bg, alpha), stroke: c, width: sw})
		}
		if hd.lines != nil {
			b.add(item{owner: e.ID, kind: "edge", path: hd.lines, stroke: c, width: sw})
		}
	}
	text := p.str("text")
	if strings.TrimSpace(text) == "" {
		return
	}
	face := FaceOf(p.str("font"))
	size := p.fontSize()
	lh := size * face.LineHeight
	box := bboxOf(pts)
	// As the web UI bounds an arrow's label: 70 % of its width, at least 11 em.
	lines := face.Wrap(text, size, math.Max(0.7*box.W, 11*size))
	mid, _ := pointAtLength(flat, length/2)
	wmax := 0.0
	for _, l := range lines {
		wmax = math.Max(wmax, face.Measure(l, size))
	}
	blockH := float64(len(lines)) * lh
	t := layoutLines(face, size, lh, lines, wmax, blockH, 0, "middle", "middle", withAlpha(labelColor(p, "black"), alpha),
		pt{mid.X - wmax/2, mid.Y - blockH/2}, 0)
	t.bg = withAlpha(bg, alpha)
	if t.bg.A == 0 {
		t.bg = withAlpha(color.NRGBA{255, 255, 255, 255}, alpha)
	}
	t.bgBox = rect{-4, 0, wmax + 8, blockH}
	lab := base
	lab.text = t
	b.add(lab)
}

// headKind is an arrowhead prop, def when unset.
func headKind(p props, key, def string) string {
	if _, ok := p[key]; !ok {
		return def
	}
	return p.str(key)
}

// endDir is the direction a path arrives at its start (pointing out of
// the start) or its end.
func endDir(o *path, pts []pt, start bool) pt {
	if start {
		if len(o.ops) > 1 && o.ops[1].k == opCubic {
			if d := pts[0].sub(o.ops[1].p[0]); d.len() > 1e-6 {
				return d.unit()
			}
		}
		for i := 1; i < len(pts); i++ {
			if d := pts[0].sub(pts[i]); d.len() > 1e-6 {
				return d.unit()
			}
		}
		return pt{}
	}
	last := pts[len(pts)-1]
	if n := len(o.ops); n > 0 && o.ops[n-1].k == opCubic {
		if d := last.sub(o.ops[n-1].p[1]); d.len() > 1e-6 {
			return d.unit()
		}
	}
	for i := len(pts) - 2; i >= 0; i-- {
		if d := last.sub(pts[i]); d.len() > 1e-6 {
			return d.unit()
		}
	}
	return pt{}
}

// edgeEnds is a path for an edge stored without points (a canvas of an
// older model): from the middle of its from node towards its to node, each
// end where that line leaves its node's box.
func (b *builder) edgeEnds(e *canvas.Edge) []pt {
	a, z := b.s.Nodes[e.From], b.s.Nodes[e.To]
	if a == nil || z == nil {
		return nil
	}
	ca, cz := pt{a.X + a.W/2, a.Y + a.H/2}, pt{z.X + z.W/2, z.Y + z.H/2}
	return []pt{exitPoint(a, cz), exitPoint(z, ca)}
}

// exitPoint is where the ray from the middle of n's box towards q leaves it.
func exitPoint(n *canvas.Node, q pt) pt {
	c := pt{n.X + n.W/2, n.Y + n.H/2}
	d := q.sub(c)
	if d == (pt{}) {
		return c
	}
	t := math.Inf(1)
	if d.X != 0 {
		t = math.Min(t, n.W/2/math.Abs(d.X))
	}
	if d.Y != 0 {
		t = math.Min(t, n.H/2/math.Abs(d.Y))
	}
	return c.add(d.mul(t))
}
