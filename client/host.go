package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The canvas host: a host session's files, its presentation, A2UI surfaces
// and the actions its shown page answers (POST /api/invoke with
// host_session). Every call needs the editor role on the session.

// HostFile describes one file of a host session.
type HostFile struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// HostPresented is the answer of POST /api/host/{session}/present: how many
// viewers and web UI pages panels (subscribers of the session's canvas) were told.
type HostPresented struct {
	Browsers int `json:"browsers"`
	Panels   int `json:"panels"`
}

// hostPath is /api/host/{session} with the session escaped.
func hostPath(session string) string { return "/api/host/" + seg(session) }

// filePath escapes each segment of a session file's path.
func filePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = seg(s)
	}
	return strings.Join(segs, "/")
}

// sendRaw sends a body that is not JSON (a file, JSON lines) and decodes a
// 2xx JSON answer into out (nil: ignore it).
func (c *Client) sendRaw(ctx context.Context, method, p, ctype string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.url(p, nil), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, p, err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.userAgnt != "" {
		req.Header.Set("User-Agent", c.userAgnt)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, p, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, c.maxBody))
	if err != nil {
		return fmt.Errorf("client: %s %s: reading body: %w", method, p, err)
	}
	r := &response{status: res.StatusCode, header: res.Header, body: b}
	if r.status < 200 || r.status > 299 {
		return problem(r)
	}
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		return json.Unmarshal(b, out)
	}
	return nil
}

// PutHostFile writes a file of a host session (its viewers reload the page).
func (c *Client) PutHostFile(ctx context.Context, session, path string, data []byte) (HostFile, error) {
	var out HostFile
	err := c.sendRaw(ctx, http.MethodPut, hostPath(session)+"/files/"+filePath(path), "application/octet-stream", data, &out)
	return out, err
}

// DeleteHostFile deletes a file of a host session.
func (c *Client) DeleteHostFile(ctx context.Context, session, path string) error {
	return c.call(ctx, http.MethodDelete, hostPath(session)+"/files/"+filePath(path), nil, nil, nil)
}

// HostFiles lists a host session's files.
func (c *Client) HostFiles(ctx context.Context, session string) ([]HostFile, error) {
	var out struct {
		Files []HostFile `json:"files"`
	}
	err := c.call(ctx, http.MethodGet, hostPath(session)+"/files", nil, nil, &out)
	return out.Files, err
}

// PresentHost shows (path: that page), hides or navigates (path required)
// a host session's pages.
func (c *Client) PresentHost(ctx context.Context, session, action, path string) (HostPresented, error) {
	var out HostPresented
	body := map[string]string{"action": action}
	if path != "" {
		body["path"] = path
	}
	err := c.call(ctx, http.MethodPost, hostPath(session)+"/present", nil, body, &out)
	return out, err
}

// PushA2UI pushes A2UI v0.8 messages (one JSON object per line) to a host
// session's surfaces and returns the server's answer ({applied, surfaces,
// browsers}); a bad line is a 422 *ProblemError whose Extra["errors"]
// lists every bad line.
func (c *Client) PushA2UI(ctx context.Context, session string, jsonl []byte) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.sendRaw(ctx, http.MethodPost, hostPath(session)+"/a2ui", "application/jsonl", jsonl, &out)
	return out, err
}

// ResetA2UI deletes every A2UI surface of a host session.
func (c *Client) ResetA2UI(ctx context.Context, session string) error {
	return c.call(ctx, http.MethodPost, hostPath(session)+"/a2ui/reset", nil, nil, nil)
}

// HostLinkKey returns the key that lets a host session's canvasd://agent
// links start runs without asking the person.
func (c *Client) HostLinkKey(ctx context.Context, session string) (string, error) {
	var out struct {
		Key string `json:"key"`
	}
	err := c.call(ctx, http.MethodGet, hostPath(session)+"/link-key", nil, nil, &out)
	return out.Key, err
}
