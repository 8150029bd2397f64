package api

// The canvas host's MCP tools: every host operation (a session's files,
// show/hide/navigate, eval, the DOM helpers, a snapshot as image content,
// A2UI push and reset, a page's own actions, the agent-link key), with the
// same rules as the HTTP routes (the editor role on the session; host
// action payloads checked before any browser gets them).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/host"
)

// mcpHostSession names a host session (every host tool takes one).
type mcpHostSession struct {
	Session string `json:"session" jsonschema:"the host session: its pages are served at /host/{session}/ and talk to the agent of the canvas of the same id"`
}

type mcpHostWrite struct {
	Session string `json:"session" jsonschema:"the host session"`
	Path    string `json:"path" jsonschema:"the file's path in the session, e.g. index.html or js/app.js"`
	Content string `json:"content" jsonschema:"the file's content (text; with base64 true, its base64)"`
	Base64  bool   `json:"base64,omitempty" jsonschema:"content is base64 (for images and other binary files)"`
}

type mcpHostPath struct {
	Session string `json:"session" jsonschema:"the host session"`
	Path    string `json:"path" jsonschema:"a path in the session, e.g. index.html"`
}

type mcpHostShow struct {
	Session string `json:"session" jsonschema:"the host session"`
	Path    string `json:"path,omitempty" jsonschema:"a page of the session to show (default: the page shown, or the session root)"`
}

type mcpHostEval struct {
	Session   string `json:"session" jsonschema:"the host session"`
	JS        string `json:"js" jsonschema:"a JavaScript expression evaluated in the page the session's viewers show; its JSON value is returned (a Promise is awaited)"`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"how long to wait for the page (default 10000)"`
}

type mcpHostSelector struct {
	Session   string `json:"session" jsonschema:"the host session"`
	Selector  string `json:"selector" jsonschema:"a CSS selector; it also finds elements in open shadow roots, and A >>> B finds B inside A's shadow tree"`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"how long to wait for the page (default 10000)"`
}

type mcpHostAll struct {
	Session  string `json:"session" jsonschema:"the host session"`
	Selector string `json:"selector" jsonschema:"a CSS selector (see host_dom_query)"`
	Limit    int    `json:"limit,omitempty" jsonschema:"at most this many elements described (1 to 1000, default 200)"`
}

type mcpHostAttr struct {
	Session  string `json:"session" jsonschema:"the host session"`
	Selector string `json:"selector" jsonschema:"a CSS selector (see host_dom_query)"`
	Name     string `json:"name" jsonschema:"the attribute's name"`
}

type mcpHostType struct {
	Session  string `json:"session" jsonschema:"the host session"`
	Selector string `json:"selector" jsonschema:"an input, a textarea or editable content (see host_dom_query)"`
	Text     string `json:"text" jsonschema:"the text to type at its end"`
	Clear    bool   `json:"clear,omitempty" jsonschema:"empty the field first"`
}

type mcpHostWait struct {
	Session  string `json:"session" jsonschema:"the host session"`
	Selector string `json:"selector" jsonschema:"a CSS selector (see host_dom_query)"`
	WaitMS   int    `json:"wait_ms,omitempty" jsonschema:"how long to wait for a match (default 5000, at most 120000)"`
}

type mcpHostSnapshot struct {
	Session string `json:"session" jsonschema:"the host session"`
	MaxW    int    `json:"max_w,omitempty" jsonschema:"scale the image down to at most this width (pixels)"`
	MaxH    int    `json:"max_h,omitempty" jsonschema:"scale the image down to at most this height (pixels)"`
}

type mcpHostA2UI struct {
	Session string `json:"session" jsonschema:"the host session"`
	JSONL   string `json:"jsonl" jsonschema:"A2UI v0.8 server-to-client messages, one JSON object per line (surfaceUpdate, dataModelUpdate, beginRendering, deleteSurface)"`
}

type mcpHostInvoke struct {
	Session   string `json:"session" jsonschema:"the host session"`
	Action    string `json:"action" jsonschema:"an action the shown page handles with canvasd.onInvoke(action, handler)"`
	Payload   any    `json:"payload,omitempty" jsonschema:"the handler's payload (any JSON)"`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"how long to wait for the page's answer (default 10000, at most 300000)"`
}

// mcpHostTools are the host tools, or none on a server without a host.
//
// It stays over 100 lines because it is the list of the host's MCP tools,
// each entry its name, description and a short handler delegating to the
// same operation as its HTTP route: a table, read in one place.
func (s *Server) mcpHostTools() []mcpTool {
	h := s.hostAPI
	if h == nil {
		return nil
	}
	tool := func(name string, ann *mcp.ToolAnnotations, desc string) *mcp.Tool {
		return &mcp.Tool{Name: name, Annotations: ann, Description: desc}
	}
	return []mcpTool{
		{tool("host_list_files", mcpReadOnly, "The files of a host session (path, size, modified)."),
			toolFunc(func(ctx context.Context, in mcpHostSession) (*mcp.CallToolResult, any, error) {
				if err := mcpAuthorize(ctx, in.Session, canvas.RoleEditor); err != nil {
					return nil, nil, err
				}
				files, err := h.host.ListFiles(ctx, in.Session)
				return mcpResult(hostFileList{Files: files}, err)
			})},
		{tool("host_write_file", mcpEdit, "Write a file of a host session (its pages, scripts, styles, images); the session's viewers reload the page. A page's index.html is the session root."),
			toolFunc(func(ctx context.Context, in mcpHostWrite) (*mcp.CallToolResult, any, error) {
				if err := mcpAuthorize(ctx, in.Session, canvas.RoleEditor); err != nil {
					return nil, nil, err
				}
				data := []byte(in.Content)
				if in.Base64 {
					var err error
					if data, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
						return nil, nil, mcpError(canvas.Invalid("content", "is not valid base64: %v", err))
					}
				}
				fi, err := h.host.PutFile(ctx, in.Session, in.Path, strings.NewReader(string(data)))
				return mcpResult(fi, err)
			})},
		{tool("host_delete_file", mcpEdit, "Delete a file of a host session."),
			toolFunc(func(ctx context.Context, in mcpHostPath) (*mcp.CallToolResult, any, error) {
				if err := mcpAuthorize(ctx, in.Session, canvas.RoleEditor); err != nil {
					return nil, nil, err
				}
				return mcpResult(map[string]any{"deleted": in.Path}, h.host.DeleteFile(ctx, in.Session, in.Path))
			})},
		{tool("host_show", mcpAdditive, "Show the session's pages (path: open that page) in its viewers and in the web UI's pages panel of the canvas of the same id."),
			toolFunc(func(ctx context.Context, in mcpHostShow) (*mcp.CallToolResult, any, error) {
				return h.mcpPresent(ctx, in.Session, host.Presentation{Action: host.PresentShow, Path: in.Path})
			})},
		{tool("host_hide", mcpAdditive, "Hide the session's pages (the web UI closes its pages panel)."),
			toolFunc(func(ctx context.Context, in mcpHostSession) (*mcp.CallToolResult, any, error) {
				return h.mcpPresent(ctx, in.Session, host.Presentation{Action: host.PresentHide})
			})},
		{tool("host_navigate", mcpAdditive, "Open a page of the session (a path in it, \"/\" for its root) in its viewers."),
			toolFunc(func(ctx context.Context, in mcpHostPath) (*mcp.CallToolResult, any, error) {
				return h.mcpPresent(ctx, in.Session, host.Presentation{Action: host.PresentNavigate, Path: in.Path})
			})},
		{tool("host_eval", mcpEdit, "Evaluate a JavaScript expression in the page the session shows and return its JSON value."),
			toolFunc(func(ctx context.Context, in mcpHostEval) (*mcp.CallToolResult, any, error) {
				return h.mcpHostAction(ctx, in.Session, host.ActionEval, map[string]any{"js": in.JS}, in.TimeoutMS)
			})},
		{tool("host_dom_query", mcpReadOnly, "The first element matching a selector in the shown page: found, tag, text, attributes, value, rect."),
			toolFunc(func(ctx context.Context, in mcpHostSelector) (*mcp.CallToolResult, any, error) {
				return h.mcpHostAction(ctx, in.Session, host.ActionQuery, map[string]any{"selector": in.Selector}, in.TimeoutMS)
			})},
		{tool("host_dom_all", mcpReadOnly, "Every element matching a selector in the shown page: count and their descriptions."),
			toolFunc(func(ctx context.Context, in mcpHostAll) (*mcp.CallToolResult, any, error) {
				p := map[string]any{"selector": in.Selector}
				if in.Limit != 0 {
					p["limit"] = in.Limit
				}
				return h.mcpHostAction(ctx, in.Session, host.ActionAll, p, 0)
			})},
		{tool("host_dom_attr", mcpReadOnly, "An attribute of the first element matching a selector in the shown page."),
			toolFunc(func(ctx context.Context, in mcpHostAttr) (*mcp.CallToolResult, any, error) {
				return h.mcpHostAction(ctx, in.Session, host.ActionAttr, map[string]any{"selector": in.Selector, "name": in.Name}, 0)
			})},
		{tool("host_dom_click", mcpEdit, "Click the first element matching a selector in the shown page."),
			toolFunc(func(ctx context.Context, in mcpHostSelector) (*mcp.CallToolResult, any, error) {
				return h.mcpHostAction(ctx, in.Session, host.ActionClick, map[string]any{"selector": in.Selector}, in.TimeoutMS)
			})},
		{tool("host_dom_type", mcpEdit, "Type text into the first input, textarea or editable element matching a selector (input and change events fire)."),
			toolFunc(func(ctx context.Context, in mcpHostType) (*mcp.CallToolResult, any, error) {
				p := map[string]any{"selector": in.Selector, "text": in.Text}
				if in.Clear {
					p["clear"] = true
				}
				return h.mcpHostAction(ctx, in.Session, host.ActionType, p, 0)
			})},
		{tool("host_dom_wait", mcpReadOnly, "Wait until an element matches a selector in the shown page (found false after wait_ms)."),
			toolFunc(func(ctx context.Context, in mcpHostWait) (*mcp.CallToolResult, any, error) {
				wait := in.WaitMS
				if wait <= 0 {
					wait = 5000
				}
				return h.mcpHostAction(ctx, in.Session, host.ActionWait, map[string]any{"selector": in.Selector, "timeout_ms": wait}, wait+5000)
			})},
		{tool("host_snapshot", mcpReadOnly, "A PNG image of what the shown page looks like (its real pixels), scaled down to max_w × max_h."),
			toolFunc(func(ctx context.Context, in mcpHostSnapshot) (*mcp.CallToolResult, any, error) {
				p := map[string]any{}
				if in.MaxW != 0 {
					p["max_w"] = in.MaxW
				}
				if in.MaxH != 0 {
					p["max_h"] = in.MaxH
				}
				return h.mcpHostAction(ctx, in.Session, host.ActionSnapshot, p, 0)
			})},
		{tool("host_a2ui_push", mcpEdit, "Push A2UI v0.8 messages (JSONL) to the session's surfaces; the built-in A2UI page shows them. Validated whole: a bad line applies nothing."),
			toolFunc(func(ctx context.Context, in mcpHostA2UI) (*mcp.CallToolResult, any, error) {
				if err := mcpAuthorize(ctx, in.Session, canvas.RoleEditor); err != nil {
					return nil, nil, err
				}
				return mcpResult(h.host.PushA2UI(ctx, in.Session, []byte(in.JSONL)))
			})},
		{tool("host_a2ui_reset", mcpEdit, "Delete every A2UI surface of the session."),
			toolFunc(func(ctx context.Context, in mcpHostSession) (*mcp.CallToolResult, any, error) {
				if err := mcpAuthorize(ctx, in.Session, canvas.RoleEditor); err != nil {
					return nil, nil, err
				}
				n, err := h.host.ResetA2UI(ctx, in.Session)
				return mcpResult(map[string]any{"reset": true, "browsers": n}, err)
			})},
		{tool("host_invoke", mcpEdit, "Call an action the shown page handles itself (canvasd.onInvoke(action, handler)) and return its answer."),
			toolFunc(func(ctx context.Context, in mcpHostInvoke) (*mcp.CallToolResult, any, error) {
				return h.mcpHostAction(ctx, in.Session, in.Action, in.Payload, in.TimeoutMS)
			})},
		{tool("host_link_key", mcpReadOnly, "The session's agent-link key: a canvasd://agent?message=...&key=... link in its pages starts a run without asking the person."),
			toolFunc(func(ctx context.Context, in mcpHostSession) (*mcp.CallToolResult, any, error) {
				if err := mcpAuthorize(ctx, in.Session, canvas.RoleEditor); err != nil {
					return nil, nil, err
				}
				return mcpResult(map[string]string{"session": in.Session, "key": h.host.LinkKey(in.Session)}, host.ValidateSession(in.Session))
			})},
	}
}

// mcpPresent presents the session's pages as POST /api/host/{session}/present does.
func (h *hostAPI) mcpPresent(ctx context.Context, session string, p host.Presentation) (*mcp.CallToolResult, any, error) {
	if err := mcpAuthorize(ctx, session, canvas.RoleEditor); err != nil {
		return nil, nil, err
	}
	n, panels, err := h.present(session, p)
	return mcpResult(map[string]int{"browsers": n, "panels": panels}, err)
}

// mcpHostAction sends a host action (or a page's own action) to the
// session's viewers and returns the page's answer: its result, or a
// snapshot as image content; a page's error is a tool error.
func (h *hostAPI) mcpHostAction(ctx context.Context, session, action string, payload any, timeoutMS int) (*mcp.CallToolResult, any, error) {
	if err := mcpAuthorize(ctx, session, canvas.RoleEditor); err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, nil, mcpError(canvas.Invalid("payload", "cannot be encoded: %v", err))
	}
	if payload == nil {
		raw = nil
	}
	if err := host.ValidateHostAction(action, raw); err != nil {
		return nil, nil, mcpError(err)
	}
	a, err := h.broker.Invoke(ctx, host.Target{HostSession: session}, action, raw, time.Duration(timeoutMS)*time.Millisecond)
	if err != nil {
		return nil, nil, mcpError(err)
	}
	if !a.OK {
		var msg any = string(a.Error)
		_ = json.Unmarshal(a.Error, &msg)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("the page answered an error: %v", msg)}}}, nil, nil
	}
	if action == host.ActionSnapshot {
		return snapshotContent(a.Result)
	}
	var out any
	if len(a.Result) > 0 {
		if err := canvas.UnmarshalExact(a.Result, &out); err != nil {
			out = string(a.Result)
		}
	}
	if _, isObject := out.(map[string]any); !isObject {
		out = map[string]any{"result": out} // a tool's structured output is an object
	}
	return mcpResult(out, nil)
}

// snapshotContent turns a snapshot answer into image content (the PNG) and
// a line of text with its size.
func snapshotContent(result json.RawMessage) (*mcp.CallToolResult, any, error) {
	var snap struct {
		Image struct {
			Mime    string `json:"mime"`
			DataURL string `json:"dataUrl"`
		} `json:"image"`
		Width  int `json:"width"`
		Height int `json:"height"`
	}
	if err := json.Unmarshal(result, &snap); err != nil {
		return nil, nil, fmt.Errorf("the page's snapshot is not readable: %v", err)
	}
	img, err := host.ParseImageDataURL("image.dataUrl", snap.Image.DataURL, 0)
	if err != nil {
		return nil, nil, mcpError(err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.ImageContent{Data: img.Data, MIMEType: img.MediaType},
		&mcp.TextContent{Text: fmt.Sprintf("snapshot of the shown page: %d×%d pixels, %d bytes of %s", snap.Width, snap.Height, len(img.Data), img.MediaType)},
	}}, nil, nil
}
