package api

import (
	"context"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/canvasd/canvasd/canvas"
)

// TestWebUIExportAndImport: the web UI's main menu exports the canvas as the
// server draws it (a PNG downloaded, its red shape red) and imports a file
// chosen in the menu (replacing the canvas) and a file dropped on the
// canvas (merged into it), each after asking merge or replace.
func TestWebUIExportAndImport(t *testing.T) {
	open := uiBrowser(t, 120*time.Second)
	e := newTestEnv(t)
	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	const cid = "ui-files"
	e.must(201, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": cid, "title": "Files"})
	e.must(200, "POST", "/canvas_commands/"+cid+"/command", testAdmin, env("create_shape", 0, map[string]any{
		"id": "red", "type": "geo", "x": 0, "y": 0, "w": 200, "h": 120, "props": map[string]any{"fill": "solid", "fillColor": "#ff0000", "color": "#ff0000"}}))
	p := open(e.srv.URL + "/?canvas=" + cid + "#access_token=" + editor)
	e.diag = p.state
	p.poll("the canvas live", `document.getElementById('conn').textContent === 'live' && document.body.dataset.loaded === '`+cid+`'`)

	// Export as PNG from the main menu: a download of the server's drawing.
	dir := t.TempDir()
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: "allow", DownloadPath: dir, BrowserContextID: p.browserContext()})
		return err
	}))
	p.clickCSS(`[data-testid="main-menu-trigger"]`)
	p.clickCSS(`[data-testid="export-png"]`)
	p.poll("the export finished", `(document.body.dataset.exported || '').startsWith('png@')`)
	file := filepath.Join(dir, cid+".png")
	waitUntil(t, 20*time.Second, "the PNG downloaded", func() bool {
		st, err := os.Stat(file)
		return err == nil && st.Size() > 0
	})
	f, _ := os.Open(file)
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatalf("the download is not a PNG: %v", err)
	}
	b := img.Bounds()
	if c := color.NRGBAModel.Convert(img.At(b.Dx()/2, b.Dy()/2)).(color.NRGBA); c != (color.NRGBA{255, 0, 0, 255}) {
		t.Errorf("the exported PNG's middle is %v, want the red shape", c)
	}

	// Import a file picked from the menu, replacing the canvas.
	chart := filepath.Join(t.TempDir(), "chart.mmd")
	os.WriteFile(chart, []byte("flowchart TD\n  start[Start] --> stop[Stop]"), 0o644)
	p.do(chromedp.SetUploadFiles(chromedp.CSS(`#files-input`), []string{chart}))
	p.poll("asked merge or replace", `document.getElementById('files-import').open && document.getElementById('files-import-name').textContent === 'chart.mmd'`)
	p.clickCSS(`#files-replace`)
	e.waitNodes(cid, "the chart replaced the canvas", func(nodes map[string]map[string]any) bool {
		_, red := nodes["red"]
		return !red && nodes["start"] != nil && nodes["stop"] != nil
	})
	p.poll("the page shows the chart", `document.body.dataset.imported === 'chart.mmd@2'`)

	// Drop a JSON Canvas file on the canvas, merged into it.
	p.eval(`(() => {
		const file = new File([JSON.stringify({nodes: [{id: "dropped", type: "text", text: "from a drop", x: 400, y: 0, width: 200, height: 80}]})],
			"notes.canvas", {type: "application/json"});
		const dt = new DataTransfer();
		dt.items.add(file);
		const target = document.querySelector('#excalidraw canvas.interactive') || document.querySelector('#excalidraw canvas');
		target.dispatchEvent(new DragEvent('drop', {bubbles: true, cancelable: true, dataTransfer: dt, clientX: 600, clientY: 400}));
		return true;
	})()`, nil)
	p.poll("asked merge or replace for the drop", `document.getElementById('files-import').open && document.getElementById('files-import-name').textContent === 'notes.canvas'`)
	p.clickCSS(`#files-merge`)
	e.waitNodes(cid, "the dropped file merged into the canvas", func(nodes map[string]map[string]any) bool {
		return nodes["dropped"] != nil && nodes["start"] != nil
	})
	p.poll("the dropped card on stage", `document.body.dataset.imported === 'notes.canvas@3'`)
}
