package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// Arrows in the web UI, driven as a person does (pointer and keyboard).

// arrowsOnPage lists the ids of the arrow elements p shows.
func arrowsOnPage(p *uiPage) []string {
	p.t.Helper()
	var ids []string
	p.eval(`canvasd.view.ex.getSceneElements().filter(el => el.type === 'arrow').map(el => el.id)`, &ids)
	return ids
}

// TestWebUIArrowHalfBoundDeleted (issue 32.1): an arrow drawn from empty
// space into a shape (one end bound), selected and deleted, is deleted on
// the server: after a reload it is gone, for this page and for another.
func TestWebUIArrowHalfBoundDeleted(t *testing.T) {
	c := openCanvasUI(t, "ui-arrow-half", []map[string]any{
		{"id": "s:box", "type": "geo", "x": 600, "y": 250, "w": 160, "h": 100, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
	})
	p := c.p
	p.tool("arrow")
	p.drag(400, 300, 680, 300) // from empty space into the middle of the box
	var id string
	for pl := newPoller(20*time.Second, 50*time.Millisecond); id == ""; pl.wait() {
		p.eval(`(() => { const a = canvasd.view.ex.getSceneElements().find(el => el.type === 'arrow');
			return a && (canvasd.model.nodes.has(a.id) || canvasd.model.edges.has(a.id)) && !canvasd.view.ex.getAppState().newElement ? a.id : ''; })()`, &id)
		if id == "" && pl.expired() {
			t.Fatalf("the drawn arrow never reached the server; the page: %s", p.state())
		}
	}
	var bound bool
	p.eval(`(() => { const a = canvasd.view.ex.getSceneElements().find(el => el.id === '`+id+`'); return !a.startBinding && a.endBinding?.elementId === 's:box'; })()`, &bound)
	if !bound {
		t.Fatalf("the arrow is not bound at its end only: %s", p.state())
	}
	// Selected as a person selects it: Escape, then a click on its free half.
	p.do(chromedp.KeyEvent(kb.Escape))
	p.click(480, 300)
	p.poll("the arrow selected", `canvasd.view.ex.getAppState().selectedElementIds['`+id+`'] === true`)
	p.do(chromedp.KeyEvent(kb.Delete))
	p.poll("the arrow gone from the page", `!canvasd.view.ex.getSceneElements().some(el => el.id === '`+id+`')`)
	pl := newPoller(20*time.Second, 50*time.Millisecond)
	for {
		s := c.e.snapshot(c.cid)["state"].(map[string]any)
		n := 0
		for _, k := range []string{"nodes", "edges"} {
			l, _ := s[k].([]any)
			for _, x := range l {
				if x.(map[string]any)["id"] == id {
					n++
				}
			}
		}
		if n == 0 {
			break
		}
		if pl.expired() {
			t.Fatalf("the deleted arrow %s is still on the server; the page: %s", id, p.state())
		}
		pl.wait()
	}
	p.do(chromedp.Reload())
	c.live(p)
	if a := arrowsOnPage(p); len(a) != 0 {
		t.Errorf("after a reload the page shows arrows %v", a)
	}
	if a := arrowsOnPage(c.observer()); len(a) != 0 {
		t.Errorf("another page shows arrows %v", a)
	}
}

// endGapJS gives how far outside the box of element shapeID (turned about
// its centre) an end ("start" or "end") of arrow element arrowID lies on
// the page that evaluates it: 0 on its outline or inside it (an end a
// person drops inside a shape stays there, bound); -1 when either element
// is not on the page.
const endGapJS = `((arrowID, shapeID, which) => {
	const els = new Map(canvasd.view.ex.getSceneElements().map(el => [el.id, el]));
	const a = els.get(arrowID), s = els.get(shapeID);
	if (!a || !s) return -1;
	const xs = a.points.map(q => q[0]), ys = a.points.map(q => q[1]);
	const mx = (Math.min(...xs) + Math.max(...xs)) / 2, my = (Math.min(...ys) + Math.max(...ys)) / 2;
	const q = which === 'start' ? a.points[0] : a.points[a.points.length - 1];
	const t = (x, y, r) => [x * Math.cos(r) - y * Math.sin(r), x * Math.sin(r) + y * Math.cos(r)];
	const [px, py] = t(q[0] - mx, q[1] - my, a.angle || 0).map((v, i) => v + [a.x + mx, a.y + my][i]);
	const [lx, ly] = t(px - (s.x + s.width / 2), py - (s.y + s.height / 2), -(s.angle || 0));
	const dx = Math.abs(lx) - s.width / 2, dy = Math.abs(ly) - s.height / 2;
	return Math.hypot(Math.max(dx, 0), Math.max(dy, 0));
})`

// maxEndGap is how far outside its shape a bound end may be drawn
// (Excalidraw stops an arrow a few pixels short of the shape).
const maxEndGap = 12.0

// waitAttached waits until p draws arrow element arrowID with its start at
// element from and its end at to (an empty id: that end is not checked),
// or fails with the gaps.
func waitAttached(t *testing.T, what string, p *uiPage, arrowID, from, to string) {
	t.Helper()
	var gaps [2]float64
	for pl := newPoller(20*time.Second, 50*time.Millisecond); ; pl.wait() {
		ok := true
		for i, end := range [][2]string{{from, "start"}, {to, "end"}} {
			gaps[i] = 0
			if end[0] == "" {
				continue
			}
			p.eval(fmt.Sprintf(`%s(%q, %q, %q)`, endGapJS, arrowID, end[0], end[1]), &gaps[i])
			ok = ok && gaps[i] >= 0 && gaps[i] <= maxEndGap
		}
		if ok {
			return
		}
		if pl.expired() {
			p.screenshot("detached-" + strings.ReplaceAll(what, " ", "-"))
			t.Fatalf("%s: arrow %s is drawn %.1f and %.1f outside %q and %q (at most %v; -1: not drawn)", what, arrowID, gaps[0], gaps[1], from, to, maxEndGap)
		}
	}
}

// noDanglingEdges fails when an edge on the server names a node that does not exist.
func noDanglingEdges(t *testing.T, c *canvasUI) map[string]map[string]any {
	t.Helper()
	s := c.e.snapshot(c.cid)["state"].(map[string]any)
	nodes := map[string]bool{}
	for _, n := range s["nodes"].([]any) {
		nodes[n.(map[string]any)["id"].(string)] = true
	}
	edges := map[string]map[string]any{}
	for _, x := range s["edges"].([]any) {
		e := x.(map[string]any)
		edges[e["id"].(string)] = e
		for _, end := range []string{"from", "to"} {
			if id := e[end].(string); id != "" && !nodes[id] {
				t.Errorf("edge %s names %s %q, which is no node", e["id"], end, id)
			}
		}
	}
	return edges
}

// TestWebUIArrowsStayAttached (issue 32.3 and 26): arrows bound to shapes
// stay drawn on their outlines, in the page that changed them, in another
// page and after a reload, when a person rotates a shape by its handle,
// drags one, and an agent moves one; deleting a shape with the keyboard
// deletes its arrows everywhere and leaves no edge naming it.
func TestWebUIArrowsStayAttached(t *testing.T) {
	c := openCanvasUI(t, "ui-arrows-attached", []map[string]any{
		{"id": "s:a", "type": "geo", "x": 420, "y": 200, "w": 160, "h": 100, "props": map[string]any{"geo": "rectangle", "fill": "solid", "color": "blue"}},
		{"id": "s:b", "type": "geo", "x": 760, "y": 220, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid", "color": "green"}},
		{"id": "s:c", "type": "geo", "x": 460, "y": 470, "w": 120, "h": 80, "props": map[string]any{"geo": "ellipse", "fill": "solid"}},
		{"verb": "create_edge", "args": map[string]any{"id": "e:ab", "from": "s:a", "to": "s:b"}},
		{"verb": "create_edge", "args": map[string]any{"id": "e:ca", "from": "s:c", "to": "s:a"}},
		{"verb": "create_edge", "args": map[string]any{"id": "e:free", "from": "", "to": "s:b", "props": map[string]any{
			"points": []any{map[string]any{"x": 820, "y": 500}, map[string]any{"x": 820, "y": 300}}}}},
	})
	p := c.p
	o := c.observer()
	all := func(what string, pages ...*uiPage) {
		t.Helper()
		for _, pg := range pages {
			waitAttached(t, what, pg, "e:ab", "s:a", "s:b")
			waitAttached(t, what, pg, "e:ca", "", "s:a") // (an ellipse's outline is inside its box)
			waitAttached(t, what, pg, "e:free", "", "s:b")
		}
	}
	all("as seeded", p, o)

	// The person rotates s:a by its handle above its top edge.
	p.click(500, 250)
	p.pollSelection("s:a selected", "s:a")
	tx, ty := p.screen(500, 200)
	p.dragScreen(tx, ty-16, tx+90, ty+10)
	c.e.waitNodes(c.cid, "rotated", func(n map[string]map[string]any) bool { return n["s:a"]["rotation"].(float64) > 0.3 })
	p.poll("the page has the rotation's commit", fmt.Sprintf(`canvasd.model.rev === %d`, c.head()))
	all("rotated", p, o)
	p.screenshot("arrows-rotated")
	p.do(chromedp.Reload())
	c.live(p)
	all("rotated, after a reload", p)

	// The person drags s:b to the right; an agent moves s:a down.
	p.do(chromedp.KeyEvent(kb.Escape))
	p.dragMoving(c.e, c.cid, "s:b dragged", 820, 260, 900, 330, func(n map[string]map[string]any) bool { return n["s:b"]["x"].(float64) > 800 })
	c.apply("move", map[string]any{"ids": []string{"s:a"}, "dx": 0, "dy": 60})
	p.poll("the page has the move", fmt.Sprintf(`canvasd.model.rev === %d`, c.head()))
	all("moved", p, o)
	p.do(chromedp.Reload())
	c.live(p)
	all("moved, after a reload", p)
	noDanglingEdges(t, c)

	// The person deletes s:b: its two arrows go with it, everywhere.
	p.do(chromedp.KeyEvent(kb.Escape))
	p.click(900, 330)
	p.pollSelection("s:b selected", "s:b")
	p.do(chromedp.KeyEvent(kb.Delete))
	c.e.waitNodes(c.cid, "s:b deleted", func(n map[string]map[string]any) bool { _, ok := n["s:b"]; return !ok })
	if edges := noDanglingEdges(t, c); len(edges) != 1 || edges["e:ca"] == nil {
		t.Errorf("after s:b was deleted the edges are %v, want e:ca alone", edges)
	}
	for _, pg := range []*uiPage{p, o} {
		pg.poll("only e:ca drawn", `JSON.stringify(canvasd.view.ex.getSceneElements().filter(el => el.type === 'arrow').map(el => el.id)) === '["e:ca"]'`)
	}
	waitAttached(t, "after the delete", o, "e:ca", "", "s:a")
	p.do(chromedp.Reload())
	c.live(p)
	if a := arrowsOnPage(p); len(a) != 1 || a[0] != "e:ca" {
		t.Errorf("after a reload the page shows arrows %v, want e:ca", a)
	}
}

// arrowEnd reads the page position of the last point of arrow element id on p.
func arrowEnd(p *uiPage, id string) (float64, float64) {
	p.t.Helper()
	var q [2]float64
	p.eval(`(() => { const a = canvasd.view.ex.getSceneElements().find(el => el.id === '`+id+`'), l = a.points[a.points.length - 1]; return [a.x + l[0], a.y + l[1]]; })()`, &q)
	return q[0], q[1]
}

// serverEdge reads edge id from the server.
func serverEdge(c *canvasUI, id string) map[string]any {
	c.t.Helper()
	for _, x := range c.e.snapshot(c.cid)["state"].(map[string]any)["edges"].([]any) {
		if e := x.(map[string]any); e["id"] == id {
			return e
		}
	}
	return nil
}

// waitEdgeOnServer polls the server until edge id satisfies ok.
func waitEdgeOnServer(c *canvasUI, what, id string, ok func(e map[string]any) bool) map[string]any {
	c.t.Helper()
	for pl := newPoller(20*time.Second, 50*time.Millisecond); ; pl.wait() {
		e := serverEdge(c, id)
		if e != nil && ok(e) {
			return e
		}
		if pl.expired() {
			c.t.Fatalf("%s: the server has edge %s as %v; the page: %s", what, id, e, c.p.state())
		}
	}
}

// TestWebUIArrowEndUnboundAndBound: a person drags the bound end of an
// arrow off its shape into empty space (the edge's end is freed, at the
// point dropped) and then onto another shape (bound to it), by the arrow's
// end handle; another page and a reload draw it so.
func TestWebUIArrowEndUnboundAndBound(t *testing.T) {
	c := openCanvasUI(t, "ui-arrow-rebind", []map[string]any{
		{"id": "s:a", "type": "geo", "x": 420, "y": 200, "w": 160, "h": 100, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"id": "s:b", "type": "geo", "x": 760, "y": 200, "w": 120, "h": 100, "props": map[string]any{"geo": "rectangle", "fill": "solid", "color": "green"}},
		{"id": "s:c", "type": "geo", "x": 760, "y": 460, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid", "color": "red"}},
		{"verb": "create_edge", "args": map[string]any{"id": "e:1", "from": "s:a", "to": "s:b"}},
	})
	p := c.p
	// The arrow, selected by a click on its middle; its end dragged by its handle into empty space.
	x1, y1 := arrowEnd(p, "e:1")
	p.click((580+x1)/2, (250+y1)/2)
	p.poll("the arrow selected", `canvasd.view.ex.getAppState().selectedElementIds['e:1'] === true`)
	p.drag(x1, y1, 660, 420)
	e := waitEdgeOnServer(c, "the end freed", "e:1", func(e map[string]any) bool { return e["to"] == "" })
	pts := e["props"].(map[string]any)["points"].([]any)
	if end := pts[len(pts)-1].(map[string]any); e["from"] != "s:a" || !nearNum(end["x"], 660, 3) || !nearNum(end["y"], 420, 3) {
		t.Errorf("the freed end: edge %v, want from s:a and its end at (660, 420)", e)
	}
	o := c.observer()
	o.poll("another page draws the end free", `(() => { const a = canvasd.view.ex.getSceneElements().find(el => el.id === 'e:1'); return a && !a.endBinding && a.startBinding?.elementId === 's:a'; })()`)
	// Onto s:c, once this page has drawn the server's version of the freed
	// end and still has the arrow selected: a drag that starts beside the
	// handle (where the end was before the server's echo) selects nothing.
	p.poll("the freed end drawn at (660, 420), the arrow selected", `(() => { const a = canvasd.view.ex.getSceneElements().find(el => el.id === 'e:1'); if (!a || a.endBinding) return false; const l = a.points[a.points.length - 1]; return Math.abs(a.x + l[0] - 660) <= 3 && Math.abs(a.y + l[1] - 420) <= 3 && canvasd.view.ex.getAppState().selectedElementIds['e:1'] === true; })()`)
	x1, y1 = arrowEnd(p, "e:1")
	p.drag(x1, y1, 800, 480)
	waitEdgeOnServer(c, "the end bound to s:c", "e:1", func(e map[string]any) bool { return e["to"] == "s:c" && e["from"] == "s:a" })
	p.screenshot("arrow-rebound-person")
	waitAttached(t, "bound to s:c", o, "e:1", "s:a", "s:c")
	p.do(chromedp.Reload())
	c.live(p)
	waitAttached(t, "bound to s:c, after a reload", p, "e:1", "s:a", "s:c")
	p.screenshot("arrow-rebound")
}

// nearNum: a JSON number within tol of want.
func nearNum(v any, want, tol float64) bool {
	f, ok := v.(float64)
	return ok && f >= want-tol && f <= want+tol
}
