package reducer

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/canvasd/canvasd/canvas"
)

const groupNodeTyp = "group"

// Enum values of the layout verbs (functions: no package-level mutable state).
func alignments() []string {
	return []string{"left", "right", "top", "bottom", "center-horizontal", "center-vertical"}
}
func directions() []string { return []string{"horizontal", "vertical"} }
func reorderOps() []string {
	return []string{"bring_to_front", "send_to_back", "bring_forward", "send_backward"}
}

// boxed is a node with its page bounds and its position in args.ids.
type boxed struct {
	id  string
	b   rect
	pos int
}

func (t *tx) boxes(roots []string) []boxed {
	out := make([]boxed, len(roots))
	for i, id := range roots {
		n, _ := t.getNode(id)
		out[i] = boxed{id: id, b: bounds(n), pos: i}
	}
	return out
}

// decideAlign: align {ids, alignment}: left makes every left edge equal to
// the smallest, right every right edge equal to the largest, top and bottom
// likewise; center-horizontal puts every horizontal centre on the common
// bounds' centre x, center-vertical every vertical centre on its centre y.
func decideAlign(t *tx, args json.RawMessage) error {
	var a canvas.AlignArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if err := t.selection(a.IDs); err != nil {
		return err
	}
	if !oneOf(a.Alignment, alignments()...) {
		return enumError("args.alignment", a.Alignment, alignments()...)
	}
	items := t.boxes(t.roots(a.IDs))
	all := items[0].b
	for _, it := range items[1:] {
		all = all.union(it.b)
	}
	for _, it := range items {
		var dx, dy float64
		switch a.Alignment {
		case "left":
			dx = all.minX - it.b.minX
		case "right":
			dx = all.maxX - it.b.maxX
		case "top":
			dy = all.minY - it.b.minY
		case "bottom":
			dy = all.maxY - it.b.maxY
		case "center-horizontal":
			dx = all.midX() - it.b.midX()
		case "center-vertical":
			dy = all.midY() - it.b.midY()
		}
		t.translate([]string{it.id}, dx, dy)
	}
	return nil
}

// axis helpers: the start, end and size of a box along a direction.
func span(b rect, horizontal bool) (lo, hi float64) {
	if horizontal {
		return b.minX, b.maxX
	}
	return b.minY, b.maxY
}

func (t *tx) shift(id string, d float64, horizontal bool) {
	if horizontal {
		t.translate([]string{id}, d, 0)
	} else {
		t.translate([]string{id}, 0, d)
	}
}

func sortBoxes(items []boxed, key func(b rect) float64) {
	sort.SliceStable(items, func(i, j int) bool {
		ki, kj := key(items[i].b), key(items[j].b)
		if ki != kj {
			return ki < kj
		}
		return items[i].pos < items[j].pos
	})
}

// decideDistribute: distribute {ids, direction}: ordered by centre, the
// first and last shapes stay and the gaps between neighbours become equal.
// Fewer than three shapes change nothing.
func decideDistribute(t *tx, args json.RawMessage) error {
	var a canvas.DistributeArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if err := t.selection(a.IDs); err != nil {
		return err
	}
	if !oneOf(a.Direction, directions()...) {
		return enumError("args.direction", a.Direction, directions()...)
	}
	h := a.Direction == "horizontal"
	items := t.boxes(t.roots(a.IDs))
	if len(items) < 3 {
		return nil
	}
	sortBoxes(items, func(b rect) float64 {
		lo, hi := span(b, h)
		return (lo + hi) / 2
	})
	n := len(items)
	_, firstHi := span(items[0].b, h)
	lastLo, _ := span(items[n-1].b, h)
	inner := 0.0
	for _, it := range items[1 : n-1] {
		lo, hi := span(it.b, h)
		inner += hi - lo
	}
	gap := (lastLo - firstHi - inner) / float64(n-1)
	cursor := firstHi + gap
	for _, it := range items[1 : n-1] {
		lo, hi := span(it.b, h)
		t.shift(it.id, cursor-lo, h)
		cursor += hi - lo + gap
	}
	return nil
}

// decideStack: stack {ids, direction, gap}: the first shape by position
// stays; each next one starts gap after the previous one ends.
func decideStack(t *tx, args json.RawMessage) error {
	var a canvas.StackArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if err := t.selection(a.IDs); err != nil {
		return err
	}
	if !oneOf(a.Direction, directions()...) {
		return enumError("args.direction", a.Direction, directions()...)
	}
	if a.Gap == nil {
		return canvas.Unprocessable("args.gap", "is required: the space between neighbours, in page units (0 for touching)")
	}
	h := a.Direction == "horizontal"
	items := t.boxes(t.roots(a.IDs))
	sortBoxes(items, func(b rect) float64 {
		lo, _ := span(b, h)
		return lo
	})
	_, cursor := span(items[0].b, h)
	cursor += *a.Gap
	for _, it := range items[1:] {
		lo, hi := span(it.b, h)
		t.shift(it.id, cursor-lo, h)
		cursor += hi - lo + *a.Gap
	}
	return nil
}

func zLess(a, b *canvas.Node) bool {
	if a.Index != b.Index {
		return a.Index < b.Index
	}
	return a.ID < b.ID
}

// decideReorder: reorder {ids, op}. bring_to_front / send_to_back move the
// nodes (keeping their relative order) above / below every other node;
// bring_forward / send_backward move each run of selected nodes one
// unselected node up / down. Only the moved nodes get new index keys, but
// for bring_forward / send_backward between neighbours whose keys have grown
// close: then a few nodes around them get short keys too (placeKeys).
func decideReorder(t *tx, args json.RawMessage) error {
	var a canvas.ReorderArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if err := t.selection(a.IDs); err != nil {
		return err
	}
	if !oneOf(a.Op, reorderOps()...) {
		return enumError("args.op", a.Op, reorderOps()...)
	}
	sel := make(map[string]bool, len(a.IDs))
	nodes := make([]*canvas.Node, len(a.IDs))
	for i, id := range a.IDs {
		sel[id] = true
		nodes[i], _ = t.getNode(id)
	}
	sort.Slice(nodes, func(i, j int) bool { return zLess(nodes[i], nodes[j]) })
	fail := func(err error) error {
		return canvas.Unprocessable("args.ids", "cannot compute new z-order keys (the canvas holds invalid or equal index keys): %v", err)
	}
	assign := func(ns []*canvas.Node, keys []string) {
		for i, n := range ns {
			t.editNode(n.ID).Index = keys[i]
		}
	}
	switch a.Op {
	case "bring_to_front":
		lowest, blocked, top := nodes[0], false, ""
		t.eachNode(func(n *canvas.Node) {
			if !sel[n.ID] && zLess(lowest, n) {
				blocked = true
			}
			if n.Index > top && ValidIndexKey(n.Index) {
				top = n.Index
			}
		})
		if !blocked {
			return nil
		}
		keys, err := t.keysAbove(top, len(nodes))
		if err != nil {
			return fail(err)
		}
		assign(nodes, keys)
	case "send_to_back":
		highest, blocked, bottom := nodes[len(nodes)-1], false, ""
		t.eachNode(func(n *canvas.Node) {
			if !sel[n.ID] && zLess(n, highest) {
				blocked = true
			}
			if ValidIndexKey(n.Index) && (bottom == "" || n.Index < bottom) {
				bottom = n.Index
			}
		})
		if !blocked {
			return nil
		}
		keys, err := KeysBetween("", bottom, len(nodes))
		if err != nil {
			return fail(err)
		}
		assign(nodes, keys)
	default:
		var all []*canvas.Node
		t.eachNode(func(n *canvas.Node) { all = append(all, n) })
		sort.Slice(all, func(i, j int) bool { return zLess(all[i], all[j]) })
		order, moved := shiftRuns(all, sel, a.Op == "bring_forward")
		if err := t.placeKeys(order, moved); err != nil {
			return fail(err)
		}
	}
	return nil
}

// shiftRuns returns all (every node, in z-order) with each run of selected
// nodes moved one unselected node up (forward) or down, and which nodes of
// the result moved. A run already at the top (forward) or bottom stays.
func shiftRuns(all []*canvas.Node, sel map[string]bool, forward bool) ([]*canvas.Node, []bool) {
	src := all
	if !forward { // backward is forward on the reversed order
		src = slices.Clone(all)
		slices.Reverse(src)
	}
	order := make([]*canvas.Node, 0, len(src))
	moved := make([]bool, 0, len(src))
	for i := 0; i < len(src); {
		if !sel[src[i].ID] {
			order, moved = append(order, src[i]), append(moved, false)
			i++
			continue
		}
		j := i
		for j+1 < len(src) && sel[src[j+1].ID] {
			j++
		}
		next := j + 1
		if j+1 < len(src) { // the unselected node past the run goes before it
			order, moved = append(order, src[j+1]), append(moved, false)
			next = j + 2
		}
		for _, n := range src[i : j+1] {
			order, moved = append(order, n), append(moved, j+1 < len(src))
		}
		i = next
	}
	if !forward {
		slices.Reverse(order)
		slices.Reverse(moved)
	}
	return order, moved
}

// maxKeyFraction is the number of fraction digits (past the integer part) a
// key placeKeys hands out may have before it re-keys neighbours instead.
const maxKeyFraction = 3

// maxRekeyRun bounds the nodes one placeKeys run may re-key.
const maxRekeyRun = 64

// keyFraction returns the number of fraction digits of valid key k.
func keyFraction(k string) int {
	n, _ := integerLength(k[0])
	return len(k) - n
}

// placeKeys gives the nodes of order (every node, in the z-order to be)
// marked in need new index keys that ascend along order; the others keep
// theirs (they must already ascend). Each run of such nodes gets keys
// between its neighbours' (KeysBetween: the shortest key for one node).
// Those neighbours come closer with every reorder between the same nodes (a
// key gains a digit about every six), so when the keys would have more than
// maxKeyFraction fraction digits, the run takes in nodes on both sides (1,
// 2, 4, ... more, up to maxRekeyRun nodes in all) until keys between the
// outer neighbours are short, and re-keys them all: the z-order is the one
// asked for, a few more nodes change key, and keys stay short however often
// nodes swap. When no such window is found the run keeps its own (longer)
// keys. Only nodes whose key changes are written.
func (t *tx) placeKeys(order []*canvas.Node, need []bool) error {
	keys := make([]string, len(order))
	for i, n := range order {
		keys[i] = n.Index
	}
	between := func(s, e int) ([]string, error) { // keys for order[s:e]
		lo, hi := "", ""
		if s > 0 {
			lo = keys[s-1]
		}
		if e < len(order) {
			hi = keys[e]
		}
		if hi == "" { // in front of everything: within the revision's keys (tx.frontKeys)
			return t.keysAbove(lo, e-s)
		}
		return KeysBetween(lo, hi, e-s)
	}
	short := func(ks []string) bool {
		for _, k := range ks {
			if keyFraction(k) > maxKeyFraction {
				return false
			}
		}
		return true
	}
	for s := 0; s < len(order); {
		if !need[s] {
			s++
			continue
		}
		e := s + 1
		for e < len(order) && need[e] {
			e++
		}
		ks, err := between(s, e)
		if err != nil {
			return err
		}
		for w := 1; !short(ks); w *= 2 {
			ws, we := max(0, s-w), min(len(order), e+w)
			for we < len(order) && need[we] { // a run just past the window joins it
				we++
			}
			if we-ws > maxRekeyRun {
				break
			}
			if wk, err := between(ws, we); err == nil && short(wk) {
				s, e, ks = ws, we, wk
				break
			}
			if ws == 0 && we == len(order) {
				break
			}
		}
		for i := s; i < e; i++ {
			if keys[i] != ks[i-s] {
				keys[i] = ks[i-s]
				t.editNode(order[i].ID).Index = ks[i-s]
			}
		}
		s = e
	}
	return nil
}

// decideGroup: group {ids, group_id?}: a new "group" node becomes the
// parent of the nodes. Its parent is the nodes' lowest common ancestor, its
// z-order just above its topmost child, its bounds the union of its children.
func decideGroup(t *tx, args json.RawMessage) error {
	var a canvas.GroupArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	if a.GroupID != "" {
		t.touch(nodeRef(a.GroupID))
	}
	if err := t.selection(a.IDs); err != nil {
		return err
	}
	in := make(map[string]bool, len(a.IDs))
	for _, id := range a.IDs {
		in[id] = true
	}
	chains := make([][]string, len(a.IDs))
	for i, id := range a.IDs {
		chains[i] = t.ancestors(id)
		for _, anc := range chains[i] {
			if in[anc] {
				return canvas.Unprocessable(fieldAt("args.ids", i), "node %q is inside %q, which is also listed; list only the outer one", id, anc)
			}
		}
	}
	parent := ""
	for _, c := range chains[0] {
		common := true
		for _, ch := range chains[1:] {
			if !contains(ch, c) {
				common = false
				break
			}
		}
		if common {
			parent = c
			break
		}
	}
	gid := a.GroupID
	if gid != "" {
		if err := canvas.ValidateID("args.group_id", gid); err != nil {
			return err
		}
		if _, ok := t.getNode(gid); ok {
			return canvas.Unprocessable("args.group_id", "a node with id %q already exists; choose another id or leave group_id out", gid)
		}
	}
	// Z-order: just above the topmost child, below whatever was above it.
	var top *canvas.Node
	for _, id := range a.IDs {
		if n, _ := t.getNode(id); top == nil || zLess(top, n) {
			top = n
		}
	}
	var next *canvas.Node
	t.eachNode(func(n *canvas.Node) {
		if zLess(top, n) && (next == nil || zLess(n, next)) {
			next = n
		}
	})
	var index string
	if next != nil {
		index, _ = KeyBetween(top.Index, next.Index)
	}
	if index == "" {
		keys, err := t.frontKeys(1)
		if err != nil {
			return canvas.Unprocessable("args.ids", "cannot compute a z-order key for the group: %v", err)
		}
		index = keys[0]
	}
	if gid == "" {
		gid = t.mintNodeID()
	}
	t.addNode(&canvas.Node{ID: gid, Type: groupNodeTyp, ParentID: parent, Index: index, Props: map[string]any{}})
	t.created = append(t.created, gid)
	for _, id := range a.IDs {
		t.setParent(t.editNode(id), gid)
	}
	return nil
}

// decideUngroup: ungroup {id}: the group's children move to the group's
// parent (keeping their geometry) and the group is deleted.
func decideUngroup(t *tx, args json.RawMessage) error {
	var a canvas.IDArgs
	if err := decodeArgs(args, &a); err != nil {
		return err
	}
	g, err := t.needNode("args.id", a.ID)
	if err != nil {
		return err
	}
	if g.Type != groupNodeTyp {
		return canvas.Unprocessable("args.id", "node %q is a %q, not a group", a.ID, g.Type)
	}
	parent := g.ParentID
	for _, c := range append([]string(nil), t.children(a.ID)...) {
		t.setParent(t.editNode(c), parent)
	}
	t.deleteNode(a.ID)
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
