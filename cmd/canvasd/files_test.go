package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportAndImportCommands runs `canvasd import` and `canvasd export`
// against a real server.
func TestExportAndImportCommands(t *testing.T) {
	c := startCanvasd(t, map[string]string{})
	if code, _ := c.call("POST", "/api/canvases", c.admin, map[string]any{"canvas_id": "cli"}); code != 201 {
		t.Fatalf("create canvas: %d", code)
	}
	dir := t.TempDir()
	chart := filepath.Join(dir, "chart.mmd")
	os.WriteFile(chart, []byte("flowchart LR\n  a[Start] --> b[End]\n  style a fill:#ff0000,stroke:#ff0000"), 0o644)
	e := env(map[string]string{"CANVASD_URL": c.base, "CANVASD_TOKEN": c.admin})
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"import", "--canvas", "cli", chart}, e, &out, &errb); code != 0 {
		t.Fatalf("import: %d %s", code, errb.String())
	}
	var ans map[string]any
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil || ans["current_rev"] != 1.0 {
		t.Fatalf("import printed %s", out.String())
	}
	// A bad file: exit 1, the place in the file named.
	bad := filepath.Join(dir, "bad.mmd")
	os.WriteFile(bad, []byte("flowchart LR\n  a -->"), 0o644)
	errb.Reset()
	if code := run(context.Background(), []string{"import", "--canvas", "cli", bad}, e, &out, &errb); code != 1 || !strings.Contains(errb.String(), "line 2") {
		t.Errorf("a bad file: code %d, %q", code, errb.String())
	}
	// No format from the name: a usage error.
	if code := run(context.Background(), []string{"import", "--canvas", "cli", filepath.Join(dir, "x.txt")}, e, &out, &errb); code != 2 {
		t.Errorf("a file of no known format: code %d", code)
	}
	pic := filepath.Join(dir, "cli.png")
	errb.Reset()
	if code := run(context.Background(), []string{"export", "--canvas", "cli", "--format", "png", "--out", pic, "--ids", "a"}, e, &out, &errb); code != 0 {
		t.Fatalf("export: %d %s", code, errb.String())
	}
	f, _ := os.Open(pic)
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatalf("the export is not a PNG: %v", err)
	}
	b := img.Bounds()
	if c := color.NRGBAModel.Convert(img.At(b.Min.X+15, b.Min.Y+b.Dy()/2)).(color.NRGBA); c != (color.NRGBA{255, 0, 0, 255}) {
		t.Errorf("the red node's left side is %v", c)
	}
	out.Reset()
	if code := run(context.Background(), []string{"export", "--canvas", "cli", "--format", "jsoncanvas"}, e, &out, &errb); code != 0 {
		t.Fatalf("export jsoncanvas: %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"id":"a"`) || !strings.Contains(out.String(), `"fromNode":"a"`) {
		t.Errorf("the JSON Canvas export is %s", out.String())
	}
}
