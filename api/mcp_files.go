package api

// The /mcp tools for files (files.go does the work): canvas_export answers
// a PNG as image content and the other formats as text; canvas_import
// reads a file given as text.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/store"
)

type mcpExport struct {
	CanvasID   string    `json:"canvas_id" jsonschema:"the canvas id"`
	Format     string    `json:"format,omitempty" jsonschema:"png (default, answered as an image), svg, jsoncanvas or excalidraw (answered as text)"`
	AtRev      *int64    `json:"at_rev,omitempty" jsonschema:"the canvas as it was at this revision (default the head)"`
	IDs        []string  `json:"ids,omitempty" jsonschema:"only these nodes and edges (a frame or group brings its children)"`
	Bounds     []float64 `json:"bounds,omitempty" jsonschema:"[x, y, w, h]: the page region to draw (png, svg); default: everything drawn"`
	Scale      float64   `json:"scale,omitempty" jsonschema:"pixels per page unit of a PNG (0.01 to 8, default 1)"`
	Background string    `json:"background,omitempty" jsonschema:"white (default) or transparent"`
}

type mcpImport struct {
	CanvasID string `json:"canvas_id" jsonschema:"the canvas id"`
	Format   string `json:"format" jsonschema:"jsoncanvas, excalidraw or mermaid (a flowchart, laid out by Graphviz)"`
	Content  string `json:"content" jsonschema:"the file's text"`
	Mode     string `json:"mode,omitempty" jsonschema:"merge (default: the file joins the canvas, replacing what has the same id) or replace (everything else is deleted)"`
	mcpWrite
}

// mcpFileTools are the file rows of the /mcp tool table.
func (s *Server) mcpFileTools(tool func(name string, ann *mcp.ToolAnnotations, desc string) *mcp.Tool) []mcpTool {
	return []mcpTool{
		{tool("canvas_export", mcpReadOnly, "The canvas drawn by the server (png: an image you can look at; svg, its fonts named rather than embedded) or written as a file (jsoncanvas: JSON Canvas 1.0; excalidraw: .excalidraw), optionally of some ids, a region (bounds), a past revision (at_rev)."),
			toolFunc(s.mcpExport)},
		{tool("canvas_import", mcpEdit, "Read a file into the canvas as one commit: a JSON Canvas or .excalidraw file, or a Mermaid flowchart (laid out by Graphviz: nothing overlaps, subgraphs become frames). Returns current_rev and created_ids; a bad file is an error naming the place in it."),
			toolFunc(s.mcpImport)},
	}
}

func (s *Server) mcpExport(ctx context.Context, in mcpExport) (*mcp.CallToolResult, any, error) {
	if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleViewer); err != nil {
		return nil, nil, err
	}
	q := url.Values{}
	if in.Format != "" {
		q.Set("format", in.Format)
	}
	if in.AtRev != nil {
		q.Set("at_rev", strconv.FormatInt(*in.AtRev, 10))
	}
	if in.IDs != nil {
		ids := ""
		for i, id := range in.IDs {
			if i > 0 {
				ids += ","
			}
			ids += id
		}
		q.Set("ids", ids)
	}
	if in.Bounds != nil {
		if len(in.Bounds) != 4 {
			return nil, nil, mcpError(canvas.Invalid("bounds", "must be [x, y, w, h]; got %d numbers", len(in.Bounds)))
		}
		q.Set("bounds", fmt.Sprintf("%g,%g,%g,%g", in.Bounds[0], in.Bounds[1], in.Bounds[2], in.Bounds[3]))
	}
	if in.Scale != 0 {
		q.Set("scale", strconv.FormatFloat(in.Scale, 'g', -1, 64))
	}
	if in.Background != "" {
		q.Set("background", in.Background)
	}
	o, err := parseExportQuery(q)
	if err != nil {
		return nil, nil, mcpError(err)
	}
	// An SVG for a model to read: its fonts named, not embedded (hundreds of KiB of base64).
	o.render.FontsByName = true
	body, ctype, rev, err := s.export(ctx, in.CanvasID, o)
	if err != nil {
		return nil, nil, mcpError(err)
	}
	if o.format == "png" {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ImageContent{Data: body, MIMEType: ctype},
			&mcp.TextContent{Text: fmt.Sprintf("canvas %s at revision %d, drawn by the server as a PNG (%d bytes)", in.CanvasID, rev, len(body))},
		}}, nil, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}, nil, nil
}

func (s *Server) mcpImport(ctx context.Context, in mcpImport) (*mcp.CallToolResult, any, error) {
	if err := mcpAuthorize(ctx, in.CanvasID, canvas.RoleEditor); err != nil {
		return nil, nil, err
	}
	req := importRequest{format: in.Format, mode: in.Mode, baseRev: in.BaseRev, idempotencyKey: in.IdempotencyKey}
	if err := checkImportRequest(&req); err != nil {
		return nil, nil, mcpError(err)
	}
	file := []byte(in.Content)
	if err := checkFileText(req.format, file); err != nil {
		return nil, nil, mcpError(err)
	}
	ans, err := s.importFile(ctx, in.CanvasID, req, file)
	if err != nil {
		return nil, nil, mcpError(err)
	}
	var out map[string]any
	if err := json.Unmarshal(ans.Result, &out); err != nil {
		return nil, nil, fmt.Errorf("unreadable engine answer (%s)", ans.Outcome)
	}
	if ans.Outcome != store.OutcomeApplied {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: conflictText(out, ans.Result)}}}, nil, nil
	}
	out["success"] = true
	return mcpResult(out, nil)
}
