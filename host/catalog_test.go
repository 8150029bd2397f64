package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// schema is the part of JSON Schema the catalog definition uses.
type schema struct {
	Type       string             `json:"type"`
	Enum       []string           `json:"enum"`
	Pattern    string             `json:"pattern"`
	Properties map[string]*schema `json:"properties"`
	Items      *schema            `json:"items"`
	Required   []string           `json:"required"`
}

func loadCatalog(t *testing.T, path string) (components map[string]*schema, styles map[string]*schema) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var def struct {
		Components map[string]*schema `json:"components"`
		Styles     map[string]*schema `json:"styles"`
	}
	if err := json.Unmarshal(b, &def); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return def.Components, def.Styles
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// kindOf names the validation kind a property's schema calls for.
func kindOf(name string, s *schema) (propKind, []string, error) {
	switch s.Type {
	case "boolean":
		return pBool, nil, nil
	case "number":
		return pNumber, nil, nil
	case "integer":
		return pInt, nil, nil
	case "string":
		if name == "child" || name == "entryPointChild" || name == "contentChild" {
			return pRef, nil, nil
		}
		return pString, s.Enum, nil
	case "array":
		switch name {
		case "tabItems":
			return pTabItems, nil, nil
		case "options":
			return pChoiceOption, nil, nil
		}
	case "object":
		p := s.Properties
		switch {
		case name == "children":
			return pChildren, nil, nil
		case name == "action":
			return pAction, nil, nil
		case p["path"] != nil && len(p) == 2 && p["literalString"] != nil:
			return pBoundString, p["literalString"].Enum, nil
		case p["path"] != nil && len(p) == 2 && p["literalBoolean"] != nil:
			return pBoundBool, nil, nil
		case p["path"] != nil && len(p) == 2 && p["literalNumber"] != nil:
			return pBoundNumber, nil, nil
		case p["path"] != nil && len(p) == 2 && p["literalArray"] != nil:
			return pBoundArray, nil, nil
		}
	}
	return 0, nil, fmt.Errorf("a schema canvasd does not know (%s)", s.Type)
}

// checkCatalog compares the Go catalog with a catalog definition file.
func checkCatalog(t *testing.T, path string) {
	components, styles := loadCatalog(t, path)
	if got, want := CatalogComponents(), keys(components); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: components %v, the definition has %v", path, got, want)
	}
	for _, name := range keys(components) {
		def, spec := components[name], standardCatalog[name]
		if got, want := sortedKeys(spec), keys(def.Properties); !reflect.DeepEqual(got, want) {
			t.Errorf("%s.%s: properties %v, the definition has %v", path, name, got, want)
		}
		var required []string
		for _, p := range sortedKeys(spec) {
			if spec[p].required {
				required = append(required, p)
			}
		}
		if !reflect.DeepEqual(required, sorted(def.Required)) && !(len(required) == 0 && len(def.Required) == 0) {
			t.Errorf("%s.%s: required %v, the definition requires %v", path, name, required, sorted(def.Required))
		}
		for _, p := range keys(def.Properties) {
			kind, enum, err := kindOf(p, def.Properties[p])
			if err != nil {
				t.Errorf("%s.%s.%s: %v", path, name, p, err)
				continue
			}
			ps, ok := spec[p]
			if !ok {
				continue // reported above
			}
			if ps.kind != kind {
				t.Errorf("%s.%s.%s: kind %d, the definition calls for %d", path, name, p, ps.kind, kind)
			}
			if !reflect.DeepEqual(sorted(ps.enum), sorted(enum)) {
				t.Errorf("%s.%s.%s: enum %v, the definition has %v", path, name, p, ps.enum, enum)
			}
		}
	}
	// The shapes checkProps, checkChildren and checkAction hold in code.
	for name, want := range map[string]map[string][]string{
		"Row.children":           {"": {"explicitList", "template"}, "template": {"componentId", "dataBinding"}},
		"Button.action":          {"": {"context", "name"}, "context.items": {"key", "value"}, "context.items.value": {"literalBoolean", "literalNumber", "literalString", "path"}},
		"Tabs.tabItems":          {"items": {"child", "title"}},
		"MultipleChoice.options": {"items": {"label", "value"}},
	} {
		comp, prop, _ := strings.Cut(name, ".")
		for sub, props := range want {
			s := components[comp].Properties[prop]
			for _, step := range strings.Split(sub, ".") {
				switch {
				case step == "":
				case step == "items":
					s = s.Items
				default:
					s = s.Properties[step]
				}
			}
			if got := keys(s.Properties); !reflect.DeepEqual(got, props) {
				t.Errorf("%s %s: the definition has %v, canvasd checks %v", name, sub, got, props)
			}
		}
	}
	if got := keys(styles); !reflect.DeepEqual(got, []string{"font", "primaryColor"}) || styles["primaryColor"].Pattern != hexColor.String() {
		t.Errorf("styles %v (primaryColor pattern %q), canvasd checks font and primaryColor %s", got, styles["primaryColor"].Pattern, hexColor)
	}
}

// TestCatalogMatchesTheStandardDefinition: canvasd validates exactly the
// v0.8 standard catalog: every component and property of its definition
// (the spec's copy in testdata, and the renderer's own copy in web/ui's
// packages when they are installed) with the same types, enums and
// required properties, and nothing else.
func TestCatalogMatchesTheStandardDefinition(t *testing.T) {
	checkCatalog(t, filepath.Join("testdata", "a2ui", "v0_8", "standard_catalog_definition.json"))
	renderer := filepath.Join("..", "web", "ui", "node_modules", "@a2ui", "web_core", "src", "v0_8", "schemas", "standard_catalog_definition.json")
	if _, err := os.Stat(renderer); err == nil {
		checkCatalog(t, renderer)
	} else {
		t.Logf("the renderer's copy of the catalog is not installed (npm ci in web/ui): %v", err)
	}
}

// specSamples returns the spec's samples (the gallery and the minimal
// catalog's) and canvasd's catalog tour as JSONL bodies, by file name.
func specSamples(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, dir := range []string{"gallery", "minimal"} {
		files, err := filepath.Glob(filepath.Join("testdata", "a2ui", "v0_8", dir, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no samples in %s: %v", dir, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []json.RawMessage
			if err := json.Unmarshal(b, &msgs); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			var body bytes.Buffer
			for _, m := range msgs {
				_ = json.Compact(&body, m)
				body.WriteByte('\n')
			}
			out[dir+"/"+filepath.Base(f)] = body.Bytes()
		}
	}
	tour, err := os.ReadFile(filepath.Join("testdata", "a2ui", "catalog-tour.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out["catalog-tour.jsonl"] = tour
	return out
}

// TestSpecSamplesAreAccepted: every sample of the A2UI v0.8 gallery and of
// the minimal catalog, and canvasd's tour of every component and property,
// is a valid push (the spec's standard catalog id included).
func TestSpecSamplesAreAccepted(t *testing.T) {
	h := openHost(t, Config{})
	samples := specSamples(t)
	if len(samples) < 36 {
		t.Fatalf("only %d samples", len(samples))
	}
	for name, body := range samples {
		res, err := h.PushA2UI(ctx, "samples", body)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if res.Applied < 2 {
			t.Errorf("%s: applied %d messages", name, res.Applied)
		}
	}
}
