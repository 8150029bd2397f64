package api

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/canvasd/canvasd/canvas"
)

// The canvas's mapping of edits to commands, in Chromium: each test seeds a
// canvas through the API, edits it as a user does (or through Excalidraw's
// scene API where a pointer gesture is impractical) and checks what the
// server has, often against a second person's tab, whose scene is built from
// the server's state alone.

// canvasUI is a seeded canvas open in Chromium for an editor.
type canvasUI struct {
	t     *testing.T
	e     *testEnv
	p     *uiPage
	open  func(url string, init ...string) *uiPage
	cid   string
	agent string
}

// openCanvasUI creates canvas cid, applies seed (create_shape args, or
// {"verb": ..., "args": ...} for other verbs) as an agent and opens it for
// an editor with holdStreamScript and init, at zoom 1 showing canvas x 150
// to 950 and y 0 to 670 (the style panel of a selection covers x < 370).
func openCanvasUI(t *testing.T, cid string, seed []map[string]any, init ...string) *canvasUI {
	t.Helper()
	open := uiBrowser(t, 120*time.Second)
	e := newTestEnv(t)
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	agent, _ := e.token(canvas.RoleEditor, canvas.ActorAgent)
	e.must(201, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": cid, "title": cid})
	c := &canvasUI{t: t, e: e, open: open, cid: cid, agent: agent}
	for _, s := range seed {
		if v, ok := s["verb"].(string); ok {
			c.apply(v, s["args"].(map[string]any))
		} else {
			c.apply("create_shape", s)
		}
	}
	c.p = open(e.srv.URL+"/?canvas="+cid+"#access_token="+editor, append([]string{holdStreamScript}, init...)...)
	e.diag = c.p.state
	c.live(c.p)
	c.p.eval(`canvasd.view.ex.updateScene({appState: {zoom: {value: 1}, scrollX: -150, scrollY: 0}}), true`, nil)
	c.p.poll("view at zoom 1", `(() => { const a = canvasd.view.ex.getAppState(); return a.zoom.value === 1 && a.scrollX === -150 && a.scrollY === 0; })()`)
	return c
}

// live waits until p shows the canvas, live.
func (c *canvasUI) live(p *uiPage) {
	c.t.Helper()
	p.poll("canvas live", `document.getElementById('conn').textContent === 'live' && document.body.dataset.loaded === '`+c.cid+`'`)
}

// observer opens the canvas for another editor, who only watches: its scene
// is built from the server's state.
func (c *canvasUI) observer() *uiPage {
	c.t.Helper()
	tok, _ := c.e.token(canvas.RoleEditor, canvas.ActorHuman)
	o := c.open(c.e.srv.URL + "/?canvas=" + c.cid + "#access_token=" + tok)
	c.live(o)
	return o
}

// apply runs a command as the agent at the server's head.
func (c *canvasUI) apply(typ string, args map[string]any) map[string]any {
	c.t.Helper()
	return c.e.must(200, "POST", "/canvas_commands/"+c.cid+"/command", c.agent, env(typ, c.head(), args))
}

// head is the server's revision.
func (c *canvasUI) head() int64 { return headRev(c.t, c.e, c.cid) }

// commitsAfter lists the commits after rev: type and args.
func (c *canvasUI) commitsAfter(rev int64) []map[string]any {
	c.t.Helper()
	var log struct {
		Commits []map[string]any `json:"commits"`
	}
	r := c.e.do("GET", fmt.Sprintf("/canvas_commands/%s/events?after_rev=%d&limit=1000", c.cid, rev), testAdmin, nil)
	if r.Status != 200 || json.Unmarshal(r.Body, &log) != nil {
		c.t.Fatalf("events: %d %.200s", r.Status, r.Body)
	}
	return log.Commits
}

// sceneEdit changes the page's scene as Excalidraw's own actions do: fn
// (JavaScript, el → el) returns a changed copy of an element, or the element
// itself; changed ones get a new version.
func sceneEdit(p *uiPage, fn string) {
	p.t.Helper()
	p.eval(`(() => { const ex = canvasd.view.ex, f = `+fn+`;
		ex.updateScene({elements: ex.getSceneElementsIncludingDeleted().map(el => { const n = f(el);
			return n === el ? el : {...n, version: el.version + 1, versionNonce: el.versionNonce + 1}; })});
		return true; })()`, nil)
}

// vertsJS gives the page positions of the outline of elements by id: their
// points, or the corners of their box, turned about the middle of those as
// Excalidraw draws them (a curved line's middle is its curve's: a little off).
const vertsJS = `((ids) => {
	const els = new Map(canvasd.view.ex.getSceneElements().map(el => [el.id, el])), out = {};
	for (const id of ids) {
		const el = els.get(id);
		if (!el) continue;
		const pts = el.points ? el.points.map(p => [p[0], p[1]]) : [[0, 0], [el.width, 0], [el.width, el.height], [0, el.height]];
		const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
		const mx = (Math.min(...xs) + Math.max(...xs)) / 2, my = (Math.min(...ys) + Math.max(...ys)) / 2;
		const s = Math.sin(el.angle || 0), c = Math.cos(el.angle || 0);
		out[id] = pts.map(([x, y]) => [el.x + mx + (x - mx) * c - (y - my) * s, el.y + my + (x - mx) * s + (y - my) * c]);
	}
	return out; })`

// verts are outlines by element id.
type verts map[string][][2]float64

// pageVerts reads the outlines of elements ids on p.
func pageVerts(p *uiPage, ids ...string) verts {
	p.t.Helper()
	b, _ := json.Marshal(ids)
	var v verts
	p.eval(vertsJS+`(`+string(b)+`)`, &v)
	return v
}

// vertsDiff describes how a and b differ by more than tol (empty when they do not).
func vertsDiff(a, b verts, tol float64) string {
	var out []string
	for id, pa := range a {
		pb, ok := b[id]
		if !ok || len(pa) != len(pb) {
			out = append(out, fmt.Sprintf("%s: %d points vs %d", id, len(pa), len(pb)))
			continue
		}
		for i := range pa {
			if math.Abs(pa[i][0]-pb[i][0]) > tol || math.Abs(pa[i][1]-pb[i][1]) > tol {
				out = append(out, fmt.Sprintf("%s[%d]: %.2f vs %.2f", id, i, pa[i], pb[i]))
				break
			}
		}
	}
	for id := range b {
		if _, ok := a[id]; !ok {
			out = append(out, id+": missing")
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// sameVerts waits until the outlines of ids on o (built from the server's
// state) are those on p, within half a pixel.
func sameVerts(t *testing.T, what string, p, o *uiPage, ids ...string) {
	t.Helper()
	pl := newPoller(20*time.Second, 100*time.Millisecond)
	for {
		want, got := pageVerts(p, ids...), pageVerts(o, ids...)
		d := vertsDiff(want, got, 0.5)
		if d == "" && len(want) == len(ids) {
			return
		}
		if pl.expired() {
			t.Fatalf("%s: the server's version differs from the user's scene (%d of %d elements there): %s", what, len(want), len(ids), d)
		}
		pl.wait()
	}
}

// nodeVerts is where canvasd puts the outline pts (node coordinates) of
// node n: turned by its rotation about its top-left corner.
func nodeVerts(n map[string]any, pts [][2]float64) [][2]float64 {
	x, y, r := n["x"].(float64), n["y"].(float64), n["rotation"].(float64)
	s, c := math.Sin(r), math.Cos(r)
	out := make([][2]float64, len(pts))
	for i, p := range pts {
		out[i] = [2]float64{x + p[0]*c - p[1]*s, y + p[0]*s + p[1]*c}
	}
	return out
}

// contentTop is the middle of the top edge of the box around every
// element's outline on p (Ctrl+A's selection: its rotation handle is 22 px
// above).
func contentTop(p *uiPage) (float64, float64) {
	p.t.Helper()
	var top struct{ X, Y float64 }
	p.eval(`(() => { const els = canvasd.view.ex.getSceneElements(), v = `+vertsJS+`(els.map(el => el.id));
		let x1 = Infinity, x2 = -Infinity, y1 = Infinity;
		for (const pts of Object.values(v)) for (const [x, y] of pts) { x1 = Math.min(x1, x); x2 = Math.max(x2, x); y1 = Math.min(y1, y); }
		return {x: (x1 + x2) / 2, y: y1}; })()`, &top)
	return top.X, top.Y
}

// nearly: two numbers of a JSON answer within 0.02.
func nearly(a, b any) bool { return math.Abs(a.(float64)-b.(float64)) < 0.02 }

// TestWebUICanvasDeleteWithEdge: deleting two shapes together with the
// arrow that joins them deletes all three (delete_shape deletes the edge
// with them: no delete_edge of an edge already gone); the arrow from one of
// them to a third shape goes too.
func TestWebUICanvasDeleteWithEdge(t *testing.T) {
	c := openCanvasUI(t, "ui-del-edge", []map[string]any{
		{"id": "s:a", "type": "geo", "x": 400, "y": 200, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"id": "s:b", "type": "geo", "x": 700, "y": 200, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"id": "s:c", "type": "geo", "x": 400, "y": 450, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"verb": "create_edge", "args": map[string]any{"id": "e:ab", "from": "s:a", "to": "s:b"}},
		{"verb": "create_edge", "args": map[string]any{"id": "e:ac", "from": "s:a", "to": "s:c"}},
	})
	p := c.p
	// s:a, s:b and the arrow between them, by a selection box around them.
	p.drag(380, 150, 850, 320)
	p.pollSelection("box-selected", "s:a", "s:b")
	p.poll("the arrow selected too", `canvasd.view.ex.getAppState().selectedElementIds['e:ab'] === true`)
	rev := c.head()
	p.do(chromedp.KeyEvent(kb.Delete))
	c.e.waitNodes(c.cid, "shapes deleted", func(n map[string]map[string]any) bool {
		_, a := n["s:a"]
		_, b := n["s:b"]
		return !a && !b
	})
	// One delete_shape, which takes both edges along; no delete_edge.
	if cs := c.commitsAfter(rev); len(cs) != 1 || cs[0]["type"] != "delete_shape" {
		t.Errorf("the delete became %v, want one delete_shape", cs)
	}
	p.poll("only s:c left on screen", `JSON.stringify(canvasd.view.ex.getSceneElements().map(el => el.id)) === '["s:c"]'`)
}

// TestWebUICanvasPolygons: shapes drawn as Excalidraw lines (triangle,
// star, pentagon, a turned hexagon) are where the server says, and stay
// there on a change of colour (an update_shape alone); a drag moves them
// by what the user dragged, a resize resizes them as the user sees.
func TestWebUICanvasPolygons(t *testing.T) {
	c := openCanvasUI(t, "ui-polygons", []map[string]any{
		{"id": "s:tri", "type": "geo", "x": 400, "y": 150, "w": 120, "h": 100, "props": map[string]any{"geo": "triangle", "fill": "solid", "color": "red", "text": "Tri"}},
		{"id": "s:star", "type": "geo", "x": 600, "y": 150, "w": 100, "h": 100, "props": map[string]any{"geo": "star", "fill": "solid", "color": "yellow"}},
		{"id": "s:pent", "type": "geo", "x": 800, "y": 150, "w": 100, "h": 100, "props": map[string]any{"geo": "pentagon", "fill": "solid"}},
		{"id": "s:hex", "type": "geo", "x": 500, "y": 400, "w": 120, "h": 80, "rotation": 0.5, "props": map[string]any{"geo": "hexagon", "fill": "solid"}},
	})
	p := c.p
	ids := []string{"s:tri", "s:star", "s:pent", "s:hex"}
	before := c.e.nodes(c.cid)
	// The turned hexagon is drawn where canvasd has it.
	hex := before["s:hex"]
	w, h := hex["w"].(float64), hex["h"].(float64)
	want := nodeVerts(hex, [][2]float64{{w * 0.25, 0}, {w * 0.75, 0}, {w, h / 2}, {w * 0.75, h}, {w * 0.25, h}, {0, h / 2}, {w * 0.25, 0}})
	got := pageVerts(p, "s:hex")["s:hex"]
	if d := vertsDiff(verts{"s:hex": want}, verts{"s:hex": got}, 0.5); d != "" {
		t.Errorf("the turned hexagon is drawn elsewhere: %s", d)
	}
	o := c.observer()

	// A change of colour: one update_shape each, nothing moves.
	rev := c.head()
	sceneEdit(p, `el => ['s:tri', 's:star', 's:pent', 's:hex'].includes(el.id) ? {...el, strokeColor: '#2f9e44'} : el`)
	nodes := c.e.waitNodes(c.cid, "recoloured", func(n map[string]map[string]any) bool {
		for _, id := range ids {
			if n[id]["props"].(map[string]any)["color"] != "green" {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		for _, k := range []string{"x", "y", "w", "h", "rotation"} {
			if !nearly(nodes[id][k], before[id][k]) {
				t.Errorf("%s: %s %v after a change of colour, was %v", id, k, nodes[id][k], before[id][k])
			}
		}
	}
	for _, cm := range c.commitsAfter(rev) {
		if cm["type"] != "update_shape" {
			t.Errorf("a change of colour sent %v %v", cm["type"], cm["args"])
		}
	}
	sameVerts(t, "recoloured", p, o, ids...)

	// A drag moves the triangle by what the user dragged.
	var x0, y0 float64
	p.eval(`canvasd.view.ex.getSceneElements().find(el => el.id === 's:tri').x`, &x0)
	p.eval(`canvasd.view.ex.getSceneElements().find(el => el.id === 's:tri').y`, &y0)
	p.drag(460, 220, 500, 250)
	var x1, y1 float64
	p.eval(`canvasd.view.ex.getSceneElements().find(el => el.id === 's:tri').x`, &x1)
	p.eval(`canvasd.view.ex.getSceneElements().find(el => el.id === 's:tri').y`, &y1)
	if x1-x0 < 20 {
		t.Fatalf("the drag did not move the triangle: x %v → %v", x0, x1)
	}
	nodes = c.e.waitNodes(c.cid, "moved", func(n map[string]map[string]any) bool { return !nearly(n["s:tri"]["x"], before["s:tri"]["x"]) })
	if n := nodes["s:tri"]; math.Abs(n["x"].(float64)-(400+x1-x0)) > 0.02 || math.Abs(n["y"].(float64)-(150+y1-y0)) > 0.02 || !nearly(n["w"], 120.0) || !nearly(n["h"], 100.0) {
		t.Errorf("dragged by (%v, %v): the server has %v", x1-x0, y1-y0, n)
	}
	sameVerts(t, "moved", p, o, ids...)

	// The star widened by half from its left edge (as Excalidraw's handle does:
	// its points scale, its left stays) and the hexagon made taller.
	sceneEdit(p, `el => el.id === 's:star' ? {...el, width: el.width * 1.5, points: el.points.map(([x, y]) => [x * 1.5, y])}
		: el.id === 's:hex' ? {...el, height: el.height * 1.25, points: el.points.map(([x, y]) => [x, y * 1.25])} : el`)
	nodes = c.e.waitNodes(c.cid, "resized", func(n map[string]map[string]any) bool {
		return !nearly(n["s:star"]["w"], 100.0) && !nearly(n["s:hex"]["h"], 80.0)
	})
	if n := nodes["s:star"]; !nearly(n["w"], 150.0) || !nearly(n["h"], 100.0) {
		t.Errorf("the star widened by half: %v", n)
	}
	if n := nodes["s:hex"]; !nearly(n["w"], 120.0) || !nearly(n["h"], 100.0) || !nearly(n["rotation"], 0.5) {
		t.Errorf("the hexagon made taller: %v", n)
	}
	sameVerts(t, "resized", p, o, ids...)
}

// TestWebUICanvasLabelsFit: bound labels, document cards and texts whose
// width follows their text are as wide as their longest line in their font
// (Excalidraw draws a text element into a box of its width, so a narrower
// one cuts the line off), labels wrapped only where
// a line is wider than the shape, also for labels sized before their font had
// loaded; a document card shows a tab as the editor does, as four spaces.
func TestWebUICanvasLabelsFit(t *testing.T) {
	line := `	fmt.Printf("hello, %s and %s\n", name, more)`
	c := openCanvasUI(t, "ui-labels", []map[string]any{
		{"id": "d1", "type": "doc", "name": "main.go", "x": 300, "y": 280, "w": 520, "h": 220,
			"props": map[string]any{"language": "go", "text": "package main\n\nfunc main() {\n" + line + "\n}\n"}},
		{"id": "s:box", "type": "geo", "x": 300, "y": 100, "w": 160, "h": 90, "props": map[string]any{"geo": "rectangle", "text": "Draft the specification"}},
		{"id": "s:note", "type": "note", "x": 520, "y": 100, "w": 170, "h": 140, "props": map[string]any{"text": "Agent: split the spec into two docs"}},
		// A text written without a size (the server gives it 100 × 100): its width follows its text.
		{"id": "s:text", "type": "text", "x": 720, "y": 100, "props": map[string]any{"text": "Plain text, written by an agent", "size": "l"}},
	})
	// misfits lists each text narrower than one of its lines, and each bound
	// label wider than its shape or that wraps a line the shape has room for.
	const misfits = `(() => {
		const names = {1: 'Virgil', 2: 'Helvetica', 3: 'Cascadia', 5: 'Excalifont', 6: 'Nunito', 7: 'Lilita One', 8: 'Comic Shanns'};
		const els = new Map(canvasd.view.ex.getSceneElements().map(el => [el.id, el]));
		const ctx = document.createElement('canvas').getContext('2d'), out = [];
		for (const el of els.values()) {
			const box = el.containerId && els.get(el.containerId);
			if (!box && el.type !== 'text') continue;
			const name = names[el.fontFamily];
			if (![...document.fonts].some(f => f.family.replace(/"/g, '') === name && f.status === 'loaded')) { out.push(el.id + ': font ' + name + ' not loaded'); continue; }
			ctx.font = el.fontSize + 'px "' + name + '"';
			const lines = el.text.split('\n'), widths = lines.map(l => ctx.measureText(l).width);
			const widest = Math.max(...widths);
			if (widest > el.width + 0.5) out.push(el.id + ': width ' + el.width + ' < its line ' + widest);
			if (!box) continue;
			if (el.width > box.width - 10 + 0.5) out.push(el.id + ': width ' + el.width + ' > its shape ' + (box.width - 10));
			for (let i = 0; i + 1 < lines.length; i++) {
				const next = lines[i + 1].split(' ')[0];
				if (el.originalText.includes(lines[i] + ' ' + next) && ctx.measureText(lines[i] + ' ' + next).width <= box.width - 10)
					out.push(el.id + ': wrapped before ' + JSON.stringify(next) + ' with room for it');
			}
		}
		return out.join('; ');
	})()`
	for pl := newPoller(20*time.Second, 50*time.Millisecond); ; pl.wait() {
		var got string
		c.p.eval(misfits, &got)
		if got == "" {
			break
		}
		if pl.expired() {
			t.Fatalf("labels: %s", got)
		}
	}
	var card string
	c.p.eval(`canvasd.view.ex.getSceneElements().find(el => el.containerId === 'd1').text`, &card)
	if !strings.Contains(card, "\n    fmt.Printf(\"hello, %s and %s\\n\", name, more)\n") || strings.Contains(card, "\t") {
		t.Errorf("the document card shows %q, want the line with its tab as four spaces", card)
	}
}

// TestWebUICanvasFrameResize: a frame resized by its left edge and then its
// top-left corner keeps its children where they are.
func TestWebUICanvasFrameResize(t *testing.T) {
	c := openCanvasUI(t, "ui-frame-resize", []map[string]any{
		{"id": "s:frame", "type": "frame", "name": "F", "x": 520, "y": 200, "w": 380, "h": 250},
		{"id": "s:kid", "type": "geo", "parent_id": "s:frame", "x": 600, "y": 280, "w": 100, "h": 60, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
	})
	p := c.p
	o := c.observer()
	// The frame's name selects it; its left edge (a band just outside it) resizes it.
	p.clickCSS(`div[id$="frame-name-s:frame"]`)
	p.pollSelection("the frame selected", "s:frame")
	p.drag(517, 320, 457, 320)
	nodes := c.e.waitNodes(c.cid, "resized from the left", func(n map[string]map[string]any) bool { return n["s:frame"]["x"].(float64) < 500 })
	var el struct{ X, Y, Width, Height float64 }
	p.eval(`canvasd.view.ex.getSceneElements().find(el => el.id === 's:frame')`, &el)
	if f := nodes["s:frame"]; !nearly(f["x"], el.X) || !nearly(f["w"], el.Width) || !nearly(f["y"], 200.0) || !nearly(f["h"], 250.0) {
		t.Errorf("the frame is %v on the server, %+v on screen", f, el)
	}
	if k := nodes["s:kid"]; !nearly(k["x"], 600.0) || !nearly(k["y"], 280.0) {
		t.Errorf("the frame's child moved: %v", k)
	}
	// The top-left corner (Excalidraw's handle sits just outside it).
	p.drag(el.X-6, 194, el.X-46, 154)
	nodes = c.e.waitNodes(c.cid, "resized from the corner", func(n map[string]map[string]any) bool { return n["s:frame"]["y"].(float64) < 180 })
	if k := nodes["s:kid"]; !nearly(k["x"], 600.0) || !nearly(k["y"], 280.0) {
		t.Errorf("the frame's child moved: %v", k)
	}
	sameVerts(t, "resized frame", p, o, "s:frame", "s:kid")
}

// TestWebUICanvasIntoFrame: a shape dragged into a frame joins it on the
// server (the frame's moves then carry it) and leaves it when dragged out;
// a group dragged in joins as a whole.
func TestWebUICanvasIntoFrame(t *testing.T) {
	c := openCanvasUI(t, "ui-into-frame", []map[string]any{
		{"id": "s:frame", "type": "frame", "name": "F", "x": 520, "y": 150, "w": 380, "h": 250},
		{"id": "s:a", "type": "geo", "x": 420, "y": 480, "w": 80, "h": 60, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"id": "s:b", "type": "geo", "x": 700, "y": 480, "w": 60, "h": 60, "props": map[string]any{"geo": "ellipse", "fill": "solid"}},
		{"id": "s:c", "type": "geo", "x": 800, "y": 480, "w": 60, "h": 60, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"verb": "group", "args": map[string]any{"ids": []string{"s:b", "s:c"}, "group_id": "s:g"}},
	})
	p := c.p
	parent := func(n map[string]any) string { s, _ := n["parent_id"].(string); return s }
	p.drag(460, 510, 620, 250)
	nodes := c.e.waitNodes(c.cid, "the shape in the frame", func(n map[string]map[string]any) bool { return parent(n["s:a"]) == "s:frame" })
	if a := nodes["s:a"]; !nearly(a["x"], 580.0) || !nearly(a["y"], 220.0) {
		t.Errorf("the shape is not where it was dropped: %v", a)
	}
	// The frame's move carries it.
	p.clickCSS(`div[id$="frame-name-s:frame"]`)
	p.pollSelection("the frame selected", "s:frame")
	c.apply("move", map[string]any{"id": "s:frame", "x": 540, "y": 150})
	c.e.waitNodes(c.cid, "moved with its frame", func(n map[string]map[string]any) bool { return nearly(n["s:a"]["x"], 600.0) })
	p.click(200, 600) // nothing selected
	// A group dragged in joins as one; the shape dragged out leaves.
	p.drag(730, 510, 730, 330)
	nodes = c.e.waitNodes(c.cid, "the group in the frame", func(n map[string]map[string]any) bool { return parent(n["s:g"]) == "s:frame" })
	if parent(nodes["s:b"]) != "s:g" || parent(nodes["s:c"]) != "s:g" {
		t.Errorf("the group's shapes left it: %v %v", nodes["s:b"], nodes["s:c"])
	}
	p.click(200, 600)
	p.drag(640, 250, 640, 560)
	nodes = c.e.waitNodes(c.cid, "the shape out of the frame", func(n map[string]map[string]any) bool { return parent(n["s:a"]) == "" })
	if a := nodes["s:a"]; !nearly(a["y"], 530.0) {
		t.Errorf("the shape is not where it was dropped: %v", a)
	}
	sameVerts(t, "after the drags", p, c.observer(), "s:frame", "s:a", "s:b", "s:c")
}

// TestWebUICanvasRotateTogether: shapes rotated together, a group by its
// handle, then a group and a shape, turn about their common centre on the
// server as on screen.
func TestWebUICanvasRotateTogether(t *testing.T) {
	c := openCanvasUI(t, "ui-rotate-together", []map[string]any{
		{"id": "s:a", "type": "geo", "x": 400, "y": 300, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"id": "s:b", "type": "geo", "x": 600, "y": 320, "w": 80, "h": 80, "props": map[string]any{"geo": "ellipse", "fill": "solid"}},
		{"id": "s:c", "type": "geo", "x": 800, "y": 300, "w": 100, "h": 60, "rotation": 0.3, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"verb": "group", "args": map[string]any{"ids": []string{"s:a", "s:b"}, "group_id": "g:ab"}},
	})
	p := c.p
	o := c.observer()
	ids := []string{"s:a", "s:b", "s:c"}
	// The group: a click on a member selects it; its rotation handle is 22 px above its top.
	p.click(460, 340)
	p.pollSelection("the group selected", "s:a", "s:b")
	sx, sy := p.screen(540, 300)
	p.dragScreen(sx, sy-22, sx+120, sy+10)
	c.e.waitNodes(c.cid, "group rotated", func(n map[string]map[string]any) bool { return n["s:a"]["rotation"].(float64) > 0.1 })
	sameVerts(t, "group rotated", p, o, ids...)
	// Everything: the group and s:c, about their common centre.
	p.do(chromedp.KeyEvent(kb.Escape))
	p.do(chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	p.pollSelection("all selected", ids...)
	sx, sy = p.screen(contentTop(p))
	rot := c.e.nodes(c.cid)["s:c"]["rotation"].(float64)
	p.dragScreen(sx, sy-22, sx+150, sy+40)
	c.e.waitNodes(c.cid, "all rotated", func(n map[string]map[string]any) bool { return !nearly(n["s:c"]["rotation"], rot) })
	sameVerts(t, "all rotated", p, o, ids...)
}

// TestWebUICanvasNestedGroups: a group grouped with a shape nests it in a
// new group; ungrouping the outer group keeps the inner one.
func TestWebUICanvasNestedGroups(t *testing.T) {
	c := openCanvasUI(t, "ui-nested-groups", []map[string]any{
		{"id": "s:a", "type": "geo", "x": 400, "y": 300, "w": 100, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"id": "s:b", "type": "geo", "x": 550, "y": 300, "w": 100, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"id": "s:c", "type": "geo", "x": 700, "y": 300, "w": 100, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"verb": "group", "args": map[string]any{"ids": []string{"s:a", "s:b"}, "group_id": "g:ab"}},
	})
	p := c.p
	p.click(450, 340)
	p.pollSelection("the group selected", "s:a", "s:b")
	p.click(750, 340, chromedp.ModifierShift)
	p.pollSelection("and s:c", "s:a", "s:b", "s:c")
	p.do(chromedp.KeyEvent("g", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	nodes := c.e.waitNodes(c.cid, "nested group", func(n map[string]map[string]any) bool {
		g := n["g:ab"]["parent_id"]
		return g != nil && g != "" && n["s:c"]["parent_id"] == g
	})
	outer := nodes["g:ab"]["parent_id"].(string)
	if nodes[outer]["type"] != "group" || nodes["s:a"]["parent_id"] != "g:ab" || nodes["s:b"]["parent_id"] != "g:ab" {
		t.Errorf("nested under %v: %v", outer, nodes)
	}
	// A click now selects the outer group; ungrouping it leaves g:ab.
	p.do(chromedp.KeyEvent(kb.Escape))
	p.click(750, 340)
	p.pollSelection("the outer group selected", "s:a", "s:b", "s:c")
	p.do(chromedp.KeyEvent("G", chromedp.KeyModifiers(chromedp.ModifierCtrl, chromedp.ModifierShift)))
	nodes = c.e.waitNodes(c.cid, "outer ungrouped", func(n map[string]map[string]any) bool {
		_, ok := n[outer]
		return !ok
	})
	if nodes["g:ab"]["parent_id"] != "" || nodes["s:c"]["parent_id"] != "" || nodes["s:a"]["parent_id"] != "g:ab" {
		t.Errorf("after ungrouping the outer group: %v", nodes)
	}
}

// TestWebUICanvasRotateLinear: turned lines and drawings, and arrows (edges,
// whose points are on the page), are drawn as canvasd has them, and turning
// them on screen turns them on the server.
func TestWebUICanvasRotateLinear(t *testing.T) {
	c := openCanvasUI(t, "ui-rotate-linear", []map[string]any{
		{"id": "s:line", "type": "line", "x": 400, "y": 200, "rotation": 0.4, "props": map[string]any{"points": []any{
			map[string]any{"x": 0, "y": 0}, map[string]any{"x": 80, "y": 60}, map[string]any{"x": 160, "y": 0}}}},
		{"verb": "create_edge", "args": map[string]any{"id": "s:arrow", "from": "", "to": "", "props": map[string]any{
			"points": []any{map[string]any{"x": 700, "y": 200}, map[string]any{"x": 850, "y": 250}}}}},
		{"id": "s:pen", "type": "draw", "x": 450, "y": 400, "w": 150, "h": 60, "props": map[string]any{"segments": []any{
			map[string]any{"type": "free", "points": []any{map[string]any{"x": 0, "y": 30}, map[string]any{"x": 40, "y": 0}, map[string]any{"x": 80, "y": 60}}},
			map[string]any{"type": "free", "points": []any{map[string]any{"x": 100, "y": 0}, map[string]any{"x": 150, "y": 60}}}}}},
	})
	p := c.p
	// The turned line is drawn where canvasd has it.
	line := c.e.nodes(c.cid)["s:line"]
	want := nodeVerts(line, [][2]float64{{0, 0}, {80, 60}, {160, 0}})
	if d := vertsDiff(verts{"s:line": want}, pageVerts(p, "s:line"), 0.5); d != "" {
		t.Errorf("the turned line is drawn elsewhere: %s", d)
	}
	o := c.observer()
	ids := []string{"s:line", "s:arrow", "s:pen", "s:pen::s1"}
	// An agent turns the arrow (about its first point, by 30°): the page draws its new points.
	s, co := math.Sin(math.Pi/6), math.Cos(math.Pi/6)
	want = [][2]float64{{700, 200}, {700 + 150*co - 50*s, 200 + 150*s + 50*co}}
	c.apply("update_edge", map[string]any{"id": "s:arrow", "props": map[string]any{"points": []any{
		map[string]any{"x": want[0][0], "y": want[0][1]}, map[string]any{"x": want[1][0], "y": want[1][1]}}}})
	for pl := newPoller(20*time.Second, 50*time.Millisecond); ; pl.wait() {
		d := vertsDiff(verts{"s:arrow": want}, pageVerts(p, "s:arrow"), 0.5)
		if d == "" {
			break
		}
		if pl.expired() {
			t.Fatalf("the turned arrow is drawn elsewhere: %s", d)
		}
	}
	// The user turns everything by the selection's handle.
	p.do(chromedp.KeyEvent(kb.Escape))
	p.click(300, 600)
	p.do(chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	p.pollSelection("all selected", "s:line", "s:pen")
	p.poll("the arrow selected too", `canvasd.view.ex.getAppState().selectedElementIds['s:arrow'] === true`)
	sx, sy := p.screen(contentTop(p))
	p.dragScreen(sx, sy-22, sx+160, sy+30)
	c.e.waitNodes(c.cid, "rotated", func(n map[string]map[string]any) bool { return n["s:pen"]["rotation"].(float64) > 0.1 })
	sameVerts(t, "rotated", p, o, ids...)
	// A change of colour of the turned line leaves it where it is.
	rev := c.head()
	sceneEdit(p, `el => el.id === 's:line' ? {...el, strokeColor: '#e03131'} : el`)
	c.e.waitNodes(c.cid, "recoloured", func(n map[string]map[string]any) bool { return n["s:line"]["props"].(map[string]any)["color"] == "red" })
	for _, cm := range c.commitsAfter(rev) {
		if cm["type"] != "update_shape" {
			t.Errorf("a change of colour sent %v %v", cm["type"], cm["args"])
		}
	}
	sameVerts(t, "recoloured", p, o, ids...)
}

// TestWebUICanvasDuplicate: a duplicated group is a new group of new
// shapes; a duplicated frame a new frame with its new children.
func TestWebUICanvasDuplicate(t *testing.T) {
	c := openCanvasUI(t, "ui-duplicate", []map[string]any{
		{"id": "s:a", "type": "geo", "x": 400, "y": 150, "w": 100, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"id": "s:b", "type": "geo", "x": 550, "y": 150, "w": 100, "h": 80, "props": map[string]any{"geo": "ellipse", "fill": "solid"}},
		{"verb": "group", "args": map[string]any{"ids": []string{"s:a", "s:b"}, "group_id": "g:ab"}},
		{"id": "s:frame", "type": "frame", "name": "F", "x": 400, "y": 400, "w": 300, "h": 200},
		{"id": "s:kid", "type": "geo", "parent_id": "s:frame", "x": 450, "y": 450, "w": 100, "h": 60, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
	})
	p := c.p
	seeded := map[string]bool{"s:a": true, "s:b": true, "g:ab": true, "s:frame": true, "s:kid": true}
	fresh := func(n map[string]map[string]any, typ string) []string {
		var out []string
		for id, node := range n {
			if !seeded[id] && node["type"] == typ {
				out = append(out, id)
			}
		}
		return out
	}
	p.click(450, 190)
	p.pollSelection("the group selected", "s:a", "s:b")
	p.do(chromedp.KeyEvent("d", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	nodes := c.e.waitNodes(c.cid, "duplicated group", func(n map[string]map[string]any) bool { return len(fresh(n, "geo")) == 2 })
	copies := fresh(nodes, "geo")
	g, _ := nodes[copies[0]]["parent_id"].(string)
	if g == "" || g == "g:ab" || nodes[copies[1]]["parent_id"] != g || nodes[g]["type"] != "group" {
		t.Errorf("the copies %v are in %q and %q", copies, nodes[copies[0]]["parent_id"], nodes[copies[1]]["parent_id"])
	}
	p.do(chromedp.KeyEvent(kb.Escape))
	p.clickCSS(`div[id$="frame-name-s:frame"]`)
	p.pollSelection("the frame selected", "s:frame")
	p.do(chromedp.KeyEvent("d", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	nodes = c.e.waitNodes(c.cid, "duplicated frame", func(n map[string]map[string]any) bool {
		return len(fresh(n, "frame")) == 1 && len(fresh(n, "geo")) == 3
	})
	f := fresh(nodes, "frame")[0]
	for _, id := range fresh(nodes, "geo") {
		if !slices.Contains(copies, id) && nodes[id]["parent_id"] != f {
			t.Errorf("the frame's copied child %s is in %q, want the copied frame %s", id, nodes[id]["parent_id"], f)
		}
	}
}

// TestWebUICanvasDuplicateKinds: a duplicated note stays a note (its
// colour and text), also cut and pasted, and a duplicated document a
// document (its name, language and text), not boxes drawn like them.
func TestWebUICanvasDuplicateKinds(t *testing.T) {
	c := openCanvasUI(t, "ui-duplicate-kinds", []map[string]any{
		{"id": "n1", "type": "note", "x": 400, "y": 150, "w": 200, "h": 200, "props": map[string]any{"color": "yellow", "text": "hello"}},
		{"id": "d1", "type": "doc", "name": "a.md", "x": 650, "y": 150, "w": 260, "h": 200, "props": map[string]any{"language": "markdown", "text": "# A\nbody\n"}},
		{"id": "n2", "type": "note", "x": 400, "y": 420, "w": 150, "h": 150, "props": map[string]any{"color": "green", "text": "remember"}},
	})
	p := c.p
	copyOf := func(original string, x, y float64) map[string]any {
		t.Helper()
		before := c.e.nodes(c.cid)
		p.click(x, y)
		p.pollSelection(original+" selected", original)
		p.do(chromedp.KeyEvent("d", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
		var copied map[string]any
		c.e.waitNodes(c.cid, "a copy of "+original, func(n map[string]map[string]any) bool {
			for id, node := range n {
				if _, old := before[id]; !old {
					copied = node
					return true
				}
			}
			return false
		})
		p.do(chromedp.KeyEvent(kb.Escape))
		return copied
	}
	note := copyOf("n1", 420, 170)
	if props, _ := note["props"].(map[string]any); note["type"] != "note" || props["color"] != "yellow" || props["text"] != "hello" {
		t.Errorf("the copy of a note: %v %v", note["type"], note["props"])
	}
	// A note cut and pasted (no node to copy from any more): still a note.
	p.click(420, 440)
	p.pollSelection("n2 selected", "n2")
	p.do(chromedp.KeyEvent("x", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	c.e.waitNodes(c.cid, "n2 cut", func(n map[string]map[string]any) bool { _, ok := n["n2"]; return !ok })
	sx, sy := p.screen(750, 500)
	p.do(chromedp.MouseEvent(chromedp.MouseMoved, sx, sy))
	p.poll("the cut on the clipboard", `navigator.clipboard.readText().then(t => t.includes('remember'), () => true)`)
	p.do(chromedp.KeyEvent("v", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	pasted := c.e.waitNodes(c.cid, "n2 pasted", func(n map[string]map[string]any) bool {
		for _, node := range n {
			if node["x"].(float64) > 600 && node["y"].(float64) > 380 {
				return true
			}
		}
		return false
	})
	for _, node := range pasted {
		if props, _ := node["props"].(map[string]any); node["x"].(float64) > 600 && node["y"].(float64) > 380 &&
			(node["type"] != "note" || props["color"] != "green" || props["text"] != "remember") {
			t.Errorf("the cut and pasted note: %v %v", node["type"], node["props"])
		}
	}
	p.do(chromedp.KeyEvent(kb.Escape))
	doc := copyOf("d1", 670, 170)
	if props, _ := doc["props"].(map[string]any); doc["type"] != "doc" || doc["name"] != "a.md" || props["language"] != "markdown" || props["text"] != "# A\nbody\n" {
		t.Errorf("the copy of a document: %v %v %v", doc["type"], doc["name"], doc["props"])
	}
}

// TestWebUICanvasEdgeStyleAndLabel: an edge's arrow recoloured (as the
// style panel does) and labelled by double-click is saved (update_edge with
// the props), and another person's tab shows both.
func TestWebUICanvasEdgeStyleAndLabel(t *testing.T) {
	c := openCanvasUI(t, "ui-edge-style", []map[string]any{
		{"id": "a", "type": "geo", "x": 400, "y": 200, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle"}},
		{"id": "b", "type": "geo", "x": 700, "y": 200, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle"}},
		{"verb": "create_edge", "args": map[string]any{"id": "e1", "from": "a", "to": "b"}},
	})
	p := c.p
	edgeProps := func(what string, ok func(props map[string]any) bool) {
		t.Helper()
		pl := newPoller(20*time.Second, 100*time.Millisecond)
		for {
			var st struct {
				Edges []struct {
					ID    string         `json:"id"`
					Props map[string]any `json:"props"`
				} `json:"edges"`
			}
			r := c.e.do("GET", "/canvas_commands/snapshot/"+c.cid, c.agent, nil)
			var snap struct {
				State json.RawMessage `json:"state"`
			}
			if json.Unmarshal(r.Body, &snap) == nil && json.Unmarshal(snap.State, &st) == nil && len(st.Edges) == 1 && ok(st.Edges[0].Props) {
				return
			}
			if pl.expired() {
				t.Fatalf("%s: the edge on the server is %s", what, snap.State)
			}
			pl.wait()
		}
	}
	sceneEdit(p, `el => el.id === 'e1' ? {...el, strokeColor: '#e03131', strokeStyle: 'dashed'} : el`)
	edgeProps("recoloured", func(props map[string]any) bool { return props["color"] == "red" && props["dash"] == "dashed" })
	p.dblclick(610, 240)
	p.poll("the label editor", `!!canvasd.view.ex.getAppState().editingTextElement`)
	p.do(chromedp.KeyEvent("calls"))
	p.do(chromedp.KeyEvent(kb.Escape))
	edgeProps("labelled", func(props map[string]any) bool { return props["text"] == "calls" && props["color"] == "red" })
	o := c.observer()
	o.poll("the other tab shows the label and colour", `(() => { const els = canvasd.view.ex.getSceneElements();
		return els.some(e => e.type === 'text' && e.containerId === 'e1' && e.text === 'calls') &&
			els.some(e => e.id === 'e1' && e.strokeColor === '#e03131' && e.strokeStyle === 'dashed'); })()`)
}

// TestWebUICanvasDuplicateWithEdge: two shapes duplicated with the edge
// between them (box-selected, Ctrl+D) make two shapes and an edge between
// the copies, with the original's colour.
func TestWebUICanvasDuplicateWithEdge(t *testing.T) {
	c := openCanvasUI(t, "ui-duplicate-edge", []map[string]any{
		{"id": "a", "type": "geo", "x": 400, "y": 200, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"id": "b", "type": "geo", "x": 700, "y": 200, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"verb": "create_edge", "args": map[string]any{"id": "e1", "from": "a", "to": "b", "props": map[string]any{"color": "blue"}}},
	})
	p := c.p
	p.drag(380, 150, 850, 320)
	p.pollSelection("box-selected", "a", "b")
	p.poll("the arrow selected too", `canvasd.view.ex.getAppState().selectedElementIds['e1'] === true`)
	p.do(chromedp.KeyEvent("d", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	pl := newPoller(20*time.Second, 100*time.Millisecond)
	for {
		var snap struct {
			State struct {
				Nodes []struct{ ID string } `json:"nodes"`
				Edges []struct {
					ID, From, To string
					Props        map[string]any
				} `json:"edges"`
			} `json:"state"`
		}
		_ = json.Unmarshal(c.e.do("GET", "/canvas_commands/snapshot/"+c.cid, c.agent, nil).Body, &snap)
		if len(snap.State.Nodes) == 4 && len(snap.State.Edges) == 2 {
			for _, e := range snap.State.Edges {
				if e.ID != "e1" && (e.From == "a" || e.From == "b" || e.To == "a" || e.To == "b" || e.From == e.To || e.Props["color"] != "blue") {
					t.Fatalf("the copied edge %+v does not join the copies with the original's colour", e)
				}
			}
			return
		}
		if pl.expired() {
			t.Fatalf("after the duplicate: %d nodes, %d edges on the server, want 4 and 2", len(snap.State.Nodes), len(snap.State.Edges))
		}
		pl.wait()
	}
}

// commandNetworkScript is test instrumentation (not the app): it plays a
// network between the page and its command POSTs. It delays them by
// window.__slowCmd ms, as a slow network would; while window.__down is
// "refuse" they fail as an unreachable server's do (a network error,
// nothing sent), and while it is "lose" they reach the server and their
// answers are lost on the way back.
const commandNetworkScript = `(() => {
  const f = window.fetch;
  window.__slowCmd = 0;
  window.__down = "";
  window.__downCanvas = ""; // when set, __down plays on this canvas's commands only
  window.__refused = 0; // command POSTs refused so far
  window.fetch = async (...args) => {
    const url = String(args[0] && args[0].url || args[0]);
    const m = /\/canvas_commands\/([^/]+)\/commands?$/.exec(url);
    if (!m) return f(...args);
    const mode = !window.__downCanvas || m[1] === window.__downCanvas ? window.__down : "";
    if (window.__slowCmd) await new Promise((r) => setTimeout(r, window.__slowCmd));
    if (mode === "refuse") { window.__refused++; throw new TypeError("Failed to fetch"); }
    const res = await f(...args);
    if (mode === "lose") throw new TypeError("Failed to fetch");
    return res;
  };
})();`

// openCanvasAAndB opens canvas a (one rectangle, s:a at 400,200 120×80)
// in the web UI with commandNetworkScript, and makes canvas b with the
// commands bCmds (by the agent), listed in the page.
func openCanvasAAndB(t *testing.T, a, b string, bCmds ...map[string]any) *canvasUI {
	t.Helper()
	c := openCanvasUI(t, a, []map[string]any{
		{"id": "s:a", "type": "geo", "x": 400, "y": 200, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
	}, commandNetworkScript)
	c.e.must(201, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": b, "title": "B"})
	for _, cmd := range bCmds {
		c.e.must(200, "POST", "/canvas_commands/"+b+"/command", c.agent, cmd)
	}
	c.p.poll("B listed", `!!document.querySelector('li[data-canvas-id="`+b+`"]')`)
	return c
}

// TestWebUICanvasSwitchWhileSending: two gestures on canvas A, the first on
// its way (a slow network), the second queued behind it, then the user
// opens canvas B: both land on A, none on B.
func TestWebUICanvasSwitchWhileSending(t *testing.T) {
	c := openCanvasAAndB(t, "ui-switch-a", "ui-switch-b", env("create_shape", 0,
		map[string]any{"id": "b:0", "type": "geo", "x": 100, "y": 600, "w": 50, "h": 50, "props": map[string]any{"geo": "rectangle"}}))
	p := c.p
	p.eval(`window.__slowCmd = 1500, true`, nil)
	p.drag(460, 240, 520, 300) // a move, on its way for 1.5 s
	p.tool("rectangle")
	p.drag(650, 350, 800, 450) // a new rectangle, queued behind it
	p.clickCSS(`li[data-canvas-id="ui-switch-b"]`)
	c.e.waitNodes(c.cid, "both gestures on A", func(n map[string]map[string]any) bool { return len(n) == 2 && n["s:a"]["x"].(float64) > 450 })
	if b := c.e.nodes("ui-switch-b"); len(b) != 1 {
		t.Fatalf("canvas B has %d nodes, want its own one: %v", len(b), b)
	}
}

// TestWebUIStalledCanvasHoldsOnlyItself: a gesture on canvas A waits
// (A's commands do not get through), the user opens canvas B and draws:
// B's rectangle is saved at once, A's move once A's commands get through.
func TestWebUIStalledCanvasHoldsOnlyItself(t *testing.T) {
	c := openCanvasAAndB(t, "ui-stall-a", "ui-stall-b")
	p := c.p
	p.eval(`window.__downCanvas = "ui-stall-a", window.__down = "refuse", true`, nil)
	p.drag(460, 240, 520, 300) // a move of A's shape, kept
	p.poll("the move waits", `document.getElementById('unsaved').textContent === '1 unsaved'`)
	p.clickCSS(`li[data-canvas-id="ui-stall-b"]`)
	p.poll("B open", `!!canvasd.model && !canvasd.model.nodes.has('s:a')`)
	p.tool("rectangle")
	p.drag(650, 350, 800, 450)
	c.e.waitNodes("ui-stall-b", "B's rectangle saved while A's move waits", func(n map[string]map[string]any) bool { return len(n) == 1 })
	if a := c.e.nodes(c.cid); !nearly(a["s:a"]["x"], 400.0) {
		t.Fatalf("A's shape moved during its outage: %v", a["s:a"])
	}
	p.eval(`window.__down = "", dispatchEvent(new Event("online")), true`, nil) // back online: what waits goes now
	c.e.waitNodes(c.cid, "A's move saved", func(n map[string]map[string]any) bool { return nearly(n["s:a"]["x"], 460.0) })
	p.poll("nothing waits", `document.getElementById('unsaved').hidden`)
}

// TestWebUIUndoKeptThroughOutage: Undo clicked while the page's commands
// are refused waits and is sent again; a resend whose answer is lost after
// it committed is answered from the idempotency store: one undo in all.
func TestWebUIUndoKeptThroughOutage(t *testing.T) {
	c := openCanvasUI(t, "ui-undo-outage", []map[string]any{
		{"id": "s:a", "type": "geo", "x": 400, "y": 200, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
	}, commandNetworkScript)
	p := c.p
	p.drag(460, 240, 520, 300)
	c.e.waitNodes(c.cid, "the first move", func(n map[string]map[string]any) bool { return nearly(n["s:a"]["x"], 460.0) })
	p.drag(520, 300, 580, 360)
	c.e.waitNodes(c.cid, "the second move", func(n map[string]map[string]any) bool { return nearly(n["s:a"]["x"], 520.0) })
	rev := c.head()
	p.eval(`window.__down = "refuse", true`, nil)
	p.clickCSS("#undo")
	p.poll("the undo waits", `document.getElementById('unsaved').textContent === '1 unsaved'`)
	p.eval(`window.__down = "lose", true`, nil) // the next resend commits, its answer is lost
	c.e.waitNodes(c.cid, "the undo committed", func(n map[string]map[string]any) bool { return nearly(n["s:a"]["x"], 460.0) })
	p.eval(`window.__down = "", true`, nil)
	p.poll("nothing waits", `document.getElementById('unsaved').hidden`)
	var types []string
	for _, cm := range c.commitsAfter(rev) {
		types = append(types, cm["type"].(string))
	}
	if len(types) != 1 || types[0] != "undo" {
		t.Fatalf("commits after the second move: %v, want one undo", types)
	}
	if n := c.e.nodes(c.cid); !nearly(n["s:a"]["x"], 460.0) {
		t.Fatalf("after the outage: %v, want the second move undone only", n["s:a"])
	}
}

// TestWebUICanvasOrderFontLock: bring to front (Ctrl+Shift+]), a text's
// font and a lock are saved (reorder, props.font, props.locked); the locked
// shape still shows a later remote move (the API may move it).
func TestWebUICanvasOrderFontLock(t *testing.T) {
	c := openCanvasUI(t, "ui-order-font-lock", []map[string]any{
		{"id": "s:a", "type": "geo", "x": 400, "y": 200, "w": 200, "h": 150, "props": map[string]any{"geo": "rectangle", "fill": "solid", "color": "red"}},
		{"id": "s:b", "type": "geo", "x": 500, "y": 250, "w": 200, "h": 150, "props": map[string]any{"geo": "rectangle", "fill": "solid", "color": "blue"}},
		{"id": "s:t", "type": "text", "x": 750, "y": 500, "w": 150, "h": 25, "props": map[string]any{"text": "hello"}},
	})
	p := c.p
	p.click(420, 220) // s:a, where s:b does not cover it
	p.pollSelection("s:a selected", "s:a")
	p.do(chromedp.KeyEvent("]", chromedp.KeyModifiers(chromedp.ModifierCtrl|chromedp.ModifierShift)))
	c.e.waitNodes(c.cid, "s:a in front", func(n map[string]map[string]any) bool { return n["s:a"]["index"].(string) > n["s:b"]["index"].(string) })
	p.do(chromedp.KeyEvent(kb.Escape))
	sceneEdit(p, `el => el.id === 's:t' ? {...el, fontFamily: 3} : el`) // as the font picker does: a monospaced font
	c.e.waitNodes(c.cid, "the font saved", func(n map[string]map[string]any) bool { return n["s:t"]["props"].(map[string]any)["font"] == "mono" })
	sceneEdit(p, `el => el.id === 's:b' ? {...el, locked: true} : el`)
	c.e.waitNodes(c.cid, "the lock saved", func(n map[string]map[string]any) bool { return n["s:b"]["props"].(map[string]any)["locked"] == true })
	c.apply("move", map[string]any{"ids": []string{"s:b"}, "dx": 0, "dy": 100})
	p.poll("the locked shape follows the server", `canvasd.view.ex.getSceneElements().find(el => el.id === 's:b').y === 350`)
}

// TestWebUICanvasDeletedWhileDragged: a shape another person deletes while
// the user drags it is not silently created again when the user drops it:
// the conflict shows, nothing is sent; Keep mine (recreate) then creates it
// where the user dropped it.
func TestWebUICanvasDeletedWhileDragged(t *testing.T) {
	c := openCanvasUI(t, "ui-deleted-dragged", []map[string]any{
		{"id": "s:a", "type": "geo", "x": 400, "y": 200, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
	})
	p := c.p
	sx, sy := p.screen(460, 240)
	held := func(p *input.DispatchMouseEventParams) { p.Button, p.Buttons = input.MouseButtonLeft, 1 }
	p.do(chromedp.MouseEvent(chromedp.MouseMoved, sx, sy), chromedp.Sleep(40*time.Millisecond),
		chromedp.MouseEvent(chromedp.MousePressed, sx, sy, held, chromedp.ClickCount(1)), chromedp.Sleep(40*time.Millisecond),
		chromedp.MouseEvent(chromedp.MouseMoved, sx+20, sy+40, held), chromedp.Sleep(60*time.Millisecond),
		chromedp.MouseEvent(chromedp.MouseMoved, sx+40, sy+80, held), chromedp.Sleep(60*time.Millisecond))
	c.apply("delete_shape", map[string]any{"ids": []string{"s:a"}})
	p.poll("the delete on the page", `!canvasd.model.nodes.has('s:a')`)
	rev := c.head()
	p.do(chromedp.MouseEvent(chromedp.MouseMoved, sx+60, sy+120, held), chromedp.Sleep(60*time.Millisecond),
		chromedp.MouseEvent(chromedp.MouseReleased, sx+60, sy+120, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	p.poll("the conflict shown", `[...document.querySelectorAll('#conflicts .conflict')].some(b => b.textContent.includes('s:a'))`)
	if cs := c.commitsAfter(rev); len(cs) != 0 {
		t.Fatalf("sent after the drop: %v", cs)
	}
	p.clickCSS(`#conflicts .conflict .keep`)
	n := c.e.waitNodes(c.cid, "recreated where dropped", func(n map[string]map[string]any) bool { _, ok := n["s:a"]; return ok })
	if a := n["s:a"]; !nearly(a["x"], 460.0) || !nearly(a["y"], 320.0) {
		t.Errorf("recreated at %v,%v, want where the user dropped it (460,320)", a["x"], a["y"])
	}
}

// TestWebUICanvasKeepMine: "Keep mine" after a conflict saves what the
// user sees (a move of two shapes, sent as relative, is not re-applied on
// top of the other's move), and "Keep mine (recreate)" recreates a shape
// another deleted.
func TestWebUICanvasKeepMine(t *testing.T) {
	c := openCanvasUI(t, "ui-keep-mine", []map[string]any{
		{"id": "s:a", "type": "geo", "x": 400, "y": 200, "w": 100, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"id": "s:b", "type": "geo", "x": 600, "y": 200, "w": 100, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
	})
	p := c.p
	p.eval(`window.__holdSSE = true`, nil)
	c.apply("move", map[string]any{"id": "s:a", "x": 400, "y": 500})
	p.click(300, 100)
	p.do(chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	p.pollSelection("both selected", "s:a", "s:b")
	p.drag(450, 240, 500, 280)
	p.poll("conflict explained", `!!document.querySelector('#conflicts .conflict')`)
	p.eval(`window.__holdSSE = false`, nil)
	var mine map[string]struct{ X, Y float64 }
	p.eval(`Object.fromEntries(canvasd.view.ex.getSceneElements().filter(el => el.id === 's:a' || el.id === 's:b').map(el => [el.id, {x: el.x, y: el.y}]))`, &mine)
	if mine["s:a"].Y > 300 {
		t.Fatalf("the user's version is not on screen: %v", mine)
	}
	p.clickCSS(`#conflicts .conflict button.keep`)
	nodes := c.e.waitNodes(c.cid, "kept mine", func(n map[string]map[string]any) bool { return !nearly(n["s:b"]["x"], 600.0) })
	for _, id := range []string{"s:a", "s:b"} {
		if n := nodes[id]; !nearly(n["x"], mine[id].X) || !nearly(n["y"], mine[id].Y) {
			t.Errorf("kept mine: %s is at (%v, %v) on the server, (%v, %v) on screen", id, n["x"], n["y"], mine[id].X, mine[id].Y)
		}
	}
	p.poll("conflict closed", `!document.querySelector('#conflicts .conflict')`)

	// Another deletes s:b while the user moves it. (A click on empty canvas
	// clears the selection: the focus is on the button, Escape would not.)
	p.click(850, 600)
	p.pollSelection("empty canvas clicked")
	p.eval(`window.__holdSSE = true`, nil)
	c.apply("delete_shape", map[string]any{"ids": []string{"s:b"}})
	bx := mine["s:b"].X
	p.drag(bx+50, 270, bx+50, 350)
	p.poll("conflict explained", `!!document.querySelector('#conflicts .conflict button.keep') && document.querySelector('#conflicts .conflict button.keep').textContent.includes('recreate')`)
	p.eval(`window.__holdSSE = false`, nil)
	var b struct{ X, Y float64 }
	p.eval(`canvasd.view.ex.getSceneElements().find(el => el.id === 's:b')`, &b)
	p.clickCSS(`#conflicts .conflict button.keep`)
	nodes = c.e.waitNodes(c.cid, "recreated", func(n map[string]map[string]any) bool { _, ok := n["s:b"]; return ok })
	if n := nodes["s:b"]; !nearly(n["x"], b.X) || !nearly(n["y"], b.Y) {
		t.Errorf("recreated s:b at (%v, %v), on screen (%v, %v)", n["x"], n["y"], b.X, b.Y)
	}
}

// holdAnswersScript is test instrumentation: while window.__holdAnswers is
// true, the answers to the page's commands are held back (the commit comes
// over the stream first).
const holdAnswersScript = `(() => {
  const f = window.fetch;
  window.fetch = async (...args) => {
    const res = await f(...args);
    const url = String(args[0] && args[0].url || args[0]);
    if (/\/canvas_commands\/[^/]+\/commands?$/.test(url)) while (window.__holdAnswers) await new Promise((r) => setTimeout(r, 20));
    return res;
  };
})();`

// TestWebUICanvasOwnCommitFirst: when the stream brings the user's commit
// (and another's after it) before the answer to the command, the user's
// shape shows the server's version once the answer comes.
func TestWebUICanvasOwnCommitFirst(t *testing.T) {
	c := openCanvasUI(t, "ui-own-commit", []map[string]any{
		{"id": "s:a", "type": "geo", "x": 400, "y": 200, "w": 100, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid", "color": "blue"}},
	}, holdAnswersScript)
	p := c.p
	p.eval(`window.__holdAnswers = true`, nil)
	p.drag(450, 240, 500, 280)
	c.e.waitNodes(c.cid, "moved", func(n map[string]map[string]any) bool { return !nearly(n["s:a"]["x"], 400.0) })
	rev := c.head()
	p.poll("the move came over the stream", fmt.Sprintf(`canvasd.model.rev >= %d`, rev))
	c.apply("update_shape", map[string]any{"id": "s:a", "props": map[string]any{"color": "red"}})
	p.poll("the recolour came over the stream", fmt.Sprintf(`canvasd.model.rev >= %d`, rev+1))
	p.eval(`window.__holdAnswers = false`, nil)
	p.poll("the server's colour shown", `canvasd.view.ex.getSceneElements().find(el => el.id === 's:a').strokeColor === '#e03131'`)
}

// TestWebUICanvasColonIds: node ids with "::" in them are nodes, not the
// parts of other nodes' elements.
func TestWebUICanvasColonIds(t *testing.T) {
	c := openCanvasUI(t, "ui-colon-ids", []map[string]any{
		{"id": "n", "type": "geo", "x": 400, "y": 200, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid", "text": "label of n"}},
		{"id": "n::text", "type": "geo", "x": 600, "y": 200, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid", "color": "red"}},
		{"id": "m:", "type": "geo", "x": 400, "y": 400, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid", "text": "label of m:"}},
		{"id": "m::text", "type": "geo", "x": 600, "y": 400, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"verb": "create_edge", "args": map[string]any{"id": "e::1", "from": "n::text", "to": "m::text"}},
	})
	p := c.p
	p.click(660, 240)
	p.pollSelection("n::text selected", "n::text")
	p.drag(660, 240, 700, 300)
	nodes := c.e.waitNodes(c.cid, "n::text moved", func(n map[string]map[string]any) bool { return !nearly(n["n::text"]["x"], 600.0) })
	if n := nodes["n"]; !nearly(n["x"], 400.0) || n["props"].(map[string]any)["text"] != "label of n" {
		t.Errorf("n changed: %v", n)
	}
	p.click(460, 440)
	p.pollSelection("m: selected", "m:")
	p.drag(460, 440, 420, 500)
	nodes = c.e.waitNodes(c.cid, "m: moved", func(n map[string]map[string]any) bool { return !nearly(n["m:"]["x"], 400.0) })
	if n := nodes["m::text"]; !nearly(n["x"], 600.0) {
		t.Errorf("m::text moved with m: %v", n)
	}
	o := c.observer()
	var labels []string
	o.eval(`canvasd.view.ex.getSceneElements().filter(el => el.type === 'text').map(el => el.originalText).sort()`, &labels)
	if !slices.Equal(labels, []string{"label of m:", "label of n"}) {
		t.Errorf("labels %q", labels)
	}
	var arrow bool
	o.eval(`canvasd.view.ex.getSceneElements().some(el => el.type === 'arrow' && canvasd.view.ex.getSceneElements().some(s => s.id === el.startBinding?.elementId && s.type === 'rectangle'))`, &arrow)
	if !arrow {
		t.Errorf("the edge e::1 is not drawn between its shapes")
	}
}

// TestWebUICanvasEditsKeptThroughOutage: gestures made while the server is
// unreachable stay on screen, wait (the page says how many), and are saved
// in order once it answers again; one whose answer was lost after it
// committed is not applied twice.
func TestWebUICanvasEditsKeptThroughOutage(t *testing.T) {
	c := openCanvasUI(t, "ui-outage", []map[string]any{
		{"id": "s:a", "type": "geo", "x": 400, "y": 200, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
	}, commandNetworkScript)
	p := c.p
	rev := c.head()
	p.eval(`window.__down = "lose", true`, nil)
	p.drag(460, 240, 520, 300) // the move commits; its answers are lost
	c.e.waitNodes(c.cid, "the move committed", func(n map[string]map[string]any) bool { return nearly(n["s:a"]["x"], 460.0) })
	p.eval(`window.__down = "refuse", window.__refused = 0, true`, nil)
	p.tool("rectangle")
	p.drag(650, 350, 800, 450) // a new rectangle, queued behind the move
	p.poll("the page says what waits", `!document.getElementById('unsaved').hidden && document.getElementById('unsaved').textContent === '2 unsaved'`)
	// Past the client's own resends: a command's 1 + 3 attempts (the JS client's default retries) all refused.
	p.poll("the client's resends spent", `window.__refused >= 4`)
	var onPage int
	p.eval(`canvasd.view.ex.getSceneElements().filter(el => el.type === 'rectangle').length`, &onPage)
	if onPage != 2 {
		t.Fatalf("%d rectangles on the page during the outage, want both (nothing reverted)", onPage)
	}
	if n := c.e.nodes(c.cid); len(n) != 1 {
		t.Fatalf("the server has %d nodes during the outage, want 1", len(n))
	}
	p.eval(`window.__down = "", true`, nil)
	c.e.waitNodes(c.cid, "the rectangle saved", func(n map[string]map[string]any) bool { return len(n) == 2 })
	p.poll("nothing waits", `document.getElementById('unsaved').hidden`)
	var types []string
	for _, cm := range c.commitsAfter(rev) {
		types = append(types, cm["type"].(string))
	}
	if len(types) != 2 || types[0] != "move" && types[0] != "update_shape" || types[1] != "create_shape" {
		t.Fatalf("commits after the outage: %v, want the move once, then the rectangle", types)
	}
}
