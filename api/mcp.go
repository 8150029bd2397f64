package api

// /mcp: a Model Context Protocol server (official Go SDK, streamable HTTP,
// stateless, JSON responses) behind the same bearer auth as the rest of the
// API. Tools act as the token's actor; writes go through the engine exactly
// like POST .../command. Failures are tool errors (isError) whose text is the
// problem document's detail, so a model can read and act on them.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/client"
	"github.com/canvasd/canvasd/reducer"
)

// MCPServerName is the implementation name the MCP server reports.
const MCPServerName = "canvasd"

// mcpHandler returns the /mcp handler. agentSvc may be nil: then
// canvas_agent_edit_request answers that no agent runner is configured.
// Mount it behind requireAuth for POST (and GET/DELETE, which answer 405).
func (s *Server) mcpHandler(agentSvc AgentService) http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: MCPServerName, Title: "canvasd canvas and document tools", Version: "1"},
		&mcp.ServerOptions{Instructions: mcpInstructions, Logger: s.log})
	s.addMCPTools(srv, agentSvc)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.log})
}

const mcpInstructions = `canvasd: a shared canvas of shapes and text/code documents ("doc" nodes).
Every tool takes canvas_id; document tools take node_id (a doc node's id, see canvas_get_state).
Lines are 1-indexed and inclusive. Read with canvas_get_content before editing; edits apply at the
current head unless you pass base_rev (then a conflicting concurrent change is refused with the
commits that caused it). canvas_undo/canvas_redo undo and redo your own last change only.`

// --- tool inputs (their JSON Schemas are inferred from these types) ---

type mcpCanvas struct {
	CanvasID string `json:"canvas_id" jsonschema:"the canvas id"`
}

type mcpWrite struct {
	BaseRev        *int64 `json:"base_rev,omitempty" jsonschema:"the head_rev you last read; omitted: the current head"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a key that makes retries safe: a repeat returns the first answer"`
}

type mcpReplaceLines struct {
	CanvasID   string `json:"canvas_id" jsonschema:"the canvas id"`
	NodeID     string `json:"node_id" jsonschema:"the doc node's id"`
	StartLine  int    `json:"start_line" jsonschema:"first line to replace (1-indexed)"`
	EndLine    int    `json:"end_line" jsonschema:"last line to replace (inclusive)"`
	NewContent string `json:"new_content" jsonschema:"the replacement lines; one trailing newline is a terminator"`
	Reason     string `json:"reason,omitempty" jsonschema:"why (recorded with the change)"`
	mcpWrite
}

type mcpInsertLines struct {
	CanvasID        string `json:"canvas_id" jsonschema:"the canvas id"`
	NodeID          string `json:"node_id" jsonschema:"the doc node's id"`
	InsertAfterLine int    `json:"insert_after_line" jsonschema:"insert after this line; 0 inserts at the top"`
	Content         string `json:"content" jsonschema:"the lines to insert"`
	Reason          string `json:"reason,omitempty" jsonschema:"why (recorded with the change)"`
	mcpWrite
}

type mcpDeleteLines struct {
	CanvasID  string `json:"canvas_id" jsonschema:"the canvas id"`
	NodeID    string `json:"node_id" jsonschema:"the doc node's id"`
	StartLine int    `json:"start_line" jsonschema:"first line to delete (1-indexed)"`
	EndLine   int    `json:"end_line" jsonschema:"last line to delete (inclusive)"`
	Reason    string `json:"reason,omitempty" jsonschema:"why (recorded with the change)"`
	mcpWrite
}

type mcpSearchReplace struct {
	CanvasID        string `json:"canvas_id" jsonschema:"the canvas id"`
	NodeID          string `json:"node_id" jsonschema:"the doc node's id"`
	SearchPattern   string `json:"search_pattern" jsonschema:"text, or an RE2 regular expression when regex is true; matched line by line"`
	ReplaceWith     string `json:"replace_with" jsonschema:"the replacement; with regex, $1 or ${name} insert groups"`
	CaseSensitive   *bool  `json:"case_sensitive,omitempty" jsonschema:"default true"`
	Regex           bool   `json:"regex,omitempty" jsonschema:"treat search_pattern as an RE2 regular expression"`
	MaxReplacements int    `json:"max_replacements,omitempty" jsonschema:"0 replaces every match"`
	Reason          string `json:"reason,omitempty" jsonschema:"why (recorded with the change)"`
	mcpWrite
}

type mcpGetContent struct {
	CanvasID  string `json:"canvas_id" jsonschema:"the canvas id"`
	NodeID    string `json:"node_id" jsonschema:"the doc node's id"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"first line (default 1)"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"last line (default the last)"`
}

type mcpGetDiff struct {
	CanvasID string `json:"canvas_id" jsonschema:"the canvas id"`
	NodeID   string `json:"node_id" jsonschema:"the doc node's id"`
	Since    string `json:"since,omitempty" jsonschema:"a snapshot_id or a revision number; default the latest snapshot"`
	Format   string `json:"format,omitempty" jsonschema:"unified (default) or split"`
}

type mcpSaveSnapshot struct {
	CanvasID    string `json:"canvas_id" jsonschema:"the canvas id"`
	NodeID      string `json:"node_id,omitempty" jsonschema:"a doc node whose line count to report"`
	Label       string `json:"label,omitempty" jsonschema:"a short label"`
	Description string `json:"description,omitempty" jsonschema:"a longer description"`
}

type mcpRevert struct {
	CanvasID   string `json:"canvas_id" jsonschema:"the canvas id"`
	SnapshotID string `json:"snapshot_id" jsonschema:"the snapshot to go back to"`
	NodeID     string `json:"node_id,omitempty" jsonschema:"revert only this node (default: the whole canvas)"`
	mcpWrite
}

type mcpHistory struct {
	CanvasID string `json:"canvas_id" jsonschema:"the canvas id"`
	mcpWrite
}

type mcpSelection struct {
	CanvasID    string `json:"canvas_id" jsonschema:"the canvas id"`
	NodeID      string `json:"node_id" jsonschema:"the doc node's id"`
	StartLine   int    `json:"start_line" jsonschema:"first selected line (1-indexed)"`
	EndLine     int    `json:"end_line" jsonschema:"last selected line (inclusive)"`
	StartColumn int    `json:"start_column,omitempty" jsonschema:"first selected character on start_line (1-indexed)"`
	EndColumn   int    `json:"end_column,omitempty" jsonschema:"character after the selection on end_line (exclusive)"`
}

type mcpGetState struct {
	CanvasID string `json:"canvas_id" jsonschema:"the canvas id"`
	AtRev    *int64 `json:"at_rev,omitempty" jsonschema:"the state as it was at this revision (default the head)"`
}

type mcpApply struct {
	CanvasID string         `json:"canvas_id" jsonschema:"the canvas id"`
	Type     string         `json:"type" jsonschema:"the command type, e.g. create_node, move, replace_lines, undo"`
	Args     map[string]any `json:"args,omitempty" jsonschema:"the command's arguments (see the API's command list)"`
	Strict   bool           `json:"strict,omitempty" jsonschema:"refuse when base_rev is stale even without a conflict"`
	mcpWrite
}

type mcpAgentEdit struct {
	CanvasID    string `json:"canvas_id" jsonschema:"the canvas id"`
	NodeID      string `json:"node_id,omitempty" jsonschema:"the doc node to edit, if any"`
	Instruction string `json:"instruction" jsonschema:"what the canvas agent should do"`
	Context     string `json:"context,omitempty" jsonschema:"why, or what the user wants"`
}

func ptr[T any](v T) *T { return &v }

// addMCPTools registers the tools of API.md's /mcp.
func (s *Server) addMCPTools(srv *mcp.Server, agentSvc AgentService) {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	edit := &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}
	additive := &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}

	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_replace_lines", Annotations: edit,
		Description: "Replace lines start_line..end_line (1-indexed, inclusive) of a document with new_content. Returns lines_affected, diff {before, after} and new_line_count."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpReplaceLines) (*mcp.CallToolResult, any, error) {
			return s.mcpCommand(ctx, in.CanvasID, "replace_lines", map[string]any{"node_id": in.NodeID, "start_line": in.StartLine,
				"end_line": in.EndLine, "new_content": in.NewContent, "reason": in.Reason}, in.mcpWrite, false)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_insert_lines", Annotations: additive,
		Description: "Insert content after line insert_after_line of a document (0: at the top). Returns lines_inserted and new_line_count."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpInsertLines) (*mcp.CallToolResult, any, error) {
			return s.mcpCommand(ctx, in.CanvasID, "insert_lines", map[string]any{"node_id": in.NodeID,
				"insert_after_line": in.InsertAfterLine, "content": in.Content, "reason": in.Reason}, in.mcpWrite, false)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_delete_lines", Annotations: edit,
		Description: "Delete lines start_line..end_line (inclusive) of a document. Returns lines_deleted, deleted_content and new_line_count."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpDeleteLines) (*mcp.CallToolResult, any, error) {
			return s.mcpCommand(ctx, in.CanvasID, "delete_lines", map[string]any{"node_id": in.NodeID, "start_line": in.StartLine,
				"end_line": in.EndLine, "reason": in.Reason}, in.mcpWrite, false)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_search_replace", Annotations: edit,
		Description: "Replace matches of search_pattern (text, or RE2 with regex) line by line in a document. Returns replacements_made, affected_lines and per-line diffs."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpSearchReplace) (*mcp.CallToolResult, any, error) {
			args := map[string]any{"node_id": in.NodeID, "search_pattern": in.SearchPattern, "replace_with": in.ReplaceWith,
				"regex": in.Regex, "max_replacements": in.MaxReplacements, "reason": in.Reason}
			if in.CaseSensitive != nil {
				args["case_sensitive"] = *in.CaseSensitive
			}
			return s.mcpCommand(ctx, in.CanvasID, "search_replace", args, in.mcpWrite, false)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_get_content", Annotations: ro,
		Description: "A document's text with numbered lines (optionally a line range), its line count, language and revision."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpGetContent) (*mcp.CallToolResult, any, error) {
			if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleViewer); err != nil {
				return nil, nil, err
			}
			out, err := s.docContent(ctx, in.CanvasID, in.NodeID, in.StartLine, in.EndLine)
			return mcpResult(out, err)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_get_diff", Annotations: ro,
		Description: "The document's changes since a snapshot or revision (default: the latest snapshot), as a unified or split diff plus a list of changed lines."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpGetDiff) (*mcp.CallToolResult, any, error) {
			if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleViewer); err != nil {
				return nil, nil, err
			}
			format, err := reducer.ParseDiffFormat("format", in.Format)
			if err != nil {
				return nil, nil, mcpError(err)
			}
			out, err := s.docDiff(ctx, in.CanvasID, in.NodeID, in.Since, format)
			return mcpResult(out, err)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_save_snapshot", Annotations: additive,
		Description: "Save the canvas's current revision as a named snapshot (for canvas_get_diff and canvas_revert_to_snapshot)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpSaveSnapshot) (*mcp.CallToolResult, any, error) {
			if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleEditor); err != nil {
				return nil, nil, err
			}
			snap, err := s.createNamedSnapshot(ctx, in.CanvasID, principalFrom(ctx).Actor, in.Label, in.Description)
			if err != nil {
				return nil, nil, mcpError(err)
			}
			out := map[string]any{"success": true, "snapshot_id": snap.ID, "timestamp": snap.CreatedAt, "rev": snap.Rev, "label": snap.Label}
			if in.NodeID != "" {
				if text, _, _, err := s.docAt(ctx, in.CanvasID, in.NodeID, snap.Rev, false); err == nil {
					out["line_count"] = reducer.LineCount(text)
				}
			}
			return mcpResult(out, nil)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_revert_to_snapshot", Annotations: edit,
		Description: "Make the canvas (or one node) as it was at a snapshot. It appends a change (history is kept) and can be undone."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpRevert) (*mcp.CallToolResult, any, error) {
			args := map[string]any{"snapshot_id": in.SnapshotID}
			if in.NodeID != "" {
				args["node_id"] = in.NodeID
			}
			return s.mcpCommand(ctx, in.CanvasID, reducer.CmdRevertToSnapshot, args, in.mcpWrite, false)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_undo", Annotations: edit,
		Description: "Undo your own last change on the canvas (never someone else's). Refused with a conflict if someone changed the same things since."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpHistory) (*mcp.CallToolResult, any, error) {
			return s.mcpCommand(ctx, in.CanvasID, reducer.CmdUndo, map[string]any{}, in.mcpWrite, false)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_redo", Annotations: edit,
		Description: "Redo the change you last undid (refused after a newer change of yours)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpHistory) (*mcp.CallToolResult, any, error) {
			return s.mcpCommand(ctx, in.CanvasID, reducer.CmdRedo, map[string]any{}, in.mcpWrite, false)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_get_selection_context", Annotations: ro,
		Description: "A selection of a document with 5 lines of context before and after, its language, and a ready-to-paste chat message (formatted_for_chat)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpSelection) (*mcp.CallToolResult, any, error) {
			if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleViewer); err != nil {
				return nil, nil, err
			}
			out, err := s.docSelection(ctx, in.CanvasID, in.NodeID, in.StartLine, in.EndLine, in.StartColumn, in.EndColumn)
			return mcpResult(out, err)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_get_state", Annotations: ro,
		Description: "The canvas's nodes (shapes and doc nodes, in z-order) and edges, with head_rev to use as base_rev."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpGetState) (*mcp.CallToolResult, any, error) {
			if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleViewer); err != nil {
				return nil, nil, err
			}
			at := int64(-1)
			if in.AtRev != nil {
				at = *in.AtRev
			}
			var out snapshotResponse
			err := s.engine.View(ctx, in.CanvasID, at, func(st *canvas.State, eventID string) error {
				// Encode under the read lock: the state must not be kept.
				b, err := json.Marshal(snapshotResponse{CanvasID: in.CanvasID, HeadRev: st.Rev, HeadEventID: eventID, State: st.Scene()})
				if err != nil {
					return err
				}
				return json.Unmarshal(b, &out)
			})
			return mcpResult(out, err)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_apply", Annotations: edit,
		Description: "Apply any canvas command (create_node, update_node, move, align, replace_lines, undo, ...) with its args, as POST /canvas_commands/{canvas_id}/command does."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpApply) (*mcp.CallToolResult, any, error) {
			if in.Args == nil {
				in.Args = map[string]any{}
			}
			return s.mcpCommand(ctx, in.CanvasID, in.Type, in.Args, in.mcpWrite, in.Strict)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "canvas_agent_edit_request", Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
		Description: "Hand an editing instruction to the server's canvas agent, which edits the canvas in the background. Returns its session_id."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpAgentEdit) (*mcp.CallToolResult, any, error) {
			if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleEditor); err != nil {
				return nil, nil, err
			}
			if agentSvc == nil {
				return nil, nil, fmt.Errorf("no agent runner is configured on this server: edit the canvas directly with the canvas_* tools")
			}
			msg := in.Instruction
			if in.NodeID != "" {
				msg = fmt.Sprintf("In document %s: %s", in.NodeID, msg)
			}
			if in.Context != "" {
				msg += "\n\nContext: " + in.Context
			}
			req := client.AgentRunRequest{RoomID: in.CanvasID, Message: msg}
			if in.NodeID != "" {
				req.Selection = []string{in.NodeID}
			}
			id, err := agentSvc.Run(ctx, req)
			if err != nil {
				return nil, nil, mcpError(err)
			}
			return mcpResult(map[string]any{"success": true, "session_id": id,
				"status": "the agent runs in the background; follow it with GET /api/canvas-agent/sessions/" + id}, nil)
		})
}

// mcpAuthorize checks the caller's role on a canvas.
func mcpAuthorize(ctx context.Context, canvasID string, need canvas.Role) error {
	if canvasID == "" {
		return mcpError(canvas.Invalid("canvas_id", "is required"))
	}
	p := principalFrom(ctx)
	if !p.CanAccess(canvasID, need) {
		return mcpError(fmt.Errorf("%w: this needs the %s role on canvas %q; your token has %s", canvas.ErrForbidden, need, canvasID, describeScope(p)))
	}
	return nil
}

// mcpCommand runs one command through the engine as the caller and returns
// the 200 answer (status, current_rev, result...) as the tool's output; a 409
// or 422 is a tool error carrying the answer.
func (s *Server) mcpCommand(ctx context.Context, canvasID, typ string, args map[string]any, w mcpWrite, strict bool) (*mcp.CallToolResult, any, error) {
	if err := mcpAuthorize(ctx, canvasID, canvas.RoleEditor); err != nil {
		return nil, nil, err
	}
	for k, v := range args { // optional string args left empty are not sent
		if v == "" && (k == "reason") {
			delete(args, k)
		}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, nil, mcpError(canvas.Invalid("args", "cannot be encoded: %v", err))
	}
	base := w.BaseRev
	if base == nil {
		head, _, err := s.engine.Head(ctx, canvasID)
		if err != nil {
			return nil, nil, mcpError(err)
		}
		base = &head
	}
	env := canvas.Envelope{Type: typ, BaseRev: base, IdempotencyKey: w.IdempotencyKey, Strict: strict, Args: raw}
	if err := env.Validate(); err != nil {
		return nil, nil, mcpError(err)
	}
	resp, err := s.engine.Execute(ctx, canvasID, principalFrom(ctx).Actor, env)
	if err != nil {
		return nil, nil, mcpError(err)
	}
	var out map[string]any
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		return nil, nil, fmt.Errorf("unreadable engine answer (status %d)", resp.Status)
	}
	if resp.Status != http.StatusOK {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: conflictText(resp.Status, out, resp.Body)}}}, nil, nil
	}
	if r, ok := out["result"].(map[string]any); ok { // the design's fields at the top, as in its tool responses
		for k, v := range r {
			if _, taken := out[k]; !taken {
				out[k] = v
			}
		}
	}
	out["success"] = true
	return mcpResult(out, nil)
}

func conflictText(status int, out map[string]any, body []byte) string {
	if status == http.StatusConflict {
		return fmt.Sprintf("conflict (409): %v Current revision %v; conflicting ids %v. Full answer with recovery_ops: %s",
			out["suggestion"], out["current_rev"], out["conflicting_ids"], body)
	}
	return fmt.Sprintf("status %d: %s", status, body)
}

// mcpError turns an error into a tool error whose text is the problem detail.
func mcpError(err error) error {
	p := problemFor(err)
	if f, ok := p.Extra["field"]; ok {
		return fmt.Errorf("%s (%d): %s [field %v]", p.Title, p.Status, p.Detail, f)
	}
	return fmt.Errorf("%s (%d): %s", p.Title, p.Status, p.Detail)
}

// mcpResult returns v as the tool's structured output (and its JSON text), or err as a tool error.
func mcpResult(v any, err error) (*mcp.CallToolResult, any, error) {
	if err != nil {
		return nil, nil, mcpError(err)
	}
	return nil, v, nil
}
