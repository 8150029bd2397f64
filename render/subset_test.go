package render

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"

	"github.com/canvasd/canvasd/canvas"
)

// outlineOf returns glyph g of f as path segments at 1000 ppem.
func outlineOf(t *testing.T, f *sfnt.Font, g sfnt.GlyphIndex) sfnt.Segments {
	t.Helper()
	var buf sfnt.Buffer
	segs, err := f.LoadGlyph(&buf, g, fixed.I(1000), nil)
	if err != nil {
		t.Fatalf("glyph %d: %v", g, err)
	}
	return append(sfnt.Segments(nil), segs...)
}

// compositeGlyphs returns the composite glyphs of a face's font file.
func compositeGlyphs(t *testing.T, f *Face) []sfnt.GlyphIndex {
	t.Helper()
	ts, err := readTables(f.data)
	if err != nil {
		t.Fatal(err)
	}
	head, glyf := ts.table("head"), ts.table("glyf")
	offsets, err := glyphOffsets(ts.table("loca"), f.font.NumGlyphs(), int16(binary.BigEndian.Uint16(head[50:])) == 1, len(glyf))
	if err != nil {
		t.Fatal(err)
	}
	var out []sfnt.GlyphIndex
	for g := 0; g+1 < len(offsets); g++ {
		if d := glyf[offsets[g]:offsets[g+1]]; len(d) >= 10 && int16(binary.BigEndian.Uint16(d)) < 0 {
			out = append(out, sfnt.GlyphIndex(g))
		}
	}
	return out
}

// TestSubsetKeepsTheGlyphsDrawn: every font the renderer ships subsets; the
// subset parses, keeps every glyph index, draws the kept glyphs (composite
// ones with their components) exactly as the font does and no others, and
// is a small part of the font.
func TestSubsetKeepsTheGlyphsDrawn(t *testing.T) {
	const text = "Hello, wörld! Ça va? 0123"
	composites := 0
	for name, f := range faces {
		f.mustLoad()
		var buf sfnt.Buffer
		keep := map[sfnt.GlyphIndex]bool{}
		for _, r := range text {
			if g, err := f.font.GlyphIndex(&buf, r); err == nil && g != 0 {
				keep[g] = true
			}
		}
		comp := compositeGlyphs(t, f)
		if len(comp) > 0 {
			keep[comp[0]] = true
			composites++
		}
		data, err := subsetTrueType(f.data, keep)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sub, err := sfnt.Parse(data)
		if err != nil {
			t.Fatalf("%s: the subset does not parse: %v", name, err)
		}
		if sub.NumGlyphs() != f.font.NumGlyphs() || sub.UnitsPerEm() != f.font.UnitsPerEm() {
			t.Fatalf("%s: %d glyphs at %d units/em, the font has %d at %d", name, sub.NumGlyphs(), sub.UnitsPerEm(), f.font.NumGlyphs(), f.font.UnitsPerEm())
		}
		for g := range keep {
			if got, want := outlineOf(t, sub, g), outlineOf(t, f.font, g); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: glyph %d is drawn differently in the subset (%d segments, the font %d)", name, g, len(got), len(want))
			}
			var sb sfnt.Buffer
			adv, err := sub.GlyphAdvance(&sb, g, fixed.I(1000), font.HintingNone)
			want, _ := f.font.GlyphAdvance(&buf, g, fixed.I(1000), font.HintingNone)
			if err != nil || adv != want {
				t.Errorf("%s: glyph %d advances %v in the subset, %v in the font (%v)", name, g, adv, want, err)
			}
		}
		for _, r := range "Zq#" {
			g, err := sub.GlyphIndex(&buf, r)
			if err != nil || g == 0 || keep[g] {
				continue
			}
			if segs := outlineOf(t, sub, g); len(segs) != 0 {
				t.Errorf("%s: %q (glyph %d) was not asked for but has %d segments in the subset", name, r, g, len(segs))
			}
		}
		if len(data)*2 > len(f.data) {
			t.Errorf("%s: the subset is %d bytes, the font %d", name, len(data), len(f.data))
		}
	}
	if composites == 0 {
		t.Fatal("no font has a composite glyph: the components are not tested")
	}
}

func TestSubsetRefusesWhatIsNoTrueTypeFont(t *testing.T) {
	f := faces["draw"].mustLoad()
	cut := append([]byte(nil), f.data[:200]...)
	for name, data := range map[string][]byte{
		"empty":      nil,
		"CFF":        append([]byte("OTTO"), f.data[4:]...),
		"cut short":  cut,
		"not a font": []byte(strings.Repeat("x", 100)),
	} {
		if _, err := subsetTrueType(data, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestSVGEmbedsOnlyTheGlyphsOfItsText: an SVG's embedded font draws its
// text's glyphs and is a fraction of the font file.
func TestSVGEmbedsOnlyTheGlyphsOfItsText(t *testing.T) {
	s := testState([]*canvas.Node{{ID: "t", Type: "text", W: 200, H: 40, Props: map[string]any{"text": "hello"}}}, nil)
	var b bytes.Buffer
	if err := SVG(&b, s, Options{}); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`font-family:"Excalifont";src:url\(data:font/ttf;base64,([^)]*)\)`).FindSubmatch(b.Bytes())
	if m == nil {
		t.Fatalf("no Excalifont face in the SVG:\n%.2000s", b.String())
	}
	data, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := sfnt.Parse(data)
	if err != nil {
		t.Fatalf("the embedded font does not parse: %v", err)
	}
	full := faces["draw"].mustLoad()
	var buf sfnt.Buffer
	for _, r := range "hlo" {
		g, _ := full.font.GlyphIndex(&buf, r)
		if got, want := outlineOf(t, sub, g), outlineOf(t, full.font, g); len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("%q is drawn differently by the embedded font", r)
		}
	}
	if g, _ := full.font.GlyphIndex(&buf, 'x'); len(outlineOf(t, sub, g)) != 0 {
		t.Errorf("the embedded font draws 'x', which the text does not have")
	}
	if b.Len()*4 > len(full.data) {
		t.Errorf("the SVG of one word is %d bytes (the font file %d)", b.Len(), len(full.data))
	}
}
