package host

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/canvasd/canvasd/canvas"
)

// Host actions: what the runtime in a shown page answers when the agent
// sends them through POST /api/invoke {host_session, action, payload}. Each
// runs in the page the session's viewers show.
const (
	ActionEval     = "eval"      // {js}: the JSON value of the expression (a Promise is awaited)
	ActionQuery    = "dom.query" // {selector}: {found, tag, text, attributes, value?, checked?, rect}
	ActionAll      = "dom.all"   // {selector, limit?}: {count, elements: [...]}
	ActionAttr     = "dom.attr"  // {selector, name}: {found, name, value}
	ActionClick    = "dom.click" // {selector}: {clicked, ...the element}
	ActionType     = "dom.type"  // {selector, text, clear?}: {typed, ...the element}
	ActionWait     = "dom.wait"  // {selector, timeout_ms?}: {found, waited_ms, ...}
	ActionSnapshot = "snapshot"  // {max_w?, max_h?}: {image: {mime, dataUrl, bytes}, width, height}
)

// HostActions lists the host actions in the order they are documented.
var HostActions = []string{ActionEval, ActionQuery, ActionAll, ActionAttr, ActionClick, ActionType, ActionWait, ActionSnapshot}

// Limits of host action payloads.
const (
	MaxEvalJS       = 1 << 20 // bytes of script
	MaxSelector     = 4096
	MaxTypedText    = 1 << 20
	MaxSnapshotSide = 8192
)

// hostActionParams are the payload fields of every host action (each uses
// its own; DisallowUnknownFields refuses the rest per action below).
type hostActionParams struct {
	JS        *string `json:"js,omitempty"`
	Selector  *string `json:"selector,omitempty"`
	Name      *string `json:"name,omitempty"`
	Text      *string `json:"text,omitempty"`
	Clear     *bool   `json:"clear,omitempty"`
	Limit     *int    `json:"limit,omitempty"`
	TimeoutMS *int64  `json:"timeout_ms,omitempty"`
	MaxW      *int    `json:"max_w,omitempty"`
	MaxH      *int    `json:"max_h,omitempty"`
}

// IsHostAction reports whether action is one of HostActions.
func IsHostAction(action string) bool {
	for _, a := range HostActions {
		if a == action {
			return true
		}
	}
	return false
}

// ValidateHostAction checks the payload of a host action before it is sent
// to any browser: the fields the action takes, with their types and
// limits. A bad payload is a *canvas.FieldError of kind ErrUnprocessable
// (422) naming the field. Other actions (a page's own, canvasd.onInvoke)
// are not checked here: their payload is the page's business.
func ValidateHostAction(action string, payload json.RawMessage) error {
	if !IsHostAction(action) {
		return nil
	}
	var p hostActionParams
	if len(bytes.TrimSpace(payload)) > 0 && !bytes.Equal(bytes.TrimSpace(payload), []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return canvas.Unprocessable("payload", "%s takes %s: %v", action, actionShape(action), err)
		}
	}
	allowed := map[string][]string{
		ActionEval: {"js"}, ActionQuery: {"selector"}, ActionAll: {"selector", "limit"}, ActionAttr: {"selector", "name"},
		ActionClick: {"selector"}, ActionType: {"selector", "text", "clear"}, ActionWait: {"selector", "timeout_ms"},
		ActionSnapshot: {"max_w", "max_h"},
	}[action]
	for name, set := range map[string]bool{"js": p.JS != nil, "selector": p.Selector != nil, "name": p.Name != nil, "text": p.Text != nil,
		"clear": p.Clear != nil, "limit": p.Limit != nil, "timeout_ms": p.TimeoutMS != nil, "max_w": p.MaxW != nil, "max_h": p.MaxH != nil} {
		if set && !inList(allowed, name) {
			return canvas.Unprocessable("payload."+name, "%s does not take %s; it takes %s", action, name, actionShape(action))
		}
	}
	switch action {
	case ActionEval:
		if p.JS == nil || *p.JS == "" {
			return canvas.Unprocessable("payload.js", "is required: the JavaScript expression to evaluate in the page, e.g. {\"js\": \"document.title\"}")
		}
		if len(*p.JS) > MaxEvalJS {
			return canvas.Unprocessable("payload.js", "is longer than %d bytes", MaxEvalJS)
		}
		return nil
	case ActionSnapshot:
		for f, v := range map[string]*int{"max_w": p.MaxW, "max_h": p.MaxH} {
			if v != nil && (*v < 1 || *v > MaxSnapshotSide) {
				return canvas.Unprocessable("payload."+f, "must be 1 to %d pixels", MaxSnapshotSide)
			}
		}
		return nil
	}
	if p.Selector == nil || *p.Selector == "" || len(*p.Selector) > MaxSelector {
		return canvas.Unprocessable("payload.selector", "is required: a CSS selector of 1 to %d bytes, e.g. {\"selector\": \"#submit\"}", MaxSelector)
	}
	switch action {
	case ActionAll:
		if p.Limit != nil && (*p.Limit < 1 || *p.Limit > 1000) {
			return canvas.Unprocessable("payload.limit", "must be 1 to 1000 (default 200)")
		}
	case ActionAttr:
		if p.Name == nil || *p.Name == "" || len(*p.Name) > 256 {
			return canvas.Unprocessable("payload.name", "is required: the attribute's name (1 to 256 bytes)")
		}
	case ActionType:
		if p.Text == nil {
			return canvas.Unprocessable("payload.text", "is required: the text to type (\"\" with clear: true empties the field)")
		}
		if len(*p.Text) > MaxTypedText {
			return canvas.Unprocessable("payload.text", "is longer than %d bytes", MaxTypedText)
		}
	case ActionWait:
		if p.TimeoutMS != nil && (*p.TimeoutMS < 0 || *p.TimeoutMS > MaxInvokeTimeout.Milliseconds()) {
			return canvas.Unprocessable("payload.timeout_ms", "must be 0 to %d (and less than the invoke's own timeout_ms)", MaxInvokeTimeout.Milliseconds())
		}
	}
	return nil
}

func actionShape(action string) string {
	switch action {
	case ActionEval:
		return "{js}"
	case ActionQuery, ActionClick:
		return "{selector}"
	case ActionAll:
		return "{selector, limit?}"
	case ActionAttr:
		return "{selector, name}"
	case ActionType:
		return "{selector, text, clear?}"
	case ActionWait:
		return "{selector, timeout_ms?}"
	case ActionSnapshot:
		return "{max_w?, max_h?}"
	}
	return fmt.Sprintf("the payload of %q", action)
}
