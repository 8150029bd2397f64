package reducer

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/canvasd/canvasd/canvas"
)

// settled is what settle concluded.
type settled struct {
	changes []canvas.Change
	touched []canvas.Ref
	// conflicting names the nodes that make the changes impossible (see
	// settle); changes is then nil.
	conflicting []string
}

// settle completes the changes of a history verb (undo, redo,
// revert_to_snapshot, revert_commits): changes that put entities back as
// they were at an earlier revision, or delete them, whatever happened since.
// It makes the state after them keep the invariants every other verb keeps:
//
//   - a deleted frame takes its children along, recursively, and every deleted
//     node its edges, as delete_node does; the children a deleted group still
//     has move to its nearest kept ancestor, as ungroup does (undoing a group
//     never deletes the shapes others put in it since);
//   - a node given an index key that another node holds (its old key was
//     handed out again since) gets a fresh key just above that node's;
//   - the bounds of every group whose children changed are recomputed, and a
//     group left without children is deleted;
//   - a node put back under a parent that is missing or not a container, or
//     under one of its own descendants, a container that lost that role while
//     it has children, and an edge put back to a missing node cannot be:
//     settle names them in conflicting (the caller refuses the command with a
//     409) and returns no changes.
//
// The given changes keep their form (a document's text still changes by line
// splices): the change of an entity the fix-ups alter is adjusted (a put puts
// the fixed value, a patch also sets the fixed fields, a change of a node the
// fix-ups delete becomes its delete), and the fix-ups of other entities follow
// as ordinary changes. changes is not modified. A change that does not apply
// to s is an Unprocessable error.
//
// It stays over 100 lines because its fix-ups (the list above) run over one
// transaction (tx), each reading what the ones before it left, and the
// adjusted changes are collected at its end; comments in its body mark the
// steps.
func settle(s *canvas.State, cmd *canvas.Command, changes []canvas.Change) (settled, error) {
	t := &tx{s: s, cmd: cmd}
	t.touched = make([]canvas.Ref, 0, len(changes)+4)
	count := make(map[canvas.Ref]int, len(changes))
	for i := range changes {
		ch := &changes[i]
		if err := t.load(ch); err != nil {
			return settled{touched: t.touched}, canvas.Unprocessable("args", "the changes do not apply to the current state: %v", err)
		}
		count[canvas.Ref{Kind: ch.Kind, ID: ch.ID}]++
	}
	// The nodes as the given changes leave them (nil: deleted), before the fix-ups.
	var nodeIDs []string
	before := make(map[string]*canvas.Node, len(t.nodes))
	for _, ref := range t.order {
		if ref.Kind != canvas.KindNode {
			continue
		}
		nodeIDs = append(nodeIDs, ref.ID)
		if n := t.nodes[ref.ID]; n != nil {
			c := *n
			before[ref.ID] = &c
		} else {
			before[ref.ID] = nil
		}
	}
	if c := t.structureConflicts(nodeIDs); len(c) > 0 {
		return settled{touched: t.touched, conflicting: c}, nil
	}
	// The edges as the given changes leave them, checked against the model.
	var edgeIDs []string
	beforeEdge := make(map[string]*canvas.Edge)
	for _, ref := range t.order {
		if ref.Kind == canvas.KindEdge {
			edgeIDs = append(edgeIDs, ref.ID)
			if e := t.edges[ref.ID]; e != nil {
				c := *e
				beforeEdge[ref.ID] = &c
			}
		}
	}
	if err := t.checkModel(); err != nil {
		return settled{touched: t.touched}, err
	}
	for _, id := range nodeIDs {
		o, ok := s.Nodes[id]
		if !ok || !isContainer(o) || t.nodes[id] != nil { // (only containers have children)
			continue
		}
		for _, c := range append([]string(nil), t.children(id)...) {
			if o.Type == groupNodeTyp { // a group only groups: its other children stay, ungrouped
				t.setParent(t.editNode(c), t.keptAncestor(id))
			} else {
				t.deleteTree(c)
			}
		}
	}
	if err := t.freshKeys(nodeIDs); err != nil {
		return settled{touched: t.touched}, err
	}
	for _, id := range nodeIDs {
		if o, ok := s.Nodes[id]; ok {
			t.markDirty(o.ParentID)
		}
		if n := t.nodes[id]; n != nil {
			t.markDirty(n.ParentID)
			t.markDirty(id) // a group put back: its bounds follow its children
		}
	}
	if len(t.dirty) > 0 {
		t.recomputeGroups()
	}
	if t.nodeDeleted {
		t.deleteDanglingEdges()
	}
	// The edges the changes put back keep their points, but for a bound end
	// that no longer lies on its node (the node changed since): it moves
	// onto it. The others follow their nodes, as after any verb.
	for _, id := range edgeIDs {
		if _, ok := t.getEdge(id); ok {
			if err := t.placeEdge(t.editEdge(id), keepPoints, "args"); err != nil {
				return settled{touched: t.touched}, err
			}
		}
	}
	t.keepEdgesBound()
	if t.badEdge != "" {
		return settled{touched: t.touched}, outOfRange("edge", t.badEdge)
	}

	out := make([]canvas.Change, 0, len(changes)+len(t.order)-len(count))
	seen := make(map[canvas.Ref]int, len(count))
	for _, ch := range changes {
		ref := canvas.Ref{Kind: ch.Kind, ID: ch.ID}
		seen[ref]++
		if seen[ref] < count[ref] { // the last change of an entity carries the fix-ups
			out = append(out, ch)
			continue
		}
		var gone, wasGone bool // deleted after the fix-ups; deleted by the given changes
		if ref.Kind == canvas.KindNode {
			gone, wasGone = t.nodes[ch.ID] == nil, before[ch.ID] == nil
		} else {
			gone, wasGone = t.edges[ch.ID] == nil, ch.Op == canvas.OpDelete
		}
		switch {
		case gone && !wasGone: // deleted by the fix-ups
			existed := false
			if ref.Kind == canvas.KindNode {
				_, existed = s.Nodes[ch.ID]
			} else {
				_, existed = s.Edges[ch.ID]
			}
			del := canvas.Change{Op: canvas.OpDelete, Kind: ch.Kind, ID: ch.ID}
			switch {
			case count[ref] > 1:
				out = append(out, ch, del)
			case existed:
				out = append(out, del)
			} // else: it was not there and is not: no change
		case ref.Kind == canvas.KindEdge && !gone:
			out = append(out, ch)
			if p := edgeFields.diff(beforeEdge[ch.ID], t.edges[ch.ID]); p != nil {
				out = append(out, canvas.Change{Op: canvas.OpPatch, Kind: canvas.KindEdge, ID: ch.ID, Patch: p})
			}
		case gone:
			out = append(out, ch)
		default:
			d := scalarDiff(before[ch.ID], t.nodes[ch.ID])
			if d == nil {
				out = append(out, ch)
				break
			}
			switch ch.Op {
			case canvas.OpPut:
				v, err := json.Marshal(t.nodes[ch.ID])
				if err != nil {
					return settled{touched: t.touched}, canvas.Unprocessable("args", "node %q cannot be encoded: %v", ch.ID, err)
				}
				ch.Value = v
				out = append(out, ch)
			case canvas.OpPatch:
				// Its fields other than props become the effective ones (a
				// group's restored bounds may be its current bounds again).
				p := maps.Clone(ch.Patch) // the history's inverse is shared: never modify it
				eff := d                  // (after an earlier change of the node: the fix-ups)
				if o, ok := s.Nodes[ch.ID]; ok && count[ref] == 1 {
					eff = scalarDiff(o, t.nodes[ch.ID])
				}
				for _, f := range nodeFields.fields {
					if v, ok := eff[f.name]; ok {
						p[f.name] = v
					} else if count[ref] == 1 {
						delete(p, f.name)
					}
				}
				if len(p) > 0 {
					ch.Patch = p
					out = append(out, ch)
				}
			default:
				out = append(out, ch, canvas.Change{Op: canvas.OpPatch, Kind: canvas.KindNode, ID: ch.ID, Patch: d})
			}
		}
	}
	for _, ref := range t.order {
		if count[ref] > 0 {
			continue
		}
		ch, _, ok, err := t.change(ref)
		if err != nil {
			return settled{touched: t.touched}, err
		}
		if ok {
			out = append(out, ch)
		}
	}
	return settled{changes: out, touched: t.touched}, nil
}

// checkModel refuses working nodes and edges that model 2 does not hold
// (history reaching back before the canvas's migration to it).
func (t *tx) checkModel() error {
	for _, ref := range t.order {
		var err error
		if ref.Kind == canvas.KindNode {
			if n := t.nodes[ref.ID]; n != nil {
				if !canvas.ValidNodeType(n.Type) {
					err = canvas.Unprocessable("type", "a node of type %q", n.Type)
				} else {
					err = canvas.ValidateProps(n.Type, n.Props, "props")
				}
			}
		} else if e := t.edges[ref.ID]; e != nil {
			err = canvas.ValidateProps(canvas.EdgeKind, e.Props, "props")
		}
		if err != nil {
			return canvas.Unprocessable("args", "this would bring back %s %q as it was before the canvas moved to model %d, which model %d does not hold (%v); it cannot be done",
				ref.Kind, ref.ID, canvas.Model, canvas.Model, err)
		}
	}
	return nil
}

// keptAncestor returns the nearest ancestor of node id, as the state has it,
// that t keeps, or "" (the canvas).
func (t *tx) keptAncestor(id string) string {
	for p := t.s.Nodes[id].ParentID; p != ""; {
		if _, ok := t.getNode(p); ok {
			return p
		}
		o, ok := t.s.Nodes[p]
		if !ok {
			return ""
		}
		p = o.ParentID
	}
	return ""
}

// load applies one change to t's working set, as Apply would to the state.
func (t *tx) load(ch *canvas.Change) error {
	if ch.ID == "" {
		return fmt.Errorf("a change without an id")
	}
	switch ch.Kind {
	case canvas.KindNode:
		_, exists := t.getNode(ch.ID)
		switch {
		case ch.Op == canvas.OpPut:
			var n canvas.Node
			if err := canvas.UnmarshalExact(ch.Value, &n); err != nil {
				return fmt.Errorf("node value: %v", err)
			}
			if n.ID != ch.ID {
				return fmt.Errorf("node value has id %q, not %q", n.ID, ch.ID)
			}
			normalizeDocNode(&n)
			t.recordNode(ch.ID)
			t.nodes[ch.ID] = &n
		case !exists:
			return fmt.Errorf("%s of the missing node %q", ch.Op, ch.ID)
		case ch.Op == canvas.OpPatch:
			m := t.editNode(ch.ID)
			if err := nodeFields.patch(m, ch.Patch); err != nil {
				return err
			}
			normalizeDocNode(m)
		case ch.Op == canvas.OpEdit:
			m := t.editNode(ch.ID)
			m.Props = maps.Clone(m.Props)
			if _, err := ApplyEditChange(m, ch.Edit); err != nil {
				return err
			}
		case ch.Op == canvas.OpDelete:
			t.deleteNode(ch.ID)
		default:
			return fmt.Errorf("unknown op %q", ch.Op)
		}
	case canvas.KindEdge:
		_, exists := t.getEdge(ch.ID)
		switch {
		case ch.Op == canvas.OpPut:
			var e canvas.Edge
			if err := canvas.UnmarshalExact(ch.Value, &e); err != nil {
				return fmt.Errorf("edge value: %v", err)
			}
			if e.ID != ch.ID {
				return fmt.Errorf("edge value has id %q, not %q", e.ID, ch.ID)
			}
			t.recordEdge(ch.ID)
			t.edges[ch.ID] = &e
		case !exists:
			return fmt.Errorf("%s of the missing edge %q", ch.Op, ch.ID)
		case ch.Op == canvas.OpPatch:
			if err := edgeFields.patch(t.editEdge(ch.ID), ch.Patch); err != nil {
				return err
			}
		case ch.Op == canvas.OpDelete:
			t.deleteEdge(ch.ID)
		default:
			return fmt.Errorf("unknown op %q on an edge", ch.Op)
		}
	default:
		return fmt.Errorf("unknown change kind %q", ch.Kind)
	}
	return nil
}

// structureConflicts returns the nodes that make t's working set
// impossible, looking at the nodes ids (those the given changes wrote) and
// at the edges written: a parent that is missing or not a container, a
// parent chain that loops back (its members), a node that stopped being a
// container while it has children, a bound edge end that is missing.
func (t *tx) structureConflicts(ids []string) []string {
	var out []string
	add := func(id string) {
		if !slices.Contains(out, id) {
			out = append(out, id)
			t.touch(nodeRef(id))
		}
	}
	for _, id := range ids {
		n := t.nodes[id]
		if n == nil {
			continue
		}
		if n.ParentID != "" {
			p, ok := t.getNode(n.ParentID)
			if !ok || !isContainer(p) {
				add(n.ParentID)
				continue
			}
			// A cycle: id among its own ancestors; its members are those before it.
			a := t.ancestors(id)
			if i := slices.Index(a, id); i == 0 {
				add(id) // its own parent
			} else if i > 0 {
				for _, c := range a[:i] {
					add(c)
				}
			}
		}
		if o, ok := t.s.Nodes[id]; ok && isContainer(o) && !isContainer(n) && len(t.children(id)) > 0 {
			add(id)
		}
	}
	for _, ref := range t.order {
		if ref.Kind != canvas.KindEdge {
			continue
		}
		if e := t.edges[ref.ID]; e != nil {
			for _, end := range []string{e.From, e.To} {
				if _, ok := t.getNode(end); !ok && end != "" { // "": a free end
					add(end)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// freshKeys gives every node of ids whose index the given changes set (a
// node put back, a key restored) and that another node holds a new key just
// above that node's, below the next key, so keys stay unique and in place.
// It scans the canvas only when such a node exists.
func (t *tx) freshKeys(ids []string) error {
	var set []*canvas.Node
	mine := map[string]bool{}
	for _, id := range ids {
		n := t.nodes[id]
		if n == nil {
			continue
		}
		if o, ok := t.s.Nodes[id]; ok && o.Index == n.Index {
			continue
		}
		set = append(set, n)
		mine[id] = true
	}
	if len(set) == 0 {
		return nil
	}
	taken := map[string]bool{}
	var all []string
	t.eachNode(func(n *canvas.Node) {
		all = append(all, n.Index)
		if !mine[n.ID] {
			taken[n.Index] = true
		}
	})
	sort.Slice(set, func(i, j int) bool { return zLess(set[i], set[j]) })
	var clash []*canvas.Node
	for _, n := range set {
		if taken[n.Index] {
			clash = append(clash, n)
		} else {
			taken[n.Index] = true
		}
	}
	if len(clash) == 0 {
		return nil
	}
	sort.Strings(all)
	for i := 0; i < len(clash); {
		k := clash[i].Index
		j := i + 1
		for j < len(clash) && clash[j].Index == k {
			j++
		}
		var keys []string
		var err error
		if p := sort.Search(len(all), func(x int) bool { return all[x] > k }); p < len(all) {
			keys, err = KeysBetween(k, all[p], j-i)
		} else {
			keys, err = t.keysAbove(k, j-i)
		}
		if err != nil {
			return canvas.Unprocessable("args", "cannot compute a new z-order key for node %q (the canvas holds invalid index keys): %v", clash[i].ID, err)
		}
		for x, n := range clash[i:j] {
			t.editNode(n.ID).Index = keys[x]
		}
		i = j
	}
	return nil
}

// scalarDiff returns the patch of the fields other than props that turns a
// into b (nil when they are equal).
func scalarDiff(a, b *canvas.Node) map[string]any {
	var p map[string]any
	for _, f := range nodeFields.fields {
		if !f.same(a, b) {
			if p == nil {
				p = make(map[string]any, 4)
			}
			p[f.name] = f.get(b)
		}
	}
	return p
}

// changedIDs lists the node and edge ids changes change, sorted.
func changedIDs(changes []canvas.Change) (nodes, edges []string) {
	nodes, edges = []string{}, []string{}
	seen := map[canvas.Ref]bool{}
	for _, ch := range changes {
		ref := canvas.Ref{Kind: ch.Kind, ID: ch.ID}
		if seen[ref] {
			continue
		}
		seen[ref] = true
		if ch.Kind == canvas.KindNode {
			nodes = append(nodes, ch.ID)
		} else {
			edges = append(edges, ch.ID)
		}
	}
	sort.Strings(nodes)
	sort.Strings(edges)
	return nodes, edges
}

// sinceRev returns the revision before the latest change of any of ids: the
// base of a conflict about them.
func sinceRev(s *canvas.State, ids []string) int64 {
	base := int64(-1)
	for _, id := range ids {
		at := max(s.ChangedAt(nodeRef(id))-1, 0)
		if base < 0 || at < base {
			base = at
		}
	}
	return max(base, 0)
}
