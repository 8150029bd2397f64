package canvas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The JSON Schemas of props (OpenAPI 3.0 schema objects), generated from the
// one definition of the props schema in props.go. openapi.yaml holds them
// between PropsSchemasBegin and PropsSchemasEnd, under components.schemas;
// a test in package api checks the file holds exactly PropsSchemasYAML()
// (and rewrites it with -update-props-schemas).

// Markers around the generated schemas in openapi.yaml.
const (
	PropsSchemasBegin = "    # ---- BEGIN props schemas: generated from canvas/props.go (go test ./api -run TestOpenAPIPropsSchemas -update-props-schemas)\n"
	PropsSchemasEnd   = "    # ---- END props schemas\n"
)

// PropsSchemaName returns the name of kind's props schema in openapi.yaml:
// "GeoProps" for geo, "EdgeProps" for edges.
func PropsSchemaName(kind string) string {
	return strings.ToUpper(kind[:1]) + kind[1:] + "Props"
}

// yobj is a JSON object whose members keep their order, for the YAML text.
type yobj []ykv

type ykv struct {
	k string
	v any // string, float64, int, bool, []string, []any, yobj
}

func ref(name string) yobj { return yobj{{"$ref", "#/components/schemas/" + name}} }

// withDesc returns s with a description (a reference gets one through allOf).
func withDesc(s yobj, desc string) yobj {
	if desc == "" {
		return s
	}
	if len(s) == 1 && s[0].k == "$ref" {
		return yobj{{"description", desc}, {"allOf", []any{s}}}
	}
	return append(yobj{{"description", desc}}, s...)
}

// propsSchemas returns the named schemas, in the order openapi.yaml lists them.
func propsSchemas() []ykv {
	var out []ykv
	var kinds []any
	for _, t := range NodeTypes {
		kinds = append(kinds, ref(PropsSchemaName(t)))
	}
	out = append(out, ykv{"NodeProps", yobj{
		{"description", "A node's props: the schema of its kind (`type`): " + strings.Join(mapStrings(NodeTypes, func(t string) string { return "`" + PropsSchemaName(t) + "`" }), ", ") +
			". Each kind takes the keys listed for it and nothing else but `meta` (docs/model.md); a write that breaks them is a 422 naming `args.props.<key>`."},
		{"anyOf", kinds},
	}})
	for _, t := range append(append([]string(nil), NodeTypes...), EdgeKind) {
		k := kindSpecs[t]
		props := make(yobj, 0, len(k.props))
		for _, p := range k.props {
			props = append(props, ykv{p.key, p.schema(t)})
		}
		out = append(out, ykv{PropsSchemaName(t), yobj{
			{"type", "object"},
			{"description", k.desc},
			{"additionalProperties", false},
			{"properties", props},
		}})
	}
	var colours []string
	for _, p := range Palette {
		colours = append(colours, p.Name)
	}
	point := func(desc string, z bool) yobj {
		props := yobj{{"x", yobj{{"type", "number"}}}, {"y", yobj{{"type", "number"}}}}
		if z {
			props = append(props, ykv{"z", yobj{{"type", "number"}, {"minimum", 0.0}, {"maximum", 1.0}, {"description", "Pen pressure."}}})
		}
		return yobj{{"type", "object"}, {"description", desc}, {"required", []string{"x", "y"}}, {"additionalProperties", false}, {"properties", props}}
	}
	out = append(out,
		ykv{"Colour", yobj{
			{"type", "string"},
			{"description", "A palette name (" + strings.Join(colours, ", ") + "), `transparent`, or a hex colour `#rgb`, `#rrggbb` or `#rrggbbaa` (kept as written)."},
			{"pattern", "^(" + strings.Join(colours, "|") + "|transparent|#([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8}))$"},
		}},
		ykv{"Link", yobj{
			{"type", "string"},
			{"description", "A link a shape opens: an `http:`, `https:` or `mailto:` URL, or a relative or `#` link (other schemes are refused), without control characters or white space at either end."},
			{"minLength", 1},
			{"maxLength", MaxLinkChars},
		}},
		ykv{"ModelPoint", point("A point.", false)},
		ykv{"PenPoint", point("A point of a pen stroke, relative to the node's corner.", true)},
		ykv{"PenStroke", yobj{
			{"type", "object"},
			{"required", []string{"points"}},
			{"additionalProperties", false},
			{"properties", yobj{
				{"type", yobj{{"type", "string"}, {"enum", SegmentTypes}}},
				{"points", yobj{{"type", "array"}, {"minItems", 1}, {"maxItems", MaxPoints}, {"items", ref("PenPoint")}}},
			}},
		}},
		ykv{"RichText", yobj{
			{"type", "object"},
			{"description", "tldraw's rich-text document (TipTap JSON): `{\"type\": \"doc\", \"content\": [...]}` with the nodes " +
				strings.Join(mapStrings(richTextNodes[1:], quoteCode), ", ") + " and the marks " + strings.Join(mapStrings(richTextMarks, quoteCode), ", ") + " (docs/model.md, Rich text)."},
			{"required", []string{"type"}},
			{"additionalProperties", false},
			{"properties", yobj{
				{"type", yobj{{"type", "string"}, {"enum", []string{"doc"}}}},
				{"content", yobj{{"type", "array"}, {"items", ref("RichTextNode")}}},
			}},
		}},
		ykv{"RichTextNode", yobj{
			{"type", "object"},
			{"required", []string{"type"}},
			{"additionalProperties", false},
			{"properties", yobj{
				{"type", yobj{{"type", "string"}, {"enum", richTextNodes[1:]}}},
				{"content", yobj{{"type", "array"}, {"items", ref("RichTextNode")}}},
				{"text", yobj{{"type", "string"}}},
				{"attrs", yobj{{"type", "object"}, {"additionalProperties", true}, {"description", "heading: level (1 to 6); orderedList: start, type; codeBlock: language; any block: dir, textAlign."}}},
				{"marks", yobj{{"type", "array"}, {"items", yobj{
					{"type", "object"},
					{"required", []string{"type"}},
					{"additionalProperties", false},
					{"properties", yobj{
						{"type", yobj{{"type", "string"}, {"enum", richTextMarks}}},
						{"attrs", yobj{{"type", "object"}, {"additionalProperties", true}, {"description", "link: href (a link), target, rel, class; highlight: color."}}},
					}},
				}}}},
			}},
		}},
	)
	return out
}

func quoteCode(s string) string { return "`" + s + "`" }

func mapStrings(l []string, f func(string) string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = f(s)
	}
	return out
}

// schema returns the JSON Schema of one prop of kind.
func (p *propSpec) schema(kind string) yobj {
	switch p.typ {
	case pString:
		return withDesc(yobj{{"type", "string"}, {"maxLength", p.maxLen}}, p.desc)
	case pDocText:
		return withDesc(yobj{{"type", "string"}}, p.desc)
	case pNumber:
		return withDesc(yobj{{"type", "number"}, {"minimum", p.min}, {"maximum", p.max}}, p.desc)
	case pBool:
		return withDesc(yobj{{"type", "boolean"}}, p.desc)
	case pEnum:
		return withDesc(yobj{{"type", "string"}, {"enum", p.enum}}, p.desc)
	case pColour:
		return withDesc(ref("Colour"), p.desc)
	case pLink:
		return withDesc(ref("Link"), p.desc)
	case pImageURL:
		return withDesc(yobj{{"type", "string"}, {"pattern", `^(data:image/(png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=]*|[hH][tT][tT][pP][sS]://.+)$`}}, p.desc)
	case pWebURL:
		return withDesc(yobj{{"type", "string"}, {"maxLength", MaxLinkChars}, {"pattern", `^[hH][tT][tT][pP][sS]?://.+$`}}, p.desc)
	case pRichText:
		return withDesc(ref("RichText"), p.desc)
	case pPoints:
		return withDesc(yobj{{"type", "array"}, {"minItems", 2}, {"maxItems", MaxPoints}, {"items", ref("ModelPoint")}}, p.desc)
	case pSegments:
		return withDesc(yobj{{"type", "array"}, {"maxItems", MaxSegments}, {"items", ref("PenStroke")}}, p.desc)
	case pCrop:
		unit := yobj{{"type", "number"}, {"minimum", 0.0}, {"maximum", 1.0}}
		return withDesc(yobj{{"type", "object"}, {"required", []string{"x", "y", "w", "h"}}, {"additionalProperties", false},
			{"properties", yobj{{"x", unit}, {"y", unit}, {"w", unit}, {"h", unit}}}}, p.desc)
	case pMeta:
		return withDesc(yobj{{"type", "object"}, {"additionalProperties", true}}, p.desc)
	}
	panic("canvas: props schema: no JSON Schema for a prop of " + kind)
}

// PropsSchemasYAML returns the generated props schemas as openapi.yaml holds
// them under components.schemas: markers included, indented four spaces.
func PropsSchemasYAML() string {
	var b strings.Builder
	b.WriteString(PropsSchemasBegin)
	for _, s := range propsSchemas() {
		b.WriteString("    " + s.k + ":\n")
		writeYAMLObject(&b, s.v.(yobj), 6)
	}
	b.WriteString(PropsSchemasEnd)
	return b.String()
}

// writeYAMLObject writes o's members in block style at indent spaces.
func writeYAMLObject(b *strings.Builder, o yobj, indent int) {
	pad := strings.Repeat(" ", indent)
	for _, kv := range o {
		b.WriteString(pad + yamlKey(kv.k) + ":")
		switch v := kv.v.(type) {
		case yobj:
			if flow, ok := flowObject(v); ok {
				b.WriteString(" " + flow + "\n")
				continue
			}
			b.WriteString("\n")
			writeYAMLObject(b, v, indent+2)
		case []any:
			b.WriteString("\n")
			for _, x := range v {
				if flow, ok := flowObject(x.(yobj)); ok {
					b.WriteString(pad + "  - " + flow + "\n")
					continue
				}
				var sub strings.Builder
				writeYAMLObject(&sub, x.(yobj), indent+4)
				s := sub.String()
				b.WriteString(pad + "  - " + s[indent+4:])
			}
		default:
			b.WriteString(" " + yamlScalar(v) + "\n")
		}
	}
}

// flowObject writes a small object of scalars on one line ({ a: 1, b: x }).
func flowObject(o yobj) (string, bool) {
	parts := make([]string, 0, len(o))
	for _, kv := range o {
		switch kv.v.(type) {
		case yobj, []any:
			return "", false
		}
		parts = append(parts, yamlKey(kv.k)+": "+yamlScalar(kv.v))
	}
	s := "{ " + strings.Join(parts, ", ") + " }"
	return s, len(s) <= 100 && len(o) <= 3
}

func yamlKey(k string) string {
	if strings.HasPrefix(k, "$") {
		return strconv.Quote(k)
	}
	return k
}

// yamlScalar writes a scalar or a list of strings.
func yamlScalar(v any) string {
	switch t := v.(type) {
	case string:
		if plainYAML(t) {
			return t
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(t)
		return strings.TrimSuffix(b.String(), "\n")
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case int:
		return strconv.Itoa(t)
	case bool:
		return strconv.FormatBool(t)
	case []string:
		q := make([]string, len(t))
		for i, s := range t {
			q[i] = yamlScalar(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	panic(fmt.Sprintf("canvas: props schema: no YAML for a %T", v))
}

// plainYAML reports whether s can be written as a plain YAML scalar that
// reads back as the same string: a word of letters, digits, _ and -, that
// starts with a letter and is none of YAML's booleans or null.
func plainYAML(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	return true
}
