package reducer

import (
	"encoding/json"
	"slices"

	"github.com/canvasd/canvasd/canvas"
)

// Limits on free-form strings of nodes and edges.
const (
	maxNameLen     = 1024
	maxEdgeTypeLen = 64
)

// Default sizes of created nodes: TLDraw's notes are 200×200; a document
// gets room for about 20 lines of 70 columns.
const (
	defaultSize     = 100.0
	defaultNoteSize = 200.0
	defaultDocW     = 600.0
	defaultDocH     = 400.0
)

// nodeSpec is a node to create; geo names the prefix of the geometry fields
// in error messages ("args.transform." or "args.").
type nodeSpec struct {
	id, typ, name, parent string
	x, y                  float64
	w, h, rot             *float64
	props                 map[string]any
	geo                   string
}

func (t *tx) createNode(sp nodeSpec) error {
	if sp.id != "" {
		t.touch(nodeRef(sp.id))
	}
	if sp.typ == "arrow" {
		return canvas.Unprocessable("args.type", "arrows are edges, not nodes: use create_edge {from, to, props} (from and to name the shapes it connects, \"\" for a free end with props.points)")
	}
	if !canvas.ValidNodeType(sp.typ) {
		return enumError("args.type", sp.typ, canvas.NodeTypes...)
	}
	if sp.typ == "group" {
		return canvas.Unprocessable("args.type", "groups are made with the group command {ids, group_id?} from existing shapes")
	}
	if len(sp.name) > maxNameLen {
		return canvas.Unprocessable("args.name", "is longer than %d bytes", maxNameLen)
	}
	w, h, rot := defaultSize, defaultSize, 0.0
	switch sp.typ {
	case "note":
		w, h = defaultNoteSize, defaultNoteSize
	case "doc":
		w, h = defaultDocW, defaultDocH
	}
	if sp.w != nil {
		w = *sp.w
	}
	if sp.h != nil {
		h = *sp.h
	}
	if w < 0 {
		return canvas.Unprocessable(sp.geo+"w", "must be ≥ 0, got %v", w)
	}
	if h < 0 {
		return canvas.Unprocessable(sp.geo+"h", "must be ≥ 0, got %v", h)
	}
	if sp.rot != nil {
		rot = normRotation(*sp.rot)
	}
	id := sp.id
	if id != "" {
		if err := canvas.ValidateID("args.id", id); err != nil {
			return err
		}
		if _, ok := t.getNode(id); ok {
			return canvas.Unprocessable("args.id", "a node with id %q already exists; use update_node or another id", id)
		}
	}
	if _, err := t.needContainer(sp.parent); err != nil {
		return err
	}
	props, err := createProps(sp.typ, sp.props)
	if err != nil {
		return err
	}
	keys, err := t.frontKeys(1)
	if err != nil {
		return canvas.Unprocessable("args", "cannot place the node in z-order: %v", err)
	}
	if id == "" {
		id = t.mintNodeID()
	}
	t.addNode(&canvas.Node{ID: id, Type: sp.typ, Name: sp.name, ParentID: sp.parent,
		X: sp.x, Y: sp.y, W: w, H: h, Rotation: rot, Index: keys[0], Props: props})
	t.created = append(t.created, id)
	return nil
}

// decideCreateNode: create_node {id?, name, type (default "geo"), transform {x, y, w, h, rotation}, parent_id?, props?}.
func decideCreateNode(t *tx, args json.RawMessage) error {
	a, ok := canvas.DecodeCreateNodeArgsFast(args) // the hottest verb: no reflection for its common shape
	if !ok {
		a = canvas.CreateNodeArgs{}
		if err := decodeArgs(args, &a); err != nil {
			return err
		}
	}
	sp := nodeSpec{id: a.ID, typ: a.Type, name: a.Name, parent: a.ParentID, props: a.Props, geo: "args.transform."}
	if sp.typ == "" {
		sp.typ = "geo"
	}
	if tr := a.Transform; tr != nil {
		if tr.X != nil {
			sp.x = *tr.X
		}
		if tr.Y != nil {
			sp.y = *tr.Y
		}
		sp.w, sp.h, sp.rot = tr.W, tr.H, tr.Rotation
	}
	return t.createNode(sp)
}

// decideCreateShape: create_shape {id?, type, x, y, w?, h?, rotation?, parent_id?, name?, props?}.
func decideCreateShape(t *tx, args json.RawMessage) error {
	var a canvas.CreateShapeArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if a.Type == "" {
		return enumError("args.type", "", canvas.NodeTypes...)
	}
	if a.X == nil {
		return canvas.Unprocessable("args.x", "is required: the page x of the shape's top-left corner")
	}
	if a.Y == nil {
		return canvas.Unprocessable("args.y", "is required: the page y of the shape's top-left corner")
	}
	return t.createNode(nodeSpec{id: a.ID, typ: a.Type, name: a.Name, parent: a.ParentID, props: a.Props,
		x: *a.X, y: *a.Y, w: a.W, h: a.H, rot: a.Rotation, geo: "args."})
}

// geomUpdate is a partial set of a node's geometry fields.
type geomUpdate struct {
	x, y, w, h, rot *float64
	prefix          string // field prefix for errors
}

// needContainer touches and returns the node that parent_id names, which
// must be a group or a frame; "" (the canvas's top level) returns nil.
func (t *tx) needContainer(parent string) (*canvas.Node, error) {
	if parent == "" {
		return nil, nil
	}
	p, err := t.needNode("args.parent_id", parent)
	if err != nil {
		return nil, err
	}
	if !isContainer(p) {
		return nil, canvas.Unprocessable("args.parent_id", "node %q is a %q; only group and frame nodes hold children", p.ID, p.Type)
	}
	return p, nil
}

// createProps returns the props of an entity of kind to create from the
// props a command gave (nulls dropped), checked against the kind's schema
// (canvas.ValidateProps), with text filled in from richText when only
// richText was given.
func createProps(kind string, props map[string]any) (map[string]any, error) {
	return createPropsAt(kind, props, "args.props")
}

// createPropsAt is createProps with errors naming the props at field.
func createPropsAt(kind string, props map[string]any, field string) (map[string]any, error) {
	return checkedProps(kind, stripNulls(props), field)
}

// ownedPropsAt is createPropsAt for props the command alone holds (decoded
// for it, kept nowhere else, as an import's thousands are): their nulls
// are dropped in place instead of in a deep copy, and p itself is returned.
func ownedPropsAt(kind string, p map[string]any, field string) (map[string]any, error) {
	if p == nil {
		p = map[string]any{}
	}
	dropNulls(p)
	return checkedProps(kind, p, field)
}

// checkedProps checks props p of an entity of kind to create (nulls
// dropped) and fills text in from richText.
func checkedProps(kind string, p map[string]any, field string) (map[string]any, error) {
	if err := canvas.ValidateProps(kind, p, field); err != nil {
		return nil, err
	}
	if r, ok := p[richTextProp]; ok && canvas.HasProp(kind, richTextProp) {
		if _, ok := p[textProp]; !ok {
			p[textProp] = canvas.RichTextPlain(r)
		}
	}
	return p, nil
}

// updateProps returns cur with the JSON merge patch patch applied, for an
// entity of kind: the merged value of every key the patch sets is checked
// against the kind's schema, a patch that sets richText without text sets
// text to its plain text, and one that sets or removes text without
// richText removes richText. cur and patch are not modified.
func updateProps(kind string, cur, patch map[string]any) (map[string]any, error) {
	merged := mergeProps(cur, patch)
	var set map[string]any
	for k, v := range patch {
		if v != nil {
			if set == nil {
				set = make(map[string]any, len(patch))
			}
			set[k] = merged[k]
		}
	}
	if err := canvas.ValidateProps(kind, set, "args.props"); err != nil {
		return nil, err
	}
	if canvas.HasProp(kind, richTextProp) {
		_, setsText := patch[textProp]
		r, setsRich := patch[richTextProp]
		switch {
		case setsRich && r != nil && !setsText:
			merged[textProp] = canvas.RichTextPlain(merged[richTextProp])
		case setsText && !setsRich:
			delete(merged, richTextProp)
		}
	}
	return merged, nil
}

// Props keys the reducer reads.
const (
	textProp     = "text"
	richTextProp = "richText"
)

// updateNode changes name, parent, geometry and props of an existing node.
// A new parent (a group or a frame, or "" for the top level) leaves the
// node where it is on the canvas; a group left without children goes.
func (t *tx) updateNode(id string, name, parent *string, g geomUpdate, props map[string]any) error {
	n, err := t.needNode("args.id", id)
	if err != nil {
		return err
	}
	if name != nil && *name != n.Name {
		if len(*name) > maxNameLen {
			return canvas.Unprocessable("args.name", "is longer than %d bytes", maxNameLen)
		}
		t.editNode(id).Name = *name
	}
	if parent != nil && *parent != n.ParentID {
		if _, err := t.needContainer(*parent); err != nil {
			return err
		}
		if *parent == id || slices.Contains(t.ancestors(*parent), id) {
			return canvas.Unprocessable("args.parent_id", "node %q is %q or inside it: a node cannot hold itself", *parent, id)
		}
		t.setParent(t.editNode(id), *parent)
	}
	if err := t.setGeometry(id, g); err != nil {
		return err
	}
	if len(props) > 0 {
		cur, _ := t.getNode(id)
		merged, err := updateProps(cur.Type, cur.Props, props)
		if err != nil {
			return err
		}
		if mergeDiff(cur.Props, merged) != nil {
			t.editNode(id).Props = merged
		}
	}
	return nil
}

// setGeometry sets the given geometry fields of node id. A group moves and
// scales its contents (its own bounds follow them; its rotation stays 0); a
// frame moves and rotates its contents with it.
func (t *tx) setGeometry(id string, g geomUpdate) error {
	if g.x == nil && g.y == nil && g.w == nil && g.h == nil && g.rot == nil {
		return nil
	}
	if g.w != nil && *g.w < 0 {
		return canvas.Unprocessable(g.prefix+"w", "must be ≥ 0, got %v", *g.w)
	}
	if g.h != nil && *g.h < 0 {
		return canvas.Unprocessable(g.prefix+"h", "must be ≥ 0, got %v", *g.h)
	}
	n, _ := t.getNode(id)
	dx, dy := 0.0, 0.0
	if g.x != nil {
		dx = *g.x - n.X
	}
	if g.y != nil {
		dy = *g.y - n.Y
	}
	if n.Type == "group" {
		if g.rot != nil && normRotation(*g.rot) != 0 {
			return canvas.Unprocessable(g.prefix+"rotation", "a group's own rotation stays 0; turn its contents with the rotate command {ids, degrees}")
		}
		sx, sy := 1.0, 1.0
		if g.w != nil && *g.w != n.W {
			if n.W == 0 {
				return canvas.Unprocessable(g.prefix+"w", "group %q has zero width and cannot be stretched", id)
			}
			sx = *g.w / n.W
		}
		if g.h != nil && *g.h != n.H {
			if n.H == 0 {
				return canvas.Unprocessable(g.prefix+"h", "group %q has zero height and cannot be stretched", id)
			}
			sy = *g.h / n.H
		}
		ox, oy := n.X+dx, n.Y+dy
		t.transformTrees([]string{id}, func(m *canvas.Node) {
			m.X, m.Y = m.X+dx, m.Y+dy
			if sx != 1 || sy != 1 {
				m.X, m.Y = ox+(m.X-ox)*sx, oy+(m.Y-oy)*sy
				m.W, m.H = m.W*sx, m.H*sy
			}
		})
		return nil
	}
	rot := n.Rotation
	if g.rot != nil {
		rot = normRotation(*g.rot)
	}
	if n.Type == "frame" && (dx != 0 || dy != 0 || rot != n.Rotation) {
		// The contents follow the frame: translate, then turn about its new corner.
		ox, oy := n.X+dx, n.Y+dy
		delta := normRotation(rot - n.Rotation)
		s, c := sincos(delta)
		kids := append([]string(nil), t.children(id)...)
		t.transformTrees(kids, func(m *canvas.Node) {
			m.X, m.Y = m.X+dx, m.Y+dy
			if delta != 0 {
				m.X, m.Y = rotatePoint(m.X, m.Y, ox, oy, s, c)
				if m.Type != "group" {
					m.Rotation = normRotation(m.Rotation + delta)
				}
			}
		})
	}
	m := t.editNode(id)
	m.X, m.Y, m.Rotation = n.X+dx, n.Y+dy, rot
	if g.w != nil {
		m.W = *g.w
	}
	if g.h != nil {
		m.H = *g.h
	}
	t.markDirty(m.ParentID)
	return nil
}

// decideUpdateNode: update_node {id, name?, parent_id?, transform?, props?} (props merge as a JSON merge patch).
func decideUpdateNode(t *tx, args json.RawMessage) error {
	var a canvas.UpdateNodeArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	g := geomUpdate{prefix: "args.transform."}
	if tr := a.Transform; tr != nil {
		g.x, g.y, g.w, g.h, g.rot = tr.X, tr.Y, tr.W, tr.H, tr.Rotation
	}
	return t.updateNode(a.ID, a.Name, a.ParentID, g, a.Props)
}

// decideUpdateShape: update_shape {id, x?, y?, w?, h?, rotation?, name?, parent_id?, props?}.
func decideUpdateShape(t *tx, args json.RawMessage) error {
	var a canvas.UpdateShapeArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	return t.updateNode(a.ID, a.Name, a.ParentID, geomUpdate{x: a.X, y: a.Y, w: a.W, h: a.H, rot: a.Rotation, prefix: "args."}, a.Props)
}

// decideDeleteNode: delete_node {id}; deletes descendants and every edge touching a deleted node.
func decideDeleteNode(t *tx, args json.RawMessage) error {
	var a canvas.IDArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if _, err := t.needNode("args.id", a.ID); err != nil {
		return err
	}
	t.deleteTree(a.ID)
	return nil
}

// decideDeleteShape: delete_shape {ids}.
func decideDeleteShape(t *tx, args json.RawMessage) error {
	var a canvas.IDsArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if err := t.selection(a.IDs); err != nil {
		return err
	}
	for _, id := range a.IDs {
		t.deleteTree(id)
	}
	return nil
}

// decideCreateEdge: create_edge {id?, from?, to?, type? (default "arrow"),
// props?}: an end names a node (bound) or is "" (free); without
// props.points both ends must be bound and the server computes the path.
func decideCreateEdge(t *tx, args json.RawMessage) error {
	var a canvas.CreateEdgeArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if a.ID != "" {
		t.touch(edgeRef(a.ID))
	}
	for _, end := range [...]struct{ field, id string }{{"args.from", a.From}, {"args.to", a.To}} {
		if end.id != "" {
			if _, err := t.needNode(end.field, end.id); err != nil {
				return err
			}
		}
	}
	typ := a.Type
	if typ == "" {
		typ = "arrow"
	}
	if err := checkEdgeType(typ); err != nil {
		return err
	}
	id := a.ID
	if id != "" {
		if err := canvas.ValidateID("args.id", id); err != nil {
			return err
		}
		if _, ok := t.getEdge(id); ok {
			return canvas.Unprocessable("args.id", "an edge with id %q already exists; use update_edge or another id", id)
		}
	} else {
		id = t.mintEdgeID()
	}
	props, err := createProps(canvas.EdgeKind, a.Props)
	if err != nil {
		return err
	}
	e := &canvas.Edge{ID: id, From: a.From, To: a.To, Type: typ, Props: props}
	if err := t.placeEdge(e, keepPoints, "args.props.points"); err != nil {
		return err
	}
	t.addEdge(e)
	t.created = append(t.created, id)
	return nil
}

// decideUpdateEdge: update_edge {id, from?, to?, props?}: from and to bind
// an end to another node or free it (""); props merge as a JSON merge
// patch. A bound end placed away from its node moves onto it; a path set
// to null is computed again (both ends bound); an elbow edge whose ends,
// sides or routing changed is routed again.
func decideUpdateEdge(t *tx, args json.RawMessage) error {
	var a canvas.UpdateEdgeArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	e, err := t.needEdge("args.id", a.ID)
	if err != nil {
		return err
	}
	from, to := e.From, e.To
	if a.From != nil {
		from = *a.From
	}
	if a.To != nil {
		to = *a.To
	}
	for _, end := range [...]struct{ field, id string }{{"args.from", from}, {"args.to", to}} {
		if end.id != "" {
			if _, err := t.needNode(end.field, end.id); err != nil {
				return err
			}
		}
	}
	props := e.Props
	if len(a.Props) > 0 {
		if props, err = updateProps(canvas.EdgeKind, e.Props, a.Props); err != nil {
			return err
		}
	}
	w := *e
	w.From, w.To, w.Props = from, to, props
	how := keepPoints
	pts, setsPoints := a.Props[pointsProp]
	switch {
	case setsPoints && pts == nil:
		how = newPoints
	case !setsPoints && (from != e.From || to != e.To || hasAny(a.Props, routingProp, fromSideProp, toSideProp)):
		how = reroutePoints
	}
	if err := t.placeEdge(&w, how, "args.props.points"); err != nil {
		return err
	}
	if w.From != e.From || w.To != e.To || mergeDiff(e.Props, w.Props) != nil {
		m := t.editEdge(a.ID)
		m.From, m.To, m.Props = w.From, w.To, w.Props
	}
	return nil
}

// hasAny reports whether m has any of keys.
func hasAny(m map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// decideDeleteEdge: delete_edge {id}.
func decideDeleteEdge(t *tx, args json.RawMessage) error {
	var a canvas.IDArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if _, err := t.needEdge("args.id", a.ID); err != nil {
		return err
	}
	t.deleteEdge(a.ID)
	return nil
}
