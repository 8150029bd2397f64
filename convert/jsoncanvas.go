package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/render"
)

// JSON Canvas ↔ canvasd:
//
//	text node  ↔ geo rectangle, props.text (Markdown as written), top-left aligned, Nunito
//	file node  ↔ doc named by the file's path (its content is not in the file)
//	link node  ↔ embed (an http(s) url), else a geo rectangle whose text and link are the url
//	group node ↔ frame named by its label; the nodes inside its box become its children
//	edge       ↔ edge: fromNode/toNode, fromSide/toSide, fromEnd/toEnd ↔ arrowheadStart/End, label ↔ text
//	color      ↔ color: the presets "1".."6" are red, orange, yellow, green, light-blue, violet;
//	             a hex colour stays as written
//
// A canvasd node of another kind is written as the node it is closest to
// (a note or text as a text node with its text, a document as a text node
// holding the document, an image or embed as a link); drawings, lines and
// edges with a free end have no JSON Canvas form and are left out.

const jcMeta = "jsoncanvas"

// jcPresets maps the preset colours to palette names.
var jcPresets = map[string]string{"1": "red", "2": "orange", "3": "yellow", "4": "green", "5": "light-blue", "6": "violet"}

// jcCarry: members the export only fills with defaults.
var jcCarry = map[string]bool{}

func decodeJSONCanvas(data []byte) (*Scene, error) {
	top, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	nodesV, edgesV := top["nodes"], top["edges"]
	nodesA, ok := nodesV.([]any)
	if nodesV != nil && !ok {
		return nil, fileError(".nodes", "must be an array of nodes")
	}
	edgesA, ok := edgesV.([]any)
	if edgesV != nil && !ok {
		return nil, fileError(".edges", "must be an array of edges")
	}
	if len(nodesA)+len(edgesA) > MaxObjects {
		return nil, fileError("", "holds %d nodes and edges, more than the %d an import takes", len(nodesA)+len(edgesA), MaxObjects)
	}
	sc := &Scene{}
	taken := map[string]bool{}
	ids := map[string]string{} // file id → node id
	origs := map[*canvas.Node]obj{}
	for i, v := range nodesA {
		place := ".nodes[" + strconv.Itoa(i) + "]"
		o, ok := v.(obj)
		if !ok {
			return nil, fileError(place, "must be an object")
		}
		n, err := jcNode(o, place)
		if err != nil {
			return nil, err
		}
		fileID := n.ID
		if _, dup := ids[fileID]; dup {
			return nil, fileError(place+".id", "%q is the id of an earlier node; ids must be unique", fileID)
		}
		id, changed := validID(fileID, taken)
		n.ID = id
		ids[fileID] = id
		if changed {
			n.Props["meta"] = map[string]any{jcMeta + "_id": fileID}
		}
		sc.addNode(n, place)
		origs[n] = o
	}
	jcParents(sc.Nodes)
	edgeOrigs := map[*canvas.Edge]obj{}
	for i, v := range edgesA {
		place := ".edges[" + strconv.Itoa(i) + "]"
		o, ok := v.(obj)
		if !ok {
			return nil, fileError(place, "must be an object")
		}
		e, err := jcEdge(o, place, ids)
		if err != nil {
			return nil, err
		}
		fileID := e.ID
		id, changed := validID(fileID, taken)
		e.ID = id
		if changed {
			e.Props["meta"] = map[string]any{jcMeta + "_id": fileID}
		}
		sc.addEdge(e, place)
		edgeOrigs[e] = o
	}
	// What the export would not give back is kept beside the model.
	byID := map[string]*canvas.Node{}
	for _, n := range sc.Nodes {
		byID[n.ID] = n
	}
	for _, n := range sc.Nodes {
		fresh := jcNodeOut(n, byID)
		setMeta(n.Props, jcMeta, keepOf(origs[n], fresh, jcCarry))
	}
	for _, e := range sc.Edges {
		fresh := jcEdgeOut(e, byID)
		setMeta(e.Props, jcMeta, keepOf(edgeOrigs[e], fresh, jcCarry))
	}
	return sc, nil
}

// str reads a string member; ok is false when it is there and not a string.
func str(o obj, key string) (string, bool) {
	v, there := o[key]
	if !there || v == nil {
		return "", true
	}
	s, ok := v.(string)
	return s, ok
}

func jcNode(o obj, place string) (*canvas.Node, error) {
	id, ok := str(o, "id")
	if !ok || id == "" {
		return nil, fileError(place+".id", "is required: a string")
	}
	typ, ok := str(o, "type")
	if !ok {
		return nil, fileError(place+".type", "must be a string")
	}
	n := &canvas.Node{ID: id, Props: make(map[string]any, 10)} // a text node has 9 props
	for _, f := range []struct {
		key string
		dst *float64
	}{{"x", &n.X}, {"y", &n.Y}, {"width", &n.W}, {"height", &n.H}} {
		v, ok := number(o[f.key])
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fileError(place+"."+f.key, "is required: a number (an integer, in pixels)")
		}
		*f.dst = v
	}
	if n.W < 0 || n.H < 0 {
		return nil, fileError(place+".width", "width and height must not be negative")
	}
	color, ok := str(o, "color")
	if !ok {
		return nil, fileError(place+".color", "must be a string: a preset \"1\" to \"6\" or a hex colour")
	}
	if color != "" {
		c, err := jcColorIn(color)
		if err != nil {
			return nil, fileError(place+".color", "%v", err)
		}
		n.Props["color"] = c
	}
	need := func(key string) (string, error) {
		s, ok := str(o, key)
		if !ok || (s == "" && o[key] == nil) {
			return "", fileError(place+"."+key, "is required for a %s node: a string", typ)
		}
		return s, nil
	}
	switch typ {
	case "text":
		text, err := need("text")
		if err != nil {
			return nil, err
		}
		n.Type = "geo"
		n.Props["geo"] = "rectangle"
		n.Props["text"] = text
		n.Props["align"], n.Props["verticalAlign"], n.Props["font"], n.Props["size"] = "start", "start", "sans", "s"
		if color != "" {
			n.Props["fill"] = "semi"
		}
	case "file":
		file, err := need("file")
		if err != nil {
			return nil, err
		}
		if sub, ok := str(o, "subpath"); !ok || (sub != "" && !strings.HasPrefix(sub, "#")) {
			return nil, fileError(place+".subpath", "must be a string that starts with #")
		}
		n.Type = "doc"
		n.Name = file
		n.Props["text"] = ""
	case "link":
		u, err := need("url")
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
			n.Type = "embed"
			n.Props["url"] = u
		} else {
			n.Type = "geo"
			n.Props["geo"] = "rectangle"
			n.Props["text"] = u
		}
	case "group":
		label, ok := str(o, "label")
		if !ok {
			return nil, fileError(place+".label", "must be a string")
		}
		if bs, ok := str(o, "backgroundStyle"); !ok || (bs != "" && bs != "cover" && bs != "ratio" && bs != "repeat") {
			return nil, fileError(place+".backgroundStyle", "must be cover, ratio or repeat")
		}
		if _, ok := str(o, "background"); !ok {
			return nil, fileError(place+".background", "must be a string: the path of an image")
		}
		n.Type = "frame"
		n.Name = label
	case "":
		return nil, fileError(place+".type", "is required: text, file, link or group")
	default:
		return nil, fileError(place+".type", "must be text, file, link or group; got %q", typ)
	}
	return n, nil
}

// jcParents makes each node a child of the smallest group (frame) whose box
// holds its box, as JSON Canvas groups hold what lies inside them.
func jcParents(nodes []*canvas.Node) {
	inside := func(a, b *canvas.Node) bool {
		return a.X >= b.X && a.Y >= b.Y && a.X+a.W <= b.X+b.W && a.Y+a.H <= b.Y+b.H
	}
	var frames []*canvas.Node // only frames hold: the pairs to try are nodes × frames
	for _, g := range nodes {
		if g.Type == "frame" {
			frames = append(frames, g)
		}
	}
	for _, n := range nodes {
		var best *canvas.Node
		for _, g := range frames {
			if g == n || !inside(n, g) || (n.Type == "frame" && inside(g, n)) {
				continue
			}
			if best == nil || g.W*g.H < best.W*best.H {
				best = g
			}
		}
		if best != nil {
			n.ParentID = best.ID
		}
	}
}

func jcEdge(o obj, place string, ids map[string]string) (*canvas.Edge, error) {
	id, ok := str(o, "id")
	if !ok || id == "" {
		return nil, fileError(place+".id", "is required: a string")
	}
	e := &canvas.Edge{ID: id, Type: "arrow", Props: map[string]any{}}
	for _, end := range []struct{ node, side, head, prop, sideProp string }{
		{"fromNode", "fromSide", "fromEnd", "arrowheadStart", "fromSide"},
		{"toNode", "toSide", "toEnd", "arrowheadEnd", "toSide"},
	} {
		ref, ok := str(o, end.node)
		if !ok || ref == "" {
			return nil, fileError(place+"."+end.node, "is required: the id of a node")
		}
		nid, found := ids[ref]
		if !found {
			return nil, fileError(place+"."+end.node, "names %q, which is not a node of the file", ref)
		}
		if end.node == "fromNode" {
			e.From = nid
		} else {
			e.To = nid
		}
		side, ok := str(o, end.side)
		if !ok || (side != "" && side != "top" && side != "right" && side != "bottom" && side != "left") {
			return nil, fileError(place+"."+end.side, "must be top, right, bottom or left")
		}
		if side != "" {
			e.Props[end.sideProp] = side
		}
		head, ok := str(o, end.head)
		if !ok || (head != "" && head != "none" && head != "arrow") {
			return nil, fileError(place+"."+end.head, "must be none or arrow")
		}
		if head != "" {
			e.Props[end.prop] = head
		}
	}
	color, ok := str(o, "color")
	if !ok {
		return nil, fileError(place+".color", "must be a string: a preset \"1\" to \"6\" or a hex colour")
	}
	if color != "" {
		c, err := jcColorIn(color)
		if err != nil {
			return nil, fileError(place+".color", "%v", err)
		}
		e.Props["color"] = c
	}
	label, ok := str(o, "label")
	if !ok {
		return nil, fileError(place+".label", "must be a string")
	}
	if label != "" {
		e.Props["text"] = label
	}
	return e, nil
}

func jcColorIn(c string) (string, error) {
	if name, ok := jcPresets[c]; ok {
		return name, nil
	}
	if _, ok := render.ParseColor(c, false); ok && strings.HasPrefix(c, "#") {
		return c, nil
	}
	return "", fmt.Errorf("must be a preset \"1\" to \"6\" or a hex colour like \"#FF0000\"; got %q", c)
}

func jcColorOut(c string) string {
	for k, v := range jcPresets {
		if v == c {
			return k
		}
	}
	if strings.HasPrefix(c, "#") {
		return c
	}
	if tones, ok := render.Palette[c]; ok {
		return tones[0]
	}
	return ""
}

// fileID is the id a node or edge had in the file (the model's id unless
// it had to be changed).
func fileID(id string, props map[string]any) string {
	meta, _ := props["meta"].(map[string]any)
	if s, ok := meta[jcMeta+"_id"].(string); ok {
		return s
	}
	return id
}

// intOrFloat writes a coordinate as JSON Canvas wants it: an integer.
func intOrFloat(v float64) any { return math.Round(v) }

// jcNodeOut is the JSON Canvas node of n, or nil when it has none.
func jcNodeOut(n *canvas.Node, nodes map[string]*canvas.Node) obj {
	p := n.Props
	text := func(key string) string { s, _ := canvas.PropText(p[key]); return s }
	o := obj{"id": fileID(n.ID, p), "x": intOrFloat(n.X), "y": intOrFloat(n.Y), "width": intOrFloat(n.W), "height": intOrFloat(n.H)}
	switch n.Type {
	case "geo", "note", "text":
		o["type"] = "text"
		o["text"] = text("text")
	case "doc":
		o["type"] = "text"
		o["text"] = text("text")
	case "image", "embed":
		o["type"] = "link"
		o["url"] = text("url")
	case "frame":
		o["type"] = "group"
		if n.Name != "" {
			o["label"] = n.Name
		}
	default:
		return nil
	}
	if c := text("color"); c != "" {
		if jc := jcColorOut(c); jc != "" {
			o["color"] = jc
		}
	}
	return o
}

// jcEdgeOut is the JSON Canvas edge of e, or nil when it has none.
func jcEdgeOut(e *canvas.Edge, nodes map[string]*canvas.Node) obj {
	if e.From == "" || e.To == "" || nodes[e.From] == nil || nodes[e.To] == nil {
		return nil
	}
	p := e.Props
	text := func(key string) string { s, _ := canvas.PropText(p[key]); return s }
	o := obj{"id": fileID(e.ID, p), "fromNode": fileID(e.From, nodes[e.From].Props), "toNode": fileID(e.To, nodes[e.To].Props)}
	if s := text("fromSide"); s != "" {
		o["fromSide"] = s
	}
	if s := text("toSide"); s != "" {
		o["toSide"] = s
	}
	head := func(v any) string {
		if s, _ := v.(string); s == "none" {
			return "none"
		}
		return "arrow"
	}
	if v, ok := p["arrowheadStart"]; ok {
		o["fromEnd"] = head(v)
	}
	if v, ok := p["arrowheadEnd"]; ok {
		o["toEnd"] = head(v)
	}
	if c := text("color"); c != "" {
		if jc := jcColorOut(c); jc != "" {
			o["color"] = jc
		}
	}
	if t := text("text"); t != "" {
		o["label"] = t
	}
	return o
}

// jcKnown are the members the spec defines.
var jcKnown = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range jcKeyOrder {
		m[k] = true
	}
	return m
}()

// jcKeyOrder is the order members are written in: the spec's.
var jcKeyOrder = []string{"id", "type", "text", "file", "subpath", "url", "label", "background", "backgroundStyle",
	"x", "y", "width", "height", "color", "fromNode", "fromSide", "fromEnd", "toNode", "toSide", "toEnd"}

func encodeJSONCanvas(s *canvas.State, nodes []*canvas.Node, edges []*canvas.Edge) ([]byte, error) {
	all := map[string]*canvas.Node{}
	for _, n := range nodes {
		all[n.ID] = n
	}
	var b bytes.Buffer
	b.WriteString("{\n\t\"nodes\":[")
	first := true
	for _, n := range nodes {
		o := jcNodeOut(n, all)
		if o == nil {
			continue
		}
		if k, ok := metaOf(n.Props, jcMeta); ok {
			o = k.apply(o, jcCarry, jcKnown)
		}
		if err := writeOrdered(&b, o, &first); err != nil {
			return nil, err
		}
	}
	b.WriteString("\n\t],\n\t\"edges\":[")
	first = true
	for _, e := range edges {
		o := jcEdgeOut(e, all)
		if o == nil {
			continue
		}
		if k, ok := metaOf(e.Props, jcMeta); ok {
			o = k.apply(o, jcCarry, jcKnown)
		}
		if err := writeOrdered(&b, o, &first); err != nil {
			return nil, err
		}
	}
	b.WriteString("\n\t]\n}\n")
	return b.Bytes(), nil
}

// writeOrdered writes o on a line of its own, members in the spec's order
// (others after them, sorted).
func writeOrdered(b *bytes.Buffer, o obj, first *bool) error {
	if !*first {
		b.WriteByte(',')
	}
	*first = false
	b.WriteString("\n\t\t{")
	rank := map[string]int{}
	for i, k := range jcKeyOrder {
		rank[k] = i
	}
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, oki := rank[keys[i]]
		rj, okj := rank[keys[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return keys[i] < keys[j]
	})
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(o[k])
		if err != nil {
			return fmt.Errorf("convert: writing %s: %w", k, err)
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return nil
}
