package api

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/canvasd/canvasd/canvas"
)

// rawDo sends body as it is (a file), with contentType.
func (e *testEnv) rawDo(method, path, token, contentType string, body []byte) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	req.Body = nil
	checkResponse(e.t, e.spec, req, resp, out.Bytes())
	return response{Status: resp.StatusCode, Header: resp.Header, Body: out.Bytes()}
}

func readTestdata(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile("../convert/testdata/" + p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameJSONFile compares two JSON documents as values.
func sameJSONFile(t *testing.T, want, got []byte, pick func(any) any) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(want, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &b); err != nil {
		t.Fatalf("the export is not JSON: %v", err)
	}
	if pick != nil {
		a, b = pick(a), pick(b)
	}
	if !reflect.DeepEqual(a, b) {
		wa, _ := json.Marshal(a)
		gb, _ := json.Marshal(b)
		t.Errorf("the file did not come back as it was:\nwant %s\ngot  %s", wa, gb)
	}
}

// TestImportExportRoundTrip imports real files over HTTP, one commit each,
// and exports them again: the files come back.
func TestImportExportRoundTrip(t *testing.T) {
	onBothStores(t, testImportExportRoundTrip)
}

func testImportExportRoundTrip(t *testing.T, e *testEnv) {
	for _, c := range []struct {
		file, format string
		pick         func(any) any
	}{
		{"jsoncanvas/sample.canvas", "jsoncanvas", nil},
		{"jsoncanvas/every-field.canvas", "jsoncanvas", nil},
		{"excalidraw/every-element.excalidraw", "excalidraw", func(v any) any {
			m := v.(map[string]any)
			return map[string]any{"elements": m["elements"], "files": m["files"]}
		}},
	} {
		t.Run(c.file, func(t *testing.T) {
			id := e.canvas("rt_" + strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(c.file))
			data := readTestdata(t, c.file)
			r := e.rawDo("POST", "/api/canvases/"+id+"/import?format="+c.format+"&base_rev=0&idempotency_key=k1", testAdmin, "application/json", data)
			if r.Status != 200 {
				t.Fatalf("import: %d %s", r.Status, r.Body)
			}
			ans := r.json(t)
			if ans["current_rev"] != 1.0 || len(ans["created_ids"].([]any)) == 0 {
				t.Errorf("the import answered %v; want one revision with the created ids", ans)
			}
			x := e.rawDo("GET", "/api/canvases/"+id+"/export?format="+c.format, testAdmin, "", nil)
			if x.Status != 200 {
				t.Fatalf("export: %d %s", x.Status, x.Body)
			}
			sameJSONFile(t, data, x.Body, c.pick)
			// The same key again: the stored answer, nothing written.
			r2 := e.rawDo("POST", "/api/canvases/"+id+"/import?format="+c.format+"&base_rev=0&idempotency_key=k1", testAdmin, "application/json", data)
			if r2.Status != 200 || r2.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("a retry with the same key: %d, replayed %q", r2.Status, r2.Header.Get("Idempotent-Replayed"))
			}
			if head := e.snapshot(id)["head_rev"]; head != 1.0 {
				t.Errorf("after the retry the head is %v, want 1", head)
			}
		})
	}
}

func TestImportMermaidAndModes(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("mm")
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_shape", 0, map[string]any{"id": "mine", "type": "geo", "x": -500, "y": -500}))
	chart := readTestdata(t, "mermaid/every-feature.mmd")
	r := e.rawDo("POST", "/api/canvases/"+id+"/import?format=mermaid", testAdmin, "text/plain", chart)
	if r.Status != 200 {
		t.Fatalf("import: %d %s", r.Status, r.Body)
	}
	snap := e.snapshot(id)
	state := snap["state"].(map[string]any)
	nodes := state["nodes"].([]any)
	if len(nodes) < 15 {
		t.Fatalf("the chart made %d nodes", len(nodes))
	}
	has := func(id string) bool {
		for _, n := range nodes {
			if n.(map[string]any)["id"] == id {
				return true
			}
		}
		return false
	}
	if !has("mine") || !has("check") || !has("ship") {
		t.Errorf("a merge: the canvas's shape and the chart's should both be there")
	}
	// Replace: only the file remains.
	r = e.rawDo("POST", "/api/canvases/"+id+"/import?format=mermaid&mode=replace", testAdmin, "text/plain", []byte("flowchart LR\n  a --> b"))
	if r.Status != 200 {
		t.Fatalf("replace: %d %s", r.Status, r.Body)
	}
	state = e.snapshot(id)["state"].(map[string]any)
	if n := len(state["nodes"].([]any)); n != 2 || len(state["edges"].([]any)) != 1 {
		t.Errorf("after a replace the canvas has %d nodes, %d edges; want the file's 2 and 1", n, len(state["edges"].([]any)))
	}
}

func TestImportRefusalsNameThePlace(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("bad")
	for _, c := range []struct {
		query, body string
		status      int
		field       string
	}{
		{"format=jsoncanvas", `{"nodes": [{"id": "a", "type": "text", "text": "", "x": 0, "y": 0, "width": 10, "height": 10}, {"id": "b", "type": "blob", "x": 0, "y": 0, "width": 10, "height": 10}]}`, 422, "body.nodes[1].type"},
		{"format=excalidraw", `{"type": "excalidraw", "elements": [{"id": "a", "type": "rectangle", "x": 0, "y": 0, "strokeWidth": 500}]}`, 422, "body.elements[0].strokeWidth"},
		// A colour the canvas model refuses, reported at the element.
		{"format=excalidraw", `{"type": "excalidraw", "elements": [{"id": "a", "type": "rectangle", "x": 0, "y": 0, "strokeColor": "rgb(1,2,3)"}]}`, 422, "body.elements[0]"},
		{"format=mermaid", "flowchart TD\n  a --> b\n  b -->", 422, "body line 3"},
		{"format=pdf", "{}", 400, "format"},
		{"format=mermaid&mode=append", "flowchart TD", 400, "mode"},
		{"format=mermaid&base_rev=-1", "flowchart TD", 400, "base_rev"},
	} {
		r := e.rawDo("POST", "/api/canvases/"+id+"/import?"+c.query, testAdmin, "text/plain", []byte(c.body))
		if r.Status != c.status {
			t.Errorf("%s %.40s: %d, want %d: %s", c.query, c.body, r.Status, c.status, r.Body)
			continue
		}
		if f := r.json(t)["field"]; f != c.field {
			t.Errorf("%s %.40s: the problem names %v, want %s (%s)", c.query, c.body, f, c.field, r.Body)
		}
	}
	// Hostile files: 400 or 422, never a 5xx, nothing written.
	deep := strings.Repeat(`{"a":`, canvas.MaxJSONDepth+5) + "1" + strings.Repeat("}", canvas.MaxJSONDepth+5)
	for _, c := range []struct {
		format, body string
		status       int
		says         string
	}{
		{"jsoncanvas", "{\"nodes\": [{\"id\": \"\xff\xfe\"}]}", 400, "UTF-8"},
		{"excalidraw", `{"type": "excalidraw", "elements": [{"id": "a\u0000b"}]}`, 400, "NUL"},
		{"jsoncanvas", deep, 422, "64"},
		{"mermaid", "flowchart TD\n  a\xff --> b", 400, "UTF-8"},
		{"mermaid", "flowchart TD\n  a\x00 --> b", 400, "NUL"},
		{"mermaid", "flowchart TD\n" + strings.Repeat("  a --> b\n", 6000), 422, "links"},
		{"excalidraw", `{"type": "excalidraw", "elements": [` + strings.TrimSuffix(strings.Repeat(`{"id":"x","type":"rectangle","x":0,"y":0},`, 2), ",") + `]}`, 422, "unique"},
	} {
		r := e.rawDo("POST", "/api/canvases/"+id+"/import?format="+c.format, testAdmin, "text/plain", []byte(c.body))
		if r.Status != c.status || !strings.Contains(string(r.Body), c.says) {
			t.Errorf("%s %.30q: %d %s; want %d saying %q", c.format, c.body, r.Status, r.Body, c.status, c.says)
		}
	}
	if head := e.snapshot(id)["head_rev"]; head != 0.0 {
		t.Errorf("refused imports wrote: head %v", head)
	}
	// Over the size limit: 413.
	big := bytes.Repeat([]byte(" "), maxImportBody+1)
	if r := e.rawDo("POST", "/api/canvases/"+id+"/import?format=mermaid", testAdmin, "text/plain", big); r.Status != 413 {
		t.Errorf("a file over %d bytes: %d, want 413", maxImportBody, r.Status)
	}
}

func TestExportPictures(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("pic")
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_shape", 0, map[string]any{
		"id": "red", "type": "geo", "x": 0, "y": 0, "w": 100, "h": 80, "props": map[string]any{"fill": "solid", "fillColor": "#ff0000", "text": "Red"}}))
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_shape", 1, map[string]any{
		"id": "blue", "type": "geo", "x": 200, "y": 0, "w": 100, "h": 80, "props": map[string]any{"fill": "solid", "fillColor": "#0000ff"}}))
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("update_shape", 2, map[string]any{
		"id": "red", "props": map[string]any{"fillColor": "#00ff00"}}))
	pixel := func(r response, x, y int) color.NRGBA {
		t.Helper()
		img, err := png.Decode(bytes.NewReader(r.Body))
		if err != nil {
			t.Fatalf("not a PNG: %v", err)
		}
		return color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
	}
	// bounds 0,0,300,80 at scale 2: (100, 40) in pixels is the middle of red's left half.
	r := e.rawDo("GET", "/api/canvases/"+id+"/export?format=png&bounds=0,0,300,80&scale=2", testAdmin, "", nil)
	if r.Status != 200 || r.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("png: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	if c := pixel(r, 20, 80); c != (color.NRGBA{0, 255, 0, 255}) {
		t.Errorf("the shape is %v at the head, want its new green", c)
	}
	// at_rev: the canvas as it was.
	r = e.rawDo("GET", "/api/canvases/"+id+"/export?format=png&bounds=0,0,300,80&at_rev=2", testAdmin, "", nil)
	if c := pixel(r, 10, 40); c != (color.NRGBA{255, 0, 0, 255}) {
		t.Errorf("at rev 2 the shape is %v, want red", c)
	}
	// ids: only blue; transparent background.
	r = e.rawDo("GET", "/api/canvases/"+id+"/export?format=png&ids=blue&background=transparent", testAdmin, "", nil)
	img, _ := png.Decode(bytes.NewReader(r.Body))
	if w := img.Bounds().Dx(); w > 130 {
		t.Errorf("a picture of one 100-wide shape is %d wide", w)
	}
	if c := pixel(r, 0, 0); c.A != 0 {
		t.Errorf("a transparent corner is %v", c)
	}
	// SVG: parses, holds the shapes and the label.
	r = e.rawDo("GET", "/api/canvases/"+id+"/export?format=svg", testAdmin, "", nil)
	if r.Status != 200 || r.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("svg: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	var doc struct {
		Groups []struct {
			ID   string `xml:"data-id,attr"`
			Text []struct {
				Spans []string `xml:"tspan"`
			} `xml:"text"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(r.Body, &doc); err != nil {
		t.Fatalf("the SVG does not parse: %v", err)
	}
	if len(doc.Groups) != 2 || doc.Groups[0].ID != "red" || len(doc.Groups[0].Text) != 1 || doc.Groups[0].Text[0].Spans[0] != "Red" {
		t.Errorf("the SVG holds %+v", doc.Groups)
	}
	// Bad options.
	for q, field := range map[string]string{"format=gif": "format", "scale=100": "scale", "bounds=1,2,3": "bounds",
		"background=black": "background", "at_rev=99": "at_rev", "bounds=0,0,1000000,1000000": "bounds", "ids=a%20b": "ids"} {
		r := e.rawDo("GET", "/api/canvases/"+id+"/export?"+q, testAdmin, "", nil)
		if r.Status != 400 && r.Status != 422 {
			t.Errorf("%s: %d, want 400 or 422", q, r.Status)
			continue
		}
		if f := r.json(t)["field"]; f != field {
			t.Errorf("%s: names %v, want %s", q, f, field)
		}
	}
}

func TestExportEveryKindOfTheModel(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("kinds")
	cmds := []map[string]any{
		{"type": "create_shape", "args": map[string]any{"id": "geo", "type": "geo", "x": 0, "y": 0, "props": map[string]any{"geo": "star", "fill": "hachure", "color": "violet"}}},
		{"type": "create_shape", "args": map[string]any{"id": "note", "type": "note", "x": 150, "y": 0, "props": map[string]any{"text": "a note"}}},
		{"type": "create_shape", "args": map[string]any{"id": "text", "type": "text", "x": 400, "y": 0, "props": map[string]any{"text": "text"}}},
		{"type": "create_shape", "args": map[string]any{"id": "frame", "type": "frame", "x": 0, "y": 250, "w": 300, "h": 200, "name": "F"}},
		{"type": "create_shape", "args": map[string]any{"id": "doc", "type": "doc", "x": 400, "y": 250, "name": "d.md", "props": map[string]any{"text": "# d"}}},
		{"type": "create_shape", "args": map[string]any{"id": "line", "type": "line", "x": 0, "y": 700, "props": map[string]any{"points": []any{map[string]any{"x": 0, "y": 0}, map[string]any{"x": 100, "y": 50}}}}},
		{"type": "create_shape", "args": map[string]any{"id": "draw", "type": "draw", "x": 200, "y": 700, "props": map[string]any{"segments": []any{map[string]any{"type": "free", "points": []any{map[string]any{"x": 0, "y": 0}, map[string]any{"x": 30, "y": 40}}}}}}},
		{"type": "create_shape", "args": map[string]any{"id": "embed", "type": "embed", "x": 400, "y": 700, "props": map[string]any{"url": "https://example.com"}}},
		{"type": "create_shape", "args": map[string]any{"id": "image", "type": "image", "x": 600, "y": 700, "props": map[string]any{"url": "https://example.com/a.png"}}},
		{"type": "create_edge", "args": map[string]any{"id": "edge", "from": "geo", "to": "note", "props": map[string]any{"text": "label", "arrowheadStart": "dot"}}},
	}
	e.must(200, "POST", "/canvas_commands/"+id+"/commands", testAdmin, map[string]any{"base_rev": 0, "commands": cmds})
	r := e.rawDo("GET", "/api/canvases/"+id+"/export?format=svg", testAdmin, "", nil)
	var doc struct {
		Groups []struct {
			ID   string `xml:"data-id,attr"`
			Kind string `xml:"data-kind,attr"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(r.Body, &doc); err != nil {
		t.Fatalf("the SVG does not parse: %v", err)
	}
	got := map[string]string{}
	for _, g := range doc.Groups {
		got[g.ID] = g.Kind
	}
	for _, want := range []string{"geo", "note", "text", "frame", "doc", "line", "draw", "embed", "image"} {
		if got[want] != want {
			t.Errorf("the SVG has no %s: %v", want, got)
		}
	}
	if got["edge"] != "edge" {
		t.Errorf("the SVG has no edge: %v", got)
	}
	for _, f := range []string{"png", "jsoncanvas", "excalidraw"} {
		if r := e.rawDo("GET", fmt.Sprintf("/api/canvases/%s/export?format=%s", id, f), testAdmin, "", nil); r.Status != 200 {
			t.Errorf("%s: %d %s", f, r.Status, r.Body)
		}
	}
	// An export of canvasd's own .excalidraw imports back.
	x := e.rawDo("GET", "/api/canvases/"+id+"/export?format=excalidraw", testAdmin, "", nil)
	id2 := e.canvas("kinds2")
	if r := e.rawDo("POST", "/api/canvases/"+id2+"/import?format=excalidraw", testAdmin, "application/json", x.Body); r.Status != 200 {
		t.Errorf("canvasd's own .excalidraw does not import: %d %s", r.Status, r.Body)
	}
	_ = canvas.RoleViewer
}

func TestMCPExportAndImport(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("mcpfiles")
	tok, _ := e.token(canvas.RoleEditor, canvas.ActorAgent, id)
	cs := mcpSession(t, e, tok)
	out, isErr, text := callTool(t, cs, "canvas_import", map[string]any{"canvas_id": id, "format": "mermaid",
		"content": "flowchart LR\n  a[Red] --> b[Blue]\n  style a fill:#ff0000", "idempotency_key": "m1"})
	if isErr || out["current_rev"] != 1.0 || out["success"] != true {
		t.Fatalf("canvas_import: %v %s", out, text)
	}
	_, isErr, text = callTool(t, cs, "canvas_import", map[string]any{"canvas_id": id, "format": "mermaid", "content": "flowchart LR\n  a -->"})
	if !isErr || !strings.Contains(text, "body line 2") {
		t.Errorf("a bad file: error %v %q, want one naming body line 2", isErr, text)
	}
	// PNG: image content the model can look at.
	ctx := t.Context()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "canvas_export", Arguments: map[string]any{"canvas_id": id, "format": "png"}})
	if err != nil || res.IsError {
		t.Fatalf("canvas_export png: %v %+v", err, res)
	}
	var img *mcp.ImageContent
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			img = ic
		}
	}
	if img == nil || img.MIMEType != "image/png" {
		t.Fatalf("canvas_export png gave %+v, want image content", res.Content)
	}
	pic, err := png.Decode(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatalf("the image is not a PNG: %v", err)
	}
	reds := 0
	b := pic.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			if c := color.NRGBAModel.Convert(pic.At(x, y)).(color.NRGBA); c == (color.NRGBA{255, 0, 0, 255}) {
				reds++
			}
		}
	}
	if reds < 100 {
		t.Errorf("the PNG shows %d sampled red pixels; the red node's fill is missing", reds)
	}
	// Other formats as text.
	_, isErr, text = callTool(t, cs, "canvas_export", map[string]any{"canvas_id": id, "format": "jsoncanvas"})
	if isErr || !strings.Contains(text, `"id":"a"`) {
		t.Errorf("canvas_export jsoncanvas: %v %.200s", isErr, text)
	}
	_, isErr, text = callTool(t, cs, "canvas_export", map[string]any{"canvas_id": id, "format": "svg", "ids": []string{"b"}})
	if isErr || !strings.HasPrefix(text, "<svg") || strings.Contains(text, `data-id="a"`) {
		t.Errorf("canvas_export svg of b: %v %.100s", isErr, text)
	}
}

func TestMCPExportSVGNamesItsFonts(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("svgfonts")
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_shape", 0, map[string]any{
		"id": "a", "type": "geo", "x": 0, "y": 0, "props": map[string]any{"text": "hello"}}))
	cs := mcpSession(t, e, testAdmin)
	_, isErr, text := callTool(t, cs, "canvas_export", map[string]any{"canvas_id": id, "format": "svg"})
	if isErr || !strings.Contains(text, ">hello</tspan>") || strings.Contains(text, "@font-face") || len(text) > 20000 {
		t.Errorf("an SVG for a model: error %v, %d bytes, embeds fonts: %v", isErr, len(text), strings.Contains(text, "@font-face"))
	}
	// Over HTTP the SVG embeds them: it shows the same anywhere.
	r := e.rawDo("GET", "/api/canvases/"+id+"/export?format=svg", testAdmin, "", nil)
	if !strings.Contains(string(r.Body), `@font-face{font-family:"Excalifont"`) {
		t.Errorf("the exported SVG does not embed its font")
	}
}

// TestExportedSVGFontsDrawInChromium: the font an exported SVG embeds (the
// glyphs of its text only) is one Chromium's font sanitizer accepts, and it
// draws the text's letters and leaves out the others.
func TestExportedSVGFontsDrawInChromium(t *testing.T) {
	e := newTestEnv(t)
	id := e.canvas("svgchromium")
	e.must(200, "POST", "/canvas_commands/"+id+"/command", testAdmin, env("create_shape", 0, map[string]any{
		"id": "a", "type": "geo", "x": 0, "y": 0, "props": map[string]any{"text": "hello"}}))
	r := e.rawDo("GET", "/api/canvases/"+id+"/export?format=svg", testAdmin, "", nil)
	m := regexp.MustCompile(`font-family:"Excalifont";src:url\(data:font/ttf;base64,([^)]*)\)`).FindSubmatch(r.Body)
	if r.Status != 200 || m == nil {
		t.Fatalf("export: %d, no Excalifont face in %.300s", r.Status, r.Body)
	}
	p := uiBrowser(t, time.Minute)("about:blank")
	var got struct {
		Loaded string
		Hello  int
		X      int
	}
	p.eval(`(async () => {
		const bytes = Uint8Array.from(atob(`+strconv.Quote(string(m[1]))+`), (c) => c.charCodeAt(0));
		const face = new FontFace("embedded", bytes.buffer);
		let loaded = "ok";
		try { await face.load(); document.fonts.add(face); } catch (e) { loaded = String(e); }
		const ink = (s) => {
			const c = document.createElement("canvas");
			c.width = 300; c.height = 80;
			const ctx = c.getContext("2d");
			ctx.font = "48px embedded";
			ctx.fillText(s, 10, 60);
			const px = ctx.getImageData(0, 0, c.width, c.height).data;
			let n = 0;
			for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
			return n;
		};
		return { loaded, hello: ink("hello"), x: ink("xxxx") };
	})()`, &got)
	if got.Loaded != "ok" || got.Hello < 200 || got.X != 0 {
		t.Errorf("the embedded font in Chromium: load %q, %d pixels for \"hello\" (want many), %d for \"xxxx\" (want none: not in the text)", got.Loaded, got.Hello, got.X)
	}
}
