package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/canvasd/canvasd/client"
)

// The canvas host's actions: canvasd's own agent writes pages for a host
// session, shows them, works them (eval, the DOM helpers, a snapshot of
// their pixels), pushes A2UI surfaces and calls the actions a page handles
// itself (applet_invoke), through the server's HTTP API like every other
// action. A session's pages talk back to the agent of the canvas of the
// session's id, so the session defaults to the agent's own canvas. What an
// action answers (an eval's value, a DOM helper's element, a snapshot's
// image, a page's answer, an error) goes back to the model in a follow-up
// turn (TurnHostResults), the snapshot as the turn's image.

// TurnHostResults is the turn that hands the model what its page actions answered.
const TurnHostResults TurnKind = "host_results"

// hostActionTimeout bounds one page action (the page's answer included).
const hostActionTimeout = 20 * time.Second

// maxHostResult bounds one result's text in the follow-up turn.
const maxHostResult = 4000

// maxHostTurns bounds the host-results turns of one launch of a session
// (a model that keeps working its page gets this many answers back).
const maxHostTurns = 8

// HostFileParams writes a file of a host session.
type HostFileParams struct {
	Session *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id, whose pages talk to you: their messages and buttons reach you)"`
	Path    string  `json:"path" maxlen:"1024" desc:"the file's path in the session, e.g. index.html (the session's root page), app.js, style.css"`
	Content string  `json:"content" raw:"true" maxlen:"1000000" desc:"the file's text; a page may call canvasd.sendAgentMessage(prompt, {imageData}) to talk to you and canvasd.onInvoke(action, handler) to answer applet_invoke"`
}

// HostPathParams names a file or page of a host session.
type HostPathParams struct {
	Session *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id)"`
	Path    string  `json:"path" maxlen:"1024" desc:"a path in the session (\"/\" for its root page)"`
}

// HostSessionParams names a host session.
type HostSessionParams struct {
	Session *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id)"`
}

// HostShowParams shows a host session's pages.
type HostShowParams struct {
	Session *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id)"`
	Path    *string `json:"path,omitempty" maxlen:"1024" desc:"a page of the session to open"`
}

// HostEvalParams evaluates JavaScript in the shown page.
type HostEvalParams struct {
	Session *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id)"`
	JS      string  `json:"js" raw:"true" maxlen:"100000" desc:"a JavaScript expression; its JSON value comes back to you"`
}

// HostSelectorParams names elements of the shown page.
type HostSelectorParams struct {
	Session  *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id)"`
	Selector string  `json:"selector" raw:"true" maxlen:"4096" desc:"a CSS selector (A >>> B finds B inside A's shadow tree)"`
}

// HostAllParams lists elements of the shown page.
type HostAllParams struct {
	Session  *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id)"`
	Selector string  `json:"selector" raw:"true" maxlen:"4096" desc:"a CSS selector"`
	Limit    *int    `json:"limit,omitempty" min:"1" max:"1000" desc:"elements described (default 200)"`
}

// HostAttrParams reads an attribute in the shown page.
type HostAttrParams struct {
	Session  *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id)"`
	Selector string  `json:"selector" raw:"true" maxlen:"4096" desc:"a CSS selector"`
	Name     string  `json:"name" maxlen:"256" desc:"the attribute"`
}

// HostTypeParams types into the shown page.
type HostTypeParams struct {
	Session  *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id)"`
	Selector string  `json:"selector" raw:"true" maxlen:"4096" desc:"an input, textarea or editable element"`
	Text     string  `json:"text" raw:"true" maxlen:"100000" desc:"the text to type"`
	Clear    *bool   `json:"clear,omitempty" desc:"empty the field first"`
}

// HostWaitParams waits for an element of the shown page.
type HostWaitParams struct {
	Session   *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id)"`
	Selector  string  `json:"selector" raw:"true" maxlen:"4096" desc:"a CSS selector"`
	TimeoutMS *int    `json:"timeout_ms,omitempty" min:"0" max:"15000" desc:"how long to wait (default 5000)"`
}

// HostSnapshotParams takes a picture of the shown page.
type HostSnapshotParams struct {
	Session *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id)"`
	MaxW    *int    `json:"max_w,omitempty" min:"16" max:"4096" desc:"scale down to this width (default 1024)"`
	MaxH    *int    `json:"max_h,omitempty" min:"16" max:"4096" desc:"scale down to this height"`
}

// HostA2UIParams pushes A2UI surfaces.
type HostA2UIParams struct {
	Session *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id)"`
	JSONL   string  `json:"jsonl" raw:"true" maxlen:"1000000" desc:"A2UI v0.8 messages, one JSON object a line: surfaceUpdate, dataModelUpdate, beginRendering, deleteSurface (standard catalog)"`
}

// AppletInvokeParams calls an action the shown page handles itself.
type AppletInvokeParams struct {
	Session *string `json:"session,omitempty" maxlen:"128" desc:"host session (default: this canvas's id)"`
	Action  string  `json:"action" maxlen:"64" desc:"an action the page handles with canvasd.onInvoke(action, handler)"`
	Payload any     `json:"payload,omitempty" desc:"what the handler gets (any JSON)"`
}

// hostVerbs are the host actions of the catalog (meta verbs: no commit).
func hostVerbs() []Verb {
	t := func(v any) reflect.Type { return reflect.TypeOf(v) }
	return []Verb{
		{Name: "host_write_file", Description: "Write a file of your pages (HTML, JS, CSS); index.html is the root page. People see it live.", Params: t(HostFileParams{}),
			Sample: `{"path":"index.html","content":"<!doctype html><h1>Quiz</h1><button onclick=\"canvasd.sendAgentMessage('done')\">Done</button>"}`, Meta: true},
		{Name: "host_delete_file", Description: "Delete a file of your pages.", Params: t(HostPathParams{}), Sample: `{"path":"old.html"}`, Meta: true},
		{Name: "host_list_files", Description: "List the files of your pages (the list comes back to you).", Params: t(HostSessionParams{}), Sample: `{}`, Meta: true},
		{Name: "host_show", Description: "Show your pages to the people (the web UI opens its pages panel).", Params: t(HostShowParams{}), Sample: `{"path":"index.html"}`, Meta: true},
		{Name: "host_hide", Description: "Hide your pages.", Params: t(HostSessionParams{}), Sample: `{}`, Meta: true},
		{Name: "host_navigate", Description: "Open a page of yours in the viewers.", Params: t(HostPathParams{}), Sample: `{"path":"step2.html"}`, Meta: true},
		{Name: "host_eval", Description: "Evaluate JavaScript in the page being shown; its value comes back to you.", Params: t(HostEvalParams{}),
			Sample: `{"js":"document.querySelectorAll('li').length"}`, Meta: true},
		{Name: "host_dom_query", Description: "Read the first element matching a selector in the shown page (text, attributes, value).", Params: t(HostSelectorParams{}), Sample: `{"selector":"#score"}`, Meta: true},
		{Name: "host_dom_all", Description: "Read every element matching a selector in the shown page.", Params: t(HostAllParams{}), Sample: `{"selector":"li"}`, Meta: true},
		{Name: "host_dom_attr", Description: "Read an attribute of an element of the shown page.", Params: t(HostAttrParams{}), Sample: `{"selector":"a","name":"href"}`, Meta: true},
		{Name: "host_dom_click", Description: "Click an element of the shown page.", Params: t(HostSelectorParams{}), Sample: `{"selector":"#start"}`, Meta: true},
		{Name: "host_dom_type", Description: "Type text into a field of the shown page.", Params: t(HostTypeParams{}), Sample: `{"selector":"#name","text":"Ada"}`, Meta: true},
		{Name: "host_dom_wait", Description: "Wait until an element matches a selector in the shown page.", Params: t(HostWaitParams{}), Sample: `{"selector":"#result"}`, Meta: true},
		{Name: "host_snapshot", Description: "Look at the shown page: a picture of it comes back to you.", Params: t(HostSnapshotParams{}), Sample: `{}`, Meta: true},
		{Name: "host_a2ui_push", Description: "Show native UI (A2UI v0.8 surfaces) in your pages: forms, cards, buttons whose clicks come back to you.", Params: t(HostA2UIParams{}),
			Sample: `{"jsonl":"{\"surfaceUpdate\":{\"surfaceId\":\"main\",\"components\":[{\"id\":\"root\",\"component\":{\"Text\":{\"text\":{\"literalString\":\"Hello\"}}}}]}}\n{\"beginRendering\":{\"surfaceId\":\"main\",\"root\":\"root\"}}"}`, Meta: true},
		{Name: "host_a2ui_reset", Description: "Remove every A2UI surface of your pages.", Params: t(HostSessionParams{}), Sample: `{}`, Meta: true},
		{Name: "applet_invoke", Description: "Call an action your page handles itself (canvasd.onInvoke) and get its answer back, e.g. render an SVG and return its picture.", Params: t(AppletInvokeParams{}),
			Sample: `{"action":"render","payload":{"svg":"<svg/>"}}`, Meta: true},
	}
}

// isHostVerb reports whether name is a host action.
func isHostVerb(name string) bool { return strings.HasPrefix(name, "host_") || name == "applet_invoke" }

// hostSession is the action's session, or the session's canvas id.
func (s *session) hostSession(a Action) string {
	if v, _ := a.Params["session"].(string); v != "" {
		return v
	}
	return s.rec.CanvasID
}

// applyHost carries out a host action and records what comes back for the
// next turn.
func (s *session) applyHost(a Action) {
	c := s.r.d.Client
	session := s.hostSession(a)
	ctx, cancel := context.WithTimeout(s.ctx, hostActionTimeout)
	defer cancel()
	str := func(k string) string { v, _ := a.Params[k].(string); return v }
	var out any
	var err error
	report := true // reads (and every failure) go back to the model
	switch a.Name {
	case "host_write_file":
		var f client.HostFile
		f, err = c.PutHostFile(ctx, session, str("path"), []byte(str("content")))
		report = false
		if err == nil {
			s.chat("system", fmt.Sprintf("page %s/%s written (%d bytes)", session, f.Path, f.Size))
		}
	case "host_delete_file":
		err, report = c.DeleteHostFile(ctx, session, str("path")), false
	case "host_list_files":
		out, err = c.HostFiles(ctx, session)
	case "host_show", "host_hide", "host_navigate":
		_, err = c.PresentHost(ctx, session, strings.TrimPrefix(a.Name, "host_"), str("path"))
		report = false
	case "host_a2ui_push":
		_, err = c.PushA2UI(ctx, session, []byte(str("jsonl")))
		report = false
	case "host_a2ui_reset":
		err, report = c.ResetA2UI(ctx, session), false
	default:
		out, err = s.hostInvoke(ctx, session, a)
	}
	s.r.d.Metrics.action("meta")
	if err != nil {
		s.r.log.Warn("agent: host action failed", "session_id", s.rec.ID, "action", a.Name, "host_session", session, "err", err)
		s.chat("system", fmt.Sprintf("%s on %s failed: %v", a.Name, session, err))
		s.hostResult(fmt.Sprintf("%s %s → failed: %v", a.Name, describeHostParams(a), err))
		return
	}
	if report {
		b, _ := json.Marshal(out)
		s.hostResult(fmt.Sprintf("%s %s → %s", a.Name, describeHostParams(a), truncUTF8(string(b), maxHostResult)))
	}
}

// hostInvoke sends a page action (a host action, or the page's own for
// applet_invoke) and returns the page's answer; a snapshot is kept as the
// next turn's image and answered by its size.
func (s *session) hostInvoke(ctx context.Context, session string, a Action) (any, error) {
	action, payload := strings.Replace(strings.TrimPrefix(a.Name, "host_"), "dom_", "dom.", 1), map[string]any{}
	for k, v := range a.Params {
		if k != "session" {
			payload[k] = v
		}
	}
	var raw json.RawMessage
	switch a.Name {
	case "applet_invoke":
		action, _ = a.Params["action"].(string)
		if p, ok := a.Params["payload"]; ok {
			raw, _ = json.Marshal(p)
		}
	case "host_snapshot":
		if _, ok := payload["max_w"]; !ok {
			payload["max_w"] = 1024
		}
		raw, _ = json.Marshal(payload)
	case "host_dom_wait":
		if _, ok := payload["timeout_ms"]; !ok {
			payload["timeout_ms"] = 5000
		}
		raw, _ = json.Marshal(payload)
	default:
		raw, _ = json.Marshal(payload)
	}
	res, err := s.r.d.Client.Invoke(ctx, client.InvokeRequest{HostSession: session, Action: action, Payload: raw,
		TimeoutMS: int(hostActionTimeout.Milliseconds()) - 1000})
	if err != nil {
		return nil, err
	}
	if !res.OK {
		return nil, fmt.Errorf("the page answered an error: %s", res.Error)
	}
	if a.Name == "host_snapshot" {
		var snap struct {
			Image struct {
				DataURL string `json:"dataUrl"`
				Bytes   int    `json:"bytes"`
			} `json:"image"`
			Width  int `json:"width"`
			Height int `json:"height"`
		}
		if err := json.Unmarshal(res.Result, &snap); err != nil || !strings.HasPrefix(snap.Image.DataURL, "data:image/") {
			return nil, fmt.Errorf("the page's snapshot is not an image")
		}
		s.mu.Lock()
		s.hostImage = snap.Image.DataURL
		s.mu.Unlock()
		return map[string]any{"image": "attached to this message", "width": snap.Width, "height": snap.Height}, nil
	}
	var out any
	if len(res.Result) > 0 {
		_ = json.Unmarshal(res.Result, &out)
	}
	return out, nil
}

// describeHostParams is a short form of an action's params for the model.
func describeHostParams(a Action) string {
	p := map[string]any{}
	for k, v := range a.Params {
		if k == "content" || k == "jsonl" {
			continue
		}
		if s, ok := v.(string); ok && len(s) > 200 {
			v = s[:200] + "…"
		}
		p[k] = v
	}
	b, _ := json.Marshal(p)
	return string(b)
}

// hostResult records a line for the next host-results turn.
func (s *session) hostResult(line string) {
	s.mu.Lock()
	s.hostResults = append(s.hostResults, line)
	s.mu.Unlock()
}

// hostFollowUp queues, after a turn, a turn that hands the model what its
// page actions answered (the last snapshot as its image).
func (s *session) hostFollowUp() {
	s.mu.Lock()
	results, image := s.hostResults, s.hostImage
	s.hostResults, s.hostImage = nil, ""
	s.mu.Unlock()
	if len(results) == 0 {
		return
	}
	t := task{kind: TurnHostResults, text: strings.Join(results, "\n"), image: image}
	s.mu.Lock()
	queued := !s.canceled && s.hostTurns < maxHostTurns && len(s.queue) < s.r.d.Config.QueueDepth
	if queued {
		s.hostTurns++
		s.queue = append(s.queue, t)
	}
	s.mu.Unlock()
	if !queued {
		s.note("system", fmt.Sprintf("the page actions' answers were not sent back to the model (at most %d such turns, or the queue is full)", maxHostTurns))
		return
	}
	s.r.d.Metrics.followup(string(TurnHostResults))
}

// hostResultsInstruction is the instruction of a TurnHostResults turn.
func hostResultsInstruction(t task, request string) string {
	var b strings.Builder
	b.WriteString("Your page actions answered:\n")
	b.WriteString(t.text)
	if t.image != "" {
		b.WriteString("\nThe attached image is the snapshot of the page.")
	}
	b.WriteString("\nContinue the task with these answers (do not repeat actions that already succeeded): " + request)
	return b.String()
}
