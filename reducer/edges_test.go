package reducer

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

// edgePoints returns the page points of edge id of s.
func edgePoints(t testing.TB, s *canvas.State, id string) []pt {
	t.Helper()
	e, ok := s.Edges[id]
	if !ok {
		t.Fatalf("no edge %q", id)
	}
	pts, ok := pointsOf(e.Props)
	if !ok {
		t.Fatalf("edge %q has no points: %s", id, jsonOf(e.Props))
	}
	return pts
}

func TestEdges(t *testing.T) {
	h := newRH(t)
	h.box("a", 0, 0, 100, 100)
	h.box("b", 300, 0, 100, 100)
	dec := h.do("create_edge", `{"from":"a","to":"b","props":{"text":"x"}}`)
	id := "edge:s3-0"
	if !reflect.DeepEqual(dec.CreatedIDs, []string{id}) {
		t.Fatalf("created %v", dec.CreatedIDs)
	}
	if !reflect.DeepEqual(dec.Touched, []canvas.Ref{nodeRef("a"), nodeRef("b"), edgeRef(id)}) {
		t.Fatalf("touched %v", dec.Touched)
	}
	// Without points the server computes them: from the middle of a
	// towards the middle of b, each end on its node's outline.
	e := h.s.Edges[id]
	if jsonOf(e.Props) != `{"points":[{"x":100,"y":50},{"x":300,"y":50}],"text":"x"}` || e.From != "a" || e.To != "b" || e.Type != "arrow" ||
		e.CreatedBy != "user-1" || e.CreatedRev != 3 || e.UpdatedRev != 3 {
		t.Fatalf("edge %+v props %s", *e, jsonOf(e.Props))
	}
	dec = h.do("update_edge", `{"id":"`+id+`","props":{"text":null,"meta":{"w":2}}}`)
	if jsonOf(dec.Changes[0].Patch) != `{"props":{"meta":{"w":2},"text":null}}` {
		t.Fatalf("patch %s", jsonOf(dec.Changes[0].Patch))
	}
	h.do("delete_edge", `{"id":"`+id+`"}`)
	if h.s.Tombstones[edgeRef(id)] != 5 {
		t.Fatal("no tombstone")
	}
	// An ellipse's end lies on the ellipse; a side's at its middle.
	h.do("create_shape", `{"id":"o","type":"geo","x":0,"y":300,"w":100,"h":60,"props":{"geo":"ellipse"}}`)
	h.do("create_edge", `{"id":"oe","from":"a","to":"o","props":{"fromSide":"right"}}`)
	if got := edgePoints(t, h.s, "oe"); got[0] != (pt{100, 50}) || !closeTo(got[1], pt{50, 300}) {
		t.Fatalf("side and ellipse ends: %v", got)
	}
	// An edge from a node to itself.
	h.do("create_edge", `{"id":"self","from":"a","to":"a"}`)
	if got := edgePoints(t, h.s, "self"); !slices.Equal(got, []pt{{100, 50}, {50, 0}}) {
		t.Fatalf("self edge: %v", got)
	}
	// An elbow edge is routed: horizontal and vertical segments.
	h.do("create_edge", `{"id":"el","from":"a","to":"o","props":{"routing":"elbow"}}`)
	if got := edgePoints(t, h.s, "el"); !slices.Equal(got, []pt{{50, 100}, {50, 300}}) {
		t.Fatalf("elbow edge: %v", got)
	}
	h.do("create_edge", `{"id":"el2","from":"b","to":"o","props":{"routing":"elbow"}}`)
	if got := edgePoints(t, h.s, "el2"); !slices.Equal(got, []pt{{300, 50}, {200, 50}, {200, 330}, {100, 330}}) {
		t.Fatalf("elbow edge with bends: %v", got)
	}
	checkInvariants(t, h.s)
}

// TestEdgeEnds: free ends stay where they are; a bound end given on or
// near its node stays as sent, one far from it moves onto its outline;
// update_edge binds and frees ends.
func TestEdgeEnds(t *testing.T) {
	h := newRH(t)
	h.box("a", 0, 0, 100, 100)
	h.box("b", 300, 0, 100, 100)
	h.do("create_edge", `{"id":"free","props":{"points":[{"x":-5,"y":7.25},{"x":50,"y":500}]}}`)
	h.do("create_edge", `{"id":"half","from":"a","props":{"points":[{"x":104,"y":50},{"x":200,"y":300}]}}`)
	h.do("create_edge", `{"id":"far","from":"a","to":"b","props":{"points":[{"x":-500,"y":-500},{"x":200,"y":50},{"x":1000,"y":1000}]}}`)
	if got := jsonOf(h.s.Edges["free"].Props["points"]); got != `[{"x":-5,"y":7.25},{"x":50,"y":500}]` {
		t.Fatalf("free edge: %s", got)
	}
	if got := jsonOf(h.s.Edges["half"].Props["points"]); got != `[{"x":104,"y":50},{"x":200,"y":300}]` {
		t.Fatalf("an end near its node moved: %s", got)
	}
	if got := edgePoints(t, h.s, "far"); !slices.Equal(got, []pt{{100, 50}, {200, 50}, {300, 50}}) {
		t.Fatalf("ends far from their nodes: %v", got)
	}
	h.do("move", `{"ids":["a","b"],"dx":10,"dy":0}`)
	if got := edgePoints(t, h.s, "free"); !slices.Equal(got, []pt{{-5, 7.25}, {50, 500}}) {
		t.Fatalf("a free edge followed the nodes: %v", got)
	}
	if got := edgePoints(t, h.s, "half"); !slices.Equal(got, []pt{{114, 50}, {200, 300}}) {
		t.Fatalf("half-bound edge: %v", got)
	}
	// Binding a free end puts it on the node, facing its neighbour.
	h.do("update_edge", `{"id":"half","to":"b"}`)
	if got := edgePoints(t, h.s, "half"); !slices.Equal(got, []pt{{114, 50}, {310, 50}}) || h.s.Edges["half"].To != "b" {
		t.Fatalf("bound to b: %v", got)
	}
	// Freeing an end leaves it where it is.
	h.do("update_edge", `{"id":"half","from":""}`)
	if got := edgePoints(t, h.s, "half"); h.s.Edges["half"].From != "" || got[0] != (pt{114, 50}) {
		t.Fatalf("freed: %+v %v", h.s.Edges["half"], got)
	}
	h.do("move", `{"ids":["a"],"dx":100,"dy":0}`)
	if got := edgePoints(t, h.s, "half"); got[0] != (pt{114, 50}) {
		t.Fatalf("a freed end followed its old node: %v", got)
	}
	// points: null computes the path again.
	h.do("update_edge", `{"id":"far","props":{"points":null}}`)
	if got := edgePoints(t, h.s, "far"); !slices.Equal(got, []pt{{210, 50}, {310, 50}}) {
		t.Fatalf("recomputed: %v", got)
	}
	// Deleting a node deletes its edges, and only those.
	h.do("delete_shape", `{"ids":["b"]}`)
	if _, ok := h.s.Edges["far"]; ok {
		t.Fatal("the edge of a deleted node is still there")
	}
	if _, ok := h.s.Edges["half"]; ok {
		t.Fatal("the edge bound to a deleted node by its to end is still there")
	}
	if _, ok := h.s.Edges["free"]; !ok {
		t.Fatal("a free edge went with a node")
	}
	checkInvariants(t, h.s)
}

// edgeWorld builds the canvas of the per-verb table: boxes, a frame with a
// child, a group, and edges of every routing between them.
func edgeWorld(t *testing.T) *rh {
	h := newRH(t)
	h.box("a", 0, 0, 100, 80)
	h.box("b", 300, 200, 120, 60)
	h.box("c", 600, 0, 50, 50)
	h.do("create_shape", `{"id":"f","type":"frame","x":1000,"y":1000,"w":400,"h":400}`)
	h.do("create_shape", `{"id":"k","type":"geo","x":1100,"y":1100,"w":40,"h":40,"parent_id":"f","props":{"geo":"ellipse"}}`)
	h.box("p", 0, 600, 50, 50)
	h.box("q", 200, 700, 50, 50)
	h.do("group", `{"ids":["p","q"],"group_id":"g"}`)
	h.do("create_edge", `{"id":"ab","from":"a","to":"b"}`)
	h.do("create_edge", `{"id":"ab-curved","from":"a","to":"b","props":{"routing":"curved","points":[{"x":100,"y":40},{"x":250,"y":0},{"x":300,"y":230}]}}`)
	h.do("create_edge", `{"id":"bc-elbow","from":"b","to":"c","props":{"routing":"elbow"}}`)
	h.do("create_edge", `{"id":"ka","from":"k","to":"a","props":{"toSide":"bottom"}}`)
	h.do("create_edge", `{"id":"pq","from":"p","to":"q"}`)
	h.do("create_edge", `{"id":"c-free","from":"c","props":{"points":[{"x":625,"y":50},{"x":625,"y":300}]}}`)
	h.do("create_edge", `{"id":"g-a","from":"g","to":"a"}`)
	checkInvariants(t, h.s)
	return h
}

// TestEdgeEndsFollowEveryVerb: for every verb that changes a node's box,
// each bound end of the node's edges keeps its place relative to the node
// (the same share of the box, the same offset outside it), in the same
// commit; ends of unchanged nodes stay.
func TestEdgeEndsFollowEveryVerb(t *testing.T) {
	for _, c := range []struct {
		name, typ, args string
		moved           []string // nodes whose box must change
	}{
		{"move", "move", `{"ids":["a"],"dx":15,"dy":-7}`, []string{"a"}},
		{"move absolute", "move", `{"id":"b","x":500,"y":500}`, []string{"b"}},
		{"resize scale", "resize", `{"ids":["a","c"],"scale_x":2,"scale_y":0.5}`, []string{"a", "c"}},
		{"resize size", "resize", `{"id":"b","w":30,"h":300}`, []string{"b"}},
		{"rotate", "rotate", `{"ids":["a"],"degrees":33}`, []string{"a"}},
		{"rotate two", "rotate", `{"ids":["a","b"],"degrees":90}`, []string{"a", "b"}},
		{"align", "align", `{"ids":["a","b","c"],"alignment":"bottom"}`, []string{"a", "c"}},
		{"distribute", "distribute", `{"ids":["a","b","c","k"],"direction":"vertical"}`, []string{"a", "b"}},
		{"stack", "stack", `{"ids":["a","b","c"],"direction":"horizontal","gap":5}`, []string{"b", "c"}},
		{"update_shape", "update_shape", `{"id":"a","x":-40,"w":10,"rotation":1}`, []string{"a"}},
		{"update_node", "update_node", `{"id":"c","transform":{"y":90,"h":5}}`, []string{"c"}},
		{"frame moves its child", "move", `{"ids":["f"],"dx":-300,"dy":10}`, []string{"f", "k"}},
		{"frame turns its child", "update_shape", `{"id":"f","rotation":0.5}`, []string{"f", "k"}},
		{"group moves its children", "update_shape", `{"id":"g","x":50,"y":650}`, []string{"g", "p", "q"}},
		{"group scales its children", "resize", `{"id":"g","w":500}`, []string{"g", "p", "q"}},
		{"a child moves its group", "move", `{"ids":["q"],"dx":100,"dy":100}`, []string{"g", "q"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := edgeWorld(t)
			before := h.s.Clone()
			dec := h.do(c.typ, c.args)
			for _, id := range c.moved {
				if !boxChanged(before.Nodes[id], h.s.Nodes[id]) {
					t.Fatalf("node %q did not move", id)
				}
			}
			changedEdges := map[string]bool{}
			for _, ch := range dec.Changes {
				if ch.Kind == canvas.KindEdge {
					changedEdges[ch.ID] = true
				}
			}
			for id, e := range before.Edges {
				old, _ := pointsOf(e.Props)
				now := edgePoints(t, h.s, id)
				for i, end := range [2]string{e.From, e.To} {
					k, p := 0, old[0]
					side := propString(e.Props, fromSideProp)
					if i == 1 {
						k, p, side = len(now)-1, old[len(old)-1], propString(e.Props, toSideProp)
					}
					if end == "" || !boxChanged(before.Nodes[end], h.s.Nodes[end]) {
						if now[k] != p {
							t.Errorf("edge %s: end %d moved from %v to %v, its node did not", id, i, p, now[k])
						}
						continue
					}
					want := anchorOf(before.Nodes[end], p).at(h.s.Nodes[end])
					if side != "" {
						want = sideMiddle(h.s.Nodes[end], side)
					}
					if !closeTo(now[k], want) {
						t.Errorf("edge %s: end %d at %v, want %v (node %s %+v → %+v)", id, i, now[k], want, end, geoOf(before.Nodes[end]), geoOf(h.s.Nodes[end]))
					}
					if !changedEdges[id] {
						t.Errorf("edge %s moved without a change in the commit", id)
					}
				}
			}
			checkInvariants(t, h.s)
			// Undo puts nodes and edges back exactly.
			h.do("undo", `{}`)
			for id, e := range before.Edges {
				if got, want := jsonOf(h.s.Edges[id].Props), jsonOf(e.Props); got != want {
					t.Errorf("after undo, edge %s: %s, want %s", id, got, want)
				}
			}
			checkInvariants(t, h.s)
		})
	}
}

// TestEdgeMiddlePoints: a straight or curved edge's middle points stay
// when one end's node moves and move along when both nodes move together;
// an elbow edge is routed again.
func TestEdgeMiddlePoints(t *testing.T) {
	h := edgeWorld(t)
	mid := func() pt { return edgePoints(t, h.s, "ab-curved")[1] }
	h.do("move", `{"ids":["a"],"dx":10,"dy":10}`)
	if mid() != (pt{250, 0}) {
		t.Fatalf("one node moved: middle %v", mid())
	}
	h.do("move", `{"ids":["a","b"],"dx":-20,"dy":30}`)
	if mid() != (pt{230, 30}) {
		t.Fatalf("both nodes moved together: middle %v", mid())
	}
	h.do("resize", `{"ids":["a","b"],"scale_x":2,"scale_y":2}`)
	if mid() != (pt{230, 30}) {
		t.Fatalf("both nodes resized: middle %v", mid())
	}
	before := edgePoints(t, h.s, "bc-elbow")
	h.do("move", `{"ids":["c"],"dx":0,"dy":700}`)
	after := edgePoints(t, h.s, "bc-elbow")
	if slices.Equal(before, after) || len(after) < 2 {
		t.Fatalf("elbow edge: %v → %v", before, after)
	}
	checkInvariants(t, h.s)
}

// TestDeleteLeavesNoDanglingEdge: deleting nodes by any verb (a frame with
// its child, a group, a group's last child) deletes their edges in the same
// commit.
func TestDeleteLeavesNoDanglingEdge(t *testing.T) {
	for _, c := range []struct{ typ, args, gone string }{
		{"delete_node", `{"id":"f"}`, "ka"},
		{"delete_shape", `{"ids":["g"]}`, "pq g-a"},
		{"delete_shape", `{"ids":["p","q"]}`, "pq g-a"},
		{"delete_node", `{"id":"c"}`, "bc-elbow c-free"},
	} {
		h := edgeWorld(t)
		dec := h.do(c.typ, c.args)
		for _, id := range strings.Fields(c.gone) {
			if _, ok := h.s.Edges[id]; ok {
				t.Errorf("%s %s: edge %s is still there", c.typ, c.args, id)
			}
			if !slices.ContainsFunc(dec.Changes, func(ch canvas.Change) bool {
				return ch.Kind == canvas.KindEdge && ch.ID == id && ch.Op == canvas.OpDelete
			}) {
				t.Errorf("%s %s: the commit does not delete edge %s", c.typ, c.args, id)
			}
		}
		checkInvariants(t, h.s)
	}
}

// TestRandomCommandsKeepEdgesBound is the property test of bound ends: after
// any sequence of random commands (those that change boxes, delete, group,
// bind and free ends, undo and redo), no edge names a missing node, every
// bound end lies on or near its node's box (checkInvariants), and replaying
// the log gives the live state.
func TestRandomCommandsKeepEdgesBound(t *testing.T) {
	trials, steps := 150, 40
	if testing.Short() {
		trials = 30
	}
	for trial := range trials {
		rng := rand.New(rand.NewSource(int64(trial)))
		h := edgeWorld(t)
		var script []string
		num := func(lo, hi float64) string { return fmt.Sprintf("%.3g", lo+rng.Float64()*(hi-lo)) }
		for range steps {
			var ids []string
			for id := range h.s.Nodes {
				ids = append(ids, id)
			}
			if len(ids) == 0 {
				break
			}
			slices.Sort(ids)
			pick := func() string { return ids[rng.Intn(len(ids))] }
			some := func() string {
				n := 1 + rng.Intn(min(3, len(ids)))
				perm := rng.Perm(len(ids))[:n]
				q := make([]string, n)
				for i, k := range perm {
					q[i] = fmt.Sprintf("%q", ids[k])
				}
				return "[" + strings.Join(q, ",") + "]"
			}
			var l string
			switch rng.Intn(16) {
			case 0:
				l = fmt.Sprintf(`move {"ids":%s,"dx":%s,"dy":%s}`, some(), num(-300, 300), num(-300, 300))
			case 1:
				l = fmt.Sprintf(`resize {"ids":%s,"scale_x":%s,"scale_y":%s}`, some(), num(0.1, 3), num(0.1, 3))
			case 2:
				l = fmt.Sprintf(`rotate {"ids":%s,"degrees":%s}`, some(), num(-180, 180))
			case 3:
				l = fmt.Sprintf(`update_shape {"id":%q,"x":%s,"w":%s,"rotation":%s}`, pick(), num(-500, 500), num(0, 300), num(0, 6))
			case 4:
				l = fmt.Sprintf(`align {"ids":%s,"alignment":"center-vertical"}`, some())
			case 5:
				l = fmt.Sprintf(`stack {"ids":%s,"direction":"vertical","gap":%s}`, some(), num(-10, 40))
			case 6:
				l = fmt.Sprintf(`create_edge {"from":%q,"to":%q,"props":{"routing":%q}}`, pick(), pick(), []string{"straight", "curved", "elbow"}[rng.Intn(3)])
			case 7:
				l = fmt.Sprintf(`create_edge {"from":%q,"props":{"points":[{"x":%s,"y":%s},{"x":%s,"y":%s}],"toSide":"left"}}`, pick(), num(-900, 900), num(-900, 900), num(-900, 900), num(-900, 900))
			case 8:
				if e := h.s.SortedEdges(); len(e) > 0 {
					l = fmt.Sprintf(`update_edge {"id":%q,"to":%q,"props":{"fromSide":%q}}`, e[rng.Intn(len(e))].ID, pick(), []string{"top", "right", "bottom", "left"}[rng.Intn(4)])
				}
			case 9:
				if e := h.s.SortedEdges(); len(e) > 0 {
					l = fmt.Sprintf(`update_edge {"id":%q,"from":""}`, e[rng.Intn(len(e))].ID)
				}
			case 10:
				if rng.Intn(3) == 0 {
					l = fmt.Sprintf(`delete_shape {"ids":%s}`, some())
				}
			case 11:
				l = fmt.Sprintf(`group {"ids":%s}`, some())
			case 12:
				l = fmt.Sprintf(`ungroup {"id":%q}`, pick())
			case 13:
				l = fmt.Sprintf(`update_node {"id":%q,"parent_id":"f"}`, pick())
			case 14:
				l = `undo {}`
			default:
				l = `redo {}`
			}
			if l == "" {
				continue
			}
			typ, args := splitLine(l)
			cmd, err := withRevert(rhCommand(h.s, typ, args), h.log)
			if err == nil {
				var dec Decision
				if dec, err = Decide(h.s, cmd); err == nil {
					c := jsonRoundTrip(t, commitOf(cmd, dec))
					if err := Apply(h.s, &c); err != nil {
						t.Fatalf("trial %d: apply %s: %v", trial, l, err)
					}
					h.log = append(h.log, c)
					script = append(script, l)
				}
			}
			if err != nil {
				checkDecideError(t, err)
				continue
			}
			if msg := invariantError(t, h.s); msg != "" {
				t.Fatalf("trial %d: %s\nafter:\n  %s", trial, msg, strings.Join(script, "\n  "))
			}
		}
		r, err := Replay(h.log)
		if err != nil {
			t.Fatalf("trial %d: replay: %v", trial, err)
		}
		if !reflect.DeepEqual(r, h.s) {
			t.Fatalf("trial %d: replay differs from the live state after:\n  %s", trial, strings.Join(script, "\n  "))
		}
	}
}

// The anchor of an end keeps its offset outside the box in page units, so
// scaling a node up does not carry an end away from it.
func TestAnchorKeepsTheGap(t *testing.T) {
	n := &canvas.Node{X: 0, Y: 0, W: 100, H: 100}
	a := anchorOf(n, pt{106, 50})
	big := &canvas.Node{X: 0, Y: 0, W: 1000, H: 1000, Rotation: math.Pi / 2}
	if got := a.at(big); !closeTo(got, pt{-500, 1006}) {
		t.Fatalf("end on the scaled, turned node: %v", got)
	}
}
