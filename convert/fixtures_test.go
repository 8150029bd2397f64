package convert

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/canvasd/canvasd/canvas"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// fixture is one entry of testdata/excalidraw/mapping.json (README.md there
// describes the format): an Excalidraw element (with its bound label) and
// the canvasd node or edge it becomes, without props.meta.
type fixture struct {
	Element map[string]any `json:"element"`
	Label   map[string]any `json:"label,omitempty"`
	Node    *canvas.Node   `json:"node,omitempty"`
	Edge    *canvas.Edge   `json:"edge,omitempty"`
}

// TestExcalidrawMappingFixtures keeps the shared corpus of element ↔
// node/edge pairs that the web UI's mapping is tested against too.
func TestExcalidrawMappingFixtures(t *testing.T) {
	data, err := os.ReadFile("testdata/excalidraw/every-element.excalidraw")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Elements []map[string]any }
	json.Unmarshal(data, &file)
	sc, err := Decode(Excalidraw, data)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]map[string]any{}
	for _, el := range file.Elements {
		byID[el["id"].(string)] = el
	}
	labelOf := func(id string) map[string]any {
		for _, el := range file.Elements {
			if el["containerId"] == id {
				return el
			}
		}
		return nil
	}
	strip := func(p map[string]any) map[string]any {
		c := canvas.CloneProps(p)
		delete(c, "meta")
		return c
	}
	var out []fixture
	for _, n := range sc.Nodes {
		if n.Type == "group" {
			continue
		}
		c := *n
		c.Props, c.Index = strip(n.Props), ""
		id := elemID(n.ID, n.Props)
		out = append(out, fixture{Element: byID[id], Label: labelOf(id), Node: &c})
	}
	for _, e := range sc.Edges {
		c := *e
		c.Props = strip(e.Props)
		id := elemID(e.ID, e.Props)
		out = append(out, fixture{Element: byID[id], Label: labelOf(id), Edge: &c})
	}
	got, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	const golden = "testdata/excalidraw/mapping.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./convert -run MappingFixtures -update to write it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("the mapping changed; if that is meant, run go test ./convert -run MappingFixtures -update and say so to the web UI's mapping")
	}
}
