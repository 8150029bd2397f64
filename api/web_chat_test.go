package api

import (
	"context"
	"fmt"
	"slices"
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
// the run works on the canvas again. After a reload, the rebuilt chat names
// the document by its name, as the page did.
func TestWebUIAgentEditsTheOpenDocument(t *testing.T) {
	c := openChatUI(t, "ui-agent-doc", "&doc=d:main", []map[string]any{
		{"id": "d:main", "type": "doc", "name": "main.py", "x": 0, "y": 0, "w": 360, "h": 220, "props": map[string]any{"language": "python", "text": mainPy}}})
	p := c.p
	p.poll("document open", `document.getElementById('doc-panel')?.hidden === false && document.querySelector('#doc-panel .cm-content').textContent.includes('return 1')`)
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
	p.poll("the chat says what the run was on", `[...document.querySelectorAll('#agent-log .ask.mine')].some(a => a.textContent === 'you, on main.py (line 2): replace line 2 with:     return 42')`)
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

	// After a reload, the rebuilt chat names the runs' document as the page did.
	p.do(chromedp.Reload())
	c.live(p)
	p.poll("the rebuilt chat names the document", `(() => { const asks = [...document.querySelectorAll('#agent-log .ask')].map(a => a.textContent);
		return asks.length === 3 && asks[0] === 'you, on main.py (line 2): replace line 2 with:     return 42' && asks[2] === 'you: replace line 2 with: nothing'; })()`)
}

// chatRuns is what the page's chat shows, top to bottom: each run's request
// and its lines, with whether its request comes first, and whether the
// chat is scrolled to its end (polled: a review showing under the chat
// shrinks it, and it follows its end again before the next frame).
const chatRuns = `(() => { const log = document.getElementById('agent-log');
	return { atEnd: log.scrollHeight - log.scrollTop - log.clientHeight < 2, text: log.textContent,
		runs: [...log.querySelectorAll(':scope > li.run')].map(r => ({ askFirst: r.firstElementChild.classList.contains('ask'),
			ask: r.querySelector('.ask').textContent, lines: [...r.querySelectorAll('ul.lines > li')].map(li => li.textContent),
			show: !!r.querySelector('button.show-work') })) }; })()`

type chatView struct {
	AtEnd bool   `json:"atEnd"`
	Text  string `json:"text"`
	Runs  []struct {
		AskFirst bool     `json:"askFirst"`
		Ask      string   `json:"ask"`
		Lines    []string `json:"lines"`
		Show     bool     `json:"show"`
	} `json:"runs"`
}

// TestWebUIAgentChat: the agent chat reads top to bottom. Prompts typed
// and sent with Enter show as the person's messages, each before what its
// run did; lines are the page's own agent's ("your agent"), never a raw
// session id; the chat stays scrolled to its newest line; work of the
// page's run that landed out of view is brought into view without Show.
// After a reload the chat is rebuilt from the server's sessions, in order;
// a run started elsewhere (the API) shows live as asked elsewhere, and its
// work out of view gets a Show button that brings it into view. A browser
// that started none of the runs shows them all, from the server's list.
func TestWebUIAgentChat(t *testing.T) {
	c := openChatUI(t, "ui-agent-chat", "", []map[string]any{ // a wall filling the view: new work goes beside it, out of view
		{"id": "wall", "type": "geo", "x": 100, "y": -100, "w": 1100, "h": 1100, "props": map[string]any{"geo": "rectangle", "color": "grey"}}})
	p := c.p
	p.eval(`canvasd.view.ex.updateScene({appState: {zoom: {value: 1}, scrollX: -150, scrollY: 0}}), true`, nil)
	var chat chatView
	readChat := func() chatView {
		t.Helper()
		var v chatView
		p.eval(chatRuns, &v)
		return v
	}
	send := func(text string) {
		t.Helper()
		p.poll("panel idle", `!document.getElementById('agent-run').disabled`)
		p.clickCSS(`#agent-prompt`)
		p.do(chromedp.SendKeys(chromedp.CSS(`#agent-prompt`), text), chromedp.KeyEvent(kb.Enter))
	}
	// runNodesInView: every node the session's commits made is in the page's view.
	runNodesInView := func(s client.AgentSession) string {
		var revs []string
		for _, tn := range s.Turns {
			for _, r := range tn.Revs {
				revs = append(revs, fmt.Sprint(r))
			}
		}
		return `(() => { const v = canvasd.view.viewport(), at = new Set([` + strings.Join(revs, ",") + `]);
			const ns = [...canvasd.model.nodes.values()].filter(n => at.has(n.created_rev));
			return ns.length > 0 && ns.every(n => n.x >= v.x && n.y >= v.y && n.x + n.w <= v.x + v.w && n.y + n.h <= v.y + v.h); })()`
	}

	send("Draft a brutalist poster concept")
	sid := c.pageSession("")
	poster := c.waitDone(sid)
	p.poll("the poster brought into view, without Show", runNodesInView(poster))
	p.poll("the run's lines in the chat", `(() => { const t = document.getElementById('agent-log').textContent; return t.includes('your agent: Done.') && t.includes('brought into view'); })()`)
	chat = readChat()
	if len(chat.Runs) != 1 || !chat.Runs[0].AskFirst || chat.Runs[0].Ask != "you: Draft a brutalist poster concept" {
		t.Fatalf("chat after the first run: %+v", chat)
	}
	lines := chat.Runs[0].Lines
	if len(lines) < 3 || lines[0] != "your agent: Turn 1 started." || !slices.Contains(lines, "your agent: Done.") ||
		slices.Index(lines, "your agent: Done.") < slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "actions: ") }) {
		t.Fatalf("the run's lines, top to bottom: %q", lines)
	}
	if strings.Contains(chat.Text, "as_") || strings.Contains(chat.Text, sid[:8]) {
		t.Fatalf("the chat shows a raw session id: %q", chat.Text)
	}

	send("Remember the milk")
	sid2 := c.pageSession(sid)
	c.waitDone(sid2)
	p.poll("the second run's end", `document.querySelectorAll('#agent-log > li.run').length === 2 && document.querySelector('#agent-log > li.run:last-child').textContent.includes('your agent: Done.')`)
	p.poll("the chat at its newest line", chatRuns+`.atEnd`)
	chat = readChat()
	if chat.Runs[1].Ask != "you: Remember the milk" || !chat.Runs[1].AskFirst {
		t.Fatalf("chat after the second run (the newest at the bottom, in view): %+v", chat)
	}
	p.screenshot("agent-chat")
	before := chat

	// A reload: the chat is rebuilt from the server's record of both runs.
	p.do(chromedp.Reload())
	c.live(p)
	p.poll("the chat rebuilt", `document.querySelectorAll('#agent-log > li.run').length === 2 &&
		[...document.querySelectorAll('#agent-log > li.run')].every(r => r.textContent.includes('your agent: Done.'))`)
	p.poll("the rebuilt chat at its newest line", chatRuns+`.atEnd`)
	chat = readChat()
	for i, r := range chat.Runs {
		if r.Ask != before.Runs[i].Ask || !r.AskFirst || r.Lines[0] != "your agent: Turn 1 started." || r.Lines[len(r.Lines)-1] != "your agent: Done." {
			t.Errorf("run %d after the reload: %+v (before: %+v)", i, r, before.Runs[i])
		}
	}
	if !slices.Contains(chat.Runs[0].Lines, "your agent: Turn 1 made 6 changes.") {
		t.Errorf("the poster run after the reload: %+v", chat)
	}
	p.screenshot("agent-chat-reloaded")

	// A run started elsewhere, far from this page's view: it shows live,
	// as asked elsewhere, and its work is one click away.
	other, _ := c.e.token(canvas.RoleEditor, canvas.ActorHuman)
	r := c.e.must(202, "POST", "/api/canvas-agent/run", other, map[string]any{"roomId": c.cid, "message": "Draft a brutalist poster concept, from the API",
		"viewport": map[string]any{"x": 6000, "y": 6000, "w": 800, "h": 600}})
	sid3 := r["session_id"].(string)
	api := c.waitDone(sid3)
	p.poll("the run from elsewhere in the chat", `(() => { const r = document.querySelector('#agent-log > li.run:last-child');
		return document.querySelectorAll('#agent-log > li.run').length === 3 && r.textContent.includes('agent: Done.') && !!r.querySelector('button.show-work'); })()`)
	chat = readChat()
	last := chat.Runs[2]
	if last.Ask != "asked elsewhere: Draft a brutalist poster concept, from the API" || !last.AskFirst || slices.ContainsFunc(last.Lines, func(l string) bool { return strings.HasPrefix(l, "your agent") }) {
		t.Fatalf("the run from elsewhere: %+v", last)
	}
	p.clickCSS(`#agent-log > li.run:last-child button.show-work`)
	p.poll("its work in view", runNodesInView(api))
	p.screenshot("agent-chat-elsewhere")

	// Another browser (this one with its chat's storage cleared) opening
	// the canvas: the chat lists the canvas's runs from the server, in
	// order, none of them its own.
	p.eval(`Object.keys(localStorage).filter(k => k.startsWith('canvasd.chat.')).forEach(k => localStorage.removeItem(k)), true`, nil)
	p.do(chromedp.Reload())
	c.live(p)
	p.poll("the chat rebuilt from the server's list", `document.querySelectorAll('#agent-log > li.run').length === 3 &&
		[...document.querySelectorAll('#agent-log > li.run')].every(r => r.textContent.includes('agent: Done.'))`)
	chat = readChat()
	for i, want := range []string{"Draft a brutalist poster concept", "Remember the milk", "Draft a brutalist poster concept, from the API"} {
		if r := chat.Runs[i]; r.Ask != "asked elsewhere: "+want || !r.AskFirst {
			t.Errorf("run %d in a browser that started none: %+v, want asked elsewhere: %s", i, r, want)
		}
	}
}
