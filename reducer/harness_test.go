package reducer

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// rh is a test harness: a live state and its log, driven through Decide and Apply.
type rh struct {
	t   testing.TB
	s   *canvas.State
	log []canvas.Commit
}

func newRH(t testing.TB) *rh { return &rh{t: t, s: canvas.NewState()} }

func rhCommand(s *canvas.State, typ, args string) canvas.Command {
	rev := s.Rev + 1
	if args == "" {
		args = "{}" // as canvas.Envelope.Validate makes it
	}
	return canvas.Command{CanvasID: "c1", ID: fmt.Sprintf("cmd%d", rev), Type: typ, Args: json.RawMessage(args),
		Actor: canvas.Actor{ID: "user-1", Type: canvas.ActorHuman}, Rev: rev, BaseRev: s.Rev,
		TS: time.Unix(1700000000, 0).UTC(), Seed: fmt.Sprintf("s%d", rev)}
}

// try decides a command; on success it applies the commit and logs it.
// It checks that Decide left the state untouched either way.
func (h *rh) try(typ, args string) (Decision, error) {
	h.t.Helper()
	before := h.s.Clone()
	cmd, err := withRevert(rhCommand(h.s, typ, args), h.log) // what the engine reads from the log
	if err != nil {
		checkDecideError(h.t, err)
		return Decision{}, err
	}
	dec, err := Decide(h.s, cmd)
	if !reflect.DeepEqual(before, h.s) {
		h.t.Fatalf("Decide(%s %s) modified its input state", typ, args)
	}
	if err != nil {
		checkDecideError(h.t, err)
		return dec, err
	}
	c := canvas.Commit{CanvasID: "c1", EventID: fmt.Sprintf("%d-x", cmd.Rev), Rev: cmd.Rev, CmdID: cmd.ID,
		Type: typ, Args: cmd.Args, ActorID: cmd.Actor.ID, ActorType: cmd.Actor.Type, TS: cmd.TS, Changes: dec.Changes}
	if err := Apply(h.s, &c); err != nil {
		h.t.Fatalf("Apply(%s %s): %v", typ, args, err)
	}
	h.log = append(h.log, c)
	return dec, nil
}

func (h *rh) do(typ, args string) Decision {
	h.t.Helper()
	dec, err := h.try(typ, args)
	if err != nil {
		h.t.Fatalf("%s %s: %v", typ, args, err)
	}
	return dec
}

func (h *rh) node(id string) *canvas.Node {
	h.t.Helper()
	n, ok := h.s.Nodes[id]
	if !ok {
		h.t.Fatalf("no node %q", id)
	}
	return n
}

// geo is a node's geometry for compact comparisons.
type geo struct{ X, Y, W, H, R float64 }

func geoOf(n *canvas.Node) geo { return geo{n.X, n.Y, n.W, n.H, n.Rotation} }

func (h *rh) geo(id string) geo { return geoOf(h.node(id)) }

// box creates a geo node with an explicit id and geometry.
func (h *rh) box(id string, x, y, w, hh float64) {
	h.t.Helper()
	h.do("create_shape", fmt.Sprintf(`{"id":%q,"type":"geo","x":%v,"y":%v,"w":%v,"h":%v}`, id, x, y, w, hh))
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// checkInvariants asserts the structural invariants every reducer-made state keeps.
func checkInvariants(t testing.TB, s *canvas.State) {
	t.Helper()
	kids := map[string][]*canvas.Node{}
	keys := map[string]string{}
	for id, n := range s.Nodes {
		if n.ID != id {
			t.Fatalf("node key %q holds id %q", id, n.ID)
		}
		if !ValidIndexKey(n.Index) {
			t.Fatalf("node %q has invalid index %q", id, n.Index)
		}
		if other, dup := keys[n.Index]; dup {
			t.Fatalf("nodes %q and %q share index %q", id, other, n.Index)
		}
		keys[n.Index] = id
		// The premise of tx.frontKeys's scan-free path.
		if s.Rev > 0 && n.Index > integerKey(s.Rev) {
			t.Fatalf("node %q has index %q above integerKey(%d) = %q", id, n.Index, s.Rev, integerKey(s.Rev))
		}
		if !finite(n.X, n.Y, n.W, n.H, n.Rotation) || n.W < 0 || n.H < 0 {
			t.Fatalf("node %q has bad geometry %+v", id, geoOf(n))
		}
		if n.Props == nil {
			t.Fatalf("node %q has nil props", id)
		}
		if n.ParentID != "" {
			p, ok := s.Nodes[n.ParentID]
			if !ok || !isContainer(p) {
				t.Fatalf("node %q has parent %q that is missing or not a container", id, n.ParentID)
			}
			kids[n.ParentID] = append(kids[n.ParentID], n)
		}
		if _, ok := s.Tombstones[nodeRef(id)]; ok {
			t.Fatalf("live node %q has a tombstone", id)
		}
	}
	for id, n := range s.Nodes { // no parent chain loops
		steps := 0
		for p := n; p.ParentID != ""; p = s.Nodes[p.ParentID] {
			if steps++; steps > len(s.Nodes) || p.ParentID == id {
				t.Fatalf("node %q is its own ancestor (parent chain %q → %q ...)", id, id, n.ParentID)
			}
		}
	}
	for id, n := range s.Nodes {
		if n.Type != "group" {
			continue
		}
		if len(kids[id]) == 0 {
			t.Fatalf("group %q has no children", id)
		}
		r := bounds(kids[id][0])
		for _, k := range kids[id][1:] {
			r = r.union(bounds(k))
		}
		if n.X != r.minX || n.Y != r.minY || n.W != r.w() || n.H != r.h() || n.Rotation != 0 {
			t.Fatalf("group %q geometry %+v, children's union %+v", id, geoOf(n), r)
		}
	}
	for id, n := range s.Nodes {
		if !canvas.ValidNodeType(n.Type) {
			t.Fatalf("node %q has type %q, not a model 2 kind", id, n.Type)
		}
		if err := canvas.ValidateProps(n.Type, n.Props, "props"); err != nil {
			t.Fatalf("node %q: props do not validate: %v", id, err)
		}
	}
	for id, e := range s.Edges {
		checkEdge(t, s, id, e)
	}
	if dec, err := MigrateModel(s, canvas.Command{Rev: s.Rev + 1, Seed: "check"}); err != nil || len(dec.Changes) > 0 {
		t.Fatalf("a model 2 state needs a migration: %v %s", err, changeSummary(dec.Changes))
	}
	if s.Bound != nil {
		want := &canvas.State{Edges: s.Edges}
		want.IndexEdges()
		if !reflect.DeepEqual(want.Bound, s.Bound) {
			t.Fatalf("the edge index is %v; the edges make it %v", s.Bound, want.Bound)
		}
	}
}

// checkEdge checks one edge of s: its ends name existing nodes or are
// free, its props validate, and its path is what the model promises: every
// bound end on or near its node's box (at the middle of fromSide/toSide
// when named), an elbow path made of horizontal and vertical segments.
func checkEdge(t testing.TB, s *canvas.State, id string, e *canvas.Edge) {
	t.Helper()
	if e.ID != id {
		t.Fatalf("edge key %q holds id %q", id, e.ID)
	}
	if _, ok := s.Tombstones[edgeRef(id)]; ok {
		t.Fatalf("live edge %q has a tombstone", id)
	}
	if err := canvas.ValidateProps(canvas.EdgeKind, e.Props, "props"); err != nil {
		t.Fatalf("edge %q: props do not validate: %v", id, err)
	}
	pts, ok := pointsOf(e.Props)
	if !ok {
		t.Fatalf("edge %q has no points: %s", id, jsonOf(e.Props))
	}
	ends := [2]struct {
		node, side string
		p          pt
	}{{e.From, propString(e.Props, fromSideProp), pts[0]}, {e.To, propString(e.Props, toSideProp), pts[len(pts)-1]}}
	for _, end := range ends {
		if end.node == "" {
			continue
		}
		n, ok := s.Nodes[end.node]
		if !ok {
			t.Fatalf("edge %q names the missing node %q", id, end.node)
		}
		if end.side != "" {
			if m := sideMiddle(n, end.side); !closeTo(m, end.p) {
				t.Fatalf("edge %q: its end %v is not at the middle %v of the %s side of %q", id, end.p, m, end.side, end.node)
			}
			continue
		}
		if a := anchorOf(n, end.p); math.Hypot(a.ox, a.oy) > edgeNearMargin+1e-6*(1+math.Abs(end.p.x)+math.Abs(end.p.y)) {
			t.Fatalf("edge %q: its end %v is %g from the box of %q %+v", id, end.p, math.Hypot(a.ox, a.oy), end.node, geoOf(n))
		}
	}
	if propString(e.Props, routingProp) == "elbow" {
		for i := 1; i < len(pts); i++ {
			if !closeTo(pt{pts[i].x, 0}, pt{pts[i-1].x, 0}) && !closeTo(pt{0, pts[i].y}, pt{0, pts[i-1].y}) {
				t.Fatalf("elbow edge %q has a slanted segment %v → %v", id, pts[i-1], pts[i])
			}
		}
	}
}

// closeTo reports whether a and b are the same point up to rounding.
func closeTo(a, b pt) bool {
	tol := 1e-5 * (1 + math.Abs(a.x) + math.Abs(a.y))
	return math.Abs(a.x-b.x) <= tol && math.Abs(a.y-b.y) <= tol
}

// zOrder returns node ids in z-order.
func zOrder(s *canvas.State) string {
	var ids []string
	for _, n := range s.SortedNodes() {
		ids = append(ids, n.ID)
	}
	return strings.Join(ids, " ")
}

func changeSummary(chs []canvas.Change) string {
	var out []string
	for _, c := range chs {
		s := string(c.Op) + " " + string(c.Kind) + " " + c.ID
		if c.Op == canvas.OpPatch {
			var ks []string
			for k := range c.Patch {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			s += " " + strings.Join(ks, ",")
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}
