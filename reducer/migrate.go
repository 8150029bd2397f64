package reducer

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/canvasd/canvasd/canvas"
)

// Migration of model 1 (free-form props, arrow nodes) to model 2
// (docs/model.md, "Canvases stored before").

// CmdMigrateModel is the type of the commit that brings a canvas stored
// under model 1 to model 2. Only the server makes it (the engine, when it
// first loads such a canvas); a client that sends it is refused.
const CmdMigrateModel = "migrate_model"

// MigrationActor is the actor of migrate_model commits.
var MigrationActor = canvas.Actor{ID: "canvasd", Type: canvas.ActorService}

// v1Meta is the key under props.meta that keeps what model 2 has no place for.
const v1Meta = "v1"

// MigrateModel decides the migrate_model commit of s (cmd gives its
// revision, time and seed; its Type and Args are the caller's): the changes
// that bring s to model 2, none when s is model 2 already. It is
// deterministic and, like Decide, does not modify s. Applied, the commit
// also clears every actor's undo and redo history (the entries would bring
// back model 1). It costs O(canvas).
//
//   - An arrow node becomes an edge with its id (another when an edge holds
//     that id): bound where it named shapes (props.start_binding and
//     end_binding, or start.boundShapeId and end.boundShapeId), its start
//     and end points (relative to its corner) its path; what an edge cannot
//     hold (its parent_id, name, index, box, created_by and created_rev)
//     goes to props.meta.v1, as does what the arrow's props held beyond that.
//   - Every key a kind does not have and every value model 2 refuses goes
//     to props.meta.v1 under its own name; an image's src becomes its url;
//     a line's tldraw point map {id: {id, index, x, y}} becomes a list
//     ordered by index (the map stays in meta.v1.points); richText without
//     text gets its text.
//   - An edge gets its points as a new edge would; an end bound to an arrow
//     node is freed (the arrow's id stays in meta.v1.from or to) and lies at
//     the middle of the arrow's box.
func MigrateModel(s *canvas.State, cmd canvas.Command) (Decision, error) {
	t := &tx{s: s, cmd: &cmd}
	t.touched = make([]canvas.Ref, 0, 4)
	t.migrate()
	changes, values, err := t.finish()
	if err != nil {
		return Decision{Touched: t.touched}, err
	}
	return Decision{Changes: changes, Touched: t.touched, values: values}, nil
}

// NeedsMigration reports whether s holds anything model 2 does not (what
// MigrateModel would change). It costs O(canvas).
func NeedsMigration(s *canvas.State) bool {
	dec, err := MigrateModel(s, canvas.Command{Rev: s.Rev + 1, Seed: "check"})
	return err != nil || len(dec.Changes) > 0
}

// migrate puts the changes of MigrateModel in t's working set.
func (t *tx) migrate() {
	ids := make([]string, 0, len(t.s.Nodes))
	for id := range t.s.Nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	arrows := map[string]*canvas.Node{}
	var arrowIDs []string
	for _, id := range ids {
		n := t.s.Nodes[id]
		if n.Type == "arrow" {
			arrows[id] = n
			arrowIDs = append(arrowIDs, id)
			continue
		}
		if p, changed := migrateProps(n.Type, n.Props); changed {
			t.editNode(id).Props = p
		}
	}
	edgeIDs := make([]string, 0, len(t.s.Edges))
	for id := range t.s.Edges {
		edgeIDs = append(edgeIDs, id)
	}
	sort.Strings(edgeIDs)
	for _, id := range edgeIDs {
		e := t.s.Edges[id]
		p, changed := migrateProps(canvas.EdgeKind, e.Props)
		ends := [2]migEnd{{node: e.From}, {node: e.To}}
		for i := range ends {
			if a, ok := arrows[ends[i].node]; ok { // arrows are edges now: an edge cannot end on one
				p = setV1(p, [2]string{"from", "to"}[i], ends[i].node)
				ends[i] = migEnd{p: centre(a), hasP: true}
				changed = true
			}
		}
		if _, ok := pointsOf(p); !ok {
			p = withPoints(p, t.migratedPath(ends, p))
			changed = true
		}
		if changed {
			m := t.editEdge(id)
			m.From, m.To, m.Props = ends[0].node, ends[1].node, p
		}
	}
	for _, id := range arrowIDs {
		t.arrowToEdge(arrows[id], arrows)
	}
}

// migEnd is an end of an edge being migrated: bound to node (or free: ""),
// with its point when known.
type migEnd struct {
	node string
	p    pt
	hasP bool
}

// migratedPath returns the path of a migrated edge with the given ends:
// computed as a new edge's when both are bound without points; otherwise
// from the known points, a bound end without one on its node's outline
// facing the other end, one far from its node moved onto it.
func (t *tx) migratedPath(ends [2]migEnd, props map[string]any) []pt {
	fromSide, toSide := propString(props, fromSideProp), propString(props, toSideProp)
	elbow := propString(props, routingProp) == "elbow"
	var nodes [2]*canvas.Node
	for i, e := range ends {
		if e.node != "" {
			nodes[i], _ = t.getNode(e.node)
		}
	}
	if !ends[0].hasP && !ends[1].hasP && nodes[0] != nil && nodes[1] != nil {
		return computedPoints(nodes[0], nodes[1], fromSide, toSide, elbow)
	}
	var p [2]pt
	for i, e := range ends {
		other := ends[1-i]
		toward := other.p
		if !other.hasP && nodes[1-i] != nil {
			toward = centre(nodes[1-i])
		}
		switch {
		case e.hasP && nodes[i] != nil:
			p[i] = boundEnd(nodes[i], e.p, toward, [2]string{fromSide, toSide}[i])
		case e.hasP:
			p[i] = e.p
		case nodes[i] != nil:
			p[i] = outlinePoint(nodes[i], toward)
		}
	}
	if elbow {
		return route(p[0], p[1], fromSide)
	}
	return []pt{p[0], p[1]}
}

// arrowToEdge turns arrow node n into an edge (see MigrateModel).
func (t *tx) arrowToEdge(n *canvas.Node, arrows map[string]*canvas.Node) {
	props := make(map[string]any, len(n.Props))
	for k, v := range n.Props {
		props[k] = v
	}
	var ends [2]migEnd
	for i, k := range [2]string{"start", "end"} {
		bindKey := k + "_binding"
		var bound string
		if b, ok := props[bindKey].(string); ok {
			bound = b
			delete(props, bindKey)
		}
		if m, ok := props[k].(map[string]any); ok {
			used := 0
			if b, ok := m["boundShapeId"].(string); ok {
				if bound == "" {
					bound = b
				}
				used++
			}
			x, okx := canvas.NumberValue(m["x"])
			y, oky := canvas.NumberValue(m["y"])
			if okx && oky {
				ends[i].p, ends[i].hasP = toPage(n, pt{x, y}), true
				used += 2
			}
			if used == len(m) { // all of it is in the edge; else the whole stays in meta.v1
				delete(props, k)
			}
		}
		if _, isArrow := arrows[bound]; bound != "" && !isArrow {
			if _, ok := t.getNode(bound); ok {
				ends[i].node = bound
				continue
			}
		}
		if bound != "" { // a shape that is gone, or an arrow (an edge now): the end is free
			props = setV1(props, bindKey, bound)
		}
	}
	for i := range ends {
		if !ends[i].hasP && ends[i].node == "" { // free and nowhere: the corners of the arrow's box
			ends[i].p, ends[i].hasP = toPage(n, [2]pt{{0, 0}, {n.W, n.H}}[i]), true
		}
	}
	p, _ := migrateProps(canvas.EdgeKind, props)
	for _, f := range []struct {
		k string
		v any
	}{{"parent_id", n.ParentID}, {"name", n.Name}, {"index", n.Index}, {"created_by", n.CreatedBy}} {
		if f.v != "" {
			p = setV1(p, f.k, f.v)
		}
	}
	for _, f := range []struct {
		k string
		v float64
	}{{"x", n.X}, {"y", n.Y}, {"w", n.W}, {"h", n.H}, {"rotation", n.Rotation}} {
		p = setV1(p, f.k, canvas.Num(f.v))
	}
	if n.CreatedRev != 0 {
		p = setV1(p, "created_rev", json.Number(strconv.FormatInt(n.CreatedRev, 10)))
	}
	p = withPoints(p, t.migratedPath(ends, p))
	t.deleteNode(n.ID)
	id := n.ID
	for k := 1; ; k++ {
		if _, taken := t.getEdge(id); !taken {
			break
		}
		id = n.ID + ":arrow" + strconv.Itoa(k)
	}
	t.addEdge(&canvas.Edge{ID: id, From: ends[0].node, To: ends[1].node, Type: "arrow", Props: p, CreatedBy: n.CreatedBy})
}

// migrateProps returns props as model 2 holds them for kind (see
// MigrateModel), and whether anything changed. props is not modified.
func migrateProps(kind string, props map[string]any) (map[string]any, bool) {
	out := make(map[string]any, len(props))
	for k, v := range props {
		out[k] = v
	}
	changed := props == nil
	v1 := map[string]any{}
	move := func(k string) {
		v1[k] = out[k]
		delete(out, k)
		changed = true
	}
	if kind == "image" {
		if src, ok := out["src"]; ok {
			if _, has := out["url"]; !has && canvas.CheckProp(kind, "url", src, "url") == nil {
				out["url"] = src
				delete(out, "src")
				changed = true
			}
		}
	}
	if kind == "line" {
		if m, ok := out[pointsProp].(map[string]any); ok {
			if pts, ok := tldrawPoints(m); ok {
				v1[pointsProp] = m
				out[pointsProp] = pts
				changed = true
			}
		}
	}
	for _, k := range propKeys(out) {
		if k == canvas.MetaProp {
			if _, ok := out[k].(map[string]any); !ok {
				move(k)
			}
			continue
		}
		if canvas.CheckProp(kind, k, out[k], k) != nil {
			move(k)
		}
	}
	if r, ok := out[richTextProp]; ok {
		if _, has := out[textProp]; !has {
			out[textProp] = canvas.RichTextPlain(r)
			changed = true
		}
	}
	if len(v1) > 0 {
		for _, k := range propKeys(v1) {
			out = setV1(out, k, v1[k])
		}
	}
	return out, changed
}

// setV1 returns props (a map the caller owns) with props.meta.v1.<key> =
// v; a key already there keeps its value and v goes under key~2, key~3, ...
// A meta that is not an object moves to meta.v1.meta first, a meta.v1 that
// is not one to meta.v1.v1.
func setV1(props map[string]any, key string, v any) map[string]any {
	meta, isObj := props[canvas.MetaProp].(map[string]any)
	nm := make(map[string]any, len(meta)+1)
	for k, x := range meta {
		nm[k] = x
	}
	old, _ := nm[v1Meta].(map[string]any)
	nv := make(map[string]any, len(old)+2)
	for k, x := range old {
		nv[k] = x
	}
	if x, has := props[canvas.MetaProp]; has && !isObj {
		nv[canvas.MetaProp] = x
	}
	if x, has := nm[v1Meta]; has && old == nil {
		nv[v1Meta] = x
	}
	name := key
	for k := 2; ; k++ {
		if _, taken := nv[name]; !taken {
			break
		}
		name = key + "~" + strconv.Itoa(k)
	}
	nv[name] = v
	nm[v1Meta] = nv
	props[canvas.MetaProp] = nm
	return props
}

// tldrawPoints returns a tldraw line's point map {id: {id, index, x, y}} as
// a list of {x, y} ordered by index, then id; ok is false when it is not one.
func tldrawPoints(m map[string]any) ([]any, bool) {
	type entry struct {
		index, id string
		x, y      json.Number
	}
	var list []entry
	for id, v := range m {
		p, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		x, okx := canvas.NumberValue(p["x"])
		y, oky := canvas.NumberValue(p["y"])
		if !okx || !oky {
			return nil, false
		}
		index, _ := p["index"].(string)
		list = append(list, entry{index, id, canvas.Num(x), canvas.Num(y)})
	}
	if len(list) < 2 || len(list) > canvas.MaxPoints {
		return nil, false
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].index != list[j].index {
			return list[i].index < list[j].index
		}
		return list[i].id < list[j].id
	})
	out := make([]any, len(list))
	for i, e := range list {
		out[i] = map[string]any{"x": e.x, "y": e.y}
	}
	return out, true
}

// propKeys returns m's keys in byte order.
func propKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
