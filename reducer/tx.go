package reducer

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/canvasd/canvasd/canvas"
)

// tx is the working set of one Decide call. It reads the state through an
// overlay of copies of the entities the command changes, so Decide neither
// modifies nor copies the state; finish turns the overlay into the effective
// diff. Verbs must never modify a node or edge obtained from getNode/getEdge:
// they call editNode/editEdge for a private copy, and they replace Props maps
// instead of mutating them (maps are shared with the state).
type tx struct {
	s   *canvas.State
	cmd *canvas.Command

	nodes map[string]*canvas.Node // working copies; nil marks a deletion
	edges map[string]*canvas.Edge
	order []canvas.Ref // written entities, in first-write order

	touched    []canvas.Ref
	touchedSet map[canvas.Ref]struct{} // once touched grows past a few entries

	created []string
	kids    map[string][]string // children by parent id (sorted); built on first use
	dirty   map[string]struct{} // groups whose bounds need recomputing
	placed  map[string]bool     // edges whose points placeEdge set: keepEdgesBound leaves them
	badEdge string              // an edge whose path left the finite numbers

	nodeDeleted bool
	frontUsed   bool
	mintedNodes int
	mintedEdges int
}

// txVerb adapts a verb written against tx to a decideFunc.
func txVerb(fn func(t *tx, args json.RawMessage) error) decideFunc {
	return func(s *canvas.State, cmd canvas.Command) (Decision, error) {
		t := &tx{s: s, cmd: &cmd}
		t.touched = make([]canvas.Ref, 0, 4)
		if err := fn(t, cmd.Args); err != nil {
			return Decision{Touched: t.touched}, err
		}
		changes, values, err := t.finish()
		if err != nil {
			return Decision{Touched: t.touched}, err
		}
		return Decision{Changes: changes, CreatedIDs: t.created, Touched: t.touched, values: values}, nil
	}
}

func nodeRef(id string) canvas.Ref { return canvas.Ref{Kind: canvas.KindNode, ID: id} }
func edgeRef(id string) canvas.Ref { return canvas.Ref{Kind: canvas.KindEdge, ID: id} }

// touch records that the command reads or writes r.
func (t *tx) touch(r canvas.Ref) {
	if t.touchedSet != nil {
		if _, ok := t.touchedSet[r]; ok {
			return
		}
		t.touchedSet[r] = struct{}{}
		t.touched = append(t.touched, r)
		return
	}
	for _, x := range t.touched {
		if x == r {
			return
		}
	}
	t.touched = append(t.touched, r)
	if len(t.touched) > 12 {
		t.touchedSet = make(map[canvas.Ref]struct{}, 2*len(t.touched))
		for _, x := range t.touched {
			t.touchedSet[x] = struct{}{}
		}
	}
}

// getNode returns the current (working) value of a node; do not modify it.
func (t *tx) getNode(id string) (*canvas.Node, bool) {
	if n, ok := t.nodes[id]; ok {
		return n, n != nil
	}
	n, ok := t.s.Nodes[id]
	return n, ok
}

// getEdge returns the current (working) value of an edge; do not modify it.
func (t *tx) getEdge(id string) (*canvas.Edge, bool) {
	if e, ok := t.edges[id]; ok {
		return e, e != nil
	}
	e, ok := t.s.Edges[id]
	return e, ok
}

// needNode touches and returns node id, or a FieldError on field when it does not exist.
func (t *tx) needNode(field, id string) (*canvas.Node, error) {
	if id == "" {
		return nil, canvas.Unprocessable(field, "is required: the id of a node")
	}
	t.touch(nodeRef(id))
	if n, ok := t.getNode(id); ok {
		return n, nil
	}
	if rev, ok := t.s.Tombstones[nodeRef(id)]; ok {
		return nil, canvas.Unprocessable(field, "node %q was deleted at rev %d", id, rev)
	}
	return nil, canvas.Unprocessable(field, "no node %q on this canvas", id)
}

// needEdge touches and returns edge id, or a FieldError on field when it does not exist.
func (t *tx) needEdge(field, id string) (*canvas.Edge, error) {
	if id == "" {
		return nil, canvas.Unprocessable(field, "is required: the id of an edge")
	}
	t.touch(edgeRef(id))
	if e, ok := t.getEdge(id); ok {
		return e, nil
	}
	if rev, ok := t.s.Tombstones[edgeRef(id)]; ok {
		return nil, canvas.Unprocessable(field, "edge %q was deleted at rev %d", id, rev)
	}
	return nil, canvas.Unprocessable(field, "no edge %q on this canvas", id)
}

func (t *tx) recordNode(id string) {
	if t.nodes == nil {
		t.nodes = make(map[string]*canvas.Node, 4)
	}
	if _, ok := t.nodes[id]; !ok {
		t.order = append(t.order, nodeRef(id))
	}
	t.touch(nodeRef(id))
}

func (t *tx) recordEdge(id string) {
	if t.edges == nil {
		t.edges = make(map[string]*canvas.Edge, 4)
	}
	if _, ok := t.edges[id]; !ok {
		t.order = append(t.order, edgeRef(id))
	}
	t.touch(edgeRef(id))
}

// editNode returns a private working copy of existing node id (Props shared:
// replace the map, never mutate it).
func (t *tx) editNode(id string) *canvas.Node {
	if n, ok := t.nodes[id]; ok && n != nil {
		return n
	}
	c := *t.s.Nodes[id]
	t.recordNode(id)
	t.nodes[id] = &c
	return &c
}

// editEdge returns a private working copy of existing edge id.
func (t *tx) editEdge(id string) *canvas.Edge {
	if e, ok := t.edges[id]; ok && e != nil {
		return e
	}
	c := *t.s.Edges[id]
	t.recordEdge(id)
	t.edges[id] = &c
	return &c
}

// addNode adds a new node.
func (t *tx) addNode(n *canvas.Node) {
	t.recordNode(n.ID)
	t.nodes[n.ID] = n
	if t.kids != nil && n.ParentID != "" {
		t.kids[n.ParentID] = insertSorted(t.kids[n.ParentID], n.ID)
	}
	t.markDirty(n.ParentID)
}

// addEdge adds a new edge.
func (t *tx) addEdge(e *canvas.Edge) {
	t.recordEdge(e.ID)
	t.edges[e.ID] = e
}

// deleteNode deletes one existing node (not its descendants).
func (t *tx) deleteNode(id string) {
	n, ok := t.getNode(id)
	if !ok {
		return
	}
	t.recordNode(id)
	t.nodes[id] = nil
	t.nodeDeleted = true
	if t.kids != nil && n.ParentID != "" {
		t.kids[n.ParentID] = removeSorted(t.kids[n.ParentID], id)
	}
	t.markDirty(n.ParentID)
}

// deleteTree deletes node id and its descendants.
func (t *tx) deleteTree(id string) {
	for _, d := range t.subtree(id) {
		t.deleteNode(d)
	}
}

// deleteEdge deletes one existing edge.
func (t *tx) deleteEdge(id string) {
	if _, ok := t.getEdge(id); !ok {
		return
	}
	t.recordEdge(id)
	t.edges[id] = nil
}

// setParent reparents working copy m.
func (t *tx) setParent(m *canvas.Node, parent string) {
	if m.ParentID == parent {
		return
	}
	if t.kids != nil {
		if m.ParentID != "" {
			t.kids[m.ParentID] = removeSorted(t.kids[m.ParentID], m.ID)
		}
		if parent != "" {
			t.kids[parent] = insertSorted(t.kids[parent], m.ID)
		}
	}
	t.markDirty(m.ParentID)
	m.ParentID = parent
	t.markDirty(parent)
}

func insertSorted(l []string, id string) []string {
	i := sort.SearchStrings(l, id)
	if i < len(l) && l[i] == id {
		return l
	}
	l = append(l, "")
	copy(l[i+1:], l[i:])
	l[i] = id
	return l
}

func removeSorted(l []string, id string) []string {
	i := sort.SearchStrings(l, id)
	if i < len(l) && l[i] == id {
		return append(l[:i], l[i+1:]...)
	}
	return l
}

// children returns the ids of the children of id, sorted. The first call
// scans the state once.
func (t *tx) children(id string) []string {
	if t.kids == nil {
		t.kids = make(map[string][]string)
		for nid, n := range t.s.Nodes {
			if w, ok := t.nodes[nid]; ok {
				if w == nil {
					continue
				}
				n = w
			}
			if n.ParentID != "" {
				t.kids[n.ParentID] = append(t.kids[n.ParentID], nid)
			}
		}
		for nid, w := range t.nodes {
			if _, old := t.s.Nodes[nid]; !old && w != nil && w.ParentID != "" {
				t.kids[w.ParentID] = append(t.kids[w.ParentID], nid)
			}
		}
		for _, l := range t.kids {
			sort.Strings(l)
		}
	}
	return t.kids[id]
}

// subtree returns id followed by its descendants (breadth first). Only
// groups and frames have children, so other nodes cost no scan.
func (t *tx) subtree(id string) []string {
	out := []string{id}
	n, ok := t.getNode(id)
	if !ok || !isContainer(n) {
		return out
	}
	seen := map[string]bool{id: true}
	for i := 0; i < len(out); i++ {
		n, ok := t.getNode(out[i])
		if !ok || !isContainer(n) {
			continue
		}
		for _, c := range t.children(out[i]) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// ancestors returns the parent chain of id, nearest first.
func (t *tx) ancestors(id string) []string {
	var out []string
	n, ok := t.getNode(id)
	limit := len(t.s.Nodes) + len(t.nodes) + 1
	for ok && n.ParentID != "" && len(out) < limit {
		out = append(out, n.ParentID)
		n, ok = t.getNode(n.ParentID)
	}
	return out
}

// markDirty schedules a group's bounds for recomputation.
func (t *tx) markDirty(id string) {
	if id == "" {
		return
	}
	if n, ok := t.getNode(id); !ok || n.Type != "group" {
		return
	}
	if t.dirty == nil {
		t.dirty = make(map[string]struct{}, 2)
	}
	t.dirty[id] = struct{}{}
}

// mintNodeID returns the next server-minted node id: "shape:<seed>-<n>".
func (t *tx) mintNodeID() string {
	for {
		id := "shape:" + t.cmd.Seed + "-" + strconv.Itoa(t.mintedNodes)
		t.mintedNodes++
		if _, ok := t.getNode(id); ok {
			continue
		}
		if _, ok := t.s.Tombstones[nodeRef(id)]; ok {
			continue
		}
		return id
	}
}

// mintEdgeID returns the next server-minted edge id: "edge:<seed>-<n>".
func (t *tx) mintEdgeID() string {
	for {
		id := "edge:" + t.cmd.Seed + "-" + strconv.Itoa(t.mintedEdges)
		t.mintedEdges++
		if _, ok := t.getEdge(id); ok {
			continue
		}
		if _, ok := t.s.Tombstones[edgeRef(id)]; ok {
			continue
		}
		return id
	}
}

// frontKeys returns m ascending index keys above every node's key. When the
// command commits as the state's next revision it needs no scan: every key
// the reducer makes at revision r is at most integerKey(r), so keys in
// (integerKey(r-1), integerKey(r)] are in front of everything.
func (t *tx) frontKeys(m int) ([]string, error) {
	r := t.cmd.Rev
	if !t.frontUsed && r > 0 && r == t.s.Rev+1 {
		t.frontUsed = true
		hi := integerKey(r)
		if m == 1 {
			return []string{hi}, nil
		}
		keys, err := KeysBetween(integerKey(r-1), hi, m-1)
		return append(keys, hi), err
	}
	top := ""
	t.eachNode(func(n *canvas.Node) {
		if n.Index > top && ValidIndexKey(n.Index) {
			top = n.Index
		}
	})
	return t.keysAbove(top, m)
}

// keysAbove returns m ascending keys above top (the greatest key, found by a
// scan), staying at or below integerKey(rev) when it can so that frontKeys's
// scan-free path stays valid.
func (t *tx) keysAbove(top string, m int) ([]string, error) {
	if r := t.cmd.Rev; r > 0 && r == t.s.Rev+1 {
		if hi := integerKey(r); top < hi {
			keys, err := KeysBetween(top, hi, m-1)
			return append(keys, hi), err
		}
	}
	return KeysBetween(top, "", m)
}

// eachNode calls fn for every current node, in no particular order.
func (t *tx) eachNode(fn func(n *canvas.Node)) {
	for id, n := range t.s.Nodes {
		if w, ok := t.nodes[id]; ok {
			if w == nil {
				continue
			}
			n = w
		}
		fn(n)
	}
	for id, w := range t.nodes {
		if _, old := t.s.Nodes[id]; !old && w != nil {
			fn(w)
		}
	}
}

// finish recomputes group bounds, deletes edges of deleted nodes, keeps
// the bound ends of edges on the nodes whose boxes changed, and returns the
// effective diff, and for each change the entity a put puts (nil for other
// changes).
func (t *tx) finish() ([]canvas.Change, []any, error) {
	if len(t.dirty) > 0 {
		t.recomputeGroups()
	}
	if t.nodeDeleted {
		t.deleteDanglingEdges()
	}
	t.keepEdgesBound()
	if t.badEdge != "" {
		return nil, nil, outOfRange("edge", t.badEdge)
	}
	if len(t.order) == 0 {
		return nil, nil, nil
	}
	changes := make([]canvas.Change, 0, len(t.order))
	values := make([]any, 0, len(t.order))
	for _, ref := range t.order {
		ch, v, ok, err := t.change(ref)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			changes = append(changes, ch)
			values = append(values, v)
		}
	}
	return changes, values, nil
}

// change is nodeChange or edgeChange, by ref's kind.
func (t *tx) change(ref canvas.Ref) (canvas.Change, any, bool, error) {
	if ref.Kind == canvas.KindNode {
		return t.nodeChange(ref.ID)
	}
	return t.edgeChange(ref.ID)
}

func (t *tx) nodeChange(id string) (canvas.Change, any, bool, error) {
	old, existed := t.s.Nodes[id]
	nw := t.nodes[id]
	switch {
	case nw == nil && !existed:
		return canvas.Change{}, nil, false, nil
	case nw == nil:
		return canvas.Change{Op: canvas.OpDelete, Kind: canvas.KindNode, ID: id}, nil, true, nil
	}
	if !finite(nw.X, nw.Y, nw.W, nw.H, nw.Rotation) {
		return canvas.Change{}, nil, false, outOfRange("node", id)
	}
	if !existed {
		v := *nw
		v.CreatedRev, v.UpdatedRev = t.cmd.Rev, t.cmd.Rev
		v.CreatedBy, v.UpdatedBy = t.cmd.Actor.ID, t.cmd.Actor.ID
		b, err := v.AppendJSON(make([]byte, 0, 256))
		if err != nil {
			return canvas.Change{}, nil, false, canvas.Unprocessable("args", "node %q cannot be encoded: %v", id, err)
		}
		return canvas.Change{Op: canvas.OpPut, Kind: canvas.KindNode, ID: id, Value: b}, &v, true, nil
	}
	p := nodeFields.diff(old, nw)
	if p == nil {
		return canvas.Change{}, nil, false, nil
	}
	return canvas.Change{Op: canvas.OpPatch, Kind: canvas.KindNode, ID: id, Patch: p}, nil, true, nil
}

func (t *tx) edgeChange(id string) (canvas.Change, any, bool, error) {
	old, existed := t.s.Edges[id]
	nw := t.edges[id]
	switch {
	case nw == nil && !existed:
		return canvas.Change{}, nil, false, nil
	case nw == nil:
		return canvas.Change{Op: canvas.OpDelete, Kind: canvas.KindEdge, ID: id}, nil, true, nil
	case !existed:
		v := *nw
		v.CreatedRev, v.UpdatedRev = t.cmd.Rev, t.cmd.Rev
		v.CreatedBy = t.cmd.Actor.ID
		b, err := v.AppendJSON(make([]byte, 0, 256))
		if err != nil {
			return canvas.Change{}, nil, false, canvas.Unprocessable("args", "edge %q cannot be encoded: %v", id, err)
		}
		return canvas.Change{Op: canvas.OpPut, Kind: canvas.KindEdge, ID: id, Value: b}, &v, true, nil
	}
	p := edgeFields.diff(old, nw)
	if p == nil {
		return canvas.Change{}, nil, false, nil
	}
	return canvas.Change{Op: canvas.OpPatch, Kind: canvas.KindEdge, ID: id, Patch: p}, nil, true, nil
}

// outOfRange is the error of a command whose result puts an entity's
// coordinates out of the finite numbers.
func outOfRange(kind, id string) error {
	return canvas.Unprocessable("args", "the result puts %s %q out of range (coordinates and sizes must stay finite numbers)", kind, id)
}

// recomputeGroups sets every dirty group (and its group ancestors) to the
// union of its children's bounds, deepest first; a group without children is
// deleted.
func (t *tx) recomputeGroups() {
	type item struct {
		id    string
		depth int
	}
	seen := make(map[string]bool, len(t.dirty))
	var list []item
	for id := range t.dirty {
		for _, g := range append([]string{id}, t.ancestors(id)...) {
			if seen[g] {
				continue
			}
			seen[g] = true
			if n, ok := t.getNode(g); ok && n.Type == "group" {
				list = append(list, item{g, len(t.ancestors(g))})
			}
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].depth != list[j].depth {
			return list[i].depth > list[j].depth
		}
		return list[i].id < list[j].id
	})
	for _, it := range list {
		n, ok := t.getNode(it.id)
		if !ok || n.Type != "group" {
			continue
		}
		var r rect
		have := false
		for _, c := range t.children(it.id) {
			cn, ok := t.getNode(c)
			if !ok {
				continue
			}
			if b := bounds(cn); have {
				r = r.union(b)
			} else {
				r, have = b, true
			}
		}
		if !have {
			t.deleteNode(it.id)
			continue
		}
		if n.X != r.minX || n.Y != r.minY || n.W != r.w() || n.H != r.h() || n.Rotation != 0 {
			m := t.editNode(it.id)
			m.X, m.Y, m.W, m.H, m.Rotation = r.minX, r.minY, r.w(), r.h(), 0
		}
	}
	t.dirty = nil
}

// deleteDanglingEdges deletes every edge whose from or to node this
// command deleted. It costs the deleted nodes' edges (the state's index)
// and the edges this command wrote.
func (t *tx) deleteDanglingEdges() {
	gone := func(id string) bool {
		n, ok := t.nodes[id]
		return ok && n == nil
	}
	var ids []string
	for _, ref := range t.order {
		if ref.Kind == canvas.KindNode && gone(ref.ID) {
			ids = append(ids, t.s.EdgesOf(ref.ID)...)
		}
	}
	for id, w := range t.edges {
		if w != nil && (gone(w.From) || gone(w.To)) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		if e, ok := t.getEdge(id); ok && (gone(e.From) || gone(e.To)) { // (this command may have rebound it)
			t.deleteEdge(id)
		}
	}
}

// selection validates a list of node ids (args.ids): non-empty, no
// duplicates, every node existing. All ids are touched, even on error.
func (t *tx) selection(ids []string) error {
	if len(ids) == 0 {
		return canvas.Unprocessable("args.ids", "must list at least one node id")
	}
	for _, id := range ids {
		if id != "" {
			t.touch(nodeRef(id))
		}
	}
	var seen map[string]int
	if len(ids) > 8 {
		seen = make(map[string]int, len(ids))
	}
	for i, id := range ids {
		if seen != nil {
			if j, dup := seen[id]; dup {
				return canvas.Unprocessable(fieldAt("args.ids", i), "duplicate id %q (also args.ids[%d])", id, j)
			}
			seen[id] = i
		} else {
			for j := 0; j < i; j++ {
				if ids[j] == id {
					return canvas.Unprocessable(fieldAt("args.ids", i), "duplicate id %q (also args.ids[%d])", id, j)
				}
			}
		}
		if _, ok := t.getNode(id); !ok {
			_, err := t.needNode(fieldAt("args.ids", i), id)
			return err
		}
	}
	return nil
}

// roots drops from ids every node that has an ancestor in ids (it moves
// with that ancestor), keeping the order.
func (t *tx) roots(ids []string) []string {
	if len(ids) == 1 {
		return ids
	}
	in := make(map[string]bool, len(ids))
	for _, id := range ids {
		in[id] = true
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		inside := false
		for _, a := range t.ancestors(id) {
			if in[a] {
				inside = true
				break
			}
		}
		if !inside {
			out = append(out, id)
		}
	}
	return out
}

// transformTrees applies f to each root and each of its descendants (once),
// and schedules the affected groups for recomputation.
func (t *tx) transformTrees(roots []string, f func(m *canvas.Node)) {
	for _, r := range roots {
		if n, ok := t.getNode(r); ok && !isContainer(n) { // no descendants: skip the subtree walk
			f(t.editNode(r))
			t.markDirty(n.ParentID)
			continue
		}
		for _, id := range t.subtree(r) {
			m := t.editNode(id)
			f(m)
			if m.Type == "group" {
				t.markDirty(id)
			}
		}
		if n, ok := t.getNode(r); ok {
			t.markDirty(n.ParentID)
		}
	}
}

// unionBounds returns the union of the page bounds of ids (all existing).
func (t *tx) unionBounds(ids []string) rect {
	var r rect
	for i, id := range ids {
		n, _ := t.getNode(id)
		if b := bounds(n); i == 0 {
			r = b
		} else {
			r = r.union(b)
		}
	}
	return r
}

func fieldAt(base string, i int) string { return fmt.Sprintf("%s[%d]", base, i) }
