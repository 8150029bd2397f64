package api

// /mcp: a Model Context Protocol server (official Go SDK, streamable HTTP,
// stateless, JSON responses) behind the same bearer auth as the rest of the
// API. Tools act as the token's actor; writes go through the engine exactly
// like POST .../command. Failures are tool errors (isError) whose text is the
// problem document's detail, so a model can read and act on them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/reducer"
	"github.com/canvasd/canvasd/store"
)

// MCPServerName is the implementation name the MCP server reports.
const MCPServerName = "canvasd"

// mcpHandler returns the /mcp handler. Without an agent runner
// (Config.Agent nil) canvas_agent_edit_request answers that none is
// configured. Mount it behind requireAuth for POST (and GET/DELETE, which
// answer 405).
func (s *Server) mcpHandler() http.Handler {
	sdkLog := slog.New(infoAsDebug{s.log.Handler()})
	srv := mcp.NewServer(&mcp.Implementation{Name: MCPServerName, Title: "canvasd canvas and document tools", Version: "1"},
		// Stateless with JSON answers, the server can send no notification:
		// it advertises tools without listChanged, and no logging.
		&mcp.ServerOptions{Instructions: mcpInstructions, Logger: sdkLog,
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	s.addMCPTools(srv)
	// No DNS-rebinding check on the Host header: every request needs a bearer
	// token, which a rebound page cannot send, and the check refused every
	// request through a reverse proxy on the same machine.
	return s.mcpProblems(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: sdkLog, DisableLocalhostProtection: true}))
}

// infoAsDebug logs the MCP SDK's info records at debug: stateless, it
// reports a session (with an empty id) connecting and ending on every
// request. Its warnings and errors keep their level.
type infoAsDebug struct{ slog.Handler }

func (h infoAsDebug) Enabled(ctx context.Context, l slog.Level) bool {
	if l == slog.LevelInfo {
		l = slog.LevelDebug
	}
	return h.Handler.Enabled(ctx, l)
}

func (h infoAsDebug) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h infoAsDebug) WithAttrs(as []slog.Attr) slog.Handler {
	return infoAsDebug{h.Handler.WithAttrs(as)}
}
func (h infoAsDebug) WithGroup(name string) slog.Handler {
	return infoAsDebug{h.Handler.WithGroup(name)}
}

const mcpInstructions = `canvasd: a shared canvas of shapes and text/code documents ("doc" nodes).
Every tool takes canvas_id; document tools take node_id (a doc node's id, see canvas_get_state).
Lines are 1-indexed and inclusive. Read with canvas_get_content before editing; edits apply at the
current head unless you pass base_rev (then a conflicting concurrent change is refused with the
commits that caused it). canvas_undo/canvas_redo undo and redo your own last change only.`

// --- tool inputs (their JSON Schemas are inferred from these types) ---

type mcpWrite struct {
	BaseRev        *int64 `json:"base_rev,omitempty" jsonschema:"the head_rev you last read; omitted: the current head"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a key that makes retries safe: a repeat returns the first answer"`
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

// mcpVerbCall is what a command tool reads itself: the canvas and the write
// options; the rest of its arguments are the command's args (mcpVerbTool).
type mcpVerbCall struct {
	CanvasID string `json:"canvas_id"`
	mcpWrite
}

type mcpSelection struct {
	CanvasID    string `json:"canvas_id" jsonschema:"the canvas id"`
	NodeID      string `json:"node_id" jsonschema:"the doc node's id"`
	StartLine   int    `json:"start_line" jsonschema:"first selected line (1-indexed)"`
	EndLine     int    `json:"end_line,omitempty" jsonschema:"last selected line (inclusive; default start_line)"`
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
	NodeID      string `json:"node_id,omitempty" jsonschema:"the doc node to edit, if any (the agent then edits that document line by line)"`
	Instruction string `json:"instruction" jsonschema:"what the canvas agent should do, e.g. add error handling to the fetch call on line 15"`
	Context     string `json:"context,omitempty" jsonschema:"why, or what the user wants"`
	Model       string `json:"model,omitempty" jsonschema:"the model to use (default: the server's)"`
	TimeoutMS   int    `json:"timeout_ms,omitempty" jsonschema:"how long to wait for the run, 1 to 300000 ms (default 60000); a run still going on is reported with its state"`
}

func ptr[T any](v T) *T { return &v }

// Tool annotations: what a tool does to the canvas.
var (
	mcpReadOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	mcpEdit     = &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}
	mcpAdditive = &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
	mcpDelegate = &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}
)

// mcpTool is one row of the tool table: the tool and how to register its
// handler (typed by its input struct, whose JSON Schema the SDK infers).
type mcpTool struct {
	tool     *mcp.Tool
	register func(*mcp.Server, *mcp.Tool)
}

// toolFunc adapts a typed handler to a table row's register function.
func toolFunc[In any](h func(ctx context.Context, in In) (*mcp.CallToolResult, any, error)) func(*mcp.Server, *mcp.Tool) {
	return func(srv *mcp.Server, t *mcp.Tool) {
		mcp.AddTool(srv, t, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
			return h(ctx, in)
		})
	}
}

// addMCPTools registers the tools of the /mcp table.
func (s *Server) addMCPTools(srv *mcp.Server) {
	for _, t := range append(s.mcpTools(), s.mcpHostTools()...) { // mcp_host.go
		t.register(srv, t.tool)
	}
}

// mcpTools is the /mcp tool table: name, annotations, description, handler.
func (s *Server) mcpTools() []mcpTool {
	tool := func(name string, ann *mcp.ToolAnnotations, desc string) *mcp.Tool {
		return &mcp.Tool{Name: name, Annotations: ann, Description: desc}
	}
	return append([]mcpTool{
		s.mcpVerbTool("canvas_replace_lines", "replace_lines", mcpEdit, "Replace lines start_line..end_line (1-indexed, inclusive) of a document with new_content. Returns lines_affected, diff {before, after} and new_line_count."),
		s.mcpVerbTool("canvas_insert_lines", "insert_lines", mcpAdditive, "Insert content after line insert_after_line of a document (0: at the top). Returns lines_inserted and new_line_count."),
		s.mcpVerbTool("canvas_delete_lines", "delete_lines", mcpEdit, "Delete lines start_line..end_line (inclusive) of a document. Returns lines_deleted, deleted_content and new_line_count."),
		s.mcpVerbTool("canvas_search_replace", "search_replace", mcpEdit, "Replace matches of search_pattern (text, or RE2 with regex) line by line in a document. Returns replacements_made, affected_lines and per-line diffs."),
		{tool("canvas_get_content", mcpReadOnly, "A document's text with numbered lines (optionally a line range), its line count, language and revision."),
			toolFunc(func(ctx context.Context, in mcpGetContent) (*mcp.CallToolResult, any, error) {
				if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleViewer); err != nil {
					return nil, nil, err
				}
				return mcpResult(s.docContent(ctx, in.CanvasID, in.NodeID, in.StartLine, in.EndLine))
			})},
		{tool("canvas_get_diff", mcpReadOnly, "The document's changes since a snapshot or revision (default: the latest snapshot), as a unified or split diff plus a list of changed lines."),
			toolFunc(s.mcpGetDiff)},
		{tool("canvas_save_snapshot", mcpAdditive, "Save the canvas's current revision as a named snapshot (for canvas_get_diff and canvas_revert_to_snapshot)."),
			toolFunc(s.mcpSaveSnapshot)},
		s.mcpVerbTool("canvas_revert_to_snapshot", reducer.CmdRevertToSnapshot, mcpEdit, "Make the canvas (or one node) as it was at a snapshot. It appends a change (history is kept) and can be undone."),
		s.mcpVerbTool("canvas_undo", reducer.CmdUndo, mcpEdit, "Undo your own last change on the canvas (never someone else's). Refused with a conflict if someone changed the same things since."),
		s.mcpVerbTool("canvas_redo", reducer.CmdRedo, mcpEdit, "Redo the change you last undid (refused after a newer change of yours)."),
		{tool("canvas_get_selection_context", mcpReadOnly, "A selection of a document with 5 lines of context before and after, its language, and a ready-to-paste chat message (formatted_for_chat)."),
			toolFunc(func(ctx context.Context, in mcpSelection) (*mcp.CallToolResult, any, error) {
				if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleViewer); err != nil {
					return nil, nil, err
				}
				return mcpResult(s.docSelection(ctx, in.CanvasID, in.NodeID, in.StartLine, in.EndLine, in.StartColumn, in.EndColumn))
			})},
		{tool("canvas_get_state", mcpReadOnly, "The canvas's nodes (shapes and doc nodes, in z-order) and edges, with head_rev to use as base_rev."),
			toolFunc(s.mcpGetState)},
		{withInput(tool("canvas_apply", mcpEdit, "Apply any canvas command (create_node, update_node, move, align, replace_lines, undo, ...) with its args, as POST /canvas_commands/{canvas_id}/command does."), mcpApplySchema()),
			func(srv *mcp.Server, t *mcp.Tool) {
				mcp.AddTool(srv, t, func(ctx context.Context, req *mcp.CallToolRequest, in mcpApply) (*mcp.CallToolResult, any, error) {
					// args as the client sent them: the SDK's decoding would turn
					// their numbers into float64 (1795461385736852721 into
					// 1795461385736852700), and props come back as they were sent.
					var sent struct {
						Args json.RawMessage `json:"args"`
					}
					if err := json.Unmarshal(req.Params.Arguments, &sent); err != nil || len(sent.Args) == 0 || string(sent.Args) == "null" {
						sent.Args = json.RawMessage(`{}`)
					}
					return s.mcpCommandRaw(ctx, in.CanvasID, in.Type, sent.Args, in.mcpWrite, in.Strict)
				})
			}},
		{tool("canvas_agent_edit_request", mcpDelegate, "Hand an editing instruction to the server's canvas agent (focused on a document with node_id) and wait for the run: returns session_id, state, summary (what the agent said it did), diff (of the document since the request) and revs (the revisions it made)."),
			toolFunc(s.mcpAgentEditRequest)},
	}, s.mcpFileTools(tool)...) // mcp_files.go
}

// withInput sets a tool's input schema.
func withInput(t *mcp.Tool, schema map[string]any) *mcp.Tool {
	t.InputSchema = schema
	return t
}

// mcpVerbTool is the row of a tool that applies one command type: its input
// schema is the command's args as package canvas defines them (the same
// definition the reducer decodes and openapi.yaml documents) with
// canvas_id, base_rev and idempotency_key beside them; the args are passed
// on as the client sent them (numbers exact).
func (s *Server) mcpVerbTool(name, verb string, ann *mcp.ToolAnnotations, desc string) mcpTool {
	t := &mcp.Tool{Name: name, Annotations: ann, Description: desc, InputSchema: mcpVerbSchema(verb)}
	return mcpTool{t, func(srv *mcp.Server, t *mcp.Tool) {
		mcp.AddTool(srv, t, func(ctx context.Context, req *mcp.CallToolRequest, in mcpVerbCall) (*mcp.CallToolResult, any, error) {
			var args map[string]json.RawMessage
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args == nil {
				args = map[string]json.RawMessage{}
			}
			for k := range mcpToolProps {
				delete(args, k)
			}
			raw, err := json.Marshal(args)
			if err != nil {
				return nil, nil, mcpError(canvas.Invalid("args", "cannot be encoded: %v", err))
			}
			return s.mcpCommandRaw(ctx, in.CanvasID, verb, raw, in.mcpWrite, false)
		})
	}}
}

// mcpToolProps are the arguments of a command tool besides the command's args.
var mcpToolProps = map[string]map[string]any{
	"canvas_id":       {"type": "string", "description": "the canvas id"},
	"base_rev":        {"type": "integer", "description": "the head_rev you last read; omitted: the current head"},
	"idempotency_key": {"type": "string", "description": "a key that makes retries safe: a repeat returns the first answer"},
}

// mcpVerbSchema is the input schema of a command tool: the command's args
// (canvas.ArgsJSONSchema) and mcpToolProps, canvas_id required.
func mcpVerbSchema(verb string) map[string]any {
	s, ok := canvas.ArgsJSONSchema(verb, canvas.JSONSchemaOptions{})
	if !ok || s["oneOf"] != nil {
		panic("api: no MCP tool schema for command " + verb)
	}
	props := s["properties"].(map[string]any)
	for k, v := range mcpToolProps {
		props[k] = v
	}
	required, _ := s["required"].([]string)
	s["required"] = append([]string{"canvas_id"}, required...)
	return withoutDefaults(s).(map[string]any)
}

// mcpApplySchema is the input schema of canvas_apply: type is one of the
// command types, and args are that type's args (an if/then per type).
func mcpApplySchema() map[string]any {
	var types []string
	var branches []any
	for _, v := range canvas.Verbs() {
		types = append(types, v.Type)
		args, _ := canvas.ArgsJSONSchema(v.Type, canvas.JSONSchemaOptions{})
		branches = append(branches, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": v.Type}}, "required": []string{"type"}},
			"then": map[string]any{"properties": map[string]any{"args": args}},
		})
	}
	s := map[string]any{
		"type":     "object",
		"required": []string{"canvas_id", "type"},
		"properties": map[string]any{
			"canvas_id":       mcpToolProps["canvas_id"],
			"type":            map[string]any{"type": "string", "enum": types, "description": "the command type"},
			"args":            map[string]any{"type": "object", "description": "the command's arguments: the args of its type (the API's CommandEnvelope)"},
			"strict":          map[string]any{"type": "boolean", "description": "refuse when base_rev is stale even without a conflict"},
			"base_rev":        mcpToolProps["base_rev"],
			"idempotency_key": mcpToolProps["idempotency_key"],
		},
		"additionalProperties": false,
		"allOf":                branches,
	}
	return withoutDefaults(s).(map[string]any)
}

// withoutDefaults drops the schema's default values: the SDK would write
// them into the arguments, re-encoding their numbers (1795461385736852721
// would arrive as 1795461385736852700).
func withoutDefaults(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if k != "default" {
				out[k] = withoutDefaults(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = withoutDefaults(x)
		}
		return out
	}
	return v
}

func (s *Server) mcpGetDiff(ctx context.Context, in mcpGetDiff) (*mcp.CallToolResult, any, error) {
	if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleViewer); err != nil {
		return nil, nil, err
	}
	format, err := reducer.ParseDiffFormat("format", in.Format)
	if err != nil {
		return nil, nil, mcpError(err)
	}
	return mcpResult(s.docDiff(ctx, in.CanvasID, in.NodeID, in.Since, format))
}

func (s *Server) mcpSaveSnapshot(ctx context.Context, in mcpSaveSnapshot) (*mcp.CallToolResult, any, error) {
	if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleEditor); err != nil {
		return nil, nil, err
	}
	if in.NodeID != "" {
		// A node_id that names no document is refused before anything is written.
		if _, _, _, err := s.docAt(ctx, in.CanvasID, in.NodeID, -1, false); err != nil {
			return nil, nil, mcpError(err)
		}
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
}

func (s *Server) mcpGetState(ctx context.Context, in mcpGetState) (*mcp.CallToolResult, any, error) {
	if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleViewer); err != nil {
		return nil, nil, err
	}
	at := int64(-1)
	if in.AtRev != nil {
		if *in.AtRev < 0 { // as GET /canvas_commands/snapshot/{canvas_id}?at_rev= refuses it
			return nil, nil, mcpError(canvas.Invalid("at_rev", "must be a revision number ≥ 0, got %d", *in.AtRev))
		}
		at = *in.AtRev
	}
	var out canvas.Snapshot
	err := s.engine.View(ctx, in.CanvasID, at, func(st *canvas.State, eventID string) error {
		// Encode under the read lock: the state must not be kept.
		b, err := json.Marshal(snapshotOf(in.CanvasID, st, eventID, at))
		if err != nil {
			return err
		}
		return canvas.UnmarshalExact(b, &out) // props numbers stay exact
	})
	return mcpResult(out, err)
}

// mcpAgentEditRequest runs the canvas agent on the request and returns its
// outcome (agentEdit).
func (s *Server) mcpAgentEditRequest(ctx context.Context, in mcpAgentEdit) (*mcp.CallToolResult, any, error) {
	if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleEditor); err != nil {
		return nil, nil, err
	}
	return mcpResult(s.agentEdit(ctx, agentEditRequest(in)))
}

// mcpAuthorize checks the caller's role on a canvas.
func mcpAuthorize(ctx context.Context, canvasID string, need canvas.Role) error {
	if canvasID == "" {
		return mcpError(canvas.Invalid("canvas_id", "is required"))
	}
	p := principalFrom(ctx)
	if !p.CanAccess(canvasID, need) {
		return mcpError(fmt.Errorf("%w: this needs the %s role on canvas %q; your token has %s", canvas.ErrForbidden, need, canvasID, p.DescribeScope()))
	}
	return nil
}

// mcpCommandRaw runs one command (its args as JSON) through the engine as
// the caller and returns the 200 answer (status, current_rev, result...) as
// the tool's output; a 409 or 422 is a tool error carrying the answer.
func (s *Server) mcpCommandRaw(ctx context.Context, canvasID, typ string, raw json.RawMessage, w mcpWrite, strict bool) (*mcp.CallToolResult, any, error) {
	if err := mcpAuthorize(ctx, canvasID, canvas.RoleEditor); err != nil {
		return nil, nil, err
	}
	env := canvas.Envelope{Type: typ, BaseRev: w.BaseRev, IdempotencyKey: w.IdempotencyKey, Strict: strict, Args: raw}
	if env.BaseRev == nil { // at the head: a retry with the same key is the same command however the head moved
		head, _, err := s.engine.Head(ctx, canvasID)
		if err != nil {
			return nil, nil, mcpError(err)
		}
		env.BaseRev, env.HeadBase = &head, true
	}
	if err := env.Validate(); err != nil {
		return nil, nil, mcpError(err)
	}
	resp, err := s.engine.Execute(ctx, canvasID, principalFrom(ctx).Actor, env)
	if errors.Is(err, canvas.ErrOutcomeUnknown) && env.IdempotencyKey == "" {
		// The problem's advice (retry with the same key) needs a key this
		// call did not carry.
		return nil, nil, fmt.Errorf("%w; this call carried no idempotency_key, so read the canvas (canvas_get_state) to see whether it applied before calling again, and pass an idempotency_key next time", mcpError(err))
	}
	if err != nil {
		return nil, nil, mcpError(err)
	}
	var out map[string]any
	if err := json.Unmarshal(resp.Result, &out); err != nil {
		return nil, nil, fmt.Errorf("unreadable engine answer (%s)", resp.Outcome)
	}
	if resp.Outcome != store.OutcomeApplied {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: conflictText(out, resp.Result)}}}, nil, nil
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

// conflictText is the tool error text of a conflicting command.
func conflictText(out map[string]any, result []byte) string {
	return fmt.Sprintf("conflict (%d): %v Current revision %v; conflicting ids %v. Full answer with recovery_ops: %s",
		outcomeStatus(store.OutcomeConflict), out["suggestion"], out["current_rev"], out["conflicting_ids"], result)
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
