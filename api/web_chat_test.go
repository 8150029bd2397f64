package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/canvasd/canvasd/agent"
	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
)

// The agent chat in Chromium against a server with a real agent runner
// (the debug/fake model), driven as a person: typing into the chat,
// pressing Enter or clicking, reloading.

// chatUI is a canvas open in Chromium for an editor, on a server whose
// agent runner (debug/fake unless a run names another model) runs in
// process.
type chatUI struct {
	*canvasUI
	editor string // the page's token
	runner *agent.Runner
}

// openChatUI creates canvas cid with seed (as openCanvasUI) on a server
// with an agent runner and opens it at url's query (e.g. "&doc=d1").
func openChatUI(t *testing.T, cid, query string, seed []map[string]any) *chatUI {
	t.Helper()
	open := uiBrowser(t, 120*time.Second)
	svc := &lateAgent{}
	e := newTestEnv(t, func(c *Config) { c.Agent = svc })
	agentTok, agentID := e.token(canvas.RoleEditor, canvas.ActorAgent)
	ac, err := client.New(e.srv.URL, agentTok)
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.DefaultConfig()
	cfg.LowActionThreshold = 0 // one model call per run
	cfg.Watchdog = 30 * time.Second
	cfg.AckTimeout = 5 * time.Second // the page acks; a loaded machine is slow
	runner, err := agent.NewRunner(agent.Deps{Config: cfg, Client: ac, ActorID: agentID, Events: e.api.hub, Store: e.st.(agent.SessionStore)})
	if err != nil {
		t.Fatal(err)
	}
	runner.Start(context.Background())
	t.Cleanup(runner.Stop)
	svc.r.Store(runner)

	editor, _ := e.token(canvas.RoleEditor, canvas.ActorHuman)
	e.must(201, "POST", "/api/canvases", testAdmin, map[string]any{"canvas_id": cid, "title": cid})
	c := &chatUI{canvasUI: &canvasUI{t: t, e: e, open: open, cid: cid, agent: agentTok}, editor: editor, runner: runner}
	for _, s := range seed {
		c.apply("create_shape", s)
	}
	c.p = open(e.srv.URL + "/?canvas=" + cid + query + "#access_token=" + editor)
	e.diag = c.p.state
	c.live(c.p)
	return c
}

// session reads agent session id.
func (c *chatUI) session(id string) client.AgentSession {
	c.t.Helper()
	hc, _ := client.New(c.e.srv.URL, c.editor)
	s, err := hc.AgentSession(context.Background(), id)
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}

// pageSession is the session the page's agent panel follows, once it has one
// other than not.
func (c *chatUI) pageSession(not string) string {
	c.t.Helper()
	c.p.poll("the panel on a run", `(document.getElementById('agent-panel').dataset.sessionId || '`+not+`') !== '`+not+`'`)
	var sid string
	c.p.eval(`document.getElementById('agent-panel').dataset.sessionId`, &sid)
	return sid
}

// waitDone waits until session id ended, and fails unless it is done.
func (c *chatUI) waitDone(id string) client.AgentSession {
	c.t.Helper()
	waitRunner(c.t, c.runner, id)
	var s client.AgentSession
	waitUntil(c.t, 30*time.Second, "session "+id+" ended", func() bool {
		s = c.session(id)
		return client.AgentTerminal(s.State)
	})
	if s.State != client.AgentDone {
		c.t.Fatalf("session %s %s: %s", id, s.State, s.Detail)
	}
	return s
}

const mainPy = "def main():\n    return 1\n\nprint(main())\n"

// TestWebUIAgentEditsTheOpenDocument: with main.py open in the document
// panel and line 2 selected, "replace line 2 with: ..." typed into the
// chat edits that line through the document verbs (no sticky note); the run
// carries the document and the selection. After Add to Chat of line 4, the
// instruction after the added lines edits line 4. With the document closed,
// the run works on the canvas again.
func TestWebUIAgentEditsTheOpenDocument(t *testing.T) {
	c := openChatUI(t, "ui-agent-doc", "&doc=d:main", []map[string]any{
		{"id": "d:main", "type": "doc", "name": "main.py", "x": 0, "y": 0, "w": 360, "h": 220, "props": map[string]any{"language": "python", "text": mainPy}}})
	p := c.p
	p.poll("document open", `!document.getElementById('doc-panel').hidden && document.querySelector('#doc-panel .cm-content').textContent.includes('return 1')`)
	docText := func() string {
		t.Helper()
		return c.e.nodes(c.cid)["d:main"]["props"].(map[string]any)["text"].(string)
	}
	notes := func() int {
		n := 0
		for _, node := range c.e.nodes(c.cid) {
			if node["type"] == "note" {
				n++
			}
		}
		return n
	}
	// Line 2 selected, as a person does: click it, Home, Shift+End.
	p.clickCSS(`#doc-panel .cm-line:nth-child(2)`)
	p.do(chromedp.KeyEvent(kb.Home), chromedp.KeyEvent(kb.End, chromedp.KeyModifiers(chromedp.ModifierShift)))
	p.clickCSS(`#agent-prompt`)
	p.do(chromedp.SendKeys(chromedp.CSS(`#agent-prompt`), "replace line 2 with:     return 42"))
	p.clickCSS(`#agent-run`)
	sid := c.pageSession("")
	sess := c.waitDone(sid)
	if sess.Document != "d:main" || sess.DocumentSelection == nil || *sess.DocumentSelection != (canvas.LineSpan{StartLine: 2, EndLine: 2}) {
		t.Fatalf("the run carried document %q selection %+v", sess.Document, sess.DocumentSelection)
	}
	c.e.waitNodes(c.cid, "line 2 replaced", func(n map[string]map[string]any) bool {
		return n["d:main"]["props"].(map[string]any)["text"] == "def main():\n    return 42\n\nprint(main())\n"
	})
	if n := notes(); n != 0 {
		t.Fatalf("the agent made %d sticky notes instead of editing the document", n)
	}
	p.poll("the edit in the open editor", `document.querySelector('#doc-panel .cm-content').textContent.includes('return 42')`)
	p.poll("the chat says what the run was on", `[...document.querySelectorAll('#agent-log li.mine')].some(li => li.textContent.includes('main.py (line 2)') && li.textContent.includes('replace line 2 with:'))`)
	p.screenshot("agent-doc-line-replaced")

	// Add to Chat of line 4, then the instruction after it.
	p.poll("panel idle", `!document.getElementById('agent-run').disabled`)
	p.clickCSS(`#doc-panel .cm-line:nth-child(4)`)
	p.do(chromedp.KeyEvent(kb.Home), chromedp.KeyEvent(kb.End, chromedp.KeyModifiers(chromedp.ModifierShift)))
	p.clickCSS(`#doc-add-chat`)
	p.poll("added to chat", `document.getElementById('agent-prompt').value.startsWith('[Selected from lines 4-4]')`)
	p.do(chromedp.SendKeys(chromedp.CSS(`#agent-prompt`), "replace line 4 with: print(main() * 2)"))
	p.clickCSS(`#agent-run`)
	sid2 := c.pageSession(sid)
	if s := c.waitDone(sid2); s.Document != "d:main" {
		t.Fatalf("the run after Add to Chat carried document %q", s.Document)
	}
	c.e.waitNodes(c.cid, "line 4 replaced", func(n map[string]map[string]any) bool {
		return n["d:main"]["props"].(map[string]any)["text"] == "def main():\n    return 42\n\nprint(main() * 2)\n"
	})
	if n := notes(); n != 0 {
		t.Fatalf("%d sticky notes after Add to Chat", n)
	}

	// The document closed: the agent works on the canvas (the fake's note).
	p.poll("panel idle again", `!document.getElementById('agent-run').disabled`)
	p.clickCSS(`#doc-close`)
	p.do(chromedp.SendKeys(chromedp.CSS(`#agent-prompt`), "replace line 2 with: nothing"))
	p.clickCSS(`#agent-run`)
	sid3 := c.pageSession(sid2)
	if s := c.waitDone(sid3); s.Document != "" {
		t.Fatalf("a run with no document open carried %q", s.Document)
	}
	if got := docText(); !strings.Contains(got, "return 42") || strings.Contains(got, "nothing") {
		t.Fatalf("the canvas run changed the document: %q", got)
	}
	if n := notes(); n == 0 {
		t.Fatal("the canvas run made nothing on the canvas")
	}
}
