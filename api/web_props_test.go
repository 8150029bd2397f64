package api

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The properties people draw, kept (issue 26): Excalidraw elements pasted
// in one page come back with the same properties in another page, after a
// reload and in a copy out of the editor.

// everyPropertyClipboard is an Excalidraw clipboard with every property a
// person sets (also the fixture of the mapping's unit tests).
const everyPropertyClipboard = "../web/ui/testdata/every-property.excalidraw-clipboard.json"

// lookJS gives the properties a person sets and sees of each element of a
// list (a scene, or a clipboard's elements with its files), by element id
// (a bound label by its container's id and "::label"): what must come back
// the same. The mapping's unit tests compare the same (mapping.test.ts).
const lookJS = `((els, files) => {
	const r = (v) => typeof v === 'number' ? Math.round(v * 10) / 10 : v, out = {};
	const head = (h) => h === 'dot' ? 'circle' : (h ?? null);
	for (const el of els) {
		if (el.isDeleted) continue;
		const o = {type: el.type, strokeColor: el.strokeColor, backgroundColor: el.backgroundColor, fillStyle: el.fillStyle,
			strokeWidth: el.strokeWidth, strokeStyle: el.strokeStyle, roughness: el.roughness, opacity: el.opacity,
			roundness: el.roundness ? el.roundness.type : null, link: el.link || null, locked: !!el.locked, angle: r(el.angle || 0)};
		if (!el.containerId) { o.x = r(el.x); o.y = r(el.y); }
		if (el.type !== 'text' && el.type !== 'freedraw') { o.width = r(el.width); o.height = r(el.height); }
		if (el.type === 'text') Object.assign(o, {text: el.originalText ?? el.text, fontFamily: el.fontFamily, fontSize: el.fontSize, textAlign: el.textAlign, verticalAlign: el.verticalAlign});
		if (el.points) o.points = el.points.map(q => q.map(r));
		if (el.type === 'arrow') Object.assign(o, {startArrowhead: head(el.startArrowhead), endArrowhead: head(el.endArrowhead), elbowed: !!el.elbowed,
			start: el.startBinding?.elementId ?? null, end: el.endBinding?.elementId ?? null});
		if (el.type === 'image') Object.assign(o, {scale: el.scale, crop: el.crop ?? null, file: files[el.fileId]?.dataURL ?? null});
		out[el.containerId ? el.containerId + '::label' : el.id] = o;
	}
	return out; })`

// looks are element properties by element id.
type looks map[string]map[string]any

// sceneLooks reads the looks of the elements p shows.
func sceneLooks(p *uiPage) looks {
	p.t.Helper()
	var l looks
	p.eval(lookJS+`(canvasd.view.ex.getSceneElements(), canvasd.view.ex.getFiles())`, &l)
	return l
}

// looksDiff describes where got differs from want (empty when it does not).
func looksDiff(want, got looks) string {
	var out []string
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			out = append(out, id+": missing")
			continue
		}
		for k, v := range w {
			a, _ := json.Marshal(v)
			b, _ := json.Marshal(g[k])
			if string(a) != string(b) {
				out = append(out, fmt.Sprintf("%s.%s: %s, want %s", id, k, b, a))
			}
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			out = append(out, id+": not pasted")
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// sameLooks waits until p shows want, or fails saying what differs.
func sameLooks(t *testing.T, what string, p *uiPage, want looks) {
	t.Helper()
	pl := newPoller(20*time.Second, 100*time.Millisecond)
	for {
		d := looksDiff(want, sceneLooks(p))
		if d == "" {
			return
		}
		if pl.expired() {
			p.screenshot("props-" + strings.ReplaceAll(what, " ", "-"))
			t.Fatalf("%s: the elements differ from those pasted: %s", what, d)
		}
		pl.wait()
	}
}

// pixelAt is the colour [r, g, b] Excalidraw's canvas of p shows at
// canvas point (x, y).
func pixelAt(p *uiPage, x, y float64) [3]int {
	p.t.Helper()
	sx, sy := p.screen(x, y)
	var rgb [3]int
	p.eval(fmt.Sprintf(`(() => { const c = document.querySelector('canvas.excalidraw__canvas.static'), r = c.getBoundingClientRect(), k = c.width / r.width;
		const d = c.getContext('2d').getImageData(Math.round((%v - r.x) * k), Math.round((%v - r.y) * k), 1, 1).data; return [d[0], d[1], d[2]]; })()`, sx, sy), &rgb)
	return rgb
}

// waitImageDrawn waits until p draws the image of element id (its left
// part green, as the SVG of the clipboard is), not a placeholder.
func waitImageDrawn(t *testing.T, what string, p *uiPage, el map[string]any) {
	t.Helper()
	x, y := el["x"].(float64)+el["width"].(float64)*0.1, el["y"].(float64)+el["height"].(float64)*0.5
	for pl := newPoller(10*time.Second, 50*time.Millisecond); ; pl.wait() {
		c := pixelAt(p, x, y)
		if c[1] > 120 && c[0] < 100 && c[2] < 100 {
			return
		}
		if pl.expired() {
			p.screenshot("props-image-" + strings.ReplaceAll(what, " ", "-"))
			t.Fatalf("%s: the SVG image is not drawn: rgb %v at (%.0f, %.0f)", what, c, x, y)
		}
	}
}

// allowClipboard lets p's page read and write the clipboard, as a person's
// browser asks them once, and makes it the focused page (a headless tab
// never is, and the clipboard is the focused page's).
func (p *uiPage) allowClipboard(origin string) {
	p.t.Helper()
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
			return err
		}
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			if _, err := cdp.Call(ctx, tg, browser.SetPermission, browser.SetPermissionParams{
				Permission: &browser.PermissionDescriptor{Name: name, AllowWithoutSanitization: true}, Setting: browser.PermissionSettingGranted, Origin: origin, BrowserContextID: p.browserContext()}); err != nil {
				return err
			}
		}
		return nil
	}))
}

// shortcut presses Ctrl and key (a lower-case letter) as a keyboard does,
// with the editing command the browser runs for it (copy, paste).
func (p *uiPage) shortcut(key, command string) {
	p.t.Helper()
	code := "Key" + strings.ToUpper(key)
	vk := int64(strings.ToUpper(key)[0])
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Modifiers: 2, Key: key, Code: code, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk}
		if command != "" {
			down.Commands = []string{command}
		}
		if _, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Modifiers: 2, Key: key, Code: code, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk}
		_, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, up)
		return err
	}))
}

// paste puts text on the clipboard and pastes it with Ctrl+V with the
// pointer at canvas point (x, y), where Excalidraw puts what it pastes.
func (p *uiPage) paste(text string, x, y float64) {
	p.t.Helper()
	b, _ := json.Marshal(text)
	p.eval(`(async () => { await navigator.clipboard.writeText(`+string(b)+`); return true; })().catch(e => 'clipboard: ' + e)`, nil)
	p.click(x, y) // a click on the canvas: Excalidraw takes the pastes made while it has the focus
	p.shortcut("v", "paste")
}

// copied clicks canvas point (x, y) (empty), selects every element with Ctrl+A, copies them with Ctrl+C and
// returns the clipboard's looks: what a copy out of the editor holds.
func (p *uiPage) copied(x, y float64) looks {
	p.t.Helper()
	p.do(chromedp.KeyEvent(kb.Escape))
	p.click(x, y) // on empty canvas: the keys go to Excalidraw
	p.shortcut("a", "selectAll")
	p.poll("all selected", `Object.values(canvasd.view.ex.getAppState().selectedElementIds).some(Boolean)`)
	p.eval(`navigator.clipboard.writeText('').then(() => true)`, nil)
	p.shortcut("c", "copy")
	var l looks
	for pl := newPoller(10*time.Second, 50*time.Millisecond); ; pl.wait() {
		var text string
		p.eval(`navigator.clipboard.readText()`, &text)
		if text != "" {
			var clip struct {
				Elements []map[string]any `json:"elements"`
				Files    map[string]any   `json:"files"`
			}
			if err := json.Unmarshal([]byte(text), &clip); err != nil {
				p.t.Fatalf("the copy is no Excalidraw clipboard: %v: %.200s", err, text)
			}
			b, _ := json.Marshal(clip.Elements)
			f, _ := json.Marshal(clip.Files)
			p.eval(lookJS+`(`+string(b)+`, `+string(f)+`)`, &l)
			return l
		}
		if pl.expired() {
			p.t.Fatal("Ctrl+C copied nothing")
		}
	}
}

// TestWebUIPastedPropertiesKept (issue 26): Excalidraw elements with every
// property a person sets (a custom stroke and fill colour, fill styles,
// stroke width and style, opacity, roughness, sharp and round corners, a
// link, a lock, fonts, sizes and alignment of text, arrowheads at both
// ends, straight, curved and elbow arrows, an arrow bound to two shapes, a
// line, a drawing, an embedded page, an SVG image) pasted with Ctrl+V in
// one page are on the server as they were pasted (nothing snaps to the
// palette), and come back the same in the page that pasted them, in
// another page, after a reload and in a copy out of the editor (Ctrl+C).
// A paste the server refuses shows the person why and changes nothing.
func TestWebUIPastedPropertiesKept(t *testing.T) {
	clip, err := os.ReadFile(everyPropertyClipboard)
	if err != nil {
		t.Fatal(err)
	}
	c := openCanvasUI(t, "ui-props", nil)
	p := c.p
	p.allowClipboard(c.e.srv.URL)
	// Held: the page shows what Excalidraw pasted until the test has read it.
	p.eval(`window.__holdSSE = true`, nil)
	p.paste(string(clip), 560, 300)
	nodes := c.e.waitNodes(c.cid, "pasted", func(n map[string]map[string]any) bool { return len(n) == 8 })
	var pasted looks
	p.eval(lookJS+`(canvasd.view.ex.getSceneElements(), canvasd.view.ex.getFiles())`, &pasted)
	p.eval(`window.__holdSSE = false`, nil)
	if len(pasted) != 13 {
		t.Fatalf("pasted %d elements, want 13: %v", len(pasted), pasted)
	}

	// On the server as pasted: issue 26's values by name.
	byKind := map[string]map[string]any{}
	for _, n := range nodes {
		k := n["type"].(string)
		if g, ok := n["props"].(map[string]any)["geo"].(string); ok {
			k = g
		}
		byKind[k] = n["props"].(map[string]any)
	}
	for kind, want := range map[string]map[string]any{
		"rectangle": {"color": "#c2255c", "fillColor": "#123456", "fill": "cross-hatch", "dash": "dashed", "strokeWidth": 4.0, "roughness": 2.0, "opacity": 0.37, "roundness": "sharp", "link": "https://example.com/a", "text": "Label", "font": "comic", "fontSize": 28.0, "align": "start", "verticalAlign": "start", "labelColor": "green"},
		"ellipse":   {"color": "blue", "fill": "zigzag", "strokeWidth": 1.0, "dash": "dotted", "roughness": 0.0},
		"diamond":   {"color": "red", "fill": "hachure", "locked": true},
		"text":      {"color": "#123456", "font": "mono", "size": "xl", "align": "end", "opacity": 0.8, "link": "#section"},
		"line":      {"color": "green", "routing": "curved", "fill": "hachure", "fillColor": "transparent", "opacity": 0.6},
		"embed":     {"url": "https://www.youtube.com/watch?v=dQw4w9WgXcQ"},
		"image":     {"flipX": true, "opacity": 0.9},
	} {
		for k, v := range want {
			if got := byKind[kind][k]; fmt.Sprint(got) != fmt.Sprint(v) {
				t.Errorf("%s: props.%s is %v, want %v (props %v)", kind, k, got, v, byKind[kind])
			}
		}
	}
	if u, _ := byKind["image"]["url"].(string); !strings.HasPrefix(u, "data:image/svg+xml;base64,") {
		t.Errorf("the SVG image's url is %.40q", u)
	}
	var edges []map[string]any
	b, _ := json.Marshal(c.e.snapshot(c.cid)["state"].(map[string]any)["edges"])
	json.Unmarshal(b, &edges)
	heads := map[string]bool{}
	for _, e := range edges {
		pr := e["props"].(map[string]any)
		heads[fmt.Sprintf("%v %v %v %v %v", e["from"] != "", e["to"] != "", pr["arrowheadStart"], pr["arrowheadEnd"], pr["routing"])] = true
	}
	for _, want := range []string{"true true dot triangle <nil>", "false false bar diamond-outline elbow", "false false crowfoot-many none curved"} {
		if !heads[want] {
			t.Errorf("no edge %q among %v", want, heads)
		}
	}

	// The page that pasted them, once the server's version is on screen.
	p.poll("the server's version on screen", fmt.Sprintf(`canvasd.model.rev === %d`, c.head()))
	sameLooks(t, "the page that pasted", p, pasted)
	p.do(chromedp.KeyEvent(kb.Escape))
	p.screenshot("props-pasted")
	// Another page.
	o := c.observer()
	sameLooks(t, "another page", o, pasted)
	var image map[string]any
	for _, l := range pasted {
		if l["type"] == "image" {
			image = l
		}
	}
	waitImageDrawn(t, "another page", o, image)
	o.screenshot("props-other-page")
	// A reload.
	p.do(chromedp.Reload())
	c.live(p)
	sameLooks(t, "after a reload", p, pasted)
	waitImageDrawn(t, "after a reload", p, image)
	// A copy out of the editor: all but the locked diamond (Ctrl+A leaves it out).
	want := looks{}
	for id, l := range pasted {
		if l["locked"] != true {
			want[id] = l
		}
	}
	p.allowClipboard(c.e.srv.URL)
	if d := looksDiff(want, p.copied(900, 620)); d != "" {
		t.Errorf("the copy out of the editor differs from what was pasted: %s", d)
	}

	// Refused: a link canvasd does not keep (ftp:). The person is told why; nothing changes.
	rev := c.head()
	p.do(chromedp.KeyEvent(kb.Escape))
	p.paste(`{"type":"excalidraw/clipboard","elements":[{"id":"bad","type":"rectangle","x":0,"y":0,"width":80,"height":60,"angle":0,
		"strokeColor":"#1e1e1e","backgroundColor":"transparent","fillStyle":"solid","strokeWidth":2,"strokeStyle":"solid","roughness":1,
		"opacity":100,"groupIds":[],"frameId":null,"roundness":null,"seed":1,"version":1,"versionNonce":1,"isDeleted":false,
		"boundElements":null,"updated":1,"link":"ftp://example.com/file","locked":false}],"files":{}}`, 800, 600)
	p.poll("the refusal explained", `[...document.querySelectorAll('.toast')].some(t => t.textContent.includes('refused') && t.textContent.includes('link'))`)
	p.poll("the refused paste taken back", `!canvasd.view.ex.getSceneElements().some(el => el.link === 'ftp://example.com/file')`)
	if h := c.head(); h != rev {
		t.Errorf("the refused paste changed the canvas: rev %d → %d", rev, h)
	}
	var toast string
	p.eval(`[...document.querySelectorAll('.toast')].map(t => t.textContent).join(' | ')`, &toast)
	t.Logf("the person reads: %s", toast)
}

// TestWebUIEditKeepsWhatExcalidrawCannotDraw: a person recolours a cloud
// with a semi fill and an arrow with tldraw's square and inverted heads by
// Excalidraw's colour swatches: only the colour is written (one prop each);
// the cloud, the semi fill, the label and the heads stay as they were.
func TestWebUIEditKeepsWhatExcalidrawCannotDraw(t *testing.T) {
	c := openCanvasUI(t, "ui-keep-tldraw", []map[string]any{
		{"id": "s:cloud", "type": "geo", "x": 420, "y": 200, "w": 200, "h": 120, "props": map[string]any{"geo": "cloud", "fill": "semi", "color": "blue", "text": "Cloud"}},
		{"id": "s:b", "type": "geo", "x": 780, "y": 220, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		{"verb": "create_edge", "args": map[string]any{"id": "e:1", "from": "s:cloud", "to": "s:b", "props": map[string]any{"arrowheadStart": "square", "arrowheadEnd": "inverted"}}},
	})
	p := c.p
	lastArgs := func(rev int64, typ string) map[string]any {
		t.Helper()
		for _, cm := range c.commitsAfter(rev) {
			if cm["type"] == typ {
				return cm["args"].(map[string]any)
			}
		}
		t.Fatalf("no %s after rev %d: %v", typ, rev, c.commitsAfter(rev))
		return nil
	}
	// The cloud: selected by a click inside it (it is filled), recoloured red by the stroke swatch.
	rev := c.head()
	p.click(520, 290)
	p.pollSelection("the cloud selected", "s:cloud")
	p.clickCSS(`#props-toggle`) // the property panel opened (it stays open for the next selection)
	p.clickCSS(`[data-testid="color-top-pick-#e03131"]`)
	nodes := c.e.waitNodes(c.cid, "recoloured", func(n map[string]map[string]any) bool {
		return n["s:cloud"]["props"].(map[string]any)["color"] == "red"
	})
	if b, _ := json.Marshal(lastArgs(rev, "update_shape")["props"]); string(b) != `{"color":"red"}` {
		t.Errorf("the recolour wrote props %s, want the colour alone", b)
	}
	if b, _ := json.Marshal(nodes["s:cloud"]["props"]); string(b) != `{"color":"red","fill":"semi","geo":"cloud","text":"Cloud"}` {
		t.Errorf("the cloud is %s after the recolour", b)
	}
	// The arrow: selected by a click on it, recoloured blue.
	p.do(chromedp.KeyEvent(kb.Escape))
	var mid [2]float64
	p.eval(`(() => { const a = canvasd.view.ex.getSceneElements().find(el => el.id === 'e:1'), l = a.points[a.points.length - 1]; return [a.x + l[0] / 2, a.y + l[1] / 2]; })()`, &mid)
	rev = c.head()
	p.click(mid[0], mid[1])
	p.poll("the arrow selected", `canvasd.view.ex.getAppState().selectedElementIds['e:1'] === true`)
	p.clickCSS(`[data-testid="color-top-pick-#1971c2"]`)
	e := waitEdgeOnServer(c, "the arrow recoloured", "e:1", func(e map[string]any) bool { return e["props"].(map[string]any)["color"] == "blue" })
	if b, _ := json.Marshal(lastArgs(rev, "update_edge")["props"]); string(b) != `{"color":"blue"}` {
		t.Errorf("the recolour wrote props %s, want the colour alone", b)
	}
	if pr := e["props"].(map[string]any); pr["arrowheadStart"] != "square" || pr["arrowheadEnd"] != "inverted" {
		t.Errorf("the arrow's heads after the recolour: %v", pr)
	}
	// Another page draws them so: a red ellipse with the semi fill, a blue arrow with a bar and an outlined triangle.
	o := c.observer()
	o.poll("drawn as kept", `(() => { const els = new Map(canvasd.view.ex.getSceneElements().map(el => [el.id, el])), s = els.get('s:cloud'), a = els.get('e:1');
		return s.type === 'ellipse' && s.strokeColor === '#e03131' && s.backgroundColor === '#f8f9fa' && a.strokeColor === '#1971c2' &&
			a.startArrowhead === 'bar' && a.endArrowhead === 'triangle_outline'; })()`)
	o.screenshot("keep-tldraw")
}
