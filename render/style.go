package render

import (
	"image/color"
	"math"
	"strconv"
	"strings"

	"github.com/canvasd/canvasd/canvas"
)

// Palette is the canvas model's 13 named colours: each name's stroke colour
// and its light tone (used for fills and notes), as docs/model.md lists them.
var Palette = map[string][2]string{
	"black":        {"#1e1e1e", "#e9ecef"},
	"grey":         {"#868e96", "#f1f3f5"},
	"light-violet": {"#be4bdb", "#f3d9fa"},
	"violet":       {"#6741d9", "#e5dbff"},
	"blue":         {"#1971c2", "#a5d8ff"},
	"light-blue":   {"#4dabf7", "#d0ebff"},
	"yellow":       {"#f08c00", "#ffec99"},
	"orange":       {"#e8590c", "#ffd8a8"},
	"green":        {"#2f9e44", "#b2f2bb"},
	"light-green":  {"#40c057", "#d3f9d8"},
	"light-red":    {"#ff8787", "#ffe3e3"},
	"red":          {"#e03131", "#ffc9c9"},
	"white":        {"#ffffff", "#ffffff"},
}

// semiFill is the fill colour of the "semi" fill style.
const semiFill = "#f8f9fa"

// ParseColor reads a colour of the canvas model: a palette name (its stroke
// colour, or its light tone when light), "#rgb", "#rrggbb", "#rrggbbaa" or
// "transparent". ok is false for anything else.
func ParseColor(s string, light bool) (c color.NRGBA, ok bool) {
	if tones, found := Palette[s]; found {
		if light {
			return parseHex(tones[1])
		}
		return parseHex(tones[0])
	}
	if s == "transparent" {
		return color.NRGBA{}, true
	}
	return parseHex(s)
}

func parseHex(s string) (color.NRGBA, bool) {
	if !strings.HasPrefix(s, "#") {
		return color.NRGBA{}, false
	}
	h := s[1:]
	if len(h) == 3 || len(h) == 4 {
		var b strings.Builder
		for i := 0; i < len(h); i++ {
			b.WriteByte(h[i])
			b.WriteByte(h[i])
		}
		h = b.String()
	}
	if len(h) != 6 && len(h) != 8 {
		return color.NRGBA{}, false
	}
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return color.NRGBA{}, false
	}
	if len(h) == 6 {
		return color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}, true
	}
	return color.NRGBA{R: uint8(v >> 24), G: uint8(v >> 16), B: uint8(v >> 8), A: uint8(v)}, true
}

// hexOf writes c as #rrggbb (its alpha goes to an opacity attribute).
func hexOf(c color.NRGBA) string {
	const digits = "0123456789abcdef"
	b := []byte{'#', 0, 0, 0, 0, 0, 0}
	for i, v := range [3]uint8{c.R, c.G, c.B} {
		b[1+2*i] = digits[v>>4]
		b[2+2*i] = digits[v&15]
	}
	return string(b)
}

// props reads a node's or edge's props with the model's defaults.
type props map[string]any

func (p props) str(key string) string {
	s, _ := canvas.PropText(p[key])
	return s
}

func (p props) num(key string) (float64, bool) {
	return canvas.NumberValue(p[key])
}

func (p props) boolean(key string) (v, ok bool) {
	v, ok = p[key].(bool)
	return v, ok
}

// color is the stroke colour (props.color, def when unset or unreadable).
func (p props) color(def string) color.NRGBA {
	if c, ok := ParseColor(p.str("color"), false); ok {
		return c
	}
	c, _ := ParseColor(def, false)
	return c
}

// lightTone is the light tone of props.color: a palette colour's, or the
// colour itself when it is hex.
func (p props) lightTone(def string) color.NRGBA {
	s := p.str("color")
	if _, ok := Palette[s]; !ok {
		if c, ok := parseHex(s); ok {
			return c
		}
		s = def
	}
	c, _ := ParseColor(s, true)
	return c
}

// fillColor is the fill as docs/model.md defines it: fillColor when set,
// else what the fill style and color give; A is 0 for no fill.
func (p props) fillColor() color.NRGBA {
	if s := p.str("fillColor"); s != "" {
		if c, ok := ParseColor(s, true); ok {
			return c
		}
	}
	switch p.str("fill") {
	case "", "none":
		return color.NRGBA{}
	case "semi":
		c, _ := parseHex(semiFill)
		return c
	case "fill":
		return p.color("black")
	}
	return p.lightTone("black")
}

// strokeWidth is strokeWidth, else what size gives (s 1, m 2, l 4, xl 6).
func (p props) strokeWidth() float64 {
	if w, ok := p.num("strokeWidth"); ok && w >= 0 {
		return w
	}
	switch p.str("size") {
	case "s":
		return 1
	case "l":
		return 4
	case "xl":
		return 6
	}
	return 2
}

// fontSize is fontSize, else what size gives (s 16, m 20, l 28, xl 36).
func (p props) fontSize() float64 {
	if s, ok := p.num("fontSize"); ok && s > 0 {
		return s
	}
	return SizeFontSize(p.str("size"))
}

// SizeFontSize is the font size of a size value (s 16, m 20, l 28, xl 36;
// anything else m).
func SizeFontSize(size string) float64 {
	switch size {
	case "s":
		return 16
	case "l":
		return 28
	case "xl":
		return 36
	}
	return 20
}

// opacity is props.opacity in 0..1 (default 1).
func (p props) opacity() float64 {
	if o, ok := p.num("opacity"); ok {
		return math.Max(0, math.Min(1, o))
	}
	return 1
}

// dash is the dash pattern of props.dash for a stroke of width w, in page
// units (nil for solid).
func (p props) dash(w float64) []float64 {
	switch p.str("dash") {
	case "dashed":
		return []float64{8, 8 + w}
	case "dotted":
		return []float64{1.5, 6 + w}
	}
	return nil
}

// withAlpha returns c with its alpha multiplied by o.
func withAlpha(c color.NRGBA, o float64) color.NRGBA {
	c.A = uint8(math.Round(float64(c.A) * o))
	return c
}
