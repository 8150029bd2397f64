package render

import (
	"embed"
	"fmt"
	"math"
	"strings"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

//go:embed fonts/*.ttf
var fontFiles embed.FS

// Face is one of the renderer's fonts (fonts/README.md lists them and their
// licences). It is safe for concurrent use.
type Face struct {
	// Family is the font's CSS family name, as the web UI names it.
	Family string
	// LineHeight is the line height Excalidraw gives text in this font, in
	// em: a line of text at size s is LineHeight*s high.
	LineHeight float64

	file string
	once sync.Once
	err  error
	font *sfnt.Font
	data []byte
	upm  float64
	asc  float64 // ascender, font units above the baseline
	desc float64 // descender, font units below the baseline (positive)

	mu     sync.RWMutex
	glyphs map[rune]glyph
	kerns  sync.Map // uint64(a)<<32|b → float64 font units
	shapes sync.Map // sfnt.GlyphIndex → []outlineSeg in font units
}

// glyph is a rune's glyph: in which face, its index there and its advance
// in that face's units.
type glyph struct {
	face *Face
	idx  sfnt.GlyphIndex
	adv  float64
}

// faces lists the fonts by the canvas model's font names.
var faces = func() map[string]*Face {
	excalifont := &Face{Family: "Excalifont", LineHeight: 1.25, file: "Excalifont-Regular.ttf"}
	liberation := &Face{Family: "Liberation Sans", LineHeight: 1.15, file: "LiberationSans-Regular.ttf"}
	return map[string]*Face{
		"draw":       excalifont,
		"virgil":     {Family: "Virgil", LineHeight: 1.25, file: "Virgil-Regular.ttf"},
		"sans":       {Family: "Nunito", LineHeight: 1.35, file: "Nunito-Regular.ttf"},
		"serif":      {Family: "Lilita One", LineHeight: 1.15, file: "LilitaOne-Regular.ttf"},
		"mono":       {Family: "Cascadia", LineHeight: 1.2, file: "CascadiaCode-Regular.ttf"},
		"comic":      {Family: "Comic Shanns", LineHeight: 1.25, file: "ComicShanns-Regular.ttf"},
		"liberation": liberation,
		"helvetica":  liberation,
	}
}()

// fallbackOrder is where a glyph a face lacks is looked for.
var fallbackOrder = []string{"liberation", "mono", "sans"}

// FaceOf returns the face of a font name of the canvas model ("draw",
// "sans", "serif", "mono", "virgil", "helvetica", "comic", "liberation");
// any other name gives "draw" (Excalifont), the model's default.
func FaceOf(font string) *Face {
	if f, ok := faces[font]; ok {
		return f
	}
	return faces["draw"]
}

// load parses the font file once.
func (f *Face) load() error {
	f.once.Do(func() {
		b, err := fontFiles.ReadFile("fonts/" + f.file)
		if err != nil {
			f.err = err
			return
		}
		ft, err := sfnt.Parse(b)
		if err != nil {
			f.err = fmt.Errorf("render: font %s: %w", f.file, err)
			return
		}
		var buf sfnt.Buffer
		f.font, f.data, f.upm = ft, b, float64(ft.UnitsPerEm())
		m, err := ft.Metrics(&buf, fixed.I(int(f.upm)), font.HintingNone)
		if err != nil {
			f.err = err
			return
		}
		f.asc, f.desc = fix(m.Ascent), fix(m.Descent)
		f.glyphs = map[rune]glyph{}
	})
	return f.err
}

// mustLoad loads the face; the fonts are embedded, so failing to parse one
// is a build defect.
func (f *Face) mustLoad() *Face {
	if err := f.load(); err != nil {
		panic(err)
	}
	return f
}

func fix(v fixed.Int26_6) float64 { return float64(v) / 64 }

// has reports whether the face has a glyph for r.
func (f *Face) own(r rune) (glyph, bool) {
	f.mustLoad()
	f.mu.RLock()
	g, ok := f.glyphs[r]
	f.mu.RUnlock()
	if ok {
		return g, g.idx != 0
	}
	var buf sfnt.Buffer
	idx, err := f.font.GlyphIndex(&buf, r)
	g = glyph{face: f}
	if err == nil && idx != 0 {
		g.idx = idx
		if a, err := f.font.GlyphAdvance(&buf, idx, fixed.I(int(f.upm)), font.HintingNone); err == nil {
			g.adv = fix(a)
		}
	} else if a, err := f.font.GlyphAdvance(&buf, 0, fixed.I(int(f.upm)), font.HintingNone); err == nil {
		g.adv = fix(a) // the missing-glyph box
	}
	f.mu.Lock()
	f.glyphs[r] = g
	f.mu.Unlock()
	return g, g.idx != 0
}

// glyphFor is the glyph that draws r: the face's own, else a fallback
// face's, else the face's missing-glyph box.
func (f *Face) glyphFor(r rune) glyph {
	if r == '\t' {
		r = ' '
	}
	g, ok := f.own(r)
	if ok || r < ' ' {
		return g
	}
	for _, name := range fallbackOrder {
		if fb := faces[name]; fb != f {
			if h, ok := fb.own(r); ok {
				return h
			}
		}
	}
	return g
}

// kern is the kerning between two glyphs of f in font units.
func (f *Face) kern(a, b sfnt.GlyphIndex) float64 {
	key := uint64(a)<<32 | uint64(b)
	if v, ok := f.kerns.Load(key); ok {
		return v.(float64)
	}
	var buf sfnt.Buffer
	k, err := f.font.Kern(&buf, a, b, fixed.I(int(f.upm)), font.HintingNone)
	v := 0.0
	if err == nil {
		v = fix(k)
	}
	f.kerns.Store(key, v)
	return v
}

// Measure is the width in pixels of one line of text at size px, with
// kerning, as a browser's canvas measures it (unrounded).
func (f *Face) Measure(line string, size float64) float64 {
	w := 0.0
	var prev glyph
	for _, r := range line {
		g := f.glyphFor(r)
		if prev.face == g.face && prev.face != nil && prev.idx != 0 && g.idx != 0 {
			w += g.face.kern(prev.idx, g.idx) * size / g.face.upm
		}
		w += g.adv * size / g.face.upm
		prev = g
	}
	return w
}

// Ascent is how far above the baseline the font's ascender is at size px.
func (f *Face) Ascent(size float64) float64 { f.mustLoad(); return f.asc * size / f.upm }

// Descent is how far below the baseline the font's descender is at size px.
func (f *Face) Descent(size float64) float64 { f.mustLoad(); return f.desc * size / f.upm }

// Baseline is the distance from the top of a line box of height lineHeight
// px to the baseline of text at size px: the font's ascender-to-descender
// box centred in the line, as Excalidraw places text.
func (f *Face) Baseline(size, lineHeight float64) float64 {
	asc, desc := f.Ascent(size), f.Descent(size)
	return asc + (lineHeight-asc-desc)/2
}

// Wrap breaks text into lines no wider than width px at size px as the web
// UI wraps a label: each line of the text is cut at the last space within
// the longest prefix that fits (or, with no space there, at that prefix, at
// least one character), and a space at a cut is dropped. Widths are
// rounded up to whole pixels, as the UI measures them. A width of 0 or less
// only splits at line breaks.
func (f *Face) Wrap(text string, size, width float64) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if width <= 0 {
		return lines
	}
	out := make([]string, 0, len(lines))
	for _, line := range lines {
		rest := []rune(line)
		for len(rest) > 1 && math.Ceil(f.Measure(string(rest), size)) > width {
			cum := f.prefixWidths(rest, size)
			fit := 1
			for lo, hi := 2, len(rest)-1; lo <= hi; {
				mid := (lo + hi) / 2
				if math.Ceil(cum[mid]) <= width {
					fit, lo = mid, mid+1
				} else {
					hi = mid - 1
				}
			}
			cut := fit
			for i := min(fit, len(rest)-1); i > 0; i-- {
				if rest[i] == ' ' {
					cut = i
					break
				}
			}
			out = append(out, string(rest[:cut]))
			rest = rest[cut:]
			if len(rest) > 0 && rest[0] == ' ' {
				rest = rest[1:]
			}
		}
		out = append(out, string(rest))
	}
	return out
}

// prefixWidths gives cum[i], the width of rs[:i] (kerning inside the prefix only).
func (f *Face) prefixWidths(rs []rune, size float64) []float64 {
	cum := make([]float64, len(rs)+1)
	var prev glyph
	w := 0.0
	for i, r := range rs {
		g := f.glyphFor(r)
		k := 0.0
		if prev.face == g.face && prev.face != nil && prev.idx != 0 && g.idx != 0 {
			k = g.face.kern(prev.idx, g.idx) * size / g.face.upm
		}
		w += k + g.adv*size/g.face.upm
		cum[i+1] = w
		prev = g
	}
	return cum
}

// Ellipsize cuts line to fit width px at size px, ending it with "…" when
// it had to cut.
func (f *Face) Ellipsize(line string, size, width float64) string {
	if f.Measure(line, size) <= width {
		return line
	}
	rs := []rune(line)
	cum := f.prefixWidths(rs, size)
	ell := f.Measure("…", size)
	n := 0
	for n < len(rs) && cum[n+1]+ell <= width {
		n++
	}
	return string(rs[:n]) + "…"
}

// outlineSeg is a glyph outline command in font units, y down.
type outlineSeg struct {
	op  sfnt.SegmentOp
	pts [3]pt
}

// outline is the glyph's outline in font units with y growing downwards.
func (f *Face) outline(idx sfnt.GlyphIndex) []outlineSeg {
	if v, ok := f.shapes.Load(idx); ok {
		return v.([]outlineSeg)
	}
	var buf sfnt.Buffer
	segs, err := f.font.LoadGlyph(&buf, idx, fixed.I(int(f.upm)), nil)
	var out []outlineSeg
	if err == nil {
		out = make([]outlineSeg, len(segs))
		for i, s := range segs {
			out[i].op = s.Op
			for j := range s.Args {
				out[i].pts[j] = pt{fix(s.Args[j].X), fix(s.Args[j].Y)}
			}
		}
	}
	f.shapes.Store(idx, out)
	return out
}
