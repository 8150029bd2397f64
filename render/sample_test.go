package render

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"

	"github.com/canvasd/canvasd/canvas"
)

// testState builds a state from nodes and edges (z-order as given).
func testState(nodes []*canvas.Node, edges []*canvas.Edge) *canvas.State {
	s := canvas.NewState()
	for i, n := range nodes {
		if n.Index == "" {
			n.Index = fmt.Sprintf("a%04d", i)
		}
		if n.Props == nil {
			n.Props = map[string]any{}
		}
		s.Nodes[n.ID] = n
	}
	for _, e := range edges {
		if e.Props == nil {
			e.Props = map[string]any{}
		}
		s.Edges[e.ID] = e
	}
	return s
}

func pts(xy ...float64) []any {
	out := make([]any, 0, len(xy)/2)
	for i := 0; i+1 < len(xy); i += 2 {
		out = append(out, map[string]any{"x": xy[i], "y": xy[i+1]})
	}
	return out
}

// redPNG is a data URL of a w×h PNG, red on its left half and blue on its right.
func redBluePNG(w, h int) string {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBA{255, 0, 0, 255}
			if x >= w/2 {
				c = color.NRGBA{0, 0, 255, 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

// everyKind is a canvas with every kind of node and edge the model has.
func everyKind() *canvas.State {
	var nodes []*canvas.Node
	x := 0.0
	for i, g := range Geos {
		fill := []string{"solid", "hachure", "cross-hatch", "zigzag", "semi", "fill", "pattern", "lined-fill", "none"}[i%9]
		nodes = append(nodes, &canvas.Node{ID: "geo-" + g, Type: "geo", X: x, Y: 0, W: 120, H: 80,
			Props: map[string]any{"geo": g, "color": []string{"blue", "red", "green", "violet", "orange"}[i%5], "fill": fill, "text": g}})
		x += 140
		if i == 9 {
			x = 0
		}
		if i > 9 {
			nodes[len(nodes)-1].Y = 120
		}
	}
	nodes = append(nodes,
		&canvas.Node{ID: "note", Type: "note", X: 0, Y: 260, W: 200, H: 200, Props: map[string]any{"text": "A note wraps its words inside the square", "color": "yellow"}},
		&canvas.Node{ID: "text", Type: "text", X: 220, Y: 260, W: 300, H: 60, Props: map[string]any{"text": "Plain text\nin two lines", "color": "violet", "size": "l"}},
		&canvas.Node{ID: "frame", Type: "frame", Name: "A frame", X: 540, Y: 260, W: 300, H: 200, Props: map[string]any{}},
		&canvas.Node{ID: "in-frame", Type: "geo", ParentID: "frame", X: 560, Y: 300, W: 100, H: 60, Props: map[string]any{"geo": "ellipse", "fill": "solid", "color": "green", "text": "inside"}},
		&canvas.Node{ID: "doc", Type: "doc", Name: "main.go", X: 860, Y: 260, W: 300, H: 200, Props: map[string]any{"language": "go", "text": "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"}},
		&canvas.Node{ID: "image", Type: "image", X: 1180, Y: 260, W: 160, H: 100, Props: map[string]any{"url": redBluePNG(8, 4), "altText": "red and blue"}},
		&canvas.Node{ID: "embed", Type: "embed", X: 1180, Y: 380, W: 200, H: 80, Props: map[string]any{"url": "https://example.com/page"}},
		&canvas.Node{ID: "draw", Type: "draw", X: 0, Y: 500, W: 200, H: 100, Props: map[string]any{"color": "red", "segments": []any{
			map[string]any{"type": "free", "points": pts(0, 50, 20, 20, 50, 10, 80, 30, 100, 60, 130, 80, 170, 60, 200, 20)}}}},
		&canvas.Node{ID: "line", Type: "line", X: 220, Y: 500, W: 200, H: 100, Props: map[string]any{"color": "blue", "dash": "dashed", "points": pts(0, 0, 100, 100, 200, 0)}},
		&canvas.Node{ID: "curve", Type: "line", X: 440, Y: 500, W: 200, H: 100, Props: map[string]any{"color": "orange", "routing": "curved", "points": pts(0, 100, 100, 0, 200, 100)}},
		&canvas.Node{ID: "turned", Type: "geo", X: 700, Y: 500, W: 120, H: 60, Rotation: math.Pi / 8, Props: map[string]any{"geo": "rectangle", "fill": "solid", "color": "light-red", "text": "turned"}},
		&canvas.Node{ID: "group", Type: "group", X: 0, Y: 0, W: 1, H: 1},
	)
	var edges []*canvas.Edge
	for i, h := range Arrowheads {
		y := 660 + float64(i)*30
		edges = append(edges, &canvas.Edge{ID: fmt.Sprintf("head-%02d", i), Props: map[string]any{
			"points": pts(0, y, 260, y), "arrowheadStart": h, "arrowheadEnd": h, "text": h, "size": "s"}})
	}
	edges = append(edges,
		&canvas.Edge{ID: "bound", From: "note", To: "text", Props: map[string]any{"points": pts(200, 360, 220, 290), "text": "bound"}},
		&canvas.Edge{ID: "curved", Props: map[string]any{"points": pts(400, 700, 500, 650, 600, 750), "routing": "curved", "color": "green", "text": "curved"}},
		&canvas.Edge{ID: "elbow", Props: map[string]any{"points": pts(400, 900, 500, 900, 500, 1000, 600, 1000), "routing": "elbow", "dash": "dotted", "color": "violet"}},
	)
	return testState(nodes, edges)
}
