package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Documents and named snapshots (the fields a client needs of their answers).

// NumberedLine is one line of a document, numbered from 1.
type NumberedLine struct {
	Number  int    `json:"number"`
	Content string `json:"content"`
}

// DocContent is the answer of GET /api/canvases/{id}/docs/{node_id}.
type DocContent struct {
	NodeID        string         `json:"node_id"`
	Language      string         `json:"language"`
	Content       string         `json:"content"`
	LineCount     int            `json:"line_count"`
	NumberedLines []NumberedLine `json:"numbered_lines"`
	Rev           int64          `json:"rev"`
}

// DocDiff is the answer of GET /api/canvases/{id}/docs/{node_id}/diff.
type DocDiff struct {
	HasChanges bool   `json:"has_changes"`
	Diff       string `json:"diff"` // unified
	Rev        int64  `json:"rev"`
}

// NamedSnapshot is a named snapshot (a marker of a revision).
type NamedSnapshot struct {
	ID        string    `json:"snapshot_id"`
	Label     string    `json:"label"`
	Rev       int64     `json:"rev"`
	CreatedAt time.Time `json:"timestamp"`
}

// DocContent reads a document with numbered lines.
func (c *Client) DocContent(ctx context.Context, canvasID, nodeID string) (DocContent, error) {
	var out DocContent
	err := c.call(ctx, http.MethodGet, "/api/canvases/"+seg(canvasID)+"/docs/"+seg(nodeID), nil, nil, &out)
	return out, err
}

// DocDiff returns a document's unified diff since a revision.
func (c *Client) DocDiff(ctx context.Context, canvasID, nodeID string, sinceRev int64) (DocDiff, error) {
	var out DocDiff
	q := url.Values{"since": {strconv.FormatInt(sinceRev, 10)}}
	err := c.call(ctx, http.MethodGet, "/api/canvases/"+seg(canvasID)+"/docs/"+seg(nodeID)+"/diff", q, nil, &out)
	return out, err
}

// SaveSnapshot saves the canvas's current revision as a named snapshot.
func (c *Client) SaveSnapshot(ctx context.Context, canvasID, label, description string) (NamedSnapshot, error) {
	var out NamedSnapshot
	body := map[string]string{"label": label, "description": description}
	err := c.call(ctx, http.MethodPost, "/api/canvases/"+seg(canvasID)+"/snapshots", nil, body, &out)
	return out, err
}
