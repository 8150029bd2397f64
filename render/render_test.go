package render

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// at returns the non-premultiplied colour of img at page point (x, y) of d.
func at(t *testing.T, d *Drawing, img *image.RGBA, x, y float64) color.NRGBA {
	t.Helper()
	v := d.View()
	px, py := int((x-v.X)*d.scale), int((y-v.Y)*d.scale)
	if !(image.Point{px, py}.In(img.Rect)) {
		t.Fatalf("page point (%g, %g) is outside the picture %v", x, y, img.Rect)
	}
	return color.NRGBAModel.Convert(img.At(px, py)).(color.NRGBA)
}

// near reports whether two colours differ by at most tol in every channel.
func near(a, b color.NRGBA, tol int) bool {
	d := func(x, y uint8) bool { return int(x)-int(y) <= tol && int(y)-int(x) <= tol }
	return d(a.R, b.R) && d(a.G, b.G) && d(a.B, b.B) && d(a.A, b.A)
}

func mustColor(s string) color.NRGBA {
	c, ok := ParseColor(s, false)
	if !ok {
		panic(s)
	}
	return c
}

var white = color.NRGBA{255, 255, 255, 255}

func drawState(t *testing.T, s *canvas.State, o Options) (*Drawing, *image.RGBA) {
	t.Helper()
	d, err := New(s, o)
	if err != nil {
		t.Fatal(err)
	}
	return d, d.Image()
}

func TestPNGShapesArePaintedWhereTheyAre(t *testing.T) {
	s := testState([]*canvas.Node{
		{ID: "red", Type: "geo", X: 0, Y: 0, W: 100, H: 60, Props: map[string]any{"geo": "rectangle", "fill": "solid", "fillColor": "#ff0000", "color": "#ff0000"}},
		{ID: "hollow", Type: "geo", X: 200, Y: 0, W: 100, H: 60, Props: map[string]any{"geo": "ellipse", "color": "blue", "strokeWidth": 4}},
		{ID: "palette", Type: "geo", X: 400, Y: 0, W: 100, H: 60, Props: map[string]any{"geo": "rectangle", "fill": "solid", "color": "green"}},
		{ID: "turned", Type: "geo", X: 600, Y: 0, W: 100, H: 20, Rotation: math.Pi / 2, Props: map[string]any{"geo": "rectangle", "fill": "fill", "color": "violet", "roundness": "sharp"}},
		{ID: "faint", Type: "geo", X: 0, Y: 200, W: 100, H: 60, Props: map[string]any{"geo": "rectangle", "fill": "solid", "fillColor": "#000000", "opacity": 0.5, "strokeWidth": 0}},
	}, nil)
	d, img := drawState(t, s, Options{Bounds: &Rect{-10, -10, 800, 300}})
	if c := at(t, d, img, 50, 30); !near(c, mustColor("#ff0000"), 2) {
		t.Errorf("the red rectangle's centre is %v, want red", c)
	}
	if c := at(t, d, img, 250, 30); !near(c, white, 2) {
		t.Errorf("an unfilled ellipse's centre is %v, want the white background", c)
	}
	if c := at(t, d, img, 201, 30); !near(c, mustColor("blue"), 40) {
		t.Errorf("the ellipse's left side is %v, want its blue stroke %v", c, mustColor("blue"))
	}
	light, _ := ParseColor("green", true)
	if c := at(t, d, img, 450, 30); !near(c, light, 2) {
		t.Errorf("a solid fill of palette green is %v, want its light tone %v", c, light)
	}
	// Turned a quarter about its corner (600, 0): it now covers x 580..600, y 0..100.
	if c := at(t, d, img, 590, 80); !near(c, mustColor("violet"), 2) {
		t.Errorf("the turned shape at (590, 80) is %v, want violet", c)
	}
	if c := at(t, d, img, 650, 10); !near(c, white, 2) {
		t.Errorf("where the turned shape was before turning is %v, want white", c)
	}
	if c := at(t, d, img, 50, 230); !near(c, color.NRGBA{127, 127, 127, 255}, 3) {
		t.Errorf("half-opaque black over white is %v, want grey", c)
	}
}

func TestPNGBoundsScaleAndBackground(t *testing.T) {
	s := testState([]*canvas.Node{
		{ID: "a", Type: "geo", X: 100, Y: 100, W: 50, H: 50, Props: map[string]any{"fill": "solid", "fillColor": "#00ff00"}},
	}, nil)
	d, img := drawState(t, s, Options{Bounds: &Rect{90, 90, 100, 40}, Scale: 2, Transparent: true})
	if w, h := img.Rect.Dx(), img.Rect.Dy(); w != 200 || h != 80 {
		t.Fatalf("a 100×40 region at scale 2 is %d×%d pixels, want 200×80", w, h)
	}
	if c := at(t, d, img, 125, 125); !near(c, color.NRGBA{0, 255, 0, 255}, 2) {
		t.Errorf("the shape's middle is %v, want green", c)
	}
	if c := at(t, d, img, 180, 95); c.A != 0 {
		t.Errorf("a transparent background is %v at an empty spot, want alpha 0", c)
	}
	// Without bounds: the drawing's box and 10 of padding.
	d2, img2 := drawState(t, s, Options{})
	if v := d2.View(); math.Abs(v.X-89) > 1.01 || img2.Rect.Dx() < 70 || img2.Rect.Dx() > 74 {
		t.Errorf("the default view is %+v (%v), want the shape's box with its stroke and 10 of padding", v, img2.Rect)
	}
}

func TestPNGText(t *testing.T) {
	s := testState([]*canvas.Node{
		{ID: "label", Type: "geo", X: 0, Y: 0, W: 300, H: 100, Props: map[string]any{"text": "Hello", "color": "red", "size": "xl", "strokeWidth": 0}},
	}, nil)
	d, img := drawState(t, s, Options{})
	// Count reddish pixels in the middle band, where the label is, and outside it.
	inside, outside := 0, 0
	red := mustColor("red")
	for y := 0.0; y < 100; y++ {
		for x := 0.0; x < 300; x++ {
			c := at(t, d, img, x, y)
			if near(c, red, 60) {
				if x > 80 && x < 220 && y > 25 && y < 75 {
					inside++
				} else {
					outside++
				}
			}
		}
	}
	if inside < 100 || outside > 0 {
		t.Errorf("the label painted %d red pixels around the middle and %d elsewhere; want many in the middle, none elsewhere", inside, outside)
	}
}

func TestWrapAsTheWebUI(t *testing.T) {
	f := FaceOf("draw")
	lines := f.Wrap("The quick brown fox jumps over the lazy dog", 20, 150)
	if len(lines) < 3 {
		t.Fatalf("wrapped into %q; want several lines", lines)
	}
	for _, l := range lines {
		if w := math.Ceil(f.Measure(l, 20)); w > 150 {
			t.Errorf("line %q is %g wide, over 150", l, w)
		}
		if strings.HasPrefix(l, " ") || strings.HasSuffix(l, " ") {
			t.Errorf("line %q keeps the space it was cut at", l)
		}
	}
	if got := strings.Join(lines, " "); got != "The quick brown fox jumps over the lazy dog" {
		t.Errorf("the lines %q do not give back the words", lines)
	}
	// A word longer than the width is cut inside it.
	long := f.Wrap("Supercalifragilisticexpialidocious", 20, 60)
	if len(long) < 3 || strings.Join(long, "") != "Supercalifragilisticexpialidocious" {
		t.Errorf("a long word wraps into %q", long)
	}
	// Line breaks are kept, and a width of 0 only splits at them.
	if got := f.Wrap("a\nb c", 20, 0); !slices.Equal(got, []string{"a", "b c"}) {
		t.Errorf("Wrap with no width = %q", got)
	}
	// Excalifont is narrower than Cascadia for the same text.
	if a, b := f.Measure("Hello world", 20), FaceOf("mono").Measure("Hello world", 20); !(a > 50 && a < b) {
		t.Errorf("Hello world measures %g in Excalifont and %g in Cascadia", a, b)
	}
}

func TestPNGImageCropAndFlip(t *testing.T) {
	url := redBluePNG(20, 10)
	s := testState([]*canvas.Node{
		{ID: "plain", Type: "image", X: 0, Y: 0, W: 200, H: 100, Props: map[string]any{"url": url}},
		{ID: "flipped", Type: "image", X: 0, Y: 200, W: 200, H: 100, Props: map[string]any{"url": url, "flipX": true}},
		{ID: "cropped", Type: "image", X: 0, Y: 400, W: 200, H: 100, Props: map[string]any{"url": url, "crop": map[string]any{"x": 0.5, "y": 0, "w": 0.5, "h": 1}}},
		{ID: "remote", Type: "image", X: 300, Y: 0, W: 200, H: 100, Props: map[string]any{"url": "https://example.com/a.png", "altText": "a remote picture"}},
	}, nil)
	d, img := drawState(t, s, Options{})
	redC, blueC := color.NRGBA{255, 0, 0, 255}, color.NRGBA{0, 0, 255, 255}
	for _, c := range []struct {
		name string
		x, y float64
		want color.NRGBA
	}{
		{"plain left", 40, 50, redC}, {"plain right", 160, 50, blueC},
		{"flipped left", 40, 250, blueC}, {"flipped right", 160, 250, redC},
		{"cropped left", 40, 450, blueC}, {"cropped right", 160, 450, blueC},
	} {
		if got := at(t, d, img, c.x, c.y); !near(got, c.want, 10) {
			t.Errorf("%s is %v, want %v", c.name, got, c.want)
		}
	}
	// A remote picture is not fetched: a card in the PNG, the link in the SVG.
	if c := at(t, d, img, 310, 10); !near(c, color.NRGBA{0xee, 0xf0, 0xf3, 255}, 2) {
		t.Errorf("a remote picture's card is %v", c)
	}
	var b bytes.Buffer
	if err := d.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `href="https://example.com/a.png"`) {
		t.Errorf("the SVG does not reference the remote picture")
	}
}

func TestPNGFrameCutsItsChildren(t *testing.T) {
	s := testState([]*canvas.Node{
		{ID: "f", Type: "frame", Name: "F", X: 0, Y: 0, W: 100, H: 100},
		{ID: "child", Type: "geo", ParentID: "f", X: 50, Y: 20, W: 100, H: 60, Props: map[string]any{"fill": "solid", "fillColor": "#ff0000", "strokeWidth": 0}},
	}, nil)
	d, img := drawState(t, s, Options{Bounds: &Rect{-10, -30, 200, 150}})
	if c := at(t, d, img, 80, 50); !near(c, mustColor("#ff0000"), 2) {
		t.Errorf("the child inside its frame is %v, want red", c)
	}
	if c := at(t, d, img, 130, 50); !near(c, white, 2) {
		t.Errorf("the child past its frame's side is %v, want it cut off", c)
	}
}

func TestPNGEdgeHeadsAndLabels(t *testing.T) {
	s := testState([]*canvas.Node{
		{ID: "a", Type: "geo", X: 0, Y: 0, W: 100, H: 100},
		{ID: "b", Type: "geo", X: 400, Y: 0, W: 100, H: 100},
	}, []*canvas.Edge{
		{ID: "e", From: "a", To: "b", Props: map[string]any{"points": pts(100, 50, 400, 50), "color": "red", "arrowheadEnd": "triangle", "arrowheadStart": "dot"}},
		{ID: "l", Props: map[string]any{"points": pts(0, 300, 500, 300), "text": "label", "color": "blue", "labelColor": "black"}},
	})
	d, img := drawState(t, s, Options{})
	red := mustColor("red")
	// The triangle head is filled: a point inside it, off the line.
	if c := at(t, d, img, 392, 53); !near(c, red, 40) {
		t.Errorf("inside the triangle head is %v, want red", c)
	}
	if c := at(t, d, img, 250, 56); !near(c, white, 2) {
		t.Errorf("beside the line is %v, want white (no head there)", c)
	}
	if c := at(t, d, img, 106, 53); !near(c, red, 40) {
		t.Errorf("inside the start dot is %v, want red", c)
	}
	// The label sits on a background box at the middle: the line is hidden under it.
	blueish := 0
	for x := 235.0; x < 265; x++ {
		if c := at(t, d, img, x, 300); near(c, mustColor("blue"), 60) {
			blueish++
		}
	}
	if blueish > 0 {
		t.Errorf("%d of 30 pixels along the line under the label are the line's; the label's box should cover it", blueish)
	}
}

// svgDoc is the part of an SVG the tests read.
type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	ViewBox string   `xml:"viewBox,attr"`
	Groups  []struct {
		ID    string `xml:"data-id,attr"`
		Kind  string `xml:"data-kind,attr"`
		Paths []struct {
			D      string `xml:"d,attr"`
			Fill   string `xml:"fill,attr"`
			Stroke string `xml:"stroke,attr"`
		} `xml:"path"`
		Texts []svgTextEl `xml:"text"`
		Inner []struct {
			Texts []svgTextEl `xml:"text"`
		} `xml:"g"`
	} `xml:"g"`
	Style string `xml:"defs>style"`
}

type svgTextEl struct {
	Family string `xml:"font-family,attr"`
	Fill   string `xml:"fill,attr"`
	Spans  []struct {
		Text string `xml:",chardata"`
	} `xml:"tspan"`
}

func parseSVG(t *testing.T, r io.Reader) svgDoc {
	t.Helper()
	var doc svgDoc
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		t.Fatalf("the SVG does not parse: %v", err)
	}
	return doc
}

func TestSVGHasEveryNodeAndEdge(t *testing.T) {
	s := everyKind()
	var b bytes.Buffer
	if err := SVG(&b, s, Options{}); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, &b)
	ids := map[string]string{}
	texts := map[string][]string{}
	for _, g := range doc.Groups {
		ids[g.ID] = g.Kind
		all := g.Texts
		for _, in := range g.Inner {
			all = append(all, in.Texts...)
		}
		for _, tx := range all {
			for _, sp := range tx.Spans {
				texts[g.ID] = append(texts[g.ID], sp.Text)
			}
		}
	}
	for id, n := range s.Nodes {
		if n.Type == "group" {
			if _, ok := ids[id]; ok {
				t.Errorf("a group node drew something itself")
			}
			continue
		}
		if ids[id] != n.Type {
			t.Errorf("node %s (%s) has no group of its kind in the SVG (got %q)", id, n.Type, ids[id])
		}
	}
	for id := range s.Edges {
		if ids[id] != "edge" {
			t.Errorf("edge %s is not in the SVG", id)
		}
	}
	if got := strings.Join(texts["note"], " "); got != "A note wraps its words inside the square" {
		t.Errorf("the note's text is %q in the SVG", got)
	}
	if len(texts["note"]) < 2 {
		t.Errorf("the note's text was not wrapped: %q", texts["note"])
	}
	if !strings.Contains(strings.Join(texts["doc"], "\n"), `println("hello")`) {
		t.Errorf("the document card shows %q", texts["doc"])
	}
	for _, fam := range []string{"Excalifont", "Cascadia", "Nunito"} {
		if !strings.Contains(doc.Style, `font-family:"`+fam+`";src:url(data:font/ttf;base64,`) {
			t.Errorf("the SVG does not embed the font %s", fam)
		}
	}
}

func TestSelectionAndErrors(t *testing.T) {
	s := everyKind()
	d, err := New(s, Options{IDs: []string{"frame", "head-01"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.ownersOf(), []string{"frame", "head-01", "in-frame"}; !slices.Equal(got, want) {
		t.Errorf("drawing frame and head-01 draws %q, want %q (a frame brings its children)", got, want)
	}
	// An edge between two drawn nodes comes along.
	d, _ = New(s, Options{IDs: []string{"note", "text"}})
	if got := d.ownersOf(); !slices.Contains(got, "bound") {
		t.Errorf("the edge between two selected nodes is left out: %q", got)
	}
	for _, o := range []Options{{Scale: 9}, {Scale: -1}, {Bounds: &Rect{0, 0, 0, 10}}, {Bounds: &Rect{0, 0, 1e6, 1e6}}} {
		var fe *canvas.FieldError
		if _, err := New(s, o); !errors.As(err, &fe) || !errors.Is(err, canvas.ErrUnprocessable) {
			t.Errorf("New(%+v) = %v, want a field error", o, err)
		}
	}
}

func TestPNGEncodes(t *testing.T) {
	var b bytes.Buffer
	if err := PNG(&b, everyKind(), Options{Scale: 0.5}); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() < 500 {
		t.Errorf("the PNG is %v", img.Bounds())
	}
}

func TestPNGEncoderRoundTrips(t *testing.T) {
	for _, transparent := range []bool{false, true} {
		// Tall enough for several bands.
		s := gridCanvas(300, 3, 120, 60, 20)
		d, err := New(s, Options{Transparent: transparent, Scale: 1.5})
		if err != nil {
			t.Fatal(err)
		}
		img := d.Image()
		var b bytes.Buffer
		if err := encodePNG(&b, img); err != nil {
			t.Fatal(err)
		}
		got, err := png.Decode(&b)
		if err != nil {
			t.Fatalf("transparent=%v: the PNG does not decode: %v", transparent, err)
		}
		if got.Bounds() != img.Rect {
			t.Fatalf("decoded %v, drew %v", got.Bounds(), img.Rect)
		}
		bad := 0
		for y := 0; y < img.Rect.Dy(); y += 3 {
			for x := 0; x < img.Rect.Dx(); x += 3 {
				a := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
				g := color.NRGBAModel.Convert(got.At(x, y)).(color.NRGBA)
				if !near(a, g, 2) {
					bad++
				}
			}
		}
		if bad > 0 {
			t.Errorf("transparent=%v: %d sampled pixels differ after decoding", transparent, bad)
		}
	}
}

// TestPNGLabelOverItsBorderKeepsBoth: a label drawn over its shape's border
// in the border's colour is rasterized with the border in one pass; where
// they overlap the pixels stay painted (polygons of opposite windings would
// cancel there and leave holes).
func TestPNGLabelOverItsBorderKeepsBoth(t *testing.T) {
	s := testState([]*canvas.Node{
		{ID: "b", Type: "geo", X: 0, Y: 0, W: 60, H: 60, Props: map[string]any{"geo": "rectangle", "roundness": "sharp",
			"color": "#ff0000", "strokeWidth": 10.0, "text": "WWWWWWWW", "size": "xl", "align": "start", "verticalAlign": "start"}},
	}, nil)
	d, img := drawState(t, s, Options{Bounds: &Rect{-10, -10, 80, 80}, Scale: 4})
	holes := 0
	for x := 1.0; x < 59; x += 0.25 {
		for y := -4.0; y <= 4; y += 0.25 {
			if c := at(t, d, img, x, y); c.G > 60 { // not the red of the border
				holes++
			}
		}
	}
	if holes > 0 {
		t.Errorf("%d samples of the top border under the label are not red: the label's glyphs and the border cancel out", holes)
	}
}

// TestPNGIsTheImage: WritePNG draws the picture band by band, each band
// compressed as soon as it is drawn; what it writes is exactly what Image
// draws, opaque (RGB) and transparent (RGBA), at scales that put band edges
// through shapes, text, turned text and pictures.
func TestPNGIsTheImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *canvas.State
		o    Options
	}{
		{"every kind", everyKind(), Options{Scale: 1.7}},
		{"every kind transparent", everyKind(), Options{Scale: 0.9, Transparent: true}},
		{"grid", gridCanvas(400, 20, 60, 30, 12), Options{}},
		{"grid region", gridCanvas(400, 20, 60, 30, 12), Options{Bounds: &Rect{100, 50, 900, 500}, Scale: 2.3}},
	} {
		d, err := New(tc.s, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		img := d.Image()
		if w, h := d.PixelSize(); h < 3*bandRowsFor(w, h) {
			t.Fatalf("%s: %d rows are fewer than three bands", tc.name, h)
		}
		var b bytes.Buffer
		if err := d.WritePNG(&b); err != nil {
			t.Fatal(err)
		}
		got, err := png.Decode(&b)
		if err != nil {
			t.Fatalf("%s: the PNG does not decode: %v", tc.name, err)
		}
		if got.Bounds() != img.Rect {
			t.Fatalf("%s: wrote %v, drew %v", tc.name, got.Bounds(), img.Rect)
		}
		var want, pix []byte
		switch g := got.(type) {
		case *image.RGBA: // RGB in the file
			want, pix = img.Pix, g.Pix
		case *image.NRGBA:
			want, pix = appendRow(nil, img.Pix, false), g.Pix
		default:
			t.Fatalf("%s: decoded a %T", tc.name, got)
		}
		if (got.ColorModel() == color.RGBAModel) == tc.o.Transparent {
			t.Errorf("%s: decoded a %T, transparent %v", tc.name, got, tc.o.Transparent)
		}
		if off := slices.Compare(want, pix); off != 0 {
			n := 0
			for i := range want {
				if want[i] != pix[i] {
					n++
				}
			}
			t.Errorf("%s: %d of %d bytes differ from the image", tc.name, n, len(want))
		}
	}
}

// TestGlyphMaskAddsToTheCoverage: an upright glyph's cached coverage is
// added to what the pass already covers (its label's border, say),
// saturating, cut to the pass's area: a glyph's empty corners leave the
// border there, and overlaps are covered once.
func TestGlyphMaskAddsToTheCoverage(t *testing.T) {
	mask := &image.Alpha{Pix: []uint8{0, 100, 200, 255, 7}, Stride: 5, Rect: image.Rect(0, 0, 5, 1)}
	g := &glyphMask{w: 5, h: 2, pix: []uint8{0, 100, 100, 10, 9, 50, 50, 50, 50, 50}}
	// The area's top-left is at device (10, 20); the glyph sits one pixel
	// to the left and one row above, so its second row, shifted, lands.
	addMask(mask, image.Point{10, 20}, placedMask{g, 9, 19})
	if want := []uint8{50, 150, 250, 255, 7}; !slices.Equal(mask.Pix, want) {
		t.Errorf("coverage %v, want %v", mask.Pix, want)
	}
}
