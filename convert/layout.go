package convert

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/render"
)

// Mermaid flowcharts are laid out by Graphviz's dot (goccy/go-graphviz runs
// Graphviz compiled to WebAssembly in wazero: no cgo, no system library;
// each layout in a worker process, dotworker.go):
// nodes are sized to their labels in the canvas's default font, subgraphs
// are clusters (frames), and dot's ranks follow the chart's direction, so
// no two nodes overlap and every link that is not part of a cycle runs
// the declared way.

const mmMeta = "mermaid"

// mmFontSize is the size of the labels of imported nodes (the model's "m").
const mmFontSize = 20

// mmGeo maps Mermaid shapes to geo geometries.
var mmGeo = map[string]string{"rect": "rectangle", "rounded": "rectangle", "stadium": "oval", "subroutine": "rectangle",
	"cylinder": "oval", "circle": "ellipse", "double-circle": "ellipse", "asymmetric": "rhombus", "diamond": "diamond",
	"hexagon": "hexagon", "parallelogram": "rhombus", "parallelogram-alt": "rhombus-2", "trapezoid": "trapezoid",
	"trapezoid-alt": "trapezoid", "triangle": "triangle"}

// mmDotShape is the dot shape of a Mermaid shape, so links end at its outline.
var mmDotShape = map[string]string{"diamond": "diamond", "circle": "circle", "double-circle": "circle", "hexagon": "hexagon",
	"parallelogram": "parallelogram", "parallelogram-alt": "parallelogram", "trapezoid": "trapezium",
	"trapezoid-alt": "invtrapezium", "triangle": "triangle", "stadium": "ellipse", "cylinder": "ellipse"}

var mmHead = map[string]string{"": "none", "arrow": "arrow", "circle": "dot", "cross": "bar"}

func decodeMermaid(data []byte) (*Scene, error) {
	g, err := parseMermaid(string(data))
	if err != nil {
		return nil, err
	}
	if len(g.nodes)+len(g.subs) > MaxMermaidNodes {
		return nil, fileError("", "has %d nodes and subgraphs, more than the %d an import lays out", len(g.nodes)+len(g.subs), MaxMermaidNodes)
	}
	if len(g.edges) > MaxMermaidEdges {
		return nil, fileError("", "has %d links, more than the %d an import lays out", len(g.edges), MaxMermaidEdges)
	}
	for _, s := range g.subs {
		depth := 1
		for p := s.parent; p != nil; p = p.parent {
			depth++
		}
		if depth > MaxMermaidDepth {
			return nil, mmError(s.line, "subgraph %q is nested %d deep, more than the %d an import lays out", s.id, depth, MaxMermaidDepth)
		}
	}
	return layoutMermaid(g)
}

// mmBox is a node's size and its wrapped label.
type mmBox struct {
	w, h  float64
	lines []string
}

func sizeOf(n *mmNode) mmBox {
	face := render.FaceOf("draw")
	lines := face.Wrap(n.text, mmFontSize, 200)
	tw := 0.0
	for _, l := range lines {
		tw = math.Max(tw, face.Measure(l, mmFontSize))
	}
	th := float64(len(lines)) * mmFontSize * face.LineHeight
	w, h := math.Max(tw+40, 80), math.Max(th+30, 56)
	switch n.shape {
	case "circle", "double-circle":
		d := math.Max(math.Hypot(tw, th)+24, 64)
		w, h = d, d
	case "diamond":
		w, h = math.Max(tw*1.6+40, 100), math.Max(th*1.6+40, 80)
	case "hexagon", "parallelogram", "parallelogram-alt", "trapezoid", "trapezoid-alt", "asymmetric":
		w += math.Min(h, 60)
	case "triangle":
		w, h = tw*2+40, th*2+40
	case "stadium", "cylinder":
		w += h / 2
	}
	return mmBox{w: math.Ceil(w), h: math.Ceil(h), lines: lines}
}

func dotString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func inches(px float64) string { return strconv.FormatFloat(px/72, 'f', 4, 64) }

// layoutMermaid lays the chart out with dot and makes its scene.
func layoutMermaid(g *mmGraph) (*Scene, error) {
	boxes := make([]mmBox, len(g.nodes))
	nodeIdx := map[string]int{}
	for i, n := range g.nodes {
		boxes[i] = sizeOf(n)
		nodeIdx[n.id] = i
	}
	subIdx := map[*mmSub]int{}
	for i, s := range g.subs {
		subIdx[s] = i
	}
	var b strings.Builder
	fmt.Fprintf(&b, "digraph G {\ngraph [rankdir=%s, nodesep=0.55, ranksep=0.75, compound=true, fontsize=14, fontname=Helvetica, %s];\n", g.dir, dotEffort(g))
	b.WriteString("node [shape=box, fixedsize=true, label=\"\"];\nedge [fontsize=20, fontname=Helvetica];\n")
	writeNode := func(j int, n *mmNode) {
		shape := "box"
		if s, ok := mmDotShape[n.shape]; ok {
			shape = s
		}
		fmt.Fprintf(&b, "n%d [shape=%s, width=%s, height=%s];\n", j, shape, inches(boxes[j].w), inches(boxes[j].h))
	}
	// Clusters, nested, each with its nodes and an anchor for links to it.
	var writeSub func(s *mmSub, depth int)
	writeSub = func(s *mmSub, depth int) {
		i := subIdx[s]
		fmt.Fprintf(&b, "subgraph cluster_%d {\ngraph [label=%s, margin=16];\n", i, dotString(s.title))
		fmt.Fprintf(&b, "a%d [shape=point, style=invis, width=0.01, height=0.01];\n", i)
		for j, n := range g.nodes {
			if n.sub == s {
				writeNode(j, n)
			}
		}
		for _, c := range g.subs {
			if c.parent == s {
				writeSub(c, depth+1)
			}
		}
		b.WriteString("}\n")
	}
	for _, s := range g.subs {
		if s.parent == nil {
			writeSub(s, 0)
		}
	}
	for j, n := range g.nodes {
		if n.sub == nil {
			writeNode(j, n)
		}
	}
	endpoint := func(ref string) (dot, cluster string, err error) {
		if id, ok := strings.CutPrefix(ref, "subgraph:"); ok {
			i := subIdx[g.subByID[id]]
			return fmt.Sprintf("a%d", i), fmt.Sprintf("cluster_%d", i), nil
		}
		j, ok := nodeIdx[ref]
		if !ok {
			return "", "", fmt.Errorf("unknown node %q", ref)
		}
		return fmt.Sprintf("n%d", j), "", nil
	}
	for k, e := range g.edges {
		from, ltail, err := endpoint(e.from)
		if err != nil {
			return nil, mmError(e.line, "%v", err)
		}
		to, lhead, err := endpoint(e.to)
		if err != nil {
			return nil, mmError(e.line, "%v", err)
		}
		attrs := []string{fmt.Sprintf("id=e%d", k)}
		if e.text != "" {
			attrs = append(attrs, "label="+dotString(e.text))
		}
		if ltail != "" {
			attrs = append(attrs, "ltail="+ltail)
		}
		if lhead != "" {
			attrs = append(attrs, "lhead="+lhead)
		}
		if e.stroke == "invisible" {
			attrs = append(attrs, "style=invis")
		}
		fmt.Fprintf(&b, "%s -> %s [%s];\n", from, to, strings.Join(attrs, ", "))
	}
	b.WriteString("}\n")
	out, err := runDot(b.String())
	if err != nil {
		return nil, err
	}
	return mermaidScene(g, boxes, out)
}

// dotOut is the part of dot's JSON output that is read.
type dotOut struct {
	BB      string `json:"bb"`
	Objects []struct {
		Name    string `json:"name"`
		BB      string `json:"bb"`
		Pos     string `json:"pos"`
		LHeight string `json:"lheight"`
	} `json:"objects"`
	Edges []struct {
		ID  string `json:"id"`
		Pos string `json:"pos"`
	} `json:"edges"`
}

// A small chart is laid out with dot's curved links and its full search
// for few crossings. A bigger one gets straight links and a bounded search:
// on charts of random links, dot's spline routing and its unbounded
// crossing and placement passes took 9 s at 200 nodes and 500 links and
// minutes beyond, against under 1.5 s bounded (BenchmarkMermaidWorstCase).
const (
	mmCurvedEdges = 100 // at most this many links...
	mmCurvedNodes = 200 // ...and nodes with subgraphs: curved links, full search
	mmBoundedDot  = "splines=line, mclimit=0.01, nslimit=0.1, nslimit1=0.1, remincross=false"
)

// dotEffort is the graph attributes that set how hard dot works on g.
func dotEffort(g *mmGraph) string {
	if len(g.edges) <= mmCurvedEdges && len(g.nodes)+len(g.subs) <= mmCurvedNodes {
		return "splines=spline"
	}
	return mmBoundedDot
}

func parseFloats(s string) []float64 {
	var out []float64
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		v, err := strconv.ParseFloat(f, 64)
		if err == nil {
			out = append(out, v)
		}
	}
	return out
}

// mermaidScene turns dot's layout into nodes, frames and edges.
func mermaidScene(g *mmGraph, boxes []mmBox, out *dotOut) (*Scene, error) {
	bb := parseFloats(out.BB)
	if len(bb) != 4 {
		return nil, fmt.Errorf("convert: Graphviz gave no bounding box")
	}
	top := bb[3]
	b := &mmBuilder{g: g, out: out, sc: &Scene{}, taken: map[string]bool{}, ids: map[string]string{}, frameIDs: map[int]string{},
		flip: func(x, y float64) (float64, float64) { return x, top - y }}
	b.frames()
	b.nodes(boxes)
	b.edges()
	return b.sc, nil
}

// mmBuilder builds the scene of a laid-out Mermaid graph.
type mmBuilder struct {
	g        *mmGraph
	out      *dotOut
	sc       *Scene
	taken    map[string]bool                       // the ids given so far
	ids      map[string]string                     // Mermaid id (a subgraph's as "subgraph:id") → node id
	frameIDs map[int]string                        // subgraph index → its frame's id
	flip     func(x, y float64) (float64, float64) // dot's y-up points → the canvas's y-down
}

// mmMetaOf sets props.meta.mermaid to v.
func mmMetaOf(props map[string]any, v map[string]any) {
	props["meta"] = map[string]any{mmMeta: v}
}

// frames adds a frame for each subgraph, outer before inner, in the box
// dot gave its cluster below the room left for its label.
func (b *mmBuilder) frames() {
	for i, s := range b.g.subs {
		id, changed := validID(s.id, b.taken)
		b.frameIDs[i] = id
		b.ids["subgraph:"+s.id] = id
		n := &canvas.Node{ID: id, Type: "frame", Name: s.title, Props: map[string]any{}}
		m := map[string]any{"subgraph": s.id}
		if changed {
			m["id"] = s.id
		}
		mmMetaOf(n.Props, m)
		for _, o := range b.out.Objects {
			if o.Name == fmt.Sprintf("cluster_%d", i) {
				r := parseFloats(o.BB)
				if len(r) == 4 {
					x0, y0 := b.flip(r[0], r[3])
					n.X, n.Y, n.W, n.H = x0, y0, r[2]-r[0], r[3]-r[1]
					// The frame's name is drawn above its box: where dot
					// left room for the cluster's label.
					if lh, err := strconv.ParseFloat(o.LHeight, 64); err == nil && lh > 0 {
						cut := math.Min(lh*72+8, n.H/3)
						n.Y += cut
						n.H -= cut
					}
				}
			}
		}
		b.sc.addNode(n, fmt.Sprintf(" line %d", s.line))
	}
	for i, s := range b.g.subs {
		if s.parent != nil {
			b.sc.Nodes[i].ParentID = b.frameIDs[subIdxOf(b.g, s.parent)]
		}
	}
}

// nodes adds a geo shape for each Mermaid node, centred where dot put it,
// in its subgraph's frame.
func (b *mmBuilder) nodes(boxes []mmBox) {
	for j, mn := range b.g.nodes {
		id, changed := validID(mn.id, b.taken)
		b.ids[mn.id] = id
		box := boxes[j]
		n := &canvas.Node{ID: id, Type: "geo", W: box.w, H: box.h, Props: map[string]any{
			"geo": mmGeo[mn.shape], "text": mn.text, "size": "m"}}
		if mn.shape == "rect" || mn.shape == "subroutine" {
			n.Props["roundness"] = "sharp"
		}
		m := map[string]any{"shape": mn.shape}
		if changed {
			m["id"] = mn.id
		}
		mmMetaOf(n.Props, m)
		applyStyle(n.Props, b.g, mn)
		for _, o := range b.out.Objects {
			if o.Name == fmt.Sprintf("n%d", j) {
				p := parseFloats(o.Pos)
				if len(p) == 2 {
					x, y := b.flip(p[0], p[1])
					n.X, n.Y = x-box.w/2, y-box.h/2
				}
			}
		}
		if mn.sub != nil {
			n.ParentID = b.frameIDs[subIdxOf(b.g, mn.sub)]
		}
		b.sc.addNode(n, fmt.Sprintf(" line %d", mn.line))
	}
}

// edges adds an edge for each visible Mermaid link, along dot's spline.
func (b *mmBuilder) edges() {
	edgePos := map[string]string{}
	for _, e := range b.out.Edges {
		edgePos[e.ID] = e.Pos
	}
	for k, me := range b.g.edges {
		if me.stroke == "invisible" {
			continue
		}
		id, _ := validID(fmt.Sprintf("%s-%s-%d", me.from, me.to, k+1), b.taken)
		id = strings.ReplaceAll(id, "subgraph:", "")
		e := &canvas.Edge{ID: id, From: b.ids[me.from], To: b.ids[me.to], Type: "arrow", Props: map[string]any{
			"arrowheadStart": mmHead[me.start], "arrowheadEnd": mmHead[me.end], "routing": "curved"}}
		if me.text != "" {
			e.Props["text"] = me.text
		}
		switch me.stroke {
		case "dotted":
			e.Props["dash"] = "dotted"
		case "thick":
			e.Props["strokeWidth"] = 4.0
		}
		if pts := splinePoints(edgePos[fmt.Sprintf("e%d", k)], b.flip); len(pts) >= 2 {
			e.Props["points"] = pts
		}
		b.sc.addEdge(e, fmt.Sprintf(" line %d", me.line))
	}
}

func subIdxOf(g *mmGraph, s *mmSub) int {
	for i, x := range g.subs {
		if x == s {
			return i
		}
	}
	return -1
}

// splinePoints turns dot's spline of an edge ("e,x,y s,x,y p0 p1 ...",
// cubic Bézier pieces) into points for a curved edge: its ends and the
// middle of each piece.
func splinePoints(pos string, flip func(x, y float64) (float64, float64)) []any {
	var start, end []float64
	var ctrl [][2]float64
	for _, f := range strings.Fields(pos) {
		switch {
		case strings.HasPrefix(f, "e,"):
			end = parseFloats(f[2:])
		case strings.HasPrefix(f, "s,"):
			start = parseFloats(f[2:])
		default:
			if v := parseFloats(f); len(v) == 2 {
				ctrl = append(ctrl, [2]float64{v[0], v[1]})
			}
		}
	}
	if len(ctrl) < 4 {
		return nil
	}
	var pts [][2]float64
	if len(start) == 2 {
		pts = append(pts, [2]float64{start[0], start[1]})
	} else {
		pts = append(pts, ctrl[0])
	}
	for i := 0; i+3 < len(ctrl); i += 3 {
		a, b, c, d := ctrl[i], ctrl[i+1], ctrl[i+2], ctrl[i+3]
		mid := [2]float64{(a[0] + 3*b[0] + 3*c[0] + d[0]) / 8, (a[1] + 3*b[1] + 3*c[1] + d[1]) / 8}
		pts = append(pts, mid)
	}
	if len(end) == 2 {
		pts = append(pts, [2]float64{end[0], end[1]})
	} else {
		pts = append(pts, ctrl[len(ctrl)-1])
	}
	out := make([]any, len(pts))
	for i, p := range pts {
		x, y := flip(p[0], p[1])
		out[i] = map[string]any{"x": math.Round(x*100) / 100, "y": math.Round(y*100) / 100}
	}
	return out
}

// applyStyle sets colours from a node's style and classes.
func applyStyle(props map[string]any, g *mmGraph, n *mmNode) {
	style := map[string]string{}
	for _, c := range append([]string{"default"}, n.classes...) {
		for k, v := range g.classes[c] {
			style[k] = v
		}
	}
	for k, v := range n.style {
		style[k] = v
	}
	colour := func(v string) (string, bool) {
		v = strings.TrimSpace(strings.TrimSuffix(v, "!important"))
		if _, ok := render.ParseColor(v, false); ok {
			return v, true
		}
		return "", false
	}
	if c, ok := colour(style["fill"]); ok {
		props["fillColor"], props["fill"] = c, "solid"
	}
	if c, ok := colour(style["stroke"]); ok {
		props["color"] = c
	}
	if c, ok := colour(style["color"]); ok {
		props["labelColor"] = c
	}
	if w, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(style["stroke-width"]), "px"), 64); err == nil && w >= 0 && w <= 64 {
		props["strokeWidth"] = w
	}
	if style["stroke-dasharray"] != "" {
		props["dash"] = "dashed"
	}
}
