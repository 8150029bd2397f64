package render

import (
	"bufio"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/image/font/sfnt"
)

// WriteSVG writes the drawing as a standalone SVG document in page units:
// the fonts its text uses are embedded (TrueType, as @font-face data
// URLs, each with the outlines of the glyphs the text draws only:
// subsetTrueType), so it shows the same wherever it is opened (unless
// Options.FontsByName). Each node's and
// edge's parts are one group with data-id (its id) and data-kind (its kind,
// or "edge").
func (d *Drawing) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	v := d.view
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="%s" height="%s" viewBox="%s %s %s %s">`,
		num(v.W), num(v.H), num(v.X), num(v.Y), num(v.W), num(v.H))
	bw.WriteString("\n")
	// Fonts and frame clips.
	used := map[*Face]map[sfnt.GlyphIndex]bool{} // the glyphs drawn, by face
	clips := map[*rect]int{}
	var clipOrder []*rect
	for i := range d.items {
		it := &d.items[i]
		if it.only == onlyPNG {
			continue
		}
		if it.text != nil {
			if used[it.text.face] == nil {
				used[it.text.face] = map[sfnt.GlyphIndex]bool{}
			}
			for _, line := range it.text.lines {
				for _, r := range line {
					g := it.text.face.glyphFor(r)
					if used[g.face] == nil {
						used[g.face] = map[sfnt.GlyphIndex]bool{}
					}
					used[g.face][g.idx] = true
				}
			}
		}
		if it.clip != nil {
			if _, ok := clips[it.clip]; !ok {
				clips[it.clip] = len(clipOrder)
				clipOrder = append(clipOrder, it.clip)
			}
		}
	}
	if d.fontsByName {
		used = nil
	}
	if len(used) > 0 || len(clipOrder) > 0 {
		bw.WriteString("<defs>")
		if len(used) > 0 {
			faces := make([]*Face, 0, len(used))
			for f := range used {
				faces = append(faces, f)
			}
			sort.Slice(faces, func(i, j int) bool { return faces[i].Family < faces[j].Family })
			bw.WriteString("<style>")
			for _, f := range faces {
				f.mustLoad()
				data, err := subsetTrueType(f.data, used[f])
				if err != nil {
					data = f.data // (the fonts the renderer ships all subset; see subset_test.go)
				}
				fmt.Fprintf(bw, `@font-face{font-family:"%s";src:url(data:font/ttf;base64,`, f.Family)
				enc := base64.NewEncoder(base64.StdEncoding, bw)
				enc.Write(data)
				enc.Close()
				bw.WriteString(`) format("truetype");}`)
			}
			bw.WriteString("</style>")
		}
		for i, c := range clipOrder {
			fmt.Fprintf(bw, `<clipPath id="clip%d"><rect x="%s" y="%s" width="%s" height="%s"/></clipPath>`, i, num(c.X), num(c.Y), num(c.W), num(c.H))
		}
		bw.WriteString("</defs>\n")
	}
	if !d.transparent {
		fmt.Fprintf(bw, `<rect x="%s" y="%s" width="%s" height="%s" fill="#ffffff"/>`+"\n", num(v.X), num(v.Y), num(v.W), num(v.H))
	}
	open := ""
	for i := range d.items {
		it := &d.items[i]
		if it.only == onlyPNG {
			continue
		}
		if it.owner != open {
			if open != "" {
				bw.WriteString("</g>\n")
			}
			fmt.Fprintf(bw, `<g data-id="%s" data-kind="%s">`, attr(it.owner), attr(it.kind))
			open = it.owner
		}
		clip := ""
		if it.clip != nil {
			clip = fmt.Sprintf(` clip-path="url(#clip%d)"`, clips[it.clip])
		}
		switch {
		case it.text != nil:
			svgText(bw, it.text, clip)
		case it.pic != nil:
			svgPicture(bw, it.pic, clip)
		case it.path != nil:
			svgPath(bw, it, clip)
		}
	}
	if open != "" {
		bw.WriteString("</g>\n")
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// num writes a coordinate with at most two decimals.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// attr escapes an attribute value.
func attr(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return strings.ReplaceAll(b.String(), `"`, "&quot;")
}

// paintAttrs writes a colour as an attribute and its alpha as the
// matching opacity.
func paintAttrs(name string, c color.NRGBA) string {
	if c.A == 0 {
		return fmt.Sprintf(` %s="none"`, name)
	}
	s := fmt.Sprintf(` %s="%s"`, name, hexOf(c))
	if c.A < 255 {
		s += fmt.Sprintf(` %s-opacity="%s"`, name, strconv.FormatFloat(math.Round(float64(c.A)/255*1000)/1000, 'f', -1, 64))
	}
	return s
}

func svgPath(w *bufio.Writer, it *item, clip string) {
	w.WriteString(`<path d="`)
	w.WriteString(it.path.svgD())
	w.WriteString(`"`)
	w.WriteString(paintAttrs("fill", it.fill))
	if it.stroke.A > 0 && it.width > 0 {
		w.WriteString(paintAttrs("stroke", it.stroke))
		fmt.Fprintf(w, ` stroke-width="%s"`, num(it.width))
		if it.butt {
			w.WriteString(` stroke-linecap="butt" stroke-linejoin="bevel"`)
		} else {
			w.WriteString(` stroke-linecap="round" stroke-linejoin="round"`)
		}
		if len(it.dash) > 0 {
			parts := make([]string, len(it.dash))
			for i, v := range it.dash {
				parts[i] = num(v)
			}
			fmt.Fprintf(w, ` stroke-dasharray="%s"`, strings.Join(parts, " "))
		}
	}
	w.WriteString(clip)
	w.WriteString("/>")
}

func svgText(w *bufio.Writer, t *textItem, clip string) {
	transform := ""
	if t.rot != 0 {
		transform = fmt.Sprintf(` transform="rotate(%s %s %s)"`, num(t.rot*180/math.Pi), num(t.origin.X), num(t.origin.Y))
	}
	if clip != "" || transform != "" {
		fmt.Fprintf(w, `<g%s%s>`, clip, transform)
	}
	if t.bg.A > 0 {
		b := t.bgBox
		fmt.Fprintf(w, `<rect x="%s" y="%s" width="%s" height="%s"%s/>`, num(t.origin.X+b.X), num(t.origin.Y+b.Y), num(b.W), num(b.H), paintAttrs("fill", t.bg))
	}
	family := fmt.Sprintf("%s, %s, %s, %s", quoteFamily(t.face.Family), quoteFamily(faces["liberation"].Family), quoteFamily(faces["mono"].Family), quoteFamily(faces["sans"].Family))
	fmt.Fprintf(w, `<text font-family="%s" font-size="%s" xml:space="preserve"%s>`, attr(family), num(t.size), paintAttrs("fill", t.color))
	base := t.face.Baseline(t.size, t.lineH)
	for i, line := range t.lines {
		fmt.Fprintf(w, `<tspan x="%s" y="%s">`, num(t.origin.X+t.xs[i]), num(t.origin.Y+t.top+float64(i)*t.lineH+base))
		xml.EscapeText(w, []byte(strings.ReplaceAll(line, "\t", " ")))
		w.WriteString("</tspan>")
	}
	w.WriteString("</text>")
	if clip != "" || transform != "" {
		w.WriteString("</g>")
	}
}

func quoteFamily(f string) string {
	if strings.Contains(f, " ") {
		return "'" + f + "'"
	}
	return f
}

func svgPicture(w *bufio.Writer, p *picture, clip string) {
	if !strings.HasPrefix(p.href, "data:image/") && !strings.HasPrefix(p.href, "https:") {
		return
	}
	tr := ""
	if p.rot != 0 {
		tr = fmt.Sprintf("rotate(%s %s %s)", num(p.rot*180/math.Pi), num(p.origin.X), num(p.origin.Y))
	}
	if p.flipX || p.flipY {
		sx, sy := 1, 1
		if p.flipX {
			sx = -1
		}
		if p.flipY {
			sy = -1
		}
		cx, cy := p.origin.X+p.w/2, p.origin.Y+p.h/2
		tr += fmt.Sprintf(" translate(%s %s) scale(%d %d) translate(%s %s)", num(cx), num(cy), sx, sy, num(-cx), num(-cy))
	}
	fmt.Fprintf(w, `<g%s`, clip)
	if tr != "" {
		fmt.Fprintf(w, ` transform="%s"`, strings.TrimSpace(tr))
	}
	if p.alpha < 1 {
		fmt.Fprintf(w, ` opacity="%s"`, strconv.FormatFloat(math.Round(p.alpha*1000)/1000, 'f', -1, 64))
	}
	w.WriteString(">")
	// The crop as a viewBox over the picture drawn 1×1: no need to know its pixel size.
	fmt.Fprintf(w, `<svg x="%s" y="%s" width="%s" height="%s" viewBox="%s %s %s %s" preserveAspectRatio="none">`,
		num(p.origin.X), num(p.origin.Y), num(p.w), num(p.h),
		strconv.FormatFloat(p.crop.X, 'f', -1, 64), strconv.FormatFloat(p.crop.Y, 'f', -1, 64),
		strconv.FormatFloat(p.crop.W, 'f', -1, 64), strconv.FormatFloat(p.crop.H, 'f', -1, 64))
	fmt.Fprintf(w, `<image width="1" height="1" preserveAspectRatio="none" href="%s"/>`, attr(p.href))
	if p.alt != "" {
		fmt.Fprintf(w, `<title>%s</title>`, attr(p.alt))
	}
	w.WriteString("</svg></g>")
}
