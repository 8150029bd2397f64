package convert

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/render"
)

// .excalidraw ↔ canvasd (docs/model.md, "How the clients map it"):
//
//	rectangle, ellipse, diamond ↔ geo of that geometry (roundness null ↔ sharp)
//	a line with polygon and customData.canvasd.geo ↔ geo of a geometry Excalidraw lacks
//	line ↔ line (polygon ↔ closed, roundness ↔ curved)   freedraw ↔ draw (pressures ↔ z)
//	text ↔ text   text with a containerId ↔ the container's props.text (its label)
//	arrow ↔ edge (startBinding/endBinding ↔ from/to, heads, elbowed ↔ elbow, roundness ↔ curved)
//	image ↔ image (its file's dataURL ↔ url, crop, scale -1 ↔ flipX/flipY)
//	frame, magicframe ↔ frame    embeddable, iframe ↔ embed    groupIds ↔ group nodes
//
// Colours: a palette colour's hex (stroke, or light tone for a background)
// ↔ its name; any other colour as written. The rest of each element (seed,
// version, index, customData, ...) is kept in props.meta.excalidraw.

const exMeta = "excalidraw"

// exCarry: members the export only fills with defaults.
var exCarry = map[string]bool{"boundElements": true, "seed": true, "version": true, "versionNonce": true, "updated": true, "index": true,
	"isDeleted": true, "lastCommittedPoint": true, "customData": true, "status": true, "fileId": true,
	"simulatePressure": true, "fixedSegments": true, "startIsSpecial": true, "endIsSpecial": true, "baseline": true,
	"created": true, "lastRetrieved": true}

// exKnown: the members of Excalidraw elements this codec writes itself.
var exKnown = map[string]bool{"id": true, "type": true, "x": true, "y": true, "width": true, "height": true, "angle": true,
	"strokeColor": true, "backgroundColor": true, "fillStyle": true, "strokeWidth": true, "strokeStyle": true,
	"roughness": true, "opacity": true, "groupIds": true, "frameId": true, "roundness": true, "boundElements": true,
	"link": true, "locked": true, "text": true, "originalText": true, "fontSize": true, "fontFamily": true,
	"textAlign": true, "verticalAlign": true, "containerId": true, "lineHeight": true, "autoResize": true,
	"points": true, "pressures": true, "startBinding": true, "endBinding": true, "startArrowhead": true,
	"endArrowhead": true, "elbowed": true, "polygon": true, "name": true, "scale": true, "crop": true,
	"mimeType": true, "dataURL": true}

var exFontOf = map[float64]string{1: "virgil", 2: "helvetica", 3: "mono", 5: "draw", 6: "sans", 7: "serif", 8: "comic", 9: "liberation"}

var exHeadIn = map[string]string{"arrow": "arrow", "bar": "bar", "dot": "dot", "circle": "dot", "circle_outline": "circle-outline",
	"triangle": "triangle", "triangle_outline": "triangle-outline", "diamond": "diamond", "diamond_outline": "diamond-outline",
	"crowfoot_one": "crowfoot-one", "crowfoot_many": "crowfoot-many", "crowfoot_one_or_many": "crowfoot-one-or-many"}

var exHeadOut = map[string]string{"arrow": "arrow", "bar": "bar", "dot": "circle", "circle-outline": "circle_outline",
	"triangle": "triangle", "triangle-outline": "triangle_outline", "diamond": "diamond", "diamond-outline": "diamond_outline",
	"crowfoot-one": "crowfoot_one", "crowfoot-many": "crowfoot_many", "crowfoot-one-or-many": "crowfoot_one_or_many",
	"square": "bar", "pipe": "bar", "inverted": "triangle_outline"}

// exKept is what props.meta.excalidraw holds for a node or edge.
type exKept struct {
	kept
	Label *kept  `json:"label,omitempty"` // the bound text element
	File  *kept  `json:"file,omitempty"`  // an image's entry in files
	Pos   *int   `json:"pos,omitempty"`   // the element's place in the file
	LPos  *int   `json:"lpos,omitempty"`  // its label's place in the file
	ID    string `json:"id,omitempty"`    // the element's id when the model could not take it
	LID   string `json:"lid,omitempty"`   // its label's id
}

func decodeExcalidraw(data []byte) (*Scene, error) {
	top, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	if t, ok := top["type"]; ok && t != "excalidraw" {
		return nil, fileError(".type", `must be "excalidraw" (is this a .excalidrawlib library or another file?); got %v`, t)
	}
	elsV, ok := top["elements"].([]any)
	if !ok {
		return nil, fileError(".elements", "is required: an array of elements")
	}
	if len(elsV) > MaxObjects {
		return nil, fileError(".elements", "holds %d elements, more than the %d an import takes", len(elsV), MaxObjects)
	}
	files, _ := top["files"].(obj)
	if top["files"] != nil && files == nil {
		return nil, fileError(".files", "must be an object of files by id")
	}
	d := &exDecoder{files: files, byID: map[string]obj{}, ids: map[string]string{}, taken: map[string]bool{}, pos: map[string]int{}}
	// First: every element by id, and the ids the model gives them.
	var els []obj
	for i, v := range elsV {
		place := fmt.Sprintf(".elements[%d]", i)
		e, ok := v.(obj)
		if !ok {
			return nil, fileError(place, "must be an object")
		}
		id, ok := e["id"].(string)
		if !ok || id == "" {
			return nil, fileError(place+".id", "is required: a string")
		}
		if _, ok := e["type"].(string); !ok {
			return nil, fileError(place+".type", "is required: a string")
		}
		if del, _ := e["isDeleted"].(bool); del || e["type"] == "selection" {
			continue
		}
		if _, dup := d.byID[id]; dup {
			return nil, fileError(place+".id", "%q is the id of an earlier element; ids must be unique", id)
		}
		d.byID[id] = e
		d.pos[id] = i
		d.places = append(d.places, place)
		els = append(els, e)
	}
	for _, e := range els {
		id := e["id"].(string)
		if c, _ := e["containerId"].(string); c != "" && e["type"] == "text" && d.byID[c] != nil {
			continue // a label: part of its container
		}
		d.ids[id], _ = validID(id, d.taken)
	}
	for i, e := range els {
		if err := d.element(e, d.places[i]); err != nil {
			return nil, err
		}
	}
	d.finish()
	return &d.scene, nil
}

type exDecoder struct {
	files  obj
	byID   map[string]obj
	ids    map[string]string // element id → node or edge id
	taken  map[string]bool
	pos    map[string]int
	places []string
	scene  Scene
	groups map[string]*canvas.Node
	origs  []exOrig
}

// exOrig remembers what a node or edge was read from, to keep the rest.
type exOrig struct {
	node  *canvas.Node
	edge  *canvas.Edge
	el    obj
	label obj
}

func (d *exDecoder) num(e obj, key string) float64 {
	v, _ := number(e[key])
	return v
}

// element turns one element into a node or an edge (labels go with their
// containers).
func (d *exDecoder) element(e obj, place string) error {
	typ := e["type"].(string)
	id := e["id"].(string)
	if c, _ := e["containerId"].(string); c != "" && typ == "text" && d.byID[c] != nil {
		return nil
	}
	if err := checkElementBox(e, place); err != nil {
		return err
	}
	props := map[string]any{}
	if err := d.style(e, place, props, typ); err != nil {
		return err
	}
	label := d.label(e)
	if label != nil {
		if err := d.labelProps(label, props, e); err != nil {
			return err
		}
	}
	early := exKept{}
	if d.ids[id] != id {
		early.ID = id
	}
	if label != nil {
		early.LID, _ = label["id"].(string)
	}
	if early.ID != "" || early.LID != "" {
		setMeta(props, exMeta, early)
	}
	if typ == "arrow" {
		edge, err := d.arrow(e, place, props)
		if err != nil {
			return err
		}
		d.scene.addEdge(edge, place)
		d.origs = append(d.origs, exOrig{edge: edge, el: e, label: label})
		return nil
	}
	n := &canvas.Node{ID: d.ids[id], Props: props}
	x, y, w, h, angle := d.num(e, "x"), d.num(e, "y"), math.Max(d.num(e, "width"), 0), math.Max(d.num(e, "height"), 0), d.num(e, "angle")
	n.W, n.H, n.Rotation = w, h, angle
	n.X, n.Y = toNodeXY(x, y, w, h, angle)
	switch typ {
	case "rectangle", "ellipse", "diamond":
		n.Type = "geo"
		props["geo"] = typ
		if geo := canvasdData(e)["geo"]; geo != nil {
			props["geo"] = geo
		}
	case "line", "freedraw":
		if err := lineNode(n, e, place, x, y, w, h, angle); err != nil {
			return err
		}
	case "text":
		n.Type = "text"
		if err := d.textProps(e, place, props); err != nil {
			return err
		}
		if auto, ok := e["autoResize"].(bool); ok {
			props["autoSize"] = auto
		}
	case "image":
		n.Type = "image"
		if err := d.image(e, place, props); err != nil {
			return err
		}
	case "frame", "magicframe":
		n.Type = "frame"
		n.Name, _ = e["name"].(string)
		for _, k := range []string{"fill", "fillColor", "dash", "strokeWidth", "roughness", "roundness", "link", "size"} {
			delete(props, k)
		}
	case "embeddable", "iframe":
		link, _ := e["link"].(string)
		if strings.HasPrefix(link, "https://") || strings.HasPrefix(link, "http://") {
			n.Type = "embed"
			props["url"] = link
			delete(props, "link")
		} else {
			n.Type = "geo"
			props["geo"] = "rectangle"
		}
		for _, k := range []string{"fill", "fillColor", "dash", "roughness"} {
			delete(props, k)
		}
	default:
		return fileError(place+".type", "%q is not an element type canvasd reads: rectangle, ellipse, diamond, line, freedraw, text, arrow, image, frame, magicframe, embeddable or iframe", typ)
	}
	dropUnusedProps(n.Type, props)
	n.ParentID = d.parentOf(e, place)
	d.scene.addNode(n, place)
	d.origs = append(d.origs, exOrig{node: n, el: e, label: label})
	return nil
}

// checkElementBox refuses an element whose x or y is missing or whose x,
// y, width or height is not a number.
func checkElementBox(e obj, place string) error {
	for _, k := range []string{"x", "y", "width", "height"} {
		if _, ok := number(e[k]); !ok && e[k] != nil {
			return fileError(place+"."+k, "must be a number")
		}
	}
	if _, ok := number(e["x"]); !ok {
		return fileError(place+".x", "is required: a number")
	}
	if _, ok := number(e["y"]); !ok {
		return fileError(place+".y", "is required: a number")
	}
	return nil
}

// lineNode makes n (its props, its box already set from the element's)
// the node of a line or freedraw element e at x, y, w×h turned by angle:
// a line, a drawing, or the geo shape canvasd wrote as a line.
func lineNode(n *canvas.Node, e obj, place string, x, y, w, h, angle float64) error {
	pts, err := exPoints(e, place)
	if err != nil {
		return err
	}
	// The corner of the node is the element's origin (its first point's
	// place), turned as Excalidraw turns the element: about the middle of
	// its points' box.
	box := bboxOfPts(pts)
	cx, cy := x+(box[0]+box[2])/2, y+(box[1]+box[3])/2
	n.X, n.Y = turnAbout(x, y, cx, cy, angle)
	isLine := e["type"] == "line"
	if geo, _ := canvasdData(e)["geo"].(string); isLine && geo != "" {
		n.Type = "geo"
		n.Props["geo"] = geo
		n.X, n.Y = toNodeXY(x+box[0], y+box[1], w, h, angle)
		return nil
	}
	if isLine {
		n.Type = "line"
		list := make([]any, len(pts))
		for i, p := range pts {
			list[i] = map[string]any{"x": p[0], "y": p[1]}
		}
		n.Props["points"] = list
		if poly, _ := e["polygon"].(bool); poly {
			n.Props["closed"] = true
		}
		if e["roundness"] != nil {
			n.Props["routing"] = "curved"
		}
	} else {
		n.Type = "draw"
		pressures, _ := e["pressures"].([]any)
		list := make([]any, len(pts))
		for i, p := range pts {
			q := map[string]any{"x": p[0], "y": p[1]}
			if i < len(pressures) {
				if z, ok := number(pressures[i]); ok {
					q["z"] = z
				}
			}
			list[i] = q
		}
		n.Props["segments"] = []any{map[string]any{"type": "free", "points": list}}
	}
	return nil
}

// dropUnusedProps deletes the style props a node of type typ has no use
// for (a text has no fill, only geo shapes and lines have roundness, ...).
func dropUnusedProps(typ string, props map[string]any) {
	switch typ {
	case "text", "image", "embed", "frame":
		delete(props, "fill")
		delete(props, "fillColor")
	}
	if typ != "geo" && typ != "line" {
		delete(props, "roundness")
	}
	if typ == "text" || typ == "frame" {
		for _, k := range []string{"dash", "strokeWidth", "roughness"} {
			delete(props, k)
		}
	}
}

// canvasdData is customData.canvasd of an element: what canvasd wrote there.
func canvasdData(e obj) obj {
	cd, _ := e["customData"].(obj)
	c, _ := cd["canvasd"].(obj)
	return c
}

// label is the text element bound to e, if any.
func (d *exDecoder) label(e obj) obj {
	bound, _ := e["boundElements"].([]any)
	for _, b := range bound {
		bo, _ := b.(obj)
		if bo["type"] != "text" {
			continue
		}
		id, _ := bo["id"].(string)
		if t := d.byID[id]; t != nil && t["type"] == "text" && t["containerId"] == e["id"] {
			return t
		}
	}
	// A label whose container does not list it.
	for _, t := range d.byID {
		if t["type"] == "text" && t["containerId"] == e["id"] {
			return t
		}
	}
	return nil
}

// parentOf is the node holding an element: its innermost group, else its frame.
func (d *exDecoder) parentOf(e obj, place string) string {
	frame := ""
	if f, _ := e["frameId"].(string); f != "" && d.byID[f] != nil {
		frame = d.ids[f]
	}
	gids, _ := e["groupIds"].([]any)
	if d.groups == nil {
		d.groups = map[string]*canvas.Node{}
	}
	parent := frame
	for i := len(gids) - 1; i >= 0; i-- {
		gid, _ := gids[i].(string)
		if gid == "" {
			continue
		}
		g := d.groups[gid]
		if g == nil {
			id, _ := validID(gid, d.taken)
			g = &canvas.Node{ID: id, Type: "group", ParentID: parent, Props: map[string]any{}}
			if id != gid {
				setMeta(g.Props, exMeta, exKept{ID: gid})
			}
			d.groups[gid] = g
			d.scene.addNode(g, place+".groupIds")
		}
		parent = g.ID
	}
	return parent
}

// style reads the style members every element has into props.
func (d *exDecoder) style(e obj, place string, props map[string]any, typ string) error {
	if s, ok := e["strokeColor"].(string); ok {
		props["color"] = exColorIn(s, false)
	}
	bg, _ := e["backgroundColor"].(string)
	fillStyle, _ := e["fillStyle"].(string)
	if bg != "" && bg != "transparent" {
		props["fillColor"] = exColorIn(bg, true)
		switch fillStyle {
		case "hachure", "cross-hatch", "zigzag", "solid":
			props["fill"] = fillStyle
		default:
			props["fill"] = "solid"
		}
	} else {
		props["fill"] = "none"
	}
	switch e["strokeStyle"] {
	case "dashed", "dotted":
		props["dash"] = e["strokeStyle"]
	default:
		props["dash"] = "solid"
	}
	if sw, ok := number(e["strokeWidth"]); ok {
		if sw < 0 || sw > 64 {
			return fileError(place+".strokeWidth", "must be between 0 and 64; got %g", sw)
		}
		props["strokeWidth"] = sw
	}
	if r, ok := number(e["roughness"]); ok {
		props["roughness"] = math.Max(0, math.Min(5, r))
	}
	if o, ok := number(e["opacity"]); ok {
		if o < 0 || o > 100 {
			return fileError(place+".opacity", "must be between 0 and 100; got %g", o)
		}
		props["opacity"] = o / 100
	}
	if e["roundness"] == nil {
		props["roundness"] = "sharp"
	} else {
		props["roundness"] = "round"
	}
	if l, ok := e["link"].(string); ok && l != "" {
		props["link"] = l
	}
	if lk, ok := e["locked"].(bool); ok && lk {
		props["locked"] = true
	}
	return nil
}

// textProps reads a text element's text and type into props.
func (d *exDecoder) textProps(e obj, place string, props map[string]any) error {
	text, ok := e["originalText"].(string)
	if !ok {
		if text, ok = e["text"].(string); !ok {
			return fileError(place+".text", "is required for a text element: a string")
		}
	}
	props["text"] = text
	if f, ok := number(e["fontFamily"]); ok {
		if name, ok := exFontOf[f]; ok {
			props["font"] = name
		} else {
			props["font"] = "sans"
		}
	}
	if s, ok := number(e["fontSize"]); ok && s > 0 {
		props["fontSize"] = math.Min(s, 1000)
	}
	switch e["textAlign"] {
	case "left":
		props["align"] = "start"
	case "center":
		props["align"] = "middle"
	case "right":
		props["align"] = "end"
	}
	switch e["verticalAlign"] {
	case "top":
		props["verticalAlign"] = "start"
	case "middle":
		props["verticalAlign"] = "middle"
	case "bottom":
		props["verticalAlign"] = "end"
	}
	return nil
}

// labelProps reads a bound text element into its container's props.
func (d *exDecoder) labelProps(t obj, props map[string]any, container obj) error {
	lp := map[string]any{}
	if err := d.textProps(t, "", lp); err != nil {
		return err
	}
	for k, v := range lp {
		props[k] = v
	}
	if s, ok := t["strokeColor"].(string); ok {
		if c := exColorIn(s, false); c != props["color"] {
			props["labelColor"] = c
		}
	}
	return nil
}

// arrow turns an arrow element into an edge.
func (d *exDecoder) arrow(e obj, place string, props map[string]any) (*canvas.Edge, error) {
	pts, err := exPoints(e, place)
	if err != nil {
		return nil, err
	}
	if len(pts) < 2 {
		return nil, fileError(place+".points", "an arrow needs at least two points")
	}
	x, y, angle := d.num(e, "x"), d.num(e, "y"), d.num(e, "angle")
	box := bboxOfPts(pts)
	cx, cy := x+(box[0]+box[2])/2, y+(box[1]+box[3])/2
	list := make([]any, len(pts))
	for i, p := range pts {
		px, py := turnAbout(x+p[0], y+p[1], cx, cy, angle)
		list[i] = map[string]any{"x": px, "y": py}
	}
	props["points"] = list
	switch {
	case e["elbowed"] == true:
		props["routing"] = "elbow"
	case e["roundness"] != nil:
		props["routing"] = "curved"
	default:
		props["routing"] = "straight"
	}
	for _, k := range []string{"roundness", "fill", "fillColor", "align", "verticalAlign"} {
		delete(props, k) // an edge's label sits at its middle
	}
	for _, h := range []struct{ key, prop string }{{"startArrowhead", "arrowheadStart"}, {"endArrowhead", "arrowheadEnd"}} {
		s, _ := e[h.key].(string)
		if s == "" {
			props[h.prop] = "none"
		} else if v, ok := exHeadIn[s]; ok {
			props[h.prop] = v
		} else {
			return nil, fileError(place+"."+h.key, "%q is not an arrowhead Excalidraw draws", s)
		}
	}
	edge := &canvas.Edge{ID: d.ids[e["id"].(string)], Type: "arrow", Props: props}
	end := func(key string) string {
		b, _ := e[key].(obj)
		target, _ := b["elementId"].(string)
		if t := d.byID[target]; t != nil && t["type"] != "arrow" && d.ids[target] != "" {
			return d.ids[target]
		}
		return ""
	}
	edge.From, edge.To = end("startBinding"), end("endBinding")
	return edge, nil
}

// image reads an image element and its file into props.
func (d *exDecoder) image(e obj, place string, props map[string]any) error {
	fileID, _ := e["fileId"].(string)
	if f, ok := d.files[fileID].(obj); ok {
		u, _ := f["dataURL"].(string)
		if !strings.HasPrefix(u, "data:image/") && !strings.HasPrefix(u, "https://") {
			return fileError(".files."+fileID+".dataURL", "must be a data:image/... URL")
		}
		props["url"] = u
	}
	if sc, ok := e["scale"].([]any); ok && len(sc) == 2 {
		if sx, _ := number(sc[0]); sx < 0 {
			props["flipX"] = true
		}
		if sy, _ := number(sc[1]); sy < 0 {
			props["flipY"] = true
		}
	}
	if c, ok := e["crop"].(obj); ok {
		nw, nh := d.num(c, "naturalWidth"), d.num(c, "naturalHeight")
		if nw > 0 && nh > 0 {
			props["crop"] = map[string]any{"x": d.num(c, "x") / nw, "y": d.num(c, "y") / nh, "w": d.num(c, "width") / nw, "h": d.num(c, "height") / nh}
		}
	}
	if sw, ok := props["strokeWidth"]; ok && e["strokeColor"] == "transparent" {
		_ = sw
		delete(props, "strokeWidth")
	}
	delete(props, "dash")
	delete(props, "roughness")
	return nil
}

// finish keeps, beside each node and edge, what the export would not give
// back of its element, and places group nodes before their members.
func (d *exDecoder) finish() {
	st := sceneState(&d.scene)
	enc := newExEncoder(st)
	for _, o := range d.origs {
		var fresh, freshLabel obj
		var props map[string]any
		var pos int
		if o.node != nil {
			fresh, freshLabel = enc.node(o.node)
			props = o.node.Props
		} else {
			fresh, freshLabel = enc.edge(o.edge)
			props = o.edge.Props
		}
		pos = d.pos[o.el["id"].(string)]
		k := exKept{kept: keepOf(o.el, fresh, exCarry), Pos: &pos}
		if o.el["id"] != fresh["id"] {
			k.ID = o.el["id"].(string)
		}
		if o.label != nil {
			k.LID, _ = o.label["id"].(string)
		}
		if o.label != nil && freshLabel != nil {
			lk := keepOf(o.label, freshLabel, exCarry)
			k.Label = &lk
			lp := d.pos[o.label["id"].(string)]
			k.LPos = &lp
		}
		if o.node != nil && o.node.Type == "image" {
			fid, _ := o.el["fileId"].(string)
			if f, ok := d.files[fid].(obj); ok {
				fk := keepOf(f, enc.file(o.node, fid), exCarry)
				k.File = &fk
			}
		}
		setMeta(props, exMeta, k)
	}
}

// sceneState is a scene as a state, for the encoder.
func sceneState(sc *Scene) *canvas.State {
	s := canvas.NewState()
	for i, n := range sc.Nodes {
		if n.Index == "" {
			n.Index = fmt.Sprintf("a%06d", i)
		}
		s.Nodes[n.ID] = n
	}
	for _, e := range sc.Edges {
		s.Edges[e.ID] = e
	}
	return s
}

// exPoints reads a linear element's points.
func exPoints(e obj, place string) ([][2]float64, error) {
	raw, ok := e["points"].([]any)
	if !ok {
		return nil, fileError(place+".points", "is required: an array of [x, y] points")
	}
	if len(raw) > 100000 {
		return nil, fileError(place+".points", "has %d points, more than 100,000", len(raw))
	}
	out := make([][2]float64, len(raw))
	for i, p := range raw {
		a, ok := p.([]any)
		if !ok || len(a) < 2 {
			return nil, fileError(fmt.Sprintf("%s.points[%d]", place, i), "must be an [x, y] pair")
		}
		x, okx := number(a[0])
		y, oky := number(a[1])
		if !okx || !oky {
			return nil, fileError(fmt.Sprintf("%s.points[%d]", place, i), "must be an [x, y] pair of numbers")
		}
		out[i] = [2]float64{x, y}
	}
	return out, nil
}

func bboxOfPts(pts [][2]float64) [4]float64 {
	if len(pts) == 0 {
		return [4]float64{}
	}
	b := [4]float64{pts[0][0], pts[0][1], pts[0][0], pts[0][1]}
	for _, p := range pts {
		b[0], b[1] = math.Min(b[0], p[0]), math.Min(b[1], p[1])
		b[2], b[3] = math.Max(b[2], p[0]), math.Max(b[3], p[1])
	}
	return b
}

// turnAbout turns (x, y) by angle about (cx, cy).
func turnAbout(x, y, cx, cy, angle float64) (float64, float64) {
	if angle == 0 {
		return x, y
	}
	s, c := math.Sin(angle), math.Cos(angle)
	dx, dy := x-cx, y-cy
	return cx + dx*c - dy*s, cy + dx*s + dy*c
}

// toNodeXY: Excalidraw's corner (rotation about the centre) → canvasd's
// corner (rotation about the corner).
func toNodeXY(x, y, w, h, r float64) (float64, float64) {
	if r == 0 {
		return x, y
	}
	return turnAbout(x, y, x+w/2, y+h/2, r)
}

// toElementXY is the inverse of toNodeXY.
func toElementXY(x, y, w, h, r float64) (float64, float64) {
	if r == 0 {
		return x, y
	}
	s, c := math.Sin(r), math.Cos(r)
	cx, cy := x+w/2*c-h/2*s, y+w/2*s+h/2*c
	return cx - w/2, cy - h/2
}

// exColorIn reads an Excalidraw colour: a palette colour's hex (its stroke,
// or its light tone for a background) becomes its name.
func exColorIn(c string, light bool) string {
	for name, tones := range render.Palette {
		i := 0
		if light {
			i = 1
		}
		if tones[i] == c && name != "white" {
			return name
		}
	}
	if c == "#ffffff" {
		return "white"
	}
	return c
}

// exColorOut writes a colour of the model as Excalidraw does.
func exColorOut(v any, light bool, def string) string {
	s, _ := v.(string)
	if s == "" {
		return def
	}
	if tones, ok := render.Palette[s]; ok {
		if light {
			return tones[1]
		}
		return tones[0]
	}
	return s
}

// exEncoder writes canvas nodes and edges as Excalidraw elements.
type exEncoder struct {
	s      *canvas.State
	bound  map[string][]string // node id → the edges bound to it
	labels map[string]string   // node or edge id → its label element's id
}

func newExEncoder(s *canvas.State) *exEncoder {
	enc := &exEncoder{s: s, bound: map[string][]string{}, labels: map[string]string{}}
	for _, e := range s.SortedEdges() {
		for _, end := range []string{e.From, e.To} {
			if end != "" {
				enc.bound[end] = append(enc.bound[end], e.ID)
			}
		}
	}
	return enc
}

// elemID is the element id of a node or edge.
func elemID(id string, props map[string]any) string {
	if s, _ := metaField(props, exMeta, "id").(string); s != "" {
		return s
	}
	return id
}

// groupsAndFrame are an element's groupIds (innermost first) and frameId.
func (x *exEncoder) groupsAndFrame(parent string) ([]any, any) {
	groups := []any{}
	var frame any
	p := x.s.Nodes[parent]
	for depth := 0; p != nil && depth < 64; depth++ {
		if p.Type == "group" {
			groups = append(groups, elemID(p.ID, p.Props))
		} else if p.Type == "frame" && frame == nil {
			frame = elemID(p.ID, p.Props)
		}
		p = x.s.Nodes[p.ParentID]
	}
	return groups, frame
}

// common is what every element has, from props.
func (x *exEncoder) common(id, typ string, props map[string]any, parent string) obj {
	p := propsOf(props)
	groups, frame := x.groupsAndFrame(parent)
	el := obj{
		"id": id, "type": typ, "angle": 0.0,
		"strokeColor":     exColorOut(props["color"], false, "#1e1e1e"),
		"backgroundColor": "transparent", "fillStyle": "solid",
		"strokeWidth": 2.0, "strokeStyle": "solid", "roughness": 1.0, "opacity": 100.0,
		"groupIds": groups, "frameId": frame, "roundness": nil,
		"seed": float64(seedOf(id)), "version": 1.0, "versionNonce": float64(seedOf(id + "v")), "isDeleted": false,
		"boundElements": []any{}, "updated": 1.0, "link": nil, "locked": false,
	}
	if f := p.str("fill"); f != "" && f != "none" {
		el["backgroundColor"] = exColorOut(props["fillColor"], true, exColorOut(props["color"], true, "#e9ecef"))
		switch f {
		case "hachure", "cross-hatch", "zigzag":
			el["fillStyle"] = f
		case "pattern", "lined-fill":
			el["fillStyle"] = "hachure"
		}
	}
	switch p.str("dash") {
	case "dashed", "dotted":
		el["strokeStyle"] = p.str("dash")
	}
	if w, ok := number(props["strokeWidth"]); ok {
		el["strokeWidth"] = w
	} else if sz := p.str("size"); sz != "" {
		el["strokeWidth"] = map[string]float64{"s": 1, "m": 2, "l": 4, "xl": 6}[sz]
	}
	if r, ok := number(props["roughness"]); ok {
		el["roughness"] = r
	}
	if o, ok := number(props["opacity"]); ok {
		v := o * 100
		if r := math.Round(v); math.Abs(v-r) < 1e-9 {
			v = r
		}
		el["opacity"] = v
	}
	if l := p.str("link"); l != "" {
		el["link"] = l
	}
	if lk, _ := props["locked"].(bool); lk {
		el["locked"] = true
	}
	return el
}

type propsOf map[string]any

func (p propsOf) str(k string) string { s, _ := canvas.PropText(p[k]); return s }

// seedOf is a stable number from an id, for the seeds of new elements.
func seedOf(id string) int {
	x := uint32(7)
	for _, c := range id {
		x = x*31 + uint32(c)
	}
	return int(x%2147483646) + 1
}

// node writes a node as its element (nil for a group) and its label.
func (x *exEncoder) node(n *canvas.Node) (obj, obj) {
	p := propsOf(n.Props)
	id := elemID(n.ID, n.Props)
	var el obj
	geo := p.str("geo")
	switch n.Type {
	case "group":
		return nil, nil
	case "geo", "note":
		switch {
		case n.Type == "note":
			el = x.common(id, "rectangle", n.Props, n.ParentID)
			el["backgroundColor"] = exColorOut(n.Props["color"], true, "#ffec99")
			el["strokeColor"] = "transparent"
			el["roundness"] = obj{"type": 3.0}
		case geo == "" || geo == "rectangle" || geo == "ellipse" || geo == "diamond":
			if geo == "" {
				geo = "rectangle"
			}
			el = x.common(id, geo, n.Props, n.ParentID)
			if p.str("roundness") != "sharp" {
				t := 3.0
				if geo != "rectangle" {
					t = 2
				}
				el["roundness"] = obj{"type": t}
			}
		default: // a geometry Excalidraw lacks: its outline as a polygon
			el = x.common(id, "line", n.Props, n.ParentID)
			outline := render.GeoOutline(geo, n.W, n.H)
			pts := make([]any, len(outline))
			for i, q := range outline {
				pts[i] = []any{q[0] - outline[0][0], q[1] - outline[0][1]}
			}
			el["points"], el["polygon"] = pts, true
			el["lastCommittedPoint"], el["startBinding"], el["endBinding"], el["startArrowhead"], el["endArrowhead"] = nil, nil, nil, nil, nil
			el["customData"] = obj{"canvasd": obj{"geo": geo}}
			ex, ey := toElementXY(n.X, n.Y, n.W, n.H, n.Rotation)
			el["x"], el["y"] = ex+outline[0][0], ey+outline[0][1]
			el["width"], el["height"], el["angle"] = n.W, n.H, n.Rotation
			return el, x.label(el, n.Props, n.W, n.H)
		}
	case "text":
		el = x.common(id, "text", n.Props, n.ParentID)
		x.text(el, n.Props, "left", "top")
		auto, ok := n.Props["autoSize"].(bool)
		el["autoResize"] = !ok || auto
		el["containerId"] = nil
	case "line", "draw":
		return x.lineElement(id, n, p), nil
	case "image":
		el = x.imageElement(id, n)
	case "frame":
		el = x.common(id, "frame", n.Props, "")
		el["name"] = n.Name
		if n.Name == "" {
			el["name"] = nil
		}
		_, frame := x.groupsAndFrame(n.ParentID)
		el["frameId"] = frame
	case "embed":
		el = x.common(id, "embeddable", n.Props, n.ParentID)
		el["link"] = p.str("url")
	case "doc":
		el = x.common(id, "rectangle", n.Props, n.ParentID)
		el["backgroundColor"], el["strokeColor"], el["strokeWidth"], el["roughness"] = "#f8f9fa", "#495057", 1.0, 0.0
		el["roundness"] = obj{"type": 3.0}
		text := p.str("text")
		name := n.Name
		if name == "" {
			name = "document"
		}
		props := map[string]any{"text": "≡ " + name + "\n" + text, "font": "mono", "fontSize": 13.0, "align": "start", "verticalAlign": "start"}
		x.place(el, n)
		return el, x.label(el, props, n.W, n.H)
	default:
		return nil, nil
	}
	x.place(el, n)
	var label obj
	if n.Type != "text" && n.Type != "frame" && n.Type != "image" && n.Type != "embed" {
		label = x.label(el, n.Props, n.W, n.H)
	}
	x.boundTo(el, n.ID, label)
	return el, label
}

// lineElement writes a line or drawing node as a line or freedraw element
// (no label).
func (x *exEncoder) lineElement(id string, n *canvas.Node, p propsOf) obj {
	typ := "line"
	if n.Type == "draw" {
		typ = "freedraw"
	}
	el := x.common(id, typ, n.Props, n.ParentID)
	var pts []any
	var pressures []any
	if n.Type == "line" {
		for _, q := range pointsOf(n.Props["points"]) {
			pts = append(pts, []any{q[0], q[1]})
		}
		if closed, _ := n.Props["closed"].(bool); closed {
			el["polygon"] = true
		} else {
			el["polygon"] = false
		}
		if p.str("routing") == "curved" {
			el["roundness"] = obj{"type": 2.0}
		}
		el["startBinding"], el["endBinding"], el["startArrowhead"], el["endArrowhead"] = nil, nil, nil, nil
	} else {
		segs, _ := n.Props["segments"].([]any)
		for _, s := range segs {
			sm, _ := s.(map[string]any)
			list, _ := sm["points"].([]any)
			for _, q := range list {
				qm, _ := q.(map[string]any)
				px, _ := number(qm["x"])
				py, _ := number(qm["y"])
				pts = append(pts, []any{px, py})
				if z, ok := number(qm["z"]); ok {
					pressures = append(pressures, z)
				}
			}
		}
		if len(pressures) != len(pts) {
			pressures = []any{}
		}
		el["pressures"] = pressures
		el["simulatePressure"] = len(pressures) == 0
	}
	if pts == nil {
		pts = []any{}
	}
	el["points"] = pts
	el["lastCommittedPoint"] = nil
	// canvasd turns the node about its corner (the first point's place),
	// Excalidraw about the middle of the points' box.
	var raw [][2]float64
	for _, q := range pts {
		a := q.([]any)
		raw = append(raw, [2]float64{a[0].(float64), a[1].(float64)})
	}
	box := bboxOfPts(raw)
	el["width"], el["height"] = box[2]-box[0], box[3]-box[1]
	ex, ey := n.X, n.Y
	if n.Rotation != 0 {
		// The corner is where turning the middle back puts the origin.
		mx, my := (box[0]+box[2])/2, (box[1]+box[3])/2
		cx, cy := turnAbout(n.X+mx, n.Y+my, n.X, n.Y, n.Rotation)
		ex, ey = cx-mx, cy-my
	}
	el["x"], el["y"], el["angle"] = ex, ey, n.Rotation
	return el
}

// imageElement writes an image node as an image element: its file, flips
// and crop (in the pixels of the image as the file gave them).
func (x *exEncoder) imageElement(id string, n *canvas.Node) obj {
	el := x.common(id, "image", n.Props, n.ParentID)
	el["strokeColor"] = "transparent"
	if _, ok := n.Props["color"]; ok {
		el["strokeColor"] = exColorOut(n.Props["color"], false, "transparent")
	}
	el["status"] = "saved"
	el["fileId"] = fileIDOf(n)
	sx, sy := 1.0, 1.0
	if f, _ := n.Props["flipX"].(bool); f {
		sx = -1
	}
	if f, _ := n.Props["flipY"].(bool); f {
		sy = -1
	}
	el["scale"] = []any{sx, sy}
	el["crop"] = nil
	if c, ok := n.Props["crop"].(map[string]any); ok {
		nw, nh := 1000.0, 1000.0
		if k, ok := metaOf(n.Props, exMeta); ok {
			if kc, ok := k.Keep["crop"].(map[string]any); ok {
				nw, _ = number(kc["naturalWidth"])
				nh, _ = number(kc["naturalHeight"])
			}
		}
		cx, _ := number(c["x"])
		cy, _ := number(c["y"])
		cw, _ := number(c["w"])
		ch, _ := number(c["h"])
		el["crop"] = obj{"x": cx * nw, "y": cy * nh, "width": cw * nw, "height": ch * nh, "naturalWidth": nw, "naturalHeight": nh}
	}
	return el
}

// place sets an element's box from a node's.
func (x *exEncoder) place(el obj, n *canvas.Node) {
	ex, ey := toElementXY(n.X, n.Y, n.W, n.H, n.Rotation)
	el["x"], el["y"], el["width"], el["height"], el["angle"] = ex, ey, n.W, n.H, n.Rotation
}

// boundTo lists the label and edges bound to an element.
func (x *exEncoder) boundTo(el obj, id string, label obj) {
	var list []any
	if label != nil {
		list = append(list, obj{"type": "text", "id": label["id"]})
	}
	for _, eid := range x.bound[id] {
		e := x.s.Edges[eid]
		list = append(list, obj{"id": elemID(e.ID, e.Props), "type": "arrow"})
	}
	if list == nil {
		list = []any{}
	}
	el["boundElements"] = list
}

// text sets a text element's members from props.
func (x *exEncoder) text(el obj, props map[string]any, align, valign string) {
	p := propsOf(props)
	text := p.str("text")
	el["text"], el["originalText"] = text, text
	font := p.str("font")
	fam := 5.0
	for k, v := range exFontOf {
		if v == font {
			fam = k
		}
	}
	el["fontFamily"] = fam
	size := 20.0
	if s, ok := number(props["fontSize"]); ok {
		size = s
	} else if sz := p.str("size"); sz != "" {
		size = render.SizeFontSize(sz)
	}
	el["fontSize"] = size
	switch p.str("align") {
	case "start":
		align = "left"
	case "middle":
		align = "center"
	case "end":
		align = "right"
	}
	switch p.str("verticalAlign") {
	case "start":
		valign = "top"
	case "middle":
		valign = "middle"
	case "end":
		valign = "bottom"
	}
	el["textAlign"], el["verticalAlign"] = align, valign
	el["lineHeight"] = render.FaceOf(font).LineHeight
}

// label is the bound text element of a container element, or nil.
func (x *exEncoder) label(container obj, props map[string]any, w, h float64) obj {
	p := propsOf(props)
	text := p.str("text")
	if text == "" {
		return nil
	}
	cid, _ := container["id"].(string)
	id := cid + "-label"
	if s, _ := metaField(props, exMeta, "lid").(string); s != "" {
		id = s
	}
	t := obj{"id": id, "type": "text", "angle": container["angle"],
		"strokeColor":     exColorOut(firstOf(props["labelColor"], props["color"]), false, "#1e1e1e"),
		"backgroundColor": "transparent", "fillStyle": "solid", "strokeWidth": 2.0, "strokeStyle": "solid",
		"roughness": 1.0, "opacity": container["opacity"], "groupIds": container["groupIds"], "frameId": container["frameId"],
		"roundness": nil, "seed": float64(seedOf(id)), "version": 1.0, "versionNonce": float64(seedOf(id + "v")),
		"isDeleted": false, "boundElements": []any{}, "updated": 1.0, "link": nil, "locked": false,
		"containerId": cid, "autoResize": true}
	x.text(t, props, "center", "middle")
	face := render.FaceOf(p.str("font"))
	size := t["fontSize"].(float64)
	inner := math.Max(w-10, size)
	if container["type"] == "arrow" {
		inner = math.Max(0.7*w, 11*size)
	}
	lines := face.Wrap(text, size, inner)
	t["text"] = strings.Join(lines, "\n")
	tw := 0.0
	for _, l := range lines {
		tw = math.Max(tw, face.Measure(l, size))
	}
	th := float64(len(lines)) * size * face.LineHeight
	cx, _ := number(container["x"])
	cy, _ := number(container["y"])
	t["width"], t["height"] = tw, th
	switch t["textAlign"] {
	case "left":
		t["x"] = cx + 5
	case "right":
		t["x"] = cx + w - 5 - tw
	default:
		t["x"] = cx + (w-tw)/2
	}
	switch t["verticalAlign"] {
	case "top":
		t["y"] = cy + 5
	case "bottom":
		t["y"] = cy + h - 5 - th
	default:
		t["y"] = cy + (h-th)/2
	}
	return t
}

func firstOf(vs ...any) any {
	for _, v := range vs {
		if s, _ := v.(string); s != "" {
			return s
		}
	}
	return nil
}

// edge writes an edge as an arrow element and its label.
func (x *exEncoder) edge(e *canvas.Edge) (obj, obj) {
	p := propsOf(e.Props)
	id := elemID(e.ID, e.Props)
	el := x.common(id, "arrow", e.Props, "")
	pts := pointsOf(e.Props["points"])
	if len(pts) < 2 {
		pts = x.ends(e)
	}
	if len(pts) == 0 {
		pts = [][2]float64{{0, 0}, {0, 0}}
	}
	ox, oy := pts[0][0], pts[0][1]
	rel := make([]any, len(pts))
	for i, q := range pts {
		rel[i] = []any{q[0] - ox, q[1] - oy}
	}
	box := bboxOfPts(pts)
	el["x"], el["y"], el["width"], el["height"] = ox, oy, box[2]-box[0], box[3]-box[1]
	el["points"], el["lastCommittedPoint"] = rel, nil
	el["elbowed"] = p.str("routing") == "elbow"
	if p.str("routing") == "curved" {
		el["roundness"] = obj{"type": 2.0}
	}
	bind := func(end string) any {
		if end == "" || x.s.Nodes[end] == nil {
			return nil
		}
		n := x.s.Nodes[end]
		return obj{"elementId": elemID(n.ID, n.Props), "focus": 0.0, "gap": 1.0}
	}
	el["startBinding"], el["endBinding"] = bind(e.From), bind(e.To)
	head := func(key, def string) any {
		s := p.str(key)
		if _, set := e.Props[key]; !set {
			s = def
		}
		if v, ok := exHeadOut[s]; ok {
			return v
		}
		return nil
	}
	el["startArrowhead"], el["endArrowhead"] = head("arrowheadStart", "none"), head("arrowheadEnd", "arrow")
	label := x.label(el, e.Props, box[2]-box[0], box[3]-box[1])
	if label != nil {
		// An arrow's label sits at its middle.
		mx, my := midpointOf(pts)
		label["x"] = mx - label["width"].(float64)/2
		label["y"] = my - label["height"].(float64)/2
		el["boundElements"] = []any{obj{"type": "text", "id": label["id"]}}
	}
	return el, label
}

// ends are the points of an edge stored without them.
func (x *exEncoder) ends(e *canvas.Edge) [][2]float64 {
	a, b := x.s.Nodes[e.From], x.s.Nodes[e.To]
	if a == nil || b == nil {
		return nil
	}
	return [][2]float64{{a.X + a.W/2, a.Y + a.H/2}, {b.X + b.W/2, b.Y + b.H/2}}
}

// midpointOf is the point halfway along a polyline.
func midpointOf(pts [][2]float64) (float64, float64) {
	total := 0.0
	for i := 1; i < len(pts); i++ {
		total += math.Hypot(pts[i][0]-pts[i-1][0], pts[i][1]-pts[i-1][1])
	}
	d := total / 2
	for i := 1; i < len(pts); i++ {
		l := math.Hypot(pts[i][0]-pts[i-1][0], pts[i][1]-pts[i-1][1])
		if d <= l && l > 0 {
			t := d / l
			return pts[i-1][0] + (pts[i][0]-pts[i-1][0])*t, pts[i-1][1] + (pts[i][1]-pts[i-1][1])*t
		}
		d -= l
	}
	return pts[0][0], pts[0][1]
}

// pointsOf reads props points [{x, y}].
func pointsOf(v any) [][2]float64 {
	list, _ := v.([]any)
	out := make([][2]float64, 0, len(list))
	for _, q := range list {
		m, _ := q.(map[string]any)
		x, okx := number(m["x"])
		y, oky := number(m["y"])
		if okx && oky {
			out = append(out, [2]float64{x, y})
		}
	}
	return out
}

// fileIDOf is the id of an image node's file: the one it was read with, or
// the SHA-1 of its URL (as Excalidraw names files).
func fileIDOf(n *canvas.Node) string {
	if k, ok := metaOf(n.Props, exMeta); ok {
		if s, _ := k.Keep["fileId"].(string); s != "" {
			return s
		}
	}
	u, _ := canvas.PropText(n.Props["url"])
	sum := sha1.Sum([]byte(u))
	return hex.EncodeToString(sum[:])
}

// file is an image node's entry in files.
func (x *exEncoder) file(n *canvas.Node, id string) obj {
	u, _ := canvas.PropText(n.Props["url"])
	mime := "image/png"
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if m, _, ok := strings.Cut(rest, ";"); ok {
			mime = m
		}
	}
	return obj{"mimeType": mime, "id": id, "dataURL": u, "created": 1.0, "lastRetrieved": 1.0}
}

// exOut is one element to write and where it goes.
type exOut struct {
	el  obj
	pos int
	ord int
}

func encodeExcalidraw(s *canvas.State, nodes []*canvas.Node, edges []*canvas.Edge) ([]byte, error) {
	enc := newExEncoder(s)
	var out []exOut
	files := obj{}
	ord := 0
	allHavePos := true
	add := func(el obj, props map[string]any, isLabel bool) {
		pos := -1
		if k, ok := metaOf(props, exMeta); ok {
			var ek exKept
			b, _ := json.Marshal(props["meta"].(map[string]any)[exMeta])
			json.Unmarshal(b, &ek)
			if isLabel {
				if ek.Label != nil {
					el = ek.Label.apply(el, exCarry, exKnown)
				}
				if ek.LPos != nil {
					pos = *ek.LPos
				}
			} else {
				el = k.apply(el, exCarry, exKnown)
				if ek.Pos != nil {
					pos = *ek.Pos
				}
			}
		}
		if pos < 0 {
			allHavePos = false
		}
		out = append(out, exOut{el: el, pos: pos, ord: ord})
		ord++
	}
	for _, n := range nodes {
		el, label := enc.node(n)
		if el == nil {
			continue
		}
		add(el, n.Props, false)
		if label != nil {
			add(label, n.Props, true)
		}
		if n.Type == "image" {
			if u, _ := canvas.PropText(n.Props["url"]); u != "" {
				fid, _ := out[len(out)-1].el["fileId"].(string)
				f := enc.file(n, fid)
				var ek exKept
				if meta, ok := n.Props["meta"].(map[string]any); ok {
					b, _ := json.Marshal(meta[exMeta])
					json.Unmarshal(b, &ek)
				}
				if ek.File != nil {
					f = ek.File.apply(f, exCarry, exKnown)
				}
				files[fid] = f
			}
		}
	}
	for _, e := range edges {
		el, label := enc.edge(e)
		add(el, e.Props, false)
		if label != nil {
			add(label, e.Props, true)
		}
	}
	if allHavePos {
		sort.SliceStable(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	}
	els := make([]any, len(out))
	for i, o := range out {
		els[i] = o.el
	}
	doc := obj{"type": "excalidraw", "version": 2.0, "source": "canvasd", "elements": els,
		"appState": obj{"gridSize": 20.0, "viewBackgroundColor": "#ffffff"}, "files": files}
	return json.MarshalIndent(doc, "", "  ")
}
