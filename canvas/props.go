package canvas

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Model is the version of the canvas model (docs/model.md) that this server
// reads and writes: what each kind of node and the edges may hold in props.
// Model 1 was free-form props; canvases stored under it are migrated when
// they are first loaded (reducer.MigrateModel).
const Model = 2

// EdgeKind names the edges in the props schema: PropsOf(EdgeKind) is what an
// edge's props may hold.
const EdgeKind = "edge"

// MetaProp is the props key every kind takes with any JSON object: the
// client's own data, kept verbatim.
const MetaProp = "meta"

// NodeTypes are the kinds of node, tldraw's shape types (an arrow is an
// edge, not a node) plus "embed" (a web page shown in the shape) and "doc"
// (a text/code document: its text is props.text, its language props.language).
var NodeTypes = []string{"geo", "note", "text", "draw", "line", "frame", "image", "embed", "group", "doc"}

// ValidNodeType reports whether t is one of NodeTypes.
func ValidNodeType(t string) bool {
	for _, n := range NodeTypes {
		if n == t {
			return true
		}
	}
	return false
}

// Limits of props values.
const (
	MaxTextChars    = 100_000 // props.text of shapes and edges, and the text of a richText
	MaxLinkChars    = 2048    // props.link and an embed's url
	MaxPoints       = 10_000  // points of a line or an edge, and of one pen stroke
	MaxSegments     = 1000    // pen strokes of a draw node
	MaxAltTextChars = 10_000  // an image's altText
	MaxLanguageLen  = 64      // a document's language
	MaxRichTextNode = 100_000 // nodes of one richText document
)

// propType is what kind of value a prop holds.
type propType uint8

const (
	pString   propType = iota // a string of at most maxLen characters
	pDocText                  // a document's text: a string (or a DocText), no limit of its own
	pNumber                   // a finite number in [min, max]
	pBool                     // true or false
	pEnum                     // one of enum
	pColour                   // a palette name, #rgb, #rrggbb, #rrggbbaa or transparent
	pLink                     // a link the shape opens (checkLink)
	pImageURL                 // a data:image/...;base64, URL or an https: URL
	pWebURL                   // an http: or https: URL of at most MaxLinkChars
	pRichText                 // a tldraw rich-text document (richtext.go)
	pPoints                   // 2 to MaxPoints {x, y}
	pSegments                 // up to MaxSegments pen strokes
	pCrop                     // {x, y, w, h}, each 0 to 1
	pMeta                     // any JSON object
)

// propSpec is the definition of one props key of one kind.
type propSpec struct {
	key      string
	typ      propType
	enum     []string
	min, max float64
	maxLen   int    // pString: characters
	desc     string // for the JSON Schema (openapi.yaml)
}

// kindSpec is what one kind's props may hold, in the order docs/model.md lists it.
type kindSpec struct {
	kind  string
	desc  string
	props []propSpec
	byKey map[string]int
}

// Palette is the 13 colour names of tldraw's palette, with their stroke and
// light (fill) tones, in tldraw's order.
var Palette = []struct{ Name, Stroke, Light string }{
	{"black", "#1e1e1e", "#e9ecef"},
	{"grey", "#868e96", "#f1f3f5"},
	{"light-violet", "#be4bdb", "#f3d9fa"},
	{"violet", "#6741d9", "#e5dbff"},
	{"blue", "#1971c2", "#a5d8ff"},
	{"light-blue", "#4dabf7", "#d0ebff"},
	{"yellow", "#f08c00", "#ffec99"},
	{"orange", "#e8590c", "#ffd8a8"},
	{"green", "#2f9e44", "#b2f2bb"},
	{"light-green", "#40c057", "#d3f9d8"},
	{"light-red", "#ff8787", "#ffe3e3"},
	{"red", "#e03131", "#ffc9c9"},
	{"white", "#ffffff", "#ffffff"},
}

// Enumerations of the props schema.
var (
	GeoShapes = []string{"rectangle", "ellipse", "triangle", "diamond", "pentagon", "hexagon", "octagon", "star",
		"rhombus", "rhombus-2", "oval", "trapezoid", "arrow-right", "arrow-left", "arrow-up", "arrow-down",
		"x-box", "check-box", "heart", "cloud"}
	FillStyles = []string{"none", "semi", "solid", "pattern", "fill", "lined-fill", "hachure", "cross-hatch", "zigzag"}
	DashStyles = []string{"draw", "solid", "dashed", "dotted"}
	Sizes      = []string{"s", "m", "l", "xl"}
	Fonts      = []string{"draw", "sans", "serif", "mono", "virgil", "helvetica", "comic", "liberation"}
	Aligns     = []string{"start", "middle", "end"}
	Arrowheads = []string{"none", "arrow", "triangle", "triangle-outline", "dot", "circle-outline", "diamond",
		"diamond-outline", "bar", "square", "pipe", "inverted", "crowfoot-one", "crowfoot-many", "crowfoot-one-or-many"}
	Sides         = []string{"top", "right", "bottom", "left"}
	EdgeRoutings  = []string{"straight", "curved", "elbow"}
	LineRoutings  = []string{"straight", "curved"}
	Roundnesses   = []string{"sharp", "round"}
	SegmentTypes  = []string{"free", "straight"}
	ImageMIMEs    = []string{"png", "jpeg", "gif", "webp", "svg+xml"}
	richTextNodes = []string{"doc", "paragraph", "heading", "bulletList", "orderedList", "listItem", "blockquote", "codeBlock", "hardBreak", "text"}
	richTextMarks = []string{"bold", "italic", "strike", "code", "underline", "highlight", "link"}
)

// sharedProps returns the definitions of the keys several kinds share.
func sharedProps() map[string]propSpec {
	l := []propSpec{
		{key: "color", typ: pColour, desc: "Stroke colour; the text colour of a text or a label."},
		{key: "fillColor", typ: pColour, desc: "Background colour; without it, what fill and color give."},
		{key: "fill", typ: pEnum, enum: FillStyles, desc: "Fill style."},
		{key: "dash", typ: pEnum, enum: DashStyles, desc: "Stroke style (draw is solid, hand-drawn)."},
		{key: "size", typ: pEnum, enum: Sizes, desc: "Stroke width 1, 2, 4, 6 and font size 16, 20, 28, 36."},
		{key: "strokeWidth", typ: pNumber, min: 0, max: 64, desc: "Exact stroke width; wins over size."},
		{key: "roughness", typ: pNumber, min: 0, max: 5, desc: "How hand-drawn strokes look: 0 architect, 1 artist, 2 cartoonist."},
		{key: "roundness", typ: pEnum, enum: Roundnesses, desc: "Corners of boxes, joints of lines."},
		{key: "opacity", typ: pNumber, min: 0, max: 1},
		{key: "text", typ: pString, maxLen: MaxTextChars, desc: "The text of a text, note, label or edge label (plain text)."},
		{key: "richText", typ: pRichText, desc: "The text with its marks: a tldraw rich-text document. Setting it without text sets text to its plain text; setting text without it removes it."},
		{key: "font", typ: pEnum, enum: Fonts, desc: "Font family (default draw)."},
		{key: "fontSize", typ: pNumber, min: 1, max: 1000, desc: "Exact font size; wins over size."},
		{key: "align", typ: pEnum, enum: Aligns, desc: "Horizontal text alignment."},
		{key: "verticalAlign", typ: pEnum, enum: Aligns, desc: "Vertical text alignment."},
		{key: "labelColor", typ: pColour, desc: "Colour of a label when it differs from color."},
		{key: "link", typ: pLink, desc: "A link the shape opens: http:, https:, mailto:, or a relative or # link."},
		{key: "locked", typ: pBool, desc: "People cannot select or change it in the web UI (the API can)."},
	}
	m := make(map[string]propSpec, len(l))
	for _, p := range l {
		m[p.key] = p
	}
	return m
}

// kindSpecs is the props schema, built once by buildKindSpecs and never modified.
var kindSpecs = buildKindSpecs()

// buildKindSpecs returns the props schema of every kind (docs/model.md, "Per kind").
func buildKindSpecs() map[string]*kindSpec {
	shared := sharedProps()
	pick := func(keys ...string) []propSpec {
		out := make([]propSpec, len(keys))
		for i, k := range keys {
			p, ok := shared[k]
			if !ok {
				panic("canvas: props schema: no shared key " + k)
			}
			out[i] = p
		}
		return out
	}
	meta := propSpec{key: MetaProp, typ: pMeta, desc: "Any JSON object, kept verbatim: the client's own data. canvasd never reads it."}
	kinds := []*kindSpec{
		{kind: "geo", desc: "A geometric shape with an optional label.", props: append([]propSpec{
			{key: "geo", typ: pEnum, enum: GeoShapes, desc: "The geometry (default rectangle)."}},
			pick("color", "fillColor", "fill", "dash", "size", "strokeWidth", "roughness", "roundness", "opacity", "text", "richText", "font", "fontSize", "align", "verticalAlign", "labelColor", "link", "locked")...)},
		{kind: "note", desc: "A sticky note; its background is its color's light tone (yellow by default).",
			props: pick("color", "fillColor", "size", "opacity", "text", "richText", "font", "fontSize", "align", "verticalAlign", "labelColor", "link", "locked")},
		{kind: "text", desc: "Text on the canvas.", props: append([]propSpec{
			{key: "autoSize", typ: pBool, desc: "The width follows the text."}},
			pick("color", "size", "opacity", "text", "richText", "font", "fontSize", "align", "verticalAlign", "link", "locked")...)},
		{kind: "draw", desc: "A drawing: pen strokes relative to the node's corner.", props: append([]propSpec{
			{key: "segments", typ: pSegments, desc: "Pen strokes (up to 1,000): {type: free or straight, points: [{x, y, z?}]} relative to the node's corner; z (0 to 1) is pen pressure."},
			{key: "closed", typ: pBool, desc: "The stroke closes into a shape."}},
			pick("color", "fillColor", "fill", "dash", "size", "strokeWidth", "roughness", "opacity", "link", "locked")...)},
		{kind: "line", desc: "A polyline through points relative to the node's corner.", props: append([]propSpec{
			{key: "points", typ: pPoints, desc: "2 to 10,000 points {x, y}, relative to the node's corner."},
			{key: "routing", typ: pEnum, enum: LineRoutings, desc: "How the line runs through its points (default straight)."},
			{key: "closed", typ: pBool, desc: "The line closes into a polygon."}},
			pick("color", "fillColor", "fill", "dash", "size", "strokeWidth", "roughness", "roundness", "opacity", "link", "locked")...)},
		{kind: "frame", desc: "A frame: its children move, rotate and are deleted with it; its name is its title.",
			props: pick("color", "opacity", "locked")},
		{kind: "image", desc: "An image.", props: append([]propSpec{
			{key: "url", typ: pImageURL, desc: "A data:image/(png|jpeg|gif|webp|svg+xml);base64,... URL or an https: URL."},
			{key: "altText", typ: pString, maxLen: MaxAltTextChars, desc: "What the image shows, for those who cannot see it."},
			{key: "crop", typ: pCrop, desc: "The part of the image shown: {x, y, w, h}, each 0 to 1 of the image."},
			{key: "flipX", typ: pBool},
			{key: "flipY", typ: pBool}},
			pick("color", "strokeWidth", "opacity", "roundness", "link", "locked")...)},
		{kind: "embed", desc: "A web page shown in the shape.", props: append([]propSpec{
			{key: "url", typ: pWebURL, desc: "The page: an https: or http: URL."}},
			pick("color", "strokeWidth", "opacity", "roundness", "link", "locked")...)},
		{kind: "group", desc: "A group: its box is the union of its children's.", props: pick("opacity", "locked")},
		{kind: "doc", desc: "A text or code document.", props: append([]propSpec{
			{key: "text", typ: pDocText, desc: "The document."},
			{key: "language", typ: pString, maxLen: MaxLanguageLen, desc: "Its language (python, go, markdown, ...)."}},
			pick("color", "opacity", "locked")...)},
		{kind: EdgeKind, desc: "An edge (an arrow).", props: append([]propSpec{
			{key: "points", typ: pPoints, desc: "The arrow's path: 2 to 10,000 points {x, y} in page coordinates, the from end first. The server keeps bound ends on their nodes."},
			{key: "routing", typ: pEnum, enum: EdgeRoutings, desc: "How the path runs between its points (default straight)."},
			{key: "arrowheadStart", typ: pEnum, enum: Arrowheads, desc: "The head at the from end (default none)."},
			{key: "arrowheadEnd", typ: pEnum, enum: Arrowheads, desc: "The head at the to end (default arrow)."},
			{key: "fromSide", typ: pEnum, enum: Sides, desc: "The from end sits at the middle of this side of its node."},
			{key: "toSide", typ: pEnum, enum: Sides, desc: "The to end sits at the middle of this side of its node."}},
			pick("color", "dash", "size", "strokeWidth", "roughness", "roundness", "opacity", "text", "richText", "font", "fontSize", "labelColor", "link", "locked")...)},
	}
	out := make(map[string]*kindSpec, len(kinds))
	for _, k := range kinds {
		k.props = append(k.props, meta)
		k.byKey = make(map[string]int, len(k.props))
		for i, p := range k.props {
			k.byKey[p.key] = i
		}
		out[k.kind] = k
	}
	return out
}

// PropKeys returns the props keys of kind (a node type or EdgeKind) in the
// order docs/model.md lists them, meta last; nil for an unknown kind.
func PropKeys(kind string) []string {
	k := kindSpecs[kind]
	if k == nil {
		return nil
	}
	out := make([]string, len(k.props))
	for i, p := range k.props {
		out[i] = p.key
	}
	return out
}

// HasProp reports whether kind (a node type or EdgeKind) takes props key.
func HasProp(kind, key string) bool {
	k := kindSpecs[kind]
	if k == nil {
		return false
	}
	_, ok := k.byKey[key]
	return ok
}

// ValidateProps checks every key of props for an entity of kind (a node type
// or EdgeKind). The error is a FieldError (ErrUnprocessable) naming the
// offending key under prefix ("args.props" gives "args.props.fill"), or a
// place inside its value ("args.props.points[3].x"), and saying what is
// allowed. Of several bad keys it names the first in byte order, so the
// answer does not depend on map order. Null values are refused (a merge
// patch's null deletes a key before the merged props are checked).
func ValidateProps(kind string, props map[string]any, prefix string) error {
	k := kindSpecs[kind]
	if k == nil {
		return Unprocessable(prefix, "no props schema for kind %q", kind)
	}
	var bad string
	var badErr error
	for key, v := range props {
		if badErr != nil && key > bad {
			continue
		}
		if err := k.check(key, v, prefix+"."+key); err != nil {
			bad, badErr = key, err
		}
	}
	return badErr
}

// CheckProp checks one props key of an entity of kind (see ValidateProps);
// field names the value in the error.
func CheckProp(kind, key string, v any, field string) error {
	k := kindSpecs[kind]
	if k == nil {
		return Unprocessable(field, "no props schema for kind %q", kind)
	}
	return k.check(key, v, field)
}

// check checks props key = v of k.
func (k *kindSpec) check(key string, v any, field string) error {
	i, ok := k.byKey[key]
	if !ok {
		return Unprocessable(field, "%s does not take %q: it takes %s; keep data of your own under props.meta (docs/model.md lists what each kind holds)",
			k.noun(), key, strings.Join(PropKeys(k.kind), ", "))
	}
	return k.props[i].check(v, field)
}

// noun names an entity of the kind in messages: "an edge", "a geo node".
func (k *kindSpec) noun() string {
	if k.kind == EdgeKind {
		return "an edge"
	}
	if strings.ContainsRune("aeiou", rune(k.kind[0])) {
		return "an " + k.kind + " node"
	}
	return "a " + k.kind + " node"
}

// check checks one value against p.
func (p *propSpec) check(v any, field string) error {
	if v == nil {
		return Unprocessable(field, "must not be null here (null in an update removes the key)")
	}
	switch p.typ {
	case pString:
		s, ok := v.(string)
		if !ok {
			return typeError(field, "a string", v)
		}
		if n := utf8.RuneCountInString(s); n > p.maxLen {
			return Unprocessable(field, "is %d characters long, more than the %d allowed", n, p.maxLen)
		}
	case pDocText:
		if _, ok := PropText(v); !ok {
			return typeError(field, "a string", v)
		}
	case pNumber:
		f, ok := numberValue(v)
		if !ok {
			return typeError(field, "a number", v)
		}
		if !(f >= p.min && f <= p.max) {
			return Unprocessable(field, "must be a number from %s to %s; got %s", fmtNum(p.min), fmtNum(p.max), numberText(v))
		}
	case pBool:
		if _, ok := v.(bool); !ok {
			return typeError(field, "true or false", v)
		}
	case pEnum:
		s, ok := v.(string)
		if !ok || !contains(p.enum, s) {
			return enumValueError(field, v, p.enum)
		}
	case pColour:
		s, ok := v.(string)
		if !ok || !ValidColour(s) {
			return Unprocessable(field, "must be a colour: one of %s, transparent, or a hex colour #rgb, #rrggbb or #rrggbbaa; got %s",
				strings.Join(PaletteNames(), ", "), describe(v))
		}
	case pLink:
		s, ok := v.(string)
		if !ok {
			return typeError(field, "a string", v)
		}
		if err := CheckLink(s); err != "" {
			return Unprocessable(field, "%s", err)
		}
	case pImageURL:
		s, ok := v.(string)
		if !ok {
			return typeError(field, "a string", v)
		}
		if !validImageURL(s) {
			return Unprocessable(field, "must be a data:image/(png|jpeg|gif|webp|svg+xml);base64,... URL or an https: URL; got %s", describe(v))
		}
	case pWebURL:
		s, ok := v.(string)
		if !ok {
			return typeError(field, "a string", v)
		}
		if !validWebURL(s) {
			return Unprocessable(field, "must be an https: or http: URL of at most %d characters; got %s", MaxLinkChars, describe(v))
		}
	case pRichText:
		return CheckRichText(v, field)
	case pPoints:
		return checkPoints(v, field, 2, MaxPoints, false)
	case pSegments:
		return checkSegments(v, field)
	case pCrop:
		return checkCrop(v, field)
	case pMeta:
		if _, ok := v.(map[string]any); !ok {
			return typeError(field, "a JSON object (of any content: your own data)", v)
		}
	}
	return nil
}

// PaletteNames returns the names of the palette colours.
func PaletteNames() []string {
	out := make([]string, len(Palette))
	for i, p := range Palette {
		out[i] = p.Name
	}
	return out
}

// ValidColour reports whether s is a colour of the model: a palette name,
// "transparent", or a hex colour #rgb, #rrggbb or #rrggbbaa.
func ValidColour(s string) bool {
	if s == "transparent" {
		return true
	}
	if strings.HasPrefix(s, "#") {
		if n := len(s) - 1; n != 3 && n != 6 && n != 8 {
			return false
		}
		for i := 1; i < len(s); i++ {
			if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
		return true
	}
	for _, p := range Palette {
		if p.Name == s {
			return true
		}
	}
	return false
}

// CheckLink returns why s cannot be a link a shape opens ("" when it can):
// at most MaxLinkChars characters without control characters or leading or
// trailing white space, and either an http:, https: or mailto: URL or a link
// without a scheme (relative, or # to a place in the page).
func CheckLink(s string) string {
	if n := utf8.RuneCountInString(s); n > MaxLinkChars {
		return fmt.Sprintf("is %d characters long, more than the %d a link may have", n, MaxLinkChars)
	}
	if s == "" {
		return "must not be empty (leave link out for no link)"
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return "must not hold control characters"
		}
	}
	if strings.TrimSpace(s) != s {
		return "must not start or end with white space"
	}
	scheme, ok := urlScheme(s)
	if !ok {
		return ""
	}
	switch strings.ToLower(scheme) {
	case "http", "https", "mailto":
		return ""
	}
	return fmt.Sprintf("must be an http:, https: or mailto: URL, or a relative or # link; the scheme %q is not allowed", scheme+":")
}

// urlScheme returns the scheme of s when it has one: letters, digits, + - .
// after a letter, before a colon that comes before any / ? or #.
func urlScheme(s string) (string, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') && i > 0:
		case c == ':' && i > 0:
			return s[:i], true
		default:
			return "", false
		}
	}
	return "", false
}

// validImageURL reports whether s is a base64 data URL of an image type
// the model allows, or an https: URL.
func validImageURL(s string) bool {
	if rest, ok := strings.CutPrefix(s, "data:image/"); ok {
		mime, data, ok := strings.Cut(rest, ";base64,")
		if !ok || !contains(ImageMIMEs, mime) {
			return false
		}
		for i := 0; i < len(data); i++ {
			if c := data[i]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
				return false
			}
		}
		return true
	}
	return strings.HasPrefix(strings.ToLower(s), "https://") && len(s) > len("https://") && CheckLink(s) == ""
}

// validWebURL reports whether s is an http: or https: URL a link may be.
func validWebURL(s string) bool {
	l := strings.ToLower(s)
	if !(strings.HasPrefix(l, "https://") && len(s) > 8 || strings.HasPrefix(l, "http://") && len(s) > 7) {
		return false
	}
	return CheckLink(s) == ""
}

// checkPoints checks a list of min to max points {x, y} (withZ: an optional
// z, 0 to 1, as in pen strokes).
func checkPoints(v any, field string, min, max int, withZ bool) error {
	a, ok := v.([]any)
	if !ok {
		return typeError(field, fmt.Sprintf("an array of %d to %d points {x, y}", min, max), v)
	}
	if len(a) < min || len(a) > max {
		return Unprocessable(field, "must hold %d to %d points; it holds %d", min, max, len(a))
	}
	for i, p := range a {
		if key, why := checkPoint(p, withZ); why != "" {
			return Unprocessable(fmt.Sprintf("%s[%d]%s", field, i, key), "%s", why)
		}
	}
	return nil
}

// checkPoint checks one point {x, y} (withZ: and an optional z from 0 to 1):
// what is wrong ("" when nothing) and where in the point (".x", or "" for
// the point itself). It allocates only for a bad point.
func checkPoint(v any, withZ bool) (key, why string) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", "must be a point {x, y}; got " + describe(v)
	}
	for _, k := range [...]string{"x", "y"} {
		x, ok := m[k]
		if !ok {
			return "." + k, "is required: a number"
		}
		if _, ok := numberValue(x); !ok {
			return "." + k, "must be a number; got " + describe(x)
		}
	}
	if len(m) == 2 {
		return "", ""
	}
	for k, x := range m {
		switch {
		case k == "x" || k == "y":
		case k == "z" && withZ:
			if f, ok := numberValue(x); !ok || f < 0 || f > 1 {
				return ".z", "must be a number from 0 to 1 (pen pressure); got " + describe(x)
			}
		default:
			if withZ {
				return "." + k, "a point holds x, y and z only"
			}
			return "." + k, "a point holds x and y only"
		}
	}
	return "", ""
}

// checkSegments checks a draw node's pen strokes.
func checkSegments(v any, field string) error {
	a, ok := v.([]any)
	if !ok {
		return typeError(field, "an array of pen strokes {type, points}", v)
	}
	if len(a) > MaxSegments {
		return Unprocessable(field, "holds %d strokes, more than the %d allowed", len(a), MaxSegments)
	}
	for i, s := range a {
		m, ok := s.(map[string]any)
		f := func() string { return fmt.Sprintf("%s[%d]", field, i) }
		if !ok {
			return typeError(f(), "a pen stroke {type, points}", s)
		}
		for k, x := range m {
			switch k {
			case "type":
				if t, ok := x.(string); !ok || !contains(SegmentTypes, t) {
					return enumValueError(f()+".type", x, SegmentTypes)
				}
			case "points":
				if err := checkPoints(x, "", 1, MaxPoints, true); err != nil {
					fe := err.(*FieldError)
					fe.Field = f() + ".points" + fe.Field
					return fe
				}
			default:
				return Unprocessable(f()+"."+k, "a pen stroke holds type and points only")
			}
		}
		if _, ok := m["points"]; !ok {
			return Unprocessable(f()+".points", "is required: the stroke's points [{x, y, z?}]")
		}
	}
	return nil
}

// checkCrop checks an image's crop {x, y, w, h}, each from 0 to 1.
func checkCrop(v any, field string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return typeError(field, "an object {x, y, w, h}", v)
	}
	for _, k := range [...]string{"x", "y", "w", "h"} {
		x, ok := m[k]
		if !ok {
			return Unprocessable(field+"."+k, "is required: a number from 0 to 1")
		}
		if f, ok := numberValue(x); !ok || f < 0 || f > 1 {
			return Unprocessable(field+"."+k, "must be a number from 0 to 1 (a share of the image); got %s", describe(x))
		}
	}
	if len(m) != 4 {
		for k := range m {
			if k != "x" && k != "y" && k != "w" && k != "h" {
				return Unprocessable(field+"."+k, "a crop holds x, y, w and h only")
			}
		}
	}
	return nil
}

// numberValue returns v as a float64 when it is a finite JSON number
// (json.Number, as decoded requests and stored props hold them, or a Go
// number).
func numberValue(v any) (float64, bool) {
	var f float64
	switch t := v.(type) {
	case json.Number:
		var err error
		if f, err = t.Float64(); err != nil {
			return 0, false
		}
	case float64:
		f = t
	case int:
		f = float64(t)
	case int64:
		f = float64(t)
	default:
		return 0, false
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

// NumberValue returns v as a float64 when it is a finite JSON number (a
// json.Number or a Go number); ok is false otherwise.
func NumberValue(v any) (f float64, ok bool) { return numberValue(v) }

// Num returns f as the json.Number encoding/json would write for it, the
// form props keep numbers in (so a value computed by the server equals the
// same value read back from the log). f must be finite.
func Num(f float64) json.Number {
	b, err := appendJSONFloat(nil, f)
	if err != nil {
		return "0"
	}
	return json.Number(b)
}

func numberText(v any) string {
	if n, ok := v.(json.Number); ok {
		return string(n)
	}
	return fmt.Sprint(v)
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func typeError(field, want string, got any) error {
	return Unprocessable(field, "must be %s; got %s", want, describe(got))
}

func enumValueError(field string, got any, allowed []string) error {
	return Unprocessable(field, "must be one of %s; got %s", strings.Join(allowed, ", "), describe(got))
}

// describe names a JSON value in messages: strings quoted (cut at 64
// characters), numbers as sent, other values by their JSON type.
func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		if utf8.RuneCountInString(t) > 64 {
			r := []rune(t)
			return strconv.Quote(string(r[:64])) + "…"
		}
		return strconv.Quote(t)
	case json.Number:
		return string(t)
	case float64, int, int64:
		return fmt.Sprint(t)
	case bool:
		return strconv.FormatBool(t)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case DocText:
		return "a string"
	}
	return fmt.Sprintf("a %T", v)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
