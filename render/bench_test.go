package render

import (
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// gridCanvas is a canvas of n shapes in rows of cols, each w×h with gap
// between them: mostly labelled geo shapes of every geometry and fill,
// with notes, text and documents among them, and an edge from every
// fourth shape to its right-hand neighbour.
func gridCanvas(n, cols int, w, h, gap float64) *canvas.State {
	s := canvas.NewState()
	fills := []string{"none", "solid", "hachure", "semi", "cross-hatch"}
	colors := []string{"black", "blue", "red", "green", "violet", "orange"}
	for i := 0; i < n; i++ {
		x, y := float64(i%cols)*(w+gap), float64(i/cols)*(h+gap)
		id := fmt.Sprintf("n%05d", i)
		nd := &canvas.Node{ID: id, X: x, Y: y, W: w, H: h, Index: fmt.Sprintf("a%06d", i)}
		switch i % 10 {
		case 7:
			nd.Type = "note"
			nd.Props = map[string]any{"text": "note " + id, "size": "s"}
		case 8:
			nd.Type = "text"
			nd.Props = map[string]any{"text": "text " + id, "size": "s"}
		case 9:
			nd.Type = "doc"
			nd.Name = id + ".md"
			nd.Props = map[string]any{"text": "# heading\nline one\nline two"}
		default:
			nd.Type = "geo"
			nd.Props = map[string]any{"geo": Geos[i%len(Geos)], "fill": fills[i%len(fills)], "color": colors[i%len(colors)],
				"text": "shape " + id, "size": "s"}
		}
		s.Nodes[id] = nd
		if i%4 == 0 && i%cols != cols-1 {
			eid := fmt.Sprintf("e%05d", i)
			s.Edges[eid] = &canvas.Edge{ID: eid, From: id, To: fmt.Sprintf("n%05d", i+1), Props: map[string]any{
				"points": pts(x+w, y+h/2, x+w+gap, y+h/2)}}
		}
	}
	return s
}

// BenchmarkPNGViewport1000 draws a 1,600×900-pixel PNG of a viewport that
// holds 1,000 shapes of a 10,000-shape canvas (target ≤ 100 ms).
func BenchmarkPNGViewport1000(b *testing.B) {
	s := gridCanvas(10000, 100, 120, 60, 40)
	// 40 columns × 25 rows = 1,000 shapes: 6,400 × 2,500 page units.
	view := &Rect{X: 0, Y: 0, W: 40*160 - 40, H: 25*100 - 40}
	scale := 1600 / view.W
	d, err := New(s, Options{Bounds: view, Scale: scale})
	if err != nil {
		b.Fatal(err)
	}
	shapes := map[string]bool{}
	for _, it := range d.items {
		if it.kind != "edge" {
			shapes[it.owner] = true
		}
	}
	if len(shapes) != 1000 {
		b.Fatalf("the viewport holds %d shapes, want 1,000", len(shapes))
	}
	benchPNG(b, s, Options{Bounds: view, Scale: scale})
}

// BenchmarkPNGCanvas10000 draws a whole 10,000-shape canvas at 1×
// (target ≤ 1 s).
func BenchmarkPNGCanvas10000(b *testing.B) {
	s := gridCanvas(10000, 100, 60, 30, 12)
	benchPNG(b, s, Options{})
}

func benchPNG(b *testing.B, s *canvas.State, o Options) {
	b.ReportAllocs()
	var w, h int
	cpu0 := cpuTime()
	for b.Loop() {
		d, err := New(s, o)
		if err != nil {
			b.Fatal(err)
		}
		w, h = d.PixelSize()
		if err := d.WritePNG(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(w*h)/1e6, "Mpx")
	// On a shared machine the wall time moves with the load; the CPU time
	// spent (all cores) much less.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDrawOnly10000 is BenchmarkPNGCanvas10000 without the PNG
// encoding: the drawing alone.
func BenchmarkDrawOnly10000(b *testing.B) {
	s := gridCanvas(10000, 100, 60, 30, 12)
	b.ReportAllocs()
	for b.Loop() {
		d, err := New(s, Options{})
		if err != nil {
			b.Fatal(err)
		}
		d.Image()
	}
}
