package api

import (
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
	for deadline := time.Now().Add(20 * time.Second); id == ""; time.Sleep(50 * time.Millisecond) {
		p.eval(`(() => { const a = canvasd.view.ex.getSceneElements().find(el => el.type === 'arrow');
			return a && (canvasd.model.nodes.has(a.id) || canvasd.model.edges.has(a.id)) && !canvasd.view.ex.getAppState().newElement ? a.id : ''; })()`, &id)
		if id == "" && time.Now().After(deadline) {
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
	deadline := time.Now().Add(20 * time.Second)
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
		if time.Now().After(deadline) {
			t.Fatalf("the deleted arrow %s is still on the server; the page: %s", id, p.state())
		}
		time.Sleep(50 * time.Millisecond)
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
