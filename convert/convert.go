// Package convert reads and writes the file formats a canvas goes in and out
// by: JSON Canvas 1.0 (jsoncanvas.org, Obsidian's), Excalidraw's
// .excalidraw files, and Mermaid flowcharts (read only, laid out by
// Graphviz's dot). It turns a file into a Scene of canvasd nodes and edges
// and a canvas back into a file; it writes nothing anywhere else.
//
// Importing a file and exporting the scene again gives back the file's
// content: what the model holds maps to nodes, edges and their props, and
// the rest of each object (Excalidraw's seeds and versions, a JSON Canvas
// app's extra fields, ...) is kept under props.meta.<format> with a
// signature of what the model held, so an object exported unchanged comes
// back exactly and one changed on the canvas comes back as changed, with
// the rest carried along.
package convert

import (
	"errors"
	"fmt"
	"strings"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/render"
)

// Format names a file format.
type Format string

// The formats.
const (
	JSONCanvas Format = "jsoncanvas"
	Excalidraw Format = "excalidraw"
	Mermaid    Format = "mermaid"
)

// ImportFormats lists the formats Decode reads; ExportFormats those Encode
// writes.
var (
	ImportFormats = []Format{JSONCanvas, Excalidraw, Mermaid}
	ExportFormats = []Format{JSONCanvas, Excalidraw}
)

// Scene is what a file holds, in canvasd's model: nodes in z-order
// (parents before their children) and edges.
type Scene struct {
	Nodes []*canvas.Node `json:"nodes"`
	Edges []*canvas.Edge `json:"edges"`
	// NodePlaces and EdgePlaces name where in the file each node and edge
	// came from ("body.nodes[3]", "body.elements[7]", "body line 12"), in
	// the order of Nodes and Edges, so that a node or edge the canvas
	// refuses is reported at its place in the file.
	NodePlaces []string `json:"-"`
	EdgePlaces []string `json:"-"`
}

// addNode appends a node that came from place.
func (sc *Scene) addNode(n *canvas.Node, place string) {
	sc.Nodes = append(sc.Nodes, n)
	sc.NodePlaces = append(sc.NodePlaces, "body"+place)
}

// addEdge appends an edge that came from place.
func (sc *Scene) addEdge(e *canvas.Edge, place string) {
	sc.Edges = append(sc.Edges, e)
	sc.EdgePlaces = append(sc.EdgePlaces, "body"+place)
}

// Limits of what Decode accepts.
const (
	// MaxObjects bounds the nodes and edges of one file.
	MaxObjects = 50000
	// MaxDepth bounds the nesting of a file's JSON.
	MaxDepth = 64
)

// ErrBadFile is wrapped by every error Decode returns for a file it cannot
// read; the error is also a *canvas.FieldError (kind ErrUnprocessable)
// whose Field names the place: a JSON path ("body.nodes[3].x") or, for
// Mermaid, a line ("body line 3").
var ErrBadFile = errors.New("bad file")

// fileError is a FieldError for a place in a file.
func fileError(place, format string, a ...any) error {
	return &canvas.FieldError{Field: "body" + place, Reason: fmt.Sprintf(format, a...), Kind: canvas.ErrUnprocessable}
}

// Decode reads a file of format f into a Scene. Ids the model cannot take
// are made valid (the original kept in props.meta). An error names the
// place in the file that is wrong and says what it should be.
func Decode(f Format, data []byte) (*Scene, error) {
	switch f {
	case JSONCanvas:
		return decodeJSONCanvas(data)
	case Excalidraw:
		return decodeExcalidraw(data)
	case Mermaid:
		return decodeMermaid(data)
	}
	return nil, canvas.Unprocessable("format", "must be one of jsoncanvas, excalidraw, mermaid; got %q", f)
}

// Encode writes the nodes and edges of s named by ids (nil: all; a node
// brings its descendants, and an edge comes with its two nodes) as a file
// of format f.
func Encode(f Format, s *canvas.State, ids []string) ([]byte, error) {
	nodes, edges := render.Select(s, ids)
	switch f {
	case JSONCanvas:
		return encodeJSONCanvas(s, nodes, edges)
	case Excalidraw:
		return encodeExcalidraw(s, nodes, edges)
	}
	return nil, canvas.Unprocessable("format", "must be one of svg, png, jsoncanvas, excalidraw; got %q", f)
}

// validID makes a file's id one the model takes: it is kept when valid,
// else its characters outside [A-Za-z0-9_.:-] become '_' and it is cut to
// 128 characters; taken (ids already used) decides a suffix when the
// result collides. changed reports whether it differs from id.
func validID(id string, taken map[string]bool) (out string, changed bool) {
	if canvas.ValidateID("id", id) == nil && !taken[id] {
		taken[id] = true
		return id, false
	}
	var b strings.Builder
	for _, r := range id {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.:-", r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	base := b.String()
	if len(base) > canvas.MaxIDLen-8 {
		base = base[:canvas.MaxIDLen-8]
	}
	if strings.Trim(base, ".") == "" {
		base = "id" + base
	}
	out = base
	for i := 2; taken[out]; i++ {
		out = fmt.Sprintf("%s-%d", base, i)
	}
	taken[out] = true
	return out, true
}
