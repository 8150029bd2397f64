// Package render draws a canvas state to SVG and PNG with no browser: every
// kind of node (geo shapes, notes, text, frames, documents as cards,
// images, embeds, freehand drawings, lines) and every edge (its path,
// straight, curved or elbow, its heads and its label), with text in the
// fonts the web UI draws it in (fonts/README.md), wrapped as the UI wraps
// it.
//
// The drawing follows docs/model.md: colours by palette name or hex, fill
// styles (solid, hachure, cross-hatch, zigzag, ...), dashes, stroke widths,
// opacity, roundness, fonts and alignment. Strokes are drawn clean (the
// hand-drawn roughness the web UI adds is left out). Both formats are made
// from one list of drawing items, so an SVG and a PNG of the same state
// show the same. Rendering is pure apart from reading the embedded fonts:
// no network access (an https: image is referenced by an SVG and drawn as
// a card in a PNG).
package render

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/canvasd/canvasd/canvas"
)

// Rect is a box in page coordinates.
type Rect struct {
	X, Y, W, H float64
}

// Options say what to draw and how.
type Options struct {
	// IDs limits the drawing to these nodes and edges (nil: everything). A
	// node brings its descendants (a frame's or group's children), and an
	// edge whose both ends are drawn nodes is drawn too.
	IDs []string
	// Bounds is the page region to draw. Nil: the box of what is drawn,
	// with Padding around it.
	Bounds *Rect
	// Scale is the PNG's pixels per page unit (0 means 1). An SVG is always
	// in page units.
	Scale float64
	// Transparent leaves the background transparent instead of white.
	Transparent bool
	// Padding is the margin around the drawing when Bounds is nil (0: 10,
	// as Excalidraw exports; negative: none).
	Padding float64
	// FontsByName makes an SVG name its fonts instead of embedding them: far
	// smaller (a font is 50 to 400 KiB), for a reader of the text (a
	// model); a viewer draws the text in whatever fonts it has.
	FontsByName bool
}

// Limits of what one drawing may be.
const (
	// MaxPixels bounds a PNG's width × height.
	MaxPixels = 32 << 20
	// MaxSide bounds a PNG's width and height.
	MaxSide = 16384
	// MaxScale bounds Options.Scale.
	MaxScale = 8
	// MinScale is the smallest Options.Scale.
	MinScale = 0.01
)

// Drawing is a canvas state laid out for drawing: what the SVG and PNG
// writers draw. Build it once to write both.
type Drawing struct {
	items       []item
	view        rect
	scale       float64
	transparent bool
	fontsByName bool
}

// View is the page region the drawing shows.
func (d *Drawing) View() Rect { return Rect{d.view.X, d.view.Y, d.view.W, d.view.H} }

// PixelSize is the size of the drawing's PNG in pixels.
func (d *Drawing) PixelSize() (w, h int) {
	return max(1, int(math.Ceil(d.view.W*d.scale-1e-9))), max(1, int(math.Ceil(d.view.H*d.scale-1e-9)))
}

// New lays out s for drawing. A bad option (a scale out of range, a
// region with no area, a PNG over MaxPixels or MaxSide) is a
// *canvas.FieldError of kind ErrUnprocessable naming "scale" or "bounds";
// ids that name nothing are left out (a selection of nothing draws an
// empty picture).
func New(s *canvas.State, o Options) (*Drawing, error) {
	scale := o.Scale
	if scale == 0 {
		scale = 1
	}
	if !(scale >= MinScale && scale <= MaxScale) {
		return nil, canvas.Unprocessable("scale", "must be between %g and %g; got %g", float64(MinScale), float64(MaxScale), scale)
	}
	if o.Bounds != nil {
		b := o.Bounds
		if !(b.W > 0 && b.H > 0) || !finite(b.X, b.Y, b.W, b.H) {
			return nil, canvas.Unprocessable("bounds", "must be x,y,w,h with w and h above 0; got %g,%g,%g,%g", b.X, b.Y, b.W, b.H)
		}
	}
	var cull *rect
	if o.Bounds != nil {
		c := rect{o.Bounds.X, o.Bounds.Y, o.Bounds.W, o.Bounds.H}
		cull = &c
	}
	var nodes []*canvas.Node
	var edges []*canvas.Edge
	if cull != nil && o.IDs == nil {
		// A region of a large canvas: only what may show is sorted and built.
		nodes, edges = mayShow(s, *cull)
	} else {
		nodes, edges = Select(s, o.IDs)
	}
	bld := &builder{s: s, clips: map[string]*rect{}}
	for _, n := range nodes {
		if cull != nil && !nodeMayShow(n, *cull) {
			continue
		}
		bld.node(n)
	}
	bg := color.NRGBA{255, 255, 255, 255}
	for _, e := range edges {
		if cull != nil && !edgeMayShow(e, *cull) {
			continue
		}
		bld.edge(e, bg)
	}
	d := &Drawing{scale: scale, transparent: o.Transparent, fontsByName: o.FontsByName}
	if cull != nil {
		d.view = *cull
		for _, it := range bld.items {
			if it.bounds().intersects(*cull) {
				d.items = append(d.items, it)
			}
		}
	} else {
		d.items = bld.items
		box := noRect
		for i := range d.items {
			box = box.union(d.items[i].bounds())
		}
		pad := o.Padding
		if pad == 0 {
			pad = 10
		}
		if pad < 0 {
			pad = 0
		}
		if box.W < 0 {
			box = rect{0, 0, 0, 0}
		}
		d.view = box.grow(pad)
		if d.view.W <= 0 || d.view.H <= 0 {
			d.view = rect{d.view.X, d.view.Y, math.Max(d.view.W, 1), math.Max(d.view.H, 1)}
		}
	}
	w, h := d.PixelSize()
	if w > MaxSide || h > MaxSide || w*h > MaxPixels {
		field := "scale"
		if o.Bounds != nil {
			field = "bounds"
		}
		most := math.Min(math.Min(MaxSide/d.view.W, MaxSide/d.view.H), math.Sqrt(MaxPixels/(d.view.W*d.view.H)))
		return nil, canvas.Unprocessable(field, "the picture would be %d×%d pixels, over the limit of %d pixels a side and %d in all; draw a smaller region (bounds) or lower the scale (at most %.3g here)",
			w, h, MaxSide, MaxPixels, math.Floor(most*1000)/1000)
	}
	return d, nil
}

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// nodeMayShow reports whether anything of n could be inside view: its
// turned box with a margin for labels and frame titles that overflow it.
func nodeMayShow(n *canvas.Node, view rect) bool {
	if n.Type == "group" {
		return false
	}
	box := rect{n.X, n.Y, math.Max(n.W, 0), math.Max(n.H, 0)}
	if n.Rotation != 0 {
		box = turnedBox(rect{0, 0, box.W, box.H}, pt{n.X, n.Y}, n.Rotation)
	}
	margin := 200 + math.Max(n.W, n.H)
	if n.Type == "text" {
		margin += 2000 // auto-sized text may run far past its box
	}
	return box.grow(margin).intersects(view)
}

// mayShow is the nodes (in z-order) and edges (by id) of s that may show in view.
func mayShow(s *canvas.State, view rect) ([]*canvas.Node, []*canvas.Edge) {
	nodes := make([]*canvas.Node, 0, 256)
	for _, n := range s.Nodes {
		if nodeMayShow(n, view) {
			nodes = append(nodes, n)
		}
	}
	sort.Slice(nodes, func(i, j int) bool {
		if nodes[i].Index != nodes[j].Index {
			return nodes[i].Index < nodes[j].Index
		}
		return nodes[i].ID < nodes[j].ID
	})
	edges := make([]*canvas.Edge, 0, 64)
	for _, e := range s.Edges {
		if edgeMayShow(e, view) {
			edges = append(edges, e)
		}
	}
	sort.Slice(edges, func(i, j int) bool { return edges[i].ID < edges[j].ID })
	return nodes, edges
}

// edgeMayShow reports whether anything of e could be inside view: the box
// of its points with a margin for its heads and label (an edge without
// points is built and culled by what it draws).
func edgeMayShow(e *canvas.Edge, view rect) bool {
	list, _ := e.Props["points"].([]any)
	if len(list) < 2 {
		return true
	}
	box := noRect // the box of the points, as bboxOf(pointsOf(list)) without the list
	for _, v := range list {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		x, okx := props(m).num("x")
		y, oky := props(m).num("y")
		if okx && oky {
			box = box.union(rect{x, y, 0, 0})
		}
	}
	if box.W < 0 {
		return true
	}
	return box.grow(300).intersects(view)
}

// Select returns the nodes (in z-order) and edges (by id) of s that ids
// name: nil names everything; a node brings its descendants (a frame's or
// group's children), and an edge whose two ends are both selected nodes
// comes along. Ids that name nothing are left out.
func Select(s *canvas.State, ids []string) ([]*canvas.Node, []*canvas.Edge) {
	nodes, edges := s.SortedNodes(), s.SortedEdges()
	if ids == nil {
		return nodes, edges
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	in := func(n *canvas.Node) bool {
		for depth := 0; n != nil && depth < 64; depth++ {
			if want[n.ID] {
				return true
			}
			n = s.Nodes[n.ParentID]
		}
		return false
	}
	keptNodes := nodes[:0]
	drawn := map[string]bool{}
	for _, n := range nodes {
		if in(n) {
			keptNodes = append(keptNodes, n)
			drawn[n.ID] = true
		}
	}
	keptEdges := edges[:0]
	for _, e := range edges {
		if want[e.ID] || (e.From != "" && e.To != "" && drawn[e.From] && drawn[e.To]) {
			keptEdges = append(keptEdges, e)
		}
	}
	return keptNodes, keptEdges
}

// WritePNG writes the drawing as a PNG: the pixels of Image, drawn in
// bands of rows on every core, each band compressed as soon as it is
// drawn, so the whole picture is never held in memory.
func (d *Drawing) WritePNG(w io.Writer) error {
	p := d.bands()
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := writeBandedPNG(bw, p.width, p.height, !d.transparent, p.rows, p.painter); err != nil {
		return fmt.Errorf("render: writing the PNG: %w", err)
	}
	return bw.Flush()
}

// Image draws the drawing into a new RGBA image (premultiplied alpha), in
// bands of rows on every core.
func (d *Drawing) Image() *image.RGBA {
	p := d.bands()
	img := image.NewRGBA(image.Rect(0, 0, p.width, p.height))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(p.bands)) {
		wg.Go(func() {
			paint := p.painter()
			for b := int(next.Add(1) - 1); b < len(p.bands); b = int(next.Add(1) - 1) {
				paint(img.SubImage(image.Rect(0, b*p.rows, p.width, min(p.height, (b+1)*p.rows))).(*image.RGBA))
			}
		})
	}
	wg.Wait()
	return img
}

// bandPlan is a drawing laid out to be drawn in bands of rows.
type bandPlan struct {
	d             *Drawing
	width, height int
	rows          int // in a band (the last may have fewer)
	steps         []step
	bands         [][]int32 // each band's steps, in drawing order
}

// bands plans the drawing's steps and the bands each touches.
func (d *Drawing) bands() *bandPlan {
	width, height := d.PixelSize()
	p := &bandPlan{d: d, width: width, height: height, rows: bandRowsFor(width, height)}
	p.steps = newRaster(width, height, d.view, d.scale).plan(d.items)
	p.bands = make([][]int32, (height+p.rows-1)/p.rows)
	for i := range p.steps {
		y0, y1 := p.steps[i].rows()
		for b := y0 / p.rows; b < len(p.bands) && b*p.rows < y1; b++ {
			p.bands[b] = append(p.bands[b], int32(i))
		}
	}
	return p
}

// painter returns a paintBand that draws whole bands of the plan (dst's
// rows are one band's); each goroutine needs its own.
func (p *bandPlan) painter() paintBand {
	r := newRaster(p.width, p.height, p.d.view, p.d.scale)
	return func(dst *image.RGBA) {
		r.dst = dst
		r.clear(p.d.transparent)
		for _, i := range p.bands[dst.Rect.Min.Y/p.rows] {
			r.drawStep(p.d.items, &p.steps[i])
		}
	}
}

// ownersOf lists the distinct owners of the items in drawing order, for tests.
func (d *Drawing) ownersOf() []string {
	seen := map[string]bool{}
	var out []string
	for _, it := range d.items {
		if !seen[it.owner] {
			seen[it.owner] = true
			out = append(out, it.owner)
		}
	}
	sort.Strings(out)
	return out
}

// SVG draws s as an SVG document (see Drawing.WriteSVG).
func SVG(w io.Writer, s *canvas.State, o Options) error {
	d, err := New(s, o)
	if err != nil {
		return err
	}
	return d.WriteSVG(w)
}

// PNG draws s as a PNG image.
func PNG(w io.Writer, s *canvas.State, o Options) error {
	d, err := New(s, o)
	if err != nil {
		return err
	}
	return d.WritePNG(w)
}
