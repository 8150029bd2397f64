package api

// Files in and out of a canvas: GET /api/canvases/{canvas_id}/export draws
// the canvas (render: SVG, PNG) or writes it as a file (convert: JSON
// Canvas, .excalidraw); POST /api/canvases/{canvas_id}/import reads a file
// (JSON Canvas, .excalidraw, Mermaid) and commits it as one import_scene
// command, answered like a command. The MCP tools canvas_export and
// canvas_import (mcp_files.go) call the same functions.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/canvasd/canvasd/canvas"
	"github.com/canvasd/canvasd/convert"
	"github.com/canvasd/canvasd/reducer"
	"github.com/canvasd/canvasd/render"
	"github.com/canvasd/canvasd/store"
)

// maxImportBody bounds the file an import takes.
const maxImportBody = 32 << 20

// maxExportIDs bounds the ids an export names.
const maxExportIDs = 10000

// exportFormats are the export formats and their media types.
var exportFormats = map[string]string{
	"svg":        "image/svg+xml",
	"png":        "image/png",
	"jsoncanvas": "application/json",
	"excalidraw": "application/vnd.excalidraw+json",
}

// exportExt is each format's file name extension.
var exportExt = map[string]string{"svg": "svg", "png": "png", "jsoncanvas": "canvas", "excalidraw": "excalidraw"}

// exportOptions are an export's query parameters.
type exportOptions struct {
	format string
	atRev  int64 // -1: the head
	render render.Options
}

// parseExportQuery reads format, at_rev, ids, bounds, scale and background.
func parseExportQuery(q url.Values) (exportOptions, error) {
	o := exportOptions{format: q.Get("format"), atRev: -1}
	if o.format == "" {
		o.format = "png"
	}
	if _, ok := exportFormats[o.format]; !ok {
		return o, canvas.Invalid("format", "must be one of svg, png, jsoncanvas, excalidraw; got %q", o.format)
	}
	if v := q.Get("at_rev"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return o, canvas.Invalid("at_rev", "must be a revision number ≥ 0, got %q", v)
		}
		o.atRev = n
	}
	ids, err := parseIDs(q.Get("ids"), q.Has("ids"))
	if err != nil {
		return o, err
	}
	o.render.IDs = ids
	if v := q.Get("bounds"); v != "" {
		parts := strings.Split(v, ",")
		var f [4]float64
		if len(parts) != 4 {
			return o, canvas.Invalid("bounds", "must be x,y,w,h (four numbers, page units); got %q", v)
		}
		for i, p := range parts {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil {
				return o, canvas.Invalid("bounds", "must be x,y,w,h (four numbers, page units); got %q", v)
			}
			f[i] = x
		}
		o.render.Bounds = &render.Rect{X: f[0], Y: f[1], W: f[2], H: f[3]}
	}
	if v := q.Get("scale"); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return o, canvas.Invalid("scale", "must be a number from %g to %g; got %q", float64(render.MinScale), float64(render.MaxScale), v)
		}
		o.render.Scale = x
	}
	switch bg := q.Get("background"); bg {
	case "", "white":
	case "transparent":
		o.render.Transparent = true
	default:
		return o, canvas.Invalid("background", "must be white or transparent; got %q", bg)
	}
	return o, nil
}

// parseIDs reads a comma-separated list of node and edge ids (nil when the
// parameter is absent; present and empty names nothing).
func parseIDs(v string, present bool) ([]string, error) {
	if !present {
		return nil, nil
	}
	ids := []string{}
	for _, id := range strings.Split(v, ",") {
		if id = strings.TrimSpace(id); id == "" {
			continue
		}
		if err := canvas.ValidateID("ids", id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if len(ids) > maxExportIDs {
		return nil, canvas.Invalid("ids", "names %d ids; at most %d", len(ids), maxExportIDs)
	}
	return ids, nil
}

// viewState returns the canvas at atRev (-1: the head) as a state the
// caller may read without holding the canvas: the maps are copied, the
// nodes and edges (never modified in place) are shared.
func (s *Server) viewState(ctx context.Context, canvasID string, atRev int64) (*canvas.State, error) {
	var out *canvas.State
	err := s.engine.View(ctx, canvasID, atRev, func(st *canvas.State, _ string) error {
		out = &canvas.State{Rev: st.Rev, Nodes: make(map[string]*canvas.Node, len(st.Nodes)), Edges: make(map[string]*canvas.Edge, len(st.Edges))}
		for k, n := range st.Nodes {
			out.Nodes[k] = n
		}
		for k, e := range st.Edges {
			out.Edges[k] = e
		}
		return nil
	})
	return out, err
}

// renderSlots bounds the drawings made at once: a large PNG takes a core
// for up to a second.
var renderSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))

// export writes the canvas as o asks: the file's bytes, its media type and
// the revision it shows.
func (s *Server) export(ctx context.Context, canvasID string, o exportOptions) ([]byte, string, int64, error) {
	st, err := s.viewState(ctx, canvasID, o.atRev)
	if err != nil {
		return nil, "", 0, err
	}
	var buf bytes.Buffer
	switch o.format {
	case "svg", "png":
		d, err := render.New(st, o.render)
		if err != nil {
			return nil, "", 0, err
		}
		select {
		case renderSlots <- struct{}{}:
		case <-ctx.Done():
			return nil, "", 0, ctx.Err()
		}
		defer func() { <-renderSlots }()
		if o.format == "svg" {
			err = d.WriteSVG(&buf)
		} else {
			err = d.WritePNG(&buf)
		}
		if err != nil {
			return nil, "", 0, err
		}
	default:
		b, err := convert.Encode(convert.Format(o.format), st, o.render.IDs)
		if err != nil {
			return nil, "", 0, err
		}
		buf.Write(b)
	}
	return buf.Bytes(), exportFormats[o.format], st.Rev, nil
}

func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleViewer)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	o, err := parseExportQuery(r.URL.Query())
	if err != nil {
		s.problem(w, r, err)
		return
	}
	body, ctype, rev, err := s.export(r.Context(), id, o)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", fmt.Sprintf(`inline; filename="%s.%s"`, safeFileName(id), exportExt[o.format]))
	h.Set("X-Canvas-Rev", strconv.FormatInt(rev, 10))
	h.Set("X-Content-Type-Options", "nosniff")
	if o.format == "svg" {
		// An SVG opened on its own: it holds no script, and may run none.
		h.Set("Content-Security-Policy", "default-src 'none'; img-src data: https:; style-src 'unsafe-inline'; font-src data:; sandbox")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// safeFileName makes a canvas id a file name for Content-Disposition.
func safeFileName(id string) string { return unsafeFileChars.ReplaceAllString(id, "_") }

// importRequest is what an import needs besides the file.
type importRequest struct {
	format, mode   string
	baseRev        *int64
	idempotencyKey string
}

// parseImportQuery reads format, mode, base_rev and idempotency_key (the
// Idempotency-Key header works too).
func parseImportQuery(r *http.Request) (importRequest, error) {
	q := r.URL.Query()
	in := importRequest{format: q.Get("format"), mode: q.Get("mode"), idempotencyKey: q.Get("idempotency_key")}
	if in.idempotencyKey == "" {
		in.idempotencyKey = r.Header.Get("Idempotency-Key")
	}
	if v := q.Get("base_rev"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return in, canvas.Invalid("base_rev", "must be a revision number ≥ 0, got %q", v)
		}
		in.baseRev = &n
	}
	return in, checkImportRequest(&in)
}

// checkImportRequest checks and completes an import's options.
func checkImportRequest(in *importRequest) error {
	switch in.format {
	case "jsoncanvas", "excalidraw", "mermaid":
	case "":
		return canvas.Invalid("format", "is required: jsoncanvas, excalidraw or mermaid")
	default:
		return canvas.Invalid("format", "must be jsoncanvas, excalidraw or mermaid; got %q", in.format)
	}
	switch in.mode {
	case "":
		in.mode = "merge"
	case "merge", "replace":
	default:
		return canvas.Invalid("mode", "must be merge or replace; got %q", in.mode)
	}
	if len(in.idempotencyKey) > canvas.MaxIdempotencyKeyLen {
		return canvas.Invalid("idempotency_key", "is longer than %d characters", canvas.MaxIdempotencyKeyLen)
	}
	return nil
}

// importFile reads file and commits it as one import_scene command for the
// caller. A file it cannot read, or a node or edge of it the canvas
// refuses, is a field error naming the place in the file.
func (s *Server) importFile(ctx context.Context, canvasID string, in importRequest, file []byte) (store.Answer, error) {
	sc, err := convert.Decode(convert.Format(in.format), file)
	if err != nil {
		return store.Answer{}, err
	}
	args := canvas.ImportSceneArgs{Mode: in.mode, Nodes: make([]canvas.ImportNode, len(sc.Nodes)), Edges: make([]canvas.ImportEdge, len(sc.Edges))}
	for i, n := range sc.Nodes {
		args.Nodes[i] = canvas.ImportNode{ID: n.ID, Type: n.Type, Name: n.Name, ParentID: n.ParentID,
			X: n.X, Y: n.Y, W: n.W, H: n.H, Rotation: n.Rotation, Props: n.Props}
	}
	for i, e := range sc.Edges {
		args.Edges[i] = canvas.ImportEdge{ID: e.ID, From: e.From, To: e.To, Type: e.Type, Props: e.Props}
	}
	raw, err := args.AppendJSON(make([]byte, 0, 2*len(file)))
	if err != nil {
		return store.Answer{}, fmt.Errorf("encoding the import: %w", err)
	}
	env := canvas.Envelope{Type: reducer.CmdImportScene, BaseRev: in.baseRev, IdempotencyKey: in.idempotencyKey, Args: raw}
	if env.BaseRev == nil { // at the head: a retry with the same key is the same import however the head moved
		head, _, err := s.engine.Head(ctx, canvasID)
		if err != nil {
			return store.Answer{}, err
		}
		env.BaseRev, env.HeadBase = &head, true
	}
	ans, err := s.engine.Execute(ctx, canvasID, principalFrom(ctx).Actor, env)
	return ans, placeInFile(err, sc)
}

// checkFileText refuses what no file of these formats holds and the store
// could not keep: text that is not UTF-8, a NUL (raw, or escaped in JSON),
// JSON nested deeper than canvas.MaxJSONDepth.
func checkFileText(format string, file []byte) error {
	if format == "mermaid" {
		if !utf8.Valid(file) {
			return canvas.Invalid("body", "is not valid UTF-8; a Mermaid file is UTF-8 text")
		}
		if i := bytes.IndexByte(file, 0); i >= 0 {
			return canvas.Invalid("body", "holds a NUL byte (at offset %d); a Mermaid file is text", i)
		}
		return nil
	}
	return canvas.CheckJSONText(file)
}

var importField = regexp.MustCompile(`^args\.(nodes|edges)\[(\d+)\](.*)$`)

// placeInFile turns a refusal naming a node or edge of the import
// (args.nodes[3].props.fill) into one naming its place in the file.
func placeInFile(err error, sc *convert.Scene) error {
	var fe *canvas.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	m := importField.FindStringSubmatch(fe.Field)
	if m == nil {
		return err
	}
	i, _ := strconv.Atoi(m[2])
	places, list := sc.NodePlaces, sc.Nodes
	kind := "node"
	if m[1] == "edges" {
		places, kind = sc.EdgePlaces, "edge"
	}
	if i >= len(places) {
		return err
	}
	id := ""
	if kind == "node" && i < len(list) {
		id = list[i].ID
	} else if kind == "edge" && i < len(sc.Edges) {
		id = sc.Edges[i].ID
	}
	at := strings.TrimPrefix(m[3], ".")
	if at == "" {
		at = "itself"
	}
	return &canvas.FieldError{Field: places[i], Kind: fe.Kind,
		Reason: fmt.Sprintf("the %s %q made from it is refused (%s): %s", kind, id, at, fe.Reason)}
}

func (s *Server) handleImport(w http.ResponseWriter, r *http.Request) {
	id, err := canvasRoute(r, canvas.RoleEditor)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	in, err := parseImportQuery(r)
	if err == nil {
		err = importFileType.check(r.Header.Get("Content-Type")) // before the body is read
	}
	if err != nil {
		s.problem(w, r, err)
		return
	}
	file, err := io.ReadAll(r.Body)
	if err == nil {
		err = checkFileText(in.format, file)
	}
	if err != nil {
		s.problem(w, r, err)
		return
	}
	ans, err := s.importFile(r.Context(), id, in, file)
	s.writeAnswer(w, r, ans, err)
}
