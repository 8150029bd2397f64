package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// Box is a rectangle in canvas coordinates.
type Box = client.Box

// ContextInput is what the context builder reads.
type ContextInput struct {
	Snapshot   client.Snapshot
	Viewport   *Box     // nil: the bounds of all shapes (or a default page)
	Selection  []string // shape ids the user has selected
	Transcript []client.TranscriptEntry
	Now        time.Time
}

// ShapeStateStats describe the shape state put in a prompt (logged per turn).
type ShapeStateStats struct {
	Count     int  `json:"count"`     // shapes on the canvas
	Listed    int  `json:"listed"`    // blurry shapes listed
	Clusters  int  `json:"clusters"`  // peripheral clusters summarizing the rest
	Detailed  int  `json:"detailed"`  // shapes with full state
	Bytes     int  `json:"bytes"`     // bytes of full shape state
	Truncated bool `json:"truncated"` // the state limit cut the full state
}

// PromptContext is the canvas part of a prompt.
type PromptContext struct {
	JSON       string // the context document given to the model
	Stats      ShapeStateStats
	DocVersion string
	Viewport   Box
}

// blurryShape is a token-cheap view of a shape.
type blurryShape struct {
	ID   string  `json:"id"`
	Type string  `json:"type"`
	Name string  `json:"name,omitempty"`
	X    float64 `json:"x"`
	Y    float64 `json:"y"`
	W    float64 `json:"w"`
	H    float64 `json:"h"`
	Text string  `json:"text,omitempty"`
	By   string  `json:"by,omitempty"` // actor type of the last edit when it was a human
}

// peripheralCluster summarizes shapes outside the listed ones.
type peripheralCluster struct {
	Bounds Box            `json:"bounds"`
	Count  int            `json:"count"`
	Types  map[string]int `json:"types"`
}

type fullShape struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Name     string         `json:"name,omitempty"`
	ParentID string         `json:"parent_id,omitempty"`
	X        float64        `json:"x"`
	Y        float64        `json:"y"`
	W        float64        `json:"w"`
	H        float64        `json:"h"`
	Rotation float64        `json:"rotation,omitempty"`
	Props    map[string]any `json:"props,omitempty"`
}

func full(n *canvas.Node) fullShape {
	return fullShape{ID: n.ID, Type: n.Type, Name: n.Name, ParentID: n.ParentID, X: r2(n.X), Y: r2(n.Y), W: r2(n.W), H: r2(n.H), Rotation: n.Rotation, Props: n.Props}
}

func r2(x float64) float64 { return math.Round(x*100) / 100 }

// BuildContext assembles the canvas context of a prompt: the viewport, the
// selection in full, up to cfg.MaxShapes blurry shapes (nearest the viewport
// first), peripheral clusters for the rest, full shape state up to
// cfg.ShapeStateLimit bytes, and the transcript of the last
// cfg.TranscriptWindow. The output is deterministic for equal inputs.
func BuildContext(cfg Config, in ContextInput) PromptContext {
	nodes := in.Snapshot.State.Nodes
	vp := defaultViewport(in.Viewport, nodes)
	order := nearestFirst(nodes, vp)
	maxShapes := cfg.MaxShapes
	if maxShapes <= 0 {
		maxShapes = 300
	}
	listed := order
	var rest []*canvas.Node
	if len(order) > maxShapes {
		listed, rest = order[:maxShapes], order[maxShapes:]
	}
	blurry := blurryShapes(listed)
	clusters := clusterShapes(rest)

	sel := map[string]bool{}
	for _, id := range in.Selection {
		sel[id] = true
	}
	selected := []fullShape{}
	for _, n := range nodes {
		if sel[n.ID] {
			selected = append(selected, full(n))
		}
	}
	state, bytes, truncated := shapeState(order, sel, cfg.ShapeStateLimit)
	var transcript []client.TranscriptEntry
	for _, e := range in.Transcript {
		if cfg.TranscriptWindow > 0 && !in.Now.IsZero() && in.Now.Sub(e.TS) > cfg.TranscriptWindow {
			continue
		}
		transcript = append(transcript, client.TranscriptEntry{Role: e.Role, Text: truncUTF8(e.Text, 2000)})
	}
	doc := struct {
		DocVersion string                   `json:"docVersion"`
		Viewport   Box                      `json:"viewport"`
		Selection  []fullShape              `json:"selection"`
		Shapes     []blurryShape            `json:"shapes"`
		Peripheral []peripheralCluster      `json:"peripheral,omitempty"`
		ShapeState []json.RawMessage        `json:"shapeState"`
		Stats      ShapeStateStats          `json:"shapeStateStats"`
		Transcript []client.TranscriptEntry `json:"transcript,omitempty"`
	}{
		DocVersion: fmt.Sprint(in.Snapshot.HeadRev), Viewport: vp, Selection: selected, Shapes: blurry,
		Peripheral: clusters, ShapeState: state, Transcript: transcript,
	}
	doc.Stats = ShapeStateStats{Count: len(nodes), Listed: len(blurry), Clusters: len(clusters), Detailed: len(state), Bytes: bytes, Truncated: truncated}
	b, _ := json.Marshal(doc)
	return PromptContext{JSON: string(b), Stats: doc.Stats, DocVersion: doc.DocVersion, Viewport: vp}
}

// nearestFirst returns the nodes in the order the context lists them: those
// in the viewport first, then by distance from its centre, then by id.
func nearestFirst(nodes []*canvas.Node, vp Box) []*canvas.Node {
	cx, cy := vp.X+vp.W/2, vp.Y+vp.H/2
	order := make([]*canvas.Node, len(nodes))
	copy(order, nodes)
	inView := func(n *canvas.Node) bool {
		return n.X+n.W >= vp.X && n.X <= vp.X+vp.W && n.Y+n.H >= vp.Y && n.Y <= vp.Y+vp.H
	}
	dist := func(n *canvas.Node) float64 { return math.Hypot(n.X+n.W/2-cx, n.Y+n.H/2-cy) }
	sort.SliceStable(order, func(i, j int) bool {
		a, b := inView(order[i]), inView(order[j])
		if a != b {
			return a
		}
		da, db := dist(order[i]), dist(order[j])
		if da != db {
			return da < db
		}
		return order[i].ID < order[j].ID
	})
	return order
}

// blurryShapes lists nodes by box, short text and whether a person last
// changed them.
func blurryShapes(nodes []*canvas.Node) []blurryShape {
	blurry := make([]blurryShape, 0, len(nodes))
	for _, n := range nodes {
		b := blurryShape{ID: n.ID, Type: n.Type, Name: n.Name, X: r2(n.X), Y: r2(n.Y), W: r2(n.W), H: r2(n.H)}
		if t, ok := canvas.PropText(n.Props["text"]); ok {
			b.Text = truncUTF8(t, 80)
		}
		if n.UpdatedBy != "" && !strings.HasPrefix(n.UpdatedBy, "agent-") {
			b.By = "human"
		}
		blurry = append(blurry, b)
	}
	return blurry
}

// shapeState encodes the full state of the nodes in order, but the selected
// ones (listed in full already), until limit bytes: it returns them, their
// bytes, and whether the limit left some out.
func shapeState(order []*canvas.Node, selected map[string]bool, limit int) (state []json.RawMessage, bytes int, truncated bool) {
	state = []json.RawMessage{}
	for _, n := range order {
		if selected[n.ID] {
			continue
		}
		b, err := json.Marshal(full(n))
		if err != nil {
			continue
		}
		if bytes+len(b) > limit {
			return state, bytes, true
		}
		bytes += len(b)
		state = append(state, b)
	}
	return state, bytes, false
}

func defaultViewport(v *Box, nodes []*canvas.Node) Box {
	if v != nil && v.W > 0 && v.H > 0 && !math.IsInf(v.X, 0) && !math.IsNaN(v.X) {
		return *v
	}
	if len(nodes) == 0 {
		return Box{X: 0, Y: 0, W: 1600, H: 900}
	}
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, n := range nodes {
		minX, minY = math.Min(minX, n.X), math.Min(minY, n.Y)
		maxX, maxY = math.Max(maxX, n.X+n.W), math.Max(maxY, n.Y+n.H)
	}
	return Box{X: minX, Y: minY, W: math.Max(maxX-minX, 1), H: math.Max(maxY-minY, 1)}
}

// clusterShapes groups shapes by a 1000-unit grid cell.
func clusterShapes(ns []*canvas.Node) []peripheralCluster {
	if len(ns) == 0 {
		return nil
	}
	type key struct{ x, y int64 }
	cells := map[key]*peripheralCluster{}
	var keys []key
	for _, n := range ns {
		k := key{int64(math.Floor(n.X / 1000)), int64(math.Floor(n.Y / 1000))}
		c, ok := cells[k]
		if !ok {
			c = &peripheralCluster{Bounds: Box{X: n.X, Y: n.Y}, Types: map[string]int{}}
			cells[k] = c
			keys = append(keys, k)
		}
		x0, y0 := math.Min(c.Bounds.X, n.X), math.Min(c.Bounds.Y, n.Y)
		x1 := math.Max(c.Bounds.X+c.Bounds.W, n.X+n.W)
		y1 := math.Max(c.Bounds.Y+c.Bounds.H, n.Y+n.H)
		c.Bounds = Box{X: r2(x0), Y: r2(y0), W: r2(x1 - x0), H: r2(y1 - y0)}
		c.Count++
		c.Types[n.Type]++
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].y != keys[j].y {
			return keys[i].y < keys[j].y
		}
		return keys[i].x < keys[j].x
	})
	out := make([]peripheralCluster, 0, len(keys))
	for _, k := range keys {
		out = append(out, *cells[k])
	}
	return out
}

// SystemPrompt is the static system message: role, output protocol, rules
// and the action catalog with its JSON Schemas.
func SystemPrompt() string {
	var b strings.Builder
	b.WriteString("You are the canvas agent of a shared TLDraw canvas that people edit at the same time as you.\n")
	b.WriteString(OutputProtocol)
	b.WriteString("\nRules:\n")
	b.WriteString("- Use only the actions in the catalog below, with params matching their JSON Schemas.\n")
	b.WriteString("- Colors: " + strings.Join(enumColor, ", ") + ". Fills: " + strings.Join(enumFill, ", ") + ". Sizes: " + strings.Join(enumSize, ", ") + ". Fonts: " + strings.Join(enumFont, ", ") + ". Brand palette: brutalist orange (orange), charcoal/ink (black).\n")
	b.WriteString("- Shapes created by you get new ids; keep using the id you gave in create_shape to refer to them.\n")
	b.WriteString("- Arrows are not shapes: connect two shapes with connect {from, to}; its ends stay on the shapes when they move.\n")
	b.WriteString("- Never undo or overwrite what a person changed (shapes marked by: human). Once a shape exists, update it instead of creating it again.\n")
	b.WriteString("- Use think to tell the people watching what you do, todo for work left, add_detail to ask for one more pass.\n")
	b.WriteString("Action catalog (JSON):\n")
	b.Write(catalogJSON(func(v Verb) bool { return !v.Doc }))
	return b.String()
}
