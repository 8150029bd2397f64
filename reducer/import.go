package reducer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/canvasd/canvasd/canvas"
)

// CmdImportScene is the command type of an import: the nodes and edges a
// file holds, written in one commit, all or nothing.
const CmdImportScene = "import_scene"

// decideImportScene: import_scene {mode?, nodes, edges}. Every node and
// edge is checked as create_node and create_edge check theirs (ids, kinds,
// the props schema, bound ends placed on their nodes); the first that
// fails refuses the whole import with a field error naming it
// (args.nodes[3].props.fill). The created ids are every id imported.
func decideImportScene(t *tx, args json.RawMessage) error {
	a, ok := canvas.DecodeImportSceneArgsFast(args) // an import's own args: no reflection; valid JSON
	if !ok {
		if !json.Valid(args) { // as Decide checks other commands' args
			return canvas.Unprocessable("args", "is not a single valid JSON object")
		}
		if err := decodeArgs(args, &a); err != nil {
			return err
		}
	}
	switch a.Mode {
	case "", "merge", "replace":
	default:
		return enumError("args.mode", a.Mode, "merge", "replace")
	}
	if n := len(a.Nodes) + len(a.Edges); n > canvas.MaxImportObjects {
		return canvas.Unprocessable("args", "an import takes at most %d nodes and edges; got %d", canvas.MaxImportObjects, n)
	}
	if err := touchImportIDs(t, &a); err != nil {
		return err
	}
	if a.Mode == "replace" {
		deleteEverything(t)
	}
	if err := importNodes(t, a.Nodes); err != nil {
		return err
	}
	if err := importParents(t, a.Nodes); err != nil {
		return err
	}
	return importEdges(t, a.Edges)
}

// importField names the i-th node or edge (list "nodes" or "edges") of
// the args.
func importField(list string, i int) string {
	return "args." + list + "[" + strconv.Itoa(i) + "]"
}

// expect sizes the working set of t for about nodes and edges written and
// touched at once (an import's thousands), sparing the growth steps.
func (t *tx) expect(nodes, edges int) {
	if nodes+edges < 64 {
		return
	}
	n := nodes + edges + len(t.touched)
	if t.touchedSet == nil {
		t.touchedSet = make(map[canvas.Ref]struct{}, n+nodes/8)
		for _, r := range t.touched {
			t.touchedSet[r] = struct{}{}
		}
	}
	t.touched = slices.Grow(t.touched, n)
	t.order = slices.Grow(t.order, n)
	if t.nodes == nil {
		t.nodes = make(map[string]*canvas.Node, nodes)
	}
	if t.edges == nil {
		t.edges = make(map[string]*canvas.Edge, edges)
	}
}

// touchImportIDs checks that the import's ids are valid and unique among
// its nodes and among its edges, and touches each (an import conflicts
// with a change to anything it writes).
func touchImportIDs(t *tx, a *canvas.ImportSceneArgs) error {
	t.expect(len(a.Nodes), len(a.Edges))
	nodeIdx := make(map[string]int, len(a.Nodes))
	for i, n := range a.Nodes {
		if err := canvas.ValidateID("id", n.ID); err != nil {
			return canvas.ValidateID(importField("nodes", i)+".id", n.ID)
		}
		if j, dup := nodeIdx[n.ID]; dup {
			return canvas.Unprocessable(importField("nodes", i)+".id", "%q is also the id of args.nodes[%d]; ids must be unique", n.ID, j)
		}
		nodeIdx[n.ID] = i
		t.touch(nodeRef(n.ID))
	}
	edgeIdx := make(map[string]int, len(a.Edges))
	for i, e := range a.Edges {
		if err := canvas.ValidateID("id", e.ID); err != nil {
			return canvas.ValidateID(importField("edges", i)+".id", e.ID)
		}
		if j, dup := edgeIdx[e.ID]; dup {
			return canvas.Unprocessable(importField("edges", i)+".id", "%q is also the id of args.edges[%d]; ids must be unique", e.ID, j)
		}
		edgeIdx[e.ID] = i
		t.touch(edgeRef(e.ID))
	}
	return nil
}

// deleteEverything deletes (and touches) every edge and node of the
// canvas, for an import that replaces it, in id order.
func deleteEverything(t *tx) {
	var nodes, edges []string
	for id := range t.s.Nodes {
		nodes = append(nodes, id)
	}
	for id := range t.s.Edges {
		edges = append(edges, id)
	}
	slices.Sort(nodes)
	slices.Sort(edges)
	for _, id := range edges {
		t.touch(edgeRef(id))
		t.deleteEdge(id)
	}
	for _, id := range nodes {
		t.touch(nodeRef(id))
		t.deleteNode(id)
	}
}

// importNodes checks and adds the import's nodes, in front of the canvas
// in the order given; a node of the canvas with the same id is replaced.
func importNodes(t *tx, nodes []canvas.ImportNode) error {
	keys, err := t.frontKeys(max(len(nodes), 1))
	if err != nil {
		return canvas.Unprocessable("args.nodes", "cannot place the nodes in z-order: %v", err)
	}
	for i, in := range nodes {
		field := importField("nodes", i)
		if !canvas.ValidNodeType(in.Type) {
			if in.Type == "arrow" {
				return canvas.Unprocessable(field+".type", "arrows are edges, not nodes: list them under edges")
			}
			return enumError(field+".type", in.Type, canvas.NodeTypes...)
		}
		if len(in.Name) > maxNameLen {
			return canvas.Unprocessable(field+".name", "is longer than %d bytes", maxNameLen)
		}
		if !finite(in.X, in.Y, in.W, in.H, in.Rotation) {
			return canvas.Unprocessable(field, "x, y, w, h and rotation must be finite numbers")
		}
		if in.W < 0 || in.H < 0 {
			return canvas.Unprocessable(field+".w", "w and h must be ≥ 0; got %v×%v", in.W, in.H)
		}
		props, err := ownedPropsAt(in.Type, in.Props, field+".props") // decoded for this import alone
		if err != nil {
			return err
		}
		if _, ok := t.getNode(in.ID); ok {
			t.deleteNode(in.ID) // replaced: a put of the new value
		}
		t.addNode(&canvas.Node{ID: in.ID, Type: in.Type, Name: in.Name, ParentID: in.ParentID,
			X: in.X, Y: in.Y, W: in.W, H: in.H, Rotation: normRotation(in.Rotation), Index: keys[i], Props: props})
		t.created = append(t.created, in.ID)
	}
	return nil
}

// importParents checks the imported nodes' parents once every node is
// there (a frame or group of the import or of the canvas, not the node
// itself nor inside it) and that every imported group holds something.
func importParents(t *tx, nodes []canvas.ImportNode) error {
	for i, in := range nodes {
		if in.ParentID == "" {
			continue
		}
		field := fmt.Sprintf("args.nodes[%d].parent_id", i)
		p, ok := t.getNode(in.ParentID)
		if !ok {
			return canvas.Unprocessable(field, "names %q, which is neither a node of the import nor of the canvas", in.ParentID)
		}
		t.touch(nodeRef(p.ID))
		if !isContainer(p) {
			return canvas.Unprocessable(field, "node %q is a %q; only group and frame nodes hold children", p.ID, p.Type)
		}
		if in.ParentID == in.ID || slices.Contains(t.ancestors(in.ParentID), in.ID) {
			return canvas.Unprocessable(field, "node %q is %q or inside it: a node cannot hold itself", in.ParentID, in.ID)
		}
		t.markDirty(in.ParentID)
	}
	for i, in := range nodes {
		if in.Type == "group" {
			if len(t.children(in.ID)) == 0 {
				return canvas.Unprocessable(fmt.Sprintf("args.nodes[%d]", i), "group %q holds nothing: a group needs members (nodes whose parent_id names it)", in.ID)
			}
			t.markDirty(in.ID)
		}
	}
	return nil
}

// importEdges checks and adds the import's edges, their bound ends placed
// on their nodes; an edge of the canvas with the same id is replaced.
func importEdges(t *tx, edges []canvas.ImportEdge) error {
	for i, in := range edges {
		field := importField("edges", i)
		for _, end := range [...]struct{ field, id string }{{field + ".from", in.From}, {field + ".to", in.To}} {
			if end.id != "" {
				if _, err := t.needNode(end.field, end.id); err != nil {
					return err
				}
			}
		}
		typ := in.Type
		if typ == "" {
			typ = "arrow"
		}
		if checkEdgeType(typ) != nil {
			return canvas.Unprocessable(field+".type", "must be at most %d characters on one line", maxEdgeTypeLen)
		}
		props, err := ownedPropsAt(canvas.EdgeKind, in.Props, field+".props")
		if err != nil {
			return err
		}
		if _, ok := t.getEdge(in.ID); ok {
			t.deleteEdge(in.ID)
		}
		e := &canvas.Edge{ID: in.ID, From: in.From, To: in.To, Type: typ, Props: props}
		if err := t.placeEdge(e, keepPoints, field+".props.points"); err != nil {
			return err
		}
		t.addEdge(e)
		t.created = append(t.created, in.ID)
	}
	return nil
}
