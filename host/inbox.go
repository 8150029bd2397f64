package host

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// MaxPromptBytes bounds a message's prompt.
const MaxPromptBytes = 64 << 10

// UserAction is an A2UI v0.8 client→server userAction.
type UserAction struct {
	Name              string         `json:"name"`
	SurfaceID         string         `json:"surfaceId"`
	SourceComponentID string         `json:"sourceComponentId"`
	Timestamp         string         `json:"timestamp"` // RFC 3339 / ISO 8601
	Context           map[string]any `json:"context"`
}

// Message is what reaches a session's agent: a prompt with an optional
// image (POST /api/sessions/{id}/messages) or a userAction from the A2UI
// shell (POST /api/host/{session}/actions).
type Message struct {
	SessionID   string           // /api/sessions/{id}; for userActions the host session
	HostSession string           // set for userActions
	Principal   canvas.Principal // who sent it
	Prompt      string           // for userActions, a one-line description of the action
	Source      string           // e.g. "applet", "a2ui"
	AppletSlug  string
	Image       *StoredImage // nil without an image; StoredImage.DataURL gives the vision part
	Action      *UserAction  // nil unless the message is a userAction
	ReceivedAt  time.Time
}

// Inbox receives messages for agents. The agent engineer implements it (an
// adapter in cmd/canvasd can forward to the agent runner); Deliver must not
// block on the model: queue the message and return. An error is reported to
// the sender through the usual problem mapping (ErrNotFound for an unknown
// session, ErrForbidden when the principal may not talk to it).
type Inbox interface {
	Deliver(ctx context.Context, m Message) error
}

// MessageRequest is the body of POST /api/sessions/{id}/messages.
type MessageRequest struct {
	Prompt     string `json:"prompt"`
	ImageData  string `json:"imageData,omitempty"`
	Source     string `json:"source,omitempty"`
	AppletSlug string `json:"appletSlug,omitempty"`
}

// DecodeMessageRequest strictly decodes a message body and, when imageData
// is present, parses it with ParseImageDataURL (maxImage decoded bytes).
// Errors are ErrInvalid (400), ErrTooLarge (413) or ErrUnsupportedMediaType
// (415) FieldErrors naming the field.
func DecodeMessageRequest(body []byte, maxImage int64) (MessageRequest, *Image, error) {
	var req MessageRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, nil, canvas.Invalid("body", "not a valid message: %v (expected {prompt, imageData?, source?, appletSlug?})", err)
	}
	if dec.More() {
		return req, nil, canvas.Invalid("body", "trailing data after the message")
	}
	if req.Prompt == "" && req.ImageData == "" {
		return req, nil, canvas.Invalid("prompt", "is required (or send imageData)")
	}
	if len(req.Prompt) > MaxPromptBytes {
		return req, nil, canvas.Invalid("prompt", "is longer than %d bytes", MaxPromptBytes)
	}
	if len(req.Source) > 64 || len(req.AppletSlug) > 200 {
		return req, nil, canvas.Invalid("source", "source ≤ 64 and appletSlug ≤ 200 characters")
	}
	if req.ImageData == "" {
		return req, nil, nil
	}
	img, err := ParseImageDataURL("imageData", req.ImageData, maxImage)
	if err != nil {
		return req, nil, err
	}
	return req, &img, nil
}

// DecodeUserAction strictly decodes {"userAction": {...}} as the A2UI page
// posts it; name, surfaceId, sourceComponentId and timestamp are required
// (timestamp RFC 3339), context defaults to {}.
func DecodeUserAction(body []byte) (UserAction, error) {
	var env struct {
		UserAction *UserAction `json:"userAction"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return UserAction{}, canvas.Invalid("body", "not a valid client event: %v (expected {\"userAction\": {name, surfaceId, sourceComponentId, timestamp, context}})", err)
	}
	if dec.More() {
		return UserAction{}, canvas.Invalid("body", "trailing data after the client event")
	}
	a := env.UserAction
	if a == nil {
		return UserAction{}, canvas.Invalid("userAction", "is required")
	}
	switch {
	case a.Name == "" || len(a.Name) > maxIDLen:
		return UserAction{}, canvas.Invalid("userAction.name", "is required (≤ %d characters)", maxIDLen)
	case a.SurfaceID == "" || len(a.SurfaceID) > maxIDLen:
		return UserAction{}, canvas.Invalid("userAction.surfaceId", "is required (≤ %d characters)", maxIDLen)
	case a.SourceComponentID == "" || len(a.SourceComponentID) > maxIDLen:
		return UserAction{}, canvas.Invalid("userAction.sourceComponentId", "is required (≤ %d characters)", maxIDLen)
	}
	if _, err := time.Parse(time.RFC3339Nano, a.Timestamp); err != nil {
		return UserAction{}, canvas.Invalid("userAction.timestamp", "must be an RFC 3339 timestamp such as 2025-09-19T17:05:00Z")
	}
	if a.Context == nil {
		a.Context = map[string]any{}
	}
	return *a, nil
}
