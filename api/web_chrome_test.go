package api

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/canvasd/canvasd/canvas"
)

// The page's chrome around the canvas and the document (issue 32, items 4,
// 6 and 7), driven as a person does: the New document dialog and where its
// card lands, the history that follows the document, the diff in a narrow
// panel, Markdown lists, and Excalidraw's chrome fitted to canvasd.

// combo presses key with modifiers (chromedp's Modifier bits: 2 Ctrl, 8
// Shift) as a keyboard does: key down and key up.
func (p *uiPage) combo(key string, mods int64) {
	p.t.Helper()
	code := "Key" + strings.ToUpper(key)
	vk := int64(strings.ToUpper(key)[0])
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			ev := input.DispatchKeyEventParams{Type: typ, Modifiers: mods, Key: key, Code: code, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk}
			if _, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, ev); err != nil {
				return err
			}
		}
		return nil
	}))
}

// stageBox is the canvas's area on the page: left, top, width, height.
func stageBox(p *uiPage) [4]float64 {
	p.t.Helper()
	var b [4]float64
	p.eval(`(() => { const r = document.getElementById('stage').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`, &b)
	return b
}

// TestWebUINewDocument: New document asks the name (one no document of the
// canvas has) and language (the language follows the extension typed), and the card lands in free room in
// the view (clear of the shapes and the arrow in its middle), on screen once
// the panel is open; the canvas keeps its width when the panel opens.
func TestWebUINewDocument(t *testing.T) {
	c := openCanvasUI(t, "ui-new-doc", []map[string]any{
		{"id": "big", "type": "geo", "x": 400, "y": 180, "w": 300, "h": 260, "props": map[string]any{"geo": "rectangle"}},
		{"id": "side", "type": "geo", "x": 820, "y": 240, "w": 110, "h": 100, "props": map[string]any{"geo": "ellipse"}},
		{"verb": "create_edge", "args": map[string]any{"id": "link", "from": "big", "to": "side"}},
		{"id": "d:old", "type": "doc", "name": "notes.md", "x": -900, "y": 0, "w": 200, "h": 100, "props": map[string]any{"language": "markdown", "text": "# Notes\n"}},
	})
	p := c.p
	before := stageBox(p)

	p.clickCSS(`#new-doc`)
	p.poll("the dialog asks a name", `document.getElementById('new-doc-dialog')?.open && document.getElementById('new-doc-name').value === 'notes-2.md' &&
		document.getElementById('new-doc-language').value === 'markdown'`)
	p.do(chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)), chromedp.KeyEvent("plan.py"))
	p.poll("the language follows the extension", `document.getElementById('new-doc-language').value === 'python'`)
	p.screenshot("new-doc-dialog")
	p.do(chromedp.KeyEvent(kb.Enter))

	var id string
	nodes := c.e.waitNodes(c.cid, "the document created", func(n map[string]map[string]any) bool {
		for k, v := range n {
			if v["type"] == "doc" && k != "d:old" {
				id = k
				return true
			}
		}
		return false
	})
	d := nodes[id]
	if d["name"] != "plan.py" || d["props"].(map[string]any)["language"] != "python" {
		t.Errorf("the document: name %v, props %v; want plan.py in python", d["name"], d["props"])
	}
	f := func(n map[string]any, k string) float64 { return n[k].(float64) }
	x, y, w, h := f(d, "x"), f(d, "y"), f(d, "w"), f(d, "h")
	for _, o := range []string{"big", "side"} {
		n := nodes[o]
		if x < f(n, "x")+f(n, "w") && f(n, "x") < x+w && y < f(n, "y")+f(n, "h") && f(n, "y") < y+h {
			t.Errorf("the card (%v %v %v %v) lies over %s", x, y, w, h, o)
		}
	}
	// The arrow runs between the shapes' middles: no point of it inside the card.
	for i := 0; i <= 100; i++ {
		s := float64(i) / 100
		ax, ay := 550+(875-550)*s, 310+(290-310)*s
		if ax > x && ax < x+w && ay > y && ay < y+h {
			t.Fatalf("the card (%v %v %v %v) lies over the arrow at (%.0f, %.0f)", x, y, w, h, ax, ay)
		}
	}

	p.poll("the document open", `document.getElementById('doc-panel')?.dataset.nodeId === '`+id+`' && !document.getElementById('doc-panel').hidden`)
	p.pollFor(5*time.Second, "the panel laid out", `document.getElementById('right').getBoundingClientRect().width > 400`)
	after := stageBox(p)
	if after[2] < before[2]-1 {
		t.Errorf("the canvas shrank from %.0f to %.0f px wide when the panel opened", before[2], after[2])
	}
	p.screenshot("new-doc-placed")
	// Its corners on screen, inside the canvas's area, nothing over them.
	for _, pt := range [][2]float64{{x + 10, y + 10}, {x + w - 10, y + 10}, {x + 10, y + h - 10}, {x + w - 10, y + h - 10}} {
		sx, sy := p.screen(pt[0], pt[1])
		if sx < after[0] || sx > after[0]+after[2] || sy < after[1] || sy > after[1]+after[3] {
			t.Errorf("the card's corner (%v, %v) is off the canvas on screen at (%.0f, %.0f); the canvas: %v", pt[0], pt[1], sx, sy, after)
			continue
		}
		p.waitCanvasAt(sx, sy)
	}
}

// TestWebUIDocumentBesideCanvasList: with a document open, a person clicks
// Canvases in the top bar: the list comes back beside the canvas, which
// keeps at least Excalidraw's 730 px (narrower, Excalidraw turns to its phone
// layout); the panel gives up the room. Canvases again puts the list aside.
// On a canvas of 731 px, the narrowest of Excalidraw's desktop layout, the
// Style button stays clear of Excalidraw's toolbar and opens the panel.
func TestWebUIDocumentBesideCanvasList(t *testing.T) {
	c := openCanvasUI(t, "ui-doc-list", []map[string]any{
		{"id": "d:plan", "type": "doc", "name": "plan.md", "x": 200, "y": 100, "w": 300, "h": 200, "props": map[string]any{"language": "markdown", "text": "# Plan\n"}},
		{"id": "s:box", "type": "geo", "x": 250, "y": 380, "w": 100, "h": 60, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
	})
	p := c.p
	p.dblclick(350, 200)
	p.poll("the document open", `document.getElementById('doc-panel')?.dataset.nodeId === 'd:plan' && !document.getElementById('doc-panel').hidden`)
	p.poll("the list aside", `document.getElementById('sidebar').getBoundingClientRect().width === 0`)
	withDoc := stageBox(p)
	const phone = `!!document.querySelector('#excalidraw .excalidraw--mobile')`

	p.clickCSS(`#toggle-sidebar`)
	p.poll("the list shown", `document.getElementById('sidebar').getBoundingClientRect().width > 0 &&
		[...document.querySelectorAll('#canvas-list li')].some(li => li.dataset.canvasId === 'ui-doc-list')`)
	p.painted()
	p.screenshot("doc-beside-canvas-list")
	st := stageBox(p)
	var right float64
	p.eval(`document.getElementById('right').getBoundingClientRect().width`, &right)
	if st[2] < 730 {
		t.Errorf("with the list and a document shown the canvas is %.0f px wide (%.0f before the list), below Excalidraw's 730", st[2], withDoc[2])
	}
	if right < 380 {
		t.Errorf("the document panel is %.0f px wide beside the list", right)
	}
	var mobile bool
	p.eval(phone, &mobile)
	if mobile {
		t.Errorf("Excalidraw turned to its phone layout with the list shown")
	}

	p.clickCSS(`#toggle-sidebar`)
	p.poll("the list aside again", `document.getElementById('sidebar').getBoundingClientRect().width === 0`)
	if st := stageBox(p); st[2] < withDoc[2]-1 {
		t.Errorf("the list put aside, the canvas is %.0f px wide, %.0f before", st[2], withDoc[2])
	}

	// The window narrowed until the canvas is 731 px wide, a shape selected.
	resize := func(width int64) {
		p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: width, Height: 860, DeviceScaleFactor: 1})
			return err
		}))
	}
	// The panels beside the canvas narrow with the window too: each step corrects the last.
	var width int64
	p.eval(`innerWidth`, &width)
	for range 5 {
		stage := int64(stageBox(p)[2])
		if stage == 731 {
			break
		}
		width += 731 - stage
		resize(width)
		p.poll("the window resized", `innerWidth === `+fmt.Sprint(width))
	}
	p.poll("the canvas 731 px wide", `Math.round(document.getElementById('stage').getBoundingClientRect().width) === 731 && !(`+phone+`)`)
	p.click(300, 410)
	p.pollSelection("the box selected", "s:box")
	p.poll("the Style button shown", `getComputedStyle(document.getElementById('props-toggle')).display !== 'none'`)
	p.screenshot("style-narrow")
	var overlap struct {
		Button, Toolbar [4]float64
		Apart           bool
	}
	p.eval(`(() => { const b = document.getElementById('props-toggle').getBoundingClientRect();
		const t = document.querySelector('#excalidraw .App-toolbar').getBoundingClientRect();
		return {button: [b.left, b.top, b.right, b.bottom], toolbar: [t.left, t.top, t.right, t.bottom],
			apart: b.right <= t.left || t.right <= b.left || b.bottom <= t.top || t.bottom <= b.top}; })()`, &overlap)
	if !overlap.Apart {
		t.Errorf("on a canvas 731 px wide the Style button %v overlaps Excalidraw's toolbar %v", overlap.Button, overlap.Toolbar)
	}
	p.clickCSS(`#props-toggle`)
	p.poll("the panel open", `document.querySelector('#excalidraw .App-menu__left')?.getBoundingClientRect().width > 0 &&
		getComputedStyle(document.querySelector('#excalidraw .App-menu__left')).visibility === 'visible' &&
		document.getElementById('props-toggle').getAttribute('aria-expanded') === 'true'`)
	p.screenshot("style-narrow-open")
	// The opacity slider's value (100 for the box) sits at the slider's
	// right end, whole inside the panel: it was placed while the panel was
	// closed, by a width a closed panel must still have.
	var bubble struct {
		Text                  string
		Bubble, Slider, Panel []float64
	}
	p.eval(`(() => { const q = (s) => document.querySelector('#excalidraw .App-menu__left ' + s), box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.right]; };
		return {text: q('.value-bubble').textContent, bubble: box(q('.value-bubble')), slider: box(q('.range-input')), panel: box(q('.range-input').closest('.App-menu__left'))}; })()`, &bubble)
	if b, s, pn := bubble.Bubble, bubble.Slider, bubble.Panel; bubble.Text != "100" || b[0] < pn[0] || b[1] > pn[1] || (b[0]+b[1])/2 < (s[0]+s[1])/2 {
		t.Errorf("the opacity slider's value %q spans %v, the slider %v, the panel %v: want 100 on the slider's right half, inside the panel", bubble.Text, b, s, pn)
	}
}

// TestWebUIDocumentHistoryFollows: the history shown follows the document
// (another actor's edit, a restore) without History being clicked again; the
// unified diff names the document, not its node; the side-by-side diff in
// the narrow panel wraps between words.
func TestWebUIDocumentHistoryFollows(t *testing.T) {
	const text = "# Plan\n\nThe first release ships the canvas, the documents and the agent together on one server.\n"
	c := openCanvasUI(t, "ui-doc-history", []map[string]any{
		{"id": "d:plan", "type": "doc", "name": "plan.md", "x": 200, "y": 100, "w": 300, "h": 200, "props": map[string]any{"language": "markdown", "text": text}},
	})
	p := c.p
	p.dblclick(350, 200)
	p.poll("the document open", `document.getElementById('doc-panel')?.dataset.nodeId === 'd:plan' && document.querySelector('#doc-panel .cm-content')?.textContent.includes('first release')`)
	p.clickCSS(`#doc-snapshot`)
	p.do(chromedp.SendKeys(chromedp.CSS(`#snapshot-label`), "v1\r"))
	p.poll("the history with the snapshot", `[...document.querySelectorAll('.timeline li.snap')].some(li => li.textContent.includes('v1'))`)
	var revs int
	p.eval(`document.querySelectorAll('.timeline li.rev').length`, &revs)

	c.apply("replace_lines", map[string]any{"node_id": "d:plan", "start_line": 3, "end_line": 3,
		"new_content": "The second release ships the canvas, the documents and the agent apart, each on a server of its own."})
	p.poll("the remote edit listed without a click", fmt.Sprintf(`document.querySelectorAll('.timeline li.rev').length === %d`, revs+1))

	p.clickCSS(`#doc-diff`)
	p.poll("the unified diff", `!!document.querySelector('.doc-side pre.diff.unified .add')`)
	var heads []string
	p.eval(`[...document.querySelectorAll('.doc-side pre.diff.unified div')].slice(0, 2).map(d => d.textContent)`, &heads)
	if len(heads) != 2 || !strings.HasPrefix(heads[0], "--- plan.md") || !strings.HasPrefix(heads[1], "+++ plan.md") {
		t.Errorf("the unified diff's headers %q, want the document's name", heads)
	}
	p.clickCSS(`.doc-side button.diff-format`)
	p.poll("the side-by-side diff", `!!document.querySelector('.doc-side table.diff.split tr.modify td.new')`)
	p.screenshot("doc-diff-split-narrow")
	var got struct {
		Width  float64
		Broken []string
		Lines  float64
	}
	p.eval(`(() => { const broken = []; let lines = 0;
		for (const td of document.querySelectorAll('.doc-side table.diff td.old, .doc-side table.diff td.new')) {
			const t = td.firstChild; if (!t) continue;
			lines = Math.max(lines, td.getBoundingClientRect().height / parseFloat(getComputedStyle(td).lineHeight));
			for (const m of t.textContent.matchAll(/\S+/g)) {
				const r = document.createRange(); r.setStart(t, m.index); r.setEnd(t, m.index + m[0].length);
				if ([...r.getClientRects()].filter(x => x.width > 0).length > 1) broken.push(m[0]);
			}
		}
		return {width: document.querySelector('.doc-side').getBoundingClientRect().width, broken, lines}; })()`, &got)
	if got.Lines < 2 {
		t.Fatalf("the diff's lines did not wrap (%.1f lines at most; the panel %.0f px): the test shows nothing", got.Lines, got.Width)
	}
	if len(got.Broken) > 0 {
		t.Errorf("words broken across lines in the side-by-side diff (panel %.0f px): %q", got.Width, got.Broken)
	}

	p.clickCSS(`#doc-timeline`)
	p.poll("the history", fmt.Sprintf(`document.querySelectorAll('.timeline li.rev').length === %d`, revs+1))
	p.clickCSS(`.timeline li.snap button.restore`)
	c.e.waitNodes(c.cid, "restored", func(n map[string]map[string]any) bool {
		return n["d:plan"]["props"].(map[string]any)["text"] == text
	})
	p.poll("the restore listed without a click", fmt.Sprintf(`document.querySelectorAll('.timeline li.rev').length === %d &&
		document.querySelector('.timeline li.rev').textContent.includes('revert_to_snapshot')`, revs+2))
	p.screenshot("doc-history-follows")
}

// TestWebUIDocumentMarkdownList: a Markdown list typed in the editor, the
// markers typed by the person after Enter continued the list, and a line
// typed without one, comes out with one marker per line.
func TestWebUIDocumentMarkdownList(t *testing.T) {
	c := openCanvasUI(t, "ui-doc-list", []map[string]any{
		{"id": "d:list", "type": "doc", "name": "list.md", "x": 200, "y": 100, "w": 300, "h": 200, "props": map[string]any{"language": "markdown", "text": "# List\n"}},
	})
	p := c.p
	p.dblclick(350, 200)
	p.poll("the document open, its grammar loaded", `document.getElementById('doc-panel')?.dataset.nodeId === 'd:list' && document.querySelectorAll('#doc-panel .cm-line span[class]').length > 0`)
	p.clickCSS(`#doc-panel .cm-line:nth-child(1)`)
	p.do(chromedp.KeyEvent(kb.End), pressEnter, chromedp.KeyEvent("- one"), pressEnter, chromedp.KeyEvent("- two"), pressEnter, chromedp.KeyEvent("three"))
	want := "# List\n- one\n- two\n- three\n"
	var got string
	c.e.waitNodes(c.cid, "the list on the server", func(n map[string]map[string]any) bool {
		got, _ = n["d:list"]["props"].(map[string]any)["text"].(string)
		return strings.Contains(got, "three")
	})
	p.screenshot("doc-markdown-list")
	if got != want && got != strings.TrimSuffix(want, "\n") {
		t.Errorf("the list typed came out as %q, want %q", got, want)
	}
}

// TestWebUIExcalidrawChrome: no zoom controls without a canvas; the main
// menu and its help name no Excalidraw sites; no second undo/redo, and
// Ctrl+Z / Ctrl+Shift+Z on the canvas are the server's undo and redo;
// picking a tool leaves the canvas free (the property panel waits for a
// selection), so the first drag draws; "Sign out" asks first.
func TestWebUIExcalidrawChrome(t *testing.T) {
	c := openCanvasUI(t, "ui-chrome", []map[string]any{
		{"id": "seed", "type": "geo", "x": 600, "y": 300, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle"}},
	})
	p := c.p
	const visibleIn = `(sel) => [...document.querySelectorAll(sel)].filter(el => { const r = el.getBoundingClientRect(), s = getComputedStyle(el);
		return r.width > 0 && r.height > 0 && s.visibility === 'visible' && s.display !== 'none'; })`
	var n int
	p.eval(`(`+visibleIn+`)('#excalidraw .undo-redo-buttons button, #excalidraw [aria-label="Undo"], #excalidraw [aria-label="Redo"]').length`, &n)
	if n != 0 {
		t.Errorf("%d of Excalidraw's undo/redo buttons shown", n)
	}

	// The menu and its help: no links to Excalidraw's sites.
	p.clickCSS(`[data-testid="main-menu-trigger"]`)
	p.poll("the menu open", `!!document.querySelector('[data-testid="export-png"]')`)
	foreign := `(` + visibleIn + `)('#excalidraw a, .excalidraw a').map(a => a.href + ' ' + a.textContent).filter(s => /excalidraw|github|twitter|x\.com|discord/i.test(s))`
	var links []string
	p.eval(foreign, &links)
	if len(links) > 0 {
		t.Errorf("the menu links to %q", links)
	}
	p.clickCSS(`[data-testid="help-menu-item"]`)
	p.poll("the help open", `!!document.querySelector('.HelpDialog')`)
	p.screenshot("chrome-help")
	p.eval(foreign, &links)
	if len(links) > 0 {
		t.Errorf("the help links to %q", links)
	}
	p.do(chromedp.MouseClickXY(1330, 400)) // beside the dialog, on its backdrop
	p.poll("the help closed", `!document.querySelector('.HelpDialog')`)

	// A tool picked: no panel over the canvas; the first drag, at its left, draws.
	p.tool("rectangle")
	p.eval(`(`+visibleIn+`)('#excalidraw .App-menu__left').length`, &n)
	if n != 0 {
		p.screenshot("chrome-panel-before-selection")
		t.Errorf("the property panel is shown with nothing selected")
	}
	st := stageBox(p)
	p.dragScreen(st[0]+30, st[1]+180, st[0]+170, st[1]+280)
	var drawn string
	c.e.waitNodes(c.cid, "the first drag drew a rectangle", func(n map[string]map[string]any) bool {
		for id := range n {
			if id != "seed" {
				drawn = id
				return true
			}
		}
		return false
	})
	p.poll("the Style button shown for the selection, the panel collapsed", `(`+visibleIn+`)('#props-toggle').length === 1 && (`+visibleIn+`)('#excalidraw .App-menu__left').length === 0`)
	p.screenshot("chrome-drawn")

	// Ctrl+Z, then Ctrl+Shift+Z and Ctrl+Y: the server's undo and redo.
	// The page has seen the server's head (a person presses the next key once the last one showed).
	seen := func() {
		t.Helper()
		p.poll("the page at the server's head", fmt.Sprintf(`canvasd.model.rev === %d`, c.head()))
	}
	last := func() string {
		cs := c.commitsAfter(0)
		return cs[len(cs)-1]["type"].(string)
	}
	seen()
	p.combo("z", 2)
	c.e.waitNodes(c.cid, "Ctrl+Z undid the drawing on the server", func(n map[string]map[string]any) bool { return n[drawn] == nil })
	if l := last(); l != "undo" {
		t.Errorf("Ctrl+Z became %s, want the server's undo", l)
	}
	seen()
	p.combo("z", 2|8)
	c.e.waitNodes(c.cid, "Ctrl+Shift+Z redid it", func(n map[string]map[string]any) bool { return n[drawn] != nil })
	if l := last(); l != "redo" {
		t.Errorf("Ctrl+Shift+Z became %s, want the server's redo", l)
	}
	seen()
	p.combo("z", 2)
	c.e.waitNodes(c.cid, "undone again", func(n map[string]map[string]any) bool { return n[drawn] == nil })
	seen()
	p.combo("y", 2)
	c.e.waitNodes(c.cid, "Ctrl+Y redid it", func(n map[string]map[string]any) bool { return n[drawn] != nil })
	seen()
	// The bar's Undo clicked, then Ctrl+Shift+Z with the focus on that button: the server's redo too.
	p.clickCSS(`#undo`)
	c.e.waitNodes(c.cid, "the bar's Undo", func(n map[string]map[string]any) bool { return n[drawn] == nil })
	seen()
	p.combo("z", 2|8)
	c.e.waitNodes(c.cid, "Ctrl+Shift+Z after the bar's Undo redid it", func(n map[string]map[string]any) bool { return n[drawn] != nil })

	// Sign out asks first.
	var label string
	p.eval(`document.getElementById('signout').textContent`, &label)
	if label != "Sign out" {
		t.Errorf("the button says %q", label)
	}
	p.clickCSS(`#signout`)
	p.poll("asked before signing out", `document.getElementById('signout-dialog')?.open`)
	p.screenshot("chrome-signout")
	p.clickCSS(`#signout-cancel`)
	p.poll("still signed in", `!document.getElementById('signout-dialog') && !!localStorage.getItem('canvasd.token') && !document.getElementById('token-dialog').open`)
	p.clickCSS(`#signout`)
	p.poll("asked again", `document.getElementById('signout-dialog')?.open`)
	p.clickCSS(`#signout-confirm`)
	p.poll("signed out", `!localStorage.getItem('canvasd.token') && document.getElementById('token-dialog').open`)
}

// TestWebUIExcalidrawChromeStylePanel: with a shape selected, Excalidraw's
// property panel is collapsed to a Style button beside the main menu, so a
// click or a drag at the canvas's left (where the panel was) reaches the
// canvas; a click on Style opens the panel (a swatch recolours the
// selection), another closes it; S opens it with the stroke colour picker,
// Escape closes both.
func TestWebUIExcalidrawChromeStylePanel(t *testing.T) {
	c := openCanvasUI(t, "ui-style-panel", []map[string]any{
		{"id": "s:mid", "type": "geo", "x": 600, "y": 300, "w": 120, "h": 80, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
		// On screen at the canvas's left, 50 to 130 px in, 200 to 260 px down: under the panel when it was open.
		{"id": "s:left", "type": "geo", "x": 200, "y": 200, "w": 80, "h": 60, "props": map[string]any{"geo": "rectangle", "fill": "solid"}},
	})
	p := c.p
	const visibleIn = `(sel) => [...document.querySelectorAll(sel)].filter(el => { const r = el.getBoundingClientRect(), s = getComputedStyle(el);
		return r.width > 0 && r.height > 0 && s.visibility === 'visible' && s.display !== 'none'; })`
	panelShown := `(` + visibleIn + `)('#excalidraw .App-menu__left').length > 0`
	p.click(660, 340)
	p.pollSelection("the middle shape selected", "s:mid")
	// The shape at the left, where the panel was: a click selects it, the first drag moves it.
	p.click(240, 230)
	p.pollSelection("the left shape selected by a click where the panel was", "s:left")
	p.drag(240, 230, 340, 330)
	c.e.waitNodes(c.cid, "the first drag moved the left shape", func(n map[string]map[string]any) bool {
		return n["s:left"]["x"].(float64) > 250
	})

	p.poll("the Style button shown", `(`+visibleIn+`)('#props-toggle').length === 1`)
	var box [2]float64
	p.eval(`(() => { const r = document.getElementById('props-toggle').getBoundingClientRect(); return [r.width, r.height]; })()`, &box)
	if box[0]*box[1] > 100*40 {
		t.Errorf("the Style button is %.0f×%.0f px", box[0], box[1])
	}
	var shown bool
	p.eval(panelShown, &shown)
	if shown {
		t.Errorf("the property panel covers the canvas as soon as a shape is selected")
	}
	p.screenshot("style-collapsed")

	// Style opens the panel; a swatch recolours; Style again closes it.
	p.clickCSS(`#props-toggle`)
	p.poll("the panel open", panelShown+` && document.getElementById('props-toggle').getAttribute('aria-expanded') === 'true'`)
	p.screenshot("style-open")
	p.clickCSS(`[data-testid="color-top-pick-#e03131"]`)
	c.e.waitNodes(c.cid, "recoloured by the panel", func(n map[string]map[string]any) bool {
		return n["s:left"]["props"].(map[string]any)["color"] == "red"
	})
	p.clickCSS(`#props-toggle`)
	p.poll("the panel closed", `!(`+panelShown+`) && document.getElementById('props-toggle').getAttribute('aria-expanded') === 'false'`)

	// The keyboard: Excalidraw's S opens the stroke colour picker, the panel with it; Escape closes them.
	p.do(chromedp.KeyEvent("s"))
	p.poll("S opened the stroke picker and the panel", panelShown+` && canvasd.view.ex.getAppState().openPopup === 'elementStroke'`)
	p.painted()
	p.screenshot("style-stroke-key")
	p.do(chromedp.KeyEvent(kb.Escape))
	p.poll("Escape closed the picker and the panel", `!(`+panelShown+`) && !canvasd.view.ex.getAppState().openPopup`)
}

// TestWebUINoCanvasChrome: with no canvas open, none of Excalidraw's
// controls (zoom, undo) show on the empty stage.
func TestWebUINoCanvasChrome(t *testing.T) {
	open := uiBrowser(t, 60*time.Second)
	e := newTestEnv(t)
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	p := open(e.srv.URL + "/#access_token=" + editor)
	p.poll("no canvas", `!document.getElementById('canvas-list-empty').hidden && document.body.classList.contains('no-canvas')`)
	p.pollFor(10*time.Second, "Excalidraw mounted", `!!document.querySelector('#excalidraw .excalidraw')`)
	var shown []string
	p.eval(`[...document.querySelectorAll('#excalidraw button, #excalidraw [role=button]')].filter(el => { const r = el.getBoundingClientRect();
		return r.width > 0 && getComputedStyle(el).visibility === 'visible'; }).map(el => el.getAttribute('aria-label') || el.title || el.className)`, &shown)
	p.screenshot("no-canvas-chrome")
	if len(shown) > 0 {
		t.Errorf("with no canvas open the stage shows %q", shown)
	}
}

// TestWebUIScreenshotForREADME takes docs/web-ui.png, the README's picture
// of the UI: a small canvas (a frame of shapes joined by arrows, a note, a
// document card) with the document open and its diff since a snapshot. It
// runs when CANVASD_UI_SCREENSHOT names the file to write:
//
//	make ui && CANVASD_UI_SCREENSHOT=$PWD/docs/web-ui.png go test ./api -run TestWebUIScreenshotForREADME
func TestWebUIScreenshotForREADME(t *testing.T) {
	out := os.Getenv("CANVASD_UI_SCREENSHOT")
	if out == "" {
		t.Skip("CANVASD_UI_SCREENSHOT is not set")
	}
	const plan = "# Launch plan\n\n- Draft the spec\n- Review it with the team\n- Ship on Friday\n"
	c := openCanvasUI(t, "launch", []map[string]any{
		{"id": "week", "type": "frame", "name": "Week 1", "x": 170, "y": 110, "w": 540, "h": 330},
		{"id": "draft", "type": "geo", "parent_id": "week", "x": 200, "y": 150, "w": 160, "h": 80, "props": map[string]any{"geo": "rectangle", "text": "Draft spec", "color": "blue", "fill": "semi", "size": "m"}},
		{"id": "review", "type": "geo", "parent_id": "week", "x": 450, "y": 150, "w": 160, "h": 80, "props": map[string]any{"geo": "ellipse", "text": "Review", "color": "green", "fill": "semi", "size": "m"}},
		{"id": "ship", "type": "geo", "parent_id": "week", "x": 450, "y": 310, "w": 160, "h": 100, "props": map[string]any{"geo": "diamond", "text": "Ship?", "color": "orange", "fill": "semi", "size": "m"}},
		{"id": "idea", "type": "note", "parent_id": "week", "x": 210, "y": 280, "w": 150, "h": 130, "props": map[string]any{"text": "Agent: split the spec into two docs", "color": "yellow", "size": "m"}},
		{"verb": "create_edge", "args": map[string]any{"id": "e1", "from": "draft", "to": "review"}},
		{"verb": "create_edge", "args": map[string]any{"id": "e2", "from": "review", "to": "ship"}},
		{"id": "d:plan", "type": "doc", "name": "plan.md", "x": 740, "y": 130, "w": 220, "h": 190, "props": map[string]any{"language": "markdown", "text": plan}},
	})
	c.e.must(201, "POST", "/api/canvases/launch/snapshots", testAdmin, map[string]any{"label": "v1"})
	c.apply("replace_lines", map[string]any{"node_id": "d:plan", "start_line": 5, "end_line": 5, "new_content": "- Ship on Monday, after the review"})
	p := c.p
	p.poll("the edit shown", `canvasd.model.rev === `+fmt.Sprint(c.head()))
	p.dblclick(850, 220)
	p.poll("the document open", `document.getElementById('doc-panel')?.dataset.nodeId === 'd:plan'`)
	p.clickCSS(`#doc-diff`)
	p.poll("the diff shown", `!!document.querySelector('.doc-side pre.diff.unified .add')`)
	p.eval(`canvasd.view.ex.updateScene({appState: {zoom: {value: 1}, scrollX: -135, scrollY: -40}}), true`, nil)
	p.click(600, 520) // nothing selected
	p.pollSelection("nothing selected")
	p.eval(`document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true)))))`, nil)
	p.clickCSS(`#doc-panel .cm-line:nth-child(5)`)
	shot, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes", out, len(shot))
}

// TestWebUIDocumentOpenedByDoubleClick: a document card opened by a
// double-click is let go (no selection, so no property panel over the
// canvas), its long name is shown whole in the panel's bar, and its long line
// wraps in the editor instead of running off the panel's side.
func TestWebUIDocumentOpenedByDoubleClick(t *testing.T) {
	long := strings.Repeat("a long line of prose that goes on ", 12) + "END"
	c := openCanvasUI(t, "ui-doc-dblclick", []map[string]any{
		{"id": "d:long", "type": "doc", "name": "notes-of-the-design-review-2026-12.txt", "x": 200, "y": 100, "w": 300, "h": 200, "props": map[string]any{"text": "first\n" + long + "\n"}},
	})
	p := c.p
	p.dblclick(350, 200)
	p.poll("the document open", `document.getElementById('doc-panel')?.dataset.nodeId === 'd:long' && document.querySelectorAll('#doc-panel .cm-line').length >= 2`)
	p.screenshot("doc-opened-by-dblclick")
	var title struct {
		Text             string
		ScrollW, ClientW float64
	}
	p.eval(`(() => { const t = document.querySelector('#doc-panel .doc-title'); return {text: t.textContent, scrollW: t.scrollWidth, clientW: t.clientWidth}; })()`, &title)
	if !strings.HasPrefix(title.Text, "notes-of-the-design-review-2026-12.txt") || title.ScrollW > title.ClientW+1 {
		t.Errorf("the document's title %q is cut short: %v px of it shown in %v", title.Text, title.ClientW, title.ScrollW)
	}
	var lay struct{ ScrollW, ClientW, LongH, FirstH float64 }
	p.eval(`(() => { const s = document.querySelector('#doc-panel .cm-scroller'), l = document.querySelectorAll('#doc-panel .cm-line');
		return {scrollW: s.scrollWidth, clientW: s.clientWidth, longH: l[1].getBoundingClientRect().height, firstH: l[0].getBoundingClientRect().height}; })()`, &lay)
	if lay.ScrollW > lay.ClientW+1 || lay.LongH < 2*lay.FirstH {
		t.Errorf("the long line does not wrap: the editor scrolls %v px wide in %v, the line is %v px high (one line %v)", lay.ScrollW, lay.ClientW, lay.LongH, lay.FirstH)
	}
	var panel bool
	p.eval(`document.getElementById('stage').classList.contains('shape-props')`, &panel)
	if panel {
		t.Errorf("the property panel shows for the card opened by a double-click")
	}
	p.pollSelection("the card let go after the double-click")
	// Typed on the wrapped line, the text lands on that line.
	p.clickCSS(`#doc-panel .cm-line:nth-child(2)`)
	p.do(chromedp.KeyEvent(kb.End), chromedp.KeyEvent("!"))
	c.e.waitNodes(c.cid, "the typing on the server", func(n map[string]map[string]any) bool {
		got, _ := n["d:long"]["props"].(map[string]any)["text"].(string)
		lines := strings.Split(got, "\n")
		return len(lines) > 1 && strings.Contains(lines[1], "!")
	})
}
